"""Figures (matplotlib, Agg) and the page's number packing: formats, non-empty images, 4 and 512 tokens,
thinned labels that never overlap, CJK tokens, and the figure chosen for each kind of trace."""

from __future__ import annotations

import base64
import warnings
import xml.etree.ElementTree as ET
import zlib

import matplotlib

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
    return self_trace(4)


@pytest.fixture(scope="module")
def long():
    return self_trace(512, d_model=16, heads=2)


def png_variance(path) -> float:
    return float(imread(str(path))[..., :3].std())


# ------------------------------------------------------------------ formats
@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_each_format_is_written_and_valid(small, tmp_path, suffix):
    path = viz.save_figure(small, tmp_path / f"figure{suffix}")
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


def test_uppercase_extension_is_accepted(small, tmp_path):
    assert viz.save_figure(small, tmp_path / "FIG.PNG").read_bytes().startswith(b"\x89PNG")


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
def test_four_and_512_tokens_render(n_tokens, small, long, tmp_path):
    trace = small if n_tokens == 4 else long
    path = viz.save_figure(trace, tmp_path / "attention.png")
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
def test_public_functions_return_figures(small, long):
    tokens = small.meta["tokens"]
    weights = small["weights"].value
    figures = [
        viz.heatmap(weights[0], tokens, title="head 0"),
        viz.heatmap(weights[0], tokens, mask=small["mask"].value),
        viz.attention_grid(weights[None], tokens),
        viz.projection_figure(small),
        viz.projection_figure(long),
        viz.query_path(small, 2, head=1),
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
    assert f"{scores[0]:.3f}" in written
    weights = small["weights"].value[0, 1]
    assert f"{weights[1]:.3f}" in written
    assert any("−∞" in text for text in written)      # the causal mask before softmax


def test_projection_figure_colours_columns_by_head(small):
    fig = viz.projection_figure(small)
    labels = {t.get_text() for t in fig.axes[0].texts}
    assert {"Q₁", "Q₂", "K₁", "V₂", "head₁", "head₂"} <= labels
    assert any(label.startswith("reshape") for label in labels)


def test_cjk_tokens_do_not_crash_or_warn(tmp_path):
    trace = qkv.examples.run("cross-attention")          # the decoder token is 私は
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = viz.save_figure(trace, tmp_path / "cross.png")
        viz.save_figure(trace, tmp_path / "cross.svg", lang="ko")
    assert png_variance(path) > 0.05


def test_korean_labels_fall_back_to_english_without_a_cjk_font(small):
    from qkv.viz import _style

    words = _style.words("ko")
    assert words is _style._WORDS["ko" if _style.cjk_font() else "en"]
    with pytest.raises(ValueError, match="lang"):
        _style.words("fr")


@pytest.mark.parametrize("name", qkv.examples.names())
def test_every_shipped_example_has_a_figure(name, tmp_path):
    path = viz.save_figure(qkv.examples.run(name), tmp_path / f"{name}.png")
    assert png_variance(path) > 0.05


def test_figure_for_picks_by_kind_and_steps(small):
    projection = qkv.Trace("p", meta=dict(small.meta, kind="projection"), steps=small.steps)
    assert any(t.get_text() == "Q₁" for t in viz.figure_for(projection).axes[0].texts)
    assert len(viz.figure_for(small).axes) >= 3     # mask | weights (+ colour bar) | path panels
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
