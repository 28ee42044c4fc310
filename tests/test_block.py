"""qkv.block: TransformerBlock, norms, MLP and RoPE against torch's layers and transformers' GPT-2 and Llama."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import qkv
from qkv.block import MLP, LayerNorm, RMSNorm, TransformerBlock
from qkv.mha import KVCache, MultiHeadAttention
from qkv.rope import RoPE

torch.manual_seed(0)
TOL = dict(rtol=1e-10, atol=1e-10)


def _randomise(module):
    with torch.no_grad():  # torch initialises biases to zero and norms to one; make them count
        for p in module.parameters():
            if p.ndim == 1:
                p.normal_()
    return module.eval()


def torch_encoder_layer(norm_first, activation, d=20, heads=4, f=33):
    torch.manual_seed(1)
    layer = torch.nn.TransformerEncoderLayer(d, heads, f, dropout=0.0, activation=activation, batch_first=True,
                                             norm_first=norm_first, dtype=torch.float64)
    return _randomise(layer)


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("t", [1, 7])
def test_encoder_block_matches_torch_encoder_layer(norm_first, activation, t):
    layer = torch_encoder_layer(norm_first, activation)
    block = TransformerBlock.from_torch(layer)
    assert block.norm_position == ("pre" if norm_first else "post")
    x = torch.randn(2, t, 20, dtype=torch.float64)
    blocked = ~torch.from_numpy(qkv.causal_mask(t))           # torch: True = not allowed
    with torch.no_grad():
        expected = layer(x, src_mask=blocked)
        torch.testing.assert_close(block(x, causal=True), expected, **TOL)
        # the same weights as NumPy arrays, and an explicit mask instead of causal=
        numpy_block = _to_numpy(block)
        np.testing.assert_allclose(numpy_block(x.numpy(), mask=qkv.causal_mask(t)), expected.numpy(), **TOL)


@pytest.mark.parametrize("norm_first", [True, False])
def test_decoder_block_matches_torch_decoder_layer(norm_first):
    torch.manual_seed(2)
    layer = _randomise(torch.nn.TransformerDecoderLayer(12, 3, 17, dropout=0.0, activation="gelu", batch_first=True,
                                                        norm_first=norm_first, dtype=torch.float64))
    block = TransformerBlock.from_torch(layer)
    x = torch.randn(3, 5, 12, dtype=torch.float64)
    memory = torch.randn(3, 9, 12, dtype=torch.float64)
    lengths = torch.tensor([9, 4, 1])
    ignore = torch.arange(9)[None, :] >= lengths[:, None]
    causal = ~torch.from_numpy(qkv.causal_mask(5))
    with torch.no_grad():
        expected = layer(x, memory, tgt_mask=causal, memory_key_padding_mask=ignore)
        y, weights, cross = block(x, memory=memory, memory_mask=qkv.padding_mask(lengths, 9), causal=True,
                                  return_weights=True)
    torch.testing.assert_close(y, expected, **TOL)
    assert weights.shape == (3, 3, 5, 5) and cross.shape == (3, 3, 5, 9)
    assert float(cross[1, :, :, 4:].abs().max()) == 0.0      # padded memory keys get no weight


def test_gpt2_blocks_match_transformers():
    """Pre-norm LayerNorm, tanh GELU, Conv1D weights already (in, out): transformers' GPT2Model, float64."""
    from transformers import GPT2Config, GPT2Model

    config = GPT2Config(n_embd=24, n_head=3, n_layer=2, n_positions=32, vocab_size=50, resid_pdrop=0.0,
                        embd_pdrop=0.0, attn_pdrop=0.0, activation_function="gelu_new")
    model = _randomise(GPT2Model(config).double())
    with torch.no_grad():
        model.wpe.weight.zero_()                               # the blocks alone: no position embeddings
    blocks = []
    for h in model.h:
        d = 24
        w_qkv, b_qkv = h.attn.c_attn.weight.detach(), h.attn.c_attn.bias.detach()      # (D, 3D), (3D,)
        mha = MultiHeadAttention(w_qkv[:, :d], w_qkv[:, d:2 * d], w_qkv[:, 2 * d:], h.attn.c_proj.weight.detach(), 3,
                                 b_q=b_qkv[:d], b_k=b_qkv[d:2 * d], b_v=b_qkv[2 * d:], b_o=h.attn.c_proj.bias.detach())
        mlp = MLP(w_in=h.mlp.c_fc.weight.detach(), b_in=h.mlp.c_fc.bias.detach(), w_out=h.mlp.c_proj.weight.detach(),
                  b_out=h.mlp.c_proj.bias.detach(), activation="gelu_tanh")
        blocks.append(TransformerBlock(
            attention=mha, norm1=LayerNorm(h.ln_1.weight.detach(), h.ln_1.bias.detach(), h.ln_1.eps), mlp=mlp,
            norm2=LayerNorm(h.ln_2.weight.detach(), h.ln_2.bias.detach(), h.ln_2.eps)))
    x = torch.randn(2, 7, 24, dtype=torch.float64)
    with torch.no_grad():
        states = model(inputs_embeds=x, output_hidden_states=True).hidden_states
    y = x
    for i, block in enumerate(blocks):
        y = block(y, causal=True)
        if i < len(blocks) - 1:                                 # the last hidden state is after ln_f
            torch.testing.assert_close(y, states[i + 1], **TOL)
    torch.testing.assert_close(model.ln_f(y), states[-1], **TOL)


def llama(heads=4, kv_heads=2, head_dim=6, d=20, f=23, theta=500.0):
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(hidden_size=d, intermediate_size=f, num_hidden_layers=2, num_attention_heads=heads,
                         num_key_value_heads=kv_heads, head_dim=head_dim, vocab_size=40, max_position_embeddings=64,
                         rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": theta},
                         attn_implementation="sdpa")  # eager takes its softmax in float32
    torch.manual_seed(3)
    return _randomise(LlamaModel(config).double())


def llama_block(layer, theta, *, numpy=False):
    a, m = layer.self_attn, layer.mlp

    def w(linear):
        value = linear.weight.detach().T
        return value.numpy() if numpy else value

    def v(tensor):
        return tensor.detach().numpy() if numpy else tensor.detach()

    rope = RoPE(a.head_dim, theta=theta, float32_angles=True)
    mha = MultiHeadAttention(w(a.q_proj), w(a.k_proj), w(a.v_proj), w(a.o_proj), a.config.num_attention_heads,
                             a.config.num_key_value_heads, rope=rope)
    mlp = MLP(w_in=w(m.up_proj), w_gate=w(m.gate_proj), w_out=w(m.down_proj), activation="silu")
    norms = [RMSNorm(v(n.weight), n.variance_epsilon, float32_compute=True)
             for n in (layer.input_layernorm, layer.post_attention_layernorm)]
    return TransformerBlock(attention=mha, norm1=norms[0], mlp=mlp, norm2=norms[1])


@pytest.mark.parametrize("heads,kv_heads", [(4, 2), (4, 1), (5, 5)])
def test_llama_layers_match_transformers(heads, kv_heads):
    """RMSNorm, SwiGLU, RoPE (transformers' float32 angles), GQA/MQA: LlamaModel's hidden states, float64."""
    model = llama(heads, kv_heads)
    blocks = [llama_block(layer, 500.0) for layer in model.layers]
    x = torch.randn(2, 9, 20, dtype=torch.float64)
    with torch.no_grad():
        states = model(inputs_embeds=x, output_hidden_states=True).hidden_states
        y = blocks[0](x, causal=True)
        torch.testing.assert_close(y, states[1], **TOL)
        y_np = llama_block(model.layers[0], 500.0, numpy=True)(x.numpy(), causal=True)
        np.testing.assert_allclose(y_np, states[1].numpy(), rtol=1e-7, atol=1e-7)   # NumPy's float32 cos differs by an ulp
        torch.testing.assert_close(model.norm(blocks[1](y, causal=True)), states[2], **TOL)


def test_decoding_with_a_cache_equals_the_full_run():
    """A pre-norm RoPE block decoding token by token (KV cache, positions offset by its length) equals one causal run."""
    model = llama()
    block = llama_block(model.layers[0], 500.0, numpy=True)
    x = np.random.default_rng(4).standard_normal((2, 8, 20))
    full = block(x, causal=True)
    cache = KVCache()
    steps = [block(x[:, :3], causal=True, cache=cache)]
    for t in range(3, 8):
        steps.append(block(x[:, t:t + 1], causal=True, cache=cache))
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, rtol=1e-12, atol=1e-12)
    assert cache.length == 8


def test_a_failing_decoder_step_leaves_the_cache_as_it_was():
    """The cross-attention fails (memory of the wrong width) after the self-attention stored its keys:
    the block undoes that, so the next step is as if the failed one had never been made."""
    torch.manual_seed(3)
    layer = _randomise(torch.nn.TransformerDecoderLayer(12, 3, 17, dropout=0.0, batch_first=True, norm_first=True,
                                                        dtype=torch.float64))
    block = _to_numpy(TransformerBlock.from_torch(layer))
    rng = np.random.default_rng(11)
    x, memory = rng.standard_normal((2, 4, 12)), rng.standard_normal((2, 5, 12))
    full = block(x, memory=memory, causal=True)
    cache = KVCache()
    first = block(x[:, :2], memory=memory, causal=True, cache=cache)
    with pytest.raises(ValueError, match="memory has shape"):
        block(x[:, 2:3], memory=memory[..., :7], causal=True, cache=cache)
    assert cache.length == 2
    rest = [block(x[:, t:t + 1], memory=memory, causal=True, cache=cache) for t in (2, 3)]
    np.testing.assert_allclose(np.concatenate([first, *rest], axis=1), full, rtol=1e-12, atol=1e-12)


def test_training_through_the_block_gives_torchs_gradients():
    """detach=False: the block computes with the module's own parameters; backward reaches them."""
    layer = torch_encoder_layer(True, "gelu")
    block = TransformerBlock.from_torch(layer, detach=False)
    x = torch.randn(2, 6, 20, dtype=torch.float64, requires_grad=True)
    target = torch.randn(2, 6, 20, dtype=torch.float64)
    blocked = ~torch.from_numpy(qkv.causal_mask(6))
    expected_loss = ((layer(x, src_mask=blocked) - target) ** 2).sum()
    expected = torch.autograd.grad(expected_loss, [x, *layer.parameters()])
    loss = ((block(x, causal=True) - target) ** 2).sum()
    got = torch.autograd.grad(loss, [x, *layer.parameters()])
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, **TOL)


def test_recorded_steps_are_the_computed_values():
    layer = torch_encoder_layer(True, "gelu")
    block = _to_numpy(TransformerBlock.from_torch(layer))
    x = np.random.default_rng(5).standard_normal((4, 20))
    trace = qkv.Trace()
    y, weights = block(x, causal=True, return_weights=True, record=trace)
    names = trace.names()
    assert names[0] == "x" and names[-1] == "output"
    for name in ("attention/norm", "attention/q_heads", "attention/weights", "attention/y", "attention/residual",
                 "mlp/norm", "mlp/hidden", "mlp/activated", "mlp/out", "mlp/residual"):
        assert name in names
    assert names.index("attention/residual") < names.index("mlp/norm")
    np.testing.assert_array_equal(trace["attention/weights"].value, weights)
    np.testing.assert_array_equal(trace["output"].value, y)
    np.testing.assert_allclose(trace["mlp/residual"].value, trace["attention/residual"].value + trace["mlp/out"].value)
    # unrecorded, the same numbers (the NumPy fast path of the MLP: in-place bias + GELU)
    np.testing.assert_allclose(block(x, causal=True), y, rtol=1e-13, atol=1e-13)


def test_norms_match_torch():
    x = torch.randn(3, 5, 11, dtype=torch.float64)
    w, b = torch.randn(11, dtype=torch.float64), torch.randn(11, dtype=torch.float64)
    expected = torch.nn.functional.layer_norm(x, (11,), w, b, 1e-5)
    torch.testing.assert_close(LayerNorm(w, b, 1e-5)(x), expected, **TOL)
    np.testing.assert_allclose(LayerNorm(w.numpy(), b.numpy(), 1e-5)(x.numpy()), expected.numpy(), **TOL)
    expected = torch.nn.functional.rms_norm(x, (11,), w, 1e-6)
    torch.testing.assert_close(RMSNorm(w, 1e-6)(x), expected, **TOL)
    np.testing.assert_allclose(RMSNorm(w.numpy(), 1e-6)(x.numpy()), expected.numpy(), **TOL)
    # float32_compute: within float32 rounding of the float64 norm, returned in float64
    for norm_x, norm_w in ((x, w), (x.numpy(), w.numpy())):
        rounded = RMSNorm(norm_w, 1e-6, float32_compute=True)(norm_x)
        assert rounded.dtype == norm_x.dtype
        np.testing.assert_allclose(np.asarray(rounded), expected.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh", "relu", "silu"])
def test_mlp_activations_match_torch(activation):
    functions = {"gelu": torch.nn.functional.gelu, "relu": torch.relu, "silu": torch.nn.functional.silu,
                 "gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh")}
    g = torch.Generator().manual_seed(6)
    x, w_in, w_gate = (torch.randn(s, generator=g, dtype=torch.float64) * 2 for s in ((4, 6), (6, 9), (6, 9)))
    w_out, b_in, b_out = torch.randn(9, 6, dtype=torch.float64), torch.randn(9, dtype=torch.float64), torch.randn(6, dtype=torch.float64)
    act = functions[activation]
    plain = act(x @ w_in + b_in) @ w_out + b_out
    gated = (act(x @ w_gate) * (x @ w_in + b_in)) @ w_out + b_out
    for mlp, expected in ((MLP(w_in=w_in, b_in=b_in, w_out=w_out, b_out=b_out, activation=activation), plain),
                          (MLP(w_in=w_in, b_in=b_in, w_gate=w_gate, w_out=w_out, b_out=b_out, activation=activation), gated)):
        torch.testing.assert_close(mlp(x), expected, **TOL)
        numpy_mlp = MLP(**{k: (v.numpy() if isinstance(v, torch.Tensor) else v) for k, v in vars(mlp).items()})
        np.testing.assert_allclose(numpy_mlp(x.numpy()), expected.numpy(), **TOL)


def test_rope_matches_complex_rotation_and_transformers():
    """Rotate-half RoPE = multiplying (x_i + i·x_{i+d/2}) by e^{i·pos·θ_i}; float32_angles = transformers' own."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 7, 10))
    positions = np.arange(5, 12)
    theta = 10000.0 ** (-np.arange(0, 10, 2) / 10)
    z = (x[..., :5] + 1j * x[..., 5:]) * np.exp(1j * positions[:, None] * theta)
    expected = np.concatenate([z.real, z.imag], axis=-1)
    np.testing.assert_allclose(RoPE(10)(x, positions), expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(RoPE(10)(torch.from_numpy(x), positions), torch.from_numpy(expected), rtol=1e-12, atol=1e-12)
    # partial rotary: the columns past rotary_dim pass through
    partial = RoPE(10, rotary_dim=4)(x, positions)
    np.testing.assert_array_equal(partial[..., 4:], x[..., 4:])
    # transformers' rotary embedding (float32 angles) and apply_rotary_pos_emb, bit for bit in float64
    model = llama(head_dim=10, theta=10000.0)
    q, k = torch.from_numpy(x), torch.from_numpy(x[:, :1] * 2)
    cos, sin = model.rotary_emb(q, torch.from_numpy(positions)[None])
    expected_q, expected_k = apply_rotary_pos_emb(q, k, cos, sin)
    rope = RoPE(10, float32_angles=True)
    torch.testing.assert_close(rope(q, positions), expected_q, rtol=0, atol=1e-15)
    torch.testing.assert_close(rope(k, positions), expected_k, rtol=0, atol=1e-15)


def test_rope_scores_depend_on_relative_position_only():
    rng = np.random.default_rng(9)
    q, k = rng.standard_normal(8), rng.standard_normal(8)
    rope = RoPE(8, theta=100.0)

    def score(m, n):
        return float(rope(q[None], np.array([m]))[0] @ rope(k[None], np.array([n]))[0])

    assert score(3, 1) == pytest.approx(score(10, 8), abs=1e-12)
    assert score(0, 0) == pytest.approx(float(q @ k), abs=1e-12)
    assert abs(score(3, 1) - score(3, 2)) > 1e-3


def test_rope_is_recorded_before_and_after_rotation():
    mha = MultiHeadAttention.random(12, 2, n_kv_heads=1, rope=RoPE(6))
    x = np.random.default_rng(10).standard_normal((5, 12))
    trace = qkv.Trace()
    mha(x, causal=True, record=trace)
    names = trace.names()
    assert names.index("q_heads") < names.index("q_rotated") < names.index("scores")
    assert names.index("k_heads") < names.index("k_rotated")
    np.testing.assert_allclose(trace["q_rotated"].value, RoPE(6)(trace["q_heads"].value, np.arange(5)), rtol=1e-13)
    assert trace["rope_angles"].shape == (5, 3)


def test_impossible_blocks_are_refused():
    mha = MultiHeadAttention.random(8, 2)
    mlp = MLP(w_in=np.ones((8, 16)), w_out=np.ones((16, 8)))
    norm = LayerNorm(np.ones(8))
    with pytest.raises(ValueError, match="norm_position"):
        TransformerBlock(attention=mha, norm1=norm, mlp=mlp, norm2=norm, norm_position="middle")
    with pytest.raises(ValueError, match="cross_norm"):
        TransformerBlock(attention=mha, norm1=norm, mlp=mlp, norm2=norm, cross_attention=mha)
    with pytest.raises(ValueError, match="mlp maps width 6"):
        TransformerBlock(attention=mha, norm1=norm, mlp=MLP(w_in=np.ones((6, 4)), w_out=np.ones((4, 6))), norm2=norm)
    with pytest.raises(ValueError, match="norm2 has weight of shape"):
        TransformerBlock(attention=mha, norm1=norm, mlp=mlp, norm2=RMSNorm(np.ones(7)))
    block = TransformerBlock(attention=mha, norm1=norm, mlp=mlp, norm2=norm)
    with pytest.raises(ValueError, match="memory= is needed exactly"):
        block(np.ones((3, 8)), memory=np.ones((2, 8)))
    with pytest.raises(ValueError, match="eps must be a finite"):
        LayerNorm(np.ones(8), eps=float("inf"))
    with pytest.raises(ValueError, match="activation 'tanh'"):
        MLP(w_in=np.ones((8, 16)), w_out=np.ones((16, 8)), activation="tanh")
    with pytest.raises(ValueError, match="rope rotates heads of width 6"):
        MultiHeadAttention(mha.w_q, mha.w_k, mha.w_v, mha.w_o, 2, rope=RoPE(6))
    with pytest.raises(ValueError, match="rotary_dim"):
        RoPE(6, rotary_dim=3)


def _to_numpy(block: TransformerBlock) -> TransformerBlock:
    """The same block with every torch tensor replaced by a NumPy array."""
    import dataclasses

    def convert(value):
        if isinstance(value, torch.Tensor):
            return value.detach().numpy()
        if dataclasses.is_dataclass(value):
            fields = {f.name: convert(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
            return type(value)(**fields)
        return value

    return convert(block)
