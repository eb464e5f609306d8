command: bench/peers/llama_cpp.sh --model /work/tmp/peers/g85-Q4_K_M.gguf --threads 2 --repeat 9 --recipe ggml-act --build-dir /work/tmp/llamacpp/build --csv /work/tmp/peers/peers_llama_cpp_ggml_zen3_q4_k_m.csv
output: /work/tmp/peers/peers_llama_cpp_ggml_zen3_q4_k_m.csv
commit: 58eedf627e
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-03T16:55:49Z
load: 1.0 at the start, 1.0 at the end
