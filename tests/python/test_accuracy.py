"""lowp.eval and lowp.sweep on the 260K-parameter Llama in ../shared: the float64 oracle's NLL,
and the sweep's dicts against the `lowp sweep --csv` program's output."""
import csv
import pathlib
import subprocess

import numpy as np
import pytest

lowp = pytest.importorskip("lowp", reason="the lowp Python module is not built (build target lowp_python)")


def test_eval_fp32_matches_float64_oracle(shared):
    model = str(shared / "models" / "stories260K.bin")
    tokens = str(shared / "data" / "stories260K_ref" / "seqA_tokens.txt")
    r = lowp.eval(model, tokens=tokens, score_all=True)
    assert r["recipe"] == "fp32" and r["tokens"] == 256 and r["scored"] == 255 and r["nonfinite"] == 0
    assert abs(r["mean_nll"] - 2.51654) < 2e-4  # the independent float64 forward (shared/README.md)
    ids = np.loadtxt(tokens, dtype=np.int64)
    again = lowp.eval(model, tokens=ids, score_all=True, threads=1)
    assert again["mean_nll"] == r["mean_nll"]  # same bits at any thread count, list or file
    q = lowp.eval(model, tokens=list(ids), recipe="mxfp4", score_all=True)
    assert q["mean_nll"] != r["mean_nll"] and q["layers"] and all("sqnr_db" in e for e in q["layers"])


def test_eval_text_and_errors(shared):
    model = str(shared / "models" / "tinyllamas" / "stories260K.bin")
    r = lowp.eval(model, text="Once upon a time, there was a little girl named Lily.")
    assert r["tokens"] > 5 and np.isfinite(r["ppl"])
    with pytest.raises(ValueError, match="exactly one of"):
        lowp.eval(model)
    with pytest.raises(ValueError, match="unknown recipe 'nope'"):
        lowp.eval(model, tokens=[1, 2, 3], recipe="nope")
    with pytest.raises(lowp.Error, match="outside the vocabulary"):
        lowp.eval(model, tokens=[1, 2, 512])
    with pytest.raises(lowp.Error):
        lowp.eval(str(shared / "data" / "tinyshakespeare.txt"), tokens=[1, 2])
    # A model without a tokenizer (no tokenizer.bin beside this copy): the advice is Python's own.
    with pytest.raises(lowp.Error, match="no tokenizer .*give token ids with tokens=$"):
        lowp.eval(str(shared / "models" / "stories260K.bin"), text="Once upon a time")


def test_sweep_matches_cli_csv(shared, cli, tmp_path):
    model = str(shared / "models" / "stories260K.bin")
    tokens = str(shared / "data" / "stories260K_ref" / "seqA_tokens.txt")
    rows = lowp.sweep(model, tokens=tokens, recipes=["bf16", "mxfp4", "fp8-rowwise"], threads=1)
    out = tmp_path / "s.csv"
    subprocess.run([cli, "sweep", "--model", model, "--tokens", tokens, "--recipes", "bf16,mxfp4,fp8-rowwise",
                    "--csv", str(out), "--threads", "1"], check=True, capture_output=True)
    with open(out) as f:
        want = list(csv.DictReader(f))
    assert [r["recipe"] for r in rows] == [w["recipe"] for w in want]
    assert list(rows[0].keys()) == list(want[0].keys())  # the CSV's columns, in order
    for r, w in zip(rows, want):
        for k, v in w.items():
            if k in ("recipe", "error"):
                assert r[k] == v
            elif k != "seconds":
                assert r[k] == (int(v) if k in ("tokens", "nonfinite") else float(v)), k
    assert rows[0]["kld_mean"] <= rows[1]["kld_mean"]  # sorted by mean KLD


def test_calibrated_recipes_match_the_cli(shared, cli, tmp_path):
    """calib_text= is the CLI's --calib: a static-scale recipe file and a GPTQ recipe give the CLI's
    numbers on the same texts; a recipe that needs calibration and has none names its key.
    Mutant checked: calib_text= read as evaluation-style tokens with BOS off changes the static
    scales' windows and the KLD no longer matches the CLI's."""
    recipe_dir = pathlib.Path(__file__).resolve().parents[2] / "docs" / "recipes"
    static = str(recipe_dir / "nvfp4-static.txt")
    gptq = tmp_path / "gptq.txt"
    gptq.write_text("name = w4-gptq\nweights = int4:b32:pad\nweights.calibrate = gptq\n")
    model = str(shared / "models" / "tinyllamas" / "stories260K.bin")
    corpus = (shared / "data" / "tinyshakespeare.txt").read_text()
    text, calib = corpus[:3000], corpus[50000:56000]
    (tmp_path / "t.txt").write_text(text)
    (tmp_path / "c.txt").write_text(calib)
    recipes = [static, str(gptq)]
    rows = lowp.sweep(model, text=text, recipes=recipes, threads=1, calib_text=calib)
    out = tmp_path / "s.csv"
    subprocess.run([cli, "sweep", "--model", model, "--text", str(tmp_path / "t.txt"), "--recipes", ",".join(recipes),
                    "--calib", str(tmp_path / "c.txt"), "--calib-cache", str(tmp_path / "cache"), "--csv", str(out),
                    "--threads", "1"], check=True, capture_output=True)
    with open(out) as f:
        want = {w["recipe"]: w for w in csv.DictReader(f)}
    assert sorted(r["recipe"] for r in rows) == sorted(want) == ["nvfp4-static", "w4-gptq"]
    for r in rows:
        assert r["error"] == "" and r["kld_mean"] > 0
        assert r["kld_mean"] == float(want[r["recipe"]]["kld_mean"]), r["recipe"]
    one = lowp.eval(model, text=text, recipe=static, calib_text=calib, threads=1)
    assert np.isfinite(one["ppl"])
    with pytest.raises(ValueError, match=r"recipe 'nvfp4-static' has act.scale = static:amax: give the calibration text with calib_text="):
        lowp.eval(model, text=text, recipe=static)
    with pytest.raises(ValueError, match=r"recipe 'w4-gptq' has weights.calibrate = gptq: give"):
        lowp.sweep(model, text=text, recipes=[str(gptq)])
