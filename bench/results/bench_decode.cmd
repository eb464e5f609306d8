command: OMP_WAIT_POLICY=passive build/bin/bench_decode --benchmark_min_time=1 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_decode.json --benchmark_out_format=json
commit: 69cee0a3a5
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-29T16:23:28Z
load: 1.4 at the start, 1.2 at the end
