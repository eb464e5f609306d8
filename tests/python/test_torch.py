"""lowp.torch (the PyTorch bridge): Linear's gradients against the C++ QuantLinear called through
the module (finite differences, gradcheck of the float64 path and oracles independent of lowp:
test_torch_oracles.py), fake_quant against microxcaling's own outputs, the clip mask
against a numpy MX scale, convert's module selection, report's telemetry, and a small transformer
written here trained on tinyshakespeare under fp32, mxfp8 and nvfp4.

Without torch every test here is skipped with one line; a torch that is installed but fails to
import fails the run."""
import math
import os
import pathlib

import numpy as np
import pytest

lowp = pytest.importorskip("lowp", reason="the lowp Python module is not built (build target lowp_python)")
try:
    import torch
except ModuleNotFoundError as e:
    if e.name != "torch":
        raise
    pytest.skip("torch is not installed (Debian: python3-torch; scripts/setup installs it)", allow_module_level=True)
from torch import nn  # noqa: E402

import lowp.torch as lt  # noqa: E402

SHARED = pathlib.Path(os.environ.get("LOWP_SHARED_DIR") or pathlib.Path(__file__).resolve().parents[3] / "shared")


def shared_file(rel):
    path = SHARED / rel
    if not path.exists():
        pytest.skip(f"../shared is not available: {path} is missing (set LOWP_SHARED_DIR)")
    return path


def bits(t):
    return t.detach().contiguous().numpy().view(np.uint32)


# Training recipe -> the linear preset its layers run (accuracy/src/recipe/train_recipe.cpp):
# one name, one meaning (mxfp8 is OCP floor everywhere, mxfp8-te TransformerEngine's RCEIL).
RECIPES = {
    "fp32": "fp32",
    "fp8-tensorwise": "fp8-tensorwise",
    "fp8-rowwise": "fp8-rowwise",
    "mxfp8": "mxfp8",
    "mxfp8-te": "mxfp8-te",
    "nvfp4": "nvfp4",
    "nvfp4-train": "nvfp4-train",
    "quartet-fp4": "quartet-fp4",
    "switchback-int8": "switchback-int8",
}


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_linear_gradients_equal_quantlinear(recipe):
    # (2, 32, K) inputs: 64 tokens, a multiple of every block and Hadamard size on the wgrad's
    # token reduction; K and N multiples of 32 for the MX blocks and Quartet's Hadamard.
    K, N, seed = 128, 64, 1234
    torch.manual_seed(0)
    lin = lt.Linear(K, N, recipe=recipe, seed=seed)
    assert lin.linear_recipe == RECIPES[recipe]
    ref = lowp.QuantLinear(RECIPES[recipe], K, N)
    ref.weight = lin.weight.detach().numpy()
    ref.bias = lin.bias.detach().numpy()
    quantized_somewhere = False
    for step in range(3):  # three steps: a fresh seed each, the weight updated in between
        x = (torch.randn(2, 32, K) * torch.linspace(0.1, 8, K)).requires_grad_()
        dy = torch.randn(2, 32, N)
        y = lin(x)
        y.backward(dy)
        s = lt.step_seed(seed, step)
        y_ref = ref.forward(x.detach().numpy(), s)
        ref.zero_grad()
        dx_ref = ref.backward(dy.numpy(), s)
        assert np.array_equal(bits(y), y_ref.view(np.uint32)), f"{recipe} step {step}: Y"
        assert np.array_equal(bits(x.grad), dx_ref.view(np.uint32)), f"{recipe} step {step}: dX"
        assert np.array_equal(bits(lin.weight.grad), ref.weight_grad.view(np.uint32)), f"{recipe} step {step}: dW"
        assert np.array_equal(bits(lin.bias.grad), ref.bias_grad.view(np.uint32)), f"{recipe} step {step}: db"
        # Not float32: the recipe quantized (compared with float64 GEMMs of the same data).
        x64, w64 = x.detach().double(), lin.weight.detach().double()
        y64 = x64 @ w64.t() + lin.bias.detach().double()
        quantized_somewhere |= not torch.allclose(y.double(), y64, rtol=1e-4, atol=1e-4)
        with torch.no_grad():
            lin.weight -= 0.05 * lin.weight.grad
            lin.bias -= 0.05 * lin.bias.grad
        lin.weight.grad = None
        lin.bias.grad = None
        ref.weight = lin.weight.detach().numpy()
        ref.bias = lin.bias.detach().numpy()
    assert lin.step == 3
    assert quantized_somewhere == (recipe != "fp32")


def test_linear_backward_after_a_second_forward():
    # Two forwards before the backwards (a module used twice in a graph): each backward gets
    # the gradients of its own forward, as one layer per call would give.
    torch.manual_seed(1)
    lin = lt.Linear(64, 32, recipe="nvfp4-train", seed=7)
    x1, x2 = torch.randn(32, 64, requires_grad=True), torch.randn(32, 64, requires_grad=True)
    (lin(x1).sum() * 2 + lin(x2).square().sum()).backward()
    ref = lowp.QuantLinear("nvfp4-train", 64, 32)
    ref.weight, ref.bias = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    y2 = ref.forward(x2.detach().numpy(), lt.step_seed(7, 1))
    dx2 = ref.backward(2 * y2, lt.step_seed(7, 1))
    ref.forward(x1.detach().numpy(), lt.step_seed(7, 0))
    dx1 = ref.backward(np.full((32, 32), 2, np.float32), lt.step_seed(7, 0))
    assert np.array_equal(bits(x1.grad), dx1.view(np.uint32))
    assert np.array_equal(bits(x2.grad), dx2.view(np.uint32))
    assert np.array_equal(bits(lin.weight.grad), ref.weight_grad.view(np.uint32))


def test_deterministic_at_any_thread_count():
    def run(threads):
        torch.set_num_threads(threads)
        torch.manual_seed(3)
        lin = lt.Linear(256, 128, recipe="nvfp4-train", seed=11)
        x = torch.randn(4, 64, 256, requires_grad=True)
        lin(x).backward(torch.randn(4, 64, 128))
        return bits(x.grad).copy(), bits(lin.weight.grad).copy()

    before = torch.get_num_threads()
    try:
        one, two = run(1), run(2)
    finally:
        torch.set_num_threads(before)
    assert all(np.array_equal(a, b) for a, b in zip(one, two))


MX = {"fp8_e4m3": "e4m3", "fp8_e5m2": "e5m2", "fp6_e2m3": "e2m3", "fp6_e3m2": "e3m2", "fp4_e2m1": "e2m1"}


def microxcaling_input():
    return np.fromfile(shared_file("formats/microxcaling/x.f32"), dtype="<f4").reshape(192, 1024)


@pytest.mark.parametrize("name", list(MX))
def test_fake_quant_equals_microxcaling(name):
    x = torch.from_numpy(microxcaling_input())
    want = np.fromfile(shared_file(f"formats/microxcaling/{name}.f32"), dtype="<f4").reshape(192, 1024)
    got = lt.fake_quant(x, f"{MX[name]}:b32:mx").numpy()
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))
    # quantize -> codes and scales, rebuilt here in numpy: the same values.
    q = lt.quantize(x, f"{MX[name]}:b32:mx")
    assert q.codes.shape == x.shape and q.scales.shape == (192 * 1024 // 32,)
    values = lowp.decode(q.codes.numpy(), MX[name])
    rebuilt = values.reshape(192, 32, 32) * q.scales.numpy().reshape(192, 32, 1)
    ok = ~np.isnan(rebuilt.reshape(192, 1024)) & ~nan
    assert np.array_equal(rebuilt.reshape(192, 1024)[ok], want[ok])
    assert np.array_equal(lt.dequantize(q).numpy()[~nan].view(np.uint32), want[~nan].view(np.uint32))


def test_fake_quant_is_zero_copy_and_keeps_dtype():
    x = torch.from_numpy(microxcaling_input())
    assert lt._f32(x, "test").data_ptr() == x.data_ptr()  # a contiguous float32 tensor is not copied
    y = lt.fake_quant(x[:, :64].to(torch.bfloat16), "mxfp8")
    assert y.dtype == torch.bfloat16 and y.shape == (192, 64)
    # MXFP8 values of a bf16 input are bf16 values: rounding the float32 result back is exact.
    z = lt.fake_quant(x[:, :64].to(torch.bfloat16).float(), "mxfp8")
    assert torch.equal(y.float()[~z.isnan()], z[~z.isnan()])
    with pytest.raises(ValueError):
        lt.fake_quant(x, "nosuchformat")


def test_fake_quant_gradients():
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((8, 64)) * np.exp(rng.standard_normal((8, 64)) * 2)).astype(np.float32)
    g = torch.from_numpy(rng.standard_normal((8, 64)).astype(np.float32))
    t = torch.from_numpy(x).requires_grad_()
    lt.fake_quant(t, "mxfp8").backward(g)
    assert torch.equal(t.grad, g)  # straight-through
    t.grad = None
    lt.fake_quant(t, "mxfp8", masked=True).backward(g)
    # Clipped: |x| above 448 times the block's OCP MX scale 2^(floor(log2 amax) - 8), in numpy.
    amax = np.abs(x).reshape(8, 2, 32).max(axis=2, keepdims=True)
    scale = np.exp2(np.floor(np.log2(amax.astype(np.float64))) - 8)
    clipped = (np.abs(x).reshape(8, 2, 32) > 448 * scale).reshape(8, 64)
    assert clipped.any() and not clipped.all()
    assert np.array_equal(t.grad.numpy(), np.where(clipped, 0, g.numpy()))
    # The masked forward (quantize, then dequantize) gives fake_quant's values bit for bit.
    for spec in ("mxfp8", "mxfp4", "nvfp4", "e4m3:row:pow2", "int8_sym:row:int"):
        assert torch.equal(lt.fake_quant(t, spec, masked=True), lt.fake_quant(t, spec)), spec


def test_fake_quant_stochastic_rounding_seeded():
    x = torch.randn(16, 64)
    a = lt.fake_quant(x, "e4m3:row", rounding="stochastic", seed=5)
    b = lt.fake_quant(x, "e4m3:row", rounding="stochastic", seed=5)
    c = lt.fake_quant(x, "e4m3:row", rounding="stochastic", seed=6)
    n = lt.fake_quant(x, "e4m3:row")
    assert torch.equal(a, b) and not torch.equal(a, c) and not torch.equal(a, n)
    # Unbiased: 1.02 lies between the E4M3 values 1 and 1.125 and rounds up with probability
    # 0.02 / 0.125 = 0.16, so the mean of 4096 roundings is 1.02 within 5 standard deviations.
    r = lt.fake_quant(torch.full((64, 64), 1.02), "e4m3:tensor:none", rounding="stochastic", seed=9)
    assert set(r.unique().tolist()) == {1.0, 1.125}
    sigma = 0.125 * math.sqrt(0.16 * 0.84 / 4096)
    assert abs(float(r.double().mean()) - float(np.float32(1.02))) < 5 * sigma


def test_quantize_nvfp4_two_levels():
    x = torch.randn(4, 64) * 3
    q = lt.quantize(x, "nvfp4")
    assert q.codes.dtype == torch.uint8 and q.codes.shape == (4, 64) and int(q.codes.max()) <= 15
    assert q.scales.shape == (16,) and q.scale_codes.shape == (16,)
    ts = float(q.tensor_scale)
    assert ts == np.float32(float(x.abs().max())) / np.float32(448 * 6)  # amax / (448 * 6) in float32
    values = lowp.decode(q.codes.numpy(), "e2m1").reshape(4, 4, 16)
    rebuilt = (values * (np.float32(ts) * q.scales.numpy().reshape(4, 4, 1))).reshape(4, 64)
    assert np.array_equal(rebuilt, q.dequantize().numpy())


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 64)
        self.blocks = nn.ModuleList(nn.ModuleDict({"attn": nn.Linear(64, 64), "mlp": nn.Sequential(
            nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64))}) for _ in range(3))
        self.head = nn.Linear(64, 10, bias=False)


def test_convert_replaces_exactly_the_named_modules():
    torch.manual_seed(5)
    net = Net()
    names = [n for n, m in net.named_modules() if isinstance(m, nn.Linear)]
    assert names == ["blocks.0.attn", "blocks.0.mlp.0", "blocks.0.mlp.2", "blocks.1.attn", "blocks.1.mlp.0",
                     "blocks.1.mlp.2", "blocks.2.attn", "blocks.2.mlp.0", "blocks.2.mlp.2", "head"]
    params = {n: p for n, p in net.named_parameters()}
    state = {k: v.clone() for k, v in net.state_dict().items()}
    out = lt.convert(net, "mxfp8", filter=r"\.mlp\.", keep_first=1, keep_last=2)
    assert out is net
    assert lt.converted(net) == ["blocks.0.mlp.2", "blocks.1.mlp.0", "blocks.1.mlp.2"]
    for n, m in net.named_modules():
        if n in lt.converted(net):
            assert type(m) is lt.Linear and m.recipe == "mxfp8"
        elif n in names:
            assert type(m) is nn.Linear
    # The same Parameter objects (an optimizer built before keeps working), the same state_dict.
    assert all(p is params[n] for n, p in net.named_parameters())
    assert list(net.state_dict()) == list(state)
    Net().load_state_dict(net.state_dict())
    net.load_state_dict(state)
    # A callable filter (torchao's module_filter_fn(module, name)), and a second convert leaves
    # the lowp modules alone.
    lt.convert(net, "nvfp4", filter=lambda m, n: n.endswith("attn") or n == "head", keep_last=1)
    assert lt.converted(net) == ["blocks.0.attn", "blocks.0.mlp.2", "blocks.1.attn", "blocks.1.mlp.0",
                                 "blocks.1.mlp.2", "blocks.2.attn"]
    assert type(net.head) is nn.Linear and net.blocks[0].attn.recipe == "nvfp4"
    with pytest.raises(ValueError, match="nosuch"):
        lt.convert(net, "nosuch")
    assert isinstance(lt.convert(nn.Linear(32, 32), "fp32"), lt.Linear)


def test_fp32_linear_within_float32_error_of_float64():
    # The C++ float32 GEMM against float64: |error| <= K u sum|x||w| (u = 2^-24), plus the bias add.
    torch.manual_seed(6)
    lin = lt.convert(nn.Linear(96, 40), "fp32")
    x = torch.randn(3, 17, 96)
    y = lin(x).double()
    x64, w64, b64 = x.double(), lin.weight.detach().double(), lin.bias.detach().double()
    bound = (96 + 1) * 2.0**-24 * ((x64.abs() @ w64.abs().t()) + b64.abs())
    assert torch.all((y - (x64 @ w64.t() + b64)).abs() <= bound)


def test_report_telemetry():
    torch.manual_seed(7)
    model = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 32))
    lt.convert(model, "mxfp8-te")
    x = torch.randn(64, 64) * torch.logspace(-2, 2, 64)
    model(x).sum().backward()
    rows = lt.report(model)
    keys = [(r["module"], r["gemm"], r["operand"]) for r in rows]
    assert keys == [(m, g, o) for m in ("0", "2") for g, ops in
                    (("fwd", ("X", "W")), ("dgrad", ("dY", "W^T")), ("wgrad", ("dY^T", "X^T"))) for o in ops]
    # fwd X of the first layer: E4M3 with RCEIL E8M0 scales per 32 (mxfp8-te); the SQNR of the
    # same quantization computed here in float64 from fake_quant.
    q = lt.fake_quant(x, "e4m3:b32:rceil").double()
    want = 10 * math.log10(float((x.double() ** 2).sum()) / float(((x.double() - q) ** 2).sum()))
    r = rows[0]
    assert r["count"] == 64 * 64 and r["saturated"] == 0.0
    assert abs(r["sqnr_db"] - want) < 1e-9
    assert 0.0 <= r["flushed"] < 1.0
    assert lt.report(model) == []  # reading resets
    lt.collect_stats(model, False)
    model(x).sum().backward()
    assert lt.report(model) == []
    lt.collect_stats(model, True)
    model(x).sum().backward()
    rows = lt.report(model)  # W unchanged since: its cached quantized copies are not counted again
    want = [(m, o) for m in ("0", "2") for o in ("X", "dY", "dY^T", "X^T")]
    assert [(r["module"], r["operand"]) for r in rows] == want


# --- a small transformer on tinyshakespeare -------------------------------------------------

class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
        q, k, v = (t.view(B, T, self.heads, D // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D // self.heads)
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, D))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab, d=64, layers=2, heads=4, ctx=32):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.Sequential(*[Block(d, heads) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        return self.head(self.ln(self.blocks(x)))


def train_tiny(recipe, data, vocab, steps=200, batch=16, ctx=32):
    torch.manual_seed(0)
    model = TinyGPT(vocab, ctx=ctx)
    if recipe != "float":
        # The classifier (65 outputs, no multiple of the blocks) stays float32, as keep_last does.
        lt.convert(model, recipe, keep_last=1, seed=1, stats=False)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(1)
    losses = []
    for step in range(steps):
        starts = torch.randint(0, len(data) - ctx - 1, (batch,), generator=g)
        xb = torch.stack([data[s:s + ctx] for s in starts])
        yb = torch.stack([data[s + 1:s + ctx + 1] for s in starts])
        loss = torch.nn.functional.cross_entropy(model(xb).reshape(-1, vocab), yb.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses, model


def test_tiny_transformer_trains_under_recipes():
    text = shared_file("data/tinyshakespeare.txt").read_text()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([index[c] for c in text[:200000]], dtype=torch.long)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny GEMMs: threads only add overhead
    try:
        curves = {r: train_tiny(r, data, len(chars))[0] for r in ("fp32", "mxfp8-te", "nvfp4-train")}
    finally:
        torch.set_num_threads(threads)
    first = {r: sum(c[:10]) / 10 for r, c in curves.items()}
    last = {r: sum(c[-20:]) / 20 for r, c in curves.items()}
    for r in curves:
        assert last[r] < first[r] - 1.0, f"{r}: loss {first[r]:.3f} -> {last[r]:.3f}"
    assert abs(last["mxfp8-te"] - last["fp32"]) / last["fp32"] < 0.03, last
    assert last["nvfp4-train"] < first["nvfp4-train"] - 1.0


def test_deepcopy_and_pickle_rebuild_the_layer():
    import copy
    import pickle

    torch.manual_seed(8)
    model = lt.convert(nn.Sequential(nn.Linear(64, 32)), "fp8-rowwise", seed=3)
    x = torch.randn(32, 64)
    want = model(x)
    for other in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert other[0].weight is not model[0].weight and other[0].step == 1
        other[0].step = 0
        assert torch.equal(other(x), want)


def test_recipe_names():
    # A name means one thing: the training recipe mxfp8 runs the preset mxfp8 (OCP floor scales),
    # mxfp8-te TransformerEngine's RCEIL one; 'preset:' still picks a preset by its name.
    assert lt.Linear(64, 32, recipe="mxfp8").linear_recipe == "mxfp8"
    assert lt.Linear(64, 32, recipe="mxfp8-te").linear_recipe == "mxfp8-te"
    assert lt.Linear(64, 32, recipe="nvfp4").linear_recipe == "nvfp4"
    assert lt.Linear(64, 32, recipe="nvfp4-train").linear_recipe == "nvfp4-train"
    assert lt.Linear(64, 32, recipe="preset:mxfp8").linear_recipe == "mxfp8"
    assert lt.Linear(64, 32, recipe="fp8-current").linear_recipe == "fp8-tensorwise"
    assert lt.Linear(64, 32, recipe="mxfp4").linear_recipe == "mxfp4"  # evaluation's built-in: linear = mxfp4
    for name in ("mxfp8", "mxfp8-te", "nvfp4", "nvfp4-train"):
        assert name in lowp.train_recipes() and name in lowp.linear_presets()
    with pytest.raises(ValueError, match="scalify"):
        lt.Linear(64, 32, recipe="scalify")
    with pytest.raises(ValueError, match="CPU"):
        lt.Linear(64, 32, device="meta")


def test_linear_bfloat16_runs_the_float32_kernels():
    # A bfloat16 model: the layer reads the bf16 values as float32 (exact), runs QuantLinear
    # and rounds Y, dX, dW and db to bfloat16.
    torch.manual_seed(9)
    lin = lt.Linear(64, 32, recipe="fp8-rowwise", seed=5).to(torch.bfloat16)
    x = torch.randn(32, 64).to(torch.bfloat16).requires_grad_()
    dy = torch.randn(32, 32).to(torch.bfloat16)
    y = lin(x)
    y.backward(dy)
    ref = lowp.QuantLinear("fp8-rowwise", 64, 32)
    ref.weight, ref.bias = lin.weight.detach().float().numpy(), lin.bias.detach().float().numpy()
    s = lt.step_seed(5, 0)
    want_y = torch.from_numpy(ref.forward(x.detach().float().numpy(), s)).to(torch.bfloat16)
    want_dx = torch.from_numpy(ref.backward(dy.float().numpy(), s)).to(torch.bfloat16)
    assert y.dtype == x.grad.dtype == lin.weight.grad.dtype == torch.bfloat16
    assert torch.equal(y, want_y) and torch.equal(x.grad, want_dx)
    assert torch.equal(lin.weight.grad, torch.from_numpy(ref.weight_grad).to(torch.bfloat16))
    assert torch.equal(lin.bias.grad, torch.from_numpy(ref.bias_grad).to(torch.bfloat16))


def test_stack_rules_same_bits_as_numpy():
    # One name, the same bits in numpy and torch (docs/quantization.md, "Each stack's scale rule").
    x = np.zeros((1, 32), np.float32)
    x[0, 0] = np.float32(float.fromhex("0x1.c00002p+13"))  # 448 * 2^5, one ulp up
    x[0, 1] = np.float32(0.0625)
    for rule in ("torchao-log2", "rceil", "te-mxfp4", "gfloat", "mlx", "aiter"):
        spec = "e4m3:b32:" + rule
        assert np.array_equal(lt.fake_quant(torch.from_numpy(x), spec).numpy(), lowp.fake_quant(x, spec))
    assert lt.fake_quant(torch.from_numpy(x), "e4m3:b32:torchao-log2")[0, 1].item() == 0.0625
    w = torch.randn(4, 64)
    assert torch.equal(lt.fake_quant(w, "nvfp4:4over6"), torch.from_numpy(lowp.fake_quant(w.numpy(), "nvfp4:4over6")))
