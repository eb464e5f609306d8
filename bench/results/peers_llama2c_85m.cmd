command: bench/peers/llama2c.sh --model /work/tmp/peers/m85.bin --threads 2 --steps 256 --repeat 5 --csv /work/tmp/peers/peers_llama2c_85m.csv
output: /work/tmp/peers/peers_llama2c_85m.csv
commit: a4f386ec7d
cpu: AMD EPYC (family 25, model 17), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-01T01:09:12Z
load: 0.7 at the start, 1.2 at the end
