command: bench/peers/llama_cpp.sh --model /work/tmp/peers/g85-Q4_K_M.gguf --threads 2 --repeat 9 --recipe ggml-act --build-dir /work/tmp/llamacpp/build --csv /work/tmp/peers/peers_llama_cpp_ggml_zen3_q4_k_m.csv
output: /work/tmp/peers/peers_llama_cpp_ggml_zen3_q4_k_m.csv
commit: 51280d7f1f with uncommitted changes to accuracy/src/io/ggml/int_dots_avx2.cpp
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-03T17:22:10Z
load: 1.5 at the start, 1.5 at the end
