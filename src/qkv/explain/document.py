"""The explanation as a list of blocks (headings, paragraphs, matrices, calculations, tables).

The builders here read a finished Trace and arrange its steps with the texts of one language;
each output format (text, Markdown, HTML, JSON) then only writes the blocks out. Nothing here
computes attention: every number is a value of a recorded step (sliced, never recomputed).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Union

import numpy as np

from ..trace import (BY_HAND, CONTRIBUTIONS, DRIFT, SHARES, SINK_RATIO, SINK_WEIGHT, Step, Trace, head_number,
                     in_language, read_row, tied, token_number)
from . import texts
from .parts import K_ROTATED, MODIFIED_SCORES, Q_ROTATED, ROPE_ANGLES, title_of
from .numbers import digits_for, fmt, fmt_decimal, shown_decimal
from .style import DIGITS

__all__ = ["Num", "Vec", "Sym", "Heading", "Para", "Note", "Matrix", "Calc", "Table", "Context", "build", "shown",
           "EDGE", "MATRIX_LIMIT", "VECTOR_LIMIT"]

# Long matrices are shortened the way NumPy and torch print them: an axis longer than its limit
# shows its first and last EDGE entries with an ellipsis between (and the full shape in the caption).
# Every seed example fits within the limits, so it is shown whole. JSON always keeps every number.
EDGE = 4
MATRIX_LIMIT = 2 * EDGE + 1      # matrix axes up to 9 long are shown whole
VECTOR_LIMIT = 32                # a vector (a query's row, a weights row) up to 32 long is shown whole


def shown(n: int, limit: int | None, keep=()) -> list:
    """The indices of an axis of length ``n`` to show, with None where an ellipsis stands.

    ``limit`` None or n ≤ limit: every index. Otherwise the first and last EDGE indices plus those
    in ``keep`` (e.g. the followed query's row), in order: shown(20, 9, keep=[10]) →
    [0, 1, 2, 3, None, 10, None, 16, 17, 18, 19].
    """
    if limit is None or n <= limit:
        return list(range(n))
    kept = (int(k) for k in keep if k is not None and 0 <= k < n)
    picked = sorted({*range(min(EDGE, n)), *range(max(0, n - EDGE), n), *kept})
    out: list = []
    for index in picked:
        if out and index != out[-1] + 1:
            out.append(None)
        out.append(index)
    return out


# --------------------------------------------------------------------------- blocks
@dataclass(frozen=True)
class Num:
    value: float
    digits: int
    group: int | None = None          # head colour (0-based) or None
    paren: bool = False               # written in parentheses when negative (a factor: 0.9 × (-0.2))


@dataclass(frozen=True)
class Vec:
    values: tuple
    digits: int
    groups: int = 0                   # values per head colour group (0: no colours)
    limit: int | None = VECTOR_LIMIT  # longer: first and last EDGE values, "…" between (None: all)


@dataclass(frozen=True)
class Sym:
    plain: str
    latex: str


Part = Union[str, Num, Vec, Sym]


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Para:
    text: str


@dataclass(frozen=True)
class Note:
    text: str


@dataclass(frozen=True)
class Matrix:
    label: Sym
    values: np.ndarray                # 2-D
    digits: int
    step: str
    rows: list | None = None
    cols: list | None = None
    col_groups: int = 0               # columns per head (colours), 0: none
    row_groups: int = 0               # rows per head (W_O), 0: none
    highlight: int | None = None      # the followed query's row (kept when rows are elided)
    limit: int | None = MATRIX_LIMIT  # an axis longer than this is elided to its first and last EDGE
    masked: np.ndarray | None = None  # bool, same shape: entries the mask blocked, written "masked"


@dataclass(frozen=True)
class Calc:
    """Lines of arithmetic, each a list of Parts. A negative term after "+" is written "− |term|"
    ("+ -0.5000 × 0.75" reads as a typo): the value is the same, the sign moves to the operator."""

    lines: list                       # each a list of Parts

    def __post_init__(self) -> None:
        for line in self.lines:
            for i in range(1, len(line)):
                part = line[i]
                if (line[i - 1] is PLUS and isinstance(part, Num) and not part.paren and part.value < 0
                        and fmt(part.value, part.digits).startswith("-")):
                    line[i - 1], line[i] = MINUS, replace(part, value=-part.value)


@dataclass(frozen=True)
class Table:
    header: list                      # strings
    rows: list                        # each a list of cells (a Part)
    limit: int | None = None          # more rows: the first and last EDGE and those in keep (None: all)
    keep: tuple = ()


Block = Union[Heading, Para, Note, Matrix, Calc, Table]


# --------------------------------------------------------------------------- context
@dataclass
class Context:
    trace: Trace
    lang: str = "en"
    digits: int | None = None
    by_hand: bool = False
    full: bool = False                # True: print every number of every matrix and vector (no ellipses)
    blocks: list = field(default_factory=list)
    saved: Trace | None = None        # the trace as given (the API's token names), what a JSON file keeps

    def __post_init__(self) -> None:
        self.info = self.trace.info           # the trace's metadata, typed (qkv.trace.TraceInfo)

    def t(self, key: str, **values: Any) -> str:
        return texts.text(self.lang, key, **values)

    def has(self, name: str) -> bool:
        return self.name(name) in self.trace

    def name(self, name: str) -> str:
        return f"{BY_HAND}/{name}" if self.by_hand else name

    def step(self, name: str) -> Step:
        return self.trace[self.name(name)]

    def value(self, name: str) -> np.ndarray:
        return self.step(name).value

    def d(self, name: str) -> int:
        if name.rsplit("/", 1)[-1] == "mask":
            return 0                  # 0 or −∞: no decimals to show
        return digits_for(name, self.digits if self.digits is not None else (self.info.digits or {}),
                          default=DIGITS)

    def add(self, *blocks: Block) -> None:
        self.blocks.extend(blocks)

    def vec(self, name: str, values, groups: int = 0) -> Vec:
        return Vec(tuple(float(v) for v in np.ravel(values)), self.d(name), groups)

    def num(self, name: str, value, group: int | None = None) -> Num:
        return Num(float(value), self.d(name), group)

    def matrix(self, name: str, label: Sym, values=None, **kw: Any) -> Matrix:
        values = self.value(name) if values is None else values
        return Matrix(label, np.atleast_2d(np.asarray(values, dtype=float)), self.d(name), name, **kw)


def sym(plain: str, latex: str | None = None) -> Sym:
    return Sym(plain, plain if latex is None else latex)


def _worded(plain: str) -> Sym:
    """A symbol made of words (``scores·scale``, ``점수·스케일``): LaTeX sets each word as text."""
    import re

    return Sym(plain, re.sub(r"[^\W\d_]+", lambda m: rf"\text{{{m[0]}}}", plain).replace("·", r"\cdot "))


def sub(base: str, token: str) -> Sym:
    """x_love, written x_{\\text{love}} in LaTeX."""
    return Sym(f"{base}_{token}", f"{base}_{{\\text{{{_latex_text(token)}}}}}")


def _latex_text(token: str) -> str:
    out = token
    for ch, rep in (("\\", r"\textbackslash{}"), ("{", r"\{"), ("}", r"\}"), ("_", r"\_"), ("&", r"\&"),
                    ("%", r"\%"), ("$", r"\$"), ("#", r"\#"), ("^", r"\^{}"), ("~", r"\~{}")):
        out = out.replace(ch, rep)
    return out


EQ, PLUS, TIMES, DOT = sym("="), sym("+"), sym("×", r"\times"), sym("·", r"\cdot")
APPROX, MINUS, DIVIDE = sym("≈", r"\approx"), sym("−", "-"), sym("/", "/")


# --------------------------------------------------------------------------- true as printed
# Every equation the explanation prints must hold for the numbers as printed: a reader who redoes
# the arithmetic on the page gets the result shown. The results are the recorded values; where the
# operands, rounded to the step's usual decimals, would not give the shown result, `fit` shows the
# operands with more decimals (up to MORE_DIGITS more). If even that is not enough, the line is
# written with ≈ instead of = (true as printed, and marked as a rounding).
MORE_DIGITS = 4


def _exact_at(num: Num) -> bool:
    """True when the number as printed is the value itself (0.45 at two decimals, though 1.2 − 0.1 is
    1.0999999999999999 in binary: a difference far below any printed decimal counts as none)."""
    shown = shown_decimal(num.value, num.digits)
    return (shown is not None and np.isfinite(num.value)
            and abs(float(shown) - float(num.value)) <= 1e-12 * max(1.0, abs(float(num.value))))


def fit(operands: list, results: list, compute) -> tuple[list, bool]:
    """The operands as they must be printed so that ``compute`` of them prints ``results``.

    operands, results: lists of Num. compute: shown operands (Decimals) → the results (Decimals), in
    order. Returns (operands, holds): operands whose shown value is not already exact get the fewest
    extra decimals that make every result print as shown; holds is False when none did (write ≈).
    """
    wanted = [fmt(r.value, r.digits) for r in results]
    for extra in range(MORE_DIGITS + 1):
        ops = [o if extra == 0 or _exact_at(o) else replace(o, digits=o.digits + extra) for o in operands]
        shown = [shown_decimal(o.value, o.digits) for o in ops]
        if any(v is None for v in shown):
            return operands, False
        got = compute(shown)
        if all(_matches(g, r.digits, w) for g, r, w in zip(got, results, wanted)):
            return ops, True
    return operands, False


def _matches(value: Decimal, digits: int, printed: str) -> bool:
    """``value`` is what ``printed`` shows: rounded to ``digits`` decimals, or, where the printed number
    is in scientific notation (a tiny nonzero value, 1.0e-43), to its two significant digits."""
    if "e" in printed:
        return fmt(float(value), digits) == printed
    return fmt_decimal(value, digits) == printed


def fit_dots(rows: list) -> list:
    """Each row (left, right, result) of one block of sums of products — left·right printed as result, e.g.
    q·k for every key, or each column of a row times a matrix — as (its operands as they must be printed, the n
    left ones then the n right ones; whether its line holds). ONE precision for the whole block: `fit` over
    every line at once, so the extra decimals one line needs to be true as printed go to every line's operands
    (fitted one by one, a block read 0.8933 × 0.40 beside 0.81763 × 0.40, issue 29's "digits drifting within
    one block"). Where no common precision makes every line true, each line is fitted alone."""
    operands, spans = [], []
    for left, right, _ in rows:
        spans.append((len(operands), len(left)))
        operands += [*left, *right]
    ops, holds = fit(operands, [result for _, _, result in rows],
                     lambda v: [sum((v[s + i] * v[s + n + i] for i in range(n)), Decimal(0)) for s, n in spans])
    if holds or len(rows) == 1:
        return [(ops[s:s + 2 * n], holds) for s, n in spans]
    return [fit_dots([row])[0] for row in rows]


def sum_of_products(ctx: "Context", left: list, right: list, result: "Num", lhs: list) -> list:
    """One printed line ``lhs = a₀ × b₀ + a₁ × b₁ + … = result``, true as printed (see `fit`)."""
    return sums_of_products(ctx, [(left, right, result, lhs)])[0]


def sums_of_products(ctx: "Context", rows: list) -> list:
    """The lines of one block — ``rows``: (left, right, result, lhs) as `sum_of_products` takes them — with one
    precision for the whole block (`fit_dots`)."""
    lines = []
    for (left, _, result, lhs), (ops, holds) in zip(rows, fit_dots([(a, b, total) for a, b, total, _ in rows])):
        n = len(left)
        terms: list = []
        for i in range(n):
            if i:
                terms.append(PLUS)
            terms += [ops[i], TIMES, _factor(ops[n + i])]
        lines.append([*lhs, EQ, *terms, EQ if holds else APPROX, result])
    return lines


# --------------------------------------------------------------------------- entry
def build(trace: Trace, *, lang: str = "en", digits: int | None = None, by_hand: bool = False,
          full: bool = False) -> Context:
    """The blocks explaining ``trace`` in ``lang``; digits None = the trace's own precision per step.
    full: the formats print every number instead of eliding long axes (see `shown`)."""
    texts.check_lang(lang)
    if by_hand and not any(s.name.startswith(BY_HAND + "/") for s in trace.steps):
        raise ValueError("this trace has no by-hand steps; make it with by_hand=True "
                         "(qkv.examples.run(..., by_hand=True) or `--by-hand`)")
    ctx = Context(in_language(trace, lang), lang, digits, by_hand, full, saved=trace)   # names in the reader's language
    kind = ctx.info.kind
    if kind == "multi-head":
        _multi_head(ctx)
    elif kind == "group-meeting":
        _group_meeting(ctx)
    elif "q" in trace and "weights" in trace:
        _attention(ctx)
    else:
        _generic(ctx)
    if by_hand:
        _drift(ctx)
    return ctx


def _numbering(ctx: Context) -> None:
    """Once per example whose post counts from 1: how the numbers shown meet the API's 0-based index."""
    info = ctx.info
    if not (info.token_base or info.head_base):
        return
    tokens, row = list(info.tokens), info.query
    if info.scenes:                                       # the group meeting: the question its meetings follow
        tokens = list(info.scenes[0]["tokens"])
        row = tokens.index(info.scenes[0]["query"])
    if not 0 <= row < len(tokens):
        return
    n = token_number(ctx.trace.meta, row)
    own = texts.names_its_number(tokens[row], n)           # “token 3” is token 3: say only what it is in the arrays
    parts = [ctx.t("note.numbering.own" if own else "note.numbering", n=n, token=f"“{tokens[row]}”", index=row)]
    if info.head_base and (info.n_heads or 1) > 1:
        parts.append(ctx.t("note.numbering.heads"))
    if not info.scenes:                                   # the group meeting takes no --query
        parts.append(ctx.t("note.numbering.query", n=token_number(ctx.trace.meta, row), index=row))
    ctx.add(Note(" ".join(parts)))


def _example_name(ctx: Context, name: str) -> str:
    """A worked example named in a sentence: as the reader's language writes it where it has a name of its own
    (Korean writes the post's "Self-attention"), else as typed on the command line."""
    key = f"example.name.{name}"
    return ctx.t(key) if texts.has(ctx.lang, key) else name


def _title(ctx: Context) -> None:
    info = ctx.info
    title = title_of(ctx.trace, ctx.lang) or ctx.t("title.user")     # in the reader's language
    ctx.add(Heading(title, 1))
    if info.post and texts.has(ctx.lang, f"post.{info.post}"):
        # the posts are Korean: a Korean reader needs no gloss after the title (an English one does)
        key = "post.native" if ctx.lang == "ko" else "post"
        ctx.add(Para(ctx.t(key, title=ctx.t(f"post.{info.post}"), gloss=ctx.t(f"post.{info.post}.gloss"))))
    _numbering(ctx)
    if info.what_if:
        ctx.add(Note(ctx.t("whatif.said", changes=_what_if_said(ctx, info.what_if))))
    if ctx.by_hand:
        shown = ctx.digits if ctx.digits is not None else None
        ctx.add(Note(ctx.t("byhand.intro") + " " + (ctx.t("byhand.digits", digits=shown) if shown is not None
                                                      else ctx.t("byhand.seed_digits"))))


def _what_if_said(ctx: Context, what_if: dict) -> str:
    """A what-if's changes as they are typed (`qkv example NAME --what-if`): scores × 0.5, no ÷√d_k, x[2,0] = 0.5 —
    a row of x or memory and a meeting's position numbered as the example numbers its tokens (`token_base`),
    columns and a W's rows from 0, as `qkv.examples.changes_from` reads them."""
    base = ctx.info.token_base
    said = []
    if what_if.get("factor", 1.0) != 1.0:
        said.append(ctx.t("whatif.said.factor", factor=f"{what_if['factor']:g}"))
    if not what_if.get("sqrt_dk", True):
        said.append(ctx.t("whatif.said.no_sqrt"))
    tokens = {"x": list(ctx.info.tokens), "memory": list(ctx.info.key_tokens)}
    for matrix, edits in (what_if.get("cells") or {}).items():
        rows = tokens.get(matrix) or []        # a row of x or memory is a token's: numbered as tokens are, and named
        said += [ctx.t("whatif.said.row", cell=f"{matrix}[{i + base},{j}] = {value:g}", token=rows[i]) if i < len(rows)
                 else f"{matrix}[{i},{j}] = {value:g}" for i, j, value in edits]
    for meeting, edits in (what_if.get("scores") or {}).items():
        said += [f"{meeting}[{j + base}] = {value:g}" for j, value in edits]
    return ", ".join(said) or "—"


def _scale_given(ctx: Context, formula: str, dk: int) -> str:
    """A scale other than 1/√d_k, said with what it is where the model's meta says why (decoder.trace's
    ``scale_reason``): GPT-2's scale_attn_by_inverse_layer_idx (1/√d_k ÷ (layer + 1)), Gemma's
    query_pre_attn_scalar (1/√scalar in place of 1/√d_k); else the formula alone (a temperature, scale=)."""
    reason = ctx.trace.meta.get("scale_reason")
    if isinstance(reason, dict) and reason.get("by_layer"):
        return ctx.t("scale.by_layer", formula=formula, n=reason["by_layer"], layer=reason["by_layer"] - 1)
    if isinstance(reason, dict) and reason.get("query_pre_attn_scalar"):
        return ctx.t("scale.scalar", formula=formula, m=f"{reason['query_pre_attn_scalar']:g}", dk=dk)
    return ctx.t("scale.given", formula=formula)


def _notes(ctx: Context, step: str, query: int | None = None, keys: list | None = None) -> None:
    """The notes the trace carries for ``step`` (and for this query, when a note names one)."""
    tokens = ctx.info.tokens
    keys = keys if keys is not None else ctx.info.key_tokens
    for note in ctx.info.notes:
        if note.get("step") != step:
            continue
        if note.get("mode", "any") != "any" and (note["mode"] == "by-hand") != ctx.by_hand:
            continue
        if "query" in note and query is not None and note["query"] != (tokens[query] if query < len(tokens) else None):
            continue
        # a by-hand note speaks of the number shown by hand (unless it says value = "exact"); others of the exact
        shown_by_hand = note.get("mode") == "by-hand" and note.get("value", "shown") != "exact"
        recorded = ctx.trace.get(ctx.name(step) if shown_by_hand else step)
        if recorded is None:
            continue
        values = recorded.value
        if values.ndim == 3:
            values = values[0]
        if values.ndim == 2:
            values = values[query if query is not None and query < values.shape[0] else 0]
        if note.get("precision") == "post" and not _at_post_precision(ctx):
            continue                  # it speaks of the post's printed decimals, which --digits changed
        index = note.get("index")
        # an exact value gets two more decimals; a by-hand number is rounded to its step's decimals, and more
        # would print zeros it does not have (0.92900 for a sum of 0.929432)
        more = ctx.d(step) + (0 if shown_by_hand else 2)
        if index is not None:
            shown = "0" if values[index] == 0 else _fmt_plain(Num(float(values[index]), more))
        else:
            shown = _fmt_plain(Vec(tuple(float(v) for v in values), more))
        token = keys[index] if index is not None and index < len(keys) else ""
        if "key" in note and texts.has(ctx.lang, note["key"]):
            ctx.add(Note(ctx.t(note["key"], value=shown, token=token)))
        elif "text" in note:
            ctx.add(Note(str(note["text"]).replace("{value}", shown).replace("{token}", token)))


def _difference(ctx: Context, key: str, diff: float) -> str:
    """A check's sentence: the largest difference when there is one; "exactly" when there is none (not
    "differs by at most 0")."""
    from .numbers import fmt_small

    return ctx.t(f"{key}.exact") if float(diff) == 0 else ctx.t(key, diff=fmt_small(diff))


def _at_post_precision(ctx: Context) -> bool:
    """Every step is shown at the decimals its post prints (no --digits, or --digits equal to all of them)."""
    table = ctx.info.digits if isinstance(ctx.info.digits, dict) else {}
    return ctx.digits is None or all(int(v) == ctx.digits for v in table.values())


def _fmt_plain(part: Part) -> str:
    from .numbers import fmt

    if isinstance(part, Num):
        return fmt(part.value, part.digits)
    if isinstance(part, Vec):
        return "[" + ", ".join(fmt(v, part.digits) for v in part.values) + "]"
    return part.plain if isinstance(part, Sym) else str(part)


def _tokens(ctx: Context) -> tuple[list, list, int]:
    return list(ctx.info.tokens), list(ctx.info.key_tokens), ctx.info.query


def _labels(n: int, tokens: list) -> list:
    return tokens if len(tokens) == n else [str(i) for i in range(n)]


# --------------------------------------------------------------------------- attention
def _attention(ctx: Context) -> None:
    """Self-, cross- or multi-head attention: X → Q, K, V → scores → weights → outputs → W_O → R + Y."""
    tr, info = ctx.trace, ctx.info
    example, kind = info.example, info.kind or "self-attention"
    cross = ctx.has("memory")
    _title(ctx)
    intro = f"intro.{example}" if example and texts.has(ctx.lang, f"intro.{example}") else f"intro.user.{kind}"
    x = ctx.value("x")
    n_heads = ctx.value("q_heads").shape[-3]
    model_head = kind == "model" and n_heads == 1 and info.head is not None   # one head of a real model
    if model_head:   # the words follow the trace: a normalised input (pre-norm), biases only where recorded
        biased = any("+ b" in ctx.step(name).formula for name in ("q", "k", "v"))
        ctx.add(Para(ctx.t("intro.model.head", model=info.model or "?", layer="?" if info.layer is None else info.layer,
                           head=info.head, last_head=info.n_heads - 1 if info.n_heads else "?",
                           x=ctx.t("intro.model.x.normed" if ctx.has("normed") else "intro.model.x"),
                           bias=ctx.t("intro.model.bias" if biased else "intro.model.nobias"))))
    elif texts.has(ctx.lang, intro):
        ctx.add(Para(ctx.t(intro)))
    tokens, keys, query = _tokens(ctx)
    tokens, keys = _labels(x.shape[0], tokens), _labels(ctx.value("k").shape[0], keys)
    qtok = tokens[query]
    dk, dv = ctx.value("q_heads").shape[-1], ctx.value("v_heads").shape[-1]
    groups_k, groups_v = (dk, dv) if n_heads > 1 else (0, 0)

    # inputs
    ctx.add(Heading(ctx.t("h.inputs")))
    if cross:
        ctx.add(Para(ctx.t("cross.decoder", n=x.shape[0], d=x.shape[1])),
                ctx.matrix("x", sym("X_dec", r"X_{\text{dec}}"), rows=tokens, highlight=query),
                Para(ctx.t("cross.encoder", n=len(keys), d=ctx.value("memory").shape[1])),
                ctx.matrix("memory", sym("M_enc", r"M_{\text{enc}}"), rows=keys))
    else:
        ctx.add(Para(ctx.t("inputs.x", t=x.shape[0], d=x.shape[1])),
                ctx.matrix("x", sym("X"), rows=tokens, highlight=query))
    if model_head:
        ctx.add(Para(ctx.t("inputs.weights.model", d=x.shape[1], dk=dk)))
    else:
        ctx.add(Para(ctx.t("inputs.weights" if n_heads == 1 else "inputs.weights.heads", h=n_heads, dk=dk, dv=dv)))
    for name, label, groups in (("w_q", "W_Q", groups_k), ("w_k", "W_K", groups_k), ("w_v", "W_V", groups_v)):
        ctx.add(ctx.matrix(name, sym(label, label.replace("_", "_{") + "}"), col_groups=groups))

    # projections
    ctx.add(Heading(ctx.t("h.projection.cross" if cross else "h.projection")))
    ctx.add(Para(ctx.t("projection.rule.cross" if cross else "projection.rule")))
    _projection_rows(ctx, tokens, keys, query, cross, groups_k, groups_v)
    q_all, k_all, v_all = ctx.value("q"), ctx.value("k"), ctx.value("v")
    if n_heads == 1 and q_all.shape[1] <= 4 and v_all.shape[1] <= 4:
        if cross:
            ctx.add(Table([ctx.t("col.token"), "Q"], [[tok, ctx.vec("q", q_all[i])] for i, tok in enumerate(tokens)]),
                    Para(ctx.t("cross.kv_from_encoder")),
                    Table([ctx.t("col.encoder_token"), "K", "V"],
                          [[tok, ctx.vec("k", k_all[j]), ctx.vec("v", v_all[j])] for j, tok in enumerate(keys)]))
        else:
            ctx.add(Para(ctx.t("projection.table")),
                    Table([ctx.t("col.token"), "Q", "K", "V"],
                          [[tok, ctx.vec("q", q_all[i]), ctx.vec("k", k_all[i]), ctx.vec("v", v_all[i])]
                           for i, tok in enumerate(tokens)]))
    else:
        if cross:
            ctx.add(Para(ctx.t("cross.kv_from_encoder")))
        for name, label, rows, groups in (("q", "Q", tokens, groups_k), ("k", "K", keys, groups_k),
                                          ("v", "V", keys, groups_v)):
            ctx.add(ctx.matrix(name, sym(label), rows=rows, col_groups=groups,
                               highlight=query if name == "q" else None))
    if n_heads > 1:
        t, hd = ctx.value("q").shape
        listed = n_heads if n_heads <= 4 else 2            # every head's columns, or the first two and "so on"
        columns = [ctx.t("split.head", first=h * dk, last=(h + 1) * dk - 1, h=head_number(tr.meta, h))
                   for h in range(listed)] + ([ctx.t("split.more", dh=dk)] if listed < n_heads else [])
        ctx.add(Para(ctx.t("split", t=t, d=hd, h=n_heads, dh=dk, columns=", ".join(columns),
                           shape=" × ".join(str(s) for s in ctx.value("q_heads").shape))))
    if ctx.has(Q_ROTATED) and ctx.has(K_ROTATED):
        theta = info.rope_theta
        ctx.add(Heading(ctx.t("h.rope")),
                Para(ctx.t("rope.explain", theta="?" if theta is None else f"{theta:g}", half=dk // 2, dk=dk)))
        if ctx.has(ROPE_ANGLES):
            ctx.add(ctx.matrix(ROPE_ANGLES, sym("angles", r"\text{angles}"), rows=tokens, highlight=query))

    # core attention, head by head
    for h in range(n_heads):
        _attention_head(ctx, h, n_heads, tokens, keys, query, cross)

    # heads together, W_O, R + Y
    if ctx.has("concat") and not model_head:     # one head of a model: H is its output Z, shown above
        concat = ctx.value("concat")
        ctx.add(Heading(ctx.t("h.concat")),
                Para(ctx.t("concat.explain", h=n_heads, t=concat.shape[0], width=concat.shape[1])),
                ctx.matrix("concat", sym("H", "H"), rows=tokens, col_groups=dv if n_heads > 1 else 0,
                           highlight=query))
    if ctx.has("y"):
        w_o, y = ctx.value("w_o"), ctx.value("y")
        ctx.add(Heading(ctx.t("h.output")),
                Para(ctx.t(("wo.explain.model.nobias" if info.bias_out is False else "wo.explain.model")
                           if model_head else "wo.explain", rows=w_o.shape[0], cols=w_o.shape[1])),
                ctx.matrix("w_o", sym("W_O", "W_O"), row_groups=dv if n_heads > 1 else 0),
                Para(ctx.t("y.explain.model" if model_head else "y.explain", t=y.shape[0], d=y.shape[1])),
                ctx.matrix("y", sym("Y", "Y"), rows=tokens, highlight=query))
        _notes(ctx, "y", query)
    if ctx.has("residual"):
        ctx.add(Para(ctx.t("residual.explain")),
                ctx.matrix("residual", sym("R + Y", "R + Y"), rows=tokens, highlight=query))
        _notes(ctx, "residual", query)

    # each head alone = fused
    if "heads_check/concat" in tr and not ctx.by_hand:
        from .numbers import fmt_small

        check = tr["heads_check/concat"].meta.get("max_abs", 0.0)
        ctx.add(Heading(ctx.t("h.heads_check")), Para(ctx.t("heads_check.explain", h=n_heads, dk=dk)))
        rows = []
        for h in range(n_heads):
            own = tr.get(f"head {h + 1}/w_q")       # the examples' runner files head h under "head {h+1}/"
            if own is not None:
                rows.append([ctx.t("head", h=head_number(tr.meta, h)), f"W_Q[:, {h * dk}:{(h + 1) * dk}]",
                             " × ".join(str(s) for s in own.shape)])
        ctx.add(Table([ctx.t("col.head"), ctx.t("col.columns"), ctx.t("col.shape")], rows))
        text = _difference(ctx, "heads_check.concat", check)
        if "heads_check/y" in tr:
            text += " " + _difference(ctx, "heads_check.y", tr["heads_check/y"].meta.get("max_abs", 0.0))
        ctx.add(Para(text))

    if n_heads > 1 or kind == "projection":
        _shapes(ctx)


def _projection_rows(ctx: Context, tokens: list, keys: list, query: int, cross: bool, groups_k: int,
                     groups_v: int) -> None:
    """q, k, v of one token as its input row times W: each number a sum of products when the example is
    small (the post's own figure 1), else the whole row."""
    x = ctx.value("x")
    source = ctx.value("memory") if cross else x
    kv_at = 0 if cross else query                              # cross: the first encoder token, as the post
    qtok, ktok = tokens[query], keys[kv_at]
    biased = any("+ b" in ctx.step(name).formula for name in ("q", "k", "v"))
    small = x.shape[1] <= 4 and max(ctx.value(n).shape[1] for n in ("q", "k", "v")) <= 4 and not biased
    ctx.add(Para(ctx.t("projection.example.cross" if cross else "projection.example", token=qtok, ktoken=ktok)))
    lines = []
    for name, weight, row, token, inputs, groups in (
            ("q", "W_Q", x[query], qtok, "x", groups_k),
            ("k", "W_K", source[kv_at], ktok, "memory" if cross else "x", groups_k),
            ("v", "W_V", source[kv_at], ktok, "memory" if cross else "x", groups_v)):
        w_name = "w_" + name
        result = ctx.value(name)[query if name == "q" else kv_at]
        label = sym(weight, weight)
        w = ctx.value(w_name)
        # W is printed above at its own decimals: the line is "=" only if x·W as printed gives the result
        d_w = ctx.d(w_name)
        shown_w = [[shown_decimal(w[i, c], d_w) for c in range(w.shape[1])] for i in range(w.shape[0])]
        ops, holds = fit([ctx.num(inputs, value) for value in row], [ctx.num(name, r) for r in result],
                         lambda v: [sum((v[i] * shown_w[i][c] for i in range(len(v))), Decimal(0))
                                    for c in range(w.shape[1])])
        row_digits = max((o.digits for o in ops), default=ctx.d(inputs))
        lines.append([sub(name, token), EQ, sub("x", token), DOT, label, EQ,
                      Vec(tuple(float(v) for v in row), row_digits), DOT, label, EQ if holds else APPROX,
                      ctx.vec(name, result, groups)])
        if small:
            lines += sums_of_products(ctx, [
                ([ctx.num(inputs, value) for value in row], [ctx.num(w_name, w[i, c]) for i in range(w.shape[0])],
                 ctx.num(name, result[c]), [sym(f"   {name}_{token}[{c}]", rf"\quad {name}_{{\text{{{_latex_text(token)}}}}}[{c}]")])
                for c in range(w.shape[1])])
        if name == "q" and not small:
            break                                               # large: q's row is enough; the matrices follow
    ctx.add(Calc(lines))


def _attention_head(ctx: Context, h: int, n_heads: int, tokens: list, keys: list, query: int, cross: bool) -> None:
    qtok = tokens[query]
    rotated = ctx.has(Q_ROTATED) and ctx.has(K_ROTATED)          # RoPE: the scores read the rotated q and k
    q_name, k_name = (Q_ROTATED, K_ROTATED) if rotated else ("q_heads", "k_heads")
    q_heads, k_heads, v_heads = ctx.value(q_name), ctx.value(k_name), ctx.value("v_heads")
    g = h // (n_heads // k_heads.shape[-3])                     # its key/value head
    q_vec, k_mat, v_mat = q_heads[h, query], k_heads[g], v_heads[g]
    dk = q_vec.shape[-1]
    scores = ctx.value("scores")[h]
    colour = h if n_heads > 1 else None
    shown_h = head_number(ctx.trace.meta, h)
    ctx.add(Heading(ctx.t("h.head", h=shown_h) if n_heads > 1 else ctx.t("h.scores")))
    if n_heads > 1:
        ctx.add(Para(ctx.t("head.explain", h=shown_h, dk=dk, first=h * dk, last=(h + 1) * dk - 1)))
    if rotated:
        before = ctx.value("q_heads")[h, query]
        ctx.add(Para(ctx.t("rope.query", token=qtok, pos=query)),
                Calc([[sub("q", qtok), EQ, ctx.vec("q_heads", before)],
                      [sym("RoPE(q)", r"\operatorname{RoPE}(q)"), EQ, ctx.vec(q_name, q_vec)]]),
                Para(ctx.t("rope.keys")),
                ctx.matrix(k_name, sym("RoPE(K)", r"\operatorname{RoPE}(K)"), k_mat, rows=keys))
        ctx.add(Para(ctx.t("scores.explain.rope", token=qtok)))
    else:
        ctx.add(Para(ctx.t("scores.explain.cross" if cross else "scores.explain", token=qtok)))
    if dk <= 4 and len(keys) <= 12:
        ctx.add(Calc(sums_of_products(ctx, [([ctx.num(q_name, q_vec[i], colour) for i in range(dk)],
                                              [ctx.num(k_name, k_mat[j, i], colour) for i in range(dk)],
                                              ctx.num("scores", scores[query, j]), [sub("q", qtok), DOT, sub("k", key)])
                                             for j, key in enumerate(keys)])))
    named = ctx.t("sym.scores")                                 # a word in Korean: LaTeX sets it as text
    ctx.add(Calc([[sym(named, named if named.isascii() else rf"\text{{{named}}}"), EQ, ctx.vec("scores", scores[query])]]))
    if scores.shape[0] > 1:
        ctx.add(Para(ctx.t("scores.matrix", t=scores.shape[0], tk=scores.shape[1])),
                ctx.matrix("scores", sym("QKᵀ", "QK^\\top"), scores, rows=tokens, cols=keys, highlight=query))
    scaled = ctx.value("scaled_scores")[h]
    formula = ctx.step("scaled_scores").formula
    unscaled = "1/√d_k" not in formula and np.array_equal(scaled, scores)    # a scale of 1 (√d_k off)
    ctx.add(Para(ctx.t("scale.explain", dk=dk) if "1/√d_k" in formula else
                 ctx.t("scale.none") if unscaled else _scale_given(ctx, formula, dk)))
    if "1/√d_k" in formula:
        ctx.add(Calc([_divided_by_root(ctx, scores[query], scaled[query], dk)]))
    elif not unscaled:
        ctx.add(Calc([[_worded(ctx.t("sym.scores_scale")), EQ, ctx.vec("scaled_scores", scaled[query])]]))
    _notes(ctx, "scaled_scores", query)
    if ctx.has("biased_scores"):
        ctx.add(Para(ctx.t("bias.explain")),
                Calc([[_worded(ctx.t("sym.bias")), EQ, ctx.vec("biased_scores", ctx.value("biased_scores")[h][query])]]))
    final = "scaled_scores"                                     # what the softmax read
    if ctx.has(MODIFIED_SCORES):
        modified = ctx.value(MODIFIED_SCORES)
        modified = modified[h] if modified.ndim == 3 else modified
        ctx.add(Para(ctx.t("modified.explain", formula=ctx.step(MODIFIED_SCORES).formula)),
                Calc([[sym("score_mod", r"\operatorname{score\_mod}"), EQ, ctx.vec(MODIFIED_SCORES, modified[query])]]))
        final, scaled = MODIFIED_SCORES, modified
    elif ctx.has("biased_scores"):
        final, scaled = "biased_scores", ctx.value("biased_scores")[h]
    if ctx.has("mask"):
        mask = ctx.value("mask")
        mask = mask[h] if mask.ndim == 3 else mask
        blocked = [keys[j] for j in range(len(keys)) if np.isinf(mask[query, j])]
        ctx.add(Para(ctx.t("mask.explain", token=qtok, blocked=", ".join(blocked) if blocked else ctx.t("none"))),
                ctx.matrix("mask", sym(ctx.t("sym.mask")), mask, rows=tokens, cols=keys, highlight=query))
    weights = ctx.value("weights")[h]
    row = weights[query]
    blocked = None
    if ctx.has("mask"):
        mask_h = ctx.value("mask")
        blocked = np.broadcast_to(np.isneginf(mask_h[h] if mask_h.ndim == 3 else mask_h), weights.shape)
    masked = (lambda i, j: blocked is not None and bool(blocked[i, j]))      # noqa: E731
    strongest = tuple(int(j) for j in np.argsort(-row, kind="stable")[:EDGE])   # kept when keys are elided
    ctx.add(Para(ctx.t("softmax.explain.mask" if blocked is not None else "softmax.explain")))
    if ctx.has("exp_scores") and ctx.has("exp_sum") and ctx.has("softmax_max") and len(keys) <= 12:
        _softmax_steps(ctx, h, query, keys, final, scaled[query], masked)
    contributions = _head_row(ctx, CONTRIBUTIONS, h, query)
    shares = _head_row(ctx, SHARES, h, query)
    header = [ctx.t("col.key"), ctx.t("col.score" if final == "scaled_scores" and not unscaled else "col.score.final"),
              ctx.t("col.weight")] + ([ctx.t("col.contribution"), ctx.t("col.share")] if contributions is not None else [])
    extra = (lambda j: [ctx.num(CONTRIBUTIONS, contributions[j]), ctx.num(SHARES, shares[j])]) \
        if contributions is not None else (lambda j: [])
    ctx.add(Table(header,
                  [[key, _fmt_plain(ctx.num(final, scaled[query, j])) + " → −∞", ctx.t("masked")]
                   + (["0", "0"] if contributions is not None else [])
                   if masked(query, j) else
                   [key, ctx.num(final, scaled[query, j]), ctx.num("weights", row[j])] + extra(j)
                   for j, key in enumerate(keys)], limit=VECTOR_LIMIT, keep=strongest))
    _notes(ctx, "weights", query)
    if contributions is not None:
        ctx.add(*_weight_vs_contribution(ctx, qtok, keys, row, contributions, shares))
    out = ctx.value("out")[h]
    ctx.add(Para(ctx.t("out.explain.cross" if cross else "out.explain", token=qtok)))
    if len(keys) <= 12 and v_mat.shape[1] <= 6:
        ctx.add(Calc(_weighted_sum(ctx, row, v_mat, out[query], keys, [masked(query, j) for j in range(len(keys))])))
    ctx.add(Calc([[sub("z", qtok), EQ, ctx.vec("out", out[query])]]))
    _notes(ctx, "out", query)
    if weights.shape[0] > 1:
        ctx.add(Para(ctx.t("weights.matrix.mask" if blocked is not None else "weights.matrix")),
                ctx.matrix("weights", sym("softmax", r"\operatorname{softmax}"), weights, rows=tokens, cols=keys,
                           highlight=query, masked=blocked),
                ctx.matrix("out", sym(f"Z_{shown_h}", f"Z_{{{shown_h}}}") if n_heads > 1 else sym("Z"), out,
                           rows=tokens, highlight=query))          # Z_h: the head's output, numbered as shown


def _head_row(ctx: Context, name: str, h: int, query: int) -> np.ndarray | None:
    """Head ``h``'s row ``query`` of a recorded (H, Tq, Tk) step, or None where the trace lacks it."""
    if not ctx.has(name):
        return None
    values = ctx.value(name)
    return values[min(h, values.shape[0] - 1)][query] if values.ndim == 3 else values[query]


def _weight_vs_contribution(ctx: Context, qtok: str, keys: list, weights: np.ndarray, contributions: np.ndarray,
                            shares: np.ndarray) -> list:
    """What the row says, generated from its numbers (`qkv.trace.read_row`): the key with the largest
    weight, the key that contributes most (largest ‖w·v‖), and an attention sink where there is one."""
    reading = read_row(weights, contributions)
    if reading is None:
        return []
    top, most = reading.heaviest_keys, reading.strongest_keys

    def said(js) -> dict:
        return {"w": texts.values_of(js, lambda j: _fmt_plain(ctx.num("weights", weights[j]))),
                "c": texts.values_of(js, lambda j: _fmt_plain(ctx.num(CONTRIBUTIONS, contributions[j]))),
                "share": texts.values_of(js, lambda j: _fmt_plain(ctx.num(SHARES, shares[j])))}

    def named(js) -> str:
        return texts.key_names(ctx.lang, js, keys)

    blocks: list = [Para(ctx.t("weights.contribution"))]
    if reading.same:
        blocks.append(Para(ctx.t("weights.top.same", token=qtok, top=named(top), **said(top))))
    else:
        shown = said(most)
        blocks.append(Para(ctx.t("weights.top.differ", token=qtok, top=named(top), most=named(most),
                                 **said(top), w_most=shown["w"], c_most=shown["c"], share_most=shown["share"])))
    if reading.sink is not None:
        blocks.append(Para(ctx.t("weights.sink", token=qtok, sink=keys[reading.sink], **said((reading.sink,)),
                                 weight_rule=_fmt_plain(Num(SINK_WEIGHT, 1)), ratio=_fmt_plain(Num(SINK_RATIO, 1)))))
    return blocks


def _divided_by_root(ctx: Context, scores: np.ndarray, scaled: np.ndarray, dk: int) -> list:
    """``[s₀, s₁, …] / √d_k = [s₀/√d_k, …]``, the scores shown with the decimals that make it true."""
    root = Decimal(dk).sqrt()
    ops, holds = fit([ctx.num("scores", v) for v in scores], [ctx.num("scaled_scores", v) for v in scaled],
                     lambda v: [x / root for x in v])
    digits = max((o.digits for o in ops), default=ctx.d("scores"))
    return [Vec(tuple(float(v) for v in scores), digits), DIVIDE, sym(f"√{dk}", f"\\sqrt{{{dk}}}"),
            EQ if holds else APPROX, ctx.vec("scaled_scores", scaled)]


def softmax_digits(exps, total: float, weights, open_keys: list, base: int, d_w: int) -> tuple[int, bool] | None:
    """The decimals d for the e^(s − m) values and their sum Σ in a softmax written out by hand: the fewest
    from ``base`` (the step's own, up to MORE_DIGITS more) that make Σ and every e^(s − m) / Σ (shown at
    d_w) true as printed; and whether Σ holds at d. None when a value cannot be shown. One rule for
    every renderer: the text formats and the figures (qkv.viz) write these lines with the same d."""
    for extra in range(MORE_DIGITS + 1):
        d = base + extra
        shown = {j: shown_decimal(exps[j], d) for j in open_keys}
        shown_total = shown_decimal(total, d)
        if shown_total is None or not shown_total or any(v is None for v in shown.values()):
            return None
        if _matches(sum(shown.values(), Decimal(0)), d, fmt(total, d)) and all(
                _matches(shown[j] / shown_total, d_w, fmt(weights[j], d_w)) for j in open_keys):
            break
    holds = extra < MORE_DIGITS or _matches(sum(shown.values(), Decimal(0)), d, fmt(total, d))
    return d, holds


# A sum written out term by term (a figure's q·k of 32 products) is shortened beyond MATRIX_LIMIT terms: its
# first SUM_EDGE terms, "…", its last term, then the total of every term (the line stays true: the total
# is checked with all the terms, `fit`).
SUM_EDGE = 2


def shown_terms(n: int) -> list:
    """The indices of the terms of an n-term sum to write, None where "…" stands (see SUM_EDGE)."""
    if n <= MATRIX_LIMIT:
        return list(range(n))
    return [*range(SUM_EDGE), None, n - 1]


def _softmax_steps(ctx: Context, h: int, query: int, keys: list, final: str, scores: np.ndarray, masked,
                   prefix: str = "") -> None:
    """softmax as a person computes it: m, e^(s − m) for each key, their sum, each e^(s − m) / Σ.

    Every number is a recorded step (softmax_max, exp_scores, exp_sum, weights). The e^ values and
    their sum are shown with the fewest decimals (from the step's own) that make the sum and every
    division true as printed; each e^ line then shows s and m with the decimals that make it true.
    """
    def row(name: str) -> np.ndarray:
        values = ctx.value(prefix + name)
        values = values[min(h, values.shape[0] - 1)] if values.ndim == 3 else values
        return values[query]

    m, exps, total, weights = float(row("softmax_max")[0]), row("exp_scores"), float(row("exp_sum")[0]), row("weights")
    open_keys = [j for j in range(len(keys)) if not masked(query, j)]
    d_w = ctx.d(prefix + "weights")
    chosen = softmax_digits(exps, total, weights, open_keys, ctx.d(prefix + "exp_scores"), d_w)
    if chosen is None:
        return
    d, holds = chosen
    shown = {j: shown_decimal(exps[j], d) for j in open_keys}
    shown_total = shown_decimal(total, d)
    lines = []
    # one precision for s and m in every line of the block (the most any line needs to be true as printed;
    # a number exact at fewer decimals, 1.5 or 0, keeps them): no 0.818830 beside 1.20038
    fitted = {j: fit([ctx.num(final, scores[j]), ctx.num(final, m)], [Num(float(exps[j]), d)],
                     lambda v: [(v[0] - v[1]).exp()]) for j in open_keys}
    d_s = max((o.digits for ops, _ in fitted.values() for o in ops if not _exact_at(o)), default=ctx.d(final))
    m_num = ctx.num(final, m)
    ctx.add(Para(ctx.t("softmax.steps", m=fmt(m, m_num.digits if _exact_at(m_num) else d_s))))   # m as the lines write it
    for j, key in enumerate(keys):
        if masked(query, j):
            lines.append([sym(f"e^(−∞)", r"e^{-\infty}"), EQ, Num(0.0, 0), f"  ({key}: {ctx.t('masked')})"])
            continue
        ops = [o if _exact_at(o) else replace(o, digits=d_s) for o in fitted[j][0]]
        shown_ops = [shown_decimal(o.value, o.digits) for o in ops]
        ok = None not in shown_ops and _matches((shown_ops[0] - shown_ops[1]).exp(), d, fmt(float(exps[j]), d))
        a, b = (fmt(o.value, o.digits) for o in ops)
        if b.startswith("-"):          # a negative m in parentheses, as a negative factor: s − (-0.85), not s − -0.85
            b = f"({b})"
        lines.append([sym(f"e^({a} − {b})", f"e^{{{a} - {b}}}"), EQ if ok else APPROX, Num(float(exps[j]), d),
                      f"  ({key})"])
    terms: list = []
    for j in open_keys:
        if terms:
            terms.append(PLUS)
        terms.append(Num(float(exps[j]), d))
    lines.append([sym("Σ"), EQ, *terms, EQ if holds else APPROX, Num(total, d)])
    for j in open_keys:
        ok = _matches(shown[j] / shown_total, d_w, fmt(weights[j], d_w))
        lines.append([sub("w", keys[j]), EQ, Num(float(exps[j]), d), DIVIDE, Num(total, d), EQ if ok else APPROX,
                      ctx.num(prefix + "weights", weights[j])])
    ctx.add(Calc(lines))


def _weighted_sum(ctx: Context, weights: np.ndarray, values: np.ndarray, out: np.ndarray, keys: list,
                  masked: list) -> list:
    """The lines ``  w₀ · v₀ + w₁ · v₁ + … = z``, with the decimals that make each component true."""
    open_keys = [j for j in range(len(keys)) if not masked[j]]
    n, width = len(open_keys), values.shape[1]
    operands = ([ctx.num("weights", weights[j]) for j in open_keys] +
                [ctx.num("v", values[j, c]) for j in open_keys for c in range(width)])

    def compute(v):
        return [sum((v[a] * v[n + a * width + c] for a in range(n)), Decimal(0)) for c in range(width)]

    ops, holds = fit(operands, [ctx.num("out", z) for z in out], compute)
    lines = []
    for j, key in enumerate(keys):
        lead = [PLUS] if j else [sym(" ", r"\phantom{+}")]
        if masked[j]:
            lines.append(lead + [ctx.t("masked"), DOT, ctx.vec("v", values[j]), f"  ({key})"])
            continue
        a = open_keys.index(j)
        row_ops = ops[n + a * width: n + (a + 1) * width]
        digits = max(o.digits for o in row_ops) if row_ops else ctx.d("v")
        lines.append(lead + [ops[a], DOT, Vec(tuple(float(v) for v in values[j]), digits), f"  ({key})"])
    lines.append([EQ if holds else APPROX, ctx.vec("out", out)])
    return lines


def _shapes(ctx: Context) -> None:
    ctx.add(Heading(ctx.t("h.shapes")), Para(ctx.t("shapes.explain")))
    rows = []
    for s in ctx.trace.steps:
        if "/" in s.name:
            continue
        # a formula recorded with words in it (the mask's) is said in the reader's language: the text
        # ``formula.<step>`` when the recorded one is its English
        key = f"formula.{s.name}"
        formula = ctx.t(key) if texts.has("en", key) and s.formula == texts.text("en", key) else s.formula
        formula = formula.replace("Concat(heads)", ctx.t("sym.concat_heads"))     # Y's, with or without + b_O
        rows.append([texts.step_name(ctx.lang, s.name), formula, " × ".join(str(d) for d in s.shape)])
    ctx.add(Table([ctx.t("col.step"), ctx.t("col.formula"), ctx.t("col.shape")], rows))


# --------------------------------------------------------------------------- multi-head (seed 001)
def _multi_head(ctx: Context) -> None:
    meta, info = ctx.trace.meta, ctx.info
    _title(ctx)
    ctx.add(Para(ctx.t("intro.multi-head")))
    tokens, _, query = _tokens(ctx)
    token = tokens[query] if query < len(tokens) else ""
    heads = ctx.value("out")                                  # (H, 1, Dv)
    n_heads, dv = heads.shape[0], heads.shape[-1]
    def z(h: int) -> Sym:
        shown = head_number(meta, h)
        return sym(f"z{_sup(shown)}_{token}", f"z^{{({shown})}}_{{\\text{{{_latex_text(token)}}}}}")

    ctx.add(Heading(ctx.t("h.mh.heads")),
            Para(ctx.t("mh.z1.by_hand" if ctx.by_hand else "mh.z1", z=z(0).plain, token=token, example=_example_name(ctx, info.first_head or "self-attention"))),
            Para(ctx.t("mh.given", n=n_heads - 1)),
            Calc([[z(h), EQ, Vec(tuple(float(v) for v in heads[h, 0]), ctx.d("out"), 0)] for h in range(n_heads)]))
    concat = ctx.value("concat")
    ctx.add(Heading(ctx.t("h.concat")),
            Para(ctx.t("mh.concat", h=n_heads, width=concat.shape[-1])),
            Calc([[sym("z_concat", r"z_{\text{concat}}"), EQ, ctx.vec("concat", concat[0], dv)]]))
    w_o, y = ctx.value("w_o"), ctx.value("y")
    ctx.add(Heading(ctx.t("h.output")),
            Para(ctx.t("wo.explain", rows=w_o.shape[0], cols=w_o.shape[1])),
            ctx.matrix("w_o", sym("W_O", "W_O"), row_groups=dv),
            Para(ctx.t("mh.final.explain")))
    lines = sums_of_products(ctx, [
        ([ctx.num("concat", concat[0, i], i // dv) for i in rows], [ctx.num("w_o", w_o[i, c]) for i in rows],
         ctx.num("y", y[0, c]), [sym(f"z_final[{c}]", f"z_{{\\text{{final}},{c}}}")])
        for c, rows in ((c, [i for i in range(w_o.shape[0]) if w_o[i, c] != 0]) for c in range(w_o.shape[1]))])
    ctx.add(Calc(lines), Calc([[sym("z_final", r"z_{\text{final}}"), EQ, ctx.vec("y", y[0])]]))
    _notes(ctx, "y", 0)
    ctx.add(Para(ctx.t("mh.final", token=token)))


def _factor(num: Num) -> Num:
    return Num(num.value, num.digits, num.group, paren=True)


def _sup(n: int) -> str:
    return "⁽" + "".join("⁰¹²³⁴⁵⁶⁷⁸⁹"[int(c)] for c in str(n)) + "⁾"


# --------------------------------------------------------------------------- group meeting (seed 002)
def _group_meeting(ctx: Context) -> None:
    info = ctx.info
    _title(ctx)
    ctx.add(Para(ctx.t("intro.group-meeting")))
    answers = list(info.answers)
    lot_weights = []
    for scene in info.scenes:
        name, tokens = scene["name"], list(scene["tokens"])
        target = tokens.index(scene["query"]) if scene["query"] in tokens else len(tokens) - 1
        scores = ctx.value(f"{name}/scores")[0]
        weights = ctx.value(f"{name}/weights")[0]
        values = ctx.value(f"{name}/v")
        out = ctx.value(f"{name}/out")[0]
        # the table's weights carry the decimals that make "softmax(scores)·V = out" below true as printed
        n, width = len(tokens), values.shape[1]
        shown_w, holds = fit([ctx.num(f"{name}/weights", w) for w in weights] +
                             [ctx.num(f"{name}/v", values[j, c]) for j in range(n) for c in range(width)],
                             [ctx.num(f"{name}/out", z) for z in out],
                             lambda v: [sum((v[j] * v[n + j * width + c] for j in range(n)), Decimal(0))
                                        for c in range(width)])
        ctx.add(Heading(ctx.t(f"gm.{name}.title", sentence=" ".join(tokens))),
                # the post's setting speaks of its scores: a what-if that changed them says only what is asked
                Para(ctx.t("gm.whatif.explain" if name in ((ctx.info.what_if or {}).get("scores") or {})
                           else f"gm.{name}.explain", query=scene["query"])),
                Table([ctx.t("col.token"), ctx.t("gm.col.score", query=scene["query"]), ctx.t("col.weight"),
                       ctx.t("gm.col.answer", answers=", ".join(f"“{a}”" for a in answers))],
                      [[tok, ctx.num(f"{name}/scores", scores[j]), shown_w[j],
                        ctx.vec(f"{name}/v", values[j])] for j, tok in enumerate(tokens)]))
        scaled = ctx.value(f"{name}/scaled_scores")[0]
        if not np.array_equal(scaled, scores):          # a what-if's factor: the softmax reads scaled scores
            factor = (ctx.info.what_if or {}).get("factor", "?")
            ctx.add(Para(ctx.t("gm.scaled", factor=factor)),
                    Calc([[sym("s"), EQ, ctx.vec(f"{name}/scaled_scores", scaled)]]))
        if ctx.has(f"{name}/exp_scores") and len(tokens) <= 12:
            _softmax_steps(ctx, 0, 0, tokens, f"{name}/scaled_scores", scaled, lambda i, j: False, prefix=f"{name}/")
        _notes(ctx, f"{name}/weights", 0, keys=tokens)
        named = ctx.t("sym.scores")
        ctx.add(Para(ctx.t("gm.blend")),
                Calc([[sym(f"softmax({named})·V", rf"\operatorname{{softmax}}(\text{{{named}}})\,V"), EQ if holds else APPROX,
                       ctx.vec(f"{name}/out", out)]]))
        if out.size and answers:
            ctx.add(*_meeting_conclusion(ctx, name, tokens, target, weights, values, out, answers, shown_w[:n]))
        lot_weights.append((name, target, shown_w[target]))
    if len(lot_weights) == 2:
        (first, i, w_first), (second, j, w_second) = lot_weights
        ctx.add(Para(ctx.t("gm.weaker", token=info.scenes[0]["query"], **_meeting_reading(ctx, first, i, "1", w_first),
                           **_meeting_reading(ctx, second, j, "2", w_second))))
    if "rows/weights" in ctx.trace:
        tokens = list(info.tokens)
        w_rows, w_cols = ctx.value("rows/weights"), ctx.value("columns/weights")
        ctx.add(Heading(ctx.t("gm.notation.title")),
                Para(ctx.t("gm.notation.intro", example=_example_name(ctx, info.notation or "self-attention"))),
                Para(ctx.t("gm.notation.rows")),
                ctx.matrix("rows/weights", sym("softmax(QKᵀ/√d_k)", r"\operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)"),
                           w_rows, rows=_labels(w_rows.shape[0], tokens), cols=_labels(w_rows.shape[1], tokens)),
                ctx.matrix("rows/out", sym("softmax(QKᵀ/√d_k)·V", r"\operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V"),
                           rows=_labels(w_rows.shape[0], tokens)),
                Para(ctx.t("gm.notation.columns")),
                ctx.matrix("columns/weights", sym("softmax(KᵀQ/√d_k)", r"\operatorname{softmax}\!\left(\frac{K^\top Q}{\sqrt{d_k}}\right)"),
                           w_cols, rows=_labels(w_cols.shape[0], tokens), cols=_labels(w_cols.shape[1], tokens)),
                ctx.matrix("columns/out", sym("V·softmax(KᵀQ/√d_k)", r"V\operatorname{softmax}\!\left(\frac{K^\top Q}{\sqrt{d_k}}\right)"),
                           cols=_labels(w_cols.shape[1], tokens)))
        if ctx.has("columns/difference"):      # the difference of the matrices shown (by hand: of the rounded ones)
            from .numbers import fmt_small

            diff = ctx.step("columns/difference").meta.get("max_abs", 0.0)
            ctx.add(Para(_difference(ctx, "gm.notation.same", diff)))


def _meeting_conclusion(ctx: Context, name: str, tokens: list, target: int, weights: np.ndarray, values: np.ndarray,
                        out: np.ndarray, answers: list, shown: list) -> list:
    """The meeting's conclusion, generated from its numbers: each answer's share of the vote (out), the
    winner, and what the followed token's weight says (most of the weight and its answer wins: the
    group follows it; the largest weight but not most; or a weaker voice than another token's).
    ``shown``: the weights as the meeting's table prints them (Num, with the decimals `fit` gave them), so a
    weight named here reads as in the table just above (0.249984 there is not 0.2500 here)."""
    votes = ", ".join(f"“{a}” {_fmt_plain(ctx.num(f'{name}/out', v))}" for a, v in zip(answers, out))
    winner = int(np.argmax(out))
    blocks = [Para(ctx.t("gm.conclusion", votes=votes, answer=answers[winner])
                   if out[winner] > 0 else ctx.t("gm.conclusion.none", votes=votes))]
    token, w = tokens[target], weights[target]
    top = int(np.argmax(weights))
    said = {"token": token, "w": _fmt_plain(shown[target])}
    own = values[target]
    if w >= 0.5 and own.size and np.any(own > 0) and int(np.argmax(own)) == winner:
        blocks.append(Para(ctx.t("gm.follows", answer=answers[winner], **said)))
    elif top == target or weights[top] == w:
        blocks.append(Para(ctx.t("gm.largest", rest=_fmt_plain(replace(shown[target], value=1.0 - w)), **said)))
    else:
        blocks.append(Para(ctx.t("gm.weak", top=texts.key_names(ctx.lang, tied(weights), tokens),
                                 top_w=_fmt_plain(shown[top]),
                                 **said)))
    return blocks


def _meeting_reading(ctx: Context, name: str, target: int, suffix: str, shown_w) -> dict:
    """The followed token's score into the softmax, m − s (how far below the row's largest) and weight,
    in meeting ``name``: the values of gm.weaker's placeholders s1, d1, w1 (suffix "1") or s2, d2, w2."""
    scaled = ctx.value(f"{name}/scaled_scores")[0]
    m = float(ctx.value(f"{name}/softmax_max").reshape(-1)[0]) if ctx.has(f"{name}/softmax_max") else float(np.max(scaled))
    s = float(scaled[target])
    return {f"s{suffix}": _fmt_plain(ctx.num(f"{name}/scaled_scores", s)),
            f"d{suffix}": _fmt_plain(ctx.num(f"{name}/scaled_scores", m - s)),
            f"w{suffix}": _fmt_plain(shown_w)}           # as the meeting's table printed it


# --------------------------------------------------------------------------- anything else
def _generic(ctx: Context) -> None:
    """A trace of no known kind (a model, a custom recording): every step with its formula and values."""
    _title(ctx)
    ctx.add(Para(ctx.t("generic.intro", n=len(ctx.trace))))
    for s in ctx.trace.steps:
        if s.name.startswith((BY_HAND + "/", DRIFT + "/")):
            continue
        shape = ' × '.join(str(d) for d in s.shape) or ctx.t("step.scalar")
        ctx.add(Heading(f"{texts.step_name(ctx.lang, s.name)}  ({shape})", 3))
        if s.name.rsplit("/", 1)[-1] == MODIFIED_SCORES:     # ALiBi, soft-capping, …: say what score_mod does
            ctx.add(Para(ctx.t("modified.explain", formula=s.formula or "score_mod")))
        elif s.formula:
            ctx.add(Para(s.formula))
        if s.value.dtype.kind not in "fiub":
            continue
        values = np.asarray(s.value, dtype=float)
        if values.ndim == 0:
            ctx.add(Calc([[sym(s.name), EQ, Num(float(values), ctx.d(s.name))]]))
            continue
        matrix = values.reshape(-1, values.shape[-1]) if values.ndim > 2 else np.atleast_2d(values)
        if matrix.shape[0] > 16 or matrix.shape[1] > 16:
            ctx.add(Para(ctx.t("generic.large", rows=min(matrix.shape[0], 16), cols=min(matrix.shape[1], 16))))
            matrix = matrix[:16, :16]
        ctx.add(Matrix(sym(s.name), matrix, ctx.d(s.name), s.name, limit=None))   # already cut to 16 × 16


# --------------------------------------------------------------------------- by hand vs exact
def _unscaled(trace: Trace, name: str) -> bool:
    """True where the recorded step ``name`` (…scaled_scores) scaled nothing: a scale of 1 given (the group
    meeting's scores, as its post gives them), so its row would repeat the scores under a "scaled" name."""
    scores = name[: -len("scaled_scores")] + "scores"
    return (scores in trace and "1/√d_k" not in (trace[name].formula or "")
            and np.array_equal(trace[name].value, trace[scores].value))


def _drift(ctx: Context) -> None:
    from .numbers import fmt_small

    tr = ctx.trace
    _, _, query = _tokens(ctx)
    ctx.add(Heading(ctx.t("h.drift")), Para(ctx.t("drift.explain")))
    rows = []
    important = ("scores", "scaled_scores", "weights", "out", "concat", "y", "residual")
    for s in tr.steps:
        if not s.name.startswith(DRIFT + "/"):
            continue
        name = s.name[len(DRIFT) + 1:]
        if name.rsplit("/", 1)[-1] not in important:
            continue
        if name.endswith("scaled_scores") and _unscaled(tr, name):   # the group meeting: nothing was scaled
            continue
        exact, by_hand = tr[name].value, tr[f"{BY_HAND}/{name}"].value

        def row_of(values):
            if values.ndim == 3:
                values = values[0]
            if values.ndim == 2:
                values = values[query if query < values.shape[0] else 0]
            return values

        d = ctx.d(name)
        rows.append([texts.step_name(ctx.lang, name), Vec(tuple(float(v) for v in row_of(by_hand)), d),
                     Vec(tuple(float(v) for v in row_of(exact)), max(d, 4) + 2),
                     fmt_small(s.meta.get("max_abs", 0.0))])
    ctx.add(Table([ctx.t("col.step"), ctx.t("col.by_hand"), ctx.t("col.exact"), ctx.t("col.drift")], rows))
