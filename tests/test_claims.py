"""What the explanations claim about attention is generated from the numbers it speaks of (issue 29):
a weight is not a contribution (‖wⱼ·vⱼ‖ and shares recorded by the core, the key that contributes most
and an attention sink named by one rule), softmax ignores an added constant but not a factor, and a
what-if's conclusions follow its own numbers. Expected values come from float64 NumPy written here."""

from __future__ import annotations

import re

import numpy as np
import pytest

import qkv
import qkv.examples as ex
from qkv.explain import render, texts
from qkv.trace import SINK_RATIO, SINK_WEIGHT, read_row


def flat(text: str) -> str:
    return " ".join(text.split())


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ----------------------------------------------------------------------------- the core records contributions
@pytest.mark.parametrize("heads,kv_heads", [(1, 1), (4, 4), (4, 2), (4, 1)])
def test_contributions_and_shares_are_recorded_as_float64_numpy_computes_them(heads, kv_heads):
    rng = np.random.default_rng(7)
    q = rng.standard_normal((heads, 5, 3))
    k = rng.standard_normal((kv_heads, 6, 3))
    v = rng.standard_normal((kv_heads, 6, 4)) * rng.uniform(0.1, 3.0, (kv_heads, 6, 1))
    trace = qkv.Trace()
    qkv.attention(q, k, v, record=trace)
    group = heads // kv_heads
    kk, vv = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)
    w = softmax_rows(q @ kk.transpose(0, 2, 1) / np.sqrt(3))
    expected = np.linalg.norm(w[..., None] * vv[:, None, :, :], axis=-1)      # ‖wⱼ·vⱼ‖ for every (h, i, j)
    np.testing.assert_allclose(trace["contributions"].value, expected, rtol=1e-12)
    np.testing.assert_allclose(trace["shares"].value, expected / expected.sum(-1, keepdims=True), rtol=1e-12)


def test_a_row_with_no_key_has_no_contribution_and_no_share():
    q = np.ones((2, 2))
    k = np.ones((3, 2))
    v = np.array([[np.inf, 0.0], [1.0, 2.0], [2.0, 2.0]])      # key 0 seen by no row: no 0·∞ = NaN
    mask = np.array([[False, False, False], [False, True, True]])
    trace = qkv.Trace()
    qkv.attention(q, k, v, mask, record=trace)
    contributions, shares = trace["contributions"].value, trace["shares"].value
    assert np.array_equal(contributions[0], np.zeros(3)) and np.array_equal(shares[0], np.zeros(3))
    norms = np.linalg.norm(v[1:], axis=1)
    np.testing.assert_allclose(contributions[1], [0.0, *(0.5 * norms)], rtol=1e-12)
    np.testing.assert_allclose(shares[1], [0.0, *(norms / norms.sum())], rtol=1e-12)
    assert read_row(trace["weights"].value[0], contributions[0]) is None


def test_nothing_is_recorded_or_computed_without_a_recorder():
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((3, 2)), rng.standard_normal((4, 2)), rng.standard_normal((4, 2))
    np.testing.assert_allclose(qkv.attention(q, k, v), softmax_rows(q @ k.T / np.sqrt(2)) @ v, rtol=1e-12)


# ----------------------------------------------------------------------------- the rule, in one place
def test_the_sink_rule():
    # most of the weight, a short value: a sink
    reading = read_row([0.75, 0.12, 0.13], [0.06, 0.33, 0.10])
    assert (reading.heaviest, reading.strongest, reading.sink) == (0, 1, 0) and not reading.same
    # the largest weight and also the largest contribution: no sink
    reading = read_row([0.75, 0.12, 0.13], [0.9, 0.33, 0.10])
    assert reading.same and reading.sink is None
    # another key contributes more but the heavy key is not a majority: named as such, no sink
    reading = read_row([0.45, 0.30, 0.25], [0.05, 0.5, 0.2])
    assert (reading.heaviest, reading.strongest, reading.sink) == (0, 1, None)
    # a majority whose share is above SINK_RATIO × its weight: no sink (0.6 of the weight, 0.4 of the output)
    assert read_row([0.6, 0.4, 0.0], [0.4, 0.6, 0.0]).sink is None
    assert read_row([0.6, 0.4, 0.0], [0.29, 0.71, 0.0]).sink == 0          # share 0.29 ≤ 0.5 × 0.6
    # a majority with a small share that still contributes most (0.3 of 1.3: 0.23 ≤ 0.5 × 0.6): the strongest key
    # is no sink
    reading = read_row([0.6, 0.1, 0.1, 0.1, 0.1], [0.3, 0.25, 0.25, 0.25, 0.25])
    assert reading.same and reading.sink is None


# ----------------------------------------------------------------------------- the explanation says it
def _cross_numbers():
    """post 001's cross-attention example computed here in float64 from its inputs."""
    t = ex.run("cross-attention")
    x, memory = t["x"].value, t["memory"].value
    q = x @ t["w_q"].value
    k, v = memory @ t["w_k"].value, memory @ t["w_v"].value
    query = t.info.query
    w = softmax_rows(q[query] @ k.T / np.sqrt(k.shape[1]))
    return t, w, np.linalg.norm(w[:, None] * v, axis=1)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_cross_attention_names_the_key_that_contributes_most(lang):
    t, w, c = _cross_numbers()
    keys = list(t.info.key_tokens)
    top, most = keys[int(np.argmax(w))], keys[int(np.argmax(c))]
    assert (top, most) == ("learning", "machine")                # the post's keys: weight ≠ contribution here
    text = flat(render(t, "text", lang=lang))
    assert f"{c.max():.4f}" in text and f"{c[int(np.argmax(w))]:.4f}" in text
    if lang == "en":
        assert f"learning has the largest weight ({w.max():.4f}), but machine contributes most" in text
        assert "therefore contributes most" not in text
    else:
        assert "가장 크게 기여하는 Key는 machine이다" in text and "따라서 learning의 Value가" not in text


def test_self_attention_names_one_key_for_both_when_it_is_one():
    t = ex.run("self-attention")
    x = t["x"].value
    q, k, v = x @ t["w_q"].value, x @ t["w_k"].value, x @ t["w_v"].value
    w = softmax_rows(q[1] @ k.T / np.sqrt(2))
    c = np.linalg.norm(w[:, None] * v, axis=1)
    assert np.argmax(w) == np.argmax(c) == 3
    text = flat(render(t, "text"))
    assert f"learning has the largest weight ({w.max():.4f}) and also contributes most" in text
    assert f"‖w·v‖ = {c.max():.4f}, a share of {c.max() / c.sum():.4f}" in text


def test_a_sink_is_named_in_both_languages_where_the_rule_finds_one():
    # cross-attention from one query: the key "sink" gets most of the weight but its value is 100 times shorter
    from qkv.examples.runner import trace_spec
    from qkv.spec import parse_spec

    doc = {"tokens": ["q"], "memory_tokens": ["sink", "a", "b"], "x": [[1.0, 0.0]],
           "memory": [[3.0, 0.0], [0.0, 1.0], [0.0, -1.0]], "w_q": [[1.0, 0.0], [0.0, 1.0]],
           "w_k": [[1.0, 0.0], [0.0, 1.0]], "w_v": [[0.001, 0.0], [0.0, 1.0]]}
    trace = trace_spec(parse_spec(doc, source="toy", base=None))
    v = np.array(doc["memory"]) @ np.array(doc["w_v"])
    k = np.array(doc["memory"]) @ np.array(doc["w_k"])
    w = softmax_rows(np.array([1.0, 0.0]) @ k.T / np.sqrt(2))
    c = np.linalg.norm(w[:, None] * v, axis=1)
    reading = read_row(w, c)
    assert w[0] >= SINK_WEIGHT and reading.sink == 0 and c[0] / c.sum() <= SINK_RATIO * w[0]
    en, ko = flat(render(trace, "text")), flat(render(trace, "text", lang="ko"))
    assert f"sink is an attention sink for q: it holds most of the weight ({w[0]:.4f})" in en
    assert f"어텐션 싱크: q의 Query에서 sink의 가중치는 {w[0]:.4f}이고" in ko


def test_no_text_claims_that_the_largest_weight_contributes_most():
    for lang, table in (("en", texts.EN), ("ko", texts.KO)):
        for key, sentence in table.items():
            assert "therefore contributes most" not in sentence, key
            assert "가중치가 큰 Key일수록 많이 기여" not in sentence, key
            assert "따라서 {top}의 Value가" not in sentence, key


# ----------------------------------------------------------------------------- softmax: constant vs factor
def test_group_meeting_says_a_constant_changes_nothing_and_a_factor_does():
    for lang, table in (("en", texts.EN), ("ko", texts.KO)):
        assert "relative to each other" not in table["gm.weaker"] and "상대적인 크기" not in table["gm.weaker"]
    text = flat(render(ex.run("group-meeting"), "text"))
    # lot's score is 100 in both meetings; m − s is 0 in the first and 1000 − 100 = 900 in the second
    assert "lot's score into the softmax is 100 in the first meeting and 100 in the second" in text
    assert "m minus lot's is 0 in the first meeting and 900 in the second" in text
    assert "adding one number to every score changes no weight, but multiplying every score by a factor" in text


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_what_if_concludes_from_its_own_numbers(lang):
    t = ex.run("group-meeting", changes=ex.Changes(factor=0.01))
    lot = softmax_rows(np.array([1.0, 1.0, 1.0, 100.0]) * 0.01)
    assert 0.47 < lot[3] < 0.48                                     # the largest weight, not a majority
    text = flat(render(t, "text", lang=lang))
    if lang == "en":
        assert "the group follows lot" not in text
        assert f"lot holds the largest weight ({lot[3]:.4f}) but not most of it" in text
        assert f"the other tokens together hold {1 - lot[3]:.4f}" in text
        # scores × 0.01: lot 1, the question's words 10: m − s is 0 (lot is the largest) and 10 − 1 = 9
        assert "m minus lot's is 0.0000 in the first meeting and 9.0000 in the second" in text
    else:
        assert "모두 lot의 대답을 따른다" not in text
        assert f"lot의 가중치({lot[3]:.4f})가 가장 크지만 절반에 못 미친다" in text
    default = flat(render(ex.run("group-meeting"), "text", lang=lang))
    assert ("the group follows lot" in default) if lang == "en" else ("모두 lot의 대답을 따른다" in default)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_without_the_division_by_root_dk_the_scores_are_said_to_be_unscaled(lang):
    t = ex.run("self-attention", changes=ex.Changes(sqrt_dk=False))
    text = render(t, "text", lang=lang)
    assert "Q·Kᵀ · 1" not in text
    assert texts.text(lang, "scale.none") in flat(text)
    assert texts.text(lang, "col.score") not in text                       # "scaled score": they are not
    scaled = ex.run("self-attention", changes=ex.Changes(factor=2.0, sqrt_dk=False))
    assert "Q·Kᵀ · 2" in render(scaled, "text", lang=lang)                 # a real scale is still named


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_no_key_clause_appears_only_under_a_mask(lang):
    clause = {"en": "a query the mask lets see no key", "ko": "마스크 때문에 볼 수 있는 Key가 하나도 없는"}[lang]
    matrix_clause = {"en": "or is all 0 where the mask", "ko": "모든 Key가 마스크로 가려진 행은 모두 0"}[lang]
    for name in ("self-attention", "cross-attention", "projection"):
        text = flat(render(ex.run(name), "text", lang=lang))
        assert clause not in text and matrix_clause not in text, name
    rng = np.random.default_rng(3)
    trace = qkv.Trace("masked", {"tokens": ["a", "b", "c"], "query": 2})
    mha = qkv.MultiHeadAttention.random(4, n_heads=1, seed=2)
    mha(rng.standard_normal((3, 4)), causal=True, record=trace)
    text = flat(render(trace, "text", lang=lang))
    assert clause in text and matrix_clause in text


# ----------------------------------------------------------------------------- notes and lines true as printed
def test_a_by_hand_note_shows_no_decimals_it_does_not_have():
    """The note gives the sum of the weighted values as printed (0.1688·0.40 + … + 0.3382·1.44 = 0.929432) at
    the decimals shown, 0.929, not "0.92900". The sum is recomputed here from the printed terms, and the printed
    weights and values are checked against float64 from the example's TOML (0.3382: the post prints 0.3383)."""
    from decimal import Decimal

    raw = render(ex.run("self-attention", by_hand=True), "text", by_hand=True)
    terms = re.findall(r"^\s*\+?\s*(\d\.\d{4}) · \[(-?\d+\.\d+), (-?\d+\.\d+), (-?\d+\.\d+)\]", raw, re.M)
    assert len(terms) == 4, terms
    doc = ex.load("self-attention")
    x, w_q, w_k, w_v = (np.array(doc[name], dtype=np.float64) for name in ("x", "w_q", "w_k", "w_v"))
    love = doc["tokens"].index("love")
    weights = softmax_rows((x @ w_q)[love] @ (x @ w_k).T / np.sqrt(w_q.shape[1]))
    printed = np.array([[float(n) for n in term] for term in terms])
    np.testing.assert_allclose(printed[:, 0], weights, rtol=0, atol=0.5e-4 + 1e-12)
    np.testing.assert_allclose(printed[:, 1:], x @ w_v, rtol=0, atol=0.5e-2 + 1e-12)
    total = sum(Decimal(term[0]) * Decimal(term[2]) for term in terms)          # the second component, as printed
    text = flat(raw)
    assert "0.92900" not in text and f"is {total:.3f}." in text


@pytest.mark.parametrize("name,by_hand", [("self-attention", False), ("self-attention", True), ("multi-head", False),
                                          ("multi-head", True)])
def test_notes_about_the_posts_decimals_only_at_the_posts_decimals(name, by_hand):
    trace = ex.run(name, by_hand=by_hand, digits=2)
    text = flat(render(trace, "text", by_hand=by_hand, digits=2))
    assert "one unit higher" not in text and "the result is the post's" not in text
    default = flat(render(ex.run(name, by_hand=by_hand), "text", by_hand=by_hand))
    assert "Note:" in default


def test_no_plus_minus_and_every_head_listed():
    text = render(ex.run("projection"), "text")
    assert "+ -" not in text and "− 0.5000 × (-1.5000)" in text           # (−0.5)·(−1.5): the sign moved
    assert "and so on" not in text and "0–3 → head 1, 4–7 → head 2" in text


def test_one_precision_for_the_exponents_of_a_softmax_block():
    for name in ("self-attention", "cross-attention"):
        lines = [line for line in render(ex.run(name), "text").splitlines() if line.startswith("  e^(")]
        decimals = {len(number.split(".")[1]) for line in lines
                    for number in re.findall(r"-?\d+\.\d+", line.split("=")[0])}
        assert len(lines) == 4 and len(decimals) == 1, (name, lines)


def test_the_notation_difference_is_of_the_matrices_shown():
    t = ex.run("group-meeting", by_hand=True)
    rows, columns = t["by hand/rows/out"].value, t["by hand/columns/out"].value.T
    largest = float(np.max(np.abs(columns - rows)))
    assert largest > 0                                   # by hand the two forms round at different places
    text = flat(render(t, "text", by_hand=True))
    assert "differs from the row form by at most 0." not in text and f"by at most {largest:.1e}" in text


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_multi_head_by_hand_says_how_its_first_head_was_rounded(lang):
    first = ex.run("self-attention")["out"].value[0, 1]              # love's exact z: 0.929535 → 0.930 once
    by_hand = ex.run("self-attention", by_hand=True)["by hand/out"].value[0, 1]
    assert round(first[1], 3) == 0.930 and by_hand[1] == 0.929       # rounded once vs at every step
    text = flat(render(ex.run("multi-head", by_hand=True), "text", lang=lang, by_hand=True))
    named = texts.text(lang, "example.name.self-attention")         # the example as the language names it
    assert texts.text(lang, "mh.z1.by_hand", z="z⁽¹⁾_love", token="love", example=named)[:20] in text
    assert "0.930" in text


# What the posts print, read from the posts themselves: «Attention의 projection: Q·K·V와 멀티 헤드» prints no
# value at all (its figures show shapes: T = 3, d = 8, h = 2), «어텐션이 조모임이라면» only whole-number scores
# (100, 1, 1,000) and no weight. Their examples' precisions are the examples' own, not the posts'.
POSTS_PRINT_NO_DECIMALS = ("projection", "group-meeting")
POST_PRECISION = {"en": ("precision the post prints", "decimals the post prints"),
                  "ko": ("글에 적힌 자릿수로 반올림", "글에 나온 정밀도")}


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("name", POSTS_PRINT_NO_DECIMALS)
def test_no_precision_is_called_the_posts_where_the_post_prints_none(capsys, name, lang):
    """--by-hand said "rounded to the precision the post prints for that step" and --help "default: the
    precision the post prints" for every example, also where the post prints no such number."""
    from qkv.cli import main

    for argv in (["example", name, "--by-hand"], ["example", "--help"], ["explain", "--help"]):
        try:
            code = main([*argv, "--lang", lang])
        except SystemExit as done:          # --help: argparse prints the help and exits 0
            code = done.code
        said = flat(capsys.readouterr().out)
        assert code == 0 and said, (argv, code)     # the words checked below were printed, not an error instead
        for claim in POST_PRECISION[lang]:
            assert claim not in said, (argv, claim)
