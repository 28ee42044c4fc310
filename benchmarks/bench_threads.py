"""The kernel's thread tail: each thread's busy time per call, for qkv.attention's C routes.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_threads.py [--calls 20] [--t 512 1024 2048]
                                                                [--heads 8] [--only numpy|torch]

For B = 1, H heads, D = 64, float32, dense and causal: the NumPy forward (flash_many) and the torch
forward + backward (kernels/autograd.py: flash_many, backward_many). qkv.kernels.pool's probe
records, for every pooled call, when each thread began and stopped taking tasks and its CPU
seconds meanwhile. Per (case, pass), medians over --calls calls of:
  wall    first start → last end of the pooled section (ms)
  tail    first thread's end → last thread's end: the time one thread sits idle (ms)
  skew    first start → last start: how late the pool's worker began (ms)
  cpu     CPU ms of all threads together (does not depend on machine load as wall time does)
  use     cpu / (threads × wall): 1.0 when no thread waits
The whole call (Python included) is timed too ("call", ms). On a loaded machine the wall times
swing; tail/wall and cpu are the figures to compare before and after a change.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _summary(rows_by_call: dict) -> dict:
    walls, tails, skews, cpus, uses = [], [], [], [], []
    for rows in rows_by_call.values():
        starts = [r[2] for r in rows]
        ends = [r[3] for r in rows]
        cpu = sum(r[4] for r in rows)
        wall = max(ends) - min(starts)
        walls.append(wall)
        tails.append(max(ends) - min(ends))
        skews.append(max(starts) - min(starts))
        cpus.append(cpu)
        uses.append(cpu / (len(rows) * wall) if wall > 0 else 1.0)
    med = statistics.median
    return {"wall": med(walls) * 1e3, "tail": med(tails) * 1e3, "skew": med(skews) * 1e3, "cpu": med(cpus) * 1e3,
            "use": med(uses), "n": len(walls)}


def _by_call(rows) -> dict:
    calls: dict = {}
    for row in rows:
        calls.setdefault(row[0], []).append(row)
    return calls


def run_numpy(t: int, heads: int, causal: bool, calls: int):
    import qkv
    from qkv.kernels import pool

    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, heads, t, 64), dtype=np.float32) for _ in range(3))
    for _ in range(3):
        qkv.attention(q, k, v, causal=causal)
    pool.probe = rows = []
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        qkv.attention(q, k, v, causal=causal)
        times.append(time.perf_counter() - start)
    pool.probe = None
    return {"forward": _summary(_by_call(rows))}, statistics.median(times) * 1e3


def run_torch(t: int, heads: int, causal: bool, calls: int):
    import torch

    import qkv
    from qkv.kernels import pool

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, heads, t, 64, requires_grad=True) for _ in range(3))
    dout = torch.randn(1, heads, t, 64)

    def step():
        out = qkv.attention(q, k, v, causal=causal)
        mark.append(pool._probe_calls)
        out.backward(dout)
        q.grad = k.grad = v.grad = None

    mark: list = []
    for _ in range(2):
        step()
    mark.clear()
    pool.probe = rows = []
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    pool.probe = None
    calls_rows = _by_call(rows)
    forward_ids = set(mark)   # the last pooled call before the forward returned
    forward = {c: r for c, r in calls_rows.items() if c in forward_ids}
    backward = {c: r for c, r in calls_rows.items() if c not in forward_ids}
    out = {}
    if forward:
        out["forward"] = _summary(forward)
    if backward:
        out["backward"] = _summary(backward)
    return out, statistics.median(times) * 1e3


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--t", type=int, nargs="+", default=[512, 1024, 2048])
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--only", choices=["numpy", "torch"])
    args = parser.parse_args(argv)
    print(f"{'lib':6} {'mask':6} {'T':>5} {'pass':9} {'call':>8} {'wall':>8} {'tail':>7} {'skew':>6} "
          f"{'cpu':>8} {'use':>5}")
    for lib, runner in (("numpy", run_numpy), ("torch", run_torch)):
        if args.only and lib != args.only:
            continue
        for t in args.t:
            for causal in (False, True):
                passes, call_ms = runner(t, args.heads, causal, args.calls)
                for name, s in passes.items():
                    print(f"{lib:6} {'causal' if causal else 'dense':6} {t:5d} {name:9} {call_ms:8.2f} "
                          f"{s['wall']:8.2f} {s['tail']:7.3f} {s['skew']:6.3f} {s['cpu']:8.2f} {s['use']:5.2f}",
                          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
