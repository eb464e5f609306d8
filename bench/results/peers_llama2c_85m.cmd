command: bench/peers/llama2c.sh --model /work/tmp/peers/m85.bin --threads 2 --steps 256 --repeat 5 --csv /work/tmp/peers/peers_llama2c_85m.csv
output: /work/tmp/peers/peers_llama2c_85m.csv
commit: 94b426cdba
cpu: AMD EPYC (family 26, model 2), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-11-30T11:29:01Z
load: 1.8 at the start, 1.9 at the end
