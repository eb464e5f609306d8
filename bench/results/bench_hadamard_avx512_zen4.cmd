command: OMP_WAIT_POLICY=passive build/bin/bench_hadamard '--benchmark_filter=^BM_(fwht_f32|memcpy|fp_floor)_(cache|stream)/(10|12|14)$' --benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_hadamard_avx512_zen4.json --benchmark_out_format=json
commit: 39d6f1f1ed with uncommitted changes to quant/src/linear/linear.cpp
cpu: AMD EPYC (family 25, model 17), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-11-30T20:00:55Z
load: 0.2 at the start, 0.4 at the end
