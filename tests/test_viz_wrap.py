"""A figure's wrapped text never breaks an equation or parts a number from what it names (issue 29: pictures a
learner can read). The group-meeting figure wrote "… card? (w" / "= 0.2500, …" and "‖wⱼ·vⱼ‖ =" / "wⱼ·‖vⱼ‖";
self-attention's Korean figure "‖w·v‖ =" / "0.5769"; cross-attention's "share" / "0.2700)"."""

import re

import pytest

import qkv.examples
from qkv.viz import figure_for, fonts
from qkv.viz.figures import _text_inches, _wrap, _wrapped

# A line may not end with an operator or begin with one, nor begin with a number.
_OPERATOR_END = re.compile(r"(^|\s)(=|≈|\+|−|×|·|/|Σ|<|>|≤|≥)\s*$")
_OPERATOR_START = re.compile(r"^\s*(=|≈|\+|−|×|·|/|<|>|≤|≥)(\s|$)")
_NUMBER_START = re.compile(r"^\s*[−+-]?\.?\d")


def _bad_breaks(text: str) -> list[tuple[str, str]]:
    lines = text.split("\n")
    return [(a, b) for a, b in zip(lines, lines[1:])
            if _OPERATOR_END.search(a) or _OPERATOR_START.search(b) or _NUMBER_START.search(b)]


def _texts(figure):
    for ax in figure.axes:
        yield from ax.texts
        yield from (ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label)
    yield from figure.texts


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("name", ["self-attention", "cross-attention", "multi-head", "projection", "group-meeting"])
def test_no_worked_example_figure_breaks_an_equation(name, lang):
    with fonts.context():
        figure = figure_for(qkv.examples.run(name), lang=lang)
    wrapped = [t.get_text() for t in _texts(figure) if "\n" in t.get_text()]
    bad = [pair for text in wrapped for pair in _bad_breaks(text)]
    assert bad == []


def test_wrap_keeps_an_equation_and_a_named_number_whole():
    text = "largest weight and largest contribution: each of Cash, or, credit, card? (w = 0.2500, ‖w·v‖ = 0.2500, share 0.2500)"
    for inches in (2.0, 3.0, 4.0, 5.0):
        out = _wrap(text, inches, 7.5)
        assert out.replace("\n", " ") == text                 # only spaces became line breaks
        assert _bad_breaks(out) == []
        for line in out.split("\n"):                          # each line fits unless it is one unbreakable piece
            assert _text_inches(line, 7.5) <= inches or line in ("(w = 0.2500,", "‖w·v‖ = 0.2500,", "share 0.2500)")


def test_wrap_moves_a_clause_not_a_word():
    # 5.2 inches at 7.5 pt hold about 83 characters: the whole first clause and the "(" piece do not fit on one
    # line; the break comes before the parenthesis, not between "card?" and the tokens before it
    text = "largest weight and largest contribution: each of Cash, or, credit, card? (w = 0.2500, ‖w·v‖ = 0.2500)"
    out = _wrap(text, 5.2, 7.5)
    assert out == ("largest weight and largest contribution: each of Cash, or, credit, card?\n"
                   "(w = 0.2500, ‖w·v‖ = 0.2500)")


def test_wrapped_breaks_nearest_the_middle_between_pieces():
    # the middle of 15 characters is 7.5: the spaces that may break stand at 5 and 9
    assert _wrapped("a = b and c = d", 0.1, 8) == "a = b and\nc = d"
    assert _wrapped("short", 0.1, 8) == "short"                 # one piece: nothing to break
    assert _wrapped("x = 1", 5.0, 8) == "x = 1"                 # fits: unchanged
