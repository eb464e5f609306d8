command: build/bin/lowp probe --config tiny --corpus ../shared/data/tinyshakespeare.txt --recipes bf16,fp8-tensorwise,mxfp8,nvfp4,quartet-fp4,quartet2-nvfp4 --at 0,50 --batches 4 --draws 4 --batch 8 --out /tmp/probe_docs --threads 1
output: /tmp/probe_docs/probe.csv
commit: 44ce017791
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-28T23:22:49Z
load: 4.4 at the start, 4.0 at the end
