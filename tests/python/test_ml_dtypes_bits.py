"""lowp's codec against ml_dtypes, bit for bit, two ways:
- ml_dtypes' own output in ../shared/formats/ml_dtypes (written by ml_dtypes' C++ code, 11 types,
  ~44,000 inputs each): every input's code and every code's decode (skipped, with the reason,
  when ../shared is absent);
- mldtypes_ref.py, a numpy model of ml_dtypes' conversion (ml_dtypes itself is not installable
  here), itself checked against the shared files: every code decoded, every value, tie and
  overflow boundary encoded, with their float32 neighbours, and a large sample of bit patterns."""
import os
import pathlib

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


SHARED_TYPES = ["float8_e3m4", "float8_e4m3", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz",
                "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
                "float4_e2m1fn"]


@pytest.fixture(scope="module")
def mldtypes_dir():
    root = pathlib.Path(__file__).resolve().parents[2]
    path = pathlib.Path(os.environ.get("LOWP_SHARED_DIR") or root.parent / "shared") / "formats" / "ml_dtypes"
    if not path.is_dir():
        pytest.skip(f"ml_dtypes' reference codes are not available at {path} (set LOWP_SHARED_DIR)")
    return path


def shared_files(path, name):
    x = np.fromfile(path / f"{name}.in.f32", dtype="<f4")
    codes = np.fromfile(path / f"{name}.codes", dtype=np.uint8)
    dec = np.fromfile(path / f"{name}.decode.f32", dtype="<f4")
    assert len(x) == len(codes) > 40000
    return x, codes, dec


def same_decode(got, want):
    """Equal float32 bits, or both NaN with the same sign."""
    g, w = got.view(np.uint32), want.view(np.uint32)
    nan = np.isnan(want)
    return np.where(nan, np.isnan(got) & ((g >> 31) == (w >> 31)), g == w)


@pytest.mark.parametrize("name", SHARED_TYPES)
def test_shared_codes_and_decodes(mldtypes_dir, name):
    x, want, dec = shared_files(mldtypes_dir, name)
    got = lowp.encode(x, name)
    diff = np.flatnonzero(got != want)
    assert diff.size == 0, (f"{name}: {diff.size} codes differ from ml_dtypes, e.g. x bits "
                            f"{x[diff[:6]].view(np.uint32)} lowp={got[diff[:6]]} ml_dtypes={want[diff[:6]]}")
    codes = np.arange(len(dec), dtype=np.uint8)
    ok = same_decode(lowp.decode(codes, name), dec)
    assert ok.all(), f"{name}: codes {np.flatnonzero(~ok)[:8]} decode differently from ml_dtypes"


@pytest.mark.parametrize("name", SHARED_TYPES)
def test_reference_model_agrees_with_shared(mldtypes_dir, name):
    # The second oracle below (mldtypes_ref.py) is used only where it agrees with ml_dtypes itself.
    x, want, dec = shared_files(mldtypes_dir, name)
    fmt = Format(name)
    assert np.array_equal(fmt.encode(x), want), name
    assert same_decode(fmt.decode_bits(np.arange(len(dec))).view(np.float32), dec).all(), name


def expect_same(fmt, x, got):
    want = fmt.encode(x)
    diff = got != want
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
