"""Calling user mask and score functions, the one place they are called on every route.

`call_mask(fn, b, h, q_idx, kv_idx)` and `call_score(fn, score, b, h, q_idx, kv_idx)` call a
flex_attention-style function with broadcasting index arrays first, and when that fails or the result
does not fit their broadcast shape, element by element (`elementwise`: 0-d torch tensors under nested
torch.vmap). `as_bool_mask` / `as_scores` check and convert what the function returned. Block kinds
(`EMPTY`, `PARTIAL`, `FULL`) are how a mask function tells the kernel, per (query block, key block),
that no entry is allowed, some are, or all are.

This module sits below `qkv.masks` (which builds the catalogue on it) and `kernels.call` (the
validator, which analyses mask functions with `qkv.masks.analyse`): it imports neither.
"""

from __future__ import annotations

import sys
import threading
import warnings

import numpy as np

from .. import _backend as compat  # array-api-compat, imported on first use
from .._backend import shape_str

__all__ = ["EMPTY", "PARTIAL", "FULL", "as_bool_mask", "as_scores", "call_mask", "call_score", "elementwise"]

EMPTY, PARTIAL, FULL = 0, 1, 2


def _compiling() -> bool:
    """Whether torch.compile is tracing (a plain mask function is then not analysed: the analysis
    runs NumPy and keeps a cache, which a trace cannot); False when torch was never imported. torch is
    looked up in sys.modules, not imported: an import statement here was ~0.3 µs of every call."""
    torch = sys.modules.get("torch")
    return torch is not None and bool(torch.compiler.is_compiling())


def as_bool_mask(value, xp, device=None, *, name: str = "mask_mod"):
    """A mask function's result converted to xp's boolean array (NumPy ↔ torch when a function built
    on the other library's arrays returned them)."""
    if compat.is_torch_array(value) and compat.is_numpy_namespace(xp):
        value = value.detach().cpu().numpy()
    elif compat.is_numpy_namespace(xp) or not compat.is_torch_array(value):
        value = np.asarray(value)
        if value.dtype != np.bool_:   # (before torch sees it: torch's words would not name the function)
            raise TypeError(f"{name} must return booleans (True = may attend), got {_what(value)}")
        if not compat.is_numpy_namespace(xp):
            import torch

            value = torch.as_tensor(value, device=device)
    if value.dtype != xp.bool:
        raise TypeError(f"{name} must return booleans (True = may attend), got dtype {value.dtype}")
    return value


def _what(value) -> str:
    """A wrong result described: its dtype, or the Python object it was (None, a string)."""
    if value.dtype == object and value.ndim == 0:
        return f"{type(value.item()).__name__} {value.item()!r}"
    return f"dtype {value.dtype}"


def as_scores(value, like, *, name: str = "score_mod"):
    """A score function's result in the array library of `like` (the scores it was handed), which
    it must match in shape: a result of another shape is refused, not broadcast."""
    if compat.is_numpy_array(like):
        if compat.is_torch_array(value):
            value = value.detach().cpu().numpy()
        value = np.asarray(value)
    elif not compat.is_torch_array(value):
        import torch

        value = np.asarray(value)
        if not np.issubdtype(value.dtype, np.floating):   # (torch's words would not name the function)
            raise TypeError(f"{name} must return floating-point scores, got {_what(value)}")
        value = torch.as_tensor(value, device=like.device)
    if not (compat.is_numpy_array(value) and np.issubdtype(value.dtype, np.floating)
            or compat.is_torch_array(value) and value.is_floating_point()):
        raise TypeError(f"{name} must return floating-point scores, got dtype {value.dtype}")
    if tuple(value.shape) != tuple(like.shape):
        raise ValueError(f"{name} returned shape {shape_str(value.shape)} for scores of shape "
                         f"{shape_str(like.shape)}; it must return one score per score it is given")
    return value


def call_mask(fn, b, h, q_idx, kv_idx):
    """fn(b, h, q_idx, kv_idx) on broadcasting index arrays, its result in the indices' library.

    fn is called first with the index arrays themselves (qkv's own functions, NumPy or torch index
    arithmetic); when that fails, or gives a result that does not fit the indices' broadcast shape
    (`bias[q_idx][kv_idx]` on arrays indexes the wrong axis), it is evaluated as flex_attention
    evaluates it: one (b, h, q_idx, kv_idx) at a time as 0-d torch tensors under torch.vmap
    (`elementwise`), so torch-only writing (`(q - kv).abs()`, `q.clamp(…)`, `torch.abs`, torch's
    and_masks/or_masks, indexing captured tensors) works on NumPy calls too."""
    return _called(fn, (b, h, q_idx, kv_idx), _broadcast_shape(b, h, q_idx, kv_idx), "mask_mod")


def call_score(fn, score, b, h, q_idx, kv_idx):
    """fn(score, b, h, q_idx, kv_idx) (see `call_mask`): called with the arrays first; when that fails
    or does not return score's shape, evaluated element by element under torch.vmap (`elementwise`).
    The result is in score's library."""
    return _called(fn, (score, b, h, q_idx, kv_idx), tuple(score.shape), "score_mod", exact=True)


def _broadcast_shape(*arrays) -> tuple:
    """NumPy's broadcast of the arrays' shapes, in plain Python loops (torch.compile traces it)."""
    out = []
    for a in arrays:
        shape = list(a.shape) if hasattr(a, "shape") else list(np.shape(a))
        while len(out) < len(shape):
            out.insert(0, 1)
        for d in range(1, len(shape) + 1):
            size = shape[-d]
            if size != 1:
                if out[-d] not in (1, size):
                    raise ValueError(f"index arrays of shapes {[tuple(np.shape(x)) for x in arrays]} do not broadcast")
                out[-d] = size
    return tuple(out)


def _fits(value, shape, exact: bool) -> bool:
    got = tuple(value.shape) if hasattr(value, "shape") else tuple(np.shape(value))
    if exact:
        return got == shape
    if len(got) > len(shape):
        return False
    for d in range(1, len(got) + 1):
        if got[-d] != 1 and got[-d] != shape[-d]:
            return False
    return True


def _called(fn, args, shape, name, *, exact=False):
    numpy = not compat.is_torch_array(args[-1])
    if not numpy and _compiling():   # in a trace: no try, no warnings filter (Dynamo follows fn itself);
        from torch._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex

        with TransformGetItemToIndex():   # indexing by a 0-d tensor (`am[b, …]`) an index op, as flex_attention
            value = fn(*args)             # traces it (else a data-dependent int: GuardOnDataDependentSymNode)
        return value if _fits(value, shape, exact) else elementwise(fn, *args, name=name)
    try:
        if threading.current_thread() is threading.main_thread():
            with warnings.catch_warnings():   # a trial: what a torch-only fn says about NumPy arguments
                warnings.simplefilter("ignore")
                value = fn(*args)
        else:   # the kernel's threads: catch_warnings swaps process-wide state, which threads would race on
            value = fn(*args)
        fits = _fits(value, shape, exact)
    except Exception as error:   # noqa: BLE001 — not index arithmetic on these arrays: element by element
        value, fits, failed = None, False, error
    else:
        failed = None
    if fits:
        return value
    if numpy:
        try:
            import torch  # noqa: F401
        except ImportError:
            if failed is not None:
                raise failed
            return value   # the caller's check names the shape
    if failed is None:   # it ran but gave another shape: element by element if that works, else the
        try:             # shape it gave is what is wrong (`s[..., :1]` cannot run on 0-d tensors)
            value = elementwise(fn, *args, name=name)
        except _OneValueEach:
            raise
        except Exception:   # noqa: BLE001
            if exact:   # as_scores words it
                return value
            got = tuple(value.shape) if hasattr(value, "shape") else tuple(np.shape(value))
            raise ValueError(f"{name} returned shape {got} for index arrays broadcasting to {shape}; it must "
                             "return one value per (b, h, q_idx, kv_idx)") from None
    else:
        value = elementwise(fn, *args, name=name)
    return value.detach().cpu().numpy() if numpy else value


class _OneValueEach(ValueError):
    """A mask or score function returned more than one value for one (b, h, q_idx, kv_idx)."""


def elementwise(fn, *args, name: str = "mask_mod"):
    """fn evaluated as torch's flex_attention evaluates a mask_mod or score_mod: at every element of
    its broadcasting arguments (score, b, h, q_idx, kv_idx; NumPy arrays or torch tensors), as 0-d torch
    tensors under nested torch.vmap (one level per dimension longer than 1) with indexing by a tensor
    made an index op (torch's TransformGetItemToIndex: `bias[q_idx][kv_idx]`, `table[h]`), so a
    function written for flex_attention means here what it means there, differentiably and under
    torch.compile. Returns a torch tensor of the arguments' broadcast shape. A function that fails, or
    returns more than one value per element, raises naming `name` (mask_mod or score_mod)."""
    import torch
    from torch._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex

    device = next((a.device for a in args if torch.is_tensor(a)), None)
    tensors = [a if torch.is_tensor(a) else torch.as_tensor(np.array(a), device=device) for a in args]   # (a copy: writable)
    shape = tuple(torch.broadcast_shapes(*(t.shape for t in tensors)))
    n = len(shape)
    full = [t.reshape((1,) * (n - t.dim()) + tuple(t.shape)) for t in tensors]
    levels = [d for d in range(n) if shape[d] != 1]
    squeezed = [t.reshape(tuple(t.shape[d] for d in levels if t.shape[d] != 1)) for t in full]

    def one(*xs):
        value = fn(*xs)
        return value if torch.is_tensor(value) else torch.as_tensor(value, device=device)

    mapped = one
    for d in reversed(levels):
        mapped = torch.vmap(mapped, in_dims=tuple(0 if t.shape[d] != 1 else None for t in full))
    label = getattr(fn, "__name__", type(fn).__name__)
    try:
        with TransformGetItemToIndex():
            out = mapped(*squeezed)
    except Exception as error:   # noqa: BLE001 — torch's words, with the function named
        words = (f"{name} {label!r} failed on flex_attention's scalar index tensors (b, h, q_idx, kv_idx"
                 f"{'' if name == 'mask_mod' else ', with score first'}): {type(error).__name__}: {error}")
        try:
            named = type(error)(words)
        except Exception:   # noqa: BLE001 — an exception class that takes other arguments
            named = RuntimeError(words)
        raise named from error
    want = tuple(shape[d] for d in levels)
    if tuple(out.shape) != want:
        raise _OneValueEach(f"{name} {label!r} returned shape {tuple(out.shape)[len(want):] or tuple(out.shape)} "
                         "per element; it must return one value (a 0-d tensor) per (b, h, q_idx, kv_idx)")
    return out.reshape(shape)
