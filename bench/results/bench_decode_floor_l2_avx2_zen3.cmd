command: build/bin/bench_decode '--benchmark_filter=^BM_decode_(gemv|floor|floor_l2)_(q8_0|q4_k|q6_k|mxfp4)/' --benchmark_min_time=0.5 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_decode_floor_l2_avx2_zen3.json --benchmark_out_format=json
commit: 52c7122abe
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-03T10:48:10Z
load: 0.7 at the start, 1.2 at the end
