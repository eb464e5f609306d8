command: OMP_WAIT_POLICY=passive build/bin/bench_train '--benchmark_filter=^BM_train_step_(fp32|bf16|mxfp8|nvfp4|quartet|fp8_block128)(_medium)?/' --benchmark_min_time=0.5 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_train_avx512_zen4.json --benchmark_out_format=json
commit: 7a265056a6
cpu: AMD EPYC (family 25, model 17), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-11-30T19:47:51Z
load: 1.2 at the start, 1.7 at the end
