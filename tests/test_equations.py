"""Every equation the worked examples print is true as printed.

The explanation is rendered as a reader sees it (terminal text, English and Korean, exact and by
hand), and each printed equation is parsed back from that text and recomputed here with exact
decimal arithmetic on the numbers *as printed*: the result must round (half away from zero, as the
page says) to the printed result. Nothing here calls qkv's arithmetic: the parser reads only the text.

Forms checked (each a line, or a block of lines, of the text output):
  products   lhs = a × b + c × (d) + … = r          (q, k, v components; q·k; z_final)
  division   [s₀, …] / √n = [r₀, …]                  (scaling by √d_k)
  exp        e^(a − b) = r                           (softmax numerators)
  sum        Σ = a + b + … = r                       (softmax denominator)
  quotient   w_key = a / b = r                        (each weight)
  weighted   w₀ · [v₀] … + wₙ · [vₙ] = [z]            (the output as a weighted sum of value rows)
  row·W      name = x_tok · W_Q = [x] · W_Q = [r]     (with W as printed in the same output)
  meeting    softmax(scores)·V = [r]                  (group meeting: the table's weights × answers)
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, getcontext, localcontext

import numpy as np
import pytest

import qkv.examples as ex
from qkv.explain import render
from qkv.spec import parse_spec
from qkv.examples.runner import trace_spec

getcontext().prec = 50

NUM = r"\(?[-−]?\d+(?:\.\d+)?(?:e[-−]?\d+)?\)?"
VEC = r"\[([^\]]*)\]"


def dec(text: str) -> Decimal:
    return Decimal(text.strip().strip("()").replace("−", "-"))


def decimals(text: str) -> int:
    text = text.strip().strip("()")
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def prints_as(value: Decimal, shown: str) -> bool:
    """``value`` written with the decimals of ``shown`` is ``shown`` (scientific: within its digits)."""
    shown = shown.strip().strip("()").replace("−", "-")
    if "e" in shown:
        target = Decimal(shown)
        return abs(value - target) <= abs(target) * Decimal("0.06")
    quantum = Decimal(1).scaleb(-decimals(shown))
    with localcontext() as context:
        context.prec = max(50, value.adjusted() + decimals(shown) + 2)
        got = value.quantize(quantum, rounding=ROUND_HALF_UP)
    return got == Decimal(shown) or (got == 0 and Decimal(shown) == 0)


def vec(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def matrices(text: str) -> dict[str, list[list[Decimal]]]:
    """Every printed matrix without row labels, by its label (W_Q, W_K, W_V, …)."""
    found: dict[str, list[list[Decimal]]] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(W_[QKVO])  \((\d+) × (\d+)\)$", line.strip())
        if not m:
            continue
        rows, cols = int(m.group(2)), int(m.group(3))
        values = []
        for row in lines[i + 1:]:
            cells = row.split()
            if len(cells) == cols and all(re.fullmatch(r"[-−]?\d+\.\d+", c) for c in cells):
                values.append([dec(c) for c in cells])
                if len(values) == rows:
                    break
        found[m.group(1)] = values
    return found


def weighted_sum_prints(rows: list[tuple[Decimal, list[Decimal]]], result: list[str]) -> bool:
    """Σ wⱼ·vⱼ over (weight, value row) pairs, component by component, prints as ``result``."""
    sums = [sum((w * row[c] for w, row in rows), Decimal(0)) for c in range(len(result))]
    return all(prints_as(s, r) for s, r in zip(sums, result))


def check(text: str) -> tuple[int, int, list[str]]:
    """(equations checked, lines written with ≈, the lines that do not hold)."""
    checked, approx, wrong = 0, 0, []
    lines = [line.strip() for line in text.splitlines()]
    mats = matrices(text)

    def verdict(ok: bool, line: str, sign: str) -> None:
        nonlocal checked, approx
        checked += 1
        if sign == "≈":
            approx += 1
        elif not ok:
            wrong.append(line)

    pending: list[tuple[Decimal, list[Decimal]]] = []     # a weighted sum being read
    table: list[tuple[Decimal, list[Decimal]]] = []       # the group meeting's last table (weight, answer)
    for line in lines:
        m = re.fullmatch(rf".* = ((?:{NUM} × {NUM})(?: \+ {NUM} × {NUM})*) ([=≈]) ({NUM})", line)
        if m:
            terms = [t.split(" × ") for t in m.group(1).split(" + ")]
            verdict(prints_as(sum((dec(a) * dec(b) for a, b in terms), Decimal(0)), m.group(3)), line, m.group(2))
            continue
        m = re.fullmatch(rf"{VEC} / √(\d+) ([=≈]) {VEC}", line)
        if m:
            root = Decimal(int(m.group(2))).sqrt()
            ok = all(prints_as(dec(a) / root, b) for a, b in zip(vec(m.group(1)), vec(m.group(4))))
            verdict(ok and len(vec(m.group(1))) == len(vec(m.group(4))), line, m.group(3))
            continue
        m = re.fullmatch(rf"e\^\(({NUM}) − ({NUM})\) ([=≈]) ({NUM}) .*", line)
        if m:
            verdict(prints_as((dec(m.group(1)) - dec(m.group(2))).exp(), m.group(4)), line, m.group(3))
            continue
        m = re.fullmatch(rf"Σ = ({NUM}(?: \+ {NUM})*) ([=≈]) ({NUM})", line)
        if m:
            verdict(prints_as(sum((dec(a) for a in m.group(1).split(" + ")), Decimal(0)), m.group(3)), line,
                    m.group(2))
            continue
        m = re.fullmatch(rf"w_\S+ = ({NUM}) / ({NUM}) ([=≈]) ({NUM})", line)
        if m:
            verdict(prints_as(dec(m.group(1)) / dec(m.group(2)), m.group(4)), line, m.group(3))
            continue
        m = re.fullmatch(rf"(?:\+ )?({NUM}) · {VEC}\s+\(.*\)", line)
        if m:
            pending.append((dec(m.group(1)), [dec(v) for v in vec(m.group(2))]))
            continue
        m = re.fullmatch(rf"([=≈]) {VEC}", line)
        if m and pending:
            verdict(weighted_sum_prints(pending, vec(m.group(2))), line, m.group(1))
            pending = []
            continue
        m = re.fullmatch(rf"(\S+) = x_\S+ · (W_[QKV]) = {VEC} · W_[QKV] ([=≈]) {VEC}", line)
        if m and m.group(2) in mats:
            x, w, result = [dec(v) for v in vec(m.group(3))], mats[m.group(2)], vec(m.group(5))
            ok = len(result) == len(w[0]) and all(
                prints_as(sum((x[i] * w[i][c] for i in range(len(x))), Decimal(0)), result[c])
                for c in range(len(result)))
            verdict(ok, line, m.group(4))
            continue
        m = re.fullmatch(rf"\S+\s+{NUM}\s+({NUM})\s+{VEC}", line)
        if m:
            table.append((dec(m.group(1)), [dec(v) for v in vec(m.group(2))]))
            continue
        m = re.fullmatch(rf"softmax\((?:scores|점수)\)·V ([=≈]) {VEC}", line)     # 점수: Korean
        if m and table:
            verdict(weighted_sum_prints(table, vec(m.group(2))), line, m.group(1))
            table = []
            continue
        if not line or not line.startswith(("+", "=")):
            pending = [] if not re.match(rf"(?:\+ )?{NUM} · ", line) else pending
    return checked, approx, wrong


CASES = [(name, lang, by_hand) for name in ex.names() for lang in ("en", "ko") for by_hand in (False, True)]
# at least this many equations per example (exact, English): the forms above, counted by hand
LEAST = {"self-attention": 24, "cross-attention": 24, "multi-head": 3, "projection": 3, "group-meeting": 2}


@pytest.mark.parametrize("name, lang, by_hand", CASES)
def test_every_printed_equation_holds(name, lang, by_hand):
    text = render(ex.run(name, by_hand=by_hand), "text", lang=lang, by_hand=by_hand)
    checked, approx, wrong = check(text)
    assert not wrong, wrong
    assert approx == 0                          # the shipped examples never need ≈
    assert checked >= LEAST[name], checked


def test_the_checker_catches_a_false_line():
    # the line qkv printed before: 0.893 (z⁽¹⁾ rounded) with the exact result 0.8743
    false = "  z_final[0] = 0.893 × 0.40 + 1.020 × 0.35 + 0.640 × 0.25 = 0.8743"
    assert check(false)[2] == [false.strip()]
    assert check("  z_final[0] = 0.893 × 0.40 + 1.020 × 0.35 + 0.640 × 0.25 = 0.8742")[2] == []
    weighted = ("    0.1688 · [0.36, 1.44, 0.84]   (I)\n  + 0.8312 · [0.72, 0.96, 0.76]   (love)\n"
                "  = [0.659, 1.041, 0.774]")
    assert check(weighted)[:2] == (1, 0) and check(weighted)[2] == []
    assert check(weighted.replace("0.659", "0.660"))[2]
    assert check("  e^(0.8188 − 1.5138) = 0.49910   (I)")[2]         # e^(−0.695) = 0.49907…
    assert check("  [1.1580, 1.6976] / √2 = [0.8188, 1.2005]")[2]


@pytest.mark.parametrize("seed", range(6))
def test_equations_of_user_examples_hold(seed):
    """A fix by class: random inputs at the default four decimals, one and two heads, causal or not."""
    rng = np.random.default_rng(seed)
    heads = 1 + seed % 2
    d, t = 4, 3 + seed % 3
    doc = {"tokens": [f"t{i}" for i in range(t)], "x": rng.normal(size=(t, d)).round(3).tolist(),
           "w_q": rng.normal(size=(d, d)).tolist(), "w_k": rng.normal(size=(d, d)).tolist(),
           "w_v": rng.normal(size=(d, 2 * heads)).tolist(), "heads": heads}
    if seed % 3 == 0:
        doc["mask"] = np.tril(np.ones((t, t), dtype=bool)).tolist()
    trace = trace_spec(parse_spec(doc, source="test", base=None), by_hand=bool(seed % 2))
    for lang in ("en", "ko"):
        text = render(trace, "text", lang=lang, by_hand=bool(seed % 2))
        checked, approx, wrong = check(text)
        assert not wrong, wrong
        assert checked >= 10


WHAT_IFS = {"x0.01": ex.Changes(factor=0.01), "x3": ex.Changes(factor=3.0), "x0": ex.Changes(factor=0.0),
            "x100": ex.Changes(factor=100.0), "no-sqrt": ex.Changes(sqrt_dk=False),
            "cell": ex.Changes(cells={"x": ((0, 0, -1.25),)})}
# the group meeting divides by no √d_k and has no matrix to edit: its what-if is its scores
WHAT_IF_CASES = [(name, key) for name in ex.names() for key in WHAT_IFS
                 if name != "group-meeting" or key not in ("no-sqrt", "cell")]
WHAT_IF_CASES.append(("group-meeting", "scores"))


@pytest.mark.parametrize("name, key", WHAT_IF_CASES)
def test_equations_of_what_ifs_hold(name, key):
    changes = WHAT_IFS.get(key) or ex.Changes(scores={"question": ((7, 1000.0),), "lot": ((0, 50.0),)})
    text = render(ex.run(name, changes=changes), "text", lang="ko")
    checked, approx, wrong = check(text)
    assert not wrong, wrong
    assert checked >= LEAST[name]
