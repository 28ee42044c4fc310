"""qkv.attention, softmax and masks against torch's scaled_dot_product_attention and a float64 oracle."""

from __future__ import annotations

import importlib
import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import qkv
from qkv.attention import attention_reference

rng = np.random.default_rng(1234)


def randn(*shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def oracle_by_loops(q, k, v, allowed=None, scale=None, bias=None):
    """Float64 attention written independently: explicit loops over rows, math.exp."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    *lead, tq, dk = q.shape
    tk, dv = k.shape[-2], v.shape[-1]
    scale = 1 / math.sqrt(dk) if scale is None else scale
    lead = np.broadcast_shapes(tuple(lead), k.shape[:-2])
    q, k, v = (np.broadcast_to(a, lead + a.shape[-2:]) for a in (q, k, v))
    allowed = np.ones(lead + (tq, tk), bool) if allowed is None else np.broadcast_to(allowed, lead + (tq, tk))
    bias = np.zeros(lead + (tq, tk)) if bias is None else np.broadcast_to(bias, lead + (tq, tk))
    out = np.zeros(lead + (tq, dv))
    weights = np.zeros(lead + (tq, tk))
    for idx in np.ndindex(*lead):
        for i in range(tq):
            keys = [j for j in range(tk) if allowed[idx][i, j] and bias[idx][i, j] != -np.inf]
            if not keys:
                continue
            s = {j: float(q[idx][i] @ k[idx][j]) * scale + bias[idx][i, j] for j in keys}
            top = max(s.values())
            e = {j: math.exp(s[j] - top) for j in keys}
            total = sum(e.values())
            for j in keys:
                weights[idx][i, j] = e[j] / total
                out[idx][i] += weights[idx][i, j] * v[idx][j]
    return out, weights


def oracle(q, k, v, allowed=None, scale=None, bias=None):
    """The same float64 attention as oracle_by_loops, whole arrays at a time (NumPy's float64 matmul, exp and
    sums, written here, independently of qkv): each row's keys are those allowed whose bias is not −inf, softmax
    over them with the row's maximum subtracted, a row with none gives zeros. The loops cost seconds at
    T = 300 (~2/3 of this file's time in make check); test_oracle_is_the_loop_oracle checks that the two agree."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    *lead, tq, dk = q.shape
    tk = k.shape[-2]
    scale = 1 / math.sqrt(dk) if scale is None else scale
    lead = np.broadcast_shapes(tuple(lead), k.shape[:-2])
    q, k, v = (np.broadcast_to(a, lead + a.shape[-2:]) for a in (q, k, v))
    allowed = np.ones(lead + (tq, tk), bool) if allowed is None else np.broadcast_to(allowed, lead + (tq, tk))
    bias = np.zeros(lead + (tq, tk)) if bias is None else np.broadcast_to(bias, lead + (tq, tk))
    keys = allowed & (bias != -np.inf)
    scores = np.where(keys, (q @ np.swapaxes(k, -1, -2)) * scale + np.where(keys, bias, 0), -np.inf)
    top = scores.max(axis=-1, keepdims=True)                                    # −inf for a row with no key
    e = np.where(keys, np.exp(scores - np.where(np.isfinite(top), top, 0)), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    weights = e / np.where(total > 0, total, 1)
    return weights @ v, weights


def bottom_right(tq, tk):
    return np.tril(np.ones((tq, tk), bool), k=tk - tq)


def sdpa(q, k, v, mask=None, **kw):
    t = [torch.from_numpy(np.ascontiguousarray(a)) for a in (q, k, v)]
    m = None if mask is None else torch.from_numpy(np.ascontiguousarray(mask))
    return F.scaled_dot_product_attention(*t, attn_mask=m, **kw).numpy()


# ---------------------------------------------------------------- parity with torch
@pytest.mark.parametrize("tq,tk", [(1, 1), (7, 7), (129, 129), (7, 129), (129, 7), (1, 129)])
@pytest.mark.parametrize("dk,dv", [(5, 5), (5, 3), (8, 16)])
def test_matches_torch_sdpa_float64(tq, tk, dk, dv):
    q, k, v = randn(2, 3, tq, dk), randn(2, 3, tk, dk), randn(2, 3, tk, dv)
    np.testing.assert_allclose(qkv.attention(q, k, v), sdpa(q, k, v), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(attention_reference(q, k, v), sdpa(q, k, v), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("tq,tk", [(7, 7), (129, 129), (7, 129), (5, 12)])
def test_causal_matches_torch_with_bottom_right_mask(tq, tk):
    q, k, v = randn(1, 2, tq, 5), randn(1, 2, tk, 5), randn(1, 2, tk, 5)
    expected = sdpa(q, k, v, bottom_right(tq, tk))
    np.testing.assert_allclose(qkv.attention(q, k, v, causal=True), expected, rtol=1e-12, atol=1e-12)
    if tq == tk:  # torch's is_causal is the same thing when the matrix is square
        np.testing.assert_allclose(qkv.attention(q, k, v, causal=True), sdpa(q, k, v, is_causal=True),
                                   rtol=1e-12, atol=1e-12)


def test_causal_mask_bottom_right_drawing():
    expected = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool)  # 2 new queries after 2 cached keys
    np.testing.assert_array_equal(qkv.causal_mask(2, 4), expected)
    np.testing.assert_array_equal(qkv.causal_mask(3), np.tril(np.ones((3, 3), bool)))
    # more queries than keys: the first queries see nothing
    np.testing.assert_array_equal(qkv.causal_mask(3, 2), [[0, 0], [1, 0], [1, 1]])


def test_scale_and_boolean_mask_match_torch():
    q, k, v = randn(2, 4, 7, 5), randn(2, 4, 9, 5), randn(2, 4, 9, 6)
    mask = rng.random((2, 1, 7, 9)) > 0.3
    mask[..., 0] = True  # every row keeps a key (torch gives NaN otherwise)
    np.testing.assert_allclose(qkv.attention(q, k, v, mask, scale=0.37), sdpa(q, k, v, mask, scale=0.37),
                               rtol=1e-12, atol=1e-12)


def test_bias_matches_torch_float_mask():
    q, k, v = randn(3, 7, 5), randn(3, 9, 5), randn(3, 9, 5)
    bias = randn(3, 7, 9)
    np.testing.assert_allclose(qkv.attention(q, k, v, bias=bias), sdpa(q, k, v, bias), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("h,g", [(6, 2), (6, 1), (4, 4), (8, 2)])
def test_gqa_matches_torch_enable_gqa(h, g):
    q, k, v = randn(2, h, 7, 5), randn(2, g, 11, 5), randn(2, g, 11, 3)
    expected = sdpa(q, k, v, bottom_right(7, 11), enable_gqa=True)
    np.testing.assert_allclose(qkv.attention(q, k, v, causal=True), expected, rtol=1e-12, atol=1e-12)
    out, weights = qkv.attention(q, k, v, causal=True, return_weights=True)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    assert weights.shape == (2, h, 7, 11)
    # head i reads kv head i // (h // g)
    for i in range(h):
        np.testing.assert_allclose(out[:, i], oracle(q[:, i], k[:, i // (h // g)], v[:, i // (h // g)],
                                                     bottom_right(7, 11))[0], rtol=1e-12, atol=1e-12)


def test_matches_oracle_with_weights_mask_bias_and_broadcasting():
    q, k, v = randn(2, 3, 6, 4), randn(1, 3, 8, 4), randn(1, 3, 8, 2)
    mask = rng.random((6, 8)) > 0.5
    bias = randn(3, 1, 8)
    bias[0, 0, 2] = -np.inf
    out, weights = qkv.attention(q, k, v, mask, bias=bias, return_weights=True)
    ref_out, ref_w = oracle(q, k, v, mask, bias=bias)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights, ref_w, rtol=1e-12, atol=1e-12)


def test_float32_close_to_float64_reference():
    q, k, v = randn(2, 4, 129, 5), randn(2, 4, 129, 5), randn(2, 4, 129, 5)
    exact, _ = oracle(q, k, v, bottom_right(129, 129))
    got = qkv.attention(*(a.astype(np.float32) for a in (q, k, v)), causal=True)
    assert got.dtype == np.float32
    # float32 inputs are themselves rounded (relative 6e-8); a few ulps of accumulation on top.
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-6)


# ---------------------------------------------------------------- masks and no-NaN guarantees
def test_fully_masked_rows_are_zero_not_nan():
    q, k, v = randn(2, 5, 4), randn(2, 6, 4), randn(2, 6, 3)
    mask = np.ones((2, 5, 6), bool)
    mask[0, 2] = False
    mask[1, :] = False
    for path in (qkv.attention, attention_reference):
        out = path(q, k, v, mask)
        assert np.all(np.isfinite(out))
        np.testing.assert_array_equal(out[0, 2], 0)
        np.testing.assert_array_equal(out[1], 0)
    out, weights = qkv.attention(q, k, v, mask, return_weights=True)
    np.testing.assert_array_equal(weights[1], 0)
    np.testing.assert_allclose(weights[0].sum(-1), [1, 1, 0, 1, 1])


def test_padding_mask_shapes_and_values():
    m = qkv.padding_mask(np.array([3, 0, 5]), 5)
    assert m.shape == (3, 1, 1, 5) and m.dtype == bool
    np.testing.assert_array_equal(m[:, 0, 0], [[1, 1, 1, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]])
    with pytest.raises(ValueError, match="lengths must lie in"):
        qkv.padding_mask(np.array([6]), 5)
    with pytest.raises(ValueError, match="1-D array of integers"):
        qkv.padding_mask(np.array([[1.5]]), 5)


def test_huge_scores_stay_finite_and_exact():
    q = np.array([[1e4, 0.0], [-1e4, 0.0]])
    k = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    v = np.eye(3)
    out, weights = qkv.attention(q, k, v, scale=1.0, return_weights=True)
    np.testing.assert_array_equal(weights, [[1, 0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(out, [[1, 0, 0], [0, 0, 1]])


def test_softmax_by_hand():
    s = np.array([1.0, 2.0, 3.0])
    e = np.exp([1.0, 2.0, 3.0])
    np.testing.assert_allclose(qkv.softmax(s), e / e.sum(), rtol=1e-15)
    np.testing.assert_allclose(qkv.softmax(s, np.array([True, False, True])),
                               [e[0] / (e[0] + e[2]), 0, e[2] / (e[0] + e[2])], rtol=1e-15)
    np.testing.assert_array_equal(qkv.softmax(s, np.zeros(3, bool)), [0, 0, 0])


def test_empty_sequences():
    out = qkv.attention(randn(2, 0, 4), randn(2, 5, 4), randn(2, 5, 3))
    assert out.shape == (2, 0, 3)
    out, weights = qkv.attention(randn(2, 3, 4), randn(2, 0, 4), randn(2, 0, 3), return_weights=True)
    assert out.shape == (2, 3, 3) and weights.shape == (2, 3, 0)
    np.testing.assert_array_equal(out, 0)
    t_out = qkv.attention(*(torch.zeros(1, 3, 0, 4),) * 2, torch.zeros(1, 3, 0, 2))
    assert tuple(t_out.shape) == (1, 3, 0, 2)


# ---------------------------------------------------------------- torch tensors through qkv
def test_torch_inputs_dispatch_and_keep_semantics():
    q, k, v = (torch.randn(2, 6, 7, 5, dtype=torch.float64) for _ in range(3))
    mask = torch.ones(7, 7, dtype=torch.bool)
    mask[3] = False  # one fully masked row
    out = qkv.attention(q, k, v, mask, causal=True)
    ref, _ = oracle(q.numpy(), k.numpy(), v.numpy(), mask.numpy() & bottom_right(7, 7))
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(out[..., 3, :].numpy(), 0)


def test_torch_gradients_flow_without_nan():
    q, k, v = (torch.randn(1, 4, 6, 5, dtype=torch.float64, requires_grad=True) for _ in range(3))
    mask = torch.ones(6, 6, dtype=torch.bool)
    mask[2] = False
    for kwargs in ({}, {"return_weights": True}):
        result = qkv.attention(q, k, v, mask, causal=True, **kwargs)
        out = result[0] if kwargs else result
        out.sum().backward()
        for t in (q, k, v):
            assert torch.isfinite(t.grad).all()
            t.grad = None
    # gradient of the plain path equals torch's own autograd through sdpa
    allowed = mask & torch.from_numpy(bottom_right(6, 6))
    allowed[2] = True
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    ref = ref * mask.any(-1, keepdim=True)
    (ref ** 2).sum().backward()
    expected = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    out, _ = qkv.attention(q, k, v, mask, causal=True, return_weights=True)
    (out ** 2).sum().backward()
    for t, e in zip((q, k, v), expected):
        torch.testing.assert_close(t.grad, e, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_torch_low_precision_against_float64(dtype):
    q, k, v = (torch.randn(2, 4, 33, 8, dtype=torch.float64) for _ in range(3))
    ref, _ = oracle(q.numpy(), k.numpy(), v.numpy())
    eps = torch.finfo(dtype).eps
    for kwargs in ({}, {"return_weights": True}):
        result = qkv.attention(q.to(dtype), k.to(dtype), v.to(dtype), **kwargs)
        out = result[0] if kwargs else result
        assert out.dtype == dtype
        # inputs are rounded to `dtype` (relative eps/2 each); outputs are averages of |v| ≲ 4
        np.testing.assert_allclose(out.double().numpy(), ref, rtol=0, atol=16 * eps)


def test_attention_columns_equals_row_form_transposed():
    q, k, v = randn(3, 7, 2), randn(3, 9, 2), randn(3, 9, 3)
    row_out, row_w = qkv.attention(q, k, v, return_weights=True)
    col_out, col_w = qkv.attention_columns(np.swapaxes(q, -1, -2), np.swapaxes(k, -1, -2), np.swapaxes(v, -1, -2),
                                           return_weights=True)
    np.testing.assert_allclose(col_out, np.swapaxes(row_out, -1, -2), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(col_w, np.swapaxes(row_w, -1, -2), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(col_w.sum(-2), 1, rtol=1e-13)  # softmax runs down each column


def test_residual():
    r, y = randn(3, 4), randn(3, 4)
    np.testing.assert_array_equal(qkv.residual(r, y), r + y)
    with pytest.raises(ValueError, match=r"y has shape \(3, 5\) but the residual r has shape \(3, 4\)"):
        qkv.residual(r, randn(3, 5))


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("args,kwargs,error,message", [
    ((randn(2, 5, 4), randn(2, 5, 3), randn(2, 5, 3)), {}, ValueError,
     r"k has shape \(2, 5, 3\) but q has width 4 \(expected \(…, Tk, 4\)\)"),
    ((randn(2, 5, 4), randn(2, 5, 4), randn(2, 6, 3)), {}, ValueError, r"v has shape \(2, 6, 3\) but k has 5 keys"),
    ((randn(4,), randn(5, 4), randn(5, 3)), {}, ValueError, r"q has shape \(4,\) but needs at least 2 dimensions"),
    ((randn(1, 6, 3, 4), randn(1, 4, 5, 4), randn(1, 4, 5, 4)), {}, ValueError, r"needs H % G == 0"),
    ((randn(2, 3, 3, 4), randn(3, 3, 5, 4), randn(3, 3, 5, 4)), {}, ValueError, r"do not broadcast"),
    ((randn(3, 4), randn(5, 4), randn(5, 4)), {"mask": np.ones((3, 5))}, TypeError, r"mask must be boolean"),
    ((randn(3, 4), randn(5, 4), randn(5, 4)), {"mask": np.ones((3, 4), bool)}, ValueError,
     r"mask has shape \(3, 4\) but must broadcast to the scores' shape \(3, 5\)"),
    ((randn(3, 4), randn(5, 4), randn(5, 4)), {"bias": np.ones((2, 3, 5))}, ValueError, r"bias has shape"),
    ((randn(3, 4), randn(5, 4), randn(5, 4)), {"scale": float("nan")}, ValueError, r"scale must be a finite"),
    ((randn(3, 4), randn(5, 4), randn(5, 4)), {"scale": float("inf")}, ValueError, r"scale must be a finite"),
    ((randn(3, 4), randn(5, 4), randn(5, 4)), {"scale": 1j}, TypeError, r"scale must be a finite real number, got 1j"),
    ((randn(3, 4), randn(5, 4), randn(5, 4)), {"scale": "0.5"}, TypeError, r"scale must be a finite real number"),
    ((randn(3, 4), randn(5, 4), randn(5, 4)), {"scale": True}, TypeError, r"scale must be a finite real number, got True"),
    ((randn(3, 4), randn(5, 4), randn(5, 4)), {"scale": np.True_}, TypeError, r"scale must be a finite real number"),
    ((randn(3, 4), randn(5, 4), randn(5, 4)), {"scale": 10 ** 400}, ValueError,
     r"scale must be a finite real number, got 1000000.*beyond the float range"),
    ((randn(3, 4), randn(5, 4), randn(5, 4)), {"score_mod": lambda s, b, h, q, k: s[..., :1]}, ValueError,
     r"score_mod returned shape \(3, 1\) for scores of shape \(3, 5\)"),
    ((randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 4)), {"score_mod": lambda s, b, h, q, k: s.sum() + 0 * s[0, 0]},
     ValueError, r"score_mod returned shape \(\) for scores of shape"),
    ((randn(1, 6, 3, 4), randn(1, 4, 5, 4), randn(1, 4, 5, 4)), {}, ValueError, r"4 key/value heads do not divide q's 6"),
    ((randn(3, 4), randn(5, 4), randn(5, 4)), {"mask_mod": 3}, TypeError, r"mask_mod must be a function"),
    ((randn(3, 4), randn(5, 4), randn(5, 4)), {"mask_mod": lambda b, h, q, k: q - k}, TypeError,
     r"mask_mod must return booleans"),
    ((randn(3, 4), randn(5, 4), randn(5, 4)), {"score_mod": lambda s, b, h, q, k: s > 0}, TypeError,
     r"score_mod must return floating-point scores"),
    ((randn(3, 4), randn(5, 4, dtype=np.float32), randn(5, 4)), {}, TypeError, r"share one dtype"),
    ((np.ones((3, 4), int), np.ones((5, 4), int), np.ones((5, 4), int)), {}, TypeError, r"q must be floating"),
    ((randn(3, 4), torch.zeros(5, 4, dtype=torch.float64), randn(5, 4)), {}, TypeError,
     r"mixed array types: q is NumPy, k is torch, v is NumPy"),
    (([[1.0]], randn(1, 1), randn(1, 1)), {}, TypeError, r"q must be a NumPy array or a torch tensor, got list"),
])
def test_bad_input_messages(args, kwargs, error, message):
    """One validator (qkv.kernels.call) for the public function, the plain path and the kernel."""
    paths = [qkv.attention, attention_reference]
    if all(isinstance(a, np.ndarray) for a in args):
        paths.append(qkv.kernels.blocked_attention)
    for path in paths:
        with pytest.raises(error, match=message):
            path(*args, **kwargs)


# ---------------------------------------------------------------- properties
sizes = st.integers(min_value=1, max_value=9)


@settings(max_examples=40, deadline=None)
@given(tq=sizes, tk=sizes, d=sizes, seed=st.integers(0, 2**32 - 1))
def test_weights_rows_sum_to_one_and_match_oracle(tq, tk, d, seed):
    g = np.random.default_rng(seed)
    q, k, v = g.standard_normal((tq, d)), g.standard_normal((tk, d)), g.standard_normal((tk, 3))
    mask = g.random((tq, tk)) > 0.4
    out, weights = qkv.attention(q, k, v, mask, return_weights=True)
    ref_out, ref_w = oracle_by_loops(q, k, v, mask)
    np.testing.assert_allclose(weights, ref_w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-13)
    rows = mask.any(-1)
    np.testing.assert_allclose(weights.sum(-1)[rows], 1, rtol=1e-13)
    np.testing.assert_array_equal(weights[~rows], 0)


@settings(max_examples=40, deadline=None)
@given(tq=sizes, tk=sizes, d=sizes, lead=st.sampled_from([(), (2,), (2, 3)]), seed=st.integers(0, 2**32 - 1))
def test_oracle_is_the_loop_oracle(tq, tk, d, lead, seed):
    """The whole-array oracle and the loop oracle agree: masks with empty rows, a bias with −inf (a key
    removed) and large finite entries, a scale, K and V broadcast over the leading axes."""
    g = np.random.default_rng(seed)
    q, k, v = g.standard_normal(lead + (tq, d)), g.standard_normal(lead[-1:] + (tk, d)), g.standard_normal((tk, 3))
    allowed = g.random((tq, tk)) > 0.4
    bias = g.standard_normal(lead + (1, tk)) * 30
    bias[g.random(bias.shape) < 0.2] = -np.inf
    for kwargs in ({}, {"allowed": allowed}, {"allowed": allowed, "bias": bias, "scale": 0.7}):
        out, weights = oracle(q, k, v, **kwargs)
        loop_out, loop_weights = oracle_by_loops(q, k, v, **kwargs)
        assert out.shape == loop_out.shape and weights.shape == loop_weights.shape
        np.testing.assert_allclose(weights, loop_weights, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(out, loop_out, rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(weights == 0, loop_weights == 0)


@settings(max_examples=30, deadline=None)
@given(t=sizes, d=sizes, seed=st.integers(0, 2**32 - 1))
def test_self_attention_is_permutation_equivariant(t, d, seed):
    g = np.random.default_rng(seed)
    x = g.standard_normal((t, d))
    perm = g.permutation(t)
    out = qkv.attention(x, x, x)
    np.testing.assert_allclose(qkv.attention(x[perm], x[perm], x[perm]), out[perm], rtol=1e-12, atol=1e-13)


@settings(max_examples=30, deadline=None)
@given(factor=st.floats(1e2, 1e6), seed=st.integers(0, 2**32 - 1))
def test_huge_scale_stays_finite(factor, seed):
    g = np.random.default_rng(seed)
    q, k, v = g.standard_normal((5, 4)), g.standard_normal((6, 4)), g.standard_normal((6, 2))
    out, weights = qkv.attention(q, k, v, scale=factor, return_weights=True)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(weights))
    np.testing.assert_allclose(weights.sum(-1), 1, rtol=1e-12)


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("shapes", [((2, 6, 7, 5), (2, 2, 9, 5)), ((3, 7, 4), (1, 9, 4)), ((1, 3), (8, 3)),
                                    ((2, 4, 128, 8), (2, 4, 128, 8))])
def test_short_unmasked_float32_plain_path_both_ways(fused, shapes):
    """Short float32 inputs without a mask take the plain path with the C softmax step when it is
    built (route plain_c_softmax; and NumPy's passes, route plain): both agree with the float64 oracle."""
    core = importlib.import_module("qkv.attention")  # the module (qkv.attention is also the function)
    from qkv.kernels.call import check_call
    from qkv.kernels.route import PLAIN, PLAIN_C_SOFTMAX, choose_route

    route = PLAIN_C_SOFTMAX if fused else PLAIN
    q_shape, k_shape = shapes
    q, k, v = randn(*q_shape), randn(*k_shape), randn(*k_shape[:-1], 6)
    if len(q_shape) == 4 and q_shape[1] != k_shape[1]:
        expected = np.stack([oracle(q[:, h], k[:, h // (q_shape[1] // k_shape[1])],
                                    v[:, h // (q_shape[1] // k_shape[1])])[0] for h in range(q_shape[1])], axis=1)
    else:
        expected, _ = oracle(q, k, v)
    args = [a.astype(np.float32) for a in (q, k, v)]
    assert choose_route(check_call(*args)).name == PLAIN_C_SOFTMAX, "the C extension is not built"
    assert choose_route(check_call(*args), route=route).name == route
    got = core._attention(*args, route=route)
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-6)


# ---------------------------------------------------------------- log-sum-exp (return_lse)
def lse_reference(q, k, v, allowed=None, *, scale=None, bias=None, causal=False):
    """float64 log Σ_j exp(s_ij) over allowed keys, written with math.fsum per row; −inf if none."""
    q, k = (np.asarray(a, dtype=np.float64) for a in (q, k))
    if q.ndim >= 3 and k.ndim >= 3 and 1 < k.shape[-3] < q.shape[-3]:
        k = np.repeat(k, q.shape[-3] // k.shape[-3], axis=-3)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = (q @ np.swapaxes(k, -1, -2)) * scale
    if bias is not None:
        s = s + bias
    ok = np.ones(s.shape, bool) if allowed is None else np.broadcast_to(allowed, s.shape).copy()
    if causal:
        ok &= bottom_right(*s.shape[-2:])
    ok &= ~np.isneginf(s)
    out = np.full(s.shape[:-1], -np.inf)
    for idx in np.ndindex(*s.shape[:-1]):
        row = s[idx][ok[idx]]
        if row.size:
            top = row.max()
            out[idx] = top + math.log(math.fsum(math.exp(x - top) for x in row))
    return out


@pytest.mark.parametrize("tq,tk", [(1, 1), (7, 129), (129, 7), (129, 300), (300, 300)])
@pytest.mark.parametrize("causal", [False, True])
def test_return_lse_every_path_matches_float64(tq, tk, causal):
    q, k, v = randn(2, 3, tq, 5), randn(2, 3, tk, 5), randn(2, 3, tk, 4)
    mask = rng.random((tq, tk)) > 0.3
    mask[0] = False                                              # an empty row: lse = −inf
    ref_lse = lse_reference(q, k, v, mask, causal=causal)
    ref_out = oracle(q, k, v, mask & bottom_right(tq, tk) if causal else mask)[0]
    paths = {
        "attention": lambda **kw: qkv.attention(q, k, v, mask, causal=causal, **kw),
        "reference": lambda **kw: attention_reference(q, k, v, mask, causal=causal, **kw),
        "kernel": lambda **kw: qkv.kernels.blocked_attention(q, k, v, mask, causal=causal, block_q=16, block_k=32, **kw),
    }
    for name, path in paths.items():
        out, lse = path(return_lse=True)
        assert lse.shape == (2, 3, tq) and lse.dtype == np.float64, name
        np.testing.assert_array_equal(np.isneginf(lse), np.isneginf(ref_lse), err_msg=name)
        np.testing.assert_allclose(lse, ref_lse, rtol=0, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(out, ref_out, rtol=0, atol=1e-12, err_msg=name)
    out, weights, lse = qkv.attention(q, k, v, mask, causal=causal, return_weights=True, return_lse=True)
    np.testing.assert_allclose(lse, ref_lse, rtol=0, atol=1e-12)
    finite = np.isfinite(ref_lse)
    s = (q @ np.swapaxes(k, -1, -2)) / math.sqrt(5)
    np.testing.assert_allclose(np.where(weights > 0, np.exp(s - np.where(finite, lse, 0)[..., None]), 0)[finite],
                               weights[finite], rtol=1e-12, atol=1e-15)


def test_return_lse_gqa_bias_float32_and_empty():
    q, k, v = randn(1, 4, 9, 5), randn(1, 2, 11, 5), randn(1, 2, 11, 3)
    bias = randn(9, 11)
    bias[2] = -np.inf
    ref = lse_reference(q, k, v, bias=bias, scale=0.3)
    for path in (qkv.attention, attention_reference, qkv.kernels.blocked_attention):
        _, lse = path(q, k, v, bias=bias, scale=0.3, return_lse=True)
        np.testing.assert_allclose(lse, ref, rtol=0, atol=1e-12)
        _, lse32 = path(*(a.astype(np.float32) for a in (q, k, v)), bias=bias.astype(np.float32), scale=0.3,
                        return_lse=True)
        assert lse32.dtype == np.float32
        np.testing.assert_allclose(lse32, ref, rtol=0, atol=4e-6)
    for path in (qkv.attention, attention_reference, qkv.kernels.blocked_attention):
        out, lse = path(q, k[..., :0, :], v[..., :0, :], return_lse=True)
        assert out.shape == (1, 4, 9, 3) and lse.shape == (1, 4, 9) and np.all(np.isneginf(lse))


def test_return_lse_torch_autograd():
    g = np.random.default_rng(5)
    q, k, v = (torch.tensor(g.standard_normal(s), requires_grad=True) for s in ((2, 6, 4), (2, 8, 4), (2, 8, 3)))
    mask = torch.from_numpy(g.random((6, 8)) > 0.4)
    mask[1] = False
    out, lse = qkv.attention(q, k, v, mask, return_lse=True)
    ref = torch.where(mask, (q @ k.transpose(-1, -2)) / 2.0, -torch.inf).logsumexp(-1)
    np.testing.assert_allclose(lse.detach().numpy(), ref.detach().numpy(), rtol=0, atol=1e-12)
    assert torch.isneginf(lse[:, 1]).all()
    (out.sum() + lse[:, [0, 2, 3, 4, 5]].sum()).backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    # the lse's gradient w.r.t. q is Σ_j w_ij·k_j·scale: compare with torch's own logsumexp gradient
    qr = q.detach().clone().requires_grad_(True)
    torch.where(mask, (qr @ k.detach().transpose(-1, -2)) / 2.0, -torch.inf).logsumexp(-1)[:, 0].sum().backward()
    q2 = q.detach().clone().requires_grad_(True)
    qkv.attention(q2, k.detach(), v.detach(), mask, return_lse=True)[1][:, 0].sum().backward()
    np.testing.assert_allclose(q2.grad.numpy(), qr.grad.numpy(), rtol=0, atol=1e-12)


# ---------------------------------------------------------------- one behaviour on every path (issue 9)
def all_paths(q, k, v, mask=None, **kw):
    """Every implementation, NumPy results: attention, the plain path, the kernel with small blocks
    (partial and skipped blocks), the kernel with default blocks, torch."""
    tm = None if mask is None else torch.from_numpy(np.ascontiguousarray(mask))
    torch_kw = {name: torch.from_numpy(value) if isinstance(value, np.ndarray) else value for name, value in kw.items()}
    return {
        "attention": qkv.attention(q, k, v, mask, **kw),
        "reference": attention_reference(q, k, v, mask, **kw),
        "kernel": qkv.kernels.blocked_attention(q, k, v, mask, block_q=8, block_k=8, **kw),
        "kernel default": qkv.kernels.blocked_attention(q, k, v, mask, **kw),
        "torch": qkv.attention(*(torch.from_numpy(a) for a in (q, k, v)), tm, **torch_kw).numpy(),
    }


@pytest.mark.parametrize("dtype,big", [(np.float32, 1e32), (np.float64, 1e303)])
@pytest.mark.parametrize("q_size", [1.0, 3.0, 10.0])
def test_huge_values_do_not_overflow_the_kernel(dtype, big, q_size):
    """Values of 1e32 (float32) / 1e303 (float64): the kernel's lazy reference lets P reach e^16,
    so it scales large values by an exact power of two first; every path stays finite and equal."""
    g = np.random.default_rng(3)
    q = (g.standard_normal((2, 300, 8)) * q_size).astype(dtype)
    k = g.standard_normal((2, 300, 8)).astype(dtype)
    v = (g.standard_normal((2, 300, 8)) * big).astype(dtype)
    expected = oracle(q, k, v / big)[0] * big
    with np.errstate(over="raise", invalid="raise", divide="raise"):   # no RuntimeWarning either
        outs = {name: out for name, out in all_paths(q, k, v).items() if name != "torch"}
    outs["torch"] = all_paths(q, k, v)["torch"]
    for name, out in outs.items():
        assert out.dtype == dtype and np.all(np.isfinite(out)), name
        np.testing.assert_allclose(out / big, expected / big, rtol=0, atol=4e-6 * q_size if dtype == np.float32 else 1e-12,
                                   err_msg=name)


@pytest.mark.parametrize("t", [5, 200])
def test_float16_any_size_computed_in_float32(t):
    g = np.random.default_rng(4)
    q, k, v = (g.standard_normal((2, t, 8)).astype(np.float16) for _ in range(3))
    expected = oracle(q, k, v)[0]
    for name, out in all_paths(q, k, v, causal=True).items() if False else {
            "attention": qkv.attention(q, k, v), "reference": attention_reference(q, k, v),
            "kernel": qkv.kernels.blocked_attention(q, k, v, block_q=16, block_k=16)}.items():
        assert out.dtype == np.float16, name
        np.testing.assert_allclose(out.astype(np.float64), expected, rtol=0, atol=2e-3, err_msg=name)  # float16 ulp/2 ≈ 5e-4


def test_longdouble_is_computed_in_longdouble():
    """np.longdouble (80-bit on x86-64) keeps its precision on the plain path and in the kernel:
    compared with the same math written here in longdouble, to a few longdouble ulps."""
    g = np.random.default_rng(5)
    q, k, v = (g.standard_normal((3, 40, 6)).astype(np.longdouble) for _ in range(3))
    v = v + np.longdouble(1) / 3
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(np.longdouble(6))
    e = np.exp(s - s.max(-1, keepdims=True))
    expected = (e / e.sum(-1, keepdims=True)) @ v
    eps = np.finfo(np.longdouble).eps
    assert eps < np.finfo(np.float64).eps / 100
    for out in (qkv.attention(q, k, v), attention_reference(q, k, v),
                qkv.kernels.blocked_attention(q, k, v, block_q=8, block_k=16)):
        assert out.dtype == np.longdouble
        assert np.max(np.abs(out - expected)) < 64 * eps   # float64 arithmetic would be ~1e-16 off


def test_nan_in_a_masked_keys_value_is_never_read():
    """A key a query may not attend to is not read, whatever its value holds; a query that attends
    to a non-finite value gets NaN/inf in its row. The same on every path, whatever the blocks."""
    g = np.random.default_rng(6)
    q, k, v = g.standard_normal((2, 40, 4)), g.standard_normal((2, 40, 4)), g.standard_normal((2, 40, 3))
    v[:, 20] = np.nan
    v[:, 33, 1] = np.inf
    mask = np.tril(np.ones((40, 40), bool))                      # rows < 20 never see key 20
    clean = np.where(np.isfinite(v), v, 0.0)
    expected = oracle(q, k, clean, mask)[0]
    for name, out in all_paths(q, k, v, mask).items():
        np.testing.assert_allclose(out[:, :20], expected[:, :20], rtol=0, atol=1e-12, err_msg=name)
        assert np.all(np.isnan(out[:, 20:])), name              # they attend to key 20 (weight > 0)
    for name, out in all_paths(q, k, v, causal=True).items():
        np.testing.assert_allclose(out[:, :20], expected[:, :20], rtol=0, atol=1e-12, err_msg=name)
    # a NaN in a masked key's k (its score) is not read either
    k2 = k.copy()
    k2[:, 25] = np.nan
    for name, out in all_paths(q, k2, clean, mask).items():
        np.testing.assert_allclose(out[:, :25], expected[:, :25], rtol=0, atol=1e-12, err_msg=name)


def test_scale_refused_the_same_on_torch():
    t = torch.zeros(3, 4, dtype=torch.float64)
    for scale, error in ((float("nan"), ValueError), (1j, TypeError), (float("-inf"), ValueError)):
        with pytest.raises(error, match="scale must be a finite real number"):
            qkv.attention(t, t, t, scale=scale)


def test_one_query_head_against_four_key_heads_broadcasts_on_every_path():
    """One meaning for H = 1 against G = 4: the query head broadcasts over the four heads."""
    g = np.random.default_rng(7)
    q, k, v = g.standard_normal((2, 1, 5, 4)), g.standard_normal((2, 4, 6, 4)), g.standard_normal((2, 4, 6, 3))
    expected = oracle(np.broadcast_to(q, (2, 4, 5, 4)), k, v)[0]
    for name, out in all_paths(q, k, v).items():
        assert out.shape == (2, 4, 5, 3), name
        np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12, err_msg=name)


def test_attention_columns_with_no_keys_or_zero_width():
    out, weights = qkv.attention_columns(np.ones((4, 3)), np.ones((4, 0)), np.ones((2, 0)), return_weights=True)
    assert out.shape == (2, 3) and weights.shape == (0, 3) and np.all(out == 0)
    out, weights = qkv.attention_columns(np.ones((0, 3)), np.ones((0, 5)), randn(2, 5), return_weights=True)
    np.testing.assert_allclose(weights, 0.2)           # no width: every score 0, uniform weights
    assert out.shape == (2, 3)


finite64 = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=40, deadline=None)
@given(tq=st.integers(1, 12), tk=st.integers(1, 12), d=st.integers(1, 4), data=st.data(),
       dtype=st.sampled_from([np.float32, np.float64]), masked=st.booleans(), causal=st.booleans())
def test_property_any_finite_input_gives_a_finite_output_on_every_path(tq, tk, d, data, dtype, masked, causal):
    """Finite q, k (|x| ≤ 1e3), scale (|s| ≤ 1e3), bias (|b| ≤ 1e30) and values of any magnitude up to
    1e300 (float64) / 1e36 (float32): every path's output is finite (agreement is tested above)."""
    from hypothesis.extra.numpy import arrays

    top = 1e300 if dtype == np.float64 else 1e36
    q = data.draw(arrays(dtype, (tq, d), elements=finite64.map(dtype)))
    k = data.draw(arrays(dtype, (tk, d), elements=finite64.map(dtype)))
    v = data.draw(arrays(dtype, (tk, 2), elements=st.floats(-top, top, allow_nan=False, width=64).map(dtype)))
    scale = data.draw(st.floats(-1e3, 1e3, allow_nan=False))
    bias = data.draw(arrays(dtype, (tq, tk), elements=st.floats(-1e30, 1e30, allow_nan=False, width=64).map(dtype)))
    mask = data.draw(arrays(bool, (tq, tk))) if masked else None
    outs = all_paths(q, k, v, mask, bias=bias, scale=scale, causal=causal)
    for name, out in outs.items():
        assert np.all(np.isfinite(out)), name


# ---------------------------------------------------------------- numbers near the float range
@pytest.mark.parametrize("dtype, big", [(np.float32, 1e19), (np.float64, 1e154)])
def test_huge_queries_and_keys_stay_finite(dtype, big):
    """|q|, |k| near 1e19 (float32) / 1e154 (float64) overflow q·kᵀ; qkv multiplies q and k by
    exact powers of two first (NumPy's auto route, the plain route, torch's plain path): the output
    is the longdouble reference's, lse is finite wherever the true lse is representable and +inf
    (its rounding) elsewhere, never −inf (the empty-row marker) or NaN."""
    g = np.random.default_rng(40)
    q, k, v = (g.standard_normal((2, 40, 16)).astype(dtype) for _ in range(3))
    q, k = q * dtype(big), k * dtype(big)
    ql, kl, vl = (a.astype(np.longdouble) for a in (q, k, v))
    s = ql @ np.swapaxes(kl, -1, -2) / 4
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    expected_out = (e / e.sum(-1, keepdims=True)) @ vl
    expected_lse = (m + np.log(e.sum(-1, keepdims=True)))[..., 0]
    fits = np.abs(expected_lse) < np.finfo(dtype).max
    assert fits.any() and (~fits).any()   # both kinds of row occur at these sizes
    core = importlib.import_module("qkv.attention")
    with warnings.catch_warnings():   # overflow is handled, not reported: "overflow encountered in matmul" was
        warnings.simplefilter("error")      # printed by the C softmax route before it handed over
        results = {"auto": qkv.attention(q, k, v, return_lse=True),
                   "plain": core._attention(q, k, v, return_lse=True, route="plain")}
        outs = {route: core._attention(q, k, v, route=route) for route in (None, "plain_c_softmax")}
    for route, out in outs.items():   # without lse: the C softmax route, which hands over
        np.testing.assert_allclose(out, expected_out.astype(np.float64), rtol=0, atol=1e-5, err_msg=str(route))
    out_t, lse_t = qkv.attention(*(torch.from_numpy(a) for a in (q, k, v)), return_lse=True)
    results["torch"] = (out_t.numpy(), lse_t.numpy())
    for path, (out, lse) in results.items():
        assert np.all(np.isfinite(out)), path
        np.testing.assert_allclose(out, expected_out.astype(np.float64), rtol=0, atol=1e-5, err_msg=path)
        np.testing.assert_allclose(lse[fits], expected_lse[fits].astype(np.float64),
                                   rtol=1e-6 if dtype == np.float32 else 1e-14, err_msg=path)
        assert np.all(lse[~fits] == np.inf), path


def test_an_occupied_row_whose_scores_overflow_is_never_reported_empty():
    """The kernel's routes keep q·kᵀ as it is: scores beyond the float range give NaN there (the
    documented bound) — NaN out and NaN lse, never lse = −inf, which would make a merge drop the row."""
    g = np.random.default_rng(41)
    q, k, v = (g.standard_normal((1, 200, 16)).astype(np.float32) for _ in range(3))
    q *= np.float32(1e20)
    k *= np.float32(1e20)
    from qkv.kernels import execute

    for route in ("flash_many", "flash_rows", "py_walk", "numpy_walk"):
        with np.errstate(all="ignore"):
            out, lse = execute.kernel_attention(q, k, v, want="lse", route=route)
        assert not np.any(np.isneginf(lse)), route
        assert np.all(np.isnan(lse) == np.isnan(out).any(-1)), route
    empty = np.zeros((1, 200, 200), bool)
    out, lse = qkv.attention(q, k, v, empty, return_lse=True)
    assert np.all(np.isneginf(lse)) and np.all(out == 0)      # a truly empty row still is


def test_numpy_masks_and_bias_follow_torch_inputs():
    """A NumPy boolean mask or float bias given with torch q, k, v is converted to q's device:
    causal_mask(T) works with torch tensors without like=, gradients flow; a mix among q, k, v is
    still refused."""
    g = torch.Generator().manual_seed(42)
    q, k, v = (torch.randn(2, 3, 7, 5, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))
    out = qkv.attention(q, k, v, qkv.causal_mask(7))
    expected = qkv.attention(q, k, v, causal=True)
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)
    out.sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()
    bias = np.random.default_rng(43).standard_normal((7, 7))
    with_bias = qkv.attention(q.detach().float(), k.detach().float(), v.detach().float(), bias=bias)
    reference = qkv.attention(q.detach().float(), k.detach().float(), v.detach().float(), bias=torch.from_numpy(bias))
    torch.testing.assert_close(with_bias, reference, rtol=1e-6, atol=1e-6)
    out, lse = qkv.attention(q, k, v, qkv.causal_mask(7), return_lse=True)
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(TypeError, match="mixed array types"):
        qkv.attention(q, k.detach().numpy(), v)
    with pytest.raises(TypeError, match="mixed array types: q is NumPy, mask is torch"):
        qkv.attention(randn(3, 4), randn(5, 4), randn(5, 4), torch.ones(3, 5, dtype=torch.bool))


def test_check_call_and_the_sdpa_route_compile_with_fullgraph():
    """check_call compares no torch dtype with a NumPy one: dynamo traces it with fullgraph=True."""
    from qkv.kernels.call import check_call

    def scaled(q, k, v):
        return q * check_call(q, k, v).scale

    q = torch.randn(2, 3, 5, 4)
    compiled = torch.compile(scaled, fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(q, q, q), q / 2)


# ---------------------------------------------------------------- one route
def test_choose_route_names_each_call_and_says_why():
    """qkv.kernels.choose_route decides once, from the checked call: the route's name and reason."""
    from qkv import masks
    from qkv.kernels import RouteName, choose_route, speed
    from qkv.kernels.call import check_call

    def named(*args, want="out", route=None, **kwargs):
        chosen = choose_route(check_call(*args, **kwargs), want=want, route=route)
        assert chosen.reason
        return chosen.name

    small32 = [randn(2, 20, 8).astype(np.float32) for _ in range(3)]
    big32 = [randn(2, 600, 32).astype(np.float32) for _ in range(3)]
    assert named(*small32) == RouteName.PLAIN_C_SOFTMAX
    assert named(*small32, causal=True) == RouteName.PLAIN
    assert named(*small32, want="weights") == RouteName.PLAIN
    assert named(*(a[:, :0] for a in small32)) == RouteName.EMPTY
    assert named(*big32, causal=True) == RouteName.FLASH_MANY
    assert named(*big32, mask_mod=masks.sliding_window(64)) == RouteName.FLASH_MANY
    assert named(*big32, bias=np.zeros((600, 600), np.float32)) == RouteName.PY_WALK
    assert named(*(a.astype(np.float64) for a in big32)) == RouteName.NUMPY_WALK
    assert named(*big32, route="numpy_walk") == RouteName.NUMPY_WALK
    assert named(*big32, want="partial") == RouteName.FLASH_ROWS   # a Partial never comes from flash_many
    decoding = [randn(1, t, 32).astype(np.float32) for t in (100, 3000, 3000)]
    chosen = choose_route(check_call(*decoding), num_threads=4)    # one query block for 4 threads
    assert chosen.name == RouteName.FLASH_ROWS and "threads" in chosen.reason and chosen.ranges > 1
    t = [torch.from_numpy(a) for a in small32]
    # (20·20 scores per head, below the C kernel's floor: SDPA, but the C kernel where this CPU's rules take
    # short forward calls in C — AVX-512 without AMX, kernels/speed.py short_in_c)
    assert named(*t) == (RouteName.TORCH_FLASH if speed.short_in_c(False) else RouteName.TORCH_SDPA)
    assert named(*t, want="lse") == RouteName.PLAIN
    assert named(*t, score_mod=masks.soft_cap(5.0)) == RouteName.PLAIN
    with pytest.raises(ValueError, match="route must be one of empty, plain"):
        named(*small32, route="fast")
    with pytest.raises(ValueError, match="route flash_rows takes NumPy arrays"):
        named(*t, route="flash_rows")


def test_the_mask_is_read_once_per_call():
    """The mask's protocol (band, key_ranges, block_kinds) is read when the call is checked and the
    route chosen; nothing after re-probes it."""
    from qkv import masks

    reads = {"band": 0, "key_ranges": 0, "block_kinds": 0}

    class Window(masks.MaskMod):
        relative = True
        broadcasts = True

        def __init__(self):
            self.inner = masks.sliding_window(40)

        @property
        def band(self):
            reads["band"] += 1
            return self.inner.band

        def key_ranges(self, tq, tk):
            reads["key_ranges"] += 1
            return self.inner.key_ranges(tq, tk)

        def block_kinds(self, *bounds):
            reads["block_kinds"] += 1
            return self.inner.block_kinds(*bounds)

        def __call__(self, b, h, q_idx, kv_idx):
            return self.inner(b, h, q_idx, kv_idx)

    q, k, v = (randn(1, 3, 700, 16).astype(np.float32) for _ in range(3))
    out = qkv.attention(q, k, v, mask_mod=Window())
    assert reads["band"] == 1 and reads["key_ranges"] <= 1
    assert reads["block_kinds"] == 1        # flash_many: one head's map, the same for every head
    np.testing.assert_allclose(out, qkv.attention(q, k, v, mask_mod=masks.sliding_window(40)), rtol=0, atol=1e-6)


@pytest.mark.parametrize("dtype, grow", [("float32", 1e19), ("float16", 40.0), ("bfloat16", 1e19)])
@pytest.mark.parametrize("t", [16, 160, 600])     # SDPA's sizes, the C kernel's (TORCH_FLASH), and longer
@pytest.mark.parametrize("causal", [False, True])
def test_torch_scores_beyond_the_float_range_stay_finite(dtype, grow, t, causal):
    """|q|·|k|·Dk past the float range: every torch route would compute inf scores and NaN weights, so
    the call takes the plain path, which divides q and k by exact powers of two first (as NumPy's calls
    do). Output and gradients equal float64 autograd on the same values (no NaN, no inf)."""
    torch = pytest.importorskip("torch")
    from overflow_reference import big_inputs, check_against_float64

    leaves, dout = big_inputs(dtype, grow, (1, 2, t, 32), seed=t)
    out = qkv.attention(*leaves, causal=causal)
    allowed = torch.ones(t, t, dtype=torch.bool).tril() if causal else None
    check_against_float64(out, leaves, dout, allowed, 1 / np.sqrt(32), dtype)
