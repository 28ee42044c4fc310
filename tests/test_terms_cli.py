"""`qkv example NAME --terms` (and `qkv explain FILE --terms`): the neuron view as text — the followed query's q·k with
each key, product by product, their sum and ÷ √d_k. Expected values are a float64 computation from the example's own
TOML inputs (never qkv's output); every printed equation is checked to be true at its printed decimals ("=" only
when the printed numbers give the printed result, else "≈" with the note); English and Korean (no English words
under --lang ko); bad combinations are one-line errors naming the option."""

from __future__ import annotations

import re
from decimal import Decimal

import numpy as np
import pytest

from qkv.cli import main

from example_float64 import float64_steps
from test_cli_korean import assert_korean, words_of

DIGITS = 4
HALF = 0.5 * 10 ** -DIGITS + 1e-12


def _run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _blocks(out: str) -> list[dict]:
    """Each key's block: its product rows (i, q_i, k_i, q_i·k_i as printed), its Σ line and its ÷ √d_k line."""
    blocks, current = [], None
    for line in out.splitlines():
        row = re.fullmatch(r"\s+(\d+)\s+(-?\d+\.\d+)\s+(-?\d+\.\d+)\s+(-?\d+\.\d+)", line)
        if row:
            current["rows"].append(tuple(row.groups()[1:]))
        elif line.strip().startswith("Σ q_i·k_i"):
            current["sum"] = line.strip()
        elif "÷ √" in line:
            current["scaled"] = line.strip()
        elif re.match(r"\s+i\s+q_i", line):
            current = {"rows": []}
            blocks.append(current)
    return blocks


def _check_true_as_printed(block: dict, unrounded: str, scaled_unrounded: str) -> None:
    terms = [Decimal(r[2]) for r in block["rows"]]
    m = re.fullmatch(r"Σ q_i·k_i = (.+) ([=≈]) (-?\d+\.\d+)(.*)", block["sum"])
    written, sign, total, rest = m.groups()
    assert [Decimal(t.strip("()")) for t in written.split(" + ")] == terms
    assert (sum(terms) == Decimal(total)) == (sign == "="), block["sum"]
    assert (unrounded in rest) == (sign == "≈"), block["sum"]
    s = re.fullmatch(r"(-?\d+\.\d+) ÷ √(\d+) ([=≈]) (-?\d+\.\d+) (.*)", block["scaled"])
    score, dk, sign2, scaled, note = s.groups()
    assert score == total or "q·k:" in rest
    holds = abs(float(score) / np.sqrt(int(dk)) - float(scaled)) <= HALF
    assert holds == (sign2 == "=") and (scaled_unrounded in note) == (not holds), block["scaled"]


@pytest.mark.parametrize("name", ["self-attention", "cross-attention", "projection"])
def test_terms_are_the_float64_products_and_every_equation_holds(capsys, name):
    ref = float64_steps(name)
    code, out, err = _run(capsys, "example", name, "--terms", "--lang", "en")
    assert code == 0 and err == ""
    blocks = _blocks(out)
    heads, keys = ref["scores"].shape[0], len(ref["keys"])
    assert len(blocks) == heads * keys
    base = ref["doc"].get("token_base", 0)
    for h in range(heads):
        token, number = ref['doc']['query'], ref['query'] + base
        # the projection's “token 3” is named by its number: not glossed by it (“token 3” (token 3))
        named = token if name == "projection" else f"“{token}” (token {number})"
        assert f"query {named}, head {h + ref['doc']['head_base']}" in out
        for j in range(keys):
            block = blocks[h * keys + j]
            q, k = ref["q"][h, ref["query"]], ref["k"][h, j]
            printed = np.array([[float(v) for v in row] for row in block["rows"]])
            np.testing.assert_allclose(printed[:, 0], q, atol=HALF)
            np.testing.assert_allclose(printed[:, 1], k, atol=HALF)
            np.testing.assert_allclose(printed[:, 2], q * k, atol=HALF)
            assert abs(float(re.findall(r"-?\d+\.\d+", block["sum"])[-1]) - ref["scores"][h, ref["query"], j]) <= HALF
            assert abs(float(re.findall(r"-?\d+\.\d+", block["scaled"])[-1]) - ref["scaled"][h, ref["query"], j]) <= HALF
            _check_true_as_printed(block, "(the sum of the unrounded products)", "(from the unrounded score)")
        first = ref['keys'][0]
        assert (f"key {first}:" if name == "projection" else f"key “{first}” (token {base})") in out


def test_post_001_love_and_learning_as_the_post_prints_it(capsys):
    """Post 001 prints q_love · k_learning = 2.1408; the products here add up to it at four decimals."""
    code, out, _ = _run(capsys, "example", "self-attention", "--query", "2", "--key", "4", "--terms", "--lang", "en")
    assert code == 0
    ref = float64_steps("self-attention")
    terms = ref["q"][0, 1] * ref["k"][0, 3]
    blocks = _blocks(out)
    assert len(blocks) == 1 and "key “learning” (token 4)" in out
    assert f"Σ q_i·k_i = {terms[0]:.4f} + {terms[1]:.4f} = {terms.sum():.4f} = q·k" in out
    assert f"{terms.sum():.4f} ÷ √2 = {terms.sum() / np.sqrt(2):.4f}" in out
    assert "contribution" not in out.lower()


def test_a_sum_of_rounded_products_that_misses_says_so(capsys):
    """The projection example's token 3 with itself: its four printed products add to one unit less than the
    printed sum, so the line says ≈ and that the sum is of the unrounded products."""
    ref = float64_steps("projection")
    terms = ref["q"][0, 2] * ref["k"][0, 2]
    rounded = sum(Decimal(f"{t:.4f}") for t in terms)
    assert rounded != Decimal(f"{terms.sum():.4f}")           # the case this test is for
    code, out, _ = _run(capsys, "example", "projection", "--key", "3", "--terms", "--lang", "en")
    assert code == 0
    first = _blocks(out)[0]
    assert " ≈ " in first["sum"] and "(the sum of the unrounded products)" in first["sum"]


@pytest.mark.parametrize("name", ["self-attention", "cross-attention", "projection"])
def test_korean_terms_have_no_english(capsys, name):
    ref = float64_steps(name)
    code, out, err = _run(capsys, "example", name, "--terms", "--lang", "ko")
    assert code == 0 and err == ""
    tokens = ref["doc"].get("tokens_ko", ref["doc"]["tokens"]) + list(ref["keys"])
    assert_korean(out, allowed=words_of(*tokens) | {"q_i", "k_i"})     # the symbols, as the post writes them
    assert "헤드 1" in out and "스케일링한 점수" in out and "Σ q_i·k_i" in out
    _check_true_as_printed(_blocks(out)[0], "(반올림하지 않은 곱의 합)", "(반올림하지 않은 점수로 계산했다)")


NO_QK = {"en": "records no q and k", "ko": "q와 k가 기록되어 있지 않다"}


@pytest.mark.parametrize("argv, field, says", [
    (["example", "group-meeting", "--terms"], "--terms", NO_QK),          # the meeting's scores are given, not q·k
    (["example", "multi-head", "--terms"], "--terms", NO_QK),             # only the heads' outputs
    (["example", "self-attention", "--key", "4"], "--key", {"en": "give --terms too", "ko": "--terms도 함께 쓰라"}),
    (["example", "self-attention", "--terms", "--format", "html"], "--terms", {"en": "--terms writes text",
                                                                             "ko": "텍스트로 적는다"}),
    (["example", "self-attention", "--terms", "--key", "9"], "--key", {"en": "nor a row number 1–4", "ko": "행 번호 1–4"}),
])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_bad_terms_options_are_one_line_errors(capsys, argv, field, says, lang):
    code, out, err = _run(capsys, *argv, "--lang", lang)
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and field in err and says[lang] in err, err
    if lang == "ko":
        assert_korean(err, allowed=words_of("love machine learning I") | {"text"})     # --format text, as typed


def test_explain_file_terms(capsys, tmp_path):
    """`qkv explain FILE --terms` on a file of one's own: tokens numbered from 0, as user files are."""
    path = tmp_path / "mine.toml"
    path.write_text('tokens = ["a", "b"]\nquery = "b"\nx = [[1.0, 2.0], [0.5, -1.0]]\n'
                    'w_q = [[1.0, 0.0], [0.0, 1.0]]\nw_k = [[0.5, 0.0], [0.0, 2.0]]\nw_v = [[1.0, 0.0], [0.0, 1.0]]\n',
                    encoding="utf-8")
    code, out, _ = _run(capsys, "explain", str(path), "--terms", "--key", "0", "--lang", "en")
    assert code == 0
    # q_b = [0.5, -1], k_a = [0.5, 4]: products 0.25 and -4, sum -3.75, ÷ √2
    assert "query “b” (token 1)" in out and "key “a” (token 0)" in out
    assert "Σ q_i·k_i = 0.2500 + (-4.0000) = -3.7500 = q·k" in out
    assert f"-3.7500 ÷ √2 = {-3.75 / np.sqrt(2):.4f}" in out


def test_equations_that_do_not_hold_as_printed_say_so(capsys, tmp_path):
    """Numbers that round against each other: q_b = [0.12345, 0.5], k_a = [2.34567, 0.25]. The printed 0.1235 ×
    2.3457 rounds to 0.2897, not to the printed product 0.2896 (of the unrounded numbers), and the printed score
    0.4146 ÷ √2 is 0.2932, not the printed scaled score 0.2931: the lines say so ("≈" and why), never "=". The
    posts' examples print equations that all hold, so the tests above never reach these lines."""
    path = tmp_path / "rounding.toml"
    path.write_text('tokens = ["a", "b"]\nquery = "b"\nx = [[2.34567, 0.25], [0.12345, 0.5]]\n'
                    'w_q = [[1.0, 0.0], [0.0, 1.0]]\nw_k = [[1.0, 0.0], [0.0, 1.0]]\nw_v = [[1.0, 0.0], [0.0, 1.0]]\n',
                    encoding="utf-8")
    code, out, err = _run(capsys, "explain", str(path), "--terms", "--key", "0", "--lang", "en")
    assert code == 0 and err == ""
    q, k = np.array([0.12345, 0.5]), np.array([2.34567, 0.25])          # w_q = w_k = I
    (block,) = _blocks(out)
    printed = np.array([[float(v) for v in row] for row in block["rows"]])
    np.testing.assert_allclose(printed, np.stack([q, k, q * k], axis=1), rtol=0, atol=HALF)
    rows_hold = [round(Decimal(a) * Decimal(b), DIGITS) == Decimal(p) for a, b, p in block["rows"]]
    assert not all(rows_hold)                                             # the case this test is for
    assert ("(each product is of the unrounded q_i and k_i)" in out) == (not all(rows_hold))
    score, scaled = (q * k).sum(), (q * k).sum() / np.sqrt(2)
    assert abs(float(re.findall(r"-?\d+\.\d+", block["sum"])[-1]) - score) <= HALF
    assert abs(float(re.findall(r"-?\d+\.\d+", block["scaled"])[-1]) - scaled) <= HALF
    assert abs(float(f"{score:.4f}") / np.sqrt(2) - float(f"{scaled:.4f}")) > HALF   # 0.4146 ÷ √2 ≠ 0.2931
    _check_true_as_printed(block, "(the sum of the unrounded products)", "(from the unrounded score)")
    assert " ≈ " in block["scaled"]
