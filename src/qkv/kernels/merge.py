"""Partial attention results over disjoint key ranges, and the exact step that merges two.

Attention over keys split into ranges A and B can be computed range by range and merged
exactly: that is the whole idea of the online softmax (FlashAttention) and of splitting a long
KV cache across workers. A partial result over a key range J keeps, per query row i,

    row_max[i] = m       the largest score of row i in J (the reference for the exponentials)
    row_sum[i] = Σ_j∈J exp(s_ij − m)
    out[i]     = Σ_j∈J exp(s_ij − m) · v_j           (un-normalised)

Merging A and B (m = max(m_A, m_B); the two factors rescale each side to the common m):

    out = exp(m_A − m)·out_A + exp(m_B − m)·out_B
    sum = exp(m_A − m)·sum_A + exp(m_B − m)·sum_B

and `finalize` divides: attention = out / sum. This module holds the one general copy of that
math (`merge_into`). The blocked kernel (`blocked.py`, steps 3–7) applies the same step to every
key block it walks, written out in place: it exponentiates the block against the common
reference already, so the block's factor is 1 and only the running state is rescaled — and
only when the reference moves (any reference r works in place of m: the factors exp(m − r)
cancel in out / sum; the kernel moves r only to keep the numbers in range).
Calling `merge_into` there instead measured ~46 µs per 256×512 block (its extra exps and
temporaries), about 6% of the kernel's time, so the kernel keeps the specialised form.

An empty partial (no key allowed for that row) has row_max = −inf, row_sum = 0, out = 0; the
−inf is replaced by 0 before subtracting so no −inf − (−inf) = NaN ever appears, and merging
with an empty partial is the identity.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Partial", "merge_partials", "finalize", "lse_of", "merge_into", "finalize_into"]


class Partial(NamedTuple):
    """Attention over one key range, not yet normalised (a NamedTuple, so immutable).

    Fields:
      out:     (…, Tq, Dv) Σ_j exp(s_ij − row_max_i)·v_j — NOT divided by row_sum.
      row_max: (…, Tq)     the reference the exponentials are taken against (the largest
                           allowed score of the row); −inf for a row with no allowed key.
      row_sum: (…, Tq)     Σ_j exp(s_ij − row_max_i); 0 for a row with no allowed key.
    """

    out: np.ndarray
    row_max: np.ndarray
    row_sum: np.ndarray


def merge_partials(a: Partial, b: Partial) -> Partial:
    """Exact attention over the union of the two (disjoint) key ranges of a and b.

    a and b must have equal shapes: out (…, Tq, Dv), row_max and row_sum (…, Tq). Returns a new
    `Partial` (the inputs are not modified). Merging with an empty partial (row_max = −inf,
    row_sum = 0) returns the other one's values.
    """
    for name, part in (("a", a), ("b", b)):
        if np.shape(part.row_max) != np.shape(part.out)[:-1] or np.shape(part.row_sum) != np.shape(part.row_max):
            raise ValueError(
                f"{name} is not a consistent Partial: out {np.shape(part.out)}, row_max "
                f"{np.shape(part.row_max)}, row_sum {np.shape(part.row_sum)} (expected (…, Tq, Dv), (…, Tq), (…, Tq))"
            )
    if np.shape(a.out) != np.shape(b.out):
        raise ValueError(f"b has out shape {np.shape(b.out)} but a has {np.shape(a.out)} (they must be equal)")
    dtype = np.result_type(a.out, b.out)
    out = np.array(a.out, dtype=dtype, copy=True)
    row_max = np.array(a.row_max, dtype=dtype, copy=True)
    row_sum = np.array(a.row_sum, dtype=dtype, copy=True)
    merge_into(out, row_max, row_sum, np.asarray(b.out, dtype), np.asarray(b.row_max, dtype),
               np.asarray(b.row_sum, dtype))
    return Partial(out, row_max, row_sum)


def lse_of(partial: Partial) -> np.ndarray:
    """The log-sum-exp of each row, (…, Tq): row_max + log(row_sum) = log Σ_j exp(s_ij); −inf for
    an empty row. Two partials merge exactly when both are known this way: with lse_A, lse_B and
    the normalised outputs o_A, o_B, lse = logaddexp(lse_A, lse_B) and
    o = exp(lse_A − lse)·o_A + exp(lse_B − lse)·o_B (what `merge_partials` computes)."""
    row_sum = np.asarray(partial.row_sum)
    empty = row_sum <= 0
    with np.errstate(divide="ignore"):
        lse = np.asarray(partial.row_max) + np.log(np.where(empty, 1, row_sum))
    return np.where(empty, -np.inf, lse).astype(row_sum.dtype, copy=False)


def finalize(partial: Partial) -> np.ndarray:
    """The attention output out / row_sum, (…, Tq, Dv); rows with row_sum = 0 give zeros."""
    out = np.array(partial.out, copy=True)
    finalize_into(out, np.asarray(partial.row_sum))
    return out


# --------------------------------------------------------------------------- the math, in place
def merge_into(acc_out, acc_max, acc_sum, blk_out, blk_max, blk_sum) -> None:
    """acc ← merge(acc, blk), in place on acc_out (…, Tq, Dv), acc_max and acc_sum (…, Tq).

    This is steps 6–7 of the online softmax: new max, rescale both sides, add. blk_* are only
    read. No NaN for empty rows: a −inf common max is replaced by 0 before the subtraction, so
    both factors become exp(−inf) = 0 and the row stays empty.
    """
    new_max = np.maximum(acc_max, blk_max)
    np.copyto(new_max, 0, where=np.isneginf(new_max))   # empty on both sides: any finite value works
    acc_scale = np.exp(np.subtract(acc_max, new_max))    # exp(m_acc − m), 0 when acc is empty
    blk_scale = np.exp(np.subtract(blk_max, new_max))    # exp(m_blk − m), 0 when blk is empty
    acc_out *= acc_scale[..., None]
    acc_out += blk_out * blk_scale[..., None]
    acc_sum *= acc_scale
    acc_sum += blk_sum * blk_scale
    np.maximum(acc_max, blk_max, out=acc_max)


def finalize_into(out, row_sum) -> None:
    """out ← out / row_sum in place (rows with row_sum = 0, i.e. no allowed key, become 0)."""
    empty = row_sum <= 0
    denominator = np.where(empty, 1, row_sum).astype(out.dtype, copy=False)
    out /= denominator[..., None]
    if empty.any():
        out[empty] = 0
