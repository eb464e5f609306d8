command: OMP_WAIT_POLICY=passive bench/calibration/run stories260k /tmp/tables_calib_stories260k.csv
output: /tmp/tables_calib_stories260k.csv
commit: 7ba5681d7c
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-28T22:36:11Z
load: 7.7 at the start, 7.7 at the end
