command: OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive mpirun -np 2 build/bin/lowp train --corpus ../shared/data/tinyshakespeare.txt --dim 128 --layers 2 --heads 4 --kv-heads 2 --ctx 64 --batch 16 --seed 1 --threads 1 --recipes bf16 --seeds 4 --lr 3e-3 --steps 400 --eval-every 100 --out /tmp/lowp_chaos1
output: /tmp/lowp_chaos1/summary.csv
commit: a8afb865b0
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-29T10:23:56Z
load: 3.7 at the start, 4.1 at the end
