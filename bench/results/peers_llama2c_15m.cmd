command: bench/peers/llama2c.sh --model /work/tmp/peers/m15.bin --threads 2 --steps 256 --repeat 5 --csv /work/tmp/peers/peers_llama2c_15m.csv
output: /work/tmp/peers/peers_llama2c_15m.csv
commit: 8550da0a78
cpu: AMD EPYC (family 26, model 2), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-11-30T16:56:07Z
load: 1.7 at the start, 1.8 at the end
