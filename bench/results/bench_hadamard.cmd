command: OMP_WAIT_POLICY=passive build/bin/bench_hadamard '--benchmark_filter=^BM_(fwht_f32|memcpy)_(cache|stream)/(10|12|14)$' --benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_out=bench/results/bench_hadamard.json --benchmark_out_format=json
commit: 37b81b0976
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-28T20:53:24Z
load: 1.0 at the start, 1.0 at the end
