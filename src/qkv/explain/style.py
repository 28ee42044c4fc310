"""The look shared by every renderer (text, Markdown, HTML page, figures): one palette, one colour scale
for weights, one default number of decimals.

Kept here, below the figures (`qkv.viz` reads it; nothing here imports viz), so that a head is the
same colour in the terminal, the page and a PNG, and a weight of 0.25 the same shade everywhere.
"""

from __future__ import annotations

__all__ = ["DIGITS", "HEAD_COLOURS", "head_colour", "WEIGHT_GAMMA", "WEIGHT_CMAP", "MASKED_COLOUR", "MASKED_HATCH",
           "weight_shade", "LEGEND_TICKS", "BLUES_STOPS"]

DIGITS = 4
"""Decimals shown when neither the caller nor the trace asks for another precision (every format)."""

# Heads as in the posts' figures: head 0 blue, head 1 green, then orange, purple, teal, red.
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

# Matplotlib's Blues as its nine stops (ColorBrewer), so the page (which shades without matplotlib)
# paints a weight the colour the figures paint it.
BLUES_STOPS = ((247, 251, 255), (222, 235, 247), (198, 219, 239), (158, 202, 225), (107, 174, 214),
               (66, 146, 198), (33, 113, 181), (8, 81, 156), (8, 48, 107))


def weight_shade(weight: float) -> tuple[int, int, int]:
    """RGB of a weight on the shared scale: Blues at weight ** WEIGHT_GAMMA (piecewise linear between stops)."""
    t = min(1.0, max(0.0, float(weight))) ** WEIGHT_GAMMA * (len(BLUES_STOPS) - 1)
    k = min(int(t), len(BLUES_STOPS) - 2)
    f = t - k
    return tuple(round(a + f * (b - a)) for a, b in zip(BLUES_STOPS[k], BLUES_STOPS[k + 1]))
