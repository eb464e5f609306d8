"""lowp's codec against ml_dtypes' conversion semantics (mldtypes_ref.py, numpy only: ml_dtypes
itself is not installable here), bit for bit: every code decoded, every value, tie and overflow
boundary encoded, with their float32 neighbours, and a large sample of float32 bit patterns."""
import numpy as np
import pytest

from mldtypes_ref import FORMATS, Format

lowp = pytest.importorskip("lowp", reason="the lowp Python module is not built (build target lowp_python)")


def f32(values):
    return np.asarray(values, dtype=np.float64).astype(np.float32)


def neighbours(v):
    """v and its float32 neighbours on both sides."""
    v = f32(v)
    return np.concatenate([v, np.nextafter(v, np.float32(np.inf)), np.nextafter(v, np.float32(-np.inf))])


def boundary_inputs(fmt):
    vals = fmt.finite_values()
    pos = vals[vals > 0]
    mids = (vals[1:] + vals[:-1]) / 2  # every rounding tie (exact in float64)
    top = pos[-1]
    step = pos[-1] - pos[-2]
    over = [top + step / 2, top + step, 2 * top, np.float32(3.0e38)]  # overflow tie and beyond
    under = [pos[0] / 2, pos[0] / 4, 2.0 ** -149, 2.0 ** -126, 2.0 ** -127, 1.5 * 2.0 ** -127]
    base = np.concatenate([vals, mids, over, under])
    base = base[np.abs(base) < 3.4e38]
    x = neighbours(np.concatenate([base, -base]))
    special = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0x7F800000, 0xFF800000,
                        0x00000000, 0x80000000, 0x00000001, 0x80000001], dtype=np.uint32).view(np.float32)
    return np.concatenate([x, special])


def sample_inputs(n=1 << 18, seed=1):
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    normal = (rng.standard_normal(n) * rng.choice([1e-3, 0.1, 1, 30, 500, 1e5], n)).astype(np.float32)
    return np.concatenate([bits, normal])


def expect_same(fmt, x, got):
    want = fmt.encode(x)
    diff = got != want
    if fmt.family == "e8m0":  # the documented difference: lowp rounds these float32 subnormals correctly
        quirk = fmt.e8m0_quirk(x)
        assert np.all(got[quirk] == 0)
        diff &= ~quirk
    if diff.any():
        i = np.flatnonzero(diff)[:8]
        pytest.fail(f"{fmt.name}: {diff.sum()} codes differ, e.g. x={x[i].view(np.uint32)} (bits) "
                    f"lowp={got[i]} ml_dtypes={want[i]}")


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_decode_every_code(name):
    fmt = Format(name)
    codes = np.arange(1 << fmt.bits, dtype=fmt.dtype)
    got = lowp.decode(codes, name).view(np.uint32)
    want = fmt.decode_bits(codes)
    assert got.dtype == np.uint32 and np.array_equal(got, want), name


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_encode_boundaries(name):
    fmt = Format(name)
    x = boundary_inputs(fmt)
    got = lowp.encode(x, name)
    assert got.dtype == fmt.dtype
    expect_same(fmt, x, got)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_encode_sample(name):
    fmt = Format(name)
    x = sample_inputs()
    expect_same(fmt, x, lowp.encode(x, name))


def test_nan_sign_examples():
    # The examples: ml_dtypes and PyTorch give 0xFF for -466 and -NaN in float8_e4m3fn.
    x = f32([-466.0, np.nan, -np.nan, -np.inf, 466.0])
    assert list(lowp.encode(x, "float8_e4m3fn")) == [0xFF, 0x7F, 0xFF, 0xFF, 0x7F]
    assert list(lowp.encode(x, "float8_e4m3fnuz")) == [0x80] * 5
    assert list(lowp.encode(x, "float8_e5m2")) == [0xDF, 0x7E, 0xFE, 0xFC, 0x5F]
    assert list(lowp.encode(f32([-61440.0, 61440.0]), "float8_e5m2")) == [0xFC, 0x7C]  # ties to the overflow
    assert list(lowp.encode(x, "bfloat16")) == [0xC3E9, 0x7FC0, 0xFFC0, 0xFF80, 0x43E9]
    assert list(lowp.encode(f32([0.0, -0.0, 1.0, -1.0]), "float8_e8m0fnu")) == [0xFF, 0xFF, 0x7F, 0xFF]
    assert list(lowp.encode(f32([np.nan, -np.nan, 100.0, -100.0]), "float4_e2m1fn")) == [0x8, 0x0, 0x7, 0xF]
    assert np.signbit(lowp.decode(np.array([0xFF, 0x7F], np.uint8), "float8_e4m3fn")).tolist() == [True, False]


def test_float16_matches_numpy():
    # numpy's own float32 -> float16 cast is an independent IEEE oracle (quiet NaNs only: numpy
    # keeps NaN payload bits, lowp gives the canonical NaN of the sign).
    x = np.concatenate([sample_inputs(1 << 16, seed=2), boundary_inputs(Format("float8_e5m2"))])
    bits = x.view(np.uint32)
    x = x[~((bits & 0x7FFFFFFF) > 0x7F800000) | ((bits & 0x7FFFFFFF) == 0x7FC00000)]
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    assert np.array_equal(lowp.encode(x, "float16"), want)
    codes = np.arange(1 << 16, dtype=np.uint16)
    dec = lowp.decode(codes, "float16")
    ref = codes.view(np.float16).astype(np.float32)
    finite = np.isfinite(ref) | np.isinf(ref)
    assert np.array_equal(dec[finite].view(np.uint32), ref[finite].view(np.uint32))
    assert np.array_equal(np.isnan(dec), np.isnan(ref))
