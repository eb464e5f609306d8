command: bench/peers/llama_cpp.sh --model /work/tmp/peers/g85-F32.gguf --text /work/tmp/peers/eval1024.txt --threads 2 --repeat 9 --build-dir /work/tmp/llamacpp/build --csv /work/tmp/peers/peers_llama_cpp_xeon_f32.csv
output: /work/tmp/peers/peers_llama_cpp_xeon_f32.csv
commit: 85f112bdbc
cpu: Intel(R) Xeon(R) Processor (family 6, model 207), 2 CPUs, avx2 fma avx512f avx512_vnni avx512_bf16
started: 2026-12-02T16:14:55Z
load: 2.0 at the start, 2.1 at the end
