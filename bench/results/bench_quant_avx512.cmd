command: OMP_WAIT_POLICY=passive build/bin/bench_quant '--benchmark_filter=^BM_gemm_(f32|onednn_f32)/(1024/1024/1024|2048/2048/2048|512/4096/4096)/1$' --benchmark_min_time=0.2 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_quant_avx512.json --benchmark_out_format=json
commit: 0aec691a2d with uncommitted changes to scripts/sanitize-check
cpu: AMD EPYC (family 26, model 2), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-11-29T20:40:42Z
load: 1.1 at the start, 1.0 at the end
