command: bench/peers/llama2c.sh --model /work/tmp/peers/m85.bin --threads 2 --steps 256 --repeat 9 --csv /work/tmp/peers/peers_llama2c_xeon_85m.csv
output: /work/tmp/peers/peers_llama2c_xeon_85m.csv
commit: 85f112bdbc
cpu: Intel(R) Xeon(R) Processor (family 6, model 207), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-02T16:12:59Z
load: 1.6 at the start, 2.0 at the end
