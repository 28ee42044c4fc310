"""The C backward's five products per block pair: AVX2 register tiles against NumPy's sgemm
(kernels/_backward.c, backward_many(tile=1) / tile=0), by CPU time, which does not depend on how
busy the machine is as wall time does (other work still shares the caches: compare ratios).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_backward_tiles.py [--t 2048] [--heads 8] [--d 64]
                                                                        [--dense] [--rounds 5] [--calls 5]
                                                                        [--groups 1 2 4] [--threads 1]

One process, the variants alternating round by round (tile 1 and 0, each group): each call of
backward_arrays on B = 1, H heads, T, D float32 (causal unless --dense) is timed by the calling
thread's CPU time inside backward_many (--threads 1: one thread does all of it; BLAS held to one
thread) and by the process's CPU time for the whole call. Printed per variant: the median and
the minimum per call (ms), GFLOP/s of the five products over the visited block pairs, and the
ratio to sgemm at the same group.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # one BLAS thread (before NumPy loads it)

import numpy as np  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--t", type=int, default=2048)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--dense", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--groups", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    from qkv.kernels import autograd as ag, native

    if not ag.available():
        print("the C backward is not available here")
        return 1
    t, h, d = args.t, args.heads, args.d
    rng = np.random.default_rng(0)
    q, k, v, dout, out = (rng.standard_normal((h, t, d), dtype=np.float32) for _ in range(5))
    hi = np.full(t, t) if args.dense else np.arange(t) + 1
    rows = np.stack([np.zeros(t, np.int64), hi.astype(np.int64)])
    lse = np.full((h, t), 5.0, np.float32)
    scale = d ** -0.5
    plan = ag._plan(rows, t, t, min(ag.BLOCK_Q, t), min(ag.BLOCK_K, t))
    flops = 5 * 2 * plan.visited * h * d       # five products over the visited block pairs
    inner = [0.0]
    real = native.fused

    class Timed:   # backward_many timed by the calling thread's CPU clock
        def __getattr__(self, name):
            return getattr(real, name)

        @staticmethod
        def backward_many(*a, **kw):
            c0 = time.thread_time()
            try:
                return real.backward_many(*a, **kw)
            finally:
                inner[0] += time.thread_time() - c0

    variants = [(tile, g) for g in args.groups for tile in (1, 0)]
    found = {key: [] for key in variants}
    native.fused = Timed()
    try:
        for key in variants:   # warm-up
            ag.backward_arrays(dout, q, k, v, out, lse, rows, scale, threads=args.threads, group=key[1], tile=key[0])
        for _ in range(args.rounds):
            for tile, g in variants:
                for _ in range(args.calls):
                    inner[0] = 0.0
                    c0 = time.process_time()
                    ag.backward_arrays(dout, q, k, v, out, lse, rows, scale, threads=args.threads, group=g, tile=tile)
                    found[(tile, g)].append((inner[0], time.process_time() - c0))
    finally:
        native.fused = real
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"T={t} H={h} D={d} {'dense' if args.dense else 'causal'}, threads={args.threads}, load {load}; "
          f"{flops / 1e9:.2f} GFLOP per call")
    med = statistics.median
    for tile, g in variants:
        kernel = [x[0] for x in found[(tile, g)]]
        call = [x[1] for x in found[(tile, g)]]
        ratio = med(x[0] for x in found[(0, g)]) / med(kernel)
        print(f"  {'tiles' if tile else 'sgemm'} group {g}: backward_many {med(kernel) * 1e3:7.1f} ms "
              f"(min {min(kernel) * 1e3:6.1f}), call {med(call) * 1e3:7.1f} ms, "
              f"{flops / med(kernel) / 1e9:5.1f} GFLOP/s, sgemm/this {ratio:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
