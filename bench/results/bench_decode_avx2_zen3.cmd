command: build/bin/bench_decode '--benchmark_filter=^BM_decode_(step|gemv|floor)_' --benchmark_min_time=1 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_decode_avx2_zen3.json --benchmark_out_format=json
commit: 51280d7f1f
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-03T17:14:10Z
load: 1.9 at the start, 1.5 at the end
