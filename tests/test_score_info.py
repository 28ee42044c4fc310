"""ScoreInfo beside MaskInfo: a score function's attributes (formula, relative, params, broadcasts,
check_shape) are read once per call, by `qkv.masks.read_score`, and every route reads the call's
ScoreInfo instead of probing the function again (the plain path, the C routes' score spec, the kernel)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from qkv.attention import _attention
from qkv.masks import ScoreInfo, read_score, soft_cap

WATCHED = ("formula", "relative", "params", "broadcasts", "check_shape", "block_kinds", "recipe")


class Watched:
    """A relative score function s + 0.1·(kv − q) that writes down each read of a protocol attribute with
    the name of the function that read it."""

    def __init__(self, **attributes):
        object.__setattr__(self, "_attributes", attributes)
        object.__setattr__(self, "reads", [])

    def __call__(self, score, b, h, q_idx, kv_idx):
        return score + 0.1 * (kv_idx - q_idx)

    def __getattribute__(self, name):
        if name in WATCHED:
            object.__getattribute__(self, "reads").append((name, sys._getframe(1).f_code.co_name))
            attributes = object.__getattribute__(self, "_attributes")
            if name in attributes:
                return attributes[name]
            raise AttributeError(name)
        return object.__getattribute__(self, name)


def _reference(q, k, v):
    """float64 softmax(q·kᵀ/√D + 0.1·(kv − q))·v."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    scores = scores + 0.1 * (np.arange(k.shape[-2])[None, :] - np.arange(q.shape[-2])[:, None])
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)) @ v


def _inputs(t, like="numpy"):
    rng = np.random.default_rng(t)
    arrays = [rng.standard_normal((1, 2, t, 8)).astype(np.float32) for _ in range(3)]
    if like == "torch":
        torch = pytest.importorskip("torch")
        arrays = [torch.from_numpy(a) for a in arrays]
    return arrays


CASES = [   # (length, library, route pinned or None): the plain path, the kernel's walks and C routes, torch
    (7, "numpy", None), (300, "numpy", None), (300, "numpy", "py_walk"), (300, "numpy", "flash_rows"),
    (300, "numpy", "numpy_walk"), (7, "torch", None), (300, "torch", None),
]


@pytest.mark.parametrize("declared", [{}, {"formula": "s + 0.1·(kv − q)", "relative": True, "broadcasts": True}],
                         ids=["plain function", "declared relative"])
@pytest.mark.parametrize("t, library, route", CASES)
def test_a_score_function_is_read_once_per_call_by_read_score(t, library, route, declared):
    fn = Watched(**declared)
    q, k, v = _inputs(t, library)
    out = _attention(q, k, v, score_mod=fn, route=route)
    out = out.numpy() if library == "torch" else out
    np.testing.assert_allclose(out, _reference(q, k, v), rtol=2e-5, atol=2e-5)
    readers = {reader for _, reader in fn.reads}
    assert readers <= {"read_score"}, f"read outside read_score: {fn.reads}"
    names = [name for name, _ in fn.reads]
    assert len(names) == len(set(names)), f"an attribute read twice in one call: {fn.reads}"


def test_score_info_of_the_catalogue_and_of_a_function():
    info = read_score(soft_cap(30.0))
    assert isinstance(info, ScoreInfo)
    assert (info.kind, info.params[1], info.relative, info.broadcasts) == ("soft_cap", 30.0, False, True)
    assert not info.catalogue_relative
    plain = read_score(lambda s, b, h, q, kv: s)
    assert (plain.kind, plain.params, plain.relative, plain.broadcasts) == (None, None, False, False)
    assert plain.formula == "score_mod(score, b, h, q, k)"
