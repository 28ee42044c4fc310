"""Text reports of a real model's attention (what `qkv inspect` prints), and the table helpers the
command line's text outputs share (`qkv heads`, `qkv embed`, the translator's explanation).

A renderer: it reads weights and a model's Trace and formats them, in English or Korean (every
word from `qkv.explain.texts`); it never computes attention. Tables are rich tables rendered to
plain text (no colour), or Markdown tables.

    summary = head_summary(model, trace, query=2, top=5, digits=3, fmt="text", lang="ko")
    print(render_rich(table(["a", "b"], [["1", "2"]], "text")))
"""

from __future__ import annotations

import io

import numpy as np

from ..trace import K_ROTATED, MODIFIED_SCORES, Q_ROTATED, ROPE_ANGLES, SINK_RATIO, SINK_WEIGHT, read_row
from .texts import CAUSAL_MODEL_TEXTS, key_names, step_name, text, values_of

__all__ = ["render_rich", "pad", "table", "sections", "token_line", "truncated", "is_causal", "causal_structure",
           "structure_json", "rope_section", "top_keys", "head_summary", "contribution_json", "contribution_sentences", "grid_summary", "SPECIAL"]

SPECIAL = ("[CLS]", "[SEP]")


# ------------------------------------------------------------------ tables (text via rich, or Markdown)
def render_rich(renderable, width: int = 140) -> str:
    """A rich renderable (table, rule) as plain text, ``width`` columns, no colour."""
    from rich.console import Console

    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None, highlight=False).print(renderable)
    return buffer.getvalue()


def table(header: list[str], body: list[list[str]], fmt: str, note: str = ""):
    """A Markdown table (str) for fmt "markdown", else a rich Table (first column left, others right)."""
    if fmt == "markdown":
        def cell(value: str) -> str:
            return str(value).replace("|", "\\|")

        lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in body]
        return "\n".join(lines) + (f"\n\n{note}" if note else "")
    from rich.table import Table

    result = Table(show_header=True, header_style="bold", box=None, pad_edge=False, caption=note or None)
    for i, h in enumerate(header):
        result.add_column(h, justify="left" if i == 0 else "right", no_wrap=True, min_width=len(h))
    for row in body:
        result.add_row(*row)
    return result


def sections(title: str, parts: list, fmt: str) -> str:
    """``title`` then each (heading, body) as a Markdown section or a ruled text section."""
    if fmt == "markdown":
        out = [f"# {title}"]
        for heading, body in parts:
            out.append(f"## {heading}\n\n{body if isinstance(body, str) else body}")
        return "\n\n".join(out) + "\n"
    from rich.rule import Rule

    out = [title, ""]
    for heading, body in parts:
        out.append(render_rich(Rule(heading, align="left")).rstrip())
        out.append(body if isinstance(body, str) else render_rich(body).rstrip())
        out.append("")
    return "\n".join(out) + "\n"


def pad(label: str, width: int, align: str = "<") -> str:
    """``label`` padded to ``width`` terminal columns, left ("<") or right (">") aligned: a Hangul
    syllable or a kana takes two columns, so str.format's padding would misalign Korean headers."""
    import unicodedata

    columns = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in label)
    fill = " " * max(0, width - columns)
    return label + fill if align == "<" else fill + label


def token_line(tokens: list[str]) -> str:
    return "  ".join(f"{i}:{t}" for i, t in enumerate(tokens))


# ------------------------------------------------------------------ what a model is
def truncated(model, text_in: str) -> bool:
    """Whether the model reads only a first part of ``text_in`` (its tokenizer cut the rest)."""
    encode = getattr(getattr(model, "tokenizer", None), "encode", None)
    return bool(encode is not None and getattr(encode(text_in), "overflowing", None))


def is_causal(model) -> bool:
    return bool(getattr(model, "is_causal", False))


def _list(indices) -> str:
    return ", ".join(str(i) for i in indices)


def causal_structure(model, lang: str = "en") -> list[tuple[str, str]]:
    """Sections saying how a causal model's attention is wired: its mask, its key/value heads, RoPE
    ([] for an encoder)."""
    if not is_causal(model):
        return []
    words = CAUSAL_MODEL_TEXTS[lang]
    c = model.config
    windowed = [layer for layer in range(c.n_layers) if c.window_of(layer) is not None] \
        if hasattr(c, "window_of") else ([] if c.sliding_window is None else list(range(c.n_layers)))
    if not windowed:
        mask = words["causal"]
    elif len(windowed) == c.n_layers:
        mask = words["causal"] + words["window"].format(w=c.sliding_window)
    else:
        mask = words["causal"] + words["window_layers"].format(w=c.sliding_window, layers=_list(windowed))
    if c.n_kv_heads == c.n_heads:
        heads = words["mha"].format(h=c.n_heads)
    else:
        groups = "; ".join(words["group"].format(heads=_list(g), g=i) for i, g in enumerate(model.kv_groups()))
        heads = words["grouped"].format(h=c.n_heads, g=c.n_kv_heads, kind=words["mqa" if c.n_kv_heads == 1 else "gqa"],
                                        groups=groups)
    steps = ", ".join(step_name(lang, name) for name in (ROPE_ANGLES, Q_ROTATED, K_ROTATED))
    positions = words["learned"] if c.rope_theta is None else words["rope_text"].format(theta=f"{c.rope_theta:g}",
                                                                                        steps=steps)
    sections = [(words["mask"], mask), (words["heads"], heads), (words["positions"], positions)]
    block = _block_options(c, words, lang)
    return sections + ([(words["block"], "; ".join(block))] if block else [])


def _block_options(c, words, lang: str) -> list[str]:
    """What a family's block does beyond the plain pre-norm one (the options `decoder.build` sets)."""
    options = []
    if getattr(c, "parallel", False):
        options.append(words["parallel"])
    if getattr(c, "sandwich", False):
        options.append(words["sandwich"])
    if getattr(c, "norm_position", "pre") == "post":
        options.append(words["postnorm"])
    if getattr(c, "qk_norm", False):
        options.append(words["qk_norm"])
    if getattr(c, "rotary_dim", None):
        options.append(words["partial"].format(r=c.rotary_dim, d=c.head_dim))
    if getattr(c, "scale_by_layer", False):                    # GPT-2's scale_attn_by_inverse_layer_idx
        options.append(words["scale_by_layer"])
    if getattr(c, "attn_scale", None) is not None and c.attn_scale != 1.0:   # Gemma 2/3: query_pre_attn_scalar^−½
        options.append(words["scale_scalar"].format(s=f"{c.attn_scale:.4g}", m=f"{round(c.attn_scale ** -2, 6):g}"))
    elif getattr(c, "attn_scale", None) is not None:           # GPT-2's scale_attn_weights false
        options.append(words["scale"].format(s=f"{c.attn_scale:.4g}"))
    if getattr(c, "attn_softcap", None) is not None:
        options.append(words["softcap"].format(c=f"{c.attn_softcap:g}", step=step_name(lang, MODIFIED_SCORES)))
    if getattr(c, "n_experts", 0):
        options.append(words["moe"].format(e=c.n_experts, k=c.experts_per_token))
    if getattr(c, "final_softcap", None) is not None:
        options.append(words["final_softcap"].format(c=f"{c.final_softcap:g}"))
    return options


def structure_json(model, head: int | None = None) -> dict:
    """The same facts as `causal_structure`, for a JSON document ({} for an encoder)."""
    if not is_causal(model):
        return {}
    c = model.config
    data = {"causal": True, "sliding_window": c.sliding_window, "n_kv_heads": c.n_kv_heads,
            "kv_groups": model.kv_groups(), "rope_theta": c.rope_theta}
    if getattr(c, "layer_types", ()):
        data["layer_types"] = list(c.layer_types)
    if head is not None:
        data["kv_head"] = c.kv_head_of(head)
    return data


def rope_section(trace, tokens: list[str], query: int, *, lang: str, digits: int,
                 full: bool = False) -> list[tuple[str, str]]:
    """The followed query's q and k before and after RoPE (one row each), from the trace's own steps."""
    if "q_rotated" not in trace:
        return []
    words, d = CAUSAL_MODEL_TEXTS[lang], digits

    def row(values) -> str:
        shown = values if full or len(values) <= 12 else list(values[:6]) + [None] + list(values[-6:])
        return "[" + " ".join("…" if v is None else f"{v:.{d}f}" for v in shown) + "]"

    q, q_rot = trace["q_heads"].value[0, query], trace["q_rotated"].value[0, query]
    k, k_rot = trace["k_heads"].value[0, query], trace["k_rotated"].value[0, query]
    lines = [words["at"].format(q=query, token=tokens[query], angles=row(trace["rope_angles"].value[query])),
             words["q0"].format(v=row(q)), words["q1"].format(v=row(q_rot)),
             words["k0"].format(v=row(k)), words["k1"].format(v=row(k_rot)),
             words["kept"].format(a=f"{np.linalg.norm(q):.{d}f}", b=f"{np.linalg.norm(q_rot):.{d}f}")]
    return [(words["rope"], "\n".join(lines))]


def top_keys(row, tokens, k: int) -> list[tuple[int, float]]:
    """The ``k`` (at least 1) keys of a weights row with the largest weights: [(key index, weight)]."""
    order = np.argsort(-row, kind="stable")[: max(1, k)]
    return [(int(j), float(row[j])) for j in order]


# ------------------------------------------------------------------ one head
def head_summary(model, trace, *, query: int, top: int, digits: int, fmt: str, lang: str = "en",
                 full: bool = False) -> str:
    """One head of a model's trace (``model.trace(text, layer=, head=, query=)``): its tokens, the
    model's wiring (causal models), RoPE for the query, the head's weights and the query's top keys."""
    t = _words(lang)
    meta, c = trace.meta, model.config
    layer, head, tokens = meta["layer"], meta["head"], meta["tokens"]
    weights = trace["weights"].value[0]                                 # (T, T): this head's only head
    best = top_keys(weights[query], tokens, top)
    # models count from 0, as their arrays: "layer 2 of 0–5", never "of 6" (which reads as 1-based)
    title = t("cli.inspect.title", model=model.name, layer=layer, head=head, last_layer=c.n_layers - 1,
              last_head=c.n_heads - 1)
    if is_causal(model) and c.n_kv_heads < c.n_heads:
        title += t("cli.inspect.kv", g=meta["kv_head"], heads=_list(meta["kv_group"]))
    parts = [(t("cli.tokens"), token_line(tokens))] + causal_structure(model, lang)
    parts += rope_section(trace, tokens, query, lang=lang, digits=digits, full=full)
    parts += [(t("cli.inspect.weights", head=head), _matrix(weights, tokens, digits, fmt, query, t))]
    if "contributions" in trace and "shares" in trace:
        contributions, shares = trace["contributions"].value[0][query], trace["shares"].value[0][query]
        body = table([t("cli.inspect.col.key"), t("cli.inspect.col.token"), t("cli.inspect.col.weight"),
                      t("col.contribution"), t("col.share")],
                     [[str(j), tokens[j], f"{w:.{digits}f}", f"{contributions[j]:.{digits}f}", f"{shares[j]:.{digits}f}"]
                      for j, w in best], fmt)
        said = contribution_sentences(weights[query], contributions, shares, tokens, query, digits=digits, lang=lang)
        parts += [(t("cli.inspect.top", n=len(best), q=query, token=tokens[query]),
                   body if not said else (body if fmt == "markdown" else render_rich(body).rstrip()) + "\n\n" + said)]
    else:
        parts += [(t("cli.inspect.top", n=len(best), q=query, token=tokens[query]),
                   table([t("cli.inspect.col.key"), t("cli.inspect.col.token"), t("cli.inspect.col.weight")],
                         [[str(j), tokens[j], f"{w:.{digits}f}"] for j, w in best], fmt))]
    return sections(title, parts, fmt)


def contribution_json(weights, contributions, shares) -> dict:
    """The weight-vs-contribution reading of one query's row, for a JSON document: every key's
    ‖w·v‖ and share, the key with the largest weight, the one that contributes most, and the sink
    (None when there is none) by `qkv.trace.read_row`'s rule."""
    reading = read_row(weights, contributions)
    return {"contributions": [float(c) for c in contributions], "shares": [float(x) for x in shares],
            "largest_weight": None if reading is None else reading.heaviest,
            "contributes_most": None if reading is None else reading.strongest,
            "largest_weight_tied": [] if reading is None else list(reading.heaviest_keys),
            "contributes_most_tied": [] if reading is None else list(reading.strongest_keys),
            "sink": None if reading is None else reading.sink,
            "sink_rule": {"weight_at_least": SINK_WEIGHT, "share_at_most_times_weight": SINK_RATIO}}


def contribution_sentences(weights, contributions, shares, tokens, query: int, *, digits: int, lang: str) -> str:
    """The sentences that name the key with the largest weight, the key that contributes most and an
    attention sink (`qkv.trace.read_row`), generated from one query's row; "" for a row with no weight."""
    reading = read_row(weights, contributions)
    if reading is None:
        return ""

    def said(js) -> dict:
        return {"w": values_of(js, lambda j: f"{weights[j]:.{digits}f}"),
                "c": values_of(js, lambda j: f"{contributions[j]:.{digits}f}"),
                "share": values_of(js, lambda j: f"{shares[j]:.{digits}f}")}

    top, most, token = reading.heaviest_keys, reading.strongest_keys, tokens[query]
    lines = [text(lang, "weights.top.same", token=token, top=key_names(lang, top, tokens), **said(top)) if reading.same
             else text(lang, "weights.top.differ", token=token, top=key_names(lang, top, tokens),
                       most=key_names(lang, most, tokens), **said(top),
                       w_most=said(most)["w"], c_most=said(most)["c"], share_most=said(most)["share"])]
    if reading.sink is not None:
        lines.append(text(lang, "weights.sink", token=token, sink=tokens[reading.sink], **said((reading.sink,)),
                          weight_rule=f"{SINK_WEIGHT:g}", ratio=f"{SINK_RATIO:g}"))
    return "\n".join(lines)


def _matrix(weights, tokens, digits: int, fmt: str, query: int, t):
    shown = min(len(tokens), 24)
    header = [""] + [f"{j}:{tokens[j]}" for j in range(shown)]
    body = [[("→ " if i == query else "") + f"{i}:{tokens[i]}"] + [f"{weights[i, j]:.{digits}f}" for j in range(shown)]
            for i in range(shown)]
    note = "" if shown == len(tokens) else t("cli.inspect.first_tokens", shown=shown, total=len(tokens))
    return table(header, body, fmt, note)


# ------------------------------------------------------------------ layers × heads
def grid_summary(model, weights, *, layers: list[int], heads: list[int], tokens: list[str], query: int,
                 digits: int, fmt: str, lang: str = "en", hint: bool = True) -> str:
    """For each chosen layer and head, the key ``query`` attends to most: weights (L', H', T, T) of
    the chosen ``layers`` × ``heads``. Rows are heads, columns layers (fewer than heads, so it fits a
    terminal). Many heads park their attention on [CLS] or [SEP]; the cell then also names the word
    they attend to most. ``hint``: end with how to go further (--layer/--head, --figure, html)."""
    t = _words(lang)
    title = t("cli.inspect.grid.title", model=model.name, layers=len(layers), heads=len(heads), tokens=len(tokens))
    if is_causal(model):
        title += t("cli.inspect.grid.causal", kind=model.config.model_type)
    words = np.array([token not in SPECIAL for token in tokens])
    cells = {}
    for i, l in enumerate(layers):
        for j, h in enumerate(heads):
            k, w = top_keys(weights[i, j, query], tokens, 1)[0]
            cell = f"{tokens[k]} {_short(w)}"
            if tokens[k] in SPECIAL and words.any():
                row = np.where(words, weights[i, j, query], -1.0)
                best = int(np.argmax(row))
                cell += f" · {tokens[best]} {_short(row[best])}"
            cells[(l, h)] = cell
    header = [t("cli.inspect.col.head")] + [t("cli.inspect.col.layer", l=l) for l in layers]
    body = [[str(h)] + [cells[(l, h)] for l in layers] for h in heads]
    most = t("cli.inspect.grid.most", q=query, token=tokens[query])
    most += "" if is_causal(model) else t("cli.inspect.grid.special")
    return sections(title, [(t("cli.tokens"), token_line(tokens))] + causal_structure(model, lang) + [
                            (most, table(header, body, fmt))]
                    + ([(t("cli.inspect.next"), t("cli.inspect.hint"))] if hint else []), fmt)


def _short(weight: float) -> str:
    """0.32 → ".32" (weights lie in [0, 1]; the grid has 12 columns to fit)."""
    shown = f"{weight:.2f}"
    return shown[1:] if shown.startswith("0.") else shown


def _words(lang: str):
    def t(key: str, **values) -> str:
        return text(lang, key, **values)
    return t
