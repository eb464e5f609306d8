command: OMP_WAIT_POLICY=passive build/bin/bench_train '--benchmark_filter=^BM_train_step_(fp32|bf16|mxfp8|nvfp4|quartet|fp8_block128)(_medium)?/' --benchmark_min_time=0.5 --benchmark_out=bench/results/bench_train.json --benchmark_out_format=json
commit: c3ed00f0fc
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-29T12:59:27Z
load: 1.6 at the start, 1.6 at the end
