#!/bin/sh
# `mpirun -np N lowp ...` against the single-process run of the same command: stdout and every
# file it writes must be equal byte for byte (LOWP_TEST_ZERO_SECONDS=1 reports wall times as 0).
# Usage: mpi_sweep.sh <mpirun> <lowp> <scratch dir> equal <N> <lowp arguments...>
#        mpi_sweep.sh <mpirun> <lowp> <scratch dir> fail <N> <rank> <lowp arguments...>
#   equal: the files named after --csv/--json/--plot/--save-base-logits/--logits-out/--out are compared.
#   fail:  LOWP_TEST_FAIL_RANK=<rank>: the run must exit non-zero naming "rank <rank> of <N>".
# Exit 77 (CTest's SKIP_RETURN_CODE) when mpirun is absent.
set -u
mpirun=$1 lowp=$2 work=$3 mode=$4 n=$5
shift 5
if ! command -v "$mpirun" >/dev/null 2>&1; then
  echo "SKIPPED: mpirun not found (${mpirun}); apt-get install openmpi-bin"
  exit 77
fi
export LOWP_TEST_ZERO_SECONDS=1 OMP_NUM_THREADS=1
rm -rf "$work"
mkdir -p "$work/one" "$work/mpi"

if [ "$mode" = fail ]; then
  rank=$1
  shift
  LOWP_TEST_FAIL_RANK=$rank "$mpirun" --oversubscribe -np "$n" "$lowp" "$@" >"$work/out" 2>"$work/err"
  status=$?
  cat "$work/err"
  if [ "$status" -eq 0 ]; then echo "FAILED: exit status 0 with rank $rank failing"; exit 1; fi
  if ! grep -q "lowp (rank $rank of $n) sweep: LOWP_TEST_FAIL_RANK" "$work/err"; then
    echo "FAILED: no error line naming rank $rank of $n"; exit 1
  fi
  echo "ok: exit status $status, rank $rank named"
  exit 0
fi

# The arguments of each run, with output files placed in its own directory.
files=""
run() {  # $1: directory, then the command
  dir=$1
  shift
  (cd "$dir" && "$@") >"$dir/stdout" 2>"$dir/stderr"
}
prev=""
for a in "$@"; do
  case "$prev" in --csv | --json | --plot | --save-base-logits | --logits-out | --out) files="$files $a" ;; esac
  prev=$a
done

run "$work/one" "$lowp" "$@"
s1=$?
run "$work/mpi" "$mpirun" --oversubscribe -np "$n" "$lowp" "$@"
s2=$?
cat "$work/mpi/stderr"
if [ "$s1" -ne 0 ] || [ "$s2" -ne 0 ]; then
  echo "FAILED: exit status $s1 (one process), $s2 ($n ranks)"; cat "$work/one/stderr"; exit 1
fi
failed=0
for f in stdout $files; do
  if ! cmp "$work/one/$f" "$work/mpi/$f"; then
    echo "FAILED: $f differs between one process and $n ranks"
    diff "$work/one/$f" "$work/mpi/$f" | head -20
    failed=1
  fi
done
[ -s "$work/one/stdout" ] || { echo "FAILED: the run printed nothing"; failed=1; }
[ "$failed" = 0 ] && echo "ok: stdout and$files equal with $n ranks"
exit "$failed"
