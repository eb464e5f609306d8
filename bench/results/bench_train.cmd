command: OMP_WAIT_POLICY=passive build/bin/bench_train '--benchmark_filter=^BM_train_step_(fp32|bf16|mxfp8|nvfp4|quartet|fp8_block128)(_medium)?/' --benchmark_min_time=0.5 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_train.json --benchmark_out_format=json
commit: ff50860d09
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-03T13:43:30Z
load: 0.1 at the start, 1.4 at the end
