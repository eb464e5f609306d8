command: OMP_WAIT_POLICY=passive build/bin/bench_train --benchmark_filter=BM_probe --benchmark_min_time=0.01 --benchmark_repetitions=3 --benchmark_out=bench/results/bench_probe.json --benchmark_out_format=json
commit: 9433fad1c9
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-29T07:06:22Z
load: 1.2 at the start, 1.5 at the end
