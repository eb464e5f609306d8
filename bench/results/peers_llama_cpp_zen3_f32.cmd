command: bench/peers/llama_cpp.sh --model /work/tmp/peers/g85-F32.gguf --text /work/tmp/peers/eval1024.txt --threads 2 --repeat 9 --build-dir /work/tmp/llamacpp/build --csv /work/tmp/peers/peers_llama_cpp_zen3_f32.csv
output: /work/tmp/peers/peers_llama_cpp_zen3_f32.csv
commit: 7a17751a08
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-12-03T14:30:58Z
load: 1.5 at the start, 1.9 at the end
