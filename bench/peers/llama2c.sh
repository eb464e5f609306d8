#!/usr/bin/env bash
# lowp against llama2.c's run.c on the same llama2.c checkpoint at the same thread count, run.c
# built from a local checkout (no downloads) as its Makefile's `runomp` target builds it:
#   run.c -n STEPS -t 0 (greedy; its "achieved tok/s") against `lowp generate --timing` with
#   the same number of new tokens (STEPS - 1: run.c counts BOS as a step).
# Usage:
#   LLAMA2C_DIR=/path/to/llama2.c bench/peers/llama2c.sh --model M.bin [--tokenizer T.bin]
#       [--threads 2] [--steps 256] [--repeat 1] [--csv FILE] [--lowp BIN] [--build-dir DIR]
# lowp reads the tokenizer.bin beside the model; --tokenizer (default: that file) is run.c's -z.
# --repeat N runs both N times, in turn (run.c first in odd repetitions, lowp in even ones),
# and prints the medians; --csv FILE writes one row per repetition (written whole at the end).
# bench/peers/llama2c_model.py makes a checkpoint of any shape with random weights.
# Skips (exit 0, one line) when LLAMA2C_DIR is unset or has no run.c.
set -euo pipefail
source "$(dirname "$0")/common.sh"

model="" tokenizer="" threads=2 steps=256 repeat=1 csv="" lowp_bin="" build=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model|--tokenizer|--threads|--steps|--repeat|--csv|--lowp|--build-dir)
      [[ $# -ge 2 ]] || usage_error "$1 needs a value"
      case "$1" in
        --model) model="$2" ;; --tokenizer) tokenizer="$2" ;; --threads) threads="$2" ;;
        --steps) steps="$2" ;; --repeat) repeat="$2" ;; --csv) csv="$2" ;; --lowp) lowp_bin="$2" ;;
        --build-dir) build="$2" ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument '$1' (see --help)" ;;
  esac
done
[[ -n "$model" ]] || usage_error "--model FILE.bin is required"
positive_int --threads "$threads"
positive_int --steps "$steps"
positive_int --repeat "$repeat"
[[ "$steps" -ge 2 ]] || usage_error "--steps must be at least 2 (BOS and one new token)"
skip_unless_checkout LLAMA2C_DIR run.c
[[ -f "$model" ]] || data_error "--model $model does not exist"
tokenizer="${tokenizer:-$(dirname "$model")/tokenizer.bin}"
[[ -f "$tokenizer" ]] || data_error "tokenizer $tokenizer does not exist (pass --tokenizer)"
lowp="$(find_lowp "$lowp_bin")"

build="${build:-$LLAMA2C_DIR/build-lowp-peers}"
mkdir -p "$build"
echo "building run.c into $build/run"
cc -Ofast -fopenmp -march=native "$LLAMA2C_DIR/run.c" -lm -o "$build/run" || data_error "run.c did not build"

log="$(mktemp)"
rows="$(mktemp)"
trap 'rm -f "$log" "$rows"' EXIT
echo "model $model, $threads threads, $(uptime | sed 's/.*load/load/')"
run_peer() {
  OMP_NUM_THREADS="$threads" "$build/run" "$model" -z "$tokenizer" -n "$steps" -t 0 >"$log" 2>&1 ||
    data_error "run.c failed: $(tail -n 1 "$log")"
  # run.c prints the line to stderr right after the generated text, which need not end in a newline.
  peer=$(grep -ao 'achieved tok/s: [0-9.]*' "$log" | tail -n 1 | sed 's/.*: //')
  [[ -n "$peer" ]] || data_error "run.c printed no 'achieved tok/s' line"
}
run_lowp() {
  mine=$(lowp_tokens_per_s "$lowp" "$model" "$((steps - 1))" "$threads")
}
echo "model,threads,steps,repetition,runc_tokens_per_s,lowp_tokens_per_s" >"$rows"
for ((i = 1; i <= repeat; i++)); do
  if ((i % 2)); then run_peer; run_lowp; else run_lowp; run_peer; fi
  echo "$(basename "$model"),$threads,$steps,$i,$peer,$mine" >>"$rows"
done
read -r peer mine < <(/usr/bin/python3 -c '
import csv, statistics, sys
r = list(csv.DictReader(open(sys.argv[1])))
print(statistics.median(float(x["runc_tokens_per_s"]) for x in r), statistics.median(float(x["lowp_tokens_per_s"]) for x in r))' "$rows")
printf '%-30s %12s %12s %10s\n' "medians of $repeat" "run.c" "lowp" "lowp/peer"
printf '%-30s %12.2f %12.2f %10s\n' "generate tokens/s (-n $steps)" "$peer" "$mine" "$(ratio "$mine" "$peer")"
if [[ -n "$csv" ]]; then
  cp "$rows" "$csv.tmp" && mv "$csv.tmp" "$csv" || data_error "cannot write --csv $csv"
fi
