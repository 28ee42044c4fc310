"""Scores past the float range, checked against float64 torch autograd: shared by the eager test
(tests/test_attention.py), the compiled one (tests/test_attention_compile.py) and the op's own
(tests/test_guards.py)."""

from __future__ import annotations

import numpy as np
import torch


def big_inputs(dtype: str, grow: float, shape, seed: int = 0, kv_shape=None):
    """q, k, v leaves of `dtype` (q and k standard normal times `grow`, v standard normal; k and v of
    kv_shape, default q's) and a dout of the output's shape (…, Tq, Dv = Dk)."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(shape)
    k, v = (rng.standard_normal(kv_shape or shape) for _ in range(2))
    work = getattr(torch, dtype)
    leaves = [torch.tensor(x, dtype=work, requires_grad=True) for x in (q * grow, k * grow, v)]
    return leaves, torch.tensor(rng.standard_normal(shape), dtype=work)


def check_against_float64(out, leaves, dout, allowed, scale: float, dtype: str):
    """out = attention(*leaves) (already computed, not yet differentiated) against float64 autograd on
    the values the leaves hold: softmax(q·kᵀ·scale, masked by `allowed` (…, Tq, Tk) bool or None)·v.
    Output within the dtype's tolerance, no NaN or inf; each gradient against its own size bound
    (|dS| ≤ 2·|dout|·|v| per weight: dq ≲ |dout|·|v|·|k|·Tk·scale, dk ≲ |dout|·|v|·|q|·Tk·scale,
    dv ≲ |dout|·Tk), since the low-precision routes round P and dP at that size."""
    q, k, v = leaves
    q64, k64, v64 = (x.detach().double().requires_grad_() for x in leaves)
    scores = q64 @ k64.transpose(-1, -2) * scale
    if allowed is not None:
        scores = scores.masked_fill(~allowed, -torch.inf)
    expected = torch.softmax(scores, dim=-1) @ v64
    (out * dout).sum().backward()
    (expected * dout.double()).sum().backward()
    tol = {"float32": 1e-4, "float16": 2e-2, "bfloat16": 5e-2}[dtype]
    assert torch.isfinite(out).all()
    np.testing.assert_allclose(out.detach().double().numpy(), expected.detach().numpy(), rtol=tol, atol=tol)
    tk = k.shape[-2]
    top = lambda x: float(x.detach().abs().max())   # noqa: E731
    bounds = {"q": top(dout) * top(v64) * top(k64) * tk * scale, "k": top(dout) * top(v64) * top(q64) * tk * scale,
              "v": top(dout) * tk}
    for name, mine, ref in (("q", q, q64), ("k", k, k64), ("v", v, v64)):
        assert mine.grad is not None and torch.isfinite(mine.grad).all(), name
        np.testing.assert_allclose(mine.grad.double().numpy() / bounds[name], ref.grad.numpy() / bounds[name],
                                   atol=tol * 1e-2, err_msg=name)
