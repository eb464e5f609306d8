command: OMP_WAIT_POLICY=passive build/bin/bench_hadamard '--benchmark_filter=^BM_(fwht_f32|memcpy|fp_floor|fp_shuffle_floor)_(cache|stream)/(10|12|14)$' --benchmark_min_time=0.2 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_hadamard.json --benchmark_out_format=json
commit: 841a6f3768
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-03T13:46:53Z
load: 0.3 at the start, 0.6 at the end
