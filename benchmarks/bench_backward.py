"""Training step (forward + backward) on CPU torch tensors: qkv.attention (its C kernel forward and
backward, kernels/autograd.py) beside torch's scaled_dot_product_attention, float32.

    .venv/bin/python benchmarks/bench_backward.py [--case causal|window|all] [--rounds 3] [--steps 3]

Cases:
  causal  B=1, H=8, T=2048, D=64, causal: qkv.attention(causal=True) vs SDPA(is_causal=True).
  window  B=1, H=4, T=16,384, D=64, a sliding window of W=256 keys before each query:
          qkv.attention(mask_mod=qkv.masks.sliding_window(256)) vs SDPA with the same window as a
          dense boolean (T, T) mask (the only way to give SDPA that window).
Each side runs in its own process (so thread pools and memory churn of one do not touch the
other), the two alternating, --rounds processes each; a process builds the inputs, warms up with
one step and times --steps steps (loss = Σ out·dout, backward to q, k, v). Reported: the median
step time over all timed steps, the ratio SDPA / qkv, and each process's peak resident memory above
what it held once the inputs (and SDPA's dense mask, which is part of its input) existed.
Timings on a shared machine swing with its load: compare the ratio, not the times.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

CASES = {
    "causal": dict(heads=8, seq=2048, dim=64, window=None),
    "window": dict(heads=4, seq=16384, dim=64, window=256),
}


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def _worker(case: str, impl: str, steps: int) -> dict:
    import torch
    import torch.nn.functional as F

    import qkv
    import qkv.masks as masks

    spec = CASES[case]
    g = torch.Generator().manual_seed(0)
    shape = (1, spec["heads"], spec["seq"], spec["dim"])
    q, k, v, dout = (torch.randn(shape, generator=g) for _ in range(4))
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    t = spec["seq"]
    if impl == "sdpa" and spec["window"] is not None:
        i = torch.arange(t)
        dense = (i[None, :] <= i[:, None]) & (i[None, :] >= i[:, None] - spec["window"])   # (T, T) bool

    def step():
        if impl == "qkv":
            if spec["window"] is None:
                out = qkv.attention(q, k, v, causal=True)
            else:
                out = qkv.attention(q, k, v, mask_mod=masks.sliding_window(spec["window"]))
        elif spec["window"] is None:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=dense)
        torch.autograd.backward(out, dout)
        for x in (q, k, v):
            x.grad = None

    base = _rss_mb()
    times = []
    for n in range(steps + 1):
        started = time.perf_counter()
        step()
        if n:
            times.append(time.perf_counter() - started)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # KiB → MiB
    return {"times": times, "peak_above_inputs_mb": peak - base, "threads": torch.get_num_threads()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", choices=list(CASES) + ["all"], default="all")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--worker", nargs=2, metavar=("CASE", "IMPL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(args.worker[0], args.worker[1], args.steps)))
        return
    for case in CASES if args.case == "all" else [args.case]:
        results = {"qkv": [], "sdpa": []}
        peaks = {"qkv": [], "sdpa": []}
        for _ in range(args.rounds):
            for impl in ("qkv", "sdpa"):
                done = subprocess.run([sys.executable, __file__, "--worker", case, impl, "--steps", str(args.steps)],
                                      capture_output=True, text=True, timeout=1800, check=True)
                got = json.loads(done.stdout.strip().splitlines()[-1])
                results[impl] += got["times"]
                peaks[impl].append(got["peak_above_inputs_mb"])
        spec = CASES[case]
        q_ms, s_ms = (statistics.median(results[i]) * 1e3 for i in ("qkv", "sdpa"))
        print(f"{case}: B=1 H={spec['heads']} T={spec['seq']} D={spec['dim']}"
              + (f" W={spec['window']}" if spec["window"] else " causal")
              + f" fwd+bwd float32: qkv {q_ms:.0f} ms, SDPA {s_ms:.0f} ms, ×{s_ms / q_ms:.2f}"
              + f" | peak memory above inputs: qkv {max(peaks['qkv']):.0f} MiB, SDPA {max(peaks['sdpa']):.0f} MiB"
              + f" | {len(results['qkv'])} steps each, {args.rounds} alternating processes each")
        print("  qkv  ms:", " ".join(f"{t * 1e3:.0f}" for t in results["qkv"]))
        print("  SDPA ms:", " ".join(f"{t * 1e3:.0f}" for t in results["sdpa"]))


if __name__ == "__main__":
    main()
