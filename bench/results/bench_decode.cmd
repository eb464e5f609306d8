command: OMP_WAIT_POLICY=passive build/bin/bench_decode --benchmark_min_time=0.5 --benchmark_out=bench/results/bench_decode.json --benchmark_out_format=json
commit: 37b81b0976
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-28T20:53:40Z
load: 1.0 at the start, 1.0 at the end
