command: OMP_WAIT_POLICY=passive build/bin/bench_formats '--benchmark_filter=^BM_(memcpy|cast_(e4m3|e5m2|e2m1|bf16)_(nearest|stochastic))_stream$' --benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_formats.json --benchmark_out_format=json
commit: 8ef86f6a93-dirty
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-28T19:11:41Z
load: 13.5 at the start, 13.3 at the end
