"""Attention over sequences split across processes (torch.distributed): ring attention and Ulysses.

    ring_attention(q, k, v, causal=True, layout="zigzag")   each rank: its shard (B, H, T/P, D)
    ulysses_attention(q, k, v, causal=True)                 all-to-all: sequence shards ↔ head shards
    shard(x, rank, P, layout=...) / unshard(shards, layout=...)   cut / reassemble a whole sequence
    init_from_env(timeout=...)    join under torchrun;   run_local(fn, P)   P local processes (gloo)
"""

from .launch import DistributedError, Interrupted, init_from_env, run_local
from .layout import LAYOUTS, causal_work, positions, shard, unshard
from .ring import RingStats, ring_attention
from .ulysses import ulysses_attention

__all__ = ["ring_attention", "ulysses_attention", "RingStats", "shard", "unshard", "positions", "causal_work", "LAYOUTS",
           "init_from_env", "run_local", "DistributedError", "Interrupted"]
