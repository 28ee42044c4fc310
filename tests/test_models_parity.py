"""Checkpoints read as transformers reads them (issue 32 §3): the same folder, loaded by transformers and by
qkv, gives the same logits (float32, ≤ 1e-5 absolute), or qkv refuses it in one line (a `qkv.InputError`
naming the file and the field). Never a silent difference.

Each case starts from a tiny random model of a family (model_fixtures.FAMILIES or a config given here),
saves it, then edits the saved folder the way real checkpoints differ: a config flag changed after saving,
a tensor added or removed. transformers 5.25's behaviour on each edit is the reference (read on the same
folder in the same run), so the test follows transformers if it changes.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from model_fixtures import FAMILIES, spread_weights, train_tokenizer

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")

from qkv import InputError, models  # noqa: E402

TEXT = "The cat sat on the mat. the the cat sat on"

# name → (config class, keyword arguments, tokenizer adds BOS)
BASE = dict(FAMILIES)
BASE.update({
    "gpt2": ("GPT2Config", dict(n_embd=20, n_layer=2, n_head=4, n_positions=64), False),
    "llama": ("LlamaConfig", dict(hidden_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                  intermediate_size=40, max_position_embeddings=64), True),
    "qwen2": ("Qwen2Config", dict(hidden_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                  intermediate_size=40, max_position_embeddings=64), False),
    "mistral": ("MistralConfig", dict(hidden_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      intermediate_size=40, max_position_embeddings=64), True),
})


def _build(root, name, *, edit_config=None, **overrides):
    """A random `name` model with config ``overrides``, saved under root; edit_config(dict) then rewrites the
    saved config.json (an edit transformers' config class would not have let us make)."""
    cls_name, kwargs, bos = BASE[name]
    tokenizer = train_tokenizer(bos=bos)
    ids = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
    config = getattr(transformers, cls_name)(vocab_size=tokenizer.get_vocab_size(), **{**ids, **kwargs, **overrides})
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_config(config)
    spread_weights(model)
    directory = root / name
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    if edit_config is not None:
        path = directory / "config.json"
        data = json.loads(path.read_text())
        edit_config(data)
        path.write_text(json.dumps(data))
    return directory


def _tensors(directory):
    return safetensors_torch.load_file(str(directory / "model.safetensors"))


def _save_tensors(directory, tensors):
    safetensors_torch.save_file(tensors, str(directory / "model.safetensors"), metadata={"format": "pt"})


def _reference_logits(directory, ids):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_pretrained(directory, attn_implementation="eager").eval()
    with torch.no_grad():
        return model(torch.as_tensor(ids)[None]).logits[0].numpy()


def _same_or_refused(directory, atol=1e-5):
    """qkv's logits equal transformers' on this folder, or qkv refuses it with an InputError; returns which."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = models.load(directory)
    except InputError as error:
        assert "\n" not in str(error).strip(), str(error)
        assert "config.json" in str(error) or "safetensors" in str(error), str(error)
        return "refused"
    ids = model.token_ids(TEXT)
    logits = _reference_logits(directory, ids)
    ours = model.forward(ids).logits
    np.testing.assert_allclose(ours, logits, rtol=0, atol=atol)
    return "same"


# --- tie_word_embeddings: true, with a saved lm_head.weight that differs from the embeddings ----------------------
TIED = ["gpt2", "llama", "qwen2", "mistral", "qwen3", "gemma", "gemma2", "gemma3", "phi3", "mixtral", "gpt_neox",
        "opt", "phi", "llama-yarn", "qwen2-window", "gpt_neox-sequential"]


def _untied_head_saved_as_tied(data):
    data["tie_word_embeddings"] = True


@pytest.mark.parametrize("name", TIED)
def test_a_saved_head_under_tie_word_embeddings_is_read_as_transformers_reads_it(name, tmp_path):
    directory = _build(tmp_path, name, tie_word_embeddings=False, edit_config=_untied_head_saved_as_tied)
    tensors = _tensors(directory)
    head = [key for key in tensors if key in ("lm_head.weight", "embed_out.weight")]
    assert head, sorted(tensors)          # the saved folder holds a head of its own, different from the embeddings
    assert _same_or_refused(directory) == "same"


# --- an untied config whose folder has no head ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["gpt2", "opt", "llama", "gpt_neox"])
def test_an_untied_config_without_a_saved_head_is_refused(name, tmp_path):
    directory = _build(tmp_path, name, tie_word_embeddings=False)
    tensors = _tensors(directory)
    for key in ("lm_head.weight", "embed_out.weight"):
        tensors.pop(key, None)
    _save_tensors(directory, tensors)
    # transformers fills the missing head with random numbers: no reference to agree with; qkv says so
    with pytest.raises(InputError, match="lm_head|embed_out|tie_word_embeddings"):
        models.load(directory)


# --- partial_rotary_factor where a family ignores it, and where it uses it ---------------------------------------
@pytest.mark.parametrize("name", ["llama", "qwen2", "mistral", "phi3", "mixtral", "qwen3", "gemma"])
def test_partial_rotary_factor_is_read_as_the_family_reads_it(name, tmp_path):
    def edit(data):
        data["partial_rotary_factor"] = 0.5
        if isinstance(data.get("rope_parameters"), dict):
            data["rope_parameters"]["partial_rotary_factor"] = 0.5

    directory = _build(tmp_path, name, edit_config=edit)
    assert _same_or_refused(directory) == "same"


# --- an explicit head_dim on families whose attention splits hidden_size evenly -----------------------------------
@pytest.mark.parametrize("name, head_dim", [("phi", 8), ("phi", 12), ("gpt_neox", 6), ("gpt_neox", 20)])
def test_an_explicit_head_dim_is_read_as_transformers_reads_it(name, head_dim, tmp_path):
    # Phi's attention reads head_dim (its projections have H·head_dim columns); GPT-NeoX's rotary embedding alone does
    directory = _build(tmp_path, name, head_dim=head_dim)
    assert json.loads((directory / "config.json").read_text())["head_dim"] == head_dim
    assert _same_or_refused(directory) == "same"


# --- GPT-NeoX with an odd rotary width ---------------------------------------------------------------------------
@pytest.mark.parametrize("rotary_pct, hidden, heads", [(0.4, 16, 2), (0.3, 30, 3), (0.75, 20, 4)])
def test_gpt_neox_odd_rotary_widths_rotate_what_transformers_rotates(rotary_pct, hidden, heads, tmp_path):
    directory = _build(tmp_path, "gpt_neox", rotary_pct=rotary_pct, hidden_size=hidden, num_attention_heads=heads)
    assert _same_or_refused(directory) == "same"


# --- Gemma 3 with attn_logit_softcapping ---------------------------------------------------------------------
def test_gemma3_follows_transformers_on_attention_soft_capping_and_says_so(tmp_path):
    directory = _build(tmp_path, "gemma3", attn_logit_softcapping=2.0)
    with pytest.warns(UserWarning, match="attn_logit_softcapping"):
        models.load(directory)
    assert _same_or_refused(directory) == "same"


# --- Qwen3 with attention_bias ------------------------------------------------------------------------------
def test_qwen3_attention_bias_biases_q_k_v_and_o_as_transformers(tmp_path):
    directory = _build(tmp_path, "qwen3", attention_bias=True)
    assert any(key.endswith("o_proj.bias") for key in _tensors(directory))
    assert _same_or_refused(directory) == "same"


def test_phi_with_an_odd_rotary_width_is_refused_where_transformers_fails(tmp_path):
    # head_dim 6 × 0.5 = 3 columns: Phi slices 3 columns but its cos table is 4 wide
    directory = _build(tmp_path, "phi", head_dim=6)
    with pytest.raises(RuntimeError):
        _reference_logits(directory, [1, 2, 3])
    with pytest.raises(InputError, match="partial_rotary_factor"):
        models.load(directory)


def test_a_partial_factor_with_scaled_rope_is_refused_where_transformers_fails(tmp_path):
    def edit(data):
        data["rope_parameters"] = {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0,
                                   "partial_rotary_factor": 0.5}

    directory = _build(tmp_path, "llama", edit_config=edit)
    with pytest.raises(RuntimeError):
        _reference_logits(directory, [1, 2, 3])
    with pytest.raises(InputError, match="partial_rotary_factor"):
        models.load(directory)


# --- configs transformers runs that qkv refused (issue 32 §3, the remainder) ---------------------------------
TEXTS = ("The cat sat on the mat. the the cat sat on", "A dog chased the cat around the garden while the birds sang.",
         "Queries ask")


def _same_on_texts(directory, texts=TEXTS):
    """qkv loads the folder (no refusal) and its float32 logits equal transformers' (≤ 1e-5) on every text."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = models.load(directory)
    for text in texts:
        ids = model.token_ids(text)
        np.testing.assert_allclose(model.forward(ids).logits, _reference_logits(directory, ids), rtol=0, atol=1e-5)
    return model


@pytest.mark.parametrize("kv_heads", [4, 2])
def test_phi_qk_layernorm_normalises_each_query_and_key_head_as_transformers(kv_heads, tmp_path):
    directory = _build(tmp_path, "phi", qk_layernorm=True, num_key_value_heads=kv_heads)
    assert any(key.endswith("self_attn.q_layernorm.bias") for key in _tensors(directory))
    model = _same_on_texts(directory)
    # one route: the explained head's trace computes the layer's output the model computed
    trace = model.trace(TEXTS[0], layer=1)
    hidden = model.forward(model.token_ids(TEXTS[0]), hidden_states=True).hidden_states[2]
    np.testing.assert_array_equal(trace["output"].value, hidden)


def test_mixtral_fused_experts_are_read_as_transformers_reads_them(tmp_path):
    directory = _build(tmp_path, "mixtral")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_pretrained(directory)
    fused = tmp_path / "fused"
    model.save_pretrained(fused, save_original_format=False)        # the layout transformers keeps in memory
    (fused / "tokenizer.json").write_bytes((directory / "tokenizer.json").read_bytes())
    names = set(_tensors(fused))
    assert "model.layers.0.mlp.experts.gate_up_proj" in names and not any("block_sparse_moe" in n for n in names)
    _same_on_texts(fused)
    _same_on_texts(directory)                                       # and the original layout still


@pytest.mark.parametrize("name, options", [
    ("opt", dict(word_embed_proj_dim=12)),                                   # project_in / project_out
    ("opt-postnorm", dict(word_embed_proj_dim=12)),                          # as OPT-350m: post-norm and projected
    ("opt", dict(layer_norm_elementwise_affine=False)),
    ("opt-postnorm", dict(layer_norm_elementwise_affine=False, word_embed_proj_dim=28)),
    ("opt", dict(word_embed_proj_dim=12, tie_word_embeddings=False)),
])
def test_opt_projections_and_layernorms_without_weights_are_read_as_transformers(name, options, tmp_path):
    directory = _build(tmp_path, name, **options)
    names = set(_tensors(directory))
    if "word_embed_proj_dim" in options:
        assert "model.decoder.project_in.weight" in names and "model.decoder.project_out.weight" in names
    if options.get("layer_norm_elementwise_affine") is False:
        assert not any("layer_norm" in n for n in names), sorted(names)
    model = _same_on_texts(directory)
    # one route: the explained layer's trace computes the model's own layer output
    trace = model.trace(TEXTS[1], layer=0)
    hidden = model.forward(model.token_ids(TEXTS[1]), hidden_states=True).hidden_states[1]
    np.testing.assert_array_equal(trace["output"].value, hidden)


def _longrope(frequencies, **extra):
    # short factors near 1, long factors up to 4: each frequency scaled by its own factor, as Phi-3's lists
    short = [1.0 + 0.05 * i for i in range(frequencies)]
    long = [1.0 + 3.0 * i / max(frequencies - 1, 1) for i in range(frequencies)]
    return {"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": short, "long_factor": long, **extra}


LONG_TEXTS = ("Queries ask",                                                           # within the original 16
              "The cat sat on the mat. the the cat sat on",
              "A dog chased the cat around the garden while the birds sang. Attention is all you need; "
              "transformers replaced recurrence with attention.")                     # past it


@pytest.mark.parametrize("name, options", [
    ("phi3", dict(original_max_position_embeddings=16, rope_parameters=_longrope(6))),
    ("phi3", dict(original_max_position_embeddings=16, rope_parameters=_longrope(6, attention_factor=1.3))),
    ("phi3", dict(original_max_position_embeddings=16, partial_rotary_factor=0.5,
                  rope_parameters=_longrope(3, partial_rotary_factor=0.5))),
    ("llama", dict(rope_parameters=_longrope(6, original_max_position_embeddings=16, factor=4.0))),
    ("mistral", dict(rope_parameters=_longrope(6, original_max_position_embeddings=16))),
])
def test_longrope_uses_the_short_or_long_factors_by_length_as_transformers(name, options, tmp_path):
    directory = _build(tmp_path, name, **options)
    model = _same_on_texts(directory, LONG_TEXTS)
    lengths = [len(model.token_ids(text)) for text in LONG_TEXTS]
    assert min(lengths) <= 16 < max(lengths), lengths      # both sets are compared
    # one route: the explained head's rotated keys are the model's own, past the original context too
    ids = model.token_ids(LONG_TEXTS[-1])
    trace = model.trace(LONG_TEXTS[-1], layer=0, head=1)
    rope = model.blocks[0].attention.rope
    np.testing.assert_array_equal(trace["rope_angles"].value, rope.angles(np.arange(len(ids))))
    short, long = rope.frequencies(), rope.frequencies(long=True)
    assert not np.array_equal(short, long)
    np.testing.assert_array_equal(rope.angles(np.arange(16)), np.arange(16)[:, None].astype(np.float32) * short)
    np.testing.assert_array_equal(rope.angles(np.arange(17)), np.arange(17)[:, None].astype(np.float32) * long)


def test_longrope_while_decoding_follows_transformers_cache_step_by_step(tmp_path):
    # transformers picks the set per call by its last position: keys cached before the switch keep the short set
    directory = _build(tmp_path, "phi3", original_max_position_embeddings=16, rope_parameters=_longrope(6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = models.load(directory)
        reference = transformers.AutoModelForCausalLM.from_pretrained(directory, attn_implementation="eager").eval()
    ids = model.token_ids(LONG_TEXTS[-1])[:24]
    caches, cache = model.new_caches(), transformers.DynamicCache(config=reference.config)
    for start, stop in [(0, 12)] + [(t, t + 1) for t in range(12, 24)]:
        ours = model.forward(ids[start:stop], caches=caches).logits
        with torch.no_grad():
            theirs = reference(torch.as_tensor(ids[start:stop])[None], cache=cache, use_cache=True).logits[0]
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=0, atol=1e-5)


def test_gemma3_bidirectional_attention_without_a_window_is_refused_where_transformers_fails(tmp_path):
    directory = _build(tmp_path, "gemma3", edit_config=lambda data: data.update(use_bidirectional_attention=True,
                                                                                 sliding_window=None))
    with pytest.raises(TypeError):
        _reference_logits(directory, [1, 2, 3])
    with pytest.raises(InputError, match="sliding_window"):
        models.load(directory)


@pytest.mark.parametrize("window", [4, 9])
def test_gemma3_bidirectional_attention_drops_the_causal_mask_as_transformers(window, tmp_path):
    def edit(data):
        data["use_bidirectional_attention"] = True
        data["sliding_window"] = window            # config.json's value; transformers halves it: |i − j| < w // 2 + 1

    directory = _build(tmp_path, "gemma3", edit_config=edit)
    model = _same_on_texts(directory)
    assert not model.is_causal
    # position 0's logits now depend on the tokens after it (no causal mask)
    ids = model.token_ids(TEXTS[1])
    assert not np.allclose(model.forward(ids).logits[0], model.forward(ids[:3]).logits[0], atol=1e-3)
    # one route: the explained head's weights are the model's own, non-zero right of the diagonal
    weights = model.attention_weights(TEXTS[1])
    trace = model.trace(TEXTS[1], layer=1, head=2)
    np.testing.assert_allclose(trace["weights"].value[0], weights[1, 2], rtol=0, atol=1e-6)   # one head's slices
    assert np.triu(weights[1, 2], 1).sum() > 0


@pytest.mark.parametrize("name", ["gemma", "gemma2"])
def test_bidirectional_gemma_and_gemma2_are_refused_where_transformers_disagrees_with_itself(name, tmp_path):
    directory = _build(tmp_path, name, use_bidirectional_attention=True)
    if name == "gemma":   # eager keeps the causal mask, sdpa drops it: two different answers from one folder
        ids = torch.arange(3, 15)[None]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            eager, sdpa = (transformers.AutoModelForCausalLM.from_pretrained(directory, attn_implementation=kind).eval()
                           for kind in ("eager", "sdpa"))
        with torch.no_grad():
            assert (eager(ids).logits - sdpa(ids).logits).abs().max() > 1e-2
    with pytest.raises(InputError, match="use_bidirectional_attention") as error:
        models.load(directory)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("name", ["llama", "qwen3", "mistral"])
def test_bidirectional_attention_where_the_family_never_reads_it_runs_causal_as_transformers_and_says_so(name, tmp_path):
    directory = _build(tmp_path, name, edit_config=lambda data: data.update(use_bidirectional_attention=True))
    with pytest.warns(UserWarning, match="use_bidirectional_attention"):
        models.load(directory)
    assert _same_on_texts(directory).is_causal


LLAMA3 = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 16}


@pytest.mark.parametrize("name, options", [("llama-yarn", {}), ("llama", dict(rope_parameters=LLAMA3))])
def test_a_top_level_original_max_position_embeddings_wins_over_the_rope_dicts_as_in_transformers(name, options, tmp_path):
    # transformers' standardize_rope_params copies config.json's top-level field over the rope dict's
    directory = _build(tmp_path, name, edit_config=lambda data: data.update(original_max_position_embeddings=32),
                       **options)
    assert _same_or_refused(directory) == "same"


@pytest.mark.parametrize("name, scaling", [
    ("llama", {"rope_type": "linear", "factor": 4.0}),
    ("mistral", {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}),
    ("phi3", dict(_longrope(6), original_max_position_embeddings=16)),
])
def test_a_non_empty_rope_scaling_wins_over_rope_parameters_as_in_transformers(name, scaling, tmp_path):
    # transformers' convert_rope_params_to_dict reads `rope_scaling or rope_parameters`
    def edit(data):
        data["rope_scaling"] = {k: v for k, v in scaling.items() if k != "rope_theta"}
        data["rope_theta"] = 10000.0

    directory = _build(tmp_path, name, edit_config=edit)
    assert json.loads((directory / "config.json").read_text())["rope_parameters"]["rope_type"] == "default"
    _same_on_texts(directory, LONG_TEXTS)


# --- a field left out of config.json: the family's default, as transformers' config class gives it ----------------
# Each family is saved whole, then every field of its config.json is removed in turn (rope_theta from inside
# rope_parameters too, and Gemma 3's per-layer-type ones) and the folder loaded by transformers and by qkv. A field
# whose default differs by family (rope_theta: Mixtral's and Gemma 3's 10⁶; rms_norm_eps: Phi-3's and Mixtral's
# 10⁻⁵; GPT-NeoX's rotary_pct 0.25 and Phi's partial_rotary_factor 0.5; Gemma 2's soft-caps 50 and 30 and
# query_pre_attn_scalar 256; Qwen3's and the Gemmas' head_dim …) gives the same logits, or qkv refuses it in one
# line. Where the logits cannot show a default (a window or a context longer than the text), the parsed config is
# compared with transformers' own: each layer's window, the context length and the norms' epsilon.
FAMILY_NAMES = ["gpt2", "llama", "qwen2", "mistral", "qwen3", "gemma", "gemma2", "gemma3", "phi3", "mixtral",
                "gpt_neox", "opt", "phi", "qwen2-window", "llama-yarn"]
META = ("model_type", "architectures", "transformers_version")
# fields that only training or generation reads (dropout rates, initialisation, the cache, the router's loss):
# removing one changes no logit in eval mode, and each costs a load
TRAINING = ("attention_dropout", "hidden_dropout", "classifier_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop",
            "dropout", "layerdrop", "initializer_range", "init_std", "use_cache", "router_aux_loss_coef",
            "router_jitter_noise", "output_router_logits", "summary_activation", "summary_first_dropout",
            "summary_proj_to_labels", "summary_type", "summary_use_proj")
TOKEN_IDS = ("pad_token_id", "bos_token_id", "eos_token_id")   # transformers may fail on its own default ids
                                                               # (Phi-3's pad 32000 ≥ vocab); they change no number


def _removals(data):
    """(label, edited config.json) for each field removed in turn."""
    for key in sorted(data):
        if key not in META + TRAINING:
            yield key, {k: v for k, v in data.items() if k != key}
    parameters = data.get("rope_parameters")
    if isinstance(parameters, dict):
        nested = {k: v for k, v in parameters.items() if isinstance(v, dict)}
        for layer_type, inner in (nested.items() if nested else [(None, parameters)]):
            for key in sorted(inner):
                edited = json.loads(json.dumps(data))
                (edited["rope_parameters"][layer_type] if layer_type else edited["rope_parameters"]).pop(key)
                yield f"rope_parameters.{layer_type + '.' if layer_type else ''}{key}", edited


def _config_dict(folder):
    """transformers' parsed config of a folder, as a dict, without the folder's own name."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parsed = transformers.AutoConfig.from_pretrained(folder).to_dict()
    parsed.pop("_name_or_path", None)
    return parsed


def _transformers_view(config):
    """Each layer's sliding window, the context length and the norms' epsilon, as transformers' config says."""
    n = config.num_hidden_layers
    types = getattr(config, "layer_types", None) or ["sliding_attention"] * n
    window = getattr(config, "sliding_window", None) if config.model_type in (
        "mistral", "mixtral", "phi3", "qwen2", "qwen3", "gemma2", "gemma3_text") else None
    windows = [window if types[i] == "sliding_attention" else None for i in range(n)]
    context = getattr(config, "max_position_embeddings", getattr(config, "n_positions", None))
    eps = next((getattr(config, k) for k in ("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon")
                if hasattr(config, k)), 1e-5)
    return windows, context, eps


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_a_field_left_out_of_config_json_takes_the_familys_default_as_in_transformers(name, tmp_path):
    directory = _build(tmp_path, name)
    data = json.loads((directory / "config.json").read_text())
    # a removal that changes neither side's parsed config cannot change either side's logits: no model load
    unchanged = (_config_dict(directory), models.load(directory).config)
    wrong = []
    for label, edited in _removals(data):
        folder = tmp_path / f"without-{label}"
        folder.mkdir()
        for file in directory.iterdir():
            (folder / file.name).write_bytes(file.read_bytes())
        (folder / "config.json").write_text(json.dumps(edited))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ours = models.load(folder)
        except InputError as error:
            if "\n" in str(error).strip():
                wrong.append(f"{label}: a refusal of more than one line: {error}")
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                config = transformers.AutoConfig.from_pretrained(folder)
                if (_config_dict(folder), ours.config) == unchanged:
                    continue
                reference = transformers.AutoModelForCausalLM.from_pretrained(
                    folder, attn_implementation="eager").eval()
        except Exception as error:                  # noqa: BLE001 — any failure of transformers'
            if label not in TOKEN_IDS:
                wrong.append(f"{label}: qkv runs what transformers refuses ({type(error).__name__})")
            continue
        ids = ours.token_ids(TEXT)
        with torch.no_grad():
            expected = reference(torch.as_tensor(ids)[None]).logits[0].numpy()
        gap = float(np.max(np.abs(ours.forward(ids).logits - expected)))
        if not gap <= 1e-5:
            wrong.append(f"{label}: logits differ by {gap:.2g}")
        windows, context, eps = _transformers_view(config)
        c = ours.config
        if [c.window_of(i) for i in range(c.n_layers)] != windows:
            wrong.append(f"{label}: windows {[c.window_of(i) for i in range(c.n_layers)]}, transformers {windows}")
        if c.max_positions != context:
            wrong.append(f"{label}: context {c.max_positions}, transformers {context}")
        if c.norm_eps != eps:
            wrong.append(f"{label}: epsilon {c.norm_eps}, transformers {eps}")
    assert not wrong, f"{name}: " + "; ".join(wrong)


# --- fields one family reads and another ignores, or reads under another name ---------------------------------------
def _pop(data, *path):
    inner = data
    for key in path[:-1]:
        inner = inner[key]
    inner.pop(path[-1])


FIELD_EDITS = {
    # GemmaConfig reads hidden_act alone, a legacy "gelu" as the tanh form; Gemma 2 and 3 read hidden_activation alone
    # (exact GELU and its tanh form move these logits by ~5e-6 only: compared at 1e-6, float32's noise is ~2e-7)
    "gemma: hidden_act gelu": ("gemma", lambda d: d.update(hidden_act="gelu"), 1e-6),
    "gemma: hidden_activation beside hidden_act": ("gemma", lambda d: d.update(hidden_activation="relu")),
    "gemma2: hidden_act beside hidden_activation": ("gemma2", lambda d: d.update(hidden_act="relu")),
    "gemma3: hidden_act beside hidden_activation": ("gemma3", lambda d: d.update(hidden_act="silu")),
    # Gemma3TextConfig builds layer_types from sliding_window_pattern, never from the _sliding_window_pattern it saves
    "gemma3: _sliding_window_pattern": ("gemma3", lambda d: (d.pop("layer_types"), d.update(
        _sliding_window_pattern=2, num_hidden_layers=3))),
    "gemma3: sliding_window_pattern": ("gemma3", lambda d: (d.pop("layer_types"), d.update(sliding_window_pattern=2))),
    # a nested sliding_attention dict without its θ takes rope_local_base_freq
    "gemma3: rope_local_base_freq": ("gemma3", lambda d: (_pop(d, "rope_parameters", "sliding_attention", "rope_theta"),
                                                           d.update(rope_local_base_freq=50.0))),
    # GPTNeoXConfig: θ and the rotated fraction from the rope dict, else rotary_emb_base and rotary_pct; a top-level
    # rope_theta or partial_rotary_factor is ignored
    "gpt_neox: top-level rope_theta": ("gpt_neox", lambda d: (_pop(d, "rope_parameters", "rope_theta"),
                                                              d.update(rope_theta=50.0))),
    "gpt_neox: top-level partial_rotary_factor": ("gpt_neox", lambda d: (
        _pop(d, "rope_parameters", "partial_rotary_factor"), d.update(partial_rotary_factor=1.0))),
    "gpt_neox: rotary_pct under the rope dict's": ("gpt_neox", lambda d: d.update(rotary_pct=1.0)),
    "gpt_neox: rotary_emb_base": ("gpt_neox", lambda d: (_pop(d, "rope_parameters", "rope_theta"),
                                                         d.update(rotary_emb_base=50.0))),
    # a rope dict without rope_type is the default kind, and its θ counts
    "llama: rope_parameters without rope_type": ("llama", lambda d: (
        _pop(d, "rope_parameters", "rope_type"), d["rope_parameters"].update(rope_theta=50.0))),
    "mixtral: rope_scaling's own rope_theta": ("mixtral", lambda d: (d.pop("rope_parameters"), d.update(
        rope_scaling={"rope_type": "linear", "factor": 2.0, "rope_theta": 50.0}))),
}


@pytest.mark.parametrize("case", FIELD_EDITS)
def test_a_field_is_read_where_the_familys_config_class_reads_it(case, tmp_path):
    name, edit, *atol = FIELD_EDITS[case]
    directory = _build(tmp_path, name, edit_config=edit)
    assert _same_or_refused(directory, *atol) == "same"
