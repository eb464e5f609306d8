command: build/bin/bench_decode --benchmark_min_time=1 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_decode_avx512_zen5b.json --benchmark_out_format=json --benchmark_out=bench/results/bench_decode_avx512_zen5b.json --benchmark_out_format=json
commit: 463d9fdc24
cpu: AMD EPYC (family 26, model 2), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-02T12:19:44Z
load: 0.4 at the start, 1.4 at the end
