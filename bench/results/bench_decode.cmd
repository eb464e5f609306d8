command: OMP_WAIT_POLICY=passive build/bin/bench_decode --benchmark_min_time=0.5 --benchmark_out=bench/results/bench_decode.json --benchmark_out_format=json
commit: 9433fad1c9
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-29T07:05:16Z
load: 1.4 at the start, 1.3 at the end
