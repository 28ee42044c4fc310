"""The look shared by every renderer (text, Markdown, HTML page, figures): one palette, one colour scale
for weights, one default number of decimals.

Kept here, below the figures (`qkv.viz` reads it; nothing here imports viz), so that a head is the
same colour in the terminal, the page and a PNG, and a weight of 0.25 the same shade everywhere.
"""

from __future__ import annotations

__all__ = ["DIGITS", "HEAD_COLOURS", "head_colour", "contrast", "luminance", "readable", "TEXT_CONTRAST", "WEIGHT_GAMMA", "WEIGHT_CMAP", "MASKED_COLOUR", "MASKED_HATCH",
           "weight_shade", "LEGEND_TICKS", "BLUES_STOPS"]

DIGITS = 4
"""Decimals shown when neither the caller nor the trace asks for another precision (every format)."""

# Heads as in the posts' figures: head 0 blue, head 1 green, then orange, purple, teal, red.
# Each entry: (hex for HTML and figures, rich's colour name for the terminal, LaTeX's colour name).
HEAD_COLOURS = [("#1f6fd1", "blue", "blue"), ("#2a9d3c", "green", "green"), ("#e07b00", "dark_orange", "orange"),
                ("#9b3fb5", "magenta", "purple"), ("#138a9e", "cyan", "teal"), ("#c8372d", "red", "red")]


def head_colour(head: int, which: str = "hex") -> str:
    """The colour of head ``head`` (0-based): which = "hex" | "rich" | "latex" | "text".

    "text": the hex colour for text on a white page, the palette's colour darkened just enough to reach
    WCAG AA's 4.5:1 contrast (`readable`): the orange and green heads (3.0:1, 3.5:1 as they are) become
    darker orange and green, so head-coloured numbers stay readable."""
    hexa, rich, latex = HEAD_COLOURS[head % len(HEAD_COLOURS)]
    if which == "text":
        return readable(hexa, ratio=TEXT_CONTRAST + 0.2)     # a margin for the pale panels text sits on
    return {"hex": hexa, "rich": rich, "latex": latex}[which]


TEXT_CONTRAST = 4.5
"""WCAG 2 AA's contrast for normal text: every text colour the pages use reaches it on its background."""


def _rgb(colour: str | tuple) -> tuple[int, int, int]:
    if isinstance(colour, str):
        h = colour.lstrip("#")
        if len(h) == 3:                                  # "#abc" → "#aabbcc"
            h = "".join(c * 2 for c in h)
        return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)
    return tuple(int(c) for c in colour)


def luminance(colour: str | tuple) -> float:
    """WCAG 2's relative luminance of an sRGB colour ("#rrggbb" or (r, g, b) in 0…255)."""
    def linear(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(c) for c in _rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str | tuple, b: str | tuple) -> float:
    """WCAG 2's contrast ratio of two colours, 1 … 21."""
    la, lb = luminance(a), luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def readable(colour: str, background: str = "#ffffff", ratio: float = TEXT_CONTRAST) -> str:
    """``colour`` as text on ``background``: itself when it contrasts ``ratio`` or more, else mixed toward black
    (on a light background) in steps of 1 % until it does. Returns "#rrggbb"."""
    rgb, towards = _rgb(colour), (0, 0, 0) if luminance(background) > 0.18 else (255, 255, 255)
    for step in range(101):
        mixed = tuple(round(c + (t - c) * step / 100) for c, t in zip(rgb, towards))
        if contrast(mixed, background) >= ratio:
            return "#{:02x}{:02x}{:02x}".format(*mixed)
    return "#{:02x}{:02x}{:02x}".format(*towards)


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
