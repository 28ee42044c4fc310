"""The next token (qkv.models.next_token) against transformers' own models, built on the spot with random
weights (model_fixtures): the probabilities against transformers' float32 logits (softmax(ℓ / T) in
float64, ≤ 1e-5), and each head's move of the last position, ‖z^h·W_O^h‖, against an independent float64
computation — transformers' float64 model gives the input of its attention output projection (a forward
hook), W_O is read from the saved safetensors files, the norms are taken here in NumPy."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from qkv import InputError, models

from model_fixtures import built, float64_softmax, keep_float64_everywhere, reference

TEXT = "A dog chased the cat around the garden"
TEMPERATURES = (0.1, 0.5, 1.0, 2.0, 5.0)
# every family of decoder qkv opens, as its block differs: learned positions (gpt2), RoPE + GQA (llama-gqa),
# q/k/v biases (qwen2), a sliding window shorter than the text (mistral), parallel attention + MLP
# (gpt_neox), post-norm (opt-postnorm), N_out(Y) added to the stream and soft-caps (gemma2), partial RoPE (phi)
CHECKPOINT_NAMES = ("gpt2", "llama-gqa", "qwen2", "mistral")
FAMILY_NAMES = ("gpt_neox", "opt-postnorm", "gemma2", "phi")
RESIDUAL = {"opt-postnorm": "post-norm", "gemma2": "normed"}
# the attention output projection of layer l, by module name, in transformers' families
OUT_PROJECTION = re.compile(r"(?:^|\.)(?:layers|h)\.(\d+)\.(?:self_attn|attn|attention)\.(?:o_proj|c_proj|dense|out_proj)$")


@pytest.fixture(scope="module")
def directories() -> dict[str, Path]:
    return {name: built(name) for name in CHECKPOINT_NAMES + FAMILY_NAMES}


def _saved_tensors(directory: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    tensors = {}
    for path in sorted(directory.glob("*.safetensors")):
        tensors.update(load_file(str(path)))
    return tensors


def _reference_logits(directory: Path, text: str, model) -> np.ndarray:
    import torch

    hf = reference(directory)
    ids = torch.from_numpy(model.token_ids(text)[None])
    with torch.no_grad():
        return hf(ids).logits[0, -1].double().numpy()


def _reference_head_norms(directory: Path, text: str, model) -> tuple[np.ndarray, list[int], np.ndarray, np.ndarray]:
    """(L, H) ‖z^h·W_O^h‖ at the last position, float64: z^h from transformers' float64 model (what enters its
    output projection), W_O from the checkpoint's files; the layers; (L,) ‖Y[t]‖, what leaves the output
    projection there (its bias included); (L,) ‖b_O‖ from the files (0 without a bias)."""
    import torch

    hf = reference(directory, dtype=torch.float64)
    keep_float64_everywhere(hf)
    tensors = _saved_tensors(directory)
    inputs, outputs, layers = {}, {}, {}
    for name, module in hf.named_modules():
        match = OUT_PROJECTION.search(name)
        if match:
            layer = int(match.group(1))
            layers[layer] = (name, type(module).__name__)
            module.register_forward_pre_hook(lambda mod, args, layer=layer: inputs.__setitem__(layer, args[0][0, -1]))
            module.register_forward_hook(lambda mod, args, out, layer=layer: outputs.__setitem__(layer, out[0, -1]))
    ids = torch.from_numpy(model.token_ids(text)[None])
    with torch.no_grad(), float64_softmax():
        hf(ids)
    heads = model.config.n_heads
    norms = np.zeros((len(layers), heads))
    y_norms, b_norms = np.zeros(len(layers)), np.zeros(len(layers))
    for layer, (name, kind) in sorted(layers.items()):
        y_norms[layer] = np.linalg.norm(outputs[layer].numpy())
        if name + ".bias" in tensors:
            b_norms[layer] = np.linalg.norm(tensors[name + ".bias"].astype(np.float64))
        weight = tensors[name + ".weight"].astype(np.float64)
        w_o = weight if kind == "Conv1D" else weight.T                 # (H·Dv, D): GPT-2's Conv1D stores (in, out)
        z = inputs[layer].numpy()                                      # (H·Dv,)
        width = z.shape[0] // heads
        for h in range(heads):
            norms[layer, h] = np.linalg.norm(z[h * width:(h + 1) * width] @ w_o[h * width:(h + 1) * width])
    return norms, sorted(layers), y_norms, b_norms


@pytest.mark.parametrize("name", CHECKPOINT_NAMES + FAMILY_NAMES)
def test_probabilities_are_transformers_softmax(directories, name):
    model = models.load(directories[name])
    found = models.next_token(model, TEXT, k=7, temperatures=TEMPERATURES)
    logits = _reference_logits(directories[name], TEXT, model)
    assert np.array_equal(found.top, np.argsort(-logits, kind="stable")[:7])
    for t in TEMPERATURES:
        scaled = logits / t
        want = np.exp(scaled - scaled.max())
        want /= want.sum()
        np.testing.assert_allclose(found.probabilities(t), want, atol=1e-5, rtol=0, err_msg=f"T = {t}")
        np.testing.assert_allclose(found.top_probabilities(t), want[found.top], atol=1e-5, rtol=0)
    shown = found.to_dict(temperature=0.7)
    assert shown["temperatures"] == list(TEMPERATURES)
    for row, t in zip(shown["probabilities"], TEMPERATURES):
        np.testing.assert_allclose(row, found.top_probabilities(t), rtol=0, atol=0)
    assert [item["id"] for item in shown["top"]] == found.top.tolist()
    assert shown["tokens"][-1] == shown["last"] == model.tokens(TEXT)[-1]


@pytest.mark.parametrize("name", CHECKPOINT_NAMES + FAMILY_NAMES)
def test_head_moves_match_a_float64_computation_from_the_saved_weights(directories, name):
    want, layers, y_norms, b_norms = _reference_head_norms(directories[name], TEXT, models.load(directories[name]))
    assert layers == list(range(want.shape[0])) and want.min() > 0
    exact = models.next_token(models.load(directories[name], dtype=np.float64), TEXT)
    np.testing.assert_allclose(exact.head_norms, want, rtol=1e-9, atol=0)
    np.testing.assert_allclose(exact.attention_norms, y_norms, rtol=1e-9, atol=0)       # ‖Y[t]‖, b_O included
    np.testing.assert_allclose(exact.bias_norms, b_norms, rtol=1e-12, atol=0)
    single = models.next_token(models.load(directories[name]), TEXT)         # the float32 model a page shows
    np.testing.assert_allclose(single.head_norms, want, rtol=1e-5, atol=0)
    np.testing.assert_allclose(exact.head_shares, want / want.sum(axis=1, keepdims=True), rtol=1e-9)
    assert set(exact.residual) == {RESIDUAL.get(name, "y")}
    ranking = exact.ranking()
    flat = sorted(((-want[l, h], l, h) for l in range(want.shape[0]) for h in range(want.shape[1])))
    assert [(l, h) for l, h, _ in ranking] == [(l, h) for _, l, h in flat]


def test_the_heads_parts_add_up_to_the_attention_output(directories):
    """‖Y‖ is the whole output at the last position: the triangle inequality holds against the parts' sum."""
    found = models.next_token(models.load(directories["qwen2"], dtype=np.float64), TEXT)
    assert np.all(found.attention_norms > 0)
    assert np.all(found.attention_norms <= found.head_norms.sum(axis=1) + found.bias_norms + 1e-12)


def test_bad_requests_are_named(directories):
    model = models.load(directories["gpt2"])
    for bad in (0, -1.0, float("nan"), float("inf"), "1", True):
        with pytest.raises(InputError) as caught:
            models.next_token(model, TEXT, temperatures=(bad,))
        assert caught.value.field == "temperatures"
    for bad in (0, 51, 2.0, True, model.config.vocab_size + 1):
        with pytest.raises(InputError) as caught:
            models.next_token(model, TEXT, k=bad)
        assert caught.value.field == "k"
    with pytest.raises(InputError) as caught:
        models.next_token(models.load("minilm"), TEXT)
    assert caught.value.field == "model" and "BertEncoder" in caught.value.problem
    assert "다음 토큰" in caught.value.say("ko")
    with pytest.raises(InputError):
        models.next_token(model, "")
