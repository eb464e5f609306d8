"""lowp.torch against oracles that share no code with lowp:

- finite differences of lowp.torch.Linear's float32 forward (the C++ QuantLinear under the fp32
  recipe) against the gradients its C++ backward returns, with a rounding bound derived for
  float32;
- Linear's forward and backward under fp32, fp8-tensorwise, the OCP mxfp8 preset and recipe and
  the mxfp8-te recipe (TransformerEngine's RCEIL scales) against float64 GEMMs of operands quantized
  here in numpy by hand (per-tensor amax or E8M0 block scales, E4M3/E5M2 round-to-nearest-even
  with saturation), the quantizer itself bit for bit against lowp.torch.fake_quant.

Without torch every test here is skipped with one line."""
import numpy as np
import pytest

# torch and lowp.torch, or the one-line skip test_torch.py gives where either is missing.
from test_torch import lt, torch

U32 = 2.0**-24  # float32 unit roundoff


def gamma(n):
    """Higham's gamma_n = n u / (1 - n u): |fl(sum of n products) - exact| <= gamma_n sum |a_i b_i|
    for float32 dot products of length n in any summation order, with or without FMA; plus
    n 2^-52, which covers the float64 arithmetic of the references here (exact products of
    float32 values, sums of n terms)."""
    return n * U32 / (1 - n * U32) + n * 2.0**-52


# --- finite differences on the float32 C++ path ------------------------------------------------

def test_finite_differences_match_the_cpp_backward_fp32():
    # f(theta) = sum_mn C_mn Y_mn(theta), Y = X W^T + b computed by lowp's C++ QuantLinear (fp32
    # recipe, float32 tensors: _LinearFn, not the float64 _LinearF64). Its gradient is what the
    # C++ backward returns for dY = C: dX = C W, dW = C^T X, db = column sums of C.
    #
    # Error of the central difference (f(t + h) - f(t - h)) / 2h: the truncation term
    # h^2 |f'''| / 6 plus the rounding term ~ eps32 |f| / h; balancing them gives the usual
    # h ~ (eps32 |f| / |f'''|)^(1/3). Here f is affine in every single coordinate (Y is linear in
    # each entry of X, W, b), so f''' = 0 exactly and only rounding is left. With t+ = fl(t + h)
    # and t- = fl(t - h) (divided by t+ - t-, exact in float64), the computed difference D obeys
    #   |D - g| <= sum_affected |C_mn| (e+_mn + e-_mn) / (t+ - t-),
    #   e_mn = gamma_{K+1} (sum_k |X_mk||W_nk| + |b_n|)        (the GEMM and the bias add),
    # over the entries the coordinate reaches (row m of Y for X_mk, column n for W_nk and b_n; the
    # others are bitwise equal in both evaluations, a deterministic function of equal inputs).
    # For X_mk that is ~ gamma sum_n |C_mn| (S_mn / h + |W_nk|), S_mn the unperturbed sum: it
    # falls like 1/h until h ~ S / |W_nk| (~30 here), then stays at the rounding of the perturbed
    # product itself (likewise for W_nk and b_n), the size of the C++ gradient's own rounding:
    # |dX_mk - g| <= gamma_N sum_n |C_mn||W_nk|, |dW_nk - g| <= gamma_M sum_m |C_mn||X_mk|,
    # |db_n - g| <= gamma_M sum_m |C_mn|. Hence h = 2^8. The tolerance, per coordinate, is the
    # two bounds added: a few gamma_32 ~ 2e-6 of sum |C||W|, ~1e-5 of a typical gradient entry.
    M, K, N, h = 8, 32, 16, 256.0
    torch.manual_seed(21)
    lin = lt.Linear(K, N, recipe="fp32")
    assert lin.linear_recipe == "fp32"
    with torch.no_grad():
        lin.bias.copy_(torch.randn(N))
    x = torch.randn(M, K, requires_grad=True)
    c = torch.randn(M, N)
    lin(x).backward(c)
    grads = {"x": x.grad.double().numpy(), "w": lin.weight.grad.double().numpy(), "b": lin.bias.grad.double().numpy()}
    X0, W0, b0 = x.detach().clone(), lin.weight.detach().clone(), lin.bias.detach().clone()
    C = c.double().numpy()

    def evaluate(X, W, b):
        with torch.no_grad():
            lin.weight.copy_(W)  # in place: the layer reloads its weight (the version changes)
            lin.bias.copy_(b)
            y = lin(X).double().numpy()
        X64, W64, b64 = X.double().numpy(), W.double().numpy(), b.double().numpy()
        err = gamma(K + 1) * (np.abs(X64) @ np.abs(W64).T + np.abs(b64))
        return y, err

    def check(kind, index, base):
        tensors = {"x": X0, "w": W0, "b": b0}
        plus = {k: v.clone() for k, v in tensors.items()}
        minus = {k: v.clone() for k, v in tensors.items()}
        t = base[index]
        plus[kind][index] = t + h   # float32 additions: the step is what they give
        minus[kind][index] = t - h
        step = float(plus[kind][index]) - float(minus[kind][index])
        yp, ep = evaluate(plus["x"], plus["w"], plus["b"])
        ym, em = evaluate(minus["x"], minus["w"], minus["b"])
        if kind == "x":
            m, k = index
            sel = (slice(m, m + 1), slice(None))
            grad_err = gamma(N) * float(np.abs(C[m]) @ np.abs(W0.double().numpy()[:, k]))
        elif kind == "w":
            n, k = index
            sel = (slice(None), slice(n, n + 1))
            grad_err = gamma(M) * float(np.abs(C[:, n]) @ np.abs(X0.double().numpy()[:, k]))
        else:
            (n,) = index
            sel = (slice(None), slice(n, n + 1))
            grad_err = gamma(M) * float(np.abs(C[:, n]).sum())
        outside = np.ones(yp.shape, bool)
        outside[sel] = False
        assert np.array_equal(yp[outside], ym[outside]), f"{kind}{index}: entries it does not reach changed"
        fd = float((C[sel] * (yp[sel] - ym[sel])).sum()) / step
        fd_err = float((np.abs(C[sel]) * (ep[sel] + em[sel])).sum()) / step
        return fd, fd_err + grad_err

    rel = []
    for kind, base, shape in (("x", X0, (M, K)), ("w", W0, (N, K)), ("b", b0, (N,))):
        for index in np.ndindex(*shape):
            fd, tol = check(kind, index, base)
            got = float(grads[kind][index])
            assert abs(fd - got) <= tol, f"d f / d {kind}{index}: finite difference {fd!r}, C++ backward {got!r}"
            rel.append(tol / abs(got))
    # The test can fail: the tolerance is below 2^-12 of the gradient entry for 90% of the
    # coordinates (the rest are entries near 0 by cancellation).
    assert np.quantile(rel, 0.9) < 2.0**-12, np.quantile(rel, [0.5, 0.9])


def test_float64_path_is_torch_matmul():
    # Under the fp32 recipe float64 tensors take _LinearF64: torch.matmul in float64 with
    # lowp.torch's own backward formulas, not lowp's C++ kernels (the finite-difference test
    # above checks those). gradcheck checks those Python formulas; the output is not the float32
    # C++ result.
    torch.manual_seed(2)
    lin = lt.Linear(5, 3, recipe="fp32", dtype=torch.float64)
    x = torch.randn(4, 2, 5, dtype=torch.float64, requires_grad=True)
    w = lin.weight.detach().clone().requires_grad_()
    b = lin.bias.detach().clone().requires_grad_()

    def f(x, w, b):  # the module's forward with w and b as its parameters
        lin._parameters["weight"], lin._parameters["bias"] = w, b
        return lin(x)

    assert f(x, w, b).dtype == torch.float64
    assert torch.autograd.gradcheck(f, (x, w, b))
    assert lin.step == 0  # no call reached the C++ layer (each of those is a step)


# --- an independent quantizer -----------------------------------------------------------------

# name: (mantissa bits, smallest normal exponent, largest finite value), OCP FP8 / MX v1.0.
E4M3 = (3, -6, 448.0)
E5M2 = (2, -14, 57344.0)


def round_fp(v, fmt):
    """float64 values v rounded to the format, nearest-even, saturating at +-max (exact)."""
    man, emin, vmax = fmt
    a = np.abs(v)
    _, e2 = np.frexp(a)  # a = f 2^e2, f in [0.5, 1): floor(log2 a) = e2 - 1
    e = np.maximum(e2 - 1, emin)
    quantum = np.ldexp(1.0, e - man)
    r = np.minimum(np.round(a / quantum) * quantum, vmax)  # np.round: ties to even
    return np.copysign(r, v)


def q_tensor_amax(x, fmt):
    """Per-tensor current scaling (torchao tensorwise): s = max / amax in float32, codes = the
    format's rounding of fl32(x s), values fl32(code / s). float32 in, float32 out."""
    x = np.asarray(x, np.float32)
    s = np.float32(fmt[2]) / np.float32(np.abs(x).max())
    codes = round_fp((x * s).astype(np.float64), fmt).astype(np.float32)  # fp8 values: exact in float32
    return codes / s


def mx_exponent_floor(amax):
    """OCP MX v1.0 6.3: E8M0 exponent floor(log2 amax) - emax_elem (8 for E4M3)."""
    return np.frexp(amax)[1] - 1 - 8


def mx_exponent_rceil(amax):
    """TransformerEngine / cuBLAS RCEIL: d = fl32(amax * fl32(1 / 448)), exponent ceil(log2 d)."""
    d = (np.float32(amax) * np.float32(1.0 / 448.0)).astype(np.float64)
    f, e2 = np.frexp(d)
    return np.where(f == 0.5, e2 - 1, e2)


def q_mx(x, axis, exponent_rule):
    """E4M3 with one E8M0 scale 2^e per 32 consecutive elements along `axis`: values
    round(x / 2^e) 2^e (power-of-two scaling, exact)."""
    x = np.moveaxis(np.asarray(x, np.float32), axis, -1)
    blocks = x.astype(np.float64).reshape(*x.shape[:-1], -1, 32)
    e = np.clip(exponent_rule(np.abs(blocks).max(-1, keepdims=True)), -127, 127)
    q = round_fp(np.ldexp(blocks, -e), E4M3)
    return np.moveaxis(np.ldexp(q, e).reshape(x.shape).astype(np.float32), -1, axis)


def test_the_quantizer_here_equals_fake_quant():
    # The hand-written quantizer against lowp's, bit for bit, on data spanning 2^-20 .. 2^12
    # (subnormal E4M3/E5M2 codes, saturation at the rounding edge included).
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((64, 96)) * np.exp2(rng.uniform(-20, 12, (64, 96)))).astype(np.float32)
    x[0, :3] = [448.0 * 2, 464.0 * 2 - 1, -0.0]
    pairs = [("e4m3:tensor:amax", q_tensor_amax(x, E4M3)), ("e5m2:tensor:amax", q_tensor_amax(x, E5M2)),
             ("mxfp8", q_mx(x, 1, mx_exponent_floor)), ("e4m3:b32:rceil", q_mx(x, 1, mx_exponent_rceil))]
    for spec, want in pairs:
        got = lt.fake_quant(torch.from_numpy(x), spec).numpy()
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), spec


# --- Linear against float64 GEMMs of the operands quantized here -------------------------------

def tensorwise(X, W, dY):
    # torchao tensorwise: E4M3 X and W, E5M2 dY, one scale per tensor (so W^T, dY^T and X^T
    # quantize to the same values as W, dY and X).
    qx, qw, qg = q_tensor_amax(X, E4M3), q_tensor_amax(W, E4M3), q_tensor_amax(dY, E5M2)
    return (qx, qw), (qg, qw), (qg, qx)


def mx(rule):
    def operands(X, W, dY):
        # 32-blocks along each GEMM's reduction dimension: K for the forward, N for the dgrad
        # (dY's rows, W's columns), the M tokens for the wgrad (dY's and X's columns).
        return ((q_mx(X, 1, rule), q_mx(W, 1, rule)), (q_mx(dY, 1, rule), q_mx(W, 0, rule)),
                (q_mx(dY, 0, rule), q_mx(X, 0, rule)))
    return operands


def float32(X, W, dY):
    return (X, W), (dY, W), (dY, X)


# lowp.torch recipe -> the operands of (fwd: X, W), (dgrad: dY, W), (wgrad: dY, X), quantized here.
ORACLES = {
    "fp32": float32,
    "fp8-tensorwise": tensorwise,
    "preset:mxfp8": mx(mx_exponent_floor),  # OCP MX v1.0 FLOOR
    "mxfp8": mx(mx_exponent_floor),         # the same name as a recipe: OCP floor everywhere
    "mxfp8-te": mx(mx_exponent_rceil),      # TransformerEngine's MXFP8 (RCEIL)
}


@pytest.mark.parametrize("recipe", list(ORACLES))
def test_linear_equals_float64_gemms_of_independently_quantized_operands(recipe):
    # Y = X W^T + b, dX = dY W, dW = dY^T X, db = sum dY, each GEMM on the operands quantized
    # above and multiplied exactly in float64 (fp8 values times float32 scales: 24 + 4 bits).
    # lowp multiplies the same float32 operands in float32, so |lowp - exact| <= gamma_n sum |a||b|
    # (n the reduction length; the forward's bias add is one rounding more: gamma_{K+1} with |b|
    # added; db is a sum of M float32 terms: gamma_M sum |dY|). One operand element off by one
    # fp8 step would move its product by 2^-4 of itself, far above gamma_n (~1e-5 here).
    M, K, N = 64, 96, 64
    torch.manual_seed(22)
    lin = lt.Linear(K, N, recipe=recipe, seed=5)
    rng = np.random.default_rng(22)
    X = (rng.standard_normal((M, K)) * np.exp2(rng.uniform(-4, 4, (M, K)))).astype(np.float32)
    dY = (rng.standard_normal((M, N)) * np.exp2(rng.uniform(-6, 2, (M, N)))).astype(np.float32)
    x = torch.from_numpy(X).requires_grad_()
    y = lin(x)
    y.backward(torch.from_numpy(dY))
    W, b = lin.weight.detach().numpy(), lin.bias.detach().numpy().astype(np.float64)
    (fx, fw), (ga, gb), (wa, wb) = [(a.astype(np.float64), b_.astype(np.float64))
                                    for a, b_ in ORACLES[recipe](X, W, dY)]
    checks = [
        ("Y", y, fx @ fw.T + b, gamma(K + 1) * (np.abs(fx) @ np.abs(fw).T + np.abs(b))),
        ("dX", x.grad, ga @ gb, gamma(N) * (np.abs(ga) @ np.abs(gb))),
        ("dW", lin.weight.grad, wa.T @ wb, gamma(M) * (np.abs(wa).T @ np.abs(wb))),
        ("db", lin.bias.grad, dY.astype(np.float64).sum(0), gamma(M) * np.abs(dY.astype(np.float64)).sum(0)),
    ]
    for name, got, want, bound in checks:
        err = np.abs(got.detach().double().numpy() - want)
        assert np.all(err <= bound), f"{recipe} {name}: {err.max()} above the bound at {np.unravel_index((err - bound).argmax(), err.shape)}"
    # The recipe quantizes (or, for fp32, does not): the unquantized GEMM is outside the bound.
    exact = X.astype(np.float64) @ W.astype(np.float64).T + b
    outside = np.abs(y.detach().double().numpy() - exact) > checks[0][3]
    assert outside.any() == (recipe != "fp32")
