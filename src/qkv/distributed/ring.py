"""Ring attention: each rank keeps its queries; key/value shards travel round the ring.

P ranks each hold T/P tokens of q (B, H, T/P, Dk), k (B, G, T/P, Dk) and v (B, G, T/P, Dv), in
the layout of `qkv.distributed.layout` (zigzag or contiguous). Step s = 0 … P−1 on rank r:

    1. start sending the k/v shard in hand to rank r+1 and receiving the next from rank r−1
       (non-blocking point-to-point, so the transfer runs while 2. computes);
    2. attend r's queries to the shard of rank src = r − s: `qkv.attention(…, return_lse=True)`
       per block of `layout.block_plan` (keys in the past: no mask; own chunk: causal; future:
       skipped), and merge the block into the running result through the log-sum-exp:

           lse = log(exp(lse_acc) + exp(lse_blk))
           out = exp(lse_acc − lse)·out_acc + exp(lse_blk − lse)·out_blk

       (`qkv.kernels.merge.merge_lse_into`, in place on the rows' views of the running result:
       the merge of `qkv.kernels.merge` with each normalised block as a Partial whose reference
       is its lse and whose sum is 1);
    3. wait for the next shard.

The result is exact: the merge is the online softmax's identity, not an approximation.

Backward (`_ring_function().backward`), FlashAttention's with the global lse and
δ_i = Σ_d dO_id·O_id: for each block P = exp(s − lse), dV += Pᵀ·dO, dS = P∘(dO·Vᵀ − δ),
dQ += scale·dS·K, dK += scale·dSᵀ·Q. k/v travel round the ring again, and each shard's dK/dV
accumulator travels one step behind it, collecting every rank's contribution; after P steps it
arrives home. Bytes sent per rank (itemsize b): forward (P−1)·B·G·T/P·(Dk+Dv)·b; backward
(2P−1)·B·G·T/P·(Dk+Dv)·b (k/v P−1 times, dK/dV P times).

Blocks are processed in square tiles (`_tiles`) so that no (T/P)×(T/P) score matrix is formed:
a rank's memory grows as T/P. On CPU float32 (float16/bfloat16) with the C extensions built, each
block goes whole through qkv's C kernel instead (forward: the TORCH_FLASH route of qkv.attention;
backward: `qkv.kernels.autograd.block_backward`, the C backward with the global lse and δ), which
blocks and skips internally with the same O(T/P) memory.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

from ..attention import attention
from ..kernels.merge import merge_lse_into
from .launch import DistributedError, _first_line
from .layout import Block, block_plan, check_layout

__all__ = ["ring_attention", "RingStats"]

# Scores per tile (B·H·rows·keys): the largest score matrix a rank forms at once, and the
# smallest tile side (many heads: tiles stay large enough to keep per-call overhead small).
_TILE_SCORES = 1 << 18
_MIN_SIDE = 32


@dataclass
class RingStats:
    """What one rank did in ring_attention calls (forward and backward add to the same object).

    bytes_sent: bytes this rank handed to point-to-point sends.  messages: how many sends.
    compute_s: CPU seconds of this thread in block attention and merging (not inflated by other
      processes sharing the cores; with one torch thread per rank it is the rank's compute).
    wait_s: wall seconds spent waiting for a shard after the compute was done (exposed transfer).
    pairs: query·key pairs computed (the causal work).  steps: ring steps taken.
    """

    bytes_sent: int = 0
    messages: int = 0
    compute_s: float = 0.0
    wait_s: float = 0.0
    pairs: float = 0.0
    steps: int = 0


def ring_attention(q, k, v, *, group=None, causal: bool = False, layout: str = "zigzag", scale: float | None = None,
                   stats: RingStats | None = None):
    """Exact attention of this rank's queries over every rank's keys and values.

    Args:
      q: (B, H, T/P, Dk) this rank's shard of the queries (torch tensor; gloo: CPU, nccl: CUDA).
      k: (B, G, T/P, Dk), v: (B, G, T/P, Dv) its shard of keys and values; H % G == 0 (GQA).
      group: the torch.distributed group (default: the whole world). Every rank of it calls
        ring_attention with equally shaped shards.
      causal: token t sees tokens ≤ t, positions taken from the layout.
      layout: "zigzag" (rank r holds chunks r and 2P−1−r of 2P: equal causal work on every rank)
        or "contiguous" (chunk r of P). See `qkv.distributed.shard`.
      scale: multiplies q·kᵀ; default 1/√Dk.
      stats: a `RingStats` to add this rank's bytes, compute time and work to.

    Returns:
      out (B, H, T/P, Dv): this rank's rows of attention over the whole sequence, in q's layout.
      Differentiable (a torch.autograd.Function): gradients flow to q, k and v of every rank.

    Raises DistributedError when a rank dies, hangs or never joins (after the group's timeout),
    ValueError when shards differ between ranks or do not fit the layout.
    """
    import torch.distributed as dist

    check_layout(layout)
    if not dist.is_initialized():
        raise DistributedError("ring_attention needs an initialised torch.distributed process group "
                               "(torchrun + qkv.distributed.init_from_env, or qkv.distributed.run_local)")
    ring = _Ring(group)
    scale = _check_shards(q, k, v, ring, layout, causal, scale)
    return _ring_function().apply(q, k, v, ring, layout, causal, scale, stats if stats is not None else RingStats())


# --------------------------------------------------------------------------- autograd
@functools.lru_cache(maxsize=1)
def _ring_function():
    """The torch.autograd.Function (built on first use: importing qkv.distributed needs no torch)."""
    import torch

    class RingAttentionFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, ring, layout, causal, scale, stats):
            out, lse = _forward(q, k, v, ring, layout, causal, scale, stats)
            ctx.save_for_backward(q, k, v, out, lse)
            ctx.ring, ctx.layout, ctx.causal, ctx.scale, ctx.stats = ring, layout, causal, scale, stats
            return out

        @staticmethod
        def backward(ctx, d_out):
            q, k, v, out, lse = ctx.saved_tensors
            dq, dk, dv = _backward(q, k, v, out, lse, d_out, ctx.ring, ctx.layout, ctx.causal, ctx.scale, ctx.stats)
            return dq, dk, dv, None, None, None, None, None

    return RingAttentionFunction


# --------------------------------------------------------------------------- forward
def _forward(q, k, v, ring: "_Ring", layout: str, causal: bool, scale: float, stats: RingStats):
    """(out (B, H, T/P, Dv) in q's dtype, lse (B, H, T/P) in the compute dtype)."""
    import torch

    work = torch.float64 if q.dtype == torch.float64 else torch.float32
    out = torch.zeros(q.shape[:-1] + (v.shape[-1],), dtype=work, device=q.device)
    lse = torch.full(q.shape[:-1], -float("inf"), dtype=work, device=q.device)
    shard = (k.detach().contiguous(), v.detach().contiguous())
    q = q.detach()
    for step in range(ring.world):
        src = (ring.rank - step) % ring.world
        pending = ring.start(shard, tag=0, step=step, stats=stats) if step < ring.world - 1 else None
        started = time.thread_time()
        for block in _pieces(block_plan(ring.rank, src, ring.world, q.shape[-2], layout=layout, causal=causal), q):
            rows, keys = slice(block.q_start, block.q_stop), slice(block.k_start, block.k_stop)
            block_out, block_lse = attention(q[..., rows, :], shard[0][..., keys, :], shard[1][..., keys, :],
                                             causal=block.causal, scale=scale, return_lse=True)
            merge_lse_into(out[..., rows, :], lse[..., rows], block_out.to(work), block_lse.to(work))
            stats.pairs += block.work * q.shape[0] * q.shape[1]
        stats.compute_s += time.thread_time() - started
        stats.steps += 1
        if pending is not None:
            shard = pending.wait(stats)
    return out.to(q.dtype), lse


def _c_kernel(q) -> bool:
    """Whether float32 blocks go whole through qkv's C kernel, forward and backward (the TORCH_FLASH
    route's kernels/autograd.py): CPU float32/16/bf16, the C extensions built."""
    import torch

    from ..kernels import autograd

    return q.device.type == "cpu" and q.dtype != torch.float64 and autograd.available()


def _pieces(blocks: list[Block], q) -> list[Block]:
    """The blocks as they are for the C kernel (it blocks and skips internally, memory O(T·D)), else
    cut into tiles for the torch block backward (`_tiles`)."""
    return blocks if _c_kernel(q) else _tiles(blocks, q)


def _tiles(blocks: list[Block], q) -> list[Block]:
    """The blocks cut into square-ish tiles of at most about _TILE_SCORES scores (B·H·side²).

    Square tiles make every rank's cost the same for the same query·key pairs, whatever its
    blocks' shapes: each tile's extra work (merging its rows, accumulating dq over its rows and
    dk/dv over its keys) is proportional to its side, and a (c × 2c) block and a (2c × c) block
    give the same tiles. A causal block (bottom-right aligned, keys ≥ rows) gives, per row tile
    [a, b), unmasked tiles of the keys every row of it sees, then one square causal tile (its
    own diagonal); keys past it are in the future of the whole tile and are skipped.
    """
    heads = q.shape[0] * q.shape[1]
    side = max(_MIN_SIDE, int((_TILE_SCORES // max(1, heads)) ** 0.5))
    tiles = []
    for block in blocks:
        offset = (block.k_stop - block.k_start) - (block.q_stop - block.q_start)
        assert offset >= 0 or not block.causal, "block_plan puts a causal block's own keys last"
        for start in range(block.q_start, block.q_stop, side):
            stop = min(start + side, block.q_stop)
            seen = block.k_start + (start - block.q_start) + offset if block.causal else block.k_stop
            for k_start in range(block.k_start, seen, side):
                tiles.append(Block(start, stop, k_start, min(k_start + side, seen), False))
            if block.causal:  # row start + i sees key seen + j when j ≤ i: a square lower triangle
                tiles.append(Block(start, stop, seen, seen + (stop - start), True))
    return tiles


# --------------------------------------------------------------------------- backward
def _backward(q, k, v, out, lse, d_out, ring: "_Ring", layout: str, causal: bool, scale: float, stats: RingStats):
    import torch

    work = lse.dtype
    q, d_out = q.detach().to(work), d_out.to(work)
    delta = (d_out * out.to(work)).sum(-1)  # δ_i = Σ_d dO_id·O_id, (B, H, T/P)
    dq = torch.zeros_like(q)
    shard = (k.detach().contiguous(), v.detach().contiguous())
    grads_in_flight = None
    for step in range(ring.world):
        src = (ring.rank - step) % ring.world
        pending = ring.start(shard, tag=0, step=step, stats=stats) if step < ring.world - 1 else None
        started = time.thread_time()
        dk_part = torch.zeros(shard[0].shape, dtype=work, device=q.device)
        dv_part = torch.zeros(shard[1].shape, dtype=work, device=q.device)
        for block in _pieces(block_plan(ring.rank, src, ring.world, q.shape[-2], layout=layout, causal=causal), q):
            rows, keys = slice(block.q_start, block.q_stop), slice(block.k_start, block.k_stop)
            dq_t, dk_t, dv_t = _block_backward(q[..., rows, :], shard[0][..., keys, :].to(work),
                                               shard[1][..., keys, :].to(work), d_out[..., rows, :],
                                               lse[..., rows], delta[..., rows], block.causal, scale)
            dq[..., rows, :] += dq_t
            dk_part[..., keys, :] += dk_t
            dv_part[..., keys, :] += dv_t
        stats.compute_s += time.thread_time() - started
        if grads_in_flight is not None:  # the other ranks' sums for this same shard, one step behind it
            dk_in, dv_in = grads_in_flight.wait(stats)
            dk_part += dk_in
            dv_part += dv_in
        if ring.world == 1:  # alone: the sums are complete and already home
            dk, dv = dk_part, dv_part
        else:
            grads_in_flight = ring.start((dk_part, dv_part), tag=1, step=step, stats=stats)
        stats.steps += 1
        if pending is not None:
            shard = pending.wait(stats)
    if grads_in_flight is not None:  # after P steps the sums for this rank's own shard arrive
        dk, dv = grads_in_flight.wait(stats)
    return dq.to(q.dtype if q.dtype == d_out.dtype else d_out.dtype), dk.to(k.dtype), dv.to(v.dtype)


def _block_backward(q, k, v, d_out, lse, delta, causal: bool, scale: float):
    """Gradients of one block (FlashAttention's backward with the global lse).

    q, d_out (B, H, t, ·); k, v (B, G, K, ·); lse, delta (B, H, t). Returns dq (B, H, t, Dk),
    dk (B, G, K, Dk), dv (B, G, K, Dv), this block's contributions.
    """
    import torch

    if q.dtype == torch.float32 and _c_kernel(q):   # the C backward (kernels/_backward.c), no score matrix
        from ..kernels import autograd

        return autograd.block_backward(q, k, v, d_out, lse, delta, causal=causal, scale=scale)
    batch, heads, rows, _ = q.shape
    kv_heads, keys = k.shape[1], k.shape[2]
    groups = heads // kv_heads
    qg = q.reshape(batch, kv_heads, groups, rows, -1)              # (B, G, H/G, t, Dk)
    dog = d_out.reshape(batch, kv_heads, groups, rows, -1)         # (B, G, H/G, t, Dv)
    kg, vg = k.unsqueeze(2), v.unsqueeze(2)                         # (B, G, 1, K, D)
    lse_g = lse.reshape(batch, kv_heads, groups, rows, 1)
    lse_g = torch.where(torch.isneginf(lse_g), torch.full_like(lse_g, float("inf")), lse_g)  # empty row → p = 0
    p = torch.exp(qg @ kg.transpose(-1, -2) * scale - lse_g)      # (B, G, H/G, t, K) the weights
    if causal:  # bottom-right: row i sees key j ≤ i + (K − t)
        allowed = torch.ones(rows, keys, dtype=torch.bool, device=q.device).tril(keys - rows)
        p = p * allowed
    dv = (p.transpose(-1, -2) @ dog).sum(2)                         # (B, G, K, Dv)
    ds = p * (dog @ vg.transpose(-1, -2) - delta.reshape(batch, kv_heads, groups, rows, 1))
    dq = (ds @ kg).reshape(batch, heads, rows, -1) * scale          # (B, H, t, Dk)
    dk = (ds.transpose(-1, -2) @ qg).sum(2) * scale                 # (B, G, K, Dk)
    return dq, dk, dv


# --------------------------------------------------------------------------- communication
class _Ring:
    """This rank's place in the ring: neighbours, and non-blocking exchanges with them."""

    def __init__(self, group):
        import torch.distributed as dist

        self.group = group
        self.rank = dist.get_rank(group)
        self.world = dist.get_world_size(group)
        self.next, self.prev = (self.rank + 1) % self.world, (self.rank - 1) % self.world

    def start(self, tensors, *, tag: int, step: int, stats: RingStats) -> "_Exchange":
        """Send tensors to the next rank and receive same-shaped ones from the previous, non-blocking."""
        import torch.distributed as dist

        sends = [t.contiguous() for t in tensors]
        receives = [torch_empty_like(t) for t in sends]
        ops = []
        for i, (send, receive) in enumerate(zip(sends, receives)):
            ops.append(dist.P2POp(dist.isend, send, group=self.group, group_peer=self.next, tag=2 * i + tag * 16))
            ops.append(dist.P2POp(dist.irecv, receive, group=self.group, group_peer=self.prev, tag=2 * i + tag * 16))
        try:
            works = dist.batch_isend_irecv(ops)
        except Exception as exc:
            raise self._failure(step, exc) from None
        stats.bytes_sent += sum(t.numel() * t.element_size() for t in sends)
        stats.messages += len(sends)
        return _Exchange(self, works, receives, step)

    def _failure(self, step: int, exc: BaseException) -> DistributedError:
        return DistributedError(
            f"ring attention, rank {self.rank} of {self.world}, step {step}: the exchange with rank {self.prev} "
            f"(receive) / {self.next} (send) failed — a rank died, hung or left the group ({_first_line(exc)})")


def torch_empty_like(t):
    import torch

    return torch.empty_like(t, memory_format=torch.contiguous_format)


class _Exchange:
    def __init__(self, ring: _Ring, works, receives, step: int):
        self.ring, self.works, self.receives, self.step = ring, works, receives, step

    def wait(self, stats: RingStats):
        started = time.perf_counter()
        try:
            for work in self.works:
                work.wait()
        except Exception as exc:
            raise self.ring._failure(self.step, exc) from None
        stats.wait_s += time.perf_counter() - started
        return tuple(self.receives)


def _check_shards(q, k, v, ring: _Ring, layout: str, causal, scale) -> float:
    """This rank's shards are well formed, and every rank was called alike (`agree`: one small
    all_gather of shape, dtype, causal, layout and scale); else the same ValueError on every rank.
    Returns the scale (default 1/√Dk)."""
    from .agree import agree, header
    from .layout import LAYOUTS

    refused = None
    try:
        scale = _check_local(q, k, v, layout, causal, scale)
    except (TypeError, ValueError) as exc:
        refused = exc
    agree("ring_attention", header(q, k, v, causal=causal, layout=layout, scale=scale, layouts=LAYOUTS), ring.group,
          refused=refused, layouts=LAYOUTS)
    return scale


def _check_local(q, k, v, layout: str, causal, scale) -> float:
    """The checks one rank can make alone; returns the scale (default 1/√Dk)."""
    import math

    import torch

    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch tensor, got {type(t).__name__}")
        if t.ndim != 4:
            raise ValueError(f"{name} must be (B, heads, T/P, D), got shape {tuple(t.shape)}")
    if not (q.dtype == k.dtype == v.dtype) or not q.is_floating_point():
        raise TypeError(f"q, k and v must share one floating dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    batch, heads, length, dk = q.shape
    if k.shape[0] != batch or k.shape[2] != length or k.shape[3] != dk or v.shape[:3] != k.shape[:3]:
        raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} must be (B={batch}, G, T/P={length}, D) "
                         f"with k's width {dk} (q is {tuple(q.shape)})")
    if heads % k.shape[1]:
        raise ValueError(f"q has {heads} heads but k has {k.shape[1]}; grouped-query attention needs H % G == 0")
    if layout == "zigzag" and length % 2:
        raise ValueError(f"the zigzag layout holds two equal chunks per rank, so T/P must be even; got {length} "
                         "tokens on this rank (pad the sequence to a multiple of 2·P)")
    if scale is None:
        return 1.0 / dk ** 0.5
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
        raise ValueError(f"scale must be a finite real number, got {scale!r}")
    return float(scale)

