"""The Agg canvas the PNG writer draws with: matplotlib's, with each text's pixels remembered (issue 29).

matplotlib 3.11 draws a text glyph by glyph from Python: a libraqm layout of the string, then for every
glyph a FreeType transform, a render and a blit (70–105 µs a glyph on the machines issue 29 measured;
matplotlib 3.10 rasterised the whole string in C++ at 20–30 µs). A worked example's figure writes the
same few strings hundreds of times — a weight matrix's 64 cells hold seven different numbers — and its
numbers use a dozen glyphs. `Renderer.draw_text` therefore

- places each text at a whole pixel, as matplotlib up to 3.10 did (its text bitmap was blitted at a
  rounded position; 3.11 positions every glyph to 1/64 pixel), so that a string's pixels no longer
  depend on where it stands;
- keeps each string's coverage bitmap (its glyphs united as Agg would blend them one after another:
  1 − (1 − a)(1 − b) where two glyphs' antialiased edges overlap) and blits it in one call, coloured,
  clipped and blended by Agg exactly as matplotlib's own glyphs are (`draw_text_image` with the text's
  graphics context);
- renders a glyph once per font, size, angle and 1/64-pixel offset from the text's origin (a digit at the
  third place of a number has the same offset in every number of that width).

Everything else — mathtext, TeX, path effects, layout, clipping, colour — is matplotlib's own code. With a
matplotlib that draws text in C++ (before 3.11: no ``FT2Font._layout``) the canvas is matplotlib's
unchanged. SVG and PDF never come here (savefig switches to their own canvases).
"""

from __future__ import annotations

import math

import matplotlib as mpl
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg, get_hinting_flag
from matplotlib.font_manager import fontManager, get_font
from matplotlib.ft2font import FT2Font, RenderMode

__all__ = ["Canvas", "Renderer", "FAST_TEXT"]

# matplotlib ≥ 3.11 lays text out in Python (FT2Font._layout, _render_glyph, _set_transform): only there
# is there anything to remember; earlier versions blit a whole string from C++ already.
FAST_TEXT = all(hasattr(FT2Font, name) for name in ("_layout", "_render_glyph", "_set_transform"))

_LIMIT = 20_000           # remembered strings or glyphs before a cache starts again (each a few hundred bytes)
_texts: dict[tuple, tuple[np.ndarray, int, int] | None] = {}
_glyphs: dict[tuple, tuple[np.ndarray, int, int]] = {}
_heights: dict[tuple, tuple] = {}


def _font_key(prop) -> tuple:
    # The font files the properties resolve to now (a generic family such as "sans-serif" follows the
    # rcParams, which may change between two drawings; matplotlib's own draw_text looks them up per text as
    # well), the size, and the tuple of what the properties say (not the object, which its owner may change).
    return (tuple(fontManager._find_fonts_by_props(prop)), prop.get_size_in_points(), tuple(prop.get_family()),
            prop.get_style(), prop.get_variant(), prop.get_weight(), prop.get_stretch(), prop.get_file(),
            prop.get_math_fontfamily(), mpl.rcParams["text.hinting_factor"])


class Renderer(RendererAgg):
    """`RendererAgg` whose plain text (not mathtext) is drawn at whole pixels from remembered bitmaps."""

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if ismath or not FAST_TEXT:
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        features = mtext.get_fontfeatures() if mtext is not None else None
        language = mtext.get_language() if mtext is not None else None
        flags = get_hinting_flag()
        antialiased = bool(gc.get_antialiased())
        key = (s, _font_key(prop), self.dpi, float(angle), flags, antialiased,
               tuple(features) if features else None, language)
        drawn = _texts.get(key, False)
        if drawn is False:
            drawn = self._text_bitmap(s, prop, angle, flags, antialiased, features, language)
            if len(_texts) >= _LIMIT:
                _texts.clear()
            _texts[key] = drawn
        if drawn is None:                       # only blanks: nothing to draw
            return
        bitmap, left, top = drawn
        # y is downwards (0 at the top); FreeType's rows are counted upwards from the canvas's bottom.
        origin_x, origin_up = round(x), round(self.height - y)
        self._renderer.draw_text_image(bitmap, origin_x + left,
                                       int(self.height) - (origin_up + top) + bitmap.shape[0], 0, gc)

    def _text_bitmap(self, s, prop, angle, flags, antialiased, features, language):
        """(coverage uint8 (rows, cols), left, top) of ``s`` drawn with its origin at pixel (0, 0), rows
        counted upwards as FreeType does (``top`` is the first row's height); None when no glyph has ink."""
        font = self._prepare_font(prop)
        items = font._layout(s, flags=flags, features=features, language=language)
        size = prop.get_size_in_points()
        cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        matrix = (0x10000 * np.array([[cos, -sin], [sin, cos]])).round().astype(int)
        mode = RenderMode.NORMAL if antialiased else RenderMode.MONO
        pieces = []
        for item in items:
            # The glyph's origin in 1/64 pixel from the text's; the whole pixels only move its bitmap.
            dx = round(0x40 * (item.x * cos - item.y * sin))
            dy = round(0x40 * (item.x * sin + item.y * cos))
            glyph_key = (item.ft_object.fname, item.ft_object.postscript_name, size, self.dpi, item.glyph_index, dx & 63, dy & 63,
                         tuple(matrix.ravel()), flags, antialiased)
            glyph = _glyphs.get(glyph_key)
            if glyph is None:
                ft = item.ft_object
                ft.set_size(size, self.dpi)
                ft._set_transform(matrix, [dx & 63, dy & 63])
                rendered = ft._render_glyph(item.glyph_index, flags, mode)
                buffer = np.array(rendered.buffer, dtype=np.uint8)
                if not antialiased:
                    buffer *= 0xff
                glyph = (buffer, rendered.left, rendered.top)
                if len(_glyphs) >= _LIMIT:
                    _glyphs.clear()
                _glyphs[glyph_key] = glyph
            buffer, left, top = glyph
            if buffer.size:
                pieces.append((buffer, left + (dx >> 6), top + (dy >> 6)))
        if not pieces:
            return None
        if len(pieces) == 1:
            return pieces[0]
        left = min(p[1] for p in pieces)
        top = max(p[2] for p in pieces)
        right = max(p[1] + p[0].shape[1] for p in pieces)
        bottom = min(p[2] - p[0].shape[0] for p in pieces)
        clear = np.ones((top - bottom, right - left), dtype=np.float32)    # 1 − coverage
        for buffer, glyph_left, glyph_top in pieces:
            rows = slice(top - glyph_top, top - glyph_top + buffer.shape[0])
            cols = slice(glyph_left - left, glyph_left - left + buffer.shape[1])
            clear[rows, cols] *= 1 - buffer / np.float32(255)
        return np.rint(255 * (1 - clear)).astype(np.uint8), left, top


    def _get_font_height_metrics(self, prop):
        """(ascent, descent, line gap) in pixels of ``prop``'s first font, as `Text._get_layout` computes
        them itself when a renderer has no such method (OS/2 typographic metrics, else hhea) — remembered per
        font and size, where matplotlib looks the font up and reads two of its tables for every text drawn."""
        key = (_font_key(prop), self.dpi)
        metrics = _heights.get(key)
        if metrics is None:
            font = get_font(fontManager._find_fonts_by_props(prop))
            metrics = (None, None, None)
            for table_name, gap_key, ascent_key, descent_key in (
                    ("OS/2", "sTypoLineGap", "sTypoAscender", "sTypoDescender"),
                    ("hhea", "lineGap", "ascent", "descent")):
                table = font.get_sfnt_table(table_name)
                if table is None:
                    continue
                scale = 1 / font.get_sfnt_table("head")["unitsPerEm"] * prop.get_size_in_points() * self.dpi / 72
                metrics = (table[ascent_key] * scale, -table[descent_key] * scale, table[gap_key] * scale)
                break
            _heights[key] = metrics
        return metrics


class Canvas(FigureCanvasAgg):
    """`FigureCanvasAgg` drawing with `Renderer`."""

    def get_renderer(self):
        width, height = self.get_width_height(physical=True)
        key = width, height, self.figure.dpi
        if self._lastKey != key:
            self.renderer = Renderer(width, height, self.figure.dpi)
            self._lastKey = key
        return self.renderer
