command: bench/peers/llama_cpp.sh --model /work/tmp/peers/g85-Q4_K_M.gguf --text /work/tmp/peers/eval1024.txt --threads 2 --repeat 5 --build-dir /work/tmp/llamacpp/build --csv /work/tmp/peers/peers_llama_cpp_q4_k_m.csv
output: /work/tmp/peers/peers_llama_cpp_q4_k_m.csv
commit: 2d448bf07a
cpu: AMD EPYC (family 26, model 2), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-01T07:25:33Z
load: 0.9 at the start, 1.1 at the end
