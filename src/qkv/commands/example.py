"""`qkv example [NAME]`: a seed's worked example, every number derived step by step.

    qkv example                         # self-attention (also what `qkv` alone runs)
    qkv example cross-attention --lang ko
    qkv example multi-head --by-hand    # rounds like the seed does, shows the drift
    qkv example projection --format markdown --out projection.md
    qkv example --list
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .._io import check_output, parse_int, short_repr
from ..errors import InputError
from ..trace import Trace

FORMATS = ("text", "markdown", "html", "json")
LANGS = ("en", "ko")


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """The options `example` and `explain` share (validated by `check_options`, one-line errors)."""
    parser.add_argument("--lang", default="en", metavar="en|ko", help="language of the explanation (default en)")
    parser.add_argument("--format", default="text", metavar="FORMAT", dest="format",
                        help="text | markdown | html | json (default text)")
    parser.add_argument("--out", metavar="FILE", help="write to FILE (atomically) instead of standard output")
    parser.add_argument("--query", metavar="TOKEN", help="the token to follow (a token, or a row index)")
    parser.add_argument("--digits", metavar="N", help="decimals shown (default: the precision the seed prints, else 4)")
    parser.add_argument("--by-hand", action="store_true",
                        help="round every intermediate to the digits shown, as with a calculator, and show the drift")
    parser.add_argument("--figure", metavar="FILE", help="also save the figure that suits the example (.png .svg .pdf)")


def check_options(args: argparse.Namespace) -> int | None:
    """Validate lang, format, digits and the output folders before anything is computed; returns digits."""
    if args.lang not in LANGS:
        raise InputError(f"{short_repr(args.lang)}: expected one of {', '.join(LANGS)}", field="--lang")
    if args.format not in FORMATS:
        raise InputError(f"{short_repr(args.format)}: expected one of {', '.join(FORMATS)}", field="--format")
    digits = None
    if args.digits is not None:
        digits = parse_int(args.digits, field="--digits", low=0, high=12, what="a whole number of decimals")
    if args.by_hand and args.format == "html":
        raise InputError("the HTML page shows exact values; use --by-hand with text, markdown or json",
                         field="--by-hand")
    for option, target in (("--out", args.out), ("--figure", args.figure)):
        if target is not None:
            check_output(target, field=option)
    if args.figure is not None and Path(args.figure).suffix.lower() not in (".png", ".svg", ".pdf"):
        raise InputError(f"unknown figure type {Path(args.figure).suffix or '(none)'!r}; use .png, .svg or .pdf",
                         source=args.figure, field="--figure")
    return digits


def emit(trace: Trace, args: argparse.Namespace, digits: int | None) -> int:
    """Render ``trace`` as asked; write --out / --figure atomically, or print."""
    from .._io import write_atomic
    from ..explain import render

    color = args.format == "text" and args.out is None and sys.stdout.isatty()
    text = render(trace, args.format, lang=args.lang, digits=digits, by_hand=args.by_hand, color=color)
    if args.figure is not None:
        from ..viz import save_figure

        save_figure(trace, args.figure, lang=args.lang)
    if args.out is not None:
        write_atomic(args.out, text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "example", help="a seed's worked example, derived step by step",
        description="A worked example from the seeds, every number computed and explained step by step.")
    parser.add_argument("name", nargs="?", default="self-attention", metavar="NAME",
                        help="the example (default self-attention); see --list")
    parser.add_argument("--list", action="store_true", help="list the examples and exit")
    add_output_options(parser)
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from .. import examples
    from ..explain import texts

    if args.lang not in LANGS:
        raise InputError(f"{short_repr(args.lang)}: expected one of {', '.join(LANGS)}", field="--lang")
    if args.list:
        lines = [texts.text(args.lang, "list.header")]
        width = max(len(n) for n in examples.names())
        lines += [f"  {name:<{width}}  {texts.text(args.lang, f'title.{name}')}" for name in examples.names()]
        print("\n".join(lines))
        return 0
    if args.name not in examples.names():
        raise InputError(f"unknown example {short_repr(args.name)}; the examples are: {', '.join(examples.names())}",
                         field="NAME")
    digits = check_options(args)
    trace = examples.run(args.name, query=args.query, by_hand=args.by_hand, digits=digits)
    return emit(trace, args, digits)
