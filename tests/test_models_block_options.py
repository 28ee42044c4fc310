"""The block options the model families use, checked against plain formulas on NumPy and torch alike:
MoE (Mixtral), parallel residual (GPT-NeoX, Phi), sandwich norms (Gemma 2), per-head q/k norms (Qwen3),
a score_mod and a scale on the layer (Gemma 2), a layer's head alone with every option (`single`)."""

from __future__ import annotations

import numpy as np
import pytest

import qkv
from qkv.block import MLP, MoE, RMSNorm, LayerNorm, TransformerBlock
from qkv.masks import soft_cap
from qkv.rope import RoPE

torch = pytest.importorskip("torch")
rng = np.random.default_rng(3)


def _silu(x):
    return x / (1 + np.exp(-x))


def _experts(d=6, f=5, n=4):
    return [MLP(w_in=rng.standard_normal((d, f)), w_gate=rng.standard_normal((d, f)), w_out=rng.standard_normal((f, d)),
                activation="silu") for _ in range(n)]


def test_moe_routes_each_token_to_its_top_k_experts():
    experts = _experts()
    router = rng.standard_normal((6, 4))
    moe = MoE(router=router, experts=experts, top_k=2)
    x = rng.standard_normal((7, 6))
    expected = np.zeros_like(x)
    for t in range(7):                                    # the formula, one token at a time
        logits = x[t] @ router
        p = np.exp(logits - logits.max())
        p /= p.sum()
        top = np.argsort(-p)[:2]
        for e in top:
            e_out = (_silu(x[t] @ experts[e].w_gate) * (x[t] @ experts[e].w_in)) @ experts[e].w_out
            expected[t] += p[e] / p[top].sum() * e_out
    np.testing.assert_allclose(moe(x), expected, rtol=1e-12, atol=1e-12)
    as_torch = MoE(router=torch.from_numpy(router), top_k=2, experts=[
        MLP(w_in=torch.from_numpy(m.w_in), w_gate=torch.from_numpy(m.w_gate), w_out=torch.from_numpy(m.w_out),
            activation="silu") for m in experts])
    np.testing.assert_allclose(as_torch(torch.from_numpy(x)).numpy(), expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="top_k"):
        MoE(router=router, experts=experts, top_k=5)


def _block(**options):
    d = 8
    mha = qkv.MultiHeadAttention.random(d, 2, seed=1)
    mlp = MLP(w_in=rng.standard_normal((d, 12)), w_out=rng.standard_normal((12, d)), activation="gelu_tanh")
    norm1, norm2 = LayerNorm(1 + 0.1 * rng.standard_normal(d), 0.1 * rng.standard_normal(d)), RMSNorm(rng.random(d) + 0.5)
    return TransformerBlock(attention=mha, norm1=norm1, mlp=mlp, norm2=norm2, **options), mha, mlp, norm1, norm2


def test_parallel_residual_and_sandwich_norms_are_the_formulas():
    x = rng.standard_normal((5, 8))
    block, mha, mlp, n1, n2 = _block(parallel=True)
    np.testing.assert_allclose(block(x, causal=True), x + mha(n1(x), causal=True) + mlp(n2(x)), rtol=1e-12, atol=1e-12)
    out1, out2 = RMSNorm(rng.random(8) + 0.5), RMSNorm(rng.random(8) + 0.5)
    block, mha, mlp, n1, n2 = _block(attention_out_norm=out1, mlp_out_norm=out2)
    h = x + out1(mha(n1(x), causal=True))
    np.testing.assert_allclose(block(x, causal=True), h + out2(mlp(n2(h))), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="pre-norm"):
        _block(parallel=True, norm_position="post")


def test_q_k_norms_scale_and_score_mod_on_numpy_and_torch():
    d, h, dk = 12, 3, 4
    base = qkv.MultiHeadAttention.random(d, h, seed=2, rope=RoPE(dk))
    qn, kn = RMSNorm(rng.random(dk) + 0.5), RMSNorm(rng.random(dk) + 0.5)
    layer = qkv.MultiHeadAttention(base.w_q, base.w_k, base.w_v, base.w_o, h, b_q=base.b_q, b_k=base.b_k,
                                   b_v=base.b_v, b_o=base.b_o, rope=base.rope, q_norm=qn, k_norm=kn, scale=0.3,
                                   score_mod=soft_cap(2.0))
    x = rng.standard_normal((6, d))
    q, k, v = base.project(x)
    q, k = base.rope(qn(q), np.arange(6)), base.rope(kn(k), np.arange(6))
    scores = 2.0 * np.tanh(q @ k.transpose(0, 2, 1) * 0.3 / 2.0)
    scores = np.where(np.tril(np.ones((6, 6), bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    expected = qkv.merge_heads(weights @ v) @ base.w_o + base.b_o
    y, w = layer(x, causal=True, return_weights=True)
    np.testing.assert_allclose(w, weights, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)
    for i in range(h):                                   # a head alone keeps every option
        _, alone = layer.single(i)(x, causal=True, return_weights=True)
        np.testing.assert_allclose(alone[0], weights[i], rtol=1e-12, atol=1e-12)
    t = torch.from_numpy
    as_torch = qkv.MultiHeadAttention(t(base.w_q), t(base.w_k), t(base.w_v), t(base.w_o), h, b_q=t(base.b_q),
                                      b_k=t(base.b_k), b_v=t(base.b_v), b_o=t(base.b_o), rope=base.rope,
                                      q_norm=RMSNorm(t(qn.weight)), k_norm=RMSNorm(t(kn.weight)), scale=0.3,
                                      score_mod=soft_cap(2.0))
    np.testing.assert_allclose(as_torch(t(x), causal=True).numpy(), expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="q_norm"):
        qkv.MultiHeadAttention(base.w_q, base.w_k, base.w_v, base.w_o, h, q_norm=RMSNorm(np.ones(5)))


def test_rope_attention_factor_scales_cos_and_sin():
    x = rng.standard_normal((2, 5, 6))
    plain, scaled = RoPE(6), RoPE(6, attention_factor=1.25)
    np.testing.assert_allclose(scaled(x, np.arange(5)), 1.25 * plain(x, np.arange(5)), rtol=1e-13)
    with pytest.raises(ValueError, match="attention_factor"):
        RoPE(6, attention_factor=float("inf"))
