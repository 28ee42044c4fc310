"""Pictures of attention: matplotlib figures (PNG, SVG, PDF) and one offline interactive page.

    >>> import qkv, qkv.viz
    >>> fig = qkv.viz.heatmap(weights, ["I", "love", "machine", "learning"])   # (Tq, Tk) → Figure
    >>> qkv.viz.save_figure(trace, "attention.svg")                            # the figure that suits it

The interactive HTML page is the explanation's HTML format (`qkv.explain.render(trace, "html")`,
also importable as `qkv.viz.html.trace_html`). Layering is one-way: viz reads qkv.explain (its
words, palette, weight scale and trace readers); qkv.explain never imports viz. Figures only read
a Trace (or arrays); they never compute attention. Korean and Japanese text: `qkv.viz.fonts`.
"""

from __future__ import annotations

import contextlib
import gc
import os
from pathlib import Path
from typing import Iterator

from .._io import FIGURE_SUFFIXES, write_atomic_with
from ..errors import InputError
from ..trace import Trace
from . import _png, fonts

__all__ = ["heatmap", "attention_grid", "projection_figure", "query_path", "mask_figure", "attention_figure",
           "cross_figure", "meeting_figure", "figure_for", "save_figure", "write_figure", "fonts", "FORMATS"]

FORMATS = FIGURE_SUFFIXES
_DPI = 150


def _format_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise InputError(f"the format {path.suffix or '(none)'!r} is not one of {', '.join(FORMATS)}",
                         source=str(path))
    return suffix[1:]


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a figure is built and written, as it was before after.

    Building and drawing a figure allocates a few hundred thousand objects, all alive until the figure is
    written; the collector's passes meanwhile free nothing, and one full pass over matplotlib's heap took
    20–70 ms of a worked example's figure (issue 29). Garbage made meanwhile is collected at the next
    collection after the block."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# Importing matplotlib makes tens of thousands of objects that live as long as the process: the collector's
# passes meanwhile free nothing (two or three full passes, 20–60 ms of a first figure's time, issue 29).
with _collector_paused():
    from .figures import (attention_figure, attention_grid, cross_figure, figure_for, heatmap, mask_figure,
                          meeting_figure, projection_figure, query_path)


def write_figure(figure, path: str | os.PathLike) -> Path:
    """Write a Figure to ``path`` atomically, as PNG, SVG or PDF by the extension. Returns the Path.

    Raises InputError naming the path for another extension or a missing directory.
    """
    target = Path(path)
    fmt = _format_of(target)
    # SVG text stays text (<text> elements: searchable, editable; fonts.context sets svg.fonttype
    # "none"); PDF embeds TrueType subsets.
    # PNG: savefig's pixels, encoded by `_png` (Pillow's encoder took a fifth of a figure's time).
    with fonts.context(), _collector_paused():
        if fmt == "png":
            return write_atomic_with(target, lambda handle: _png.write_png(figure, handle, _DPI))
        return write_atomic_with(target, lambda handle: figure.savefig(handle, format=fmt, dpi=_DPI,
                                                                       metadata={"Date": None}))


def save_figure(trace: Trace, path: str | os.PathLike, *, lang: str = "en", digits: int | None = None) -> Path:
    """Draw the figure that suits ``trace`` (see `figure_for`) and write it to ``path``.

    The format follows the extension: .png, .svg or .pdf; anything else raises InputError naming
    the path and the allowed extensions (checked before drawing). lang: "en" or "ko" (Korean labels,
    drawn with the CJK font `qkv.viz.fonts` finds; one warning when there is none). digits: the decimals
    of every number (as the text's --digits; default the trace's own per step). Returns the Path.
    """
    target = Path(path)
    _format_of(target)
    with _collector_paused():
        with fonts.context():
            figure = figure_for(trace, lang=lang, digits=digits)
        return write_figure(figure, target)
