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
    if dtype == "float64":   # float64 scores past its own range: the reference in longdouble, by hand
        return _check_against_longdouble(out, leaves, dout, allowed, scale)
    q64, k64, v64 = (x.detach().double().requires_grad_() for x in leaves)
    scores = q64 @ k64.transpose(-1, -2) * scale
    if allowed is not None:
        scores = scores.masked_fill(~allowed, -torch.inf)
    expected = torch.softmax(scores, dim=-1) @ v64
    (out * dout).sum().backward()
    (expected * dout.double()).sum().backward()
    tol = {"float64": 1e-10, "float32": 1e-4, "float16": 2e-2, "bfloat16": 5e-2}[dtype]
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


def _check_against_longdouble(out, leaves, dout, allowed, scale: float):
    """check_against_float64 for float64 leaves: the forward and FlashAttention's gradient formulas in
    NumPy longdouble (x87: exponents to ±4932, so q·kᵀ fits): P = softmax(s), dP = dout·vᵀ,
    dS = P∘(dP − rowsum(P∘dP)), dq = dS·k·scale, dk = dSᵀ·q·scale, dv = Pᵀ·dout."""
    assert np.finfo(np.longdouble).maxexp >= 16384, "needs an extended longdouble"
    q, k, v = (x.detach().numpy().astype(np.longdouble) for x in leaves)
    g = dout.numpy().astype(np.longdouble)
    s = q @ np.swapaxes(k, -1, -2) * np.longdouble(scale)
    if allowed is not None:
        s = np.where(allowed.numpy(), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    d_p = g @ np.swapaxes(v, -1, -2)
    d_s = p * (d_p - (p * d_p).sum(-1, keepdims=True))
    expected = {"q": d_s @ k * np.longdouble(scale), "k": np.swapaxes(d_s, -1, -2) @ q * np.longdouble(scale),
                "v": np.swapaxes(p, -1, -2) @ g}
    (out * dout).sum().backward()
    assert torch.isfinite(out).all()
    np.testing.assert_allclose(out.detach().numpy(), (p @ v).astype(np.float64), rtol=1e-10, atol=1e-10)
    for name, mine in zip("qkv", leaves):
        assert mine.grad is not None and torch.isfinite(mine.grad).all(), name
        bound = max(float(np.abs(expected[name]).max()), 1.0)
        np.testing.assert_allclose(mine.grad.numpy() / bound, (expected[name] / bound).astype(np.float64),
                                   rtol=0, atol=1e-10, err_msg=name)
