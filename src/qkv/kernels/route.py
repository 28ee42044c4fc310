"""One call, one route: `choose_route(call, looks)` decides how a checked attention call is computed.

Every decision about a call's route is made here, once, eager and traced alike, from the call's static
description (`Call.static`, a `Static`: shapes, dtypes, device, whether there is a mask array or a bias, and
the mask function's analysis `mask_info` — block kinds, band, key ranges, declared by `qkv.masks.MaskMod`'s
protocol) and the looks at its values (`_Looks`: is max |v| finite, may q·kᵀ overflow, …; under
torch.compile `_Traced()`, which answers each of them "unknown", and the route taken is then one that is
right whatever the answer). The result is a `Route`: a `RouteName`, the
reason it was chosen, and for the blocked kernel its whole plan (block sizes, threads, key ranges
per task, the tasks and block-kind maps). Everything after executes the route; nothing re-decides
it or looks at the mask function's attributes again.

Routes (fastest first on each ladder):
  torch tensors:   TORCH_FLASH (reserved: the C forward + backward for torch tensors)
                   > TORCH_SDPA (torch's fused scaled_dot_product_attention) > PLAIN
  short NumPy:     PLAIN_C_SOFTMAX (plain path, the C one-pass softmax; float32, unmasked; a row sum
                   that is not finite — scores beyond the float range — hands the call to PLAIN's steps)
                   > PLAIN (attention_reference's steps: the full Tq×Tk score matrix)
  the kernel:      FLASH_MANY (every task in C, _fused.flash_many: no mask array, bias, or score_mod
                   other than soft-cap / a relative bias, which C computes: Route.score)
                   > FLASH_ROWS (each task's key blocks walked in C, _fused.flash_rows)
                   > PY_WALK (blocks walked in Python, the C softmax step; float32)
                   > NUMPY_WALK (all NumPy; float64, longdouble, or no C extension)
  EMPTY: Tq, Tk or a leading dimension is 0 (a zero result, lse −inf).
  The weights or a trace always take PLAIN.

`route=` (a RouteName or its value, e.g. "flash_rows") names the fastest route a caller allows: the
route taken is the first on that ladder, from there down, that the call can take (tests and
benchmarks pin a route this way; `blocked_attention` passes FLASH_MANY: the kernel, never plain).
"""

from __future__ import annotations

import functools
import math
import threading

import numpy as np

from .. import _backend as compat  # array-api-compat, imported on first use
from .._keep import keep
from . import autograd, blas, native, pool, speed
from .autograd import _band_of
from .call import Call, Static
from .functions import _compiling
from .plan import (EMPTY, FLASH_MANY, FLASH_ROWS, KERNEL, NUMPY_WALK, PLAIN, PLAIN_C_SOFTMAX, PY_WALK,  # noqa: F401
                   TORCH_FLASH, TORCH_SDPA, Route, RouteName, _LADDERS, batch_head)
from .magnitude import LSE_PRECISION, tops_lose_lse, tops_may_overflow, value_tops  # noqa: F401 (the rules, named here too)
from .magnitude import value_top as _value_top

__all__ = ["RouteName", "Route", "choose_route", "choose_call_route", "mask_as_ranges", "traced_torch_route", "range_split", "split_call", "split_static", "batch_call", "EMPTY", "PLAIN", "PLAIN_C_SOFTMAX", "TORCH_SDPA", "TORCH_FLASH",
           "FLASH_MANY", "FLASH_ROWS", "PY_WALK", "NUMPY_WALK"]


# Below this many scores per head (Tq·Tk) the plain path is as fast as the blocked kernel or faster
# (measured: MiniLM's T=64 layers, 32 sequences × 12 heads: plain 18 ms, kernel 73 ms with a mask),
# and its memory (the full score matrix) is small.
_PLAIN_MAX_SCORES = 128 * 128
# ... except for float32 calls the kernel runs wholly in C (flash_many: no mask array, bias or
# score_mod): those take the kernel from 64·64 scores per head and 16 query rows when their work,
# scores in all × (Dk + Dv), reaches _C_KERNEL_MIN_WORK (masked calls, whose plain path is slower:
# _C_KERNEL_MIN_WORK_MASKED). Measured (2 AMD EPYC cores, medians, ms, plain / kernel): 32×12 heads
# T = 64 D = 64: 8.0 / 5.4; 8×12 T = 64 D = 32: 0.94 / 0.82; 4×12 T = 70 D = 32: 0.63 / 0.79;
# 1×12 T = 128 D = 64: 1.15 / 0.68; 1×12 T = 100 D = 32: 0.29 / 0.33; causal 1×12 T = 64 D = 64:
# 0.39 / 0.30; one head T = 64: 0.03 / 0.09. On AVX-512 CPUs without AMX (`speed.short_in_c`; AMD EPYC Zen 5, one
# CPU, the register tiles, 8 December, engine43: each side its own process, 3 rounds alternating, CPU time, µs,
# plain / kernel) the kernel is faster at every work from the 64·64 floor: B1 H8 T64 D64 (work 2^22) 138 / 100,
# B1 H12 T64 D32 (2^21.6) 130 / 92, B1 H12 T100 D32 287 / 188, B4 H12 T70 D32 615 / 375, B1 H8 T96 D64 266 / 171;
# Dk = Dv = 16 (T = 64) 63 / 55, Dk 32 Dv 48 95 / 72, D 80 (T = 80) 116 / 97; below the floor B1 H8 T32 D64 55 / 52;
# but Dk = Dv = 8 (T = 64, the BLAS step: Dv not a multiple of 16) 52 / 61. There the work floor does not apply
# to widths the register tiles take (Dk ≤ 128, Dv a multiple of 16 ≤ 128).
_C_KERNEL_MIN_SCORES = 64 * 64
_C_KERNEL_MIN_WORK = 1 << 24
_C_KERNEL_MIN_WORK_MASKED = 1 << 22
_C_KERNEL_MIN_ROWS = 16

DEFAULT_BLOCK_Q = 256
DEFAULT_BLOCK_K = 512
# With a mask function that reports block kinds, smaller key blocks skip more (a window of
# width W touches about W/block_k + 1 key blocks per query block).
_SPARSE_BLOCK_K = 256
# A band (window, causal: masks of kv − q) wastes less of each block when blocks are smaller:
# measured 10 % faster at 128×128 than 256×256 for W = 256, T = 4096 (busy cores, alternating).
_BAND_BLOCK = 128
# Short causal calls (no mask function, Tk ≤ 2048) take square 256×256 blocks: less of each
# block to mask, fewer uneven tasks. Measured on 2 AMD EPYC cores, alternating with torch SDPA:
# ~3–5 % faster at T = 512 and 1024, no gain at T = 4096 (more blocks, more Python per block).
_CAUSAL_BLOCK_K = 256
_CAUSAL_SQUARE_MAX_TK = 2048
# With threads, each head's lightest query block is cut into this many pieces of at least
# _TAIL_ROWS rows (_split_lightest): the last tasks taken are short, so no thread waits long.
_TAIL_PIECES = 4
_TAIL_ROWS = 32
# Below this many score elements (summed over heads) a thread pool costs more than it gains.
_PARALLEL_MIN_SCORES = 1 << 18
# ... where a score of a one- or two-row block counts this many (it reads a k and a v row: one query
# over 16,384 keys in 8 heads took 3.4 ms on one thread, 2.8 on two; over 65,536, 10.5 on two).
_DECODE_WEIGHT = 32


def current_machine() -> native.Machine:
    """This process's machine as the rulebook sees it (`native.Machine`): the C extension, its sgemm and
    backward, the CPUs it may use. Read on every call: the one a `native.use_machine` block around the
    caller set, else the live one (a test passes its own instead, to one call or with use_machine)."""
    chosen = native.machine_in_use()
    if chosen is not None:
        return chosen
    fused = native.fused
    sgemm = fused is not None and blas.sgemm_ready()
    backward = fused is not None and autograd.available()
    cpus = native.os_cpus()
    last = _live_machine[0]
    if last is None or not (last.fused is fused and last.sgemm == sgemm and last.backward == backward
                            and last.cpus == cpus):   # (rebuilt when one changed)
        last = _live_machine[0] = native.Machine(fused, sgemm, backward, cpus)
    return last


_live_machine = [None]   # the live Machine last built (a dataclass made per call cost ~2 µs of a 60 µs SDPA call)


def _name(route) -> RouteName | None:
    if route is None or isinstance(route, RouteName):
        return route
    try:
        return RouteName(route)
    except ValueError:
        raise ValueError(f"route must be one of {', '.join(r.value for r in RouteName)}; got {route!r}") from None


# Routes already chosen, by the call's signature (Call.key) and everything else choose_route reads
# but the values: (route, the looks at the values it was chosen after, in order, with their answers).
# A call of a kept key asks the same looks again (every value check still runs); when each answers
# as before, the decision is the same and the kept route is returned (its v_top the call's own).
# Measured at T = 512: ~10 µs against ~60–120 µs of deciding and planning. 256 kept, oldest dropped.
_ROUTES: dict = {}
_ROUTES_KEPT = 256
_routes_lock = threading.Lock()


class _Looks:
    """choose_route's looks at an eager call's values, each computed at most once and written down in the
    order asked with its answer (`trail`): "v_top" (is max |v| finite; the value itself is kept in
    .v for the route), "overflow" (`_scores_may_overflow`), "lse" (`tops_lose_lse`, torch), "values_ok" (autograd.values_ok: the C
    training route's check), "kv_finite" (torch keys and values all finite, for SDPA under a mask); and
    "mask_readable" (True: an eager call's mask function is analysed with the call). `score_spec()`: how C
    computes the call's score function (`autograd.score_spec`: it evaluates a relative one on the call's library)."""

    traced = False
    __slots__ = ("call", "v", "trail", "_answers", "_tops")

    def __init__(self, call: Call, v_top: float | None = None):
        self.call, self.v, self.trail, self._answers, self._tops = call, v_top, [], {}, {}

    def _torch_tops(self, names: str = "qkv") -> tuple:
        """max |x| of the torch call's arrays named (of "q", "k", "v"), each read once for every look that
        needs it and only when one does (an unmasked SDPA call's overflow look reads q and k, not v)."""
        tops = self._tops
        if names == "qk" and not tops:   # (the first look of most calls: the overflow rule)
            tops["q"], tops["k"] = value_tops(self.call.q, self.call.k)
            return tops["q"], tops["k"]
        for name in names:
            if name not in tops:
                (tops[name],) = value_tops(getattr(self.call, name))
        return tuple(tops[name] for name in names)

    def ask(self, name: str) -> bool:
        if name == "mask_readable":
            return True
        answer = self._answers.get(name)
        if answer is None:
            call = self.call
            if name == "v_top":
                if self.v is None:
                    self.v = _value_top(call.v)
                answer = bool(np.isfinite(self.v))
            elif name == "overflow":
                if not _range_may_overflow(call):   # (float16 in float32 work: no value can reach it)
                    answer = False
                elif isinstance(call.q, np.ndarray):   # (NumPy's namespace: its arrays are ndarrays)
                    answer = _scores_may_overflow(call)
                else:
                    top_q, top_k = self._torch_tops("qk")
                    answer = _tops_may_overflow(top_q, top_k, call)
            elif name == "lse":   # (torch) scores large enough that a stored lse would lose the gradients
                import torch

                top_q, top_k = self._torch_tops("qk")
                answer = tops_lose_lse(top_q, top_k, call.dk, call.scale, torch.finfo(call.work).eps)
            elif name == "values_ok":
                answer = autograd.tops_ok(self._torch_tops())
            elif name == "kv_finite":   # max|k| and max|v| are NaN or inf exactly when one value is
                top_k, top_v = self._torch_tops("kv")
                answer = math.isfinite(top_k) and math.isfinite(top_v)
            else:
                raise ValueError(f"no look named {name!r}")
            self._answers[name] = answer
            self.trail.append((name, answer))
        return answer

    def v_top(self) -> float:
        self.ask("v_top")
        return self.v

    def score_spec(self):
        return autograd.score_spec(self.call)


class _Traced:
    """The looks of a call torch.compile traces: a trace may not branch on a value, so every look at the
    values answers None — unknown — and the rules take a route that is right whatever the answer (the C op
    checks its values itself and its backward asks the lse rule; qkv's checked SDPA op reads them; PLAIN's
    steps have no branch). "mask_readable": whether the mask function could be analysed outside the trace
    (False: it closes over a tensor or an array Dynamo cannot hand out, or reads a global or module value —
    Dynamo guards what it traces, not this analysis, so a later value would be served this graph's key
    ranges). score_spec(): None (the C score passes are not an op torch.compile keeps)."""

    traced = True
    trail = ()

    def __init__(self, mask_readable: bool = True):
        self._readable = bool(mask_readable)

    def ask(self, name: str):
        return self._readable if name == "mask_readable" else None

    def v_top(self):
        return None

    def score_spec(self):
        return None


def choose_route(call, looks=None, *, want: str = "out", route=None, block_q: int | None = None,
                 block_k: int | None = None, num_threads: int | None = None, v_top: float | None = None,
                 machine: native.Machine | None = None) -> Route:
    """The route of one checked call (see the module docstring): the one rulebook, eager and traced.

    call: a `Call` (its static description `Call.static` is what the rules read) or a `Static` (with looks).
    looks: the answers about the values — default an eager call's own (`_Looks`: each look reads the
      arrays once); under torch.compile `_Traced()`, which answers every look at the values "unknown".
    want: "out" (the output), "lse" (also the log-sum-exp), "partial" (the kernel's un-normalised
      Partial) or "weights" (the weights or a trace: the full score matrix).
    route: None (choose), or the fastest route allowed (a RouteName or its value).
    block_q, block_k, num_threads: the kernel's block sizes and threads when given.
    v_top: max |v| when already known (a split call's passes share the call's v), else looked up.
    machine: what this process can run (`native.Machine`; default the live one, `current_machine()`).

    An eager call with a signature (Call.key: no mask or score function) is decided once per signature,
    threads and extension state: later calls ask the same looks at their values (max |v|, overflow,
    finiteness) and get the kept route when every answer is the same (see _ROUTES).
    """
    hw = current_machine() if machine is None else machine
    if isinstance(call, Static) or looks is not None:
        if looks is None:
            raise TypeError("a call's static description is routed with its looks (choose_route(static, looks))")
        static = call if isinstance(call, Static) else call.static
        return _choose_route(static, want, route, block_q, block_k, num_threads, looks, hw)
    if call.key is None:
        return _choose_route(call.static, want, route, block_q, block_k, num_threads, _Looks(call, v_top), hw)
    # (what the kept route depends on beyond the signature, read without building the call's Static: its
    # autograd state and torch's threads; ~6 µs of a short SDPA call's qkv work when it was built)
    torch_call = call.key[0] is not np.ndarray
    key = (call.key, want, route, block_q, block_k, num_threads, v_top is None, torch_call and call.differentiated,
           hw, speed.generation, speed.torch_threads() if torch_call else 0)
    looks = _Looks(call, v_top)
    kept = _ROUTES.get(key)
    if kept is not None:
        chosen, trail = kept
        for name, answer in trail:
            if looks.ask(name) != answer:
                break
        else:
            if looks.v is chosen.v_top or looks.v == chosen.v_top:
                return chosen
            fresh = object.__new__(Route)   # the kept route with this call's max |v| (frozen: as __init__ sets)
            fresh.__dict__.update(chosen.__dict__, v_top=looks.v)
            return fresh
        looks = _Looks(call, v_top)
    chosen = _choose_route(call.static, want, route, block_q, block_k, num_threads, looks, hw)
    for task in chosen.tasks:   # shared by every call of the key: nobody may write into it
        task[3].flags.writeable = False
    keep(_ROUTES, key, (chosen, tuple(looks.trail)), _ROUTES_KEPT, _routes_lock)
    return chosen


# What choose_route's looks answer for ordinary values (finite, |v| <= 2^60, no score near the float range);
# "lse" is asked of differentiated calls only, which `ordinary_route` is not asked about.
_ORDINARY = {"v_top": True, "overflow": False, "values_ok": True, "kv_finite": True}


def ordinary_route(call: Call, machine: native.Machine | None = None) -> Route | None:
    """choose_route's route for an eager call (its output asked, no route pinned) when every look it asked
    at the call's values answered as for ordinary values (`_ORDINARY`), else None. The rules read nothing
    else of the values, so every call of the same kind (`Call.static`) and machine whose values are
    ordinary too (`ordinary_tops`) takes this route: execute.short_torch keeps it by the call's kind."""
    looks = _Looks(call)
    chosen = _choose_route(call.static, "out", None, None, None, None, looks,
                           current_machine() if machine is None else machine)
    if any(_ORDINARY.get(name) != answer for name, answer in looks.trail):
        return None
    return chosen


def overflow_limit(call: Call):
    """The working dtype's largest value, which the overflow look measures max|q|·max|k|·Dk against
    (`tops_may_overflow`), or None when no value of the call's dtype can pass it (float16 in float32)."""
    return _largest(call.work) if _range_may_overflow(call) else None


def ordinary_tops(tops: tuple, dk: int, limit) -> bool:
    """Whether max|q|, max|k|, max|v| (`value_tops`) are ordinary values, on which each look answers as
    `_ORDINARY` says: all finite and |v| <= 2^60 (`autograd.tops_ok`: values_ok, kv_finite, v_top) and
    max|q|·max|k|·Dk within the overflow rule (`tops_may_overflow`; limit: `overflow_limit`)."""
    return autograd.tops_ok(tops) and (limit is None or not tops_may_overflow(tops[0], tops[1], dk, limit))


def _check_ceiling(library: str, ceiling) -> None:
    """Refuse a pinned route the call's library cannot take."""
    if library == "torch":
        if ceiling is not None and ceiling not in _LADDERS[2]:
            raise ValueError(f"route {ceiling.value} takes NumPy arrays; torch tensors take torch_sdpa or plain")
    elif ceiling in (TORCH_FLASH, TORCH_SDPA):
        raise ValueError(f"route {ceiling.value} takes torch tensors")


def _choose_route(call: Static, want: str, route, block_q, block_k, num_threads, looks,
                  hw: native.Machine) -> Route:
    """choose_route's decision from the static description, every look at the values asked through `looks`."""
    ceiling = _name(route)
    if call.empty:
        return Route(EMPTY, "Tq, Tk or a leading dimension is 0")
    if want == "weights":
        return Route(PLAIN, "the weights or a trace were asked for: the full score matrix")
    _check_ceiling(call.library, ceiling)
    if call.library == "torch":
        return _torch_route(call, want, ceiling, looks, hw)
    v_top = looks.v_top()
    if ceiling is None:
        if want == "partial":
            ceiling = FLASH_MANY
        elif looks.ask("overflow"):   # decided before any product: no inf score, no retry, no warning
            return Route(PLAIN, "|q|·|k|·Dk near the float range: the plain path computes the scores in a wider "
                                "dtype (float64; long double for float64) where they fit", v_top=v_top)
        elif call.tq * call.tk <= _PLAIN_MAX_SCORES and not _whole_in_c(call, hw):
            ceiling = PLAIN_C_SOFTMAX
        else:
            ceiling = FLASH_MANY
    if ceiling in (PLAIN_C_SOFTMAX, PLAIN):
        if want == "partial":
            raise ValueError("a Partial comes from the kernel's routes only")
        if ceiling == PLAIN_C_SOFTMAX:
            why = _no_plain_c_softmax(call, want, v_top, hw)
            if why is None:
                return Route(PLAIN_C_SOFTMAX, "short, unmasked float32 with finite values: plain path, C softmax",
                             v_top=v_top)
            return Route(PLAIN, f"short call ({call.tq}·{call.tk} scores per head); {why}", v_top=v_top)
        return Route(PLAIN, "plain path asked for", v_top=v_top)
    table = range_split(call) if want != "partial" else None
    if table is not None:   # several key ranges per row, or per batch: the kernel once per range
        # (the first pass's static description under the same rule; execute._by_key_ranges plans each pass
        # with this rule again, pinned to the route chosen here)
        sub = _choose_route(split_static(call, table, 0, 0), "lse", ceiling, block_q, block_k, num_threads, looks,
                            hw)
        if sub.name in (FLASH_MANY, FLASH_ROWS):
            return Route(sub.name, f"{_split_words(table)}: {sub.name.value} once per range, merged by lse",
                         v_top=v_top, key_rows=_rows_of(table))
    return _kernel_route(call, want, ceiling, v_top, block_q, block_k, num_threads, hw, looks)


def choose_call_route(call: Call, *, want: str = "out", route=None,
                      machine: native.Machine | None = None) -> tuple[Call, Route]:
    """(call, its Route): choose_route, with a boolean mask array whose rows are key ranges taken as
    those ranges (`mask_as_ranges`) when that lets a C route run it (TORCH_FLASH, FLASH_MANY,
    FLASH_ROWS): key padding (B, 1, 1, Tk) and causal + padding masks then reach the C forward and
    backward instead of SDPA or a dense mask. The call returned is the one the route executes."""
    hw = current_machine() if machine is None else machine
    ranged = None if call.mask is None else mask_as_ranges(call, want=want, route=route, machine=hw)
    if ranged is not None:
        chosen = choose_route(ranged, want=want, route=route, machine=hw)
        if chosen.name in (TORCH_FLASH, FLASH_MANY, FLASH_ROWS):
            return ranged, chosen
    return call, choose_route(call, want=want, route=route, machine=hw)


def mask_as_ranges(call: Call, *, want: str = "out", route=None, machine: native.Machine | None = None) -> Call | None:
    """The call with its mask array replaced by a mask function of the same key ranges
    (`qkv.masks.mask_ranges`, `key_range_mask`; ANDed with the call's own mask function's analysis),
    or None: no mask array, not ranges (a hole in a row, heads that differ), or a call no C route would
    take anyway (checked before the mask is read: torch off the CPU or below the size floor, not
    float32 work, a bias, NumPy the plain path's size, a pinned route that is not a C one)."""
    import dataclasses

    ceiling = _name(route)
    if call.mask is None or call.bias is not None or call.empty or want in ("weights", "partial"):
        return None
    if compat.is_numpy_namespace(call.xp):
        if ceiling not in (None, FLASH_MANY, FLASH_ROWS) or np.dtype(call.work) != np.float32 or \
                (current_machine() if machine is None else machine).fused is None:
            return None
        if ceiling is None and call.tq * call.tk <= _PLAIN_MAX_SCORES:
            return None
    else:
        import torch

        if ceiling not in (None, TORCH_FLASH) or call.device.type != "cpu" or call.work != torch.float32:
            return None
        if ceiling is None and call.tq * call.tk < _C_KERNEL_MIN_SCORES:
            return None
    found = _masks().mask_ranges(call.mask, call.lead, call.tq, call.tk)
    if found is None:
        return None
    mask_mod = _masks().key_range_mask(*found)
    if call.mask_mod is not None:
        if call.mask_info is None or call.mask_info.block_kinds is None:
            return None   # a function qkv could not analyse: no ranges to meet
        mask_mod = _masks().and_masks(mask_mod, call.mask_info.fn)
    info = _masks().analyse(mask_mod, call.tq, call.tk, batch=call.batch if call.lead else 1, heads=call.heads)
    return dataclasses.replace(call, mask=None, mask_mod=mask_mod, mask_info=info)


def _torch_route(call: Static, want: str, ceiling, looks, hw: native.Machine) -> Route:
    traced = looks.traced
    if not looks.ask("mask_readable"):
        return Route(PLAIN, "traced torch with a mask function the analysis outside the trace cannot read (a "
                            "closure over a tensor or an array, or a global or module value): the plain path traces it")
    if ceiling == PLAIN:
        return Route(PLAIN, "plain path asked for")
    if looks.ask("overflow"):   # SDPA and the C kernel would give inf and NaN
        return Route(PLAIN, "|q|·|k|·Dk near the float range: the plain path computes the scores in float64 "
                            "(float64 itself: q and k divided by exact powers of two)")
    if call.differentiated and looks.ask("lse"):
        return Route(PLAIN, "differentiated, scores so large that a stored log-sum-exp loses the gradients "
                            "(|s|·eps > 2^-13): the plain path keeps the weights themselves")
    if ceiling in (None, TORCH_FLASH):
        pinned = ceiling == TORCH_FLASH
        # the C kernel's static conditions first, then the speed table, then its looks at the values: where
        # SDPA is the faster of the two, the C kernel's own value check (max |v|) is never read — SDPA takes
        # the call whatever it answers (SDPA is also the route for values the C kernel refuses)
        # (below the C kernel's size floor too where this CPU's rules say so: an eager call's output, unmasked or
        # causal — the calls the C kernel's short forward takes whole, autograd.short_plan)
        short = want == "out" and not traced and not call.has_mask and call.mask_mod is None and not call.scored \
            and not call.has_bias and speed.short_in_c(call.differentiated)
        why = torch_flash_why_not(call, pinned=pinned, looks=looks, machine=hw, values=False, short=short)
        # (traced: only forward calls — under autograd the traced SDPA op's backward computes its forward
        # again, measured ×1.2–1.3, which eats the margin the speed table measured for SDPA's own backward)
        if why is None and ceiling is None and _sdpa_computes_same(call, want) and not (traced and call.differentiated):
            winner, reason = _measured_winner(str(call.dtype).removeprefix("torch."), call.causal,
                                              call.differentiated, call.tq, call.tk)
            # (causal: SDPA multiplies the future keys' values by 0, so a NaN there reaches earlier rows — a
            # call with one takes the plain path below, as before the C kernel's look was moved after this)
            if winner is not None and (not call.masked or looks.ask("kv_finite") is not False):
                return Route(TORCH_SDPA, reason + (" (inside qkv's checked op)" if traced else ""))
        if why is None:
            why = _torch_flash_values_why_not(looks)
        if why is None:
            if call.has_mask:   # (traced: a mask array is read as key ranges inside the C op)
                return Route(TORCH_FLASH, "a boolean mask array, read as key ranges inside the C op (the plain path "
                                          "there when it is not ranges)")
            return Route(TORCH_FLASH, "CPU torch, float32/16/bf16, a mask of key ranges, finite values: "
                                      "the C kernel forward and backward" +
                                      (" (the C op checks the values itself)" if traced else ""))
        table = range_split(call)
        if table is not None and torch_flash_why_not(split_static(call, table, 0, 0), pinned=pinned, looks=looks,
                                                     machine=hw) is None:
            return Route(TORCH_FLASH, f"{_split_words(table)}: the C kernel forward and backward once per range, "
                                      "merged by lse (torch autograd through the merge)", key_rows=_rows_of(table))
    if want == "lse":
        return Route(PLAIN, "torch with return_lse: SDPA gives no lse")
    if call.scored:
        return Route(PLAIN, "torch with a score_mod: SDPA takes none")
    if call.masked or call.has_bias:
        if not looks.ask("kv_finite"):   # (unknown when traced: the plain path, whose value checks have no branch)
            # SDPA multiplies masked keys' scores and values by 0: NaN where one is not finite
            return Route(PLAIN, "torch under a mask with a key or value that is not finite (or not known to be): "
                                "SDPA would read it")
    if looks.ask("overflow") is None and call.tq * call.tk < _C_KERNEL_MIN_SCORES:
        # traced: SDPA cannot be told of scores past the float range and a trace cannot branch on them; the
        # plain path divides q and k by powers of two as tensors (0 when not needed): no branch
        return Route(PLAIN, "traced short torch call: the plain path (its overflow shift has no branch)")
    if traced:
        return Route(TORCH_SDPA, "torch tensors: torch's fused scaled_dot_product_attention inside qkv's op (which "
                                 "reads the values: scores past the float range take the plain path)")
    return Route(TORCH_SDPA, "torch tensors: torch's fused scaled_dot_product_attention")


def _sdpa_computes_same(call: Static, want: str) -> bool:
    """Whether torch's SDPA computes this call (one TORCH_FLASH takes) with the same numbers: only the
    output asked, no score function, no mask but `causal` on a square (torch's is_causal: top-left and
    bottom-right agree), no bias. The values are not read here: with no mask, SDPA and the C kernel agree on
    finite values, and SDPA is the route for the others either way (the overflow look, asked first, sends
    scores past the float range to the plain path)."""
    return (want == "out" and not call.scored and not call.has_mask and call.mask_mod is None
            and not call.has_bias and (not call.causal or call.tq == call.tk))


def _measured_winner(dtype: str, causal: bool, train: bool, tq: int, tk: int):
    """(TORCH_SDPA, the reason) when kernels/speed.py says SDPA is faster here for this kind of call,
    else (None, None)."""
    if speed.faster(dtype, causal, train, tq, tk) != speed.SDPA:
        return None, None
    _, source = speed.load()
    measured = source.endswith(".json") and speed.calibration_applies()
    where = "measured on this machine" if measured else "by the rules measured on CPUs like it"
    return TORCH_SDPA, (f"CPU torch {dtype}{', causal' if causal else ''}{', with autograd' if train else ''}: "
                        f"the C kernel and SDPA give the same numbers; SDPA is faster here ({where}, "
                        "kernels/speed.py)")


def traced_torch_route(call: Call, *, want: str = "out", route=None) -> Route:
    """choose_route for torch tensors while torch.compile traces (`qkv.attention` under
    torch.compile(fullgraph=True)): the same rulebook on the call's static description with the looks
    `_Traced()`, which answer every question about the values "unknown", so the trace has no
    data-dependent branch.

    The decision and the mask's key ranges are computed once per compiled graph, eagerly, by
    `_traced_plan` (marked for Dynamo as a function with a constant result: a mask function is analysed
    as on eager calls, plain lambdas included); this function hands it the static description as plain
    values. The checks that read values move: the op (`torch.ops.qkv.flash_attention`) refuses non-finite
    inputs itself, and a masked call that cannot take TORCH_FLASH takes PLAIN, whose steps handle
    non-finite values without a branch (SDPA, which would read masked keys' values, is kept for unmasked
    calls, inside qkv's checked op)."""
    _check_ceiling("torch", _name(route))
    # a catalogue mask is passed as its recipe when it has one (one built inside the compiled
    # function is not yet a whole object while Dynamo traces); anything else as itself
    recipe = None if call.mask_info is None else call.mask_info.recipe
    handed = recipe is not None or call.mask_mod is None or _masks().passes_into_a_trace(call.mask_mod)
    # int(f"{n}"): a size torch.compile made symbolic (a second shape seen) becomes a number again,
    # with a guard on it (the key ranges depend on it: another size compiles another graph)
    sizes = tuple(int(f"{n}") for n in (call.tq, call.tk, call.dk, call.dv, call.heads, call.kv_heads, call.groups))
    leads = tuple(tuple(int(f"{n}") for n in lead) for lead in (call.lead, call.q_lead, call.k_lead, call.v_lead))
    name, reason, rows = _traced_plan(
        call.mask_mod if recipe is None and handed else None, recipe, handed, call.scored, call.causal,
        call.has_mask, call.has_bias, sizes, leads, str(call.dtype).removeprefix("torch."),
        str(call.work).removeprefix("torch."), call.device_type, call.static.differentiated, want,
        None if route is None else _name(route).value)
    return Route(RouteName(name), reason, key_rows=rows)


def _traced_plan(mask_mod, recipe, handed, scored, causal, has_mask, has_bias, sizes, leads, dtype, work, device,
                 differentiated, want, ceiling):
    """(route value, reason, key-range tables as tensors) of a traced torch call (see traced_torch_route):
    its `Static` built from plain values, the mask function analysed, and `choose_route(static, _Traced())`.
    Run eagerly, once per compiled graph: Dynamo bakes its result into the graph (`_dynamo_marked_constant`)."""
    import torch

    if recipe is not None:
        mask_mod = _masks().from_recipe(recipe)
    readable = handed and (recipe is not None or mask_mod is None or not _masks().reads_module_state(mask_mod))
    tq, tk, dk, dv, heads, kv_heads, groups = sizes
    lead, q_lead, k_lead, v_lead = leads
    info = None
    if mask_mod is not None and readable:
        batch = math.prod(lead[:-1]) if lead else 1
        info = _masks().analyse(mask_mod, tq, tk, batch=batch, heads=heads, numpy=True)
    static = Static("torch", getattr(torch, dtype), getattr(torch, work), device, tq, tk, dk, dv, heads, kv_heads,
                    groups, lead, q_lead, k_lead, v_lead, bool(causal), bool(has_mask), bool(has_bias),
                    mask_mod if readable else None, bool(scored), info, None, bool(differentiated))
    chosen = choose_route(static, _Traced(readable), want=want, route=ceiling)
    rows = ()
    if chosen.name == TORCH_FLASH:
        if has_mask:
            autograd.mask_op()   # registered here, eagerly: the trace only calls it
        else:
            autograd.op()
            rows = chosen.key_rows or ((autograd.row_ranges(static),),)
            rows = tuple(tuple(torch.from_numpy(np.ascontiguousarray(r)) for r in per_batch) for per_batch in rows)
    return chosen.name.value, "traced: " + chosen.reason, rows


# Dynamo calls it eagerly and keeps its result as a constant of the graph (what
# torch.compiler.assume_constant_result sets; set here so importing this module never imports torch)
_traced_plan._dynamo_marked_constant = True


def range_split(call: Call):
    """(B', K, 2, Tq) int64 key ranges when the call's mask is K > 1 disjoint runs of keys per row or
    differs by batch (B' = the batch), with causal folded in (`MaskInfo.range_table`); None when the
    call has one range (or none) for every batch, a mask array, a bias or a score_mod. Each (b, r) is
    then a one-range call (`split_call`) for the C routes, and the results are merged by their lse."""
    info = call.mask_info
    if info is None or call.has_mask or call.has_bias or call.scored:
        return None
    if info.key_ranges is not None or info.block_kinds is None:
        return None
    table = info.range_table
    if table is None or table.shape[:2] == (1, 1) or table.shape[-1] != call.tq:
        return None
    if table.shape[0] > 1 and (table.shape[0] != call.batch or call.ndim < 3):
        return None
    if call.causal:   # bottom-right: row i sees j <= i + Tk − Tq
        limit = np.arange(call.tq, dtype=np.int64) + (call.tk - call.tq) + 1
        table = table.copy()
        table[:, :, 1] = np.maximum(np.minimum(table[:, :, 1], limit), table[:, :, 0])
    return table


def _split_words(table) -> str:
    ranges = f"{table.shape[1]} key ranges per row" if table.shape[1] > 1 else "one key range per row"
    return ranges + (f", by batch ({table.shape[0]})" if table.shape[0] > 1 else "")


def _rows_of(table) -> tuple:
    """Route.key_rows of a split: per batch b (one when the same for all), per range r, (2, Tq)."""
    return tuple(tuple(np.array(table[b, r], order="C") for r in range(table.shape[1]))
                 for b in range(table.shape[0]))


def pass_block_k(rows, default: int) -> int | None:
    """The key block of one pass of a split whose ranges are all narrow (attention sinks, global
    tokens: a few keys per row): the power of two ≥ the widest range, at least 16, so the pass does not
    compute whole default-size key blocks to keep four keys of each; None (the default) otherwise."""
    rows = np.asarray(rows)
    width = int((rows[1] - rows[0]).max(initial=0))
    if width >= default // 2:
        return None
    return max(16, 1 << max(width - 1, 0).bit_length())


def split_call(call: Call, table, b: int, r: int) -> Call:
    """The one-range call of batch b (every batch when the table has one) and range r of a split
    (see range_split): its mask is those key ranges (`qkv.masks.key_range_mask`), causal folded in.
    table: (B', K, 2, Tq), or one (2, Tq) range table for `call` itself (b and r unused)."""
    import dataclasses

    if getattr(table, "ndim", 0) == 2:   # one pass's (2, Tq) rows already: the call as it is
        rows, base = table, call
    else:
        rows = table[b if len(table) > 1 else 0][r]
        base = batch_call(call, b) if len(table) > 1 else call
    mask = _masks().key_range_mask(rows[0], rows[1])
    info = _masks().analyse(mask, base.tq, base.tk, batch=base.batch if base.lead else 1, heads=base.heads)
    return dataclasses.replace(base, mask_mod=mask, mask_info=info, causal=False)


def split_static(call: Static, table, b: int, r: int) -> Static:
    """split_call for a call's static description: the one-range pass of batch b and range r (its mask
    those key ranges, analysed; a batch's pass has the heads alone as its leading shape, as batch_call)."""
    import dataclasses

    rows = table[b if len(table) > 1 else 0][r]
    if len(table) > 1:
        call = dataclasses.replace(call, lead=call.lead[-1:], q_lead=call.q_lead[-1:], k_lead=call.k_lead[-1:],
                                   v_lead=call.v_lead[-1:])
    mask = _masks().key_range_mask(rows[0], rows[1])
    info = _masks().analyse(mask, call.tq, call.tk, batch=call.batch if call.lead else 1, heads=call.heads)
    return dataclasses.replace(call, mask_mod=mask, mask_info=info, causal=False)


def batch_call(call: Call, b: int) -> Call:
    """The call of batch b alone (the leading dimensions before the heads flattened, C order): q, k
    and v broadcast to the call's batch and sliced, lead (H,)."""
    import dataclasses

    xp = call.xp
    batch = call.lead[:-1]

    def take(x):
        full = xp.broadcast_to(x, batch + tuple(x.shape[-3:]))
        return xp.reshape(full, (-1,) + tuple(x.shape[-3:]))[b]

    return dataclasses.replace(call, q=take(call.q), k=take(call.k), v=take(call.v), lead=call.lead[-1:])


def torch_flash_why_not(call, *, pinned: bool = False, looks=None,
                        machine: native.Machine | None = None, values: bool = True, short: bool = False) -> str | None:
    """Why TORCH_FLASH (kernels/autograd.py: the C forward and backward on CPU torch tensors) does not
    take a torch call, or None when it does. call: a `Call` or its `Static` (then with looks).
    pinned: route="torch_flash" asked for (no size floor). looks: choose_route's looks at this call's
    values (an eager call's own by default; `_Traced()` under torch.compile: unknown values pass, the op
    checks them itself, and a mask array alone passes, read as key ranges inside the op). values=False:
    the conditions that read no value only (`_torch_flash_values_why_not` asks the rest). short: the C kernel's
    size floor does not apply (an eager forward call where `speed.short_in_c`: `_torch_route`)."""
    static = call if isinstance(call, Static) else call.static
    looks = _Looks(call) if looks is None else looks   # (one read of max|q|, max|k|, max|v| for both looks)
    if not pinned and not short and static.tq * static.tk < _C_KERNEL_MIN_SCORES:
        return f"short call ({static.tq}·{static.tk} scores per head): SDPA or the plain path"
    if static.device_type != "cpu":
        return "not on the CPU"
    import torch

    if static.work != torch.float32:
        return "float64: the plain path (torch autograd)"
    if static.dk == 0 or static.dv == 0:
        return "Dk or Dv is 0"
    hw = current_machine() if machine is None else machine
    if static.has_mask and not static.has_bias and looks.traced and static.mask_mod is None and not static.scored:
        # traced: the mask array's key ranges are read inside the C op (`autograd.mask_op`), where the eager
        # route reads them before (choose_call_route)
        return None if hw.backward else "the C extension (its backward, kernels/_backward.c) is not built"
    if static.has_mask or static.has_bias:
        return "a mask array or bias: the C backward takes masks of key ranges only"
    if static.scored and looks.score_spec() is None:
        if looks.traced:
            return "a score_mod: its C passes are not an op torch.compile keeps"
        return ("a score_mod neither soft-cap nor declared relative (ALiBi, T5's buckets): the plain path "
                "(torch autograd)")
    if autograd.row_ranges(static, per_batch=not looks.traced and not _compiling()) is None:
        return "a mask function without key ranges (the same for every batch and head)"
    if not hw.backward:
        return "the C extension (its backward, kernels/_backward.c) or NumPy's BLAS is not available"
    return _torch_flash_values_why_not(looks) if values else None


def _torch_flash_values_why_not(looks) -> str | None:
    """torch_flash_why_not's conditions on the values (asked through looks), or None."""
    if looks.ask("values_ok") is False:
        return "a non-finite value, or values above 2^60"
    if looks.ask("overflow"):   # (route="torch_flash" pinned included: the kernel would give inf and NaN)
        return "|q|·|k|·Dk near float32's range: the plain path multiplies q and k by exact powers of two"
    return None


def _scores_may_overflow(call: Call) -> bool:
    """Whether max|q|·max|k|·Dk passes a quarter of the float range (q·kᵀ could overflow)."""
    if call.dk == 0 or call.tq == 0 or call.tk == 0:
        return False
    return _tops_may_overflow(_value_top(call.q), _value_top(call.k), call)


@functools.lru_cache(maxsize=64)
def _dtype_may_overflow(dtype, work, dk: int) -> bool:
    """Whether any finite values of `dtype` could pass the overflow rule in `work` at width dk: False for
    float16 computed in float32 (65504²·Dk stays 10²⁸ times below a quarter of float32's range), True for
    float32, bfloat16 (float32's range), float64 in themselves."""
    top = _largest(dtype)
    with np.errstate(over="ignore"):   # (longdouble's largest squared: inf, which passes the rule — True)
        return bool(tops_may_overflow(top, top, dk, _largest(work)))


def _range_may_overflow(call: Call) -> bool:
    """_dtype_may_overflow for the call: when False the overflow look needs no value read (the answer is
    the rule's own for the dtype's largest values)."""
    return call.dk > 0 and _dtype_may_overflow(call.dtype, call.work, call.dk)


def _tops_may_overflow(top_q: float, top_k: float, call: Call) -> bool:
    """_scores_may_overflow from max|q| and max|k| (either NaN or inf: False, the value checks say so)."""
    finite = math.isfinite if type(top_q) is float and type(top_k) is float else np.isfinite   # (longdouble's range)
    if call.dk == 0 or not (finite(top_q) and finite(top_k)):
        return False
    return tops_may_overflow(top_q, top_k, call.dk, _largest(call.work))


@functools.lru_cache(maxsize=16)
def _largest(work):
    """The largest finite value of a working dtype (torch's as a Python float; NumPy's kept a NumPy scalar:
    longdouble's maximum is beyond a Python float)."""
    if type(work).__module__ == "torch":   # a torch dtype (torch is imported: the call holds tensors)
        import torch

        return float(torch.finfo(work).max)
    return np.finfo(work).max


def _whole_in_c(call: Static, hw: native.Machine) -> bool:
    """Whether a mid-sized NumPy call takes the kernel (see _C_KERNEL_MIN_WORK): float32 or
    float16, no mask array, bias or score_mod, no mask function or a band one, the C extension built."""
    scores = call.tq * call.tk
    work = scores * math.prod(call.lead) * (call.dk + call.dv)
    # (no work floor on AVX-512 CPUs without AMX, speed.short_in_c, for widths the register tiles take: see
    # _C_KERNEL_MIN_WORK)
    tiled = call.dk <= 128 and 16 <= call.dv <= 128 and call.dv % 16 == 0
    floor = 0 if tiled and speed.short_in_c(False) else _C_KERNEL_MIN_WORK_MASKED if call.masked else _C_KERNEL_MIN_WORK
    if scores < _C_KERNEL_MIN_SCORES or work < floor:
        return False
    if call.tq < _C_KERNEL_MIN_ROWS:   # decoding: the plain path reads k and v once (kernel 2.7 ms, plain 0.74
        return False                   # for one query over 4096 keys, 8 heads)
    if np.dtype(call.work) != np.float32 or hw.fused is None:
        return False
    if call.has_mask or call.has_bias or call.scored:
        return False
    return call.mask_info is None or call.mask_info.band is not None


def _no_plain_c_softmax(call: Static, want: str, v_top, hw: native.Machine) -> str | None:
    """Why PLAIN_C_SOFTMAX does not apply, or None."""
    if call.masked or call.has_bias or call.scored:
        return "masked, biased or with a score_mod: plain path"
    if want != "out":
        return "the lse asked for: plain path"
    if np.dtype(call.dtype) != np.float32 or hw.fused is None:
        return "not float32 with the C extension: plain path"
    if not np.isfinite(v_top):
        return "a non-finite value: plain path"
    return None


def _kernel_route(call: Static, want, ceiling, v_top, block_q, block_k, num_threads, hw: native.Machine,
                  looks) -> Route:
    fused = hw.fused
    info = call.mask_info
    lead = loop_lead(call)
    # The ladder, from the ceiling down: the first route this call can take.
    names = KERNEL[KERNEL.index(ceiling):]
    float32 = np.dtype(call.work) == np.float32 and fused is not None
    # A score_mod C computes (soft-cap, a relative bias: ALiBi, T5's buckets) keeps the C routes
    score = None
    if float32 and call.scored:
        score = looks.score_spec()
    simple = (not call.has_bias and (not call.scored or score is not None) and bool(np.isfinite(v_top))
              and call.dk > 0 and call.dv > 0)
    same_kv = call.k_lead == call.v_lead
    no_rows = info is not None and not (info.block_kinds is not None and
                                        (info.band is not None or info.key_ranges is not None))
    name, reason = NUMPY_WALK, "float64/longdouble, or no C extension: the NumPy walk"
    for candidate in names:
        if candidate == FLASH_MANY:
            if not float32 or not simple or want == "partial" or call.has_mask or not same_kv or no_rows:
                continue
            if not hw.sgemm:
                continue
            name, reason = FLASH_MANY, "float32, no mask array, bias or score_mod C does not take: every task in C"
        elif candidate == FLASH_ROWS:
            if not float32 or not simple or not hw.sgemm:
                continue
            name, reason = FLASH_ROWS, ("float32 without bias or a score_mod C does not take, finite values: "
                                        "each task walked in C")
        elif candidate == PY_WALK:
            if not float32:
                continue
            name, reason = PY_WALK, "float32 with bias, score_mod or non-finite values: Python walk, C softmax step"
        else:
            name = NUMPY_WALK
            if float32:
                reason = "the NumPy walk asked for"
        break

    tq, tk = call.tq, call.tk
    sparse = info is not None and info.block_kinds is not None
    band = sparse and info.relative
    hint = info.block_size if sparse else None   # a BlockMask's own blocks: its kinds are exact there
    bq = min(block_q or hint or (_BAND_BLOCK if band else DEFAULT_BLOCK_Q), tq)
    # With few query rows (decoding) take longer key blocks, keeping the score block at
    # the default's size: fewer, larger BLAS calls for the same memory.
    # Short causal calls with full query blocks: square key blocks (see _CAUSAL_BLOCK_K).
    default_bk = (_BAND_BLOCK if band else _SPARSE_BLOCK_K) if sparse else \
        _CAUSAL_BLOCK_K if call.causal and bq >= DEFAULT_BLOCK_Q and tk <= _CAUSAL_SQUARE_MAX_TK else \
        max(DEFAULT_BLOCK_K, DEFAULT_BLOCK_Q * DEFAULT_BLOCK_K // bq)
    bk = min(block_k or hint or default_bk, tk)
    shift = tk - tq
    n_kb = -(-tk // bk)
    heads = list(np.ndindex(*lead))
    kinds_by_head = {}

    def plan_tasks(for_heads, split_tail=False):
        planned = []
        for h in for_heads:
            kinds = kinds_by_head.get(h)
            if kinds is None and sparse:
                kinds = kinds_by_head[h] = block_kinds(call, h, bq, bk)

            def task(qb, i0, i1):
                key_end = min(tk, i1 + shift) if call.causal else tk   # keys past this are all future
                last = -(-max(key_end, 0) // bk)
                blocks = np.arange(last) if kinds is None else np.flatnonzero(kinds[qb, :last])
                return (h, i0, i1, blocks, key_end)

            head_tasks = [task(qb, i0, min(i0 + bq, tq)) for qb, i0 in enumerate(range(0, tq, bq))]
            if split_tail:
                head_tasks = _split_lightest(head_tasks, bq, task)
            planned += head_tasks
        return planned

    many = name == FLASH_MANY
    tasks = plan_tasks(heads[:1] if many else heads)
    copies = len(heads) if many else 1
    n_tasks = len(tasks) * copies
    total_blocks = sum(len(t[3]) for t in tasks) * copies
    # A decoding row (one or two queries) reads a whole k and v row per score: count it heavier.
    big = total_blocks * bq * bk * (_DECODE_WEIGHT if bq <= 2 else 1) >= _PARALLEL_MIN_SCORES
    threads = min(num_threads or hw.cpus, max(n_tasks, n_kb)) if big else 1
    # Too few (head, query block) tasks for the threads — one long head, or decoding with few
    # heads: split each task's key blocks into ranges, one Partial per range, and merge them
    # with merge_partials. Otherwise one range, written straight into the result.
    ranges = 1 if n_tasks >= threads else min(-(-threads // n_tasks), n_kb)
    if many and ranges > 1:
        name = FLASH_ROWS
        reason = (f"fewer tasks ({n_tasks}) than threads ({threads}): key ranges split per task and merged, "
                  "each walked in C")
        tasks = plan_tasks(heads)
    elif threads > 1 and ranges == 1 and bq >= 2 * _TAIL_ROWS:
        tasks = plan_tasks(heads[:1] if many else heads, split_tail=True)
    return Route(name, reason, block_q=bq, block_k=bk, threads=threads, ranges=ranges, big=big, lead=lead,
                 band=_band(call) if sparse else None,
                 tasks=tuple(tasks), kinds=kinds_by_head if sparse else {}, v_top=v_top,
                 score=score if name in (FLASH_MANY, FLASH_ROWS) and call.scored else None,
                 tile=True, width=int(fused.vector_width()) if fused is not None else 1)


def _band(call: Call):
    """The band (lo, hi) of kv − q the call's mask function is (see Route.band), or None."""
    info = call.mask_info
    if info.band is not None:
        return info.band
    rows = info.key_ranges
    if rows is None:
        return None
    lo, hi = np.clip(rows, 0, call.tk)   # as the C walk reads them: clipped to the keys, empty as lo = hi
    found = _band_of(np.stack([lo, np.maximum(lo, hi)]), call.tq, call.tk)   # (a, b): clip(i + a) <= j < clip(i + b)
    if found is None:
        return None
    a, b = found
    return a, None if b is None else b - 1


def _split_lightest(head_tasks: list, bq: int, task) -> list:
    """One head's tasks with its lightest query block (fewest rows × key blocks; the last of equals)
    cut into _TAIL_PIECES pieces of at least _TAIL_ROWS rows. Tasks are taken heaviest first, so
    every head's pieces are the last ones taken: the threads then finish within about a piece's time
    of each other instead of a whole block's (at T = 512, H = 8, dense: 16 tasks of 256 rows, one
    of them 1/8 of a thread's work). task(qb, i0, i1): the task of rows i0:i1 of query block qb."""
    weights = [(t[2] - t[1]) * len(t[3]) for t in head_tasks]
    if not weights or max(weights) == 0:
        return head_tasks
    lightest = max((i for i, w in enumerate(weights) if w > 0), key=lambda i: (-weights[i], i))
    _, i0, i1, _, _ = head_tasks[lightest]
    qb = i0 // bq
    step = max(_TAIL_ROWS, -(-(i1 - i0) // _TAIL_PIECES))
    pieces = [task(qb, a, min(a + step, i1)) for a in range(i0, i1, step)]
    return head_tasks[:lightest] + pieces + head_tasks[lightest + 1:]


def loop_lead(call: Call) -> tuple:
    """The kernel's loop over (batch, head) pairs: the leading shapes of q, k, v broadcast, with
    grouped-query attention's heads split as (…, G, H/G) (k and v then (…, G, 1))."""
    q_lead, k_lead, v_lead = call.q_lead, call.k_lead, call.v_lead
    if call.groups > 1:
        q_lead = q_lead[:-1] + (call.kv_heads, call.groups)
        k_lead = k_lead + (1,)
        v_lead = v_lead + (1,) if len(v_lead) >= 1 else v_lead
    return tuple(np.broadcast_shapes(q_lead, k_lead, v_lead))


def block_kinds(call: Call, head: tuple, bq: int, bk: int) -> np.ndarray:
    """(query blocks, key blocks) int8 of EMPTY / PARTIAL / FULL from the mask's block_kinds(b, h,
    q_lo, q_hi, k_lo, k_hi) (half-open index ranges, broadcasting arrays), for one loop head."""
    b, h = batch_head(call, head)
    tq, tk = call.tq, call.tk
    q_lo = np.arange(0, tq, bq)[:, None]
    k_lo = np.arange(0, tk, bk)[None, :]
    kinds = call.mask_info.block_kinds(b, h, q_lo, np.minimum(q_lo + bq, tq), k_lo, np.minimum(k_lo + bk, tk))
    return np.broadcast_to(np.asarray(kinds, dtype=np.int8), (q_lo.shape[0], k_lo.shape[1]))


def _masks():
    """qkv.masks, imported on first use (a bare `import qkv` does not load it: tests/test_cli.py)."""
    from .. import masks

    return masks
