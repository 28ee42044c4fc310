"""The `qkv` command: parses arguments, calls the library, prints. Exit codes: 0 ok, 2 bad input.

With no arguments it runs the seed's self-attention worked example (`qkv example self-attention`).

Every error a user can cause — a bad option (argparse's too), a bad file, an unusable output
path — is one line on standard error, ``qkv: error: …``, and exit status 2. Output paths are
checked before any work, and every file a command writes is put in place only when the whole
command succeeds (`qkv._io.all_or_nothing`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from . import __version__
from ._io import all_or_nothing, check_output
from .commands import COMMANDS
from .errors import InputError

DEFAULT_ARGS = ["example", "self-attention"]
# Options that name a file a command writes (checked before any work when given as a string).
OUTPUT_OPTIONS = ("out", "figure", "json", "markdown")


class UsageError(Exception):
    """argparse's complaint about the command line, reported as one line by `main`."""

    def __init__(self, prog: str, message: str):
        super().__init__(message)
        self.prog, self.message = prog, message


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are exceptions (one line, exit 2) instead of usage + exit."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(self.prog, message)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="qkv", description="Transformer attention, exact and explained. With no command: the seed's "
        "self-attention worked example.")
    parser.add_argument("--version", action="version", version=f"qkv {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMANDS:
        importlib.import_module(f"qkv.commands.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    if not argv:
        argv = DEFAULT_ARGS
    lang = "en"
    try:
        args = parser.parse_args(argv)
        lang = getattr(args, "lang", "en")          # errors with a text key answer in the chosen language
        if getattr(args, "func", None) is None:
            raise InputError(f"no command given; the commands are: {', '.join(COMMANDS)} (see 'qkv --help')")
        check_outputs(args)
        with all_or_nothing():
            return int(args.func(args) or 0)
    except SystemExit as exc:                      # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except UsageError as exc:
        return fail(f"{exc.message} (see '{exc.prog} --help')")
    except InputError as exc:
        return fail(exc.say(lang))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def check_outputs(args: argparse.Namespace) -> None:
    """Every output path is usable, and no two name the same file — before any work is done."""
    seen: dict[str, str] = {}
    for dest in OUTPUT_OPTIONS:
        value = getattr(args, dest, None)
        if not isinstance(value, str):
            continue
        option = "--" + dest.replace("_", "-")
        target = os.path.realpath(check_output(value, field=option))
        if target in seen:
            raise InputError(f"names the same file as {seen[target]}", source=value, field=option)
        seen[target] = option


def fail(message: str) -> int:
    """Print ``qkv: error: message`` as exactly one line on standard error; return 2."""
    line = " ".join(message.split()) if any(c in message for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029") else message
    print(f"qkv: error: {line}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
