command: build/bin/bench_decode --benchmark_min_time=1 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_decode_avx512_zen4.json --benchmark_out_format=json
commit: 8ee2afba2d
cpu: AMD EPYC (family 25, model 17), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-01T01:36:00Z
load: 1.5 at the start, 1.4 at the end
