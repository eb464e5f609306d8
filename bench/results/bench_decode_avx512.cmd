command: build/bin/bench_decode --benchmark_min_time=1 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_decode_avx512.json --benchmark_out_format=json
commit: c4869983cc
cpu: AMD EPYC (family 26, model 2), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-01T05:47:57Z
load: 1.2 at the start, 1.3 at the end
