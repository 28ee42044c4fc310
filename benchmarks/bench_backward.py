"""Training step (forward + backward) on CPU torch tensors: qkv.attention (its C kernel forward and
backward, kernels/autograd.py) beside torch's scaled_dot_product_attention and compiled
flex_attention, float32 — the training rows of `qkv bench`, alone (qkv.bench.measure_training).

    .venv/bin/python benchmarks/bench_backward.py [--case causal|window|all] [--rounds 3] [--steps 3]
                                                  [--no-flex] [--json FILE]

Cases:
  causal  B=1, H=8, T=2048, D=64, causal: qkv.attention(causal=True) vs SDPA(is_causal=True).
  window  B=1, H=4, T=16,384, D=64, a sliding window of W=256 keys before each query, written as a
          user lambda `lambda b, h, q, k: (q >= k) & (q - k <= 256)` and passed to qkv.attention as
          mask_mod, vs SDPA with the same window as a dense boolean (T, T) mask (the only way to
          give SDPA that window; 2 processes of 1 timed step: ~30 s a step).
  Both: compiled flex_attention with its block mask built beforehand, if its backward runs (torch
  2.13: "FlexAttention does not support backward on CPU", shown as the row's reason).
Each side runs in its own process (so thread pools and memory churn of one do not touch the
other), the processes alternating, --rounds processes each; a process builds the inputs, takes one
untimed step and times --steps steps (loss = Σ out·dout, backward to q, k, v). Reported: the median
step time over all timed steps, the ratio SDPA / qkv, and each process's peak resident memory above
what it held once the inputs (and SDPA's dense mask, which is part of its input) existed.
Timings on a shared machine swing with its load: compare the ratio, not the times.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", choices=["causal", "window", "all"], default="all")
    parser.add_argument("--rounds", type=int, default=3, help="processes per implementation (qkv; SDPA too "
                        "for causal)")
    parser.add_argument("--steps", type=int, default=3, help="timed steps per process")
    parser.add_argument("--no-flex", action="store_true", help="do not try compiled flex_attention")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    from dataclasses import replace

    from qkv.bench import FULL, TRAINING, _clean, measure_training

    cases = [replace(case, rounds=args.rounds, steps=args.steps) for case in FULL.train_cases
             if args.case in ("all", case.kind)]
    rows = []
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    for case in cases:
        rows += measure_training(case, flex=not args.no_flex, no_flex="not run (--no-flex)",
                                 say=lambda message: print(message, file=sys.stderr, flush=True))
    with open("/proc/loadavg") as f:
        load_after = f.read().split()[0]
    print(f"Training step, float32, B=1, D=64; {TRAINING}. Load average {load} before, {load_after} after "
          f"({os.cpu_count()} CPUs).\n")
    print("| step | H | T | implementation | ms per step | ×SDPA | peak MiB above inputs | steps |")
    print("|:--|--:|--:|:--|--:|--:|--:|--:|")
    for row in rows:
        if row.skipped:
            print(f"| {row.mask} | {row.heads} | {row.t} | {row.impl} (skipped: {row.skipped}) | — | — | — | — |")
            continue
        ratio = row.vs_torch if row.impl.startswith("qkv") else (1 / row.qkv_speedup if row.qkv_speedup else None)
        print(f"| {row.mask} | {row.heads} | {row.t} | {row.impl} | {row.seconds * 1e3:.0f} | "
              f"{'—' if ratio is None else f'{ratio:.2f}'} | {'—' if row.peak_mib is None else f'{row.peak_mib:.0f}'} | "
              f"{len(row.times)} |")
        print(f"|  |  |  | (each step, ms: {' '.join(f'{t * 1e3:.0f}' for t in row.times)}) |  |  |  |  |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"timing": TRAINING, "load_before": float(load), "load_after": float(load_after),
                       "rows": [_clean(row) for row in rows]}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
