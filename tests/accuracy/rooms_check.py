#!/usr/bin/python3
"""accuracy/'s parts include only the parts before them (README's layout table): every
#include "part/..." in accuracy/src/<part>/ and every public header's include names a part that
comes earlier in ORDER, or its own. Prints each arrow that points back up and exits 1.
    rooms_check.py ACCURACY_DIR"""
import os
import re
import sys

ORDER = ["dist", "file", "report", "optim", "recipe", "model", "io", "tokenizer", "eval", "train", "sweep", "cli"]
# The part whose API each public header is (include/lowp/accuracy/<name>.hpp).
PUBLIC = {
    "recipe": "recipe", "tensor_error": "model", "model": "model", "memory": "model", "sample": "model",
    "decoder": "model", "calibrate": "model", "loaders": "io", "tokenizer": "tokenizer", "eval_text": "tokenizer",
    "eval": "eval",
    "metrics": "eval", "base_logits": "eval", "train_linears": "train", "model_sweep": "sweep", "report": "sweep",
    "sensitivity": "sweep", "search": "sweep", "tensor_sweep": "sweep", "cli": "cli",
}


def main(root):
    problems = []
    files = []
    for d, _, names in os.walk(os.path.join(root, "src")):
        files += [os.path.join(d, n) for n in names if n.endswith((".cpp", ".hpp", ".inc"))]
    pub = os.path.join(root, "include", "lowp", "accuracy")
    files += [os.path.join(pub, n) for n in os.listdir(pub)]

    def part_of_include(inc):
        m = re.fullmatch(r"lowp/accuracy/(\w+)\.hpp", inc)
        if m:
            if m.group(1) not in PUBLIC:
                problems.append(f"{inc}: give it a part in PUBLIC ({__file__})")
                return None
            return PUBLIC[m.group(1)]
        head = inc.split("/", 1)[0]
        return head if "/" in inc and os.path.isdir(os.path.join(root, "src", head)) else None

    for f in sorted(files):
        rel = os.path.relpath(f, root)
        if rel.startswith("src"):
            part = rel.split(os.sep)[1]
        else:
            part = part_of_include("lowp/accuracy/" + os.path.basename(f))
        if part not in ORDER:
            problems.append(f"{rel}: part '{part}' is not in ORDER ({__file__})")
            continue
        for line_no, line in enumerate(open(f, encoding="utf-8"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            dep = part_of_include(m.group(1))
            if dep and dep in ORDER and ORDER.index(dep) > ORDER.index(part):
                problems.append(f"{rel}:{line_no}: {part} includes {m.group(1)} ({dep} comes after {part})")
    for p in problems:
        print(p)
    print(f"{len(files)} files, {len(problems)} arrows back up or unplaced headers")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "accuracy")))
