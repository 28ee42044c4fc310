"""One checked description of an attention call, shared by the plain path, the blocked kernel and
the torch path (so each shape, dtype, mask and scale rule is written, and worded, once).

`check_call(q, k, v, mask, ...)` validates everything an attention call is given and returns a
frozen `Call`: the broadcast shapes, the grouped-query layout, the scale, the dtypes to compute
in, and the mask and score functions. It raises ValueError/TypeError naming the argument, the
shape it got and the shape it needed.

Rules (the same on every path):
- q (…, Tq, Dk), k (…, Tk, Dk), v (…, Tk, Dv). Leading dimensions broadcast like NumPy's; the
  last leading dimension (−3) is the heads. When q has H heads there and k, v have G with
  1 < G < H and H % G == 0, it is grouped-query attention: query head h reads key/value head
  h // (H/G). Otherwise the head dimensions broadcast (G = 1 is multi-query attention, H = 1
  with G > 1 broadcasts the one query head over the G heads) or are refused.
- dtypes: q, k, v share one real floating dtype. float16/bfloat16 are computed in float32;
  float32, float64 and NumPy's longdouble in themselves. The result has q's dtype.
- scale: a finite real number (default 1/√Dk; 1 when Dk = 0).
- mask: boolean, True = may attend; bias: real floating, additive; both broadcast to the
  scores (…, H, Tq, Tk).
- mask_mod(b, h, q_idx, kv_idx) -> bool and score_mod(score, b, h, q_idx, kv_idx) -> score:
  callables in flex_attention's style, called with broadcasting integer index arrays (see
  `index_arrays`): b the batch index (the leading dimensions before the heads, flattened),
  h the head, q_idx the query position, kv_idx the key position.

Block kinds (`EMPTY`, `PARTIAL`, `FULL`) are how a mask function tells the blocked kernel, per
(query block, key block), that no entry is allowed, some are, or all are (see qkv.masks).
"""

from __future__ import annotations

import math
import sys
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import _backend as compat  # array-api-compat, imported on first use
from .._backend import compute_dtype, is_torch, namespace, shape_str
from .._keep import keep
from .functions import (EMPTY, FULL, PARTIAL, _compiling, as_bool_mask, as_scores, call_mask,  # noqa: F401 (kept
                        call_score, elementwise)                                             # importable here)

__all__ = ["Call", "Static", "check_call", "index_arrays", "EMPTY", "PARTIAL", "FULL", "as_bool_mask", "check_scale",
           "call_mask", "call_score", "elementwise"]



@dataclass(frozen=True)
class Call:
    """A validated attention call. Shapes use the letters of design.md."""

    xp: Any                 # the array namespace (NumPy or torch via array-api-compat)
    dtype: Any              # q's dtype (the result's)
    work: Any               # the dtype arithmetic runs in
    device: Any
    tq: int
    tk: int
    dk: int
    dv: int
    heads: int              # H after broadcasting (1 when there is no head dimension)
    kv_heads: int           # G
    groups: int             # H // G when grouped-query attention, else 1
    lead: tuple             # the scores' leading shape (…, H)
    scale: float            # np.longdouble when computing in longdouble
    default_scale: bool
    causal: bool
    mask: Any
    bias: Any
    mask_mod: Callable | None
    score_mod: Callable | None
    mask_info: Any = None   # qkv.masks.MaskInfo of mask_mod (block kinds, band, key ranges), or None
    score_info: Any = None  # qkv.masks.ScoreInfo of score_mod (formula, broadcasts, relative, catalogue kind), or None
    q: Any = field(default=None, repr=False, compare=False)   # the arrays as given
    k: Any = field(default=None, repr=False, compare=False)
    v: Any = field(default=None, repr=False, compare=False)
    # What the call's checks and its route were decided from, when it is all in static properties
    # (`signature`: types, shapes, dtypes, devices, flags, scale); None otherwise. Not an argument:
    # dataclasses.replace (a split's or a batch's call) leaves it None, so a derived call is never
    # served its parent's route (route.choose_route keeps routes by it).
    key: Any = field(default=None, init=False, repr=False, compare=False)

    # What the rulebook reads of the arrays without reading a value (shared with `Static`)
    @property
    def has_mask(self) -> bool:
        return self.mask is not None

    @property
    def has_bias(self) -> bool:
        return self.bias is not None

    @property
    def q_lead(self) -> tuple:
        return tuple(self.q.shape[:-2])

    @property
    def k_lead(self) -> tuple:
        return tuple(self.k.shape[:-2])

    @property
    def v_lead(self) -> tuple:
        return tuple(self.v.shape[:-2])

    @property
    def scored(self) -> bool:
        return self.score_mod is not None

    @property
    def ndim(self) -> int:
        """The fewest dimensions of q, k and v."""
        return min(self.q.ndim, self.k.ndim, self.v.ndim)

    @property
    def library(self) -> str:
        return "numpy" if compat.is_numpy_namespace(self.xp) else "torch"

    @property
    def device_type(self) -> str:
        return getattr(self.device, "type", None) or str(self.device)

    @property
    def differentiated(self) -> bool:
        """Whether autograd records this call (torch, grad mode on, an input that requires grad)."""
        torch = sys.modules.get("torch")
        if torch is None or isinstance(self.q, np.ndarray) or not torch.is_grad_enabled():
            return False
        bias = self.bias
        return self.q.requires_grad or self.k.requires_grad or self.v.requires_grad or \
            (bias is not None and bias.requires_grad)

    @property
    def static(self) -> "Static":
        """The call without its values: what a route is decided from (`Static`). A call with a signature
        (`key`) shares its two descriptions (autograd recording it or not) with every call of that signature
        (`_statics`, kept by check_call): building one costs ~15 µs, a route kept by signature ~10 µs."""
        differentiated = self.differentiated
        shared = self.__dict__.get("_statics") if self.key is not None else None
        if shared is not None and shared[differentiated] is not None:
            return shared[differentiated]
        static = Static(self.library, self.dtype, self.work, self.device_type, self.tq, self.tk, self.dk, self.dv,
                      self.heads, self.kv_heads, self.groups, self.lead, self.q_lead, self.k_lead, self.v_lead,
                      self.causal, self.has_mask, self.has_bias, self.mask_mod, self.scored, self.mask_info,
                      self.score_info, differentiated)
        if shared is not None:
            shared[differentiated] = static
        return static

    @property
    def scores_shape(self) -> tuple:
        return self.lead + (self.tq, self.tk)

    @property
    def out_shape(self) -> tuple:
        return self.lead + (self.tq, self.dv)

    @property
    def empty(self) -> bool:
        return self.tq == 0 or self.tk == 0 or 0 in self.lead

    @property
    def masked(self) -> bool:
        """Whether anything but the scores' own −inf can hide a key."""
        return self.causal or self.mask is not None or self.mask_mod is not None

    @property
    def batch(self) -> int:
        """How many values b takes: the leading dimensions before the heads, flattened."""
        return math.prod(self.lead[:-1])


@dataclass(frozen=True)
class Static:
    """A call without its values: everything its route is decided from that is known before a value is read —
    the library, dtypes, device, shapes, whether there is a mask array or a bias, the mask and score functions
    and their analyses, whether autograd records it. `Call.static` gives an eager call's; under torch.compile
    (`route.traced_torch_route`) it is all a trace knows, built outside the trace. The rulebook
    (`route.choose_route`) reads this and asks everything else — the values — through its looks."""

    library: str            # "numpy" or "torch"
    dtype: Any              # q's dtype (np.dtype or torch.dtype)
    work: Any               # the dtype arithmetic runs in
    device_type: str        # "cpu", "cuda", …
    tq: int
    tk: int
    dk: int
    dv: int
    heads: int
    kv_heads: int
    groups: int
    lead: tuple             # the scores' leading shape (…, H)
    q_lead: tuple           # q's, k's and v's own leading shapes (before broadcasting)
    k_lead: tuple
    v_lead: tuple
    causal: bool
    has_mask: bool
    has_bias: bool
    mask_mod: Callable | None
    scored: bool            # a score function is given (what the rules read of it is `score_info`, or a look)
    mask_info: Any = None
    score_info: Any = None
    differentiated: bool = False   # (torch) autograd records the call: a gradient may be asked of it

    @property
    def empty(self) -> bool:
        return self.tq == 0 or self.tk == 0 or 0 in self.lead

    @property
    def masked(self) -> bool:
        return self.causal or self.has_mask or self.mask_mod is not None

    @property
    def batch(self) -> int:
        return math.prod(self.lead[:-1])

    @property
    def ndim(self) -> int:
        """The fewest dimensions of q, k and v."""
        return 2 + min(len(self.q_lead), len(self.k_lead), len(self.v_lead))


def check_scale(scale) -> tuple[float | None, bool]:
    """(scale as a float or None for the default, whether it was the default). Refuses what is not
    a finite real number, naming scale."""
    if scale is None:
        return None, True
    if isinstance(scale, (complex, np.complexfloating, str, bytes, bool, np.bool_)):
        raise TypeError(f"scale must be a finite real number, got {_short(scale)}")
    try:
        value = float(scale)
    except OverflowError:   # an int beyond float64's range (10**400)
        raise ValueError(f"scale must be a finite real number, got {_short(scale)} (beyond the float range)") from None
    except (TypeError, ValueError):
        raise TypeError(f"scale must be a finite real number, got {_short(scale)}") from None
    if not math.isfinite(value):
        raise ValueError(f"scale must be a finite real number, got {_short(scale)}")
    return value, False


def _short(value) -> str:
    """repr of a value, cut to 40 characters (10**400 has 401 digits)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


# Calls already checked, by `signature`: the Call's fields but the arrays. A call whose signature
# was checked once passes every check again (they read nothing else), so it costs a dict lookup
# (~3 µs against ~50 µs). 256 kept, the oldest dropped first.
_CHECKED: dict = {}
_CHECKED_KEPT = 256
_checked_lock = threading.Lock()
_ARRAYS = ("q", "k", "v", "mask", "bias")


_SCALE_TYPES = (float, int, type(None))
_TORCH_KINDS: dict = {}   # type -> whether it is torch's (a tensor type's module read once, not per call)


def signature(q, k, v, mask=None, bias=None, causal=False, scale=None, mask_mod=None, score_mod=None):
    """Everything check_call reads from a call without functions (mask_mod and score_mod None), as a
    hashable key: the arrays' exact types, shapes, dtypes (and torch devices), causal and scale with
    their types (True and 1, 1.0 and True hash alike but are not checked alike). None when the call
    has a function, a mask or bias of another library than q (converted per call), a causal or scale
    of another type, or is being traced by torch.compile (Dynamo would guard on the cache)."""
    if mask_mod is not None or score_mod is not None:
        return None
    kind = type(q)
    if type(k) is not kind or type(v) is not kind:
        return None
    scale_type = type(scale)
    if type(causal) is not bool or scale_type not in _SCALE_TYPES or scale == 0:   # (0.0 is −0.0)
        return None
    if kind is np.ndarray:
        devices = None
    else:
        if _compiling():   # (first: a trace keeps nothing, this table included)
            return None
        torch_kind = _TORCH_KINDS.get(kind)
        if torch_kind is None:
            torch_kind = _TORCH_KINDS[kind] = kind.__module__.startswith("torch")
        if not torch_kind:
            return None
        devices = (q.device, k.device, v.device)
    extras = []
    for extra in (mask, bias):
        if extra is None:
            extras.append(None)
            continue
        if type(extra) is not kind:
            return None
        extras.append((tuple(extra.shape), extra.dtype, None if devices is None else extra.device))
    return (kind, tuple(q.shape), tuple(k.shape), tuple(v.shape), q.dtype, k.dtype, v.dtype, devices,
            extras[0], extras[1], causal, scale_type, scale)


def check_call(q, k, v, mask=None, *, bias=None, causal: bool = False, scale=None,
               mask_mod: Callable | None = None, score_mod: Callable | None = None) -> Call:
    """Validate one attention call (see the module docstring for the rules) and describe it.

    A call whose `signature` was checked before is described from the kept fields (its arrays
    swapped in) without checking again: the checks read nothing the signature does not hold."""
    key = signature(q, k, v, mask, bias, causal, scale, mask_mod, score_mod)
    if key is not None:
        kept = _CHECKED.get(key)
        if kept is not None:
            call = object.__new__(Call)   # (frozen: its fields set as dataclass __init__ would)
            fields = call.__dict__
            fields.update(kept)
            fields.update(q=q, k=k, v=v, mask=mask, bias=bias, key=key)
            return call
    call = _check_call(q, k, v, mask, bias=bias, causal=causal, scale=scale, mask_mod=mask_mod, score_mod=score_mod)
    if key is not None:
        object.__setattr__(call, "key", key)
        kept = {name: value for name, value in call.__dict__.items() if name not in _ARRAYS + ("key",)}
        kept["_statics"] = call.__dict__["_statics"] = [None, None]   # (Call.static's, shared by the signature's calls)
        keep(_CHECKED, key, kept, _CHECKED_KEPT, _checked_lock)
    return call


def _check_call(q, k, v, mask=None, *, bias=None, causal: bool = False, scale=None,
                mask_mod: Callable | None = None, score_mod: Callable | None = None) -> Call:
    """check_call's checks, every one (see the module docstring for the rules)."""
    xp = namespace(q=q, k=k, v=v)
    mask, bias = (_follow(extra, q, name) for name, extra in (("mask", mask), ("bias", bias)))
    if compat.is_torch_array(q):   # one device (q on meta beside k, v on the CPU: named here, not by .item())
        devices = {name: a.device for name, a in (("q", q), ("k", k), ("v", v), ("mask", mask), ("bias", bias))
                   if a is not None}
        if len(set(devices.values())) > 1:
            raise ValueError("q, k, v (and mask, bias) must be on one device, got "
                             + ", ".join(f"{name} on {device}" for name, device in devices.items()))
    for name, a, letters in (("q", q, "Tq, Dk"), ("k", k, "Tk, Dk"), ("v", v, "Tk, Dv")):
        if a.ndim < 2:
            raise ValueError(f"{name} has shape {shape_str(a.shape)} but needs at least 2 dimensions (…, {letters})")
        if not _real_floating(xp, a.dtype):
            raise TypeError(f"{name} must be floating point, got dtype {a.dtype}")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"q, k and v must share one dtype, got q {q.dtype}, k {k.dtype}, v {v.dtype}")
    tq, dk = int(q.shape[-2]), int(q.shape[-1])
    tk, dv = int(k.shape[-2]), int(v.shape[-1])
    if k.shape[-1] != dk:
        raise ValueError(f"k has shape {shape_str(k.shape)} but q has width {dk} (expected (…, Tk, {dk}))")
    if v.shape[-2] != tk:
        raise ValueError(f"v has shape {shape_str(v.shape)} but k has {tk} keys (expected (…, {tk}, Dv))")
    for name, fn in (("mask_mod", mask_mod), ("score_mod", score_mod)):
        if fn is not None and not callable(fn):
            raise TypeError(f"{name} must be a function ({'b, h, q_idx, kv_idx' if name == 'mask_mod' else 'score, b, h, q_idx, kv_idx'}), "
                            f"got {type(fn).__name__}")
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal must be True or False, got {causal!r}")

    heads = int(q.shape[-3]) if q.ndim >= 3 else 1
    kv_heads = int(k.shape[-3]) if k.ndim >= 3 else 1
    v_heads = int(v.shape[-3]) if v.ndim >= 3 else 1
    grouped = q.ndim >= 3 and k.ndim >= 3 and 1 < kv_heads < heads
    if grouped and heads % kv_heads:
        raise ValueError(f"k has shape {shape_str(k.shape)}: its {kv_heads} key/value heads do not divide q's "
                         f"{heads} heads (q has shape {shape_str(q.shape)}); grouped-query attention needs H % G == 0")
    if grouped and v_heads not in (1, kv_heads):
        raise ValueError(f"v has shape {shape_str(v.shape)} but k has {kv_heads} heads "
                         f"(expected (…, {kv_heads}, {tk}, Dv))")
    q_lead, k_lead, v_lead = (tuple(int(n) for n in a.shape[:-2]) for a in (q, k, v))
    if grouped:   # match the head dimension by groups, broadcast the rest
        q_lead, k_lead, v_lead = q_lead[:-1], k_lead[:-1], v_lead[:-1] if v.ndim >= 3 else v_lead
    try:
        lead = np.broadcast_shapes(q_lead, k_lead, v_lead)
    except ValueError:
        if not grouped and q.ndim >= 3 and k.ndim >= 3 and heads > 1 and kv_heads > 1 and heads != kv_heads:
            raise ValueError(f"q has {heads} heads (shape {shape_str(q.shape)}) but k has {kv_heads} "
                             f"(shape {shape_str(k.shape)}); grouped-query attention needs H % G == 0 and G < H") from None
        raise ValueError(f"q, k and v have leading (batch/head) shapes {shape_str(q.shape[:-2])}, "
                         f"{shape_str(k.shape[:-2])} and {shape_str(v.shape[:-2])} that do not broadcast") from None
    if grouped:
        lead = lead + (heads,)
    scores_shape = lead + (tq, tk)
    for name, extra in (("mask", mask), ("bias", bias)):
        if extra is None:
            continue
        if name == "mask" and extra.dtype != xp.bool:
            raise TypeError(f"mask must be boolean (True = may attend), got dtype {extra.dtype}; "
                            "pass an additive float mask as bias=")
        if name == "bias" and not _real_floating(xp, extra.dtype):
            raise TypeError(f"bias must be floating point, got dtype {extra.dtype}")
        try:
            ok = np.broadcast_shapes(tuple(extra.shape), scores_shape) == scores_shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"{name} has shape {shape_str(extra.shape)} but must broadcast to the scores' "
                             f"shape {shape_str(scores_shape)} (…, H, Tq, Tk)")
    value, default = check_scale(scale)
    if default:
        value = 1.0 / math.sqrt(dk) if dk else 1.0
    numpy = compat.is_numpy_namespace(xp)
    work = _work_dtype(xp, q.dtype)
    if numpy and work == np.longdouble:   # keep the scale's own precision (a float would round it to float64)
        value = np.longdouble(scale) if not default else np.longdouble(1) / np.sqrt(np.longdouble(max(dk, 1)))
    if compat.is_numpy_namespace(xp):
        mask_mod = _numpy_ready(mask_mod, score=False)
        score_mod = _numpy_ready(score_mod, score=True)
    info = None
    if mask_mod is not None:
        info = _masks().analyse(mask_mod, tq, tk, batch=math.prod(lead[:-1]) if lead else 1, heads=lead[-1] if lead else 1,
                       numpy=compat.is_numpy_namespace(xp) or not _compiling())
    score_info = None if score_mod is None else _masks().read_score(   # (per-head tables checked against the call)
        score_mod, batch=math.prod(lead[:-1]) if lead else 1, heads=lead[-1] if lead else 1, tq=tq, tk=tk)
    return Call(
        xp=xp, dtype=q.dtype, work=work, device=compat.device(q),
        tq=tq, tk=tk, dk=dk, dv=dv, heads=lead[-1] if lead else 1, kv_heads=kv_heads,
        groups=heads // kv_heads if grouped else 1, lead=tuple(lead), scale=value, default_scale=default,
        causal=bool(causal), mask=mask, bias=bias, mask_mod=mask_mod, score_mod=score_mod, mask_info=info,
        score_info=score_info,
        q=q, k=k, v=v,
    )


def _follow(extra, q, name: str):
    """A NumPy mask or bias given with torch q, k, v becomes a tensor on q's device (so
    `causal_mask(T)` works with torch inputs); other mixes are refused naming the arguments."""
    if extra is None:
        return None
    if compat.is_torch_array(q) and isinstance(extra, np.ndarray):
        import torch

        if extra.dtype == np.longdouble:
            raise TypeError(f"{name} has dtype longdouble, which torch does not have")
        return torch.as_tensor(np.ascontiguousarray(extra), device=q.device)
    namespace(q=q, **{name: extra})
    return extra


def _numpy_ready(fn, *, score: bool):
    """fn, or fn called through torch when it only works on tensors (a flex_attention function
    whose closure holds torch tensors: `score + bias_table[h]·(kv_idx − q_idx)` cannot add a
    tensor to a NumPy array). Decided once per call by a 1×1 probe; results come back as NumPy."""
    if fn is None or not score and hasattr(fn, "block_kinds"):   # (a mask of the catalogue or a BlockMask)
        return fn
    probe = (np.int64(0), np.int64(0), np.zeros((1, 1), np.int64), np.zeros(1, np.int64))
    head = (np.zeros((1, 1)),) if score else ()
    try:
        with warnings.catch_warnings():   # a trial: what a tensor-holding fn says about NumPy arguments (NumPy's
            warnings.simplefilter("ignore")   # __array_wrap__ deprecation from `tensor * array`) is not the user's
            tried = fn(*head, *probe)
        if not compat.is_torch_array(tried):
            return fn
    except Exception:   # noqa: BLE001 — any failure: see whether tensors work; if not, keep fn
        pass
    try:
        import torch

        def tensor(a):   # torch warns on a read-only array (a broadcast index grid): those few are copied
            return torch.as_tensor(a.copy() if isinstance(a, np.ndarray) and not a.flags.writeable else a)

        def through_torch(*args):
            return fn(*(tensor(a) for a in args))

        through_torch(*head, *probe)
    except Exception:   # noqa: BLE001 — neither works on the probe: the real call reports it
        return fn
    through_torch.formula = getattr(fn, "formula", getattr(fn, "__name__", "score_mod"))
    through_torch.__name__ = getattr(fn, "__name__", type(fn).__name__)   # errors name the user's function
    return through_torch


def _real_floating(xp, dtype) -> bool:
    # NumPy's namespace is asked first: a torch dtype is never compared with a NumPy one (which
    # torch.compile cannot trace)
    if xp is not None and compat.is_numpy_namespace(xp) and dtype == np.longdouble:
        return True
    return xp.isdtype(dtype, "real floating")


def _work_dtype(xp, dtype):
    if compat.is_numpy_namespace(xp) and dtype == np.longdouble:
        return np.dtype(np.longdouble)
    return compute_dtype(xp, dtype)


def index_arrays(call: Call, like=None):
    """(b, h, q_idx, kv_idx): int64 index arrays that broadcast to the scores (…, H, Tq, Tk).

    b (…, 1, 1, 1) numbers the leading dimensions before the heads (flattened, C order),
    h (H, 1, 1), q_idx (Tq, 1), kv_idx (Tk,). In q's array library and on its device.
    """
    batch_shape = call.lead[:-1]
    b = np.arange(math.prod(batch_shape), dtype=np.int64).reshape(batch_shape + (1, 1, 1))
    h = np.arange(call.heads if call.lead else 1, dtype=np.int64).reshape((-1, 1, 1) if call.lead else (1, 1))
    if not call.lead:
        b = np.zeros((1, 1), np.int64)
    q_idx = np.arange(call.tq, dtype=np.int64)[:, None]
    kv_idx = np.arange(call.tk, dtype=np.int64)
    if is_torch(like):
        import torch

        return tuple(torch.as_tensor(a, device=like.device) for a in (b, h, q_idx, kv_idx))
    return b, h, q_idx, kv_idx


def _masks():
    """qkv.masks, imported on first use (a bare `import qkv` does not load it: tests/test_cli.py)."""
    from .. import masks

    return masks
