"""Activation functions of the MLP: GELU (exact erf and tanh forms), ReLU, SiLU — and erf.

Each takes a NumPy array or a torch tensor and returns the same kind. torch tensors go to torch's
own functions (autograd works); NumPy arrays are computed here, in the dtype they are given
(float32 for speed, float64 for references), and can write into ``out=`` so a model can run them
on cache-sized blocks of rows without allocating. `add_bias_and_activate` is the in-place NumPy
fast path (one C pass for float32 GELU when the extension is built).
"""

from __future__ import annotations

import math
import numpy as np

from ._backend import is_torch

from .kernels import native   # the C extension's in-place float32 GELU (one pass, GIL released), if built

__all__ = ["erf", "gelu", "gelu_tanh", "relu", "silu", "quick_gelu", "add_bias_and_activate", "ACTIVATIONS"]

# Abramowitz & Stegun 7.1.26: erf(a) = 1 − (a1·t + … + a5·t⁵)·exp(−a²), t = 1/(1 + p·a), a ≥ 0,
# absolute error ≤ 1.5e-7 — about one float32 ulp of values near 1, so float32 runs use it.
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_SQRT_HALF = math.sqrt(0.5)
_erf_exact = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, elementwise. float32: A&S 7.1.26 (|error| ≤ 1.5e-7); float64: math.erf."""
    x = np.asarray(x)
    if x.dtype == np.float64:
        return _erf_exact(x).astype(np.float64)
    return np.copysign(1.0 - 2.0 * _erfc_half(np.abs(x)), x)


def _erfc_half(a: np.ndarray) -> np.ndarray:
    """½·erfc(a) for a ≥ 0 (A&S 7.1.26), in a's dtype."""
    t = a * _AS_P
    t += 1.0
    np.reciprocal(t, out=t)
    poly = _horner(t, 1.0)
    square = np.square(a)
    np.negative(square, out=square)
    np.exp(square, out=square)
    poly *= square
    return poly


def _horner(t: np.ndarray, factor: float) -> np.ndarray:
    """factor·½·(a1·t + a2·t² + … + a5·t⁵), evaluated in place in one new array."""
    poly = t * (0.5 * factor * _AS_A[4])
    for coefficient in reversed(_AS_A[:4]):
        poly += 0.5 * factor * coefficient
        poly *= t
    return poly


def gelu(x: np.ndarray, *, out: np.ndarray | None = None, c: bool = True) -> np.ndarray:
    """Exact GELU (BERT's "gelu"): x·Φ(x) = x/2·(1 + erf(x/√2)), elementwise; ``out`` may be x.

    Written as max(x, 0) − |x|·Φ(−|x|), which equals x·Φ(x) for either sign of x, with
    Φ(−a) = ½·erfc(a/√2) from A&S 7.1.26 (|error| ≤ 0.75e-7) in float32: |error of gelu| ≤ |x|·0.75e-7
    plus float32 rounding (measured ≤ 5.3e-7 on [−12, 12], as torch's own float32 gelu).
    float64: math.erf, exact to double precision (a reference, not fast).
    float32 with the C extension: the same formula in one pass (``_fused.gelu``, ~4× faster); c=False
    takes NumPy's passes even there (tests compare the two).
    torch tensors: torch.nn.functional.gelu (``out`` not allowed).
    """
    if is_torch(x):
        return _torch_only(out).gelu(x)
    fused = native.extension() if c else None
    if fused is not None and x.dtype == np.float32 and (out is None or out.flags.c_contiguous):
        if out is None:
            out = np.array(x, dtype=np.float32, order="C")
        elif out is not x:
            out[...] = x
        fused.gelu(out)
        return out
    if x.dtype == np.float64:
        result = 0.5 * x * (1.0 + erf(x * _SQRT_HALF))
        if out is None:
            return result
        out[...] = result
        return out
    magnitude = np.abs(x)
    t = magnitude * (_AS_P * _SQRT_HALF)           # t = 1/(1 + p·|x|/√2)
    t += 1.0
    np.reciprocal(t, out=t)
    tail = _horner(t, 1.0)
    np.multiply(x, x, out=t)                       # exp(−x²/2), reusing t
    t *= -0.5
    np.exp(t, out=t)
    tail *= t                                      # Φ(−|x|)
    tail *= magnitude
    result = np.maximum(x, 0.0, out=out)
    result -= tail
    return result


def gelu_tanh(x: np.ndarray, *, out: np.ndarray | None = None) -> np.ndarray:
    """The tanh form ("gelu_new", "gelu_pytorch_tanh"): x/2·(1 + tanh(√(2/π)·(x + 0.044715·x³)))."""
    if is_torch(x):
        return _torch_only(out).gelu(x, approximate="tanh")
    inner = x * x
    inner *= 0.044715
    inner += 1.0
    inner *= x
    inner *= math.sqrt(2.0 / math.pi)
    np.tanh(inner, out=inner)
    inner += 1.0
    inner *= 0.5
    return np.multiply(x, inner, out=out)


def relu(x, *, out=None):
    """max(x, 0), elementwise."""
    if is_torch(x):
        return _torch_only(out).relu(x)
    return np.maximum(x, 0, out=out)


def silu(x, *, out=None):
    """SiLU (swish): x·σ(x) = x / (1 + exp(−x)), elementwise (the gate of SwiGLU)."""
    if is_torch(x):
        return _torch_only(out).silu(x)
    with np.errstate(over="ignore"):  # exp(−x) = inf for very negative x gives x/inf = −0, as it should
        denominator = np.exp(np.negative(x))
    denominator += 1.0
    return np.divide(x, denominator, out=out)


def quick_gelu(x, *, out=None):
    """The sigmoid approximation of GELU ("quick_gelu", CLIP): x·σ(1.702·x), elementwise."""
    if is_torch(x):
        import torch

        _torch_only(out)
        return x * torch.sigmoid(1.702 * x)
    with np.errstate(over="ignore"):  # exp(+large) = inf gives x/inf = −0, as it should
        denominator = np.exp(np.multiply(x, -1.702))
    denominator += 1.0
    return np.divide(x, denominator, out=out)


def _torch_only(out):
    if out is not None:
        raise ValueError("out= is for NumPy arrays; torch tensors are computed out of place (autograd)")
    import torch.nn.functional

    return torch.nn.functional


def add_bias_and_activate(x: np.ndarray, bias: np.ndarray, activation: str) -> np.ndarray:
    """In place: x (…, F) ← activation(x + bias), bias (F,). float32 "gelu" with the C extension is one pass."""
    fused = native.extension() if activation == "gelu" else None
    if fused is not None and x.dtype == np.float32 and x.flags.c_contiguous and bias.dtype == np.float32:
        fused.gelu(x, bias if bias.flags.writeable else np.array(bias))   # the C side takes a writable buffer
        return x
    x += bias
    return ACTIVATIONS[activation](x, out=x)


# An activation's name (as config.json's "hidden_act" spells it) → the function computing it.
ACTIVATIONS = {"gelu": gelu, "gelu_tanh": gelu_tanh, "gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh,
               "relu": relu, "silu": silu, "swish": silu, "quick_gelu": quick_gelu, "gelu_python": gelu}
