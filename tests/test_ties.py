"""Keys that tie are named together (the group meeting's second meeting: Cash, or, credit and card? each get
0.25): every reader that names "the key with the largest weight" or "the key that contributes most" names
every key of a tie, never the first of it alone. Expected ties come from a float64 softmax of the example's
given scores, computed here."""

from __future__ import annotations

import numpy as np
import pytest

import qkv.examples
from qkv.explain.model_text import contribution_json, contribution_sentences
from qkv.trace import read_row, tied


def _meeting():
    trace = qkv.examples.run("group-meeting")
    scores = np.asarray(trace["question/scores"].value, dtype=np.float64).reshape(-1)
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()
    tokens = trace.meta["scenes"][1]["tokens"]
    return trace, weights, tokens


def test_the_second_meetings_largest_weight_is_a_four_way_tie():
    _, weights, tokens = _meeting()
    expected = tuple(int(j) for j in np.flatnonzero(weights == weights.max()))
    assert len(expected) == 4                                       # Cash, or, credit, card?: scores of 1000
    assert tied(weights) == expected
    reading = read_row(weights, weights)                            # every value 1 long: contributions = weights
    assert reading.heaviest_keys == expected and reading.strongest_keys == expected and reading.same
    assert reading.sink is None


@pytest.mark.parametrize("lang, each", [("en", "for each of {}"), ("ko", "동률인 {}의")])
def test_the_meetings_text_names_every_tied_key(lang, each, capsys):
    from qkv.cli import main

    _, weights, tokens = _meeting()
    names = ", ".join(tokens[j] for j in np.flatnonzero(weights == weights.max()))
    assert main(["example", "group-meeting", "--lang", lang, "--format", "markdown"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert each.format(names) in out


def test_the_meetings_figure_names_every_tied_key():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.text

    from qkv import viz

    trace, weights, tokens = _meeting()
    names = ", ".join(tokens[j] for j in np.flatnonzero(weights == weights.max()))
    for lang, said in (("en", f"largest weight and largest contribution: each of {names}"),
                       ("ko", f"가중치도 기여도도 가장 큰 Key: 동률인 {names}")):
        fig = viz.figure_for(trace, lang=lang)
        notes = [" ".join(t.get_text().split()) for t in fig.findobj(matplotlib.text.Text)]
        assert any(said in note for note in notes), lang


def test_a_tie_on_one_side_only_names_each_key_with_its_own_numbers():
    # weights 0.4, 0.4, 0.2 (a tie of a and b); ‖wⱼ·vⱼ‖ 0.1, 0.3, 0.3 (a tie of b and c): each side names its tie,
    # and the tied heaviest keys' differing contributions are each written
    weights = np.array([0.4, 0.4, 0.2])
    contributions = np.array([0.1, 0.3, 0.3])
    shares = contributions / contributions.sum()
    reading = read_row(weights, contributions)
    assert (reading.heaviest_keys, reading.strongest_keys, reading.same) == ((0, 1), (1, 2), False)
    said = " ".join(contribution_sentences(weights, contributions, shares, ["a", "b", "c"], 0, digits=2,
                                           lang="en").split())
    assert said.startswith("each of a, b has the largest weight (0.40), but each of b, c contributes most")
    assert "against 0.10, 0.30 for each of a, b" in said
    document = contribution_json(weights, contributions, shares)
    assert document["largest_weight_tied"] == [0, 1] and document["contributes_most_tied"] == [1, 2]


def test_values_that_differ_by_rounding_noise_tie_and_real_differences_do_not():
    assert tied([0.25, 0.25 * (1 + 1e-9), 0.1]) == (0, 1)
    assert tied([0.25, 0.2499, 0.1]) == (0,)
    assert tied([np.nan, -np.inf]) == ()
