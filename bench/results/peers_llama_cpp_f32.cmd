command: bench/peers/llama_cpp.sh --model /work/tmp/peers/g85-F32.gguf --text /work/tmp/peers/eval1024.txt --threads 2 --repeat 5 --build-dir /work/tmp/llamacpp/build --csv /work/tmp/peers/peers_llama_cpp_f32.csv
output: /work/tmp/peers/peers_llama_cpp_f32.csv
commit: 2d448bf07a
cpu: AMD EPYC (family 26, model 2), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-01T07:25:00Z
load: 0.3 at the start, 0.9 at the end
