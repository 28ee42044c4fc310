"""Array-namespace plumbing shared by the core: one place that knows NumPy from torch.

The core is written against the Python array API, so the same functions take NumPy arrays and
torch tensors: NumPy's own namespace where NumPy implements the standard (NumPy ≥ 2.1, array API
2023.12 or later), array-api-compat's wrappers for torch and for older NumPy. This module resolves the namespace,
refuses mixed inputs with a readable message, and handles the low-precision policy
(bfloat16/float16 are computed in float32 and cast back).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import numpy as np

# torch.compile(qkv.attention) traces array-api-compat's type checks (is_numpy_array, is_torch_array,
# is_numpy_namespace), which sit behind functools.lru_cache keyed by the type or namespace: Dynamo
# warns once per check that it ignores the cache. The cached value is a pure function of its key,
# so tracing through it changes nothing; without this filter every compile printed such warnings at
# users. Only that message, where it names array_api_compat (its file or the calling line), is hidden.
warnings.filterwarnings("ignore", message=r"(?s)Dynamo detected a call to a `functools\.lru_cache`-wrapped function"
                                          r".*array_api_compat", category=UserWarning)

__all__ = ["namespace", "is_numpy", "is_torch", "compute_dtype", "to_numpy", "shape_str"]


# array-api-compat is imported on first use, never at `import qkv`: its NumPy namespace
# (array_api_compat.numpy) pulls in numpy.f2py, numpy.testing, numpy.ma and numpy.polynomial,
# ~150 ms that a learner paid for every `qkv` command. Every module of the core reaches it only
# through these functions (same names as array-api-compat's own). The import statement inside each
# costs a dict lookup after the first call, and torch.compile traces it (Dynamo's IMPORT_NAME).
# The two array checks are plain isinstance tests (as array-api-compat's, less the JAX float0 case qkv never
# meets): torch.compile evaluates isinstance on a tensor at once, where array-api-compat's lru_cache-wrapped
# subclass look-up was traced call by call — a quarter of Dynamo's bytecode steps in a compiled qkv.attention
# (measured 7 December: 26 % of 24,779 steps). torch is looked up in sys.modules, never imported here.
def is_numpy_array(x: Any) -> bool:
    return isinstance(x, (np.ndarray, np.generic))


def is_torch_array(x: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def is_numpy_namespace(xp: Any) -> bool:
    import array_api_compat
    return array_api_compat.is_numpy_namespace(xp)


def is_torch_namespace(xp: Any) -> bool:
    import array_api_compat
    return array_api_compat.is_torch_namespace(xp)


def device(x: Any):
    import array_api_compat
    return array_api_compat.device(x)


# NumPy ≥ 2.1 implements the array API (2023.12 and later) in its own namespace; array-api-compat's NumPy
# namespace wraps those same functions and costs more to import than NumPy itself (480 M instructions against
# NumPy's 378 M: `numpy.typing`, `numpy.f2py`, `numpy.testing`, … cloned name by name; 30 % of `qkv example
# self-attention`, issue 29). The core asks only for what the standard names (tests/test_numpy_namespace.py
# runs it through both namespaces and finds the same bits).
NUMPY_IS_STANDARD = getattr(np, "__array_api_version__", "") >= "2023.12"


def array_namespace(*arrays: Any):
    """The namespace of ``arrays`` (None and Python scalars ignored): ``numpy`` itself when every array is a
    NumPy array and NumPy implements the standard, else array-api-compat's (which refuses a mix of kinds)."""
    if NUMPY_IS_STANDARD:
        numpy_seen = False
        for a in arrays:
            if is_numpy_array(a):
                numpy_seen = True
            elif not (a is None or isinstance(a, (bool, int, float, complex))):
                break
        else:
            if numpy_seen:
                return np
    import array_api_compat
    return array_api_compat.array_namespace(*arrays)


def _kind(x: Any) -> str:
    if is_numpy_array(x):
        return "NumPy"
    if is_torch_array(x):
        return "torch"
    return type(x).__name__


def namespace(**arrays: Any):
    """Return the array namespace shared by the given named arrays (None values are ignored).

    Raises TypeError naming the arguments when NumPy arrays and torch tensors are mixed,
    or when an argument is not an array at all.
    """
    present = {name: a for name, a in arrays.items() if a is not None}
    for name, a in present.items():
        if not (is_numpy_array(a) or is_torch_array(a)):
            raise TypeError(f"{name} must be a NumPy array or a torch tensor, got {type(a).__name__}")
    kinds = {name: _kind(a) for name, a in present.items()}
    if len(set(kinds.values())) > 1:
        described = ", ".join(f"{name} is {kind}" for name, kind in kinds.items())
        raise TypeError(f"mixed array types: {described}; convert them to one library first")
    return array_namespace(*present.values())


def is_numpy(x: Any) -> bool:
    return is_numpy_array(x)


def is_torch(x: Any) -> bool:
    return is_torch_array(x)


def compute_dtype(xp, dtype):
    """The dtype arithmetic runs in: float16/bfloat16 are accumulated in float32."""
    if xp.isdtype(dtype, "real floating") and dtype in (xp.float32, xp.float64):
        return dtype
    if xp.isdtype(dtype, "real floating"):  # float16, bfloat16
        return xp.float32
    raise TypeError(f"expected a floating-point array, got dtype {dtype}")


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy/view of x (torch tensors are detached and moved to the CPU)."""
    if is_torch_array(x):
        import torch

        t = x.detach().cpu()
        if t.dtype in (torch.bfloat16, torch.float16):
            t = t.float()
        return t.numpy()
    return np.asarray(x)


def shape_str(shape) -> str:
    """(2, 5, 3) written the way the error messages print shapes."""
    dims = tuple(int(d) if d is not None else "?" for d in shape)
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"
