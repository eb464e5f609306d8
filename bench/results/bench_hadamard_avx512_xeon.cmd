command: OMP_WAIT_POLICY=passive build/bin/bench_hadamard '--benchmark_filter=^BM_(fwht_f32|memcpy|fp_floor|fp_shuffle_floor)_(cache|stream)/(10|12|14)$' --benchmark_min_time=0.2 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_hadamard_avx512_xeon.json --benchmark_out_format=json
commit: c04ae4c032
cpu: Intel(R) Xeon(R) Processor (family 6, model 207), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-01T19:15:57Z
load: 0.0 at the start, 0.4 at the end
