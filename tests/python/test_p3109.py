"""The IEEE P3109 formats (current draft) against graphcore-research/gfloat's own output in
../shared/formats/p3109: for all 120 formats of index.tsv, by gfloat's name, every code's value
and every input's code in the five rounding modes, saturating or not. Skipped, with the
reason, when ../shared is absent."""
import os
import pathlib

import numpy as np
import pytest

lowp = pytest.importorskip("lowp", reason="the lowp Python module is not built (build target lowp_python)")

MODES = ["nearest", "zero", "up", "down", "away"]  # gfloat's file names, also lowp's rounding names


def p3109_dir():
    root = pathlib.Path(__file__).resolve().parents[2]
    return pathlib.Path(os.environ.get("LOWP_SHARED_DIR") or root.parent / "shared") / "formats" / "p3109"


def index():
    path = p3109_dir() / "index.tsv"
    if not path.is_file():
        return []
    lines = path.read_text().splitlines()[1:]
    return [dict(zip(["name", "K", "P", "signedness", "domain", "inputs", "max"], ln.split("\t"))) for ln in lines]


FORMATS = index()


@pytest.fixture(scope="module")
def files():
    if not FORMATS:
        pytest.skip(f"gfloat's P3109 reference codes are not available at {p3109_dir()} (set LOWP_SHARED_DIR)")
    return p3109_dir()


def test_index_is_complete(files):
    assert len(FORMATS) == 120


@pytest.mark.parametrize("k", range(3, 9))
def test_every_format_of_width(files, k):
    for e in (e for e in FORMATS if int(e["K"]) == k):
        name = e["name"]
        want = np.fromfile(files / f"{name}.decode.f64", dtype="<f8")
        codes = np.arange(len(want), dtype=np.uint8)
        got = lowp.decode(codes, name).astype(np.float64)
        same = np.where(np.isnan(want), np.isnan(got), (got == want) & (np.signbit(got) == np.signbit(want)))
        assert same.all(), f"{name}: codes {np.flatnonzero(~same)[:8]} decode differently from gfloat"
        assert float(np.nanmax(want[np.isfinite(want)])) == float(e["max"])
        x = np.fromfile(files / f"{name}.in.f32", dtype="<f4")
        for mode in MODES:
            for sat in (False, True):
                ref = np.fromfile(files / f"{name}.{mode}{'.sat' if sat else ''}.codes", dtype=np.uint8)
                got = lowp.encode(x, name, rounding=mode, saturate=sat)
                bad = np.flatnonzero(got != ref)
                assert bad.size == 0, (f"{name} {mode} sat={sat}: {bad.size} codes differ, e.g. x={x[bad[:5]]} "
                                       f"lowp={got[bad[:5]]} gfloat={ref[bad[:5]]}")


def test_binary8p_is_p3109_k8pPse():
    for p in range(1, 8):
        codes = np.arange(256, dtype=np.uint8)
        a, b = lowp.decode(codes, f"binary8p{p}"), lowp.decode(codes, f"p3109_k8p{p}se")
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
    assert lowp.decode(np.array([1], np.uint8), "binary8p1")[0] == 2.0 ** -63  # bias 64, as the draft


def test_stochastic_rounding_is_unbiased():
    # 0.3 lies between the neighbours 0.25 and 0.3125 of p3109_k8p3ue (2 mantissa bits); the mean of many
    # stochastically rounded copies is 0.3 within 5 standard deviations of a Bernoulli mean.
    n = 1 << 16
    x = np.full(n, 0.3, dtype=np.float32)
    v = lowp.decode(lowp.encode(x, "p3109_k8p3ue", rounding="stochastic", seed=5), "p3109_k8p3ue")
    assert set(np.unique(v).tolist()) <= {0.25, 0.3125}
    frac = (float(np.float32(0.3)) - 0.25) / 0.0625
    sd = 0.0625 * np.sqrt(frac * (1 - frac) / n)
    assert abs(v.astype(np.float64).mean() - float(np.float32(0.3))) < 5 * sd
