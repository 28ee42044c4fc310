"""qkv.models.load on Hugging Face checkpoint directories: GPT-2, Llama (GQA, MQA), Qwen2, Mistral, BERT.

Every checkpoint is a tiny random model made here with transformers from a config and saved with
save_pretrained, with a byte-level BPE tokenizer trained by the `tokenizers` trainer (see
model_fixtures.py): nothing is downloaded. The reference is transformers' own model loaded from the
same directory. Tolerances:
- float32: hidden states, logits and every head's attention weights (eager `output_attentions`)
  ≤ 1e-5 (measured ≤ 2e-6);
- float64: ≤ 1e-10 (measured ≤ 2e-15) against transformers in float64 with SDPA attention. transformers
  computes three things in float32 whatever the model's dtype — RMSNorm, RoPE's angles and cos/sin,
  and the eager softmax — so for this comparison its RMSNorm and rotary embedding run the same
  formulas in float64 (model_fixtures.keep_float64_norms / keep_float64_rope) and attention is SDPA;
- generation: token for token, greedy and sampled (temperature, top-k, seed), against `generate`.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import struct

import numpy as np
import pytest

from model_fixtures import CHECKPOINTS, built, keep_float64_norms, keep_float64_rope, reference

torch = pytest.importorskip("torch")

import qkv  # noqa: E402
from qkv import models  # noqa: E402
from qkv.cli import main  # noqa: E402
from qkv.models.decoder import CausalLM  # noqa: E402
from qkv.models.generate import choose, softmax  # noqa: E402

DECODERS = [name for name, spec in CHECKPOINTS.items() if spec[0] != "bert"]
TEXT = "The cat sat on the mat. the the cat sat"          # 11–12 tokens: longer than Mistral's window of 6


@pytest.fixture(scope="session")
def checkpoints():
    return {name: built(name) for name in CHECKPOINTS}


@pytest.fixture(scope="session")
def loaded(checkpoints):
    cache = {}

    def get(name: str, dtype=np.float32):
        if (name, dtype) not in cache:
            cache[name, dtype] = models.load(checkpoints[name], dtype=dtype)
        return cache[name, dtype]

    return get


@pytest.fixture(scope="session")
def references(checkpoints):
    cache = {}

    def get(name: str, dtype=None, attn: str = "eager"):
        if (name, dtype, attn) not in cache:
            model = reference(checkpoints[name], dtype=dtype, attn=attn)
            if dtype is torch.float64 and name not in ("gpt2", "gpt2-1layer", "bert"):
                keep_float64_norms(model)
                keep_float64_rope(model)
            cache[name, dtype, attn] = model
        return cache[name, dtype, attn]

    return get


def _run(model, ids, **options):
    with torch.no_grad():
        return model(torch.as_tensor(ids)[None], **options)


# ------------------------------------------------------------------ loading
def test_load_dispatches_on_model_type(loaded):
    assert isinstance(loaded("bert"), models.BertEncoder)
    for name in DECODERS:
        assert isinstance(loaded(name), CausalLM)
    gqa, mqa, qwen, mistral = loaded("llama-gqa").config, loaded("llama-mqa").config, loaded("qwen2").config, \
        loaded("mistral").config
    assert (gqa.n_heads, gqa.n_kv_heads, gqa.head_dim, gqa.rope_theta, gqa.tie_embeddings) == (4, 2, 24, 500000.0, False)
    assert (mqa.n_kv_heads, mqa.tie_embeddings, mqa.n_layers) == (1, True, 1)
    assert (qwen.bias_qkv, qwen.bias_out, qwen.rope_theta) == (True, False, 1e6)
    assert (mistral.head_dim, mistral.hidden_size, mistral.sliding_window) == (24, 64, 6)   # head_dim ≠ D / H
    assert loaded("gpt2").config.head_dim == 5 and loaded("gpt2").config.mlp == "gelu_tanh"


def test_llama3_frequency_scaling_equals_transformers(loaded, references):
    rope = loaded("llama3-scaled").blocks[0].attention.rope
    expected = references("llama3-scaled").model.rotary_emb.inv_freq.numpy()          # float32, (12,)
    plain = 1.0 / 500000.0 ** (np.arange(0, 24, 2) / 24)
    np.testing.assert_allclose(rope.frequencies(), expected, rtol=1e-6)
    assert np.sum(np.abs(expected / plain - 1) > 1e-3) >= 4          # the scaling changes most frequencies
    assert loaded("llama3-scaled").config.rope_scaling[-1] == ("rope_type", "llama3")


def test_every_layer_is_a_qkv_transformer_block(loaded):
    from qkv.block import RMSNorm, TransformerBlock

    model = loaded("llama-gqa")
    assert all(isinstance(b, TransformerBlock) for b in model.blocks)
    block = model.blocks[1]
    assert isinstance(block.norm1, RMSNorm) and block.mlp.w_gate is not None
    assert block.attention.n_kv_heads == 2 and block.attention.rope.theta == 500000.0


def test_weights_are_the_checkpoint_tensors_in_row_vector_layout(checkpoints, loaded):
    from safetensors.numpy import load_file

    # Llama: nn.Linear stores (out, in); qkv holds (in, out) — the explicit transpose (a view, no copy)
    shards = {}
    for path in checkpoints["llama-gqa"].glob("model-*.safetensors"):
        shards.update(load_file(str(path)))
    attention = loaded("llama-gqa").blocks[2].attention
    np.testing.assert_array_equal(attention.w_k, shards["model.layers.2.self_attn.k_proj.weight"].T)
    assert attention.w_k.shape == (96, 2 * 24)
    np.testing.assert_array_equal(loaded("llama-gqa").arrays.unembedding, shards["lm_head.weight"].T)   # untied
    # GPT-2's Conv1D already stores (in, out): c_attn (D, 3D) is [W_Q | W_K | W_V], not transposed
    tensors = load_file(str(checkpoints["gpt2"] / "model.safetensors"))
    gpt = loaded("gpt2")
    np.testing.assert_array_equal(gpt.blocks[0].attention.w_v, tensors["transformer.h.0.attn.c_attn.weight"][:, 40:])
    # tied embeddings: the unembedding is the embedding matrix's transpose, the same memory
    assert np.shares_memory(gpt.arrays.unembedding, gpt.arrays.token_embeddings)
    qwen = loaded("qwen2")
    assert np.shares_memory(qwen.arrays.unembedding, qwen.arrays.token_embeddings)
    assert qwen.blocks[0].attention.b_q is not None and qwen.blocks[0].attention.b_o is None


# ------------------------------------------------------------------ parity with transformers
@pytest.mark.parametrize("name", DECODERS)
def test_hidden_states_logits_and_every_head_match_transformers_float32(name, loaded, references):
    model = loaded(name)
    ids = model.token_ids(TEXT)
    out = model.forward(ids, hidden_states=True, weights=True)
    ref = _run(references(name), ids, output_hidden_states=True, output_attentions=True)
    n = model.config.n_layers
    assert len(out.hidden_states) == n + 1 and out.weights.shape == (n, model.config.n_heads, len(ids), len(ids))
    for i in range(n):   # transformers' hidden_states[i] is layer i's input; its last one is after the final norm
        np.testing.assert_allclose(out.hidden_states[i], ref.hidden_states[i][0].numpy(), rtol=0, atol=1e-5)
        np.testing.assert_allclose(out.weights[i], ref.attentions[i][0].numpy(), rtol=0, atol=1e-5)
    np.testing.assert_allclose(model.final_norm(out.hidden_states[n]), ref.hidden_states[n][0].numpy(), rtol=0, atol=1e-5)
    np.testing.assert_allclose(out.logits, ref.logits[0].numpy(), rtol=0, atol=1e-5)
    np.testing.assert_array_equal(model.attention_weights(TEXT), out.weights)


@pytest.mark.parametrize("name", DECODERS)
def test_hidden_states_and_logits_match_transformers_float64(name, loaded, references):
    model = loaded(name, np.float64)
    ids = model.token_ids(TEXT)
    out = model.forward(ids, hidden_states=True)
    ref = _run(references(name, torch.float64, "sdpa"), ids, output_hidden_states=True)
    n = model.config.n_layers
    for i in range(n):
        np.testing.assert_allclose(out.hidden_states[i], ref.hidden_states[i][0].numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(out.logits, ref.logits[0].numpy(), rtol=0, atol=1e-10)


def test_bert_directory_runs_the_bert_encoder(loaded, references):
    model = loaded("bert")
    ids = np.asarray([model.tokenizer.encode(TEXT).ids])
    ref = _run(references("bert"), ids[0], output_attentions=True, output_hidden_states=True)
    np.testing.assert_allclose(model.attention_weights(TEXT), np.stack([a[0].numpy() for a in ref.attentions]),
                               rtol=0, atol=1e-5)
    np.testing.assert_allclose(model.hidden_states(TEXT)[-1], ref.hidden_states[-1][0].numpy(), rtol=0, atol=1e-5)


def test_incremental_decoding_with_the_cache_equals_the_full_forward(loaded):
    for name in ("gpt2", "llama-gqa", "mistral"):
        model = loaded(name)
        ids = model.token_ids(TEXT)
        full = model.forward(ids).logits
        caches = model.new_caches()
        steps = [model.forward(ids[:3], caches=caches).logits]
        steps += [model.forward(ids[i:i + 1], caches=caches).logits for i in range(3, len(ids))]
        assert caches[0].length == len(ids)
        np.testing.assert_allclose(np.concatenate(steps), full, rtol=0, atol=1e-5)


# ------------------------------------------------------------------ generation
@pytest.mark.parametrize("name", DECODERS)
def test_greedy_generation_equals_transformers_token_for_token(name, loaded, references):
    model = loaded(name)
    generation = model.generate("The cat", 12)
    prompt = generation.prompt_ids
    ref = references(name)
    with torch.no_grad():
        out = ref.generate(torch.as_tensor(prompt)[None], max_new_tokens=12, do_sample=False, pad_token_id=0,
                           return_dict_in_generate=True, output_logits=True)
    assert generation.ids.tolist() == out.sequences[0, len(prompt):].tolist()
    # the next-token distributions along the way
    np.testing.assert_allclose(generation.logits, torch.cat(out.logits).numpy(), rtol=0, atol=1e-5)
    np.testing.assert_allclose(generation.probabilities.sum(axis=1), 1.0, rtol=0, atol=1e-5)
    assert generation.tokens == model.token_strings(generation.ids)


@pytest.mark.parametrize("name, temperature, top_k, top_p, seed", [
    ("gpt2", 1.0, None, None, 0), ("llama-gqa", 0.7, 20, None, 3), ("qwen2", 1.3, 5, None, 11),
    ("mistral", 1.0, 50, 0.8, 7), ("llama3-scaled", 1.0, None, 0.5, 5)])
def test_sampling_equals_transformers_token_for_token(name, temperature, top_k, top_p, seed, loaded, references):
    model = loaded(name)
    options = dict(sample=True, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    generation = model.generate("The cat", 16, **options)
    prompt = generation.prompt_ids
    torch.manual_seed(seed)
    with torch.no_grad():
        out = references(name).generate(torch.as_tensor(prompt)[None], max_new_tokens=16, do_sample=True,
                                         temperature=temperature, top_k=top_k or 0, top_p=top_p or 1.0, pad_token_id=0)
    assert generation.ids.tolist() == out[0, len(prompt):].tolist()
    again = model.generate("The cat", 16, **options)
    assert again.ids.tolist() == generation.ids.tolist()


def test_generation_stops_at_end_of_sequence_like_transformers(loaded, references):
    model = loaded("llama-mqa")
    first = int(model.generate("The cat", 1).ids[0])
    stopping = dataclasses.replace(model, config=dataclasses.replace(model.config, eos_token_ids=(first,)))
    generation = stopping.generate("The cat", 10)
    with torch.no_grad():
        out = references("llama-mqa").generate(torch.as_tensor(generation.prompt_ids)[None], max_new_tokens=10,
                                               do_sample=False, eos_token_id=first, pad_token_id=0)
    assert generation.ids.tolist() == [first] == out[0, len(generation.prompt_ids):].tolist()
    assert generation.stopped == "eos"
    assert len(stopping.generate("The cat", 10, stop_at_eos=False).ids) == 10


def test_generation_refuses_bad_options_in_one_line(loaded):
    model = loaded("gpt2")
    for options, words in [(dict(max_new_tokens=0), "max_new_tokens: must be a positive integer"),
                           (dict(max_new_tokens=60), "exceed the 64 positions"),
                           (dict(sample=True, temperature=0.0), "temperature: must be a positive number"),
                           (dict(sample=True, top_k=0), "top_k: must be a positive integer"),
                           (dict(prompt=""), "the prompt has no tokens")]:
        prompt = options.pop("prompt", "The cat sat on the mat.")
        with pytest.raises(qkv.InputError, match=words):
            model.generate(prompt, **{"max_new_tokens": 4, **options})


def test_numpy_noise_draws_from_the_distribution():
    """The exponential race argmax(p / E), E ~ Exp(1), picks token i with probability p_i (NumPy's stream)."""
    from qkv.models.generate import _Noise

    logits = np.log(np.array([0.5, 0.25, 0.15, 0.1], dtype=np.float32))
    noise = _Noise(123, "numpy")
    n = 20000
    counts = np.bincount([choose(logits, sample=True, temperature=1.0, top_k=None, noise=noise) for _ in range(n)],
                         minlength=4)
    expected = softmax(logits) * n
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected))           # 5 standard deviations
    top2 = [choose(logits, sample=True, temperature=1.0, top_k=2, noise=noise) for _ in range(2000)]
    assert set(top2) == {0, 1}
    # top-p 0.7: the smallest set of likeliest tokens holding ≥ 0.7 is {0, 1} (0.5 + 0.25)
    nucleus = [choose(logits, sample=True, temperature=1.0, top_k=None, top_p=0.7, noise=noise) for _ in range(2000)]
    assert set(nucleus) == {0, 1}


def test_next_token_probabilities(loaded, references):
    model = loaded("qwen2")
    probabilities = model.next_token_probabilities(TEXT)
    ref = _run(references("qwen2"), model.token_ids(TEXT)).logits[0, -1]
    np.testing.assert_allclose(probabilities, torch.softmax(ref.double(), -1).numpy(), rtol=0, atol=1e-6)


# ------------------------------------------------------------------ looking inside
def test_trace_of_one_head_uses_its_key_value_head_rope_and_the_causal_mask(loaded):
    model = loaded("llama-gqa")
    weights = model.attention_weights(TEXT)
    trace = model.trace(TEXT, layer=1, head=3, query="cat")
    np.testing.assert_allclose(trace["weights"].value[0], weights[1, 3], rtol=0, atol=1e-6)
    assert trace.meta["kv_head"] == 1 and trace.meta["kv_group"] == [2, 3] and trace.meta["causal"] is True
    assert trace.meta["query"] == model.tokens(TEXT).index(" cat")
    for step in ("rope_angles", "q_rotated", "k_rotated", "mask"):
        assert step in trace
    q, q_rotated = trace["q_heads"].value, trace["q_rotated"].value                 # (1, T, 24) each
    np.testing.assert_allclose(np.linalg.norm(q, axis=-1), np.linalg.norm(q_rotated, axis=-1), rtol=1e-6)
    np.testing.assert_array_equal(q[0, 0], q_rotated[0, 0])                        # position 0: no rotation
    assert np.all(np.triu(trace["weights"].value[0], 1) == 0)                      # nothing from the future


def test_trace_of_a_layer_is_the_block_the_model_runs(loaded):
    model = loaded("qwen2")
    states = model.hidden_states(TEXT)
    trace = model.trace(TEXT, layer=1)
    np.testing.assert_allclose(trace["output"].value, states[2], rtol=0, atol=1e-5)
    assert "attention/q_rotated" in trace and "mlp/gate" in trace
    whole = model.trace(TEXT)
    assert whole.names() == [f"layer {i}/weights" for i in range(2)]
    assert whole.meta["kv_groups"] == [[0, 1], [2, 3]]


def test_heads_command_runs_on_a_decoder(checkpoints, capsys, loaded, tmp_path):
    """`qkv heads` reads models through BERT's batch interface (states); decoders answer it too."""
    model = loaded("qwen2")
    ids = model.token_ids(TEXT)
    states = list(model.states(ids[None], np.array([len(ids)]), weights=True))
    np.testing.assert_array_equal(np.stack([w[0] for _, w in states[1:]]), model.attention_weights(TEXT))
    status, out, err = _cli(capsys, "heads", "--model", str(checkpoints["qwen2"]), TEXT, "--probe", "8",
                            "--json", str(tmp_path / "heads.json"))
    assert status == 0, err
    assert json.loads((tmp_path / "heads.json").read_text())["tokens"] == model.tokens(TEXT)


def test_sliding_window_mask(loaded):
    model = loaded("mistral")
    weights = model.attention_weights(TEXT)
    t = weights.shape[-1]
    i, j = np.indices((t, t))
    assert np.all(weights[:, :, (j > i) | (j <= i - 6)] == 0)                     # causal and 6 keys back at most
    assert np.all(weights[:, :, (j <= i) & (j > i - 6)] > 0)


# ------------------------------------------------------------------ the command line
def _cli(capsys, *argv):
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize("name", ["gpt2", "llama-gqa", "qwen2"])
def test_inspect_every_family(name, checkpoints, capsys, loaded):
    status, out, err = _cli(capsys, "inspect", "--model", str(checkpoints[name]), TEXT)
    assert status == 0, err
    assert "causal" in out
    if name != "gpt2":
        assert "query heads 0, 1 share key/value head 0" in out and "RoPE" in out
    status, out, err = _cli(capsys, "inspect", "--model", str(checkpoints[name]), TEXT, "--layer", "0", "--head", "2",
                            "--format", "json")
    assert status == 0, err
    data = json.loads(out)
    np.testing.assert_allclose(data["weights"], loaded(name).attention_weights(TEXT)[0, 2], rtol=0, atol=1e-6)
    assert data["kv_head"] == loaded(name).config.kv_head_of(2) and data["causal"] is True


def test_inspect_one_head_shows_rope_before_and_after(checkpoints, capsys):
    status, out, err = _cli(capsys, "inspect", "--model", str(checkpoints["llama-gqa"]), TEXT, "--layer", "1",
                            "--head", "3", "--query", "cat")
    assert status == 0, err
    assert "key/value head 1" in out and "RoPE" in out and "q before rotation" in out and "q after rotation" in out


def test_inspect_in_korean(checkpoints, capsys):
    status, out, err = _cli(capsys, "inspect", "--model", str(checkpoints["llama-mqa"]), TEXT, "--layer", "0",
                            "--head", "1", "--lang", "ko")
    assert status == 0, err
    assert "인과 마스크" in out and "다중 Query 어텐션" in out and "Key/Value 헤드 0 공유: Query 헤드 0, 1, 2, 3" in out
    assert "회전 전 q" in out and "회전 후 k" in out


def test_generate_command(checkpoints, capsys, loaded, tmp_path):
    status, out, err = _cli(capsys, "generate", "--model", str(checkpoints["gpt2"]), "The cat", "--max-new-tokens", "6",
                            "--json")
    assert status == 0, err
    data = json.loads(out)
    assert data["ids"] == loaded("gpt2").generate("The cat", 6).ids.tolist()
    assert len(data["steps"]) == 6 and all(0 < s["probability"] <= 1 for s in data["steps"])
    status, out, err = _cli(capsys, "generate", "--model", str(checkpoints["llama-mqa"]), "The cat", "-n", "5",
                            "--sample", "--temperature", "0.8", "--top-k", "10", "--seed", "4")
    assert status == 0, err
    assert loaded("llama-mqa").generate("The cat", 5, sample=True, temperature=0.8, top_k=10, seed=4).text in out


# ------------------------------------------------------------------ bad checkpoints
def _broken(checkpoints, tmp_path, source: str, name: str):
    directory = tmp_path / name
    shutil.copytree(checkpoints[source], directory)
    return directory


def _edit_config(directory, **changes):
    path = directory / "config.json"
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def test_bad_checkpoints_are_one_line_exit_2_nothing_written(checkpoints, tmp_path, capsys):
    cases = []
    d = _broken(checkpoints, tmp_path, "gpt2", "no-tokenizer")
    (d / "tokenizer.json").unlink()
    cases.append((d, "tokenizer.json: missing"))
    d = _broken(checkpoints, tmp_path, "llama-mqa", "wrong-shape")
    _edit_config(d, intermediate_size=41)
    cases.append((d, "model.layers.0.mlp.gate_proj.weight: has shape (40, 96), config.json implies (41, 96)"))
    d = _broken(checkpoints, tmp_path, "qwen2", "truncated")
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[: len(data) // 2])
    cases.append((d, "not a readable safetensors file"))
    d = _broken(checkpoints, tmp_path, "gpt2", "unknown-type")
    _edit_config(d, model_type="mamba")
    cases.append((d, "model_type: 'mamba' is not supported (qkv runs: bert, gpt2, llama, mistral, qwen2, qwen3"))
    d = _broken(checkpoints, tmp_path, "gpt2", "pickled")
    (d / "model.safetensors").rename(d / "pytorch_model.bin")
    cases.append((d, "never unpickles"))
    d = _broken(checkpoints, tmp_path, "llama-gqa", "missing-shard")
    next(iter(sorted(d.glob("model-0000*.safetensors")))).unlink()
    cases.append((d, "is not in the directory"))
    d = _broken(checkpoints, tmp_path, "gpt2", "other-family")
    shutil.copy(checkpoints["llama-mqa"] / "config.json", d / "config.json")
    cases.append((d, "has no tensor 'model.embed_tokens.weight': these weights do not look like config.json's "
                     "model_type 'llama'"))
    d = _broken(checkpoints, tmp_path, "llama-gqa", "bad-gqa")
    _edit_config(d, num_key_value_heads=3)
    cases.append((d, "num_key_value_heads: 3 does not divide num_attention_heads 4"))
    d = _broken(checkpoints, tmp_path, "llama-gqa", "scaled-rope")
    _edit_config(d, rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "factor": 4.0})
    cases.append((d, "longrope's short_factor must be a list of finite positive numbers, got None"))
    d = _broken(checkpoints, tmp_path, "llama-gqa", "unknown-rope")
    _edit_config(d, rope_parameters={"rope_type": "ntk", "rope_theta": 10000.0, "factor": 4.0})
    cases.append((d, "rope_type 'ntk' is not supported"))
    for directory, words in cases:
        for argv in (["inspect", "--model", str(directory), "hi", "--out", str(tmp_path / "out.txt")],
                     ["generate", "--model", str(directory), "hi", "--out", str(tmp_path / "out.txt")]):
            status, out, err = _cli(capsys, *argv)
            assert status == 2 and out == "", (directory.name, err)
            assert err.count("\n") == 1 and err.startswith("qkv: error: ") and words in err, (directory.name, err)
            assert not (tmp_path / "out.txt").exists()


def test_gpt2_names_without_the_transformer_prefix(checkpoints, tmp_path, loaded):
    """The hub's gpt2 files hold GPT2Model's names (wte.weight, h.0.…), with no "transformer." prefix."""
    import transformers

    base = transformers.GPT2LMHeadModel.from_pretrained(checkpoints["gpt2"]).transformer
    base.save_pretrained(tmp_path / "bare")
    shutil.copy(checkpoints["gpt2"] / "tokenizer.json", tmp_path / "bare")
    bare = models.load(tmp_path / "bare")
    np.testing.assert_array_equal(bare.logits(TEXT), loaded("gpt2").logits(TEXT))


def test_bfloat16_weights_are_widened_exactly(checkpoints, tmp_path):
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(checkpoints["llama-mqa"]).to(torch.bfloat16)
    model.save_pretrained(tmp_path / "bf16")
    shutil.copy(checkpoints["llama-mqa"] / "tokenizer.json", tmp_path / "bf16")
    header_length = struct.unpack("<Q", (tmp_path / "bf16" / "model.safetensors").read_bytes()[:8])[0]
    assert b"BF16" in (tmp_path / "bf16" / "model.safetensors").read_bytes()[8:8 + header_length]
    loaded = models.load(tmp_path / "bf16")
    expected = model.model.layers[0].self_attn.q_proj.weight.detach().float().numpy().T
    np.testing.assert_array_equal(loaded.blocks[0].attention.w_q, expected)


def test_inspect_shows_and_finds_the_pieces_of_a_byte_level_model(checkpoints, capsys):
    """`qkv inspect` on GPT-2 shows " cat" (byte-level BPE's stored "Ġcat" decoded), and --query cat finds it."""
    from qkv.cli import main

    code = main(["inspect", TEXT, "--model", str(checkpoints["gpt2"]), "--layer", "0", "--head", "1", "--query", "cat",
                 "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert "".join(out["tokens"]) == TEXT and not any("Ġ" in token for token in out["tokens"])
    assert out["tokens"][out["query"]] == " cat"
