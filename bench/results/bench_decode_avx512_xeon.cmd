command: build/bin/bench_decode '--benchmark_filter=^BM_decode_(step|gemv|floor)_' --benchmark_min_time=1 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_decode_avx512_xeon.json --benchmark_out_format=json --benchmark_out=bench/results/bench_decode_avx512_xeon.json --benchmark_out_format=json
commit: 4d15538847
cpu: Intel(R) Xeon(R) Processor (family 6, model 207), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-02T15:50:01Z
load: 1.0 at the start, 1.5 at the end
