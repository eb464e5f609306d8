command: build/bin/test_linear '--gtest_filter=LinearPresets.*:*Nvfp4TrainBackwardUnbiasedAroundItsAnalysedMean' --gtest_output=json:/tmp/linear_presets.json
output: /tmp/linear_presets.json
commit: 574ae307a2
cpu: AMD EPYC (family 25, model 1), 2 CPUs, avx2 fma
started: 2026-11-28T22:54:23Z
load: 10.5 at the start, 10.9 at the end
