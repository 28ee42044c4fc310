"""The canvas the PNG writer draws with (`qkv.viz._agg`, issue 29): its texts are matplotlib's own pixels.

Where a text's origin is a whole pixel, `_agg.Canvas` draws exactly what matplotlib's FigureCanvasAgg draws
(numbers, Hangul and kanji from the fallback fonts, turned labels, mathtext, clipped and coloured text);
where glyphs overlap (kerning, a turned line) Agg blends them one by one and `_agg` once, which may differ
by a few levels of 255. Elsewhere a text stands at the nearest whole pixel, as matplotlib ≤ 3.10 placed it:
the same pixels as matplotlib's drawing of the text moved there. Remembered strings and glyphs give the
same pixels as the first drawing."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from qkv.viz import _agg, fonts

_TEXTS = [  # string, colour, turn (degrees), background
    ("−0.3750", "black", 0, "white"),
    ("1.0000", "white", 0, "navy"),
    ("쿼리 私は token 3", "black", 0, "#dde"),
    ("token 2", "black", 90, "white"),
    ("‖wⱼ·vⱼ‖ of token 3", "crimson", 0, "white"),
    ("$\\sqrt{d_k}\\,x^2_j$", "black", 0, "white"),
]


def _pixels(figure: Figure, canvas) -> np.ndarray:
    canvas(figure)
    buffer = io.BytesIO()
    with fonts.context():
        figure.savefig(buffer, format="rgba", dpi=100)
    width, height = figure.canvas.get_width_height(physical=True)
    return np.frombuffer(buffer.getvalue(), dtype=np.uint8).reshape(height, width, 4).astype(int)


def _one(text: str, colour: str, turn: float, background: str, x: float, y: float, **kwargs) -> Figure:
    figure = Figure(figsize=(3, 1.2), dpi=100, facecolor=background)
    # in pixels, anchored at the baseline's left end: the drawing origin is (x, y) itself
    figure.text(x, y, text, transform=None, color=colour, rotation=turn, rotation_mode="anchor", fontsize=11,
                ha="left", va="baseline", **fonts.font_kwargs(), **kwargs)
    return figure


@pytest.mark.parametrize("text,colour,turn,background", _TEXTS)
def test_at_whole_pixels_the_pixels_are_matplotlibs(text, colour, turn, background):
    theirs = _pixels(_one(text, colour, turn, background, 20, 60), FigureCanvasAgg)
    ours = _pixels(_one(text, colour, turn, background, 20, 60), _agg.Canvas)
    assert (theirs != theirs[0, 0]).any(axis=2).sum() > 40          # something was drawn
    assert np.array_equal(ours, theirs)


@pytest.mark.parametrize("offset", [0.3, 0.7, 0.49])
@pytest.mark.parametrize("text,colour,turn,background", _TEXTS[:5])
def test_elsewhere_a_text_moves_to_the_nearest_whole_pixel(text, colour, turn, background, offset):
    ours = _pixels(_one(text, colour, turn, background, 20 + offset, 60 + offset), _agg.Canvas)
    nearest = round(offset)
    theirs = _pixels(_one(text, colour, turn, background, 20 + nearest, 60 + nearest), FigureCanvasAgg)
    assert np.array_equal(ours, theirs)
    if _agg.FAST_TEXT:                               # matplotlib ≥ 3.11 itself draws it at 1/64 pixel
        unmoved = _pixels(_one(text, colour, turn, background, 20 + offset, 60 + offset), FigureCanvasAgg)
        assert not np.array_equal(unmoved, theirs)


def test_overlapping_glyphs_differ_by_a_few_levels_at_most():
    # a turned, kerned line: neighbouring glyphs' antialiased edges overlap
    args = ("AV To ffi Wj·vj‖", "crimson", 30, "white", 20, 20)
    theirs = _pixels(_one(*args), FigureCanvasAgg)
    ours = _pixels(_one(*args), _agg.Canvas)
    difference = np.abs(ours - theirs)
    assert difference.max() <= 6
    assert (difference > 0).any(axis=2).sum() < 0.2 * (theirs != 255).any(axis=2).sum()


def test_clipped_coloured_numbers_in_cells_and_remembered_strings():
    def figure() -> Figure:
        fig = Figure(figsize=(3, 2), dpi=100)
        ax = fig.add_axes((0, 0, 1, 1))                 # 300 × 200 pixels, one data unit = 100 pixels
        ax.set_xlim(0, 3)
        ax.set_ylim(0, 2)
        ax.set_axis_off()
        for i in range(3):
            for j in range(2):
                ax.add_patch(Rectangle((i, j), 1, 1, color="navy" if (i + j) % 2 else "white"))
                # the same strings again and again, the last column half outside the axes (clipped)
                ax.text(i + 0.2 + (0.6 if i == 2 else 0), j + 0.3, "−0.75" if j else "0.5000",
                        color="white" if (i + j) % 2 else "black", fontsize=14, clip_on=True,
                        **fonts.font_kwargs())
        return fig

    theirs = _pixels(figure(), FigureCanvasAgg)
    first = _pixels(figure(), _agg.Canvas)
    again = _pixels(figure(), _agg.Canvas)                   # every string and glyph remembered now
    assert np.array_equal(first, theirs)
    assert np.array_equal(again, theirs)
    assert (theirs[100:, -1, :3] < 128).any()                 # the clipped numbers reach the edge


def test_blank_text_draws_nothing():
    theirs = _pixels(_one("   ", "black", 0, "white", 20, 60), FigureCanvasAgg)
    assert np.array_equal(_pixels(_one("   ", "black", 0, "white", 20, 60), _agg.Canvas), theirs)


@pytest.mark.parametrize("va", ["center", "top", "baseline", "bottom"])
def test_text_boxes_are_matplotlibs(va):
    # the renderer answers each font's line heights from a table (Text._get_layout asks it per text)
    def boxes(canvas) -> list:
        figure = Figure(figsize=(4, 3), dpi=150)
        texts = [figure.text(0.1 + 0.2 * k, 0.5, text, va=va, fontsize=size, **fonts.font_kwargs())
                 for k, (text, size) in enumerate([("0.5000", 6.5), ("쿼리\n私は 2", 9.0), ("a\nb\nc", 11.0),
                                                   ("Σ = 1.0000 + 0.0000", 7.5)])]
        renderer = canvas(figure).get_renderer()
        with fonts.context():
            return [t.get_window_extent(renderer).bounds for t in texts]

    assert boxes(_agg.Canvas) == boxes(FigureCanvasAgg)


def test_a_generic_family_follows_the_rcparams_between_drawings():
    # "sans-serif" names other files after font.sans-serif changes: nothing remembered may stand in for them
    def figure() -> Figure:
        fig = Figure(figsize=(3, 1.2), dpi=100)
        fig.text(20, 60, "0.3750 Wa", transform=None, fontsize=14, family="sans-serif")
        return fig

    drawn = {}
    for family in ("DejaVu Sans", "DejaVu Serif", "DejaVu Sans"):
        with matplotlib.rc_context({"font.sans-serif": [family]}):
            ours = _pixels(figure(), _agg.Canvas)
            assert np.array_equal(ours, _pixels(figure(), FigureCanvasAgg))
            drawn[family] = ours
    assert not np.array_equal(drawn["DejaVu Sans"], drawn["DejaVu Serif"])


def _busy_figure() -> Figure:
    """Texts and other artists at one zorder, overlapping, in an order that matters; texts that are not plain
    (a box, mathtext, two lines, path effects) among plain ones; repeated strings; figure-level texts."""
    from matplotlib import patheffects

    figure = Figure(figsize=(4, 3), dpi=100)
    ax = figure.add_axes((0.05, 0.05, 0.9, 0.9))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    ax.set_axis_off()
    for i in range(6):
        ax.text(1 + i, 8, "0.25", ha="center", va="center", zorder=3, color="C%d" % i)
    # an opaque square added after a text at the same zorder covers it; one added before is covered
    ax.add_patch(Rectangle((0.6, 7.6), 0.8, 0.8, color="navy", zorder=3))
    ax.add_patch(Rectangle((3.6, 5.6), 0.8, 0.8, color="gold", zorder=3))
    ax.text(4, 6, "−1.50", ha="center", va="center", zorder=3)
    ax.text(2, 4, "boxed", bbox={"facecolor": "pink"}, zorder=3)
    ax.text(5, 4, "$x^2$", zorder=3)
    ax.text(7, 4, "two\nlines", zorder=3)
    ax.text(2, 2, "shadow", path_effects=[patheffects.withStroke(linewidth=3, foreground="orange")], zorder=3)
    ax.text(6, 2, "turned 쿼리", rotation=30, alpha=0.6, zorder=3, **fonts.font_kwargs())
    ax.text(8, 6, "on top", zorder=5, fontsize=14)
    ax.add_patch(Rectangle((7.5, 5.5), 2, 1, color="lightgreen", zorder=4))
    figure.text(0.5, 0.97, "a figure's title", ha="center", va="top")
    figure.text(0.02, 0.5, "left", rotation=90, va="center")
    return figure


def test_texts_drawn_in_runs_give_the_pixels_of_texts_drawn_one_by_one():
    alone = _pixels(_busy_figure(), _agg.Canvas)
    figure = _busy_figure()
    _agg.Canvas(figure)
    buffer = io.BytesIO()
    with fonts.context(), _agg.batched_texts(figure):
        figure.savefig(buffer, format="rgba", dpi=100)
    width, height = figure.canvas.get_width_height(physical=True)
    batched = np.frombuffer(buffer.getvalue(), dtype=np.uint8).reshape(height, width, 4).astype(int)
    assert np.array_equal(batched, alone)
    # the navy square covers the first "0.25" (drawn after it), the gold one lies under "−1.50"
    navy = np.array([0, 0, 128])
    ax = figure.axes[0]
    x, y = ax.transData.transform((1, 8))
    row, col = height - int(round(y)), int(round(x))
    assert (batched[row - 5:row + 5, col - 5:col + 5, :3] == navy).all()


def test_runs_keep_each_texts_order_among_the_artists_of_its_zorder():
    figure = _busy_figure()
    ax = figure.axes[0]
    runs = _agg._runs(list(ax._children))
    batches = [artist for artist in runs if isinstance(artist, _agg.TextBatch)]
    # a square or a text that is not plain ends a run of its zorder; "on top" (zorder 5) runs alone
    assert [[t.get_text() for t in batch.texts] for batch in batches] == [
        ["0.25"] * 6, ["−1.50"], ["turned 쿼리"], ["on top"]]
    flat = [t for a in runs for t in (a.texts if isinstance(a, _agg.TextBatch) else [a])]
    assert flat == list(ax._children)        # every artist once, in the order it had


def test_the_draw_lists_are_given_back():
    figure = _busy_figure()
    ax = figure.axes[0]
    children, texts = ax._children, figure.texts
    before = list(children), list(texts)
    with pytest.raises(RuntimeError):
        with _agg.batched_texts(figure):
            assert ax._children is not children
            raise RuntimeError("drawing failed")
    assert ax._children is children and figure.texts is texts
    assert (list(children), list(texts)) == before


def _shared_figure() -> Figure:
    """One run of plain texts whose drawing differs text by text in what a batch shares between texts: colours
    and alphas repeated out of order, texts clipped to the axes (standing half outside it) next to unclipped
    ones, and positions through three transforms (data, axes fraction, an offset of the data's)."""
    from matplotlib.transforms import offset_copy

    figure = Figure(figsize=(4, 3), dpi=100)
    ax = figure.add_axes((0.2, 0.2, 0.6, 0.6))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    ax.set_axis_off()
    shifted = offset_copy(ax.transData, figure, x=3, y=-2, units="points")
    for i in range(12):
        transform = (ax.transData, ax.transAxes, shifted)[i % 3]
        x, y = ((i % 4) * 3 - 0.5, 10 - (i // 4) * 4) if transform is not ax.transAxes else ((i % 4) / 3, 1 - i / 12)
        text = ax.text(x, y, f"0.{i}5 쿼리", transform=transform, color=("C1", "navy", "C1", "0.4")[i % 4],
                       alpha=(None, 0.5)[i % 2], clip_on=bool(i % 3), zorder=3, **fonts.font_kwargs())
        if i % 3:
            text.set_clip_path(ax.patch)
    return figure


def test_a_run_shares_contexts_and_transforms_only_where_its_texts_are_drawn_alike():
    alone = _pixels(_shared_figure(), _agg.Canvas)
    figure = _shared_figure()
    ax = figure.axes[0]
    assert [[len(a.texts)] for a in _agg._runs(list(ax._children)) if isinstance(a, _agg.TextBatch)] == [[12]]
    _agg.Canvas(figure)
    buffer = io.BytesIO()
    with fonts.context(), _agg.batched_texts(figure):
        figure.savefig(buffer, format="rgba", dpi=100)
    width, height = figure.canvas.get_width_height(physical=True)
    batched = np.frombuffer(buffer.getvalue(), dtype=np.uint8).reshape(height, width, 4).astype(int)
    assert np.array_equal(batched, alone)
    # the clipped texts at the axes' left edge lost their left part: some ink stands left of the axes, not all
    left = int(ax.bbox.x0)
    assert (alone[:, :left, :3] < 250).any()


def test_each_lines_offset_is_read_from_either_shape_of_matplotlibs_layout():
    """Text._get_layout's lines are (string, (w, h), (dx, dy)) in matplotlib ≥ 3.11 and (string, (w, h), dx, dy)
    before: the batch reads the offset from both (it unpacked three items, which failed on matplotlib 3.10)."""
    new = [("ab", (10.0, 5.0), np.array([1.5, -2.0])), ("c", (3.0, 5.0), np.array([0.0, -9.0]))]
    old = [("ab", (10.0, 5.0), 1.5, -2.0), ("c", (3.0, 5.0), 0.0, -9.0)]
    assert _agg._line_offsets(new) == _agg._line_offsets(old) == [("ab", (1.5, -2.0)), ("c", (0.0, -9.0))]


def test_without_render_mode_texts_are_drawn_by_matplotlib_in_runs(tmp_path):
    """matplotlib before 3.10 has no ft2font.RenderMode (pyproject allows ≥ 3.8): `_agg` still imports (it imported
    the name unconditionally) and, with nothing to remember, draws each run's texts with RendererAgg.draw_text —
    the pixels of matplotlib's own canvas. Run in a fresh interpreter: the name is taken away before the import."""
    import subprocess
    import sys

    code = """
import io, sys
import numpy as np
import matplotlib
matplotlib.use("Agg")
from matplotlib.backends.backend_agg import FigureCanvasAgg
import matplotlib.ft2font
del matplotlib.ft2font.RenderMode
from matplotlib.figure import Figure
from qkv.viz import _agg, fonts
assert not _agg.FAST_TEXT

def pixels(canvas):
    figure = Figure(figsize=(3, 1.2), dpi=100)
    for i, s in enumerate(["0.25", "−1.5", "token 2", "0.25"]):
        figure.text(0.1 + 0.2 * i, 0.5, s, fontsize=9, **fonts.font_kwargs())
    canvas(figure)
    buffer = io.BytesIO()
    with fonts.context():
        if canvas is _agg.Canvas:
            with _agg.batched_texts(figure):
                figure.savefig(buffer, format="rgba", dpi=100)
        else:
            figure.savefig(buffer, format="rgba", dpi=100)
    return np.frombuffer(buffer.getvalue(), dtype=np.uint8)

ours, theirs = pixels(_agg.Canvas), pixels(FigureCanvasAgg)
assert (ours != 255).any() and np.array_equal(ours, theirs)
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_measurement_is_made_once_per_string_font_and_dpi(monkeypatch):
    """`Renderer.get_text_width_height_descent` remembers matplotlib's answer for the process (matplotlib remembers it
    per renderer; a figure's blocks measured the same number shapes once each): asked again, on another renderer of
    the same dpi, it does not measure again, and its answer is matplotlib's own for that string, font and dpi."""
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    calls = []
    measure = RendererAgg.get_text_width_height_descent

    def counted(self, s, prop, ismath):
        calls.append((s, self.dpi))
        return measure(self, s, prop, ismath)

    monkeypatch.setattr(RendererAgg, "get_text_width_height_descent", counted)
    monkeypatch.setattr(_agg, "_measures", {})
    with fonts.context():
        prop = FontProperties(family=list(fonts.families()), size=7.5)
        first = _agg.Renderer(10, 10, 150).get_text_width_height_descent("−0.3750 쿼리", prop, False)
        again = _agg.Renderer(20, 20, 150).get_text_width_height_descent("−0.3750 쿼리", prop.copy(), False)
        assert calls == [("−0.3750 쿼리", 150)] and again == first
        assert first == measure(RendererAgg(10, 10, 150), "−0.3750 쿼리", prop, False)
        other_dpi = _agg.Renderer(10, 10, 100).get_text_width_height_descent("−0.3750 쿼리", prop, False)
        larger = _agg.Renderer(10, 10, 150).get_text_width_height_descent("−0.3750 쿼리", FontProperties(
            family=list(fonts.families()), size=9), False)
        assert len(calls) == 3 and other_dpi[0] < first[0] < larger[0]
        _agg.Renderer(10, 10, 150).get_text_width_height_descent("x^2", prop, True)     # mathtext: never remembered
        _agg.Renderer(10, 10, 150).get_text_width_height_descent("x^2", prop, True)
        assert len(calls) == 5


def test_the_measuring_renderer_measures_as_the_figures_own():
    """`measuring_renderer` (no canvas of the figure's size) gives every text the window extent the figure's own
    Agg renderer gives it: upright, turned, Hangul, at the figure's dpi."""
    figure = Figure(figsize=(4, 3), dpi=100)
    ax = figure.add_axes((0.1, 0.1, 0.8, 0.8))
    with fonts.context():
        texts = [ax.text(0.2, 0.3, "−14.3105", rotation=90, fontsize=6.5), ax.text(0.5, 0.5, "쿼리 token 2", fontsize=8),
                 ax.annotate("0.25", (0.7, 0.2), xytext=(0, 2), textcoords="offset points", rotation=90)]
        ours = [t.get_window_extent(_agg.measuring_renderer(figure)).bounds for t in texts]
        theirs = [t.get_window_extent(figure._get_renderer()).bounds for t in texts]
    assert ours == theirs and all(w > 0 and h > 0 for _, _, w, h in ours)
