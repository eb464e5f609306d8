"""encode/decode/pack/unpack: every preset and rounding mode against the `lowp cast` program,
round trips, errors, no writes to inputs, and concurrent calls from threads."""
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

lowp = pytest.importorskip("lowp", reason="the lowp Python module is not built (build target lowp_python)")

MODES = ["nearest", "away", "zero", "up", "down", "odd", "stochastic"]
NAMES = [f["name"] for f in lowp.formats()]


def run_cli(cli, args, lines):
    r = subprocess.run([cli, *args], input="".join(l + "\n" for l in lines), capture_output=True, text=True,
                       check=True)
    return [int(line.split()[0], 16) for line in r.stdout.splitlines()]


def inputs_for(name, n=96, seed=5):
    """Values of the format, midpoints, overflow and random values, as float32."""
    info = next(f for f in lowp.formats() if f["name"] == name)
    rng = np.random.default_rng(seed)
    top = min(info["max"], 3.0e38)
    x = np.concatenate([rng.uniform(-top * 1.2, top * 1.2, n), rng.standard_normal(n) * info["min_normal"] * 4,
                        rng.standard_normal(n), [0.0, -0.0, np.inf, -np.inf, np.nan, top, -top]])
    with np.errstate(over="ignore"):
        return x.astype(np.float32)


def as_line(v):
    return "nan" if np.isnan(v) else "inf" if v == np.inf else "-inf" if v == -np.inf else float(v).hex()


@pytest.mark.parametrize("name", NAMES)
def test_encode_matches_cli_every_mode(cli, name):
    x = inputs_for(name)
    lines = [as_line(v) for v in x]
    for mode in MODES:
        for saturate in (False, True):
            args = ["cast", "--to", name, "--round", mode, "--seed", "42"] + (["--saturate"] if saturate else [])
            want = run_cli(cli, args, lines)
            got = lowp.encode(x, name, rounding=mode, saturate=saturate, seed=42)
            assert got.tolist() == want, f"{name} {mode} saturate={saturate}"


@pytest.mark.parametrize("name", [n for n in NAMES if next(f for f in lowp.formats() if f["name"] == n)["bits"] <= 8])
def test_decode_matches_cli(cli, name):
    bits = next(f for f in lowp.formats() if f["name"] == name)["bits"]
    codes = np.arange(1 << bits)
    if name.endswith("_sym"):  # the most negative code is never produced; the program rejects it
        codes = codes[codes != 1 << (bits - 1)]
    r = subprocess.run([cli, "decode", "--from", name], input="".join(f"{c:x}\n" for c in codes),
                       capture_output=True, text=True, check=True)
    want = np.array([float(line.split()[1]) for line in r.stdout.splitlines()])
    got = lowp.decode(codes, name).astype(np.float64)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all() and np.array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0])), name


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_every_code(name):
    info = next(f for f in lowp.formats() if f["name"] == name)
    if info["bits"] > 16:
        pytest.skip(f"{name}: {info['bits']} bits, too many codes to enumerate")
    codes = np.arange(1 << info["bits"]).astype(info["dtype"])
    values = lowp.decode(codes, name)
    back = lowp.encode(values, name)
    keep = ~np.isnan(values)
    if info["kind"] == "integer" and name.endswith("_sym"):
        keep &= values >= -(2 ** (info["bits"] - 1) - 1)
    assert np.array_equal(back[keep], codes[keep]), name
    # NaN codes come back as the canonical NaN of their sign.
    nan_codes = lowp.encode(values[~keep & np.isnan(values)], name)
    assert np.all(np.isnan(lowp.decode(nan_codes, name)))


@pytest.mark.parametrize("name", ["float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e4m3fn", "bfloat16"])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 7, 1000, 70001])
def test_pack_unpack(name, n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    codes = lowp.encode(x, name)
    packed = lowp.pack(codes, name)
    # The library's own packed storage (encode_f32) is the reference for pack.
    assert np.array_equal(packed, lowp.encode(x, name, packed=True))
    assert np.array_equal(lowp.unpack(packed, name, count=n), codes)
    assert np.array_equal(lowp.decode(codes, name).view(np.uint32), lowp.fake_quant(x, f"{name}:none").view(np.uint32))


def test_shapes_and_dtypes():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert lowp.encode(x, "e4m3").shape == (2, 3, 4) and lowp.encode(x, "e4m3").dtype == np.uint8
    assert lowp.encode(x, "bf16").dtype == np.uint16 and lowp.encode(x, "tf32").dtype == np.uint32
    assert lowp.encode(x, "e2m1").dtype == np.uint8
    assert lowp.decode(lowp.encode(x, "bf16"), "bf16").shape == (2, 3, 4)
    assert np.array_equal(lowp.decode([0x38, 0x40], "e4m3"), [1.0, 2.0])  # Python ints are fine
    assert lowp.encode(np.float64(1.5).reshape(1), "e4m3")[0] == 0x3C  # float64 input is cast to float32


def test_errors():
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="unknown format 'nope'"):
        lowp.encode(x, "nope")
    with pytest.raises(ValueError, match="unknown rounding mode 'sideways'"):
        lowp.encode(x, "e4m3", rounding="sideways")
    with pytest.raises(ValueError, match="integer array"):
        lowp.decode(x, "e4m3")
    with pytest.raises(lowp.Error, match=r"decode: code 0x10 at index 2 is not a .*float4_e2m1fn code"):
        lowp.decode(np.array([1, 2, 16], np.uint8), "e2m1")
    with pytest.raises(lowp.Error, match="are not float8_e4m3fn codes"):
        lowp.decode(np.array([1, 256]), "e4m3")
    with pytest.raises(lowp.Error, match="are not float8_e4m3fn codes"):
        lowp.decode(np.array([-1]), "e4m3")
    with pytest.raises(lowp.Error, match="at index 1 is not a tfloat32 code"):
        lowp.decode(np.array([1, 1 << 19], np.uint32), "tf32")
    with pytest.raises(ValueError, match="fewer than 9"):
        lowp.unpack(np.zeros(4, np.uint8), "e2m1", count=9)
    with pytest.raises(ValueError, match="groups of 3"):
        lowp.unpack(np.zeros(4, np.uint8), "e2m3")
    assert issubclass(lowp.Error, RuntimeError)


def test_inputs_are_not_written_and_not_copied():
    base = np.linspace(-500, 500, 4096, dtype=np.float32)
    keep = base.copy()
    view = base[1024:3072]  # a C-contiguous view into a larger array
    view.flags.writeable = False  # the binding reads it in place; a write would raise
    for fn in (lambda v: lowp.encode(v, "e4m3"), lambda v: lowp.fake_quant(v, "mxfp4"),
               lambda v: lowp.fwht(v), lambda v: lowp.quantize(v, "e4m3:row").dequantize()):
        out = fn(view)
        assert not np.shares_memory(out, base)
    assert np.array_equal(base, keep)
    q = lowp.quantize(view, "e4m3:row")
    assert np.shares_memory(q.codes, q.packed_codes)  # .codes is a view of the stored codes
    assert not q.codes.flags.writeable


def test_stochastic_is_reproducible_and_position_based():
    x = np.full(100000, 1.02, np.float32)
    a = lowp.encode(x, "e4m3", rounding="stochastic", seed=7)
    assert np.array_equal(a, lowp.encode(x, "e4m3", rounding="stochastic", seed=7))
    assert not np.array_equal(a, lowp.encode(x, "e4m3", rounding="stochastic", seed=8))
    # Element i's random bits depend on its index only: a slice starting at 0 agrees.
    assert np.array_equal(a[:1000], lowp.encode(x[:1000], "e4m3", rounding="stochastic", seed=7))
    up = np.mean(lowp.decode(a, "e4m3") > 1.0)  # 1.02 lies 16% of the way from 1 to 1.125
    assert 0.15 < up < 0.17


def test_concurrent_calls_from_threads():
    rng = np.random.default_rng(3)
    xs = [(rng.standard_normal((256, 1024)) * 10).astype(np.float32) for _ in range(8)]
    jobs = [(x, fmt, seed) for x in xs for fmt, seed in (("e4m3", 1), ("e2m1", 2), ("bf16", 3))]
    serial = [lowp.encode(x, f, rounding="stochastic", seed=s) for x, f, s in jobs]
    serial_fq = [lowp.fake_quant(x, "nvfp4") for x in xs]
    with ThreadPoolExecutor(max_workers=4) as pool:
        parallel = list(pool.map(lambda j: lowp.encode(j[0], j[1], rounding="stochastic", seed=j[2]), jobs))
        parallel_fq = list(pool.map(lambda x: lowp.fake_quant(x, "nvfp4"), xs))
        decoded = list(pool.map(lambda c: lowp.decode(c, "e4m3"), serial[::3]))
    assert all(np.array_equal(a, b) for a, b in zip(serial, parallel))
    assert all(np.array_equal(a, b) for a, b in zip(serial_fq, parallel_fq))
    assert all(np.array_equal(d, lowp.decode(c, "e4m3")) for d, c in zip(decoded, serial[::3]))


def test_formats_table(cli):
    fs = lowp.formats()
    names = {f["name"] for f in fs}
    r = subprocess.run([cli, "formats"], capture_output=True, text=True, check=True)
    listed = {line.split()[0] for line in r.stdout.splitlines()[1:] if line.strip()}
    assert names <= listed | {"name"}
    e4 = next(f for f in fs if f["name"] == "float8_e4m3fn")
    assert (e4["max"], e4["nan"], e4["inf"], e4["bits"], e4["bias"]) == (448.0, 0x7F, None, 8, 7)
