"""Every decoder family qkv runs, against transformers on tiny random checkpoints (issue 20 parts 1–3).

GPT-NeoX (parallel and sequential residual, partial rotary, odd head counts), OPT (pre- and post-norm,
learned positions at offset 2), Phi (one shared norm, partial rotary, lm_head bias), Phi-3 (fused
qkv_proj / gate_up_proj), Qwen3 (per-head q/k RMSNorm), Gemma (RMSNorm (1 + w), ·√D embeddings, GeGLU),
Gemma 2 (sandwich norms, attention and final soft-capping, query_pre_attn_scalar, a window of 5 on
alternating layers), Gemma 3 (+ q/k norms, a local RoPE θ), Mixtral (top-2 of 4 experts), and the
configurations transformers accepts that qkv refused before (GPT-2's layer-scaled and unscaled
attention and quick_gelu/swish/gelu_python, Llama's yarn and dynamic RoPE with gelu/relu/tanh MLPs,
Qwen2's per-layer sliding windows, bos/eos ids outside the vocabulary). See model_fixtures.FAMILIES.

Tolerances: float32 every head's weights and the logits ≤ 1e-5 (measured ≤ 1.1e-6); float64 ≤ 1e-10
(measured ≤ 2.1e-15) against transformers in float64 with its float32 islands — RMSNorm (Gemma's
(1 + w) too), RoPE's frequencies and cos/sin, Mixtral's router softmax and the eager softmax —
recomputed in float64 (model_fixtures.keep_float64_everywhere, float64_softmax). Gemma keeps √D in a
float32 buffer in both precisions; qkv does the same. Greedy and seeded sampling: token for token.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from model_fixtures import FAMILIES, built, float64_softmax, keep_float64_everywhere

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from qkv import models  # noqa: E402
from qkv.cli import main  # noqa: E402

NAMES = list(FAMILIES)
TEXT = "The cat sat on the mat. the the cat sat on"       # 12–13 tokens: longer than the windows of 5


@pytest.fixture(scope="module")
def directories():
    return {name: built(name) for name in NAMES}


class _quiet:
    def __enter__(self):
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._catch.__exit__(*exc)


@pytest.fixture(scope="module")
def loaded(directories):
    cache = {}

    def get(name, dtype=np.float32):
        if (name, dtype) not in cache:
            with _quiet():
                cache[name, dtype] = models.load(directories[name], dtype=dtype)
        return cache[name, dtype]

    return get


@pytest.fixture(scope="module")
def references(directories):
    cache = {}

    def get(name, float64=False):
        if (name, float64) not in cache:
            extra = {"experts_implementation": "eager"} if name == "mixtral" and float64 else {}
            model = transformers.AutoModelForCausalLM.from_pretrained(directories[name], attn_implementation="eager",
                                                                      **extra).eval()
            if float64:
                model = model.double()
                keep_float64_everywhere(model)
            cache[name, float64] = model
        return cache[name, float64]

    return get


def _reference_run(model, ids, float64=False):
    with torch.no_grad(), (float64_softmax() if float64 else _quiet()):
        out = model(torch.as_tensor(ids)[None], output_attentions=True, output_hidden_states=True)
    return out.logits[0].numpy(), np.stack([a[0].numpy() for a in out.attentions])


@pytest.mark.parametrize("name", NAMES)
def test_every_head_and_the_logits_match_transformers_float32(name, loaded, references):
    model = loaded(name)
    ids = model.token_ids(TEXT)
    logits, weights = _reference_run(references(name), ids)
    ours = model.forward(ids, weights=True)
    assert ours.weights.shape == weights.shape
    np.testing.assert_allclose(ours.weights, weights, rtol=0, atol=1e-5)
    np.testing.assert_allclose(ours.logits, logits, rtol=0, atol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_every_head_and_the_logits_match_transformers_float64(name, loaded, references):
    model = loaded(name, np.float64)
    ids = model.token_ids(TEXT)
    logits, weights = _reference_run(references(name, float64=True), ids, float64=True)
    ours = model.forward(ids, weights=True)
    np.testing.assert_allclose(ours.weights, weights, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.logits, logits, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", NAMES)
def test_greedy_and_seeded_sampling_equal_transformers_token_for_token(name, loaded, references):
    model = loaded(name)
    greedy = model.generate(TEXT, 8, stop_at_eos=False)
    prompt = torch.as_tensor(greedy.prompt_ids)[None]
    with torch.no_grad():
        expected = references(name).generate(prompt, max_new_tokens=8, min_new_tokens=8, do_sample=False,
                                              pad_token_id=0)
    assert greedy.ids.tolist() == expected[0, prompt.shape[1]:].tolist()
    sampled = model.generate(TEXT, 8, sample=True, temperature=0.9, top_k=40, seed=5, stop_at_eos=False)
    torch.manual_seed(5)
    with torch.no_grad():
        expected = references(name).generate(prompt, max_new_tokens=8, min_new_tokens=8, do_sample=True,
                                              temperature=0.9, top_k=40, top_p=1.0, pad_token_id=0)
    assert sampled.ids.tolist() == expected[0, prompt.shape[1]:].tolist()


@pytest.mark.parametrize("name", ["gemma2", "gemma3", "qwen2-window", "mixtral", "opt", "gpt_neox"])
def test_decoding_with_the_cache_equals_the_full_forward(name, loaded):
    """One token at a time through the KV caches (windows shorter than the text, learned positions, experts)."""
    model = loaded(name)
    ids = model.token_ids(TEXT)
    full = model.forward(ids).logits
    caches = model.new_caches()
    steps = [model.forward(ids[:3], caches=caches).logits[-1]]
    steps += [model.forward(ids[i:i + 1], caches=caches).logits[0] for i in range(3, len(ids))]
    np.testing.assert_allclose(np.stack(steps), full[2:], rtol=0, atol=2e-5)


@pytest.mark.parametrize("name", ["gemma2", "qwen3", "gpt_neox", "phi", "mixtral", "opt-postnorm", "gpt2-layer-scaled"])
def test_one_head_traced_alone_gives_the_models_weights(name, loaded):
    """trace(layer=, head=) runs that head alone (its slices, q/k norms, scale, soft-cap, partial RoPE,
    the layer's window) and reproduces the weights the whole model computed."""
    model = loaded(name)
    every = model.attention_weights(TEXT)
    for layer in range(model.config.n_layers):
        head = (layer + 1) % model.config.n_heads
        trace = model.trace(TEXT, layer=layer, head=head)
        np.testing.assert_allclose(trace["weights"].value[0], every[layer, head], rtol=0, atol=1e-6)
    derivation = model.trace(TEXT, derivation=True)
    assert derivation.meta["derivation"] and f"layer {model.config.n_layers - 1}/weights" in derivation.names()
    np.testing.assert_allclose(derivation["layer 0/weights"].value, every[0], rtol=0, atol=1e-6)
    if name == "gemma2":           # the soft-cap is a step of its own: cap·tanh(s / cap)
        scaled, capped = derivation["layer 0/scaled_scores"].value, derivation["layer 0/modified_scores"].value
        np.testing.assert_allclose(capped, 4.0 * np.tanh(scaled / 4.0), rtol=1e-6, atol=1e-6)


def test_windows_alternate_by_layer(loaded):
    """Gemma 2: sliding (5 keys), full, sliding; Qwen2 with use_sliding_window: layers ≥ max_window_layers (1)."""
    for name, windowed in (("gemma2", [True, False, True]), ("qwen2-window", [False, True, True])):
        weights = loaded(name).attention_weights(TEXT)
        t = weights.shape[-1]
        i, j = np.indices((t, t))
        for layer, has_window in enumerate(windowed):
            far = weights[layer][:, (j <= i - 5)]
            assert np.all(far == 0) if has_window else np.all(far > 0), (name, layer)


def test_bos_and_eos_outside_the_vocabulary_warn_and_load(directories):
    with pytest.warns(UserWarning) as caught:
        model = models.load(directories["gpt2-big-ids"])
    said = [str(w.message) for w in caught]
    assert any("bos_token_id 50256 is outside the vocabulary of 300" in m for m in said)
    assert any("eos_token_id 50256 is outside the vocabulary of 300" in m for m in said)
    assert model.config.eos_token_ids == (50256,)
    assert len(model.generate("The cat", 4).ids) == 4                       # never produced: runs to length


def _cli(capsys, *argv):
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize("name", ["gpt_neox", "opt", "phi", "phi3", "qwen3", "gemma", "gemma2", "gemma3", "mixtral"])
def test_inspect_heads_and_generate_on_the_command_line(name, directories, loaded, capsys, tmp_path):
    d = str(directories[name])
    status, out, err = _cli(capsys, "inspect", "--model", d, TEXT)
    assert status == 0 and "causal" in out, err
    status, out, err = _cli(capsys, "inspect", "--model", d, TEXT, "--layer", "1", "--head", "1", "--format", "json")
    assert status == 0, err
    assert json.loads(out)["format"] == "qkv-inspect"
    status, out, err = _cli(capsys, "heads", "--model", d, TEXT, "--probe", "8", "--json", str(tmp_path / "h.json"))
    assert status == 0, err
    assert json.loads((tmp_path / "h.json").read_text())["tokens"] == loaded(name).tokens(TEXT)
    status, out, err = _cli(capsys, "generate", "--model", d, "The cat", "-n", "4", "--json")
    assert status == 0, err
    assert json.loads(out)["ids"] == loaded(name).generate("The cat", 4).ids.tolist()


_MEASURE = """
import sys
from pathlib import Path
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) * 1024
import qkv.models, safetensors, tokenizers, numpy
import array_api_compat.numpy    # imported on first use since `import qkv` went light: a module, not the weights
before = rss()
model = qkv.models.load(sys.argv[1])
print(rss() - before, sum(p.stat().st_size for p in Path(sys.argv[1]).glob("*.safetensors")))
"""


@pytest.mark.parametrize("name, cls_name, kwargs", [
    ("gpt_neox", "GPTNeoXConfig", dict(hidden_size=256, num_hidden_layers=3, num_attention_heads=4, intermediate_size=1024,
                                       rotary_pct=0.25)),
    ("mixtral", "MixtralConfig", dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      intermediate_size=512, num_local_experts=4, num_experts_per_tok=2)),
    ("gemma2", "Gemma2Config", dict(hidden_size=256, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                                    head_dim=64, intermediate_size=768))])
def test_memory_after_load_is_about_the_weights_size(name, cls_name, kwargs, tmp_path):
    """Float32 tensors are used where the file's memory map holds them; converted ones (GPT-NeoX's re-ordered
    q/k/v, Gemma's 1 + w) replace their maps. Measured in a fresh process: RSS growth ≈ the weights' size."""
    import subprocess
    import sys

    from model_fixtures import train_tokenizer

    config = getattr(transformers, cls_name)(vocab_size=6000, pad_token_id=0, bos_token_id=1, eos_token_id=2, **kwargs)
    torch.manual_seed(0)
    with _quiet():
        transformers.AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path / name)
    train_tokenizer(bos=False).save(str(tmp_path / name / "tokenizer.json"))
    result = subprocess.run([sys.executable, "-c", _MEASURE, str(tmp_path / name)], capture_output=True, text=True,
                            timeout=300, check=True)
    grown, size = map(int, result.stdout.split())
    assert size > 10 * 2**20
    assert 0.9 * size <= grown <= 1.1 * size + 8 * 2**20, (grown / 2**20, size / 2**20)


def test_inspect_says_what_the_block_does(directories, capsys):
    status, out, err = _cli(capsys, "inspect", "--model", str(directories["gemma2"]), TEXT)
    assert status == 0, err
    assert "sliding window on layers 0, 2: only the last 5 keys" in out
    assert "4·tanh(s / 4)" in out and "3·tanh(z / 3)" in out and "scores scaled by 0.2887" in out
    status, out, err = _cli(capsys, "inspect", "--model", str(directories["gpt_neox"]), TEXT)
    assert "x + Attn(N₁(x)) + MLP(N₂(x))" in out and "RoPE turns the first 4 of each head's 10 columns" in out
    status, out, err = _cli(capsys, "inspect", "--lang", "ko", "--model", str(directories["mixtral"]), TEXT)
    assert status == 0, err
    assert "MLP는 전문가 4개의 혼합이다. 토큰마다 라우터가 고른 상위 전문가 2개로 보낸다" in out
