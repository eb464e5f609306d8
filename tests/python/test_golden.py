"""`lowp golden` files read back with numpy alone and re-derived bit for bit.

The reader below parses safetensors itself (8-byte header length, JSON header, raw bytes); the
element and scale formats are built here from their definitions (E2M1, E4M3, UE4M3 value grids
from exponent, mantissa and bias), and each spec's scale arithmetic is written out from its
published definition: NVFP4 as torchao computes it, OCP MX (floor) and torchao's rowwise
power-of-two float8 scaling (docs/golden.md, docs/quantization.md "Scale rules").
"""
import json
import pathlib
import subprocess

import numpy as np
import pytest

F32 = np.float32


def read_safetensors(path):
    raw = pathlib.Path(path).read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n :]
    dtypes = {"F32": "<f4", "U8": "u1", "U16": "<u2", "U32": "<u4"}
    tensors = {}
    end = 0
    for name, t in header.items():
        a, b = t["data_offsets"]
        end = max(end, b)
        arr = np.frombuffer(data[a:b], dtype=dtypes[t["dtype"]])
        tensors[name] = arr.reshape(t["shape"])
    assert end == len(data), "bytes after the last tensor"
    return tensors, meta


def minifloat_grid(ebits, mbits, max_value):
    """Non-negative values of a minifloat by code (bias 2^(E-1) - 1), up to max_value."""
    bias = 2 ** (ebits - 1) - 1
    vals = []
    for code in range(2 ** (ebits + mbits)):
        e, m = code >> mbits, code & ((1 << mbits) - 1)
        v = (m / 2**mbits) * 2.0 ** (1 - bias) if e == 0 else (1 + m / 2**mbits) * 2.0 ** (e - bias)
        if v > max_value:
            break
        vals.append(v)
    return np.array(vals)


E2M1 = minifloat_grid(2, 1, 6.0)  # 0 .. 6, codes 0..7
E4M3 = minifloat_grid(4, 3, 448.0)  # 0 .. 448, codes 0..126 (0x7f is NaN)


def round_to_grid(y, grid):
    """Codes (magnitude index) of |y| rounded to nearest, ties to the even code, saturating."""
    a = np.abs(y.astype(np.float64))
    i = np.clip(np.searchsorted(grid, a, side="right") - 1, 0, len(grid) - 1)
    j = np.minimum(i + 1, len(grid) - 1)
    lo, hi = grid[i], grid[j]
    up = (a - lo > hi - a) | ((a - lo == hi - a) & (i % 2 == 1))
    idx = np.where(up & (j > i), j, i)
    return np.where(a >= grid[-1], len(grid) - 1, idx)


def signed_codes(y, grid, sign_bit):
    idx = round_to_grid(y, grid)
    return (idx | np.where(np.signbit(y), sign_bit, 0)).astype(np.uint32)


def decode(codes, grid, sign_bit):
    mag = grid[codes & (sign_bit - 1)]
    return np.where(codes & sign_bit, -mag, mag)


def finite_amax(x, axis=None):
    a = np.where(np.isfinite(x), np.abs(x), F32(0))
    return a.max(axis=axis)


def golden(cli, tmp_path, spec, rows, cols, seed):
    out = tmp_path / f"{spec.replace(':', '_')}.safetensors"
    r = subprocess.run([cli, "golden", "--spec", spec, "--rows", str(rows), "--cols", str(cols),
                        "--seed", str(seed), "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    t, meta = read_safetensors(out)
    assert meta["lowp_golden_layout"] == "1" and meta["spec"] == spec and meta["seed"] == str(seed)
    assert (meta["rows"], meta["cols"]) == (str(rows), str(cols))
    x = t["input"]
    assert x.shape == (rows, cols) and x.dtype == np.float32
    assert np.all(np.isfinite(x))
    return t, meta, x


def check_packed_fp4(t):
    codes = t["codes"].reshape(-1)
    packed = t["codes_packed"]
    assert packed.size == (codes.size + 1) // 2
    lo, hi = packed & 0xF, packed >> 4
    unpacked = np.stack([lo, hi], axis=1).reshape(-1)[: codes.size]
    np.testing.assert_array_equal(unpacked, codes)  # element 2k in the low nibble


@pytest.mark.parametrize("seed", [0, 7])
def test_nvfp4(cli, tmp_path, seed):
    rows, cols = 24, 96
    t, meta, x = golden(cli, tmp_path, "nvfp4", rows, cols, seed)
    assert meta["scale_rule"] == "nvfp4" and meta["block"] == "16"
    # Level 1: float32 tensor scale amax / (448 * 6).
    amax = finite_amax(x)
    ts = F32(amax) / F32(448.0 * 6.0) if amax > 0 else F32(1)
    assert t["tensor_scale"].shape == () and t["tensor_scale"].view(np.uint32) == np.array(ts).view(np.uint32)
    # Level 2: UE4M3((block_amax / 6) / ts), the quotient clamped to [2^-6, 448], nearest-even.
    blocks = x.reshape(rows, cols // 16, 16)
    bamax = finite_amax(blocks, axis=2).astype(F32)
    q = np.clip((bamax / F32(6.0)) / ts, F32(2.0**-6), F32(448.0))
    s_codes = round_to_grid(q, E4M3).astype(np.uint8)
    np.testing.assert_array_equal(t["scale_codes"], s_codes)
    s_vals = E4M3[s_codes].astype(F32)
    np.testing.assert_array_equal(t["scales"], s_vals)
    # Elements: cast(x / (ts * bs)) to E2M1, value code * (ts * bs), all float32.
    total = (ts * s_vals)[:, :, None]
    codes = signed_codes(blocks / total, E2M1, 8).astype(np.uint8)
    np.testing.assert_array_equal(t["codes"], codes.reshape(rows, cols))
    check_packed_fp4(t)
    deq = (decode(codes, E2M1, 8).astype(F32) * total).reshape(rows, cols)
    np.testing.assert_array_equal(t["dequantized"].view(np.uint32), deq.astype(F32).view(np.uint32))
    assert len(np.unique(s_codes)) > 4, "the input should give varied block scales"


@pytest.mark.parametrize("seed", [0, 3])
def test_mxfp4(cli, tmp_path, seed):
    rows, cols = 16, 128
    t, meta, x = golden(cli, tmp_path, "mxfp4", rows, cols, seed)
    assert meta["scale_rule"] == "mx" and "tensor_scale" not in t
    # OCP MX: E8M0 scale 2^(floor(log2 amax) - 2) (E2M1's largest 6 = 1.5 * 2^2), clamped to
    # [-127, 127]; an all-zero block gets 2^-127.
    blocks = x.reshape(rows, cols // 32, 32).astype(np.float64)
    bamax = finite_amax(blocks, axis=2)
    e = np.where(bamax > 0, np.frexp(bamax)[1] - 1 - 2, -127)  # frexp: bamax = m 2^k, m in [0.5, 1)
    e = np.clip(e, -127, 127).astype(np.int64)
    np.testing.assert_array_equal(t["scale_codes"], (e + 127).astype(np.uint8))
    scale = np.ldexp(1.0, e)
    np.testing.assert_array_equal(t["scales"].astype(np.float64), scale)
    codes = signed_codes(blocks / scale[:, :, None], E2M1, 8).astype(np.uint8)
    np.testing.assert_array_equal(t["codes"], codes.reshape(rows, cols))
    check_packed_fp4(t)
    deq = decode(codes, E2M1, 8) * scale[:, :, None]
    np.testing.assert_array_equal(t["dequantized"].astype(np.float64), deq.reshape(rows, cols))
    assert (e == -127).any() and len(np.unique(e)) > 4, "zero blocks and varied scales expected"


def test_fp8_rowwise(cli, tmp_path):
    # fp8-rowwise's operands (quant/src/linear/linear_presets.cpp): E4M3, one power-of-two scale per row:
    # s = 448 / amax in float32, rounded down to a power of two; code = cast(x * s), value code / s.
    rows, cols = 12, 80
    t, meta, x = golden(cli, tmp_path, "e4m3:row:pow2", rows, cols, 5)
    assert "scale_codes" not in t and t["multipliers"].shape == (rows, 1)
    amax = finite_amax(x, axis=1).astype(F32)
    s = np.where(amax > 0, F32(448.0) / np.where(amax > 0, amax, F32(1)), F32(1)).astype(F32)
    s = np.ldexp(1.0, np.frexp(s.astype(np.float64))[1] - 1).astype(F32)
    np.testing.assert_array_equal(t["multipliers"][:, 0], s)
    np.testing.assert_array_equal(t["scales"][:, 0], (F32(1) / s).astype(F32))
    y = x * s[:, None]
    codes = signed_codes(y, E4M3, 0x80).astype(np.uint8)
    np.testing.assert_array_equal(t["codes"], codes)
    np.testing.assert_array_equal(t["codes_packed"], codes.reshape(-1))
    deq = (decode(codes, E4M3, 0x80).astype(F32) / s[:, None]).astype(F32)
    np.testing.assert_array_equal(t["dequantized"].view(np.uint32), deq.view(np.uint32))


def test_recipe_step(cli, tmp_path):
    # One QuantLinear step: the stored operands multiply into Y exactly as float32 GEMMs would
    # within float32 rounding; shapes and names follow docs/golden.md.
    out = tmp_path / "step.safetensors"
    r = subprocess.run([cli, "golden", "--recipe", "mxfp8-te", "--rows", "32", "--cols", "64", "--seed", "1",
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    t, meta = read_safetensors(out)
    assert meta["mode"] == "recipe" and meta["recipe"] == "mxfp8-te"
    M, K, N = 32, 64, 64
    shapes = {"X": (M, K), "W": (N, K), "dY": (M, N), "Y": (M, N), "dX": (M, K), "dW": (N, K),
              "fwd.X": (M, K), "fwd.W": (N, K), "dgrad.dY": (M, N), "dgrad.Wt": (K, N),
              "wgrad.dYt": (N, M), "wgrad.Xt": (K, M)}
    for name, shape in shapes.items():
        assert t[name].shape == shape, name
    # GEMMs from the stored operands, in float64: float32 accumulation differs from it by at
    # most K * 2^-24 * sum |a b| (a crude bound on the accumulated rounding).
    for c, a, b in (("Y", "fwd.X", "fwd.W"), ("dX", "dgrad.dY", "dgrad.Wt"), ("dW", "wgrad.dYt", "wgrad.Xt")):
        A, B = t[a].astype(np.float64), t[b].astype(np.float64)
        ref = A @ B.T
        bound = A.shape[1] * 2.0**-24 * (np.abs(A) @ np.abs(B.T)) + 1e-30
        assert np.all(np.abs(t[c] - ref) <= bound), c
    # mxfp8-te (TransformerEngine's MXFP8BlockScaling) quantizes the forward's X and W with E4M3
    # and RCEIL E8M0 scales per 1x32 block: d = amax * float32(1 / 448) in float32, scale = d
    # rounded up to a power of two; code = round(x / scale) to nearest-even, saturating.
    def mxfp8_rceil(a):
        rows, cols = a.shape
        blocks = a.reshape(rows, cols // 32, 32)
        amax = finite_amax(blocks, axis=2).astype(F32)
        d = amax * F32(1.0 / 448.0)
        m, k = np.frexp(d.astype(np.float64))
        e = np.where(d > 0, np.where(m == 0.5, k - 1, k), -127)
        scale = np.ldexp(1.0, np.clip(e, -127, 127))[:, :, None]
        return (decode(signed_codes(blocks / scale, E4M3, 0x80), E4M3, 0x80) * scale).reshape(rows, cols)

    np.testing.assert_array_equal(t["fwd.X"].astype(np.float64), mxfp8_rceil(t["X"]))
    np.testing.assert_array_equal(t["fwd.W"].astype(np.float64), mxfp8_rceil(t["W"]))
    np.testing.assert_array_equal(t["dgrad.dY"].astype(np.float64), mxfp8_rceil(t["dY"]))
    # The backward's column-wise copies, quantized from the float data along their reduction.
    np.testing.assert_array_equal(t["dgrad.Wt"].astype(np.float64), mxfp8_rceil(np.ascontiguousarray(t["W"].T)))
    np.testing.assert_array_equal(t["wgrad.dYt"].astype(np.float64), mxfp8_rceil(np.ascontiguousarray(t["dY"].T)))
    np.testing.assert_array_equal(t["wgrad.Xt"].astype(np.float64), mxfp8_rceil(np.ascontiguousarray(t["X"].T)))
    # Their codes and E8M0 scales, stored beside them: value = decode(code) * 2^(scale_code - 127).
    for op in ("fwd.X", "fwd.W", "dgrad.dY", "dgrad.Wt", "wgrad.dYt", "wgrad.Xt"):
        assert meta[op + ".codes"] == "stored", op
        rows, cols = t[op].shape
        scale = np.ldexp(1.0, t[op + ".scale_codes"].astype(int) - 127)
        assert t[op + ".scale_codes"].shape == (rows, cols // 32)
        v = decode(t[op + ".codes"].astype(np.uint32), E4M3, 0x80).reshape(rows, cols // 32, 32) * scale[:, :, None]
        np.testing.assert_array_equal(v.reshape(rows, cols), t[op].astype(np.float64))


def test_errors(cli, tmp_path):
    def run(*args):
        return subprocess.run([cli, "golden", *args], capture_output=True, text=True)

    for args in (["--spec", "nosuch", "--rows", "2", "--cols", "32"],
                 ["--spec", "mxfp4", "--rows", "2", "--cols", "33"],
                 ["--spec", "mxfp4", "--rows", "0", "--cols", "32"],
                 ["--spec", "mxfp4", "--rows", "2", "--cols", "32", "--recipe", "mxfp8"],
                 ["--recipe", "nosuch", "--rows", "2", "--cols", "32"]):
        r = run(*args, "--out", str(tmp_path / "x.safetensors"))
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("lowp golden"), r.stderr
    r = run("--spec", "mxfp4", "--rows", "2", "--cols", "32", "--out", str(tmp_path / "no" / "dir" / "x.safetensors"))
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert not list(tmp_path.glob("**/*.safetensors"))


def test_fp6_packing(cli, tmp_path):
    # 6-bit codes: four per three bytes, a little-endian 24-bit word with element 4k in bits 0-5.
    t, meta, x = golden(cli, tmp_path, "mxfp6", 4, 64, 2)
    codes = t["codes"].reshape(-1).astype(np.uint32)
    b = t["codes_packed"].astype(np.uint32).reshape(-1, 3)
    words = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
    unpacked = np.stack([(words >> (6 * k)) & 0x3F for k in range(4)], axis=1).reshape(-1)
    np.testing.assert_array_equal(unpacked, codes)
    assert codes.max() < 64
