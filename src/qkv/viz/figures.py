"""matplotlib figures of a Trace: heatmaps, the layers × heads grid, the seed-000 projection picture,
one query's path from scores to weights, and masks drawn as numbers.

Every function returns a `matplotlib.figure.Figure` (no pyplot state, so nothing piles up in a
script); `save_figure` writes one as PNG, SVG or PDF. Figures only read recorded numbers.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from matplotlib import colors as mcolors
from matplotlib.figure import Figure

from ..trace import Trace
from . import _style
from ._data import Part, as_heads, as_layers, attention_parts, layer_weights, step_heads, token_labels

__all__ = ["heatmap", "attention_grid", "projection_figure", "query_path", "mask_figure", "attention_figure",
           "figure_for"]

_SMALL = 16          # up to this many tokens on an axis every cell gets its value written
_CMAP = "Blues"


def _cmap(name: str = _CMAP) -> mcolors.Colormap:
    import matplotlib

    # masked (−∞) cells: a neutral grey, distinct from weight 0 (white)
    return matplotlib.colormaps[name].with_extremes(bad="#bdbdbd")


def _matrix(value: Any, name: str) -> np.ndarray:
    """A (Tq, Tk) float array; (1, Tq, Tk) accepted. Raises ValueError naming the shape."""
    array = np.asarray(value, dtype=np.float64) if np.asarray(value).dtype != bool else np.asarray(value)
    while array.ndim > 2 and array.shape[0] == 1:
        array = array[0]
    if array.ndim != 2:
        raise ValueError(f"{name} has shape {np.shape(value)}, expected (Tq, Tk)")
    return array


def _blocked(mask: Any, shape: tuple[int, int]) -> np.ndarray | None:
    """Boolean (Tq, Tk): True where the key is blocked. mask is boolean (True = may attend) or 0/−∞."""
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


def _axis_side(n: int) -> float:
    """Inches for an axis of n cells: roomy cells with numbers when small, a fixed 7 in when large."""
    return 0.5 * n if n <= _SMALL else min(7.5, max(5.0, 0.045 * n + 3.0))


def _set_token_ticks(ax, axis: str, tokens: Sequence[str], inches: float) -> None:
    """Token labels on one axis, thinned to what fits in ``inches``; x labels turn when they would touch."""
    n = len(tokens)
    picked = _style.thin_ticks(n, _style.ticks_room(inches, 7.5))
    texts = [_style.short(tokens[i]) if len(picked) == n else f"{_style.short(tokens[i], 10)} ({i})"
             for i in picked]
    size = 8 if n <= 64 else 7
    fonts = {"fontsize": size, "fontfamily": _style.label_font()}
    if axis == "x":
        ax.set_xticks(picked)
        room_pt = inches * 72 / max(1, len(picked))        # width of one label's slot
        widest_pt = max((len(t) for t in texts), default=0) * 0.62 * size
        if widest_pt <= 0.9 * room_pt:
            ax.set_xticklabels(texts, **fonts)
        elif len(picked) <= 8:
            ax.set_xticklabels(texts, rotation=45, ha="right", rotation_mode="anchor", **fonts)
        else:
            ax.set_xticklabels(texts, rotation=90, **fonts)
    else:
        ax.set_yticks(picked)
        ax.set_yticklabels(texts, **fonts)
    ax.tick_params(length=2, pad=2)


def _draw_weights(ax, weights: np.ndarray, q_tokens, k_tokens, *, blocked=None, digits=2, inches=(4, 4),
                  vmax=None, values=None):
    """imshow of (Tq, Tk) weights with token ticks; cell values written when the cells are big enough."""
    tq, tk = weights.shape
    shown = np.ma.masked_where(blocked, weights) if blocked is not None else weights
    top = float(np.nanmax(weights)) if weights.size else 1.0
    if vmax is None:  # few tokens: the absolute 0…1 scale reads best; many: spread to the largest weight
        vmax = 1.0 if max(tq, tk) <= _SMALL or top <= 0 else top
    image = ax.imshow(shown, cmap=_cmap(), vmin=0.0, vmax=vmax,
                      aspect="auto", interpolation="nearest" if max(tq, tk) <= 128 else "antialiased")
    _set_token_ticks(ax, "x", k_tokens, inches[0])
    _set_token_ticks(ax, "y", q_tokens, inches[1])
    write = values if values is not None else (max(tq, tk) <= _SMALL)
    if write:
        limit = image.norm.vmax
        for i in range(tq):
            for j in range(tk):
                if blocked is not None and blocked[i, j]:
                    ax.text(j, i, "0", ha="center", va="center", fontsize=7, color="#555555")
                    continue
                value = weights[i, j]
                ax.text(j, i, f"{value:.{digits}f}", ha="center", va="center", fontsize=7,
                        color="white" if value > 0.6 * limit else "#1a1a1a")
    return image


def heatmap(weights: Any, q_tokens: Sequence[str] | None = None, k_tokens: Sequence[str] | None = None, *,
            title: str | None = None, mask: Any = None, digits: int = 2, cross: bool = False,
            lang: str = "en") -> Figure:
    """Attention weights of one head: queries as rows, keys as columns, token labels on both axes.

    Args:
      weights: (Tq, Tk) weights (each row sums to 1, or is all 0 when every key is masked).
      q_tokens: Tq labels for the rows (default: positions); k_tokens: Tk labels (default: q_tokens
        when Tq == Tk, else positions).
      title: drawn above; mask: boolean (Tq, Tk) True = may attend, or additive 0/−∞ — blocked cells
        are drawn grey; digits: decimals of the values written in the cells (≤ 16 tokens);
      cross: label the axes decoder (rows) × encoder (columns).
    Returns a Figure.
    """
    w = _matrix(weights, "weights")
    tq, tk = w.shape
    q_labels, k_labels = token_labels({"tokens": q_tokens, "key_tokens": k_tokens}, tq, tk)
    words = _style.words(lang)
    width, height = _axis_side(tk), _axis_side(tq)
    fig = Figure(figsize=(width + 2.2, height + 1.6), layout="constrained")
    ax = fig.add_subplot()
    image = _draw_weights(ax, w, q_labels, k_labels, blocked=_blocked(mask, w.shape), digits=digits,
                          inches=(width, height))
    ax.set_xlabel(words["keys_enc"] if cross else words["keys"])
    ax.set_ylabel(words["queries_dec"] if cross else words["queries"])
    fig.colorbar(image, ax=ax, shrink=0.8, label=words["weight"])
    if title:
        ax.set_title(title, fontfamily=_style.label_font())
    return fig


def attention_grid(weights: Any, tokens: Sequence[str] | None = None, k_tokens: Sequence[str] | None = None, *,
                   title: str | None = None, lang: str = "en") -> Figure:
    """Every layer × head as a small heatmap: rows of panels are layers, columns are heads.

    Args:
      weights: (L, H, Tq, Tk), or (H, Tq, Tk) for one layer. tokens: Tq labels; k_tokens: Tk labels.
    Each panel is coloured from 0 to its own maximum (a 512-token head spreads thin; a shared scale
    would leave it white). Token labels appear on the outer panels only, thinned.
    """
    array = as_layers(weights)                                      # (L, H, Tq, Tk)
    n_layers, n_heads, tq, tk = array.shape
    q_labels, k_labels = token_labels({"tokens": tokens, "key_tokens": k_tokens}, tq, tk)
    words = _style.words(lang)
    panel = 1.35 if n_heads > 4 else 2.4
    label_room = 0.0 if max(tq, tk) > 32 else 0.9
    fig = Figure(figsize=(n_heads * panel + 1.0 + label_room, n_layers * panel + 1.0 + label_room),
                 layout="constrained")
    axes = fig.subplots(n_layers, n_heads, squeeze=False, sharex=True, sharey=True)
    pixels = int(panel * 150)        # the panel's size in pixels at the saved resolution
    pooled = False
    for l in range(n_layers):
        for h in range(n_heads):
            ax = axes[l][h]
            w, factor = _max_pool(array[l, h], pixels)
            top = float(w.max()) if w.size else 1.0
            ax.imshow(w, cmap=_cmap(), vmin=0.0, vmax=top if top > 0 else 1.0, aspect="auto",
                      interpolation="nearest", extent=(-0.5, tk - 0.5, tq - 0.5, -0.5))
            pooled = pooled or factor > 1
            ax.set_xticks([])
            ax.set_yticks([])
            if l == 0:
                ax.set_title(f"{words['head']} {h}", fontsize=9)
            if h == 0:
                ax.set_ylabel(f"{words['layer']} {l}", fontsize=9)
    if label_room:  # small enough to name the tokens on the outer panels
        for h in range(n_heads):
            _set_token_ticks(axes[-1][h], "x", k_labels, panel)
        for l in range(n_layers):
            _set_token_ticks(axes[l][0], "y", q_labels, panel)
    note = f"{words['queries']} {tq} × {words['keys']} {tk}; each panel scaled to its own maximum"
    if pooled:
        note += "; a pixel shows the largest weight of the cells it covers"
    fig.suptitle(f"{title}\n{note}" if title else note, fontsize=10, fontfamily=_style.label_font())
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


# ------------------------------------------------------------------ seed 000: projections and heads
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
    top = np.abs(values).max() if values.size else 1.0
    strength = 0.18 + 0.6 * (np.abs(values) / (top if top > 0 else 1.0))
    return 1.0 - strength[..., None] * (1.0 - base)


def _draw_block(ax, x0: float, y0: float, values: np.ndarray, *, cell: float, row_cell: float | None = None,
                label: str = "", col_heads=None, row_heads=None, digits: int = 2,
                fontsize: float = 6.5) -> tuple[float, float]:
    """Draw a matrix with its top-left corner at (x0, y0) (y grows downwards); returns (width, height).

    cell is a column's width, row_cell a row's height (default: cell) — token rows keep a readable
    height even when a wide model squeezes its columns."""
    rows, cols = values.shape
    row_cell = cell if row_cell is None else row_cell
    width, height = cols * cell, rows * row_cell
    ax.imshow(_tint(values, col_heads, row_heads), extent=(x0, x0 + width, y0 + height, y0),
              interpolation="nearest", zorder=1)
    ax.add_patch(_rect(x0, y0, width, height))
    if rows * cols <= 16 * 24 and cell >= 0.9:
        for i in range(rows):
            for j in range(cols):
                ax.text(x0 + (j + 0.5) * cell, y0 + (i + 0.5) * row_cell, f"{values[i, j]:.{digits}f}",
                        ha="center", va="center", fontsize=fontsize, color="#111111", zorder=3)
        for j in range(1, cols):
            ax.plot([x0 + j * cell] * 2, [y0, y0 + height], color="white", linewidth=0.6, zorder=2)
        for i in range(1, rows):
            ax.plot([x0, x0 + width], [y0 + i * row_cell] * 2, color="white", linewidth=0.6, zorder=2)
    if label:
        ax.text(x0 + width / 2, y0 - 0.35, label, ha="center", va="bottom", fontsize=9, zorder=3)
    return width, height


def _rect(x, y, w, h):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, fill=False, edgecolor="#444444", linewidth=0.8, zorder=4)


def _arrow(ax, start, end, text: str = "", *, side: str = "above") -> None:
    ax.annotate("", xy=end, xytext=start, arrowprops={"arrowstyle": "-|>", "color": "#555555", "lw": 1.2},
                zorder=5)
    if text:
        mid = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
        offset = -0.25 if side == "above" else 0.25
        ax.text(mid[0], mid[1] + offset, text, ha="center", va="bottom" if side == "above" else "top",
                fontsize=9, zorder=5)


def projection_figure(trace: Trace, *, lang: str = "en", digits: int = 2, max_rows: int = 8) -> Figure:
    """The seed-000 picture from a trace of `MultiHeadAttention`: X → Q, K, V (columns coloured by head),
    the reshape T×d → T×h×dₕ, and the head outputs concatenated and multiplied by W_O into Y.

    Draws the projections when steps x, q, k, v, q_heads, k_heads, v_heads are recorded and the
    output side when out, concat, w_o, y are (seed 001's multi-head example has only the latter).
    Long sequences show their first ``max_rows`` tokens (the layout is the point, not every row).
    """
    top = all(name in trace for name in ("x", "q", "k", "v", "q_heads", "k_heads", "v_heads"))
    bottom = all(name in trace for name in ("out", "concat", "w_o", "y"))
    if not (top or bottom):
        raise ValueError("projection_figure needs the steps of MultiHeadAttention (x, q, k, v, q_heads, k_heads, "
                         f"v_heads and/or out, concat, w_o, y); steps: {', '.join(trace.names()) or 'none'}")
    words = _style.words(lang)
    rows_total = _rows(trace["x" if top else "concat"].value).shape[0]
    rows = min(rows_total, max_rows)

    def first_rows(name: str) -> np.ndarray:
        return _rows(trace[name].value)[:rows]

    widths = [trace[n].value.shape[-1] for n in (("x", "q", "k", "v") if top else ("concat", "y"))]
    cell = 1.0 if max(widths) <= 16 else 16.0 / max(widths)     # matrices at most 16 units wide
    gap = 3.0
    tokens, _ = token_labels(trace.meta, rows_total, rows_total)
    fig = Figure(layout="constrained")
    ax = fig.add_subplot()
    row_h = float(max(rows, 1))      # token rows are one unit high whatever the column width
    right_edge, bottom_y, n_heads, width_d = 0.0, -2.0, 1, widths[-1]

    def col_heads(n_cols: int, heads: int) -> np.ndarray:
        return np.arange(n_cols) // max(1, n_cols // heads)

    def token_names(y: float) -> None:
        for i in range(rows):
            ax.text(-0.3, y + i + 0.5, _style.short(tokens[i], 10), ha="right", va="center", fontsize=8,
                    fontfamily=_style.label_font())

    if top:
        # Row A: X and its three projections.
        x = first_rows("x")
        heads = {n: as_heads(trace[f"{n}_heads"].value, f"{n}_heads")[:, :rows] for n in ("q", "k", "v")}
        x_w, _ = _draw_block(ax, 0.0, 0.0, x, cell=cell, row_cell=1.0, digits=digits,
                             label=f"X  ({rows_total}×{x.shape[1]})")
        token_names(0.0)
        cursor, centres = x_w + gap, {}
        for name in ("q", "k", "v"):
            matrix = first_rows(name)
            w, _ = _draw_block(ax, cursor, 0.0, matrix, cell=cell, row_cell=1.0, digits=digits,
                               col_heads=col_heads(matrix.shape[1], heads[name].shape[0]),
                               label=f"{name.upper()} = X·W_{name.upper()}  ({rows_total}×{matrix.shape[1]})")
            centres[name] = (cursor, w)
            cursor += w + gap
        _arrow(ax, (x_w + 0.2, row_h / 2), (x_w + gap - 0.2, row_h / 2))
        ax.text(x_w + gap / 2, row_h / 2 - 0.3, "·W", ha="center", va="bottom", fontsize=9)
        right_edge = cursor - gap
        # Row B: each projection seen as T×h×dₕ — the same numbers, one block per head.
        y1 = row_h + 3.2
        for name in ("q", "k", "v"):
            start, w = centres[name]
            split = heads[name]                                   # (h, T, dₕ)
            block_x = start
            for h in range(split.shape[0]):
                bw, _ = _draw_block(ax, block_x, y1, split[h], cell=cell, row_cell=1.0,
                                    col_heads=np.full(split.shape[2], h), digits=digits,
                                    label=f"{name.upper()}{_sub(h + 1)}" if split.shape[0] <= 4 else "")
                block_x += bw + 0.5
            right_edge = max(right_edge, block_x - 0.5)
            _arrow(ax, (start + w / 2, row_h + 0.3), (start + w / 2, y1 - 0.9))
            ax.text(start + w / 2 + 0.3, row_h + 1.2, f"{rows_total}×{split.shape[0]}×{split.shape[2]}",
                    fontsize=8, ha="left", va="center", color="#333333")
        ax.text(centres["q"][0] - 0.6, row_h + 1.2, words["reshape"], fontsize=8.5, ha="right", va="center",
                color="#333333")
        bottom_y = y1 + row_h
        n_heads, width_d = heads["q"].shape[0], first_rows("q").shape[1]
    if bottom:
        # Row C: per-head outputs → concatenated → × W_O → Y.
        y2 = bottom_y + 2.6
        out = as_heads(trace["out"].value, "out")[:, :rows]    # (h, T, Dv)
        n_heads = out.shape[0]
        block_x = 0.0
        if not top:
            token_names(y2)
        for h in range(n_heads):
            bw, _ = _draw_block(ax, block_x, y2, out[h], cell=cell, row_cell=1.0, col_heads=np.full(out.shape[2], h),
                                label=f"head{_sub(h + 1)}" if n_heads <= 4 else "", digits=digits)
            block_x += bw + 0.5
        ax.text(block_x / 2, y2 + row_h + 0.5, words["per_head"], ha="center", va="top", fontsize=8.5)
        concat, w_o, y = first_rows("concat"), trace["w_o"].value, first_rows("y")
        cx = block_x + gap + 2.0
        _arrow(ax, (block_x, y2 + row_h / 2), (cx - 0.2, y2 + row_h / 2))
        ax.text((block_x + cx) / 2, y2 + row_h / 2 - 0.5, words["concat"].replace(" ", "\n", 1),
                ha="center", va="bottom", fontsize=8.5)
        cw, _ = _draw_block(ax, cx, y2, concat, cell=cell, row_cell=1.0, digits=digits,
                            col_heads=col_heads(concat.shape[1], n_heads),
                            label=f"H  ({rows_total}×{concat.shape[1]})")
        ox = cx + cw + 1.6
        ax.text(cx + cw + 0.8, y2 + row_h / 2, "×", ha="center", va="center", fontsize=14)
        ow, oh = _draw_block(ax, ox, y2, w_o, cell=cell, row_heads=col_heads(w_o.shape[0], n_heads), digits=digits,
                             label=f"W_O  ({w_o.shape[0]}×{w_o.shape[1]})")
        yx = ox + ow + 1.6
        ax.text(ox + ow + 0.8, y2 + row_h / 2, "=", ha="center", va="center", fontsize=14)
        yw, _ = _draw_block(ax, yx, y2, y, cell=cell, row_cell=1.0, digits=digits,
                            label=f"Y = H·W_O  ({rows_total}×{y.shape[1]})")
        right_edge = max(right_edge, yx + yw)
        bottom_y = y2 + max(row_h, oh)
    if rows < rows_total:
        ax.text(0, bottom_y + 0.8, f"rows 0–{rows - 1} of {rows_total} shown", fontsize=8, va="top")
        bottom_y += 1.2
    top_y = -1.6 if top else 0.6 - 1.6       # without row A, row C starts at y = 0.6
    left = -3.0
    ax.set_xlim(left, right_edge + 0.5)
    ax.set_ylim(bottom_y + 1.0, top_y)
    ax.set_aspect("equal")
    ax.axis("off")
    units_w, units_h = right_edge + 0.5 - left, bottom_y + 1.0 - top_y
    scale = min(0.36, 20.0 / units_w)
    fig.set_size_inches(max(6.0, units_w * scale), max(3.0, units_h * scale + 0.6))
    fig.suptitle(f"{trace.title or words['projection']}  (T={rows_total}, d={width_d}, h={n_heads}"
                 + (f", dₕ={width_d // n_heads})" if top else ")"), fontsize=11, fontfamily=_style.label_font())
    return fig


def _rows(value: np.ndarray) -> np.ndarray:
    """A (T, D) matrix from a recorded step, dropping leading batch dims of size 1."""
    while value.ndim > 2 and value.shape[0] == 1:
        value = value[0]
    return value


def _sub(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))


# ------------------------------------------------------------------ one query's path
def _followed(trace: Trace, query: int | None, head: int | None, n_queries: int, n_heads: int) -> tuple[int, int]:
    """The followed query and the index of the shown head in the recorded (H, Tq, Tk) weights.

    trace.meta["head"] indexes the head axis only when the weights hold several heads; a one-head
    trace's meta head names which head of the model it is (a label, see `_head_label`), so it is 0.
    """
    query = int(trace.meta.get("query", 0)) if query is None else int(query)
    if head is None:
        head = int(trace.meta.get("head", 0) or 0) if n_heads > 1 else 0
    head = int(head)
    if not 0 <= query < n_queries:
        raise ValueError(f"query must be in [0, {n_queries}), got {query}")
    if not 0 <= head < n_heads:
        raise ValueError(f"head must be in [0, {n_heads}), got {head}")
    return query, head


def _draw_path(fig_or_sub, trace: Trace, query: int, head: int, words: dict, digits: int, prefix: str = ""):
    weights = step_heads(trace, prefix + "weights")
    n_keys = weights.shape[-1]
    panels = [(name, words[key].replace("  ", "\n")) for name, key in
              (("scores", "scores"), ("scaled_scores", "scaled"), ("biased_scores", "biased"))
              if prefix + name in trace]
    panels.append(("weights", words["weights"].replace("  ", "\n")))
    mask = step_heads(trace, prefix + "mask")
    blocked = np.isneginf(mask[head if mask.shape[0] > 1 else 0, query]) if mask is not None else np.zeros(n_keys, bool)
    k_tokens = _part(trace, prefix).k_tokens
    axes = fig_or_sub.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    positions = np.arange(n_keys)
    for ax, (name, label) in zip(axes, panels):
        values = step_heads(trace, prefix + name)[head, query]
        colour = "#2b6cb0" if name == "weights" else "#7f9cc4"
        bars = ax.bar(positions, np.where(blocked & (name != "scores"), 0.0, values) if name == "weights" else values,
                      color=colour, width=0.8 if n_keys <= 64 else 1.0)
        if name != "scores":
            for j in np.flatnonzero(blocked):
                bars[j].set_hatch("///")
                bars[j].set_facecolor("#d9d9d9")
                bars[j].set_edgecolor("#888888")
        ax.axhline(0, color="#444444", linewidth=0.6)
        ax.set_ylabel(label, fontsize=8.5)
        ax.tick_params(labelsize=7.5)
        _label_bars(ax, positions, values, blocked if name != "scores" else None, name, digits, n_keys)
        ax.margins(y=0.22)
    _set_token_ticks(axes[-1], "x", k_tokens, 7.0)
    axes[-1].set_xlabel(words["keys"])
    if blocked.any() and len(axes) > 1:  # say what the hatching means, above the masked panel
        axes[1].text(1.0, 1.02, f"/// = {words['masked']}", transform=axes[1].transAxes, ha="right",
                     va="bottom", fontsize=7.5, color="#555555")
    return axes


def _label_bars(ax, positions, values, blocked, name, digits, n_keys) -> None:
    """Values on the bars: all of them for ≤ 24 keys, the five largest weights beyond that."""
    if n_keys <= 24:
        chosen = range(n_keys)
    elif name == "weights":   # the five strongest, skipping near-zero ones whose labels would pile up
        chosen = [j for j in np.argsort(values)[-5:] if values[j] >= 0.1 * values.max()]
    else:
        return
    rotate = 90 if n_keys > 10 else 0
    for j in chosen:
        value = values[j]
        text = f"{value:.{digits}f}"
        if blocked is not None and blocked[j]:  # before softmax the mask makes it −∞; after, weight 0
            text, value = ("0", 0.0) if name == "weights" else (f"{text} → −∞", value)
        ax.annotate(text, (positions[j], value), xytext=(0, 2 if value >= 0 else -2), textcoords="offset points",
                    ha="center", va="bottom" if value >= 0 else "top", fontsize=7, rotation=rotate)


def query_path(trace: Trace, query: int | None = None, *, head: int | None = None, layer: int | None = None,
               part: str | None = None, lang: str = "en", digits: int = 3) -> Figure:
    """One query's path as bars over the keys: raw scores q·k, scaled scores (÷√dₖ, + bias), weights.

    query defaults to the trace's followed query (trace.meta["query"], else 0), head to
    trace.meta["head"] when the weights hold several heads (else 0: a one-head trace's meta head is
    a label, shown in the title). For a model trace, layer picks ``layer {l}/…`` (default
    trace.meta["layer"], else 0); part picks a scoped computation by prefix, e.g. "question".
    Masked keys are hatched and labelled −∞ before softmax, 0 after.
    """
    chosen = _part(trace, _layer_prefix(trace, layer) if part is None else part)
    weights = step_heads(trace, chosen.prefix + "weights")
    query, head = _followed(trace, chosen.query if query is None else query, head, weights.shape[1],
                            weights.shape[0])
    words = _style.words(lang)
    n_keys = weights.shape[-1]
    fig = Figure(figsize=(max(5.0, min(12.0, 1.2 + 0.55 * n_keys)), 6.2), layout="constrained")
    _draw_path(fig, trace, query, head, words, digits, chosen.prefix)
    fig.suptitle(_path_title(chosen, query, _head_label(trace, chosen, head, weights.shape[0], words), words),
                 fontsize=10.5, fontfamily=_style.label_font())
    return fig


def _head_label(trace: Trace, part: Part, head: int, n_heads: int, words: dict) -> str:
    """Which head is drawn, for titles: "head 2" for an index into several recorded heads; for a one-head
    trace the model's own numbering from trace.meta ("layer 2, head 3"), else "" (nothing to name).
    The layer is named from trace.meta only when the part's prefix does not already name it."""
    meta = trace.meta
    if n_heads > 1:
        name = f"{words['head']} {head}"
    elif meta.get("head") is not None:
        name = f"{words['head']} {meta['head']}"
    else:
        return ""
    if not part.prefix and meta.get("layer") is not None:
        name = f"{words['layer']} {meta['layer']}, {name}"
    return name


def _path_title(part: Part, query: int, head_label: str, words: dict) -> str:
    where = f"{part.prefix.rstrip('/')}: " if part.prefix else ""
    text = f"{where}{words['query']} {query} “{_style.short(part.q_tokens[query], 20)}”"
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
    chosen = int(trace.meta.get("layer", 0)) if layer is None else int(layer)
    name = f"layer {chosen}/"
    if name not in prefixes:
        raise ValueError(f"layer must be one of {[int(p.split()[1][:-1]) for p in prefixes]}, got {chosen}")
    return name


# ------------------------------------------------------------------ masks
def mask_figure(mask: Any, tokens: Sequence[str] | None = None, k_tokens: Sequence[str] | None = None, *,
                title: str | None = None, lang: str = "en") -> Figure:
    """The additive mask as numbers: 0 where a query may attend, −∞ where it may not (grey).

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
    fig = Figure(figsize=(width + 1.6, height + 1.6), layout="constrained")
    ax = fig.add_subplot()
    _draw_mask(ax, blocked, q_labels, k_labels, (width, height))
    ax.set_title(title or f"{words['mask']}\n{words['mask_note']}", fontsize=10, fontfamily=_style.label_font())
    ax.set_xlabel(words["keys"])
    ax.set_ylabel(words["queries"])
    return fig


def _draw_mask(ax, blocked: np.ndarray, q_labels, k_labels, inches) -> None:
    tq, tk = blocked.shape
    ax.imshow(blocked.astype(float), cmap=mcolors.ListedColormap(["#ffffff", "#9e9e9e"]), vmin=0, vmax=1,
              aspect="auto", interpolation="nearest" if max(tq, tk) <= 256 else "antialiased")
    _set_token_ticks(ax, "x", k_labels, inches[0])
    _set_token_ticks(ax, "y", q_labels, inches[1])
    if max(tq, tk) <= _SMALL:
        for i in range(tq):
            for j in range(tk):
                ax.text(j, i, "−∞" if blocked[i, j] else "0", ha="center", va="center", fontsize=8,
                        color="white" if blocked[i, j] else "#1a1a1a")
        ax.set_xticks(np.arange(-0.5, tk, 1), minor=True)
        ax.set_yticks(np.arange(-0.5, tq, 1), minor=True)
        ax.grid(which="minor", color="#cccccc", linewidth=0.5)
        ax.tick_params(which="minor", length=0)


# ------------------------------------------------------------------ the figure that suits a trace
def attention_figure(trace: Trace, *, head: int | None = None, query: int | None = None, part: str | None = None,
                     lang: str = "en", digits: int = 2) -> Figure:
    """One attention computation in one picture: [the mask as numbers] | the weights heatmap | one query's path.

    The mask panel appears when a mask was recorded, the path when scores were. part: the step
    prefix of a scoped computation (e.g. "layer 3" or "question"); default the first.
    """
    chosen = _part(trace, part)
    prefix = chosen.prefix
    weights = step_heads(trace, prefix + "weights")
    n_heads, tq, tk = weights.shape
    query, head = _followed(trace, chosen.query if query is None else query, head, tq, n_heads)
    words = _style.words(lang)
    q_tokens, k_tokens = chosen.q_tokens, chosen.k_tokens
    cross = trace.meta.get("kind") == "cross-attention" or "memory" in trace
    mask = step_heads(trace, prefix + "mask")
    with_path = prefix + "scores" in trace
    width, height = _axis_side(tk), _axis_side(tq)
    columns = [width + 1.6] * (2 if mask is not None else 1) + ([max(4.5, min(9.0, 1.0 + 0.45 * tk))] if with_path else [])
    fig = Figure(figsize=(sum(columns) + 0.8, max(height + 2.0, 5.5 if with_path else 0.0)), layout="constrained")
    subs = fig.subfigures(1, len(columns), width_ratios=columns, squeeze=False)[0]
    at = 0
    if mask is not None:
        blocked = np.isneginf(mask[head if mask.shape[0] > 1 else 0])
        ax = subs[at].add_subplot()
        _draw_mask(ax, blocked, q_tokens, k_tokens, (width, height))
        ax.set_title(f"{words['mask']}\n{words['mask_note']}", fontsize=9.5)
        ax.set_xlabel(words["keys_enc"] if cross else words["keys"])
        ax.set_ylabel(words["queries_dec"] if cross else words["queries"])
        at += 1
    ax = subs[at].add_subplot()
    blocked = np.isneginf(mask[head if mask.shape[0] > 1 else 0]) if mask is not None else None
    image = _draw_weights(ax, weights[head], q_tokens, k_tokens, blocked=blocked, digits=digits,
                          inches=(width, height))
    if tq <= 64:  # outline the followed query's row
        ax.add_patch(_rect(-0.5, query - 0.5, tk, 1.0))
        ax.patches[-1].set_edgecolor("#d1495b")
        ax.patches[-1].set_linewidth(1.6)
    head_label = _head_label(trace, chosen, head, n_heads, words)
    ax.set_title(f"{words['attention']} — {head_label}" if head_label else words["attention"], fontsize=9.5)
    ax.set_xlabel(words["keys_enc"] if cross else words["keys"])
    ax.set_ylabel(words["queries_dec"] if cross else words["queries"])
    subs[at].colorbar(image, ax=ax, shrink=0.7)
    at += 1
    if with_path:
        _draw_path(subs[at], trace, query, head, words, digits + 1, prefix)
        subs[at].suptitle(_path_title(chosen, query, head_label, words), fontsize=9.5,
                          fontfamily=_style.label_font())
    if trace.title:
        fig.suptitle(trace.title, fontsize=11, fontfamily=_style.label_font())
    return fig


def figure_for(trace: Trace, *, lang: str = "en") -> Figure:
    """The figure that suits the trace.

    - a whole model (steps ``layer {l}/weights``): `attention_grid` of layers × heads;
    - kind "projection" or "multi-head" with projection or head-output steps: `projection_figure`;
    - one attention (self-, cross-attention): `attention_figure` (mask | weights | the followed query);
    - scoped single-query scenes (seed 002's group meeting): their query paths side by side.
    """
    parts = attention_parts(trace)
    kind = trace.meta.get("kind")
    drawable_heads = all(n in trace for n in ("x", "q", "k", "v", "q_heads")) or \
        all(n in trace for n in ("out", "concat", "w_o", "y"))
    if parts and parts[0].prefix.startswith("layer "):
        weights = layer_weights(trace)
        first = parts[0]
        return attention_grid(weights, first.q_tokens, first.k_tokens, title=trace.title or None, lang=lang)
    if (kind in ("projection", "multi-head") or not parts) and drawable_heads:
        return projection_figure(trace, lang=lang)
    if not parts:
        raise ValueError("nothing to draw: the trace records neither attention weights nor the steps of "
                         f"multi-head attention; steps: {', '.join(trace.names()) or 'none'}")
    if parts[0].prefix == "":
        return attention_figure(trace, lang=lang)
    single = [p for p in parts if step_heads(trace, p.prefix + "weights").shape[1] == 1]
    if not single:
        return attention_figure(trace, part=parts[0].prefix, lang=lang)
    words = _style.words(lang)
    widths = [max(4.5, min(10.0, 1.2 + 0.5 * len(p.k_tokens))) for p in single]
    fig = Figure(figsize=(sum(widths) + 0.5, 6.2), layout="constrained")
    subs = fig.subfigures(1, len(single), width_ratios=widths, squeeze=False)[0]
    for sub, chosen in zip(subs, single):
        _draw_path(sub, trace, chosen.query, 0, words, 3, chosen.prefix)
        sub.suptitle(_path_title(chosen, chosen.query, "", words), fontsize=10, fontfamily=_style.label_font())
    if trace.title:
        fig.suptitle(trace.title, fontsize=11, fontfamily=_style.label_font())
    return fig
