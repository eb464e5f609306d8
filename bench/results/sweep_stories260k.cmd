command: OMP_WAIT_POLICY=passive build/bin/lowp sweep --model ../shared/models/stories260K.bin --tokens ../shared/data/stories260K_ref/seqA_tokens.txt --recipes fp32,fp16,bf16,switchback-int8,fp8-attn,fp8-attn-hadamard,fp8-attn-fa3,fp8-tensorwise,kv4,kv4-hadamard,mxfp8,nvfp4,mxfp4 --threads 1 --csv /tmp/results_sweep260k.csv
output: /tmp/results_sweep260k.csv
commit: b79781dec0
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-28T19:31:45Z
load: 20.0 at the start, 20.1 at the end
