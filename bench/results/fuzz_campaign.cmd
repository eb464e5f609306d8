command: scripts/sanitize-check --fuzz-only --fuzz-seconds 30
output: build-sanitize/fuzz-work/summary.csv
commit: 34372fe888
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-29T00:22:03Z
load: 2.0 at the start, 1.3 at the end
