command: bench/peers/llama_cpp.sh --model /work/tmp/peers/g85-Q4_K_M.gguf --text /work/tmp/peers/eval1024.txt --threads 2 --repeat 9 --build-dir /work/tmp/llamacpp/build --csv /work/tmp/peers/peers_llama_cpp_zen3_q4_k_m.csv
output: /work/tmp/peers/peers_llama_cpp_zen3_q4_k_m.csv
commit: 7a17751a08
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-03T14:29:34Z
load: 0.3 at the start, 1.5 at the end
