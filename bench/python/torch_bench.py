#!/usr/bin/python3
"""lowp.torch against plain PyTorch, in one process at one thread count.

    PYTHONPATH=build/python /usr/bin/python3 bench/python/torch_bench.py [--threads N] [--repetitions 3]

1. fake_quant of a 4096 x 4096 float32 tensor (normal values times log-normal column magnitudes)
   under mxfp4, nvfp4 and fp8-rowwise (e4m3:row:pow2): lowp.torch.fake_quant against the same
   quantization written below with plain torch elementwise operations, the way microxcaling
   emulates MX (per-element exponent, scale to the mantissa grid, torch.round's half-to-even,
   clamp). The torch versions are checked against lowp's output bit for bit before timing.
   ratio = torch time / lowp time (issue 23's target: >= 20).
2. Forward + backward of a 4096 -> 4096 linear on 2048 rows: lowp.torch.Linear under
   fp8-tensorwise, mxfp8 and switchback-int8 (and fp32, lowp's own float32 GEMM) against
   nn.Linear in float32, W changed in place before each step as an optimizer would.
   ratio = lowp time / nn.Linear time (targets: <= 1.5 for fp8-tensorwise and mxfp8, <= 1.0 for
   switchback-int8).

Each repetition times both sides again (best of --iterations fake_quant calls, of
--linear-iterations linear steps); the median ratio is reported. The first calls are slower (the
kernel maps fresh pages for the 64 MiB results), hence the best of several.
Times are the process's CPU time (time.process_time, all its threads) by default, which a machine
shared with other jobs inflates far less than the wall clock; --clock wall for the wall clock.
"""
import argparse
import os
import statistics
import time

import torch
from torch import nn

import lowp.torch as lt


# --- the quantizations in plain torch (microxcaling's way) ---------------------------------------

def quant_elem(a, ebits, mbits, max_norm):
    """Round a (already divided by its scale) to a float grid of `ebits` exponent bits and
    `mbits` - 2 mantissa bits (microxcaling's mbits counts sign and implicit bit), subnormals
    included, half to even, saturating at max_norm."""
    min_exp = -(2 ** (ebits - 1)) + 2
    private_exp = torch.floor(torch.log2(a.abs() + (a == 0).to(a.dtype))).clamp(min=min_exp)
    step = torch.exp2(private_exp - (mbits - 2))
    return (torch.round(a / step) * step).clamp(-max_norm, max_norm)


def torch_mxfp4(x):
    blocks = x.reshape(-1, 32)
    amax = blocks.abs().amax(dim=1, keepdim=True)
    shared = (torch.floor(torch.log2(amax + (amax == 0).to(x.dtype))) - 2).clamp(-127, 127)  # emax(E2M1) = 2
    scale = torch.exp2(shared)
    return (quant_elem(blocks / scale, 2, 3, 6.0) * scale).reshape(x.shape)


def torch_nvfp4(x):
    blocks = x.reshape(-1, 16)
    amax = x.abs().amax()
    ts = amax / (448.0 * 6.0) if float(amax) > 0 else torch.tensor(1.0)
    bs = ((blocks.abs().amax(dim=1, keepdim=True) / 6.0) / ts).clamp(2.0 ** -6, 448.0)
    bs = quant_elem(bs, 4, 5, 448.0)  # UE4M3
    d = ts * bs
    return (quant_elem(blocks / d, 2, 3, 6.0) * d).reshape(x.shape)


def torch_fp8_rowwise(x):
    amax = x.abs().amax(dim=1, keepdim=True)
    s = torch.exp2(torch.floor(torch.log2(448.0 / amax)))  # torchao's power-of-two multiplier
    return quant_elem(x * s, 4, 5, 448.0) / s


FAKE_QUANT = [("mxfp4", "mxfp4", torch_mxfp4), ("nvfp4", "nvfp4", torch_nvfp4),
              ("fp8-rowwise", "e4m3:row:pow2", torch_fp8_rowwise)]
# (label, recipe, stats): telemetry off, as a run that does not call report() would set it, and
# mxfp8 once more with it on (the default) for its cost.
LINEAR = [("fp32", "fp32", False), ("fp8-tensorwise", "fp8-tensorwise", False), ("mxfp8", "mxfp8", False),
          ("switchback-int8", "switchback-int8", False), ("mxfp8, stats on", "mxfp8", True)]


CLOCK = {"cpu": time.process_time, "wall": time.perf_counter}


def best(fn, iterations, clock):
    times = []
    for _ in range(iterations):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=5, help="fake_quant calls timed per repetition (best)")
    ap.add_argument("--linear-iterations", type=int, default=1, help="linear steps timed per repetition (best)")
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--only", choices=["fake_quant", "linear"], default=None)
    ap.add_argument("--clock", choices=list(CLOCK), default="cpu")
    a = ap.parse_args()
    clock = CLOCK[a.clock]
    torch.set_num_threads(a.threads)  # lowp's OpenMP kernels read the same setting
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, {a.repetitions} repetitions x best of "
          f"{a.iterations} (fake_quant) / {a.linear_iterations} (linear), {a.clock} time, cpus={os.cpu_count()}")
    n = a.size
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, n, generator=g) * torch.exp(torch.randn(1, n, generator=g))

    if a.only in (None, "fake_quant"):
        print(f"\nfake_quant of a {n} x {n} float32 tensor")
        print(f"{'spec':14} {'torch ms':>10} {'lowp ms':>10} {'ratio':>8}  bit-equal")
        for name, spec, ref in FAKE_QUANT:
            want, got = ref(x), lt.fake_quant(x, spec)
            equal = torch.equal(want, got)
            ratios, tt, tl = [], [], []
            for _ in range(a.repetitions):
                t = best(lambda: ref(x), a.iterations, clock)
                l = best(lambda: lt.fake_quant(x, spec), a.iterations, clock)
                ratios.append(t / l)
                tt.append(t)
                tl.append(l)
            print(f"{name:14} {statistics.median(tt) * 1e3:10.1f} {statistics.median(tl) * 1e3:10.1f} "
                  f"{statistics.median(ratios):8.1f}  {'yes' if equal else 'NO: %d differ' % int((want != got).sum())}")

    if a.only in (None, "linear"):
        print(f"\nforward + backward of a {n} -> {n} linear on {a.rows} rows (ratio = lowp / nn.Linear float32)")
        xin = torch.randn(a.rows, n, generator=g).requires_grad_()
        dy = torch.randn(a.rows, n, generator=g)
        torch.manual_seed(0)
        base = nn.Linear(n, n)

        def step(layer):
            with torch.no_grad():  # a training step changes W: lowp copies and quantizes it again
                layer.weight.mul_(1.0)
            layer.weight.grad = None
            layer.bias.grad = None
            xin.grad = None
            layer(xin).backward(dy)

        layers = {}
        for label, recipe, stats in LINEAR:
            layers[label] = lt.convert(nn.Linear(n, n), recipe, stats=stats)
            with torch.no_grad():
                layers[label].weight.copy_(base.weight)
                layers[label].bias.copy_(base.bias)
            step(layers[label])  # warm-up
        step(base)
        times = {label: [] for label in ["nn.Linear"] + list(layers)}
        ratios = {label: [] for label in layers}
        for _ in range(a.repetitions):  # nn.Linear once a repetition, each lowp layer after it
            b = best(lambda: step(base), a.linear_iterations, clock)
            times["nn.Linear"].append(b)
            for label, layer in layers.items():
                q = best(lambda: step(layer), a.linear_iterations, clock)
                times[label].append(q)
                ratios[label].append(q / b)
        print(f"{'layer':24} {'ms':>10} {'ratio':>8}")
        print(f"{'nn.Linear (float32)':24} {statistics.median(times['nn.Linear']) * 1e3:10.1f} {1:8.2f}")
        for label in layers:
            print(f"{label:24} {statistics.median(times[label]) * 1e3:10.1f} {statistics.median(ratios[label]):8.3f}")

if __name__ == "__main__":
    main()
