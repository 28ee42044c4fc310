"""Reading a Trace for the renderers (the page and, one way, the figures): which layers, heads and tokens it
holds, by the step names of `qkv.trace` (WEIGHTS, …). No attention is computed here.

A single-layer trace holds ``weights`` (H, Tq, Tk) or (Tq, Tk); a whole model holds
``layer {l}/weights`` (H, Tq, Tk) for l = 0 … L−1. Every reader below returns arrays with the
head axis present, (H, Tq, Tk), so the figures and the page handle one shape.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..trace import K_ROTATED, MODIFIED_SCORES, Q_ROTATED, ROPE_ANGLES, WEIGHTS, Trace

__all__ = ["title_of", "Part", "as_heads", "attention_parts", "layer_prefixes", "layer_weights", "step_heads", "token_labels",
           "ROPE_ANGLES", "Q_ROTATED", "K_ROTATED", "MODIFIED_SCORES", "query_key_steps", "softmax_input"]


def title_of(trace: Trace, lang: str) -> str:
    """The trace's title in ``lang``: a worked example's own (texts ``title.<example>``), a model's from
    what it records (texts ``title.model.*``: model, layer, head), else the title it was recorded with."""
    from . import texts

    info = trace.info
    if info.example and texts.has(lang, f"title.{info.example}"):
        return texts.text(lang, f"title.{info.example}")
    if info.kind == "model" and info.model:
        layer = info.layer
        if layer is None:           # a whole-model trace, or one narrowed to one layer's steps (qkv.show(layer=))
            held = sorted({int(m.group(1)) for name in trace.names() if (m := _LAYER.match(name))})
            if len(held) != 1:
                return texts.text(lang, "title.model.all", model=info.model)
            return texts.text(lang, "title.model.layer", model=info.model, layer=held[0], n=info.n_heads or "?")
        if info.head is None:
            return texts.text(lang, "title.model.layer", model=info.model, layer=info.layer, n=info.n_heads or "?")
        if info.kv_head is not None and info.kv_head != info.head:
            return texts.text(lang, "title.model.kv_head", model=info.model, layer=info.layer, head=info.head,
                              kv=info.kv_head)
        return texts.text(lang, "title.model.head", model=info.model, layer=info.layer, head=info.head)
    return trace.title


def query_key_steps(names) -> tuple[str, str]:
    """The q and k steps the scores were computed from: the rotated ones when RoPE was recorded."""
    names = set(names)
    if Q_ROTATED in names and K_ROTATED in names:
        return Q_ROTATED, K_ROTATED
    return "q_heads", "k_heads"


def softmax_input(names) -> str:
    """The step the softmax read: modified_scores, else biased_scores, else scaled_scores."""
    names = set(names)
    for name in (MODIFIED_SCORES, "biased_scores"):
        if name in names:
            return name
    return "scaled_scores"

_LAYER = re.compile(r"^layer (\d+)/weights$")


def as_heads(value: Any, name: str = WEIGHTS) -> np.ndarray:
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


def as_layers(weights: Any) -> np.ndarray:
    """Weights of every layer and head as float64 (L, H, Tq, Tk); one layer (H, Tq, Tk) gets L = 1."""
    array = np.asarray(weights, dtype=np.float64)
    if array.ndim == 3:
        array = array[None]
    if array.ndim != 4:
        raise ValueError(f"weights has shape {np.shape(weights)}, expected (L, H, Tq, Tk) or (H, Tq, Tk)")
    return array


def layer_prefixes(trace: Trace) -> list[str]:
    """Step-name prefixes of the layers, in order: ["layer 0/", "layer 1/", …] or [""] for one layer."""
    found = sorted({int(m.group(1)) for name in trace.names() if (m := _LAYER.match(name))})
    if found:
        return [f"layer {l}/" for l in found]
    if WEIGHTS in trace:
        return [""]
    raise ValueError(f"the trace has no attention weights to draw (no step 'weights' or 'layer 0/weights'); "
                     f"steps: {', '.join(trace.names()) or 'none'}")


def step_heads(trace: Trace, name: str) -> np.ndarray | None:
    """The step ``name`` as (H, Tq, Tk)-style heads-first array, or None when it was not recorded."""
    step = trace.get(name)
    return None if step is None else as_heads(step.value, name)


def layer_weights(trace: Trace) -> np.ndarray:
    """Weights of every layer and head, (L, H, Tq, Tk). Layers must share one shape."""
    stacks = [as_heads(trace[prefix + WEIGHTS].value, prefix + WEIGHTS) for prefix in layer_prefixes(trace)]
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


# Prefixes that hold weights which are not "queries × keys of one attention": rounded re-runs and
# their drift (by-hand mode), and the column-vector form, whose weights are stored transposed (Tk, Tq).
_SKIP = ("by hand/", "drift/", "columns/")


class Part:
    """One attention computation inside a trace: its step-name prefix, label, tokens and followed query.

    ``q_from`` is the place of query row 0 in the token sequence the trace numbers: 0 where the queries
    are that sequence (self-attention) or a sequence of their own (cross-attention); in a scene whose
    queries are the last tokens of its sentence (the group meeting's one question, lot) it is their
    first place, so query row 0 is shown as the same number as that token ("lot" is token 4, query 4).
    """

    def __init__(self, prefix: str, label: str, q_tokens: list[str], k_tokens: list[str], query: int,
                 q_from: int = 0):
        self.prefix, self.label, self.q_tokens, self.k_tokens, self.query = prefix, label, q_tokens, k_tokens, query
        self.q_from = q_from

    def __repr__(self) -> str:
        return f"Part({self.prefix!r}, {len(self.q_tokens)}×{len(self.k_tokens)})"


def attention_parts(trace: Trace) -> list[Part]:
    """The attention computations a trace holds, in order: the layers of a model (``layer {l}/``), the
    plain single layer (no prefix), or scoped scenes such as ``question/`` (the group meeting of “어텐션이 조모임이라면”,
    whose tokens come from trace.meta["scenes"]). Empty when the trace records no weights."""
    found = sorted({int(m.group(1)) for name in trace.names() if (m := _LAYER.match(name))})
    if found:
        prefixes = [f"layer {l}/" for l in found]
    elif WEIGHTS in trace:
        prefixes = [""]
    else:
        prefixes = []
        for name in trace.names():
            if name.endswith("/" + WEIGHTS) and not name.startswith(_SKIP) and not name.startswith("head "):
                prefix = name[: -len(WEIGHTS)]
                if prefix not in prefixes:
                    prefixes.append(prefix)
    scenes = {str(s.get("name")): s for s in trace.meta.get("scenes", []) if isinstance(s, dict)}
    parts = []
    for prefix in prefixes:
        weights = as_heads(trace[prefix + WEIGHTS].value, prefix + WEIGHTS)
        scene = scenes.get(prefix.rstrip("/"), {})
        meta = dict(trace.meta)
        if scene.get("tokens") is not None:
            meta = {"tokens": scene.get("tokens") if weights.shape[1] == len(scene["tokens"]) else None,
                    "key_tokens": scene["tokens"], "query": scene.get("query")}
        q_tokens, k_tokens = token_labels(meta, weights.shape[1], weights.shape[2])
        if scene and weights.shape[1] == 1 and isinstance(scene.get("query"), str):
            q_tokens = [scene["query"]]           # one followed query: its row is that token
        query = meta.get("query", 0)
        if isinstance(query, str):
            query = q_tokens.index(query) if query in q_tokens else 0
        query = int(query) if isinstance(query, (int, np.integer)) and 0 <= int(query) < weights.shape[1] else 0
        label = prefix.rstrip("/") or (trace.title or "attention")
        scene_tokens = scene.get("tokens") or []
        q_from = len(scene_tokens) - weights.shape[1] if 0 < weights.shape[1] < len(scene_tokens) else 0
        parts.append(Part(prefix, label, q_tokens, k_tokens, query, q_from))
    return parts
