"""Reading a Trace for the renderers: which layers, heads and tokens it holds. No attention is computed here.

A single-layer trace holds ``weights`` (H, Tq, Tk) or (Tq, Tk); a whole model holds
``layer {l}/weights`` (H, Tq, Tk) for l = 0 … L−1. Every reader below returns arrays with the
head axis present, (H, Tq, Tk), so the figures and the page handle one shape.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..trace import Trace

__all__ = ["as_heads", "layer_prefixes", "layer_weights", "step_heads", "token_labels"]

_LAYER = re.compile(r"^layer (\d+)/weights$")


def as_heads(value: Any, name: str = "weights") -> np.ndarray:
    """(Tq, Tk) → (1, Tq, Tk); (H, Tq, Tk) unchanged; leading batch dims of size 1 dropped.

    Raises ValueError for a real batch (> 1 sequence): a picture shows one sequence.
    """
    array = np.asarray(value)
    while array.ndim > 3 and array.shape[0] == 1:
        array = array[0]
    if array.ndim == 2:
        array = array[None]
    if array.ndim != 3:
        raise ValueError(f"{name} has shape {tuple(np.shape(value))}; expected (Tq, Tk) or (H, Tq, Tk) "
                         "(record one sequence at a time to draw it)")
    return array


def layer_prefixes(trace: Trace) -> list[str]:
    """Step-name prefixes of the layers, in order: ["layer 0/", "layer 1/", …] or [""] for one layer."""
    found = sorted({int(m.group(1)) for name in trace.names() if (m := _LAYER.match(name))})
    if found:
        return [f"layer {l}/" for l in found]
    if "weights" in trace:
        return [""]
    raise ValueError(f"the trace has no attention weights to draw (no step 'weights' or 'layer 0/weights'); "
                     f"steps: {', '.join(trace.names()) or 'none'}")


def step_heads(trace: Trace, name: str) -> np.ndarray | None:
    """The step ``name`` as (H, Tq, Tk)-style heads-first array, or None when it was not recorded."""
    step = trace.get(name)
    return None if step is None else as_heads(step.value, name)


def layer_weights(trace: Trace) -> np.ndarray:
    """Weights of every layer and head, (L, H, Tq, Tk). Layers must share one shape."""
    stacks = [as_heads(trace[prefix + "weights"].value, prefix + "weights") for prefix in layer_prefixes(trace)]
    shapes = {s.shape for s in stacks}
    if len(shapes) > 1:
        raise ValueError(f"layers have differently shaped weights {sorted(shapes)}; draw them one at a time")
    return np.stack(stacks)


def token_labels(trace_meta: dict, n_queries: int, n_keys: int) -> tuple[list[str], list[str]]:
    """Query-side and key-side token labels from trace.meta (``tokens``, ``key_tokens``), or positions.

    A label list of the wrong length is replaced by positions rather than drawn misaligned.
    """
    def pick(tokens: Any, n: int) -> list[str]:
        if tokens is not None and len(tokens) == n:
            return [str(t) for t in tokens]
        return [str(i) for i in range(n)]

    queries = pick(trace_meta.get("tokens"), n_queries)
    keys = trace_meta.get("key_tokens")
    if keys is None and n_keys == n_queries:
        keys = trace_meta.get("tokens")
    return queries, pick(keys, n_keys)
