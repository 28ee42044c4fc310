"""The look shared by every renderer (text, Markdown, HTML page, figures): one palette, one colour scale
for weights, one default number of decimals.

Kept here, below the figures (`qkv.viz` reads it; nothing here imports viz), so that a head is the
same colour in the terminal, the page and a PNG, and a weight of 0.25 the same shade everywhere.
"""

from __future__ import annotations

__all__ = ["DIGITS", "HEAD_COLOURS", "head_colour", "WEIGHT_GAMMA", "WEIGHT_CMAP", "MASKED_COLOUR", "MASKED_HATCH",
           "weight_shade", "LEGEND_TICKS"]

DIGITS = 4
"""Decimals shown when neither the caller nor the trace asks for another precision (every format)."""

# Heads as in the seed figures: head 0 blue, head 1 green, then orange, purple, teal, red.
# Each entry: (hex for HTML and figures, rich's colour name for the terminal, LaTeX's colour name).
HEAD_COLOURS = [("#1f6fd1", "blue", "blue"), ("#2a9d3c", "green", "green"), ("#e07b00", "dark_orange", "orange"),
                ("#9b3fb5", "magenta", "purple"), ("#138a9e", "cyan", "teal"), ("#c8372d", "red", "red")]


def head_colour(head: int, which: str = "hex") -> str:
    """The colour of head ``head`` (0-based): which = "hex" | "rich" | "latex"."""
    hexa, rich, latex = HEAD_COLOURS[head % len(HEAD_COLOURS)]
    return {"hex": hexa, "rich": rich, "latex": latex}[which]


# One honest scale for attention weights, in every view: the absolute weight 0…1 (never rescaled to a
# row's or a head's maximum), shaded by weight ** WEIGHT_GAMMA so that the small weights of long
# inputs (1/512 ≈ 0.002) stay visible. Every view draws this scale's legend.
WEIGHT_GAMMA = 0.5
WEIGHT_CMAP = "Blues"
LEGEND_TICKS = (0.0, 0.01, 0.1, 0.25, 0.5, 1.0)
MASKED_COLOUR = "#d9d9d9"        # masked (−∞ before softmax) cells: light grey, hatched
MASKED_HATCH = "///"

# Matplotlib's Blues at its two ends, for the page (which shades without matplotlib).
_LIGHT, _DARK = (247, 251, 255), (8, 48, 107)


def weight_shade(weight: float) -> tuple[int, int, int]:
    """RGB of a weight on the shared scale (a linear blend of Blues' ends at weight ** WEIGHT_GAMMA)."""
    t = min(1.0, max(0.0, float(weight))) ** WEIGHT_GAMMA
    return tuple(round(a + t * (b - a)) for a, b in zip(_LIGHT, _DARK))
