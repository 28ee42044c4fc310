"""`qkv why TOPIC`: why attention is built as it is — one experiment per choice, a table, a figure.

    qkv why sqrt-dk                 # std(q·k) ≈ √d_k; softmax saturates without ÷√d_k
    qkv why softmax --lang ko       # raw scores as weights; + c changes nothing, × a everything
    qkv why order                   # softmax(K·Qᵀ)V differs; post 002's column form agrees
    qkv why temperature --figure t.png
    qkv why mask
    qkv why dot-product --figure qk.png   # q·k as alignment, d_k = 2

The experiments, their numbers and sentences are `qkv.why`'s; this module prints and writes the figure.
"""

from __future__ import annotations

import argparse
import sys

from .._io import int_option
from ._options import add_lang_option, check_lang


def register(subparsers, t) -> None:
    from ..why import TOPICS

    parser = subparsers.add_parser("why", help=t("why"), description=t("why.about"))
    parser.add_argument("topic", metavar="TOPIC", choices=TOPICS, help=t("why.topic", topics=", ".join(TOPICS)))
    parser.add_argument("--figure", metavar="FILE", help=t("why.figure"))
    parser.add_argument("--seed", type=int_option(0, 10**9), metavar="N", default=0, help=t("why.seed"))
    add_lang_option(parser, t, "why")
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from .. import frontdoor, why

    lang = check_lang(args.lang)
    frontdoor.check_choice(args.topic, why.TOPICS, field="TOPIC", lang=lang)
    found = why.run(args.topic, seed=args.seed)
    if args.figure is not None:
        from ..viz import write_figure

        write_figure(why.figure(found, lang), args.figure)
    sys.stdout.write(why.render(found, lang))
    sys.stdout.flush()
    return 0
