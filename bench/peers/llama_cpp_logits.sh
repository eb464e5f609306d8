#!/usr/bin/env bash
# lowp's logits of model A's GGUF files (../shared/gguf, quantized by llama.cpp's own
# llama-quantize) against llama.cpp's own logits of the same 128 tokens (../shared/gguf/logits:
# one batch, n_ctx 128, F32 KV cache), under each recipe: the table of docs/recipes.md's
# "llama.cpp's products".
# Usage:
#   bench/peers/llama_cpp_logits.sh --csv FILE [--recipes fp32,ggml-act] [--threads 2] [--lowp BIN]
# One CSV row per file and recipe: kld_mean, the mean over the 128 positions of the KLD (nats)
# from llama.cpp's next-token distribution to lowp's; max_abs_diff, the largest |logit
# difference|; first_over_1e-4, the first position with a logit more than 1e-4 apart (-1: none).
# Exits 0 with one line when ../shared/gguf is absent.
set -euo pipefail
source "$(dirname "$0")/common.sh"

csv="" recipes="fp32,ggml-act" threads=2 lowp_bin=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --csv|--recipes|--threads|--lowp)
      [[ $# -ge 2 ]] || usage_error "$1 needs a value"
      case "$1" in
        --csv) csv="$2" ;; --recipes) recipes="$2" ;; --threads) threads="$2" ;; --lowp) lowp_bin="$2" ;;
      esac
      shift 2 ;;
    *) usage_error "unknown option $1 (see the comment at the top of this script)" ;;
  esac
done
[[ -n "$csv" ]] || usage_error "--csv FILE is required"
gguf="$(cd "$(dirname "$0")/../.." && pwd)/../shared/gguf"
if [[ ! -f "$gguf/tokens.txt" ]]; then
  echo "skip: $gguf (llama.cpp's model A files and logits) is absent"
  exit 0
fi
lowp="$(find_lowp "$lowp_bin")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "file,recipe,kld_mean,max_abs_diff,first_over_1e-4" > "$tmp/out.csv"
for t in Q4_K_M Q5_K_M Q6_K Q8_0 Q4_0 Q5_0 Q4_1 Q5_1 Q2_K Q3_K_M IQ4_NL IQ4_XS F16 BF16; do
  for r in ${recipes//,/ }; do
    "$lowp" eval --model "$gguf/modelA-$t.gguf" --tokens "$gguf/tokens.txt" --ctx 128 --score-all \
      --recipe "$r" --threads "$threads" --logits-out "$tmp/logits.bin" > /dev/null
    /usr/bin/python3 - "$gguf/logits/logits_modelA_$t.f32le.bin" "$tmp/logits.bin" "$t" "$r" >> "$tmp/out.csv" <<'EOF'
import sys
import numpy as np
ref = np.fromfile(sys.argv[1], dtype='<f4').astype(np.float64).reshape(-1, 512)
got = np.fromfile(sys.argv[2], dtype='<f4').astype(np.float64).reshape(-1, 512)
if ref.shape != got.shape:
    sys.exit(f'{sys.argv[3]}: {got.shape[0]} rows of logits, llama.cpp has {ref.shape[0]}')
def log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))
lp, lq = log_softmax(ref), log_softmax(got)
kld = (np.exp(lp) * (lp - lq)).sum(axis=1).mean()
diff = np.abs(ref - got)
over = np.nonzero(diff.max(axis=1) > 1e-4)[0]
print(f'{sys.argv[3]},{sys.argv[4]},{kld!r},{diff.max()!r},{over[0] if len(over) else -1}')
EOF
  done
done
mv "$tmp/out.csv" "$csv"
