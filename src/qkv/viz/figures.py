"""matplotlib figures of a Trace: heatmaps, the layers × heads grid, the layer of "Attention의 projection:
Q·K·V와 멀티 헤드" (X → W_Q/W_K/W_V → Q/K/V → heads → attention per head → concat → W_O → Y → R + Y),
one query's whole chain (q·k → ÷√dₖ → softmax → each value row × its weight → z), the worked examples
from their inputs (X → W_Q, W_K, W_V → q, k, v; cross-attention's decoder row and encoder rows), the
multi-head step (z⁽¹⁾ … → Concat → z_concat·W_O), the group meeting of "어텐션이 조모임이라면", and masks.

Every function returns a `matplotlib.figure.Figure` (no pyplot state); `save_figure` writes one as
PNG, SVG or PDF. Figures only read recorded numbers; the arithmetic they write out (a sum of
products, a quotient, a sum) is formed from recorded numbers beside the recorded result, and is true
as printed (`_sop`, `_quot`: the operands' decimals chosen as the text formats choose them). Conventions
shared by every view:
- counting starts at 0 (layers, heads, tokens, columns), as the CLI's --layer/--head and Python; a
  worked example's heads are numbered as its post numbers them (`qkv.trace.head_number`);
- one colour scale for weights (`qkv.explain.style`): the absolute weight 0…1, shaded by √weight,
  with its legend in every figure; masked cells are hatched grey and written "masked";
- digits: the trace's own precision for a step when it carries one, else `qkv.explain.style.DIGITS`
  (more where a written equation needs them to be true as printed).
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np
from matplotlib import colors as mcolors
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..explain import style as shared
from ..explain.parts import (MODIFIED_SCORES, Part, as_heads, as_layers, attention_parts, layer_weights, step_heads,
                            title_of, token_labels)
from ..trace import (CONCAT, K, K_HEADS, MASK, MEMORY, OUT, Q, Q_HEADS, RESIDUAL, SCALED_SCORES, SCORES, V, V_HEADS,
                     W_K, W_O, W_Q, W_V, WEIGHTS, X, Y, BIASED_SCORES, Trace, head_number,
                     in_language, token_number)
from ..errors import plural
from ..explain.texts import key_names, values_of
from . import _style
from . import fonts

__all__ = ["heatmap", "attention_grid", "projection_figure", "query_path", "mask_figure", "attention_figure",
           "cross_figure", "meeting_figure", "figure_for"]

_SMALL = 16          # up to this many tokens on an axis every cell gets its value written
_HATCH_CELLS = 128   # up to this many tokens on an axis masked cells are hatched one by one
_NUMBER_FONT = "DejaVu Sans"   # digits need no CJK fallback (and skipping it draws faster)
_DIGIT = re.compile(r"\d")


def _cmap() -> mcolors.Colormap:
    import matplotlib

    return matplotlib.colormaps[shared.WEIGHT_CMAP].with_extremes(bad=shared.MASKED_COLOUR)


def _norm() -> mcolors.Normalize:
    """The one weight scale: absolute 0…1, shaded by weight ** WEIGHT_GAMMA (√)."""
    return mcolors.PowerNorm(gamma=shared.WEIGHT_GAMMA, vmin=0.0, vmax=1.0, clip=True)


def _digits(trace: Trace | None, name: str, digits: int | None) -> int:
    """The caller's digits, else the trace's precision for ``name`` (trace.meta["digits"]), else DIGITS."""
    from ..explain.numbers import digits_for

    if digits is not None:
        return int(digits)
    table = (trace.info.digits or {}) if trace is not None else {}
    return digits_for(name, table if isinstance(table, dict) else {}, default=shared.DIGITS)


def _num(value: float, digits: int) -> str:
    """A number as every renderer writes it (`qkv.explain.numbers.fmt`, rounded half away from zero),
    with a typographic minus (−, as matplotlib's own tick labels write it)."""
    from ..explain.numbers import fmt_typeset

    return fmt_typeset(value, digits)


def _operand(value: float, digits: int) -> str:
    """A shown number as an operand: negative ones in parentheses, "0.92 × (−0.18)"."""
    text = _num(value, digits)
    return f"({text})" if text.startswith("−") else text


def _shown(value: float, digits: int):
    """The exact Decimal a reader sees for ``value`` at ``digits`` decimals (None for ±∞ and NaN)."""
    from decimal import Decimal, InvalidOperation

    try:
        return Decimal(_num(value, digits).replace("−", "-"))
    except InvalidOperation:
        return None


def _agrees(total, result: float, digits: int) -> bool:
    """Does the exact ``total`` of shown numbers, rounded as a person rounds, print as ``result`` does?"""
    from ..explain.numbers import fmt_decimal

    if total is None:
        return False
    wanted = _num(result, digits)
    if "e" in wanted:        # a tiny number is written in scientific notation ("1.0e−43"): compare as written
        return _num(float(total), digits) == wanted
    return fmt_decimal(total, digits).replace("-", "−") == wanted


_MORE_DIGITS = 4   # at most this many more decimals on operands before a line says "≈" instead of "="


def _sop(pairs: Sequence[tuple[float, float]], result: float, da: int, db: int, dr: int, *,
         words=None) -> tuple[str, bool]:
    """"a₁ × b₁ + a₂ × b₂ + … = r" with the recorded result r at dr decimals, and whether it is true as
    printed. The operands are written as the text formats write the same line (`qkv.explain.document.fit_dots`,
    one rule for every renderer): each at its step's decimals (da, db), and where the shown products
    would not add up to r, those not already exact get the fewest extra decimals that make it true;
    "≈" in place of "=" when none do. A sum of more than MATRIX_LIMIT products is shortened to its first
    terms, "…", its last (`shown_terms`); r is the total of all of them."""
    return _sop_lines([(pairs, result)], da, db, dr, words=words)[0]


def _sop_block(rows: Sequence[tuple[Sequence[tuple[float, float]], float]], da: int, db: int, dr: int, *,
               words=None) -> list[str]:
    """`_sop`'s line for each (pairs, result) of one block (the q·k of every key, the columns of a row times a
    matrix), its operands at ONE precision for the whole block (`document.fit_dots`: a block whose lines were
    fitted one by one read (−1.818) × (−0.190) under (−1.81844) × (−0.86132) for the same q); each line fitted
    alone, "≈" where even that fails, only where no common precision makes every line true."""
    return [line for line, _ in _sop_lines(rows, da, db, dr, words=words)]


def _sop_lines(rows, da: int, db: int, dr: int, *, words=None) -> list[tuple[str, bool]]:
    """(line, whether it holds) for each (pairs, result) of one block (`document.fit_dots`)."""
    from ..explain.document import Num, fit_dots

    fitted = fit_dots([([Num(float(a), da) for a, _ in pairs], [Num(float(b), db) for _, b in pairs],
                        Num(float(result), dr)) for pairs, result in rows])
    return [(_written_sop(ops, len(pairs), result, dr, holds, words), holds)
            for (pairs, result), (ops, holds) in zip(rows, fitted)]


def _written_sop(ops, n: int, result: float, dr: int, ok: bool, words) -> str:
    """"a₁ × b₁ + … = r" from fitted operands (``ops``: the n left ones, then the n right ones)."""
    from ..explain.document import shown_terms

    terms = []
    for i in shown_terms(n):
        if i is None:
            hidden = n - len(shown_terms(n)) + 1
            terms.append(words("more_terms", n=hidden) if words is not None else "…")
        else:
            terms.append(f"{_operand(ops[i].value, ops[i].digits)} × {_operand(ops[n + i].value, ops[n + i].digits)}")
    return f"{' + '.join(terms)} {'=' if ok else '≈'} {_num(result, dr)}"


def _quot(numerator: float, denominator: float, result: float, dt: int, dr: int, *, denominator_text: str | None = None,
          exact_denominator=None) -> tuple[str, bool]:
    """"a / b = r" and whether it is true as printed. ``denominator_text`` writes b symbolically (e.g.
    "√2") with its exact Decimal value ``exact_denominator``; else b is shown at dt decimals like a."""
    a = _shown(numerator, dt)
    b = exact_denominator if denominator_text is not None else _shown(denominator, dt)
    ok = a is not None and bool(b) and _agrees(a / b, result, dr)
    shown_b = denominator_text if denominator_text is not None else _num(denominator, dt)
    return f"{_num(numerator, dt)} / {shown_b} {'=' if ok else '≈'} {_num(result, dr)}", ok


def _sum_of_products(pairs: Sequence[tuple[float, float]], result: float, digits_a: int, digits_b: int,
                     digits_result: int) -> str:
    """One line "a₁ × b₁ + … = r", true as printed (`_sop`)."""
    return _sop(pairs, result, digits_a, digits_b, digits_result)[0]


def _decimal_zero():
    from decimal import Decimal

    return Decimal(0)


def _matrix(value: Any, name: str) -> np.ndarray:
    """A (Tq, Tk) float array; (1, Tq, Tk) accepted. Raises ValueError naming the shape."""
    array = np.asarray(value, dtype=np.float64) if np.asarray(value).dtype != bool else np.asarray(value)
    while array.ndim > 2 and array.shape[0] == 1:
        array = array[0]
    if array.ndim != 2:
        raise ValueError(f"{name} has shape {np.shape(value)}, expected (Tq, Tk)")
    return array


def _blocked(mask: Any, shape: tuple[int, int]) -> np.ndarray | None:
    """Boolean (Tq, Tk): True where the key is masked. mask is boolean (True = may attend) or 0/−∞."""
    if mask is None:
        return None
    array = np.asarray(mask)
    while array.ndim > 2:
        array = array[0]     # masks are the same for every head in practice; show the first
    blocked = ~array if array.dtype == bool else np.isneginf(array)
    try:
        return np.broadcast_to(blocked, shape)
    except ValueError:
        raise ValueError(f"mask has shape {np.shape(mask)} but the weights are {shape}") from None


def _head_mask(trace: Trace, prefix: str, head: int) -> np.ndarray | None:
    mask = step_heads(trace, prefix + MASK)
    return None if mask is None else np.isneginf(mask[head if mask.shape[0] > 1 else 0])


def _axis_side(n: int) -> float:
    """Inches for an axis of n cells: roomy cells with numbers when small, at most 7.5 in when large."""
    return 0.55 * n if n <= _SMALL else min(7.5, max(5.0, 0.045 * n + 3.0))


def _set_token_ticks(ax, axis: str, tokens: Sequence[str], inches: float) -> None:
    """Token labels on one axis, thinned to what fits in ``inches``; x labels turn when they would touch."""
    n = len(tokens)
    picked = _style.thin_ticks(n, _style.ticks_room(inches, 7.5))
    texts = [_style.short(tokens[i]) if len(picked) == n else f"{_style.short(tokens[i], 10)} ({i})"
             for i in picked]
    size = 8 if n <= 64 else 7
    fonts_kw = {"fontsize": size, **fonts.font_kwargs()}
    if axis == "x":
        ax.set_xticks(picked)
        room_pt = inches * 72 / max(1, len(picked))        # width of one label's slot
        widest_pt = max((len(t) for t in texts), default=0) * 0.62 * size
        if widest_pt <= 0.9 * room_pt:
            ax.set_xticklabels(texts, **fonts_kw)
        elif len(picked) <= 8 and widest_pt <= 2.0 * room_pt:      # a slanted label still clears its neighbour
            ax.set_xticklabels(texts, rotation=45, ha="right", rotation_mode="anchor", **fonts_kw)
        else:
            ax.set_xticklabels(texts, rotation=90, **fonts_kw)
        for label, text in zip(ax.get_xticklabels(), texts):
            # A label that fits its slot stays upright even when its neighbours turn: a turned "I"
            # reads as "–" or "/" (issue 19).
            if len(text) * 0.62 * size <= 0.9 * room_pt:
                label.set_rotation(0)
                label.set_horizontalalignment("center")
                label.set_rotation_mode("default")
    else:
        ax.set_yticks(picked)
        ax.set_yticklabels(texts, **fonts_kw)
    ax.tick_params(length=2, pad=2)


def _hatch_cells(ax, blocked: np.ndarray, x0: float = -0.5, y0: float = -0.5, width: float = 1.0,
                 height: float | None = None) -> None:
    """Hatched grey rectangles over the masked cells (one patch collection); cells are width × height."""
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    height = width if height is None else height
    cells = [Rectangle((x0 + j * width, y0 + i * height), width, height) for i, j in zip(*np.nonzero(blocked))]
    if cells:
        ax.add_collection(PatchCollection(cells, facecolor=shared.MASKED_COLOUR, edgecolor="#8a8a8a",
                                          hatch=shared.MASKED_HATCH, linewidth=0.0, zorder=2))


def _draw_weights(ax, weights: np.ndarray, q_tokens, k_tokens, *, blocked=None, digits=shared.DIGITS,
                  inches=(4, 4), values=None, words=None):
    """imshow of (Tq, Tk) weights on the shared scale; masked cells hatched and written "masked"."""
    tq, tk = weights.shape
    shown = np.ma.masked_where(blocked, weights) if blocked is not None else weights
    image = ax.imshow(shown, cmap=_cmap(), norm=_norm(), aspect="auto",
                      interpolation="nearest" if max(tq, tk) <= 128 else "antialiased")
    if blocked is not None and max(tq, tk) <= _HATCH_CELLS:
        _hatch_cells(ax, blocked)
    _set_token_ticks(ax, "x", k_tokens, inches[0])
    _set_token_ticks(ax, "y", q_tokens, inches[1])
    write = values if values is not None else (max(tq, tk) <= _SMALL)
    if write:
        masked_word = (words or _style.words("en"))["masked"]
        for i in range(tq):
            for j in range(tk):
                if blocked is not None and blocked[i, j]:
                    ax.text(j, i, masked_word, ha="center", va="center", fontsize=6.5, color="#333333", zorder=3,
                            bbox={"facecolor": shared.MASKED_COLOUR, "edgecolor": "none", "pad": 0.5})
                    continue
                value = weights[i, j]
                ax.text(j, i, _num(value, digits), ha="center", va="center", fontsize=6.5 if digits > 3 else 7,
                        color="white" if value > 0.35 else "#1a1a1a", zorder=3)
    return image


def _text_inches(text: str, points: float) -> float:
    """About how wide ``text`` is drawn at ``points``: wide (CJK) characters 1 em, others 0.6 em."""
    import unicodedata

    ems = sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.6 for c in text)
    return ems * points / 72.0


def _halves(text: str) -> str:
    """``text`` on two lines broken at the space nearest its middle ("헤드 출력 / 이어 붙이기", not
    "헤드 / 출력 이어 붙이기"); a text with no space stays on one line."""
    spaces = [k for k, c in enumerate(text) if c == " "]
    if not spaces:
        return text
    k = min(spaces, key=lambda at: abs(2 * at - len(text)))
    return text[:k] + "\n" + text[k + 1:]


# Where a figure's text may not break: next to an operator, whose two sides are read together ("‖w·v‖ = 0.5769",
# "exp(s_j) / Σ exp(s_k)"), and before a number, which stays with what it names ("share 0.2700", "비율 0.2700").
_BINDING = frozenset({"=", "≈", "≠", "+", "−", "-", "×", "·", "/", "÷", "<", ">", "≤", "≥", "→", "Σ"})
_NUMBER = re.compile(r"[−+-]?\.?\d")


def _units(paragraph: str) -> list[str]:
    """The words of ``paragraph`` (one line) joined into the pieces a line may break between (`_BINDING`)."""
    words = paragraph.split(" ")
    units = [words[0]]
    for before, word in zip(words, words[1:]):
        if before in _BINDING or word in _BINDING or _NUMBER.match(word):
            units[-1] += " " + word
        else:
            units.append(word)
    return units


def _wrapped(text: str, inches: float, points: float) -> str:
    """``text`` on two lines, broken at the break nearest its middle (`_units`), when it is wider than ``inches``."""
    if _text_inches(text, points) <= inches:
        return text
    units = _units(text)
    if len(units) < 2:
        return text
    ends = np.cumsum([len(u) + 1 for u in units[:-1]]) - 1       # where each break's space stands in text
    k = int(np.argmin(np.abs(2 * ends - len(text)))) + 1
    return " ".join(units[:k]) + "\n" + " ".join(units[k:])


def _fit_title(fig, title: str, points: float = 12.0) -> None:
    """Widen ``fig`` so that every line of ``title`` fits (small heatmaps with long titles were cut off)."""
    width, height = fig.get_size_inches()
    needed = max(_text_inches(line, points) for line in title.split("\n")) + 0.4
    if needed > width:
        fig.set_size_inches(needed, height)


def _legend(fig, image, ax, words, *, blocked: bool = False, shrink: float = 0.8, orientation="vertical"):
    """The shared scale's colour bar (ticks 0, 0.01, …, 1) and, when something is masked, its swatch."""
    bar = fig.colorbar(image, ax=ax, shrink=shrink, ticks=list(shared.LEGEND_TICKS), orientation=orientation)
    width, height = fig.figure.get_size_inches()       # a SubFigure's .figure is its Figure (about: an upper bound)
    room = (height - 1.6 if orientation == "vertical" else width - 1.6) * shrink   # about the bar's length
    bar.set_label(_wrapped(words["legend"], room, 7.5), fontsize=7.5)
    bar.ax.tick_params(labelsize=7)
    if blocked:
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(facecolor=shared.MASKED_COLOUR, edgecolor="#8a8a8a", hatch=shared.MASKED_HATCH,
                                 label=words["masked_key"])],
                  loc="upper center", bbox_to_anchor=(0.5, -0.16 if orientation == "vertical" else 1.12),
                  fontsize=7, frameon=False)
    return bar


def heatmap(weights: Any, q_tokens: Sequence[str] | None = None, k_tokens: Sequence[str] | None = None, *,
            title: str | None = None, mask: Any = None, digits: int | None = None, cross: bool = False,
            lang: str = "en") -> Figure:
    """Attention weights of one head: queries as rows, keys as columns, token labels on both axes.

    Args:
      weights: (Tq, Tk) weights (each row sums to 1, or is all 0 when every key is masked).
      q_tokens: Tq labels for the rows (default: positions from 0); k_tokens: Tk labels (default:
        q_tokens when Tq == Tk, else positions).
      title: drawn above; mask: boolean (Tq, Tk) True = may attend, or additive 0/−∞ — masked cells
        are hatched and written "masked"; digits: decimals in the cells (≤ 16 tokens; default 4);
      cross: label the axes decoder (rows) × encoder (columns); lang: "en" | "ko".
    Returns a Figure with the shared colour scale's legend.
    """
    w = _matrix(weights, "weights")
    tq, tk = w.shape
    q_labels, k_labels = token_labels({"tokens": q_tokens, "key_tokens": k_tokens}, tq, tk)
    words = _style.words(lang)
    width, height = _axis_side(tk), _axis_side(tq)
    blocked = _blocked(mask, w.shape)
    with fonts.context():
        fig = Figure(figsize=(width + 2.6, height + 2.0), layout="constrained")
        ax = fig.add_subplot()
        image = _draw_weights(ax, w, q_labels, k_labels, blocked=blocked, digits=_digits(None, WEIGHTS, digits),
                              inches=(width, height), words=words)
        ax.set_xlabel(words["keys_enc"] if cross else words["keys"])
        ax.set_ylabel(words["queries_dec"] if cross else words["queries"])
        _legend(fig, image, ax, words, blocked=blocked is not None and bool(blocked.any()))
        if title:
            ax.set_title(title)
            _fit_title(fig, title)
    return fig


def attention_grid(weights: Any, tokens: Sequence[str] | None = None, k_tokens: Sequence[str] | None = None, *,
                   title: str | None = None, lang: str = "en", layers: Sequence[int] | None = None,
                   heads: Sequence[int] | None = None) -> Figure:
    """Every layer × head as a small heatmap: rows of panels are layers, columns are heads.

    Args:
      weights: (L, H, Tq, Tk), or (H, Tq, Tk) for one layer. tokens: Tq labels; k_tokens: Tk labels.
      layers: the model's numbers of the layers drawn (default 0 … L−1), e.g. layers=[2] with
        heads=[5] for `--layer 2 --head 5`: panels are named by them.
      heads: the model's numbers of the heads drawn (default 0 … H−1).
    Every panel uses the one shared scale (0…1, √-shaded) with one legend; long inputs are
    max-pooled so a single strong weight stays visible.
    """
    array = as_layers(weights)                                      # (L, H, Tq, Tk)
    n_layers, n_heads, tq, tk = array.shape
    layer_ids = list(range(n_layers)) if layers is None else [int(l) for l in layers]
    head_ids = list(range(n_heads)) if heads is None else [int(h) for h in heads]
    if len(layer_ids) != n_layers or len(head_ids) != n_heads:
        raise ValueError(f"layers={layer_ids} and heads={head_ids} must name the {plural(n_layers, 'layer')} and "
                         f"{plural(n_heads, 'head')} of weights {array.shape}")
    q_labels, k_labels = token_labels({"tokens": tokens, "key_tokens": k_tokens}, tq, tk)
    words = _style.words(lang)
    panel = 1.35 if n_heads > 4 else 2.4
    label_room = 0.0 if max(tq, tk) > 32 else 0.9
    note = words("grid_note", tq=tq, tk=tk)
    pooled = max(tq, tk) > int(panel * 150)        # _max_pool shrinks the panels (see below)
    if pooled:
        note += "; " + words["pooled"]
    heading = f"{title}\n{note}" if title else note
    # Placed by hand, in inches: 72 panels under constrained layout (and shared axes) took seconds to lay
    # out; every panel has the same size, so the layout is arithmetic (issue 29, "Speed a learner feels").
    every_panel_titled = n_heads == 1 or n_layers * n_heads <= 4
    title_room = 0.28                                    # a panel title of 9 pt
    gap_x, gap_y = 0.1, (title_room if every_panel_titled else 0.1)
    left = 0.15 + (0.3 if n_heads > 1 else 0.0) + label_room
    bar_room = 1.25                                      # the legend's bar, its ticks and its label
    top = 0.25 + 0.2 * len(heading.split("\n")) + title_room    # the suptitle's lines, the first row's titles
    bottom = 0.15 + 0.7 * label_room
    width = left + n_heads * panel + (n_heads - 1) * gap_x + bar_room
    height = top + n_layers * panel + (n_layers - 1) * gap_y + bottom
    with fonts.context():
        fig = Figure(figsize=(width, height))
        axes = []
        pixels = int(panel * 150)        # the panel's size in pixels at the saved resolution
        image = None
        for l in range(n_layers):
            row = []
            for h in range(n_heads):
                x0 = left + h * (panel + gap_x)
                y0 = height - top - (l + 1) * panel - l * gap_y
                ax = fig.add_axes((x0 / width, y0 / height, panel / width, panel / height))
                row.append(ax)
                w, _ = _max_pool(array[l, h], pixels)
                image = ax.imshow(w, cmap=_cmap(), norm=_norm(), aspect="auto", interpolation="nearest",
                                  extent=(-0.5, tk - 0.5, tq - 0.5, -0.5))
                ax.set_xticks([])
                ax.set_yticks([])
                # one head: each panel says its layer and head; several heads: "head h" over the columns and
                # the layer once at the row's start (one layer's twelve "layer 2, head h" squeezed the panels)
                if n_heads == 1:
                    ax.set_title(words("layer_head", l=layer_ids[l], h=head_ids[h]), fontsize=9)
                elif l == 0 or n_layers * n_heads <= 4:
                    ax.set_title(words("head", h=head_ids[h]), fontsize=9)
                if h == 0 and n_heads > 1:
                    ax.set_ylabel(words("layer", l=layer_ids[l]), fontsize=9)
            axes.append(row)
        if label_room:  # small enough to name the tokens on the outer panels
            for h in range(n_heads):
                _set_token_ticks(axes[-1][h], "x", k_labels, panel)
            for l in range(n_layers):
                _set_token_ticks(axes[l][0], "y", q_labels, panel)
        grid_height = n_layers * panel + (n_layers - 1) * gap_y
        bar_height = max(1.0, 0.6 * grid_height)
        bar_x = left + n_heads * panel + (n_heads - 1) * gap_x + 0.2
        bar_y = height - top - grid_height / 2 - bar_height / 2
        cax = fig.add_axes((bar_x / width, bar_y / height, 0.14 / width, bar_height / height))
        bar = fig.colorbar(image, cax=cax, ticks=list(shared.LEGEND_TICKS))
        bar.set_label(_wrapped(words["legend"], bar_height, 7.5), fontsize=7.5)
        bar.ax.tick_params(labelsize=7)
        needed = max(_text_inches(line, 10) for line in heading.split("\n")) + 0.4
        if needed > width:               # a long title widens the figure rather than being cut
            scale = width / needed
            fig.set_size_inches(needed, height)
            for ax in fig.axes:
                x0, y0, w0, h0 = ax.get_position().bounds
                ax.set_position(((x0 * width + (needed - width) / 2) / needed, y0, w0 * scale, h0))
        fig.suptitle(heading, fontsize=10, y=1 - 0.12 / height, va="top")
    return fig


def _max_pool(weights: np.ndarray, pixels: int) -> tuple[np.ndarray, int]:
    """Shrink a (Tq, Tk) matrix to about ``pixels`` per side by taking block maxima, so a single strong
    weight stays visible instead of being averaged away; returns (image, block size)."""
    factor = max(1, -(-max(weights.shape) // max(1, pixels)))
    if factor == 1:
        return weights, 1
    tq, tk = weights.shape
    padded = np.zeros((-(-tq // factor) * factor, -(-tk // factor) * factor))
    padded[:tq, :tk] = weights
    return padded.reshape(padded.shape[0] // factor, factor, padded.shape[1] // factor, factor).max(axis=(1, 3)), factor


# ------------------------------------------------------------------ matrices as blocks of numbers
def _tint(values: np.ndarray, col_heads: np.ndarray | None, row_heads: np.ndarray | None = None) -> np.ndarray:
    """RGB image of a matrix: each cell in its head's colour, stronger for larger |value|."""
    rows, cols = values.shape
    heads = np.zeros((rows, cols), dtype=int) - 1
    if col_heads is not None:
        heads = np.broadcast_to(col_heads[None, :], (rows, cols))
    if row_heads is not None:
        heads = np.broadcast_to(row_heads[:, None], (rows, cols))
    palette = np.array([mcolors.to_rgb(c) for c in _style.HEAD_COLOURS] + [mcolors.to_rgb("#7f7f7f")])
    base = palette[np.where(heads < 0, len(palette) - 1, heads % (len(palette) - 1))]
    finite = np.where(np.isfinite(values), values, 0.0)
    top = np.abs(finite).max() if finite.size else 1.0
    strength = 0.12 + 0.55 * (np.abs(finite) / (top if top > 0 else 1.0))
    return 1.0 - strength[..., None] * (1.0 - base)


def _drawn_as_bytes(rgb: np.ndarray) -> np.ndarray:
    """An RGB image of floats 0…1 as an RGBA float32 image that imshow draws to the same bytes, in less time.

    matplotlib resamples an image at the size it is drawn, in its own float type, and makes bytes of the result
    as ``int(255 · value)``; for an RGB float64 image it first adds an alpha channel (float64), so a block
    drawn 240 × 320 pixels is resampled as 2.4 MB of floats, divided by its alpha and cut to bytes. Given
    each channel as the middle of the byte it would become ((b + ½) / 255 in float32; 1 for 255) and an alpha of
    1, the same bytes come out of half the floats (the drawing of the projection figure's 25 blocks 0.14 →
    0.09 s of CPU in a fresh process; nearest-neighbour resampling copies values, the ten example figures'
    pixels are unchanged)."""
    made = (np.asarray(rgb, dtype=np.float64) * 255).astype(np.uint8)       # matplotlib's bytes of the floats
    image = np.empty(made.shape[:2] + (4,), dtype=np.float32)
    image[..., :3] = np.minimum(made + np.float32(0.5), np.float32(255)) / np.float32(255)
    image[..., 3] = 1
    return image


def _head_cmap(head: int) -> mcolors.Colormap:
    """The weight scale in a head's colour: white at 0 to the head's colour at 1 (shaded by √weight)."""
    colour = _style.HEAD_COLOURS[head % len(_style.HEAD_COLOURS)]
    return mcolors.LinearSegmentedColormap.from_list(f"qkv-head-{head}", ["#ffffff", colour])


def _weights_rgb(values: np.ndarray, blocked: np.ndarray | None, head: int | None = None) -> np.ndarray:
    cmap = _cmap() if head is None else _head_cmap(head)
    rgb = cmap(_norm()(np.clip(values, 0.0, 1.0)))[..., :3]
    if blocked is not None:
        rgb[blocked] = mcolors.to_rgb(shared.MASKED_COLOUR)
    return rgb


def _put(ax, x: float, y: float, text: str, **kwargs):
    """``ax.text`` sharing one clip path per axes: matplotlib builds a new TransformedPatchPath for every
    text it adds (a tenth of a figure of 600 numbers, issue 29); axes texts are not clipped anyway."""
    clip = ax.__dict__.get("_qkv_clip")
    if clip is None:
        from matplotlib.transforms import TransformedPatchPath

        clip = ax._qkv_clip = TransformedPatchPath(ax.patch)
    return ax.text(x, y, text, clip_path=clip, **kwargs)


class _CellNumbers:
    """The numbers of one matrix's cells, which share one font size: the size asked for, or smaller when the
    widest of them would not fit its cell with a margin. Decided when the figure is drawn (the cell's width in
    pixels is known only then: a figure's scale is set after its blocks are laid out), once per block and size."""

    MARGIN = 0.12          # of the cell's width, left and right together: the numbers never touch the cell's edges

    def __init__(self, cell: float, size: float, *, tabular: bool) -> None:
        self.cell, self.size, self.tabular, self.texts, self._fitted = cell, size, tabular, [], {}
        self._pass: tuple = (None, None, None)    # (the renderer's pass, the axes, the size found in it)

    def size_for(self, artist, renderer) -> float:
        ax = artist.axes
        # viz._agg's TextBatch draws a run of texts in one pass, in which nothing moves: its numbers' size is
        # found once (a transform of the cell's width each took a fifth of a cell's drawing)
        drawing = getattr(renderer, "_qkv_pass", None)
        if drawing is not None and self._pass[0] is drawing and self._pass[1] is ax:
            return self._pass[2]
        (x0, _), (x1, _) = ax.transData.transform([(0.0, 0.0), (self.cell, 0.0)])
        room = abs(x1 - x0) * (1 - self.MARGIN)
        key = (round(room, 3), renderer.dpi if hasattr(renderer, "dpi") else None)
        size = self._fitted.get(key)
        if size is None:
            # the number font's digits all have one width (DejaVu Sans's figures are tabular): one string of each
            # shape is measured ("−0.0000", "0.00"), with the block's first text's font at the size asked for
            shapes = {_DIGIT.sub("0", text.get_text()) for text in self.texts} if self.tabular else \
                {text.get_text() for text in self.texts}
            prop = self.texts[0].get_fontproperties().copy()
            prop.set_size(self.size)
            widest = max(renderer.get_text_width_height_descent(shape, prop, ismath=False)[0] for shape in shapes)
            size = self._fitted[key] = self.size if widest <= room else self.size * room / widest
        if drawing is not None:
            self._pass = (drawing, ax, size)
        return size


def _cell_text_class():
    from matplotlib.text import Text

    class CellText(Text):
        """A cell's number: drawn at its block's fitted size (`_CellNumbers`)."""

        def set(self, **kwargs):
            # its own `set`: matplotlib would otherwise write this class's `set` docstring from every Text setter's
            # docstring when the class is made (`Artist.__init_subclass__`, 1.5-2.5 ms of a figure's fresh process)
            return Text.set(self, **kwargs)

        def _qkv_prepare(self, renderer):
            """Set the fitted size; viz._agg's TextBatch calls this before it draws the text in a run."""
            if self.get_visible():
                size = self._qkv_numbers.size_for(self, renderer)
                if size != self.get_fontsize():
                    self.set_fontsize(size)

        def draw(self, renderer):
            self._qkv_prepare(renderer)
            return super().draw(renderer)

    return CellText


_CELL_TEXT = None


def _put_cell(ax, x: float, y: float, text: str, numbers: _CellNumbers, **kwargs):
    """`_put` for a cell's number, fitted to its cell's width when drawn. Unclipped, as ``ax.text`` makes its texts
    (and as the numbers were before they had their own class): with no clip path to make or to set, a number
    costs a third less to make, and the PNG writer no clip path to ask for at each number."""
    global _CELL_TEXT
    if _CELL_TEXT is None:
        _CELL_TEXT = _cell_text_class()
    artist = _CELL_TEXT(x, y, text, **kwargs)
    artist.set_clip_on(False)
    artist._qkv_numbers = numbers
    numbers.texts.append(artist)
    ax._add_text(artist)
    return artist


def _draw_block(ax, x0: float, y0: float, values: np.ndarray, *, cell: float, row_cell: float | None = None,
                label: str = "", col_heads=None, row_heads=None, digits: int = 2, fontsize: float = 6.5,
                weights: bool = False, blocked: np.ndarray | None = None, masked_word: str = "masked",
                numbers: bool = True, head: int | None = None, outline_row: int | None = None) -> tuple[float, float]:
    """Draw a matrix with its top-left corner at (x0, y0) (y grows downwards); returns (width, height).

    cell is a column's width, row_cell a row's height (default: cell). weights=True shades cells on the
    shared weight scale (masked cells hatched) instead of the head colours; with ``head`` the scale runs
    from white to that head's colour. outline_row: a row (the followed token's) outlined in red.

    The caller sets the axes' limits (every figure that draws blocks lays them out by hand): a block turns the
    axes' autoscaling off, and its outlines do not count in the data limits (matplotlib's add_patch inverts
    the data transform for each patch's limits, and imshow sets the view limits again for each image while
    autoscaling is on: a twentieth of the projection figure's making)."""
    rows, cols = values.shape
    row_cell = cell if row_cell is None else row_cell
    width, height = cols * cell, rows * row_cell
    image = _weights_rgb(values, blocked, head) if weights else _tint(values, col_heads, row_heads)
    ax.set_autoscale_on(False)
    ax.imshow(_drawn_as_bytes(image), extent=(x0, x0 + width, y0 + height, y0), interpolation="nearest", zorder=1)
    if blocked is not None and blocked.any():
        _hatch_cells(ax, blocked, x0, y0, cell, row_cell)
    _add_outline(ax, _rect(x0, y0, width, height))
    if numbers and (rows * cols <= 64 or (rows <= 8 and cols <= 12)) and cell >= 0.9:
        from matplotlib.font_manager import FontProperties

        # one FontProperties per family and size, which each Text copies (a Text made its own from the
        # rcParams and then set the family and the size: a third of making a matrix's numbers)
        # the numbers and the masked word each share one size, fitted to the cell when the figure is drawn
        shared_fonts: dict = {}
        fitted = {False: _CellNumbers(cell, fontsize, tabular=True), True: _CellNumbers(cell, fontsize, tabular=False)}
        for i in range(rows):
            for j in range(cols):
                masked = bool(blocked is not None and blocked[i, j])
                text = masked_word if masked else _num(values[i, j], digits)
                dark = weights and not masked and values[i, j] > 0.35
                font = shared_fonts.get(masked)
                if font is None:
                    family = list(fonts.families()) if masked else _NUMBER_FONT
                    font = shared_fonts[masked] = FontProperties(family=family, size=fontsize)
                _put_cell(ax, x0 + (j + 0.5) * cell, y0 + (i + 0.5) * row_cell, text, fitted[masked], ha="center",
                          va="center", fontproperties=font, color="white" if dark else "#111111")  # Text's zorder, 3
        from matplotlib.collections import LineCollection

        grid = [((x0 + j * cell, y0), (x0 + j * cell, y0 + height)) for j in range(1, cols)] + \
            [((x0, y0 + i * row_cell), (x0 + width, y0 + i * row_cell)) for i in range(1, rows)]
        if grid:    # the white lines between the cells, one collection (a Line2D each took a tenth of the time)
            ax.add_collection(LineCollection(grid, colors="white", linewidths=0.6, zorder=2), autolim=False)
    if outline_row is not None and 0 <= outline_row < rows:
        followed = _add_outline(ax, _rect(x0, y0 + outline_row * row_cell, width, row_cell))
        followed.set(edgecolor=FOLLOWED_COLOUR, linewidth=1.8, zorder=6, gid="followed")
    if label:
        ax.text(x0 + width / 2, y0 - 0.3, label, ha="center", va="bottom", fontsize=9, zorder=3)
    return width, height


FOLLOWED_COLOUR = "#d1495b"    # the followed token's row, outlined in every block that has one


def _add_outline(ax, patch):
    """``ax.add_patch(patch)`` without the patch's data limits (see `_draw_block`), clipped to the axes' patch as
    add_patch clips it, through the one clip path of the axes that `_put` shares."""
    clip = ax.__dict__.get("_qkv_clip")
    if clip is None:
        from matplotlib.transforms import TransformedPatchPath

        clip = ax._qkv_clip = TransformedPatchPath(ax.patch)
    patch.set_clip_path(clip)
    return ax.add_artist(patch)


def _rect(x, y, w, h):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, fill=False, edgecolor="#444444", linewidth=0.8, zorder=4)


def _arrow(ax, start, end, text: str = "", *, side: str = "above") -> None:
    ax.annotate("", xy=end, xytext=start, arrowprops={"arrowstyle": "-|>", "color": "#555555", "lw": 1.2},
                zorder=5)
    if text:
        mid = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
        ax.text(mid[0] + (0.25 if side == "right" else 0), mid[1] + (-0.2 if side == "above" else 0), text,
                ha="left" if side == "right" else "center", va="bottom" if side == "above" else "center",
                fontsize=8.5, zorder=5, color="#333333")


def _title(trace: Trace, words) -> str:
    """The figure's title in the figure's language: a worked example's figure title (texts
    ``fig.title.<example>``), else what the explanation heads it with (`title_of`: the example's title,
    a model's "minilm: layer 2, head 3" from what the trace records), else the trace's own."""
    from ..explain import texts

    example = trace.info.example
    if example and texts.has(words.lang, f"fig.title.{example}"):
        return texts.text(words.lang, f"fig.title.{example}")
    return title_of(trace, words.lang)


def _rows(value: np.ndarray) -> np.ndarray:
    """A (T, D) matrix from a recorded step, dropping leading batch dims of size 1."""
    while value.ndim > 2 and value.shape[0] == 1:
        value = value[0]
    return value


def _sub(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))


def _sup(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))


# ------------------------------------------------------------------ seed 000: the whole layer
def projection_figure(trace: Trace, *, lang: str = "en", digits: int | None = None, max_rows: int = 8) -> Figure:
    """The picture of «Attention의 projection: Q·K·V와 멀티 헤드» for a `MultiHeadAttention` trace, every step with its numbers:

        X · W_Q, W_K, W_V → Q, K, V → split into heads (T×d read as T×h×dₕ) → attention weights of
        each head (masked cells hatched) → head outputs → concatenated H → H·W_O = Y → R + Y.

    Drawn from whatever of these steps is recorded (post 001's multi-head example holds only the head
    outputs, concat, W_O and Y: heads side by side, concatenated, × W_O). Long sequences show their
    first ``max_rows`` tokens (the layout is the point). digits: default the trace's precision per
    step, else 4 (2 for the wide blocks of a model).
    """
    trace = in_language(trace, lang)      # the example's token names in the reader's language
    has = lambda *names: all(n in trace for n in names)     # noqa: E731
    top = has(X, Q, K, V, Q_HEADS, K_HEADS, V_HEADS)
    bottom = has(OUT, CONCAT, W_O, Y)
    if not (top or bottom):
        raise ValueError("projection_figure needs the steps of MultiHeadAttention (x, q, k, v, q_heads, k_heads, "
                         f"v_heads and/or out, concat, w_o, y); steps: {', '.join(trace.names()) or 'none'}")
    words = _style.words(lang)
    if not top:                  # post 001's multi-head example: heads → concat → W_O → z_final
        return _multi_head_figure(trace, words, digits)
    shown = lambda h: head_number(trace.meta, h)      # noqa: E731  the head numbers a reader sees (post 000: 1, 2)
    # cross-attention: K and V are the encoder's rows times W_K, W_V, not X's
    source = lambda name: "M_enc" if MEMORY in trace and name in (K, V) else "X"      # noqa: E731
    n_split = as_heads(trace[Q_HEADS].value, Q_HEADS).shape[0] if Q_HEADS in trace else 1
    # with more than two heads side by side, a head's labels take two lines so that they do not run together
    narrow = lambda text: text.replace(": ", ":\n", 1).replace(" = ", " =\n", 1) if n_split > 2 else text  # noqa: E731
    rows_total = _rows(trace[X if top else CONCAT].value).shape[0]
    rows = min(rows_total, max_rows)

    def first_rows(name: str) -> np.ndarray:
        return _rows(trace[name].value)[:rows]

    widths = [trace[n].value.shape[-1] for n in ((X, Q, K, V) if top else (CONCAT, Y))]
    cell = 1.2 if max(widths) <= 16 else 19.2 / max(widths)     # matrices at most ~19 units wide
    gap = 1.6

    def dg(name: str) -> int:
        return _digits(trace, name, digits) if cell >= 0.9 else 2

    tokens, keys = token_labels(trace.meta, rows_total, trace[K].value.shape[-2] if top else rows_total)
    meta_tokens, followed = list(trace.info.tokens), trace.info.query
    if rows_total == 1 and isinstance(followed, int) and 0 <= followed < len(meta_tokens):
        tokens = [str(meta_tokens[followed])]            # one row: the followed query's (seed 001's "love")
    with fonts.context():
        fig = Figure()
        ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
        right_edge, y, n_heads, width_d = 0.0, 0.0, 1, widths[-1]
        fs = 7.5 if cell >= 1.2 else 6.0       # digits that fit a cell of 1.2 units (0.48 in) at the figure's scale
        w_cell, w_row = (1.0, 0.75) if cell >= 1.2 else (cell, cell)   # weight matrices: 2 decimals, narrower cells
        followed_row = followed if isinstance(followed, int) and 0 <= followed < rows and rows_total > 1 else None

        def token_names(y0: float, names=tokens, count=rows, x0: float = -0.3) -> None:
            for i in range(count):
                ax.text(x0, y0 + i + 0.5, _style.short(names[i], 10), ha="right", va="center", fontsize=8.5,
                        color=FOLLOWED_COLOUR if i == followed_row else "#111111")

        if top:
            x = first_rows(X)
            heads = {n: as_heads(trace[f"{n}_heads"].value, f"{n}_heads")[:, :rows] for n in (Q, K, V)}
            n_heads = heads[Q].shape[0]
            has_w = has(W_Q, W_K, W_V)
            # Row 1: X alone, above the Q column; Row 2: the three weight matrices, one column each for Q, K, V
            x_w, _ = _draw_block(ax, 0.0, y, x, cell=cell, row_cell=1.0, digits=dg(X), fontsize=fs,
                                 label=f"X  ({rows_total}×{x.shape[1]})", outline_row=followed_row)
            token_names(y)
            ax.text(x_w + 0.6, y + rows / 2, "Q = X·W_Q,  K = X·W_K,  V = X·W_V  ↓", ha="left", va="center",
                    fontsize=9.5, color="#333333")
            y += rows + 2.0
            cursor, centres, w_height = 0.0, {}, 0.0
            for name, w_name in ((Q, W_Q), (K, W_K), (V, W_V)):
                out_cols = trace[name].value.shape[-1]
                span = out_cols * cell
                if has_w:
                    w = trace[w_name].value
                    ww, wh = _draw_block(ax, cursor + (span - w.shape[1] * w_cell) / 2, y, w, cell=w_cell, row_cell=w_row,
                                         digits=dg(w_name), fontsize=fs,
                                         col_heads=np.arange(w.shape[1]) // max(1, w.shape[1] // heads[name].shape[0]),
                                         label=f"{w_name.upper()}  ({w.shape[0]}×{w.shape[1]})")
                    w_height = max(w_height, wh)
                    span = max(span, ww)
                centres[name] = (cursor, span)
                cursor += span + gap
            right_edge = max(right_edge, cursor - gap, x_w)
            y += w_height + 2.2
            # Row 3: Q, K, V.
            for name in (Q, K, V):
                start, span = centres[name]
                matrix = first_rows(name)
                _arrow(ax, (start + span / 2, y - 1.9), (start + span / 2, y - 0.9))
                _draw_block(ax, start, y, matrix, cell=cell, row_cell=1.0, digits=dg(name), fontsize=fs,
                            col_heads=np.arange(matrix.shape[1]) // max(1, matrix.shape[1] // heads[name].shape[0]),
                            label=f"{name.upper()} = {source(name)}·W_{name.upper()}  ({matrix.shape[0]}×{matrix.shape[1]})",
                            outline_row=followed_row if source(name) == "X" else None)
            token_names(y)
            y += rows + 2.6
            # Row 4: each projection seen as T×h×dₕ — the same numbers, one block per head.
            ax.text(0.0, y - 2.1, words["reshape"], fontsize=8.5, ha="left", va="center", color="#333333")
            for name in (Q, K, V):
                start, span = centres[name]
                split = heads[name]                                   # (h, T, dₕ)
                block_x = start
                _arrow(ax, (start + span / 2, y - 1.7), (start + span / 2, y - 0.9),
                       f"{rows_total}×{split.shape[0]}×{split.shape[2]}", side="right")
                inner = max(0.3, (span - split.shape[0] * split.shape[2] * cell) / max(1, split.shape[0] - 1))
                for h in range(split.shape[0]):
                    bw, _ = _draw_block(ax, block_x, y, split[h], cell=cell, row_cell=1.0, digits=dg(name),
                                        fontsize=fs, col_heads=np.full(split.shape[2], h),
                                        label=f"{name.upper()}{_sub(shown(h))}" if split.shape[0] <= 4 else "",
                                        outline_row=followed_row if source(name) == "X" else None)
                    block_x += bw + inner
                right_edge = max(right_edge, block_x - inner)
            y += rows + 2.6
            width_d = first_rows(Q).shape[1]
            # Row 5: attention weights of each head (in the head's colour) and its output.
            if has(WEIGHTS, OUT):
                weights = as_heads(trace[WEIGHTS].value)
                outs = as_heads(trace[OUT].value)
                keys_shown = min(weights.shape[2], max_rows)
                contributions = step_heads(trace, _CONTRIBUTIONS) if followed_row is not None else None
                block_x = 0.0
                for h in range(weights.shape[0]):
                    blocked = _head_mask(trace, "", h)
                    blocked = None if blocked is None else blocked[:rows, :keys_shown]
                    aw, _ = _draw_block(ax, block_x, y, weights[h, :rows, :keys_shown], cell=cell, row_cell=1.0,
                                        digits=_digits(trace, WEIGHTS, digits), fontsize=fs, weights=True, head=h,
                                        blocked=blocked, masked_word=words["masked"], outline_row=followed_row,
                                        label=narrow(words("attention_head", h=shown(h))))
                    for j in range(keys_shown):
                        ax.text(block_x + (j + 0.5) * cell, y + rows + 0.15, _style.short(keys[j], 8), ha="right",
                                va="top", fontsize=7.5, rotation=0 if len(keys[j]) <= 3 else 35, rotation_mode="anchor")
                    if contributions is not None:    # beside the followed row's weights: what each key adds
                        _contribution_row(ax, block_x, y + rows + 1.5, contributions, h, followed_row, keys,
                                          keys_shown, weights, cell, fs, words, trace, digits, tokens[followed_row])
                    block_x += aw + 0.3
                    ax.text(block_x + 0.8, y + rows / 2, "·V" + _sub(shown(h)) + " =", ha="center", va="center", fontsize=10)
                    block_x += 1.9
                    ow, _ = _draw_block(ax, block_x, y, outs[h, :rows], cell=cell, row_cell=1.0, digits=dg(OUT),
                                        fontsize=fs, col_heads=np.full(outs.shape[2], h), outline_row=followed_row,
                                        label=narrow(words("head_out", h=shown(h))))
                    block_x += ow + gap
                right_edge = max(right_edge, block_x - gap)
                token_names(y)
                y += rows + (6.6 if contributions is not None else 3.2)
        if bottom:
            y, right = _output_row(ax, trace, y, rows, rows_total, cell, gap, words, dg, fs, top, token_names,
                                   followed_row, w_cell, w_row)
            n_heads = as_heads(trace[OUT].value).shape[0]
            right_edge = max(right_edge, right)
        if rows < rows_total:
            ax.text(0, y - 1.0, words("rows_shown", last=rows - 1, total=rows_total), fontsize=8, va="top")
            y += 0.6
        # the legend, in drawing units below everything: each head's colour, the weight scale per head,
        # the followed token's outline
        legend_y = y
        y += 3.2
        top_y, left = -3.4, -3.4
        ax.set_xlim(left, right_edge + 0.5)
        ax.set_ylim(y, top_y)
        ax.set_aspect("equal")
        ax.axis("off")
        units_w, units_h = right_edge + 0.5 - left, y - top_y
        scale = min(0.4, 15.0 / units_w)          # inches per unit: at most 15 in wide
        fig.set_size_inches(max(6.0, units_w * scale), units_h * scale)
        _projection_legend(fig, ax, n_heads, words, legend_y, left, units_w, y, top_y,
                           weights=top and has(WEIGHTS, OUT), followed=followed_row is not None, shown=shown)
        shape = f"T={rows_total}, d={width_d}, h={n_heads}" + (f", dₕ={width_d // n_heads}" if top else "")
        title = _title(trace, words) or words["projection"]
        fig.suptitle(title if "T = " in title else f"{title}  ({shape})", fontsize=12, y=1 - 0.25 / (units_h * scale),
                     va="top")
    return fig


def _contribution_row(ax, x0: float, y0: float, contributions: np.ndarray, head: int, row: int, keys, shown: int,
                      weights: np.ndarray, cell: float, fs: float, words, trace: Trace, digits: int | None,
                      token: str) -> None:
    """Under a head's weights: the followed row's ‖wⱼ·vⱼ‖ (grey cells: not the weights' scale) with what
    it says (`qkv.trace.read_row`): the key with the largest weight, the one that contributes most, a sink."""
    from ..trace import read_row

    values = contributions[min(head, contributions.shape[0] - 1), row]
    dc = _digits(trace, _CONTRIBUTIONS, digits)
    _draw_block(ax, x0, y0, values[None, :shown], cell=cell, row_cell=0.8, digits=dc, fontsize=fs)
    lines = [words("contribution_row", token=_style.short(token, 10))]
    reading = read_row(weights[head, row], values)
    if reading is not None:
        short = [_style.short(k, 8) for k in keys]
        top, most = (key_names(words.lang, js, short) for js in (reading.heaviest_keys, reading.strongest_keys))
        lines.append(words("row_same", top=top) if reading.same else words("row_differ", top=top, most=most))
        if reading.sink is not None:
            lines.append(words("row_sink", sink=_style.short(keys[reading.sink], 8)))
    ax.text(x0, y0 + 1.0, "\n".join(lines), ha="left", va="top", fontsize=7.5, color="#333333", linespacing=1.3)


def _projection_legend(fig, ax, n_heads: int, words, legend_y: float, left: float, units_w: float, bottom_y: float,
                       top_y: float, *, weights: bool, followed: bool, shown) -> None:
    """The projection figure's legend (drawn, not constrained): a swatch per head colour and, when the
    heads' weights are drawn, each head's weight scale (white → the head's colour, √-shaded, 0 … 1)."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.patches import Patch, Rectangle

    handles = [Patch(facecolor=_style.HEAD_COLOURS[h % len(_style.HEAD_COLOURS)], label=words("head", h=shown(h)))
               for h in range(n_heads)]
    if followed:
        handles.append(Rectangle((0, 0), 1, 1, fill=False, edgecolor=FOLLOWED_COLOUR, linewidth=1.8,
                                 label=words["followed_token"]))
    to_fig = lambda yy: 1.0 - (yy - top_y) / (bottom_y - top_y)       # noqa: E731  drawing y → figure fraction
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.02, to_fig(legend_y)), ncols=len(handles),
               fontsize=9, frameon=False, title=words["head_colours"], title_fontsize=9, alignment="left")
    if weights:
        width_in, height_in = fig.get_size_inches()
        bar_w = min(0.2, 0.42 / max(1, n_heads) - 0.04)
        for h in range(n_heads):
            x0 = 0.52 + h * (bar_w + 0.04)
            cax = fig.add_axes((x0, to_fig(legend_y) - 0.9 / height_in, bar_w, 0.12 / height_in))
            bar = fig.colorbar(ScalarMappable(norm=_norm(), cmap=_head_cmap(h)), cax=cax, orientation="horizontal",
                               ticks=list(shared.LEGEND_TICKS))
            bar.ax.tick_params(labelsize=7)
            bar.ax.set_title(words("head", h=shown(h)), fontsize=8, pad=2)
        fig.text(0.5, to_fig(legend_y) - 1.35 / height_in, words["legend"], fontsize=7.5, va="top")


def _multi_head_figure(trace: Trace, words, digits_arg: int | None) -> Figure:
    """Post 001's multi-head step for one token: the heads' outputs z⁽¹⁾, z⁽²⁾, … (numbered as the post
    numbers them, `qkv.trace.head_number`) → concatenated z_concat → z_concat·W_O = z_final (the post's
    names). z_concat is also stood on its side beside W_O, each of its numbers next to the row of W_O it multiplies, and each number of
    z_final is written out as its sum of products (true as printed)."""
    out = as_heads(trace[OUT].value, OUT)                     # (h, T, Dv)
    concat, w_o, y_val = _rows(trace[CONCAT].value), trace[W_O].value, _rows(trace[Y].value)
    n_heads, _, dv = out.shape
    row = 0   # one token in the post's example; a longer trace shows its followed query's row
    followed = trace.info.query
    tokens = list(trace.info.tokens)
    if concat.shape[0] > 1 and isinstance(followed, int) and followed < concat.shape[0]:
        row = followed
    token = str(tokens[followed]) if isinstance(followed, int) and 0 <= followed < len(tokens) else ""
    dh, dc, dw, dy = (_digits(trace, n, digits_arg) for n in (OUT, CONCAT, W_O, Y))
    number = lambda h: head_number(trace.meta, h)            # noqa: E731
    names = [f"z⁽{_sup(number(h))}⁾" for h in range(n_heads)]
    cell, fs = 1.3, 7.0
    head_of_row = np.arange(concat.shape[1]) // max(1, concat.shape[1] // n_heads)
    with fonts.context():
        fig = Figure()
        ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))          # placed below, once its size is known
        # Row A: each head's output → concatenated z_concat
        x = 0.0
        ax.text(0.0, -1.5, words("mh_heads", token=token) if token else words["per_head"], fontsize=9,
                ha="left", va="bottom", color="#333333")
        for h in range(n_heads):
            bw, _ = _draw_block(ax, x, 0.0, out[h, row:row + 1], cell=cell, row_cell=1.0, digits=dh, fontsize=fs,
                                col_heads=np.full(dv, h), label=names[h])
            x += bw + 0.7
        _arrow(ax, (x, 0.5), (x + 2.6, 0.5))
        ax.text(x + 1.3, 0.0, "Concat", ha="center", va="bottom", fontsize=8)
        cx = x + 3.0
        cw, _ = _draw_block(ax, cx, 0.0, concat[row:row + 1], cell=cell, row_cell=1.0, digits=dc, fontsize=fs,
                            col_heads=head_of_row,
                            label=words("mh_concat", heads=", ".join(names)) + f"  (1×{concat.shape[1]})")
        right = cx + cw
        # Row B: z_concat on its side × W_O; each number of z_final as a sum of products
        top = 4.2
        hx = 2.6
        column = concat[row][:, None]
        _draw_block(ax, hx, top, column, cell=cell, row_cell=1.0, digits=dc, fontsize=fs, row_heads=head_of_row,
                    label="z_concat")          # the post's name for the concatenated outputs (001: z_concat·W_O)
        for h in range(n_heads):
            rows_h = np.flatnonzero(head_of_row == h)
            y0, y1 = top + rows_h[0] + 0.1, top + rows_h[-1] + 0.9
            ax.plot([hx - 0.35, hx - 0.5, hx - 0.5, hx - 0.35], [y0, y0, y1, y1], color=_style.HEAD_COLOURS[h % len(
                _style.HEAD_COLOURS)], linewidth=1.4)
            ax.text(hx - 0.7, (y0 + y1) / 2, names[h], ha="right", va="center", fontsize=9)
        ax.text(hx + cell + 0.7, top + w_o.shape[0] / 2, "×", ha="center", va="center", fontsize=14)
        ox = hx + cell + 1.4
        ow, oh = _draw_block(ax, ox, top, w_o, cell=cell, row_cell=1.0, digits=dw, fontsize=fs,
                             row_heads=head_of_row, label=f"W_O  ({w_o.shape[0]}×{w_o.shape[1]})")
        ax.text(hx - 2.4, top + oh + 0.9, words["mh_column"], ha="left", va="top", fontsize=8, color="#555555")
        # the sums of products: only the rows where W_O is not 0 (said in the note)
        lines = _sop_block([([(concat[row, i], w_o[i, c]) for i in np.flatnonzero(w_o[:, c])], y_val[row, c])
                            for c in range(w_o.shape[1])], dc, dw, dy)
        ex = ox + ow + 1.6
        _arrow(ax, (ox + ow + 0.2, top + 2.0), (ex - 0.2, top + 2.0))
        ax.text(ex, top - 0.3, words["mh_sum"], ha="left", va="bottom", fontsize=8, color="#555555")
        for c, line in enumerate(lines):
            ax.text(ex, top + 1.0 + 1.2 * c, f"z_final[{c}] = {line}", ha="left", va="center", fontsize=8.5)
        zy = top + 1.0 + 1.2 * len(lines) + 1.2
        zw, _ = _draw_block(ax, ex + 3.0, zy, y_val[row:row + 1], cell=1.6, row_cell=1.0, digits=dy, fontsize=fs + 0.5,
                            label=f"z_final = z_concat·W_O  (1×{y_val.shape[1]})")
        text_right = ex + max(_text_inches(f"z_final[0] = {line}", 8.5) for line in lines) / 0.3
        right = max(right, ex + 3.0 + zw, text_right)
        bottom = top + max(oh, zy + 1.0 - top) + 1.6
        ax.set_xlim(-1.0, right + 0.5)
        ax.set_ylim(bottom, -2.2)
        ax.set_aspect("equal")
        ax.axis("off")
        units_w, units_h = right + 1.5, bottom + 2.2
        scale = 0.3                     # inches per unit: the text width above assumes this scale
        width_in, height_in = units_w * scale + 0.4, units_h * scale + 0.8
        fig.set_size_inches(width_in, height_in)
        ax.set_position((0.2 / width_in, 0.1 / height_in, units_w * scale / width_in, units_h * scale / height_in))
        shape = f"T={concat.shape[0]}, d={y_val.shape[1]}, h={n_heads}"
        fig.suptitle(f"{_title(trace, words) or words['projection']}  ({shape})", fontsize=11, y=1 - 0.12 / height_in,
                     va="top")
    return fig


def _output_row(ax, trace, y, rows, rows_total, cell, gap, words, dg, fs, top, token_names, followed_row=None,
                w_cell=None, w_row=None) -> tuple[float, float]:
    """(Heads side by side →) concatenated H → × W_O → Y, then R + Y drawn from R and Y; returns (the y
    below it, right edge). With the heads' outputs drawn above (``top``), H starts the row."""
    out = as_heads(trace[OUT].value, OUT)[:, :rows]          # (h, T, Dv)
    n_heads = out.shape[0]
    block_x = 0.0
    token_names(y)
    if not top:
        for h in range(n_heads):
            bw, _ = _draw_block(ax, block_x, y, out[h], cell=cell, row_cell=1.0, col_heads=np.full(out.shape[2], h),
                                label=words("head", h=head_number(trace.meta, h)) if n_heads <= 4 else "",
                                digits=dg(OUT), fontsize=fs, outline_row=followed_row)
            block_x += bw + 0.5
        ax.text(block_x / 2, y + rows + 0.4, words["per_head"], ha="center", va="top", fontsize=8.5)
    concat, w_o, y_val = _rows(trace[CONCAT].value)[:rows], trace[W_O].value, _rows(trace[Y].value)[:rows]
    if top:
        cx = 0.0
        ax.text(0.0, y - 1.6, _halves(words["concat"]).replace("\n", " ") + " ↓", ha="left", va="bottom",
                fontsize=8.5, color="#333333")
    else:
        cx = block_x + gap + 1.4
        _arrow(ax, (block_x, y + rows / 2), (cx - 0.2, y + rows / 2))
        ax.text((block_x + cx) / 2, y + rows / 2 - 0.5, _halves(words["concat"]), ha="center",
                va="bottom", fontsize=8)
    cw, _ = _draw_block(ax, cx, y, concat, cell=cell, row_cell=1.0, digits=dg(CONCAT), fontsize=fs,
                        col_heads=np.arange(concat.shape[1]) // max(1, concat.shape[1] // n_heads),
                        label=f"H  ({rows_total}×{concat.shape[1]})", outline_row=followed_row)
    ox = cx + cw + 1.4
    ax.text(cx + cw + 0.7, y + rows / 2, "×", ha="center", va="center", fontsize=14)
    o_col = w_cell if w_cell is not None else cell
    o_cell = w_row if w_row is not None else (cell if w_o.shape[0] * cell <= 24 else 24.0 / w_o.shape[0])
    ow, oh = _draw_block(ax, ox, y, w_o, cell=o_col, row_cell=o_cell, digits=dg(W_O), fontsize=fs,
                         row_heads=np.arange(w_o.shape[0]) // max(1, w_o.shape[0] // n_heads),
                         numbers=o_cell >= 0.7, label=f"W_O  ({w_o.shape[0]}×{w_o.shape[1]})")
    yx = ox + ow + 1.4
    ax.text(ox + ow + 0.7, y + rows / 2, "=", ha="center", va="center", fontsize=14)
    yw, _ = _draw_block(ax, yx, y, y_val, cell=cell, row_cell=1.0, digits=dg(Y), fontsize=fs,
                        label=f"Y = H·W_O  ({rows_total}×{y_val.shape[1]})", outline_row=followed_row)
    right = yx + yw
    bottom = y + max(rows, oh)
    if RESIDUAL in trace and X in trace:
        # R + Y: the layer's input R (here X) and Y, added number by number
        res = _rows(trace[RESIDUAL].value)[:rows]
        r_val = _rows(trace[X].value)[:rows]
        ry = bottom + 2.2
        token_names(ry)
        rw, _ = _draw_block(ax, cx, ry, r_val, cell=cell, row_cell=1.0, digits=dg(X), fontsize=fs,
                            label=f"R = X  ({rows_total}×{r_val.shape[1]})", outline_row=followed_row)
        ax.text(cx + rw + 0.7, ry + rows / 2, "+", ha="center", va="center", fontsize=14)
        y2x = cx + rw + 1.4
        y2w, _ = _draw_block(ax, y2x, ry, y_val, cell=cell, row_cell=1.0, digits=dg(Y), fontsize=fs,
                             label=f"Y  ({rows_total}×{y_val.shape[1]})", outline_row=followed_row)
        ax.text(y2x + y2w + 0.7, ry + rows / 2, "=", ha="center", va="center", fontsize=14)
        _draw_block(ax, y2x + y2w + 1.4, ry, res, cell=cell, row_cell=1.0, digits=dg(RESIDUAL), fontsize=fs,
                    label=words["residual"] + f"  ({rows_total}×{res.shape[1]})", outline_row=followed_row)
        right = max(right, y2x + y2w + 1.4 + res.shape[1] * cell)
        bottom = ry + rows
    elif RESIDUAL in trace:
        res = _rows(trace[RESIDUAL].value)[:rows]
        ry = y + rows + 2.6
        _arrow(ax, (yx + yw / 2, y + rows + 0.3), (yx + yw / 2, ry - 0.9))
        _draw_block(ax, yx, ry, res, cell=cell, row_cell=1.0, digits=dg(RESIDUAL), fontsize=fs,
                    label=words["residual"] + f"  ({rows_total}×{res.shape[1]})")
        bottom = max(bottom, ry + rows)
    return bottom + 2.4, right


# ------------------------------------------------------------------ one query's chain
def _followed(trace: Trace, query: int | None, head: int | None, n_queries: int, n_heads: int) -> tuple[int, int]:
    """The followed query and the index of the shown head in the recorded (H, Tq, Tk) weights.

    trace.meta["head"] indexes the head axis only when the weights hold several heads; a one-head
    trace's meta head names which head of the model it is (a label, see `_head_label`), so it is 0.
    """
    query = trace.info.query if query is None else int(query)
    if head is None:
        head = int(trace.info.head or 0) if n_heads > 1 else 0
    head = int(head)
    if not 0 <= query < n_queries:
        raise ValueError(f"query must be in [0, {n_queries}), got {query}")
    if not 0 <= head < n_heads:
        raise ValueError(f"head must be in [0, {n_heads}), got {head}")
    return query, head


# The softmax's own recorded steps (qkv.trace SOFTMAX_MAX, EXP_SCORES, EXP_SUM): m, e^(s − m), Σ e^(s − m).
_SOFTMAX_MAX, _EXP_SCORES, _EXP_SUM = "softmax_max", "exp_scores", "exp_sum"
_CONTRIBUTIONS = "contributions"      # qkv.trace.CONTRIBUTIONS: ‖wⱼ·vⱼ‖, a bar panel of its own colour
_CONTRIBUTION_COLOUR = "#b7791f"       # not the weights' blue: a weight is not a contribution
_EQUATION_KEYS = 8    # up to this many keys each step of the chain writes its arithmetic beside its bars
_LINE_POINTS = 7.5    # the arithmetic's font size


class _Panel:
    """One step of the chain: the recorded step it draws, its label, and the lines of its arithmetic."""

    def __init__(self, name: str, label: str, lines: list[str] | None = None, note: str = ""):
        self.name, self.label, self.lines, self.note = name, label, lines or [], note


def _scale_of(trace: Trace, prefix: str, head: int, query: int) -> tuple[str, int | None]:
    """How the recorded scaled scores came from the scores: ("same", None) when they are equal (nothing
    was scaled, as in the group meeting of "어텐션이 조모임이라면"), ("sqrt", d_k) for the default scale
    1/√d_k (d_k the width of the recorded q heads, None when they are not recorded), else ("other",
    None): a temperature or scale= given. Reads the recorded steps and the step's formula; computes no
    attention."""
    scores = step_heads(trace, prefix + SCORES)[head, query]
    scaled = step_heads(trace, prefix + SCALED_SCORES)[head, query]
    finite = np.isfinite(scores) & np.isfinite(scaled)
    if np.array_equal(scores[finite], scaled[finite]):
        return "same", None
    q_heads = step_heads(trace, prefix + Q_HEADS)
    d_k = int(q_heads.shape[-1]) if q_heads is not None else None
    # a model computes in float32 (its steps recorded as float64): 1/√d_k to float32's precision is 1/√d_k
    if d_k is not None and np.allclose(scaled[finite], scores[finite] / np.sqrt(d_k), rtol=1e-6, atol=0.0):
        return "sqrt", d_k
    if "1/√d_k" in (trace[prefix + SCALED_SCORES].formula or ""):     # the default scale, d_k not recorded
        return "sqrt", None
    return "other", None


def _chain(trace: Trace, query: int, head: int, words, digits: int | None, prefix: str = "",
           *, equations: bool = True) -> list[_Panel]:
    """The chain's steps for one query, each with its arithmetic written out (≤ 8 keys): q·k as a sum of
    products of the recorded q and k, the division by √d_k, and the softmax as exp(s)/Σ exp(s) with the
    recorded numerators e^(s − m) and denominator. Every line is true as printed."""
    from ..explain.parts import query_key_steps, softmax_input

    weights = step_heads(trace, prefix + WEIGHTS)
    n_keys = weights.shape[-1]
    part = _part(trace, prefix)
    q_tok, k_toks = _style.short(part.q_tokens[query], 10), [_style.short(t, 10) for t in part.k_tokens]
    write = equations and n_keys <= _EQUATION_KEYS
    panels = []
    names = {n[len(prefix):] for n in trace.names() if n.startswith(prefix)}
    # q·k as a sum of products of the recorded q and k rows
    lines = []
    q_name, k_name = query_key_steps(names)
    q_heads, k_heads = step_heads(trace, prefix + q_name), step_heads(trace, prefix + k_name)
    scores = step_heads(trace, prefix + SCORES)[head, query]
    if write and q_heads is not None and k_heads is not None:
        q_row = q_heads[head, query]
        k_rows = k_heads[head // max(1, q_heads.shape[0] // k_heads.shape[0])]
        dq, dk, ds = (_digits(trace, prefix + n, digits) for n in (q_name, k_name, SCORES))
        lines.append(words("eq_scores", q=q_tok))
        sums = _sop_block([(list(zip(q_row, k_rows[j])), scores[j]) for j in range(n_keys)], dq, dk, ds, words=words)
        lines += [f"q_{q_tok} · k_{k_toks[j]} = " + line for j, line in enumerate(sums)]
    # scores typed in (the group meeting records no q and k) are the given scores, not q·k
    given = q_heads is None and k_heads is None and trace.info.kind == "group-meeting"
    panels.append(_Panel(SCORES, words["scores_given" if given else "scores"], lines))
    # ÷ √d_k — only where the example scales (post 002's meetings do not)
    if SCALED_SCORES in names:
        how, d_k = _scale_of(trace, prefix, head, query)
        if how != "same":
            lines = []
            if write and how == "sqrt" and d_k is not None:
                from decimal import Decimal

                scaled = step_heads(trace, prefix + SCALED_SCORES)[head, query]
                ds, dss = _digits(trace, prefix + SCORES, digits), _digits(trace, prefix + SCALED_SCORES, digits)
                root = Decimal(d_k).sqrt()
                lines.append(words("eq_scaled", dk=d_k))
                # the scores at the decimals the text formats divide them with (`fit` over the row, the
                # most any of them needs, as `qkv.explain.document._divided_by_root` writes the vector)
                from ..explain.document import Num, fit

                ops, _ = fit([Num(float(v), ds) for v in scores], [Num(float(v), dss) for v in scaled],
                             lambda v: [x / root for x in v])
                ds = max((o.digits for o in ops), default=ds)
                lines += [f"s_{k_toks[j]} = " + _quot(scores[j], 0.0, scaled[j], ds, dss, denominator_text=f"√{d_k}",
                                                      exact_denominator=root)[0] for j in range(n_keys)]
            # a scale other than 1/√d_k (a temperature, scale=): the panel must not claim ÷√d_k
            panels.append(_Panel(SCALED_SCORES, words["scaled"] if how == "sqrt" else words["scaled_other"], lines))
    for name, key in ((BIASED_SCORES, "biased"), (MODIFIED_SCORES, "modified")):
        if name in names:
            panels.append(_Panel(name, words[key]))
    # softmax: exp(s) / Σ exp(s), with the recorded numerators e^(s − m) and denominator Σ e^(s − m)
    lines = []
    if write and all(n in names for n in (_SOFTMAX_MAX, _EXP_SCORES, _EXP_SUM)):
        s_name = softmax_input(names)
        m = float(step_heads(trace, prefix + _SOFTMAX_MAX)[head, query].reshape(-1)[0])
        numerators = step_heads(trace, prefix + _EXP_SCORES)[head, query]
        total = float(step_heads(trace, prefix + _EXP_SUM)[head, query].reshape(-1)[0])
        dw, dsm = _digits(trace, prefix + WEIGHTS, digits), _digits(trace, prefix + s_name, digits)
        # the e^(s − m) and Σ at the decimals the text formats write them with (one rule: softmax_digits)
        from ..explain.document import softmax_digits

        blocked = _head_mask(trace, prefix, head)
        open_keys = [j for j in range(n_keys) if blocked is None or not blocked[query, j]]
        chosen = softmax_digits(numerators, total, weights[head, query], open_keys,
                                _digits(trace, prefix + _EXP_SCORES, digits), dw)
        if chosen is not None:
            de, holds = chosen
            lines.append(words["eq_softmax"])
            lines += words("eq_shift", m=_num(m, dsm)).split("\n")
            lines.append("Σ = " + " + ".join(_num(numerators[j], de) for j in open_keys)
                         + f" {'=' if holds else '≈'} {_num(total, de)}")
            lines += [f"w_{k_toks[j]} = " + _quot(numerators[j], total, weights[head, query, j], de, dw)[0]
                      for j in open_keys]
        if any(n == 0.0 for n in numerators) and np.isfinite(step_heads(trace, prefix + s_name)[head, query]).all():
            lines.append(words["eq_underflow"])
    panels.append(_Panel(WEIGHTS, words["weights"], lines))
    contribution = _contribution_panel(trace, query, head, words, digits, prefix, part.k_tokens, write)
    if contribution is not None:
        panels.append(contribution)
    return panels


def _contribution_panel(trace: Trace, query: int, head: int, words, digits: int | None, prefix: str,
                        k_tokens: Sequence[str], write: bool) -> _Panel | None:
    """Beside the weights, what each key adds to the output: ‖wⱼ·vⱼ‖ (recorded, `qkv.trace.CONTRIBUTIONS`),
    labelled as a different quantity, and what the row says (`qkv.trace.read_row`: the key with the largest
    weight, the key that contributes most, an attention sink where there is one) as its note; with ≤ 8 keys
    each key's share of z written as ‖wⱼ·vⱼ‖ / Σₖ ‖wₖ·vₖ‖ (true as printed). None when not recorded."""
    from ..trace import CONTRIBUTIONS, SHARES, read_row

    contributions, shares = step_heads(trace, prefix + CONTRIBUTIONS), step_heads(trace, prefix + SHARES)
    if contributions is None or shares is None:
        return None
    weights = step_heads(trace, prefix + WEIGHTS)[head, query]
    row = contributions[min(head, contributions.shape[0] - 1), query]
    share = shares[min(head, shares.shape[0] - 1), query]
    reading = read_row(weights, row)
    dw, dc, dsh = (_digits(trace, prefix + n, digits) for n in (WEIGHTS, CONTRIBUTIONS, SHARES))
    notes = []
    if reading is not None:
        said = lambda js: {"w": values_of(js, lambda j: _num(weights[j], dw)),  # noqa: E731
                           "c": values_of(js, lambda j: _num(row[j], dc)),
                           "share": values_of(js, lambda j: _num(share[j], dsh))}
        short = [_style.short(k, 12) for k in k_tokens]
        top, most = reading.heaviest_keys, reading.strongest_keys
        if reading.same:
            notes.append(words("read_same", top=key_names(words.lang, top, short), **said(top)))
        else:
            shown = said(most)
            notes.append(words("read_differ", top=key_names(words.lang, top, short),
                               most=key_names(words.lang, most, short),
                               **said(top), w_most=shown["w"], c_most=shown["c"], share_most=shown["share"]))
        if reading.sink is not None:
            notes.append(words("read_sink", sink=short[reading.sink], **said((reading.sink,))))
    lines = []
    total = float(np.sum(row[np.isfinite(row)]))
    if write and total > 0 and len(row) <= 6:      # each share written out; more keys would crowd the column
        # the ‖wⱼ·vⱼ‖ and their sum at the fewest extra decimals that make every quotient true as printed
        for de in range(dc, dc + _MORE_DIGITS + 1):
            quotients = [_quot(row[j], total, share[j], de, dsh) for j in range(len(row))]
            if all(ok for _, ok in quotients):
                break
        lines.append(words["contribution_note"])
        lines.append(words("eq_share", total=_num(total, de)))
        lines += [f"p_{_style.short(k_tokens[j], 10)} = {text}" for j, (text, _) in enumerate(quotients)]
    else:
        notes.insert(0, words["contribution_note"])
    return _Panel(CONTRIBUTIONS, words["contribution"], lines, note="\n".join(notes))


def _chain_text_inches(panels: list[_Panel]) -> float:
    """How wide the chain's arithmetic column must be (0 when nothing is written)."""
    return max((_text_inches(line, _LINE_POINTS) for p in panels for line in p.lines), default=0.0)


# ------------------------------------------------------------------ laid out by hand
class _Sheet:
    """A figure laid out by hand, in inches from its top-left corner (issue 29: constrained layout took a
    third of a worked example's figure time, and saving it drew everything twice). Every box is arithmetic
    on sizes the figure already knows: the matrices' cells, the fonts' points, the number of lines."""

    def __init__(self, width: float, height: float):
        self.fig = Figure(figsize=(width, height))
        self.width, self.height = width, height

    def axes(self, x: float, y: float, w: float, h: float, **kwargs):
        """Axes filling the box whose top-left corner is (x, y), w × h inches."""
        return self.fig.add_axes((x / self.width, 1.0 - (y + h) / self.height, max(w, 0.01) / self.width,
                                  max(h, 0.01) / self.height), **kwargs)

    def text(self, x: float, y: float, text: str, **kwargs):
        return self.fig.text(x / self.width, 1.0 - y / self.height, text, **kwargs)

    def title(self, text: str, fontsize: float = 11.0) -> None:
        self.text(self.width / 2, 0.12, text, ha="center", va="top", fontsize=fontsize)


def _title_room(text: str, points: float = 11.0) -> float:
    """Inches above everything for a title of ``text`` (0 when there is none)."""
    return 0.3 + 0.2 * (text.count("\n") + 1) * points / 11.0 if text else 0.1


_CHAIN_LEFT = 0.95     # inches left of the bars: a step's name (two lines of 8 pt) and its tick labels
_PANEL = 1.7           # inches of one bar panel at its most natural
_NOTE_LINE = 0.15      # inches per line of a panel's note (7.5 pt)


def _turned_room(tokens: Sequence[str], inches: float, size: float = 8.0) -> float:
    """Inches below an axis for its token labels as `_set_token_ticks` draws them (upright, 45° or 90°)."""
    n = len(tokens)
    picked = _style.thin_ticks(n, _style.ticks_room(inches, 7.5))
    texts = [_style.short(tokens[i]) if len(picked) == n else f"{_style.short(tokens[i], 10)} ({i})" for i in picked]
    size = 8 if n <= 64 else 7
    room_pt = inches * 72 / max(1, len(picked))
    widest_pt = max((len(t) for t in texts), default=0) * 0.62 * size
    if widest_pt <= 0.9 * room_pt:
        return 0.25
    if len(picked) <= 8 and widest_pt <= 2.0 * room_pt:
        return 0.15 + 0.72 * widest_pt / 72
    return 0.15 + widest_pt / 72


def _chain_size(panels: list[_Panel], k_tokens: Sequence[str]) -> tuple[float, float]:
    """(width, height) in inches the chain wants: its bars, its text column, its notes, its key labels."""
    n_keys = len(k_tokens)
    bars = max(3.9, min(8.4, 0.6 * n_keys))
    text = _chain_text_inches(panels)
    width = _CHAIN_LEFT + bars + (text + 0.35 if text else 0.2)
    notes = sum(_NOTE_LINE * _note_lines(p, bars) + 0.1 for p in panels if p.note)
    lines = max((len(p.lines) for p in panels), default=0)
    panel = max(_PANEL, 0.19 * lines + 0.1)
    return width, len(panels) * panel + 0.18 * (len(panels) - 1) + notes + _turned_room(k_tokens, bars) + 0.35


def _note_lines(panel: _Panel, inches: float) -> int:
    return _wrap(panel.note, inches, 7.5).count("\n") + 1 if panel.note else 0      # as `_draw_path` writes it


def _wrap(text: str, inches: float, points: float) -> str:
    """``text`` broken into lines no wider than ``inches``: greedy over `_units` (never next to an operator or
    before a number; a piece wider than a line stays whole), a full line broken at its last clause instead —
    after a comma or a semicolon, or before a parenthesis — when that keeps at least half of it (a clause,
    not a word, moves to the next line)."""
    def clause(pieces: list[str], k: int) -> bool:          # may a clause end before pieces[k]?
        return pieces[k - 1].endswith((",", ";")) or pieces[k].startswith("(")

    out = []
    for paragraph in text.split("\n"):
        line: list[str] = []
        for unit in _units(paragraph):
            while line and _text_inches(" ".join(line + [unit]), points) > inches:
                cut = next((k for k in range(len(line), 0, -1) if clause(line + [unit], k)
                            and _text_inches(" ".join(line[:k]), points) >= inches / 2), len(line))
                out.append(" ".join(line[:cut]))
                line = line[cut:]
            line.append(unit)
        out.append(" ".join(line))
    return "\n".join(out)


def _draw_path(sheet: _Sheet, box: tuple[float, float, float, float], trace: Trace, query: int, head: int, words,
               digits: int | None, prefix: str = "", *, panels: list[_Panel] | None = None,
               values_box: tuple[float, float, float, float] | None = None, answers: Sequence[str] | None = None,
               title: str = "", title_size: float = 10.0):
    """Bars over the keys, one row per step (q·k, ÷√dₖ, (+ bias), softmax, ‖wⱼ·vⱼ‖), each with its
    arithmetic beside it (≤ 8 keys), in the box (x, y, w, h) inches of ``sheet``; then each value row ×
    its weight and their sum z (in ``values_box`` when given, else below the bars). Returns the bar axes."""
    x0, y0, width, height = box
    weights = step_heads(trace, prefix + WEIGHTS)
    n_keys = weights.shape[-1]
    panels = _chain(trace, query, head, words, digits, prefix) if panels is None else panels
    blocked = _head_mask(trace, prefix, head)
    blocked = blocked[query] if blocked is not None else np.zeros(n_keys, bool)
    k_tokens = _part(trace, prefix).k_tokens
    values_panel = _value_rows(trace, prefix, head) if n_keys <= 12 else None
    below = values_panel is not None and values_box is None
    text_inches = _chain_text_inches(panels)
    bars_w = width - _CHAIN_LEFT - (text_inches + 0.35 if text_inches else 0.2)
    top = y0 + (_title_room(title, title_size) if title else 0.05)
    if title:
        sheet.text(x0 + width / 2, y0 + 0.08, title, ha="center", va="top", fontsize=title_size)
    bottom = _turned_room(k_tokens, bars_w) + 0.35
    values_h = 0.36 * (n_keys + 3.8) if below else 0.0
    notes = [_wrap(p.note, bars_w, 7.5) if p.note else "" for p in panels]
    notes_h = [(_NOTE_LINE * (n.count("\n") + 1) + 0.1) if n else 0.0 for n in notes]
    gap = 0.18
    panel_h = max(0.6, (y0 + height - top - bottom - values_h - sum(notes_h) - gap * (len(panels) - 1)) / len(panels))
    positions = np.arange(n_keys)
    axes = []
    cursor = top
    text_x = x0 + _CHAIN_LEFT + bars_w + 0.3
    for panel, note, note_h in zip(panels, notes, notes_h):
        cursor += note_h
        ax = sheet.axes(x0 + _CHAIN_LEFT, cursor, bars_w, panel_h)
        axes.append(ax)
        name = panel.name
        values = step_heads(trace, prefix + name)[head, query]
        digits_here = _digits(trace, prefix + name, digits)
        finite = np.where(np.isfinite(values), values, 0.0)
        colour = {WEIGHTS: "#2b6cb0", _CONTRIBUTIONS: _CONTRIBUTION_COLOUR}.get(name, "#7f9cc4")
        bars = ax.bar(positions, np.where(blocked, 0.0, finite) if name != SCORES else finite, color=colour,
                      width=0.8 if n_keys <= 64 else 1.0)
        if name != SCORES:
            for j in np.flatnonzero(blocked):
                bars[j].set_hatch(shared.MASKED_HATCH)
                bars[j].set_facecolor(shared.MASKED_COLOUR)
                bars[j].set_edgecolor("#888888")
                bars[j].set_height(0.0 if name in (WEIGHTS, _CONTRIBUTIONS)
                                   else max(0.05, 0.15 * float(np.abs(finite).max() or 1)))
        ax.axhline(0, color="#444444", linewidth=0.6)
        ax.set_ylabel(_wrapped(panel.label, 1.6, 8), fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_xlim(-0.6, n_keys - 0.4)
        _label_bars(ax, positions, finite, blocked if name != SCORES else None, name, digits_here, n_keys, words)
        ax.margins(y=0.25)
        if note:
            ax.set_title(note, fontsize=7.5, color="#555555", loc="left")
        if panel.lines:   # the step's arithmetic level with its bars: what it does in grey, then the lines
            step = min(0.2, (panel_h + note_h) / max(4.0, len(panel.lines) + 0.3))
            line_y = cursor - note_h + 0.6 * step
            for i, line in enumerate(panel.lines):
                sheet.text(text_x, line_y + i * step, line, ha="left", va="center", fontsize=_LINE_POINTS,
                           color="#555555" if i == 0 else "#111111")
        # a few value ticks, no key ticks but under the last panel: each tick is two texts and two lines to
        # make and measure (ticks took a quarter of the meeting figure's time); the panels share their
        # x limits, not an axis (a shared axis measures its siblings' labels too)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=4))
        cursor += panel_h + gap
    for ax in axes[:-1]:
        ax.set_xticks([])
    _set_token_ticks(axes[-1], "x", k_tokens, bars_w)
    if blocked.any():  # say what the hatching means, above the first panel after the mask
        target = axes[min(1, len(axes) - 1)]
        target.text(1.0, 1.02, words["masked_key"], transform=target.transAxes, ha="right", va="bottom", fontsize=7,
                    color="#555555")
    axes[-1].set_xlabel(words["keys"])
    if values_panel is not None:
        if values_box is None:
            values_box = (x0, y0 + height - values_h, width, values_h)
        target = sheet.axes(*values_box)
        _draw_value_rows(target, values_panel, query, k_tokens, blocked, words,
                         _digits(trace, prefix + OUT, digits), _digits(trace, prefix + WEIGHTS, digits),
                         _digits(trace, prefix + V, digits), answers=answers)
    return axes


def _values_height(trace: Trace, prefix: str, head: int) -> float:
    """Inches the value rows (`_draw_value_rows`) want under the bars; 0 when they are not drawn."""
    n_keys = step_heads(trace, prefix + WEIGHTS).shape[-1]
    return 0.36 * (n_keys + 3.8) if n_keys <= 12 and _value_rows(trace, prefix, head) is not None else 0.0


def _legend_bar(sheet: _Sheet, image, box: tuple[float, float, float, float], words) -> float:
    """The shared scale's colour bar, lying in the box's top 0.14 in, ticks and label below it. Returns the
    inches it takes."""
    x, y, w, _ = box
    cax = sheet.axes(x, y, w, 0.14)
    bar = sheet.fig.colorbar(image, cax=cax, orientation="horizontal", ticks=list(shared.LEGEND_TICKS))
    label = _wrap(words["legend"], w, 7.5)
    bar.set_label(label, fontsize=7.5)
    bar.ax.tick_params(labelsize=7)
    return 0.14 + 0.22 + 0.15 * (label.count("\n") + 1) + 0.1


def _legend_height(words, inches: float) -> float:
    return 0.14 + 0.22 + 0.15 * (_wrap(words["legend"], inches, 7.5).count("\n") + 1) + 0.1


def _value_rows(trace: Trace, prefix: str, head: int):
    """(weights (Tq, Tk), v (Tk, Dv), out (Tq, Dv)) of one head when recorded and small enough, else None."""
    v = step_heads(trace, prefix + V_HEADS)
    if v is None:
        v = step_heads(trace, prefix + V)          # a scene of post 002 records its answers V directly
    out = step_heads(trace, prefix + OUT)
    weights = step_heads(trace, prefix + WEIGHTS)
    if v is None or out is None or v.shape[-1] > 8:
        return None
    group = head // max(1, weights.shape[0] // v.shape[0])
    return weights[head], v[group], out[head]


def _value_digits(row: np.ndarray, v: np.ndarray, out: np.ndarray, blocked, digits_w: int, digits_v: int,
                  digits_out: int) -> tuple[int, int, int, bool]:
    """Decimals for the weights, the value rows and the scaled rows wⱼ·vⱼ so that every line of the
    value panel is true as printed: each scaled cell is the shown wⱼ × the shown vⱼ, rounded, and each
    column of them adds up (rounded to the output's digits) to the shown z. Returns (dw, dv, dp, exact)."""
    tries = sorted(((ew, ev, ep) for ew in range(3) for ev in range(3) for ep in range(-1, _MORE_DIGITS + 1)),
                   key=lambda t: (sum(t), -t[2], -t[0]))     # fewest extra decimals; products first, then weights
    for ew, ev, ep in tries:
        dw, dv, dp = digits_w + ew, digits_v + ev, digits_out + 1 + ep
        total = [_decimal_zero() for _ in range(v.shape[1])]
        for j in range(v.shape[0]):
            if blocked[j]:
                continue
            w = _shown(row[j], dw)
            for c in range(v.shape[1]):
                total[c] += _shown(float(w * _shown(v[j, c], dv)), dp)
        if all(_agrees(total[c], out[c], digits_out) for c in range(v.shape[1])):
            return dw, dv, dp, True
    return digits_w, digits_v, digits_out + 1, False   # nothing made it true: the Σ is written "≈"


def _draw_value_rows(ax, panel, query: int, k_tokens, blocked, words, digits_out: int, digits_w: int,
                     digits_v: int | None = None, *, answers: Sequence[str] | None = None) -> None:
    """Each value row v_j, its weight w_j, the row scaled w_j·v_j, and their recorded sum z (= out).

    The scaled cells are the products of the two numbers shown on their line, rounded; the decimals
    are chosen so that each column of them adds up to the shown z (`_value_digits`)."""
    weights, v, out = panel
    row = weights[query]
    n_keys, dv = v.shape
    digits_v = digits_out if digits_v is None else digits_v
    dw, dvv, dp, exact = _value_digits(row, v, out[query], blocked, digits_w, digits_v, digits_out)
    cell = 1.45 if dp <= 4 else 1.75
    ax.axis("off")
    x_w, x_v = 0.0, 2.8
    x_s = x_v + dv * cell + 2.0
    for j in range(n_keys):
        y0 = j
        masked = bool(blocked[j])
        ax.text(x_w - 0.2, y0 + 0.5, _style.short(k_tokens[j], 9), ha="right", va="center", fontsize=7.5)
        ax.text(x_w + 1.0, y0 + 0.5, words["masked"] if masked else _num(row[j], dw), ha="center",
                va="center", fontsize=7, color="#333333")
        ax.text(x_v - 0.5, y0 + 0.5, "×", ha="center", va="center", fontsize=9)
        _draw_block(ax, x_v, y0 + 0.05, v[j:j + 1], cell=cell, row_cell=0.9, digits=dvv, fontsize=6)
        ax.text(x_s - 1.1, y0 + 0.5, "=", ha="center", va="center", fontsize=9)
        if masked:
            scaled = np.zeros(dv)
        else:   # the product of the two shown numbers (display arithmetic), rounded to dp decimals
            w = _shown(row[j], dw)
            scaled = np.array([float(w * _shown(v[j, c], dvv)) for c in range(dv)])
        _draw_block(ax, x_s, y0 + 0.05, scaled[None], cell=cell, row_cell=0.9, digits=dp, fontsize=6)
    z_y = n_keys + 0.6
    ax.plot([x_s, x_s + dv * cell], [z_y - 0.25] * 2, color="#333333", linewidth=1.0)
    ax.text(x_s - 1.1, z_y + 0.5, "Σ =" if exact else "Σ ≈", ha="center", va="center", fontsize=9)
    _draw_block(ax, x_s, z_y, out[query][None], cell=cell, row_cell=1.0, digits=digits_out, fontsize=6.5,
                col_heads=np.zeros(dv, int))
    ax.text(x_w + 1.0, -0.4, words["weight"], ha="center", va="bottom", fontsize=7.5)
    if answers is not None and len(answers) == dv:   # the columns have names (post 002: the candidate words)
        for c, name in enumerate(answers):
            for x0 in (x_v, x_s):
                ax.text(x0 + (c + 0.5) * cell, -0.1, f"“{name}”", ha="center", va="bottom", fontsize=7.5)
        ax.text(x_v + dv * cell / 2, -0.75, "v", ha="center", va="bottom", fontsize=8)
        ax.text(x_s + dv * cell / 2, -0.75, words["value_rows"], ha="center", va="bottom", fontsize=7.5)
    else:
        ax.text(x_v + dv * cell / 2, -0.4, "v", ha="center", va="bottom", fontsize=8)
        ax.text(x_s + dv * cell / 2, -0.4, words["value_rows"], ha="center", va="bottom", fontsize=7.5)
    # "z — their sum" under the Σ row, not beside it: the room goes to the cells, whose numbers then fit
    ax.text(x_s + dv * cell / 2, z_y + 1.35, "z  — " + words["sum_z"], ha="center", va="top", fontsize=7.5)
    if dw > digits_w or dvv > digits_v:      # say why these weights or values carry more decimals
        ax.text(x_w - 3.0, z_y + 0.5, _wrapped(words["more_digits"], 2.2, 7), ha="left", va="center", fontsize=7,
                color="#555555")
    ax.set_xlim(-3.2, x_s + dv * cell + 0.6)
    ax.set_ylim(z_y + 2.6, -1.6 if answers is not None else -1.2)
    ax.set_aspect("equal")


def _label_bars(ax, positions, values, blocked, name, digits, n_keys, words) -> None:
    """Values on the bars: all of them for ≤ 24 keys, the five largest weights beyond that. Each label
    sits past its bar's end (below a negative bar), and `_room_for_labels` later widens the axis so
    that no label, minus sign included, runs outside its panel."""
    if n_keys <= 24:
        chosen = range(n_keys)
    elif name in (WEIGHTS, _CONTRIBUTIONS):   # the five strongest, skipping near-zero ones whose labels would pile up
        chosen = [j for j in np.argsort(values)[-5:] if values[j] >= 0.1 * values.max()]
    else:
        return
    rotate = 90 if n_keys > 8 else 0
    labels = []
    for j in chosen:
        value = values[j]
        text = _num(value, digits)
        if blocked is not None and blocked[j]:  # before softmax the mask makes it −∞; after, weight 0
            text, value = (words["masked"], 0.0) if name in (WEIGHTS, _CONTRIBUTIONS) else (f"{text} → −∞", value)
        labels.append(ax.annotate(text, (positions[j], value), xytext=(0, 2 if value >= 0 else -2),
                                  textcoords="offset points", ha="center", va="bottom" if value >= 0 else "top",
                                  fontsize=6.5, rotation=rotate, annotation_clip=False))
    ax._qkv_bar_labels = labels


def _room_for_labels(fig: Figure) -> None:
    """Widen each bar panel's value axis so that every bar label lies inside the panel (a label past the
    panel's edge is hidden by the next panel or cut by the figure: "−14.3105" lost its minus sign).
    The labels are measured where the hand layout put them (no drawing pass); the axis then grows by what
    sticks out."""
    # Upright labels fit in the panels' 25 % margins; only turned ones (more than 8 keys) can stick out.
    axes = [ax for ax in fig.axes if any(t.get_rotation() for t in getattr(ax, "_qkv_bar_labels", []))]
    if not axes:
        return
    from ._agg import measuring_renderer

    renderer = measuring_renderer(fig)
    for ax in axes:
        for _ in range(4):                        # growing moves the labels: measure again until all fit
            low, high = ax.get_ylim()             # the limits after autoscaling, before measuring against them
            box = ax.get_window_extent(renderer)
            per_pixel = (high - low) / max(1.0, box.height)
            extents = [t.get_window_extent(renderer) for t in ax._qkv_bar_labels]
            over_top = max((e.y1 - box.y1 for e in extents), default=-1e9) + 4.0      # 4 px of air
            over_bottom = max((box.y0 - e.y0 for e in extents), default=-1e9) + 4.0
            # growing the range shrinks every label's share of it: grow by a little more than what sticks out
            grow_top = max(0.0, over_top) * per_pixel * 1.5
            grow_bottom = max(0.0, over_bottom) * per_pixel * 1.5
            if not (grow_top or grow_bottom):
                break
            ax.set_ylim(low - grow_bottom, high + grow_top)


def query_path(trace: Trace, query: int | None = None, *, head: int | None = None, layer: int | None = None,
               part: str | None = None, lang: str = "en", digits: int | None = None) -> Figure:
    """One query's whole chain: q·k for every key → ÷√dₖ (→ + bias) → softmax, as bars over the keys,
    then (when v_heads and out are recorded and ≤ 12 keys) each value row × its weight and their sum z.

    query defaults to the trace's followed query (trace.meta["query"], else 0), head to
    trace.meta["head"] when the weights hold several heads (else 0: a one-head trace's meta head is
    a label, shown in the title). For a model trace, layer picks ``layer {l}/…`` (default
    trace.meta["layer"], else 0); part picks a scoped computation by prefix, e.g. "question".
    Masked keys are hatched: "→ −∞" before softmax, "masked" after.
    """
    trace = in_language(trace, lang)      # the example's token names in the reader's language
    chosen = _part(trace, _layer_prefix(trace, layer) if part is None else part)
    weights = step_heads(trace, chosen.prefix + WEIGHTS)
    query, head = _followed(trace, chosen.query if query is None else query, head, weights.shape[1],
                            weights.shape[0])
    words = _style.words(lang)
    n_keys = weights.shape[-1]
    with fonts.context():
        panels = _chain(trace, query, head, words, digits, chosen.prefix)
        width, height = _chain_size(panels, chosen.k_tokens)
        title = _path_title(chosen, query, _head_label(trace, chosen, head, weights.shape[0], words), words, trace.meta)
        top = _title_room(title, 10.5)
        height += _values_height(trace, chosen.prefix, head)
        sheet = _Sheet(max(5.5, width + 0.2), top + height)
        sheet.title(title, 10.5)
        _draw_path(sheet, (0.1, top, sheet.width - 0.2, height), trace, query, head, words, digits, chosen.prefix,
                   panels=panels)
        _room_for_labels(sheet.fig)
    return sheet.fig


def _head_label(trace: Trace, part: Part, head: int, n_heads: int, words) -> str:
    """Which head is drawn, for titles, numbered as `qkv.trace.head_number` says: "head 2" for an index into several recorded
    heads; for a one-head trace of a model the model's own numbers from trace.meta ("layer 2, head 5"),
    else "" (nothing to name). A model trace's part prefix ("layer 3/") names the layer."""
    info = trace.info
    if part.prefix.startswith("layer "):
        return words("layer_head", l=int(part.prefix.split()[1].rstrip("/")), h=head)
    if n_heads > 1:
        head_no = head_number(trace.meta, head)              # as the example's post numbers its heads
    elif info.head is not None:
        head_no = head_number(trace.meta, int(info.head))
    else:
        return ""
    if info.layer is not None:
        return words("layer_head", l=int(info.layer), h=head_no)
    return words("head", h=head_no)


def _path_title(part: Part, query: int, head_label: str, words, meta: dict | None = None) -> str:
    """"query 3 “token 3”": the row shown from the example's token base (`qkv.trace.token_number`)."""
    where = f"{part.prefix.rstrip('/')}: " if part.prefix and not part.prefix.startswith("layer ") else ""
    text = where + words("query", i=token_number(meta or {}, query), token=_style.short(part.q_tokens[query], 20))
    return text + (f" — {head_label}" if head_label else "")


def _part(trace: Trace, prefix: str | None) -> Part:
    """The attention part named by prefix ("layer 2/", "question" or "question/"); None: the first."""
    parts = attention_parts(trace)
    if not parts:
        raise ValueError("the trace records no attention weights (no step 'weights', 'layer 0/weights' or "
                         f"'<part>/weights'); steps: {', '.join(trace.names()) or 'none'}")
    if prefix is None:
        return parts[0]
    wanted = prefix if prefix == "" or prefix.endswith("/") else prefix + "/"
    for candidate in parts:
        if candidate.prefix == wanted:
            return candidate
    raise ValueError(f"no attention part {prefix!r} in the trace; parts: "
                     f"{', '.join(repr(c.prefix.rstrip('/')) for c in parts)}")


def _layer_prefix(trace: Trace, layer: int | None) -> str | None:
    prefixes = [p.prefix for p in attention_parts(trace)]
    if not prefixes or not prefixes[0].startswith("layer "):
        if layer is not None:
            raise ValueError(f"layer={layer} given but the trace is not a model trace (no 'layer 0/weights')")
        return None
    chosen = int(trace.info.layer or 0) if layer is None else int(layer)
    name = f"layer {chosen}/"
    if name not in prefixes:
        raise ValueError(f"layer must be one of {[int(p.split()[1][:-1]) for p in prefixes]}, got {chosen}")
    return name


# ------------------------------------------------------------------ where q, k, v come from: X · W
_DECODER_TINT, _ENCODER_TINT = "#fde2e4", "#eaf1fb"     # the two sentences' colours, as in the lines panel


def _inputs_drawable(trace: Trace, prefix: str = "") -> bool:
    """True when the trace records a small single-head projection, X (and memory) → W_Q, W_K, W_V → Q, K, V
    (≤ 8 tokens, widths ≤ 4: the worked examples' size, where every number fits its cell)."""
    names = (X, W_Q, W_K, W_V, Q, K, V, Q_HEADS)
    if prefix or not all(n in trace for n in names):
        return False
    source = _rows(trace[MEMORY].value) if MEMORY in trace else _rows(trace[X].value)
    q_heads = as_heads(trace[Q_HEADS].value, Q_HEADS)
    return (q_heads.shape[0] == 1 and _rows(trace[X].value).shape[0] <= 8 and source.shape[0] <= 8
            and max(trace[n].value.shape[-1] for n in (X, Q, K, V)) <= 4)


def _products_of(row: np.ndarray, matrix: np.ndarray, result: np.ndarray, digits_row: int, digits_matrix: int,
                 digits_result: int) -> str:
    """"[a × b + c × d, …] = [r₁, …]": a row times a matrix, each output number as its sum of products,
    true as printed (`_sum_of_products`)."""
    lines = _sop_block([(list(zip(row, matrix[:, c])), result[c]) for c in range(matrix.shape[1])], digits_row,
                       digits_matrix, digits_result)
    parts = [line.rsplit(" = " if " = " in line else " ≈ ", 1) for line in lines]
    sign = "=" if all(" = " in line for line in lines) else "≈"
    return f"[{', '.join(p[0] for p in parts)}] {sign} [{', '.join(p[1] for p in parts)}]"


def _draw_products(ax, x0: float, source: np.ndarray, source_label: str, tokens: Sequence[str],
                   products: list[tuple[str, np.ndarray, str, np.ndarray]], digits, *, highlight: int | None,
                   cell: float = 1.1) -> float:
    """A source matrix (rows = tokens) → each weight matrix W → below it, the product source·W. The
    followed row is outlined in the source and in each product. Returns the right edge."""
    rows, width = source.shape
    fs = 7.0
    for i in range(rows):
        ax.text(x0 - 0.25, i + 0.5, _style.short(tokens[i], 10), ha="right", va="center", fontsize=8)
    src_w, _ = _draw_block(ax, x0, 0.0, source, cell=cell, row_cell=1.0, digits=digits(source_label), fontsize=fs,
                           label=f"{source_label}  ({rows}×{width})")
    if highlight is not None:
        _outline(ax, x0, highlight, src_w, 1.0)
    cursor = x0 + src_w + 2.4
    w_height = max(rows, max(w.shape[0] * cell for _, w, _, _ in products))
    below = w_height + 2.4
    _arrow(ax, (x0 + src_w + 0.2, min(rows, 2) / 2), (cursor - 0.2, min(rows, 2) / 2), f"{source_label}·")
    for w_name, w, r_name, result in products:
        ww, _ = _draw_block(ax, cursor, 0.0, w, cell=cell, row_cell=cell, digits=digits(w_name), fontsize=fs,
                            label=f"{w_name.upper()}  ({w.shape[0]}×{w.shape[1]})")
        rw = result.shape[1] * cell
        centre = cursor + max(ww, rw) / 2
        _arrow(ax, (centre, w.shape[0] * cell + 0.3), (centre, below - 0.9))
        _draw_block(ax, cursor, below, result, cell=cell, row_cell=1.0, digits=digits(r_name), fontsize=fs,
                    label=f"{r_name.upper()} = {source_label}·{w_name.upper()}  ({rows}×{result.shape[1]})")
        if highlight is not None:
            _outline(ax, cursor, below + highlight, rw, 1.0)
        cursor += max(ww, rw) + 2.4
    for i in range(rows):
        ax.text(x0 + src_w + 2.4 - 0.25, below + i + 0.5, _style.short(tokens[i], 10), ha="right", va="center",
                fontsize=7.5, color="#555555")
    return cursor - 2.4


def _outline(ax, x: float, y: float, w: float, h: float) -> None:
    box = _rect(x, y, w, h)
    box.set_edgecolor("#d1495b")
    box.set_linewidth(1.8)
    box.set_zorder(6)
    ax.add_patch(box)


def _draw_inputs(sheet: "_Sheet", box: tuple[float, float, float, float], trace: Trace, query: int, words,
                 digits_arg: int | None) -> None:
    """Post 001's figure 1 begins here: X (for cross-attention the decoder's row X_dec and the encoder's
    rows M_enc) times W_Q, W_K, W_V gives q, k and v; beside it, the followed query's q and the first
    key's k written out as sums of products, so that every later number traces back to X and W."""
    from matplotlib.patches import Patch

    digits = lambda name: _digits(trace, name, digits_arg)      # noqa: E731
    cross = MEMORY in trace
    x, q, k, v = (_rows(trace[n].value) for n in (X, Q, K, V))
    w_q, w_k, w_v = (trace[n].value for n in (W_Q, W_K, W_V))
    part = _part(trace, None)
    q_tokens, k_tokens = part.q_tokens, part.k_tokens
    # q of the followed query and k of the first key, each number as its sum of products
    dx, dw, dq, dk = digits(X), digits(W_Q), digits(Q), digits(K)
    source_rows, source_name = (_rows(trace[MEMORY].value), "M_enc") if cross else (x, "X")
    d_source = digits(MEMORY) if cross else dx
    q_name, k_name = _style.short(q_tokens[query], 10), _style.short(k_tokens[0], 10)
    lines = [words["trace_q"],
             f"q_{q_name} = {'X_dec' if cross else 'X'}[{q_name}] · W_Q",
             "    = " + _products_of(x[query], w_q, q[query], dx, dw, dq),
             f"k_{k_name} = {source_name}[{k_name}] · W_K",
             "    = " + _products_of(source_rows[0], w_k, k[0], d_source, digits(W_K), dk),
             words["followed"]]
    bx, by, bw, bh = box
    text_inches = max(_text_inches(line, _LINE_POINTS) for line in lines) + 0.3
    ax = sheet.axes(bx, by, bw - text_inches - 0.2, bh - (0.35 if cross else 0.05))
    if cross:
        memory = source_rows
        right = _draw_products(ax, 0.0, x, "X_dec", q_tokens, [("W_Q", w_q, "q", q)], _digit_names(digits),
                               highlight=query)
        enc_x = right + 4.2
        end = _draw_products(ax, enc_x, memory, "M_enc", k_tokens, [("W_K", w_k, "K", k), ("W_V", w_v, "V", v)],
                             _digit_names(digits), highlight=0)
        height = max(memory.shape[0], w_k.shape[0] * 1.1) + 2.4 + memory.shape[0]
        _band(ax, -2.4, right + 0.4, height, _DECODER_TINT, words["inputs_dec"])
        _band(ax, enc_x - 2.4, end + 0.4, height, _ENCODER_TINT, words["inputs_enc"])
        ax.legend(handles=[Patch(facecolor=_DECODER_TINT, edgecolor="#999999", label=words["legend_dec"]),
                           Patch(facecolor=_ENCODER_TINT, edgecolor="#999999", label=words["legend_enc"])],
                  loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=7.5, frameon=False)
    else:
        end = _draw_products(ax, 0.0, x, "X", q_tokens, [("W_Q", w_q, "Q", q), ("W_K", w_k, "K", k),
                                                           ("W_V", w_v, "V", v)], _digit_names(digits), highlight=query)
        height = max(x.shape[0], w_q.shape[0] * 1.1) + 2.4 + x.shape[0]
        ax.text(-2.4, -1.6, words["inputs"], ha="left", va="bottom", fontsize=8.5, color="#333333")
    ax.set_xlim(-2.8, end + 0.6)
    ax.set_ylim(height + 0.6, -2.3)
    ax.set_aspect("equal")
    ax.axis("off")
    step = min(0.36, 0.9 * bh / len(lines))              # the lines, level with the matrices' middle
    first = by + (bh - step * len(lines)) / 2 + step / 2
    for i, line in enumerate(lines):
        sheet.text(bx + bw - text_inches, first + i * step, line, ha="left", va="center", fontsize=_LINE_POINTS,
                   color="#555555" if i in (0, len(lines) - 1) else "#111111")


def _digit_names(digits):
    """Digits by the labels `_draw_products` uses (X, X_dec, M_enc, W_Q, q, K, …) → the trace's step names."""
    names = {"X": X, "X_dec": X, "M_enc": MEMORY, "W_Q": W_Q, "W_K": W_K, "W_V": W_V, "Q": Q, "q": Q, "K": K, "V": V}
    return lambda label: digits(names.get(label, label))


def _band(ax, x0: float, x1: float, height: float, colour: str, label: str) -> None:
    """A tinted background behind one sentence's matrices, with what it gives written above."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x0, -1.3), x1 - x0, height + 1.8, boxstyle="round,pad=0.1,rounding_size=0.4",
                                facecolor=colour, edgecolor="#bbbbbb", linewidth=0.8, zorder=0))
    ax.text(x0 + 0.2, -1.6, label, ha="left", va="bottom", fontsize=8.5, color="#333333")


# ------------------------------------------------------------------ masks
def mask_figure(mask: Any, tokens: Sequence[str] | None = None, k_tokens: Sequence[str] | None = None, *,
                title: str | None = None, lang: str = "en") -> Figure:
    """The additive mask as numbers: 0 where a query may attend, −∞ where it may not (hatched grey).

    mask: boolean (Tq, Tk), True = may attend (as everywhere in qkv), or the recorded 0/−∞ floats;
    (H, Tq, Tk) shows the first head. Causal and padding masks alike; long ones lose the numbers
    and keep the two colours.
    """
    if np.ndim(mask) < 2:
        raise ValueError(f"mask has shape {np.shape(mask)}, expected (Tq, Tk) or (H, Tq, Tk)")
    blocked = _blocked(mask, np.shape(mask)[-2:])
    tq, tk = blocked.shape
    q_labels, k_labels = token_labels({"tokens": tokens, "key_tokens": k_tokens}, tq, tk)
    words = _style.words(lang)
    width, height = _axis_side(tk), _axis_side(tq)
    with fonts.context():
        fig = Figure(figsize=(width + 1.6, height + 1.6), layout="constrained")
        ax = fig.add_subplot()
        _draw_mask(ax, blocked, q_labels, k_labels, (width, height))
        ax.set_title(title or f"{words['mask']}\n{words['mask_note']}", fontsize=10)
        ax.set_xlabel(words["keys"])
        ax.set_ylabel(words["queries"])
    return fig


def _draw_mask(ax, blocked: np.ndarray, q_labels, k_labels, inches) -> None:
    tq, tk = blocked.shape
    ax.imshow(blocked.astype(float), cmap=mcolors.ListedColormap(["#ffffff", shared.MASKED_COLOUR]), vmin=0, vmax=1,
              aspect="auto", interpolation="nearest" if max(tq, tk) <= 256 else "antialiased")
    if max(tq, tk) <= _HATCH_CELLS:
        _hatch_cells(ax, blocked)
    _set_token_ticks(ax, "x", k_labels, inches[0])
    _set_token_ticks(ax, "y", q_labels, inches[1])
    if max(tq, tk) <= _SMALL:
        for i in range(tq):
            for j in range(tk):
                ax.text(j, i, "−∞" if blocked[i, j] else "0", ha="center", va="center", fontsize=8, color="#1a1a1a",
                        zorder=3, bbox={"facecolor": shared.MASKED_COLOUR, "edgecolor": "none", "pad": 0.6}
                        if blocked[i, j] else None)
        ax.set_xticks(np.arange(-0.5, tk, 1), minor=True)
        ax.set_yticks(np.arange(-0.5, tq, 1), minor=True)
        ax.grid(which="minor", color="#cccccc", linewidth=0.5)
        ax.tick_params(which="minor", length=0)


# ------------------------------------------------------------------ cross-attention: two sentences
def _draw_two_sentences(ax, weights: np.ndarray, q_tokens, k_tokens, query: int, words, digits: int,
                        blocked: np.ndarray | None = None) -> None:
    """Decoder tokens above, encoder tokens below, a line from each query to each key, as wide and as
    dark as its weight; the followed query's lines carry their weights."""
    tq, tk = weights.shape
    span = max(tq, tk) - 1 or 1
    xq = np.linspace(0, span, tq) if tq > 1 else np.array([span / 2])
    xk = np.linspace(0, span, tk) if tk > 1 else np.array([span / 2])
    top_y, bottom_y = 0.0, 3.0
    colour = np.array(mcolors.to_rgb("#d1495b"))
    for i in range(tq):
        for j in range(tk):
            if blocked is not None and blocked[i, j]:
                continue
            w = float(weights[i, j])
            followed = i == query
            ax.plot([xq[i], xk[j]], [top_y + 0.1, bottom_y - 0.1], solid_capstyle="round", zorder=2,
                    linewidth=0.5 + 9.0 * w, alpha=(0.25 + 0.7 * w ** 0.5) if followed else 0.18,
                    color=colour if followed else "#2b6cb0")
            if followed and tk <= 16:
                t = 0.72
                ax.text(xq[i] + t * (xk[j] - xq[i]), top_y + 0.25 + t * (bottom_y - top_y - 0.5), _num(w, digits),
                        fontsize=7, ha="center", va="center", zorder=4,
                        bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.6, "alpha": 0.85})
    for i, tok in enumerate(q_tokens):
        ax.text(xq[i], top_y, _style.short(tok, 12), ha="center", va="bottom", fontsize=10,
                bbox={"facecolor": "#fde2e4" if i == query else "#f2f2f2", "edgecolor": "#999999", "pad": 2.5})
    for j, tok in enumerate(k_tokens):
        ax.text(xk[j], bottom_y, _style.short(tok, 12), ha="center", va="top", fontsize=10,
                bbox={"facecolor": "#eaf1fb", "edgecolor": "#999999", "pad": 2.5})
    ax.text(xq[query] + 0.45, top_y - 0.05, words["decoder"], ha="left", va="center", fontsize=8.5, color="#444444")
    ax.text(span / 2, bottom_y + 0.55, words["encoder"], ha="center", va="top", fontsize=8.5, color="#444444")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(facecolor="#fde2e4", edgecolor="#999999", label=words["legend_dec"]),
                       Patch(facecolor="#eaf1fb", edgecolor="#999999", label=words["legend_enc"]),
                       Line2D([], [], color=colour, linewidth=4, label=words["cross_lines"])],
              loc="upper left", ncol=1, fontsize=7.5, frameon=False)
    ax.set_xlim(-0.8, span + 0.8)
    ax.set_ylim(bottom_y + 0.9, top_y - 1.5)
    ax.axis("off")


def cross_figure(trace: Trace, *, lang: str = "en", digits: int | None = None, head: int | None = None) -> Figure:
    """Cross-attention as post 001 draws it, every number traced from the inputs: the decoder's row X_dec
    → q and the encoder's rows M_enc → K, V (above); the two sentences, lines weighted (left); the
    followed query's chain, q·k as sums of products → ÷√dₖ → exp / Σ exp (right); each value row × its
    weight → z (below the sentences)."""
    trace = in_language(trace, lang)      # the example's token names in the reader's language
    chosen = _part(trace, None)
    weights = step_heads(trace, chosen.prefix + WEIGHTS)
    query, head = _followed(trace, chosen.query, head, weights.shape[1], weights.shape[0])
    words = _style.words(lang)
    with fonts.context():
        panels = _chain(trace, query, head, words, digits, chosen.prefix)
        inputs = _inputs_drawable(trace)
        chain_w, chain_h = _chain_size(panels, chosen.k_tokens)
        path_title = _path_title(chosen, query, _head_label(trace, chosen, head, weights.shape[0], words), words,
                                 trace.meta)
        left_w, sentences_h = 6.5, 4.6
        values_h = max(_values_height(trace, chosen.prefix, head), 0.5) + 0.3
        body = max(sentences_h + values_h, chain_h + _title_room(path_title, 10.0))
        strip = 4.3 if inputs else 0.0
        title = _title(trace, words)
        top = _title_room(title)
        sheet = _Sheet(left_w + chain_w + 0.3, top + strip + body)
        if title:
            sheet.title(title)
        y = top
        if inputs:
            _draw_inputs(sheet, (0.1, y, sheet.width - 0.2, strip), trace, query, words, digits)
            y += strip
        sheet.text(0.1 + left_w / 2, y + 0.1, words["attention"], ha="center", va="top", fontsize=10)
        ax = sheet.axes(0.1, y + 0.45, left_w - 0.2, sentences_h - 0.45)
        _draw_two_sentences(ax, weights[head], chosen.q_tokens, chosen.k_tokens, query, words,
                            _digits(trace, WEIGHTS, digits), _head_mask(trace, chosen.prefix, head))
        _draw_path(sheet, (0.1 + left_w, y, chain_w, body), trace, query, head, words, digits, chosen.prefix,
                   panels=panels, values_box=(0.1, y + sentences_h, left_w - 0.2, body - sentences_h),
                   title=path_title)
        _room_for_labels(sheet.fig)
    return sheet.fig


# ------------------------------------------------------------------ post 002: the group meeting
def _scenes(trace: Trace) -> list[tuple[Part, dict]]:
    """The meetings of post 002 (trace.meta["scenes"]) with their attention parts, in order."""
    scenes = {str(s.get("name")): s for s in trace.info.scenes if isinstance(s, dict)}
    return [(p, scenes[p.prefix.rstrip("/")]) for p in attention_parts(trace) if p.prefix.rstrip("/") in scenes]


def meeting_figure(trace: Trace, *, lang: str = "en", digits: int | None = None) -> Figure:
    """Post 002, "어텐션이 조모임이라면": each meeting (one row), then the two notations.

    A meeting: the followed token's question gets a compatibility score with every token (given, as
    in the post; the post does not divide them by √d_k, so no ÷√d_k step is drawn), softmax turns
    them into weights (exp / Σ exp written out), and the answers v (columns: the candidate next words)
    weighted and summed give z. Below: softmax(QKᵀ/√d_k)·V (row vectors, softmax per row) next to
    V·softmax(KᵀQ/√d_k) (column vectors, softmax per column) from the recorded rows/ and columns/ steps.
    """
    trace = in_language(trace, lang)      # the example's token names in the reader's language
    words = _style.words(lang)
    scenes = _scenes(trace)
    answers = [str(a) for a in trace.info.answers] or None
    notations = all(f"{n}/{WEIGHTS}" in trace for n in ("rows", "columns")) and f"rows/{OUT}" in trace \
        and f"columns/{OUT}" in trace
    with fonts.context():
        chains = []
        for part, scene in scenes:
            panels = _chain(trace, part.query, 0, words, digits, part.prefix)
            panels[0].label = words["meeting_scores"]
            panels[0].note = words["meeting_no_scale"]
            chains.append(panels)
        sizes = [_chain_size(panels, part.k_tokens) for (part, _), panels in zip(scenes, chains)]
        values_w = 5.8            # the value rows and the room their column names and "z — their sum" take
        width = max(15.0, max((w for w, _ in sizes), default=0.0) + values_w + 0.3)
        heights = [max(h, 0.36 * (len(part.k_tokens) + 3.8)) + 0.45 for (part, _), (_, h) in zip(scenes, sizes)]
        notations_h = 4.4 if notations else 0.0
        title = _title(trace, words)
        top = _title_room(title, 11.5)
        sheet = _Sheet(width, top + sum(heights) + notations_h + 0.1)
        if title:
            sheet.title(title, 11.5)
        y = top
        chain_w = width - values_w - 0.3
        for (part, scene), panels, row_h in zip(scenes, chains, heights):
            sheet.text(width / 2, y + 0.05, words("meeting", sentence=" ".join(str(t) for t in scene.get("tokens", [])),
                                                 token=str(scene.get("query", part.q_tokens[part.query]))),
                       ha="center", va="top", fontsize=10.5)
            _draw_path(sheet, (0.1, y + 0.4, chain_w, row_h - 0.45), trace, part.query, 0, words, digits, part.prefix,
                       panels=panels, values_box=(0.1 + chain_w, y + 0.4, values_w - 0.5, row_h - 0.45),
                       answers=answers)
            y += row_h
        if notations:
            _draw_notations(sheet, (0.1, y, width - 0.2, notations_h), trace, words, digits)
        _room_for_labels(sheet.fig)
    return sheet.fig


def _draw_notations(sheet: "_Sheet", box: tuple[float, float, float, float], trace: Trace, words,
                    digits_arg: int | None) -> None:
    """softmax(QKᵀ/√d_k) (softmax per row) and its ·V, beside softmax(KᵀQ/√d_k) (per column) and V·it:
    the recorded steps rows/… and columns/…, the same numbers transposed."""
    from ..explain.numbers import fmt_small

    rows_w, rows_out = _rows(trace[f"rows/{WEIGHTS}"].value), _rows(trace[f"rows/{OUT}"].value)
    cols_w, cols_out = _rows(trace[f"columns/{WEIGHTS}"].value), _rows(trace[f"columns/{OUT}"].value)
    tokens = [str(t) for t in trace.info.tokens]
    if len(tokens) != rows_w.shape[0]:
        tokens = [str(i) for i in range(rows_w.shape[0])]
    dw, do = _digits(trace, f"rows/{WEIGHTS}", digits_arg), _digits(trace, f"rows/{OUT}", digits_arg)
    bx, by, bw, bh = box
    sheet.text(bx + bw / 2, by + 0.05, words("notations", sentence=" ".join(tokens)), ha="center", va="top",
               fontsize=10.5)
    ax = sheet.axes(bx, by + 0.4, bw, bh - 0.4)
    cell, fs = 1.35, 6.8
    t = rows_w.shape[0]

    def names(x0: float, y0: float, count_rows: bool, labels: Sequence[str]) -> None:
        for i, name in enumerate(labels):
            if count_rows:
                ax.text(x0 - 0.2, y0 + i + 0.5, _style.short(name, 9), ha="right", va="center", fontsize=7.5)
            else:
                ax.text(x0 + (i + 0.5) * cell, y0 - 0.15, _style.short(name, 9), ha="center", va="bottom",
                        fontsize=7, rotation=0)

    # row form
    x0, y0 = 2.2, 2.2
    ww, _ = _draw_block(ax, x0, y0, rows_w, cell=cell, row_cell=1.0, digits=dw, fontsize=fs, weights=True)
    names(x0, y0, True, tokens)
    names(x0, y0, False, tokens)
    ax.text(x0 + ww + 0.9, y0 + t / 2, "·V =", ha="center", va="center", fontsize=10)
    ox = x0 + ww + 1.8
    ow, _ = _draw_block(ax, ox, y0, rows_out, cell=cell, row_cell=1.0, digits=do, fontsize=fs,
                        col_heads=np.zeros(rows_out.shape[1], int))
    ax.text(x0 - 1.6, y0 - 1.3, _wrapped(words["rows_form"], 6.5, 8.5), ha="left", va="bottom", fontsize=8.5)
    ax.text(x0 + ww / 2, y0 + t + 0.3, words["rows_axes"], ha="center", va="top", fontsize=7.5, color="#555555")
    ax.text(ox + ow / 2, y0 + t + 0.3, _wrapped(words["rows_out"], 2.6, 8), ha="center", va="top", fontsize=8)
    # column form
    x1 = ox + ow + 5.0
    cw, _ = _draw_block(ax, x1, y0, cols_w, cell=cell, row_cell=1.0, digits=dw, fontsize=fs, weights=True)
    names(x1, y0, True, tokens)
    names(x1, y0, False, tokens)
    ax.text(x1 + cw + 0.9, y0 + t / 2, "→", ha="center", va="center", fontsize=10)
    px = x1 + cw + 1.8
    pw, ph = _draw_block(ax, px, y0, cols_out, cell=cell, row_cell=1.0, digits=do, fontsize=fs,
                         row_heads=np.zeros(cols_out.shape[0], int))
    names(px, y0, False, tokens)
    ax.text(x1 - 1.6, y0 - 1.3, _wrapped(words["columns_form"], 6.5, 8.5), ha="left", va="bottom", fontsize=8.5)
    ax.text(x1 + cw / 2, y0 + t + 0.3, words["columns_axes"], ha="center", va="top", fontsize=7.5, color="#555555")
    ax.text(px + pw / 2, y0 + max(t, ph) + 0.3, _wrapped(words["columns_out"], 2.6, 8), ha="center", va="top",
            fontsize=8)
    difference = trace.get("columns/difference")
    if difference is not None:
        biggest = float(np.abs(difference.value).max()) if difference.value.size else 0.0
        said = words("notations_same.exact") if biggest == 0 else words("notations_same", diff=fmt_small(biggest))
        ax.text(x0 - 1.6, y0 + t + 2.2, said, ha="left", va="top",
                fontsize=8.5, color="#333333")
    ax.set_xlim(x0 - 2.0, px + pw + 0.6)
    ax.set_ylim(y0 + t + 3.0, -0.6)
    ax.set_aspect("equal")
    ax.axis("off")


# ------------------------------------------------------------------ the figure that suits a trace
def attention_figure(trace: Trace, *, head: int | None = None, query: int | None = None, part: str | None = None,
                     lang: str = "en", digits: int | None = None) -> Figure:
    """One attention computation in one picture: [the mask as numbers] | the weights heatmap | the
    followed query's chain (bars, then value rows × weights → z).

    The mask panel appears when a mask was recorded, the chain when scores were. part: the step
    prefix of a scoped computation (e.g. "layer 3" or "question"); default the first.
    """
    trace = in_language(trace, lang)      # the example's token names in the reader's language
    chosen = _part(trace, part)
    prefix = chosen.prefix
    weights = step_heads(trace, prefix + WEIGHTS)
    n_heads, tq, tk = weights.shape
    query, head = _followed(trace, chosen.query if query is None else query, head, tq, n_heads)
    words = _style.words(lang)
    q_tokens, k_tokens = chosen.q_tokens, chosen.k_tokens
    cross = trace.info.kind == "cross-attention" or "memory" in trace
    blocked = _head_mask(trace, prefix, head)
    with_path = prefix + SCORES in trace
    inputs = with_path and _inputs_drawable(trace, prefix)
    width, height = _axis_side(tk), _axis_side(tq)
    with fonts.context():
        panels = _chain(trace, query, head, words, digits, prefix) if with_path else []
        chain_w, chain_h = _chain_size(panels, k_tokens) if with_path else (0.0, 0.0)
        # with the inputs drawn above (a worked example), the value rows go under the heatmap
        values_h = _values_height(trace, prefix, head) if inputs else 0.0
        label_w = max(_text_inches(_style.short(t), 8) for t in q_tokens) + 0.55     # token labels, axis label
        heat_w = max(label_w + width + 0.4, 6.0 if values_h else 0.0)
        drawn_w = heat_w - label_w - 0.4                  # the heatmap fills its column
        mask_w = label_w + width + 0.4 if blocked is not None else 0.0
        masked_any = blocked is not None and bool(blocked.any())
        head_pad = 0.55 if blocked is not None else 0.35  # the panels' titles (the mask's takes two lines)
        legend_w = 0.7 * drawn_w
        heat_h = head_pad + height + _turned_room(k_tokens, drawn_w) + 0.3 + _legend_height(words, legend_w) + \
            (0.3 if masked_any else 0.0)
        path_title = ""
        head_label = _head_label(trace, chosen, head, n_heads, words)
        if with_path:
            path_title = _path_title(chosen, query, head_label, words, trace.meta)
        body = max(heat_h + values_h + 0.1, chain_h + (_title_room(path_title, 9.5) if with_path else 0.0) +
                   (0.0 if values_h else _values_height(trace, prefix, head)))
        strip = 4.0 if inputs else 0.0
        title = _title(trace, words)
        top = _title_room(title)
        sheet = _Sheet(mask_w + heat_w + chain_w + 0.3, top + strip + body)
        if title:
            sheet.title(title)
        y = top
        if inputs:
            _draw_inputs(sheet, (0.1, y, sheet.width - 0.2, strip), trace, query, words, digits)
            y += strip
        x = 0.1
        if blocked is not None:
            ax = sheet.axes(x + label_w, y + head_pad, width, height)
            _draw_mask(ax, blocked, q_tokens, k_tokens, (width, height))
            ax.set_title(f"{words['mask']}\n{words['mask_note']}", fontsize=9.5)
            ax.set_xlabel(words["keys_enc"] if cross else words["keys"])
            ax.set_ylabel(words["queries_dec"] if cross else words["queries"])
            x += mask_w
        ax = sheet.axes(x + label_w, y + head_pad, drawn_w, height)
        image = _draw_weights(ax, weights[head], q_tokens, k_tokens, blocked=blocked,
                              digits=_digits(trace, prefix + WEIGHTS, digits), inches=(drawn_w, height), words=words)
        if tq <= 64:  # outline the followed query's row
            ax.add_patch(_rect(-0.5, query - 0.5, tk, 1.0))
            ax.patches[-1].set_edgecolor("#d1495b")
            ax.patches[-1].set_linewidth(1.6)
        ax.set_title(f"{words['attention']} — {head_label}" if head_label else words["attention"], fontsize=9.5)
        ax.set_xlabel(words["keys_enc"] if cross else words["keys"])
        ax.set_ylabel(words["queries_dec"] if cross else words["queries"])
        legend_y = y + head_pad + height + _turned_room(k_tokens, drawn_w) + 0.3
        used = _legend_bar(sheet, image, (x + label_w + 0.15 * drawn_w, legend_y, legend_w, 0.0), words)
        if masked_any:
            from matplotlib.patches import Patch

            sheet.fig.legend(handles=[Patch(facecolor=shared.MASKED_COLOUR, edgecolor="#8a8a8a",
                                            hatch=shared.MASKED_HATCH, label=words["masked_key"])],
                             loc="upper center", bbox_to_anchor=((x + label_w + drawn_w / 2) / sheet.width,
                                                                 1.0 - (legend_y + used) / sheet.height),
                             fontsize=7, frameon=False)
        values_box = (x, y + heat_h, heat_w, values_h) if values_h else None
        x += heat_w
        if with_path:
            _draw_path(sheet, (x, y, chain_w, body), trace, query, head, words, digits, prefix, panels=panels,
                       values_box=values_box, title=path_title, title_size=9.5)
        _room_for_labels(sheet.fig)
    return sheet.fig


def figure_for(trace: Trace, *, lang: str = "en", digits: int | None = None) -> Figure:
    """The figure that suits the trace, its numbers at ``digits`` decimals (default the trace's own per step).

    - a whole model (steps ``layer {l}/weights``): `attention_grid` of layers × heads;
    - MultiHeadAttention with projections or head outputs (kind "projection" / "multi-head", or any
      trace of several heads with W_Q/W_K/W_V): `projection_figure`, the whole layer;
    - cross-attention with few tokens: `cross_figure`, two sentences and the chain;
    - one attention (self-attention, one head of a model): `attention_figure` (mask | weights | chain);
    - the group meeting ("어텐션이 조모임이라면"): `meeting_figure`; other scoped single-query
      scenes: their chains side by side.
    """
    trace = in_language(trace, lang)      # the example's token names in the reader's language
    parts = attention_parts(trace)
    kind = trace.info.kind
    drawable_heads = all(n in trace for n in (X, Q, K, V, Q_HEADS)) or all(n in trace for n in (OUT, CONCAT, W_O, Y))
    several_heads = Q_HEADS in trace and as_heads(trace[Q_HEADS].value).shape[0] > 1 and W_Q in trace
    if parts and parts[0].prefix.startswith("layer "):
        weights = layer_weights(trace)
        first = parts[0]
        layers = [int(p.prefix.split()[1].rstrip("/")) for p in parts]
        return attention_grid(weights, first.q_tokens, first.k_tokens, title=title_of(trace, lang) or None, lang=lang,
                              layers=layers)
    if (kind in ("projection", "multi-head") or not parts or (several_heads and kind != "model")) and drawable_heads:
        return projection_figure(trace, lang=lang, digits=digits)
    if not parts:
        raise ValueError("nothing to draw: the trace records neither attention weights nor the steps of "
                         f"multi-head attention; steps: {', '.join(trace.names()) or 'none'}")
    if parts[0].prefix == "":
        weights = step_heads(trace, WEIGHTS)
        cross = kind == "cross-attention" or "memory" in trace
        if cross and weights.shape[1] <= 8 and weights.shape[2] <= 16 and SCORES in trace:
            return cross_figure(trace, lang=lang, digits=digits)
        return attention_figure(trace, lang=lang, digits=digits)
    if kind == "group-meeting" and _scenes(trace):
        return meeting_figure(trace, lang=lang, digits=digits)
    single = [p for p in parts if step_heads(trace, p.prefix + WEIGHTS).shape[1] == 1]
    if not single:
        return attention_figure(trace, part=parts[0].prefix, lang=lang, digits=digits)
    words = _style.words(lang)
    with fonts.context():
        chains = [_chain(trace, p.query, 0, words, digits, p.prefix) for p in single]
        sizes = [_chain_size(panels, p.k_tokens) for panels, p in zip(chains, single)]
        heights = [h + _values_height(trace, p.prefix, 0) for (_, h), p in zip(sizes, single)]
        title = _title(trace, words)
        top = _title_room(title)
        sheet = _Sheet(sum(w for w, _ in sizes) + 0.3, top + max(heights) + 0.45)
        if title:
            sheet.title(title)
        x = 0.1
        for chosen, panels, (w, _) in zip(single, chains, sizes):
            _draw_path(sheet, (x, top, w, max(heights) + 0.45), trace, chosen.query, 0, words, digits, chosen.prefix,
                       panels=panels, title=_path_title(chosen, chosen.query, "", words, trace.meta))
            x += w
        _room_for_labels(sheet.fig)
    return sheet.fig
