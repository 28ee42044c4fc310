"""One bounded insert for qkv's kept tables (checked calls, routes, plans, row and task tables,
score specs, mask analyses): plain dicts in insertion order, the oldest dropped first."""

from __future__ import annotations

import contextlib


def keep(table: dict, key, value, limit: int, lock=None) -> None:
    """table[key] = value, first dropping the oldest entries so that at most `limit` (≥ 1) are kept.
    lock: held around the drop and the insert when given (lookups need none; two threads dropping the
    oldest at once would each drop one)."""
    with lock if lock is not None else contextlib.nullcontext():
        while table and len(table) >= limit:
            table.pop(next(iter(table), None), None)
        table[key] = value
