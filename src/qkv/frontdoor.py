"""What the command line and `qkv serve` share: the languages, the digit bounds, the figure suffixes,
the output check, and "a document → a trace". Both front ends call these, so a value is accepted or
refused, and worded, the same way in a terminal and in the browser.

Each check raises `qkv.InputError` naming the field it was given (``--lang`` for the command line,
``lang`` for an HTTP parameter); serve turns it into a 400 answer, the CLI into one line and exit 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._io import FIGURE_SUFFIXES, check_output, int_error, parse_int, short_repr
from ._io import printable as _printable
from .errors import InputError, plural
from .explain.texts import LANGS as _TEXT_LANGS
from .trace import BY_HAND, Trace

__all__ = ["LANGS", "DIGITS", "locale_lang", "FIGURE_SUFFIXES", "check_lang", "check_digits", "check_figure", "check_output",
           "trace_from_document", "not_one_of", "check_choice", "printable", "plural"]

LANGS: tuple[str, ...] = tuple(_TEXT_LANGS)
"""The languages of every explanation, page and command (en, ko)."""

DIGITS = (0, 12)
"""Decimals a reader may ask for: from 0 to 12."""



def locale_lang(environ=None) -> str:
    """The language of the messages when no ``--lang`` is given: the locale's, read as gettext reads it.

    The locale of messages is the first of ``LC_ALL``, ``LC_MESSAGES`` and ``LANG`` that is set and not
    empty. "C" and "POSIX" (or none at all) mean English, and ``LANGUAGE`` is then ignored, as gettext
    ignores it; otherwise ``LANGUAGE``, when set (a colon-separated list, ``ko:en``), decides in the locale's
    place: its first language qkv speaks, else English.
    A locale name is ``language[_territory][.codeset][@modifier]``: ``ko_KR.UTF-8`` and ``ko`` give "ko";
    a language qkv does not speak (``fr_FR.UTF-8``) gives "en". The command line (`qkv.cli`) and
    ``qkv serve`` both call this, so both open in the same language. ``environ``: os.environ by default."""
    import os

    env = os.environ if environ is None else environ
    locale = next((env[name] for name in ("LC_ALL", "LC_MESSAGES", "LANG") if env.get(name)), "")
    if _language(locale) in ("", "c", "posix"):
        return "en"
    wanted = env.get("LANGUAGE", "").split(":") if env.get("LANGUAGE") else [locale]
    return next((_language(name) for name in wanted if _language(name) in LANGS), "en")


def _language(locale: str) -> str:
    """``ko_KR.UTF-8@euro`` → "ko"; "C.UTF-8" → "c"."""
    return locale.split("@", 1)[0].split(".", 1)[0].split("_", 1)[0].split("-", 1)[0].strip().casefold()


def not_one_of(value: Any, choices, *, field: str | None = None, lang: str = "en") -> InputError:
    """The one wording of an invalid choice, everywhere (options, commands, API fields):
    ``FIELD: 'fr' is not one of en, ko`` — plus ``; did you mean 'example'?`` when one choice is close
    (difflib). The error carries the text key, so `InputError.say` words it in the reader's language."""
    import difflib

    from .explain.texts import text

    choices = [str(c) for c in choices]
    close = []
    if isinstance(value, str):
        # case and surrounding spaces first ('KO', ' Doctor' → 'ko', 'doctor'), then spelling (difflib)
        folded = {c.casefold(): c for c in choices}
        close = [folded[value.strip().casefold()]] if value.strip().casefold() in folded else \
            [folded[c] for c in difflib.get_close_matches(value.strip().casefold(), list(folded), n=1, cutoff=0.6)]
    values = {"value": short_repr(value), "choices": ", ".join(choices)}
    key = "cli.choices"
    if close:
        key, values["guess"] = "cli.choices.guess", repr(close[0])
    return InputError(text(lang, key, **values), field=field, key=key, values=values)


def check_choice(value: Any, choices, *, field: str | None = None, lang: str = "en"):
    """``value`` if it is one of ``choices``; else `not_one_of`'s error."""
    if value not in tuple(choices):
        raise not_one_of(value, choices, field=field, lang=lang)
    return value


def check_lang(value: Any, *, field: str = "--lang") -> str:
    """``value`` if it is one of `LANGS`; else ``FIELD: 'xx' is not one of en, ko``."""
    return check_choice(value, LANGS, field=field)


def printable(text: str) -> str:
    """A terminal stream made safe: `qkv._io.printable` with ``stream=True`` (newlines, tabs, colours and
    rich's progress redraws kept; every other control character shown as an escape)."""
    return _printable(text, stream=True)


def check_digits(value: Any, *, field: str = "--digits") -> int | None:
    """None stays None (the precision the trace asks for); else a whole number from 0 to 12 (a string too)."""
    if value is None:
        return None
    if isinstance(value, bool) or (not isinstance(value, (int, str))):
        raise int_error(value, low=DIGITS[0], high=DIGITS[1], what="a whole number of decimals", field=field)
    return parse_int(str(value), field=field, low=DIGITS[0], high=DIGITS[1], what="a whole number of decimals")


def check_figure(path: str, *, field: str = "--figure", lang: str = "en") -> str:
    """``path`` if its suffix is one of `FIGURE_SUFFIXES` and it may be written (`check_output`)."""
    from .explain.texts import text

    if Path(path).suffix.lower() not in FIGURE_SUFFIXES:
        raise InputError(text(lang, "cli.figure_type", suffix=repr(Path(path).suffix) if Path(path).suffix
                              else text(lang, "cli.no_suffix")),
                         source=path, field=field)
    check_output(path, field=field)
    return path


def trace_from_document(doc: dict, *, source: str, base: Path | None = None, query: Any = None,
                        by_hand: bool = False, digits: int | None = None, field: str = "--query") -> Trace:
    """An example document → its trace: a saved trace (``--format json``) is read back, not recomputed;
    an example file (docs/examples.md) is computed by the examples' runner. ``query`` follows a token."""
    from .examples.runner import trace_spec
    from .spec import is_saved_trace, parse_spec, read_saved_trace, resolve_query

    if not is_saved_trace(doc):
        return trace_spec(parse_spec(doc, source=source, base=base), query=query, by_hand=by_hand, digits=digits)
    trace = read_saved_trace(doc, source=source)
    if query is not None:
        trace.meta["query"] = resolve_query(query, list(trace.info.tokens), source=None, field=field,
                                            base=trace.info.token_base, tokens_ko=trace.meta.get("tokens_ko"))
    if by_hand and not any(s.name.startswith(BY_HAND + "/") for s in trace.steps):
        raise InputError.keyed("error.trace.no_by_hand", source=source, field="--by-hand")
    return trace
