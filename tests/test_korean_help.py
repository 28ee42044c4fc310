"""`--help` under `--lang ko` is Korean: every command, every option — generated from the parsers.

The cases come from `qkv.cli.build_parser` itself (each command, each option that shows in --help), so
a new command or option whose help is English fails here. The English detector is test_cli_lang_ko's
`korean_only` (foreign_words after code shown as typed is set aside); the words allowed beyond it are
the parsers' own (metavariables, destinations, choices) and the names listed in NAMES, with why.

Classes checked (each fails on the code before the help texts moved into qkv.explain.texts):
1. the whole help of every command and of qkv itself, with --lang before or after --help;
2. each option's own help text, one by one (a Korean text per option, never the English one);
3. the language rule: ``--lang`` anywhere on the line (before ``--``) chooses the help's language, and
   ``qkv --lang ko --help`` is qkv's own help, as ``qkv --help --lang ko``;
4. lines are wrapped by the columns they show (Hangul is two columns wide), so Korean help fits the
   terminal as English does; English help is unchanged.
"""

from __future__ import annotations

import argparse
import functools
import re
import unicodedata

import pytest

from qkv.cli import build_parser, main
from qkv.commands import COMMANDS
from qkv.models import SUPPORTED

from test_cli_korean import HANGUL, words_of
from test_cli_lang_ko import korean_only

# Names the help shows as their owners spell them (not words to translate), and why.
NAMES = {
    "MiniLM", "Mistral",                  # model families, as their authors name them
    "GEMM",                               # the matrix-product routine whose rate bench measures (an acronym)
    "gloo", "torchrun",                   # torch.distributed's backend and launcher that ring runs on
}
WIDTH = 100


def _columns(line: str) -> int:
    """Columns a terminal gives ``line``: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def _commands() -> dict[str, argparse.ArgumentParser]:
    return build_parser("ko")._subparsers._group_actions[0].choices


def _parser_words() -> set[str]:
    """Destinations, choices and option strings of every parser (the usage line's words typed as shown). Not
    the metavariables: under --lang ko they are Korean (파일, 키=값; `test_every_placeholder_is_korean`), so an
    English placeholder left in help, usage or an error is English left."""
    parsers = [build_parser("ko"), *_commands().values()]
    return {w for p in parsers for a in p._actions
            for w in words_of(a.dest, *(a.choices or ()), *a.option_strings)}


PARSER_WORDS = _parser_words()
# the model_type values qkv runs, as config.json spells them (--model's help lists them)
MODEL_TYPES = words_of(*SUPPORTED)


def run(capsys, monkeypatch, *argv: str) -> tuple[int, str, str]:
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def english_left(text: str) -> list[str]:
    return korean_only(text, PARSER_WORDS | NAMES | MODEL_TYPES)


# ------------------------------------------------------------------ 1. the whole help, every command
HELP_CASES = [("qkv-help-lang", ["--help", "--lang", "ko"]), ("qkv-lang-help", ["--lang", "ko", "--help"]),
              ("qkv-lang=-h", ["--lang=ko", "-h"])]
for _name in COMMANDS:
    HELP_CASES += [(f"{_name}-help-lang", [_name, "--help", "--lang", "ko"]),
                   (f"{_name}-lang-help", [_name, "--lang", "ko", "--help"]),
                   (f"lang-{_name}-help", ["--lang", "ko", _name, "-h"])]


@pytest.mark.parametrize("argv", [argv for _, argv in HELP_CASES], ids=[i for i, _ in HELP_CASES])
def test_help_is_korean(capsys, monkeypatch, argv):
    code, out, err = run(capsys, monkeypatch, *argv)
    assert code == 0 and err == "" and out.startswith("사용법: qkv"), (argv, code, out[:200], err)
    assert "\n옵션:\n" in out and HANGUL.search(out.split("\n\n", 1)[1]), out
    assert english_left(out) == [], (argv, english_left(out), out)


def test_the_help_cases_cover_every_command():
    covered = {argv[0] if argv[0] != "--lang" else argv[2] for _, argv in HELP_CASES}
    assert set(COMMANDS) <= covered and len(HELP_CASES) == 3 + 3 * len(COMMANDS)


# ------------------------------------------------------------------ 2. each option's own text
def _option_cases():
    """(id, command, action) for every argument that shows in --help, of every command and of qkv."""
    cases = [("qkv" + a.option_strings[-1], None, a) for a in build_parser("ko")._actions
             if a.help not in (None, argparse.SUPPRESS) and a.option_strings]
    for name, parser in _commands().items():
        for action in parser._actions:
            if action.help in (None, argparse.SUPPRESS):
                continue
            label = action.option_strings[-1] if action.option_strings else action.dest
            cases.append((f"{name}-{label}", name, action))
    return cases


OPTION_CASES = _option_cases()


@functools.lru_cache(maxsize=None)
def _parser(lang: str) -> argparse.ArgumentParser:
    """build_parser(lang), built once per language for the 435 option look-ups below, which only read it
    (~10 ms of CPU a build: 4 CPU-seconds of make check went to building the same two parsers again)."""
    return build_parser(lang)


def _help_of(command: str | None, action: argparse.Action, lang: str) -> str:
    """The option's help as --help prints it in ``lang`` (defaults filled in), unwrapped."""
    parser = _parser(lang)
    if command is not None:
        parser = parser._subparsers._group_actions[0].choices[command]
    same = next(a for a in parser._actions if a.dest == action.dest and a.option_strings == action.option_strings)
    return parser._get_formatter()._expand_help(same)


@pytest.mark.parametrize("command, action", [(c, a) for _, c, a in OPTION_CASES], ids=[i for i, _, _ in OPTION_CASES])
def test_every_option_has_korean_help(command, action):
    if action.dest == "help":                           # argparse's own -h: its words come from argparse_words
        return
    korean, english = _help_of(command, action, "ko"), _help_of(command, action, "en")
    assert HANGUL.search(korean) and korean != english, (command, action.dest, korean)
    assert english_left(korean) == [], (command, action.dest, english_left(korean), korean)


def test_the_option_cases_cover_every_option():
    """Every option of every command is a case (more than 120), and each has its own text key: its help
    in English is what it was before the texts moved (spot checks against the old wording)."""
    assert len(OPTION_CASES) > 120, len(OPTION_CASES)
    said = {(c, a.dest): _help_of(c, a, "en") for _, c, a in OPTION_CASES}
    assert said[("explain", "file")] == "a .toml or .json example file, or a saved JSON trace"
    assert said[("inspect", "top")] == "how many top keys to list (default 5)"
    assert said[("embed", "model")].endswith("(config.json, model.safetensors or a sharded index, tokenizer.json; "
                                             "model_type bert) (default minilm)")
    assert said[("serve", "port")] == "port to listen on (default 8000)"
    assert said[("doctor", "lang")] == "language of the report (default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)"       # no second "(default …)"


def test_the_check_finds_english_help():
    """The detector flags an English help line (the old `qkv explain --help --lang ko` line)."""
    assert english_left("  --out FILE       write to FILE (atomically) instead of standard output") == \
        ["FILE", "atomically", "instead", "of", "output", "standard", "write"]     # "to": --to, a parser word
    assert english_left("  --out FILE       표준 출력 대신 FILE에 쓴다 (원자적으로)") == ["FILE"]   # a placeholder left English
    assert english_left("  --out 파일       표준 출력 대신 파일에 쓴다 (원자적으로)") == []


# ------------------------------------------------------------------ 2b. the placeholders (metavariables)
# One decision for the whole command line: under --lang ko each placeholder's words are Korean (the texts
# ``metavar.WORD``: FILE → 파일, DIR → 디렉터리, TEXT → 텍스트, KEY=VALUE → 키=값), everywhere argparse or qkv shows
# one — help, usage, argparse's errors and qkv's errors that name a value by its placeholder. Single letters
# (N, T, L, H, K …) are symbols, as the posts' T, d, h; lowercase values (minilm, all, ko, float32) are typed
# as shown. Both are the same in every language.
PLACEHOLDER_KO = {"FILE": "파일", "DIR": "디렉터리", "TEXT": "텍스트", "KEY=VALUE": "키=값", "NAME": "이름", "TOKEN": "토큰",
                  "COMMAND": "명령"}


def _placeholders(lang: str) -> list[tuple[str, str]]:
    """(where, metavar) for every argument of every parser built in ``lang``, the subcommands' slot too."""
    found = []
    for name, parser in [("qkv", _parser(lang)), *_parser(lang)._subparsers._group_actions[0].choices.items()]:
        for action in parser._actions:
            if isinstance(action.metavar, str):
                found.append((f"{name} {action.option_strings[-1] if action.option_strings else action.dest}",
                              action.metavar))
    return found


def test_every_placeholder_is_korean():
    """No placeholder of the Korean parser has an English word: a Latin word of two letters or more in it is a
    lowercase value typed as shown (minilm|디렉터리, L|all, ko|ja|both), never a word in capitals (FILE, KEY=VALUE)."""
    placeholders = _placeholders("ko")
    assert len(placeholders) > 90, len(placeholders)
    english = [(where, m) for where, m in placeholders
               if any(not w.islower() for w in re.findall(r"[A-Za-z]{2,}", m))]
    assert english == [], english
    english_ones = dict(_placeholders("en"))
    korean_ones = dict(placeholders)
    for where, typed in english_ones.items():
        if typed in PLACEHOLDER_KO:
            assert korean_ones[where] == PLACEHOLDER_KO[typed], (where, typed, korean_ones[where])
    assert korean_ones["inspect --model"] == "minilm|디렉터리" and korean_ones["inspect --layer"] == "L|all"
    assert korean_ones["example --digits"] == "N" and korean_ones["qkv command"] == "명령"


def test_english_placeholders_stay_english():
    placeholders = dict(_placeholders("en"))
    assert (placeholders["example --what-if"], placeholders["inspect --model"], placeholders["explain file"]) == \
        ("KEY=VALUE", "minilm|DIR", "FILE")


# Command lines whose error names a placeholder: argparse's (a missing positional, a value missing after an
# option whose placeholder is a word) and qkv's own (a field that is a placeholder: TEXT, TEXT #2, NAME).
PLACEHOLDER_ERRORS = [
    (["inspect", "--lang", "ko"], "텍스트"), (["explain", "--lang", "ko"], "파일"),
    (["why", "--lang", "ko"], "주제"), (["generate", "--lang", "ko"], "프롬프트"),
    (["inspect", "", "--lang", "ko"], "텍스트: "), (["embed", "a", "", "--lang", "ko"], "텍스트 #1: "),   # embed numbers texts from 0, as its table
    (["heads", " ", "--lang", "ko"], "텍스트: "), (["translate", "", "--lang", "ko"], "텍스트: "),
    (["example", "nope", "--lang", "ko"], "이름: "), (["--lang", "ko", "nope"], "이름: "),
    (["--lang", "ko", "example", "--what-if"], "--what-if"),
]


@pytest.mark.parametrize("argv, named", PLACEHOLDER_ERRORS, ids=[" ".join(a) for a, _ in PLACEHOLDER_ERRORS])
def test_errors_name_placeholders_in_korean(capsys, monkeypatch, argv, named):
    code, out, err = run(capsys, monkeypatch, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1, (argv, code, out, err)
    assert named in err, (argv, err)
    assert not re.search(r"\b(TEXT|FILE|NAME|TOPIC|PROMPT|COMMAND|DIR|TOKEN)\b", err), err


def test_errors_name_placeholders_in_english(capsys, monkeypatch):
    """The same errors in English keep the placeholders as the English usage line shows them."""
    assert "TEXT #1: " in run(capsys, monkeypatch, "embed", "a", "", "--lang", "en")[2]
    assert "required: TEXT" in run(capsys, monkeypatch, "inspect", "--lang", "en")[2]


# ------------------------------------------------------------------ 3. where --lang may stand
def test_lang_before_or_after_help_gives_the_same_help(capsys, monkeypatch):
    for name in ("explain", "bench", "serve", "train"):
        outs = {run(capsys, monkeypatch, *argv)[1] for argv in
                ([name, "--help", "--lang", "ko"], [name, "--lang", "ko", "--help"], ["--lang", "ko", name, "--help"],
                 [name, "--help", "--lang=ko"])}
        assert len(outs) == 1, name
    top = {run(capsys, monkeypatch, *argv)[1] for argv in
           (["--help", "--lang", "ko"], ["--lang", "ko", "--help"], ["--lang=ko", "-h"], ["-h", "--lang", "ko"])}
    assert len(top) == 1 and next(iter(top)).startswith("사용법: qkv [-h]"), top


def test_other_options_before_help_are_the_examples(capsys, monkeypatch):
    """Options before any command are the default example's, so `qkv --digits 2 --help` is its help."""
    code, out, _ = run(capsys, monkeypatch, "--lang", "ko", "--digits", "2", "--help")
    assert code == 0 and out.startswith("사용법: qkv example")


def test_english_help_stays_english(capsys, monkeypatch):
    code, out, _ = run(capsys, monkeypatch, "explain", "--help")
    assert code == 0 and out.startswith("usage: qkv explain") and not HANGUL.search(out.replace("→", ""))
    assert "  --lang en|ko     language of the explanation (default: the locale’s — LC_ALL, LC_MESSAGES, LANG\n" in out


# ------------------------------------------------------------------ 4. wrapped by the columns shown
@pytest.mark.parametrize("name", [None, *COMMANDS])
def test_korean_help_fits_the_terminal(capsys, monkeypatch, name):
    argv = ["--help", "--lang", "ko"] if name is None else [name, "--help", "--lang", "ko"]
    _, out, _ = run(capsys, monkeypatch, *argv)
    too_wide = [line for line in out.splitlines() if _columns(line) > WIDTH and " " in line.strip()]
    assert too_wide == [], too_wide
