command: build/bin/bench_decode '--benchmark_filter=^BM_decode_(step|gemv)_' --benchmark_min_time=1 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_decode_avx2_zen3.json --benchmark_out_format=json
commit: 5b0d63fb7c
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-02T18:45:47Z
load: 1.4 at the start, 1.6 at the end
