"""Fonts for figures with Korean and Japanese text — one helper for every figure in qkv.

    >>> from qkv.viz import fonts
    >>> with fonts.context():                  # while drawing and while saving
    ...     fig = Figure(); fig.text(0.5, 0.5, "쿼리 私は")
    ...     fig.savefig("x.svg")

matplotlib's default DejaVu Sans has no Hangul or kanji. `families()` puts CJK fonts after it in
the family list, and matplotlib (≥ 3.6) falls back along that list glyph by glyph, so Latin text
keeps DejaVu Sans and 쿼리 or 私は come from the CJK font. Looked for, in this order:

- NanumGothic shipped inside the koreanize-matplotlib package (a run-time dependency of qkv):
  Hangul, kana and many Hanja, but not every Japanese kanji (it lacks 学);
- Noto Sans CJK (Debian's fonts-noto-cjk, installed by `make`), which covers Japanese and Chinese
  too, and any other installed CJK font that matplotlib knows.

Nothing happens at import: the fonts are found and registered with matplotlib's font manager
(``fontManager.addfont``, never by changing rcParams) the first time they are asked for, and
`context()` sets the family list only inside its ``with`` block. koreanize-matplotlib itself is
never imported (importing it rewrites rcParams); its font file is located on disk. When no CJK
font exists, `families()` warns once, one line, and the text is drawn as boxes.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import threading
import warnings
from pathlib import Path
from typing import Iterator

__all__ = ["families", "cjk_families", "context", "font_kwargs", "NoCJKFontWarning"]

_BASE = "DejaVu Sans"
# Installed CJK families matplotlib may know, by preference (Japanese-capable ones after Nanum).
_KNOWN = ("Noto Sans CJK JP", "Noto Sans CJK KR", "Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans KR",
          "Noto Sans JP", "Source Han Sans", "NanumGothic", "Nanum Gothic", "Malgun Gothic", "AppleGothic",
          "Apple SD Gothic Neo", "IPAexGothic", "IPAGothic", "Hiragino Sans", "WenQuanYi Zen Hei",
          "Droid Sans Fallback", "UnDotum", "Baekmuk Gulim")


class NoCJKFontWarning(UserWarning):
    """No font with Hangul and kana was found: such text is drawn as boxes."""


def _nanum_file() -> Path | None:
    """NanumGothic.ttf inside the installed koreanize-matplotlib, found without importing the package."""
    spec = importlib.util.find_spec("koreanize_matplotlib")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "fonts" / "NanumGothic.ttf"
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=1)
def cjk_families() -> tuple[str, ...]:
    """Family names of the CJK fonts found (registered with matplotlib on first call); () if none."""
    from matplotlib import font_manager

    manager = font_manager.fontManager
    found: list[str] = []
    nanum = _nanum_file()
    if nanum is not None:
        for face in (nanum, nanum.with_name("NanumGothicBold.ttf")):
            if face.is_file():
                manager.addfont(str(face))                # registers the file; rcParams stay untouched
        found.append(font_manager.FontProperties(fname=str(nanum)).get_name())
    known = {entry.name for entry in manager.ttflist}
    if not any(name.startswith("Noto Sans CJK") for name in known):
        for folder in ("/usr/share/fonts/opentype/noto", "/usr/share/fonts/opentype/noto-cjk"):
            regular = Path(folder) / "NotoSansCJK-Regular.ttc"
            if regular.is_file():                         # installed after matplotlib built its font cache
                for face in (regular, regular.with_name("NotoSansCJK-Bold.ttc")):
                    if face.is_file():
                        manager.addfont(str(face))
                known = {entry.name for entry in manager.ttflist}
                break
    for name in _KNOWN:                                   # one Japanese-capable font after Nanum is enough
        if name in known and name not in found:
            found.append(name)
            if len(found) >= 2:
                break
    return tuple(found)


@functools.lru_cache(maxsize=1)
def families() -> tuple[str, ...]:
    """The family list for text that may hold Hangul or kana: DejaVu Sans, then the CJK fonts found.

    Warns once (NoCJKFontWarning, one line) when there is no CJK font."""
    found = cjk_families()
    if not found:
        from ..explain.texts import text

        warnings.warn(text("en", "fig.no_cjk_font"), NoCJKFontWarning, stacklevel=2)
    return (_BASE, *found)


def font_kwargs() -> dict:
    """``{"fontfamily": families()}`` to pass to a Text when drawing outside `context()`."""
    return {"fontfamily": list(families())}


_LOOKUPS = threading.Lock()
_DEPTH = [0]


@contextlib.contextmanager
def _remembered_lookups() -> Iterator[None]:
    """While any `context()` is open, the font manager answers a repeated font look-up from a table.

    matplotlib looks the files up again for every text it measures and draws: three families (DejaVu Sans,
    the CJK fallbacks), each a `findfont` that reads eleven rcParams and hashes a FontProperties (about a
    sixth of a figure's CPU time, issue 29). Inside the block the rcParams are fixed, so the answer for the
    same properties is the same; the table lives as long as the outermost block and is dropped after. The
    size is not part of the question while every known font is scalable (TrueType and OpenType files are):
    a scalable font scores the same at any size (font_manager.score_size), so a figure's dozen text sizes
    need one look-up, not one each (each a pass over every installed font)."""
    from matplotlib import font_manager

    manager = font_manager.fontManager
    with _LOOKUPS:
        _DEPTH[0] += 1
        if _DEPTH[0] == 1:
            find = manager._find_fonts_by_props          # the class's method, bound
            table: dict = {}
            sized = any(entry.size != "scalable" for entry in (*manager.ttflist, *manager.afmlist))

            def remembered(prop, fontext="ttf", directory=None, fallback_to_default=True, rebuild_if_missing=True):
                if isinstance(prop, font_manager.FontProperties):
                    key = (tuple(prop.get_family()), prop.get_style(), prop.get_variant(), prop.get_weight(),
                           prop.get_stretch(), prop.get_size_in_points() if sized else None, prop.get_file(),
                           prop.get_math_fontfamily(), fontext, directory, fallback_to_default)
                else:
                    key = (prop, fontext, directory, fallback_to_default)
                found = table.get(key)
                if found is None:
                    found = table[key] = find(prop, fontext, directory, fallback_to_default, rebuild_if_missing)
                return list(found)

            manager._find_fonts_by_props = remembered
    try:
        yield
    finally:
        with _LOOKUPS:
            _DEPTH[0] -= 1
            if _DEPTH[0] == 0:
                manager.__dict__.pop("_find_fonts_by_props", None)


@contextlib.contextmanager
def context() -> Iterator[None]:
    """Inside the block, new text uses `families()` and SVG keeps text as <text> elements (font type
    "none"); matplotlib's rcParams are restored on exit. Without a CJK font, matplotlib's per-glyph
    warnings are silenced: the one NoCJKFontWarning already said so. Repeated font look-ups are answered
    from a table while any such block is open (`_remembered_lookups`).

    Text is drawn without hinting (``text.hinting: no_hinting``, as matplotlib's SVG and PDF writers measure
    it): FreeType's hinting of every glyph was a third of a worked example's drawing time in the PNG (issue
    29), and at the figures' 150 dpi the unhinted numbers read as well (stems no longer snapped to pixels;
    "−0.75" no longer touches its cell's edges)."""
    import matplotlib

    chosen = list(families())
    with matplotlib.rc_context({"font.family": chosen, "svg.fonttype": "none", "text.hinting": "no_hinting"}), \
            warnings.catch_warnings(), _remembered_lookups():
        if len(chosen) == 1:
            warnings.filterwarnings("ignore", message=r".*[Gg]lyph .* missing from")
        yield
