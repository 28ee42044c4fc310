"""The one error type for bad user input (files, fields, command-line arguments)."""

from __future__ import annotations

__all__ = ["InputError"]


class InputError(ValueError):
    """Bad input a user can fix. The message names the source (file), the field and the problem.

    The command line prints it as one line and exits with status 2.
    """

    def __init__(self, problem: str, *, source: str | None = None, field: str | None = None):
        self.problem, self.source, self.field = problem, source, field
        parts = [p for p in (source, field) if p]
        super().__init__(": ".join(parts + [problem]))
