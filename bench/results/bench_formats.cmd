command: OMP_WAIT_POLICY=passive build/bin/bench_formats '--benchmark_filter=^BM_(memcpy|cast_(e4m3|e5m2|e2m1|bf16)_(nearest|stochastic))_stream$' --benchmark_min_time=0.2 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_formats.json --benchmark_out_format=json
commit: e4c0df0787
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-03T14:23:27Z
load: 0.6 at the start, 0.8 at the end
