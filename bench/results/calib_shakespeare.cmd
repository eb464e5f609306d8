command: OMP_WAIT_POLICY=passive bench/calibration/run shakespeare /tmp/tables_calib_shakespeare.csv
output: /tmp/tables_calib_shakespeare.csv
commit: 7ba5681d7c
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-28T22:34:08Z
load: 8.4 at the start, 7.2 at the end
