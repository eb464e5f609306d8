"""lowp.torch: lowp's quantization inside PyTorch, on the same C++ kernels as the rest of lowp.

- fake_quant(t, spec, ...): dequantize(quantize(t)) as an autograd function (straight-through
  gradient, or masked where the forward clipped, as QuEST does).
- quantize(t, spec) -> Quantized (codes, block scales, tensor scale as torch tensors); dequantize.
- Linear: an nn.Linear whose forward, dgrad and wgrad run lowp's QuantLinear under a training
  recipe or a linear preset (`lowp recipes`), the same kernels bit for bit.
- convert(model, recipe, ...) swaps nn.Linear modules for Linear in place; report(model) returns
  the per-module operand telemetry lowp's trainer writes to quant.csv.

CPU tensors only. Contiguous float32 tensors reach the C++ kernels as numpy views (no copy) and
results come back as torch views of the new numpy arrays; other dtypes (bfloat16, float16) are
converted to float32 first and the result rounded back to the input's dtype. The kernels run with
the GIL released, on OpenMP threads, giving the same bits at any thread count. Works with torch
1.13 and 2.x (only torch.autograd.Function, numpy sharing and nn.Module are used). See
docs/python.md, "PyTorch".
"""
import re
import sys

import numpy as np
import torch
from torch import nn

from . import _lowp

__all__ = ["fake_quant", "quantize", "dequantize", "Quantized", "Linear", "convert", "converted", "collect_stats",
           "report", "step_seed"]

_MASK64 = (1 << 64) - 1


def step_seed(seed, step):
    """The seed of step `step` of a layer seeded `seed` (a splitmix64 mix of both, 64 bits):
    what Linear passes to QuantLinear.forward/backward for its `step`-th forward call."""
    z = (int(seed) + (int(step) + 1) * 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def _f32(t, what):
    """A contiguous float32 CPU tensor holding t (t itself when it already is one), detached."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{what}: expected a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise ValueError(f"{what}: lowp runs on the CPU; got a tensor on {t.device}")
    if not t.is_floating_point():
        raise ValueError(f"{what}: expected a floating-point tensor, got {t.dtype}")
    return t.detach().to(torch.float32).contiguous()


def _back(array, dtype):
    """A torch view of a numpy float32 result, rounded to `dtype` when that is not float32."""
    out = torch.from_numpy(array)
    return out if dtype == torch.float32 else out.to(dtype)


class _FakeQuant(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, spec, rounding, seed, masked):
        a = _f32(x, "fake_quant").numpy()
        if masked:
            out, mask = _lowp.fake_quant(a, spec, rounding, seed, clip_mask=True)
            ctx.save_for_backward(torch.from_numpy(mask))
        else:
            out = _lowp.fake_quant(a, spec, rounding, seed)
        ctx.masked = masked
        return _back(out, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        if ctx.masked:
            (mask,) = ctx.saved_tensors
            grad = grad * mask.to(grad.dtype)
        return grad, None, None, None, None


def fake_quant(t, spec, rounding=None, seed=None, masked=False):
    """dequantize(quantize(t)) under `spec` (the CLI's spec text: 'mxfp4', 'nvfp4', 'e4m3:row:pow2',
    ...), blocks along the last dimension, as a tensor of t's dtype and shape.

    rounding ('nearest', 'stochastic', ...) and seed replace the spec's own (stochastic rounding is a
    function of the seed and the element's index). The gradient is straight-through; masked=True
    zeroes it where the forward clipped (|t| above the format's largest value times its group's
    scale), as QuEST's clip mask does."""
    return _FakeQuant.apply(t, spec, rounding, None if seed is None else int(seed) & _MASK64, bool(masked))


def _int_view(codes):
    """uint16/uint32 codes as int16/int32 (torch 1.13 has no wider unsigned type), same bits."""
    if codes.dtype == np.uint16:
        return codes.view(np.int16)
    if codes.dtype == np.uint32:
        return codes.view(np.int32)
    return codes


class Quantized:
    """A quantized tensor: codes (one per element, t's shape; uint8, or int16/int32 holding the bits
    of 16/32-bit codes), scales (the dequantization multiplier per group, row-major groups, float32),
    scale_codes (their E8M0/UE4M3 codes when the rule stores them so), tensor_scale (NVFP4's
    second level, 1 otherwise; a 0-d float32 tensor), spec, format, dtype (the input's)."""

    def __init__(self, q, dtype):
        self._q = q
        self.dtype = dtype
        self.codes = torch.from_numpy(np.array(_int_view(q.codes)))  # a writable copy
        self.scales = torch.from_numpy(q.scales)
        self.scale_codes = torch.from_numpy(q.scale_codes)
        self.tensor_scale = torch.tensor(q.tensor_scale, dtype=torch.float32)
        self.spec = q.spec
        self.format = q.format
        self.shape = torch.Size(q.shape)
        self.bits_per_element = q.bits_per_element

    def dequantize(self):
        """The values the codes and scales stand for, in the input's dtype (computed from the codes
        and scales as quantize produced them: editing the tensors above does not change it)."""
        return _back(self._q.dequantize(), self.dtype)

    def __repr__(self):
        return f"lowp.torch.Quantized({self.spec!r}, shape={tuple(self.shape)})"


def quantize(t, spec, rounding=None, seed=None):
    """Quantize t (last dimension = row, blocks along it) under `spec` -> Quantized."""
    return Quantized(_lowp.quantize(_f32(t, "quantize").numpy(), spec, rounding,
                                    None if seed is None else int(seed) & _MASK64), t.dtype)


def dequantize(q):
    """q.dequantize(): the values of a Quantized, in the quantized tensor's dtype."""
    return q.dequantize()


class _LinearFn(torch.autograd.Function):
    """Y = X W^T + b through the module's QuantLinear. The C++ layer keeps what its backward needs
    from its last forward; a backward for an older forward (the module called twice before one
    backward) first runs that forward again, same inputs and seed, hence the same bits."""

    @staticmethod
    def forward(ctx, x, weight, bias, mod, seed):
        x32 = _f32(x, "lowp.torch.Linear")
        mod._load(weight, bias)
        y = mod._layer.forward(x32.numpy(), seed)
        mod._calls += 1
        ctx.mod, ctx.seed, ctx.call, ctx.x_dtype = mod, seed, mod._calls, x.dtype
        ctx.save_for_backward(x32, weight, bias)
        return _back(y, x.dtype)

    @staticmethod
    def backward(ctx, dy):
        x32, weight, bias = ctx.saved_tensors
        mod = ctx.mod
        if mod._load(weight, bias) or mod._calls != ctx.call:
            mod._layer.forward(x32.numpy(), ctx.seed)
            mod._calls += 1
            ctx.call = mod._calls
        mod._layer.zero_grad()
        dx = mod._layer.backward(_f32(dy, "lowp.torch.Linear backward").numpy(), ctx.seed)
        dw = _back(mod._layer.weight_grad, weight.dtype)
        db = _back(mod._layer.bias_grad, bias.dtype) if bias is not None else None
        return _back(dx, ctx.x_dtype), dw, db, None, None


class _LinearF64(torch.autograd.Function):
    """The fp32 recipe on float64 tensors: the same three GEMMs in float64 with torch.matmul (no
    quantization to follow), so that torch.autograd.gradcheck can run on the module. It checks
    these formulas, not lowp's C++ kernels (test_torch_oracles.py checks those)."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight, bias)
        y = x.matmul(weight.t())
        return y + bias if bias is not None else y

    @staticmethod
    def backward(ctx, dy):
        x, weight, bias = ctx.saved_tensors
        dy2 = dy.reshape(-1, dy.shape[-1])
        dx = dy.matmul(weight)
        dw = dy2.t().matmul(x.reshape(-1, x.shape[-1]))
        db = dy2.sum(0) if bias is not None else None
        return dx, dw, db


class Linear(nn.Linear):
    """nn.Linear whose forward, dgrad and wgrad follow `recipe` exactly as lowp's QuantLinear does:
    a recipe name or file (`lowp recipes`; its linear inside the layers), else a linear preset
    ('preset:<name>' asks for the preset itself). A name means the same bits everywhere: 'mxfp8' is
    OCP MX with floor scales, 'mxfp8-te' TransformerEngine's RCEIL one; 'nvfp4' round-to-nearest
    NVFP4, 'nvfp4-train' NVIDIA's training recipe. Keys of a recipe file this layer does not apply
    (per-layer keys, optimizer, attention) are named in one stderr line. When the backward would
    quantize blocks along the tokens that the token count does not fill, the forward raises
    ValueError saying how to fix it (built-in mxfp8 and nvfp4 pad, as `pad = on` does).

    The same parameters and state_dict as nn.Linear (weight out x in, bias). Every forward call is
    one step: it runs with seed step_seed(seed, step) (stochastic rounding, random Hadamard
    signs), and its backward with the same seed; `step` counts the calls. With stats on, each
    quantized GEMM operand is measured (report()). float32/bfloat16/float16 inputs run the C++
    kernels in float32 (results rounded to the input's dtype); the fp32 recipe also takes float64
    (computed in float64, for gradcheck)."""

    def __init__(self, in_features, out_features, bias=True, recipe="fp32", seed=0, stats=True, device=None,
                 dtype=None):
        if device is not None and torch.device(device).type != "cpu":
            raise ValueError(f"lowp.torch.Linear: lowp runs on the CPU, not {device}")
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)
        self._setup(recipe, seed, stats)
        _note_keys(recipe)

    def _setup(self, recipe, seed, stats):
        self.recipe = recipe
        self.seed = int(seed) & _MASK64
        self.step = 0
        self.stats = bool(stats)
        self._new_layer()

    def _new_layer(self):
        self._layer = _lowp.QuantLinear.from_recipe(self.recipe, self.in_features, self.out_features,
                                                    self.bias is not None)
        self._layer.collect_stats(self.stats)
        self._calls = 0      # forward calls of the C++ layer (which one its saved operands are from)
        self._loaded = None  # which weight and bias the C++ layer holds

    @classmethod
    def from_linear(cls, linear, recipe, seed=0, stats=True):
        """A Linear sharing `linear`'s weight and bias Parameters (an optimizer holding them keeps
        working)."""
        new = cls.__new__(cls)
        nn.Module.__init__(new)
        new.in_features, new.out_features = linear.in_features, linear.out_features
        new.register_parameter("weight", linear.weight)
        new.register_parameter("bias", linear.bias)
        new._setup(recipe, seed, stats)
        new.train(linear.training)
        return new

    def __getstate__(self):  # copy.deepcopy / pickle: the C++ layer is rebuilt from the recipe
        state = self.__dict__.copy()
        state["_layer"] = None
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._new_layer()

    @property
    def linear_recipe(self):
        """The name of the QuantLinear recipe the layer runs (e.g. 'mxfp8-te' for the mxfp8 training recipe)."""
        return self._layer.preset

    def _load(self, weight, bias):
        """Copies weight and bias into the C++ layer when they changed since the last copy (a new
        tensor or an in-place update such as an optimizer step); True when it copied."""
        key = (id(weight), weight.data_ptr(), weight._version,
               None if bias is None else (id(bias), bias.data_ptr(), bias._version))
        if key == self._loaded:
            return False
        self._layer.weight = _f32(weight, "lowp.torch.Linear weight").numpy()
        if bias is not None:
            self._layer.bias = _f32(bias, "lowp.torch.Linear bias").numpy()
        self._loaded = key
        return True

    def forward(self, x):
        if x.dtype == torch.float64 and self.linear_recipe == "fp32":
            return _LinearF64.apply(x, self.weight, self.bias)
        if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, self.weight, self.bias)):
            # A backward will follow: blocks it cannot fill fail here, not in the backward.
            self._layer.check_backward_rows(x.numel() // self.in_features)
        seed = step_seed(self.seed, self.step)
        self.step += 1
        return _LinearFn.apply(x, self.weight, self.bias, self, seed)

    def take_stats(self):
        """The operand statistics since the last call (see report), and resets them."""
        return self._layer.take_stats()

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, recipe={self.recipe!r}")


def _note_keys(recipe):
    """One stderr line naming the keys of a recipe file that lowp.torch does not apply."""
    note = _lowp.recipe_note_for_torch(recipe)
    if note:
        print(f"lowp.torch: {note}", file=sys.stderr)


def _name_filter(filter):
    if filter is None:
        return lambda module, name: True
    if isinstance(filter, str):
        pattern = re.compile(filter)
        return lambda module, name: pattern.search(name) is not None
    if callable(filter):
        return filter
    raise TypeError("convert: filter is None, a regular expression on module names, "
                    "or a callable (module, name) -> bool")


def convert(model, recipe, filter=None, keep_first=0, keep_last=0, seed=0, stats=True):
    """Replaces the nn.Linear modules of `model` in place by Linear modules running `recipe`, sharing
    their Parameters, and returns the model (as torchao's convert_to_float8_training does).

    Candidates are the nn.Linear modules (not already lowp ones) in model.named_modules() order
    that `filter` accepts: a callable (module, name) -> bool (torchao's module_filter_fn), or a
    regular expression searched in the module's name. The first keep_first and the last keep_last
    candidates stay nn.Linear (high precision), the others are converted; the i-th converted
    module is seeded step_seed(seed, i). `model` itself may be an nn.Linear: then the new module
    is returned."""
    if keep_first < 0 or keep_last < 0:
        raise ValueError("convert: keep_first and keep_last must be non-negative")
    _lowp.QuantLinear.from_recipe(recipe, 1, 1, False)  # an unknown recipe fails before any change
    _note_keys(recipe)
    accept = _name_filter(filter)
    candidates = [(name, m) for name, m in model.named_modules()
                  if isinstance(m, nn.Linear) and not isinstance(m, Linear) and accept(m, name)]
    chosen = candidates[keep_first:len(candidates) - keep_last]
    for i, (name, m) in enumerate(chosen):
        new = Linear.from_linear(m, recipe, seed=step_seed(seed, i), stats=stats)
        if name == "":
            return new
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, new)
    return model


def converted(model):
    """The names of the lowp Linear modules of `model`, in order."""
    return [name for name, m in model.named_modules() if isinstance(m, Linear)]


def collect_stats(model, on=True):
    """Turns the telemetry of every lowp Linear of `model` on or off (measuring is a pass over each
    quantized operand, +42% on a 4096 x 4096 layer's step; lowp train measures only the steps it
    logs). Returns the model."""
    for m in model.modules():
        if isinstance(m, Linear):
            m.stats = bool(on)
            m._layer.collect_stats(m.stats)
    return model


def report(model):
    """Per lowp Linear module of `model` and per quantized GEMM operand, what quantizing did since
    the last report (the columns of lowp train's quant.csv): a list of dicts with module, recipe,
    gemm (fwd, dgrad, wgrad), operand (X, W, dY, W^T, dY^T, X^T), sqnr_db, saturated and flushed
    (fractions of the operand's elements), count, and the sums behind them (saturated_count,
    flushed_count, signal, noise). Operands kept in float32 and the int8 GEMM's have no row; a
    cached quantized weight counts once, when quantized. Reading resets the sums."""
    rows = []
    for name, m in model.named_modules():
        if isinstance(m, Linear):
            for row in m._layer.take_stats():
                rows.append({"module": name, "recipe": m.recipe, **row})
    return rows
