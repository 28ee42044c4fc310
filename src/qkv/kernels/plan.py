"""A route and its plan: the names of the routes (`RouteName`) and the `Route` the rulebook
(`kernels.route.choose_route`) returns and every executor reads. Nothing here decides anything; it
sits below the executors (`blocked`, `autograd`, `plain`) and the rulebook alike.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

from .call import Call

__all__ = ["RouteName", "Route", "batch_head", "EMPTY", "PLAIN", "PLAIN_C_SOFTMAX", "TORCH_SDPA", "TORCH_FLASH",
           "FLASH_MANY", "FLASH_ROWS", "PY_WALK", "NUMPY_WALK", "KERNEL"]


class RouteName(enum.Enum):
    EMPTY = "empty"
    PLAIN = "plain"
    PLAIN_C_SOFTMAX = "plain_c_softmax"
    TORCH_SDPA = "torch_sdpa"
    TORCH_FLASH = "torch_flash"
    FLASH_MANY = "flash_many"
    FLASH_ROWS = "flash_rows"
    PY_WALK = "py_walk"
    NUMPY_WALK = "numpy_walk"


EMPTY, PLAIN, PLAIN_C_SOFTMAX = RouteName.EMPTY, RouteName.PLAIN, RouteName.PLAIN_C_SOFTMAX
TORCH_SDPA, TORCH_FLASH = RouteName.TORCH_SDPA, RouteName.TORCH_FLASH
FLASH_MANY, FLASH_ROWS, PY_WALK, NUMPY_WALK = (RouteName.FLASH_MANY, RouteName.FLASH_ROWS, RouteName.PY_WALK,
                                               RouteName.NUMPY_WALK)
KERNEL = (FLASH_MANY, FLASH_ROWS, PY_WALK, NUMPY_WALK)
_LADDERS = (KERNEL, (PLAIN_C_SOFTMAX, PLAIN), (TORCH_FLASH, TORCH_SDPA, PLAIN))


@dataclass(frozen=True)
class Route:
    """A chosen route. name and reason always; the rest only for the kernel's routes (KERNEL).

    block_q, block_k: rows of q and of k per block. threads: worker threads (the caller counts).
    ranges: key ranges each (head, query block) task is split into (1: none; more: the ranges'
      Partials are merged with merge_partials). big: enough work for the pool and the BLAS limit.
    causal_in_c: PY_WALK masks the causal diagonal inside the C softmax pass (False: adds the
      0/−inf band first; the same bits, tests compare both).
    lead: the kernel's loop over (batch, head) pairs, (…, G, H/G) with grouped-query attention.
    tasks: (head, i0, i1, key block indices (ascending, none empty), key_end) per task; for
      FLASH_MANY only the first head's (every head has the same key blocks).
    kinds: head → (query blocks, key blocks) int8 block-kind map, for masks that declare kinds.
    v_top: max |v| (NaN or inf when some value is not finite); None when not looked at.
    score: FLASH_MANY / FLASH_ROWS with a score_mod: (kind, table (H, Tq + Tk − 1) or None, cap), how
      C computes it (`kernels.autograd.score_spec`: soft-cap, or a relative bias); None otherwise.
    tile, width: the C per-block choice, passed to every C call of the route: tile False keeps each
      block on the BLAS step (no AVX-512 register tiles, _tile.h); width the vector loops (16 AVX-512,
      8 AVX2+FMA, 1 scalar; 0: the widest the CPU has). The plan sets the hardware's best; tests
      replace them (dataclasses.replace, or execute.kernel_attention's tile=/width=) to run every loop.
    key_rows: a split call (`range_split`: several key ranges per row, or ranges by batch) and every
      TORCH_FLASH call under torch.compile: per batch b (one entry when the same for all), per range r,
      the (2, Tq) int64 key ranges [lo, hi) of one pass (torch tensors under torch.compile: constants
      of the graph); the passes' results are merged by their lse. () otherwise.
    band: a mask function that is a band of kv − q for this call's Tq, Tk: (lo, hi),
      lo <= kv − q <= hi (None on a side: unbounded). The mask's declared band (the catalogue's
      windows), or found from its analysed key ranges (each row one range clip(i + lo) … clip(i + hi)):
      a window written as a lambda then takes the catalogue's blocks, their edges as the C walk's
      limit/start (register tiles) instead of per-row ranges (the BLAS step). None otherwise.
    """

    name: RouteName
    reason: str
    block_q: int = 0
    block_k: int = 0
    threads: int = 1
    ranges: int = 1
    big: bool = False
    causal_in_c: bool = True
    lead: tuple = ()
    tasks: tuple = field(default=(), repr=False, compare=False)
    kinds: dict = field(default_factory=dict, repr=False, compare=False)
    v_top: float | None = None
    score: tuple | None = field(default=None, repr=False, compare=False)
    tile: bool = True
    width: int = 0
    key_rows: tuple = field(default=(), repr=False, compare=False)
    band: tuple | None = None

    @property
    def values_finite(self) -> bool:
        return self.v_top is None or bool(np.isfinite(self.v_top))


def batch_head(call: Call, head: tuple) -> tuple:
    """The flex_attention indices (b, h) of one (batch, head) pair of the kernel's loop."""
    if call.groups > 1:   # (…, G, H/G) → (…, H)
        head = head[:-2] + (head[-2] * call.groups + head[-1],)
    if not call.lead:
        return np.int64(0), np.int64(0)
    # the loop's lead may hold broadcast 1s where call.lead does not: index within call.lead
    head = tuple(min(i, n - 1) for i, n in zip(head, call.lead))
    b = np.ravel_multi_index(head[:-1], call.lead[:-1]) if len(head) > 1 else 0
    return np.int64(b), np.int64(head[-1])
