command: OMP_WAIT_POLICY=passive build/bin/bench_attention --benchmark_min_time=0.01 --benchmark_repetitions=1 --benchmark_out=bench/results/bench_attention.json --benchmark_out_format=json
commit: b79781dec0
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-28T19:31:20Z
load: 19.6 at the start, 13.1 at the end
