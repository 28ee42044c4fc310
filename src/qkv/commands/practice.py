"""`qkv practice [EXAMPLE]`: compute the hidden numbers of a worked example; each answer is checked.

    qkv practice                          # self-attention: q·k, s/√d_k, e^(s − m), Σ, a weight, an output
    qkv practice projection --seed 7      # post 000: one head's chain, then z_concat and Y over both heads
    qkv practice group-meeting --lang ko
    qkv practice multi-head --fresh       # new inputs of the same shapes
    printf '0.25\\n1.2\\n' | qkv practice --seed 3     # answers from a pipe, one a line

The questions, the checking and the diagnosis of a wrong answer are `qkv.practice`'s; this module reads
the answers from standard input and prints.
"""

from __future__ import annotations

import argparse
import sys

from .._io import int_option
from ._options import add_lang_option, check_lang


def register(subparsers, t) -> None:
    from ..practice import NAMES, SEED_MAX

    parser = subparsers.add_parser("practice", help=t("practice"), description=t("practice.about"))
    parser.add_argument("example", nargs="?", default="self-attention", metavar="EXAMPLE",
                        help=t("practice.example", names=", ".join(NAMES)))
    parser.add_argument("--seed", type=int_option(0, SEED_MAX), metavar="N", default=None, help=t("practice.seed"))
    parser.add_argument("--fresh", action="store_true", help=t("practice.fresh"))
    add_lang_option(parser, t, "practice")
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from .. import frontdoor, practice

    lang = check_lang(args.lang)
    frontdoor.check_choice(args.example, practice.NAMES, field="EXAMPLE", lang=lang)
    session = practice.drill(args.example, lang=lang, seed=args.seed, fresh=args.fresh)
    stdin = sys.stdin

    def read() -> str | None:
        if stdin is None:
            return None
        try:
            line = stdin.readline()
        except (OSError, ValueError):          # no standard input to read (closed, or not readable)
            return None
        return None if line == "" else line.rstrip("\n")

    def write(line: str) -> None:
        print(line, flush=True)

    echo = stdin is not None and not _isatty(stdin)
    practice.play(session, read, write, echo=echo)
    return 0


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
