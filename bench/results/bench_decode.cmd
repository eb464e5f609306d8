command: LOWP_ISA=avx2 build/bin/bench_decode '--benchmark_filter=^BM_decode_(step|gemv)_' --benchmark_min_time=1 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_decode.json --benchmark_out_format=json
commit: 562d0e1808
cpu: AMD EPYC (family 25, model 17), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-01T00:49:27Z
load: 0.7 at the start, 1.6 at the end
