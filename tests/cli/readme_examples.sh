#!/bin/sh
# Runs the README's `lowp` examples (the ```sh block under "## The `lowp` program") verbatim, in a
# scratch copy of the layout they expect (build/bin/lowp, ../shared), and checks what they
# claim: each exits 0; a trailing "# 0x.." comment is the exact output (lines joined by ", ");
# the stochastic example prints eight lines holding both neighbours; files land only in out/.
# Usage: readme_examples.sh <lowp binary> <source dir> <shared dir> <scratch dir>
set -eu
lowp=$1 src=$2 shared=$3 work=$4

rm -rf "$work"
mkdir -p "$work/repo/build/bin"
ln -s "$lowp" "$work/repo/build/bin/lowp"
have_shared=0
if [ -d "$shared" ]; then
  ln -s "$(cd "$shared" && pwd)" "$work/shared"
  have_shared=1
fi

# The block, with "\"-continued lines joined.
awk '/^## The `lowp` program/ { sec = 1 } sec && /^```sh$/ { inb = 1; next } inb && /^```$/ { exit }
     inb { if (sub(/\\$/, "")) { cont = cont $0; next } print cont $0; cont = "" }' \
  "$src/README.md" >"$work/examples.txt"
[ -s "$work/examples.txt" ] || { echo "no examples block found in README.md"; exit 1; }

failed=0 ran=0
while IFS= read -r cmd; do
  case "$cmd" in *../shared*) if [ "$have_shared" = 0 ]; then echo "skipped (no ../shared): $cmd"; continue; fi ;; esac
  ran=$((ran + 1))
  if ! out=$(cd "$work/repo" && OMP_WAIT_POLICY=passive sh -c "$cmd" 2>"$work/err"); then
    echo "FAILED (exit status): $cmd"; cat "$work/err"; failed=1; continue
  fi
  comment=$(printf '%s\n' "$cmd" | sed -n 's/.*  # \(0x.*\)$/\1/p')
  case "$cmd" in
    *"--round stochastic"*)
      lines=$(printf '%s\n' "$out" | wc -l)
      distinct=$(printf '%s\n' "$out" | sort -u | tr '\n' ';')
      # The comment names the two neighbours ("0x38 1 or 0x39 1.125"): both must appear.
      expected=$(printf '%s\n' "$comment" | sed 's/ or /;/')";"
      if [ "$lines" != 8 ] || [ "$distinct" != "$expected" ]; then
        echo "FAILED (eight repeats, both neighbours $expected): $cmd"; printf '%s\n' "$out"; failed=1
      fi ;;
    *)
      if [ -n "$comment" ]; then
        got=$(printf '%s\n' "$out" | paste -sd ';' | sed 's/;/, /g')
        if [ "$got" != "$comment" ]; then echo "FAILED (prints '$got', README says '$comment'): $cmd"; failed=1; fi
      fi ;;
  esac
done <"$work/examples.txt"

# Everything written went to out/, which .gitignore covers.
stray=$(cd "$work/repo" && ls -A | grep -v -x -e build -e out || true)
if [ -n "$stray" ]; then echo "FAILED: examples wrote outside out/: $stray"; failed=1; fi
grep -q -x '/out/' "$src/.gitignore" || { echo "FAILED: .gitignore does not cover /out/"; failed=1; }
for f in s.csv s.svg; do [ -s "$work/repo/out/$f" ] || { echo "FAILED: out/$f not written"; failed=1; }; done
if [ "$have_shared" = 1 ]; then
  for f in s.json kld.svg; do [ -s "$work/repo/out/$f" ] || { echo "FAILED: out/$f not written"; failed=1; }; done
fi
[ "$failed" = 0 ] && echo "README examples: $ran run, all as the README says"
rm -rf "$work"
exit "$failed"
