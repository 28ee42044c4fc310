"""`qkv.cli.main` keeps its parser per language for the process (`cli._parser`): built once, in the right
language, and never changed by a parse, so a later call answers as a newly built parser would."""

from __future__ import annotations

import argparse

import pytest

from qkv import cli


def _defaults(parser: argparse.ArgumentParser) -> dict:
    """Every action's default, of the parser and of each command's parser, by (command, dest)."""
    found = {("", a.dest): repr(a.default) for a in parser._actions}
    for name, sub in parser._subparsers._group_actions[0].choices.items():
        found.update({(name, a.dest): repr(a.default) for a in sub._actions})
        found.update({(name, key): repr(value) for key, value in sub._defaults.items()})
    return found


def test_main_builds_one_parser_per_language(monkeypatch, capsys):
    built = []

    def counted(lang="en"):
        built.append(lang)
        return build(lang)

    build = cli.build_parser
    monkeypatch.setattr(cli, "_PARSERS", {})
    monkeypatch.setattr(cli, "build_parser", counted)
    for argv in (["bench", "--sizes", "x"], ["--lang", "ko", "bench", "--sizes", "x"], ["bench", "--sizes", "y"],
                 ["bench", "--lang", "ko", "--sizes", "y"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        # each call in its own language, whichever was built or kept before it
        assert err.startswith("qkv: 오류:" if "ko" in argv else "qkv: error:"), (argv, err)
    assert built == ["en", "ko"]


def test_a_parse_leaves_the_kept_parser_as_built():
    """By class: after parses that set options, lists (serve --model, appended) included, every default
    of every command is the one a newly built parser has, and a later parse does not see earlier values."""
    with cli.argparse_words("en"):
        kept = cli._parser("en")
        first = kept.parse_args(["serve", "--model", "a", "--model", "b"])
        second = kept.parse_args(["serve"])
        kept.parse_args(["bench", "--sizes", "64,128", "--repeats", "3"])
        fresh = cli.build_parser("en")
    assert first.model == ["a", "b"] and second.model == []
    assert _defaults(kept) == _defaults(fresh)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_help_from_the_kept_parser_is_the_built_one(lang, capsys):
    """`--help` twice in one process (the second from the kept parser) prints what a new parser prints."""
    for _ in range(2):
        assert cli.main(["bench", "--help", "--lang", lang]) == 0
        first = capsys.readouterr().out
        with cli.argparse_words(lang):
            expected = cli.build_parser(lang)._subparsers._group_actions[0].choices["bench"].format_help()
        assert first == expected and first
