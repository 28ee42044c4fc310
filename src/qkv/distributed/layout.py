"""Who holds which part of the sequence, and which key blocks each rank's queries may see.

A sequence of T tokens is cut into equal chunks along the token axis (dimension -2 of (B, H, T, D)):

    contiguous   P chunks of T/P; rank r holds chunk r.
    zigzag       2P chunks of T/(2P); rank r holds chunks r and 2P−1−r, concatenated.

P = 4, T = 16 (each letter is a token's owner)::

    contiguous   0000 1111 2222 3333
    zigzag       00 11 22 33 33 22 11 00

With causal attention query t sees keys ≤ t, so under `contiguous` rank P−1 has P times the work
of rank 0 (the triangle's last row of blocks against its first); under `zigzag` every rank pairs
an early chunk with a late one and does the same work (`causal_work`).

`block_plan` lists, for the key/value shard of rank `src` arriving at rank `rank`, the attention
calls to make: (query rows, key rows, causal) in local token indices. Keys wholly in a query
chunk's past are attended without a mask, keys wholly in its future are skipped, and the chunk's
own keys are causal. Calls are made so that a causal one always ends with the query chunk's own
keys, i.e. bottom-right aligned causality (qkv.attention's convention) is the right mask.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

__all__ = ["LAYOUTS", "Block", "chunks_of", "n_chunks", "positions", "shard", "unshard", "block_plan", "causal_work",
           "check_layout"]

LAYOUTS = ("zigzag", "contiguous")


class Block(NamedTuple):
    """One attention call of a ring step: q[..., q_start:q_stop, :] against k/v[..., k_start:k_stop, :]."""

    q_start: int
    q_stop: int
    k_start: int
    k_stop: int
    causal: bool  # bottom-right aligned: the last query row sees every key of the call

    @property
    def work(self) -> float:
        """Query·key pairs this call computes (a causal square counts half plus its diagonal)."""
        rows, cols = self.q_stop - self.q_start, self.k_stop - self.k_start
        if not self.causal:
            return float(rows * cols)
        return float(rows * (cols - rows) + rows * (rows + 1) / 2)


def check_layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(map(repr, LAYOUTS))}, got {layout!r}")
    return layout


def n_chunks(world: int, layout: str) -> int:
    """How many equal chunks the sequence is cut into: P (contiguous) or 2P (zigzag)."""
    return world if check_layout(layout) == "contiguous" else 2 * world


def chunks_of(rank: int, world: int, layout: str) -> tuple[int, ...]:
    """The chunk indices rank holds, in its local order: (r,) or (r, 2P−1−r)."""
    if not 0 <= rank < world:
        raise ValueError(f"rank must lie in 0 … {world - 1}, got {rank}")
    return (rank,) if check_layout(layout) == "contiguous" else (rank, 2 * world - 1 - rank)


def _chunk_length(seq_len: int, world: int, layout: str) -> int:
    parts = n_chunks(world, layout)
    if world < 1:
        raise ValueError(f"world size must be at least 1, got {world}")
    if seq_len % parts:
        how = "P" if layout == "contiguous" else "2·P"
        raise ValueError(
            f"sequence length T={seq_len} is not a multiple of {how} = {parts}: the {layout} layout cuts the "
            f"sequence into {parts} equal chunks for {world} ranks; pad it to {-(-seq_len // parts) * parts} "
            f"tokens (masking the padding) or choose another number of ranks")
    return seq_len // parts


def positions(rank: int, world: int, seq_len: int, layout: str) -> np.ndarray:
    """Global token positions (T/P,) of the rows rank holds, in local order."""
    length = _chunk_length(seq_len, world, layout)
    return np.concatenate([np.arange(c * length, (c + 1) * length) for c in chunks_of(rank, world, layout)])


def shard(x, rank: int, world: int, *, layout: str = "zigzag"):
    """Rank's part of a whole sequence x (…, T, D) → (…, T/P, D), in the layout's local order.

    Raises ValueError when T is not a multiple of the layout's chunk count (P or 2P).
    Works for NumPy arrays and torch tensors (a copy for zigzag, a view for contiguous).
    """
    seq_len = x.shape[-2]
    length = _chunk_length(seq_len, world, layout)
    pieces = [x[..., c * length:(c + 1) * length, :] for c in chunks_of(rank, world, layout)]
    return pieces[0] if len(pieces) == 1 else _concat(pieces)


def unshard(shards: Sequence, *, layout: str = "zigzag"):
    """The whole sequence (…, T, D) from every rank's shard (…, T/P, D), listed by rank."""
    world = len(shards)
    if world == 0:
        raise ValueError("unshard needs at least one shard")
    local = shards[0].shape[-2]
    per_rank = len(chunks_of(0, world, layout))
    if local % per_rank or any(s.shape != shards[0].shape for s in shards):
        raise ValueError(f"shards must share one shape with T/P divisible by {per_rank}; got "
                         f"{[tuple(s.shape) for s in shards]}")
    length = local // per_rank
    chunks = {}
    for rank, part in enumerate(shards):
        for i, c in enumerate(chunks_of(rank, world, layout)):
            chunks[c] = part[..., i * length:(i + 1) * length, :]
    return _concat([chunks[c] for c in range(n_chunks(world, layout))])


def _concat(pieces):
    if hasattr(pieces[0], "detach"):  # torch
        import torch

        return torch.cat(pieces, dim=-2)
    return np.concatenate(pieces, axis=-2)


def block_plan(rank: int, src: int, world: int, local_len: int, *, layout: str, causal: bool) -> list[Block]:
    """The attention calls rank makes with the key/value shard that rank src holds.

    local_len: tokens per rank (T/P). Returns Blocks in local indices; an empty list means src's
    keys are all in the future of rank's queries (causal, skipped).
    """
    q_chunks, k_chunks = chunks_of(rank, world, layout), chunks_of(src, world, layout)
    if local_len % len(q_chunks):
        raise ValueError(f"the zigzag layout needs an even number of tokens per rank, got {local_len}")
    length = local_len // len(q_chunks)
    if not causal:
        return [Block(0, local_len, 0, local_len, False)]
    calls: list[Block] = []
    for i, qc in enumerate(q_chunks):
        past = [j for j, kc in enumerate(k_chunks) if kc < qc]
        own = [j for j, kc in enumerate(k_chunks) if kc == qc]
        keys = past + own  # own chunk last: bottom-right causality is then the right mask
        if not keys:
            continue
        q_rows = (i * length, (i + 1) * length)
        runs = _runs(keys)
        for n, (first, last) in enumerate(runs):
            is_causal = bool(own) and n == len(runs) - 1
            calls.append(Block(*q_rows, first * length, (last + 1) * length, is_causal))
    return _join_rows(calls)


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """[0, 1, 3] → [(0, 1), (3, 3)]: consecutive local chunks become one key slice."""
    runs: list[tuple[int, int]] = []
    for j in indices:
        if runs and runs[-1][1] == j - 1:
            runs[-1] = (runs[-1][0], j)
        else:
            runs.append((j, j))
    return runs


def _join_rows(calls: list[Block]) -> list[Block]:
    """Adjacent query chunks that make the same unmasked call become one call."""
    joined: list[Block] = []
    for call in calls:
        prev = joined[-1] if joined else None
        if (prev is not None and not prev.causal and not call.causal and prev.q_stop == call.q_start
                and (prev.k_start, prev.k_stop) == (call.k_start, call.k_stop)):
            joined[-1] = prev._replace(q_stop=call.q_stop)
        else:
            joined.append(call)
    return joined


def causal_work(world: int, seq_len: int, *, layout: str, causal: bool = True) -> np.ndarray:
    """Query·key pairs each rank computes over a whole ring pass, (P,) — what balance means here."""
    local = seq_len // world
    _chunk_length(seq_len, world, layout)
    return np.array([sum(b.work for src in range(world)
                         for b in block_plan(rank, src, world, local, layout=layout, causal=causal))
                     for rank in range(world)])
