#!/usr/bin/python3
"""lowp.encode throughput against numpy's own copyto bandwidth, in one process.

    PYTHONPATH=build/python /usr/bin/python3 bench/python/encode_throughput.py [--threads 1] [--log2n 24] [--repetitions 3]

For each format: the best of --iterations timed calls of lowp.encode(x, fmt) on 2^log2n float32
values (a new output array each call, as a user gets it) against the best of the same number of
copies of x into a preallocated float32 array (the memory-bandwidth baseline), the two calls
alternating so that both see the same machine load, and both on the same
number of threads: lowp runs its OpenMP loop on --threads threads (OMP_NUM_THREADS, set before
lowp is imported), and the copy is np.copyto over --threads contiguous slices, one per Python
thread (numpy releases the GIL while it copies). ratio = copy time / encode time, so 1 means
"as fast as a copy" and the issue's bar is ratio >= 0.5. Each repetition measures both again;
the median ratio is reported.
"""
import argparse
import concurrent.futures
import os
import statistics
import time

import numpy as np

CASES = [("float8_e4m3fn", "nearest"), ("float8_e5m2", "nearest"), ("bfloat16", "nearest"),
         ("float4_e2m1fn", "nearest"), ("float6_e2m3fn", "nearest"), ("float8_e4m3fn", "stochastic")]


def best_pair(f, g, iterations):
    """The best time of f and of g over `iterations` alternating calls (f, g, f, g, ...), so both
    see the same machine load."""
    tf, tg = [], []
    for _ in range(iterations):
        for fn, times in ((f, tf), (g, tg)):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return min(tf), min(tg)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1, help="threads for both encode and the copy (default 1)")
    a = ap.parse_args()
    if a.threads < 1:
        ap.error(f"--threads must be >= 1, not {a.threads}")
    # libgomp reads OMP_NUM_THREADS once, when lowp's extension loads it.
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    import lowp
    n = 1 << a.log2n
    x = (np.random.default_rng(0).standard_normal(n) * 50).astype(np.float32)
    dst = np.empty_like(x)
    np.copyto(dst, x)  # touch the destination's pages once
    bounds = [n * i // a.threads for i in range(a.threads + 1)]
    pool = concurrent.futures.ThreadPoolExecutor(a.threads) if a.threads > 1 else None

    def copy():
        if pool is None:
            np.copyto(dst, x)
            return
        jobs = [pool.submit(np.copyto, dst[lo:hi], x[lo:hi]) for lo, hi in zip(bounds, bounds[1:])]
        for j in jobs:
            j.result()

    print(f"n = 2^{a.log2n} float32 ({n * 4 / 2**20:.0f} MiB), {a.repetitions} repetitions x best of "
          f"{a.iterations}, threads={a.threads} (OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, "
          f"copy slices={a.threads}), cpus={os.cpu_count()}")
    print(f"{'format':16} {'rounding':10} {'copy ms':>10} {'encode ms':>10} {'encode GB/s in':>15} {'ratio':>7}")
    for fmt, rounding in CASES:
        lowp.encode(x, fmt, rounding=rounding)  # warm-up
        ratios, tc, te = [], [], []
        for _ in range(a.repetitions):
            c, e = best_pair(copy, lambda: lowp.encode(x, fmt, rounding=rounding), a.iterations)
            ratios.append(c / e)
            tc.append(c)
            te.append(e)
        ce, ee = statistics.median(tc), statistics.median(te)
        print(f"{fmt:16} {rounding:10} {ce * 1e3:10.2f} {ee * 1e3:10.2f} {n * 4 / ee / 1e9:15.2f} "
              f"{statistics.median(ratios):7.2f}")


if __name__ == "__main__":
    main()
