"""Figures (matplotlib, Agg) and the page's number packing: formats, non-empty images, 4 and 512 tokens,
thinned labels that never overlap, CJK tokens, and the figure chosen for each kind of trace."""

from __future__ import annotations

import base64
import re
import warnings
import xml.etree.ElementTree as ET
import zlib

import matplotlib
import matplotlib.text

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.image import imread

import qkv
import qkv.examples
from qkv import viz
from qkv.viz import html as viz_html


def self_trace(n_tokens: int, *, d_model: int = 8, heads: int = 2, causal: bool = True, seed: int = 0) -> qkv.Trace:
    tokens = ["I", "love", "machine", "learning"] if n_tokens == 4 else [f"t{i}" for i in range(n_tokens)]
    trace = qkv.Trace(f"{n_tokens} tokens", meta={"tokens": tokens, "kind": "self-attention", "query": 1})
    mha = qkv.MultiHeadAttention.random(d_model, n_heads=heads, seed=seed)
    x = np.random.default_rng(seed).standard_normal((n_tokens, d_model))
    mha(x, causal=causal, record=trace)
    return trace


def model_trace(layers: int, heads: int, n_tokens: int) -> qkv.Trace:
    trace = qkv.Trace("model", meta={"tokens": [f"w{i}" for i in range(n_tokens)], "kind": "model"})
    rng = np.random.default_rng(1)
    for layer in range(layers):
        logits = 3 * rng.standard_normal((heads, n_tokens, n_tokens))
        weights = np.exp(logits - logits.max(-1, keepdims=True))
        trace(f"layer {layer}/weights", weights / weights.sum(-1, keepdims=True))
    return trace


@pytest.fixture(scope="module")
def small():
    return self_trace(4, d_model=4)         # two heads of width 2: every step drawn, few numbers (fast)


@pytest.fixture(scope="module")
def long():
    return self_trace(512, d_model=16, heads=1)  # one head: the 512 × 512 heatmap and the chain


@pytest.fixture(scope="module")
def small_figures(small):
    """The figures of the small trace that several tests read (built once; tests only read and draw them)."""
    return {"projection": viz.projection_figure(small), "chain": viz.query_path(small, 2, head=1)}


@pytest.fixture(scope="module")
def small_files(small, tmp_path_factory):
    """save_figure(small, …) once per format. The PNG is written under an upper-case name (FIGURE.PNG):
    the same drawing serves the PNG checks, the upper-case extension and the 4-token size (three renders
    of one figure before); lower-case .png is what every other save here writes."""
    folder = tmp_path_factory.mktemp("small")
    return {suffix: viz.save_figure(small, folder / name)
            for suffix, name in ((".png", "FIGURE.PNG"), (".svg", "figure.svg"), (".pdf", "figure.pdf"))}


def png_variance(path) -> float:
    return float(imread(str(path))[..., :3].std())


# ------------------------------------------------------------------ formats
@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_each_format_is_written_and_valid(small_files, suffix):
    path = small_files[suffix]
    data = path.read_bytes()
    assert path.exists() and len(data) > 1000
    if suffix == ".png":
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        assert png_variance(path) > 0.05          # not one flat colour
    elif suffix == ".svg":
        root = ET.fromstring(data)
        assert root.tag.endswith("svg")
        assert len(list(root.iter())) > 100       # it holds drawn elements
    else:
        assert data.startswith(b"%PDF") and data.rstrip().endswith(b"%%EOF")


def test_uppercase_extension_is_accepted(small_files):
    path = small_files[".png"]
    assert path.name == "FIGURE.PNG" and path.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("name", ["figure.jpg", "figure", "figure.png.txt"])
def test_unknown_extension_is_an_input_error_naming_path_and_formats(small, tmp_path, name):
    target = tmp_path / name
    with pytest.raises(qkv.InputError) as caught:
        viz.save_figure(small, target)
    message = str(caught.value)
    assert str(target) in message and ".png" in message and ".svg" in message and ".pdf" in message
    assert not target.exists()


def test_missing_directory_is_an_input_error(small, tmp_path):
    with pytest.raises(qkv.InputError, match="does not exist"):
        viz.save_figure(small, tmp_path / "nowhere" / "figure.png")


# ------------------------------------------------------------------ sizes
@pytest.mark.parametrize("n_tokens", [4, 512])
def test_four_and_512_tokens_render(n_tokens, small_files, long, tmp_path):
    path = small_files[".png"] if n_tokens == 4 else viz.save_figure(long, tmp_path / "attention.png")
    assert png_variance(path) > 0.05


def _tick_boxes(fig: Figure):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = []
    for ax in fig.axes[:1]:            # the heatmap (the colour bar has its own numeric ticks)
        for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
            shown = [t for t in labels if t.get_visible() and t.get_text()]
            boxes.append([t.get_window_extent(renderer) for t in shown])
    return boxes


@pytest.mark.parametrize("n_tokens", [4, 40, 512])
def test_token_labels_are_thinned_and_never_overlap(n_tokens):
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(n_tokens), size=n_tokens)
    fig = viz.heatmap(weights, [f"token{i}" for i in range(n_tokens)])
    for boxes in _tick_boxes(fig):
        assert len(boxes) <= max(n_tokens, 1)
        for a, b in zip(boxes, boxes[1:]):
            assert not a.overlaps(b), "neighbouring tick labels overlap"
    ax = fig.axes[0]
    if n_tokens == 512:
        assert len(ax.get_xticklabels()) <= 80            # thinned
        assert not ax.texts                                # no per-cell numbers on a big matrix
    if n_tokens == 4:
        assert len(ax.texts) == 16                         # every cell's value written


def test_grid_of_layers_and_heads(tmp_path):
    trace = model_trace(layers=2, heads=3, n_tokens=5)
    fig = viz.figure_for(trace)
    assert len([ax for ax in fig.axes if ax.images]) == 6
    big = viz.attention_grid(np.stack([s.value for s in model_trace(2, 3, 512)]), [f"t{i}" for i in range(512)])
    path = viz.write_figure(big, tmp_path / "grid.png")
    assert png_variance(path) > 0.01


# ------------------------------------------------------------------ each figure
def test_public_functions_return_figures(small, long, small_figures):
    tokens = small.meta["tokens"]
    weights = small["weights"].value
    figures = [
        viz.heatmap(weights[0], tokens, title="head 0"),
        viz.heatmap(weights[0], tokens, mask=small["mask"].value),
        viz.attention_grid(weights[None], tokens),
        small_figures["projection"],
        viz.projection_figure(long),
        small_figures["chain"],
        viz.query_path(long, 300),
        viz.mask_figure(small["mask"].value, tokens),
        viz.mask_figure(np.array([[True, True, False, False]] * 4), tokens),
        viz.attention_figure(small),
    ]
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    for fig in figures:
        assert isinstance(fig, Figure)
        FigureCanvasAgg(fig).draw()


def test_mask_is_drawn_as_numbers(small):
    fig = viz.mask_figure(small["mask"].value, small.meta["tokens"])
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts.count("−∞") == 6 and texts.count("0") == 10       # causal 4×4: 6 blocked cells
    padding = viz.mask_figure(np.array([[True, True, True, False]] * 4), small.meta["tokens"])
    assert [t.get_text() for t in padding.axes[0].texts].count("−∞") == 4


def test_query_path_writes_the_recorded_values(small):
    fig = viz.query_path(small, 1, head=0, digits=3)
    written = {t.get_text() for ax in fig.axes for t in ax.texts}
    scores = small["scores"].value[0, 1]
    assert f"{scores[0]:.3f}".replace("-", "−") in written
    weights = small["weights"].value[0, 1]
    assert f"{weights[1]:.3f}".replace("-", "−") in written
    assert any("−∞" in text for text in written)      # the causal mask before softmax


def test_projection_figure_draws_the_whole_layer(small_figures):
    fig = small_figures["projection"]
    labels = {t.get_text() for t in fig.axes[0].texts}
    # heads counted from 0, as --head and Python count them (the head names in the colour legend; the heads'
    # outputs are drawn once, beside their weights, then concatenated into H)
    assert {"Q₀", "Q₁", "K₀", "V₁"} <= labels
    assert {"head 0", "head 1"} <= {t.get_text() for t in fig.legends[0].get_texts()}
    assert any(label.startswith("split into heads") for label in labels)
    assert {"W_Q  (4×4)", "W_K  (4×4)", "W_V  (4×4)", "W_O  (4×4)"} <= labels
    assert {"attention of head 0: softmax(QₕKₕᵀ/√dₕ)", "head 1 = weights·Vₕ"} <= labels
    assert "masked" in labels                                    # the causal mask, in the per-head attention


def test_seed_000_projection_figure_has_every_step(example_figures):
    trace, fig = example_figures["projection", "en"]             # T = 3, d = 8, h = 2; the post's Head 1, Head 2
    labels = {t.get_text() for t in fig.axes[0].texts}
    for wanted in ("X  (3×8)", "W_Q  (8×8)", "Q = X·W_Q  (3×8)", "Q₁", "Q₂", "H  (3×8)", "Y = H·W_O  (3×8)",
                   "R + Y (residual)  (3×8)", "attention of head 2: softmax(QₕKₕᵀ/√dₕ)"):
        assert wanted in labels, wanted
    # the numbers are the recorded ones: a weight of head 1 and an entry of R + Y
    assert f"{trace['weights'].value[1, 2, 0]:.4f}" in labels
    assert f"{trace['residual'].value[0, 1]:.4f}" in labels


def test_cjk_tokens_do_not_crash_or_warn(tmp_path):
    trace = qkv.examples.run("cross-attention")          # the decoder token is 私は
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = viz.save_figure(trace, tmp_path / "cross.png")
        viz.save_figure(trace, tmp_path / "cross.svg", lang="ko")
    assert png_variance(path) > 0.05


HANGUL = re.compile("[\uac00-\ud7a3]")


def korean_figures(small, example_figures):
    """A Korean figure of every kind (tokens in Hangul, kana and a kanji Nanum lacks: 学); the worked
    examples' are the module's (example_figures, built with warnings as errors too)."""
    tokens = ["나는", "私は", "学習", "좋아"]
    weights = small["weights"].value
    heads_trace = qkv.Trace("헤드", meta=dict(small.meta, tokens=tokens), steps=small.steps)
    return {
        "heatmap": viz.heatmap(weights[0], tokens, title="헤드 0", mask=small["mask"].value, lang="ko"),
        "grid": viz.attention_grid(weights[None], tokens, lang="ko"),
        "projection": viz.projection_figure(heads_trace, lang="ko"),
        "chain": viz.query_path(heads_trace, 2, head=1, lang="ko"),
        "mask": viz.mask_figure(small["mask"].value, tokens, lang="ko"),
        "attention": viz.attention_figure(heads_trace, lang="ko"),
        "cross": example_figures["cross-attention", "ko"][1],
        "multi-head": example_figures["multi-head", "ko"][1],
        "scenes": example_figures["group-meeting", "ko"][1],
    }


def test_a_korean_figure_of_every_kind_draws_every_glyph(small, example_figures):
    """matplotlib warns "Glyph … missing from font(s)" for any character it draws as a box: an error here."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figures = korean_figures(small, example_figures)
        for name, fig in figures.items():
            with viz.fonts.context():
                FigureCanvasAgg(fig).draw()
            texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
            assert any(HANGUL.search(t) for t in texts), f"{name}: no Korean label"


def test_korean_words_and_unknown_language(small):
    from qkv.viz import _style

    assert _style.words("ko")["keys"].startswith("Key")                   # the posts' term, in Latin letters
    assert _style.words("ko")("layer_head", l=2, h=5) == "층 2, 헤드 5"
    with pytest.raises(ValueError, match="lang"):
        _style.words("fr")


def test_fonts_are_registered_without_changing_rcparams():
    import importlib

    before = dict(matplotlib.rcParams)
    importlib.reload(viz.fonts)
    families = viz.fonts.families()
    assert families[0] == "DejaVu Sans" and len(families) >= 2           # a CJK font after DejaVu Sans
    assert "NanumGothic" in families                                      # koreanize-matplotlib's font file
    assert dict(matplotlib.rcParams) == before


def test_no_cjk_font_is_one_warning(monkeypatch):
    import importlib

    fonts = importlib.reload(viz.fonts)
    monkeypatch.setattr(fonts, "cjk_families", lambda: ())
    with pytest.warns(fonts.NoCJKFontWarning, match="no CJK font") as caught:
        assert fonts.families() == ("DejaVu Sans",)
        fonts.families()                                                  # asked again: no second warning
    assert len(caught) == 1
    importlib.reload(viz.fonts)


def test_svg_text_stays_text(small, tmp_path):
    path = viz.save_figure(qkv.Trace("헤드", meta=dict(small.meta, tokens=["나는", "私は", "학습", "!"]),
                                     steps=small.steps), tmp_path / "figure.svg", lang="ko")
    root = ET.parse(path).getroot()
    texts = ["".join(e.itertext()) for e in root.iter("{http://www.w3.org/2000/svg}text")]
    assert len(texts) > 100                                   # labels and numbers are <text>, not glyph paths
    assert any("私は" in t for t in texts) and any(HANGUL.search(t) for t in texts)
    assert any(t == f"{small['weights'].value[0, 1, 0]:.4f}" for t in texts)


# ------------------------------------------------------------------ labels: counting from 0 everywhere
def test_layer_and_head_figures_name_the_layer_and_head(tmp_path):
    """`qkv inspect … --layer 2 --head 5 --figure`: the figure of that head says layer 2, head 5."""
    import qkv.models

    model = qkv.models.load("minilm")
    trace = model.trace("The cat sat on the mat.", layer=2, head=5)
    fig = viz.figure_for(trace)
    texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
    assert any("layer 2, head 5" in t for t in texts), texts
    assert not any("head 0" in t or "layer 0" in t for t in texts)
    grid = viz.attention_grid(model.attention_weights("The cat sat.")[[2]][:, [5]], layers=[2], heads=[5])
    titles = [ax.get_title() for ax in grid.axes]
    assert "layer 2, head 5" in titles
    both = viz.attention_grid(model.attention_weights("The cat sat.")[[1, 4]][:, [0, 5]], layers=[1, 4], heads=[0, 5])
    assert {ax.get_title() for ax in both.axes} >= {"head 0", "head 5"}
    assert {ax.get_ylabel() for ax in both.axes} >= {"layer 1", "layer 4"}


def test_cross_attention_is_two_sentences(example_figures):
    trace, fig = example_figures["cross-attention", "en"]
    (ax,) = [a for a in fig.axes if a.get_legend() and "line width = weight" in
             [t.get_text() for t in a.get_legend().get_texts()]]
    where = {t.get_text(): t.get_position()[1] for t in ax.texts}
    assert where["私は"] < where["love"]                          # decoder above (y grows downward), encoder below
    weights = trace["weights"].value[0, 0]
    assert {f"{w:.4f}" for w in weights} <= set(where)            # each line carries its weight
    lines = [line.get_linewidth() for line in ax.lines]
    assert np.argmax(lines) == np.argmax(weights)                 # the heaviest line is the largest weight


def test_the_chain_reaches_z(small, small_figures):
    fig = small_figures["chain"]
    written = {t.get_text() for ax in fig.axes for t in ax.texts}
    out = small["out"].value[1, 2]
    assert {f"{x:.4f}" for x in out} <= written                   # z = the recorded output of head 1, query 2
    assert "masked" in written                                      # key 3 is masked for query 2 (causal)


@pytest.mark.parametrize("name", qkv.examples.names())
def test_every_shipped_example_has_a_figure(name, tmp_path):
    path = viz.save_figure(qkv.examples.run(name), tmp_path / f"{name}.png")
    assert png_variance(path) > 0.05


def test_figure_for_picks_by_kind_and_steps(small):
    projection = qkv.Trace("p", meta=dict(small.meta, kind="projection"), steps=small.steps)
    assert any(t.get_text() == "Q₁" for t in viz.figure_for(projection).axes[0].texts)
    assert any(t.get_text() == "Q₁" for t in viz.figure_for(small).axes[0].texts)   # several heads: the layer
    one = qkv.Trace("one", meta={"tokens": small.meta["tokens"], "kind": "self-attention", "query": 1})
    qkv.attention(*(np.random.default_rng(1).standard_normal((3, 4, 5))), causal=True, record=one)
    assert len(viz.figure_for(one).axes) >= 4     # mask | weights + legend | chain panels
    with pytest.raises(ValueError, match="nothing to draw"):
        viz.figure_for(qkv.Trace("empty"))


def test_bad_shapes_name_the_argument():
    with pytest.raises(ValueError, match="weights has shape"):
        viz.heatmap(np.ones(3))
    with pytest.raises(ValueError, match="weights has shape"):
        viz.attention_grid(np.ones((2, 2)))


# ------------------------------------------------------------------ the page's packing
def _unpack(packed: dict) -> np.ndarray:
    raw = base64.b64decode(packed["data"])
    if packed["z"]:
        raw = zlib.decompress(raw)
    size = {"u8": 1, "i16": 2, "i32": 4, "f64": 8}[packed["type"]]
    if packed["shuffle"]:
        raw = np.frombuffer(raw, np.uint8).reshape(size, -1).T.tobytes()
    dtype = {"u8": "u1", "i16": "<i2", "i32": "<i4", "f64": "<f8"}[packed["type"]]
    return np.frombuffer(raw, dtype).reshape(packed["shape"])


@pytest.mark.parametrize("digits", [2, 4, 6])
def test_pack_stores_exactly_the_digits_shown(digits):
    rng = np.random.default_rng(3)
    values = rng.dirichlet(np.ones(300), size=(2, 300))         # (2, 300, 300) weights, compressed
    packed = viz_html.pack(values, digits)
    assert packed["z"] == 1 and packed["exp"] == digits
    ints = _unpack(packed)
    assert np.array_equal(ints, np.rint(values * 10 ** digits))
    assert np.max(np.abs(ints / 10 ** digits - values)) <= 0.5 * 10 ** -digits + 1e-15


def test_pack_keeps_infinities_and_wide_values():
    values = np.array([[[0.0, -np.inf, 1234.5678, -7.25]]])
    packed = viz_html.pack(values, 4)
    ints = _unpack(packed)
    assert packed["type"] == "i32" and ints[0, 0, 1] == np.iinfo(np.int32).min and ints[0, 0, 2] == 12345678
    assert viz_html.pack(np.array([[[True, False]]]), 4)["type"] == "u8"


def test_page_is_self_contained(small):
    page = viz_html.trace_html(small)
    assert page.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in page
    lowered = page.lower()
    for outside in ("http://", "https://", "//cdn", "@import", "src=\"http", "url(http"):
        assert outside not in lowered
    fragment = viz_html.trace_html(small, inline=True)
    assert "<html" not in fragment and "<head" not in fragment and 'class="qkv-view"' in fragment
    assert small._repr_html_().count('class="qkv-view"') == 1


def test_page_escapes_tokens():
    trace = qkv.Trace("x", meta={"tokens": ["</script><b>", "&amp;"]})
    qkv.attention(np.eye(2), np.eye(2), np.eye(2), record=trace)
    page = viz_html.trace_html(trace)
    assert "</script><b>" not in page


def test_attention_page_checks_shapes():
    with pytest.raises(ValueError, match="weights has shape"):
        viz_html.attention_page(np.ones((4, 4)), ["a"] * 4)
    with pytest.raises(ValueError, match="layer_names"):
        viz_html.attention_page(np.full((2, 1, 2, 2), 0.5), layer_names=["only one"])


# ------------------------------------------------------------------ one head of a model: meta head is a label
def one_head_of_a_model(head: int = 3, layer: int = 2) -> qkv.Trace:
    """As `qkv.models` records one head: the steps hold a single head; meta head/layer name it."""
    trace = qkv.Trace(f"toy: layer {layer}, head {head}",
                      meta={"kind": "model", "tokens": [f"w{i}" for i in range(6)], "query": 1,
                            "layer": layer, "head": head, "n_heads": 12})
    mha = qkv.MultiHeadAttention.random(8, n_heads=1, seed=2)
    mha(np.random.default_rng(2).standard_normal((6, 8)), record=trace)
    return trace


def _texts(fig: Figure) -> list[str]:
    found = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    return [t for t in found if t]


def test_a_one_head_trace_names_its_head_and_draws(tmp_path):
    trace = one_head_of_a_model(head=3)
    path = viz.save_figure(trace, tmp_path / "head.png")           # used to fail: head 3 of a 1-head axis
    assert png_variance(path) > 0.01
    fig = viz.figure_for(trace)
    titles = _texts(fig)
    assert any(t.endswith("layer 2, head 3") and t.startswith("attention") for t in titles), titles
    assert any("query 1 “w1” — layer 2, head 3" in t for t in titles), titles
    path_fig = viz.query_path(trace)
    assert any("layer 2, head 3" in t for t in _texts(path_fig))
    with pytest.raises(ValueError, match=r"head must be in \[0, 1\)"):
        viz.query_path(trace, head=3)                               # an explicit index is still checked


def test_several_recorded_heads_are_still_indexed_by_meta_head(small):
    trace = qkv.Trace(small.title, {**small.meta, "head": 1}, small.steps)
    titles = _texts(viz.attention_figure(trace))
    assert any(t.endswith("head 1") for t in titles) and not any("layer" in t for t in titles)
    assert viz_html._payload(trace, 4)["head"] == 1


def test_the_page_of_a_one_head_trace_labels_the_head():
    payload = viz_html._payload(one_head_of_a_model(head=3), 4)
    assert payload["head"] == 0 and payload["parts"][0]["heads"] == 1
    assert payload["headName"] == {"layer": 2, "head": 3}
    page = viz_html.trace_html(one_head_of_a_model(head=3))
    assert '"headName":{"layer":2,"head":3}' in page


def test_one_weight_scale_for_figures_and_page():
    """The page shades a weight with qkv.explain.style.weight_shade; the figures with matplotlib's Blues
    through the same √ norm: the same colour, within rounding, everywhere."""
    from qkv.explain import style
    from qkv.viz.figures import _cmap, _norm

    for weight in (0.0, 0.002, 0.01, 0.1, 0.25, 0.5, 0.9, 1.0):
        figure = np.array(_cmap()(_norm()(weight))[:3]) * 255
        assert np.abs(figure - np.array(style.weight_shade(weight))).max() <= 1.5, weight


def test_masked_cells_are_hatched_where_they_are(small_figures):
    """Every "masked" cell label of the per-head attention lies inside a hatched rectangle, and only those."""
    from matplotlib.collections import PatchCollection

    fig = small_figures["projection"]
    ax = fig.axes[0]
    hatched = [c for c in ax.collections if isinstance(c, PatchCollection) and c.get_hatch()]
    boxes = [path.get_extents() for c in hatched for path in c.get_paths()]
    centres = [t.get_position() for t in ax.texts if t.get_text() == "masked"]
    assert len(centres) == 2 * 6 == len(boxes)                       # 2 heads × 6 causal cells of 4 × 4
    for x, y in centres:
        assert sum(b.x0 < x < b.x1 and b.y0 < y < b.y1 for b in boxes) == 1


def test_blocks_of_numbers_never_overlap(small_figures, example_figures):
    """The chain's value rows (and every figure built of blocks) place each matrix apart from the others."""
    for fig in (small_figures["chain"], example_figures["cross-attention", "en"][1], small_figures["projection"]):
        for ax in fig.axes:
            boxes = [image.get_extent() for image in ax.images]   # (left, right, bottom, top), y downward
            for a in range(len(boxes)):
                for b in range(a + 1, len(boxes)):
                    (l1, r1, b1, t1), (l2, r2, b2, t2) = boxes[a], boxes[b]
                    apart = r1 <= l2 or r2 <= l1 or max(b1, t1) <= min(b2, t2) or max(b2, t2) <= min(b1, t1)
                    assert apart, (boxes[a], boxes[b])


@pytest.mark.parametrize("to, lang", [("ja", "en"), ("ko", "ko")])
def test_translator_alignment_figure_draws_every_glyph_and_fits(to, lang):
    """`qkv translate … --figure`: 私は / 나는 draw (no missing glyph), and every text lies inside the figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from qkv.translator import explain, model

    translation = model.load().translate("I love you", to)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = explain.alignment_figure(translation, lang=lang)
        with viz.fonts.context():
            canvas = FigureCanvasAgg(fig)
            canvas.draw()
            renderer = canvas.get_renderer()
            box = fig.bbox
            for text in fig.findobj(matplotlib.text.Text):
                if not text.get_text() or not text.get_visible():
                    continue
                extent = text.get_window_extent(renderer)
                assert box.x0 - 1 <= extent.x0 and extent.x1 <= box.x1 + 1, text.get_text()
                assert box.y0 - 1 <= extent.y0 and extent.y1 <= box.y1 + 1, text.get_text()
    written = " ".join(t.get_text() for t in fig.findobj(matplotlib.text.Text))
    assert all(word in written for word in translation.target)


def test_chain_draws_the_score_mod_step_with_its_numbers():
    """ALiBi (a score_mod): the chain has a score_mod panel whose bars are the recorded modified scores,
    each the scaled score plus the head's slope × (kv − q) (float64 reference)."""
    import qkv.masks

    mha = qkv.MultiHeadAttention.random(8, n_heads=2, seed=1)
    trace = qkv.Trace("alibi", {"tokens": list("abcd"), "query": 3})
    q, k, v = mha.project(np.random.default_rng(1).standard_normal((4, 8)), record=trace)
    qkv.attention(q, k, v, causal=True, score_mod=qkv.masks.alibi(2), record=trace)
    fig = viz.query_path(trace, 3, head=1)
    (panel,) = [ax for ax in fig.axes if ax.get_ylabel() == "score_mod"]
    heights = [bar.get_height() for bar in panel.patches]
    expected = trace["scaled_scores"].value[1, 3] + 2.0 ** -8 * (np.arange(4) - 3)      # slope of head 1 of 2
    np.testing.assert_allclose(heights, expected, rtol=1e-12)
    korean = viz.query_path(trace, 3, head=1, lang="ko")
    assert any(ax.get_ylabel() == "score_mod" for ax in korean.axes)


# ------------------------------------------------------------------ issue 19: the worked examples' figures
# Every drawn equation is parsed and recomputed (Decimal, halves away from zero, as a person rounds);
# the pictures start at X; no canvas panel is mostly blank; Korean figures hold no English word.
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation   # noqa: E402

_NUMERIC = re.compile(r"^[\d\s.×/+()\[\],−√e-]+$")


def _value(token: str) -> Decimal:
    token = token.strip().strip("()").replace("−", "-")
    if token.startswith("√"):
        return Decimal(token[1:]).sqrt()
    return Decimal(token)


def _evaluate(expression: str) -> Decimal:
    """a × b + c × d …, a / b, t + t + …: the expressions the figures write (no precedence beyond × / before +)."""
    total = Decimal(0)
    for term in expression.split(" + "):
        parts = re.split(r" ([×/]) ", term.strip())
        value = _value(parts[0])
        for op, operand in zip(parts[1::2], parts[2::2]):
            value = value * _value(operand) if op == "×" else value / _value(operand)
        total += value
    return total


def _holds(expression: str, printed: str) -> bool:
    """Does ``expression``, computed exactly and rounded to ``printed``'s decimals, print as ``printed``?"""
    printed = printed.strip().replace("−", "-")
    exact = _evaluate(expression)
    if "e" in printed:                                   # "1.0e-43": compared as written
        return f"{float(exact):.1e}" == printed
    decimals = len(printed.partition(".")[2])
    return str(exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)) == printed or \
        (Decimal(printed) == 0 and exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP) == 0)


def printed_equations(texts: list[str]) -> list[tuple[str, str]]:
    """(expression, printed result) of every numeric equation "… = expression = result" in the texts;
    a bracketed row "[e₁, e₂] = [r₁, r₂]" gives one pair per entry."""
    found = []
    for text in texts:
        for line in text.split("\n"):
            sides = re.split(r" [=≈] ", line)
            if len(sides) < 2:
                continue
            expression, result = sides[-2].strip(), sides[-1].strip()
            if not (_NUMERIC.match(expression) and _NUMERIC.match(result)) or not re.search(r"[×/+]", expression):
                continue
            if expression.startswith("["):
                pairs = zip(expression.strip("[]").split(", "), result.strip("[]").split(", "))
                found += [(e, r) for e, r in pairs]
            else:
                found.append((expression, result))
    return found


def figure_texts(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


@pytest.fixture(scope="module")
def example_figures():
    """(trace, figure_for(trace, lang)) of each worked example in en and ko, built once for the module
    with warnings as errors (the Korean glyph test draws the ko ones; several tests read them)."""
    figures = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in ("self-attention", "cross-attention", "multi-head", "group-meeting", "projection"):
            trace = qkv.examples.run(name)
            for lang in ("en", "ko"):
                figures[name, lang] = (trace, viz.figure_for(trace, lang=lang))
    return figures


def test_every_drawn_equation_is_true_as_printed(example_figures):
    """Each "a × b + … = r", "a / √2 = r", "t + … = r" line of the worked examples' figures (en and ko),
    recomputed from its printed operands, prints as its printed result; none needs "≈"."""
    counts = {}
    for (name, lang), (_, fig) in example_figures.items():
        texts = figure_texts(fig)
        equations = printed_equations(texts)
        counts[name, lang] = len(equations)
        for expression, printed in equations:
            assert _holds(expression, printed), (name, lang, expression, printed)
        assert not any(" ≈ " in t for t in texts), (name, lang)
    # self: 2 + 2 (q, k from X) + 4 (q·k) + 4 (÷√2) + 1 (Σ) + 4 (w) = 17; cross the same;
    # multi-head: 3 (z_final); group meeting: 1 + 4 and 1 + 8 (Σ and w of each meeting)
    assert counts["self-attention", "en"] >= 17 and counts["cross-attention", "en"] >= 17
    assert counts["multi-head", "en"] >= 3 and counts["group-meeting", "en"] >= 14
    assert counts["self-attention", "ko"] == counts["self-attention", "en"]


def test_the_self_attention_figure_traces_1_1580_to_x_and_w(example_figures):
    """Post 001's numbers: q_love = [0.92, 1.24] = x_love · W_Q, k_I = [0.45, 0.60], and the raw score
    0.92 × 0.45 + 1.24 × 0.60 = 1.158, drawn as a sum of products (the post's values, its precision)."""
    trace, fig = example_figures["self-attention", "en"]
    texts = figure_texts(fig)
    assert "q_love · k_I = 0.92 × 0.45 + 1.24 × 0.60 = 1.1580" in texts
    assert any(t.startswith("q_love = X[love] · W_Q") for t in texts)
    assert any(t.strip().startswith("= [0.8 × ") and t.strip().endswith("= [0.92, 1.24]") for t in texts)
    assert any(t.strip().startswith("= [1.0 × ") and t.strip().endswith("= [0.45, 0.60]") for t in texts)
    for label in ("X  (4×2)", "W_Q  (2×2)", "W_K  (2×2)", "W_V  (2×3)", "Q = X·W_Q  (4×2)", "V = X·W_V  (4×3)"):
        assert label in texts, label
    # the softmax with its denominator: Σ of the recorded e^(s − m) and each weight as a quotient
    assert any(t.startswith("Σ = ") for t in texts) and any(t.startswith("w_learning = ") for t in texts)
    assert any("÷" in t or "√2" in t for t in texts)


def _value_panel_sums(fig: Figure):
    """In the value-rows panel (the axes that writes "Σ ="): for each z cell, the scaled cells above it
    (same x); for each row, its weight, value cells and scaled cells by x order."""
    (ax,) = [a for a in fig.axes if any(t.get_text() in ("Σ =", "Σ ≈") for t in a.texts)]
    numbers = []
    for t in ax.texts:
        try:
            numbers.append((round(t.get_position()[0], 3), t.get_position()[1], t.get_text(),
                            _value(t.get_text())))
        except (InvalidOperation, ValueError):
            continue
    sigma_y = [t.get_position()[1] for t in ax.texts if t.get_text().startswith("Σ")][0]
    z_cells = [(x, text) for x, y, text, _ in numbers if abs(y - sigma_y) < 0.3]
    columns = [(text, [v for x2, y2, _, v in numbers if x2 == x and y2 < sigma_y - 0.3]) for x, text in z_cells]
    rows = {}
    for x, y, text, _ in numbers:
        if y < sigma_y - 0.3:
            rows.setdefault(round(y, 2), []).append((x, text))
    return columns, [[text for _, text in sorted(row)] for row in rows.values()]


@pytest.mark.parametrize("name", ["self-attention", "cross-attention"])
def test_the_value_rows_add_up_to_z_as_printed(example_figures, name):
    """The weights × v panel: each scaled cell is its row's printed weight × printed value, and each
    column of them, as printed, adds up to the printed z (the old panel printed 0.186 + 0.178 + 0.408 +
    0.122 under z = 0.893)."""
    trace, fig = example_figures[name, "en"]
    columns, rows = _value_panel_sums(fig)
    assert len(rows) == 4                          # one per key: I, love, machine, learning
    for row in rows:                               # w, v₁ … v_d, then w·v₁ … w·v_d, each as printed
        d = (len(row) - 1) // 2
        weight, values, products = row[0], row[1:1 + d], row[1 + d:]
        assert len(products) == d == 3, row
        for value, product in zip(values, products):
            assert _holds(f"{weight} × {value}", product), (weight, value, product)
    out = trace["out"].value.reshape(-1, trace["out"].value.shape[-1])[trace.meta["query"]]
    assert [Decimal(text) for text, _ in columns] == [Decimal(f"{x:.3f}") for x in out]   # z is the recorded output
    for printed, cells in columns:
        assert len(cells) == 4
        assert _holds(" + ".join(str(c) for c in cells), printed), (printed, cells)


def test_cross_attention_shows_where_q_and_k_v_come_from(example_figures):
    trace, fig = example_figures["cross-attention", "en"]
    texts = figure_texts(fig)
    for label in ("X_dec  (1×2)", "M_enc  (4×2)", "Q = X_DEC·W_Q  (1×2)".replace("X_DEC", "X_dec"),
                  "K = M_enc·W_K  (4×2)", "V = M_enc·W_V  (4×3)"):
        assert label in texts, label
    assert any(t.startswith("decoder → Q") for t in texts) and any(t.startswith("encoder → K, V") for t in texts)
    legends = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert "decoder token: gives the query q" in legends and "line width = weight" in legends
    # the decoder's row and the encoder's rows are the recorded x and memory (the post's 0.800 1.500, 1.020 0.910)
    assert {"0.800", "1.500", "1.020", "0.910"} <= set(texts)


def test_multi_head_numbers_heads_as_the_post(example_figures):
    """Post 001 numbers the heads 1, 2, 3 (z⁽¹⁾ is the self-attention head); the figure follows."""
    trace, fig = example_figures["multi-head", "en"]
    assert trace.meta.get("head_base") == 1
    texts = figure_texts(fig)
    assert {"z⁽¹⁾", "z⁽²⁾", "z⁽³⁾"} <= set(texts) and "z⁽⁰⁾" not in " ".join(texts)
    assert any(t.startswith("z_final[0] = ") for t in texts)
    projection = figure_texts(example_figures["projection", "en"][1])
    assert {"Q₁", "Q₂", "head 1", "head 2"} <= set(projection) and "Q₀" not in projection


def test_group_meeting_figure_is_the_posts(example_figures):
    """No ÷√d_k step (the post does not scale its meetings); meetings named by their sentence and
    "lot's question", no internal ids; the two notations drawn with the recorded numbers."""
    trace, fig = example_figures["group-meeting", "en"]
    texts = figure_texts(fig)
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert not any("√" in label for label in labels)
    assert "meeting “I have a lot”: lot's question" in texts
    assert "meeting “Cash or credit card? I have a lot”: lot's question" in texts
    assert not any(re.match(r"^(lot|question)\s*:", t) or re.search(r"\b(lot|question|rows|columns)/", t)
                   for t in texts)
    assert any(t.startswith("row vectors (the paper)") for t in texts)
    assert any(t.startswith("column vectors (3Blue1Brown)") for t in texts)
    rows_w, cols_out = trace["rows/weights"].value, trace["columns/out"].value
    assert f"{rows_w[1, 3]:.4f}" in texts and f"{cols_out[2, 0]:.3f}" in texts


def test_negative_bar_labels_keep_their_minus_sign():
    """13 keys (labels turned upright 90°) with large negative scores: every label, minus sign first,
    lies inside its panel (the old chain cut "−14.3105" at the panel's edge)."""
    scores = np.array([21.1, 2.1, 9.8, 0.16, -5.7, -1.55, 1.09, -5.5, -4.95, -14.3105, -3.05, -7.8, -4.25])
    trace = qkv.Trace("negative", meta={"tokens": ["q"], "key_tokens": [f"k{j}" for j in range(13)], "query": 0})
    qkv.attention(np.ones((1, 1)), scores[:, None], np.ones((13, 1)), record=trace)
    fig = viz.query_path(trace)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    negative = 0
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        for label in ax.texts:
            if label.get_text().startswith("−"):
                negative += 1
                extent = label.get_window_extent(renderer)
                assert box.y0 <= extent.y0 and extent.y1 <= box.y1, label.get_text()
    assert negative >= 8                           # the eight negative scores (the softmax panel has none)
    assert "−14.3105" in figure_texts(fig)


@pytest.mark.parametrize("n_tokens", [4, 20])
def test_a_one_letter_token_stays_upright(n_tokens):
    """"I" among long tokens: its column label is "I", drawn upright (turned 45° or 90° it read as "/" or "–")."""
    tokens = ["I", "love", "machine", "learning"] if n_tokens == 4 else ["I"] + [f"longtoken{i}" for i in range(19)]
    weights = np.full((n_tokens, n_tokens), 1.0 / n_tokens)
    fig = viz.heatmap(weights, tokens)
    (label,) = [t for t in fig.axes[0].get_xticklabels() if t.get_text() == "I"]
    assert label.get_rotation() == 0
    assert any(t.get_rotation() != 0 for t in fig.axes[0].get_xticklabels())    # the long ones do turn


def _inked_share(fig: Figure, ax, pixels: np.ndarray, dpi: int) -> float:
    """The share of half-inch tiles of ``ax`` (inside its edge) that hold any non-white pixel."""
    box = ax.get_window_extent()
    height = pixels.shape[0]
    crop = pixels[height - int(box.y1) + 3: height - int(box.y0) - 3, int(box.x0) + 3: int(box.x1) - 3]
    ink = crop.min(axis=-1) < 235
    size = dpi / 2
    rows = np.array_split(np.arange(crop.shape[0]), max(1, round(crop.shape[0] / size)))
    cols = np.array_split(np.arange(crop.shape[1]), max(1, round(crop.shape[1] / size)))
    return sum(bool(ink[np.ix_(r, c)].any()) for r in rows for c in cols) / (len(rows) * len(cols))


def test_no_drawing_panel_is_mostly_blank(example_figures):
    """Each panel drawn as a picture (axis off: matrices, sentences, arithmetic) has ink in at least half of
    its half-inch tiles (the old cross-attention sentences panel had 36 %, the multi-head figure 26 %)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    for (name, lang), (_, fig) in example_figures.items():
        if lang != "en":
            continue
        fig.set_dpi(50)
        canvas = FigureCanvasAgg(fig)
        with viz.fonts.context():
            canvas.draw()
        pixels = np.asarray(canvas.buffer_rgba())[..., :3].astype(int)
        drawings = [ax for ax in fig.axes if ax.get_visible() and not ax.axison and ax.get_label() != "<colorbar>"]
        assert drawings, name
        for ax in drawings:
            share = _inked_share(fig, ax, pixels, 50)
            assert share >= 0.5, (name, [t.get_text()[:30] for t in ax.texts[:2]], share)


# Latin words a Korean figure may show: the posts' own terms (Query, Key, Value, softmax, the titles'
# Self-attention …, as the Korean post writes them), function names in formulas, symbol names (X_dec, z_final,
# z_concat) and 3Blue1Brown; tests/test_viz_ko.py reads every figure kind the same way.
_ALLOWED_LATIN = {"Query", "Key", "Value", "softmax", "Self", "Cross", "Multi", "attention", "head", "projection",
                  "Concat", "exp", "max", "qkv", "dec", "enc", "final", "concat", "Blue", "Brown"}   # z_concat: post 001


def test_korean_figures_hold_no_english_words(example_figures):
    for (name, lang), (trace, fig) in example_figures.items():
        if lang != "ko":
            continue
        tokens = set(trace.meta.get("tokens") or []) | set(trace.meta.get("key_tokens") or [])
        for scene in trace.meta.get("scenes", []):
            tokens |= set(scene["tokens"])
        tokens |= set(trace.meta.get("answers", []))
        words = {w for t in figure_texts(fig) for w in re.findall(r"[A-Za-z]{2,}", t)
                 if not (w.isupper() and len(w) <= 3)}                  # matrix symbols: QK, KQ
        allowed = _ALLOWED_LATIN | {w for t in tokens for w in re.findall(r"[A-Za-z]{2,}", t)}
        assert words <= allowed, (name, sorted(words - allowed))
        assert any(HANGUL.search(t) for t in figure_texts(fig)), name


def test_translator_rows_name_the_input_and_the_word_generated():
    """Row t's query is the decoder's state for its input, the token before word t (the recorded decoder
    inputs of `cross_attention_trace`); the figure labels each row "input → generated word"."""
    from qkv.translator import explain, model

    translator = model.load()
    translation = translator.translate("I love you", "ja")
    inputs = explain.cross_attention_trace(translator, translation).meta["tokens"]
    fig = explain.alignment_figure(translation)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == [f"{before} → {word}" for before, word in zip(inputs, translation.target)]
    assert any("the token before" in t for t in figure_texts(fig))


def test_heads_figure_speaks_korean_and_keeps_i_upright():
    """`qkv heads --figure` in Korean: score names as the table prints them, no English label; the
    rollout's column "I" upright."""
    from qkv.viz.heads import heads_figure

    names = ["entropy", "first_token", "previous_token", "self", "duplicate_token", "induction"]
    scores = {name: np.full((2, 3), 0.5) for name in names}
    tokens = ["I", "love", "machine", "learning"]
    fig = heads_figure(scores, np.eye(4), tokens, lang="ko")
    words = {w for t in figure_texts(fig) for w in re.findall(r"[A-Za-z]{2,}", t)}
    assert words <= {"love", "machine", "learning"}, words
    assert {"첫 토큰", "인덕션"} <= {ax.get_title() for ax in fig.axes}
    (label,) = [t for ax in fig.axes for t in ax.get_xticklabels() if t.get_text() == "I"]
    assert label.get_rotation() == 0


def test_the_scaling_panel_says_what_was_done():
    """÷√d_k only for the default scale; a temperature (scale=0.3) is "× scale"; no scaling, no panel."""
    q, k, v = np.random.default_rng(0).standard_normal((3, 4, 2))
    labels = {}
    for name, scale in (("default", None), ("temperature", 0.3), ("none", 1.0)):
        trace = qkv.Trace(name, meta={"tokens": list("abcd"), "query": 1})
        qkv.attention(q, k, v, scale=scale, record=trace)
        labels[name] = [ax.get_ylabel() for ax in viz.query_path(trace).axes   # the steps' panels, not ‖wⱼ·vⱼ‖'s
                        if ax.get_ylabel() and not ax.get_ylabel().startswith("‖")]
    assert labels["default"][1].startswith("÷ √d_k")      # the notation of every other label
    assert labels["temperature"][1].startswith("× scale") and not any("√" in x for x in labels["temperature"])
    assert len(labels["none"]) == 2 and not any("√" in x for x in labels["none"])


def test_heads_figure_in_korean_draws_hangul_with_a_cjk_font():
    from qkv.viz import fonts
    from qkv.viz.heads import heads_figure

    rng = np.random.default_rng(0)
    scores = {"entropy": rng.random((2, 3)), "first_token": rng.random((2, 3))}
    figure = heads_figure(scores, rng.random((4, 4)), ["a", "b", "c", "d"], title="제목", lang="ko")
    hangul = [t for t in figure.findobj(lambda a: hasattr(a, "get_text")) if re.search("[가-힣]", t.get_text())]
    assert hangul
    cjk = set(fonts.cjk_families())
    assert cjk                  # the set-up installs NanumGothic (koreanize-matplotlib) and Noto Sans CJK
    for text in hangul:        # matplotlib falls back along the family list glyph by glyph: a CJK family is in it
        assert cjk & set(text.get_fontfamily()), (text.get_text(), text.get_fontfamily())


def test_a_models_figure_is_titled_in_the_figures_language():
    """A model's head (and a whole model's grid) drawn with lang="ko": the title is the explanation's Korean
    one (texts title.model.*: "toy: 층 2, 헤드 3"), never the English title the model recorded; no English
    word is left but the allowed terms, the tokens and the model's name."""
    from qkv.explain import texts as words

    head = one_head_of_a_model(head=3)
    head.meta["model"] = "toy"
    whole = qkv.Trace("toy: attention weights of every layer and head",
                      meta={"kind": "model", "model": "toy", "tokens": [f"w{i}" for i in range(5)], "n_heads": 2})
    x = np.random.default_rng(4).standard_normal((5, 8))
    for layer in range(2):
        qkv.MultiHeadAttention.random(8, n_heads=2, seed=layer)(x, record=whole.scoped(f"layer {layer}"))
    for trace, key, values in ((head, "title.model.head", {"layer": 2, "head": 3}),
                               (whole, "title.model.all", {})):
        for lang in ("en", "ko"):
            found = figure_texts(viz.figure_for(trace, lang=lang))
            want = words.text(lang, key, model="toy", **values)
            assert any(want in t for t in found), (lang, want, found)
            if lang == "ko":
                assert not any(trace.title in t for t in found), found
                english = {w for t in found for w in re.findall(r"[A-Za-z]{2,}", t) if not (w.isupper() and len(w) <= 3)}
                assert english <= _ALLOWED_LATIN | {"toy"}, sorted(english - _ALLOWED_LATIN)


def test_a_grid_names_each_panel_once():
    """`--layer 2 --head all`: "head h" over each of the 12 panels and "layer 2" once at the row's start (twelve
    "layer 2, head h" titles squeezed the panels); `--layer all --head 3`: each panel "layer l, head 3"."""
    rng = np.random.default_rng(5)
    weights = rng.dirichlet(np.ones(6), size=(6, 12, 6))                       # (L, H, T, T), rows sum to 1
    one_layer = viz.attention_grid(weights[[2]], layers=[2])
    assert [ax.get_title() for ax in one_layer.axes if ax.get_title()] == [f"head {h}" for h in range(12)]
    assert [ax.get_ylabel() for ax in one_layer.axes if ax.images and ax.get_ylabel()] == ["layer 2"]  # not the legend's
    one_head = viz.attention_grid(weights[:, [3]], heads=[3], lang="ko")
    assert [ax.get_title() for ax in one_head.axes if ax.get_title()] == [f"층 {l}, 헤드 3" for l in range(6)]
    assert not any(ax.get_ylabel() for ax in one_head.axes if ax.images)


def _imshow_bytes(image: np.ndarray, extent) -> np.ndarray:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure(figsize=(3, 2), dpi=100)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    ax.imshow(image, extent=extent, interpolation="nearest")
    ax.set_xlim(0, 10)
    ax.set_ylim(6, 0)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba()).copy()


@pytest.mark.parametrize("extent", [(0.3, 9.6, 5.7, 0.2), (1, 4, 3, 1), (-2, 12, 8, -1)])
def test_a_blocks_image_is_drawn_to_the_bytes_of_its_float64_colours(extent):
    # _drawn_as_bytes hands imshow float32 RGBA in place of float64 RGB: the drawn bytes must be the same,
    # at values on and next to every byte boundary (k/255 ± 1e-9), 0 and 1, at any extent (clipped too)
    from qkv.viz.figures import _drawn_as_bytes

    k = np.arange(256) / 255.0
    values = np.clip(np.concatenate([k, k - 1e-9, k + 1e-9, np.random.default_rng(0).random(256 * 3)]), 0, 1)
    rgb = np.stack([values, values[::-1], np.roll(values, 100)], axis=-1).reshape(32, 48, 3)
    drawn = _imshow_bytes(_drawn_as_bytes(rgb), extent)
    assert np.array_equal(drawn, _imshow_bytes(rgb, extent))
    assert len(np.unique(drawn[..., 0])) > 200          # the image's cells are drawn, not a flat colour
