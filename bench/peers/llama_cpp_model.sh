#!/usr/bin/env bash
# The GGUFs bench/peers/llama_cpp.sh compares on, made by llama.cpp's own tools from a llama2.c
# checkpoint (bench/peers/llama2c_model.py makes one of any shape), so that lowp, llama.cpp and
# run.c read the same weights:
#   PREFIX-F32.gguf     llama-convert-llama2c-to-ggml, the vocabulary copied from --vocab
#   PREFIX-TYPE.gguf    llama-quantize PREFIX-F32.gguf TYPE, for each --type (e.g. Q4_K_M)
# Usage:
#   LLAMA_CPP_DIR=/path/to/llama.cpp bench/peers/llama_cpp_model.sh --llama2c M.bin --out PREFIX
#       [--type Q4_K_M]... [--vocab V.gguf] [--build-dir DIR] [--jobs 2]
# --vocab defaults to the checkout's models/ggml-vocab-llama-spm.gguf (Llama 2's 32000 tokens;
# the checkpoint's vocabulary size must match it). Skips (exit 0, one line) when LLAMA_CPP_DIR
# is unset or not a llama.cpp checkout; the build is shared with llama_cpp.sh.
set -euo pipefail
source "$(dirname "$0")/common.sh"

src="" out="" vocab="" build="" jobs=2 types=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --llama2c|--out|--type|--vocab|--build-dir|--jobs)
      [[ $# -ge 2 ]] || usage_error "$1 needs a value"
      case "$1" in
        --llama2c) src="$2" ;; --out) out="$2" ;; --type) types+=("$2") ;; --vocab) vocab="$2" ;;
        --build-dir) build="$2" ;; --jobs) jobs="$2" ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument '$1' (see --help)" ;;
  esac
done
[[ -n "$src" && -n "$out" ]] || usage_error "--llama2c FILE.bin and --out PREFIX are required"
positive_int --jobs "$jobs"
skip_unless_checkout LLAMA_CPP_DIR CMakeLists.txt
[[ -f "$src" ]] || data_error "--llama2c $src does not exist"
vocab="${vocab:-$LLAMA_CPP_DIR/models/ggml-vocab-llama-spm.gguf}"
[[ -f "$vocab" ]] || data_error "vocabulary $vocab does not exist (pass --vocab)"
bin="$(llama_cpp_build "${build:-$LLAMA_CPP_DIR/build-lowp-peers}" "$jobs" llama-convert-llama2c-to-ggml llama-quantize)"

log="$(mktemp)"
trap 'rm -f "$log" "$out-F32.gguf.tmp"' EXIT
# Each file is written beside its name and renamed into place.
"$bin/llama-convert-llama2c-to-ggml" --copy-vocab-from-model "$vocab" --llama2c-model "$src" \
  --llama2c-output-model "$out-F32.gguf.tmp" >"$log" 2>&1 || data_error "conversion failed: $(tail -n 1 "$log")"
mv "$out-F32.gguf.tmp" "$out-F32.gguf"
echo "$out-F32.gguf"
for t in "${types[@]}"; do
  "$bin/llama-quantize" "$out-F32.gguf" "$out-$t.gguf.tmp" "$t" >"$log" 2>&1 ||
    { rm -f "$out-$t.gguf.tmp"; data_error "llama-quantize $t failed: $(tail -n 1 "$log")"; }
  mv "$out-$t.gguf.tmp" "$out-$t.gguf"
  echo "$out-$t.gguf"
done
