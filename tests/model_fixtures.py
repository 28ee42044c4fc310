"""Tiny Hugging Face checkpoints for the model tests, made on the spot (nothing is downloaded).

`build_checkpoints(root)` trains a byte-level BPE tokenizer with the `tokenizers` trainer on a few
sentences, builds random models with transformers from configs, and saves each with
`save_pretrained` (safetensors) beside a copy of the tokenizer. Sizes are odd on purpose:
head width 5 (BERT, GPT-2) and 24 (the RoPE models, whose head width must be even), 1 and 3
layers, grouped-query (4:2), multi-query (4:1), tied and untied embeddings, Qwen2's q/k/v biases,
a Mistral with an explicit head_dim and a sliding window shorter than the test texts, and one
checkpoint written as shards with an index. The whole set takes about a second.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SENTENCES = [
    "The cat sat on the mat.",
    "A dog chased the cat around the garden while the birds sang.",
    "Attention is all you need; transformers replaced recurrence with attention.",
    "Queries ask, keys answer, values carry what is said.",
    "안녕하세요, 오늘 날씨가 정말 좋네요.",
    "the the the cat cat sat sat on on the mat mat",
] * 4

SPECIAL = ["<pad>", "<s>", "</s>"]          # ids 0, 1, 2

# name -> (family, config keyword arguments, save options, tokenizer adds BOS)
CHECKPOINTS = {
    "bert": ("bert", dict(hidden_size=20, num_hidden_layers=3, num_attention_heads=4, intermediate_size=37,
                          max_position_embeddings=64, hidden_act="gelu_new"), {}, False),
    "gpt2": ("gpt2", dict(n_embd=20, n_layer=3, n_head=4, n_positions=64, n_inner=None), {}, False),
    "gpt2-1layer": ("gpt2", dict(n_embd=48, n_layer=1, n_head=2, n_positions=64), {}, False),
    "llama-gqa": ("llama", dict(hidden_size=96, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                                intermediate_size=64, max_position_embeddings=128, rope_theta=500000.0,
                                rms_norm_eps=1e-5, tie_word_embeddings=False),
                  {"max_shard_size": "300KB"}, True),
    "llama-mqa": ("llama", dict(hidden_size=96, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=1,
                                intermediate_size=40, max_position_embeddings=128, rope_theta=10000.0,
                                rms_norm_eps=1e-6, tie_word_embeddings=True), {}, True),
    "llama3-scaled": ("llama", dict(hidden_size=48, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                    intermediate_size=32, max_position_embeddings=128,
                                    rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                                     "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                     "original_max_position_embeddings": 16},
                                    tie_word_embeddings=True), {}, True),
    "qwen2": ("qwen2", dict(hidden_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                            intermediate_size=56, max_position_embeddings=128, rope_theta=1000000.0,
                            rms_norm_eps=1e-6, tie_word_embeddings=True), {}, False),
    "mistral": ("mistral", dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                head_dim=24, intermediate_size=48, max_position_embeddings=128, rope_theta=10000.0,
                                sliding_window=6, tie_word_embeddings=False), {}, True),
}


@functools.lru_cache(maxsize=2)
def train_tokenizer(*, bos: bool):
    """A byte-level BPE tokenizer (about 300 tokens) trained on SENTENCES; with bos, <s> is prepended."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(SENTENCES, trainer=trainer)
    if bos:
        tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                                 special_tokens=[("<s>", 1)])
    else:
        tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    return tokenizer


def _config(family: str, vocab: int, kwargs: dict):
    import transformers

    common = dict(vocab_size=vocab, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    if family == "bert":
        return transformers.BertConfig(**common, **kwargs)
    if family == "gpt2":
        return transformers.GPT2Config(**common, **kwargs)
    cls = {"llama": transformers.LlamaConfig, "qwen2": transformers.Qwen2Config,
           "mistral": transformers.MistralConfig}[family]
    return cls(**common, **kwargs)


def spread_weights(model) -> None:
    """Random init leaves norms at 1 and biases at 0: shift every vector and scale every matrix so that
    each weight counts (the same draws, in parameter order, after the caller's torch.manual_seed)."""
    import torch

    with torch.no_grad():
        for _, param in model.named_parameters():
            if param.ndim == 1:
                param.add_(0.2 * torch.randn_like(param))
            else:
                param.mul_(2.5)


def build_checkpoint(root: Path, name: str, *, seed: int = 0) -> Path:
    """Make CHECKPOINTS[name] under root/name and return the directory."""
    import torch
    import transformers

    family, kwargs, save, bos = CHECKPOINTS[name]
    tokenizer = train_tokenizer(bos=bos)
    config = _config(family, tokenizer.get_vocab_size(), kwargs)
    torch.manual_seed(seed)
    cls = {"bert": transformers.BertModel, "gpt2": transformers.GPT2LMHeadModel}.get(
        family, transformers.AutoModelForCausalLM)
    model = cls(config) if family in ("bert", "gpt2") else cls.from_config(config)
    spread_weights(model)
    directory = root / name
    model.save_pretrained(directory, safe_serialization=True, **save)
    tokenizer.save(str(directory / "tokenizer.json"))
    return directory


def build_checkpoints(root: Path, names=None) -> dict[str, Path]:
    return {name: build_checkpoint(root, name) for name in (names or CHECKPOINTS)}


# ------------------------------------------------------------------ one build per run, shared
# Building is cheap (~20 ms a checkpoint) once transformers and the family's modeling module are imported, but that
# import is ~4 CPU-s of `import transformers` and ~4 more for the first model class, in each process that builds.
# tests/conftest.py names one folder per run in QKV_TEST_CHECKPOINTS (xdist's workers inherit it): the first process
# to ask for a name builds it there under a file lock, the others (the second worker too) read what it built. A
# test that only reads the folder takes `built(name)`; a test that changes a file takes `copy_of(root, name)`. The
# bytes are those build_checkpoint / build_family write (seed 0, the same tokenizer): transformers made them, and
# the tests that compare with transformers still load transformers' model from them (`reference`).
def _store() -> Path:
    folder = os.environ.get("QKV_TEST_CHECKPOINTS")
    if folder is None:                      # model_fixtures used outside the tests' conftest: this process's own
        import atexit
        import shutil
        import tempfile

        folder = tempfile.mkdtemp(prefix="qkv-tests-checkpoints-")
        os.environ["QKV_TEST_CHECKPOINTS"] = folder
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return Path(folder)


def built(name: str) -> Path:
    """CHECKPOINTS[name] or FAMILIES[name], built once per run (the same bytes as build_checkpoint /
    build_family): read it, never change it (see copy_of)."""
    import fcntl
    import shutil
    import warnings

    if name not in CHECKPOINTS and name not in FAMILIES:
        raise KeyError(f"{name!r} is neither in CHECKPOINTS nor in FAMILIES")
    store = _store()
    directory = store / name
    if directory.is_dir():                  # renamed into place whole: present means complete
        return directory
    with open(store / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not directory.is_dir():
            scratch = store / f".{name}.building.{os.getpid()}"
            shutil.rmtree(scratch, ignore_errors=True)
            with warnings.catch_warnings():   # transformers' warnings about gpt2-big-ids' ids outside the vocabulary
                warnings.simplefilter("ignore")
                made = (build_checkpoint if name in CHECKPOINTS else build_family)(scratch, name)
            os.rename(made, directory)
            scratch.rmdir()
    return directory


@functools.lru_cache(maxsize=1)
def _minilm_for_commands():
    from qkv import models

    return models.load("minilm")


def minilm_loaded_once():
    """A context in which `qkv inspect`, `heads` and `embed` given MiniLM (--model minilm, the default) share one
    MiniLM, loaded on first use in this process, instead of loading it for every command (its config, 90 MB of
    weights and a 700 kB tokenizer.json: 0.1–0.3 CPU-s a load; test_cli_models ran 36 commands). The commands'
    MiniLM is an instance of its own: the model a test compares a command's output with is loaded apart, so a
    command that changed the model it ran on would still show. Any other --model loads as before."""
    import contextlib

    import pytest

    from qkv.commands import _options, embed, heads, inspect

    real = _options.load_model

    def load_model(name):
        return _minilm_for_commands() if str(name).lower() == "minilm" else real(name)

    patch = pytest.MonkeyPatch()
    for module in (_options, embed, heads, inspect):
        assert module.load_model is real, module     # the one seam every model command loads through
        patch.setattr(module, "load_model", load_model)

    @contextlib.contextmanager
    def patched():
        try:
            yield
        finally:
            patch.undo()

    return patched()


def copy_of(root: Path, name: str) -> Path:
    """A copy of built(name) at root/name, to change: what build_checkpoint(root, name) or build_family(root, name)
    made, without building it again."""
    import shutil

    root.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copytree(built(name), root / name))


def reference(directory: Path, *, dtype=None, attn: str = "eager"):
    """transformers' own model for a checkpoint directory, in eval mode (float32, or float64)."""
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(directory)
    cls = transformers.BertModel if config.model_type == "bert" else transformers.AutoModelForCausalLM
    model = cls.from_pretrained(directory, attn_implementation=attn).eval()
    if dtype is torch.float64:
        model = model.double()
    return model


def keep_float64_norms(model) -> None:
    """Make transformers' RMSNorm keep float64: it casts to float32 whatever the model's dtype
    (``hidden_states.to(torch.float32)``), which caps a float64 comparison at float32 precision.
    The replacement is the same formula, x / √(mean(x²) + eps) · weight, in the input's dtype."""
    import types

    import torch

    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        return self.weight * (hidden_states * torch.rsqrt(variance + self.variance_epsilon))

    for module in model.modules():
        if type(module).__name__.endswith("RMSNorm"):
            module.forward = types.MethodType(forward, module)


def keep_float64_rope(model) -> None:
    """Make transformers' rotary embedding compute in float64 for a float64 model: it computes the
    frequencies, angles, cos and sin in float32 whatever the dtype. The replacement is the same
    formula (θᵢ = theta^(−2i/d), angle = position·θᵢ, cos/sin of [angles | angles]) in float64."""
    import types

    import torch

    config = model.config
    parameters = config.rope_parameters
    theta = parameters["rope_theta"]
    dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    if parameters["rope_type"] == "llama3":   # transformers' _compute_llama3_parameters, in float64
        factor, low, high = parameters["factor"], parameters["low_freq_factor"], parameters["high_freq_factor"]
        original = parameters["original_max_position_embeddings"]
        wavelength = 2 * math.pi / inv_freq
        scaled = torch.where(wavelength > original / low, inv_freq / factor, inv_freq)
        smooth = (original / wavelength - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelength < original / high) * ~(wavelength > original / low)
        inv_freq = torch.where(medium, smoothed, scaled)
    else:
        assert parameters["rope_type"] == "default"

    def forward(self, x, position_ids):
        freqs = position_ids[..., None].double() * inv_freq
        both = torch.cat((freqs, freqs), dim=-1)
        return both.cos().to(x.dtype), both.sin().to(x.dtype)

    rotary = model.model.rotary_emb
    rotary.forward = types.MethodType(forward, rotary)


# ------------------------------------------------------------------ the other families (issue 20)
# name -> (config class name in transformers, keyword arguments, tokenizer adds BOS). Odd head widths where
# RoPE allows (partial rotary rotates an even part of an odd head), GQA 4:2 and MQA 4:1, sliding windows
# of 5 (shorter than the test texts), soft-caps small enough to bite, a post-norm OPT.
FAMILIES = {
    "gpt_neox": ("GPTNeoXConfig", dict(hidden_size=30, num_hidden_layers=2, num_attention_heads=3, intermediate_size=37,
                                       max_position_embeddings=64, rotary_pct=0.4, use_parallel_residual=True), False),
    "gpt_neox-sequential": ("GPTNeoXConfig", dict(hidden_size=20, num_hidden_layers=2, num_attention_heads=4,
                                                  intermediate_size=24, max_position_embeddings=64, rotary_pct=0.5,
                                                  use_parallel_residual=False), False),
    "opt": ("OPTConfig", dict(hidden_size=20, num_hidden_layers=2, num_attention_heads=4, ffn_dim=37,
                              word_embed_proj_dim=20, max_position_embeddings=64), False),
    "opt-postnorm": ("OPTConfig", dict(hidden_size=20, num_hidden_layers=2, num_attention_heads=4, ffn_dim=24,
                                       word_embed_proj_dim=20, max_position_embeddings=64, do_layer_norm_before=False),
                     False),
    "phi": ("PhiConfig", dict(hidden_size=36, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
                              max_position_embeddings=64, partial_rotary_factor=0.5), False),
    "phi3": ("Phi3Config", dict(hidden_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                intermediate_size=40, max_position_embeddings=64), True),
    "qwen3": ("Qwen3Config", dict(hidden_size=40, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                  head_dim=10, intermediate_size=36, max_position_embeddings=64), False),
    "gemma": ("GemmaConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                                  head_dim=10, intermediate_size=36, max_position_embeddings=64), True),
    "gemma2": ("Gemma2Config", dict(hidden_size=32, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                                    head_dim=10, intermediate_size=36, max_position_embeddings=64, sliding_window=5,
                                    query_pre_attn_scalar=12, attn_logit_softcapping=4.0, final_logit_softcapping=3.0),
               True),
    "gemma3": ("Gemma3TextConfig", dict(hidden_size=32, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                                        head_dim=10, intermediate_size=36, max_position_embeddings=64, sliding_window=5,
                                        query_pre_attn_scalar=12,
                                        layer_types=["sliding_attention", "full_attention", "sliding_attention"]), True),
    "mixtral": ("MixtralConfig", dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      intermediate_size=24, max_position_embeddings=64, num_local_experts=4,
                                      num_experts_per_tok=2), True),
    # configurations transformers accepts that qkv refused before (issue 20 part 3)
    "gpt2-layer-scaled": ("GPT2Config", dict(n_embd=20, n_layer=3, n_head=4, n_positions=64,
                                             scale_attn_by_inverse_layer_idx=True, activation_function="quick_gelu"),
                          False),
    "gpt2-unscaled": ("GPT2Config", dict(n_embd=20, n_layer=2, n_head=4, n_positions=64, scale_attn_weights=False,
                                         activation_function="swish"), False),
    "gpt2-big-ids": ("GPT2Config", dict(n_embd=20, n_layer=1, n_head=4, n_positions=64, activation_function="gelu_python",
                                        bos_token_id=50256, eos_token_id=50256), False),
    "llama-yarn": ("LlamaConfig", dict(hidden_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                       intermediate_size=40, max_position_embeddings=64, hidden_act="gelu",
                                       rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                                        "original_max_position_embeddings": 16}), True),
    "llama-dynamic": ("LlamaConfig", dict(hidden_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                                          intermediate_size=40, max_position_embeddings=64, hidden_act="relu",
                                          rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}),
                      True),
    "llama-tanh": ("LlamaConfig", dict(hidden_size=48, num_hidden_layers=1, num_attention_heads=4, intermediate_size=40,
                                       max_position_embeddings=64, hidden_act="gelu_pytorch_tanh"), True),
    "qwen2-window": ("Qwen2Config", dict(hidden_size=48, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                                         intermediate_size=40, max_position_embeddings=64, use_sliding_window=True,
                                         sliding_window=5, max_window_layers=1), False),
}


def build_family(root: Path, name: str, *, seed: int = 0) -> Path:
    """Make FAMILIES[name] under root/name (random weights, every one made to count) and return the directory."""
    import torch
    import transformers

    cls_name, kwargs, bos = FAMILIES[name]
    tokenizer = train_tokenizer(bos=bos)
    ids = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
    config = getattr(transformers, cls_name)(vocab_size=tokenizer.get_vocab_size(), **{**ids, **kwargs})
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config)
    spread_weights(model)
    directory = root / name
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    return directory


def keep_float64_everywhere(model) -> None:
    """transformers' float32 islands, recomputed in float64 for a float64 model of any family:
    RMSNorm (Gemma's (1 + w) form too), RoPE's frequencies/angles/cos/sin (θ from the config, per layer
    type for Gemma 3), and Mixtral's router softmax. Each replacement is the same formula in float64."""
    import types

    import torch

    config = model.config
    for module in model.modules():
        name = type(module).__name__
        if name.endswith("RMSNorm"):
            gemma = name.startswith("Gemma")
            eps = getattr(module, "variance_epsilon", getattr(module, "eps", None))

            def norm(self, x, _eps=eps, _gemma=gemma):
                y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + _eps)
                return y * ((1.0 + self.weight) if _gemma else self.weight)

            module.forward = types.MethodType(norm, module)
        elif name.endswith("RotaryEmbedding"):
            def rotary(self, x, position_ids, layer_type=None):
                parameters = config.rope_parameters
                if layer_type is not None:
                    parameters = parameters[layer_type]
                    inv32 = getattr(self, f"{layer_type}_inv_freq")
                else:
                    inv32 = self.inv_freq
                kind = parameters.get("rope_type", "default")
                dim = 2 * inv32.shape[0]
                theta = parameters["rope_theta"]
                inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
                factor = 1.0
                if kind == "yarn":              # the YaRN paper's ramp between interpolated and extrapolated θᵢ
                    scale, original = parameters["factor"], parameters["original_max_position_embeddings"]

                    def at(rotations):
                        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

                    low, high = max(math.floor(at(32)), 0), min(math.ceil(at(1)), dim - 1)
                    ramp = ((torch.arange(dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
                    inv = inv / scale * ramp + inv * (1 - ramp)
                    factor = 0.1 * math.log(scale) + 1.0
                else:
                    assert kind in ("default", "dynamic")   # dynamic: the plain θᵢ within max_position_embeddings
                freqs = position_ids[..., None].double() * inv
                both = torch.cat((freqs, freqs), dim=-1)
                return (both.cos() * factor).to(x.dtype), (both.sin() * factor).to(x.dtype)

            module.forward = types.MethodType(rotary, module)
        elif name.endswith("TopKRouter"):
            def route(self, hidden_states):
                hidden_states = hidden_states.reshape(-1, self.hidden_dim)
                logits = torch.nn.functional.linear(hidden_states, self.weight)
                probs = torch.softmax(logits, dim=-1)                       # float64, not .float()
                top, index = torch.topk(probs, self.top_k, dim=-1)
                return logits, top / top.sum(dim=-1, keepdim=True), index

            module.forward = types.MethodType(route, module)


def float64_softmax():
    """A context in which torch's softmax keeps a float64 input in float64: transformers' eager attention asks
    for ``softmax(..., dtype=torch.float32)`` whatever the model's dtype (its last float32 island)."""
    import contextlib

    import torch

    original = torch.nn.functional.softmax

    def softmax(input, dim=None, _stacklevel=3, dtype=None):
        if input.dtype == torch.float64:
            dtype = None
        return original(input, dim=dim, dtype=dtype)

    @contextlib.contextmanager
    def patched():
        torch.nn.functional.softmax = softmax
        try:
            yield
        finally:
            torch.nn.functional.softmax = original

    return patched()
