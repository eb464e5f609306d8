command: OMP_WAIT_POLICY=passive build/bin/bench_quant '--benchmark_filter=^BM_gemm_(emulated(_exact|_scalar|_avx2)?|f32_emushape)/' --benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_gemm_emulated.json --benchmark_out_format=json
commit: c3ed00f0fc
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-29T13:00:02Z
load: 1.6 at the start, 1.5 at the end
