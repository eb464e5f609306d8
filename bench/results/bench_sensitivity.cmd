command: OMP_WAIT_POLICY=passive build/bin/bench_eval --benchmark_filter=BM_sensitivity --benchmark_out=bench/results/bench_sensitivity.json --benchmark_out_format=json
commit: 37b81b0976
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-28T20:54:11Z
load: 1.0 at the start, 1.0 at the end
