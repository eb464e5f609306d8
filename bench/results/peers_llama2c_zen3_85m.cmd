command: bench/peers/llama2c.sh --model /work/tmp/peers/m85.bin --threads 2 --steps 256 --repeat 9 --csv /work/tmp/peers/peers_llama2c_zen3_85m.csv
output: /work/tmp/peers/peers_llama2c_zen3_85m.csv
commit: 33db4182fc with uncommitted changes to bench/decode.cmake, bench/decode/bench_decode.cpp, bench/decode/decode_floor.hpp, bench/decode/decode_floor_avx2.cpp
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-02T19:07:54Z
load: 1.7 at the start, 1.9 at the end
