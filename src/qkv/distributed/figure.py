"""The `qkv ring --figure` picture: who holds which tokens, and the causal work each rank does.

One row per layout (contiguous, zigzag). Left: the causal score matrix (queries down, keys across)
cut into the layout's chunks, each allowed cell coloured by the rank that computes it (the owner
of the query rows), with a strip above and beside it showing which rank holds each chunk of the
sequence. Right: each rank's share of the causal work (query·key pairs, from `layout.causal_work`)
and, when given, its measured compute time, both relative to the mean.
"""

from __future__ import annotations

import numpy as np

from ..viz._style import HEAD_COLOURS
from .layout import LAYOUTS, chunks_of, causal_work, n_chunks

__all__ = ["ring_figure"]


def ring_figure(world: int, seq_len: int, *, measured: dict | None = None):
    """A matplotlib Figure for P = world ranks and T = seq_len tokens.

    measured: optional {layout: [compute seconds of rank 0 … P−1]} drawn beside the counted work.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = [HEAD_COLOURS[r % len(HEAD_COLOURS)] for r in range(world)]
    fig, axes = plt.subplots(len(LAYOUTS), 2, figsize=(10.5, 4.4 * len(LAYOUTS)),
                             gridspec_kw={"width_ratios": [1.05, 1]}, constrained_layout=True)
    for row, layout in enumerate(("contiguous", "zigzag")):
        parts = n_chunks(world, layout)
        owner = np.empty(parts, dtype=int)
        for rank in range(world):
            owner[list(chunks_of(rank, world, layout))] = rank
        ax = axes[row, 0]
        Rect = matplotlib.patches.Rectangle
        for i in range(parts):
            # strips (with a gap): the rank holding key chunk i (above) and query chunk i (left)
            for xy in ((i, -1.0), (-1.0, i)):
                ax.add_patch(Rect(xy, 1, 0.7, facecolor=colours[owner[i]], lw=0.6, edgecolor="white")
                             if xy[1] == -1.0 else Rect(xy, 0.7, 1, facecolor=colours[owner[i]], lw=0.6,
                                                         edgecolor="white"))
            ax.text(i + 0.5, -0.65, str(owner[i]), ha="center", va="center", fontsize=8, color="white")
            ax.text(-0.65, i + 0.5, str(owner[i]), ha="center", va="center", fontsize=8, color="white")
            # allowed chunk pairs (keys j ≤ query chunk i), computed by the owner of the queries;
            # the diagonal chunk is a triangle (causal inside the chunk)
            for j in range(i):
                ax.add_patch(Rect((j, i), 1, 1, facecolor=colours[owner[i]], lw=0.4, edgecolor="white"))
            ax.add_patch(matplotlib.patches.Polygon([(i, i), (i, i + 1), (i + 1, i + 1)], closed=True,
                                                    facecolor=colours[owner[i]], lw=0.4, edgecolor="white"))
        ax.add_patch(Rect((0, 0), parts, parts, fill=False, lw=0.8, edgecolor="black"))
        ax.set_xlim(-1.1, parts + 0.05)
        ax.set_ylim(parts + 0.05, -1.1)
        ax.set_aspect("equal")
        length = seq_len // parts
        shown = range(0, parts, max(1, parts // 8))
        ax.set_xticks([c for c in shown], [f"{c * length}" for c in shown], fontsize=7)
        ax.set_yticks([c for c in shown], [f"{c * length}" for c in shown], fontsize=7)
        ax.set_xlabel("key position (strip above: rank holding those keys)", fontsize=8)
        ax.set_ylabel("query position (strip: rank holding them)", fontsize=8)
        ax.set_title(f"{layout}: {parts} chunks of {length} tokens; colour = rank computing", fontsize=10)
        for spine in ax.spines.values():
            spine.set_visible(False)

        work = causal_work(world, seq_len, layout=layout)
        ax = axes[row, 1]
        x = np.arange(world)
        have_measured = measured is not None and layout in measured
        width = 0.4 if have_measured else 0.7
        ax.bar(x - (width / 2 if have_measured else 0), work / work.mean(), width, color=colours,
               label="counted query·key pairs")
        if have_measured:
            seconds = np.asarray(measured[layout], dtype=float)
            ax.bar(x + width / 2, seconds / seconds.mean(), width, color=colours, alpha=0.45, hatch="//",
                   edgecolor="black", lw=0.5, label="measured compute (CPU s)")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xticks(x, [f"rank {r}" for r in x])
        ax.set_ylabel("causal work per rank ÷ mean", fontsize=9)
        ratio = work.max() / work.min()
        title = f"{layout}: slowest ÷ fastest = {ratio:.2f}× counted"
        if have_measured:
            title += f", {seconds.max() / seconds.min():.2f}× measured"
        ax.set_title(title, fontsize=10)
        ax.set_ylim(0, max(2.0, float((work / work.mean()).max()) * 1.15,
                           float((seconds / seconds.mean()).max()) * 1.15 if have_measured else 0))
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(f"Ring attention, causal, T = {seq_len}: who holds what, and who computes what", fontsize=12)
    return fig
