"""A weight is not a contribution, in the figures too (issue 29): wherever a figure draws one query's
weights, it draws beside them what each key adds to the output, ‖wⱼ·vⱼ‖, as a panel of its own
(labelled as a different quantity), and says which key has the largest weight, which contributes most
and which is an attention sink. Expected values are computed here in float64 from the recorded weights
and value rows (‖wⱼ·vⱼ‖ = wⱼ·‖vⱼ‖), not read from the recorded contributions. The figures are built,
not rendered (fast)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

import qkv.examples
from qkv import viz
from qkv.explain import texts


def _panel(fig, lang: str):
    label = texts.text(lang, "fig.contribution")
    found = [ax for ax in fig.axes if ax.get_ylabel().replace("\n", " ") == label]
    assert len(found) == 1, [ax.get_ylabel() for ax in fig.axes]
    return found[0]


def _expected(trace, prefix: str = ""):
    """(weights row, ‖wⱼ·vⱼ‖ row) of the followed query, from the recorded weights and value rows."""
    query = int(trace.meta.get("query") or 0)
    weights = np.asarray(trace[prefix + "weights"].value, dtype=np.float64)[0, query]
    name = prefix + ("v_heads" if prefix + "v_heads" in trace else "v")
    v = np.asarray(trace[name].value, dtype=np.float64)
    v = v[0] if v.ndim == 3 else v
    return weights, weights * np.linalg.norm(v, axis=-1)


@pytest.mark.parametrize("name", ["self-attention", "cross-attention"])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_an_example_figure_draws_each_keys_contribution_beside_its_weight(name, lang):
    trace = qkv.examples.run(name)
    fig = viz.figure_for(trace, lang=lang)
    ax = _panel(fig, lang)
    weights, contributions = _expected(trace)
    heights = [bar.get_height() for bar in ax.patches if bar.get_width() > 0.5]
    np.testing.assert_allclose(heights, contributions, rtol=1e-9)
    # the weights' panel is a different one, and the contribution's label is not the weight's
    assert texts.text(lang, "fig.contribution") != texts.text(lang, "fig.weights")
    note = ax.get_title(loc="left").replace("\n", " ")
    keys = [str(k) for k in (trace.meta.get("key_tokens") or trace.meta["tokens"])]
    heaviest, strongest = int(np.argmax(weights)), int(np.argmax(contributions))
    assert keys[heaviest] in note and keys[strongest] in note


def test_where_weight_and_contribution_disagree_the_figure_says_so():
    # the cross-attention example (issue 29): "learning" has the largest weight, "machine" adds more to z;
    # the figure names two keys exactly when the numbers differ, both when they do
    trace = qkv.examples.run("cross-attention")
    weights, contributions = _expected(trace)
    fig = viz.figure_for(trace, lang="en")
    note = _panel(fig, "en").get_title(loc="left").replace("\n", " ")
    same = int(np.argmax(weights)) == int(np.argmax(contributions))
    assert ("contributes most" in note) != same
    assert ("largest weight and largest contribution" in note) == same
    keys = trace.meta["key_tokens"]
    assert not same and f"largest weight: {keys[int(np.argmax(weights))]}" in note
    assert f"contributes most: {keys[int(np.argmax(contributions))]}" in note


def test_the_share_lines_are_true_as_printed():
    # each written "key: c / Σ = share" holds: the shown quotient rounds to the shown share
    import matplotlib.text
    from decimal import Decimal

    trace = qkv.examples.run("self-attention")
    fig = viz.figure_for(trace, lang="en")
    keys = trace.meta["tokens"]
    lines = [t.get_text() for t in fig.findobj(matplotlib.text.Text)
             if any(t.get_text().startswith(f"p_{k} = ") for k in keys) and " / " in t.get_text()]
    assert len(lines) == len(keys)
    _, contributions = _expected(trace)
    total = contributions.sum()
    for line, c in zip(lines, contributions):
        left, right = line.split(" = ", 1)[1].split(" = ")
        a, b = (Decimal(x) for x in left.split(" / "))
        digits = len(right.split(".")[1])
        assert round(a / b, digits) == Decimal(right)
        assert abs(float(a) - c) < 1e-4 and abs(float(b) - total) < 1e-4


def test_the_projection_figure_puts_each_heads_contributions_under_its_weights():
    # post 000's layer, token 3 followed: under each head's weights, that row's ‖wⱼ·vⱼ‖ and what it says
    import matplotlib.text

    trace = qkv.examples.run("projection")
    query = trace.meta["query"]
    weights = np.asarray(trace["weights"].value, dtype=np.float64)[:, query]           # (H, Tk)
    v = np.asarray(trace["v_heads"].value, dtype=np.float64)                            # (H, Tk, Dv)
    contributions = weights * np.linalg.norm(v, axis=-1)
    fig = viz.figure_for(trace, lang="en")
    texts_drawn = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
    blocks = [t for t in texts_drawn if t.startswith("‖wⱼ·vⱼ‖ of token 3's row")]
    assert len(blocks) == weights.shape[0]
    keys = trace.meta["tokens"]
    for h, block in enumerate(blocks):
        top, most = int(np.argmax(weights[h])), int(np.argmax(contributions[h]))
        said = (f"largest weight and largest contribution: {keys[top]}" if top == most
                else f"largest weight: {keys[top]}; contributes most: {keys[most]}")
        assert said in block
        for c in contributions[h]:
            assert f"{c:.4f}" in texts_drawn


def test_a_users_example_names_the_followed_token_under_each_heads_weights():
    # examples/my-example.toml follows "sat" (row 2): the row is named by its token, not by its index
    import matplotlib.text
    from pathlib import Path

    from qkv.examples.runner import trace_spec
    from qkv.spec import parse_spec, read_document

    path = Path(__file__).resolve().parents[1] / "examples" / "my-example.toml"
    trace = trace_spec(parse_spec(read_document(path), source=str(path), base=path.parent))
    token = trace.meta["tokens"][trace.meta["query"]]
    fig = viz.figure_for(trace, lang="en")
    blocks = [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text().startswith("‖wⱼ·vⱼ‖ of ")]
    assert len(blocks) == 2 and all(b.startswith(f"‖wⱼ·vⱼ‖ of {token}'s row") for b in blocks), blocks
