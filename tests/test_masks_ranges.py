"""Masks with several key ranges per row (StreamingLLM's sinks | window, global tokens | window,
prefix-LM | window, their `&` with causal) and per-batch documents take the C routes: one pass per
key range (and batch), merged by the lse (kernels/route.py `range_split`, execute._by_key_ranges).

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
from qkv.kernels import autograd
from qkv.kernels import route as route_module
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
    call = check_call(q, k, v, mask_mod=mask_mod)
    chosen = choose_route(call)
    # several ranges per row: one pass per range (key_rows); one range per row by batch: every batch in
    # one C call, each with its own rows (autograd.row_ranges' per_batch)
    assert chosen.name == RouteName.TORCH_FLASH, chosen.reason
    assert chosen.key_rows or autograd.row_ranges(call, per_batch=True).shape == (2, 2, T)
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


# --------------------------------------------------------------------------- mask arrays that are key ranges
# A boolean mask array whose rows are each one run of keys (key padding, causal + padding) runs as those
# ranges on the C routes (route.choose_call_route → mask_as_ranges → masks.mask_ranges). Expected values:
# the float64 softmax over the mask array itself (_dense_softmax, NumPy) and torch float64 autograd through
# the plain path with the mask array.
TA = 160
LENGTHS = np.array([TA, 97, 0, 1])          # a full row, a padded one, one with no key (zero output), one key


def _array_cases():
    """name → (mask builder (B, H, Tq, Tk) → bool array broadcastable to it, ranges?)."""
    pad = np.arange(TA)[None, :] < LENGTHS[:, None]                          # (B, Tk)
    tri = np.tri(TA, dtype=bool)
    rng = np.random.default_rng(11)
    holes = pad[:, None, None, :].repeat(TA, axis=2).copy()
    holes[1, 0, 5, 3] = False                                                # one hole in one row of one batch
    per_head = np.broadcast_to(pad[:, None, None, :], (4, 3, 1, TA)).copy()
    per_head[0, 1, 0, 7] = False                                             # head 1 of batch 0 differs
    lo = rng.integers(0, TA, (4, 1, TA, 1))
    hi = lo + rng.integers(0, 40, (4, 1, TA, 1))
    keys = np.arange(TA)
    return {
        "key padding (B, 1, 1, Tk)": (pad[:, None, None, :], True),
        "causal + padding (B, 1, Tq, Tk)": (tri[None, None] & pad[:, None, None, :], True),
        "padded queries see nothing (B, 1, Tq, Tk)": (pad[:, None, :, None] & pad[:, None, None, :], True),
        "one window for all (Tq, Tk)": (np.abs(keys[:, None] - keys[None, :]) <= 20, True),
        "random ranges per batch and row": ((keys >= lo) & (keys < hi), True),
        "padding repeated per head (B, H, 1, Tk)": (np.broadcast_to(pad[:, None, None, :], (4, 3, 1, TA)), True),
        "a hole in one row": (holes, False),
        "heads that differ": (per_head, False),
        "strided keys": (np.broadcast_to(keys % 2 == 0, (TA, TA)), False),
    }


def _check_mask_ranges_exact(mask, lead):
    found = masks.mask_ranges(mask, lead, TA, TA)
    full = np.broadcast_to(mask, lead + (TA, TA)).reshape((-1, lead[-1], TA, TA))
    if found is None:
        return None
    lo, hi = found
    keys = np.arange(TA)
    rebuilt = (keys >= lo[:, None, :, None]) & (keys < hi[:, None, :, None])      # (B', 1, Tq, Tk)
    np.testing.assert_array_equal(np.broadcast_to(rebuilt, full.shape), full)
    return found


@pytest.mark.parametrize("name", list(_array_cases()))
def test_mask_ranges_are_the_mask_exactly_or_none(name):
    mask, ranges = _array_cases()[name]
    found = _check_mask_ranges_exact(mask, (4, 3))
    assert (found is not None) == ranges
    if found is not None:
        assert found[0].shape in ((1, TA), (4, TA))
        empty = found[0] == found[1]
        assert np.all(found[0][empty] == 0)          # a row with no key: lo = hi = 0


def test_mask_ranges_on_random_masks():
    """Random run-or-not rows, 2 batch dimensions: mask_ranges rebuilds exactly, or says None exactly when
    some row is not one run (found independently: the row's True positions are consecutive)."""
    rng = np.random.default_rng(12)
    for trial in range(40):
        shape = (2, 3, 1, 5, 9)
        lo = rng.integers(0, 9, shape[:-1] + (1,))
        hi = lo + rng.integers(-1, 6, shape[:-1] + (1,))
        mask = (np.arange(9) >= lo) & (np.arange(9) < hi)
        if trial % 2:
            mask = mask ^ (rng.random(shape) < 0.05)
        found = masks.mask_ranges(mask, (2, 3, 4), 5, 9)
        runs = all(np.all(np.diff(np.flatnonzero(row)) == 1) for row in mask.reshape(-1, 9))
        assert (found is not None) == runs
        if found is not None:
            rebuilt = (np.arange(9) >= found[0][..., None]) & (np.arange(9) < found[1][..., None])  # (B', Tq, Tk)
            np.testing.assert_array_equal(np.broadcast_to(rebuilt.reshape((-1, 1, 5, 9)), (6, 4, 5, 9)),
                                          np.broadcast_to(mask, (2, 3, 4, 5, 9)).reshape(6, 4, 5, 9))


@pytest.mark.parametrize("name", list(_array_cases()))
def test_numpy_mask_arrays_as_ranges_match_float64(name):
    mask, ranges = _array_cases()[name]
    rng = np.random.default_rng(13)
    q, k, v = (rng.standard_normal((4, 3, TA, 8)) for _ in range(3))
    want_out, want_lse = _dense_softmax(q, k, v, mask)
    f32 = [x.astype(np.float32) for x in (q, k, v)]
    call, chosen = route_module.choose_call_route(check_call(*f32, mask), want="lse")
    if ranges:
        assert call.mask is None and chosen.name in (RouteName.FLASH_MANY, RouteName.FLASH_ROWS), chosen.reason
    else:
        assert call.mask is not None
    for route in (None, "flash_many", "flash_rows", "py_walk"):
        out, lse = _attention(*f32, mask, route=route, return_lse=True)
        np.testing.assert_allclose(out, want_out, rtol=0, atol=2e-6, err_msg=str(route))
        np.testing.assert_allclose(lse, want_lse, rtol=0, atol=2e-6, err_msg=str(route))
        assert not np.isnan(out).any()


@pytest.mark.parametrize("name", ["key padding (B, 1, 1, Tk)", "causal + padding (B, 1, Tq, Tk)",
                                  "padded queries see nothing (B, 1, Tq, Tk)", "one window for all (Tq, Tk)",
                                  "a hole in one row", "heads that differ"])
def test_torch_mask_arrays_as_ranges_take_the_c_backward(name):
    mask, ranges = _array_cases()[name]
    g = torch.Generator().manual_seed(14)
    q, k, v = (torch.randn(4, 3, TA, 8, generator=g) for _ in range(3))
    dout = torch.randn(4, 3, TA, 8, generator=g)
    mask_t = torch.from_numpy(np.ascontiguousarray(mask))
    call, chosen = route_module.choose_call_route(check_call(q, k, v, mask_t))
    assert (chosen.name == RouteName.TORCH_FLASH) == ranges, chosen.reason
    results = {}
    for route, dtype in ((None, torch.float32), ("plain", torch.float64)):
        leaves = [x.to(dtype).clone().requires_grad_() for x in (q, k, v)]
        out = _attention(*leaves, mask_t, route=route)
        (out * dout.to(dtype)).sum().backward()
        results[route] = (out.detach().double(), [x.grad.double() for x in leaves])
    (want, want_grads), (got, grads) = results["plain"], results[None]
    torch.testing.assert_close(got, want, rtol=0, atol=2e-6)
    for a, b in zip(grads, want_grads):
        assert torch.isfinite(a).all()
        torch.testing.assert_close(a, b, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(want.numpy(), _dense_softmax(q.double().numpy(), k.double().numpy(),
                                                            v.double().numpy(), mask)[0], rtol=0, atol=1e-12)


def test_mask_array_meets_mask_mod_causal_and_gqa():
    """A padding array ANDed with a catalogue window, causal=True and grouped-query heads, Tq < Tk
    (bottom-right causality): the ranges meet the window; against float64 on NumPy and torch."""
    rng = np.random.default_rng(15)
    tq, tk = 120, TA
    q = rng.standard_normal((4, 4, tq, 8))
    k, v = (rng.standard_normal((4, 2, tk, 8)) for _ in range(2))
    pad = (np.arange(tk)[None, :] < LENGTHS[:, None])[:, None, None, :]
    window = masks.sliding_window(30)
    allowed = pad & masks.dense_mask(window, tq, tk) & (np.arange(tk)[None, :] <= np.arange(tq)[:, None] + tk - tq)
    want, _ = _dense_softmax(q, np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1), allowed)
    f32 = [x.astype(np.float32) for x in (q, k, v)]
    call, chosen = route_module.choose_call_route(check_call(*f32, pad, mask_mod=window, causal=True))
    assert call.mask is None and chosen.key_rows, chosen.reason
    np.testing.assert_allclose(qkv.attention(*f32, pad, mask_mod=window, causal=True), want, rtol=0, atol=2e-6)
    tensors = [torch.from_numpy(x).requires_grad_() for x in f32]
    call, chosen = route_module.choose_call_route(check_call(*tensors, torch.from_numpy(pad), mask_mod=window,
                                                             causal=True))
    assert chosen.name == RouteName.TORCH_FLASH, chosen.reason
    out = qkv.attention(*tensors, torch.from_numpy(pad), mask_mod=window, causal=True)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=0, atol=2e-6)
    out.sum().backward()
    ref = [torch.from_numpy(x).requires_grad_() for x in (q, k, v)]
    _attention(*ref, torch.from_numpy(pad), mask_mod=window, causal=True, route="plain").sum().backward()
    for a, b in zip(tensors, ref):
        torch.testing.assert_close(a.grad.double(), b.grad, rtol=2e-5, atol=2e-5)


def test_short_and_pinned_calls_keep_the_mask_array():
    """Below the C routes' size floor, with the weights asked for, or a pinned route that is not a C one,
    the array is not read as ranges (SDPA / the plain path take it as it is)."""
    pad = torch.from_numpy((np.arange(16)[None, :] < np.array([16, 9])[:, None])[:, None, None, :])
    q = torch.randn(2, 2, 16, 8)
    assert route_module.mask_as_ranges(check_call(q, q, q, pad)) is None
    big = torch.randn(2, 2, TA, 8)
    pad_big = torch.from_numpy((np.arange(TA)[None, :] < np.array([TA, 9])[:, None])[:, None, None, :])
    assert route_module.mask_as_ranges(check_call(big, big, big, pad_big)) is not None
    assert route_module.mask_as_ranges(check_call(big, big, big, pad_big), want="weights") is None
    assert route_module.mask_as_ranges(check_call(big, big, big, pad_big), route="torch_sdpa") is None
    assert route_module.mask_as_ranges(check_call(big.double(), big.double(), big.double(), pad_big)) is None


def test_key_padding_runs_every_batch_in_one_c_call(monkeypatch):
    """One range per row that differs by batch (key padding) is one C forward and one C backward over all
    batches, each batch with its own rows (no torch op between batches; before: a pass per batch)."""
    calls = []
    forward, backward = autograd._forward_tensors, autograd._backward_tensors
    monkeypatch.setattr(autograd, "_forward_tensors", lambda *a: calls.append("f") or forward(*a))
    monkeypatch.setattr(autograd, "_backward_tensors", lambda *a: calls.append("b") or backward(*a))
    pad = torch.from_numpy(_array_cases()["key padding (B, 1, 1, Tk)"][0])
    g = torch.Generator().manual_seed(16)
    leaves = [torch.randn(4, 3, TA, 8, generator=g).requires_grad_() for _ in range(3)]
    qkv.attention(*leaves, pad).sum().backward()
    assert calls == ["f", "b"]
    ref = [x.detach().double().requires_grad_() for x in leaves]
    _attention(*ref, pad, route="plain").sum().backward()
    for a, b in zip(leaves, ref):
        torch.testing.assert_close(a.grad.double(), b.grad, rtol=2e-5, atol=2e-5)
