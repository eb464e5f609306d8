command: sh -c 'M=../shared/models/tinyllamas/stories260K.bin; for s in 1 2 3 4 5 6 7 8; do build/bin/lowp generate --model $M --temperature 1 --seed $s --max-tokens 500 --threads 1; done > /tmp/static_calib.txt && for s in 101 102 103 104; do build/bin/lowp generate --model $M --temperature 1 --seed $s --max-tokens 500 --threads 1; done > /tmp/static_eval.txt && OMP_WAIT_POLICY=passive build/bin/lowp sweep --model $M --text /tmp/static_eval.txt --calib /tmp/static_calib.txt --calib-cache /tmp/static_sweep_cache --threads 1 --csv /tmp/static_sweep.csv --recipes fp32,fp8-tensorwise,docs/recipes/fp8-tensorwise-static.txt,docs/recipes/fp8-tensorwise-static-p99.9.txt,nvfp4,docs/recipes/nvfp4-static.txt,docs/recipes/nvfp4-static-p99.9.txt,fp8-attn,docs/recipes/fp8-attn-static.txt,docs/recipes/fp8-attn-static-p99.9.txt'
output: /tmp/static_sweep.csv
commit: 720ef9852e
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-28T23:22:31Z
load: 4.6 at the start, 4.8 at the end
