command: bench/peers/llama_cpp_logits.sh --csv /tmp/llama_cpp_logits.csv
output: /tmp/llama_cpp_logits.csv
commit: 49ef1b21e1
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-03T19:47:27Z
load: 1.3 at the start, 1.3 at the end
