"""MultiHeadAttention against torch.nn.MultiheadAttention, heads one by one, split/merge, KV cache."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import qkv
from qkv.rope import RoPE

rng = np.random.default_rng(7)


def torch_mha(embed_dim, heads, *, bias=True, kdim=None, vdim=None, seed=0):
    torch.manual_seed(seed)
    module = torch.nn.MultiheadAttention(embed_dim, heads, bias=bias, kdim=kdim, vdim=vdim, batch_first=True,
                                         dtype=torch.float64)
    with torch.no_grad():  # torch initialises biases to zero; make them count
        for p in module.parameters():
            if p.ndim == 1:
                p.normal_()
    return module.eval()


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("t", [1, 7, 129])
def test_self_attention_matches_torch(bias, t):
    module = torch_mha(20, 4, bias=bias)
    mha = qkv.MultiHeadAttention.from_torch(module)
    x = torch.randn(2, t, 20, dtype=torch.float64)
    expected, expected_w = module(x, x, x, need_weights=True, average_attn_weights=False)
    y, weights = mha(x, return_weights=True)
    torch.testing.assert_close(y, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(weights, expected_w, rtol=1e-12, atol=1e-12)
    # the same weights as NumPy arrays give the same numbers
    np_mha = qkv.MultiHeadAttention(*(np.asarray(w) for w in (mha.w_q, mha.w_k, mha.w_v, mha.w_o)), mha.n_heads,
                                    b_q=None if mha.b_q is None else mha.b_q.numpy(),
                                    b_k=None if mha.b_k is None else mha.b_k.numpy(),
                                    b_v=None if mha.b_v is None else mha.b_v.numpy(),
                                    b_o=None if mha.b_o is None else mha.b_o.numpy())
    np.testing.assert_allclose(np_mha(x.numpy()), expected.detach().numpy(), rtol=1e-11, atol=1e-12)


def test_cross_attention_with_kdim_vdim_and_key_padding_matches_torch():
    module = torch_mha(15, 3, kdim=11, vdim=11)
    mha = qkv.MultiHeadAttention.from_torch(module)
    x = torch.randn(3, 7, 15, dtype=torch.float64)
    memory = torch.randn(3, 9, 11, dtype=torch.float64)
    lengths = torch.tensor([9, 4, 1])
    ignore = torch.arange(9)[None, :] >= lengths[:, None]  # torch: True = ignore this key
    expected, expected_w = module(x, memory, memory, key_padding_mask=ignore, average_attn_weights=False)
    y, weights = mha(x, memory, mask=qkv.padding_mask(lengths, 9), return_weights=True)
    torch.testing.assert_close(y, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(weights, expected_w, rtol=1e-12, atol=1e-12)
    # the same call through the fused path (no weights asked) agrees too
    torch.testing.assert_close(mha(x, memory, mask=qkv.padding_mask(lengths, 9)), expected, rtol=1e-12, atol=1e-12)


def test_causal_self_attention_matches_torch_attn_mask():
    module = torch_mha(12, 3)
    mha = qkv.MultiHeadAttention.from_torch(module)
    x = torch.randn(2, 7, 12, dtype=torch.float64)
    blocked = ~torch.from_numpy(qkv.causal_mask(7))  # torch: True = not allowed
    expected, _ = module(x, x, x, attn_mask=blocked)
    torch.testing.assert_close(mha(x, causal=True), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("h,g", [(6, 6), (6, 2), (6, 1)])
def test_heads_one_by_one_equal_fused(h, g):
    mha = qkv.MultiHeadAttention.random(30, h, n_kv_heads=g, d_k=5, d_v=3, seed=3)
    x = rng.standard_normal((2, 7, 30))
    fused = mha(x, causal=True)
    outputs = []
    for i in range(h):
        w = mha.head(i)
        z = qkv.attention(x @ w.w_q + w.b_q, x @ w.w_k + w.b_k, x @ w.w_v + w.b_v, causal=True)
        outputs.append(z)
    concat = np.concatenate(outputs, axis=-1)            # (B, T, H·Dv): heads side by side
    np.testing.assert_allclose(concat @ mha.w_o + mha.b_o, fused, rtol=1e-12, atol=1e-12)
    # equivalently: each head contributes z_i · W_O[rows of head i]
    summed = sum(z @ mha.head(i).w_o for i, z in enumerate(outputs)) + mha.b_o
    np.testing.assert_allclose(summed, fused, rtol=1e-12, atol=1e-12)


def test_gqa_layer_matches_torch_sdpa_enable_gqa():
    mha = qkv.MultiHeadAttention.random(24, 6, n_kv_heads=2, bias=False, seed=1)
    x = rng.standard_normal((1, 9, 24))
    q = torch.from_numpy((x @ mha.w_q).reshape(1, 9, 6, 4).transpose(0, 2, 1, 3).copy())
    k = torch.from_numpy((x @ mha.w_k).reshape(1, 9, 2, 4).transpose(0, 2, 1, 3).copy())
    v = torch.from_numpy((x @ mha.w_v).reshape(1, 9, 2, 4).transpose(0, 2, 1, 3).copy())
    heads = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    expected = heads.numpy().transpose(0, 2, 1, 3).reshape(1, 9, 24) @ mha.w_o
    np.testing.assert_allclose(mha(x, causal=True), expected, rtol=1e-12, atol=1e-12)


def test_kv_cache_decoding_equals_full_causal_recompute():
    mha = qkv.MultiHeadAttention.random(16, 4, n_kv_heads=2, seed=5)
    x = rng.standard_normal((2, 11, 16))
    full = mha(x, causal=True)
    cache = qkv.KVCache()
    prefill = mha(x[:, :4], causal=True, cache=cache)   # 4 tokens at once, then one at a time
    steps = [prefill] + [mha(x[:, t:t + 1], causal=True, cache=cache) for t in range(4, 11)]
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, rtol=1e-12, atol=1e-12)
    assert cache.length == 11 and cache.k.shape == (2, 2, 11, 4)


def test_kv_cache_refuses_mismatched_shapes():
    cache = qkv.KVCache()
    cache.append(np.zeros((1, 2, 3, 4)), np.zeros((1, 2, 3, 5)))
    with pytest.raises(ValueError, match=r"k has shape \(1, 3, 1, 4\) but the cache holds \(1, 2, 3, 4\)"):
        cache.append(np.zeros((1, 3, 1, 4)), np.zeros((1, 3, 1, 5)))


_FAILURES = {
    "mask of the wrong shape": lambda x: dict(mask=np.ones((x.shape[1], 99), dtype=bool)),
    "float mask": lambda x: dict(mask=np.ones((x.shape[1], x.shape[1]))),
    "x of the wrong width": lambda x: dict(x=x[..., :5]),
    "x as a list": lambda x: dict(x=x.tolist()),
    "x without a token axis": lambda x: dict(x=x[0, 0]),
    "RoPE positions of the wrong length": lambda x: dict(positions=np.arange(x.shape[1] + 1)),
    "a batch of another size": lambda x: dict(x=np.concatenate([x, x], axis=0)),
}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.sampled_from([None, *_FAILURES])), min_size=1, max_size=8),
       st.booleans())
def test_a_failing_call_leaves_the_kv_cache_as_it_was(calls, rope):
    """Any sequence of decode calls, some failing: the cache and every later output are as if the
    failed calls had never been made (equal to one causal run over the successful calls' tokens)."""
    mha = qkv.MultiHeadAttention.random(16, 4, n_kv_heads=2, seed=6, rope=RoPE(4) if rope else None)
    x = np.random.default_rng(len(calls)).standard_normal((2, 3 * len(calls), 16))
    cache, outputs, used, start = qkv.KVCache(), [], [], 0
    for t, failure in calls:
        chunk = x[:, start:start + t]
        start += t
        applies = (rope or "RoPE" not in failure) and (cache.length or "another size" not in failure) \
            if failure is not None else False
        if applies:
            kwargs = _FAILURES[failure](chunk)
            before = (cache.length, None if cache.k is None else cache.k.copy(), None if cache.v is None else cache.v.copy())
            with pytest.raises((ValueError, TypeError)):
                mha(kwargs.pop("x", chunk), causal=True, cache=cache, **kwargs)
            assert cache.length == before[0]
            if before[1] is not None:
                np.testing.assert_array_equal(cache.k, before[1])
                np.testing.assert_array_equal(cache.v, before[2])
            continue
        outputs.append(mha(chunk, causal=True, cache=cache))
        used.append(chunk)
    if used:
        expected = mha(np.concatenate(used, axis=1), causal=True)
        np.testing.assert_allclose(np.concatenate(outputs, axis=1), expected, rtol=1e-12, atol=1e-12)
    assert cache.length == sum(u.shape[1] for u in used)


def test_gradients_flow_through_a_cached_decode_on_torch():
    """Decoding step by step with a KVCache on torch tensors that need gradients: backward works (no
    in-place writes into tensors of the graph) and gives the gradients of one causal run."""
    module = torch_mha(12, 3)
    mha = qkv.MultiHeadAttention.from_torch(module, detach=False)
    x = torch.randn(2, 6, 12, dtype=torch.float64, requires_grad=True)
    params = [x, *module.parameters()]
    expected = torch.autograd.grad(mha(x, causal=True).square().sum(), params)
    cache = qkv.KVCache()
    steps = [mha(x[:, :2], causal=True, cache=cache)] + [mha(x[:, t:t + 1], causal=True, cache=cache)
                                                           for t in range(2, 6)]
    got = torch.autograd.grad(torch.cat(steps, dim=1).square().sum(), params)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-12, atol=1e-12)
    # without gradients the cache keeps its preallocated buffer and gives the same numbers
    with torch.no_grad():
        cache = qkv.KVCache()
        plain = [mha(x[:, t:t + 1], causal=True, cache=cache) for t in range(6)]
    torch.testing.assert_close(torch.cat(plain, dim=1), mha(x, causal=True).detach(), rtol=1e-12, atol=1e-12)


def test_cached_keys_without_gradients_beside_a_query_that_needs_one():
    """Issue 32 §4: a query that needs a gradient attends to cached keys and values that do not; the
    next append used to write into the storage the first step's graph had saved, and backward failed
    ("modified by an inplace operation"). Expected: the gradient of one run over the whole sequence."""
    g = torch.Generator().manual_seed(4)
    q = torch.randn(2, 5, 4, dtype=torch.float64, generator=g, requires_grad=True)
    k, v = (torch.randn(2, 5, 4, dtype=torch.float64, generator=g) for _ in range(2))
    cache = qkv.KVCache()
    outs = []
    for t in range(5):
        keys, values = cache.append(k[:, t:t + 1], v[:, t:t + 1])
        outs.append(qkv.attention(q[:, t:t + 1], keys, values))
    got = torch.autograd.grad(torch.cat(outs, dim=1).square().sum(), q)[0]
    # the whole sequence at once, written out in float64: softmax(q·kᵀ/√4, causal)·v
    scores = (q @ k.transpose(-1, -2) / 2.0).masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), -torch.inf)
    want = torch.autograd.grad((torch.softmax(scores, dim=-1) @ v).square().sum(), q)[0]
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
@pytest.mark.parametrize("c_softmax", [True, False])
def test_lengths_equal_a_padding_mask_on_the_real_rows(dtype, tol, c_softmax):
    """lengths= (runs of equal length, unmasked: what BERT's encode runs) = padding_mask on real rows; padded rows 0.
    float32 on both softmax paths (the C extension's one-pass step when built, and NumPy's: run as on this
    machine without it, `native.use_machine`)."""
    import contextlib

    from qkv.kernels import native, route

    with native.use_machine(route.current_machine().without_c()) if not c_softmax else contextlib.nullcontext():
        _lengths_equal_a_padding_mask(dtype, tol)


def _lengths_equal_a_padding_mask(dtype, tol):
    mha = qkv.MultiHeadAttention.random(15, 3, seed=8)
    fused = qkv.MultiHeadAttention.fused(np.concatenate([mha.w_q, mha.w_k, mha.w_v], axis=1), mha.w_o, 3,
                                         b_qkv=np.concatenate([mha.b_q, mha.b_k, mha.b_v]), b_o=mha.b_o)
    x = rng.standard_normal((9, 13, 15)) * 3
    lengths = np.array([13, 13, 11, 11, 11, 7, 2, 13, 1])          # runs, and an unsorted tail
    expected, expected_weights = mha(x, mask=qkv.padding_mask(lengths, 13), return_weights=True)
    real = (np.arange(13)[None, :] < lengths[:, None])[:, :, None]  # (B, T, 1): real query rows
    for layer in (mha, fused):
        layer32 = qkv.MultiHeadAttention.fused(*(a.astype(dtype) for a in (layer._w_qkv, layer.w_o)), 3,
                                               b_qkv=layer._b_qkv.astype(dtype), b_o=layer.b_o.astype(dtype)) \
            if layer is fused else layer
        y = layer32(x.astype(dtype), lengths=lengths) if layer is fused else layer(x, lengths=lengths)
        np.testing.assert_allclose(np.where(real, y, 0.0), np.where(real, expected, 0.0), atol=tol, rtol=tol)
        np.testing.assert_allclose(np.where(real, 0.0, y), np.where(real, 0.0, mha.b_o), atol=tol)   # y = b_O there
    y, weights = mha(x, lengths=lengths, return_weights=True)
    np.testing.assert_allclose(weights, np.where(real[:, None], expected_weights, 0.0), atol=1e-12)
    # torch: the padding mask itself, padded rows zeroed the same way
    y_torch = qkv.MultiHeadAttention(*(torch.from_numpy(w) for w in (mha.w_q, mha.w_k, mha.w_v, mha.w_o)), 3,
                                     b_o=torch.from_numpy(mha.b_o), b_q=torch.from_numpy(mha.b_q),
                                     b_k=torch.from_numpy(mha.b_k), b_v=torch.from_numpy(mha.b_v))(
        torch.from_numpy(x), lengths=torch.from_numpy(lengths))
    np.testing.assert_allclose(y_torch.numpy(), y, atol=1e-12)
    with pytest.raises(ValueError, match="lengths must lie in"):
        mha(x, lengths=np.full(9, 14))
    with pytest.raises(ValueError, match="without memory=, cache= or mask="):
        mha(x, lengths=lengths, mask=qkv.padding_mask(lengths, 13))


def test_fused_layout_is_views_and_the_same_numbers():
    mha = qkv.MultiHeadAttention.random(12, 4, n_kv_heads=2, d_v=5, seed=9)
    w_qkv = np.concatenate([mha.w_q, mha.w_k, mha.w_v], axis=1)              # (D, H·Dk + G·Dk + G·Dv)
    fused = qkv.MultiHeadAttention.fused(w_qkv, mha.w_o, 4, 2, b_qkv=np.concatenate([mha.b_q, mha.b_k, mha.b_v]),
                                         b_o=mha.b_o)
    assert np.shares_memory(fused.w_k, w_qkv) and fused.w_v.shape == (12, 10) and fused.d_v == 5
    x = rng.standard_normal((2, 6, 12))
    np.testing.assert_allclose(fused(x, causal=True), mha(x, causal=True), rtol=1e-12, atol=1e-12)
    trace = qkv.Trace()
    fused(x, causal=True, record=trace)                                       # traced: the same steps
    assert [n for n in trace.names() if n.startswith("w_")] == ["w_q", "w_k", "w_v", "w_o"]
    with pytest.raises(ValueError, match="do not split"):
        qkv.MultiHeadAttention.fused(w_qkv[:, :-1], mha.w_o, 4, 2)


def test_trace_records_every_step_in_order():
    mha = qkv.MultiHeadAttention.random(8, 2, seed=0)
    x = rng.standard_normal((3, 8))
    trace = qkv.Trace("demo")
    y = mha(x, record=trace)
    total = qkv.residual(x, y, record=trace)
    assert trace.names() == ["x", "w_q", "q", "q_heads", "w_k", "k", "k_heads", "w_v", "v", "v_heads",
                             "scores", "scaled_scores", "softmax_max", "exp_scores", "exp_sum", "weights", "out", "contributions", "shares",
                             "concat", "w_o", "y", "residual"]
    assert trace["q_heads"].shape == (2, 3, 4) and trace["weights"].shape == (2, 3, 3)
    np.testing.assert_allclose(trace["scaled_scores"].value, trace["scores"].value / 2.0, rtol=1e-15)
    np.testing.assert_array_equal(trace["residual"].value, total)
    np.testing.assert_array_equal(trace["y"].value, y)
    again = qkv.Trace.from_json(trace.to_json())
    assert again.names() == trace.names()
    for a, b in zip(again, trace):
        np.testing.assert_array_equal(a.value, b.value)
        assert a.formula == b.formula


def test_trace_json_keeps_minus_infinity():
    trace = qkv.Trace()
    qkv.attention(rng.standard_normal((3, 2)), rng.standard_normal((3, 2)), rng.standard_normal((3, 2)),
                  causal=True, record=trace)
    mask = qkv.Trace.from_json(trace.to_json())["mask"].value
    np.testing.assert_array_equal(mask, [[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]])


def test_split_heads_is_a_reshape_of_columns():
    x = np.arange(3 * 8, dtype=float).reshape(3, 8)
    heads = qkv.split_heads(x, 2)
    assert heads.shape == (2, 3, 4)
    np.testing.assert_array_equal(heads[0], x[:, :4])
    np.testing.assert_array_equal(heads[1], x[:, 4:])
    assert np.shares_memory(heads, x)  # no arithmetic, no copy
    with pytest.raises(ValueError, match=r"D=8 .* does not split into n_heads=3"):
        qkv.split_heads(x, 3)


@settings(max_examples=40, deadline=None)
@given(lead=st.lists(st.integers(1, 3), max_size=2), t=st.integers(0, 6), h=st.integers(1, 4), dh=st.integers(1, 5))
def test_split_merge_roundtrip(lead, t, h, dh):
    x = np.random.default_rng(0).standard_normal((*lead, t, h * dh))
    np.testing.assert_array_equal(qkv.merge_heads(qkv.split_heads(x, h)), x)
    xt = torch.from_numpy(x)
    assert torch.equal(qkv.merge_heads(qkv.split_heads(xt, h)), xt)


@pytest.mark.parametrize("kwargs,message", [
    (dict(w_q=np.zeros((8, 8)), w_k=np.zeros((8, 8)), w_v=np.zeros((8, 8)), w_o=np.zeros((8, 8)), n_heads=3),
     r"w_q has shape \(8, 8\): its 8 columns do not split into 3 heads"),
    (dict(w_q=np.zeros((8, 8)), w_k=np.zeros((8, 8)), w_v=np.zeros((8, 8)), w_o=np.zeros((6, 8)), n_heads=2),
     r"w_o has shape \(6, 8\) but the 2 concatenated heads have width 8"),
    (dict(w_q=np.zeros((8, 8)), w_k=np.zeros((8, 4)), w_v=np.zeros((8, 4)), w_o=np.zeros((8, 8)), n_heads=2,
          n_kv_heads=3), r"n_kv_heads must be a positive divisor of n_heads=2"),
    (dict(w_q=np.zeros((8, 8)), w_k=np.zeros((8, 8)), w_v=np.zeros((8, 8)), w_o=np.zeros((8, 8)), n_heads=2,
          b_q=np.zeros(7)), r"b_q has shape \(7,\), expected \(8,\)"),
])
def test_bad_weights_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        qkv.MultiHeadAttention(**kwargs)


def test_bad_inputs_to_a_layer():
    mha = qkv.MultiHeadAttention.random(8, 2)
    with pytest.raises(ValueError, match=r"x has shape \(3, 5\) but w_q has shape \(8, 8\) \(expected \(…, T, 8\)\)"):
        mha(np.zeros((3, 5)))
    cross = qkv.MultiHeadAttention.random(8, 2, d_kv_in=6)
    with pytest.raises(ValueError, match=r"pass memory= for cross-attention"):
        cross(np.zeros((3, 8)))
    with pytest.raises(ValueError, match=r"memory has shape \(4, 5\) but w_k has shape \(6, 8\)"):
        cross(np.zeros((3, 8)), np.zeros((4, 5)))
    with pytest.raises(TypeError, match="mixed array types"):
        mha(torch.zeros(3, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"head index must be in \[0, 2\)"):
        mha.head(2)



def test_random_like_follows_the_input_library_dtype_and_device():
    """random(..., like=x): weights in x's library, dtype and device, the same numbers as NumPy's."""
    import torch

    ref = qkv.MultiHeadAttention.random(8, 2, n_kv_heads=1, seed=4)
    assert isinstance(ref.w_q, np.ndarray) and ref.w_q.dtype == np.float64          # default unchanged
    x32 = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    np32 = qkv.MultiHeadAttention.random(8, 2, n_kv_heads=1, seed=4, like=x32)
    assert np32.w_q.dtype == np.float32 and np32.b_o.dtype == np.float32
    np.testing.assert_array_equal(np32.w_k, ref.w_k.astype(np.float32))
    for dtype in (torch.float32, torch.float64):
        xt = torch.from_numpy(x32).to(dtype)
        layer = qkv.MultiHeadAttention.random(8, 2, n_kv_heads=1, seed=4, like=xt)
        for name in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_o"):
            w = getattr(layer, name)
            assert isinstance(w, torch.Tensor) and w.dtype == dtype and w.device == xt.device
            np.testing.assert_array_equal(w.numpy(), getattr(ref, name).astype(w.numpy().dtype))
        y, weights = layer(xt, causal=True, return_weights=True)           # no "mixed array types"
        y_ref, w_ref = ref(x32.astype(np.float64), causal=True, return_weights=True)
        tol = 1e-5 if dtype == torch.float32 else 1e-12
        np.testing.assert_allclose(y.numpy(), y_ref, atol=tol)
        np.testing.assert_allclose(weights.numpy(), w_ref, atol=tol)
    forced = qkv.MultiHeadAttention.random(8, 2, seed=4, like=torch.zeros(1), dtype=np.float64)
    assert forced.w_q.dtype == torch.float64
    with pytest.raises(TypeError, match="floating-point"):
        qkv.MultiHeadAttention.random(8, 2, like=torch.zeros(1, dtype=torch.int64))
    with pytest.raises(TypeError, match="like must be"):
        qkv.MultiHeadAttention.random(8, 2, like=[1.0, 2.0])
