"""Renderers: every format, both languages, digits, by-hand; they only read the Trace."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest

import qkv
import sys
import qkv.examples as ex
from qkv.explain import FORMATS, derivation_html, render
from qkv.explain import texts
from qkv.explain.numbers import fmt

HANGUL = re.compile(r"[\uac00-\ud7a3]")


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def traces():
    return {name: ex.run(name, by_hand=True) for name in ex.names()}


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("name", ex.names())
def test_every_format_renders(traces, name, lang):
    t = traces[name]
    text = render(t, "text", lang=lang)
    markdown = render(t, "markdown", lang=lang)
    doc = json.loads(render(t, "json", lang=lang))
    fragment = derivation_html(t, lang=lang)
    assert r"\begin{bmatrix}" in markdown and markdown.count("$$") % 2 == 0
    assert doc["format"] == "qkv-explanation" and doc["lang"] == lang
    back = qkv.Trace.from_dict(doc["trace"])
    assert back.names() == t.names()
    for a, b in zip(t, back):
        np.testing.assert_array_equal(a.value, b.value)
    assert fragment.startswith('<section class="qkv-derivation"') and "<html" not in fragment
    assert "<table" in fragment
    post = t.meta.get("post")
    title = texts.text("en", f"post.{post}") if post else ""
    for rendered in (text, markdown, fragment):
        # English names the post by its Korean title (users know it by that), and nothing else is Korean
        rendered = re.sub(r"\s+", " ", html.unescape(rendered))
        for part in title.split("”")[0].lstrip("“").split():
            rendered = rendered.replace(part, "")
        assert bool(HANGUL.search(rendered)) == (lang == "ko"), HANGUL.findall(rendered)[:5]  # (私は is Japanese)


@pytest.mark.parametrize("name", ex.names())
def test_korean_and_english_show_the_same_numbers(traces, name):
    def numbers(rendered: str) -> list[str]:
        return re.findall(r"-?\d+\.\d+(?:e-?\d+)?", rendered)

    en = json.loads(render(traces[name], "json", lang="en"))
    ko = json.loads(render(traces[name], "json", lang="ko"))
    assert [b["type"] for b in en["blocks"]] == [b["type"] for b in ko["blocks"]]
    shown_en = [json.dumps(b.get("text"), ensure_ascii=False) for b in en["blocks"] if b["type"] == "matrix"]
    shown_ko = [json.dumps(b.get("text"), ensure_ascii=False) for b in ko["blocks"] if b["type"] == "matrix"]
    assert shown_en == shown_ko
    assert numbers(json.dumps([b for b in en["blocks"] if b["type"] == "calc"])) == \
        numbers(json.dumps([b for b in ko["blocks"] if b["type"] == "calc"]))


def test_korean_self_attention_reads_like_the_seed(traces):
    text = flat(render(traces["self-attention"], "text", lang="ko"))
    assert "Self-attention에서는 각 토큰이 같은 문장 안의 모든 토큰" in text
    assert "√d_k(= √2)로 나누어 스케일링한다" in text
    assert "z_love = [0.893, 0.930, 0.818]" in text
    assert "참고: 글은 learning의 가중치를" in text


def test_html_format_is_the_interactive_page(traces):
    page = render(traces["self-attention"], "html", lang="ko")
    assert page.lstrip().lower().startswith("<!doctype html")
    assert 'class="qkv-derivation"' in page          # the page embeds derivation_html


def test_json_numbers_are_the_trace_values(traces):
    t = traces["cross-attention"]
    doc = json.loads(render(t, "json"))
    weights = next(b for b in doc["blocks"] if b["type"] == "table" and "weight" in b["header"])
    shown = [r[2]["number"] for r in weights["rows"]]
    assert shown == list(t["weights"].value[0, 0])
    assert [r[2]["text"] for r in weights["rows"]] == ["0.2453", "0.2474", "0.2515", "0.2558"]


def test_digits_changes_the_precision(traces):
    t = traces["self-attention"]
    assert "0.338238" in render(t, "text", digits=6).replace("0.3382382", "0.338238")
    assert "[1.158000, 1.697600, 1.688800, 2.140800]" in render(t, "text", digits=6)
    assert "[0.89, 0.93, 0.82]" in render(t, "text", digits=2)
    with pytest.raises(ValueError, match="digits"):
        render(t, "text", digits=-1)
    with pytest.raises(ValueError, match="fmt must be one of"):
        render(t, "pdf")
    with pytest.raises(ValueError, match="lang must be one of"):
        render(t, "text", lang="fr")


def test_by_hand_rendering_shows_the_drift(traces):
    t = traces["self-attention"]
    text = flat(render(t, "text", by_hand=True))
    assert "By hand versus exact" in text
    assert "z_love = [0.893, 0.929, 0.818]" in text        # rounded weights → 0.929, exact 0.930
    doc = json.loads(render(t, "json", by_hand=True))
    drift = next(b for b in doc["blocks"] if b["type"] == "table" and "by hand" in b["header"])
    out = next(r for r in drift["rows"] if r[0] == "attention output")
    assert out[1]["text"] == ["0.893", "0.929", "0.818"] and out[2]["text"] == ["0.893348", "0.929535", "0.817631"]
    assert out[3] == "5.6e-04"
    markdown = render(t, "markdown", by_hand=True, lang="ko")
    assert "손 계산과 정확한 값의 비교" in markdown
    with pytest.raises(ValueError, match="no by-hand steps"):
        render(ex.run("self-attention"), "text", by_hand=True)


def test_renderers_never_compute_attention(traces, monkeypatch):
    saved = qkv.Trace.from_json(traces["projection"].to_json())

    def refuse(*args, **kwargs):
        raise AssertionError("a renderer called the attention code")

    core = sys.modules["qkv.attention"]
    for name in ("attention", "attention_reference", "softmax", "attention_columns"):
        monkeypatch.setattr(core, name, refuse)
        monkeypatch.setattr(qkv, name, refuse)
    monkeypatch.setattr(qkv.MultiHeadAttention, "__call__", refuse)
    for fmt_name in ("text", "markdown", "json"):
        assert render(saved, fmt_name, by_hand=True)
    assert derivation_html(saved)


def test_a_trace_of_no_known_kind_renders_generically():
    t = qkv.Trace("layers", {"kind": "model"})
    t("layer 0/weights", np.full((2, 3, 3), 1 / 3), formula="softmax")
    t("count", np.array(7.0))
    text = render(t, "text")
    assert "layer 0/weights" in text and "0.3333" in text and "7.0000" in text
    assert r"\begin{bmatrix}" in render(t, "markdown")


def test_heads_are_coloured_as_in_the_seed_figures(traces):
    markdown = render(traces["projection"], "markdown")
    assert r"{\color{blue}" in markdown and r"{\color{green}" in markdown
    fragment = derivation_html(traces["projection"])
    # heads are counted from 0 everywhere (as --head and Python): head 0 blue, head 1 green — as text on white,
    # each darkened only as far as WCAG AA's 4.5:1 needs (blue #1f6fd1 is 4.94:1 already; green #2a9d3c is 3.51:1)
    assert 'qkv-head-0" style="color:#1f6fd1"' in fragment
    green = re.search(r'qkv-head-1" style="color:#([0-9a-f]{6})"', fragment).group(1)
    rgb = [int(green[k:k + 2], 16) for k in (0, 2, 4)]
    lum = lambda c: sum(w * ((x / 255) / 12.92 if x / 255 <= 0.04045 else ((x / 255 + 0.055) / 1.055) ** 2.4)
                        for w, x in zip((0.2126, 0.7152, 0.0722), c))
    assert 4.5 <= 1.05 / (lum(rgb) + 0.05) < 5.0                   # readable, and still the palette's green
    assert rgb[1] > rgb[0] and rgb[1] > rgb[2]
    assert "qkv-head-2" not in fragment
    coloured = render(traces["projection"], "text", color=True)
    assert "\x1b[" in coloured and "\x1b[" not in render(traces["projection"], "text")


def test_texts_are_complete_in_both_languages():
    assert set(texts.EN) == set(texts.KO)
    for key in texts.EN:
        assert texts.placeholders(texts.EN[key]) == texts.placeholders(texts.KO[key]), key
        assert texts.EN[key].strip() and texts.KO[key].strip()
    korean = [k for k, v in texts.KO.items() if HANGUL.search(v)]
    assert len(korean) > 0.8 * len(texts.KO)


def test_every_text_key_used_exists():
    import pathlib

    import qkv.explain.document as document

    source = pathlib.Path(document.__file__).read_text(encoding="utf-8")
    used = set(re.findall(r'ctx\.t\("([^"{]+)"', source))
    assert used and used <= set(texts.EN), used - set(texts.EN)


def test_number_formatting():
    assert fmt(0.125, 2) == "0.13" and fmt(-0.125, 2) == "-0.13"
    assert fmt(1e-43, 4) == "1.0e-43" and fmt(0.0, 4) == "0.0000" and fmt(-0.0, 2) == "0.00"
    assert fmt(-0.00001, 4) == "-1.0e-05" and fmt(-0.00004, 4) == "-4.0e-05" and fmt(0.00005, 4) == "0.0001"
    assert fmt(float("-inf"), 2) == "-∞" and fmt(2.5, 0) == "3"
    assert FORMATS == ("text", "markdown", "html", "json")


# ------------------------------------------------------------------ long matrices (a real model's head)
def one_head_trace(n_tokens: int, d_model: int, *, query: int, head: int = 3, layer: int = 2) -> qkv.Trace:
    """One head of a model-sized layer, recorded as `qkv.models` records it (meta head is a label)."""
    tokens = [f"w{i}" for i in range(n_tokens)]
    trace = qkv.Trace(f"model: layer {layer}, head {head}",
                      {"kind": "model", "model": "toy", "tokens": tokens, "n_layers": 6, "n_heads": 12,
                       "layer": layer, "head": head, "query": query})
    mha = qkv.MultiHeadAttention.random(d_model, n_heads=1, seed=4)
    mha(np.random.default_rng(4).standard_normal((n_tokens, d_model)), record=trace)
    return trace


def test_shown_indices_are_numpy_like():
    from qkv.explain.document import shown

    assert shown(9, 9) == list(range(9)) and shown(384, None) == list(range(384))
    assert shown(10, 9) == [0, 1, 2, 3, None, 6, 7, 8, 9]
    assert shown(20, 9, keep=[10]) == [0, 1, 2, 3, None, 10, None, 16, 17, 18, 19]
    assert shown(20, 9, keep=[4, 15]) == list(range(5)) + [None] + list(range(15, 20))


def test_long_matrices_are_elided_with_the_full_shape_stated():
    t = one_head_trace(20, 48, query=10)
    text = render(t, "text", digits=3)
    assert "X  (20 × 48; 9 of 20 rows shown, 8 of 48 columns shown)" in text
    assert "W_Q  (48 × 48; 8 of 48 rows shown, 8 of 48 columns shown)" in text
    assert "⋮" in text and "⋱" in text and "…" in text
    assert "10 w10 ◀" in text                       # the followed query's row is kept (with its position)
    x = t["x"].value
    assert fmt(x[0, 0], 3) in text and fmt(x[-1, -1], 3) in text
    first_row = next(line for line in text.splitlines() if line.strip().startswith("0 w0 "))   # X's first row
    assert first_row.split()[2:] == [fmt(v, 3) for v in x[0, :4]] + ["…"] + [fmt(v, 3) for v in x[0, -4:]]
    assert len(text.splitlines()) < 300
    # the followed query's row of Q (48 values > 32) is elided; its weights row (20 keys) is complete
    q_line = next(line for line in text.splitlines() if "q_w10 = x_w10" in line)
    assert q_line.count("…") == 2
    # key, score, weight, ‖w·v‖, share
    softmax_rows = [line for line in text.splitlines()
                    if re.match(r"^\s*w\d+\s+-?\d+\.\d+\s+\d\.\d+\s+\S+\s+\S+\s*$", line)]
    assert len(softmax_rows) == 20
    assert "layer 2, head 3 of 0–11" in text          # the intro names the model's head (meta head is a label)


def test_long_matrices_in_markdown_and_html():
    t = one_head_trace(20, 48, query=10)
    markdown = render(t, "markdown", digits=3)
    assert r"\cdots" in markdown and r"\vdots" in markdown and r"\ddots" in markdown
    assert "9 of 20 rows shown, 8 of 48 columns shown" in markdown
    assert "rows: 0 w0, 1 w1, 2 w2, 3 w3, …, 10 w10, …, 16 w16" in markdown
    assert markdown.count("$$") % 2 == 0
    fragment = derivation_html(t, digits=3)
    assert "<caption>X (20 × 48; 9 of 20 rows shown, 8 of 48 columns shown)</caption>" in fragment
    assert 'class="qkv-gap"' in fragment and "⋱" in fragment
    assert len(fragment) < 60_000


def test_full_shows_every_number_and_json_stays_complete():
    t = one_head_trace(12, 40, query=1)
    full = render(t, "text", digits=3, full=True)
    assert "⋮" not in full and " shown" not in full
    x = t["x"].value
    assert all(fmt(v, 3) in full for v in x[5, ::7])
    assert "⋮" not in derivation_html(t, digits=3, full=True) and r"\ddots" not in render(t, "markdown", full=True)
    doc = json.loads(render(t, "json", digits=3))
    block = next(b for b in doc["blocks"] if b["type"] == "matrix" and b["step"] == "w_q")
    assert block["shape"] == [40, 40] and np.array_equal(np.array(block["values"]), t["w_q"].value)


def test_many_keys_keep_the_strongest_in_the_softmax_table():
    t = one_head_trace(40, 8, query=3)
    row = t["weights"].value[0, 3]
    text = render(t, "text", digits=4)
    table = [line.split()[0] for line in text.splitlines()
             if re.match(r"^\s*w\d+\s+-?\d+\.\d+\s+\d\.\d+\s+\S+\s+\S+\s*$", line)]   # key, score, weight, ‖w·v‖, share
    strongest = {f"w{j}" for j in np.argsort(-row)[:4]}
    assert strongest <= set(table) and len(table) < 40
    assert {"w0", "w1", "w2", "w3", "w36", "w37", "w38", "w39"} <= set(table)


def test_layering_is_one_way_explain_never_imports_viz():
    """The renderers read a Trace one way: qkv.viz reads qkv.explain; qkv.explain (the page included)
    never imports qkv.viz."""
    import subprocess
    import sys

    code = ("import sys, qkv, qkv.examples, qkv.explain; t = qkv.examples.run('self-attention'); "
            "[qkv.explain.render(t, f) for f in qkv.explain.FORMATS]; t._repr_html_(); "
            "print(sorted(m for m in sys.modules if m.startswith('qkv.viz') or m == 'matplotlib'))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_step_name_constants_name_what_is_recorded_with_their_shapes():
    import numpy as np

    import qkv
    import qkv.trace as steps

    trace = qkv.Trace("t")
    mha = qkv.MultiHeadAttention.random(8, n_heads=2, seed=0)
    x = np.random.default_rng(0).standard_normal((5, 8))
    qkv.residual(x, mha(x, causal=True, record=trace), record=trace)
    assert set(trace.names()) <= set(steps.STEPS)
    t, d, h, dk = 5, 8, 2, 4
    expected = {steps.X: (t, d), steps.W_Q: (d, h * dk), steps.Q: (t, h * dk), steps.Q_HEADS: (h, t, dk),
                steps.K_HEADS: (h, t, dk), steps.V_HEADS: (h, t, dk), steps.SCORES: (h, t, t),
                steps.SCALED_SCORES: (h, t, t), steps.WEIGHTS: (h, t, t), steps.OUT: (h, t, dk),
                steps.CONCAT: (t, h * dk), steps.W_O: (h * dk, d), steps.Y: (t, d), steps.RESIDUAL: (t, d)}
    for name, shape in expected.items():
        assert trace[name].shape == shape, name
    assert trace[steps.MASK].shape[-2:] == (t, t)
    assert steps.layer_step(3, steps.WEIGHTS) == "layer 3/weights"
    # RoPE and a score function record their own steps, named in the same table
    from qkv import masks
    from qkv.rope import RoPE

    rotary = qkv.MultiHeadAttention.random(8, n_heads=2, seed=1, rope=RoPE(dk))
    turned = qkv.Trace("rope")
    rotary(x, causal=True, record=turned)
    q_heads, k_heads, v_heads = rotary.project(x)
    qkv.attention(q_heads, k_heads, v_heads, score_mod=masks.soft_cap(5.0), record=turned)
    assert set(turned.names()) <= set(steps.STEPS)
    for name, shape in {steps.ROPE_ANGLES: (t, dk // 2), steps.Q_ROTATED: (h, t, dk), steps.K_ROTATED: (h, t, dk),
                        steps.MODIFIED_SCORES: (h, t, t)}.items():
        assert turned[name].shape == shape, name


# ------------------------------------------------------------------ RoPE, score_mod, the words of a model head
def _blocks(trace, lang="en"):
    return json.loads(render(trace, "json", lang=lang))["blocks"]


def _calc_vector(blocks, symbol):
    """The vector of the calc line that starts with ``symbol`` (its full-precision numbers)."""
    for block in blocks:
        if block["type"] == "calc":
            for line in block["lines"]:
                if line and line[0].get("symbol") == symbol:
                    return np.array([part["vector"] for part in line if "vector" in part][-1], dtype=float)
    raise AssertionError(f"no calc line {symbol!r}")


@pytest.fixture(scope="module")
def llama():
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from model_fixtures import built

    from qkv import models

    return models.load(built("llama-gqa"))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_rope_head_the_printed_q_and_k_give_the_printed_scores(llama, lang):
    """A RoPE head: the q row and the k rows the explanation prints multiply (float64) to the printed scores."""
    trace = llama.trace("the cat sat on the mat", layer=1, head=3, query=4)
    blocks = _blocks(trace, lang)
    q = _calc_vector(blocks, "RoPE(q)")
    (keys,) = [np.array(b["values"], dtype=float) for b in blocks if b["type"] == "matrix" and b["label"] == "RoPE(K)"]
    scores = _calc_vector(blocks, texts.text(lang, "sym.scores"))      # "점수" in Korean
    np.testing.assert_allclose(keys @ q, scores, rtol=1e-5, atol=1e-6)
    # and as printed (4 decimals): the product of the printed numbers is the printed score to their rounding
    def printed(symbol):
        for block in blocks:
            for line in block.get("lines", []):
                if line and line[0].get("symbol") == symbol:
                    return np.array([float(t.replace("−", "-")) for t in [p for p in line if "vector" in p][-1]["text"]])

    (k_text,) = [np.array(b["text"], dtype=float) for b in blocks if b["type"] == "matrix" and b["label"] == "RoPE(K)"]
    q_text, s_text = printed("RoPE(q)"), printed(texts.text(lang, "sym.scores"))
    bound = 0.5e-4 * (np.abs(k_text).sum(1) + np.abs(q_text).sum() + 0.5e-4 * q_text.size) + 0.5e-4
    assert np.all(np.abs(k_text @ q_text - s_text) <= bound), (k_text @ q_text, s_text)
    # the unrotated q and k (printed above as Q and K) do not give these scores: RoPE matters here
    before = _calc_vector(blocks, "q_" + trace.meta["tokens"][4])
    (k_plain,) = [np.array(b["values"], dtype=float) for b in blocks if b["type"] == "matrix" and b["label"] == "K"]
    assert np.abs(k_plain @ before - scores).max() > 1e-2
    text = render(trace, "text", lang=lang)
    assert texts.text(lang, "h.rope") in text and "RoPE(q)" in text
    assert flat(texts.text(lang, "rope.explain", theta=f"{trace.meta['rope_theta']:g}", half=12, dk=24)) in flat(text)


def test_model_head_words_follow_the_trace(llama):
    """A pre-norm Llama head without biases is not described as reading the raw input with biases."""
    words = flat(render(llama.trace("the cat sat", layer=0, head=0), "text"))
    assert flat(texts.text("en", "intro.model.x.normed")) in words and "(no biases)" in words
    assert "each with a bias" not in words and "(and a bias)" not in words
    from qkv import models

    bert = flat(render(models.load("minilm").trace("the cat sat", layer=0, head=0), "text"))
    assert "X is the layer's input." in bert and "each with a bias" in bert


def _alibi_trace(lang_tokens=("a", "b", "c", "d")):
    """A user's trace: MultiHeadAttention's projections, then qkv.attention with ALiBi (a score_mod)."""
    import qkv.masks

    mha = qkv.MultiHeadAttention.random(8, n_heads=2, seed=1)
    x = np.random.default_rng(1).standard_normal((4, 8))
    trace = qkv.Trace("alibi", {"tokens": list(lang_tokens), "query": 3})
    q, k, v = mha.project(x, record=trace)
    qkv.attention(q, k, v, causal=True, score_mod=qkv.masks.alibi(2), record=trace)
    return trace


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_score_mod_step_is_explained_with_its_numbers(lang):
    trace = _alibi_trace()
    blocks = _blocks(trace, lang)
    text = render(trace, "text", lang=lang)
    assert texts.text(lang, "modified.explain", formula=trace["modified_scores"].formula)[:20] in text
    starts = [i for i, b in enumerate(blocks) if b["type"] == "heading" and b["text"].startswith(texts.text(lang, "h.head", h=""))]
    assert len(starts) == 2                                           # head 0, head 1
    shown = [_calc_vector(blocks[i:], "score_mod") for i in starts]
    scaled = trace["scaled_scores"].value[:, 3]                       # (H, Tk) the followed query, q = 3
    slopes = 2.0 ** (-8.0 * np.arange(1, 3) / 2)                      # ALiBi, H = 2: 2^-4, 2^-8
    expected = scaled + slopes[:, None] * (np.arange(4) - 3)[None, :]
    np.testing.assert_allclose(np.array(shown), expected, rtol=1e-12, atol=1e-12)
    # the softmax table's score column is what the softmax read: softmax(shown) = the printed weights
    tables = [b for b in blocks if b["type"] == "table" and b["header"][1] == texts.text(lang, "col.score.final")]
    assert len(tables) == 2
    for h, table in enumerate(tables):
        weights = np.array([row[2]["number"] for row in table["rows"]])
        e = np.exp(expected[h] - expected[h].max())
        np.testing.assert_allclose(weights, e / e.sum(), rtol=1e-9)


# ------------------------------------------------------------------ Korean: what a learner reads first
# Words a Korean explanation of the shipped examples may show in Latin letters beyond the allowlist of
# test_cli_korean (Query, Key, Value, softmax, symbols), and why: the step names of the trace shown as code in
# the shapes and by-hand tables (q_heads, scores, …), the posts' own terms as they write them, and LaTeX.
POST_TERMS = {
    "Core", "Attention", "Concat", "reshape",     # post 000 writes “Core Attention”, “reshape”; Concat(head₁, …)
    "head", "heads", "QK",                         # symbols head_h, Concat(heads), QKᵀ of the paper's formula
    "Is", "All", "You", "Need",                   # the paper's title, named by post 002
    "dec", "enc", "final", "concat",              # subscripts of the posts' symbols: X_dec, M_enc, z_final, z_concat
}
LATEX = re.compile(r"\\[A-Za-z]+(?:\{[a-z]+\})?|\{(?:blue|orange|green|red|purple|teal|gray)\}")


def _korean_foreign(rendered: str, trace) -> list[str]:
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from test_cli_lang_ko import korean_only
    from qkv.trace import STEPS

    tokens = set(trace.meta.get("tokens") or []) | set(trace.meta.get("key_tokens") or [])
    tokens |= set(trace.meta.get("answers") or [])             # the group meeting's answers (“.”, “of”)
    for scene in trace.meta.get("scenes") or []:
        tokens |= set(scene.get("tokens", []))
    allowed = {w for t in tokens for w in re.findall(r"[A-Za-z]+", str(t))} | POST_TERMS
    # a step's name is code only where a table lists the steps (its first column: the shapes and by-hand
    # tables); anywhere else (“scores = […]”) it is a word
    names = "|".join(sorted((re.escape(n) for n in STEPS if "/" not in n), key=len, reverse=True))
    rendered = re.sub(rf"(?m)^(\s*\|?\s*)(?:{names})(?=\s{{2,}}(?!\(\d)|\s*\|)", r"\1", rendered)  # not “mask  (4 × 4)”
    allowed |= {w for key in ("post.000", "post.001", "post.002") for w in re.findall(r"[A-Za-z]+", texts.KO[key])}
    return korean_only(LATEX.sub(" ", rendered), allowed)


@pytest.mark.parametrize("by_hand", [False, True])
@pytest.mark.parametrize("name", ex.names())
def test_korean_explanations_leave_no_english(name, by_hand):
    """Every shipped example, in Korean text and Markdown (its LaTeX commands set aside): no Latin word but
    Query/Key/Value/softmax, symbols, tokens, step names shown as code and the posts' own terms. (Before:
    “scores = […]” and “softmax(scores)·V” in every derivation, “attention” in a model's title.)"""
    trace = ex.run(name, by_hand=by_hand)
    for fmt in ("text", "markdown"):
        rendered = render(trace, fmt, lang="ko", by_hand=by_hand)
        assert _korean_foreign(rendered, trace) == [], (fmt, _korean_foreign(rendered, trace))


def test_korean_check_catches_english():
    trace = ex.run("self-attention")
    assert _korean_foreign("점수 = [1.0]: every row sums to one", trace) == ["every", "one", "row", "sums", "to"]


# 은/는, 이/가, 을/를, 와/과 and (으)로 follow the sound of the word before them: after a value only known when the
# sentence is filled (a token, a number, a name) the right one cannot be chosen, so no Korean text puts one there.
# Particles that do not change (의, 에, 에서, 도, 만, 까지) and the copula 이다 (correct after any word) are fine.
PARTICLE_AFTER_VALUE = re.compile(r"(?<!\})\}(?:(?:은|는|이|가|을|를|와|과|으로|로)(?![가-힣])"
                                  r"|(?:이|가)\s|(?:은|는|을|를|와|과)(?=[\s,.)]))")     # ({{…}}: a literal brace)


def test_no_korean_particle_depends_on_a_value():
    bad = {key: value for key, value in texts.KO.items() if PARTICLE_AFTER_VALUE.search(value)}
    assert bad == {}, bad
    assert PARTICLE_AFTER_VALUE.search("rope_theta {theta}와 배율")                # the sentence it caught
    assert not PARTICLE_AFTER_VALUE.search("{token}의 Query는 {top}에 가장 큰 가중치를 준다. 정확한 값은 {value}이다")


def test_a_user_example_in_korean_leaves_no_english():
    """The shipped user example (examples/my-example.toml: two heads, a causal mask): the mask's matrix and
    its recorded formula were English (“mask”, “0 (may attend) / −∞ (masked)”); its own title is the user's."""
    from pathlib import Path

    from qkv.frontdoor import trace_from_document
    from qkv.spec import read_document

    path = Path(__file__).resolve().parents[1] / "examples" / "my-example.toml"
    trace = trace_from_document(read_document(path), source=str(path), base=path.parent)
    rendered = render(trace, "text", lang="ko")
    assert texts.KO["formula.mask"] in rendered and "may attend" not in rendered
    title = set(re.findall(r"[A-Za-z]+", trace.title))
    assert [w for w in _korean_foreign(rendered, trace) if w not in title] == []


def test_page_lenses_embed_every_pairs_products_up_to_the_limit(monkeypatch):
    """qkv.notebook.page_lenses (the offline page's neuron view): every pair's products q_i·k_i of every head —
    written out here from the recorded q_heads and k_heads — and their sums, the recorded scores; left out, with
    the count said, once the products number more than NEURON_NUMBERS (H·Tq·Tk·Dk: 2·3·3·4 = 72 here)."""
    import qkv.notebook

    trace = ex.run("projection")
    q, k = (np.asarray(trace[name].value, dtype=np.float64) for name in ("q_heads", "k_heads"))
    lenses = qkv.notebook.page_lenses(trace)
    np.testing.assert_array_equal(lenses["neuron"][""]["terms"], q[:, :, None, :] * k[:, None, :, :])
    np.testing.assert_allclose(lenses["neuron"][""]["sums"], trace["scores"].value, rtol=1e-12, atol=1e-12)
    assert "neuron_left_out" not in lenses
    count = q.shape[0] * q.shape[1] * k.shape[1] * q.shape[2]
    assert count == 72
    monkeypatch.setattr(qkv.notebook, "NEURON_NUMBERS", count)
    assert "neuron_left_out" not in qkv.notebook.page_lenses(trace)
    monkeypatch.setattr(qkv.notebook, "NEURON_NUMBERS", count - 1)
    left = qkv.notebook.page_lenses(trace)
    assert left["neuron_left_out"] == count and left["neuron"] == {} and left["neuron_limit"] == count - 1


@pytest.mark.parametrize("name", ex.names())
def test_html_numbers_carry_a_true_minus(traces, name):
    """The page's derivation writes a negative number as the page's matrix and cell views and the figures do,
    "−0.18" (U+2212), not "-0.18"; every number still reads back as a float."""
    shown = re.findall(r'<span class="qkv-n[^"]*"[^>]*>([^<]*)</span>', derivation_html(traces[name]))
    assert shown and not [n for n in shown if "-" in n]
    for number in shown:
        float(number.replace("−", "-").replace("∞", "inf"))
    if name == "self-attention":      # its K has negative entries (k_learning = [−0.18, 1.86] in the post)
        assert any(n.startswith("−") for n in shown)
