"""`qkv explain FILE`: the step-by-step walkthrough for your own example (or a saved trace).

FILE is a TOML or JSON example file (format: docs/examples.md) — tokens, x (or x plus an
encoder's memory), w_q, w_k, w_v, optional w_o, heads, mask, residual and the query to follow —
or a JSON file written by `--format json` (a saved trace is explained again without recomputing).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import InputError, python_reason
from ..frontdoor import trace_from_document
from ._options import add_output_options, check_options, emit


def register(subparsers, t) -> None:
    parser = subparsers.add_parser("explain", help=t("explain"), description=t("explain.about"))
    parser.add_argument("file", metavar="FILE", help=t("explain.file"))
    add_output_options(parser, t)
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from ..spec import read_document

    digits = check_options(args)
    path = Path(args.file)
    doc = read_document(path)
    trace = trace_from_document(doc, source=str(path), base=path.parent, query=args.query, by_hand=args.by_hand,
                                digits=digits)
    try:
        return emit(trace, args, digits)
    except InputError:
        raise
    except (KeyError, IndexError, ValueError, TypeError, AttributeError, ArithmeticError) as exc:
        # A saved trace is data from a file: one whose steps do not fit together is bad input.
        raise InputError.keyed("error.trace.misfit", source=str(path), field="trace",
                               **python_reason(f"{type(exc).__name__}: {' '.join(str(exc).split())[:80]}")) from None
