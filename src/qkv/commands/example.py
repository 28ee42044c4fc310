"""`qkv example [NAME]`: a worked example of the posts, every number derived step by step.

    qkv example                         # self-attention (also what `qkv` alone runs)
    qkv example cross-attention --lang ko
    qkv example multi-head --by-hand    # rounds like the post does, shows the drift
    qkv example projection --format markdown --out projection.md
    qkv example --list
"""

from __future__ import annotations

import argparse

from .. import frontdoor
from ._options import add_output_options, check_lang, check_options, emit

def register(subparsers, t) -> None:
    parser = subparsers.add_parser("example", help=t("example"), description=t("example.about"))
    parser.add_argument("name", nargs="?", default="self-attention", metavar="NAME", help=t("example.name"))
    parser.add_argument("--list", action="store_true", help=t("example.list"))
    add_output_options(parser, t)
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from .. import examples, practice
    from ..explain import texts

    check_lang(args.lang)
    if args.list:
        lines = [texts.text(args.lang, "list.header")]
        width = max(len(n) for n in examples.names())
        lines += [f"  {name:<{width}}  {texts.text(args.lang, f'title.{name}')}" for name in examples.names()]
        print("\n".join(lines))
        return 0
    frontdoor.check_choice(args.name, examples.names(), field="NAME", lang=args.lang)
    digits = check_options(args)
    trace = examples.run(args.name, query=args.query, by_hand=args.by_hand, digits=digits)
    if args.format == "html":          # the offline page's what-ifs, computed here by the examples' runner
        trace.meta["variants"] = examples.variants(args.name, trace)
        if args.name in practice.NAMES:    # the practice drills, computed here by qkv.practice (the page checks)
            trace.meta["practice"] = practice.offline(args.name, lang=args.lang)
    return emit(trace, args, digits)
