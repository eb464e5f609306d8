command: build/bin/lowp probe --config tiny --corpus ../shared/data/tinyshakespeare.txt --recipes quartet2-nvfp4,docs/recipes/quartet2-code-fwd.txt,docs/recipes/quartet2-code-operands.txt,docs/recipes/quartet2-code-had32.txt,docs/recipes/quartet2-code.txt --at 0,50,150 --batches 8 --draws 4 --batch 8 --out /tmp/probe_q2 --threads 1
output: /tmp/probe_q2/probe.csv
commit: 90f834559e
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-29T05:52:17Z
load: 4.3 at the start, 4.7 at the end
