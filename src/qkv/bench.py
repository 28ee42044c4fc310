"""Side-by-side attention benchmark: qkv's blocked kernel, the plain path, naive NumPy, torch.

Everything runs in one process on the same float32 inputs. Each repeat runs every
implementation once, round-robin, so a busy machine slows them alike; the time reported is
the median of the repeats. Throughput counts 4·B·H·Tq·Tk·D floating-point operations (two
matrix products of 2·Tq·Tk·D each), halved for causal attention (only the lower triangle is
needed), and is compared with torch's scaled_dot_product_attention and with this machine's
own float32 matrix-multiply rate measured on the spot.

Peak memory: NumPy implementations are measured with tracemalloc (every NumPy array
allocation made during the call: scores, temporaries, the output; the inputs are not
counted); torch's allocations are invisible to tracemalloc, so its row gives the growth of the
process's resident-set high-water mark (VmHWM, reset through /proc/self/clear_refs) instead.
Memory is measured in a separate, untimed run.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
import tracemalloc
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from .kernels import blocked_attention

__all__ = ["Row", "run_benchmark", "gemm_gflops", "FULL", "QUICK"]

MiB = 1024 * 1024


@dataclass(frozen=True)
class Plan:
    """What to measure: (B, H, T, D) shapes for throughput, one long shape for memory, decode."""

    sizes: tuple = (512, 1024, 4096)
    batch: int = 1
    heads: int = 8
    width: int = 64
    repeats: int = 5
    memory_t: int = 65536          # H = 1, B = 1, non-causal
    memory_heads: int = 1
    decode_t: int = 4096
    decode_d_model: int = 512
    decode_steps: int = 8
    gemm_n: int = 2048


FULL = Plan()
QUICK = Plan(sizes=(128, 256), heads=4, repeats=3, memory_t=2048, decode_t=256, decode_steps=4, gemm_n=1024)


@dataclass
class Row:
    """One implementation at one shape. Times in seconds, memory in MiB, rates in GFLOP/s."""

    case: str                  # "attention" or "memory"
    impl: str
    batch: int
    heads: int
    t: int
    width: int
    causal: bool
    seconds: float | None = None
    gflops: float | None = None
    vs_torch: float | None = None   # torch seconds / this seconds (> 1: faster than torch)
    vs_gemm: float | None = None    # this GFLOP/s / the machine's GEMM GFLOP/s
    peak_mib: float | None = None
    memory_method: str | None = None
    skipped: str | None = None      # why this row was not run
    times: list = field(default_factory=list)


# --------------------------------------------------------------------------- implementations
def naive_attention(q, k, v, causal):
    """One big product, exp without subtracting the row max, normalise, product. Overflows for
    large scores; here only as the simplest possible NumPy baseline."""
    scores = (q @ np.swapaxes(k, -1, -2)) * np.float32(1 / math.sqrt(q.shape[-1]))   # (B, H, T, T)
    if causal:
        t = q.shape[-2]
        scores = np.where(np.tri(t, dtype=bool), scores, np.float32(-np.inf))
    weights = np.exp(scores)
    weights /= weights.sum(-1, keepdims=True)
    return weights @ v


def plain_attention(q, k, v, causal):
    """The library's plain path (full score matrix, stable softmax) when it exists."""
    try:
        from .attention import attention_reference
    except ImportError:
        return _local_plain(q, k, v, causal)
    return attention_reference(q, k, v, causal=causal)


def _local_plain(q, k, v, causal):
    scores = (q @ np.swapaxes(k, -1, -2)) * np.float32(1 / math.sqrt(q.shape[-1]))
    if causal:
        scores = np.where(np.tri(q.shape[-2], dtype=bool), scores, np.float32(-np.inf))
    scores -= scores.max(-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(-1, keepdims=True)
    return weights @ v


def _torch():
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    return torch, F


def torch_attention(q, k, v, causal):
    torch, F = _torch()
    with torch.no_grad():
        return F.scaled_dot_product_attention(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v),
                                              is_causal=causal)


IMPLEMENTATIONS: dict[str, Callable] = {
    "qkv blocked": lambda q, k, v, causal: blocked_attention(q, k, v, causal=causal),
    "plain reference": plain_attention,
    "naive numpy": naive_attention,
    "torch sdpa": torch_attention,
}


# --------------------------------------------------------------------------- measuring
def gemm_gflops(n: int = 2048, repeats: int = 5) -> float:
    """This machine's float32 matrix-multiply rate: median over repeats of an n×n·n×n product."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), np.float32)
    np.matmul(a, b, out=out)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.matmul(a, b, out=out)
        times.append(time.perf_counter() - start)
    return 2 * n**3 / statistics.median(times) / 1e9


def attention_flops(batch, heads, t, width, causal) -> float:
    """4·B·H·T·T·D (q·kᵀ and P·v), halved when causal."""
    flops = 4.0 * batch * heads * t * t * width
    return flops / 2 if causal else flops


def _numpy_peak(fn) -> float:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / MiB


def _rss_peak(fn) -> float | None:
    """Growth of the resident-set high-water mark during fn (Linux), in MiB."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")   # reset VmHWM to the current RSS
        before = _status_kib("VmRSS")
        fn()
        return max(0.0, (_status_kib("VmHWM") - before) / 1024)
    except OSError:
        return None


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise OSError(f"{key} not in /proc/self/status")


def _inputs(batch, heads, t, width, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((batch, heads, t, width), dtype=np.float32) for _ in range(3))


def _measure_shape(case, impls, batch, heads, t, width, causal, repeats, skip, warm_up=True) -> list[Row]:
    q, k, v = _inputs(batch, heads, t, width)
    rows = {name: Row(case, name, batch, heads, t, width, causal) for name in impls}
    live = [name for name in impls if not skip.get(name)]
    for name in impls:
        rows[name].skipped = skip.get(name)
    for name in live if warm_up else ():     # warm-up (thread pools, BLAS buffers, page faults)
        IMPLEMENTATIONS[name](q, k, v, causal)
    for _ in range(repeats):                 # round-robin
        for name in live:
            start = time.perf_counter()
            IMPLEMENTATIONS[name](q, k, v, causal)
            rows[name].times.append(time.perf_counter() - start)
    flops = attention_flops(batch, heads, t, width, causal)
    for name in live:
        row = rows[name]
        row.seconds = statistics.median(row.times)
        row.gflops = flops / row.seconds / 1e9
        if name == "torch sdpa":
            row.peak_mib, row.memory_method = _rss_peak(lambda: torch_attention(q, k, v, causal)), "rss-hwm"
        else:
            row.peak_mib = _numpy_peak(lambda: IMPLEMENTATIONS[name](q, k, v, causal))
            row.memory_method = "tracemalloc"
    return [rows[name] for name in impls]


def _decode(plan: Plan) -> dict:
    """One new token at T = decode_t: with the KV cache (attend over cached keys) vs without
    (recompute projections and causal attention over all T tokens, keep the last row)."""
    from .mha import KVCache, MultiHeadAttention

    heads = 8 if plan.decode_d_model % 8 == 0 else 1
    layer = MultiHeadAttention.random(plan.decode_d_model, heads, dtype=np.float32, seed=0)
    rng = np.random.default_rng(1)
    total = plan.decode_t + plan.decode_steps + 1
    tokens = rng.standard_normal((1, total, plan.decode_d_model), dtype=np.float32)
    cache = KVCache()
    layer(tokens[:, : plan.decode_t - 1], causal=True, cache=cache)        # prefill T − 1 tokens
    cached, full = [], []
    for step in range(plan.decode_steps + 1):
        t = plan.decode_t - 1 + step
        start = time.perf_counter()
        y_cached = layer(tokens[:, t : t + 1], causal=True, cache=cache)    # (1, 1, D)
        cached.append(time.perf_counter() - start)
        if step < 3:                                                        # full recompute is slow
            start = time.perf_counter()
            y_full = layer(tokens[:, : t + 1], causal=True)[:, -1:]         # (1, 1, D)
            full.append(time.perf_counter() - start)
            if step == 0:
                np.testing.assert_allclose(y_cached, y_full, rtol=1e-4, atol=1e-4)
    cached, full = cached[1:], full[1:]                                     # drop warm-ups
    with_cache, without = statistics.median(cached), statistics.median(full)
    return {
        "t": plan.decode_t, "d_model": plan.decode_d_model, "heads": heads,
        "ms_per_token_with_cache": with_cache * 1e3, "ms_per_token_without_cache": without * 1e3,
        "speedup": without / with_cache,
        "how": "qkv.mha.MultiHeadAttention with a KVCache (one new token attends over T cached keys) "
               "vs the same layer recomputing projections and causal attention over all T tokens",
    }


def run_benchmark(plan: Plan = FULL, *, sizes=None, repeats=None, progress: Callable[[str], None] | None = None) -> dict:
    """Run the comparison; return {"machine", "rows", "memory", "decode", "notes"} (JSON-ready).

    rows: one dict per (T, causal, implementation) with the fields of `Row`.
    """
    say = progress or (lambda message: None)
    sizes = tuple(sizes) if sizes else plan.sizes
    repeats = repeats or plan.repeats
    has_torch = _torch() is not None
    notes = [
        "GFLOP/s counts 4·B·H·T·T·D (q·kᵀ and P·v); causal rows count half of that.",
        "vs_torch = torch seconds / this seconds (above 1: faster than torch); vs_gemm = GFLOP/s / GEMM GFLOP/s.",
        "peak MiB: tracemalloc (NumPy allocations during the call, inputs excluded) for NumPy rows; "
        "resident-set high-water growth for torch.",
        f"times are medians of {repeats} round-robin repeats after one warm-up "
        "(the long-sequence memory run: one run, no warm-up).",
    ]
    if not has_torch:
        notes.append("torch is not installed: the torch rows are skipped and no ratio to torch is given.")
    load_before = _load_average()
    say("measuring the float32 GEMM rate")
    machine = {
        "load_average_before": load_before,
        "gemm_gflops": gemm_gflops(plan.gemm_n), "gemm_n": plan.gemm_n, "cpus": os.cpu_count(),
        "numpy": np.__version__, "torch": _torch()[0].__version__ if has_torch else None,
        "blas": _blas_name(), "python": platform.python_version(), "machine": platform.machine(),
    }
    torch_skip = None if has_torch else "torch not installed"
    rows: list[Row] = []
    for t in sizes:
        for causal in (False, True):
            say(f"T={t} causal={causal}")
            rows += _measure_shape("attention", list(IMPLEMENTATIONS), plan.batch, plan.heads, t, plan.width,
                                   causal, repeats, {"torch sdpa": torch_skip})
    say(f"memory: T={plan.memory_t}, H={plan.memory_heads}")
    full_gib = plan.memory_heads * plan.memory_t**2 * 4 / 2**30
    too_big = f"skipped: the full {plan.memory_t}² float32 score matrix alone needs {full_gib:.3g} GiB"
    memory_rows = _measure_shape("memory", list(IMPLEMENTATIONS), 1, plan.memory_heads, plan.memory_t,
                                 plan.width, False, 1,
                                 {"plain reference": too_big, "naive numpy": too_big, "torch sdpa": torch_skip}
                                 if plan.memory_t >= 16384 else {"torch sdpa": torch_skip}, warm_up=False)
    for group in _groups(rows + memory_rows):
        _ratios(group, machine["gemm_gflops"])
    say(f"decode at T={plan.decode_t}")
    try:
        decode = _decode(plan)
    except ImportError as exc:  # the layer with the cache is not there
        decode = {"skipped": f"qkv.mha not available: {exc}"}
    inputs_mib = 3 * plan.memory_heads * plan.memory_t * plan.width * 4 / MiB
    return {"machine": machine, "rows": [_clean(r) for r in rows], "memory": [_clean(r) for r in memory_rows],
            "memory_inputs_mib": inputs_mib, "decode": decode, "notes": notes}


def _groups(rows):
    keyed: dict = {}
    for row in rows:
        keyed.setdefault((row.case, row.t, row.causal), []).append(row)
    return keyed.values()


def _ratios(group, gemm):
    torch_row = next((r for r in group if r.impl == "torch sdpa" and r.seconds), None)
    for row in group:
        if row.seconds is None:
            continue
        row.vs_gemm = row.gflops / gemm
        if torch_row is not None:
            row.vs_torch = torch_row.seconds / row.seconds


def _clean(row: Row) -> dict:
    data = asdict(row)
    data["times"] = [float(x) for x in data["times"]]
    return data


def _load_average():
    """The 1-minute load average (taken before starting: other processes on the cores), or None."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def _blas_name() -> str | None:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    for lib in threadpool_info():
        if lib.get("user_api") == "blas" and "numpy" in lib.get("filepath", ""):
            return f"{lib.get('internal_api')} {lib.get('version')} ({lib.get('threading_layer')}, {lib.get('num_threads')} threads)"
    return None
