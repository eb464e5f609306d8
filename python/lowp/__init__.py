"""lowp: exact emulation of low-precision number formats (FP8/FP6/FP4/BF16/int8, scaling,
Hadamard rotations, quantized linear layers, a Llama evaluator) over the C++ kernels.

Arrays go in as numpy arrays (float32 C-contiguous arrays are read in place) and come out as
new numpy arrays; the kernels run with the GIL released. Bad arguments raise ValueError, bad
data lowp.Error (a RuntimeError), each with the C++ message. See docs/python.md.

lowp.torch (imported on its own: `import lowp.torch`) brings the same kernels into PyTorch.
"""
from ._lowp import (  # noqa: F401
    Error,
    QuantizedTensor,
    QuantLinear,
    Rotation,
    decode,
    encode,
    eval,
    fake_quant,
    formats,
    fwht,
    linear_presets,
    pack,
    quantize,
    sweep,
    train_recipes,
    unpack,
)

__all__ = [
    "Error", "QuantizedTensor", "QuantLinear", "Rotation", "decode", "encode", "eval", "fake_quant",
    "formats", "fwht", "linear_presets", "pack", "quantize", "sweep",
    "train_recipes", "unpack",
]
