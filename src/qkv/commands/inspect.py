"""`qkv inspect "TEXT"`: a real model's attention on your text, head by head.

    qkv inspect "The cat sat on the mat." --layer 2 --head 5 --query cat
    qkv inspect "The cat sat on the mat." --layer 2 --head 5 --format html --out head.html
    qkv inspect "The cat sat on the mat." --figure grid.png              # every layer × head
    qkv inspect "The cat sat on the mat." --layer 3 --format html --out layer3.html
    qkv inspect --model path/to/llama "The cat sat" --layer 1 --head 5     # any HF checkpoint directory

For a causal language model (GPT-2, Llama, Mistral, Qwen2) the output also says how the mask
works (causal: each token sees itself and the tokens before it; a sliding window where the model
has one), which query heads share each key/value head (grouped-query attention), and for one head
with RoPE, the followed query's q and its key's k before and after the rotation.

One layer and one head: the tokens, that head's weights, the keys the query attends to most,
and the step-by-step derivation for the query (as `qkv example` shows it). Otherwise (--layer
all and/or --head all, the default): for each chosen layer and head the key the query attends
to most, the grid figure (--figure) and the interactive page (--format html).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from .._io import as_int, int_option, short_repr
from .. import frontdoor
from ..errors import InputError
from ..explain.model_text import (contribution_json, grid_summary, head_summary, is_causal, structure_json, top_keys,
                                  truncated)
from ._options import add_lang_option, add_model_option, check_lang, load_model, reading_note, require_text, words, write_text

FORMATS = ("text", "markdown", "json", "html")


def register(subparsers, t) -> None:
    parser = subparsers.add_parser("inspect", help=t("inspect"), description=t("inspect.about"))
    parser.add_argument("text", metavar="TEXT", help=t("inspect.text"))
    add_model_option(parser, t)
    parser.add_argument("--layer", default="all", metavar="L|all", help=t("inspect.layer"))
    parser.add_argument("--head", default="all", metavar="H|all", help=t("inspect.head"))
    parser.add_argument("--query", metavar="TOKEN", help=t("inspect.query"))
    parser.add_argument("--top", type=int_option(), default=5, metavar="K", help=t("inspect.top"))
    parser.add_argument("--format", default=None, metavar="FORMAT", help=t("inspect.format"))
    add_lang_option(parser, t, "inspect")
    parser.add_argument("--digits", type=int_option(), default=3, metavar="N", help=t("inspect.digits"))
    parser.add_argument("--out", metavar="FILE", help=t("out"))
    parser.add_argument("--figure", metavar="FILE", help=t("inspect.figure"))
    parser.add_argument("--full", action="store_true", help=t("inspect.full"))
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    # --figure alone asks for the figure only: no summary on standard output (--format / --out add the text)
    text_wanted = args.figure is None or args.format is not None or args.out is not None
    args.format = args.format or "text"
    _check_options(args)
    t = words(args.lang)
    model = load_model(args.model)
    layers = _selection("--layer", args.layer, model.config.n_layers, t)
    heads = _selection("--head", args.head, model.config.n_heads, t)
    encoding = require_text(args.text, t, model=model)      # checked once, read again by reading_note
    tokens = model.tokens(args.text)
    if not tokens:
        raise InputError(t("cli.inspect.no_tokens"), field="TEXT")
    if truncated(model, args.text):
        print(t("cli.note", text=t("cli.truncated", n=len(tokens))), file=sys.stderr)
    unread = reading_note(model, args.text, t, encodings=encoding)      # Korean into MiniLM: jamo and [UNK], said so
    if unread:
        print(t("cli.note", text=unread), file=sys.stderr)
    if args.query is None:
        query = len(tokens) - 1 if is_causal(model) else (1 if len(tokens) > 2 else 0)
    else:
        from ..models.decoder import find_token

        text = args.query
        if as_int(text) is None and text.strip().lstrip("+-").isdigit() and find_token(tokens, text) is None:
            # '²', '١': str.isdigit (and int) accept them, qkv's strict parser does not, and they are no token
            raise InputError(t("cli.inspect.not_token", value=repr(text)), field="--query")
        try:
            query = model.query_index(tokens, args.query)
        except InputError:
            raise InputError(t("cli.inspect.query", value=short_repr(args.query), last=len(tokens) - 1,
                               tokens=" ".join(tokens)), field="--query") from None
    if len(layers) == 1 and len(heads) == 1:
        text = _one_head(model, args, layers[0], heads[0], query, text_wanted)
    else:
        text = _grid(model, args, layers, heads, tokens, query, text_wanted)
    if text_wanted:
        write_text(text, args.out)
    return 0


# ------------------------------------------------------------------ one head
def _one_head(model, args, layer: int, head: int, query: int, text_wanted: bool = True) -> str:
    from ..explain import render

    trace = model.trace(args.text, layer=layer, head=head, query=query)
    tokens = trace.meta["tokens"]
    if args.figure:
        from ..viz import save_figure

        save_figure(trace, args.figure, lang=args.lang, digits=args.digits)   # numbers as the text prints them
    if not text_wanted:
        return ""
    derivation = render(trace, args.format, lang=args.lang, digits=args.digits, full=args.full)
    if args.format == "html":
        return derivation
    if args.format == "json":
        weights = trace["weights"].value[0]                             # (T, T): this head's only head
        top = top_keys(weights[query], tokens, args.top)
        reading = contribution_json(weights[query], trace["contributions"].value[0][query],
                                    trace["shares"].value[0][query])
        return json.dumps({"format": "qkv-inspect", "model": model.name, "layer": layer, "head": head,
                           "tokens": tokens, "query": query,
                           "top_keys": [{"index": j, "token": tokens[j], "weight": w,
                                         "contribution": reading["contributions"][j], "share": reading["shares"][j]}
                                        for j, w in top],
                           "weight_vs_contribution": reading,
                           "weights": weights.tolist(), **structure_json(model, head),
                           "explanation": json.loads(derivation)},
                          ensure_ascii=False) + "\n"
    summary = head_summary(model, trace, query=query, top=args.top, digits=args.digits, fmt=args.format,
                           lang=args.lang, full=args.full)
    return summary + "\n" + derivation


# ------------------------------------------------------------------ layers × heads
def _grid(model, args, layers: list[int], heads: list[int], tokens: list[str], query: int,
          text_wanted: bool = True) -> str:
    whole = model.trace(args.text, query=query, derivation=True) if args.format == "html" else None
    if whole is None:
        weights = model.attention_weights(args.text)[layers][:, heads]  # (L', H', T, T)
    else:                                                                # the page's own trace: one run
        weights = np.stack([whole[f"layer {l}/weights"].value for l in layers])[:, heads]
    if args.figure:
        _grid_figure(model, args, weights, tokens, layers, heads)
    if not text_wanted:
        return ""
    if args.format == "html":
        return _grid_page(model, args, whole, layers, heads)
    if args.format == "json":
        rows = [(l, h, top_keys(weights[i, j, query], tokens, 1)[0])
                for i, l in enumerate(layers) for j, h in enumerate(heads)]
        return json.dumps({"format": "qkv-inspect", "model": model.name, "layers": layers, "heads": heads,
                           "tokens": tokens, "query": query, "weights": weights.tolist(), **structure_json(model),
                           "top_keys": [{"layer": l, "head": h, "index": j, "token": tokens[j], "weight": w}
                                        for l, h, (j, w) in rows]}, ensure_ascii=False) + "\n"
    return grid_summary(model, weights, layers=layers, heads=heads, tokens=tokens, query=query, digits=args.digits,
                        fmt=args.format, lang=args.lang, hint=args.figure is None)


def _grid_page(model, args, whole, layers: list[int], heads: list[int]) -> str:
    """The interactive page of the model's trace (every derivation row of a clicked cell filled, up to
    the model's DERIVATION_TOKENS tokens): the chosen layers, opened at the first chosen head."""
    from ..explain.page import trace_html
    from ..trace import Trace

    meta = dict(whole.meta, head=heads[0]) if len(heads) < model.config.n_heads else dict(whole.meta)
    shown = Trace(f"{model.name} — “{args.text if len(args.text) <= 60 else args.text[:59] + '…'}”", meta)
    keep = tuple(f"layer {l}/" for l in layers)
    shown.steps.extend(step for step in whole.steps if step.name.startswith(keep))
    return trace_html(shown, lang=args.lang, digits=args.digits)


def _grid_figure(model, args, weights, tokens, layers, heads) -> None:
    from ..viz import attention_grid, write_figure

    t = words(args.lang)
    title = t("cli.inspect.figure", model=model.name,
              layers=t("cli.inspect.figure.layers" if len(layers) > 1 else "cli.inspect.figure.layer", span=_span(layers)),
              heads=t("cli.inspect.figure.heads" if len(heads) > 1 else "cli.inspect.figure.head", span=_span(heads)))
    write_figure(attention_grid(weights, tokens, title=title, lang=args.lang, layers=layers, heads=heads), args.figure)


def _span(indices: list[int]) -> str:
    return f"{indices[0]}–{indices[-1]}" if len(indices) > 1 else str(indices[0])


# ------------------------------------------------------------------ options
def _check_options(args: argparse.Namespace) -> None:
    """Everything that can be checked before the model is loaded, each as a one-line InputError
    (in the language of --lang once that is known to be valid)."""
    t = words(check_lang(args.lang))
    frontdoor.check_choice(args.format, FORMATS, field="--format", lang=args.lang)
    if not 0 <= args.digits <= 12:
        raise InputError(t("cli.inspect.digits", value=args.digits), field="--digits")
    if args.top < 1:
        raise InputError(t("cli.inspect.top_keys", value=args.top), field="--top")
    for option, target in (("--out", args.out), ("--figure", args.figure)):
        if target is not None and not Path(target).parent.is_dir():
            raise InputError(t("cli.no_directory", path=repr(str(Path(target).parent))), source=target, field=option)
    if args.figure is not None:
        frontdoor.check_figure(args.figure, field="--figure", lang=args.lang)


def _selection(option: str, value: str, count: int, t) -> list[int]:
    """"all" → every index; "3" → [3]; anything else or out of range → InputError naming the option."""
    if str(value).lower() == "all":
        return list(range(count))
    index = as_int(value)
    if index is None or not 0 <= index < count:
        key = "cli.inspect.range" if index is not None else "cli.inspect.index"
        what = t(f"cli.inspect.what.{option[2:]}" + (".one" if count == 1 else ""))
        raise InputError(t(key, value=repr(value), count=count, what=what, last=count - 1), field=option)
    return [index]
