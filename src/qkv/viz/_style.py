"""Shared look of the figures: fonts (CJK when installed), label thinning, head colours, en/ko words."""

from __future__ import annotations

import contextlib
import functools
import warnings
from typing import Iterator

__all__ = ["HEAD_COLOURS", "cjk_font", "label_font", "quiet_glyphs", "thin_ticks", "ticks_room", "words", "short"]

# Seed 000 colours heads blue and green; further heads continue around a colour-blind-safe palette.
HEAD_COLOURS = ["#3b7dd8", "#2ca25f", "#e6862a", "#8e5bc2", "#d1495b", "#1aa3a3", "#a67c00", "#6b7a8f"]

_CJK_NAMES = ("CJK", "Nanum", "Noto Sans KR", "Noto Serif KR", "Malgun", "AppleGothic", "Apple SD Gothic",
              "UnDotum", "Baekmuk", "WenQuanYi", "Droid Sans Fallback", "IPAGothic", "IPAexGothic")


@functools.lru_cache(maxsize=1)
def cjk_font() -> str | None:
    """The family name of an installed font with Hangul and kanji, or None (then labels stay English)."""
    from matplotlib import font_manager

    for entry in font_manager.fontManager.ttflist:
        if any(key.lower() in entry.name.lower() for key in _CJK_NAMES):
            return entry.name
    return None


def label_font() -> list[str]:
    """Font family list for token labels: DejaVu Sans first, a CJK font as fallback when one exists."""
    family = ["DejaVu Sans"]
    if cjk_font():
        family.append(cjk_font())
    return family


@contextlib.contextmanager
def quiet_glyphs() -> Iterator[None]:
    """Silence matplotlib's "Glyph … missing from font" warnings (a token like 私は without a CJK font)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*[Gg]lyph .* missing from")
        warnings.filterwarnings("ignore", message=r".*[Mm]atplotlib currently does not support")
        yield


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


_WORDS = {
    "en": {
        "queries": "queries", "keys": "keys", "queries_dec": "queries (decoder)", "keys_enc": "keys (encoder)",
        "weight": "weight", "head": "head", "layer": "layer", "scores": "raw scores  q·k",
        "scaled": "scaled scores  q·k/√dₖ", "biased": "scaled scores + bias", "weights": "weights  softmax",
        "masked": "masked (−∞)", "query": "query", "mask": "mask added before softmax",
        "mask_note": "0 = may attend, −∞ = blocked", "reshape": "reshape T×d → T×h×dₕ (no arithmetic)",
        "concat": "heads concatenated", "projection": "Q·K·V projections, heads, and W_O",
        "per_head": "per-head outputs", "attention": "attention weights",
    },
    "ko": {
        "queries": "쿼리", "keys": "키", "queries_dec": "쿼리 (디코더)", "keys_enc": "키 (인코더)",
        "weight": "가중치", "head": "헤드", "layer": "층", "scores": "점수  q·k",
        "scaled": "스케일된 점수  q·k/√dₖ", "biased": "스케일된 점수 + bias", "weights": "가중치  softmax",
        "masked": "마스크 (−∞)", "query": "쿼리", "mask": "softmax 전에 더하는 마스크",
        "mask_note": "0 = 볼 수 있음, −∞ = 가려짐", "reshape": "reshape T×d → T×h×dₕ (계산 없음)",
        "concat": "헤드 이어 붙이기", "projection": "Q·K·V projection, 헤드, W_O",
        "per_head": "헤드별 출력", "attention": "어텐션 가중치",
    },
}


def words(lang: str) -> dict[str, str]:
    """Figure labels in ``lang``; Korean only when a CJK font can draw it, otherwise English."""
    if lang not in ("en", "ko"):
        raise ValueError(f"lang must be 'en' or 'ko', got {lang!r}")
    return _WORDS["ko"] if lang == "ko" and cjk_font() else _WORDS["en"]


def ticks_room(inches: float, font_pt: float = 8.0, spacing: float = 1.5) -> int:
    """How many labels of size ``font_pt`` fit along ``inches`` without touching."""
    return max(2, int(inches * 72 / (font_pt * spacing)))
