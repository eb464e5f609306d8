#!/usr/bin/env python3
"""A hostile checkpoint is refused: `lowp eval --model FILE --tokens ids` (ids 1 2 3 0) exits 1
with exactly one stderr line naming the file, no stdout, within MAX_MB of peak memory and
10 seconds. Exit 77 (a CTest skip) when FILE is absent (../shared not checked out).
usage: refuses_one_line.py LOWP FILE MAX_MB"""
import os
import resource
import subprocess
import sys
import tempfile

lowp, model, max_mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
if not os.path.exists(model):
    print(f"skipped: {model} is absent")
    sys.exit(77)
with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    f.write("1\n2\n3\n0\n")
    ids = f.name
try:
    r = subprocess.run([lowp, "eval", "--model", model, "--tokens", ids], capture_output=True, text=True, timeout=10)
finally:
    os.unlink(ids)
peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"exit {r.returncode}, peak {peak_mb:.0f} MB\nstdout: {r.stdout!r}\nstderr: {r.stderr!r}")
lines = r.stderr.splitlines()
ok = (r.returncode == 1 and r.stdout == "" and len(lines) == 1 and lines[0].startswith("lowp eval: ")
      and os.path.basename(model.rstrip("/")) in lines[0] and "out of memory" not in lines[0]
      and peak_mb <= max_mb)
sys.exit(0 if ok else 1)
