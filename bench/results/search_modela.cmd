command: OMP_WAIT_POLICY=passive bench/calibration/run search-modela /tmp/tables_search_modela.csv --plot docs/search_pareto_modelA.svg
output: /tmp/tables_search_modela.csv
commit: 7ba5681d7c
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-28T22:36:23Z
load: 7.7 at the start, 7.4 at the end
