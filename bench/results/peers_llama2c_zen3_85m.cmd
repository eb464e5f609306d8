command: bench/peers/llama2c.sh --model /work/tmp/peers/m85.bin --threads 2 --steps 256 --repeat 9 --csv /work/tmp/peers/peers_llama2c_zen3_85m.csv
output: /work/tmp/peers/peers_llama2c_zen3_85m.csv
commit: 4a2df32147
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-03T15:13:08Z
load: 0.1 at the start, 1.5 at the end
