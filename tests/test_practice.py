"""`qkv practice`: a full session through each worked example, answered from standard input.

The right answers are computed here, independently, in float64 NumPy from the examples' inputs (the
TOML files, or a fresh drill's recorded inputs) — not read from the drill. The diagnoses are checked by
typing the number a known slip gives, also computed here: ÷√d_k forgotten, Σ missing a term (with and
without subtracting m: the same weight), the wrong key, one head's share of Y instead of both heads'.
Every test fails on the code before `qkv practice` existed (no command, no `qkv.practice`).
"""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

from qkv.cli import main
from qkv import examples

from test_cli_korean import HANGUL, words_of
from test_cli_lang_ko import korean_only

EXAMPLES = ["self-attention", "cross-attention", "multi-head", "projection", "group-meeting"]


# ------------------------------------------------------------------ an independent float64 reference
def _attention(x, memory, w_q, w_k, w_v, heads, w_o=None) -> dict:
    source = x if memory is None else memory
    q, k, v = x @ w_q, source @ w_k, source @ w_v
    dk, dv = q.shape[1] // heads, v.shape[1] // heads
    steps = {n: [] for n in ("scores", "scaled_scores", "exp_scores", "exp_sum", "weights", "out")}
    for h in range(heads):
        scores = q[:, h * dk:(h + 1) * dk] @ k[:, h * dk:(h + 1) * dk].T
        scaled = scores / math.sqrt(dk)
        exps = np.exp(scaled - scaled.max(axis=1, keepdims=True))
        total = exps.sum(axis=1, keepdims=True)
        weights = exps / total
        for name, value in zip(steps, (scores, scaled, exps, total, weights, weights @ v[:, h * dv:(h + 1) * dv])):
            steps[name].append(value)
    ref = {name: np.stack(values) for name, values in steps.items()}
    ref["concat"] = np.concatenate(list(ref["out"]), axis=1)
    if w_o is not None:
        ref["y"] = ref["concat"] @ w_o
    return ref


def _array(doc, name):
    return None if name not in doc else np.array(doc[name], dtype=float)


def reference(name: str, inputs: dict | None = None) -> dict:
    """Every number a drill of ``name`` can ask, by step name (``inputs``: a fresh drill's recorded ones)."""
    doc = examples.load(name)
    if name == "group-meeting":
        ref = {}
        for scene in doc["scenes"]:
            scores = np.array(scene["scores"], dtype=float)[None, :] if inputs is None else \
                inputs[f"{scene['name']}/scores"]
            exps = np.exp(scores - scores.max())
            weights = exps / exps.sum()
            values = np.array(scene["values"], dtype=float)
            ref.update({f"{scene['name']}/exp_scores": exps, f"{scene['name']}/exp_sum": exps.sum(keepdims=True),
                        f"{scene['name']}/weights": weights, f"{scene['name']}/out": weights @ values})
        return ref
    if name == "multi-head":
        first = reference(doc["first_head"], inputs)
        row = examples.load(doc["first_head"])["tokens"].index(doc["query"])
        heads = [first["out"][0, row]] + [np.array(z, dtype=float) for z in doc["given_heads"]]
        concat = np.concatenate(heads)[None, :]
        w_o = np.array(doc["w_o"], dtype=float) if inputs is None else inputs["w_o"]
        return {"concat": concat, "y": concat @ w_o}
    get = (lambda n: _array(doc, n)) if inputs is None else inputs.get
    return _attention(get("x"), get("memory"), get("w_q"), get("w_k"), get("w_v"), int(doc.get("heads", 1)),
                      get("w_o"))


def ref_value(ref: dict, question) -> float:
    value = ref[question.step]
    return float(value[question.index])


# ------------------------------------------------------------------ playing a session through the CLI
def play(capsys, monkeypatch, answers, *argv) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{a}\n" for a in answers)))
    capsys.readouterr()
    code = main(["practice", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def shown(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


@pytest.mark.parametrize("name", EXAMPLES)
def test_a_full_session_with_right_wrong_and_bad_answers(capsys, monkeypatch, name):
    from qkv import practice

    drill = practice.drill(name, seed=11)
    ref = reference(name)
    answers = []
    for question in drill.questions:
        right = ref_value(ref, question)
        assert abs(right - question.answer) <= 1e-9 * max(1.0, abs(right)), (question.kind, right, question.answer)
        answers += ["twelve", str(right + 12.345), shown(right, question.digits)]
    code, out, err = play(capsys, monkeypatch, answers, name, "--seed", "11")
    n = len(drill.questions)
    assert code == 0 and err == "", err
    assert out.count("  Right: ") == n and out.count("  Not quite. ") == n, out
    assert out.count("'twelve' is not a number") == n, out
    assert out.count("Try again.") == n and "The answer:" not in out, out
    assert out.rstrip().endswith(f"{n} of {n} right (0 at the first try)."), out[-300:]
    for number in range(1, n + 1):
        assert f"Question {number} of {n} — " in out


@pytest.mark.parametrize("name", EXAMPLES)
def test_a_full_session_in_korean_has_no_english(capsys, monkeypatch, name):
    from qkv import practice

    drill = practice.drill(name, seed=4, lang="ko")
    ref = reference(name)
    answers = []
    for question in drill.questions:
        right = ref_value(ref, question)
        answers += ["", str(right - 7.5), shown(right, question.digits)]
    code, out, err = play(capsys, monkeypatch, answers, name, "--seed", "4", "--lang", "ko")
    n = len(drill.questions)
    assert code == 0 and HANGUL.search(out)
    assert out.count("맞았다: ") == n and out.count("정답이 아니다. ") == n and out.count("답이 없다") == n, out
    tokens = set()
    for key in ("tokens", "key_tokens"):
        tokens |= words_of(*(drill.trace.meta.get(key) or ()))
    for scene in drill.trace.meta.get("scenes") or ():
        tokens |= words_of(*scene["tokens"])
    assert korean_only(out, tokens | {"practice", "seed", "Enter"} | words_of(name)) == [], \
        korean_only(out, tokens | words_of(name))
    assert f"{n}문제 중 {n}문제를 맞혔다" in out


def test_three_wrong_answers_show_the_answer_and_move_on(capsys, monkeypatch):
    ref = reference("self-attention")
    from qkv import practice

    drill = practice.drill("self-attention", seed=2)
    first, second = drill.questions[:2]
    answers = ["100", "200", "300", shown(ref_value(ref, second), second.digits)]
    code, out, _ = play(capsys, monkeypatch, answers, "--seed", "2")
    assert code == 0 and out.count("Not quite.") == 3 and out.count("Try again.") == 2
    assert f"The answer: q_love·k_" in out and shown(ref_value(ref, first), 4) in out.split("The answer:")[1]
    assert "Question 2 of 6" in out and out.count("  Right: ") == 1
    assert "The answers ended at question 3 of 6." in out and "1 of 3 right (1 at the first try)." in out


@pytest.mark.parametrize("typed, said", [("", "No answer: type a number"), ("abc", "'abc' is not a number"),
                                         ("nan", "nan is not a number"), ("1e400", "1e400 is beyond the range"),
                                         ("-inf", "-inf is beyond the range"), ("0,25", "'0,25' is not a number")])
def test_a_bad_answer_is_one_line_and_asked_again(capsys, monkeypatch, typed, said):
    ref = reference("self-attention")
    from qkv import practice

    first = practice.drill("self-attention", seed=1).questions[0]
    code, out, _ = play(capsys, monkeypatch, [typed, shown(ref_value(ref, first), 4)], "--seed", "1")
    before = out.split("Question 2")[0]
    lines = [line for line in before.splitlines() if said in line]
    assert code == 0 and len(lines) == 1, before
    after = before.split(f"> {typed}\n", 1)[1].splitlines()
    assert after[0] == lines[0] and after[1] == f"> {shown(ref_value(ref, first), 4)}" and "Right: " in after[2]


# ------------------------------------------------------------------ the diagnosis names the first step that parts
def _question(drill, kind):
    return next(q for q in drill.questions if q.kind == kind)


def test_a_weight_with_sigma_missing_a_term_and_no_m_is_named():
    """The issue's own sentence: e^s/Σ without subtracting m is fine, Σ missing learning's term is not."""
    from qkv import practice

    drill = practice.drill("self-attention", seed=5)
    weight = _question(drill, "weight")
    i, j = weight.index[1], weight.index[2]
    tokens = examples.load("self-attention")["tokens"]
    ref = reference("self-attention")
    scaled = ref["scaled_scores"][0, i]
    learning = tokens.index("learning")
    assert j != learning
    plain = np.exp(scaled)                                  # e^s: m not subtracted
    typed = plain[j] / (plain.sum() - plain[learning])
    verdict = practice.check(weight, f"{typed:.4f}")
    assert verdict.status == "wrong" and "Σ is missing learning's term" in verdict.lines[0], verdict
    assert "e^m cancels" in verdict.lines[0]
    fine = practice.check(weight, f"{plain[j] / plain.sum():.4f}")          # no m, nothing missing: right
    assert fine.status == "right"


def test_forgetting_the_square_root_is_named():
    from qkv import practice

    drill = practice.drill("self-attention", seed=5)
    ref = reference("self-attention")
    weight = _question(drill, "weight")
    raw = ref["scores"][0, weight.index[1]]
    unscaled = np.exp(raw - raw.max()) / np.exp(raw - raw.max()).sum()
    verdict = practice.check(weight, f"{unscaled[weight.index[2]]:.4f}")
    assert verdict.status == "wrong" and "not divided by √d_k" in verdict.lines[0], verdict
    scaled = _question(drill, "scaled")
    verdict = practice.check(scaled, f"{ref['scores'][scaled.index]:.4f}")
    assert "not divided by √d_k" in verdict.lines[0]
    verdict = practice.check(scaled, f"{ref['scores'][scaled.index] / 2:.4f}")         # d_k = 2
    assert "divided by d_k = 2, not by its square root" in verdict.lines[0]


def test_the_wrong_key_and_the_wrong_query_are_named():
    from qkv import practice

    drill = practice.drill("self-attention", seed=5)
    ref = reference("self-attention")
    score = _question(drill, "score")
    _, i, j = score.index
    tokens = examples.load("self-attention")["tokens"]
    other = (j + 1) % 4
    verdict = practice.check(score, f"{ref['scores'][0, i, other]:.4f}")
    assert f"you used k_{tokens[other]} where the step needs k_{tokens[j]}" in verdict.lines[0], verdict
    row = (i + 2) % 4
    if not np.isclose(ref["scores"][0, row, j], ref["scores"][0, i, other], atol=2e-4):
        verdict = practice.check(score, f"{ref['scores'][0, row, j]:.4f}")
        assert f"q_{tokens[row]}'s row" in verdict.lines[0], verdict


def test_one_head_of_y_is_named_for_post_000():
    """Post 000's point: a Y component sums over both heads' H entries; one head's four is a slip."""
    from qkv import practice

    drill = practice.drill("projection", seed=8)
    ref = reference("projection")
    y = _question(drill, "y")
    row, c = y.index
    w_o = np.array(examples.load("projection")["w_o"], dtype=float)
    head_one = ref["concat"][row, :4] @ w_o[:4, c]
    verdict = practice.check(y, f"{head_one:.4f}")
    assert verdict.status == "wrong" and "head 1's share only (4 products)" in verdict.lines[0], verdict
    assert "(8 products)" in verdict.lines[0]
    assert practice.check(y, f"{ref['y'][row, c]:.4f}").status == "right"


def test_an_answer_from_the_printed_numbers_is_accepted():
    """A learner computes from the rounded numbers on screen: e^(s − m) from four-decimal scaled scores."""
    from qkv import practice

    drill = practice.drill("self-attention", seed=5)
    exp = _question(drill, "exp")
    ref = reference("self-attention")
    row = np.round(ref["scaled_scores"][exp.index[:2]], 4)
    from_screen = math.exp(row[exp.index[2]] - row.max())
    assert practice.check(exp, f"{from_screen:.5f}").status == "right"
    assert practice.check(exp, f"{ref['exp_scores'][exp.index] + 3e-5:.5f}").status == "wrong"
    verdict = practice.check(exp, f"{ref['exp_scores'][exp.index]:.2f}")
    assert verdict.status == "bad" and "right to 2 decimals" in verdict.lines[0]


def _far_from_every_number(q, value: float) -> bool:
    """Not within one unit of the answer or the by-hand value, nor within two of any slip's number."""
    tol = q.tolerance
    return (abs(value - q.answer) > 1.5 * tol and abs(value - q.by_hand) > 1.5 * tol
            and all(abs(value - slip.value) > 2.5 * tol for slip in q.slips))


def test_right_to_fewer_decimals_means_the_answer_rounded_there():
    """"Right to N decimals" (a bad answer: asked again, no attempt used) is said of the float64 answer rounded to N
    decimals; one unit off at those decimals is a wrong answer, not one "right to N decimals"."""
    from qkv import practice

    said, wrong = 0, 0
    for name in EXAMPLES:
        ref = reference(name)
        for q in practice.drill(name, seed=5).questions:
            right = ref_value(ref, q)
            for places in range(1, q.digits):
                verdict = practice.check(q, f"{round(right, places):.{places}f}")
                if verdict.status == "bad":
                    said += 1
                    assert f"right to {places} decimal" in verdict.lines[0], verdict
                for off in (round(right, places) - 10.0 ** -places, round(right, places) + 10.0 ** -places):
                    if _far_from_every_number(q, off):
                        verdict = practice.check(q, f"{off:.{places}f}")
                        assert verdict.status == "wrong" and verdict.slip is None, (name, q.kind, places, off, verdict)
                        wrong += 1
    assert said >= 10 and wrong >= 20, (said, wrong)


def test_a_slip_is_named_only_near_its_own_number():
    """A slip is named when the typed number is within two units of the slip's value (the answer's last printed
    decimal); five units away, and near no other number, the answer is wrong without a slip named."""
    from qkv import practice

    checked = 0
    for name in EXAMPLES:
        for q in practice.drill(name, seed=5).questions:
            for slip in q.slips:
                for typed in (slip.value + 5 * q.tolerance, slip.value - 5 * q.tolerance):
                    if _far_from_every_number(q, typed):
                        verdict = practice.check(q, repr(typed))
                        assert verdict.status == "wrong" and verdict.slip is None, (name, q.kind, typed, verdict)
                        checked += 1
                near = practice.check(q, repr(slip.value + 1.5 * q.tolerance))
                if near.status == "wrong" and abs(slip.value - q.by_hand) > 3 * q.tolerance:
                    assert near.slip is not None                  # within two units: a slip is named (this or a nearer one)
    assert checked >= 50, checked


# ------------------------------------------------------------------ seed and fresh inputs
def test_the_same_seed_gives_the_same_drill(capsys, monkeypatch):
    outputs = {seed: play(capsys, monkeypatch, [], "projection", "--seed", seed)[1] for seed in ("3", "3", "9")}
    runs = [play(capsys, monkeypatch, [], "projection", "--seed", "3")[1] for _ in range(2)]
    assert runs[0] == runs[1] and "--seed 3 repeats this drill" in runs[0]
    assert outputs["9"] != runs[0]


@pytest.mark.parametrize("name", EXAMPLES)
def test_fresh_inputs_are_new_and_checked(capsys, monkeypatch, name):
    from qkv import practice

    drill = practice.drill(name, seed=21, fresh=True)
    trace = drill.trace
    if name == "group-meeting":
        inputs = {f"{s['name']}/scores": np.asarray(trace[f"{s['name']}/scores"].value, dtype=float)
                  for s in trace.meta["scenes"]}
        post = examples.load(name)["scenes"][0]["scores"]
        assert list(inputs["lot/scores"].reshape(-1)) != post
    elif name == "multi-head":
        first = practice.drill("self-attention", seed=21, fresh=True).trace     # the same draw for head 1's inputs
        inputs = {n: np.asarray(first[n].value, dtype=float) for n in ("x", "w_q", "w_k", "w_v")}
        inputs["w_o"] = np.asarray(trace["w_o"].value, dtype=float)
        assert not np.array_equal(inputs["w_o"], np.array(examples.load(name)["w_o"], dtype=float))
    else:
        inputs = {n: np.asarray(trace[n].value, dtype=float) for n in ("x", "memory", "w_q", "w_k", "w_v", "w_o")
                  if n in trace}
        assert not np.array_equal(inputs["x"], np.array(examples.load(name)["x"], dtype=float))
    if name == "multi-head":
        ref = _fresh_multi_head(inputs)
    else:
        ref = reference(name, inputs)
    answers = [shown(ref_value(ref, q), q.digits) for q in drill.questions]
    code, out, _ = play(capsys, monkeypatch, answers, name, "--seed", "21", "--fresh")
    n = len(drill.questions)
    assert code == 0 and out.count("  Right: ") == n and f"{n} of {n} right ({n} at the first try)." in out, out


def _fresh_multi_head(inputs: dict) -> dict:
    doc = examples.load("multi-head")
    first = _attention(inputs["x"], None, inputs["w_q"], inputs["w_k"], inputs["w_v"], 1)
    row = examples.load("self-attention")["tokens"].index(doc["query"])
    concat = np.concatenate([first["out"][0, row]] + [np.array(z, dtype=float) for z in doc["given_heads"]])[None, :]
    return {"concat": concat, "y": concat @ inputs["w_o"]}


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize("argv, said", [
    (["practice", "self-atention"], "EXAMPLE: 'self-atention' is not one of"),
    (["practice", "--seed", "-1"], "--seed"),
    (["practice", "--seed", "x"], "--seed"),
    (["practice", "--lang", "fr"], "--lang: 'fr' is not one of en, ko"),
])
def test_bad_options_are_one_line(capsys, argv, said):
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and captured.err.count("\n") == 1 and said in captured.err, captured.err
