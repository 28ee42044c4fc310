"""The posts' worked examples recomputed in float64 from their own TOML inputs (never qkv's output): the reference
of the tests that check printed or drawn numbers of `qkv example` (the terms view, the page's lenses)."""

from __future__ import annotations

import tomllib
from importlib import resources

import numpy as np


def example_inputs(name: str) -> dict:
    """The shipped example NAME's TOML document."""
    return tomllib.loads(resources.files("qkv.examples").joinpath(f"{name}.toml").read_text(encoding="utf-8"))


def float64_steps(name: str) -> dict:
    """Q and K per head (H, T, Dk), scores, scaled scores and softmax weights (H, Tq, Tk), d_k, the followed query's
    row and the key tokens, each computed in float64 from the example's inputs alone."""
    doc = example_inputs(name)
    x = np.array(doc["x"], dtype=np.float64)
    memory = np.array(doc["memory"], dtype=np.float64) if "memory" in doc else x
    q, k = x @ np.array(doc["w_q"], dtype=np.float64), memory @ np.array(doc["w_k"], dtype=np.float64)
    heads = int(doc.get("heads", 1))
    width = q.shape[1] // heads
    qh = np.stack([q[:, h * width:(h + 1) * width] for h in range(heads)])       # (H, Tq, Dk)
    kh = np.stack([k[:, h * width:(h + 1) * width] for h in range(heads)])       # (H, Tk, Dk)
    scores = np.einsum("hid,hjd->hij", qh, kh)
    scaled = scores / np.sqrt(width)
    e = np.exp(scaled - scaled.max(axis=-1, keepdims=True))
    return {"doc": doc, "q": qh, "k": kh, "scores": scores, "scaled": scaled, "weights": e / e.sum(axis=-1, keepdims=True),
            "dk": width, "query": doc["tokens"].index(doc["query"]), "keys": doc.get("memory_tokens", doc["tokens"])}
