"""Before any shard moves: every rank shows the others what it was called with, and all agree or all refuse.

A ring exchange or an all-to-all between ranks whose shards differ in dtype or head count does not
fail cleanly: gloo aborts the process (SIGABRT, "size mismatch") or a rank waits until the timeout.
So `agree` runs first, one all_gather of a small header per rank:

    ok, B, H, T/P, Dk, G, Dv, dtype, causal, layout, scale

(``ok`` = 0 when this rank's own inputs were refused by its local checks, so the others learn it at
once instead of waiting for a rank that will never send.) Every rank receives every header and
compares them the same way, so every rank raises the same ValueError naming each field that
differs and its value on each rank — or none does.
"""

from __future__ import annotations

import struct

from .launch import DistributedError, _first_line

__all__ = ["agree"]

FIELDS = ("batch", "heads", "tokens", "dk", "kv_heads", "dv", "dtype", "causal", "layout", "scale")
_LABELS = {"batch": "B", "heads": "H (query heads)", "tokens": "T/P (tokens)", "dk": "Dk", "kv_heads": "G (key/value heads)",
           "dv": "Dv", "dtype": "dtype", "causal": "causal", "layout": "layout", "scale": "scale"}
_DTYPES = ("float16", "bfloat16", "float32", "float64")


def header(q, k, v, *, causal, layout: str, scale, layouts) -> list[int]:
    """This rank's header as integers (see the module docstring); fields it cannot read are −1."""
    def dims(t, n):
        shape = tuple(getattr(t, "shape", ()))
        return [int(shape[i]) if len(shape) == 4 else -1 for i in n]

    batch, heads, tokens, dk = dims(q, range(4))
    kv_heads = dims(k, [1])[0]
    dv = dims(v, [3])[0]
    dtype = str(getattr(q, "dtype", "")).replace("torch.", "")
    scale_bits = -1 if scale is None else struct.unpack("<q", struct.pack("<d", float(scale)))[0]
    return [batch, heads, tokens, dk, kv_heads, dv, _DTYPES.index(dtype) if dtype in _DTYPES else -1,
            int(bool(causal)) if isinstance(causal, bool) else -1,
            layouts.index(layout) if layout in layouts else -1, scale_bits]


def agree(what: str, mine: list[int], group, *, refused: BaseException | None = None, layouts=()) -> None:
    """all_gather every rank's header; raise on every rank if any rank refused its inputs or any field differs.

    what: the function's name for messages ("ring_attention"). mine: `header(...)` of this rank.
    refused: this rank's own local error (raised here, after the others have been told).
    Raises ValueError (the same text on every rank) naming the differing fields rank by rank;
    DistributedError when the exchange itself fails (a rank died or never called).
    """
    import torch
    import torch.distributed as dist

    rank, world = dist.get_rank(group), dist.get_world_size(group)
    row = torch.tensor([0 if refused is not None else 1] + list(mine), dtype=torch.int64)
    if dist.get_backend(group) == "nccl":
        row = row.cuda()
    every = [torch.empty_like(row) for _ in range(world)]
    try:
        dist.all_gather(every, row, group=group)
    except Exception as exc:
        raise DistributedError(f"{what}, rank {rank} of {world}: comparing the ranks' inputs failed — a rank died, "
                               f"hung or never called {what} ({_first_line(exc)})") from None
    rows = [[int(x) for x in t.tolist()] for t in every]
    if refused is not None:
        raise refused
    bad = [r for r, row_r in enumerate(rows) if row_r[0] == 0]
    if bad:
        raise ValueError(f"{what}: rank{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad))} refused "
                         f"{'their' if len(bad) > 1 else 'its'} inputs (the error is raised there); every rank stops")
    differing = [i for i, name in enumerate(FIELDS) if len({row_r[i + 1] for row_r in rows}) > 1]
    if differing:
        parts = []
        for i in differing:
            values = ", ".join(f"rank {r}: {_show(FIELDS[i], row_r[i + 1], layouts)}" for r, row_r in enumerate(rows))
            parts.append(f"{_LABELS[FIELDS[i]]} ({values})")
        raise ValueError(f"{what}: every rank must be called alike (shards of one shape and dtype, the same causal, "
                         f"layout and scale); the ranks differ in " + "; ".join(parts))


def _show(field: str, value: int, layouts) -> str:
    if value == -1:
        return "unreadable" if field != "scale" else "default"
    if field == "dtype":
        return _DTYPES[value]
    if field == "causal":
        return str(bool(value))
    if field == "layout":
        return repr(layouts[value])
    if field == "scale":
        return f"{struct.unpack('<d', struct.pack('<q', value))[0]:.6g}"
    return str(value)
