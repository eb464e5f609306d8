command: OMP_WAIT_POLICY=passive /usr/bin/time -f 'wall_s,user_s,sys_s\n%e,%U,%S' -o /tmp/probe_doc/time.csv build/bin/lowp probe --config small --corpus ../shared/data/tinyshakespeare.txt --at 0,100,300 --batches 8 --draws 4 --threads 2 --recipes bf16,bf16-pure,fp8-tensorwise,fp8-rowwise,fp8-delayed,mxfp8,fp8-block128,nvfp4,quartet-fp4,quartet2-nvfp4 --out /tmp/probe_doc/out
output: /tmp/probe_doc/time.csv
commit: f44503d421
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-29T13:02:07Z
load: 1.0 at the start, 1.5 at the end
