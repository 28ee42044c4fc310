"""`qkv embed "TEXT" ...`: sentence embeddings from a real model, and how similar the texts are.

    qkv embed "A cat sits on the mat." "A dog lies on the rug." "Stock markets fell today."
    qkv embed "안녕하세요" "Hello" --json > embeddings.json
    printf 'one\\ntwo\\n' | qkv embed -            # one text per line from standard input

Prints each embedding's shape and first values and, for two or more texts, the cosine
similarity matrix. --json writes everything (full vectors, the matrix) as one JSON document.
"""

from __future__ import annotations

import argparse
import json
import sys

from .._io import int_option, short_repr
from ..errors import InputError
from ..explain.model_text import render_rich, truncated
from ..explain.texts import EN
from ._options import add_lang_option, add_model_option, check_lang, load_model, reading_note, require_text, words, write_text


def register(subparsers, t) -> None:
    parser = subparsers.add_parser("embed", help=t("embed"), description=t("embed.about"))
    parser.add_argument("texts", nargs="+", metavar="TEXT", help=t("embed.texts"))
    add_model_option(parser, t, encoders_only=True)
    parser.add_argument("--values", type=int_option(low=0), default=6, metavar="N", help=t("embed.values"))
    parser.add_argument("--batch-size", type=int_option(low=1), default=32, metavar="N", help=t("embed.batch_size"))
    parser.add_argument("--json", action="store_true", help=t("embed.json"))
    parser.add_argument("--out", metavar="FILE", help=t("out"))
    add_lang_option(parser, t, "embed")
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    t = words(check_lang(args.lang))
    if args.values < 0:
        raise InputError(t("cli.embed.values", value=args.values), field="--values")
    if args.batch_size < 1:
        raise InputError(t("cli.embed.batch", value=args.batch_size), field="--batch-size")
    texts = _read_texts(args.texts, t)
    model = load_model(args.model)
    if not hasattr(model, "encode"):         # a decoder (gpt2, llama, …) has no sentence embedding
        raise InputError(t("cli.embed.not_encoder", model=short_repr(args.model), kind=type(model).__name__),
                         field="--model")
    # an empty text, or one the tokenizer makes only its special tokens of, named (numbered as the table numbers
    # them); each text encoded once for the checks and the reading note
    encodings = [require_text(text, t, model=model, number=number if len(texts) > 1 else None)
                 for number, text in enumerate(texts)]
    embeddings = model.encode(texts, batch_size=args.batch_size)           # (N, D)
    similarity = _cosine(embeddings)                                       # (N, N)
    lengths = [len(model.tokens(t)) for t in texts]
    cut = [i for i, text in enumerate(texts) if truncated(model, text)]
    if cut:
        which = f"#{', #'.join(map(str, cut[:5]))}{', …' if len(cut) > 5 else ''}"
        print(t("cli.note", text=t("cli.embed.truncated", n=len(cut), which=which, max=max(lengths))), file=sys.stderr)
    unread = reading_note(model, texts, t, shows="embedding", encodings=encodings)   # Korean into MiniLM: said so
    for line in (unread or "").splitlines():          # one line for the Korean texts, one for the others
        print(t("cli.note", text=line), file=sys.stderr)
    if args.json:
        text = json.dumps({"format": "qkv-embeddings", "model": model.name, "shape": list(embeddings.shape),
                           "normalized": model.pooling.normalize, "pooling": list(model.pooling.modes),
                           "texts": texts, "tokens": lengths, "embeddings": embeddings.astype(float).tolist(),
                           "similarity": similarity.astype(float).tolist()}, ensure_ascii=False) + "\n"
    else:
        text = _report(model, texts, lengths, embeddings, similarity, args.values, t)
    write_text(text, args.out)
    return 0


def _read_texts(arguments: list[str], t) -> list[str]:
    texts: list[str] = []
    for argument in arguments:
        if argument == "-":
            lines = _stdin_text().replace("\r\n", "\n").replace("\r", "\n").split("\n")
            texts += [line for line in lines if line.strip()]
        else:
            texts.append(argument)
    if not texts:
        raise InputError(t("cli.embed.empty"), field="TEXT")
    return texts


def _stdin_text() -> str:
    """Standard input as UTF-8 text (read as bytes: the tokenizer takes no undecodable characters)."""
    if sys.stdin is None:
        raise InputError.keyed("error.stdin.closed")       # the stream is named in the text, in each language
    stream = getattr(sys.stdin, "buffer", None)
    data = stream.read() if stream is not None else sys.stdin.read().encode("utf-8", "surrogateescape")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError.keyed("error.stdin.utf8", byte=f"0x{data[exc.start]:02x}",
                               at=exc.start) from None


def _cosine(embeddings):
    import numpy as np

    norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
    unit = embeddings / np.maximum(norms, 1e-12)
    return np.clip(unit @ unit.T, -1.0, 1.0)


def _report(model, texts, lengths, embeddings, similarity, n_values: int, t) -> str:
    from rich.table import Table

    modes = " + ".join(t(f"cli.embed.mode.{m}") if f"cli.embed.mode.{m}" in EN else m for m in model.pooling.modes)
    pooling = t("cli.embed.pooling.normalized" if model.pooling.normalize else "cli.embed.pooling", modes=modes)
    lines = [t("cli.embed.title", model=model.name, n=len(texts), shape=tuple(embeddings.shape), pooling=pooling,
               max=model.pooling.max_seq_length), ""]
    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    for column, justify, width in (("#", "right", None), (t("cli.embed.col.text"), "left", 48),
                                   (t("cli.embed.col.tokens"), "right", None),
                                   (t("cli.embed.col.values", n=n_values), "left", None)):
        table.add_column(column, justify=justify, overflow="ellipsis", no_wrap=True, max_width=width)
    for i, (text, count, vector) in enumerate(zip(texts, lengths, embeddings)):
        shown = ", ".join(f"{v:+.4f}" for v in vector[:n_values]) + (", …" if n_values < vector.size else "")
        table.add_row(str(i), text, str(count), f"[{shown}]")
    lines.append(render_rich(table).rstrip())
    if len(texts) > 1:
        matrix = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
        matrix.add_column("", justify="right")
        for j in range(len(texts)):
            matrix.add_column(str(j), justify="right")
        for i in range(len(texts)):
            matrix.add_row(str(i), *(f"{similarity[i, j]:.3f}" for j in range(len(texts))))
        lines += ["", t("cli.embed.cosine"), render_rich(matrix).rstrip()]
    return "\n".join(lines) + "\n"
