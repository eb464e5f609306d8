command: LOWP_ISA=avx2 build/bin/bench_decode '--benchmark_filter=^BM_decode_(step|gemv)_' --benchmark_min_time=1 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_decode.json --benchmark_out_format=json
commit: 8ee2afba2d
cpu: AMD EPYC (family 25, model 17), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-01T01:33:50Z
load: 0.4 at the start, 1.5 at the end
