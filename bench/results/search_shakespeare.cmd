command: OMP_WAIT_POLICY=passive bench/calibration/run search-shakespeare /tmp/tables_search_shakespeare.csv
output: /tmp/tables_search_shakespeare.csv
commit: 7ba5681d7c
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-28T22:33:50Z
load: 8.7 at the start, 8.4 at the end
