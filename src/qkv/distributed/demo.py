"""What one rank measures in `qkv ring`: time, compute, bytes sent and peak memory per strategy.

`measure(...)` runs on every rank of an initialised group (under `run_local` or torchrun). Every
rank builds the same random inputs (same seed), takes its shard, and times a training step
(forward + backward) of ring attention in each layout and, when H % P == 0, Ulysses. Figures:

- time_s: wall seconds of the step (median of `repeats`); compute_s: this thread's CPU seconds in
  block attention (not inflated when other processes share the cores); wait_s: exposed transfer.
- bytes_sent: bytes handed to sends (counted by qkv); bytes_formula: the closed form
  (see `bytes_formula`); os_bytes_written: the growth of the process's write counter
  (/proc/self/io wchar: every write()/writev() to a socket or file, i.e. what gloo actually put on
  the wire, headers included) over the step, where the OS provides it.
- peak_mib: the resident-set high-water mark during the step above the resident set just before
  it (Linux: /proc/self/clear_refs resets the mark).
- compute_per_step_s: compute_s over the ring steps taken (forward and backward);
  transfer_s (per rank): wall seconds of one k/v shard exchange alone. A ring step's transfer
  hides behind its compute when transfer_s ≤ compute_per_step_s (the overlap condition).
- max_error: largest difference from single-process `qkv.attention` (output and gradients) on
  the whole sequence, when check=True.
"""

from __future__ import annotations

import os
import statistics
import time

from .layout import shard
from .ring import RingStats, ring_attention
from .ulysses import ulysses_attention

__all__ = ["measure", "bytes_formula"]


def bytes_formula(strategy: str, *, world: int, seq_len: int, batch: int, heads: int, kv_heads: int,
                  dim_k: int, dim_v: int, itemsize: int, backward: bool = True) -> int:
    """Bytes one rank sends in one forward (+ backward) pass.

    ring: k/v shards of B·G·(T/P)·(Dk+Dv) values go round P−1 times in the forward; the backward
    sends them P−1 times again and the dK/dV sums P times.
    ulysses: each all-to-all sends (P−1)/P of its tensor: q, k, v in and out back in the forward,
    and their gradients the opposite way in the backward (k/v repeated to H heads when G % P ≠ 0).
    """
    tokens = seq_len // world
    if strategy == "ring":
        shard_values = batch * kv_heads * tokens * (dim_k + dim_v)
        return shard_values * itemsize * ((world - 1) + ((2 * world - 1) if backward else 0))
    g = kv_heads if kv_heads % world == 0 else heads
    one_way = batch * tokens * (heads * dim_k + g * dim_k + g * dim_v + heads * dim_v)
    return one_way * itemsize * (world - 1) // world * (2 if backward else 1)


def measure(*, seq_len: int, batch: int = 1, heads: int = 8, kv_heads: int | None = None, dim: int = 64,
            dtype: str = "float32", causal: bool = True, strategies=("ring:contiguous", "ring:zigzag", "ulysses"),
            repeats: int = 3, check: bool = False, seed: int = 0, fail_rank: int | None = None) -> dict:
    """This rank's measurements for each strategy (see the module docstring); a dict by strategy.

    fail_rank: that rank exits abruptly (os._exit) before its first step, to rehearse a failure.
    """
    import torch
    import torch.distributed as dist

    import qkv

    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == fail_rank:
        os._exit(1)
    kv_heads = kv_heads or heads
    torch_dtype = getattr(torch, dtype)
    generator = torch.Generator().manual_seed(seed)
    full = [torch.randn(batch, n, seq_len, dim, dtype=torch_dtype, generator=generator)
            for n in (heads, kv_heads, kv_heads, heads)]  # q, k, v, d_out
    reference = None
    if check:
        leaves = [t.clone().requires_grad_() for t in full[:3]]
        out = qkv.attention(*leaves, causal=causal)
        out.backward(full[3])
        reference = [out.detach()] + [t.grad for t in leaves]
    results = {}
    for name in strategies:
        strategy, _, layout = name.partition(":")
        layout = layout or "contiguous"
        if strategy == "ulysses" and heads % world:
            continue
        parts = [shard(t, rank, world, layout=layout).contiguous() for t in full]
        runs = []
        for _ in range(repeats + 1):  # the first run warms up and is not counted
            runs.append(_one_step(strategy, layout, causal, parts))
        runs = runs[1:]
        row = {key: statistics.median(run[key] for run in runs) for key in runs[0] if key != "grads"}
        row["bytes_formula"] = bytes_formula(strategy, world=world, seq_len=seq_len, batch=batch, heads=heads,
                                             kv_heads=kv_heads, dim_k=dim, dim_v=dim,
                                             itemsize=full[0].element_size())
        if reference is not None:
            got = runs[-1]["grads"]
            row["max_error"] = max(float((a - shard(b, rank, world, layout=layout)).abs().max())
                                   for a, b in zip(got, reference))
        row["compute_per_step_s"] = row["compute_s"] / max(1, runs[0]["steps"])
        results[name] = row
    transfer = _transfer_seconds(full[1], full[2], rank, world, repeats) if world > 1 else None
    return {"rank": rank, "world": world, "results": results, "transfer_s": transfer}


def _transfer_seconds(k, v, rank: int, world: int, repeats: int) -> float:
    """Wall seconds of one ring step's k/v shard exchange alone (send to next, receive from previous)."""
    import torch.distributed as dist

    from .ring import _Ring

    ring = _Ring(None)
    shard_kv = (shard(k, rank, world, layout="contiguous").contiguous(),
                shard(v, rank, world, layout="contiguous").contiguous())
    times = []
    for _ in range(repeats + 1):
        dist.barrier()
        started = time.perf_counter()
        ring.start(shard_kv, tag=2, step=0, stats=RingStats()).wait(RingStats())
        times.append(time.perf_counter() - started)
    return statistics.median(times[1:])


def _one_step(strategy: str, layout: str, causal: bool, parts) -> dict:
    q, k, v = (t.clone().requires_grad_() for t in parts[:3])
    stats = RingStats()
    written = _bytes_written()
    baseline = _reset_peak()
    started = time.perf_counter()
    if strategy == "ring":
        out = ring_attention(q, k, v, causal=causal, layout=layout, stats=stats)
    else:
        out = ulysses_attention(q, k, v, causal=causal, layout=layout, stats=stats)
    out.backward(parts[3])
    wall = time.perf_counter() - started
    peak = _peak()
    written_after = _bytes_written()
    row = {"time_s": wall, "compute_s": stats.compute_s, "wait_s": stats.wait_s, "bytes_sent": stats.bytes_sent,
           "pairs": stats.pairs, "steps": stats.steps, "grads": (out.detach(), q.grad, k.grad, v.grad)}
    if baseline is not None and peak is not None:
        row["peak_mib"] = max(0, peak - baseline) / 1024
    if written is not None and written_after is not None:
        row["os_bytes_written"] = written_after - written
    return row


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> int | None:
    """Reset the resident-set high-water mark to the current resident set (KiB), or None."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return _status_kib("VmRSS")


def _peak() -> int | None:
    return _status_kib("VmHWM")


def _bytes_written() -> int | None:
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None

