"""The one error type for bad user input (files, fields, command-line arguments)."""

from __future__ import annotations

__all__ = ["InputError", "plural", "reason"]


def plural(n: int, one: str, many: str | None = None) -> str:
    """A count with its noun, for messages: ``plural(1, "query", "queries")`` → "1 query", 2 → "2 queries"
    (``many`` defaults to ``one + "s"``), never a parenthesised plural."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def reason(exc: BaseException, lang: str = "en") -> str:
    """An exception as the reason a message gives (``cannot be read ({reason})``), in ``lang``, by class:

    - OSError (FileNotFoundError, PermissionError, IsADirectoryError, a full disk, …): in English the OS's
      own words (``strerror``: "Permission denied"); in another language the text ``error.os.NAME`` of
      `qkv.explain.texts` for its errno (ENOENT, EACCES, …), ``error.os.other`` (with the number) for an errno
      the table has no text for, ``error.os.none`` for an OSError without one;
    - tomllib.TOMLDecodeError: in English its first line ("Invalid value (at line 3, column 5)"); in another
      language where it stopped (``error.toml.at`` with the line and column, ``error.toml.end``), read from
      the error's ``lineno``/``colno`` (Python 3.14) or from the "(at line N, column M)" every tomllib message
      ends with;
    - anything else: its first line, as Python says it (in every language: a library's own words).
    """
    import errno as errnos

    from .explain import texts

    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if isinstance(exc, OSError):
        if lang == "en":
            return exc.strerror or first
        name = errnos.errorcode.get(exc.errno) if isinstance(exc.errno, int) else None
        if name and texts.has(lang, f"error.os.{name}"):
            return texts.text(lang, f"error.os.{name}")
        return texts.text(lang, "error.os.other", number=exc.errno) if name else texts.text(lang, "error.os.none")
    if lang == "en":
        return first
    if type(exc).__name__ == "TOMLDecodeError":
        import re

        line, column = getattr(exc, "lineno", None), getattr(exc, "colno", None)
        at = re.search(r"\(at line (\d+), column (\d+)\)$", first) if line is None else None
        if at:
            line, column = int(at.group(1)), int(at.group(2))
        if line is not None:
            return texts.text(lang, "error.toml.at", line=line, column=column)
        if first.endswith("(at end of document)"):
            return texts.text(lang, "error.toml.end")
    return first


def worded(values: dict, lang: str) -> dict:
    """``values`` with every exception among them replaced by its `reason` in ``lang``."""
    return {name: reason(value, lang) if isinstance(value, BaseException) else value for name, value in values.items()}


class InputError(ValueError):
    """Bad input a user can fix. The message names the source (file), the field and the problem.

    The command line prints it as one line and exits with status 2.
    """

    def __init__(self, problem: str, *, source: str | None = None, field: str | None = None,
                 key: str | None = None, values: dict | None = None):
        self.problem, self.source, self.field = problem, source, field
        self.key, self.values = key, dict(values or {})
        parts = [p for p in (source, field) if p]
        super().__init__(": ".join(parts + [problem]))

    @classmethod
    def keyed(cls, key: str, /, *, source: str | None = None, field: str | None = None, **values) -> "InputError":
        """The error whose words are the text ``key`` of `qkv.explain.texts` (English as its ``problem``,
        every other language through `say`): one copy of each sentence, in the tables. A value that is an
        exception (``reason=exc``) is worded in each language by `reason` (an OSError by its errno)."""
        from .explain import texts

        return cls(texts.text("en", key, **worded(values, "en")), source=source, field=field, key=key, values=values)

    def say(self, lang: str = "en") -> str:
        """The message in ``lang`` (source, field and `problem_in`), as the command line and serve print it."""
        return ": ".join([p for p in (self.source, self.field) if p] + [self.problem_in(lang)])

    def problem_in(self, lang: str = "en") -> str:
        """The problem in ``lang``: the text ``key`` of `qkv.explain.texts` with ``values`` where the error
        has one (the command line and serve answer in the reader's language), else the English problem.
        ``values`` may hold ``"by_lang": {lang: {name: text}}``: parts that are words of their own (a value's
        description, a position), given in each language."""
        if self.key is None or lang == "en":
            return self.problem
        from .explain import texts

        if lang not in texts.LANGS or not texts.has(lang, self.key):
            return self.problem
        values = worded({**self.values, **self.values.get("by_lang", {}).get(lang, {})}, lang)
        return texts.text(lang, self.key, **values)
