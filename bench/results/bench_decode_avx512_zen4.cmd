command: build/bin/bench_decode --benchmark_min_time=1 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_decode_avx512_zen4.json --benchmark_out_format=json
commit: 5e352a6d3c
cpu: AMD EPYC (family 25, model 17), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-11-30T22:33:20Z
load: 1.5 at the start, 1.2 at the end
