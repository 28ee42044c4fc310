"""How large the values of a call are, and the rules read from it: the one place max |x| is read and
the overflow and lse-precision rules are written (the route's looks, the plain path's wider work or
exact shifts, the C op's own checks under torch.compile all ask these).

`value_top(x)` (NumPy) and `value_tops(*tensors)` (torch) give max |x| as Python floats (NaN or inf
when a value is); `tops_may_overflow` says whether max|q|·max|k|·Dk passes a quarter of the working
dtype's range; `tops_lose_lse` whether a stored log-sum-exp would lose the gradients.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from . import native

__all__ = ["value_top", "value_tops", "tops_may_overflow", "tops_lose_lse", "LSE_PRECISION"]


def value_top(v) -> float:
    """max |v| in one pass (float32, contiguous, C extension built) or two; NaN or inf if one is."""
    v = np.asarray(v)
    if v.size == 0:
        return 0.0
    fused = native.extension()
    if fused is not None and v.dtype == np.float32 and v.flags.c_contiguous:
        return float(fused.absmax(v))
    low, high = v.min(), v.max()          # no temporaries
    if not (np.isfinite(low) and np.isfinite(high)):
        return float("nan") if np.isnan(low) or np.isnan(high) else float("inf")
    return max(abs(low), abs(high))     # keeps longdouble's range


def value_tops(*tensors) -> tuple:
    """max |x| of each torch tensor as a Python float (NaN or inf when one is; 0.0 when empty): one C
    pass over a contiguous CPU float32 tensor (no temporaries, no torch threads), the bits of a contiguous
    CPU bfloat16/float16 one (`_half_top`), torch's abs().max() otherwise. The C pass reads a contiguous
    CPU tensor at its address (`_fused.absmax_at(x.data_ptr(), …)`, x held meanwhile), so no NumPy view is
    made: two such views cost ~10-20 µs per call against a B4 H4 T16 D32 SDPA call's ~50 µs. Three tensors of
    one dtype (a call's q, k, v) are read in one call (`absmax3_at`)."""
    fused = native.extension()
    at = getattr(fused, "absmax_at", None)   # (an extension built before it: through .numpy())
    kinds = _AT_KINDS or _at_kinds()
    if len(tensors) == 3:   # q, k and v of one dtype, contiguous on the CPU (a call's usual look): one C call
        three = getattr(fused, "absmax3_at", None)
        q, k, v = tensors
        kind = kinds.get(q.dtype) if three is not None and k.dtype == q.dtype and v.dtype == q.dtype else None
        if kind is not None and q.is_cpu and k.is_cpu and v.is_cpu and q.is_contiguous() and k.is_contiguous() \
                and v.is_contiguous():
            return tops_of(three(q.data_ptr(), q.numel(), k.data_ptr(), k.numel(), v.data_ptr(), v.numel(), kind[0]),
                           q.dtype)
    tops = []
    for x in tensors:
        kind = kinds.get(x.dtype) if at is not None else None
        if kind is not None and x.is_cpu and x.is_contiguous():
            # read at the tensor's address (x is held for the call): .numpy() and .view() cost 5-10 µs a tensor
            count = x.numel()
            if not count:
                tops.append(0.0)
                continue
            top = at(x.data_ptr(), count, kind[0])
            tops.append(top if kind[1] is None else kind[1](top))
        else:
            tops.append(_top(x, fused))
    return tuple(tops)


def tops_of(read: tuple, dtype) -> tuple:
    """max |x| of each tensor from what `_fused.absmax3_at` (or flash_at with tops) read of float32, bfloat16
    or float16 tensors of `dtype`: the floats themselves, or the values of the 16-bit patterns."""
    kinds = _AT_KINDS or _at_kinds()
    value = kinds[dtype][1]
    return read if value is None else tuple(value(top) for top in read)


def _top(x, fused) -> float:
    """value_tops of one tensor absmax_at does not read (not on the CPU, not contiguous, another dtype, or
    an extension built before it)."""
    import torch

    if not x.numel():
        return 0.0
    dtype = x.dtype
    cpu_contiguous = x.is_cpu and x.is_contiguous()
    if x.requires_grad:   # (.numpy() refuses it; a detach only where needed: ~0.5 µs a tensor)
        x = x.detach()
    if dtype == torch.float32 and cpu_contiguous and fused is not None:
        return float(fused.absmax(x.numpy().reshape(-1)))
    if (dtype == torch.bfloat16 or dtype == torch.float16) and cpu_contiguous:
        return _half_top(x, dtype == torch.bfloat16, fused)
    return float(x.abs().max())


def _half_top(x, bfloat16: bool, fused=False) -> float:
    """max |x| of a contiguous CPU bfloat16 or float16 tensor from its bits (one thread): with the sign bit
    cleared, IEEE patterns order as their magnitudes (zero < subnormals < normals < inf < NaN), so the
    largest pattern is max |x|, a NaN when one is. The C extension's `absmax_bits16` reads them in one pass
    (1.5 µs for the 32,768 values of a B1 H8 T64 D64 tensor on the AVX2 EPYC); NumPy's bitwise_and + max
    (a temporary; 23 µs there, three per call beside SDPA's ~210 µs) when it is not built. torch's
    abs().max() on bfloat16 took 13 ms of CPU for 8 × 4096 × 64 values on those 2 cores."""
    import torch

    bits = x.view(torch.int16).numpy()   # the same bytes, read as integers
    if fused is False:   # (value_tops hands the extension it read)
        fused = native.extension()
    if fused is not None and hasattr(fused, "absmax_bits16"):   # (an extension built before it: NumPy)
        top = fused.absmax_bits16(bits)
    else:
        top = int(np.bitwise_and(bits.reshape(-1).view(np.uint16), 0x7FFF).max())
    return _from_bits(top, bfloat16)


def _from_bits(top: int, bfloat16: bool) -> float:
    """The value of a bfloat16 or float16 bit pattern (as absmax_bits16 gives it)."""
    return _bfloat16_value(top) if bfloat16 else _float16_value(top)


# the torch dtypes absmax_at reads: dtype -> (item size, how its answer becomes max |x|: None for float32's
# float, the bits' value for bfloat16 and float16); filled on first use (torch is not imported here)
_AT_KINDS: dict = {}


def _at_kinds() -> dict:
    import torch

    _AT_KINDS.update({torch.float32: (4, None), torch.bfloat16: (2, _bfloat16_value),
                      torch.float16: (2, _float16_value)})
    return _AT_KINDS


def _bfloat16_value(top: int) -> float:
    return _FLOAT32.unpack(_UINT32.pack(top << 16))[0]   # bfloat16 is float32's upper half


def _float16_value(top: int) -> float:
    return _FLOAT16.unpack(_UINT16.pack(top))[0]


_UINT32, _FLOAT32, _UINT16, _FLOAT16 = (struct.Struct(f) for f in ("<I", "<f", "<H", "<e"))
_FLOAT64_MAX = np.finfo(np.float64).max


# A differentiated call whose scores reach |s| with |s|·eps above this loses its gradients on the routes
# whose backward recomputes the weights from a stored log-sum-exp (the C training route, SDPA's): the lse,
# rounded at |s|, gives weights exp(s − lse) off by |s|·eps relative, and the gradient's dS = P∘(dP − D)
# no longer cancels (measured: bf16 |q|,|k| = 1e4 dv off 1e13 relative; float32 ≥ 1e10 and float64 ≥ 1e10
# NaN). The plain path keeps P itself (the weights of its forward) and stays within the dtype's error.
LSE_PRECISION = 2.0 ** -13


def tops_lose_lse(top_q, top_k, dk: int, scale, eps) -> bool:
    """Whether scores as large as max|q|·max|k|·Dk·|scale| lose the log-sum-exp's precision in a dtype
    of machine epsilon eps (|s|·eps > 2^-13, `LSE_PRECISION`): the rule that sends differentiated torch
    calls to the plain path and the C op's backward to the plain backward. Computed in Python floats
    (no product of the tensors); NaN or inf maxima: False (the value checks answer for those)."""
    if dk == 0 or not (math.isfinite(top_q) and math.isfinite(top_k)):
        return False
    return float(top_q) * float(top_k) * dk * abs(float(scale)) * float(eps) > LSE_PRECISION


def tops_may_overflow(top_q, top_k, dk: int, limit) -> bool:
    """Whether max|q|·max|k|·Dk passes a quarter of `limit` (the working dtype's largest finite value):
    the one overflow rule of every route (the eager route's look, the C op's own under torch.compile).
    NaN or inf maxima: False (the value checks answer for those)."""
    finite = math.isfinite if type(top_q) is float and type(top_k) is float else np.isfinite   # (longdouble's range)
    if dk == 0 or not (finite(top_q) and finite(top_k)):
        return False
    # in Python floats (long double for long double's range): divided first, so the check itself never overflows
    num = float if type(limit) is float else np.longdouble if np.longdouble(limit) > _FLOAT64_MAX else float
    return num(top_q) * (num(top_k) / num(limit)) * dk > 0.25
