"""The locale decides the language when ``--lang`` is not given, as gettext reads it (LC_ALL, then
LC_MESSAGES, then LANG; "C" and "POSIX" are English; LANGUAGE, when the locale is not C, comes first).
One function (`qkv.frontdoor.locale_lang`) decides it for every command and for ``qkv serve``.

The expected languages are the gettext manual's rules ("The LANGUAGE variable", "Locale Environment
Variables"), not qkv's output; the Korean answers are recognised by their Hangul, the English by its absence."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from qkv.cli import build_parser, main
from qkv.frontdoor import locale_lang

ROOT = Path(__file__).resolve().parents[1]
HANGUL = re.compile("[\uac00-\ud7a3]")
LOCALE_VARS = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


@pytest.mark.parametrize("env, lang", [
    ({}, "en"),                                                        # nothing set: the C locale
    ({"LANG": "ko_KR.UTF-8"}, "ko"),
    ({"LANG": "ko_KR.eucKR"}, "ko"),
    ({"LANG": "ko"}, "ko"),
    ({"LANG": "ko_KR.UTF-8@latin"}, "ko"),                             # language[_territory][.codeset][@modifier]
    ({"LANG": "en_US.UTF-8"}, "en"),
    ({"LANG": "C.UTF-8"}, "en"),
    ({"LANG": "POSIX"}, "en"),
    ({"LANG": "fr_FR.UTF-8"}, "en"),                                   # a language qkv does not speak
    ({"LC_ALL": "C", "LANG": "ko_KR.UTF-8"}, "en"),                    # LC_ALL before everything
    ({"LC_ALL": "ko_KR.UTF-8", "LC_MESSAGES": "en_US.UTF-8", "LANG": "en_US.UTF-8"}, "ko"),
    ({"LC_MESSAGES": "ko_KR.UTF-8", "LANG": "en_US.UTF-8"}, "ko"),     # LC_MESSAGES before LANG
    ({"LC_MESSAGES": "C", "LANG": "ko_KR.UTF-8"}, "en"),
    ({"LC_ALL": "", "LC_MESSAGES": "", "LANG": "ko_KR.UTF-8"}, "ko"),  # empty is unset
    ({"LANGUAGE": "ko:en", "LANG": "en_US.UTF-8"}, "ko"),              # LANGUAGE first, when the locale is not C
    ({"LANGUAGE": "en", "LANG": "ko_KR.UTF-8"}, "en"),
    ({"LANGUAGE": "fr:ko", "LANG": "en_US.UTF-8"}, "ko"),              # its first language qkv speaks
    ({"LANGUAGE": "ko", "LANG": "C.UTF-8"}, "en"),                     # ... ignored under the C locale
    ({"LANGUAGE": "ko", "LC_ALL": "POSIX", "LANG": "en_US.UTF-8"}, "en"),
    ({"LANGUAGE": "", "LANG": "ko_KR.UTF-8"}, "ko"),
])
def test_the_locale_gives_the_language_as_gettext_reads_it(env, lang):
    assert locale_lang(env) == lang


@pytest.fixture
def locale(monkeypatch):
    """Set the locale variables of this process: ``locale(LANG="ko_KR.UTF-8")``, every other one unset."""
    def set_locale(**values):
        for name in LOCALE_VARS:
            monkeypatch.delenv(name, raising=False)
        for name, value in values.items():
            monkeypatch.setenv(name, value)
    return set_locale


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_korean_locale_lists_the_examples_in_korean():
    """The issue's own line, in a fresh process: `LANG=ko_KR.UTF-8 qkv example --list`."""
    env = {k: v for k, v in os.environ.items() if k not in LOCALE_VARS}
    env.update(LANG="ko_KR.UTF-8", PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run([sys.executable, "-m", "qkv", "example", "--list"], env=env, capture_output=True,
                         text=True, encoding="utf-8", check=True).stdout
    assert HANGUL.search(out.splitlines()[0]) and "Worked examples" not in out, out
    env["LC_ALL"] = "C"
    out = subprocess.run([sys.executable, "-m", "qkv", "example", "--list"], env=env, capture_output=True,
                         text=True, encoding="utf-8", check=True).stdout
    assert not HANGUL.search(out.splitlines()[0]), out


@pytest.mark.parametrize("values, korean", [
    ({"LANG": "ko_KR.UTF-8"}, True), ({"LC_MESSAGES": "ko_KR.UTF-8", "LANG": "en_US.UTF-8"}, True),
    ({"LC_ALL": "C", "LANG": "ko_KR.UTF-8"}, False), ({"LANG": "POSIX"}, False), ({"LANG": "en_US.UTF-8"}, False),
    ({}, False)])
def test_every_output_follows_the_locale(capsys, locale, values, korean):
    """The explanation, a command's error and argparse's own complaint: all in the locale's language."""
    locale(**values)
    code, out, _ = run(capsys, "example", "self-attention")
    assert code == 0 and bool(HANGUL.search(out.splitlines()[0])) == korean      # the title (the English
                                                                                  # cites the post's Korean title)
    code, _, err = run(capsys, "serve", "--port", "70000")          # the command's own check
    assert code == 2 and bool(HANGUL.search(err)) == korean, err
    code, _, err = run(capsys, "inspect")                             # argparse: a missing argument
    assert code == 2 and bool(HANGUL.search(err)) == korean, err
    code, out, _ = run(capsys, "doctor")
    assert code == 0 and bool(HANGUL.search(out)) == korean


def test_lang_given_wins_over_the_locale(capsys, locale):
    locale(LANG="ko_KR.UTF-8")
    code, out, _ = run(capsys, "example", "--list", "--lang", "en")
    assert code == 0 and not HANGUL.search(out)
    locale(LANG="en_US.UTF-8")
    code, out, _ = run(capsys, "example", "--list", "--lang=ko")
    assert code == 0 and HANGUL.search(out.splitlines()[0])
    locale(LANG="ko_KR.UTF-8")                                        # a wrong value is refused in English,
    code, _, err = run(capsys, "example", "--lang", "xx")             # whatever the locale (it names --lang)
    assert code == 2 and err == "qkv: error: --lang: 'xx' is not one of en, ko\n"


@pytest.mark.parametrize("command", ["serve", "example", "inspect", "translate", "bench", "doctor"])
def test_every_command_reads_the_locale_when_parsed(locale, command):
    """The parser fills a missing --lang from the locale when the line is parsed (not when it was built):
    serve's page opens in it (`qkv serve` gives create_app args.lang), and so does every command."""
    parser = build_parser()
    needs = {"inspect": ["a cat"], "translate": ["I love you"]}.get(command, [])
    for values, lang in (({"LANG": "ko_KR.UTF-8"}, "ko"), ({"LC_ALL": "C.UTF-8", "LANG": "ko_KR.UTF-8"}, "en")):
        locale(**values)
        assert parser.parse_args([command, *needs]).lang == lang
