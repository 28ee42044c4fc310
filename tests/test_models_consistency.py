"""A checkpoint is checked for consistency at load, every family alike (issue 20 part 1).

config.json and the weights must agree: a tensor the model uses and the weights lack, or one the weights
hold and the model never reads (extra layers, biases a flag switches off) is named; flags the weights
contradict are refused; RoPE settings that would compute NaN are refused; a model whose forward pass
overflows is refused, never printed as tokens; a file that is a directory, a FIFO or a device is named
as what it is. Each case fails on the code before the check (noted where it loaded silently).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from model_fixtures import copy_of, reference

torch = pytest.importorskip("torch")

import qkv  # noqa: E402
from qkv import models  # noqa: E402
from qkv.cli import main  # noqa: E402

TEXT = "The cat sat on the mat."


def _edit_config(directory, **changes):
    path = directory / "config.json"
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def _edit_tensors(directory, change):
    path = directory / "model.safetensors"
    tensors = {k: v.copy() for k, v in load_file(str(path)).items()}
    change(tensors)
    save_file(tensors, str(path), metadata={"format": "pt"})


def _error(directory) -> str:
    with pytest.raises(qkv.InputError) as caught:
        models.load(directory).logits(TEXT)
    return str(caught.value)


def _one_line(capsys, *argv) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1 and lines[0].startswith("qkv: error: "), captured
    return lines[0]


@pytest.fixture(params=["gpt2", "mistral", "qwen2", "gemma2", "mixtral", "gpt_neox", "opt"])
def family(request, tmp_path):
    name = request.param
    return name, copy_of(tmp_path, name)


def test_a_config_with_fewer_layers_than_the_weights_is_refused(family):
    """Loaded silently before for every decoder (BERT alone refused it)."""
    name, directory = family
    key = "n_layer" if name == "gpt2" else "num_hidden_layers"
    data = json.loads((directory / "config.json").read_text())
    layers = data[key]
    _edit_config(directory, **{key: layers - 1}, **({"layer_types": data["layer_types"][:-1]} if "layer_types" in data else {}))
    message = _error(directory)
    from qkv.errors import plural

    assert f"says {plural(layers - 1, 'layer')} but the weights hold {layers} or more" in message and "not used" in message


def test_a_tensor_the_model_does_not_use_is_named(family):
    """An extra tensor was ignored before."""
    name, directory = family
    _edit_tensors(directory, lambda t: t.__setitem__("extra.projection.weight", np.ones((3, 3), np.float32)))
    message = _error(directory)
    assert "model.safetensors: extra.projection.weight: is not used by the model" in message


def test_a_tensor_the_model_uses_and_the_weights_lack_is_named(family):
    name, directory = family
    victim = {"gpt2": "transformer.h.0.ln_2.bias", "mistral": "model.layers.0.mlp.up_proj.weight",
              "qwen2": "model.layers.1.self_attn.k_proj.bias", "gemma2": "model.layers.2.post_feedforward_layernorm.weight",
              "mixtral": "model.layers.1.block_sparse_moe.experts.3.w2.weight",
              "gpt_neox": "gpt_neox.layers.1.attention.query_key_value.bias",
              "opt": "model.decoder.embed_positions.weight"}[name]
    _edit_tensors(directory, lambda t: t.pop(victim))
    message = _error(directory)
    assert f"model.safetensors: {victim}: tensor missing" in message


def test_qwen2_uses_its_qkv_biases_whatever_attention_bias_says(tmp_path):
    """transformers builds Qwen2's q/k/v with bias=True always; qkv dropped them when the config said false
    (logits differed by 1.71)."""
    directory = copy_of(tmp_path, "qwen2")
    _edit_config(directory, attention_bias=False)
    model = models.load(directory)
    assert model.config.bias_qkv and model.blocks[0].attention.b_k is not None
    ids = model.token_ids(TEXT)
    with torch.no_grad():
        expected = reference(directory)(torch.as_tensor(ids)[None]).logits[0].numpy()
    np.testing.assert_allclose(model.logits(TEXT), expected, rtol=0, atol=1e-5)


def test_llama_flags_the_weights_contradict_are_refused(tmp_path):
    directory = copy_of(tmp_path, "llama-mqa")
    _edit_config(directory, attention_bias=True)                        # the weights have no biases
    assert "model.layers.0.self_attn.q_proj.bias: tensor missing" in _error(directory)
    directory = copy_of(tmp_path / "b", "qwen2")
    _edit_config(directory, model_type="llama", attention_bias=False)   # biases the config switches off
    message = _error(directory)
    assert "_proj.bias: is not used by the model" in message and "nor are" in message


def test_bert_as_a_decoder_is_refused(tmp_path):
    """is_decoder true ran bidirectionally before (weights differed by 0.85 from transformers' causal BERT)."""
    directory = copy_of(tmp_path, "bert")
    _edit_config(directory, is_decoder=True)
    assert "config.json: is_decoder: True is not supported (a causal BERT" in _error(directory)
    _edit_config(directory, is_decoder=False, position_embedding_type="relative_key")
    assert "transformers 5 ignores this setting too" in _error(directory)


@pytest.mark.parametrize("changes, field", [
    ({"rope_theta": float("inf")}, "rope_theta"),
    ({"rope_theta": 1e-300}, "rope_theta"),
    ({"rope_parameters": {"rope_type": "linear", "rope_theta": 10000.0, "factor": 1e-300}}, "rope_scaling"),
    ({"rope_parameters": {"rope_type": "linear", "rope_theta": 10000.0, "factor": float("inf")}}, "rope_parameters"),
])
def test_rope_settings_that_compute_nan_are_refused_in_one_line(tmp_path, capsys, changes, field):
    """Infinity and a factor of 1e-300 ended in a traceback; θ = 1e-300 gave an all-NaN model."""
    directory = copy_of(tmp_path, "llama-mqa")
    data = json.loads((directory / "config.json").read_text())
    data.pop("rope_parameters", None)
    data.update(changes)
    (directory / "config.json").write_text(json.dumps(data))
    line = _one_line(capsys, "generate", "--model", str(directory), "the cat")
    assert f"config.json: {field}:" in line


def test_a_model_whose_forward_overflows_is_refused_everywhere(tmp_path, capsys):
    """One weight of 3e38: `generate` printed `<pad> p nan` with exit 0, heads / inspect --format json crashed."""
    directory = copy_of(tmp_path, "llama-mqa")

    def huge(tensors):
        tensors["model.layers.0.mlp.down_proj.weight"][:, :] = 3e38
    _edit_tensors(directory, huge)
    with pytest.raises(qkv.InputError, match="forward pass is not finite: layer 0's output"):
        models.load(directory).logits(TEXT)
    d = str(directory)
    for argv in (["generate", "--model", d, "the cat"], ["generate", "--model", d, "the cat", "--json"],
                 ["heads", "--model", d, "the cat sat on the mat", "--probe", "4"],
                 ["inspect", "--model", d, "the cat", "--format", "json"],
                 ["inspect", "--model", d, "the cat", "--layer", "0", "--head", "1", "--format", "json"]):
        assert "not finite" in _one_line(capsys, *argv)


def test_bert_whose_forward_overflows_is_refused(tmp_path):
    directory = copy_of(tmp_path, "bert")

    def huge(tensors):
        tensors["encoder.layer.1.output.dense.weight"][:, :] = 3e38
    _edit_tensors(directory, huge)
    with pytest.raises(qkv.InputError, match="forward pass is not finite: layer 1's output"):
        models.load(directory).encode(["a cat"])


def test_a_temperature_that_underflows_is_refused(tmp_path, capsys):
    """1e-300 is 0 in float32: sampling drew from NaN."""
    directory = copy_of(tmp_path, "gpt2")
    line = _one_line(capsys, "generate", "--model", str(directory), "the cat", "--sample", "--temperature", "1e-300")
    assert "temperature" in line and "0 in float32" in line
    line = _one_line(capsys, "generate", "--model", str(directory), "the cat", "--sample", "--temperature", "1e-40")
    assert "temperature" in line and "overflow float32" in line


def test_generate_json_is_strict_json(tmp_path, capsys):
    directory = copy_of(tmp_path, "gpt2")
    capsys.readouterr()
    assert main(["generate", "--model", str(directory), "the cat", "-n", "3", "--json", "--sample", "--seed", "1"]) == 0

    def refuse(constant):
        raise AssertionError(f"bare {constant} in the JSON")
    json.loads(capsys.readouterr().out, parse_constant=refuse)


@pytest.mark.parametrize("file", ["config.json", "tokenizer.json", "model.safetensors"])
@pytest.mark.parametrize("kind, words", [("directory", "is a directory"), ("fifo", "is a named pipe"),
                                         ("zero", "is a character device")])
def test_a_model_file_of_the_wrong_kind_is_named_as_what_it_is(tmp_path, capsys, file, kind, words):
    """Each was reported as "missing" before (and a FIFO could hang the reader)."""
    directory = copy_of(tmp_path, "gpt2")
    path = directory / file
    path.unlink()
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    line = _one_line(capsys, "generate", "--model", str(directory), "the cat")
    assert file in line and words in line and "missing" not in line


@pytest.mark.parametrize("name, embeddings", [("gpt2", "transformer.wte.weight"), ("opt", "model.decoder.embed_tokens.weight"),
                                              ("gemma2", "model.embed_tokens.weight")])
def test_a_tied_model_may_also_hold_its_lm_head(tmp_path, name, embeddings):
    """Some checkpoints save lm_head.weight beside the embeddings it is tied to (transformers ignores it);
    old GPT-2 / GPT-NeoX files hold causal-mask buffers. Neither is an unused tensor."""
    directory = copy_of(tmp_path, name)
    before = models.load(directory).logits(TEXT)

    def add(tensors):
        tensors["lm_head.weight"] = tensors[embeddings].copy()
        if name == "gpt2":
            tensors["transformer.h.0.attn.bias"] = np.tril(np.ones((1, 1, 8, 8), np.float32))
    _edit_tensors(directory, add)
    np.testing.assert_array_equal(models.load(directory).logits(TEXT), before)


def test_flags_that_change_the_computation_are_used_or_refused(tmp_path):
    """Gemma 2's use_bidirectional_attention (the causal mask kept by eager attention, dropped by sdpa): refused. Older GPT-NeoX configs name
    θ rotary_emb_base: read as rope_theta."""
    directory = copy_of(tmp_path, "gemma2")
    _edit_config(directory, use_bidirectional_attention=True)
    assert "config.json: use_bidirectional_attention: true is refused for gemma2" in _error(directory)
    directory = copy_of(tmp_path / "b", "gpt_neox")
    data = json.loads((directory / "config.json").read_text())
    data["rotary_emb_base"], data["rotary_pct"] = 1234.0, data["rope_parameters"]["partial_rotary_factor"]
    del data["rope_parameters"]
    (directory / "config.json").write_text(json.dumps(data))
    assert models.load(directory).blocks[0].attention.rope.theta == 1234.0
