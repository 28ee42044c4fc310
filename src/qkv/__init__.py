"""qkv: transformer attention, exact and explained.

Multi-head self-attention on 4 tokens of width 8, then the residual:

    >>> import numpy as np, qkv
    >>> x = np.random.default_rng(0).standard_normal((4, 8))
    >>> mha = qkv.MultiHeadAttention.random(8, n_heads=2)
    >>> y = mha(x)                      # self-attention, (4, 8)
    >>> out = qkv.residual(x, y)        # R + Y
"""

from .attention import attention, attention_columns, attention_reference, causal_mask, padding_mask, residual, softmax
from .errors import InputError
from .heads import merge_heads, split_heads
from .mha import HeadWeights, KVCache, MultiHeadAttention
from . import trace as _trace
from .trace import Step, Trace

from ._version import __version__


def _trace_view(trace: Trace) -> str:
    """A Trace in a notebook: the same output as ``qkv.show(trace)`` (imported on first display)."""
    from .notebook import View

    return View(trace).fragment()


_trace.HTML_VIEW = _trace_view

# Imported on first use (``qkv.masks.causal()`` after ``import qkv``); qkv.torch, qkv.distributed and
# qkv.serve need their extras (torch; starlette and uvicorn) only then.
_SUBMODULES = {"kernels", "examples", "explain", "viz", "models", "bench", "spec", "block", "activations",
               "notebook", "masks", "analysis", "torch", "distributed", "translator", "serve", "rope", "frontdoor"}


def __dir__() -> list[str]:
    return sorted(set(globals()) | _SUBMODULES | {"show"})


def __getattr__(name: str):
    """``qkv.models``, ``qkv.masks``, … import on first use, so ``import qkv`` stays light."""
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    if name == "show":      # qkv.show(...): the interactive view in a notebook (qkv.notebook)
        from .notebook import show

        return show
    raise AttributeError(f"module 'qkv' has no attribute {name!r}")

__all__ = [
    "attention", "attention_reference", "attention_columns", "softmax", "causal_mask", "padding_mask",
    "residual", "split_heads", "merge_heads", "MultiHeadAttention", "HeadWeights", "KVCache", "Trace", "Step",
    "InputError", "__version__",
]
