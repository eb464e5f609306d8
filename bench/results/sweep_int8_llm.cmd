command: OMP_WAIT_POLICY=passive build/bin/lowp sweep --specs int8:row --distributions llm_activations --csv /tmp/results_sweep_int8.csv
output: /tmp/results_sweep_int8.csv
commit: b79781dec0
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-28T19:32:07Z
load: 20.1 at the start, 20.1 at the end
