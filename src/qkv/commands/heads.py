"""`qkv heads "TEXT"`: what every head of a real model does, as a table of scores (and a figure).

    qkv heads "The cat sat on the mat because it was tired."
    qkv heads "The cat sat on the mat." --sort induction --top 10
    qkv heads "The cat sat on the mat." --figure heads.png --json heads.json

For TEXT: each head's entropy, its attention on the first token ([CLS] / BOS, the "sink"), on
itself, and its previous-token score twice: as TransformerLens's detect_head computes it
("previous_token": the share of the head's whole attention, all T rows, on key i − 1) and as qkv
defines it ("previous_token_rows": the mean over the T − 1 rows that have a previous token). On a
probe — a random token sequence repeated twice, after the model's first special token — its
duplicate-token and induction scores, as TransformerLens's detect_head computes them. Plus
attention rollout (with the residual identity term): what the first token draws on after every
layer. Definitions: `qkv.analysis`.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from .._io import int_option
from ..errors import InputError
from ..explain.model_text import render_rich
from ._options import add_lang_option, add_model_option, check_lang, load_model, reading_note, require_text, words, write_text


def register(subparsers, t) -> None:
    from ..analysis import SCORES

    parser = subparsers.add_parser("heads", help=t("heads"), description=t("heads.about"))
    parser.add_argument("text", metavar="TEXT", help=t("heads.text"))
    add_model_option(parser, t)
    parser.add_argument("--sort", default="layer", choices=("layer",) + SCORES, metavar="SCORE",
                        help=t("heads.sort", scores=", ".join(SCORES)))
    parser.add_argument("--top", type=int_option(low=1), default=None, metavar="N", help=t("heads.top"))
    parser.add_argument("--probe", type=int_option(low=2, high=100_000), default=20, metavar="N", help=t("heads.probe"))
    parser.add_argument("--seed", type=int_option(low=0, high=2**32 - 1), default=0, metavar="N", help=t("heads.seed"))
    parser.add_argument("--figure", metavar="FILE", help=t("heads.figure"))
    parser.add_argument("--json", metavar="FILE", help=t("heads.json"))
    parser.add_argument("--out", metavar="FILE", help=t("heads.out"))
    add_lang_option(parser, t, "heads")
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from ..analysis import head_scores, rollout

    t = words(check_lang(args.lang))
    model = load_model(args.model)
    encoding = require_text(args.text, t, model=model)      # checked once, read again by reading_note
    tokens = model.tokens(args.text)
    unread = reading_note(model, args.text, t, encodings=encoding)      # Korean into MiniLM: jamo and [UNK], said so
    if unread:
        print(t("cli.note", text=unread), file=sys.stderr)
    weights = np.asarray(model.attention_weights(args.text), dtype=np.float64)     # (L, H, T, T)
    scores = head_scores(weights)
    probe_ids = _probe(model, args.probe, args.seed, t)
    probe_scores = head_scores(_weights_of_ids(model, probe_ids), probe_ids)
    for name in ("duplicate_token", "induction"):
        scores[name] = probe_scores[name]
    flow = rollout(weights)                                                         # (L, T, T)
    if args.figure:
        from ..viz.heads import heads_figure
        from ..viz import write_figure

        write_figure(heads_figure(scores, flow[-1], tokens, title=t("cli.heads.figure", model=model.name,
                                                                     tokens=len(tokens)), lang=args.lang),
                     args.figure)
    if args.json:
        from .._io import write_atomic

        document = {"format": "qkv-heads", "model": model.name, "tokens": tokens, "probe_ids": probe_ids.tolist(),
                    "scores": {name: value.tolist() for name, value in scores.items()},
                    "rollout": flow[-1].tolist()}
        write_atomic(args.json, json.dumps(document, ensure_ascii=False) + "\n")
    write_text(_report(model, tokens, scores, flow[-1], args, t), args.out)
    return 0


def _probe(model, length: int, seed: int, t) -> np.ndarray:
    """[first special token] + r + r, r drawn from the model's ordinary (non-special) tokens."""
    from ..analysis import repeated_random_ids

    vocab = model.tokenizer.get_vocab()
    special = {i for token, i in vocab.items()
               if (token.startswith("[") and token.endswith("]")) or (token.startswith("<") and token.endswith(">"))}
    first = model.tokenizer.encode("").ids[:1]                                      # [CLS] / BOS when the model adds one
    size = int(model.config.vocab_size)
    ordinary = size - len([i for i in special if i < size])
    if length * 2 + len(first) > model.config.max_positions:
        raise InputError(t("cli.heads.probe_long", length=length, positions=model.config.max_positions),
                         field="--probe")
    if length > ordinary:
        raise InputError(t("cli.heads.probe_vocab", length=length, ordinary=ordinary), field="--probe")
    return repeated_random_ids(length, size, seed=seed, prefix=first, avoid=sorted(special))


def _weights_of_ids(model, ids: np.ndarray) -> np.ndarray:
    """(L, H, T, T) attention weights of the model on token ids (T,)."""
    batch = ids[None, :]
    lengths = np.array([ids.shape[0]])
    return np.stack([w[0] for _, w in model.states(batch, lengths, weights=True) if w is not None]).astype(np.float64)


def _order(scores: dict, sort: str) -> list[tuple[int, int]]:
    layers, heads = scores["entropy"].shape
    cells = [(l, h) for l in range(layers) for h in range(heads)]
    if sort != "layer":
        cells.sort(key=lambda cell: -scores[sort][cell])
    return cells


def _report(model, tokens, scores, flow, args, t) -> str:
    from rich.table import Table

    from ..analysis import SCORES

    cells = _order(scores, args.sort)
    if args.top is not None:
        cells = cells[: args.top]
    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    for column in ("layer", "head") + SCORES:
        table.add_column(t(f"cli.heads.col.{column}"), justify="right")
    for l, h in cells:
        table.add_row(str(l), str(h), *(f"{scores[name][l, h]:.3f}" for name in SCORES))
    layers, heads = scores["entropy"].shape
    lines = [t("cli.heads.title", model=model.name, layers=layers, heads=heads, tokens=len(tokens)),
             t("cli.heads.legend", probe=args.probe, seed=args.seed), "",
             render_rich(table).rstrip(), ""]
    order = np.argsort(-flow[0], kind="stable")[:5]
    lines.append(t("cli.heads.rollout", layers=layers, token=tokens[0],
                   # each token with its position, as inspect lists them (0:[CLS] 1:the …): "the" is there twice
                   shares=", ".join(f"{j}:“{tokens[j]}” {flow[0, j]:.3f}" for j in order)))
    return "\n".join(lines) + "\n"
