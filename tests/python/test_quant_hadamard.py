"""fake_quant/quantize against numpy implementations of the scale rules (docs/quantization.md),
fwht/Rotation against explicit Hadamard matrices, QuantLinear against numpy GEMMs."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from mldtypes_ref import Format

lowp = pytest.importorskip("lowp", reason="the lowp Python module is not built (build target lowp_python)")

E2M1, E4M3 = Format("float4_e2m1fn"), Format("float8_e4m3fn")


def weights(rows=16, cols=128, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((rows, cols)).astype(np.float32)
    w[:, 5] *= 40  # an outlier column
    w[3, 64:96] = 0  # an all-zero MX block
    return w


def decode_ref(fmt, codes):
    return fmt.decode_bits(codes).view(np.float32)


def test_mxfp4_against_numpy():
    x = weights()
    q = lowp.quantize(x, "mxfp4")
    blocks = x.reshape(16, 4, 32)
    amax = np.abs(blocks).max(axis=2)
    e = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1))) - 2, -127)  # emax of E2M1 is 2
    scale = np.ldexp(np.float32(1), np.clip(e, -127, 127).astype(np.int32)).astype(np.float32)
    codes = E2M1.encode((blocks / scale[..., None]).astype(np.float32)).reshape(16, 128)  # E2M1 saturates
    assert np.array_equal(q.codes, codes)
    assert np.array_equal(q.scales, scale.reshape(-1))
    assert np.array_equal(q.scale_codes, (np.clip(e, -127, 127) + 127).astype(np.uint8).reshape(-1))
    want = (decode_ref(E2M1, codes).reshape(16, 4, 32) * scale[..., None]).reshape(16, 128)
    assert np.array_equal(q.dequantize(), want)
    assert np.array_equal(lowp.fake_quant(x, "mxfp4"), want)
    assert q.bits_per_element == 4.25 and q.tensor_scale == 1.0 and q.shape == (16, 128)


def test_fp8_rowwise_amax_against_numpy():
    x = weights(seed=1)
    amax = np.abs(x).max(axis=1).astype(np.float32)
    s = (np.float32(448) / amax).astype(np.float32)  # the multiplier, in float32 (torchao)
    scaled = np.clip(x * s[:, None], -448, 448).astype(np.float32)  # scaled rules saturate
    codes = E4M3.encode(scaled)
    q = lowp.quantize(x, "e4m3:row")
    assert np.array_equal(q.codes, codes)
    want = (decode_ref(E4M3, codes) / s[:, None]).astype(np.float32)
    assert np.array_equal(q.dequantize(), want)
    assert np.array_equal(lowp.fake_quant(x, "e4m3:row"), want)


def test_nvfp4_tensor_scale_and_error():
    x = weights(seed=2)
    q = lowp.quantize(x, "nvfp4")
    assert q.tensor_scale == np.float32(np.abs(x).max()) / np.float32(448 * 6)
    assert q.scales.size == 16 * 128 // 16 and q.codes.dtype == np.uint8 and q.codes.max() <= 15
    rel = np.linalg.norm(q.dequantize() - x) / np.linalg.norm(x)
    assert 0.02 < rel < 0.2  # 4-bit elements: a few percent of error, not zero, not garbage


def test_quantize_errors():
    with pytest.raises(ValueError):
        lowp.fake_quant(np.ones((2, 32), np.float32), "e4m3:bogus")
    with pytest.raises(lowp.Error, match="not a multiple of the block size 32"):
        lowp.quantize(np.ones((2, 33), np.float32), "mxfp4")
    assert lowp.quantize(np.ones((2, 33), np.float32), "mxfp4:pad").codes.shape == (2, 33)


def hadamard(n):
    h = np.array([[1.0]])
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h


def test_fwht_against_matrix():
    x = np.random.default_rng(4).standard_normal((3, 256)).astype(np.float32)
    want = x.astype(np.float64) @ hadamard(256).T
    assert np.allclose(lowp.fwht(x, scale=1.0), want, rtol=0, atol=1e-4)
    assert np.allclose(lowp.fwht(x), want / 16, rtol=0, atol=1e-5)  # orthonormal by default
    with pytest.raises(ValueError, match="power of two"):
        lowp.fwht(np.ones(12, np.float32))


def test_rotations():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 64)).astype(np.float32)
    w = rng.standard_normal((4, 64)).astype(np.float32)
    r = lowp.Rotation("hadamard", 64)
    assert np.allclose(r.apply(x), x.astype(np.float64) @ hadamard(64).T / 8, atol=1e-5)
    b = lowp.Rotation("block_diagonal", 64, block=16)
    blk = np.kron(np.eye(4), hadamard(16)) / 4
    assert np.allclose(b.apply(x), x.astype(np.float64) @ blk, atol=1e-5)
    for rot in (r, b, lowp.Rotation("randomized", 64, seed=9)):
        xr = rot.apply(x)
        assert np.allclose(rot.apply_inverse(xr), x, atol=1e-5)
        assert np.allclose(np.linalg.norm(xr, axis=1), np.linalg.norm(x, axis=1), rtol=1e-5)
        assert np.allclose(xr @ rot.fold_into_weight(w).T, x @ w.T, atol=1e-4)
    rs = [lowp.Rotation("randomized", 64, seed=s).apply(x) for s in (1, 1, 2)]
    assert np.array_equal(rs[0], rs[1]) and not np.array_equal(rs[0], rs[2])
    with pytest.raises(ValueError, match="unknown rotation"):
        lowp.Rotation("spin", 64)
    with pytest.raises(ValueError):
        lowp.Rotation("block_diagonal", 64, block=24)
    with pytest.raises(ValueError, match="rows have 32 elements"):
        r.apply(np.ones((2, 32), np.float32))


def linear(preset, seed=0, bias=True):
    rng = np.random.default_rng(seed)
    layer = lowp.QuantLinear(preset, 64, 32, bias=bias)
    layer.weight = rng.standard_normal((32, 64)).astype(np.float32)
    if bias:
        layer.bias = rng.standard_normal(32).astype(np.float32)
    return layer, rng.standard_normal((16, 64)).astype(np.float32), rng.standard_normal((16, 32)).astype(np.float32)


def test_quant_linear_fp32_against_numpy():
    layer, x, dy = linear("fp32")
    w, b = layer.weight.astype(np.float64), layer.bias.astype(np.float64)
    assert np.allclose(layer.forward(x), x @ w.T + b, rtol=1e-5, atol=1e-4)
    dx = layer.backward(dy)
    assert np.allclose(dx, dy.astype(np.float64) @ w, rtol=1e-5, atol=1e-4)
    assert np.allclose(layer.weight_grad, dy.T.astype(np.float64) @ x, rtol=1e-5, atol=1e-4)
    assert np.allclose(layer.bias_grad, dy.sum(axis=0), rtol=1e-5, atol=1e-4)
    layer.backward(dy)  # gradients accumulate ...
    assert np.allclose(layer.bias_grad, 2 * dy.sum(axis=0), rtol=1e-5, atol=1e-4)
    layer.zero_grad()  # ... until zeroed
    assert not layer.weight_grad.any() and not layer.bias_grad.any()


def test_quant_linear_mxfp8_is_the_quantized_gemm():
    layer, x, _ = linear("mxfp8", seed=1, bias=False)
    fq = lambda a: lowp.fake_quant(a, "mxfp8").astype(np.float64)  # noqa: E731
    y = layer.forward(x)
    assert np.allclose(y, fq(x) @ fq(layer.weight).T, rtol=1e-5, atol=1e-4)
    assert not np.allclose(y, x.astype(np.float64) @ layer.weight.T.astype(np.float64), rtol=1e-5, atol=1e-4)
    assert layer.bias.size == 0 and layer.preset == "mxfp8"


def test_quant_linear_threads_and_errors():
    layer, x, dy = linear("nvfp4", seed=2)
    want = layer.forward(x, seed=3)
    with ThreadPoolExecutor(max_workers=4) as pool:
        outs = list(pool.map(lambda _: layer.forward(x, seed=3), range(8)))
    assert all(np.array_equal(o, want) for o in outs)
    with pytest.raises(ValueError, match="unknown"):
        lowp.QuantLinear("fp9", 64, 32)
    with pytest.raises(ValueError, match="last dimension is 63"):
        layer.forward(np.ones((2, 63), np.float32))
    with pytest.raises(ValueError, match="expected 2048 values"):
        layer.weight = np.ones(5, np.float32)
    with pytest.raises(lowp.Error):
        lowp.QuantLinear("fp32", 64, 32).backward(dy)  # no forward came first


def stack_rule_block():
    """One E4M3 block whose amax sits one ulp above 448 * 2^5: float32 log2 of amax / 448 rounds
    to exactly 5, so torchao's old RCEIL (torchao-log2) takes the scale 2^5 and cvt.rp (rceil)
    2^6; 0.0625 is E4M3's smallest subnormal 2^-9 times 2^5, so it survives 2^5 and ties to 0
    under 2^6 (docs/quantization.md, "Each stack's scale rule")."""
    x = np.zeros((1, 32), np.float32)
    x[0, 0] = np.float32(float.fromhex("0x1.c00002p+13"))  # 448 * 2^5, one ulp up
    x[0, 1] = np.float32(0.0625)
    return x


def test_stack_rules_by_name():
    x = stack_rule_block()
    assert lowp.quantize(x, "e4m3:b32:torchao-log2").scale_codes[0] == 127 + 5
    assert lowp.quantize(x, "e4m3:b32:rceil").scale_codes[0] == 127 + 6
    assert lowp.fake_quant(x, "e4m3:b32:torchao-log2")[0, 1] == np.float32(0.0625)
    assert lowp.fake_quant(x, "e4m3:b32:rceil")[0, 1] == 0
    # TransformerEngine's MXFP4 reference: a NaN poisons its block; MLX's max skips it.
    y = np.ones((1, 32), np.float32)
    y[0, 3] = np.nan
    assert np.isnan(lowp.fake_quant(y, "e2m1:b32:te-mxfp4")).all()
    m = lowp.fake_quant(y, "e2m1:b32:mlx")  # scale 2^round(log2(1/6)) = 1/8: 1 -> 8 -> 6 -> 0.75
    assert not np.isnan(m).any() and (np.delete(m[0], 3) == np.float32(0.75)).all()  # E2M1 has no NaN
