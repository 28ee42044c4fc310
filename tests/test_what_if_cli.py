"""`qkv example NAME --what-if KEY=VALUE …` (issue 29's leftovers): a learner practises on the command line with
the changes the page and serve offer (`qkv.examples.Changes`, read by `qkv.examples.changes_from`). The printed
numbers are checked against a float64 computation of the changed inputs written here from the example's TOML
(never qkv's output), at the precision they are printed; a bad change is one error line listing what is offered."""

from __future__ import annotations

import math
import re
import tomllib
from importlib import resources

import numpy as np
import pytest

from qkv.cli import main


def _inputs(name: str) -> dict:
    return tomllib.loads(resources.files("qkv.examples").joinpath(f"{name}.toml").read_text(encoding="utf-8"))


def _expected(name: str, *, factor=1.0, sqrt_dk=True, cells=()) -> dict:
    """The followed query's scores into the softmax, weights, ‖wⱼ·vⱼ‖, shares and output, in float64."""
    doc = _inputs(name)
    arrays = {m: np.array(doc[m], dtype=np.float64) for m in ("x", "memory", "w_q", "w_k", "w_v") if m in doc}
    for matrix, i, j, value in cells:
        arrays[matrix][i, j] = value
    x = arrays["x"]
    memory = arrays.get("memory", x)
    q, k, v = x @ arrays["w_q"], memory @ arrays["w_k"], memory @ arrays["w_v"]
    query = doc["tokens"].index(doc["query"])
    scale = factor * (1 / math.sqrt(q.shape[1]) if sqrt_dk else 1.0)
    s = (q[query] @ k.T) * scale
    w = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    contributions = w * np.linalg.norm(v, axis=1)
    return {"keys": doc.get("memory_tokens", doc["tokens"]), "token": doc["query"], "s": s, "w": w,
            "c": contributions, "p": contributions / contributions.sum(), "z": w @ v}


def _close(printed: str, value: float) -> bool:
    """``printed`` is ``value`` rounded to the places it shows (3.4e-05: to 1e-06)."""
    from decimal import Decimal

    return abs(float(printed) - value) <= 0.5 * 10.0 ** Decimal(printed).as_tuple().exponent + 1e-12


CASES = [("self-attention", ["factor=0.5", "x[1,0]=2"], dict(factor=0.5, cells=[("x", 1, 0, 2.0)])),
         ("cross-attention", ["memory[0,1]=3", "sqrt_dk=off"], dict(sqrt_dk=False, cells=[("memory", 0, 1, 3.0)])),
         ("self-attention", ["w_k[1,1]=-2.5", "factor=3"], dict(factor=3.0, cells=[("w_k", 1, 1, -2.5)]))]


@pytest.mark.parametrize("name, changes, computed", CASES, ids=lambda c: c if isinstance(c, str) else None)
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_what_ifs_printed_numbers_are_those_of_the_changed_inputs(name, changes, computed, lang, capsys):
    assert main(["example", name, "--what-if", *changes, "--lang", lang]) == 0
    out = capsys.readouterr().out
    expected = _expected(name, **computed)
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "‖w·v‖" in line and len(line.split()) >= 4)
    rows = {}
    for line in lines[header + 1:]:
        number = r"(-?\d+\.\d+(?:e[-+]\d+)?)"
        found = re.fullmatch(rf"\s*(\S+)\s+{number}\s+{number}\s+{number}\s+{number}\s*", line)
        if found:
            rows[found[1]] = found.groups()[1:]
        elif rows:
            break
    assert list(rows) == expected["keys"], out
    for j, key in enumerate(expected["keys"]):
        for printed, name_ in zip(rows[key], "swcp"):
            assert _close(printed, expected[name_][j]), (key, name_, printed, expected[name_][j])
    z = re.search(rf"z_{re.escape(expected['token'])} = \[([^\]]+)\]\s*$", out, re.M)
    assert z and all(_close(p.strip(), e) for p, e in zip(z[1].split(","), expected["z"])), (z and z[0])
    # the conclusion is drawn from these numbers: the key named as contributing most is the float64 one's
    most = expected["keys"][int(np.argmax(expected["c"]))]
    assert re.search(rf"\b{re.escape(most)}\b[^\n]*(contributes most|가장 크게 기여)|(contributes most|가장 크게 "
                     rf"기여하는 Key는) {re.escape(most)}", " ".join(out.split())), out
    assert ("What if:" if lang == "en" else "바꿔 보기:") in out


def test_the_what_if_is_said_with_the_changed_row_named(capsys):
    assert main(["example", "self-attention", "--what-if", "factor=0.5", "x[1,0]=2"]) == 0
    assert "What if: scores × 0.5, x[1,0] = 2 (the row of “love”)." in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("name, change, said", [
    ("self-attention", "foo=1", "'foo' is not a change this example offers; it offers: factor=NUMBER, sqrt_dk=on|off, "
                                "x[ROW,COLUMN]=NUMBER, w_q[ROW,COLUMN]=NUMBER"),
    ("self-attention", "factor=abc", "factor: expected a finite number written with the digits 0–9 (such as 0.5), got 'abc'"),
    ("self-attention", "factor=nan", "factor: expected a finite number written with the digits 0–9 (such as 0.5), got 'nan'"),
    # finite but beyond ±1e30, the bound of every input number: factor=1e308 printed NaN rows and two NumPy
    # warnings with exit 0 (found in review, 7 December); a cell or a score alike
    ("self-attention", "factor=1e308", "factor: expected a number within ±1e+30 (so that every step stays finite), "
                                       "got '1e308'"),
    ("group-meeting", "factor=-1e31", "factor: expected a number within ±1e+30"),
    ("self-attention", "x[1,0]=1e200", "x[1,0]: expected a number within ±1e+30"),
    ("group-meeting", "lot[0]=1e308", "lot[0]: expected a number within ±1e+30"),
    ("self-attention", "factor=1e30", None),
    ("self-attention", "x[9,0]=1", "row 9, column 0 is outside x (4 × 2"),
    ("self-attention", "x[1]=1", "x: name a cell as x[ROW,COLUMN]"),
    ("self-attention", "sqrt_dk=maybe", "sqrt_dk: expected on or off, got 'maybe'"),
    ("self-attention", "factor", "'factor': expected KEY=VALUE"),
    ("group-meeting", "question[8]=5", "position 8 is outside the meeting's 8 scores"),
    ("group-meeting", "sqrt_dk=off", "no ÷√d_k"),
    ("group-meeting", "x[0,0]=1", "it offers: factor=NUMBER, lot[POSITION]=SCORE, question[POSITION]=SCORE"),
    ("projection", "w_o[0,0]=1", None),
])
def test_a_bad_what_if_is_one_line_naming_it(name, change, said, capsys):
    code = main(["example", name, "--what-if", change])
    err = capsys.readouterr().err
    if said is None:
        assert code == 0 and err == ""
        return
    assert code == 2 and err.startswith("qkv: error: --what-if: ") and said in err and err.count("\n") == 1, err


def test_a_what_if_is_said_in_korean(capsys):
    assert main(["example", "group-meeting", "--what-if", "lot[0]=x", "--lang", "ko"]) == 2
    assert "qkv: 오류: --what-if: lot[0]: 0–9 숫자로 쓴 유한한 수(예: 0.5)여야 한다 (받은 값: 'x')" in capsys.readouterr().err


def test_the_help_says_it(capsys):
    for lang, said in (("en", "a what-if, the changes the page and qkv serve offer"), ("ko", "바꿔 보기")):
        assert main(["example", "--help", "--lang", lang]) == 0
        assert "--what-if" in (out := " ".join(capsys.readouterr().out.split())) and said in out


@pytest.mark.parametrize("factor", [1e308, -1e31, 2e30])
def test_a_changes_factor_beyond_the_input_bound_is_refused(factor):
    """The page and serve's what-if (`qkv.examples.Changes`) took a finite factor of any size: 1e308 overflowed the
    scores (NaN rows). The bound is the input numbers' own (`spec.MAX_MAGNITUDE`, 1e30)."""
    from qkv import examples
    from qkv.errors import InputError

    with pytest.raises(InputError, match=r"expected a number within ±1e\+30") as caught:
        examples.run("self-attention", changes=examples.Changes(factor=factor))
    assert caught.value.field == "factor"
