"""torch's flex_attention on qkv's attention: the same signatures, with a backward on the CPU.

    from qkv.torch import flex_attention, create_block_mask   # instead of torch.nn.attention.flex_attention

torch 2.13's `flex_attention` has no backward on the CPU; this one is a thin adapter onto
`qkv.attention` (the one entry point, its routes, kernels and backward), so a training script swaps
one import. What each part is:

- `create_block_mask`, `and_masks`, `or_masks`, `noop_mask` and `BlockMask` are torch's own
  (`create_block_mask` only defaults `device` to "cpu"): a BlockMask is torch's object, so code that
  inspects one (`to_dense`, `sparsity`, slicing, `_adjust`) keeps working.
- `flex_attention` checks its arguments as torch does (torch's own validators and words), turns the
  BlockMask into the boolean mask it means — a key is seen where its block is full, or partial and
  mask_mod allows it (torch's rule) — and calls `qkv.attention(query, key, value, mask,
  score_mod=…, scale=…, return_lse=True)`. mask_mod and score_mod are evaluated as torch evaluates
  them: at every (b, h, q_idx, kv_idx) as 0-d tensors under torch.vmap (`qkv.masks.elementwise`),
  so `bias[q_idx][kv_idx]`, `table[h]`, `(q - kv).abs()` mean what they mean in torch.
- The boolean mask of a BlockMask is kept per (BlockMask, batch, heads, lengths, device) in a
  WeakKeyDictionary (`_PLANS`), with the in-place versions of the tensors its mask_mod reads (closure
  cells, globals, torch's and_masks/or_masks parts) and of its block tables; a call after one of them
  changed raises ValueError (build the BlockMask again) instead of using a stale mask. Under
  torch.compile nothing is kept: the mask is computed in the graph.

qkv then chooses the route as for any call: a mask whose rows each see one run of keys, the same for
every head (causal, windows, prefix-LM, documents), runs the C flash kernel forward and backward on
float32 CPU tensors; other masks and every score_mod run the plain path under torch autograd.
Differences from torch: `kernel_options` (Triton tuning) are accepted and not used;
`return_aux=AuxRequest(max_scores=True)` is refused; `return_lse` gives no deprecation warning.
"""

from __future__ import annotations

import math
import weakref

import torch
from torch.nn.attention import flex_attention as _torch_flex
from torch.nn.attention.flex_attention import BlockMask, and_masks, noop_mask, or_masks

from ..attention import attention
from ..masks import MaskMod, captured_tensors, elementwise, key_range_mask, mask_ranges

__all__ = ["flex_attention", "create_block_mask", "and_masks", "or_masks", "noop_mask", "BlockMask"]

_PLANS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # BlockMask -> {shape key: _Plan}


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device="cpu", BLOCK_SIZE=128, _compile=False,
                      separate_full_blocks=True, compute_dq_write_order=False, dq_kv_order=True) -> BlockMask:
    """torch's `create_block_mask` (its BlockMask, its checks), with `device` defaulting to the CPU.

    Args:
        mask_mod: mask_mod(b, h, q_idx, kv_idx) -> bool tensor, True = may attend.
        B: batch size (None: 1, the same mask for every batch).
        H: number of query heads (None: 1).
        Q_LEN: query length.
        KV_LEN: key/value length.
        device: where the block tables live; "cpu" unless given.
        BLOCK_SIZE: block size, an int or (query block, key block).
        _compile: torch's deprecated flag (torch.compile(create_block_mask) instead).
        separate_full_blocks: keep fully allowed blocks apart (torch's meaning).
        compute_dq_write_order: torch's deterministic-backward metadata.
        dq_kv_order: torch's scheduler order for that metadata.

    Returns:
        torch.nn.attention.flex_attention.BlockMask.
    """
    _check_sizes(B=B, H=H, Q_LEN=Q_LEN, KV_LEN=KV_LEN, BLOCK_SIZE=BLOCK_SIZE)
    return _torch_flex.create_block_mask(
        mask_mod, B, H, Q_LEN, KV_LEN, device="cpu" if device is None else device, BLOCK_SIZE=BLOCK_SIZE,
        _compile=_compile, separate_full_blocks=separate_full_blocks,
        compute_dq_write_order=compute_dq_write_order, dq_kv_order=dq_kv_order)


def _check_sizes(**sizes) -> None:
    """create_block_mask's sizes named when wrong: torch divides by them (Q_LEN=0, BLOCK_SIZE=0:
    ZeroDivisionError), builds a mask of length 1.5, or fails on a negative shape in its own words."""
    for name, value in sizes.items():
        if name == "BLOCK_SIZE" and isinstance(value, (tuple, list)):
            if len(value) != 2:
                raise ValueError(f"BLOCK_SIZE must be an int or a pair (query block, key block), got {value!r}")
            for part in value:
                _check_size("BLOCK_SIZE", part, whole=value)
        elif value is not None or name not in ("B", "H"):
            _check_size(name, value)


def _check_size(name: str, value, whole=None) -> None:
    shown = value if whole is None else whole
    if isinstance(value, bool) or not isinstance(value, (int, torch.SymInt)) and not (
            isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_floating_point()):
        raise TypeError(f"{name} must be a whole number ≥ 1{' or None' if name in ('B', 'H') else ''}, "
                        f"got {shown!r}")
    if isinstance(value, int) and value < 1:
        raise ValueError(f"{name} must be ≥ 1, got {shown!r}")


class _Score:
    """A flex score_mod as qkv calls score functions: broadcasting index arrays in, evaluated
    element by element as torch does."""

    broadcasts = True

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self.formula = self.__name__

    def __call__(self, score, b, h, q_idx, kv_idx):
        return elementwise(self.fn, score, b, h, q_idx, kv_idx, name="score_mod")


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
                   return_lse=False, kernel_options=None, *, return_aux=None):
    """torch.nn.attention.flex_attention.flex_attention, computed by `qkv.attention` (with autograd on
    the CPU).

    Args:
        query: (B, Hq, L, E).
        key: (B or 1, Hkv, S, E).
        value: (B or 1, Hkv, S, Ev).
        score_mod: score_mod(score, b, h, q_idx, kv_idx) -> score, or None.
        block_mask: a torch BlockMask (create_block_mask, BlockMask.from_kv_blocks), or None.
        scale: multiplies q·kᵀ; default 1/√E.
        enable_gqa: allow Hq ≠ Hkv (Hq a multiple of Hkv; query head h reads kv head h // (Hq/Hkv)).
        return_lse: also return the natural log-sum-exp of each row (B, Hq, L); −inf for a row with
            no allowed key (whose output is 0). float32 for float16/bfloat16 inputs, as torch's.
        kernel_options: torch's Triton options; accepted, not used.
        return_aux: torch's AuxRequest: lse=True as return_lse, in an AuxOutput; max_scores is refused.

    Returns:
        out (B, Hq, L, Ev); with return_lse (out, lse); with return_aux (out, AuxOutput).
    """
    _torch_flex._validate_no_nested_tensors(query, key, value)
    _torch_flex._validate_sdpa_input(query, key, value, allow_lowp_kv=True)
    _torch_flex._validate_embed_dim(query, key, value)
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    if not enable_gqa and query.size(-3) != key.size(-3):
        raise ValueError(f"Expect query and key/value to have the same number of heads but got Hq={query.size(-3)} "
                         f"and Hkv={key.size(-3)}. Try setting enable_gqa=True for GQA.")
    if enable_gqa and query.size(1) % key.size(1) != 0:
        raise ValueError(f"Expect number of query heads to be a multiple of kv heads for GQA but got "
                         f"Hq={query.size(1)} and Hkv={key.size(1)}.")
    if query.size(0) != key.size(0):
        if block_mask is None:
            raise ValueError(f"Expect query and key/value to have the same batch size, or non-none block_mask, "
                             f"but got block_mask=None, Bq={query.size(0)}, and Bkv={key.size(0)}.")
        if block_mask.kv_num_blocks.size(0) != query.size(0):
            raise ValueError(f"Expect query and key/value to have the same batch size, or block_mask and query to "
                             f"have the same batch size, but got Bq={query.size(0)}, Bkv={key.size(0)}, "
                             f"B_block_mask={block_mask.kv_num_blocks.size(0)}.")
    if kernel_options is not None and not isinstance(kernel_options, dict):
        raise TypeError(f"kernel_options must be a dict or None, got {type(kernel_options).__name__}")
    if return_lse and return_aux is not None:
        raise ValueError("Cannot specify both return_lse and return_aux. "
                         "return_lse is deprecated, please use return_aux=AuxRequest(lse=True) instead.")
    if return_aux is not None and getattr(return_aux, "max_scores", False):
        raise NotImplementedError("qkv.torch.flex_attention does not compute max_scores "
                                  "(return_aux=AuxRequest(max_scores=True)); ask for lse only")
    mask = None if block_mask is None else _mask_of(block_mask, query, key)
    mask_mod = None
    if isinstance(mask, MaskMod):   # the BlockMask's rows as key ranges (kept once, see _Plan)
        mask, mask_mod = None, mask
    if scale is None:
        # E = 0: every score is 0 whatever the scale (torch's flex divides by √0; SDPA gives the mean of v)
        scale = 1.0 / math.sqrt(query.size(-1)) if query.size(-1) else 1.0
    out, lse = attention(query, key, value, mask, scale=scale, mask_mod=mask_mod,
                         score_mod=None if score_mod is None or score_mod is _torch_flex._identity else _Score(score_mod),
                         return_lse=True)
    if query.dtype in (torch.float16, torch.bfloat16):
        lse = lse.to(torch.float32)
    if return_aux is not None:
        return out, _torch_flex.AuxOutput(lse=lse if return_aux.lse else None, max_scores=None)
    return (out, lse) if return_lse else out


# --------------------------------------------------------------------------- a BlockMask as a mask
class _Plan:
    """A BlockMask's boolean mask for one call shape, and the in-place versions it was computed from."""

    def __init__(self, mask, watched):
        self.mask = mask
        self.watched = watched   # [(what, tensor, its _version then)]

    def changed(self):
        for what, tensor, version in self.watched:
            if tensor._version != version:
                return what
        return None


def _mask_of(block_mask, query, key):
    """The boolean mask (B or 1, Hq or 1, L, S) a BlockMask means for this call, or None for torch's
    no-op BlockMask; checked against the call's lengths with torch's words."""
    if not isinstance(block_mask, BlockMask):
        raise TypeError(f"block_mask must be a torch.nn.attention.flex_attention.BlockMask (create_block_mask), "
                        f"got {type(block_mask).__name__}")
    if getattr(block_mask, "mask_mod", None) is _torch_flex._sliced_mask_mod_error:
        raise RuntimeError("Cannot use mask_mod from a sliced BlockMask")
    large = _torch_flex._LARGE_SPARSE_BLOCK_SIZE
    if tuple(block_mask.BLOCK_SIZE) == (large, large):
        return None
    L, S = query.size(-2), key.size(-2)
    q_len, kv_len = block_mask.shape[-2], block_mask.shape[-1]
    if L > q_len or S > kv_len:
        raise ValueError(f"block_mask was created for block_mask.shape={block_mask.shape} but got q_len={L} and "
                         f"kv_len={S}. As the block mask was created for a smaller length than you're using it for, "
                         "you likely need to create a new block mask.")
    if L != q_len or S != kv_len:
        raise ValueError(f"block_mask was created for block_mask.shape={block_mask.shape} but got q_len={L} and "
                         f"kv_len={S}. As the block mask was created for a larger length than you're using it for, "
                         "you can either 1. create a new block mask with the correct length, or 2. 'adjust' the "
                         "existing block mask to the correct length by calling block_mask._adjust(q_len, kv_len).")
    if query.device != block_mask.kv_num_blocks.device:
        raise RuntimeError(f"Expect q/k/v and block_mask to be on the same device but got {query.device} and "
                           f"{block_mask.kv_num_blocks.device}.")
    B, H = query.size(0), query.size(1)
    if torch.compiler.is_compiling():   # in the graph: nothing kept across calls
        return _dense(block_mask, B, H, L, S, query.device)
    shape = (B, H, L, S, str(query.device))
    plans = _PLANS.setdefault(block_mask, {})
    plan = plans.get(shape)
    if plan is not None:
        what = plan.changed()
        if what is not None:
            raise ValueError(f"block_mask is stale: {what} was changed in place after this BlockMask was first used, "
                             "and its blocks and mask were computed from the old values; build the BlockMask again "
                             "(create_block_mask) after changing what its mask_mod reads")
        return plan.mask
    watched = _watched(block_mask)
    dense = _dense(block_mask, B, H, L, S, query.device)
    ranges = mask_ranges(dense, (B, H), L, S)   # rows of one run of keys, the same for every head: kept
    plan = _Plan(dense if ranges is None else key_range_mask(*ranges), watched)   # as ranges (O(L), the C route)
    plans[shape] = plan
    return plan.mask


def _dense(block_mask, B, H, L, S, device):
    """torch's rule, as a boolean tensor: (b, h, q, kv) is allowed when its block is full, or partial
    and mask_mod(b, h, q, kv) is True. Dimensions that do not depend on b or h are kept as 1."""
    q_block, kv_block = block_mask.BLOCK_SIZE
    rows = torch.arange(L, device=device) // q_block
    cols = torch.arange(S, device=device) // kv_block

    def blocks(num, indices):
        n_cols = indices.shape[-1]
        valid = torch.arange(n_cols, device=device) < num.unsqueeze(-1)
        where = torch.where(valid, indices.long(), n_cols)
        dense = torch.zeros(indices.shape[:-1] + (n_cols + 1,), dtype=torch.bool, device=device)
        dense = dense.scatter(-1, where, True)[..., :n_cols]
        # a table of B' batches (H' heads) read for the call's B (H) as torch's kernels read it: batch b uses
        # row b % B', head h row h % H' (a BlockMask of B=1 or H=1 serves every batch or head as before)
        if dense.shape[0] not in (1, B):
            dense = dense[torch.arange(B, device=device) % dense.shape[0]]
        if dense.shape[1] not in (1, H):
            dense = dense[:, torch.arange(H, device=device) % dense.shape[1]]
        return dense[:, :, rows][:, :, :, cols]   # (B' or B, H' or H, L, S)

    partial = blocks(block_mask.kv_num_blocks, block_mask.kv_indices)
    mask_mod = block_mask.mask_mod
    if mask_mod is not None and mask_mod is not noop_mask:
        b = torch.arange(B, device=device).view(B, 1, 1, 1)
        h = torch.arange(H, device=device).view(1, H, 1, 1)
        q_idx = torch.arange(L, device=device).view(1, 1, L, 1)
        kv_idx = torch.arange(S, device=device).view(1, 1, 1, S)
        with torch.no_grad():   # by blocks of query rows: vmap's integer temporaries are rows × S, not L × S
            step = L if torch.compiler.is_compiling() else max(1, (1 << 22) // max(S, 1))
            parts = [elementwise(mask_mod, b, h, q_idx[:, :, i:i + step], kv_idx, name="mask_mod")
                     for i in range(0, L, step)]
        pieces = []
        for i, fresh in zip(range(0, L, step), parts):
            if fresh.dtype != torch.bool:
                raise TypeError(f"mask_mod {getattr(mask_mod, '__name__', '')!r} must return booleans (True = may "
                                f"attend), got dtype {fresh.dtype}")
            # vmap leaves a result that does not depend on b (or h) expanded, stride 0: keep one
            fresh = fresh[:1] if fresh.stride(0) == 0 else fresh
            fresh = fresh[:, :1] if fresh.stride(1) == 0 else fresh
            pieces.append(partial[:, :, i:i + step] & fresh)
        if len(pieces) == 1:
            allowed = pieces[0]
        elif not pieces:   # no query rows
            allowed = partial
        else:
            lead = (max(p.shape[0] for p in pieces), max(p.shape[1] for p in pieces))
            allowed = torch.cat([p.expand(*lead, *p.shape[2:]) for p in pieces], dim=2)
    else:
        allowed = partial
    if block_mask.full_kv_num_blocks is not None:
        allowed = allowed | blocks(block_mask.full_kv_num_blocks, block_mask.full_kv_indices)
    return allowed.contiguous()


def _watched(block_mask):
    """[(what, tensor, version)] for the BlockMask's block tables and every tensor its mask_mod reads."""
    found = [("block_mask.kv_num_blocks", block_mask.kv_num_blocks), ("block_mask.kv_indices", block_mask.kv_indices)]
    if block_mask.full_kv_num_blocks is not None:
        found += [("block_mask.full_kv_num_blocks", block_mask.full_kv_num_blocks),
                  ("block_mask.full_kv_indices", block_mask.full_kv_indices)]
    found += captured_tensors(block_mask.mask_mod)
    return [(what, t, t._version) for what, t in found]
