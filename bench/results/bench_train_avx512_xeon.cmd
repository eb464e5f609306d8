command: OMP_WAIT_POLICY=passive build/bin/bench_train '--benchmark_filter=^BM_train_step_(fp32|bf16|mxfp8|nvfp4|quartet|fp8_block128)(_medium)?/' --benchmark_min_time=0.5 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_train_avx512_xeon.json --benchmark_out_format=json
commit: 929f90c73b
cpu: Intel(R) Xeon(R) Processor (family 6, model 207), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-02T16:18:33Z
load: 0.9 at the start, 1.5 at the end
