"""Masks with several key ranges per row (StreamingLLM's sinks | window, global tokens | window,
prefix-LM | window, their `&` with causal) and per-batch documents take the C routes: one pass per
key range (and batch), merged by the lse (kernels/route.py `range_split`, attention._by_key_ranges).

Expected values: a float64 softmax over masks.dense_mask written here (NumPy), and float64 torch
autograd through the plain path (torch). Tolerances: float32 outputs 2e-6 of values ~1; gradients
2e-5 (as tests/test_backward.py); float64 routes 1e-12.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import qkv
from qkv import masks
from qkv.attention import _attention
from qkv.kernels import RouteName, choose_route
from qkv.kernels.call import check_call
from qkv.kernels.merge import merge_lse

T = 300
IDS = np.stack([np.repeat(np.arange(3), 100), np.repeat(np.arange(5), 60)])   # (B = 2, T), per-batch documents


def _cases():
    return {
        "sinks | window": masks.sinks(4) | masks.sliding_window(40),
        "global tokens | window": masks.global_tokens(8) | masks.sliding_window(20, 20),
        "prefix-LM & window | sinks": masks.prefix_lm(30) & masks.sliding_window(25) | masks.sinks(3),
        "(sinks | window) & causal": (masks.sinks(5) | masks.sliding_window(16, 16)) & masks.causal(),
        "chunks | sinks | window": masks.chunked(70) | masks.sinks(2) | masks.sliding_window(3, 3),
        "per-batch documents": masks.document(IDS),
        "per-batch documents & causal": masks.document(IDS) & masks.causal(),
        "sinks | per-batch documents & window": masks.sinks(6) | masks.document(IDS) & masks.sliding_window(30),
    }


def _allowed(mask_mod, batch, t, causal=False):
    dense = np.stack([masks.dense_mask(mask_mod, t, t, b=b) for b in range(batch)])[:, None]   # (B, 1, T, T)
    if causal:
        dense = dense & np.tri(t, dtype=bool)
    return dense


def _dense_softmax(q, k, v, allowed):
    """float64 attention over a dense boolean mask (rows with no key: 0), written here."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    s = np.where(allowed, s, -np.inf)
    top = np.max(s, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    e = np.exp(s - top)
    total = e.sum(-1, keepdims=True)
    w = e / np.where(total == 0, 1, total)
    lse = np.where(total[..., 0] == 0, -np.inf, top[..., 0] + np.log(np.where(total == 0, 1, total))[..., 0])
    return w @ v, lse


@pytest.mark.parametrize("name", list(_cases()))
def test_range_tables_are_the_masks_exactly(name):
    mask_mod = _cases()[name]
    for t in (1, 37, T):
        table = mask_mod.key_range_table(t, t, 2)
        assert table is not None and table.shape[1] <= 4 and table.shape[-1] == t
        got = np.zeros((table.shape[0], t, t), bool)
        keys = np.arange(t)
        for b in range(table.shape[0]):
            for r in range(table.shape[1]):
                got[b] |= (keys >= table[b, r, 0][:, None]) & (keys < table[b, r, 1][:, None])
        # disjoint: no key counted twice
        counts = sum((table[:, r, 1] - table[:, r, 0]).clip(0) for r in range(table.shape[1]))
        np.testing.assert_array_equal(counts, got.sum(-1))
        np.testing.assert_array_equal(np.broadcast_to(got, (2, t, t)), _allowed(mask_mod, 2, t)[:, 0])


@pytest.mark.parametrize("name", list(_cases()))
@pytest.mark.parametrize("causal", [False, True])
def test_numpy_every_route_matches_float64(name, causal):
    mask_mod = _cases()[name]
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((2, 3, T, 16)) for _ in range(3))
    want_out, want_lse = _dense_softmax(q, k, v, _allowed(mask_mod, 2, T, causal))
    f32 = [x.astype(np.float32) for x in (q, k, v)]
    chosen = choose_route(check_call(*f32, mask_mod=mask_mod, causal=causal), want="lse")
    assert chosen.name == RouteName.FLASH_MANY and chosen.key_rows, chosen.reason
    for route in (None, "flash_many", "flash_rows", "py_walk", "numpy_walk", "plain"):
        out, lse = _attention(*f32, mask_mod=mask_mod, causal=causal, route=route, return_lse=True)
        np.testing.assert_allclose(out, want_out, rtol=0, atol=2e-6, err_msg=str(route))
        np.testing.assert_allclose(lse, want_lse, rtol=0, atol=2e-6, err_msg=str(route))
    for route in (None, "numpy_walk", "plain"):
        out = _attention(q, k, v, mask_mod=mask_mod, causal=causal, route=route)
        np.testing.assert_allclose(out, want_out, rtol=0, atol=1e-12, err_msg=str(route))


@pytest.mark.parametrize("name", ["sinks | window", "global tokens | window", "per-batch documents & causal",
                                  "sinks | per-batch documents & window"])
def test_torch_takes_the_c_route_per_range_with_gradients(name):
    mask_mod = _cases()[name]
    g = torch.Generator().manual_seed(8)
    q, k, v = (torch.randn(2, 4, T, 16, generator=g) for _ in range(3))
    k, v = k[:, :2], v[:, :2]                                             # GQA: 4 query heads, 2 kv heads
    dout, dlse = torch.randn(2, 4, T, 16, generator=g), torch.randn(2, 4, T, generator=g)
    chosen = choose_route(check_call(q, k, v, mask_mod=mask_mod))
    assert chosen.name == RouteName.TORCH_FLASH and chosen.key_rows, chosen.reason
    results = {}
    for route, dtype in ((None, torch.float32), ("plain", torch.float64)):
        leaves = [x.to(dtype).clone().requires_grad_() for x in (q, k, v)]
        out, lse = _attention(*leaves, mask_mod=mask_mod, route=route, return_lse=True)
        (out * dout.to(dtype)).sum().add((torch.where(torch.isinf(lse), 0, lse) * dlse.to(dtype)).sum()).backward()
        results[route] = (out.detach().double(), lse.detach().double(), [x.grad.double() for x in leaves])
    want_out, want_lse, want_grads = results["plain"]
    out, lse, grads = results[None]
    torch.testing.assert_close(out, want_out, rtol=0, atol=2e-6)
    torch.testing.assert_close(lse, want_lse, rtol=0, atol=2e-6)
    for got, want in zip(grads, want_grads):
        torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-5)
    # the NumPy float64 reference agrees with torch's float64 plain path
    np.testing.assert_allclose(want_out.numpy(), _dense_softmax(
        q.double().numpy(), np.repeat(k.double().numpy(), 2, axis=1), np.repeat(v.double().numpy(), 2, axis=1),
        _allowed(mask_mod, 2, T))[0], rtol=0, atol=1e-12)


def test_merge_lse_is_exact_and_has_no_nan_for_empty_rows():
    """merge_lse of two disjoint key sets equals attention over their union; rows empty in both give 0
    and −inf, and torch gradients through it are finite."""
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal((2, 5, 4)) for _ in range(3))
    first = np.zeros((5, 5), bool)
    first[:3, :2] = True
    second = np.zeros((5, 5), bool)
    second[1:4, 3:] = True
    parts = [_dense_softmax(q, k, v, m) for m in (first, second)]
    out, lse = merge_lse(parts)
    want_out, want_lse = _dense_softmax(q, k, v, first | second)
    np.testing.assert_allclose(out, want_out, rtol=0, atol=1e-14)
    np.testing.assert_allclose(lse, want_lse, rtol=0, atol=1e-14)
    assert np.all(out[:, 4] == 0) and np.all(lse[:, 4] == -np.inf)
    leaves = [(torch.from_numpy(o).requires_grad_(), torch.from_numpy(l).requires_grad_()) for o, l in parts]
    out_t, lse_t = merge_lse(leaves)
    (out_t.sum() + torch.where(torch.isinf(lse_t), 0, lse_t).sum()).backward()
    assert all(torch.isfinite(x.grad).all() for pair in leaves for x in pair)


def test_more_ranges_than_a_table_keeps_are_still_exact():
    """Six disjoint bands per row (kv in [q − d − 2, q − d], d = 0, 10, …, 50): more than four ranges, so
    no table; the kernel evaluates the mask per partial block, as before. Still exact on every route."""
    bands = masks.or_masks(*[masks.causal(offset=-d) & masks.sliding_window(d + 2) for d in range(0, 60, 10)])
    assert bands.key_range_table(T, T) is None
    three = masks.or_masks(*[masks.causal(offset=-d) & masks.sliding_window(d + 2) for d in range(0, 30, 10)])
    assert three.key_range_table(T, T).shape == (1, 3, 2, T)
    rng = np.random.default_rng(10)
    q, k, v = (rng.standard_normal((1, 2, T, 8)) for _ in range(3))
    for mask_mod in (bands, three):
        want, _ = _dense_softmax(q, k, v, _allowed(mask_mod, 1, T))
        for route in (None, "flash_rows", "py_walk"):
            out = _attention(*(x.astype(np.float32) for x in (q, k, v)), mask_mod=mask_mod, route=route)
            np.testing.assert_allclose(out, want, rtol=0, atol=2e-6, err_msg=str(route))
