"""`qkv example [NAME]`: a worked example of the posts, every number derived step by step.

    qkv example                         # self-attention (also what `qkv` alone runs)
    qkv example cross-attention --lang ko
    qkv example multi-head --by-hand    # rounds like the post does, shows the drift
    qkv example projection --format markdown --out projection.md
    qkv example --list
    qkv example self-attention --what-if factor=0.5 "x[1,0]=2"    # practise: change inputs, read what follows
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
    parser.add_argument("--what-if", nargs="+", action="extend", metavar="KEY=VALUE", dest="what_if",
                        help=t("example.what_if"))
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
    # a what-if: the page's and serve's changes, typed as KEY=VALUE, run by the same runner (qkv.examples)
    changes = None if args.what_if is None else examples.changes_from(args.name, args.what_if)
    trace = examples.run(args.name, query=args.query, by_hand=args.by_hand, digits=digits, changes=changes)
    if args.format == "html" and changes is None:   # the offline page's what-ifs: of the post's own numbers
        trace.meta["variants"] = examples.variants(args.name, trace)
        if args.name in practice.NAMES:    # the practice drills, computed here by qkv.practice (the page checks)
            trace.meta["practice"] = practice.offline(args.name, lang=args.lang)
    return emit(trace, args, digits)
