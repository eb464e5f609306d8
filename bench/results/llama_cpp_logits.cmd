command: bench/peers/llama_cpp_logits.sh --csv /tmp/llama_cpp_logits.csv
output: /tmp/llama_cpp_logits.csv
commit: 6be253941b with uncommitted changes to bench/peers/llama_cpp_logits.sh
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-03T19:47:02Z
load: 1.9 at the start, 1.8 at the end
