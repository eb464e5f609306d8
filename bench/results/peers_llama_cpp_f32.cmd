command: bench/peers/llama_cpp.sh --model /work/tmp/peers/g85-F32.gguf --text /work/tmp/peers/eval1024.txt --threads 2 --repeat 5 --build-dir /work/tmp/llamacpp/build --csv /work/tmp/peers/peers_llama_cpp_f32.csv
output: /work/tmp/peers/peers_llama_cpp_f32.csv
commit: 8550da0a78
cpu: AMD EPYC (family 26, model 2), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-11-30T16:53:59Z
load: 1.1 at the start, 1.5 at the end
