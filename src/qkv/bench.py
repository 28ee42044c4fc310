"""Side-by-side attention benchmark: qkv's blocked kernel, the plain path, naive NumPy, torch;
and masked attention: qkv's block-sparse kernel vs torch SDPA with the dense mask and vs
torch.compile(flex_attention).

Everything runs in one process on the same float32 inputs. Each peer is timed in a pair with
qkv alone: after one warm-up call of each, qkv and the peer alternate (qkv, peer, peer, qkv, …
— the order flips every round) with nothing else in between, and each time reported is the
median of its own calls in that pair; a ratio compares the two medians of one pair. (Timing
every implementation round-robin let the plain path's and naive NumPy's gigabytes of memory
churn slow the run that came after them: torch looked 30 % slower than alone.) Calls under 0.25 s
are timed in their own steady state: untimed calls of the same implementation (two, and 30 ms at
least) right before each timed one. Torch's OpenMP threads keep spinning on the cores for milliseconds after each of
its calls (libgomp's default wait policy), so a qkv call right after an SDPA call measured 5.7 ms
where it takes 3.4 ms after its own (T = 512, 2 cores); and on this machine's virtual CPUs a
pause before a call slows the next few qkv calls (6.2–6.8 ms after 30–100 ms idle, single-thread
speed) more than SDPA's (3.9–4.2 ms): neither a pause nor a single warm-up call separates them
fairly. Throughput counts 4·B·H·Tq·Tk·D floating-point operations (two
matrix products of 2·Tq·Tk·D each), halved for causal attention (only the lower triangle is
needed), and is compared with torch's scaled_dot_product_attention and with this machine's
own float32 matrix-multiply rate measured on the spot.

Peak memory: NumPy implementations are measured with tracemalloc (every NumPy array
allocation made during the call: scores, temporaries, the output; the inputs are not
counted); torch's allocations are invisible to tracemalloc, so its row gives the growth of the
process's resident-set high-water mark (VmHWM, reset through /proc/self/clear_refs) instead.
Memory is measured in a separate, untimed run.

A mask written by the user (`window_lambda`: the sliding window as a plain function) is timed in a
pair with the catalogue's `masks.sliding_window` and in a pair with compiled flex_attention given
the lambda's block mask. Training steps on torch tensors (`TrainCase`, `measure_training`: forward +
backward against SDPA and compiled flex_attention) run each implementation in its own processes,
alternating (see TRAINING): a heavy SDPA backward leaves gigabytes of freed memory and spinning
OpenMP threads behind it, which pairs inside one process would charge to the next call.
"""

from __future__ import annotations

import string

import math
import os
import platform
import statistics
import time
import tracemalloc
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from .kernels import blocked_attention, native, pool

__all__ = ["Row", "Said", "said", "run_benchmark", "gemm_gflops", "FULL", "QUICK", "MaskCase", "TrainCase", "PAIRING", "TRAINING",
           "measure_training", "window_lambda"]

class Said(str):
    """A sentence the benchmark says (a progress line, a note, a skip reason, the timing method): its English
    text, which is what JSON saves, plus the text key of `qkv.explain.texts` and the values that say it in
    another language (`in_lang`; `qkv bench --lang ko` prints a fresh run's sentences in Korean)."""

    key: str
    values: dict

    def in_lang(self, lang: str) -> str:
        from .explain.texts import text

        if lang == "en":
            return str(self)
        return text(lang, self.key, **{name: value.in_lang(lang) if isinstance(value, Said) else value
                                       for name, value in self.values.items()})


def said(key: str, /, **values) -> Said:
    """The sentence ``key`` (`Said`) with ``values``; its text is the English one."""
    from .explain.texts import text

    sentence = Said(text("en", key, **values))
    sentence.key, sentence.values = key, values
    return sentence


def python_said(english: str) -> Said:
    """An exception's own words (torch's, Python's: ``RuntimeError: …``) as a `Said` value: English as they
    are (what JSON saves); in another language the text ``error.python``, which names them and points to
    ``--lang en`` (Python and torch say them in English only)."""
    sentence = Said(english)
    sentence.key, sentence.values = "error.python", {}
    return sentence


# The sentences a result saves (notes, skip reasons, the timing methods, mask names): a saved result
# (--from-json) holds their English, which `heard` reads back into the sentence it was.
_SAVED_FAMILIES = ("cli.bench.note.", "cli.bench.skip.", "cli.bench.mask.", "cli.bench.pairing",
                   "cli.bench.training_timing")
_HEARD: list = []


def heard(text):
    """``text`` as the `Said` sentence it is the English of (a note, skip reason, timing method or mask name
    a saved result holds), its values read back from the text (a value that is itself such a sentence
    too), so that it can be said in another language; any other text (or a `Said`) as it is."""
    import re

    from .explain.texts import EN

    if isinstance(text, Said) or not isinstance(text, str):
        return text
    if not _HEARD:
        patterns = []
        saved = {key: template for key, template in EN.items() if key.startswith(_SAVED_FAMILIES)}
        fixed = "|".join(re.escape(template) for template in sorted(saved.values(), key=len, reverse=True)
                         if "{" not in template and len(template) > 40)
        fixed = f"(?:{fixed})" if fixed else "(?!)"
        for key, template in saved.items():
            parts, seen = [], set()
            for literal, name, _, _ in string.Formatter().parse(template):
                parts.append(re.escape(literal))
                if name:      # a whole saved sentence first (the timing note holds the pairing one), else any text
                    parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>{fixed}|.+?)")
                    seen.add(name)
            patterns.append((len(template), key, re.compile("".join(parts), re.S)))
        _HEARD.extend(sorted(patterns, key=lambda entry: -entry[0]))   # the most specific first
    for _, key, pattern in _HEARD:
        match = pattern.fullmatch(text)
        if match:
            sentence = Said(text)
            sentence.key, sentence.values = key, {name: heard(value) for name, value in match.groupdict().items()}
            return sentence
    return text


PAIRING = said("cli.bench.pairing")
# Calls shorter than this get _BURST_WARM untimed calls before each timed one (see the docstring).
_BURST_BELOW_S = 0.25
_BURST_WARM = 2
_BURST_MIN_S = 0.03   # torch's OpenMP threads were measured slowing qkv calls for ~10 ms after its call
# A pause before each pair: OpenBLAS's threads spin (sched_yield) for up to ~0.1 s after a
# multi-threaded product (the GEMM-rate measurement, the plain and naive rows), taking a core from
# whatever runs next.
_QUIET_S = 0.3

MiB = 1024 * 1024


@dataclass(frozen=True)
class MaskCase:
    """A masked attention case: a sliding window of `param` keys or `param` documents, B = 1."""

    kind: str            # "window" | "documents"
    param: int
    t: int
    heads: int
    repeats: int = 5
    dense_repeats: int = 3   # the dense-mask SDPA run is slow at long T
    user_lambda: bool = False   # window only: also the same window written as a plain function (a lambda)

    @property
    def name(self) -> str:
        # a `Said`: its English is what a result saves, and it is worded in the reader's language
        return said("cli.bench.mask.sliding", w=self.param) if self.kind == "window" else said("cli.bench.mask.docs",
                                                                                                  n=self.param)


def window_lambda(width: int):
    """The sliding window as a user would write it for flex_attention: each query sees itself and the
    `width` keys before it (the same mask as qkv.masks.sliding_window(width)), a plain function that
    qkv knows nothing about in advance."""
    return lambda b, h, q_idx, kv_idx: (q_idx >= kv_idx) & (q_idx - kv_idx <= width)


@dataclass(frozen=True)
class TrainCase:
    """A training step on torch tensors (float32, B = 1, D = 64): loss = Σ out·dout, backward to q, k, v.

    kind "causal": qkv.attention(causal=True) vs SDPA(is_causal=True) vs compiled flex_attention with a
    causal block mask; kind "window": the window of `window` keys written as a user lambda
    (`window_lambda`) vs SDPA with the same window as a dense boolean (T, T) mask vs compiled
    flex_attention with the lambda's block mask. Each side runs in its own process (see TRAINING)."""

    kind: str              # "causal" | "window"
    t: int
    heads: int
    window: int = 256
    rounds: int = 3        # processes per implementation, alternating
    steps: int = 3         # timed steps per process (after one untimed)
    peer_rounds: int | None = None   # fewer for a slow peer (SDPA with a dense 16k² mask: ~30 s a step)
    peer_steps: int | None = None

    @property
    def name(self) -> str:
        return said("cli.bench.mask.causal") if self.kind == "causal" else said("cli.bench.mask.sliding_lambda",
                                                                                    w=self.window)


TRAINING = said("cli.bench.training_timing")


@dataclass(frozen=True)
class HalfCase:
    """torch tensors in half precision: qkv.attention (its route: the C kernel or SDPA, whichever
    kernels/speed.py says is faster here) against torch's SDPA on the same tensors, B = 1."""

    dtype: str           # "bfloat16" | "float16"
    t: int
    heads: int
    causal: bool = False
    train: bool = False  # forward + backward (a gradient of every input)
    repeats: int = 5

    def said_as(self, route: str | None = None):
        """The case's name (`Said`, heard back from a saved result), with the route qkv took when given."""
        key = f"cli.bench.mask.half_{'causal' if self.causal else 'full'}_{'train' if self.train else 'forward'}"
        return said(key, dtype=self.dtype) if route is None else said(key + "_route", dtype=self.dtype, route=route)

    @property
    def name(self):
        return self.said_as()


_HALF = tuple(HalfCase(dtype, t, 8, causal, train, repeats=5 if t <= 1024 else 3)
              for dtype in ("bfloat16", "float16") for train, sizes in ((False, (1024, 4096)), (True, (1024,)))
              for t in sizes for causal in (False, True))


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
    mask_cases: tuple = (MaskCase("window", 256, 4096, 8), MaskCase("documents", 8, 16384, 4, dense_repeats=2),
                         MaskCase("window", 256, 16384, 4, dense_repeats=2, user_lambda=True),
                         MaskCase("window", 256, 65536, 1, repeats=3, dense_repeats=1))
    compile_flex: bool = True   # torch.compile(flex_attention): compiled once per case (≈15 s), timed after
    quiet: float = _QUIET_S     # seconds of pause before each pair
    train_cases: tuple = (TrainCase("causal", 2048, 8),
                          TrainCase("window", 16384, 4, peer_rounds=2, peer_steps=1))
    half_cases: tuple = _HALF


FULL = Plan()
QUICK = Plan(sizes=(128, 256), heads=4, repeats=3, quiet=0.02, memory_t=2048, decode_t=256, decode_steps=4, gemm_n=1024,
             mask_cases=(MaskCase("window", 16, 256, 2, repeats=2, dense_repeats=2, user_lambda=True),
                         MaskCase("documents", 4, 384, 2, repeats=2, dense_repeats=2)),
             compile_flex=False,
             train_cases=(TrainCase("causal", 128, 2, rounds=1, steps=1), TrainCase("window", 256, 2, window=16,
                                                                                    rounds=1, steps=1)),
             half_cases=(HalfCase("bfloat16", 128, 2, repeats=2), HalfCase("float16", 128, 2, True, True, repeats=2)))


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
    vs_torch: float | None = None   # torch seconds / this seconds (> 1: faster than torch), same pair
    qkv_speedup: float | None = None   # this seconds / qkv seconds in the same pair (> 1: qkv faster)
    pair: str | None = None         # the implementation this row was timed alternating with
    mask: str | None = None         # masked cases: which mask
    vs_gemm: float | None = None    # this GFLOP/s / the machine's GEMM GFLOP/s
    peak_mib: float | None = None
    memory_method: str | None = None
    skipped: str | None = None      # why this row was not run
    times: list = field(default_factory=list)
    vs_flex: float | None = None    # compiled flex_attention seconds / this seconds, timed in a pair
    vs_catalogue: float | None = None   # user lambda rows: the catalogue mask's seconds / this seconds, in a pair


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
    from ._io import read_text
    from .errors import InputError

    try:
        status = read_text("/proc/self/status", limit=_PROC_BYTES)     # the one bounded reader
    except InputError as exc:
        raise OSError(str(exc)) from None
    for line in status.splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise OSError(f"{key} not in /proc/self/status")


_PROC_BYTES = 16 * 2**20   # the most read of a /proc file (cpuinfo of a 512-CPU machine is about 2 MiB)


def _inputs(batch, heads, t, width, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((batch, heads, t, width), dtype=np.float32) for _ in range(3))


def _alternate(first: Callable, second: Callable, repeats: int, *, warm_up: bool = True,
               quiet: float = _QUIET_S) -> tuple[list, list]:
    """Time two callables alone together: a pause (`quiet` seconds), one warm-up each, then `repeats`
    rounds of both, the order flipped every round (AB BA AB …) so neither always runs right after
    the other's churn. When a callable's last call took under _BURST_BELOW_S, its timed call follows
    _BURST_WARM untimed calls of it (its own steady state; see the module docstring)."""
    time.sleep(quiet)
    last = [math.inf, math.inf]
    if warm_up:
        for which, fn in enumerate((first, second)):
            start = time.perf_counter()
            fn()
            last[which] = time.perf_counter() - start
    times = ([], [])
    for round_ in range(repeats):
        order = (0, 1) if round_ % 2 == 0 else (1, 0)
        for which in order:
            fn = first if which == 0 else second
            if last[which] < _BURST_BELOW_S:   # untimed calls for _BURST_WARM of them and _BURST_MIN_S at least
                began, warmed = time.perf_counter(), 0
                while warmed < _BURST_WARM or time.perf_counter() - began < _BURST_MIN_S:
                    fn()
                    warmed += 1
            start = time.perf_counter()
            fn()
            last[which] = time.perf_counter() - start
            times[which].append(last[which])
    return times


def _measure_shape(case, impls, batch, heads, t, width, causal, repeats, skip, warm_up=True,
                   quiet=_QUIET_S) -> list[Row]:
    """qkv against each peer, pair by pair (see PAIRING). The qkv row's time is from its pair with
    torch (or the first peer measured); every peer row carries its pair's ratio to qkv."""
    q, k, v = _inputs(batch, heads, t, width)
    rows = {name: Row(case, name, batch, heads, t, width, causal) for name in impls}
    for name in impls:
        rows[name].skipped = skip.get(name)
    ours = rows["qkv blocked"]
    run = {name: (lambda name=name: IMPLEMENTATIONS[name](q, k, v, causal)) for name in impls}
    peers = [name for name in impls if name != "qkv blocked" and not skip.get(name)]
    peers.sort(key=lambda name: name != "torch sdpa")          # the torch pair first: qkv's own time
    if not peers and not ours.skipped:
        ours.times = _alternate(run["qkv blocked"], lambda: None, repeats, warm_up=warm_up, quiet=quiet)[0]
    for name in peers:
        qkv_times, peer_times = _alternate(run["qkv blocked"], run[name], repeats, warm_up=warm_up, quiet=quiet)
        row = rows[name]
        row.times, row.pair = peer_times, "qkv blocked"
        row.seconds = statistics.median(peer_times)
        row.qkv_speedup = row.seconds / statistics.median(qkv_times)
        if not ours.times:
            ours.times, ours.pair = qkv_times, name
        if name == "torch sdpa":
            ours.vs_torch = row.seconds / statistics.median(qkv_times)
            row.vs_torch = 1.0
    flops = attention_flops(batch, heads, t, width, causal)
    for name in impls:
        row = rows[name]
        if row.skipped or not row.times:
            continue
        row.seconds = statistics.median(row.times)
        row.gflops = flops / row.seconds / 1e9
        if name == "torch sdpa":
            row.peak_mib, row.memory_method = _rss_peak(run[name]), "rss-hwm"
        else:
            row.peak_mib = _numpy_peak(run[name])
            row.memory_method = "tracemalloc"
    return [rows[name] for name in impls]


# --------------------------------------------------------------------------- half precision (torch)
def _measure_half(case: HalfCase, width: int, quiet: float = _QUIET_S) -> list[Row]:
    """qkv.attention and torch's SDPA (is_causal for causal) on the same bfloat16/float16 tensors,
    timed in a pair (`_alternate`); the qkv row's mask column names the route it took."""
    import torch
    import torch.nn.functional as F

    from .attention import attention
    from .kernels import route as route_mod
    from .kernels.call import check_call

    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, case.heads, case.t, width, generator=gen).to(getattr(torch, case.dtype))
               .requires_grad_(case.train) for _ in range(3))

    def step(fn):
        def run():
            out = fn()
            if case.train:
                out.backward(torch.ones_like(out))
        return run

    ours = step(lambda: attention(q, k, v, causal=case.causal))
    peer = step(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=case.causal))
    with torch.set_grad_enabled(case.train):
        taken = route_mod.choose_call_route(check_call(q, k, v, causal=case.causal))[1].name.value
    qkv_times, sdpa_times = _alternate(ours, peer, case.repeats, quiet=quiet)
    rows = []
    for impl, times in (("qkv.attention (torch tensors)", qkv_times), ("torch sdpa", sdpa_times)):
        row = Row("half", impl, 1, case.heads, case.t, width, case.causal, mask=case.name, times=times)
        row.seconds = statistics.median(times)
        rows.append(row)
    ours_row, sdpa_row = rows
    ours_row.vs_torch = sdpa_row.seconds / ours_row.seconds
    ours_row.pair, sdpa_row.pair = "torch sdpa", "qkv.attention (torch tensors)"
    sdpa_row.vs_torch, sdpa_row.qkv_speedup = 1.0, sdpa_row.seconds / ours_row.seconds
    ours_row.mask = case.said_as(taken)
    return rows


# --------------------------------------------------------------------------- masked attention
def _mask_functions(case: MaskCase):
    """(qkv mask function, dense (T, T) bool builder) for a case; documents of seeded uneven sizes."""
    from . import masks

    if case.kind == "window":
        mask_mod = masks.sliding_window(case.param)
    else:
        rng = np.random.default_rng(case.param)
        cuts = np.sort(rng.choice(np.arange(1, case.t), case.param - 1, replace=False))
        ids = np.searchsorted(cuts, np.arange(case.t), side="right")
        mask_mod = masks.document(ids)
    def dense():   # (T, T) bool, filled in row chunks (one call at T = 65,536 would need 3× its 4 GiB)
        out = np.empty((case.t, case.t), bool)
        kv_idx = np.arange(case.t, dtype=np.int64)
        for i in range(0, case.t, 2048):
            q_idx = np.arange(i, min(i + 2048, case.t), dtype=np.int64)[:, None]
            out[i:i + 2048] = mask_mod(np.int64(0), np.int64(0), q_idx, kv_idx)
        return out

    return mask_mod, dense


def _measure_masked(case: MaskCase, width: int, compile_flex: bool, say, quiet: float = _QUIET_S) -> list[Row]:
    """qkv (mask_mod, block-sparse kernel) vs torch SDPA with the equivalent dense boolean mask and vs
    torch.compile(flex_attention) with a block mask (compiled once, untimed, then timed). With
    case.user_lambda, also the same window as a user lambda (`window_lambda`) through qkv.attention,
    timed in a pair with the catalogue mask and in a pair with compiled flex_attention, whose block mask
    is then built from that lambda (as a flex user would)."""
    import qkv

    q, k, v = _inputs(1, case.heads, case.t, width)
    mask_mod, dense = _mask_functions(case)
    names = ["qkv blocked (mask_mod)", "torch sdpa (dense mask)", "torch flex_attention (compiled)"]
    lambda_name = "qkv blocked (user lambda)"
    user = window_lambda(case.param) if case.user_lambda and case.kind == "window" else None
    if user is not None:
        names.insert(1, lambda_name)
    rows = {name: Row("masked", name, 1, case.heads, case.t, width, False, mask=case.name) for name in names}
    ours = rows[names[0]]
    run_qkv = lambda: qkv.attention(q, k, v, mask_mod=mask_mod)   # noqa: E731
    run_user = lambda: qkv.attention(q, k, v, mask_mod=user)      # noqa: E731  (analysed on its first call)
    if user is not None:
        say(said("cli.bench.progress.lambda", name=case.name, t=case.t))
        mine, catalogue = _alternate(run_user, run_qkv, case.repeats, quiet=quiet)
        row = rows[lambda_name]
        row.times, row.pair = mine, names[0]
        row.vs_catalogue = statistics.median(catalogue) / statistics.median(mine)
    torch_parts = _torch()
    flex_name = names[-1]
    if torch_parts is None:
        for name in ("torch sdpa (dense mask)", flex_name):
            rows[name].skipped = said("cli.bench.skip.torch")
        ours.times = _alternate(run_qkv, lambda: None, case.repeats, quiet=quiet)[0]
    else:
        torch, F = torch_parts
        tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
        say(said("cli.bench.progress.dense", name=case.name, t=case.t))
        allowed = torch.from_numpy(dense())
        # SDPA turns a boolean mask into a float one of the same size: at T = 65,536 that is 16 GiB,
        # so long inputs go through SDPA in query chunks whose float mask stays ≤ 1 GiB (same work).
        chunk = max(1, min(case.t, 2**28 // case.t))
        def run_sdpa():
            with torch.no_grad():
                if chunk >= case.t:
                    return F.scaled_dot_product_attention(tq, tk, tv, attn_mask=allowed)
                return torch.cat([F.scaled_dot_product_attention(tq[..., i:i + chunk, :], tk, tv,
                                                                 attn_mask=allowed[i:i + chunk])
                                  for i in range(0, case.t, chunk)], dim=-2)
        qkv_times, sdpa_times = _alternate(run_qkv, run_sdpa, case.dense_repeats, quiet=quiet)
        sdpa_row = rows["torch sdpa (dense mask)"]
        sdpa_row.times, sdpa_row.pair = sdpa_times, names[0]
        sdpa_row.qkv_speedup = statistics.median(sdpa_times) / statistics.median(qkv_times)
        ours.times, ours.pair = qkv_times, sdpa_row.impl
        ours.vs_torch = statistics.median(sdpa_times) / statistics.median(qkv_times)
        del allowed
        flex_row = rows[flex_name]
        if not compile_flex:
            flex_row.skipped = said("cli.bench.skip.quick")
        else:
            try:
                from torch.nn.attention.flex_attention import create_block_mask, flex_attention

                say(said("cli.bench.progress.compiling", name=case.name, t=case.t))
                # built beforehand, untimed (as flex users do); from the user's lambda when there is one
                block_mask = create_block_mask(user or mask_mod, 1, case.heads, case.t, case.t, device="cpu")
                compiled = torch.compile(flex_attention)
                def run_flex():
                    with torch.no_grad():
                        return compiled(tq, tk, tv, block_mask=block_mask)
                qkv_flex, flex_times = _alternate(run_qkv, run_flex, case.repeats, quiet=quiet)   # warm-up = compile
                flex_row.times, flex_row.pair = flex_times, names[0]
                flex_row.qkv_speedup = statistics.median(flex_times) / statistics.median(qkv_flex)
                ours.times, ours.pair = qkv_flex, flex_name
                ours.vs_flex = flex_row.qkv_speedup
                if user is not None:
                    say(said("cli.bench.progress.lambda_flex", name=case.name, t=case.t))
                    mine, flex_times = _alternate(run_user, run_flex, case.repeats, quiet=quiet)
                    row = rows[lambda_name]
                    row.times, row.pair = mine, flex_name
                    row.vs_flex = statistics.median(flex_times) / statistics.median(mine)
            except Exception as exc:   # noqa: BLE001 — no compiler, an unsupported torch: say so in the row
                flex_row.skipped = said("cli.bench.skip.flex_failed",
                                        error=python_said(f"{type(exc).__name__}: {str(exc)[:80]}"))
    for row in rows.values():
        if row.times:
            row.seconds = statistics.median(row.times)
    ours.peak_mib, ours.memory_method = _numpy_peak(run_qkv), "tracemalloc"
    if user is not None:
        rows[lambda_name].peak_mib, rows[lambda_name].memory_method = _numpy_peak(run_user), "tracemalloc"
    return [rows[name] for name in names]


# --------------------------------------------------------------------------- training steps (torch)
def _train_worker(kind: str, impl: str, t: int, heads: int, width: int, window: int, steps: int) -> dict:
    """In its own process: one implementation's training steps. Returns {"times": [s, …],
    "peak_above_inputs_mib" (the resident high-water mark above the RSS once the inputs existed, the
    untimed first step included), "threads"} or {"error": "…"} (e.g. flex_attention's backward on the CPU)."""
    import torch
    import torch.nn.functional as F

    import qkv

    g = torch.Generator().manual_seed(0)
    q, k, v, dout = (torch.randn((1, heads, t, width), generator=g) for _ in range(4))
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    user = window_lambda(window)
    if impl == "qkv":
        attend = ((lambda: qkv.attention(q, k, v, causal=True)) if kind == "causal"
                  else (lambda: qkv.attention(q, k, v, mask_mod=user)))   # analysed once, on the untimed step
    elif impl == "sdpa":
        if kind == "causal":
            attend = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)   # noqa: E731
        else:
            i = torch.arange(t)
            dense = user(0, 0, i[:, None], i[None, :])                     # (T, T) bool: part of the inputs
            attend = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=dense)   # noqa: E731
    elif impl == "qkv_flex":   # torch's flex_attention call with the import swapped (qkv.torch)
        from qkv.torch import create_block_mask, flex_attention

        fn = (lambda b, h, q_idx, kv_idx: q_idx >= kv_idx) if kind == "causal" else user
        block_mask = create_block_mask(fn, None, None, t, t)   # built beforehand; kept as key ranges on the first step
        attend = lambda: flex_attention(q, k, v, block_mask=block_mask)   # noqa: E731
    else:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        fn = (lambda b, h, q_idx, kv_idx: q_idx >= kv_idx) if kind == "causal" else user
        block_mask = create_block_mask(fn, 1, heads, t, t, device="cpu")   # built beforehand
        compiled = torch.compile(flex_attention)
        attend = lambda: compiled(q, k, v, block_mask=block_mask)   # noqa: E731

    def step():
        torch.autograd.backward(attend(), dout)
        for x in (q, k, v):
            x.grad = None

    times, failed = [], []

    def run():
        try:
            step()                               # untimed: compiles, analyses the mask, warms the pools
        except Exception as exc:   # noqa: BLE001 — reported in the row (flex: "does not support backward on CPU")
            failed.append(f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:160]}")
            return
        times.extend(_timed(step) for _ in range(steps))

    # the high-water mark from the inputs on, the untimed first step included (its one-time buffers
    # and the mask's analysis are part of what a training step needs)
    peak = _rss_peak(run)
    if failed:
        return {"error": failed[0]}
    return {"times": times, "peak_above_inputs_mib": peak, "threads": torch.get_num_threads()}


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _spawn_worker(args: tuple, timeout: float) -> dict:
    """_train_worker(*args) in a fresh interpreter (this qkv first on its path); its result, or {"error"}."""
    import json
    import subprocess
    import sys

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # the directory holding qkv/
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))
    code = ("import json, sys; from qkv.bench import _train_worker; "
            "print(json.dumps(_train_worker(*json.loads(sys.argv[1]))))")
    try:
        done = subprocess.run([sys.executable, "-c", code, json.dumps(args)], capture_output=True, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"took longer than {timeout:.0f} s"}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"worker exited with status {done.returncode}: {tail[:160]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_training(case: TrainCase, width: int = 64, *, flex: bool = True, say=None, timeout: float = 3600,
                     no_flex: str | None = None) -> list[Row]:
    """Rows for one TrainCase: qkv, torch SDPA, qkv.torch.flex_attention (torch's flex call with the import
    swapped) and (flex=True) compiled flex_attention, each side in its own processes, alternating (see
    TRAINING); the qkv.torch.flex_attention row's vs_torch is SDPA's median / its own. seconds: median step time; vs_torch (qkv): SDPA's median /
    qkv's; qkv_speedup (peers): the peer's median / qkv's; peak_mib: the largest peak above the inputs."""
    say = say or (lambda message: None)
    impls = {"qkv": "qkv.attention (C forward + backward)",
             "sdpa": "torch sdpa" + (" (is_causal)" if case.kind == "causal" else " (dense mask)"),
             "qkv_flex": "qkv.torch.flex_attention",
             "flex": "torch flex_attention (compiled)"}
    rows = {key: Row("training", name, 1, case.heads, case.t, width, case.kind == "causal", mask=case.name,
                     memory_method="rss-hwm (own process)", pair=None if key == "qkv" else impls["qkv"])
            for key, name in impls.items()}
    if _torch() is None:
        for row in rows.values():
            row.skipped = said("cli.bench.skip.torch")
        return list(rows.values())
    if not flex:
        rows["flex"].skipped = no_flex if no_flex is not None else said("cli.bench.skip.quick")
    live = [key for key in impls if not rows[key].skipped]
    peaks: dict = {key: [] for key in impls}
    for round_ in range(max(case.rounds, case.peer_rounds or case.rounds)):
        for key in (live if round_ % 2 == 0 else live[::-1]):
            rounds = case.rounds if key == "qkv" else (case.peer_rounds or case.rounds)
            if round_ >= rounds or rows[key].skipped:
                continue
            steps = case.steps if key == "qkv" else (case.peer_steps or case.steps)
            say(said("cli.bench.progress.process", name=case.name, t=case.t, impl=impls[key], n=round_ + 1))
            got = _spawn_worker((case.kind, key, case.t, case.heads, width, case.window, steps), timeout)
            if "error" in got:
                error = python_said(got["error"])
                rows[key].skipped = (said("cli.bench.skip.no_flex_backward", error=error) if key == "flex"
                                     and "backward on CPU" in got["error"] else said("cli.bench.skip.failed", error=error))
                continue
            rows[key].times += got["times"]
            if got["peak_above_inputs_mib"] is not None:
                peaks[key].append(got["peak_above_inputs_mib"])
    for key, row in rows.items():
        if row.skipped:
            row.times = []
            continue
        row.seconds = statistics.median(row.times) if row.times else None
        row.peak_mib = max(peaks[key]) if peaks[key] else None
    ours = rows["qkv"]
    for key in ("sdpa", "qkv_flex", "flex"):
        if ours.seconds and rows[key].seconds:
            rows[key].qkv_speedup = rows[key].seconds / ours.seconds
    if ours.seconds and rows["sdpa"].seconds:
        ours.vs_torch, rows["sdpa"].vs_torch = rows["sdpa"].seconds / ours.seconds, 1.0
    if rows["qkv_flex"].seconds and rows["sdpa"].seconds:   # the flex drop-in against SDPA's equivalent mask
        rows["qkv_flex"].vs_torch = rows["sdpa"].seconds / rows["qkv_flex"].seconds
    if ours.seconds and rows["flex"].seconds:
        ours.vs_flex = rows["flex"].seconds / ours.seconds
    return list(rows.values())


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
    notes = [said("cli.bench.note.flops"), said("cli.bench.note.ratios"), said("cli.bench.note.peak"),
             said("cli.bench.note.timing", pairing=PAIRING, repeats=repeats), said("cli.bench.note.speedup"),
             said("cli.bench.note.masked"), said("cli.bench.note.lambda"),
             said("cli.bench.note.training", training=TRAINING)]
    if not has_torch:
        notes.append(said("cli.bench.note.no_torch"))
    load_before = native.load_average()
    say(said("cli.bench.progress.gemm"))
    machine = {
        "load_average_before": load_before,
        "gemm_gflops": gemm_gflops(plan.gemm_n), "gemm_n": plan.gemm_n, "cpus": pool.available_cpus(),
        "numpy": np.__version__, "torch": _torch()[0].__version__ if has_torch else None,
        "blas": _blas_name(), "python": platform.python_version(), "machine": platform.machine(),
        "cpu": native.cpu_name(),
    }
    torch_skip = None if has_torch else said("cli.bench.skip.torch")
    rows: list[Row] = []
    for t in sizes:
        for causal in (False, True):
            say(said("cli.bench.progress.shape", t=t, causal=said(f"cli.bench.causal.{bool(causal)}")))
            rows += _measure_shape("attention", list(IMPLEMENTATIONS), plan.batch, plan.heads, t, plan.width,
                                   causal, repeats, {"torch sdpa": torch_skip}, quiet=plan.quiet)
    say(said("cli.bench.progress.memory", t=plan.memory_t, h=plan.memory_heads))
    full_gib = plan.memory_heads * plan.memory_t**2 * 4 / 2**30
    too_big = said("cli.bench.skip.too_big", t=plan.memory_t, gib=f"{full_gib:.3g}")
    memory_rows = _measure_shape("memory", list(IMPLEMENTATIONS), 1, plan.memory_heads, plan.memory_t,
                                 plan.width, False, 1,
                                 {"plain reference": too_big, "naive numpy": too_big, "torch sdpa": torch_skip}
                                 if plan.memory_t >= 16384 else {"torch sdpa": torch_skip}, warm_up=False,
                                 quiet=plan.quiet)
    for group in _groups(rows + memory_rows):
        _ratios(group, machine["gemm_gflops"])
    masked: list[Row] = []
    for case in plan.mask_cases:
        say(said("cli.bench.progress.masked", name=case.name, t=case.t, h=case.heads))
        masked += _measure_masked(case, plan.width, plan.compile_flex and has_torch, say, plan.quiet)
    training: list[Row] = []
    for case in plan.train_cases:
        say(said("cli.bench.progress.training", name=case.name, t=case.t, h=case.heads))
        training += measure_training(case, plan.width, flex=plan.compile_flex and has_torch, say=say)
    half: list[Row] = []
    for case in plan.half_cases if has_torch else ():
        say(said("cli.bench.progress.half", name=case.name, t=case.t, h=case.heads))
        half += _measure_half(case, plan.width, plan.quiet)
    say(said("cli.bench.progress.decode", t=plan.decode_t))
    try:
        decode = _decode(plan)
    except ImportError as exc:  # the layer with the cache is not there
        decode = {"skipped": said("cli.bench.skip.no_mha", error=python_said(str(exc)))}
    inputs_mib = 3 * plan.memory_heads * plan.memory_t * plan.width * 4 / MiB
    machine["load_average_after"] = native.load_average()
    return {"machine": machine, "training_timing": TRAINING, "rows": [_clean(r) for r in rows], "memory": [_clean(r) for r in memory_rows],
            "masked": [_clean(r) for r in masked], "training": [_clean(r) for r in training],
            "half": [_clean(r) for r in half],
            "memory_inputs_mib": inputs_mib, "decode": decode,
            "notes": notes, "timing": PAIRING}


def _groups(rows):
    keyed: dict = {}
    for row in rows:
        keyed.setdefault((row.case, row.t, row.causal), []).append(row)
    return keyed.values()


def _ratios(group, gemm):
    """×GEMM for every row; ×torch stays as measured within the qkv–torch pair."""
    for row in group:
        if row.seconds is not None and row.gflops is not None:
            row.vs_gemm = row.gflops / gemm


def _clean(row: Row) -> dict:
    data = asdict(row)
    data["times"] = [float(x) for x in data["times"]]
    return data


def _blas_name() -> str | None:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    for lib in threadpool_info():
        if lib.get("user_api") == "blas" and "numpy" in lib.get("filepath", ""):
            return f"{lib.get('internal_api')} {lib.get('version')} ({lib.get('threading_layer')}, {lib.get('num_threads')} threads)"
    return None
