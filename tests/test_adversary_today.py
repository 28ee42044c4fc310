"""Adversarial checks of the per-call fast path, mask arrays as key ranges, and one-head views of a layer.

Every expected value comes from an independent float64 computation (NumPy written out here, or torch's
scaled_dot_product_attention in float64), never from qkv's own output."""
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import qkv
from qkv import masks
from qkv.errors import InputError


def _reference(q, k, v, allowed=None, scale=None, bias=None):
    """float64 softmax(q·kᵀ·scale + bias, masked)·v in NumPy; fully masked rows give 0. Returns (out, weights)."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if bias is not None:
        s = s + bias
    if allowed is not None:
        s = np.where(allowed, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    d = e.sum(-1, keepdims=True)
    w = np.where(d > 0, e / np.where(d > 0, d, 1.0), 0.0)
    return w @ v, w


# ---------------------------------------------------------------- 3. one-head views keep head i's things
def _layer(h, g, d=16, score_mod=None, seed=0):
    rng = np.random.default_rng(seed)
    dk = d // h
    return qkv.MultiHeadAttention(rng.standard_normal((d, h * dk)), rng.standard_normal((d, g * dk)),
                                  rng.standard_normal((d, g * dk)), rng.standard_normal((h * dk, d)), h,
                                  n_kv_heads=g, score_mod=score_mod)


def _head_reference(layer, x, i, bias_fn, allowed):
    """Head i's float64 weights computed by hand from the layer's slices: bias_fn(i) (Tq, Tk) added."""
    own = layer.head(i)
    q, k, v = x @ own.w_q, x @ own.w_k, x @ own.w_v
    return _reference(q, k, v, allowed, bias=bias_fn(i))[1]


@pytest.mark.parametrize("kind", ["alibi", "t5", "function", "scoremod_function"])
@pytest.mark.parametrize("groups", [4, 2])
def test_single_head_keeps_its_score_mod(kind, groups):
    h, t = 4, 7
    rel = np.arange(t)[None, :] - np.arange(t)[:, None]                      # kv − q
    slopes = np.array([0.5, 0.25, 0.125, 0.0625])
    table = np.random.default_rng(1).standard_normal((h, 8))
    per_head = np.array([0.3, -0.7, 1.1, 2.0])
    if kind == "alibi":
        mod, bias = masks.alibi(slopes), (lambda i: slopes[i] * rel)
    elif kind == "t5":
        mod = masks.t5_relative_buckets(table, max_distance=16)
        buckets = masks.t5_bucket(rel.astype(np.int64), 8, 16, True)
        bias = lambda i: table[i][buckets]
    elif kind == "function":
        arr = per_head
        mod = lambda s, b, hh, qi, ki: s + arr[hh] * (ki - qi) ** 2 / 10.0
        bias = lambda i: per_head[i] * rel ** 2 / 10.0
    else:
        mod = masks.ScoreMod("squared", "s + c_h (kv−q)²/10",
                             lambda s, b, hh, qi, ki: s + per_head[hh] * (ki - qi) ** 2 / 10.0)
        bias = lambda i: per_head[i] * rel ** 2 / 10.0
    layer = _layer(h, groups, score_mod=mod)
    x = np.random.default_rng(2).standard_normal((t, 16))
    allowed = np.tril(np.ones((t, t), bool))
    _, full = layer(x, causal=True, return_weights=True)
    for i in range(h):
        expected = _head_reference(layer, x, i, bias, allowed)
        np.testing.assert_allclose(full[i], expected, rtol=1e-10, atol=1e-12)         # the full layer
        _, alone = layer.single(i)(x, causal=True, return_weights=True)
        np.testing.assert_allclose(alone[0], expected, rtol=1e-10, atol=1e-12)        # head i alone


def test_single_head_reads_a_per_head_mask_at_its_head():
    h, t = 4, 6
    layer = _layer(h, h)
    rng = np.random.default_rng(3)
    mask = rng.random((2, h, t, t)) < 0.6
    mask[..., 0] = True                                                      # no empty row
    x = rng.standard_normal((2, t, 16))
    y_full, w_full = layer(x, mask=mask, return_weights=True)
    parts = 0
    for i in range(h):
        own = layer.head(i)
        _, expected = _reference(x @ own.w_q, x @ own.w_k, x @ own.w_v, mask[:, i])
        np.testing.assert_allclose(w_full[:, i], expected, rtol=1e-10, atol=1e-12)
        y, alone = layer.single(i)(x, mask=mask, return_weights=True)
        np.testing.assert_allclose(alone[:, 0], expected, rtol=1e-10, atol=1e-12)
        parts = parts + y
    np.testing.assert_allclose(parts, y_full, rtol=1e-10, atol=1e-10)        # the heads' shares sum to y


def test_single_head_torch_alibi_matches_float64():
    h, t = 4, 5
    layer = _layer(h, 2, score_mod=masks.alibi(h))
    tl = qkv.MultiHeadAttention(*(torch.from_numpy(a) for a in (layer.w_q, layer.w_k, layer.w_v, layer.w_o)), h,
                                n_kv_heads=2, score_mod=masks.alibi(h))
    x = np.random.default_rng(4).standard_normal((t, 16))
    rel = np.arange(t)[None, :] - np.arange(t)[:, None]
    slopes = masks.alibi_slopes(h)
    for i in range(h):
        expected = _head_reference(layer, x, i, lambda j: slopes[j] * rel, np.tril(np.ones((t, t), bool)))
        _, alone = tl.single(i)(torch.from_numpy(x), causal=True, return_weights=True)
        np.testing.assert_allclose(alone[0].numpy(), expected, rtol=1e-10, atol=1e-12)
