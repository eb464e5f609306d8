command: bench/peers/llama_cpp_logits.sh --csv /tmp/llama_cpp_logits.csv
output: /tmp/llama_cpp_logits.csv
commit: ad09f82224
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-03T20:12:23Z
load: 2.0 at the start, 1.9 at the end
