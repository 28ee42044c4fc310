"""Shared look of the figures: fonts (`qkv.viz.fonts`), label thinning, the palette and the words.

The palette, the weight scale and the words are the explain layer's (`qkv.explain.style`,
`qkv.explain.texts`, keys ``fig.*``): one palette and one en/ko table for every renderer.
"""

from __future__ import annotations

from typing import Any

from ..explain import style as _shared
from ..explain import texts as _texts
from . import fonts

__all__ = ["HEAD_COLOURS", "label_font", "thin_ticks", "ticks_room", "Words", "words", "short"]

HEAD_COLOURS = [entry[0] for entry in _shared.HEAD_COLOURS]


def label_font() -> list[str]:
    """Font family list for any text that may hold Hangul or kana (see `qkv.viz.fonts.families`)."""
    return list(fonts.families())


def thin_ticks(n: int, room: int) -> list[int]:
    """Indices of the labels to draw on an axis of n items with room for about ``room`` labels.

    Every k-th label, k rounded up to 2, 5, 10, 20, … so that no more than ``room`` appear.
    """
    if n <= 0:
        return []
    step = max(1, -(-n // max(1, room)))
    if step > 1:  # round the stride to 2, 5, 10, 20, 50, … so positions read easily
        for nice in (2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000):
            if nice >= step:
                step = nice
                break
    return list(range(0, n, step))


def short(label: str, width: int = 14) -> str:
    """A token label cut to ``width`` characters (with …), newlines shown as ⏎."""
    text = label.replace("\n", "⏎").replace("\t", "⇥")
    return text if len(text) <= width else text[: width - 1] + "…"


class Words:
    """The figure words of one language: ``w["keys"]`` or ``w("head", h=3)`` (keys ``fig.*`` of the texts)."""

    def __init__(self, lang: str):
        _texts.check_lang(lang)
        self.lang = lang

    def __call__(self, key: str, **values: Any) -> str:
        return _texts.text(self.lang, f"fig.{key}", **values)

    def __getitem__(self, key: str) -> str:
        return self(key)


def words(lang: str) -> Words:
    """Figure labels in ``lang`` ("en" or "ko"); Korean always (a CJK font draws it, see `qkv.viz.fonts`)."""
    if lang not in ("en", "ko"):
        raise ValueError(f"lang must be 'en' or 'ko', got {lang!r}")
    return Words(lang)


def ticks_room(inches: float, font_pt: float = 8.0, spacing: float = 1.5) -> int:
    """How many labels of size ``font_pt`` fit along ``inches`` without touching."""
    return max(2, int(inches * 72 / (font_pt * spacing)))
