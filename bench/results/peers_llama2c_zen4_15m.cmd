command: bench/peers/llama2c.sh --model /work/tmp/peers/m15.bin --threads 2 --steps 256 --repeat 5 --csv /work/tmp/peers/peers_llama2c_15m.csv
output: /work/tmp/peers/peers_llama2c_15m.csv
commit: 8ee2afba2d
cpu: AMD EPYC (family 25, model 17), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-01T01:40:37Z
load: 1.7 at the start, 1.7 at the end
