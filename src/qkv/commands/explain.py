"""`qkv explain FILE`: the step-by-step walkthrough for your own example (or a saved trace).

FILE is a TOML or JSON example file (format: docs/examples.md) — tokens, x (or x plus an
encoder's memory), w_q, w_k, w_v, optional w_o, heads, mask, residual and the query to follow —
or a JSON file written by `--format json` (a saved trace is explained again without recomputing).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import InputError
from .example import add_output_options, check_options, emit


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "explain", help="explain your own example file (TOML/JSON) step by step",
        description="Derive the step-by-step walkthrough for an example file of your own (see docs/examples.md).")
    parser.add_argument("file", metavar="FILE", help="a .toml or .json example file, or a saved JSON trace")
    add_output_options(parser)
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from ..examples.runner import trace_spec
    from ..spec import is_saved_trace, parse_spec, read_document, read_saved_trace, resolve_query

    digits = check_options(args)
    path = Path(args.file)
    doc = read_document(path)
    if not is_saved_trace(doc):
        spec = parse_spec(doc, source=str(path), base=path.parent)
        return emit(trace_spec(spec, query=args.query, by_hand=args.by_hand, digits=digits), args, digits)
    trace = read_saved_trace(doc, source=str(path))
    if args.query is not None:
        tokens = list(trace.meta.get("tokens") or [])
        trace.meta["query"] = resolve_query(args.query, tokens, source=None, field="--query")
    if args.by_hand and not any(s.name.startswith("by hand/") for s in trace.steps):
        raise InputError("this saved trace has no by-hand steps (save it with --by-hand)", source=str(path),
                         field="--by-hand")
    try:
        return emit(trace, args, digits)
    except InputError:
        raise
    except (KeyError, IndexError, ValueError, TypeError, AttributeError, ArithmeticError) as exc:
        # A saved trace is data from a file: one whose steps do not fit together is bad input.
        raise InputError(f"the saved trace's steps do not fit together ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:80]})", source=str(path), field="trace") from None
