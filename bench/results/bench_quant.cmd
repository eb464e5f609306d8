command: OMP_WAIT_POLICY=passive build/bin/bench_quant '--benchmark_filter=^BM_(gemm_(int8|onednn_s8s8|f32|onednn_f32)/(1024/1024/1024|2048/2048/2048|512/4096/4096)/1|linear_step_(fp32|switchback|fp8_tensorwise|mxfp4)|memcpy_f32/4096|(de)?quantize_(mxfp4|mxfp8|nvfp4)/4096)$' --benchmark_min_time=0.2 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_quant.json --benchmark_out_format=json
commit: 841a6f3768
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-03T13:47:21Z
load: 0.6 at the start, 0.9 at the end
