"""The guards of issue 21's routes: every route gives one well-specified answer (no NaN, the same on
each route) — scores past float32's range inside the C op's own body (as torch.compile runs it), per-head
tables with the wrong number of rows refused everywhere, one route through a model's heads."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from overflow_reference import big_inputs, check_against_float64
from qkv.kernels import autograd as ag


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
