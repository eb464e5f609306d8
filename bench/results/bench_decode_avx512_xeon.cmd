command: build/bin/bench_decode '--benchmark_filter=^BM_decode_(step|gemv|floor)_' --benchmark_min_time=1 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_decode_avx512_xeon.json --benchmark_out_format=json
commit: 1db8eb1d9c
cpu: Intel(R) Xeon(R) Processor (family 6, model 207), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-01T19:20:59Z
load: 0.9 at the start, 1.4 at the end
