"""The `qkv` command: parses arguments, calls the library, prints. Exit codes: 0 ok, 2 bad input.

With no arguments it runs the seed's self-attention worked example (`qkv example self-attention`).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .commands import COMMANDS
from .errors import InputError

DEFAULT_ARGS = ["example", "self-attention"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="qkv", description="Transformer attention, exact and explained. With no command: the seed's "
        "self-attention worked example.")
    parser.add_argument("--version", action="version", version=f"qkv {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"qkv.commands.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    if not argv:
        argv = DEFAULT_ARGS
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"qkv: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
