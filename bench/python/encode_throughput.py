#!/usr/bin/python3
"""lowp.encode throughput against numpy's own copyto bandwidth, in one process.

    PYTHONPATH=build/python /usr/bin/python3 bench/python/encode_throughput.py [--log2n 24] [--repetitions 3]

For each format: the best of --iterations timed calls of lowp.encode(x, fmt) on 2^log2n float32
values (a new output array each call, as a user gets it) against the best of the same number of
np.copyto(dst, x) calls (float32 -> float32 into a preallocated array, the memory-bandwidth
baseline). ratio = copyto time / encode time, so 1 means "as fast as a copy" and the issue's
bar is ratio >= 0.5. Each repetition measures both again; the median ratio is reported.
"""
import argparse
import os
import statistics
import time

import numpy as np

import lowp

CASES = [("float8_e4m3fn", "nearest"), ("float8_e5m2", "nearest"), ("bfloat16", "nearest"),
         ("float4_e2m1fn", "nearest"), ("float6_e2m3fn", "nearest"), ("float8_e4m3fn", "stochastic")]


def best(fn, iterations):
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10)
    a = ap.parse_args()
    n = 1 << a.log2n
    x = (np.random.default_rng(0).standard_normal(n) * 50).astype(np.float32)
    dst = np.empty_like(x)
    np.copyto(dst, x)  # touch the destination's pages once
    print(f"n = 2^{a.log2n} float32 ({n * 4 / 2**20:.0f} MiB), {a.repetitions} repetitions x best of "
          f"{a.iterations}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, cpus={os.cpu_count()}")
    print(f"{'format':16} {'rounding':10} {'copyto ms':>10} {'encode ms':>10} {'encode GB/s in':>15} {'ratio':>7}")
    for fmt, rounding in CASES:
        lowp.encode(x, fmt, rounding=rounding)  # warm-up
        ratios, tc, te = [], [], []
        for _ in range(a.repetitions):
            c = best(lambda: np.copyto(dst, x), a.iterations)
            e = best(lambda: lowp.encode(x, fmt, rounding=rounding), a.iterations)
            ratios.append(c / e)
            tc.append(c)
            te.append(e)
        ce, ee = statistics.median(tc), statistics.median(te)
        print(f"{fmt:16} {rounding:10} {ce * 1e3:10.2f} {ee * 1e3:10.2f} {n * 4 / ee / 1e9:15.2f} "
              f"{statistics.median(ratios):7.2f}")


if __name__ == "__main__":
    main()
