command: OMP_WAIT_POLICY=passive build/bin/lowp train --corpus ../shared/data/tinyshakespeare.txt --recipes fp32,bf16,fp8-tensorwise,mxfp8,nvfp4 --seeds 3 --seed 1 --dim 128 --layers 2 --heads 4 --kv-heads 2 --ctx 64 --batch 16 --lr 3e-3 --steps 100 --eval-every 50 --threads 1 --out /tmp/results_train
output: /tmp/results_train/summary.csv
commit: b79781dec0
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-28T19:31:24Z
load: 19.7 at the start, 13.0 at the end
