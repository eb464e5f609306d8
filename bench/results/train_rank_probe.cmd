command: OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive mpirun -np 2 build/bin/lowp probe --corpus ../shared/data/tinyshakespeare.txt --dim 128 --layers 2 --heads 4 --kv-heads 2 --ctx 64 --batch 16 --lr 1e-3 --seed 1 --threads 1 --recipes bf16,bf16-pure,bf16-pure-sr,fp8-tensorwise,fp8-rowwise,fp8-rowwise-gw-hp,fp8-delayed,fp8-current,mxfp8,mxfp8-te,fp8-block128,switchback-int8,scalify,nvfp4,nvfp4-train,quartet-fp4,quartet2-nvfp4 --at 0,200,400 --batches 8 --draws 4 --out /tmp/lowp_rank_probe
output: /tmp/lowp_rank_probe/probe.csv
commit: ed4943fd1a
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-29T10:06:04Z
load: 3.0 at the start, 6.1 at the end
