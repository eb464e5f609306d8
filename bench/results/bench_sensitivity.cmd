command: OMP_WAIT_POLICY=passive build/bin/bench_eval --benchmark_filter=BM_sensitivity --benchmark_out=bench/results/bench_sensitivity.json --benchmark_out_format=json
commit: 9433fad1c9
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-29T07:05:45Z
load: 1.3 at the start, 1.2 at the end
