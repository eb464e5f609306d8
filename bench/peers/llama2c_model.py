#!/usr/bin/python3
"""A llama2.c checkpoint of a given shape with random weights, for timing lowp against run.c
(speed depends on the shape alone).

    bench/peers/llama2c_model.py OUT.bin --dim 768 --hidden 2048 --layers 12 --heads 12
        [--vocab 32000] [--seq-len 1024] [--tied] [--seed 1]

run.c's legacy format: seven int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
seq_len; a negative vocab_size means a separate classifier follows), then the float32 tensors
in its order. Norm gains are 1 and the other weights N(0, 0.02). The file is written beside
OUT and renamed into place.
"""
import argparse
import os
import struct
import sys

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('out')
    for name in ('dim', 'hidden', 'layers', 'heads'):
        p.add_argument('--' + name, type=int, required=True)
    p.add_argument('--vocab', type=int, default=32000)
    p.add_argument('--seq-len', type=int, default=1024)
    p.add_argument('--tied', action='store_true', help='the classifier is the token embedding')
    p.add_argument('--seed', type=int, default=1)
    a = p.parse_args()
    if min(a.dim, a.hidden, a.layers, a.heads, a.vocab, a.seq_len) <= 0 or a.dim % a.heads or (a.dim // a.heads) % 2:
        sys.exit('llama2c_model.py: every size must be positive and dim / heads even')
    rng = np.random.default_rng(a.seed)
    L, d, h = a.layers, a.dim, a.hidden
    tmp = a.out + '.tmp'
    with open(tmp, 'wb') as f:
        f.write(struct.pack('7i', d, h, L, a.heads, a.heads, a.vocab if a.tied else -a.vocab, a.seq_len))
        random = lambda *shape: (rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)).tofile(f)
        random(a.vocab, d)                            # token embedding
        np.ones((L, d), np.float32).tofile(f)         # attention norms
        for _ in range(4):
            random(L, d, d)                           # wq, wk, wv, wo
        np.ones((L, d), np.float32).tofile(f)         # ffn norms
        random(L, h, d), random(L, d, h), random(L, h, d)  # w1, w2, w3
        np.ones(d, np.float32).tofile(f)              # final norm
        np.zeros((2, a.seq_len, d // a.heads // 2), np.float32).tofile(f)  # freq_cis (unread)
        if not a.tied:
            random(a.vocab, d)                        # classifier
    os.replace(tmp, a.out)


if __name__ == '__main__':
    main()
