"""The one error type for bad user input (files, fields, command-line arguments)."""

from __future__ import annotations

import re

__all__ = ["InputError", "describe", "plural", "python_reason", "reason"]


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
    - a parsing library's own description of what it could not read (json, tomllib, safetensors, the serde_json
      messages of tokenizers and of safetensors' header, NumPy's .npy/.npz readers): in English its first line
      as the library says it ("Expecting ',' delimiter: line 1 column 9 (char 8)"); in another language the
      class's text ``error.lib.*`` (`describe`) with where the library stopped (line and column, or the end of
      the document) where it says so;
    - anything else: its first line, as Python says it.
    """
    import errno as errnos

    from .explain import texts

    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if _DIGITS in first:                 # Python's guard against converting huge integers (json, tomllib)
        return texts.text(lang, "error.lib.digits")
    if isinstance(exc, OSError):
        if lang == "en":
            return exc.strerror or first
        name = errnos.errorcode.get(exc.errno) if isinstance(exc.errno, int) else None
        if name and texts.has(lang, f"error.os.{name}"):
            return texts.text(lang, f"error.os.{name}")
        return texts.text(lang, "error.os.other", number=exc.errno) if name else texts.text(lang, "error.os.none")
    if lang == "en":
        return first
    worded = _library(exc, first, lang)
    if worded is None:
        return first
    what, where = worded
    if where == "end":
        return texts.text(lang, "error.lib.at_end", what=what)
    if where is not None:
        return texts.text(lang, "error.lib.at", what=what, line=where[0], column=where[1])
    return what


def describe(exc: BaseException, lang: str) -> str:
    """What a parsing library could not read, without where (`reason` says where): for a message template
    that gives the line and column itself (``error.json.malformed``). English: the library's own words."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if lang == "en":
        return getattr(exc, "msg", None) or first
    worded = _library(exc, first, lang)
    return worded[0] if worded else first


_DIGITS = "Exceeds the limit (4300 digits)"

# Each library's messages, by class: (the start of the message, the text key that words it). The first that
# matches wins, so a longer start comes before a shorter one it begins with.
_JSON = [("Expecting value", "value"), ("Expecting property name", "key_name"), ("Expecting ',' delimiter", "comma"),
         ("Expecting ':' delimiter", "colon"), ("Extra data", "extra"), ("Unterminated string", "unterminated"),
         ("Invalid control character", "control"), ("Invalid \\", "escape"), ("Illegal trailing comma", "trailing_comma")]
_TOML = [("Invalid value", "toml.value"), ("Invalid statement", "toml.statement"), ("Expected '='", "toml.equals"),
         ("Expected ']]'", "toml.array_table_end"), ("Expected ']'", "toml.table_end"),
         ("Expected newline", "toml.newline"), ("Unclosed array", "toml.unclosed_array"),
         ("Unclosed inline table", "toml.unclosed_table"), ("Unterminated string", "unterminated"),
         ("Cannot ", "toml.redefined"), ("Duplicate inline table key", "toml.redefined"),
         ("Invalid initial character", "toml.key_start"), ("Illegal character", "toml.character"),
         ("Found invalid character", "toml.character"), ("Invalid date", "toml.date"), ("Invalid hex", "escape"),
         ("Escaped character", "escape"), ("Unescaped '\\'", "escape"), ("Invalid number", "number")]
_SERDE = [("EOF while parsing", "eof"), ("expected value", "value"), ("expected ident", "value"),
          ("expected `", "expected"),
          ("key must be a string", "key_string"), ("trailing characters", "extra"), ("trailing comma", "trailing_comma"),
          ("invalid escape", "escape"), ("invalid number", "number"), ("number out of range", "number"),
          ("control character", "control"), ("invalid unicode", "escape"), ("lone leading surrogate", "escape"),
          ("unexpected end of hex escape", "escape"), ("recursion limit exceeded", "recursion"),
          ("invalid type", "type"), ("invalid value", "value_bad"), ("invalid length", "value_bad"),
          ("unknown variant", "unknown_variant"), ("unknown field", "unknown_field"),
          ("missing field", "missing_field"), ("duplicate field", "duplicate_field"), ("data did not match", "no_variant"),
          ("stream did not contain valid UTF-8", "not_utf8")]
_MISSING = re.compile(r"^([A-Za-z_]+) missing\.?$")          # tokenizers' own: "Model missing."
_SAFETENSORS = [("header too small", "st.small"), ("header too large", "st.large"), ("invalid header length", "st.length"),
                ("invalid JSON in header: ", "st.json"), ("invalid UTF-8 in header", "st.utf8"),
                ("invalid offset for tensor", "st.offset"), ("invalid shape, data type, or offset", "st.tensor"),
                ("incomplete metadata", "st.incomplete"), ("metadata incomplete", "st.incomplete"),
                ("overflow", "st.overflow"), ("Dtype not understood", "st.dtype"), ("Unknown dtype", "st.dtype")]
_NUMPY = [("No data left in file", "npy.empty"), ("EOF: reading array header", "npy.header"),
          ("mmap length is greater than file size", "npy.short"), ("cannot reshape array", "npy.short"),
          ("EOF: reading array data", "npy.short"), ("Failed to read all data for array", "npy.short"),
          ("the magic string is not correct", "npy.magic"),
          ("This file contains pickled", "npy.pickle"), ("Failed to interpret file", "npy.pickle"),
          ("Array can't be memory-mapped: Python objects", "npy.object"),
          ("Object arrays cannot be loaded", "npy.object"), ("File is not a zip file", "npy.zip"),
          ("Bad magic number", "npy.zip"), ("Truncated file header", "npy.zip"),
          ("it expands to more than", "npy.huge")]
_SERDE_AT = re.compile(r"^(.*) at line (\d+) column (\d+)$")
_TOML_AT = re.compile(r"^(.*) \(at line (\d+), column (\d+)\)$")
_NAMED = re.compile(r"`([^`]*)`")


def _match(message: str, table: list, prefix: str = "error.lib.") -> str | None:
    return next((prefix + key for start, key in table if message.startswith(start)), None)


def _serde(message: str, lang: str):
    """serde_json's message (tokenizers, safetensors' header) → (its words in ``lang``, where)."""
    from .explain import texts

    at = _SERDE_AT.match(message)
    body, where = (at.group(1), (int(at.group(2)), int(at.group(3)))) if at else (message, None)
    key, missing = _match(body, _SERDE), _MISSING.match(body)
    if missing:
        return texts.text(lang, "error.lib.missing_field", name=repr(missing.group(1).lower())), where
    if key is None:                                  # a message this table does not know: said where, at least
        return texts.text(lang, "error.lib.other"), where
    named = _NAMED.findall(body)
    if key == "error.lib.expected":                  # "expected `,` or `}`": the symbols, each as typed
        return texts.text(lang, key, what=texts.text(lang, "error.lib.or").join(repr(n) for n in named)), where
    return texts.text(lang, key, name=repr(named[0]) if named else "?"), where


def _library(exc: BaseException, first: str, lang: str):
    """A parsing library's error in ``lang``: (what it could not read, where: (line, column), "end" or None),
    or None for an exception that is not one."""
    import json
    import zipfile

    from .explain import texts

    name = type(exc).__name__
    if isinstance(exc, json.JSONDecodeError):
        return texts.text(lang, _match(exc.msg, _JSON) or "error.lib.other"), (exc.lineno, exc.colno)
    if isinstance(exc, UnicodeDecodeError):
        return texts.text(lang, "error.lib.utf8", at=exc.start), None
    if name == "TOMLDecodeError":
        body, where = first, None
        at = _TOML_AT.match(first)
        if at:
            body, where = at.group(1), (int(at.group(2)), int(at.group(3)))
        elif first.endswith(" (at end of document)"):
            body, where = first[: -len(" (at end of document)")], "end"
        if getattr(exc, "lineno", None) is not None:          # Python 3.14 says where as attributes
            where = (exc.lineno, exc.colno)
        return texts.text(lang, _match(body, _TOML) or "error.lib.other"), where
    if name == "SafetensorError":
        body = re.sub(r"^Error while deserializing(?: header)?: ", "", first)
        key = _match(body, _SAFETENSORS) or "error.lib.other"
        if key == "error.lib.st.json":                       # the detail is serde_json's: the same table words it
            detail = _serde(body[len("invalid JSON in header: "):], lang)
            inner = detail[0] if detail[1] is None else texts.text(lang, "error.lib.at", what=detail[0],
                                                                   line=detail[1][0], column=detail[1][1])
            return texts.text(lang, key, detail=inner), None
        named = _NAMED.search(body)
        return texts.text(lang, key, name=repr(named.group(1)) if named else "?"), None
    numpy = _match(first, _NUMPY)
    if isinstance(exc, (zipfile.BadZipFile, EOFError)) or (isinstance(exc, ValueError) and numpy):
        return texts.text(lang, numpy or "error.lib.npy.zip"), None
    if type(exc) is Exception:      # tokenizers: serde_json's words (or its own), as a plain Exception
        return _serde(first, lang)
    return None


def python_reason(english: str) -> dict:
    """The values for a message whose ``reason`` is an exception Python raised on data that does not fit
    (a saved trace's KeyError, IndexError, …): ``english`` (its class and words) in English, and in another
    language the text ``error.python`` (Python says it in English only; it points to ``--lang en``). For
    ``InputError.keyed(key, …, **python_reason(text))``."""
    from .explain import texts

    return {"reason": english, "by_lang": {lang: {"reason": texts.text(lang, "error.python")}
                                           for lang in texts.LANGS if lang != "en"}}


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
        """The message in ``lang`` (source, field and `problem_in`), as the command line and serve print it.
        A field that is an option's placeholder (``TEXT``, ``TEXT #2``) is in ``lang`` as the usage line
        shows it (`qkv.explain.texts.metavar`: 텍스트, 텍스트 #2)."""
        return ": ".join([p for p in (self.source, self.field_in(lang)) if p] + [self.problem_in(lang)])

    def field_in(self, lang: str = "en") -> str | None:
        """The field as `say` names it in ``lang``: an option's placeholder in that language, else as it is."""
        if not self.field or lang == "en":
            return self.field
        from .explain import texts

        if lang not in texts.LANGS or not texts.is_placeholder(self.field):
            return self.field
        return texts.metavar(lang, self.field)

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
