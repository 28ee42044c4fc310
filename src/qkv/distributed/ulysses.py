"""Ulysses attention (DeepSpeed-Ulysses): trade sequence shards for head shards, attend, trade back.

Each of P ranks holds T/P tokens of every head. One all-to-all gives each rank every token of
H/P heads; attention then runs locally over the whole sequence (`qkv.attention`, one
implementation of the math), and a second all-to-all returns the rows to their owners:

    (B, H, T/P, D)  --all-to-all-->  (B, H/P, T, D)  --attention-->  (B, H/P, T, Dv)
                    --all-to-all-->  (B, H, T/P, Dv)

Each all-to-all sends (P−1)/P of a rank's tensor, independent of the ring's step count; but H must
be divisible by P (the heads are what is split). With GQA the G key/value heads are split the same
way when G % P == 0, otherwise they are first repeated to H heads. Gradients flow back through the
same all-to-alls in the opposite direction.
"""

from __future__ import annotations

import functools

from ..attention import attention
from .agree import agree, header
from .launch import DistributedError, _first_line
from .layout import LAYOUTS, check_layout, positions
from .ring import RingStats

__all__ = ["ulysses_attention"]


def ulysses_attention(q, k, v, *, group=None, causal: bool = False, layout: str = "contiguous",
                      scale: float | None = None, stats: RingStats | None = None):
    """Exact attention for this rank's sequence shard, computed head-parallel.

    Args:
      q: (B, H, T/P, Dk), k: (B, G, T/P, Dk), v: (B, G, T/P, Dv) this rank's shard (torch), H % P == 0,
        H % G == 0.
      group: as in `ring_attention`.
      causal: as in `ring_attention`.
      scale: as in `ring_attention`.
      layout: how the sequence was sharded ("contiguous" or "zigzag"; see `qkv.distributed.shard`),
        so that causal positions are right.
      stats: a `RingStats`; bytes_sent counts what this rank sends in the all-to-alls (its own
        slice, which stays local, is not counted).

    Returns out (B, H, T/P, Dv), this rank's rows, differentiable.
    Raises ValueError when H is not divisible by P (use ring_attention then).
    """
    import torch
    import torch.distributed as dist

    check_layout(layout)
    if not dist.is_initialized():
        raise DistributedError("ulysses_attention needs an initialised torch.distributed process group")
    world = dist.get_world_size(group)
    refused = None
    try:
        scale = _check_local(q, k, v, world, layout, causal, scale)
    except (TypeError, ValueError) as exc:
        refused = exc
    # Every rank called alike, or the same ValueError on every rank (an all-to-all between shards of
    # other sizes or dtypes aborts the process inside gloo).
    agree("ulysses_attention", header(q, k, v, causal=causal, layout=layout, scale=scale, layouts=LAYOUTS), group,
          refused=refused, layouts=LAYOUTS)
    heads, kv_heads, length = q.shape[1], k.shape[1], q.shape[2]
    if kv_heads % world:  # too few key/value heads to split: give every query head its own copy
        k, v = (t.repeat_interleave(heads // kv_heads, dim=1) for t in (k, v))
    stats = stats if stats is not None else RingStats()
    exchange = _all_to_all().apply
    qh, kh, vh = (exchange(t, group, "to_heads", stats) for t in (q, k, v))  # (B, ·/P, T, D)
    order = None
    if causal and layout == "zigzag":  # the gathered rows are in rank order: put them in token order
        seq_len = length * world
        gathered = torch.as_tensor(
            [int(p) for r in range(world) for p in positions(r, world, seq_len, layout)], device=q.device)
        order = torch.argsort(gathered)  # natural position t is gathered row order[t]
        qh, kh, vh = (t.index_select(-2, order) for t in (qh, kh, vh))
    out = attention(qh, kh, vh, causal=causal, scale=scale)  # (B, H/P, T, Dv)
    if order is not None:
        out = out.index_select(-2, torch.argsort(order))
    return exchange(out, group, "to_sequence", stats)


def _check_local(q, k, v, world: int, layout: str, causal, scale) -> float:
    """The checks one rank can make alone (ring_attention's, and H % P == 0); returns the scale."""
    from .ring import _check_local as ring_checks

    scale = ring_checks(q, k, v, "contiguous", causal, scale)   # zigzag's even T/P is the ring's need only
    heads = q.shape[1]
    if heads % world:
        raise ValueError(f"ulysses_attention splits the {heads} query heads across {world} ranks, so H must be "
                         f"divisible by P; H={heads}, P={world} (use ring_attention, which has no such limit)")
    return scale


@functools.lru_cache(maxsize=1)
def _all_to_all():
    import torch

    class AllToAll(torch.autograd.Function):
        """to_heads: (B, n, T/P, D) → (B, n/P, T, D); to_sequence: the inverse. Backward: the other one."""

        @staticmethod
        def forward(ctx, x, group, direction, stats):
            ctx.group, ctx.direction, ctx.stats = group, direction, stats
            return _exchange(x, group, direction, stats)

        @staticmethod
        def backward(ctx, grad):
            back = "to_sequence" if ctx.direction == "to_heads" else "to_heads"
            return _exchange(grad.contiguous(), ctx.group, back, ctx.stats), None, None, None

    return AllToAll


def _exchange(x, group, direction: str, stats: RingStats):
    import torch
    import torch.distributed as dist

    world, rank = dist.get_world_size(group), dist.get_rank(group)
    batch, n, length, width = x.shape
    if direction == "to_heads":  # slot j: my tokens of head group j, for rank j
        send = x.reshape(batch, world, n // world, length, width).transpose(0, 1).contiguous()
    else:  # x is (B, n, T, D) with T = P·(T/P): slot j: tokens of rank j, my heads
        send = x.reshape(batch, n, world, length // world, width).permute(2, 0, 1, 3, 4).contiguous()
    receive = torch.empty_like(send)
    try:
        dist.all_to_all_single(receive, send, group=group)
    except Exception as exc:
        raise DistributedError(f"ulysses attention, rank {rank} of {world}: the all-to-all failed — a rank died, "
                               f"hung or left the group ({_first_line(exc)})") from None
    stats.bytes_sent += send.numel() * send.element_size() * (world - 1) // world
    stats.messages += world - 1
    if direction == "to_heads":  # slot i: rank i's tokens of my head group → token order
        return receive.permute(1, 2, 0, 3, 4).reshape(batch, n // world, world * length, width)
    return receive.permute(1, 0, 2, 3, 4).reshape(batch, n * world, length // world, width)
