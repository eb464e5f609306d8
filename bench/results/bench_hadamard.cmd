command: OMP_WAIT_POLICY=passive build/bin/bench_hadamard '--benchmark_filter=^BM_(fwht_f32|memcpy|fp_floor)_(cache|stream)/(10|12|14)$' --benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_hadamard.json --benchmark_out_format=json
commit: 9433fad1c9
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-29T07:06:05Z
load: 1.2 at the start, 1.2 at the end
