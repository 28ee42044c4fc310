"""`qkv why TOPIC`: each experiment's numbers against an independent float64 NumPy computation, its
sentences chosen by those numbers, its Korean without English, and its figure drawn in both languages.

The references here are computed from the examples' TOML inputs (tests/test_practice.py's `reference`)
or, for sqrt-dk, from the same random draws; nothing is read back from `qkv.why`'s output to be checked
against itself. Every test fails on the code before `qkv why` existed (no command, no `qkv.why`).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from qkv import examples
from qkv.cli import main

from test_cli_korean import HANGUL, words_of
from test_cli_lang_ko import korean_only
from test_practice import reference

TOPICS = ["sqrt-dk", "softmax", "order", "temperature", "mask", "dot-product"]


def run(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["why", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def love_row():
    ref = reference("self-attention")
    tokens = examples.load("self-attention")["tokens"]
    return ref, tokens, tokens.index("love")


def test_sqrt_dk_follows_the_square_root(capsys):
    from qkv import why

    found = why.run("sqrt-dk", seed=0)
    rng = np.random.default_rng(0)
    for n, d_k in enumerate((2, 16, 64, 512)):
        q, k, _ = rng.standard_normal((256, d_k)), rng.standard_normal((16, d_k)), rng.standard_normal((16, 4))
        scores = q @ k.T
        assert found.data["std"][n] == pytest.approx(scores.std(), rel=1e-12)
        assert 0.8 < scores.std() / math.sqrt(d_k) < 1.2
        plain, scaled = softmax(scores).max(axis=1), softmax(scores / math.sqrt(d_k)).max(axis=1)
        assert found.data["top_plain"][n] == pytest.approx(plain.mean(), rel=1e-12)
        assert found.data["top_scaled"][n] == pytest.approx(scaled.mean(), rel=1e-12)
        assert found.data["grad_plain"][n] == pytest.approx((plain * (1 - plain)).mean(), rel=1e-12)
    code, out, _ = run(capsys, "sqrt-dk")
    top = softmax(scores).max(axis=1).mean()          # d_k = 512, no ÷√d_k
    assert code == 0 and f"to {top:.3f} at d_k = 512" in out
    assert ("nearly one-hot" in out) == (top > 0.9)
    assert "falls from" in out and "√512 = 22.63" in out


def test_softmax_ignores_a_constant_not_a_factor(capsys):
    ref, tokens, i = love_row()
    s = ref["scaled_scores"][0, i]
    code, out, _ = run(capsys, "softmax")
    assert code == 0 and f"add up to {s.sum():.4f}, not 1" in out
    assert f"{(s - 2 < 0).sum()} of the 4 scores are negative and they add up to {(s - 2).sum():.4f}" in out
    assert np.allclose(softmax(s + 5), softmax(s)) and np.abs(softmax(2 * s) - softmax(s)).max() > 0.05
    assert "softmax ignores an added constant, not a factor" in out
    changes = [np.abs(softmax(a * s) - softmax(s)).max() for a in (2, 0.5, 10)]
    assert f"change by {min(changes):.4f} to {max(changes):.4f}" in out
    v = np.array(examples.load("self-attention")["x"], dtype=float) @ np.array(examples.load("self-attention")["w_v"])
    out_love = softmax(s) @ v
    raw8 = np.tile(s, 8) @ np.tile(v, (8, 1))
    assert f"grows 8.0 times ({s @ v[:, 0]:.4f} → {raw8[0]:.4f}); softmax's output stays {out_love[0]:.4f}" in out


def test_order_swapped_differs_and_the_column_form_agrees(capsys):
    ref, tokens, i = love_row()
    doc = examples.load("self-attention")
    x, w_q, w_k, w_v = (np.array(doc[n], dtype=float) for n in ("x", "w_q", "w_k", "w_v"))
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    rows = softmax(q @ k.T / math.sqrt(2)) @ v
    swapped = softmax(k @ q.T / math.sqrt(2)) @ v
    columns = v.T @ softmax(k @ q.T / math.sqrt(2), axis=0)     # V·softmax(KᵀQ) in column vectors: (Dv, T)
    assert np.allclose(columns.T, rows)
    code, out, _ = run(capsys, "order")
    assert code == 0 and f"up to {np.abs(swapped - rows).max():.4f} in the outputs" in out
    assert "transposed, is the same computation" in out
    wrong = softmax(q @ k.T / math.sqrt(2), axis=0)
    assert f"love's weights then add up to {wrong[i].sum():.4f}, not 1" in out


def test_temperature_reaches_the_blend_of_the_group_meeting(capsys):
    doc = examples.load("group-meeting")
    second = doc["scenes"][1]
    scores, values = np.array(second["scores"], dtype=float), np.array(second["values"], dtype=float)
    code, out, _ = run(capsys, "temperature")
    assert code == 0
    for factor in (1, 0.01, 0.003):
        weights = softmax(scores * factor)
        dot, of = weights @ values
        line = next(line for line in out.splitlines() if line.startswith(f"Factor {factor:g}:"))
        assert ("not heard" in line) == (dot < 1e-4), line
        assert ("적당히 걸러들어" in line) == (1e-4 <= dot < of), line
    first = np.array(doc["scenes"][0]["scores"], dtype=float)
    assert f"from 1.0000 to {softmax(first * 0.003)[-1]:.4f} at factor 0.003" in out


def test_mask_says_what_each_token_sees(capsys):
    ref, tokens, _ = love_row()
    scaled = ref["scaled_scores"][0]
    allowed = np.tril(np.ones((4, 4), dtype=bool))
    masked = softmax(np.where(allowed, scaled, -np.inf))
    code, out, _ = run(capsys, "mask")
    assert code == 0
    assert "love may see I, love; hidden, as they come later: machine, learning." in out
    hidden_share = softmax(scaled)[1, 2:].sum()
    assert f"they had {hidden_share:.4f}" not in out and f"keys had {hidden_share:.4f} of its weight" in out
    assert f"[{masked[1, 0]:.4f}, {masked[1, 1]:.4f}, 0.0000, 0.0000]" in out
    assert "learning, the last token, sees every token" in out and "I, sees only itself: weight 1.0000" in out


def test_dot_product_is_alignment_times_lengths(capsys, tmp_path):
    ref, tokens, i = love_row()
    doc = examples.load("self-attention")
    x, w_q, w_k = (np.array(doc[n], dtype=float) for n in ("x", "w_q", "w_k"))
    q, keys = (x @ w_q)[i], x @ w_k
    scores = keys @ q
    cosines = scores / (np.linalg.norm(q) * np.linalg.norm(keys, axis=1))
    best, worst, aligned = int(np.argmax(scores)), int(np.argmin(scores)), int(np.argmax(cosines))
    figure = tmp_path / "qk.png"
    code, out, err = run(capsys, "dot-product", "--figure", str(figure))
    assert code == 0 and figure.stat().st_size > 10_000 and "wrote" in err
    assert f"{tokens[best]} gets the largest q·k ({scores[best]:.4f})" in out
    assert f"{tokens[worst]} gets the smallest q·k ({scores[worst]:.4f})" in out
    assert f"The best aligned key is {tokens[aligned]} (θ = {math.degrees(math.acos(min(1, cosines[aligned]))):.1f}°)" in out
    for j, token in enumerate(tokens):
        assert f"{cosines[j]:.3f}" in out and f"{scores[j]:.4f}" in out


@pytest.mark.parametrize("topic", TOPICS)
def test_korean_has_no_english(capsys, topic):
    code, out, _ = run(capsys, topic, "--lang", "ko")
    tokens = set(examples.load("self-attention")["tokens"])
    for scene in examples.load("group-meeting")["scenes"]:
        tokens |= set(scene["tokens"])
    allowed = words_of(*tokens, *examples.load("group-meeting")["answers"]) | {"std", "cos", "QK", "KQ"}      # std, cos θ and the matrices QKᵀ, KQᵀ: symbols
    assert code == 0 and HANGUL.search(out)
    assert korean_only(out, allowed) == [], korean_only(out, allowed)


@pytest.mark.parametrize("topic", TOPICS)
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_each_figure_is_drawn(tmp_path, topic, lang):
    from qkv import why
    from qkv.viz import write_figure

    found = why.run(topic)
    figure = why.figure(found, lang)
    path = write_figure(figure, tmp_path / f"{topic}.png")
    assert path.stat().st_size > 10_000
    texts = [t.get_text() for t in figure.findobj(lambda a: hasattr(a, "get_text"))]
    assert any(HANGUL.search(t) for t in texts) == (lang == "ko")


def test_an_unknown_topic_is_one_line(capsys):
    code, out, err = run(capsys, "sqrtdk")
    assert code == 2 and out == "" and err.count("\n") == 1 and "TOPIC: 'sqrtdk' is not one of" in err
    assert "did you mean 'sqrt-dk'" in err
