#!/usr/bin/env bash
# lowp against llama.cpp on the same GGUF at the same thread count, llama.cpp built from a local
# checkout (no downloads):
#   generation: llama-bench -p 0 -n TOKENS -r 1 (its tokens/s) against `lowp generate --timing`
#               (greedy, the same number of new tokens; lowp stops early if it samples BOS)
#   evaluation (with --text): llama-perplexity -c CTX -b CTX against `lowp eval --ctx CTX`,
#               whole-process wall time (load and tokenization included) and peak resident
#               memory, with each one's perplexity
# Usage:
#   LLAMA_CPP_DIR=/path/to/llama.cpp bench/peers/llama_cpp.sh --model M.gguf [--text FILE]
#       [--threads 2] [--tokens 128] [--ctx 512] [--repeat 1] [--csv FILE] [--lowp BIN]
#       [--build-dir DIR] [--jobs 2] [--recipe fp32]
# --recipe: the recipe lowp runs under (default fp32: the stored weights' float values times
# float32 activations; ggml-act: llama.cpp's own quantized activations and integer dots).
# --repeat N runs both N times, in turn (llama.cpp first in odd repetitions, lowp in even ones),
# and prints the medians; --csv FILE writes one row per repetition (written whole at the end).
# bench/peers/llama_cpp_model.sh makes the GGUFs (from a llama2.c checkpoint, with llama.cpp's
# own converter and quantizer). Skips (exit 0, one line) when LLAMA_CPP_DIR is unset or not a
# llama.cpp checkout. The build goes to --build-dir (default $LLAMA_CPP_DIR/build-lowp-peers).
set -euo pipefail
source "$(dirname "$0")/common.sh"

model="" text="" threads=2 tokens=128 ctx=512 repeat=1 csv="" lowp_bin="" build="" jobs=2 recipe=fp32
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model|--text|--threads|--tokens|--ctx|--repeat|--csv|--lowp|--build-dir|--jobs|--recipe)
      [[ $# -ge 2 ]] || usage_error "$1 needs a value"
      case "$1" in
        --model) model="$2" ;; --text) text="$2" ;; --threads) threads="$2" ;; --tokens) tokens="$2" ;;
        --ctx) ctx="$2" ;; --repeat) repeat="$2" ;; --csv) csv="$2" ;; --lowp) lowp_bin="$2" ;;
        --build-dir) build="$2" ;; --jobs) jobs="$2" ;; --recipe) recipe="$2" ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument '$1' (see --help)" ;;
  esac
done
[[ -n "$model" ]] || usage_error "--model FILE.gguf is required"
for o in "--threads $threads" "--tokens $tokens" "--ctx $ctx" "--repeat $repeat" "--jobs $jobs"; do positive_int $o; done
skip_unless_checkout LLAMA_CPP_DIR CMakeLists.txt
[[ -f "$model" ]] || data_error "--model $model does not exist"
[[ -z "$text" || -f "$text" ]] || data_error "--text $text does not exist"
lowp="$(find_lowp "$lowp_bin")"
bin="$(llama_cpp_build "${build:-$LLAMA_CPP_DIR/build-lowp-peers}" "$jobs" llama-bench llama-perplexity)"

log="$(mktemp)"
rows="$(mktemp)"
trap 'rm -f "$log" "$rows"' EXIT
echo "model $model, lowp recipe $recipe, $threads threads, $(uptime | sed 's/.*load/load/')"

run_peer() {
  "$bin/llama-bench" -m "$model" -p 0 -n "$tokens" -t "$threads" -r 1 -o json >"$log" 2>/dev/null ||
    data_error "llama-bench failed on $model"
  peer_gen=$(/usr/bin/python3 -c "import json,sys; r=[x for x in json.load(open(sys.argv[1])) if x.get('n_gen')]; print(r[0]['avg_ts'])" "$log")
  peer_s="" peer_mb="" peer_ppl=""
  if [[ -n "$text" ]]; then
    read -r peer_s peer_mb < <(wall_and_rss "$bin/llama-perplexity" -m "$model" -f "$text" -c "$ctx" -b "$ctx" -t "$threads")
    # Its final line: "Final estimate: PPL = 12.3456 +/- 0.789".
    peer_ppl=$(grep -ao 'Final estimate: PPL = [0-9.]*' "$log" | tail -n 1 | sed 's/.*= //')
    [[ -n "$peer_ppl" ]] || data_error "llama-perplexity printed no 'Final estimate: PPL' line"
  fi
}
run_lowp() {
  lowp_gen=$(lowp_tokens_per_s "$lowp" "$model" "$tokens" "$threads" "$recipe")
  lowp_s="" lowp_mb="" lowp_ppl=""
  if [[ -n "$text" ]]; then
    read -r lowp_s lowp_mb < <(wall_and_rss "$lowp" eval --model "$model" --text "$text" --ctx "$ctx" --threads "$threads" --recipe "$recipe")
    lowp_ppl=$(sed -n 's/^PPL  *\([0-9.]*\)$/\1/p' "$log" | head -n 1)
    [[ -n "$lowp_ppl" ]] || data_error "lowp eval printed no 'PPL' line"
  fi
}
echo "model,threads,tokens,ctx,repetition,llamacpp_tokens_per_s,lowp_tokens_per_s,llamacpp_eval_wall_s,lowp_eval_wall_s,llamacpp_eval_max_rss_mb,lowp_eval_max_rss_mb,llamacpp_ppl,lowp_ppl,lowp_recipe" >"$rows"
for ((i = 1; i <= repeat; i++)); do
  if ((i % 2)); then run_peer; run_lowp; else run_lowp; run_peer; fi
  echo "$(basename "$model"),$threads,$tokens,$ctx,$i,$peer_gen,$lowp_gen,$peer_s,$lowp_s,$peer_mb,$lowp_mb,$peer_ppl,$lowp_ppl,$recipe" >>"$rows"
done
/usr/bin/python3 - "$rows" "$repeat" "$tokens" "$ctx" <<'PY'
import csv, statistics, sys
rows, repeat, tokens, ctx = list(csv.DictReader(open(sys.argv[1]))), *sys.argv[2:]
med = lambda k: statistics.median(float(r[k]) for r in rows)
print(f'{"medians of " + repeat:<34} {"llama.cpp":>12} {"lowp":>12} {"lowp/peer":>10}')
g, m = med('llamacpp_tokens_per_s'), med('lowp_tokens_per_s')
print(f'{"generate tokens/s (-n " + tokens + ")":<34} {g:12.2f} {m:12.2f} {m / g:10.2f}')
if rows[0]['lowp_eval_wall_s']:
    g, m = med('llamacpp_eval_wall_s'), med('lowp_eval_wall_s')
    print(f'{"eval wall s (-c " + ctx + "), peer/lowp":<34} {g:12.3f} {m:12.3f} {g / m:10.2f}')
    g, m = med('llamacpp_eval_max_rss_mb'), med('lowp_eval_max_rss_mb')
    print(f'{"eval peak RSS MB, peer/lowp":<34} {g:12.1f} {m:12.1f} {g / m:10.2f}')
    print(f'perplexity: llama-perplexity {rows[0]["llamacpp_ppl"]}, lowp eval {rows[0]["lowp_ppl"]}')
PY
if [[ -n "$csv" ]]; then
  cp "$rows" "$csv.tmp" && mv "$csv.tmp" "$csv" || data_error "cannot write --csv $csv"
fi
