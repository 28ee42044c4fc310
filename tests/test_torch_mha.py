"""qkv.torch.MultiheadAttention against torch.nn.MultiheadAttention.

The first tests adapt PyTorch's own cases (test/nn/test_multihead_attention.py and the
MultiheadAttention samples of torch/testing/_internal/common_modules.py) to this module; where
torch's reference gives NaN (a query whose keys are all masked) qkv documents zeros, and the
adapted reference says so explicitly. The rest compare outputs and gradients with torch's module
in float64, and run gradcheck.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
import torch

from qkv.torch import MultiheadAttention

TorchMHA = torch.nn.MultiheadAttention


def _copy(src: torch.nn.Module, dst: torch.nn.Module) -> torch.nn.Module:
    dst.load_state_dict(src.state_dict())
    return dst


# --------------------------------------------------------------------------- adapted from PyTorch
def _softmax_ref(x):
    """NumPy softmax over the last axis; a row that is all -inf gets zeros (qkv's convention;
    PyTorch's reference gives NaN there)."""
    out = np.zeros(x.shape, dtype=np.float64)
    for idx in np.ndindex(*x.shape[:-1]):
        row = x[idx]
        if np.all(np.isneginf(row)):
            continue
        e = np.exp(row - np.amax(row))
        out[idx] = e / np.sum(e)
    return out


def _split_heads_ref(x, dims, nheads, d_head):
    return np.transpose(np.reshape(x, dims[:2] + [nheads, d_head]), [0, 2, 1, 3])


def _combine_heads_ref(x, dims, nheads, d_head):
    return np.reshape(np.transpose(x, [0, 2, 1, 3]), dims[:2] + [nheads * d_head])


def _fc(x, weight, bias):
    return np.matmul(x, weight.detach().numpy().T) + bias.detach().numpy()


@pytest.mark.parametrize("average_attn_weights", [True, False])
@pytest.mark.parametrize("add_key_padding_mask, add_bias_kv, add_zero_attn, same_embed_dim", [
    (False, False, True, False),   # test_multihead_attn_add_zero_attn
    (False, True, False, False),   # test_multihead_attn_add_bias_kv
    (False, False, False, False),  # test_multihead_attn_no_masking
    (True, False, False, False),   # test_multihead_attn_key_padding_mask
    (True, True, True, False),     # test_multihead_attn_add_bias_kv_zero_attn
    (True, False, True, True),     # test_multihead_attn_all_arguments3 (without saved k/v)
])
def test_multihead_attention_numpy_reference(average_attn_weights, add_key_padding_mask, add_bias_kv,
                                             add_zero_attn, same_embed_dim):
    """PyTorch's test_multihead_attention: a decoder state attends to random source states, with an
    additive (0 / -inf) attn_mask, optional key padding, bias_k/v and zero attention; compared with
    a NumPy reference built step by step, and with torch's own F.multi_head_attention_forward on the
    module's parameters (the port of tests/test_torch_upstream.py kept here: one loop, both references;
    query rows whose every key is masked compared as zeros, torch gives NaN there). (Its saved_kv cases
    feed static_k/static_v, which only the functional API takes, not the module's forward; they are not
    adapted.)"""
    rng, py = np.random.RandomState(13), random.Random(13)
    for _ in range(12):
        batch_sz, seq_len = py.randint(2, 10), py.randint(2, 10)
        d_head = py.randint(3, 10)
        nheads = py.randint(2, 5) * 2
        d_model = d_head * nheads
        kv_dim = d_model if same_embed_dim else py.randint(5, 20)
        dims = [batch_sz, seq_len, kv_dim]
        key_padding_mask = key_padding_mask_tensor = None
        if add_key_padding_mask:
            seq_mask = rng.randint(0, 2, (1, seq_len))
            key_padding_mask = np.repeat(seq_mask, batch_sz, axis=0) == 1
            key_padding_mask_tensor = torch.from_numpy(key_padding_mask)
        decoder_state = rng.rand(batch_sz, d_model)
        K = rng.rand(*dims)
        V = K
        Q = np.expand_dims(decoder_state, 1)
        attn_mask = rng.randint(0, 2, size=(1, seq_len))
        attn_mask_tensor = torch.from_numpy(attn_mask).float()
        attn_mask_tensor.masked_fill_(attn_mask_tensor == 0, float("-inf"))
        attn_mask_tensor.masked_fill_(attn_mask_tensor > 0, 0.0)

        module = MultiheadAttention(d_model, nheads, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn,
                                    kdim=kv_dim, vdim=kv_dim)
        with torch.no_grad():   # non-zero biases, so that the bias terms are checked too
            module.in_proj_bias.normal_()
            module.out_proj.bias.normal_()
        query_t = torch.from_numpy(decoder_state).float().unsqueeze(0)            # (1, B, E)
        source_t = torch.from_numpy(K).float().transpose(0, 1)                    # (S, B, kdim)
        result, result_weight = module(query_t, source_t, source_t, key_padding_mask=key_padding_mask_tensor,
                                       need_weights=True, attn_mask=attn_mask_tensor,
                                       average_attn_weights=average_attn_weights)
        ref, ref_weight_t = torch.nn.functional.multi_head_attention_forward(
            query_t, source_t, source_t, d_model, nheads, module.in_proj_weight, module.in_proj_bias,
            module.bias_k, module.bias_v, module.add_zero_attn, module.dropout, module.out_proj.weight,
            module.out_proj.bias, training=module.training, key_padding_mask=key_padding_mask_tensor,
            need_weights=True, attn_mask=attn_mask_tensor, use_separate_proj_weight=not module._qkv_same_embed_dim,
            q_proj_weight=module.q_proj_weight, k_proj_weight=module.k_proj_weight,
            v_proj_weight=module.v_proj_weight, average_attn_weights=average_attn_weights)
        no_key = torch.isnan(ref).any(-1, keepdim=True)                      # rows with no key (torch: NaN)
        assert tuple(result.shape) == tuple(ref.shape) == (1, batch_sz, d_model)
        torch.testing.assert_close(result.masked_fill(no_key, 0), ref.masked_fill(no_key, 0), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(result_weight.nan_to_num(0.0), ref_weight_t.nan_to_num(0.0), atol=1e-5, rtol=1e-5)
        result = result.squeeze(0).detach().numpy()

        if module._qkv_same_embed_dim:
            w_q, w_k, w_v = module.in_proj_weight.chunk(3)
        else:
            w_q, w_k, w_v = module.q_proj_weight, module.k_proj_weight, module.v_proj_weight
        b_q, b_k, b_v = module.in_proj_bias.chunk(3)
        Q_fc, K_fc, V_fc = _fc(Q, w_q, b_q), _fc(K, w_k, b_k), _fc(V, w_v, b_v)
        if add_bias_kv:
            bias_k, bias_v = module.bias_k.detach().numpy(), module.bias_v.detach().numpy()
            K_fc = np.concatenate((K_fc, np.repeat(bias_k, K_fc.shape[0], axis=0)), axis=1)
            V_fc = np.concatenate((V_fc, np.repeat(bias_v, V_fc.shape[0], axis=0)), axis=1)
            attn_mask = np.concatenate((attn_mask, np.ones([1, 1])), axis=1)
            if key_padding_mask is not None:
                key_padding_mask = np.concatenate((key_padding_mask, np.full((batch_sz, 1), False)), axis=1)
            dims[1] += 1
        Q_split = _split_heads_ref(Q_fc, [batch_sz, 1, d_model], nheads, d_head)
        K_split = _split_heads_ref(K_fc, dims, nheads, d_head)
        V_split = _split_heads_ref(V_fc, dims, nheads, d_head)
        if add_zero_attn:
            dims[1] += 1
            zeros = np.zeros([K_split.shape[0], K_split.shape[1], 1, K_split.shape[3]])
            K_split = np.concatenate((K_split, zeros), axis=2)
            V_split = np.concatenate((V_split, zeros), axis=2)
            attn_mask = np.concatenate((attn_mask, np.ones([1, 1])), axis=1)
            if key_padding_mask is not None:
                key_padding_mask = np.concatenate((key_padding_mask, np.full((batch_sz, 1), False)), axis=1)
        scores = Q_split @ np.transpose(K_split, (0, 1, 3, 2)) / np.sqrt(d_head)   # (B, H, 1, S)
        blocked = (attn_mask[0] == 0)[None, None, None, :]
        if key_padding_mask is not None:
            blocked = blocked | key_padding_mask[:, None, None, :]
        weights = _softmax_ref(np.where(blocked, -np.inf, scores))
        ref_weight = weights.sum(axis=1) / nheads if average_attn_weights else weights
        heads = weights @ V_split
        reference = _fc(_combine_heads_ref(heads, [batch_sz, 1], nheads, d_head), module.out_proj.weight,
                        module.out_proj.bias).squeeze(1)
        assert result.shape == (batch_sz, d_model)
        np.testing.assert_allclose(result, reference, atol=1e-5)
        result_weight = result_weight.detach().numpy()
        assert result_weight.shape == ref_weight.shape
        np.testing.assert_allclose(result_weight, ref_weight, atol=1e-5)


def test_multihead_attn_3d_attn_mask():
    """PyTorch's test_multihead_attn_3d_attn_mask: a (B·H, L, S) mask equals running each batch
    item with its own (L, S) mask."""
    torch.manual_seed(0)
    embed_dim, num_heads, batch_size, src_len, tgt_len = 8, 4, 8, 3, 2
    query = torch.rand(batch_size, tgt_len, embed_dim)
    key = torch.rand(batch_size, src_len, embed_dim)
    value = key
    attn_mask = torch.randint(0, 2, (batch_size, tgt_len, src_len)).float()
    attn_mask = attn_mask.masked_fill(attn_mask == 0, float("-inf")).masked_fill(attn_mask == 1, 0.0)
    model = MultiheadAttention(embed_dim, num_heads)
    attn_mask_3d = torch.repeat_interleave(attn_mask, num_heads, dim=0)
    output_3d = model(query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1),
                      attn_mask=attn_mask_3d)[0].transpose(0, 1)
    assert not torch.isnan(output_3d).any()        # torch: NaN for fully masked rows; qkv: zeros
    for i in range(batch_size):
        output_2d = model(query[i].unsqueeze(0).transpose(0, 1), key[i].unsqueeze(0).transpose(0, 1),
                          value[i].unsqueeze(0).transpose(0, 1), attn_mask=attn_mask[i])[0]
        torch.testing.assert_close(output_3d[i].unsqueeze(0).transpose(0, 1), output_2d)


def test_multihead_attn_no_bias():
    mha = MultiheadAttention(8, 4, bias=False)
    assert mha.in_proj_bias is None and mha.out_proj.bias is None


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attn_invalid_shape(batch_first):
    """PyTorch's _test_multihead_attn_invalid_shape_impl; qkv raises ValueError naming the problem
    (torch raises AssertionError / RuntimeError)."""
    mha = MultiheadAttention(4, 4, batch_first=batch_first)
    query = key = value = torch.randn(4, 4, 4)
    cases = [
        ((query, torch.randn(4, 4), value), {}, "`key` and `value` to be 3-D"),
        ((query, key, torch.randn(4, 4)), {}, "`key` and `value` to be 3-D"),
        ((query, key, value), {"key_padding_mask": torch.tensor([False, False, True, True])}, "key_padding_mask"),
        ((query, key, value), {"attn_mask": torch.tensor([False, False, True, True])}, "attn_mask"),
    ]
    q2 = k2 = v2 = torch.randn(4, 4)
    cases += [
        ((q2, torch.randn(4, 4, 4), v2), {}, "`key` and `value` to be 2-D"),
        ((q2, k2, torch.randn(4, 4, 4)), {}, "`key` and `value` to be 2-D"),
        ((q2, k2, v2), {"key_padding_mask": torch.tensor([[False, False, True, True] * 2])}, "key_padding_mask"),
        ((q2, k2, v2), {"attn_mask": torch.tensor([False, False, True, True])}, "attn_mask"),
        ((q2, k2, v2), {"attn_mask": torch.randn(5, 4, 4).bernoulli_().to(torch.bool)}, r"\(4, 4, 4\)"),
    ]
    for args, kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            mha(*args, **kwargs)
    with pytest.raises(TypeError, match="only bool and floating"):
        mha(query, key, value, attn_mask=torch.zeros(4, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match="embed_dim=6 does not split into num_heads=4"):
        MultiheadAttention(6, 4)


@pytest.mark.parametrize("kwargs", [{"bias": False}, {"kdim": 2, "vdim": 2}, {}])
def test_multihead_attn_small_configurations(kwargs):
    """PyTorch's in_proj_bias_none / in_proj_weight_none / fast_path_small_test, in float64,
    compared with torch's module holding the same weights."""
    torch.manual_seed(1)
    ours = MultiheadAttention(4, 4, dtype=torch.double, **kwargs)
    theirs = _copy(ours, TorchMHA(4, 4, dtype=torch.double, **kwargs))
    assert (ours.in_proj_weight is None) == bool(kwargs.get("kdim"))
    query = torch.rand(4, 4, 4, dtype=torch.double)
    key = torch.rand(4, 4, kwargs.get("kdim", 4), dtype=torch.double)
    for a, b in zip(ours(query, key, key), theirs(query, key, key)):
        torch.testing.assert_close(a, b)


def test_multihead_self_attn_two_masks():
    """PyTorch's test_multihead_self_attn_two_masks_fast_path: a bool attn_mask and a bool
    key_padding_mask together equal torch's slow path on every row torch does not make NaN;
    the rows torch makes NaN (every key masked) are zeros here."""
    torch.manual_seed(2)
    embed_dim, num_heads, batch_size, src_len = 14, 7, 8, 5
    query = torch.rand(batch_size, src_len, embed_dim)
    attn_mask = torch.randint(0, 2, (src_len, src_len)).bool()
    key_padding_mask = torch.randint(0, 2, (batch_size, src_len)).bool()
    merged = attn_mask[None, :, :] | key_padding_mask[:, None, :]                  # (B, L, S), True = masked
    fully_masked = merged.all(-1)                                                  # (B, L)
    ours = MultiheadAttention(embed_dim, num_heads, batch_first=True).eval()
    theirs = _copy(ours, TorchMHA(embed_dim, num_heads, batch_first=True)).eval()
    for need_weights in (False, True):
        result, _ = ours(query, query, query, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                         need_weights=need_weights)
        reference, _ = theirs(query, query, query, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                              need_weights=True)
        assert fully_masked.any() and torch.isnan(reference[fully_masked]).all()
        torch.testing.assert_close(result[~fully_masked], reference[~fully_masked])
        assert torch.equal(result[fully_masked], ours.out_proj.bias.expand(int(fully_masked.sum()), -1))


def _module_input_samples():
    """common_modules.module_inputs_torch_nn_MultiheadAttention: unbatched (3, 3) inputs, every
    combination of bias, add_bias_kv, add_zero_attn, a key_padding_mask and a (3, 3, 3) attn_mask."""
    bools = (True, False)
    kpms = (None, torch.tensor([False, False, True]))
    attn_masks = (None, torch.tensor([False, False, True]).expand((3, 3, 3)))
    return list(itertools.product(bools, bools, bools, kpms, attn_masks))


@pytest.mark.parametrize("bias, add_bias_kv, add_zero_attn, key_padding_mask, attn_mask", _module_input_samples())
def test_module_inputs_no_batch_dim(bias, add_bias_kv, add_zero_attn, key_padding_mask, attn_mask):
    """Unbatched input equals the batched call with a batch of one (PyTorch's
    no_batch_dim_reference_fn), and both equal torch's module, outputs and input gradients."""
    torch.manual_seed(3)
    kwargs = dict(embed_dim=3, num_heads=3, batch_first=True, bias=bias, add_bias_kv=add_bias_kv,
                  add_zero_attn=add_zero_attn, dtype=torch.double)
    ours = MultiheadAttention(**kwargs)
    theirs = _copy(ours, TorchMHA(**kwargs))
    q, k, v = (torch.randn(3, 3, dtype=torch.double, requires_grad=True) for _ in range(3))
    call = dict(key_padding_mask=key_padding_mask, attn_mask=attn_mask)
    out, weights = ours(q, k, v, **call)
    batched_call = dict(key_padding_mask=None if key_padding_mask is None else key_padding_mask[None],
                        attn_mask=attn_mask)
    out_b, weights_b = ours(q[None], k[None], v[None], **batched_call)
    torch.testing.assert_close(out, out_b[0])
    torch.testing.assert_close(weights, weights_b[0])
    ref, ref_weights = theirs(q, k, v, **call)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(weights, ref_weights)
    grads = torch.autograd.grad(out.sum(), (q, k, v))
    ref_grads = torch.autograd.grad(ref.sum(), (q, k, v))
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b)


# --------------------------------------------------------------------------- parity with torch
def _inputs(batch_first, batched, b, tq, tk, e, kdim, vdim, seed):
    gen = torch.Generator().manual_seed(seed)

    def make(t, width):
        shape = ((b, t, width) if batch_first else (t, b, width)) if batched else (t, width)
        return torch.randn(shape, generator=gen, dtype=torch.double, requires_grad=True)

    return make(tq, e), make(tk, kdim), make(tk, vdim)


CONFIGS = [
    dict(),
    dict(batch_first=True),
    dict(kdim=5, vdim=3),
    dict(bias=False, batch_first=True),
    dict(add_bias_kv=True),
    dict(add_zero_attn=True, batch_first=True),
    dict(add_bias_kv=True, add_zero_attn=True, kdim=7, vdim=7),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
@pytest.mark.parametrize("masks", ["none", "bool", "float", "3d", "padding-float"])
@pytest.mark.parametrize("batched", [True, False])
def test_outputs_and_gradients_equal_torch(config, masks, batched):
    """Outputs, weights (averaged and per head) and gradients with respect to the inputs and every
    parameter equal torch.nn.MultiheadAttention's, float64, masks that leave every row a key."""
    torch.manual_seed(4)
    e, h, b, tq, tk = 6, 2, 3, 4, 5
    ours = MultiheadAttention(e, h, dtype=torch.double, **config)
    with torch.no_grad():
        for p in ours.parameters():
            p.normal_()
    theirs = _copy(ours, TorchMHA(e, h, dtype=torch.double, **config))
    batch_first = config.get("batch_first", False)
    q, k, v = _inputs(batch_first, batched, b, tq, tk, e, config.get("kdim", e), config.get("vdim", e), seed=5)
    gen = torch.Generator().manual_seed(6)
    blocked = torch.rand(tq, tk, generator=gen) < 0.4
    blocked[:, 0] = False                                         # every query keeps a key
    call = {}
    if masks == "bool":
        call["attn_mask"] = blocked
        call["key_padding_mask"] = torch.tensor([[False] * (tk - 1) + [True]] * b) if batched else None
    elif masks == "float":
        call["attn_mask"] = torch.randn(tq, tk, generator=gen, dtype=torch.double).masked_fill(blocked, float("-inf"))
    elif masks == "3d":
        call["attn_mask"] = torch.rand((b if batched else 1) * h, tq, tk, generator=gen) < 0.3
        call["attn_mask"][..., 0] = False
    elif masks == "padding-float":
        kpm = torch.randn(b, tk, generator=gen, dtype=torch.double)
        call["key_padding_mask"] = kpm if batched else kpm[0]
    for need_weights, average in ((True, True), (True, False), (False, True)):
        out, weights = ours(q, k, v, need_weights=need_weights, average_attn_weights=average, **call)
        ref, ref_weights = theirs(q, k, v, need_weights=need_weights, average_attn_weights=average, **call)
        torch.testing.assert_close(out, ref)
        if need_weights:
            torch.testing.assert_close(weights, ref_weights)
        else:
            assert weights is None and ref_weights is None
        loss = (out * torch.linspace(-1, 1, out.numel(), dtype=torch.double).reshape(out.shape)).sum()
        ref_loss = (ref * torch.linspace(-1, 1, ref.numel(), dtype=torch.double).reshape(ref.shape)).sum()
        if need_weights:
            loss, ref_loss = loss + weights.pow(2).sum(), ref_loss + ref_weights.pow(2).sum()
        ours_params, their_params = dict(ours.named_parameters()), dict(theirs.named_parameters())
        grads = torch.autograd.grad(loss, (q, k, v, *ours_params.values()))
        ref_grads = torch.autograd.grad(ref_loss, (q, k, v, *(their_params[n] for n in ours_params)))
        for name, a, c in zip(["query", "key", "value", *ours_params], grads, ref_grads):
            torch.testing.assert_close(a, c, msg=lambda m, name=name: f"gradient of {name}: {m}")


def test_is_causal_hint_and_default():
    """is_causal with attn_mask is only a hint (the mask is used, as torch); without attn_mask qkv
    applies the causal mask (torch raises), which equals torch with its square subsequent mask."""
    torch.manual_seed(7)
    ours = MultiheadAttention(8, 2, batch_first=True, dtype=torch.double)
    theirs = _copy(ours, TorchMHA(8, 2, batch_first=True, dtype=torch.double))
    x = torch.randn(2, 5, 8, dtype=torch.double)
    square = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.double)
    ref, ref_w = theirs(x, x, x, attn_mask=square, is_causal=True)
    out, w = ours(x, x, x, attn_mask=square, is_causal=True)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(w, ref_w)
    out, w = ours(x, x, x, is_causal=True)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(w, ref_w)
    with pytest.raises(RuntimeError):
        theirs(x, x, x, is_causal=True)


# --------------------------------------------------------------------------- fully masked rows
@pytest.mark.parametrize("kind", ["bool-attn", "float-attn", "padding", "padding-float"])
@pytest.mark.parametrize("need_weights", [True, False])
def test_fully_masked_rows_give_zeros_not_nan(kind, need_weights):
    """A query whose keys are all masked: zero attention output (so out_proj's bias alone), zero
    weights and finite, zero gradients through that row; torch gives NaN there."""
    torch.manual_seed(8)
    e, h, b, t = 6, 3, 2, 4
    ours = MultiheadAttention(e, h, batch_first=True, dtype=torch.double)
    with torch.no_grad():
        ours.out_proj.bias.normal_()
    theirs = _copy(ours, TorchMHA(e, h, batch_first=True, dtype=torch.double))
    x = torch.randn(b, t, e, dtype=torch.double, requires_grad=True)
    call = {}
    blocked = torch.zeros(t, t, dtype=torch.bool)
    blocked[1] = True                                             # query 1 sees nothing
    if kind == "bool-attn":
        call["attn_mask"] = blocked
    elif kind == "float-attn":
        call["attn_mask"] = torch.zeros(t, t, dtype=torch.double).masked_fill(blocked, float("-inf"))
    elif kind == "padding":
        call["key_padding_mask"] = torch.tensor([[True] * t, [False] * t])   # sequence 0 is all padding
    else:
        call["key_padding_mask"] = torch.tensor([[float("-inf")] * t, [0.0] * t], dtype=torch.double)
    out, weights = ours(x, x, x, need_weights=need_weights, **call)
    ref, _ = theirs(x, x, x, **call)
    dead = torch.isnan(ref).any(-1)                               # (B, T) rows torch makes NaN
    assert dead.any()
    assert not torch.isnan(out).any()
    torch.testing.assert_close(out[dead], ours.out_proj.bias.expand(int(dead.sum()), -1))
    torch.testing.assert_close(out[~dead], ref[~dead])
    if need_weights:
        assert torch.equal(weights[dead], torch.zeros_like(weights[dead]))
    grads = torch.autograd.grad(out.pow(2).sum() + (weights.sum() if need_weights else 0),
                                (x, *ours.parameters()))
    assert all(torch.isfinite(g).all() for g in grads)
    if kind.startswith("padding"):
        # sequence 0 has no key: its inputs influence nothing but out_proj's bias term
        assert torch.equal(grads[0][0], torch.zeros_like(grads[0][0]))


def test_gradcheck_float64():
    """torch.autograd.gradcheck (finite differences, float64) of the output and per-head weights
    with respect to query, key and value, with masks including a fully masked row."""
    torch.manual_seed(9)
    mha = MultiheadAttention(4, 2, batch_first=True, add_bias_kv=False, dtype=torch.double)
    q, k, v = (torch.randn(2, 3, 4, dtype=torch.double, requires_grad=True) for _ in range(3))
    attn_mask = torch.tensor([[False, True, False], [True, True, True], [False, False, True]])
    kpm = torch.tensor([[False, False, True], [False, False, False]])

    def f(q, k, v):
        out, weights = mha(q, k, v, attn_mask=attn_mask, key_padding_mask=kpm, average_attn_weights=False)
        return out, weights

    assert torch.autograd.gradcheck(f, (q, k, v))
    mha_kv = MultiheadAttention(4, 2, add_bias_kv=True, add_zero_attn=True, kdim=3, vdim=5, dtype=torch.double)
    k3 = torch.randn(3, 2, 3, dtype=torch.double, requires_grad=True)
    v5 = torch.randn(3, 2, 5, dtype=torch.double, requires_grad=True)
    q3 = q.detach().transpose(0, 1).requires_grad_()
    assert torch.autograd.gradcheck(lambda q, k, v: mha_kv(q, k, v, need_weights=False)[0], (q3, k3, v5))


# --------------------------------------------------------------------------- state dicts, init, dropout
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_state_dict_both_ways_and_same_init(config):
    """Same keys and shapes; torch's state dict loads into qkv's module and back (strict); one seed
    gives both modules the same initial parameters."""
    torch.manual_seed(10)
    theirs = TorchMHA(6, 2, **config)
    torch.manual_seed(10)
    ours = MultiheadAttention(6, 2, **config)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (name, a), b in zip(ours.state_dict().items(), theirs.state_dict().values()):
        assert torch.equal(a, b), name
    torch.manual_seed(11)
    other = TorchMHA(6, 2, **config)
    ours.load_state_dict(other.state_dict())
    back = TorchMHA(6, 2, **config)
    back.load_state_dict(ours.state_dict())
    for a, b in zip(back.state_dict().values(), other.state_dict().values()):
        assert torch.equal(a, b)


def test_dropout_acts_on_weights_in_training_only():
    """Training mode drops attention weights (each either 0 or its eval value / (1 - p)); eval mode
    equals torch's module exactly."""
    torch.manual_seed(12)
    p = 0.5
    ours = MultiheadAttention(8, 2, dropout=p, batch_first=True, dtype=torch.double)
    theirs = _copy(ours, TorchMHA(8, 2, dropout=p, batch_first=True, dtype=torch.double)).eval()
    x = torch.randn(2, 6, 8, dtype=torch.double)
    ours.eval()
    out_eval, w_eval = ours(x, x, x, average_attn_weights=False)
    ref, ref_w = theirs(x, x, x, average_attn_weights=False)
    torch.testing.assert_close(out_eval, ref)
    torch.testing.assert_close(w_eval, ref_w)
    ours.train()
    out_train, w_train = ours(x, x, x, average_attn_weights=False)
    dropped = w_train == 0
    assert 0.2 < dropped.double().mean() < 0.8
    torch.testing.assert_close(w_train[~dropped], w_eval[~dropped] / (1 - p))
    assert not torch.allclose(out_train, out_eval)


def test_swapped_into_a_torch_transformer_layer():
    """Swap the import inside torch's own nn.TransformerEncoderLayer: with the same weights the
    layer's output and gradients are torch's (training mode, dropout 0, so torch's inference fast
    path, which reads in_proj_weight directly and skips forward, is not taken)."""
    torch.manual_seed(13)
    layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                             dtype=torch.double)
    swapped = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                               dtype=torch.double)
    swapped.self_attn = MultiheadAttention(8, 2, dropout=0.0, batch_first=True, dtype=torch.double)
    swapped.load_state_dict(layer.state_dict())
    x = torch.randn(2, 5, 8, dtype=torch.double, requires_grad=True)
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)                 # torch's bool: True = masked out
    padding = torch.tensor([[False] * 5, [False, False, False, True, True]])
    calls = []
    swapped.self_attn.register_forward_hook(lambda *args: calls.append(1))
    ref = layer(x, src_mask=causal, src_key_padding_mask=padding)
    out = swapped(x, src_mask=causal, src_key_padding_mask=padding)
    assert calls == [1]                                                 # qkv's module did the attention
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(torch.autograd.grad(out.sum(), x)[0], torch.autograd.grad(ref.sum(), x)[0])


# --------------------------------------------------------------------------- where torch puts it
def _swapped_layers(kind, **kw):
    """A torch layer and the same layer with qkv's module(s) swapped in, same weights (float64)."""
    torch.manual_seed(21)
    make = {"encoder": torch.nn.TransformerEncoderLayer, "decoder": torch.nn.TransformerDecoderLayer}[kind]
    args = dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True, dtype=torch.double)
    args.update(kw)
    ref, ours = make(**args), make(**args)
    ours.self_attn = MultiheadAttention(8, 2, batch_first=args["batch_first"], dtype=torch.double)
    if kind == "decoder":
        ours.multihead_attn = MultiheadAttention(8, 2, batch_first=args["batch_first"], dtype=torch.double)
    ours.load_state_dict(ref.state_dict())
    return ref, ours


def test_merge_masks_is_torchs():
    """merge_masks gives what torch's own module's merge_masks gives, for every mask combination
    torch's encoder layer passes (float masks after its canonicalisation, 2-D and 3-D attn_mask)."""
    torch.manual_seed(22)
    ours, theirs = MultiheadAttention(8, 2, batch_first=True), TorchMHA(8, 2, batch_first=True)
    query = torch.randn(3, 5, 8)
    attn2 = torch.randn(5, 5)
    attn3 = torch.randn(6, 5, 5)
    padding = torch.zeros(3, 5).masked_fill(torch.tensor([[0, 0, 0, 1, 1]] * 3, dtype=torch.bool), float("-inf"))
    for attn_mask in (None, attn2, attn3):
        for key_padding_mask in (None, padding):
            got, got_type = ours.merge_masks(attn_mask, key_padding_mask, query)
            want, want_type = theirs.merge_masks(attn_mask, key_padding_mask, query)
            assert got_type == want_type
            if want is None:
                assert got is None
            else:
                torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("fastpath", [True, False])
def test_encoder_stack_in_eval_under_no_grad(fastpath):
    """nn.TransformerEncoder (padding: torch's nested-tensor route) and a lone encoder layer in eval
    under no_grad. With torch's fast path on, torch's layer reads the module's weights and merge_masks
    and runs its fused kernel (docs/torch.md); with it off, qkv's forward runs. Either way the result
    is torch's (float64, rows with at least one key)."""
    ref_layer, our_layer = _swapped_layers("encoder")
    ref = torch.nn.TransformerEncoder(ref_layer, 2, enable_nested_tensor=True).eval()
    ours = torch.nn.TransformerEncoder(our_layer, 2, enable_nested_tensor=True).eval()
    x = torch.randn(3, 6, 8, dtype=torch.double)
    padding = torch.tensor([[False] * 6, [False] * 4 + [True] * 2, [False] * 5 + [True]])
    causal = torch.nn.Transformer.generate_square_subsequent_mask(6, dtype=torch.double)
    calls = []
    previous = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(fastpath)
    try:
        with torch.no_grad():
            torch.testing.assert_close(ours(x, src_key_padding_mask=padding), ref(x, src_key_padding_mask=padding))
            torch.testing.assert_close(our_layer.eval()(x, src_mask=causal, src_key_padding_mask=padding),
                                       ref_layer.eval()(x, src_mask=causal, src_key_padding_mask=padding))
            torch.testing.assert_close(our_layer(x), ref_layer(x))
            handle = our_layer.self_attn.register_forward_hook(lambda *a: calls.append(1))
            torch.testing.assert_close(our_layer(x, src_key_padding_mask=padding),
                                       ref_layer(x, src_key_padding_mask=padding))
            handle.remove()
    finally:
        torch.backends.mha.set_fastpath_enabled(previous)
    assert calls == [1]                 # a hook on the module makes torch's layer call its forward


@pytest.mark.parametrize("batch_first", [True, False])
def test_full_transformer_train_and_eval(batch_first):
    """nn.Transformer with every attention swapped for qkv's, in training mode (outputs and input
    gradients) and in eval under no_grad: torch's numbers."""
    torch.manual_seed(23)
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, dropout=0.0,
              batch_first=batch_first, dtype=torch.double)
    ref, ours = torch.nn.Transformer(**kw), torch.nn.Transformer(**kw)
    for name, module in list(ours.named_modules()):
        if isinstance(module, TorchMHA):
            parent, _, attr = name.rpartition(".")
            setattr(ours.get_submodule(parent), attr, MultiheadAttention(8, 2, batch_first=batch_first,
                                                                          dtype=torch.double))
    assert not any(isinstance(m, TorchMHA) for m in ours.modules())
    ours.load_state_dict(ref.state_dict())
    shape = (lambda t: (2, t, 8)) if batch_first else (lambda t: (t, 2, 8))
    src = torch.randn(*shape(7), dtype=torch.double, requires_grad=True)
    tgt = torch.randn(*shape(5), dtype=torch.double)
    tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.double)
    src_padding = torch.tensor([[False] * 7, [False] * 5 + [True] * 2])
    args = dict(tgt_mask=tgt_mask, src_key_padding_mask=src_padding, memory_key_padding_mask=src_padding,
                tgt_is_causal=True)
    out, want = ours(src, tgt, **args), ref(src, tgt, **args)
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(torch.autograd.grad(out.sum(), src)[0], torch.autograd.grad(want.sum(), src)[0])
    ours.eval(), ref.eval()
    with torch.no_grad():
        torch.testing.assert_close(ours(src, tgt, **args), ref(src, tgt, **args))


def test_jit_script_of_torch_layers():
    """torch.jit.script of torch's encoder and decoder layers holding qkv's module runs and gives torch's
    numbers, in training and eval mode; the module alone scripts too."""
    for kind in ("encoder", "decoder"):
        ref, ours = _swapped_layers(kind)
        scripted = torch.jit.script(ours)
        x = torch.randn(2, 5, 8, dtype=torch.double)
        memory = torch.randn(2, 4, 8, dtype=torch.double)
        padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
        for training in (True, False):
            scripted.train(training), ref.train(training)
            if kind == "encoder":
                torch.testing.assert_close(scripted(x, src_key_padding_mask=padding),
                                           ref(x, src_key_padding_mask=padding))
            else:
                torch.testing.assert_close(scripted(x, memory, tgt_key_padding_mask=padding),
                                           ref(x, memory, tgt_key_padding_mask=padding))
    module = MultiheadAttention(8, 2, dtype=torch.double)
    twin = _copy(module, TorchMHA(8, 2, dtype=torch.double))
    q = torch.randn(5, 2, 8, dtype=torch.double)
    got, want = torch.jit.script(module)(q, q, q), twin(q, q, q)
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(got[1], want[1])


@pytest.mark.parametrize("need_weights", [True, False])
def test_torch_compile_fullgraph(need_weights):
    """torch.compile(fullgraph=True) of the module (one graph: qkv's attention is the custom operator
    qkv::mha_attention): outputs, weights and the gradients of input and parameters equal torch's
    module's in float64, with a float attn_mask and a bool key padding mask."""
    torch.manual_seed(24)
    ours = MultiheadAttention(8, 2, batch_first=True, dtype=torch.double)
    theirs = _copy(ours, TorchMHA(8, 2, batch_first=True, dtype=torch.double))
    compiled = torch.compile(ours, fullgraph=True, backend="aot_eager")
    x = torch.randn(2, 5, 8, dtype=torch.double, requires_grad=True)
    attn_mask = torch.randn(5, 5, dtype=torch.double)
    padding = torch.tensor([[False] * 5, [False] * 4 + [True]])
    got = compiled(x, x, x, key_padding_mask=padding, attn_mask=attn_mask, need_weights=need_weights)
    want = theirs(x, x, x, key_padding_mask=padding, attn_mask=attn_mask, need_weights=need_weights)
    torch.testing.assert_close(got[0], want[0])
    loss_got, loss_want = (got[0] ** 2).sum(), (want[0] ** 2).sum()
    if need_weights:
        torch.testing.assert_close(got[1], want[1])
        loss_got, loss_want = loss_got + got[1].pow(3).sum(), loss_want + want[1].pow(3).sum()
    else:
        assert got[1] is None and want[1] is None
    grads_got = torch.autograd.grad(loss_got, [x, *ours.parameters()])
    grads_want = torch.autograd.grad(loss_want, [x, *theirs.parameters()])
    for g, w in zip(grads_got, grads_want):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("bias_dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_in_proj_bias_of_another_dtype(bias_dtype):
    """A lower-precision in_proj_bias with float64 inputs: torch's module computes (the sum promotes
    to float64); so does qkv's, with torch's numbers, in training and eval mode."""
    torch.manual_seed(25)
    ours = MultiheadAttention(8, 2, batch_first=True, dtype=torch.double)
    torch.nn.init.normal_(ours.in_proj_bias)
    theirs = _copy(ours, TorchMHA(8, 2, batch_first=True, dtype=torch.double))
    for module in (ours, theirs):
        module.in_proj_bias = torch.nn.Parameter(module.in_proj_bias.detach().to(bias_dtype))
    x = torch.randn(2, 5, 8, dtype=torch.double)
    for training in (True, False):
        ours.train(training), theirs.train(training)
        got, want = ours(x, x, x), theirs(x, x, x)
        assert got[0].dtype == want[0].dtype == torch.double
        torch.testing.assert_close(got[0], want[0])
        torch.testing.assert_close(got[1], want[1])
