"""Python = CLI (issue 28): lowp.eval takes the CLI's model names and bos= and prints the CLI's
numbers; a recipe file `lowp search` writes converts unchanged in lowp.torch (the keys it does not
apply named in one stderr line); a token count the backward's blocks do not fill fails in the
forward with advice a built-in name can follow; and a new user's whole path with one recipe file
(search, eval, train --init, generate on every export, lowp.torch.convert)."""
import pathlib
import re
import subprocess

import pytest

lowp = pytest.importorskip("lowp", reason="the lowp Python module is not built (build target lowp_python)")

ROOT = pathlib.Path(__file__).resolve().parents[2]
HELDOUT = ROOT / "accuracy" / "models" / "shakespeare" / "heldout.txt"


def cli_eval(cli, text_file, *extra):
    out = subprocess.run([cli, "eval", "--model", "shakespeare", "--text", str(text_file), "--threads", "1", *extra],
                         check=True, capture_output=True, text=True).stdout
    return {m.group(1): m.group(2) for m in re.finditer(r"^(tokens|scored|mean NLL|PPL) +(\S+)", out, re.M)}


@pytest.mark.parametrize("bos,recipe", [("auto", "fp32"), ("on", "fp32"), ("off", "mxfp8")])
def test_eval_gives_the_cli_numbers(cli, tmp_path, bos, recipe):
    text = HELDOUT.read_bytes()[:2048].decode("utf-8", errors="ignore")
    f = tmp_path / "text.txt"
    f.write_text(text)
    want = cli_eval(cli, f, "--bos", bos, "--recipe", recipe)
    got = lowp.eval("shakespeare", text=text, bos=bos, recipe=recipe, threads=1)
    # The CLI prints the same doubles rounded: equal strings, not a tolerance.
    assert str(got["tokens"]) == want["tokens"] and str(got["scored"]) == want["scored"]
    assert f"{got['mean_nll']:.6f}" == want["mean NLL"] and f"{got['ppl']:.4f}" == want["PPL"]
    with pytest.raises(ValueError, match="bos="):
        lowp.eval("shakespeare", tokens=[1, 2, 3], bos="on")
    with pytest.raises(ValueError, match="bos is"):
        lowp.eval("shakespeare", text=text, bos="maybe")


def test_a_search_file_converts_unchanged(cli, tmp_path, capfd):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    import lowp.torch as lt
    from torch import nn

    (tmp_path / "calib.txt").write_text(HELDOUT.read_text()[:300])
    subprocess.run([cli, "search", "--model", "shakespeare", "--text", str(tmp_path / "calib.txt"), "--menu",
                    "int4:row:int,int8:row:int", "--budget", "6", "--out", str(tmp_path / "r.txt"), "--ctx", "64",
                    "--threads", "1"], check=True, capture_output=True)
    recipe = str(tmp_path / "r.txt")
    assert "layer.0.weights.wq" in pathlib.Path(recipe).read_text()
    capfd.readouterr()
    torch.manual_seed(0)
    net = lt.convert(nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8)), recipe)
    err = capfd.readouterr().err
    assert lt.converted(net) == ["0", "2"]
    assert err.count("\n") == 1 and err.startswith("lowp.torch: recipe '")
    assert "layer.0.weights.wq" in err and "do not apply to lowp.torch" in err
    x = torch.randn(16, 64, requires_grad=True)
    net(x).sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    # A built-in name says nothing.
    lt.convert(nn.Linear(64, 64), "mxfp8")
    assert capfd.readouterr().err == ""


def test_blocks_along_the_tokens_fail_in_the_forward_with_advice(tmp_path):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    import lowp.torch as lt

    torch.manual_seed(1)
    x = torch.randn(3, 15, 64)  # 45 tokens: not a multiple of the wgrad's 32-blocks along the tokens
    unpadded = tmp_path / "te.recipe"
    unpadded.write_text("name = te\nlinear = mxfp8-te\n")
    te = lt.Linear(64, 32, recipe=str(unpadded))
    with pytest.raises(ValueError, match=r"blocks of 32 along the tokens.*45 tokens.*pad = on.*linear = mxfp8-te"):
        te(x.requires_grad_())
    with torch.no_grad():  # no backward to come: the forward alone runs
        assert te(x).shape == (3, 15, 32)
    # Following the advice: the same file with `pad = on` trains on 45 tokens.
    unpadded.write_text("name = te\nlinear = mxfp8-te\npad = on\n")
    # Quartet's wgrad Hadamard runs along the tokens: the advice is a multiple of its blocks.
    quartet = lt.Linear(64, 32, recipe="quartet-fp4")
    with pytest.raises(ValueError, match=r"rotates the wgrad's operands along the tokens.*45 tokens.*multiple of 32"):
        quartet(x.detach().requires_grad_())
    # The built-in MX and NVFP4 names pad (pad = on), as their evaluation recipes do.
    for name in ("mxfp8", "mxfp8-te", "nvfp4", str(unpadded)):
        lin = lt.Linear(64, 32, recipe=name)
        xi = x.detach().clone().requires_grad_()
        lin(xi).sum().backward()
        assert torch.isfinite(xi.grad).all() and torch.isfinite(lin.weight.grad).all(), name


def test_a_new_users_path_with_one_recipe_file(cli, tmp_path, capfd):
    """Issue 28's path: search writes a recipe file; the same file evaluates, fine-tunes the model
    (train --init), runs generation on each of the run's exports, and converts a PyTorch model."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    import lowp.torch as lt
    from torch import nn

    text = HELDOUT.read_text()
    for name, part in {"calib": text[:300], "eval": text[300:1500], "corpus": text[:20000]}.items():
        (tmp_path / f"{name}.txt").write_text(part)
    recipe, out = str(tmp_path / "r.txt"), tmp_path / "out"

    def run(*args):
        r = subprocess.run([cli, *map(str, args)], capture_output=True, text=True)
        assert r.returncode == 0, f"lowp {args[0]}: {r.stderr}"
        return r

    run("search", "--model", "shakespeare", "--text", tmp_path / "calib.txt", "--menu", "int4:row:int,mxfp4:pad",
        "--budget", "5", "--out", recipe, "--ctx", "64", "--threads", "1")
    assert "layer.0.weights.wq" in pathlib.Path(recipe).read_text()

    def ppl(model):
        out_text = run("eval", "--model", model, "--text", tmp_path / "eval.txt", "--recipe", recipe, "--ctx", "64",
                       "--threads", "1").stdout
        return re.search(r"^PPL +(\S+)", out_text, re.M).group(1)

    base_ppl = ppl("shakespeare")
    run("train", "--init", ROOT / "accuracy" / "models" / "shakespeare" / "model.bin", "--corpus",
        tmp_path / "corpus.txt", "--steps", "2", "--batch", "1", "--ctx", "32", "--eval-every", "2", "--threads", "1",
        "--recipe", recipe, "--out", out)
    # Each export (llama2.c with tokenizer, GGUF, the HF folder) is the same fine-tuned model: the
    # same perplexity under the file's recipe, and the same greedy continuation of a prompt.
    exports = [out / "model.bin", out / "model.gguf", out]
    ppls = {str(m): ppl(m) for m in exports}
    assert len(set(ppls.values())) == 1, ppls
    assert ppls[str(out)] != base_ppl  # the two steps changed the weights
    texts = {str(m): run("generate", "--model", m, "--recipe", recipe, "--prompt", "ROMEO:", "--max-tokens", "12",
                         "--threads", "1").stdout for m in exports}
    assert len(set(texts.values())) == 1, texts
    assert texts[str(out)].startswith("ROMEO:") and len(texts[str(out)]) > len("ROMEO:")
    # lowp.torch takes the same file; the keys it does not apply are named in one line.
    capfd.readouterr()
    net = lt.convert(nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8)), recipe)
    assert lt.converted(net) == ["0", "2"]
    assert capfd.readouterr().err.count("\n") == 1
    x = torch.randn(16, 64, requires_grad=True)
    net(x).sum().backward()
    assert torch.isfinite(x.grad).all()
