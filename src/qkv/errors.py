"""The one error type for bad user input (files, fields, command-line arguments)."""

from __future__ import annotations

__all__ = ["InputError", "plural"]


def plural(n: int, one: str, many: str | None = None) -> str:
    """A count with its noun, for messages: ``plural(1, "query", "queries")`` → "1 query", 2 → "2 queries"
    (``many`` defaults to ``one + "s"``), never a parenthesised plural."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


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
        every other language through `say`): one copy of each sentence, in the tables."""
        from .explain import texts

        return cls(texts.text("en", key, **values), source=source, field=field, key=key, values=values)

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
        values = {**self.values, **self.values.get("by_lang", {}).get(lang, {})}
        return texts.text(lang, self.key, **values)
