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

import contextlib
import math
from typing import Iterator

import matplotlib as mpl
import numpy as np
from matplotlib import artist as martist
from matplotlib import colors as mcolors
from matplotlib.backend_bases import GraphicsContextBase
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg, get_hinting_flag
from matplotlib.font_manager import fontManager, get_font
from matplotlib.ft2font import FT2Font
from matplotlib.text import Text

try:
    from matplotlib.ft2font import RenderMode      # matplotlib ≥ 3.10
except ImportError:                                 # before: text is drawn in C++, nothing here needs it
    RenderMode = None

__all__ = ["Canvas", "Renderer", "FAST_TEXT", "batched_texts", "measuring_renderer"]

# matplotlib ≥ 3.11 lays text out in Python (FT2Font._layout, _render_glyph, _set_transform): only there
# is there anything to remember; earlier versions blit a whole string from C++ already (and matplotlib < 3.10
# has no RenderMode: the module must still import there, pyproject allows matplotlib ≥ 3.8).
FAST_TEXT = RenderMode is not None and all(hasattr(FT2Font, name) for name in ("_layout", "_render_glyph",
                                                                            "_set_transform"))

_LIMIT = 20_000           # remembered strings or glyphs before a cache starts again (each a few hundred bytes)
_texts: dict[tuple, tuple[np.ndarray, int, int] | None] = {}
_glyphs: dict[tuple, tuple[np.ndarray, int, int]] = {}
_heights: dict[tuple, tuple] = {}
_layouts: dict[tuple, tuple] = {}
_measures: dict[tuple, tuple[float, float, float]] = {}


def _font_key(prop) -> tuple:
    # The font files the properties resolve to now (a generic family such as "sans-serif" follows the
    # rcParams, which may change between two drawings; matplotlib's own draw_text looks them up per text as
    # well), the size, and the tuple of what the properties say (not the object, which its owner may change).
    return (tuple(fontManager._find_fonts_by_props(prop)), prop.get_size_in_points(), tuple(prop.get_family()),
            prop.get_style(), prop.get_variant(), prop.get_weight(), prop.get_stretch(), prop.get_file(),
            prop.get_math_fontfamily(), mpl.rcParams["text.hinting_factor"],
            mpl.rcParams.get("text.kerning_factor"))      # get_font's font objects differ by both factors


class Renderer(RendererAgg):
    """`RendererAgg` whose plain text (not mathtext) is drawn at whole pixels from remembered bitmaps."""

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if ismath or not FAST_TEXT:
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        self._draw_keyed(gc, x, y, s, prop, _font_key(prop), angle, mtext, get_hinting_flag())

    def get_text_width_height_descent(self, s, prop, ismath):
        """matplotlib's measurement of plain text, remembered per string, font, dpi and hinting for the process:
        matplotlib remembers it per renderer, and a figure's blocks measure the same number shapes again each
        (`figures._CellNumbers`), a layout of the string each time (issue 29)."""
        if ismath:
            return super().get_text_width_height_descent(s, prop, ismath)
        key = (s, _font_key(prop), self.dpi, get_hinting_flag())
        found = _measures.get(key)
        if found is None:
            found = super().get_text_width_height_descent(s, prop, ismath)
            if len(_measures) >= _LIMIT:
                _measures.clear()
            _measures[key] = found
        return found

    def _draw_keyed(self, gc, x, y, s, prop, font_key, angle, mtext, flags):
        """`draw_text` of plain text with the font's key (`_font_key(prop)`) and the hinting flags known."""
        features = mtext.get_fontfeatures() if mtext is not None else None
        language = mtext.get_language() if mtext is not None else None
        antialiased = bool(gc.get_antialiased())
        key = (s, font_key, self.dpi, float(angle), flags, antialiased,
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
        turn = tuple(matrix.ravel().tolist())
        mode = RenderMode.NORMAL if antialiased else RenderMode.MONO
        dpi = self.dpi
        names: dict = {}                        # a font object → (its file, its PostScript name)
        pieces = []
        for item in items:
            # The glyph's origin in 1/64 pixel from the text's; the whole pixels only move its bitmap.
            dx = round(0x40 * (item.x * cos - item.y * sin))
            dy = round(0x40 * (item.x * sin + item.y * cos))
            ft = item.ft_object
            name = names.get(ft)
            if name is None:
                name = names[ft] = (ft.fname, ft.postscript_name)
            glyph_key = (name, size, dpi, item.glyph_index, dx & 63, dy & 63, turn, flags, antialiased)
            glyph = _glyphs.get(glyph_key)
            if glyph is None:
                ft.set_size(size, dpi)
                ft._set_transform(matrix, [dx & 63, dy & 63])
                rendered = ft._render_glyph(item.glyph_index, flags, mode)
                buffer = np.array(rendered.buffer, dtype=np.uint8)
                if not antialiased:
                    buffer *= 0xff
                # the glyph's 1 − coverage, which a string's bitmap multiplies together (see below)
                glyph = (buffer, rendered.left, rendered.top, 1 - buffer / np.float32(255))
                if len(_glyphs) >= _LIMIT:
                    _glyphs.clear()
                _glyphs[glyph_key] = glyph
            if glyph[0].size:
                pieces.append((glyph, glyph[1] + (dx >> 6), glyph[2] + (dy >> 6)))
        if not pieces:
            return None
        if len(pieces) == 1:
            (buffer, _, _, _), left, top = pieces[0]
            return buffer, left, top
        left = min(p[1] for p in pieces)
        top = max(p[2] for p in pieces)
        right = max(p[1] + p[0][0].shape[1] for p in pieces)
        bottom = min(p[2] - p[0][0].shape[0] for p in pieces)
        clear = np.ones((top - bottom, right - left), dtype=np.float32)    # 1 − coverage
        for (buffer, _, _, glyph_clear), glyph_left, glyph_top in pieces:
            rows, cols = buffer.shape
            clear[top - glyph_top:top - glyph_top + rows, glyph_left - left:glyph_left - left + cols] *= glyph_clear
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


    def _draw_batch(self, texts) -> None:
        """Draw ``texts`` (`plain` ones) as `Text.draw` would, one after another, with each text's layout
        remembered per string, font, alignment and angle (`Text._get_layout` does not depend on where the text
        stands). Nothing a text's drawing reads changes while a batch is drawn, so the batch also finds once
        what its texts share: each font's key (per FontProperties, equal by what they say), the positions
        (one transform of every text that has the same transform), and one graphics context per colour and
        clip (whose clip path is asked once: Agg asks a context for it at every text it draws)."""
        flags = get_hinting_flag()
        height = self.height
        self._qkv_pass = object()      # a new pass: what a text's `_qkv_prepare` remembered per pass is stale
        font_keys: dict = {}
        contexts: dict[tuple, _SharedContext] = {}
        for text in texts:
            prepare = getattr(text, "_qkv_prepare", None)
            if prepare is not None:
                prepare(self)
        try:
            for text, (x, y) in zip(texts, _positions(texts)):
                text._renderer = self
                if not (math.isfinite(x) and math.isfinite(y)):
                    continue
                prop = text._fontproperties
                font_key = font_keys.get(prop)
                if font_key is None:
                    font_key = font_keys[prop] = _font_key(prop)
                angle = text.get_rotation()
                layout_key = (text._text, font_key, self.dpi, flags, angle, text.get_rotation_mode(),
                              text._horizontalalignment, text._verticalalignment, text._linespacing,
                              text._get_multialignment(), text.figure.dpi)
                info = _layouts.get(layout_key)
                if info is None:
                    info = _line_offsets(text._get_layout(self)[1])
                    if len(_layouts) >= _LIMIT:
                        _layouts.clear()
                    _layouts[layout_key] = info
                rgba = mcolors.to_rgba(text.get_color())
                clip = (text._clipon, text.clipbox, text._clippath) if text._clipon else (False, None, None)
                context_key = (rgba, text.get_alpha(), bool(text._antialiased), text.get_snap(),
                               clip[0], id(clip[1]), id(clip[2]))
                gc = contexts.get(context_key)
                if gc is None:
                    gc = contexts[context_key] = _SharedContext()
                    gc.set_foreground(rgba, isRGBA=True)
                    gc.set_alpha(text.get_alpha())
                    gc.set_antialiased(text._antialiased)
                    gc.set_snap(text.get_snap())
                    text._set_gc_clip(gc)
                for line, (dx, dy) in info:
                    if FAST_TEXT:
                        self._draw_keyed(gc, x + dx, height - (y + dy), line, prop, font_key, angle, text, flags)
                    else:
                        RendererAgg.draw_text(self, gc, x + dx, height - (y + dy), line, prop, angle, False, text)
                text.stale = False
        finally:
            for gc in contexts.values():
                gc.restore()


def _line_offsets(lines) -> list[tuple[str, tuple[float, float]]]:
    """(string, (dx, dy)) of each line of `Text._get_layout`'s list: matplotlib ≥ 3.11 gives each line as
    (string, (width, height), (dx, dy)), earlier versions as (string, (width, height), dx, dy)."""
    return [(entry[0], tuple(entry[2]) if len(entry) == 3 else (entry[2], entry[3])) for entry in lines]


class _SharedContext(GraphicsContextBase):
    """A graphics context that the texts of one batch drawn alike share (`Renderer._draw_batch`); it finds its
    clip path's transformed path once (Agg asks for it at every text drawn; nothing moves during a batch)."""

    def get_clip_path(self):
        found = self.__dict__.get("_qkv_clip_path")
        if found is None:
            found = self._qkv_clip_path = super().get_clip_path()
        return found


def _positions(texts) -> list[tuple[float, float]]:
    """Each text's anchor in display pixels, as `Text.draw` computes it (its transform of its position in data
    units), with the texts that share a transform object transformed in one call."""
    groups: dict[int, tuple] = {}
    points = []
    for index, text in enumerate(texts):
        transform = text.get_transform()
        points.append((float(text.convert_xunits(text._x)), float(text.convert_yunits(text._y))))
        group = groups.get(id(transform))
        if group is None:
            group = groups[id(transform)] = (transform, [])
        group[1].append(index)
    placed: list = [None] * len(texts)
    for transform, indices in groups.values():
        moved = transform.transform(np.array([points[i] for i in indices], dtype=float).reshape(-1, 2))
        for index, (x, y) in zip(indices, moved.tolist()):
            placed[index] = (x, y)
    return placed


def plain(text) -> bool:
    """Whether `Renderer._draw_batch` draws ``text`` as `Text.draw` would: a visible, plain Text (no box, path
    effects, math, TeX, wrapping or second line; not rasterized, filtered or animated). A subclass of Text is
    plain when its `draw` is Text's after a method ``_qkv_prepare(renderer)``, which the batch calls too."""
    # a Text, or a Text subclass whose only difference in drawing is `_qkv_prepare(renderer)`, called first
    # (the figures' cell numbers set their fitted size there)
    if type(text) is not Text and not hasattr(type(text), "_qkv_prepare"):
        return False
    s = text._text
    return (text.get_visible() and s != "" and "\n" not in s and "$" not in s
            and not text._bbox_patch and not text.get_path_effects() and not text.get_usetex()
            and not text.get_wrap() and not text.get_rasterized() and text.get_agg_filter() is None
            and not text.get_animated() and not text.get_transform_rotates_text()
            and not np.ma.is_masked(text._x) and not np.ma.is_masked(text._y))


class TextBatch(martist.Artist):
    """Texts drawn in one pass by `Renderer._draw_batch`, standing in a draw list for the run of texts it holds."""

    def __init__(self, texts: list, zorder: float):
        super().__init__()
        self.texts = texts
        self.set_zorder(zorder)
        self.set_in_layout(False)

    def set(self, **kwargs):
        # A class of its own `set`: matplotlib writes an Artist subclass's `set` docstring from every setter's
        # docstring when the class is made (`Artist.__init_subclass__`, ~1 ms of a fresh process) unless the
        # class defines `set` itself.
        return martist.Artist.set(self, **kwargs)

    @martist.allow_rasterization
    def draw(self, renderer):
        renderer._draw_batch(self.texts)
        self.stale = False


def _runs(artists: list) -> list:
    """``artists`` with each run of plain texts of one zorder replaced by one `TextBatch` standing where the
    run's first text stood. matplotlib draws a list sorted by zorder, stably: within one zorder the order
    is the list's, and a run ends at the next artist of its zorder that is not a plain text — so the
    texts are drawn in the same order relative to every other artist of their zorder."""
    batched: list = []
    open_runs: dict[float, list] = {}
    for artist in artists:
        zorder = artist.get_zorder()
        if plain(artist):
            run = open_runs.get(zorder)
            if run is None:
                run = open_runs[zorder] = []
                batched.append(TextBatch(run, zorder))
            run.append(artist)
        else:
            open_runs.pop(zorder, None)
            batched.append(artist)
    return batched


@contextlib.contextmanager
def batched_texts(figure) -> Iterator[None]:
    """While drawing on `Renderer`: the plain texts of ``figure`` and of its axes are drawn in runs
    (`TextBatch`) instead of one `Text.draw` each (Text.draw's own work per text was most of a worked
    example's drawing, issue 29). Only the draw lists are changed, and given back after: every Text stays
    what it was, and any other renderer (SVG, PDF, matplotlib's own Agg) draws them one by one."""
    saved = []
    try:
        for ax in figure.get_axes():
            saved.append((ax, "_children", ax._children))
            ax._children = _runs(ax._children)
        saved.append((figure, "texts", figure.texts))
        figure.texts = _runs(figure.texts)
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


def measuring_renderer(figure) -> Renderer:
    """A `Renderer` that measures text as the figure's own Agg renderer would (at the figure's dpi) without a canvas
    of the figure's size: ``figure._get_renderer()`` draws nothing but allocates its whole canvas (10-40 MB for the
    figures here) to answer the same measurements."""
    return Renderer(1, 1, figure.dpi)


class Canvas(FigureCanvasAgg):
    """`FigureCanvasAgg` drawing with `Renderer`."""

    def get_renderer(self):
        width, height = self.get_width_height(physical=True)
        key = width, height, self.figure.dpi
        if self._lastKey != key:
            self.renderer = Renderer(width, height, self.figure.dpi)
            self._lastKey = key
        return self.renderer
