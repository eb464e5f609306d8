#!/usr/bin/env python3
"""Seeds for fuzz_gguf: one tiny llama GGUF per ggml tensor type lowp decodes, so that mutation
starts inside every decoder of accuracy/src/io/ggml/.

usage: make_gguf_seeds.py OUT_DIR

The model: dim 8, hidden 256 (a whole 256-element super-block per row of ffn_down), one layer,
2 heads, 1 KV head, vocab 16, context 16. ffn_down (256 x 8) is stored in the seed's type; the
other tensors are F32 (F16 for ffn_gate / ffn_up). Block bytes are seeded pseudo-random values in
[0, 0x3b], so every float16/bfloat16/E8M0/E4M3 scale field decodes to a finite value below 1.
"""
import os
import random
import struct
import sys

# ggml type number: (name, elements per block, bytes per block), as ggml defines them.
TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 30: ("BF16", 1, 2),
    2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136),
    29: ("IQ1_M", 256, 56), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17), 40: ("NVFP4", 64, 36), 41: ("Q1_0", 128, 18), 42: ("Q2_0", 64, 18),
}
DIM, HIDDEN, HEADS, KV_HEADS, VOCAB, CTX = 8, 256, 2, 1, 16, 16


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def make(type_no, rng):
    name, block, block_bytes = TYPES[type_no]
    kv_dim = DIM // HEADS * KV_HEADS
    f32 = lambda n, scale: struct.pack(f"<{n}f", *[rng.uniform(-scale, scale) for _ in range(n)])
    f16 = lambda n, scale: struct.pack(f"<{n}e", *[rng.uniform(-scale, scale) for _ in range(n)])
    n_down = HIDDEN * DIM
    down = bytes(rng.randrange(0, 0x3C) for _ in range(n_down // block * block_bytes))
    # (name, ne, ggml type, data), ne0 first.
    tensors = [
        ("token_embd.weight", [DIM, VOCAB], 0, f32(DIM * VOCAB, 1.0)),
        ("blk.0.attn_norm.weight", [DIM], 0, f32(DIM, 1.0)),
        ("blk.0.attn_q.weight", [DIM, DIM], 0, f32(DIM * DIM, 0.3)),
        ("blk.0.attn_k.weight", [DIM, kv_dim], 0, f32(DIM * kv_dim, 0.3)),
        ("blk.0.attn_v.weight", [DIM, kv_dim], 0, f32(DIM * kv_dim, 0.3)),
        ("blk.0.attn_output.weight", [DIM, DIM], 0, f32(DIM * DIM, 0.3)),
        ("blk.0.ffn_norm.weight", [DIM], 0, f32(DIM, 1.0)),
        ("blk.0.ffn_gate.weight", [DIM, HIDDEN], 1, f16(DIM * HIDDEN, 0.3)),
        ("blk.0.ffn_up.weight", [DIM, HIDDEN], 1, f16(DIM * HIDDEN, 0.3)),
        ("blk.0.ffn_down.weight", [HIDDEN, DIM], type_no, down),
        ("output_norm.weight", [DIM], 0, f32(DIM, 1.0)),
    ]
    kv = [("general.architecture", 8, gguf_string("llama")),
          ("general.name", 8, gguf_string("lowp fuzz seed " + name))]
    for key, v in [("embedding_length", DIM), ("feed_forward_length", HIDDEN), ("block_count", 1),
                   ("attention.head_count", HEADS), ("attention.head_count_kv", KV_HEADS), ("context_length", CTX)]:
        kv.append(("llama." + key, 4, struct.pack("<I", v)))
    kv.append(("llama.attention.layer_norm_rms_epsilon", 6, struct.pack("<f", 1e-5)))
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for key, t, v in kv:
        head += gguf_string(key) + struct.pack("<I", t) + v
    data, offsets = b"", []
    for _, _, _, d in tensors:
        data += b"\0" * (-len(data) % 32)
        offsets.append(len(data))
        data += d
    for (tname, ne, t, _), off in zip(tensors, offsets):
        head += gguf_string(tname) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne) + struct.pack("<IQ", t, off)
    head += b"\0" * (-len(head) % 32)
    return head + data


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for type_no, (name, _, _) in TYPES.items():
        path = os.path.join(out, f"tiny-{name}.gguf")
        blob = make(type_no, random.Random(type_no))
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)


if __name__ == "__main__":
    main()
