"""Practice with checked answers: one number of a worked example is hidden, the learner computes it.

    >>> from qkv import practice
    >>> drill = practice.drill("self-attention", seed=3)
    >>> [q.kind for q in drill.questions]
    ['score', 'scaled', 'exp', 'sum', 'weight', 'out']
    >>> practice.check(drill.questions[0], str(drill.questions[0].answer)).status
    'right'

Every number comes from the example's Trace (`qkv.examples.run`, recorded by the core): the answer is
the recorded value, and the by-hand run (`run(..., by_hand=True)`: each step computed from the rounded
numbers a reader sees) gives the value a person with a calculator reaches. An answer is right when it is
within one unit of the last printed decimal of either. A wrong answer is compared with the usual slips —
the wrong row or column, ÷√d_k forgotten, a term missing from a sum, e^s without subtracting m, one head's
share instead of the whole sum — each computed from the recorded numbers, and the first step where the
learner's number parts from the true one is named.

A drill follows a post's steps in order (score → scaled score → e^(s − m) → Σ → weight → output; then
Concat and Y for the multi-head examples; the group meeting's two scenes). ``seed`` makes the choice of
keys, heads and components (and ``fresh`` inputs) repeatable; ``fresh`` draws new inputs of the same
shapes (one decimal, as the self-attention post's X and W's; whole-number scores for the group meeting), computed by the same example code (`qkv.examples.Changes`).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .errors import InputError
from .explain.numbers import digits_for, fmt
from .explain.texts import text
from .trace import Trace, head_number, in_language

SEED_MAX = 10**9
"""The largest seed of a drill: `qkv practice --seed`, qkv serve's GET /api/practice and POST /api/practice/check
take the same range, so the command a drill's header prints replays every drill serve can show."""

__all__ = ["Slip", "Question", "Drill", "Verdict", "drill", "check", "reveal", "play", "parse_answer", "NAMES", "shown",
           "offline", "PAGE_DRILLS"]

NAMES = ("self-attention", "cross-attention", "multi-head", "projection", "group-meeting")
"""The worked examples a drill can follow (`qkv.examples.names()`)."""

ATTEMPTS = 3
"""Wrong answers a question takes before its answer is shown."""


@dataclass(frozen=True)
class Slip:
    """A known mistake: the number it gives and what it is, as text keys with their values in step order
    (the first part is the first step where the learner's number parts from the true one)."""

    value: float
    parts: tuple[tuple[str, dict], ...]


@dataclass(frozen=True)
class Question:
    """One hidden number. ``step``/``index``: where it sits in the trace; ``answer``: the recorded value;
    ``by_hand``: the value from the printed (rounded) numbers; ``digits``: decimals the step prints.
    ``given``/``ask``/``how``/``hint``: text keys with values (the numbers shown, the question, the worked
    line, the intermediate values a learner compares with); ``slips``: the usual mistakes, in step order."""

    kind: str
    step: str
    index: tuple[int, ...]
    answer: float
    by_hand: float
    digits: int
    given: tuple[tuple[str, dict], ...]
    ask: tuple[str, dict]
    how: tuple[str, dict]
    hint: tuple[tuple[str, dict], ...]
    slips: tuple[Slip, ...] = ()

    @property
    def tolerance(self) -> float:
        """One unit of the last printed decimal."""
        return 10.0 ** -self.digits


@dataclass(frozen=True)
class Drill:
    """The questions of one example, in the post's order, with what produced them."""

    example: str
    lang: str
    seed: int
    fresh: bool
    trace: Trace = field(repr=False)
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Verdict:
    """``status``: "right", "wrong" or "bad" (not a usable number: asked again, no attempt used).
    ``lines``: what to say, in the drill's language."""

    status: str
    lines: tuple[str, ...]
    slip: Slip | None = None


# ------------------------------------------------------------------ building a drill
def drill(example: str = "self-attention", *, lang: str = "en", seed: int | None = None,
          fresh: bool = False) -> Drill:
    """The questions of ``example`` (one of `NAMES`), worded in ``lang``.

    seed: picks the keys, heads and components asked about (and fresh inputs); None draws one (the
      Drill carries it, so the same drill can be asked for again). fresh: new inputs of the same shapes.
    """
    from . import examples
    from .frontdoor import check_choice, check_lang

    check_lang(lang)
    check_choice(example, NAMES, field="EXAMPLE", lang=lang)
    if seed is None:
        seed = random.SystemRandom().randrange(1_000_000)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
        raise InputError.keyed("practice.error.seed", field="--seed", value=repr(seed), high=SEED_MAX)
    pick = random.Random(seed)
    changes = _fresh_changes(example, np.random.default_rng(seed)) if fresh else None
    trace = examples.run(example, changes=changes)
    by_hand = examples.run(example, changes=changes, by_hand=True)
    shown = in_language(trace, lang)
    build = _MEETING if example == "group-meeting" else _MULTI_HEAD if example == "multi-head" else _ATTENTION
    questions = tuple(build(shown, by_hand, pick, lang))
    return Drill(example, lang, seed, fresh, trace, questions)


def _fresh_changes(example: str, rng: np.random.Generator):
    """New inputs of the example's shapes: every editable input (one decimal in −1 … 2, as the self-attention
    post's X and W's),
    or the group meeting's scores (whole numbers 0 … 6)."""
    from . import examples

    doc = examples.load(example)
    if example == "group-meeting":
        return examples.Changes(scores={s["name"]: tuple((j, float(rng.integers(0, 7))) for j in range(len(s["scores"])))
                                        for s in doc["scenes"]})
    source = examples.load(doc["first_head"]) if example == "multi-head" else doc
    cells = {}
    for name in examples.EDITABLE[example]:
        matrix = np.asarray(doc[name] if name in doc else source[name], dtype=float)
        cells[name] = tuple((i, j, float(rng.integers(-10, 21)) / 10) for i in range(matrix.shape[0])
                            for j in range(matrix.shape[1]))
    return examples.Changes(cells=cells)


def _num(value: float, digits: int) -> str:
    return fmt(float(value), digits)


def _vector(values: Sequence[float], digits: int) -> str:
    return "[" + ", ".join(_num(v, digits) for v in values) + "]"


def _sum_of_products(a: Sequence[float], b: Sequence[float], da: int, db: int) -> str:
    """x₀ × y₀ + x₁ × y₁ …, a negative first factor after the first term folded into the sign ("− 0.5000 × …",
    as the explanation writes it; "+ -0.5000" was issue 29's)."""
    text = ""
    for n, (x, y) in enumerate(zip(a, b)):
        shown = _num(x, da)
        if n and shown.startswith("-"):
            text += f" − {shown[1:]} × {_operand(y, db)}"
        else:
            text += (" + " if n else "") + f"{shown} × {_operand(y, db)}"
    return text


def _added(shown: Sequence[str]) -> str:
    """Printed numbers added up, a negative one after the first folded into the sign: "0.0126 − 0.7460"."""
    return "".join((" − " + x[1:] if x.startswith("-") else " + " + x) if n else x for n, x in enumerate(shown))


def _operand(value: float, digits: int) -> str:
    shown = _num(value, digits)
    return f"({shown})" if shown.startswith("-") else shown


def _words(lang: str) -> Callable[..., str]:
    return lambda key, **values: text(lang, key, **values)


class _Chain:
    """The arrays of one attention (one head of a trace, or a meeting's scene) and how to name things."""

    def __init__(self, trace: Trace, by_hand: Trace, prefix: str, head: int, tokens, key_tokens, lang: str,
                 head_label: str = ""):
        self.trace, self.by_hand, self.prefix, self.head, self.lang = trace, by_hand, prefix, head, lang
        self.tokens, self.key_tokens, self.head_label = list(tokens), list(key_tokens), head_label
        self.scores = self.array("scores")
        self.scaled = self.array("scaled_scores")
        self.exps = self.array("exp_scores")
        self.sums = self.array("exp_sum")[..., 0]
        self.maxima = self.array("softmax_max")[..., 0]
        self.weights = self.array("weights")
        self.out = self.array("out")
        self.has_qk = f"{prefix}q_heads" in trace
        if self.has_qk:
            self.q, self.k = self.array("q_heads"), self.array("k_heads")
        self.v = self.array("v_heads") if f"{prefix}v_heads" in trace else trace[f"{prefix}v"].value

    def array(self, name: str, source: Trace | None = None) -> np.ndarray:
        value = np.asarray((source or self.trace)[f"{self.prefix}{name}"].value, dtype=float)
        return value[self.head] if value.ndim == 3 else value

    def hand(self, name: str, index) -> float:
        """The by-hand value of this chain's ``name`` at ``index`` (the recorded one where none was kept)."""
        key = f"by hand/{self.prefix}{name}"
        value = np.asarray((self.by_hand[key] if key in self.by_hand else self.trace[f"{self.prefix}{name}"]).value,
                           dtype=float)
        value = _head_of(value, self.head)
        if name in ("exp_sum", "softmax_max"):
            value = value[..., 0]
        return float(value[index])

    def digits(self, name: str) -> int:
        return digits_for(f"{self.prefix}{name}", self.trace.meta.get("digits"))

    def step(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def index(self, *at: int) -> tuple[int, ...]:
        """The index of an entry of this chain's arrays in the trace's own array."""
        value = self.trace[self.step("scores")].value
        return (self.head, *at) if np.ndim(value) == 3 else at


def _head_of(value: np.ndarray, head: int) -> np.ndarray:
    return value[head] if value.ndim == 3 else value


def _close(a: float, b: float, tolerance: float) -> bool:
    return math.isfinite(b) and abs(a - b) <= tolerance * (1 + 1e-9) + 1e-12


def _slips(answer: float, tolerance: float, candidates) -> tuple[Slip, ...]:
    """The candidates a learner can be told apart by: finite, farther than twice the tolerance from the
    answer, the first of any two that give the same number (they are in step order)."""
    kept: list[Slip] = []
    for value, parts in candidates:
        value = float(value)
        if not math.isfinite(value) or _close(value, answer, 2 * tolerance):
            continue
        if any(_close(value, s.value, 2 * tolerance) for s in kept):
            continue
        kept.append(Slip(value, tuple(parts)))
    return tuple(kept)


def _attention_questions(c: _Chain, i: int, j: int, comp: int, *, ask_qk: bool) -> list[Question]:
    """score → scaled score → e^(s − m) → Σ → weight → output component, for query row i, key j."""
    from .attention import softmax

    qt, kt = c.tokens[i], c.key_tokens[j]
    others = [jj for jj in range(len(c.key_tokens)) if jj != j]
    other_rows = [ii for ii in range(len(c.tokens)) if ii != i]
    head = {"head": c.head_label}
    questions = []
    if ask_qk:
        dq, dk, ds = c.digits("q"), c.digits("k"), c.digits("scores")
        q_row, k_row = c.q[i], c.k[j]
        answer = c.scores[i, j]
        terms = [q_row[t] * k_row[t] for t in range(len(q_row))]
        cands = [(c.scores[i, jj], [("practice.slip.column", {"used": f"k_{c.key_tokens[jj]}", "wanted": f"k_{kt}"})])
                 for jj in others]
        cands += [(c.scores[ii, j], [("practice.slip.row", {"used": f"q_{c.tokens[ii]}", "wanted": f"q_{qt}"})])
                  for ii in other_rows]
        if c.scores.shape[0] == c.scores.shape[1] and i != j:
            cands.append((c.scores[j, i], [("practice.slip.swapped", {"q": qt, "k": kt})]))
        cands += [(answer - terms[t], [("practice.slip.term", {"term": f"q[{t}] × k[{t}]",
                                                                 "value": _num(terms[t], ds)})])
                  for t in range(len(terms))]
        questions.append(Question(
            "score", c.step("scores"), c.index(i, j), float(answer), c.hand("scores", (i, j)), ds,
            given=(("practice.given.q", dict(head, token=qt, vector=_vector(q_row, dq))),
                   ("practice.given.k", dict(head, token=kt, vector=_vector(k_row, dk)))),
            ask=("practice.ask.score", {"q": qt, "k": kt, "digits": ds}),
            how=("practice.how.score", {"q": qt, "k": kt, "sum": _sum_of_products(q_row, k_row, dq, dk),
                                        "answer": _num(answer, ds)}),
            hint=(("practice.hint.terms", {"terms": ", ".join(_num(t, ds) for t in terms)}),),
            slips=_slips(answer, 10.0 ** -ds, cands)))
        dss = c.digits("scaled_scores")
        d_k = len(q_row)
        root = math.sqrt(d_k)
        answer = c.scaled[i, j]
        cands = [(c.scores[i, j], [("practice.slip.no_scale", {})]),
                 (c.scores[i, j] / d_k, [("practice.slip.by_dk", {"dk": d_k})]),
                 (c.scores[i, j] * root, [("practice.slip.times_root", {})])]
        questions.append(Question(
            "scaled", c.step("scaled_scores"), c.index(i, j), float(answer), c.hand("scaled_scores", (i, j)), dss,
            given=(("practice.given.score", {"q": qt, "k": kt, "score": _num(c.scores[i, j], ds), "dk": d_k}),),
            ask=("practice.ask.scaled", {"digits": dss}),
            how=("practice.how.scaled", {"score": _num(c.scores[i, j], ds), "dk": d_k, "root": _num(root, 4),
                                         "answer": _num(answer, dss)}),
            hint=(("practice.hint.root", {"dk": d_k, "root": _num(root, 4)}),),
            slips=_slips(answer, 10.0 ** -dss, cands)))
    dss, de, dsum, dw = c.digits("scaled_scores"), c.digits("exp_scores"), c.digits("exp_sum"), c.digits("weights")
    row, m = c.scaled[i], c.maxima[i]
    raw = c.scores[i]
    raw_exps = np.exp(raw - raw.max())
    scaled_given = ("practice.given.scaled_row" if ask_qk else "practice.given.meeting_max",
                    {"q": qt, "row": _labelled(row, c.key_tokens, dss), "m": _num(m, dss)})
    # e^(s − m)
    answer = c.exps[i, j]
    with np.errstate(over="ignore"):
        cands = [(math.exp(row[j]) if row[j] < 700 else math.inf, [("practice.slip.no_m", {})]),
                 (raw_exps[j], [("practice.slip.no_scale", {})]),
                 (math.exp(min(m - row[j], 700)), [("practice.slip.sign", {})])]
    cands += [(c.exps[i, jj], [("practice.slip.column", {"used": c.key_tokens[jj], "wanted": kt})]) for jj in others]
    questions.append(Question(
        "exp", c.step("exp_scores"), c.index(i, j), float(answer), c.hand("exp_scores", (i, j)), de,
        given=(scaled_given,),
        ask=("practice.ask.exp", {"k": kt, "digits": de}),
        how=("practice.how.exp", {"s": _num(row[j], dss), "m": _num(m, dss), "diff": _num(row[j] - m, dss),
                                  "answer": _num(answer, de)}),
        hint=(("practice.hint.diff", {"k": kt, "diff": _num(row[j] - m, dss)}),),
        slips=_slips(answer, 10.0 ** -de, cands)))
    # Σ
    answer = c.sums[i]
    exps_row = c.exps[i]
    with np.errstate(over="ignore"):
        plain = np.exp(np.minimum(row, 700.0))
    cands = [(answer - exps_row[jj], [("practice.slip.missing", {"k": c.key_tokens[jj]})])
             for jj in range(len(exps_row))]
    cands.append((plain.sum(), [("practice.slip.no_m", {})]))
    cands += [(plain.sum() - plain[jj], [("practice.slip.no_m", {}), ("practice.slip.missing", {"k": c.key_tokens[jj]})])
              for jj in range(len(plain))]
    cands.append((raw_exps.sum(), [("practice.slip.no_scale", {})]))
    questions.append(Question(
        "sum", c.step("exp_sum"), c.index(i, 0), float(answer), c.hand("exp_sum", (i,)), dsum,
        given=(("practice.given.exp_row", {"q": qt, "row": _labelled(exps_row, c.key_tokens, de)}),),
        ask=("practice.ask.sum", {"q": qt, "digits": dsum}),
        how=("practice.how.sum", {"terms": _added([_num(e, de) for e in exps_row]), "answer": _num(answer, dsum)}),
        hint=(("practice.hint.count", {"n": len(exps_row)}),),
        slips=_slips(answer, 10.0 ** -dsum, cands)))
    # weight, from the raw scores: every step before it can part
    answer = c.weights[i, j]
    unscaled = softmax(raw)
    cands = []
    if ask_qk:
        cands.append((unscaled[j], [("practice.slip.no_scale", {})]))
    with np.errstate(divide="ignore", invalid="ignore"):      # a Σ left with nothing (one key) has no weight
        for jj in range(len(exps_row)):
            cands.append((exps_row[j] / (c.sums[i] - exps_row[jj]),
                          [("practice.slip.missing_weight", {"k": c.key_tokens[jj]})]))
            if ask_qk:
                cands.append((raw_exps[j] / (raw_exps.sum() - raw_exps[jj]),
                              [("practice.slip.no_scale", {}), ("practice.slip.missing_weight", {"k": c.key_tokens[jj]})]))
    cands.append((exps_row[j], [("practice.slip.undivided", {})]))
    cands += [(c.weights[i, jj], [("practice.slip.column", {"used": c.key_tokens[jj], "wanted": kt})]) for jj in others]
    cands += [(c.weights[ii, j], [("practice.slip.row", {"used": c.tokens[ii], "wanted": qt})]) for ii in other_rows]
    given = (("practice.given.scores_row", {"q": qt, "row": _labelled(raw, c.key_tokens, c.digits("scores")),
                                            "dk": len(c.q[i])}),) if ask_qk else \
        (("practice.given.meeting_row", {"q": qt, "row": _labelled(raw, c.key_tokens, c.digits("scores"))}),)
    questions.append(Question(
        "weight", c.step("weights"), c.index(i, j), float(answer), c.hand("weights", (i, j)), dw,
        given=given,
        ask=("practice.ask.weight" if ask_qk else "practice.ask.weight.meeting", {"q": qt, "k": kt, "digits": dw}),
        how=("practice.how.weight", {"e": _num(exps_row[j], de), "sum": _num(c.sums[i], dsum),
                                     "answer": _num(answer, dw)}),
        hint=(("practice.hint.weight" if ask_qk else "practice.hint.weight.meeting",
               {"row": _labelled(row, c.key_tokens, dss), "m": _num(m, dss),
                "exps": _vector(exps_row, de), "sum": _num(c.sums[i], dsum)}),),
        slips=_slips(answer, 10.0 ** -dw, cands)))
    # one component of the output
    do, dv = c.digits("out"), c.digits("v")
    answer = c.out[i, comp]
    weights_row, column = c.weights[i], c.v[:, comp]
    products = weights_row * column
    cands = [(answer - products[jj], [("practice.slip.missing_out", {"k": c.key_tokens[jj]})])
             for jj in range(len(products))]
    cands += [(c.out[i, cc], [("practice.slip.component", {"used": cc, "wanted": comp})])
              for cc in range(c.out.shape[1]) if cc != comp]
    cands += [(c.out[ii, comp], [("practice.slip.row_weights", {"used": c.tokens[ii], "wanted": qt})])
              for ii in other_rows]
    cands += [(column.mean(), [("practice.slip.mean", {})]), (column.sum(), [("practice.slip.unweighted", {})])]
    questions.append(Question(
        "out", c.step("out"), c.index(i, comp), float(answer), c.hand("out", (i, comp)), do,
        given=(("practice.given.weights_row", {"q": qt, "row": _labelled(weights_row, c.key_tokens, dw)}),
               ("practice.given.v_column", {"c": comp, "row": _labelled(column, c.key_tokens, dv)})),
        ask=("practice.ask.out", {"q": qt, "c": comp, "digits": do}),
        how=("practice.how.out", {"c": comp, "sum": _sum_of_products(weights_row, column, dw, dv),
                                  "answer": _num(answer, do)}),
        hint=(("practice.hint.products", {"terms": ", ".join(_num(p, do + 1) for p in products)}),),
        slips=_slips(answer, 10.0 ** -do, cands)))
    return questions


def _labelled(values: Sequence[float], names: Sequence[str], digits: int) -> str:
    return ", ".join(f"{name} {_num(v, digits)}" for name, v in zip(names, values))


def _ATTENTION(trace: Trace, by_hand: Trace, pick: random.Random, lang: str) -> list[Question]:
    """Self-attention, cross-attention (post 001) and the projection example (post 000: one head of two,
    then Concat and Y = H·W_O as the sum over both heads' H entries)."""
    t = _words(lang)
    i = int(trace.meta["query"])
    tokens, key_tokens = trace.meta["tokens"], trace.meta.get("key_tokens") or trace.meta["tokens"]
    heads = trace["q_heads"].value.shape[0]
    head = pick.randrange(heads)
    label = t("practice.head", head=head_number(trace.meta, head)) if heads > 1 else ""
    chain = _Chain(trace, by_hand, "", head, tokens, key_tokens, lang, label)
    j = pick.randrange(len(key_tokens))
    comp = pick.randrange(chain.out.shape[1])
    questions = _attention_questions(chain, i, j, comp, ask_qk=True)
    if heads > 1:
        questions += _concat_and_y(trace, by_hand, pick, lang, i, tokens)
    return questions


def _concat_and_y(trace: Trace, by_hand: Trace, pick: random.Random, lang: str, i: int, tokens) -> list[Question]:
    """z_concat (H) entry and one Y component: Y[i, c] = Σ over both heads' H entries (post 000's point)."""
    t = _words(lang)
    out = np.asarray(trace["out"].value, dtype=float)            # (h, T, dv)
    heads, _, dv = out.shape
    concat = np.asarray(trace["concat"].value, dtype=float)      # (T, h·dv)
    row = 0 if concat.shape[0] == 1 else i
    dcat, dy, dwo = (digits_for(n, trace.meta.get("digits")) for n in ("concat", "y", "w_o"))
    qt = tokens[i]
    col = pick.randrange(concat.shape[1])
    h, within = divmod(col, dv)
    answer = concat[row, col]
    cands = [(out[hh, 0 if out.shape[1] == 1 else i, within],
              [("practice.slip.other_head", {"used": head_number(trace.meta, hh), "wanted": head_number(trace.meta, h)})])
             for hh in range(heads) if hh != h]
    cands += [(concat[row, cc], [("practice.slip.offset", {"used": cc, "wanted": col})])
              for cc in (col - 1, col + 1) if 0 <= cc < concat.shape[1]]
    out_row = lambda hh: out[hh, 0 if out.shape[1] == 1 else i]
    given = tuple(("practice.given.head_out", {"head": head_number(trace.meta, hh), "q": qt,
                                               "vector": _vector(out_row(hh), dcat)}) for hh in range(heads))
    hand = np.asarray(by_hand["by hand/concat"].value, dtype=float)[row, col] if "by hand/concat" in by_hand else answer
    questions = [Question(
        "concat", "concat", (row, col), float(answer), float(hand), dcat, given=given,
        ask=("practice.ask.concat", {"q": qt, "col": col, "digits": dcat}),
        how=("practice.how.concat", {"col": col, "head": head_number(trace.meta, h), "within": within,
                                     "answer": _num(answer, dcat)}),
        hint=(("practice.hint.blocks", {"dv": dv, "heads": heads}),),
        slips=_slips(answer, 10.0 ** -dcat, cands))]
    y = np.asarray(trace["y"].value, dtype=float)                 # (T, d) or (1, d)
    w_o = np.asarray(trace["w_o"].value, dtype=float)             # (h·dv, d)
    c = pick.randrange(y.shape[1])
    answer = y[row, c]
    h_row, w_col = concat[row], w_o[:, c]
    shares = [h_row[hh * dv:(hh + 1) * dv] @ w_col[hh * dv:(hh + 1) * dv] for hh in range(heads)]
    if f"head {1}/y" in trace:                                    # the layer's own one-head runs (post 000)
        shares = [float(np.asarray(trace[f"head {hh + 1}/y"].value)[row, c]) for hh in range(heads)]
    cands = [(shares[hh], [("practice.slip.one_head", {"head": head_number(trace.meta, hh), "n": dv,
                                                        "total": heads * dv})]) for hh in range(heads)]
    cands += [(y[row, cc], [("practice.slip.column_wo", {"used": cc, "wanted": c})])
              for cc in range(y.shape[1]) if cc != c]
    if y.shape[0] > 1:
        cands += [(y[ii, c], [("practice.slip.row", {"used": tokens[ii], "wanted": qt})])
                  for ii in range(y.shape[0]) if ii != row]
    products = h_row * w_col
    cands += [(answer - products[k], [("practice.slip.term", {"term": f"H[{k}] × W_O[{k}, {c}]",
                                                              "value": _num(products[k], dy)})])
              for k in range(len(products))]
    hand = np.asarray(by_hand["by hand/y"].value, dtype=float)[row, c] if "by hand/y" in by_hand else answer
    questions.append(Question(
        "y", "y", (row, c), float(answer), float(hand), dy,
        given=(("practice.given.concat_row", {"q": qt, "vector": _vector(h_row, dcat)}),
               ("practice.given.wo_column", {"c": c, "vector": _vector(w_col, dwo)})),
        ask=("practice.ask.y", {"q": qt, "c": c, "digits": dy, "n": heads * dv}),
        how=("practice.how.y", {"c": c, "shares": _added([_num(s, dy) for s in shares]), "answer": _num(answer, dy),
                                "heads": heads}),
        hint=(("practice.hint.shares", {"heads": heads, "dv": dv, "n": heads * dv}),),
        slips=_slips(answer, 10.0 ** -dy, cands)))
    return questions


def _MULTI_HEAD(trace: Trace, by_hand: Trace, pick: random.Random, lang: str) -> list[Question]:
    """Post 001's multi-head step: a z_concat entry, then one component of z_final = z_concat·W_O."""
    return _concat_and_y(trace, by_hand, pick, lang, int(trace.meta["query"]), trace.meta["tokens"])


def _MEETING(trace: Trace, by_hand: Trace, pick: random.Random, lang: str) -> list[Question]:
    """Post 002's two meetings: e^(s − m), Σ and a weight in the first; a weight and the blended answer
    (one of the two votes) in the second. The scores are given (no ÷√d_k)."""
    questions = []
    for number, scene in enumerate(trace.meta["scenes"]):
        tokens = list(scene["tokens"])
        chain = _Chain(trace, by_hand, f"{scene['name']}/", 0, [scene["query"]], tokens, lang)
        j = pick.randrange(len(tokens))
        comp = pick.randrange(chain.out.shape[1])
        chain_questions = _attention_questions(chain, 0, j, comp, ask_qk=False)
        keep = ("exp", "sum", "weight") if number == 0 else ("weight", "out")
        questions += [q for q in chain_questions if q.kind in keep]
    return questions


# ------------------------------------------------------------------ answers
def parse_answer(raw: str) -> tuple[float | None, tuple[str, dict] | None]:
    """A typed answer → (number, None), or (None, the text key and values of the one line that says why
    it is no number: empty, not a number, NaN, not finite)."""
    typed = raw.strip()
    if not typed:
        return None, ("practice.bad.empty", {})
    plain = typed.replace("−", "-")
    try:
        if not plain.isascii():         # float() reads "٣" and "１"; the pages' Number() does not: one rule, 0–9
            raise ValueError(plain)
        value = float(plain)
    except ValueError:
        return None, ("practice.bad.text", {"value": repr(typed[:40])})
    if math.isnan(value):
        return None, ("practice.bad.nan", {"value": typed[:40]})
    if not math.isfinite(value):
        return None, ("practice.bad.inf", {"value": typed[:40]})
    return value, None


def _decimals(typed: str) -> int:
    typed = typed.strip().replace("−", "-")
    if "e" in typed.lower() or "." not in typed:
        return 0 if "e" not in typed.lower() else 99
    return len(typed.split(".", 1)[1])


def check(question: Question, typed: str, lang: str = "en") -> Verdict:
    """Whether ``typed`` answers ``question`` (within one unit of the last printed decimal of the recorded
    or the by-hand value); if not, which slip gives it, or the intermediate values to compare with."""
    t = _words(lang)
    value, bad = parse_answer(typed)
    if bad is not None:
        return Verdict("bad", (t(bad[0], **bad[1]),))
    tolerance = question.tolerance
    if _close(value, question.answer, tolerance) or _close(value, question.by_hand, tolerance):
        return Verdict("right", (t("practice.right", how=t(question.how[0], **question.how[1])),))
    near = [slip for slip in question.slips if _close(value, slip.value, 2 * tolerance)]
    if near:
        slip = min(near, key=lambda s: abs(s.value - value))
        return Verdict("wrong", (_slip_line(t, slip, typed.strip()),), slip)
    places = _decimals(typed)
    if places < question.digits and _close(value, round(question.answer, places), 10.0 ** -places / 2 + 1e-12):
        return Verdict("bad", (_places_line(t, places, question.digits),))
    return Verdict("wrong", _unknown_lines(t, question, typed.strip()))


def reveal(question: Question, lang: str = "en") -> str:
    """The line that shows the answer with its working (after the last wrong attempt; the pages show it too)."""
    t = _words(lang)
    return t("practice.reveal", how=t(question.how[0], **question.how[1]))


def _places_line(t: Callable[..., str], places: int, digits: int) -> str:
    """An answer right to ``places`` decimals where the step prints ``digits`` (check's line, and the offline page's)."""
    return t("practice.bad.places" if places else "practice.bad.whole", places=places, digits=digits)


def _slip_line(t: Callable[..., str], slip: Slip, yours: str) -> str:
    said = [t(key, **values) for key, values in slip.parts]
    return t("practice.wrong.slip", yours=yours, first=said[0], rest="".join(t("practice.then", part=p) for p in said[1:]))


def _unknown_lines(t: Callable[..., str], question: Question, yours: str) -> tuple[str, ...]:
    return (t("practice.wrong.unknown", yours=yours), *(t(key, **values) for key, values in question.hint))


# ------------------------------------------------------------------ a session
def play(session: Drill, read: Callable[[], str | None], write: Callable[[str], None], *,
         attempts: int = ATTEMPTS, echo: bool = False) -> dict:
    """Ask every question of ``session`` in order. ``read()`` gives the next typed line (None: no more
    input, the session stops); ``write`` prints a line; ``echo`` repeats each answer read (a transcript of
    answers that came from a file or a pipe). A bad answer is said in one line and asked again; after
    ``attempts`` wrong answers the answer is shown. Returns {"asked", "first_try", "right", "stopped"}."""
    t = _words(session.lang)
    write(t("practice.header", title=t(f"title.{session.example}"), n=len(session.questions),
            seed=session.seed, example=session.example, fresh=" --fresh" if session.fresh else ""))
    tally = {"asked": 0, "first_try": 0, "right": 0, "stopped": False}
    for number, question in enumerate(session.questions, 1):
        write("")
        write(t("practice.question", number=number, n=len(session.questions), what=t(f"practice.kind.{question.kind}")))
        for key, values in question.given:
            write("  " + t(key, **values))
        write("  " + t(question.ask[0], **question.ask[1]))
        tally["asked"] += 1
        wrong = 0
        while True:
            typed = read()
            if typed is None:
                tally["stopped"] = True
                write(t("practice.stopped", number=number, n=len(session.questions)))
                write(t("practice.summary", right=tally["right"], first=tally["first_try"], asked=tally["asked"]))
                return tally
            if echo:
                write(f"> {typed.rstrip()}")
            verdict = check(question, typed, session.lang)
            for line in verdict.lines:
                write("  " + line)
            if verdict.status == "right":
                tally["right"] += 1
                tally["first_try"] += wrong == 0
                break
            if verdict.status == "wrong":
                wrong += 1
                if wrong >= attempts:
                    write("  " + reveal(question, session.lang))
                    break
                write("  " + t("practice.again"))
    write("")
    write(t("practice.summary", right=tally["right"], first=tally["first_try"], asked=tally["asked"]))
    return tally


# ------------------------------------------------------------------ pages (the offline page, qkv serve, qkv.show)
PAGE_DRILLS = ((0, False), (1, True), (2, True), (3, True))
"""The drills an offline page carries, as (seed, fresh): the post's own numbers, then three sets of new numbers of
the same shapes. More need `qkv serve` (any seed, computed on request) or `qkv practice --fresh --seed N`."""

YOURS, VALUE = "{yours}", "{value}"
"""Placeholders left in an offline page's lines: the page puts the typed answer there (as `check` does)."""


def shown(session: Drill) -> dict:
    """What a page shows of a drill, in its language, without the answers: {"example", "lang", "seed", "fresh",
    "attempts", "header", "lines", "questions": [{"kind", "what", "title", "given", "ask", "digits"}]} (``qkv serve``
    checks each answer with `check` on the server). ``lines``: the lines that do not depend on a question (a bad
    answer's, "try again", the summary), with ``{value}``, ``{right}``, ``{first}``, ``{asked}`` left to fill."""
    t = _words(session.lang)
    n = len(session.questions)
    return {"example": session.example, "lang": session.lang, "seed": session.seed, "fresh": session.fresh,
            "attempts": ATTEMPTS,
            "header": t("practice.header", title=t(f"title.{session.example}"), n=n, seed=session.seed,
                        example=session.example, fresh=" --fresh" if session.fresh else ""),
            "lines": {"empty": t("practice.bad.empty"), "text": t("practice.bad.text", value=VALUE),
                      "nan": t("practice.bad.nan", value=VALUE), "inf": t("practice.bad.inf", value=VALUE),
                      "again": t("practice.again"),
                      "summary": t("practice.summary", right="{right}", first="{first}", asked="{asked}")},
            "questions": [{"kind": q.kind, "digits": q.digits, "what": t(f"practice.kind.{q.kind}"),
                           "title": t("practice.question", number=k, n=n, what=t(f"practice.kind.{q.kind}")),
                           "given": [t(key, **values) for key, values in q.given],
                           "ask": t(q.ask[0], **q.ask[1])} for k, q in enumerate(session.questions, 1)]}


def offline(example: str, *, lang: str = "en", drills: Sequence[tuple[int, bool]] = PAGE_DRILLS) -> dict:
    """What a page without a server needs to check answers as `check` does, computed here: for each drill of
    ``drills`` ((seed, fresh) pairs), `shown` plus, per question, the true and by-hand values, the tolerance,
    the rounded answer at each shorter number of decimals, every slip's value with its line, and the lines of
    every other verdict. The page's script only compares the typed number with these values and picks a line
    (``{yours}`` / ``{value}`` in a line: the typed text). JSON-ready."""
    t = _words(lang)
    sets = []
    for seed, fresh in drills:
        session = drill(example, lang=lang, seed=seed, fresh=fresh)
        data = shown(session)
        for entry, q in zip(data["questions"], session.questions):
            how = t(q.how[0], **q.how[1])
            entry.update(
                answer=q.answer, byHand=q.by_hand, tolerance=q.tolerance,
                right=t("practice.right", how=how), reveal=reveal(q, lang),
                slips=[{"value": s.value, "line": _slip_line(t, s, YOURS)} for s in q.slips],
                places=[{"rounded": round(q.answer, p), "line": _places_line(t, p, q.digits)} for p in range(q.digits)],
                unknown=list(_unknown_lines(t, q, YOURS)))
        sets.append(data)
    return {"example": example, "lang": lang, "attempts": ATTEMPTS, "drills": sets}
