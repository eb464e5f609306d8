#!/usr/bin/env bash
# lowp against llama.cpp on the same GGUF at the same thread count, built from a local
# checkout (no downloads):
#   generation: llama-bench -p 0 -n TOKENS (its tokens/s) against `lowp generate --timing`
#               (greedy, the same number of new tokens; lowp stops early if it samples BOS)
#   evaluation (with --text): llama-perplexity -c CTX against `lowp eval --ctx CTX`, whole
#               process wall time (load and tokenization included), with each one's perplexity
# Usage:
#   LLAMA_CPP_DIR=/path/to/llama.cpp bench/peers/llama_cpp.sh --model M.gguf [--text FILE]
#       [--threads 2] [--tokens 128] [--ctx 512] [--lowp BIN] [--build-dir DIR] [--jobs 2]
# Skips (exit 0, one line) when LLAMA_CPP_DIR is unset or not a llama.cpp checkout. The build
# goes to --build-dir (default $LLAMA_CPP_DIR/build-lowp-peers) and is reused.
set -euo pipefail
source "$(dirname "$0")/common.sh"

model="" text="" threads=2 tokens=128 ctx=512 lowp_bin="" build="" jobs=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model|--text|--threads|--tokens|--ctx|--lowp|--build-dir|--jobs)
      [[ $# -ge 2 ]] || usage_error "$1 needs a value"
      case "$1" in
        --model) model="$2" ;; --text) text="$2" ;; --threads) threads="$2" ;; --tokens) tokens="$2" ;;
        --ctx) ctx="$2" ;; --lowp) lowp_bin="$2" ;; --build-dir) build="$2" ;; --jobs) jobs="$2" ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument '$1' (see --help)" ;;
  esac
done
[[ -n "$model" ]] || usage_error "--model FILE.gguf is required"
for o in "--threads $threads" "--tokens $tokens" "--ctx $ctx" "--jobs $jobs"; do positive_int $o; done
skip_unless_checkout LLAMA_CPP_DIR CMakeLists.txt
[[ -f "$model" ]] || data_error "--model $model does not exist"
[[ -z "$text" || -f "$text" ]] || data_error "--text $text does not exist"
lowp="$(find_lowp "$lowp_bin")"

build="${build:-$LLAMA_CPP_DIR/build-lowp-peers}"
echo "building llama-bench and llama-perplexity in $build"
cmake -S "$LLAMA_CPP_DIR" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null ||
  data_error "cmake could not configure $LLAMA_CPP_DIR"
cmake --build "$build" -j "$jobs" --target llama-bench llama-perplexity >/dev/null ||
  data_error "llama-bench / llama-perplexity did not build in $build"
bin="$build/bin"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
echo "model $model, $threads threads, $(uptime | sed 's/.*load/load/')"

# Generation: tokens per second of the decode steps.
"$bin/llama-bench" -m "$model" -p 0 -n "$tokens" -t "$threads" -r 3 -o json >"$log" 2>/dev/null ||
  data_error "llama-bench failed on $model"
peer_gen=$(/usr/bin/python3 -c "import json,sys; r=[x for x in json.load(open(sys.argv[1])) if x.get('n_gen')]; print(r[0]['avg_ts'])" "$log")
"$lowp" generate --model "$model" --max-tokens "$tokens" --threads "$threads" --timing >"$log" 2>&1 ||
  data_error "lowp generate failed: $(tail -n 1 "$log")"
lowp_gen=$(sed -n 's/^generated [0-9]* tokens in [0-9.]* s: \([0-9.]*\) tokens\/s$/\1/p' "$log" | tail -n 1)
printf '%-34s %12s %12s %10s\n' "" "llama.cpp" "lowp" "lowp/peer"
printf '%-34s %12.2f %12.2f %10s\n' "generate tokens/s (-n $tokens)" "$peer_gen" "$lowp_gen" "$(ratio "$lowp_gen" "$peer_gen")"

# Evaluation: whole-process wall time (lower is better: the ratio is peer / lowp).
if [[ -n "$text" ]]; then
  peer_s=$(wall_seconds "$bin/llama-perplexity" -m "$model" -f "$text" -c "$ctx" -b "$ctx" -t "$threads")
  peer_ppl=$(grep -o 'PPL = [0-9.]*' "$log" | tail -n 1)
  lowp_s=$(wall_seconds "$lowp" eval --model "$model" --text "$text" --ctx "$ctx" --threads "$threads")
  lowp_ppl=$(sed -n 's/^PPL  *\([0-9.]*\)$/PPL = \1/p' "$log" | head -n 1)
  printf '%-34s %12s %12s %10s\n' "eval wall s (-c $ctx)" "$peer_s" "$lowp_s" "$(ratio "$peer_s" "$lowp_s")"
  echo "llama-perplexity: ${peer_ppl:-?}; lowp eval: ${lowp_ppl:-?}"
fi
