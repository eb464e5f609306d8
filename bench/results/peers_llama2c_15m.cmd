command: bench/peers/llama2c.sh --model /work/tmp/peers/m15.bin --threads 2 --steps 256 --repeat 7 --csv /work/tmp/peers/peers_llama2c_15m.csv
output: /work/tmp/peers/peers_llama2c_15m.csv
commit: f4f5f0c46d
cpu: AMD EPYC (family 26, model 2), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-01T02:37:41Z
load: 1.3 at the start, 1.4 at the end
