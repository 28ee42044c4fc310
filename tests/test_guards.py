"""The guards of issue 21's routes: every route gives one well-specified answer (no NaN, the same on
each route) — scores past float32's range inside the C op's own body (as torch.compile runs it), per-head
tables with the wrong number of rows refused everywhere, one route through a model's heads."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from overflow_reference import big_inputs, check_against_float64
from qkv.kernels import autograd as ag
from qkv.kernels import execute


# ---------------------------------------------------------------- scores past float32's range, in the op
def _rows(t: int, window: int | None):
    """(2, T) int64 key ranges: causal, or causal within `window` keys; and their (T, T) boolean mask."""
    i = np.arange(t)
    lo = np.zeros(t, np.int64) if window is None else np.maximum(i - window + 1, 0)
    rows = np.stack([lo, i + 1]).astype(np.int64)
    j = np.arange(t)
    return torch.from_numpy(rows), torch.from_numpy((j >= rows[0][:, None]) & (j < rows[1][:, None]))


@pytest.mark.parametrize("t, window", [(40, None), (300, 64)])
@pytest.mark.parametrize("grow", [1e19, 1.0])
def test_the_c_op_computes_scores_past_float32s_range_as_the_eager_route_does(t, window, grow):
    """torch.ops.qkv.flash_attention's body runs eagerly, with the real tensors, even inside a compiled
    graph: it asks the eager route's overflow look (max|q|·max|k|·Dk against float32's range) and such
    calls take the plain path, which shifts q and k by exact powers of two; its backward op follows.
    GQA (4 query heads on 2 kv heads), causal and a window; out and gradients against float64 autograd.
    (Before: the C kernel gave inf scores and NaN weights.) grow 1: ordinary values stay on the C passes."""
    assert ag.available()   # (the C extension and its sgemm, as the route makes sure before it picks the op)
    op = ag.op()
    leaves, dout = big_inputs("float32", grow, (2, 2, t, 16), seed=t, kv_shape=(2, 1, t, 16))
    rows, allowed = _rows(t, window)
    q, k, v = leaves
    calls = []
    real = ag._forward_tensors
    try:
        ag._forward_tensors = lambda *a: calls.append(1) or real(*a)
        out, lse = op(q.reshape(4, t, 16), k.reshape(2, t, 16), v.reshape(2, t, 16), rows, 0.25, 128, 128)
    finally:
        ag._forward_tensors = real
    assert bool(calls) == (grow == 1.0)          # the C forward only for values that fit
    # lse: float64's wherever that fits float32, +inf (its rounding) elsewhere; never NaN or −inf (empty)
    scores = q.detach().double() @ k.detach().double().transpose(-1, -2) * 0.25
    expected = torch.logsumexp(scores.masked_fill(~allowed, -torch.inf), dim=-1).reshape(4, t)
    fits = expected.abs() < torch.finfo(torch.float32).max
    torch.testing.assert_close(lse.detach().double()[fits], expected[fits], rtol=1e-6, atol=1e-5)
    assert (lse[~fits] == torch.inf).all()
    check_against_float64(out.reshape(2, 2, t, 16), leaves, dout, allowed, 0.25, "float32")


# ---------------------------------------------------------------- per-head tables: exactly one row per head
def _tables(rows: int):
    """The catalogue's per-head score functions with `rows` rows: (argument name, score_mod)."""
    rng = np.random.default_rng(rows)
    return [("slopes", __import__("qkv").masks.alibi(rng.uniform(0.1, 1.0, rows))),
            ("table", __import__("qkv").masks.t5_relative_buckets(rng.standard_normal((rows, 8)), num_buckets=8))]


def _each_route(heads: int, kv_heads: int):
    """(name, q, k, v) for a call of `heads` query heads on `kv_heads` kv heads on each route: NumPy
    short (plain path) and long float32 (the C kernel), torch short and long float32 (the C op)."""
    rng = np.random.default_rng(heads * 10 + kv_heads)
    out = []
    for name, t, torch_ in (("numpy short", 9, False), ("numpy long", 200, False), ("torch short", 9, True),
                            ("torch long", 200, True)):
        q = rng.standard_normal((2, heads, t, 8)).astype(np.float32)
        k, v = (rng.standard_normal((2, kv_heads, t, 8)).astype(np.float32) for _ in range(2))
        if torch_:
            q, k, v = (torch.from_numpy(x) for x in (q, k, v))
        out.append((name, q, k, v))
    return out


@pytest.mark.parametrize("heads, kv_heads", [(3, 3), (4, 2)])   # (4, 2): GQA, the table is per query head
@pytest.mark.parametrize("extra", [1, 3])
def test_a_per_head_table_with_more_rows_than_heads_is_refused_on_every_route(heads, kv_heads, extra):
    """ALiBi's slopes or T5's table with H + extra rows (more than the call's H query heads) were read
    as if their first H rows were the call's: now one InputError naming the argument, its shape, its
    number of rows and H, in English and in Korean, before any route runs. H rows still work."""
    from qkv import attention
    from qkv.errors import InputError

    for (arg, wrong), (_, right) in zip(_tables(heads + extra), _tables(heads)):
        for route, q, k, v in _each_route(heads, kv_heads):
            with pytest.raises(InputError) as refused:
                attention(q, k, v, causal=True, score_mod=wrong)
            rows = heads + extra
            message = str(refused.value)
            assert message.startswith(f"{arg} has shape ({rows}") and f"first axis is {rows}" in message, route
            assert f"has H = {heads}" in message, route
            korean = refused.value.say("ko")
            assert korean.startswith(f"{arg}의 형태 ({rows}") and f"헤드가 {rows}개" in korean, route
            assert f"헤드는 {heads}개다" in korean, route
            assert attention(q, k, v, causal=True, score_mod=right).shape == q.shape, route


@pytest.mark.parametrize("score", ["alibi", "t5"])
def test_one_head_of_a_layer_keeps_its_row_and_a_wrong_table_is_refused_as_the_layers(score):
    """MultiHeadAttention.single(i) keeps row i of an H-row table (its output is head i's share of the
    layer's, float64); a table of H + 1 rows is refused by the layer and by each head alone, with the
    same message (the layer's H, not 1)."""
    from qkv import MultiHeadAttention, masks
    from qkv.errors import InputError

    rng = np.random.default_rng(7)
    d, heads = 12, 3

    def layer(rows):
        table = rng.uniform(0.1, 1.0, rows) if score == "alibi" else rng.standard_normal((rows, 8))
        mod = masks.alibi(table) if score == "alibi" else masks.t5_relative_buckets(table, num_buckets=8)
        w = [rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(4)]
        return MultiHeadAttention(*w, heads, score_mod=mod)

    x = rng.standard_normal((2, 7, d))
    good = layer(heads)
    q, k, v = good.project(x)
    expected = __import__("qkv").attention(q, k, v, causal=True, score_mod=good.score_mod)   # (2, H, 7, Dh)
    dh = d // heads
    for i in range(heads):
        alone = good.single(i)
        # head i's share of y: its heads' output times its rows of W_O
        want = expected[:, i] @ good.w_o[i * dh:(i + 1) * dh]
        np.testing.assert_allclose(alone(x, causal=True), want, rtol=1e-12, atol=1e-12)
    bad = layer(heads + 1)
    with pytest.raises(InputError) as refused:
        bad(x)
    for i in (0, heads - 1):
        with pytest.raises(InputError) as alone:
            bad.single(i)(x)
        assert str(alone.value) == str(refused.value) and f"has H = {heads}" in str(alone.value)


# ---------------------------------------------------------------- one route through a layer's heads
def _spy_single(monkeypatch):
    """Counts MultiHeadAttention.single(i) calls (the one way to run one head of a layer)."""
    from qkv.mha import MultiHeadAttention

    calls = []
    real = MultiHeadAttention.single
    monkeypatch.setattr(MultiHeadAttention, "single", lambda self, i: calls.append(i) or real(self, i))
    return calls


@pytest.mark.parametrize("memory, causal, with_w_o", [(False, True, True), (True, False, True), (False, False, False)])
def test_an_examples_heads_alone_run_through_single_and_equal_the_layers_head_slices(monkeypatch, memory,
                                                                                      causal, with_w_o):
    """examples/runner.py runs each head alone through MultiHeadAttention.single(i): head i's out equals
    an independent float64 computation of head i (its column slices, biases, mask, cross-attention) and
    the fused layer's head slice; its share of y is out_i·W_O's rows of head i."""
    from qkv.examples.runner import trace_spec
    from qkv.spec import Spec

    calls = _spy_single(monkeypatch)
    rng = np.random.default_rng(11)
    tq, tk, d, heads, dh = 4, 5 if memory else 4, 6, 3, 2
    x = rng.standard_normal((tq, d))
    mem = rng.standard_normal((tk, d)) if memory else None
    w_q, w_k, w_v = (rng.standard_normal((d, heads * dh)) for _ in range(3))
    w_o = rng.standard_normal((heads * dh, d)) if with_w_o else None
    biases = {n: rng.standard_normal(heads * dh) for n in ("b_q", "b_k", "b_v")}
    mask = None if causal else rng.random((tq, tk)) < 0.7
    if mask is not None:
        mask[:, 0] = True
    spec = Spec(source="test", tokens=[f"t{i}" for i in range(tq)], x=x, w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o,
                heads=heads, memory=mem, memory_tokens=None if mem is None else [f"m{i}" for i in range(tk)],
                mask=mask, causal=causal, biases=biases)
    trace = trace_spec(spec)
    assert calls == list(range(heads))
    source = x if mem is None else mem
    allowed = np.tril(np.ones((tq, tk), bool)) if causal else (np.ones((tq, tk), bool) if mask is None else mask)
    for i in range(heads):
        cols = slice(i * dh, (i + 1) * dh)
        q = x @ w_q[:, cols] + biases["b_q"][cols]
        k = source @ w_k[:, cols] + biases["b_k"][cols]
        v = source @ w_v[:, cols] + biases["b_v"][cols]
        s = np.where(allowed, q @ k.T / np.sqrt(dh), -np.inf)
        w = np.exp(s - s.max(1, keepdims=True))
        expected = (w / w.sum(1, keepdims=True)) @ v
        alone = trace[f"head {i + 1}/out"].value[0]
        np.testing.assert_allclose(alone, expected, rtol=0, atol=1e-13)
        np.testing.assert_allclose(alone, trace["out"].value[i], rtol=0, atol=1e-13)
        if with_w_o:
            np.testing.assert_allclose(trace[f"head {i + 1}/y"].value, expected @ w_o[cols], rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype, grow", [("float32", 1e19), ("bfloat16", 1e19), ("float16", 40.0)])
def test_the_dropin_modules_op_keeps_scores_past_the_float_range_finite(dtype, grow):
    """qkv::mha_attention (the torch drop-in's op under torch.compile; its body runs eagerly on the real
    tensors) and its backward op: q·kᵀ past the dtype's range takes the plain path's exact shift inside
    them, as eager calls do; output and gradients against float64 autograd."""
    import qkv.torch.mha  # noqa: F401  (registers the op)

    leaves, dout = big_inputs(dtype, grow, (2, 2, 40, 16), seed=3)
    heads, _ = torch.ops.qkv.mha_attention(*leaves, None, None, None, False)
    check_against_float64(heads, leaves, dout, None, 0.25, dtype)


def test_the_pinned_c_training_route_refuses_scores_past_float32s_range():
    """kernels.autograd.flash_attention (the C training route alone: tests, benchmarks) ran the kernel on
    q·kᵀ past float32's range (NaN out); it now refuses, naming why, as it refuses non-finite values;
    qkv.attention's own route takes the plain path for the same call (finite, as float64 says)."""
    import qkv

    leaves, dout = big_inputs("float32", 1e19, (1, 2, 100, 16), seed=5)
    with pytest.raises(ValueError, match=r"\|q\|·\|k\|·Dk near float32's range"):
        execute.flash_attention(*leaves, causal=True)
    out = qkv.attention(*leaves, causal=True)
    check_against_float64(out, leaves, dout, torch.ones(100, 100, dtype=torch.bool).tril(), 0.25, "float32")
