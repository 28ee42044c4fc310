"""The figure of `qkv heads`: one layer × head map per score, and the rollout matrix.

Reads finished arrays (from `qkv.analysis`); computes nothing but the layout.
"""

from __future__ import annotations

import numpy as np

__all__ = ["heads_figure"]


def heads_figure(scores: dict[str, np.ndarray], flow: np.ndarray, tokens: list[str], *, title: str = "",
                 lang: str = "en"):
    """scores: {name: (L, H)} from `qkv.analysis.head_scores`; flow (T, T): the last layer's rollout;
    lang: "en" | "ko" (the labels; score names as `qkv heads` prints them, `cli.heads.col.*`).

    One panel per score (rows: layers from 0, columns: heads from 0; shares on one 0…1 scale with a
    colour bar, entropy on 0…ln T in nats) and the rollout matrix (rows: positions, columns: input tokens).
    """
    from . import fonts

    with fonts.context():            # every label may hold Hangul: the CJK families, text as text in SVG
        return _heads_figure(scores, flow, tokens, title=title, lang=lang)


def _heads_figure(scores, flow, tokens, *, title: str, lang: str):
    from matplotlib.figure import Figure

    from ..explain import texts
    from ._style import label_font, words

    w = words(lang)

    def score_name(name: str) -> str:
        key = f"cli.heads.col.{name}"
        return texts.text(lang, key) if texts.has(lang, key) else name.replace("_", " ")

    names = list(scores)
    layers, heads = scores[names[0]].shape
    size = len(tokens)
    columns = 4
    rows = -(-(len(names) + 1) // columns)
    figure = Figure(figsize=(4.2 * columns, 3.6 * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for axis, name in zip(axes, names):
        top = np.log(size) if name == "entropy" else 1.0
        image = axis.imshow(scores[name], cmap="Blues", vmin=0.0, vmax=max(top, 1e-12), aspect="auto")
        axis.set_title(w("heads.nats", name=score_name(name)) if name == "entropy" else score_name(name), fontsize=10)
        axis.set_xlabel(w["heads.head"])
        axis.set_ylabel(w["heads.layer"], rotation=0 if lang == "ko" else 90, ha="right" if lang == "ko" else "center")
        axis.set_xticks(range(heads))
        axis.set_yticks(range(layers))
        axis.tick_params(labelsize=7)
        figure.colorbar(image, ax=axis, shrink=0.8)
    axis = axes[len(names)]
    image = axis.imshow(flow, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
    axis.set_title(w["heads.rollout"], fontsize=10)
    ticks = range(size) if size <= 24 else range(0, size, -(-size // 24))
    axis.set_xticks(list(ticks))
    labels = axis.set_xticklabels([tokens[j] for j in ticks], rotation=90, fontsize=7, family=label_font())
    for label in labels:
        if len(label.get_text()) <= 2:        # turned, "I" reads as "–": short tokens stay upright
            label.set_rotation(0)
    axis.set_yticks(list(ticks))
    axis.set_yticklabels([tokens[j] for j in ticks], fontsize=7, family=label_font())
    axis.set_xlabel(w["heads.input"])
    axis.set_ylabel(w["heads.position"], rotation=0 if lang == "ko" else 90, ha="right" if lang == "ko" else "center")
    figure.colorbar(image, ax=axis, shrink=0.8)
    for axis in axes[len(names) + 1:]:
        axis.set_visible(False)
    if title:
        figure.suptitle(title)
    return figure
