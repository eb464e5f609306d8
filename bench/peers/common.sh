# Shared by the bench/peers scripts (sourced, not run): argument errors, the skip when a peer's
# checkout is absent, finding lowp, and wall-clock timing of a whole process.

usage_error() {  # one line, exit 2 (as lowp's CLI does for usage)
  echo "$(basename "$0"): $*" >&2
  exit 2
}

data_error() {  # one line, exit 1
  echo "$(basename "$0"): $*" >&2
  exit 1
}

# skip_unless_checkout VAR FILE: exits 0 with one line unless $VAR names a directory holding FILE.
skip_unless_checkout() {
  local var="$1" file="$2" dir="${!1:-}"
  if [[ -z "$dir" ]]; then
    echo "skip: $var is not set (the path of a local checkout to build the peer from)"
    exit 0
  fi
  if [[ ! -f "$dir/$file" ]]; then
    echo "skip: $var=$dir has no $file (not a checkout of the peer)"
    exit 0
  fi
}

# find_lowp [BIN]: BIN, else build/bin/lowp of this checkout, else lowp on PATH.
find_lowp() {
  local here
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  if [[ -n "${1:-}" ]]; then
    [[ -x "$1" ]] || data_error "--lowp $1 is not an executable"
    echo "$1"
  elif [[ -x "$here/build/bin/lowp" ]]; then
    echo "$here/build/bin/lowp"
  elif command -v lowp >/dev/null; then
    command -v lowp
  else
    data_error "no lowp binary: build it (cmake --build build --target lowp_cli) or pass --lowp BIN"
  fi
}

positive_int() {  # positive_int OPTION VALUE
  [[ "$2" =~ ^[1-9][0-9]*$ ]] || usage_error "$1 must be a positive integer, not '$2'"
}

# wall_and_rss CMD...: runs CMD (stdout and stderr to $log, which the caller sets) and prints
# its wall time in seconds and its peak resident memory in MB (GNU time's %M); a failing CMD is
# a data error naming it.
wall_and_rss() {
  local t0 t1 rss
  [[ -x /usr/bin/time ]] || data_error "/usr/bin/time (Debian package 'time') is needed for peak memory"
  rss="$(mktemp)"
  t0=$(date +%s.%N)
  /usr/bin/time -f %M -o "$rss" "$@" >"$log" 2>&1 || { rm -f "$rss"; data_error "failed ($(tail -n 1 "$log")): $*"; }
  t1=$(date +%s.%N)
  /usr/bin/python3 -c "import sys; print(f'{$t1 - $t0:.3f}', f'{int(open(sys.argv[1]).read().split()[-1]) / 1024:.1f}')" "$rss"
  rm -f "$rss"
}

# lowp_tokens_per_s LOWP MODEL NEW_TOKENS THREADS [RECIPE]: `lowp generate --timing` (its output
# to $log, which the caller sets) under RECIPE (default fp32); prints the generated tokens per
# second it reports.
lowp_tokens_per_s() {
  local rate
  "$1" generate --model "$2" --max-tokens "$3" --threads "$4" --recipe "${5:-fp32}" --timing >"$log" 2>&1 ||
    data_error "lowp generate failed: $(tail -n 1 "$log")"
  rate=$(sed -n 's/^generated [0-9]* tokens in [0-9.]* s: \([0-9.]*\) tokens\/s$/\1/p' "$log" | tail -n 1)
  [[ -n "$rate" ]] || data_error "lowp generate printed no 'generated ... tokens/s' line"
  echo "$rate"
}

# llama_cpp_build DIR JOBS TARGET...: configures and builds llama.cpp's TARGETs from
# $LLAMA_CPP_DIR into DIR (reused when already built) and prints DIR/bin. Its tools are
# examples/ in older checkouts and tools/ in newer ones: both switches are on.
llama_cpp_build() {
  local dir="$1" jobs="$2"
  shift 2
  echo "building $* in $dir" >&2
  cmake -S "$LLAMA_CPP_DIR" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=OFF >/dev/null 2>&1 ||
    data_error "cmake could not configure $LLAMA_CPP_DIR"
  cmake --build "$dir" -j "$jobs" --target "$@" >/dev/null || data_error "$* did not build in $dir"
  echo "$dir/bin"
}

ratio() { /usr/bin/python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f'{a / b:.2f}' if b > 0 else 'n/a')" "$1" "$2"; }
