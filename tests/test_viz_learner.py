"""Pictures a learner can read (issue 29): a figure's numbers print as the text prints them (one digits
rule), long sums are shortened so a model's head is a screen wide, the model grid is laid out without
shared axes, and the projection figure of "Attention의 projection: Q·K·V와 멀티 헤드" is readable at
screen size with each head in its colour, a legend, R + Y drawn from R and Y, and the followed token
outlined. Expected lines come from the text renderer (`qkv.explain.render`), an independent code path."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.text
import numpy as np
import pytest

import qkv
import qkv.examples
import qkv.models
from qkv import viz
from qkv.explain import render


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


def _plain(line: str) -> str:
    """A line as both renderers write it: the figure's typographic minus as '-', spaces squeezed."""
    return re.sub(r"\s+", " ", line.replace("−", "-")).strip()


@pytest.fixture(scope="module")
def minilm_head():
    model = qkv.models.load("minilm")
    return model.trace("I love you", layer=2, head=3, query=1)


def test_a_model_heads_figure_is_a_screen_wide_with_long_sums_shortened(minilm_head):
    # 32-term q·k sums were one line each: the figure was 64 inches (9,667 px) wide
    fig = viz.figure_for(minilm_head, digits=3)
    assert fig.get_size_inches()[0] <= 20.0, fig.get_size_inches()
    sums = [t for t in _texts(fig) if t.startswith("q_")]
    scores = minilm_head["scores"].value[0, 1]
    assert len(sums) == len(scores)
    for line, score in zip(sums, scores):
        assert "29 more products" in line                     # 2 shown, "…", the last: 3 of 32
        assert line.count(" × ") == 3
        assert line.endswith(f"= {score:.3f}".replace("-", "−"))   # the total of all 32, as printed at 3 decimals


def test_a_model_heads_softmax_lines_print_as_the_text_prints_them(minilm_head):
    fig = viz.figure_for(minilm_head, digits=3)
    text = render(minilm_head, "text", digits=3)
    cli = [_plain(l) for l in text.splitlines() if l.strip().startswith(("Σ =", "w_"))]
    drawn = [_plain(t) for t in _texts(fig) if t.startswith(("Σ =", "w_"))]
    assert cli and drawn == cli


def test_multi_head_sums_print_as_the_text_prints_them():
    trace = qkv.examples.run("multi-head")
    fig = viz.figure_for(trace)
    cli = [_plain(l) for l in render(trace, "text").splitlines() if l.strip().startswith("z_final[")]
    drawn = [_plain(t) for t in _texts(fig) if t.startswith("z_final[")]
    assert len(cli) == 3 and drawn == cli                  # was 0.89335 × 0.40 in the figure, 0.8933 in the text


def test_save_figure_takes_the_texts_digits(tmp_path, minilm_head):
    fig = viz.figure_for(minilm_head, digits=2)
    weights = minilm_head["weights"].value[0, 1]
    assert any(t == f"{weights[0]:.2f}" for t in _texts(fig))
    assert viz.save_figure(minilm_head, tmp_path / "h.png", digits=2).stat().st_size > 0


def test_the_model_grid_has_no_shared_axes_and_names_every_panel():
    weights = np.random.default_rng(0).dirichlet(np.ones(9), size=(6, 12, 9))
    fig = viz.attention_grid(weights, [f"t{i}" for i in range(9)], title="six layers")
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 72
    # sharex/sharey joined all 72 panels (seconds of get_siblings at draw time); none is joined now
    assert all(len(ax.get_shared_x_axes().get_siblings(ax)) == 1 for ax in panels)
    assert fig.get_layout_engine() is None
    assert [ax.get_title() for ax in panels[:12]] == [f"head {h}" for h in range(12)]
    assert [ax.get_ylabel() for ax in panels[::12]] == [f"layer {l}" for l in range(6)]
    # panels do not overlap and stay inside the figure
    boxes = [ax.get_position() for ax in panels]
    assert all(0 <= b.x0 and b.x1 <= 1 and 0 <= b.y0 and b.y1 <= 1 for b in boxes)
    assert all(not a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


@pytest.fixture(scope="module")
def projection():
    trace = qkv.examples.run("projection")
    return trace, viz.figure_for(trace)


def test_the_projection_figure_is_readable_at_screen_size(projection):
    _, fig = projection
    width, height = fig.get_size_inches()
    assert width <= 15.0, (width, height)                  # was 18 × 16 in with 5-pixel cell numbers
    numbers = [t for t in fig.findobj(matplotlib.text.Text) if re.fullmatch(r"−?\d+\.\d{2,4}", t.get_text())]
    assert numbers and min(t.get_fontsize() for t in numbers) >= 7.0


def test_each_head_of_the_projection_is_drawn_in_its_colour_with_a_legend(projection):
    from matplotlib.colors import to_rgb

    from qkv.viz._style import HEAD_COLOURS

    _, fig = projection
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()][:2] == ["head 1", "head 2"]
    assert [to_rgb(h.get_facecolor()) for h in legend.legend_handles[:2]] == [to_rgb(c) for c in HEAD_COLOURS[:2]]
    # the two weight maps (3 × 3 images): head 1's in blue, head 2's in green (it was head 1's blue)
    ax = fig.axes[0]
    maps = [im.get_array() for im in ax.images if im.get_array().shape[:2] == (3, 3)]
    assert len(maps) == 2
    for image, channel in zip(maps, (2, 1)):                  # blue, green: the head's strongest channel
        darkest = image.reshape(-1, 3)[np.argmin(image.reshape(-1, 3).sum(axis=1))]
        assert np.argmax(darkest) == channel, darkest


def test_the_projection_draws_r_plus_y_from_r_and_y_and_outlines_the_followed_token(projection):
    trace, fig = projection
    ax = fig.axes[0]
    texts = _texts(fig)
    assert any(t.startswith("R = X") for t in texts) and "+" in texts and any(t.startswith("R + Y") for t in texts)
    # the numbers of R, of Y and of R + Y are all written: R + Y's first cell is R's plus Y's
    x, y, r = (np.asarray(trace[n].value).reshape(3, 8) for n in ("x", "y", "residual"))
    np.testing.assert_allclose(r, x + y, atol=1e-12)       # what the drawn sum claims (float64)
    for value in (x[0, 0], y[0, 0], r[0, 0]):
        assert f"{value:.2f}"[:4].replace("-", "−") in " ".join(texts)
    outlines = [p for p in ax.patches if p.get_gid() == "followed"]
    assert len(outlines) >= 10                              # X, Q, K, V, their heads, weights, outputs, H, Y, R + Y
    followed = trace.info.query
    assert all(abs(p.get_height() - 1.0) < 1e-9 or p.get_height() < 1.5 for p in outlines)
    token_labels = [t for t in ax.texts if t.get_text() == f"token {followed + 1}" and t.get_rotation() == 0]
    assert token_labels and all(t.get_color() == "#d1495b" for t in token_labels)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_masks_figures_labels_keep_apart(lang):
    """A row's "key" label touched the next row's titles (3 pt apart, Korean glyphs reaching across)."""
    from qkv import masks
    from qkv.commands.masks import masks_figure

    entries = {f"mask {i}": (masks.causal() if i % 2 else masks.sliding_window(2)) for i in range(6)}
    fig = masks_figure(entries, 16, 4, lang=lang)
    fig.draw_without_rendering()
    renderer = fig._get_renderer()
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.images]
    first, second = axes[0], axes[5]                       # one above the other
    label_bottom = first.xaxis.label.get_window_extent(renderer).y0
    title_top = second.title.get_window_extent(renderer).y1
    assert label_bottom - title_top >= 0.1 * fig.dpi, (label_bottom, title_top)


def test_a_model_heads_figure_names_the_attention_sink_beside_the_weights():
    # issue 29: `inspect "The cat sat on the mat." --layer 2 --head 5 --query cat`: [CLS] has weight 0.748 but
    # ‖w·v‖ 0.059, cat contributes more. Expected from the recorded weights and value rows (float64), by the
    # rule qkv.trace documents (largest weight ≥ SINK_WEIGHT, share ≤ SINK_RATIO × weight, another key stronger)
    from qkv.trace import SINK_RATIO, SINK_WEIGHT

    model = qkv.models.load("minilm")
    trace = model.trace("The cat sat on the mat.", layer=2, head=5, query="cat")
    query = trace.meta["query"]
    weights = np.asarray(trace["weights"].value, dtype=np.float64)[0, query]
    v = np.asarray(trace["v_heads"].value, dtype=np.float64)[0]
    contributions = weights * np.linalg.norm(v, axis=-1)
    heaviest, strongest = int(np.argmax(weights)), int(np.argmax(contributions))
    share = contributions[heaviest] / contributions.sum()
    assert heaviest != strongest and weights[heaviest] >= SINK_WEIGHT and share <= SINK_RATIO * weights[heaviest]
    tokens = trace.meta["tokens"]
    for lang, sink_word in (("en", "attention sink: "), ("ko", "어텐션 싱크: ")):
        fig = viz.figure_for(trace, lang=lang)
        panel = [ax for ax in fig.axes if ax.get_ylabel().startswith("‖wⱼ·vⱼ‖")]
        assert len(panel) == 1
        heights = [bar.get_height() for bar in panel[0].patches if bar.get_width() > 0.5]
        np.testing.assert_allclose(heights, contributions, rtol=1e-5)
        note = panel[0].get_title(loc="left").replace("\n", " ")
        assert sink_word + tokens[heaviest] in note
        assert tokens[strongest] in note


def test_a_model_heads_scaled_scores_are_called_divided_by_root_dk():
    # MiniLM scales by 1/√32 in float32: the panel said "× scale" (an exact float64 comparison failed by 2e-7)
    model = qkv.models.load("minilm")
    trace = model.trace("The cat sat on the mat.", layer=2, head=5, query="cat")
    scores, scaled = (np.asarray(trace[n].value, dtype=np.float64) for n in ("scores", "scaled_scores"))
    np.testing.assert_allclose(scaled, scores / np.sqrt(32), rtol=1e-6)     # MiniLM's heads are 32 wide
    labels = [ax.get_ylabel().replace("\n", " ") for ax in viz.figure_for(trace).axes]
    assert any(label.startswith("÷ √d_k") for label in labels) and not any(l.startswith("× scale") for l in labels)


def _cell_numbers_fit(fig) -> list[tuple]:
    """Each cell number drawn wider than 88 % of its cell or taller than its cell: (text, its width, the cell's
    width, its height, the cell's height) in pixels. A cell is read from the matrix image the number sits on (the
    image's extent ÷ its rows and columns), so a number alone on its row — a one-column matrix, a one-row matrix —
    is checked as every other (the first version measured the distance to the next number on the row and skipped
    a number that had none). A cell number (figures' `_put_cell`) on no matrix image is reported too."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    too_wide = []
    for ax in fig.axes:
        images = []
        for image in ax.images:
            x0, x1, y0, y1 = image.get_extent()
            rows, cols = image.get_array().shape[:2]
            images.append((min(x0, x1), max(x0, x1), min(y0, y1), max(y0, y1), rows, cols))
        for t in ax.texts:
            if not t.get_visible() or not re.fullmatch(r"[−-]?\d+\.\d+", t.get_text()):
                continue
            x, y = t.get_position()
            under = [i for i in images if i[0] <= x <= i[1] and i[2] <= y <= i[3]] if t.get_transform() == ax.transData \
                else []
            if not under:
                if hasattr(t, "_qkv_numbers"):           # a cell's number that is on no matrix
                    too_wide.append((t.get_text(), "on no matrix image"))
                continue                                  # a label beside a bar or a line, not a cell
            left, right, top, bottom, rows, cols = under[-1]
            corner, across = ax.transData.transform([(left, top), (left + (right - left) / cols, top + (bottom - top) / rows)])
            cell_width, cell_height = abs(across[0] - corner[0]), abs(across[1] - corner[1])
            box = t.get_window_extent(renderer)
            if box.width > 0.88 * cell_width or box.height > cell_height:
                too_wide.append((t.get_text(), round(box.width, 1), round(cell_width, 1), round(box.height, 1),
                                 round(cell_height, 1)))
    return too_wide


@pytest.mark.parametrize("shape", [(1, 3), (3, 1), (1, 1)], ids=["one row", "one column", "one cell"])
def test_the_fit_check_reads_every_cell_a_one_row_or_one_column_matrix_too(shape):
    """The check itself: a number twice its cell's width, alone on its row, is found (the first version found it
    only beside another number on the same row)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 4), dpi=100)
    rows, cols = shape
    ax.imshow(np.zeros((rows, cols, 3)), extent=(0, 0.5 * cols, 0.5 * rows, 0), interpolation="nearest")
    ax.set_xlim(0, 10)
    ax.set_ylim(10, 0)
    for i in range(rows):
        for j in range(cols):
            ax.text(0.25 + 0.5 * j, 0.25 + 0.5 * i, "−0.12345", ha="center", va="center", fontsize=9)
    found = _cell_numbers_fit(fig)
    plt.close(fig)
    assert len(found) == rows * cols, found
    cell = 0.5 / 10 * ax.get_window_extent().width       # the cell's width in pixels (half a unit of ten)
    assert all(width > cell for _, width, *_ in found), (found, cell)


@pytest.mark.parametrize("name", ["projection", "multi-head", "self-attention", "group-meeting", "cross-attention"])
def test_every_cell_number_keeps_off_its_cell_edges(name):
    # the projection's 4-column blocks printed −0.0534 at 7.5 pt in a 0.48 in cell: 95 % of its width
    fig = viz.figure_for(qkv.examples.run(name))
    fig.set_dpi(144)
    assert _cell_numbers_fit(fig) == []


@pytest.mark.parametrize("name", ["projection", "group-meeting"])
def test_cell_numbers_are_unclipped_as_the_axes_own_texts(name):
    # a matrix's numbers are made as ax.text makes a text (clip_on False, drawn whole wherever they stand);
    # their own class (fitted sizes) had left them clipped to the axes, unlike every other text of the figure
    fig = viz.figure_for(qkv.examples.run(name))
    numbers = [t for ax in fig.axes for t in ax.texts if re.fullmatch(r"[−-]?\d+\.\d+", t.get_text())
               and not isinstance(t, matplotlib.text.Annotation)]        # (the bars' labels: annotations)
    assert len(numbers) > 50
    made_by_the_axes = fig.axes[0].text(0, 0, "0.5")
    assert {t.get_clip_on() for t in numbers} == {made_by_the_axes.get_clip_on()} == {False}
    # the blocks' outlines are the axes' patches, clipped to the axes as add_patch clips them
    outlines = [p for ax in fig.axes for p in ax.patches if type(p).__name__ == "Rectangle" and not p.get_fill()]
    assert outlines and all(p.get_clip_on() and p.get_clip_path() is not None for p in outlines)
