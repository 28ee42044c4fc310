"""Step-by-step explanations of a Trace, in English or Korean: terminal text, Markdown, HTML, JSON.

    >>> import qkv.examples, qkv.explain
    >>> trace = qkv.examples.run("self-attention")
    >>> print(qkv.explain.render(trace, "text", lang="ko"))          # doctest: +SKIP

The renderers only read the Trace: every number printed is a recorded step's value (or a slice
of one). ``digits`` is the number of decimals shown; None uses the precision the trace asks for
per step (the worked examples carry the precision their post prints), falling back to
`qkv.explain.style.DIGITS` (4) — the one default of every format (text, Markdown, HTML, JSON, figures; the
HTML page's views, which store what they show, use DIGITS, its derivation each step's own).

Layering: qkv.explain never imports qkv.viz (the figures read explain's words, palette and trace
readers, one way). The interactive HTML page is `qkv.explain.page`.
``by_hand=True`` shows the by-hand steps (recorded by ``qkv.examples.run(..., by_hand=True)``)
and a table of their drift from the exact values.

Long matrices are shortened as NumPy prints them: an axis longer than 9 shows its first and last 4
entries with an ellipsis between (the followed query's row is kept), the caption giving the full
shape; a vector or a per-key table longer than 32 likewise. ``full=True`` prints every number. The
JSON format always holds every number (it is the machine-readable record).
"""

from __future__ import annotations

from ..trace import Trace
from .document import build
from .texts import LANGS

__all__ = ["render", "derivation_html", "FORMATS", "LANGS"]

FORMATS = ("text", "markdown", "html", "json")


def _check(fmt: str | None, digits: int | None) -> None:
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if digits is not None and (isinstance(digits, bool) or not isinstance(digits, int) or not 0 <= digits <= 12):
        raise ValueError(f"digits must be a whole number from 0 to 12 (or None), got {digits!r}")


def render(trace: Trace, fmt: str, *, lang: str = "en", digits: int | None = None, by_hand: bool = False,
           color: bool = False, full: bool = False, lenses: dict | None = None) -> str:
    """The explanation of ``trace`` as text | markdown | html | json.

    text: plain text laid out by rich (``color=True`` adds terminal colours: heads as in the posts' figures);
    markdown: Markdown with LaTeX matrices (``\\begin{bmatrix}``); html: the interactive page
    `qkv.explain.page.trace_html` (which embeds `derivation_html`); json: the blocks of the explanation
    with their formatted numbers plus the full Trace (``Trace.from_dict(doc["trace"])`` reads it back).
    full: every row and column of every matrix, no ellipses (text, markdown, html; json is always full).
    lenses: html only — the several-heads views and the neuron view's products (`qkv.notebook.page_lenses`).
    """
    _check(fmt, digits)
    if fmt == "html":
        from .page import trace_html        # the interactive page; it embeds derivation_html

        return trace_html(trace, lang=lang, digits=digits, full=full, lenses=lenses)
    from . import formats

    ctx = build(trace, lang=lang, digits=digits, by_hand=by_hand, full=full)
    if fmt == "text":
        return formats.to_text(ctx, color=color)
    if fmt == "markdown":
        return formats.to_markdown(ctx)
    return formats.to_json(ctx)


def derivation_html(trace: Trace, *, lang: str = "en", digits: int | None = None, by_hand: bool = False,
                    full: bool = False) -> str:
    """An HTML fragment (no <html>/<head>) of the step-by-step derivation, for the interactive page.
    Long matrices are elided as in `render` unless ``full``."""
    _check(None, digits)
    from . import formats

    return formats.to_html(build(trace, lang=lang, digits=digits, by_hand=by_hand, full=full))
