#!/usr/bin/python3
"""Memory and time of `lowp eval` on a Llama-3.1-8B-shaped bf16 checkpoint (synthetic weights).

Writes a 16 GB safetensors folder (dim 4096, 32 layers, 32 heads, 8 KV heads, hidden 14336,
vocab 128256; bf16 values N(0, 0.02) tiled from a random pool) under a temporary directory,
evaluates 512 tokens in one window with the fp32 recipe, prints the wall time and the peak RSS
against the file size, and deletes the checkpoint.

usage: scripts/bench_8b_memory.py LOWP_BINARY [--tmp DIR] [--threads N] [--keep]
"""
import argparse
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

DIM, LAYERS, HEADS, KV_HEADS, HIDDEN, VOCAB = 4096, 32, 32, 8, 14336, 128256


def tensors():
    kv = DIM // HEADS * KV_HEADS
    yield "model.embed_tokens.weight", (VOCAB, DIM)
    for l in range(LAYERS):
        p = f"model.layers.{l}."
        yield p + "input_layernorm.weight", (DIM,)
        yield p + "self_attn.q_proj.weight", (DIM, DIM)
        yield p + "self_attn.k_proj.weight", (kv, DIM)
        yield p + "self_attn.v_proj.weight", (kv, DIM)
        yield p + "self_attn.o_proj.weight", (DIM, DIM)
        yield p + "post_attention_layernorm.weight", (DIM,)
        yield p + "mlp.gate_proj.weight", (HIDDEN, DIM)
        yield p + "mlp.up_proj.weight", (HIDDEN, DIM)
        yield p + "mlp.down_proj.weight", (DIM, HIDDEN)
    yield "model.norm.weight", (DIM,)
    yield "lm_head.weight", (VOCAB, DIM)


def bf16(x):
    """float32 -> bfloat16 bits, round to nearest even (finite inputs)."""
    u = x.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def write_checkpoint(d):
    rng = np.random.default_rng(8)
    pool = bf16(rng.normal(0.0, 0.02, 1 << 25))  # 64 MB of weights, tiled with shifting offsets
    ones = bf16(np.ones(DIM))
    header, offset = {}, 0
    for name, shape in tensors():
        n = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for i, (name, shape) in enumerate(tensors()):
            if len(shape) == 1:
                f.write(ones.tobytes())
                continue
            left, start = int(np.prod(shape)), (i * 7919) % pool.size
            while left:
                chunk = pool[start:start + left]
                f.write(chunk.tobytes())
                left -= chunk.size
                start = 0
    config = {"model_type": "llama", "hidden_size": DIM, "intermediate_size": HIDDEN, "num_hidden_layers": LAYERS,
              "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "vocab_size": VOCAB,
              "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
              "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(d, "tokens.txt"), "w") as f:
        f.write("\n".join(str(int(t)) for t in rng.integers(0, VOCAB, 512)) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lowp")
    ap.add_argument("--tmp", default=tempfile.gettempdir())
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--keep", action="store_true", help="keep the checkpoint (default: delete it)")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="lowp_8b_", dir=a.tmp)
    try:
        t0 = time.time()
        write_checkpoint(d)
        size = os.path.getsize(os.path.join(d, "model.safetensors"))
        print(f"checkpoint {size / 1e9:.2f} GB written in {time.time() - t0:.0f} s", flush=True)
        cmd = [a.lowp, "eval", "--model", d, "--tokens", os.path.join(d, "tokens.txt"), "--ctx", "512",
               "--threads", str(a.threads)]
        print("$ " + " ".join(cmd), flush=True)
        t0 = time.time()
        r = subprocess.run(cmd)
        wall = time.time() - t0
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        rss = ru.ru_maxrss * 1024
        print(f"exit {r.returncode}; wall {wall:.1f} s; CPU {ru.ru_utime + ru.ru_stime:.1f} s; "
              f"peak RSS {rss / 1e9:.2f} GB = {rss / size:.3f} x the file ({size / 1e9:.2f} GB)")
        return r.returncode
    finally:
        if not a.keep:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
