command: OMP_WAIT_POLICY=passive build/bin/bench_quant '--benchmark_filter=^BM_gemm_(f32|onednn_f32)/(1024/1024/1024|2048/2048/2048|512/4096/4096)/1$' --benchmark_min_time=0.2 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_quant_avx512_xeon.json --benchmark_out_format=json
commit: c04ae4c032
cpu: Intel(R) Xeon(R) Processor (family 6, model 207), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-01T19:16:27Z
load: 0.4 at the start, 0.6 at the end
