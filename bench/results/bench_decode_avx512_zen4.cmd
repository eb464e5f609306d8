command: build/bin/bench_decode --benchmark_min_time=1 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_decode_avx512_zen4.json --benchmark_out_format=json
commit: daffda88c9
cpu: AMD EPYC (family 25, model 17), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-01T01:01:57Z
load: 1.5 at the start, 1.6 at the end
