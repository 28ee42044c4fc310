"""How a figure is written (issue 29's speed): `qkv.viz.write_figure`'s PNG writer (`qkv.viz._png`) gives the
pixels savefig draws on the canvas it draws with (`qkv.viz._agg`), decoded by an independent reader (Pillow),
the dpi recorded, RGB for an opaque figure and RGBA otherwise; inside `fonts.context()` a font is looked up once, not once per text size."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure
from PIL import Image

from qkv import viz
from qkv.viz import _agg, _png, fonts


def _decoded(data: bytes) -> tuple[np.ndarray, Image.Image]:
    image = Image.open(io.BytesIO(data))
    image.load()
    return np.asarray(image.convert("RGBA")), image


def _savefig_pixels(figure: Figure) -> np.ndarray:
    """savefig's own PNG (Pillow's encoder) drawn on the canvas write_figure draws with (`qkv.viz._agg`,
    whose texts stand at whole pixels; tests/test_viz_agg.py compares it with matplotlib's)."""
    buffer = io.BytesIO()
    shown = figure.canvas
    _agg.Canvas(figure)
    with fonts.context():
        figure.savefig(buffer, format="png", dpi=viz._DPI)
    figure.set_canvas(shown)
    return _decoded(buffer.getvalue())[0]


def _figure(size: tuple[float, float], *, facecolor="white") -> Figure:
    figure = Figure(figsize=size, facecolor=facecolor)
    ax = figure.add_axes((0.1, 0.1, 0.8, 0.8))
    ax.imshow(np.arange(12.0).reshape(3, 4), cmap="viridis")
    ax.text(1, 1, "0.8743 쿼리", color="white", **fonts.font_kwargs())
    return figure


# (9.4, 5.9) in at 150 dpi is 884.99999… pixels high: matplotlib makes it 885 rows; (3, 3) is square
@pytest.mark.parametrize("size", [(4.0, 3.0), (9.4, 5.9), (3.0, 3.0), (2.37, 1.13)])
def test_png_has_savefigs_pixels_and_dpi(size, tmp_path, monkeypatch):
    figure = _figure(size)
    monkeypatch.setattr(_png, "_savefig_png", None)  # the canvas's size is found: no second drawing
    shown = figure.canvas
    path = viz.write_figure(figure, tmp_path / "f.png")
    assert figure.canvas is shown                    # the figure keeps its own canvas after writing
    pixels, image = _decoded(path.read_bytes())
    expected = _savefig_pixels(figure)
    assert pixels.shape == expected.shape
    assert np.array_equal(pixels, expected)
    assert image.mode == "RGB"                       # opaque: no alpha channel written
    assert image.info["dpi"] == pytest.approx((viz._DPI, viz._DPI), abs=0.02)


def test_a_transparent_figure_keeps_its_alpha(tmp_path):
    figure = _figure((3.0, 2.0), facecolor=(1, 1, 1, 0))
    path = viz.write_figure(figure, tmp_path / "f.png")
    pixels, image = _decoded(path.read_bytes())
    assert image.mode == "RGBA"
    assert np.array_equal(pixels, _savefig_pixels(figure))
    assert (pixels[..., 3] == 0).any() and (pixels[..., 3] == 255).any()


@pytest.mark.parametrize("opaque", [True, False])
def test_png_bytes_decode_to_the_array(opaque):
    rng = np.random.default_rng(7)
    pixels = rng.integers(0, 256, (37, 53, 4), dtype=np.uint8)
    if opaque:
        pixels[..., 3] = 255
    image = Image.open(io.BytesIO(_png.png_bytes(pixels, 96.0, "qkv test")))
    image.load()
    assert image.size == (53, 37)
    assert image.mode == ("RGB" if opaque else "RGBA")
    assert np.array_equal(np.asarray(image.convert("RGBA")), pixels)
    assert image.info["Software"] == "qkv test"


def test_png_bytes_refuses_another_layout():
    with pytest.raises(ValueError, match=r"\(H, W, 4\) uint8"):
        _png.png_bytes(np.zeros((4, 5, 3), dtype=np.uint8), 150.0)


def test_fonts_are_looked_up_once_per_family_not_per_size(monkeypatch):
    from matplotlib import font_manager

    asked = []
    real = font_manager.FontManager._find_fonts_by_props

    def counted(self, prop, *args, **kwargs):
        asked.append(prop.get_size_in_points())
        return real(self, prop, *args, **kwargs)

    monkeypatch.setattr(font_manager.FontManager, "_find_fonts_by_props", counted)
    figure = Figure(figsize=(3, 2))
    with fonts.context():
        for k, size in enumerate((6.5, 7.0, 7.5, 8.0, 9.0, 11.0)):
            figure.text(0.1, 0.1 + 0.12 * k, f"{k} 쿼리", fontsize=size)
        figure.savefig(io.BytesIO(), format="rgba", dpi=100)
        assert len(asked) == 1                    # six sizes, one family list: one look-up
        first = font_manager.fontManager._find_fonts_by_props(
            font_manager.FontProperties(family=list(fonts.families()), size=6.5))
        other = font_manager.fontManager._find_fonts_by_props(
            font_manager.FontProperties(family=list(fonts.families()), size=30.0))
    assert first == other == real(font_manager.fontManager,
                                  font_manager.FontProperties(family=list(fonts.families()), size=30.0))


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_paused_while_a_figure_is_written_and_left_as_it_was(enabled, tmp_path, monkeypatch):
    import gc

    seen = []
    write_png = _png.write_png
    monkeypatch.setattr(_png, "write_png", lambda *args: (seen.append(gc.isenabled()), write_png(*args)))
    (gc.enable if enabled else gc.disable)()
    try:
        viz.write_figure(_figure((3.0, 2.0)), tmp_path / "f.png")
        with pytest.raises(ZeroDivisionError):        # given back after a failure too
            with viz._collector_paused():
                1 / 0
        assert gc.isenabled() is enabled
    finally:
        gc.enable()
    assert seen == [False]
