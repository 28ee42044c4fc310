"""`qkv masks`: every mask of the catalogue (qkv.masks) as a matrix, with the kernel's block map.

    qkv masks                          # T = 16, blocks of 4: each mask printed as a matrix
    qkv masks --length 64 --block 16 --figure masks.png
    qkv masks --only "sliding window"

A row is a query, a column a key; '█' = may attend, '·' = may not. Under each matrix, the block
map: what the blocked kernel does with each (query block, key block) — S skipped (nothing
allowed, never computed), F full (computed without forming a mask), P partial (mask formed) —
and the share of the score matrix it computes.
"""

from __future__ import annotations

import argparse

import numpy as np

from .. import frontdoor
from .._io import int_option, write_atomic
from ._options import add_lang_option, check_lang, words

_KIND_LETTER = {0: "S", 1: "P", 2: "F"}


def register(subparsers, t) -> None:
    parser = subparsers.add_parser("masks", help=t("masks"), description=t("masks.about"))
    parser.add_argument("--length", "-T", type=int_option(1, 4096), default=16, metavar="T", help=t("masks.length"))
    parser.add_argument("--block", type=int_option(1, 4096), default=None, metavar="B", help=t("masks.block"))
    parser.add_argument("--only", metavar="NAME", default=None, help=t("masks.only"))
    parser.add_argument("--figure", metavar="FILE", help=t("masks.figure"))
    parser.add_argument("--out", metavar="FILE", help=t("masks.out"))
    add_lang_option(parser, t, "masks")
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from .. import masks

    words_of = words(check_lang(args.lang))
    t = args.length
    block = args.block or max(1, t // 4)
    entries = {_name(name, words_of): mask_mod for name, mask_mod in masks.catalogue(t).items()}
    if args.only is not None:
        # a name as printed, in either language (the English one is the catalogue's own key)
        chosen = {_name(name, words(lang)): shown for name, shown in zip(masks.catalogue(t), entries)
                  for lang in ("en", args.lang)}.get(args.only)
        if chosen is None:
            raise frontdoor.not_one_of(args.only, list(entries), field="--only", lang=args.lang)
        entries = {chosen: entries[chosen]}
    if args.figure is not None:
        from ..viz import write_figure

        write_figure(masks_figure(entries, t, block, lang=args.lang), args.figure)
    text = "\n".join(_describe(name, mask_mod, t, block, words_of) for name, mask_mod in entries.items())
    if args.out:
        write_atomic(args.out, text)
    else:
        print(text, end="")
    return 0


def _name(name: str, t) -> str:
    """The catalogue's mask ``name`` in the language of ``t`` (the key itself when no text has it)."""
    from ..explain.texts import EN

    return t(f"cli.masks.name.{name}") if f"cli.masks.name.{name}" in EN else name


def _formula(formula: str, t) -> str:
    """A mask's formula with its connectives ("and", "or") in the language of ``t``."""
    return formula.replace(" and ", f" {t('cli.masks.and')} ").replace(" or ", f" {t('cli.masks.or')} ")


def _describe(name: str, mask_mod, t: int, block: int, words_of) -> str:
    from .. import masks

    dense = masks.dense_mask(mask_mod, t)
    kinds = masks.block_map(mask_mod, t, block_q=block, block_k=block)
    computed = _computed_share(kinds, t, block)
    lines = [words_of("cli.masks.header", name=name, formula=_formula(mask_mod.formula, words_of), t=t,
                      allowed=int(dense.sum()), total=t * t)]
    if t <= 64:
        lines += ["  " + "".join("█" if cell else "·" for cell in row) for row in dense]
    counts = {kind: int((kinds == kind).sum()) for kind in (0, 2, 1)}
    lines.append(words_of("cli.masks.blocks", b=block, skipped=counts[0], full=counts[2], partial=counts[1],
                          share=f"{computed:.0%}"))
    if kinds.shape[1] <= 64:
        lines += ["  " + " ".join(_KIND_LETTER[int(kind)] for kind in row) for row in kinds]
    return "\n".join(lines) + "\n\n"


def _computed_share(kinds: np.ndarray, t: int, block: int) -> float:
    sizes = np.minimum(np.arange(0, t, block) + block, t) - np.arange(0, t, block)   # each block's length
    area = sizes[:, None] * sizes[None, :]
    return float(area[kinds != 0].sum()) / (t * t)


def masks_figure(entries: dict, t: int, block: int, *, lang: str = "en"):
    """A grid of panels, one per mask: allowed pairs dark, the block map drawn over them (skipped
    blocks hatched grey, full blocks outlined green, partial blocks outlined orange)."""
    from .. import masks
    from ..viz import fonts

    with fonts.context():
        return _masks_figure(entries, t, block, words(lang), masks)


def _masks_figure(entries: dict, t: int, block: int, words_of, masks):
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    columns = min(len(entries), 5)
    rows = -(-len(entries) // columns)
    figure = Figure(figsize=(3.1 * columns, 3.4 * rows + 0.6), layout="constrained")
    # a row's "key" label and the next row's three-line titles (and the first row's titles and the suptitle)
    # touched with constrained layout's default 3 pt of padding, Korean labels most: 0.15 in between them
    figure.get_layout_engine().set(h_pad=0.15)
    axes = np.atleast_1d(figure.subplots(rows, columns, squeeze=False)).ravel()
    for ax, (name, mask_mod) in zip(axes, entries.items()):
        dense = masks.dense_mask(mask_mod, t)
        kinds = masks.block_map(mask_mod, t, block_q=block, block_k=block)
        ax.imshow(dense, cmap="Blues", vmin=-0.15, vmax=1.0, interpolation="nearest",
                  extent=(-0.5, t - 0.5, t - 0.5, -0.5))
        for (i, j), kind in np.ndenumerate(kinds):
            x0, y0 = j * block - 0.5, i * block - 0.5
            w, h = min(block, t - j * block), min(block, t - i * block)
            if kind == masks.EMPTY:
                ax.add_patch(Rectangle((x0, y0), w, h, facecolor="0.85", edgecolor="0.6", hatch="///", linewidth=0.4,
                                       alpha=0.8))
            else:
                color = "#2e8b57" if kind == masks.FULL else "#e67e22"
                ax.add_patch(Rectangle((x0 + 0.15, y0 + 0.15), w - 0.3, h - 0.3, fill=False, edgecolor=color,
                                       linewidth=1.6))
        share = _computed_share(kinds, t, block)
        ax.set_title(f"{name}\n{_formula(mask_mod.formula, words_of)}\n"
                     f"{words_of('cli.masks.computes', share=f'{share:.0%}')}", fontsize=8)
        ax.set_xlabel(words_of("cli.masks.key"), fontsize=7)
        ax.set_ylabel(words_of("cli.masks.query"), fontsize=7)
        ax.tick_params(labelsize=6)
        ax.set_xlim(-0.5, t - 0.5)
        ax.set_ylim(t - 0.5, -0.5)
    for ax in axes[len(entries):]:
        ax.set_visible(False)
    figure.legend(handles=[Patch(facecolor="#08306b", label=words_of("cli.masks.legend.allowed")),
                           Patch(facecolor="0.85", edgecolor="0.6", hatch="///",
                                 label=words_of("cli.masks.legend.skipped")),
                           Patch(fill=False, edgecolor="#2e8b57", linewidth=1.6, label=words_of("cli.masks.legend.full")),
                           Patch(fill=False, edgecolor="#e67e22", linewidth=1.6,
                                 label=words_of("cli.masks.legend.partial"))],
                  loc="outside lower center", ncol=4, fontsize=8, frameon=False)
    figure.suptitle(words_of("cli.masks.suptitle", t=t, b=block), fontsize=10)
    return figure
