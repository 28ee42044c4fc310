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
math (`merge_into`), and its log-sum-exp form (`merge_lse_into`, used by ring attention): with
normalised outputs o_A, o_B and lse_A = m_A + log sum_A, lse_B likewise,

    lse = log(exp(lse_A) + exp(lse_B))
    o   = exp(lse_A − lse)·o_A + exp(lse_B − lse)·o_B

which is the same step with each side written as a partial whose reference is its lse and whose
sum is 1 (then the merged sum is 1 too: the factors are each side's share of the total).
Both rescale the two sides to a common reference and add (`_factors`, `_rescale_add`).

The blocked kernel (`blocked.py`, steps 3–7) applies the same step to every
key block it walks, written out in place: it exponentiates the block against the common
reference already, so the block's factor is 1 and only the running state is rescaled — and
only when the reference moves (any reference r works in place of m: the factors exp(m − r)
cancel in out / sum; the kernel moves r only to keep the numbers in range).
Calling `merge_into` there instead measured ~46 µs per 256×512 block (its extra exps and
temporaries), about 6% of the kernel's time, so the kernel keeps the specialised form.

Every function here is written against the Python array API (array-api-compat): NumPy arrays
and torch tensors (any device) both work, and the result has the inputs' library and dtype.
torch is not imported here.

An empty partial (no key allowed for that row) has row_max = −inf, row_sum = 0, out = 0 (in lse
form: lse = −inf, o = 0); the −inf common reference is replaced by 0 before subtracting so no
−inf − (−inf) = NaN ever appears, and merging with an empty partial is the identity.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import _backend as compat  # array-api-compat, imported on first use
from .._backend import namespace

__all__ = ["Partial", "merge_partials", "merge_lse", "finalize", "lse_of", "merge_into", "merge_lse_into",
           "finalize_into"]


class Partial(NamedTuple):
    """Attention over one key range, not yet normalised (a NamedTuple, so immutable).

    Fields (NumPy arrays or torch tensors, all of one library):
      out:     (…, Tq, Dv) Σ_j exp(s_ij − row_max_i)·v_j — NOT divided by row_sum.
      row_max: (…, Tq)     the reference the exponentials are taken against (the largest
                           allowed score of the row); −inf for a row with no allowed key.
      row_sum: (…, Tq)     Σ_j exp(s_ij − row_max_i); 0 for a row with no allowed key.
    """

    out: Any
    row_max: Any
    row_sum: Any


_NUMPY = None   # array-api-compat's NumPy namespace, resolved on the first call (not at import)


def _namespace(**arrays):
    """The named arrays' namespace (`qkv._backend.namespace`: mixed NumPy/torch or non-arrays are
    refused, naming them). Plain NumPy arrays skip its checks: finalize_into sits on the blocked
    kernel's per-query-block path, where those checks cost about as much as the arithmetic."""
    global _NUMPY
    if all(type(a) is np.ndarray for a in arrays.values()):
        if _NUMPY is None:
            _NUMPY = compat.array_namespace(np.empty(0))
        return _NUMPY
    return namespace(**arrays)


def _shape(x) -> tuple:
    return tuple(int(d) for d in x.shape)


def merge_partials(a: Partial, b: Partial) -> Partial:
    """Exact attention over the union of the two (disjoint) key ranges of a and b.

    a and b must have equal shapes: out (…, Tq, Dv), row_max and row_sum (…, Tq). Returns a new
    `Partial` in the promoted dtype of a.out and b.out (the inputs are not modified). Merging
    with an empty partial (row_max = −inf, row_sum = 0) returns the other one's values.
    """
    xp = _namespace(**{f"{side}.{field}": value for side, part in (("a", a), ("b", b))
                      for field, value in zip(Partial._fields, part)})
    for name, part in (("a", a), ("b", b)):
        if _shape(part.row_max) != _shape(part.out)[:-1] or _shape(part.row_sum) != _shape(part.row_max):
            raise ValueError(
                f"{name} is not a consistent Partial: out {_shape(part.out)}, row_max "
                f"{_shape(part.row_max)}, row_sum {_shape(part.row_sum)} (expected (…, Tq, Dv), (…, Tq), (…, Tq))"
            )
    if _shape(a.out) != _shape(b.out):
        raise ValueError(f"b has out shape {_shape(b.out)} but a has {_shape(a.out)} (they must be equal)")
    dtype = xp.result_type(a.out, b.out)
    out, row_max, row_sum = (xp.astype(x, dtype, copy=True) for x in a)
    merge_into(out, row_max, row_sum, *(xp.astype(x, dtype, copy=False) for x in b))
    return Partial(out, row_max, row_sum)


def merge_lse(parts) -> tuple:
    """(out, lse): exact attention over the union of disjoint key sets, from each set's normalised
    output and log-sum-exp — parts = [(out (…, Tq, Dv), lse (…, Tq)), …], as `qkv.attention(...,
    return_lse=True)` gives them. Not in place and without a branch on the values, so torch autograd
    differentiates it (through out and lse) and torch.compile traces it:

        m = maxₖ lseₖ (0 where every lseₖ is −inf),  wₖ = exp(lseₖ − m),  Σ = Σₖ wₖ
        lse = m + log Σ (−inf where Σ = 0),          out = Σₖ (wₖ / Σ)·outₖ

    A row empty in every part gives out 0 and lse −inf (log and division take 1 there, discarded by
    `where`: no NaN in the values or the gradients)."""
    outs, lses = [p[0] for p in parts], [p[1] for p in parts]
    xp = _namespace(**{f"out{i}": o for i, o in enumerate(outs)}, **{f"lse{i}": x for i, x in enumerate(lses)})
    top = lses[0]
    for lse in lses[1:]:
        top = xp.maximum(top, lse)
    top = xp.where(top == -xp.inf, xp.zeros_like(top), top)
    weights = [xp.exp(lse - top) for lse in lses]
    total = weights[0]
    for w in weights[1:]:
        total = total + w
    empty = total == 0
    safe = xp.where(empty, xp.ones_like(total), total)
    out = outs[0] * (weights[0] / safe)[..., None]
    for o, w in zip(outs[1:], weights[1:]):
        out = out + o * (w / safe)[..., None]
    lse = xp.where(empty, xp.full_like(total, -xp.inf), top + xp.log(safe))
    return out, lse


def lse_of(partial: Partial) -> Any:
    """The log-sum-exp of each row, (…, Tq), in row_sum's dtype: row_max + log(row_sum) =
    log Σ_j exp(s_ij); −inf for an empty row. Two partials merge exactly when both are known this
    way: with lse_A, lse_B and the normalised outputs o_A, o_B, lse = logaddexp(lse_A, lse_B) and
    o = exp(lse_A − lse)·o_A + exp(lse_B − lse)·o_B (`merge_lse_into`; what `merge_partials`
    computes)."""
    xp = _namespace(row_max=partial.row_max, row_sum=partial.row_sum)
    row_sum = partial.row_sum
    empty = row_sum <= 0
    lse = partial.row_max + xp.log(xp.where(empty, xp.ones_like(row_sum), row_sum))
    return xp.astype(xp.where(empty, xp.full_like(lse, -xp.inf), lse), row_sum.dtype, copy=False)


def finalize(partial: Partial) -> Any:
    """The attention output out / row_sum, (…, Tq, Dv), in out's dtype; rows with row_sum = 0
    give zeros. The partial is not modified."""
    xp = _namespace(out=partial.out, row_sum=partial.row_sum)
    out = xp.astype(partial.out, partial.out.dtype, copy=True)
    finalize_into(out, partial.row_sum)
    return out


# --------------------------------------------------------------------------- the math, in place
def _factors(xp, acc_ref, blk_ref, common):
    """(exp(acc_ref − common), exp(blk_ref − common)): each side's rescale to the common reference.

    acc_ref, blk_ref, common (…, Tq). A −inf common reference (both sides empty) is replaced by 0
    first, so no −inf − (−inf) = NaN appears: both factors are then exp(−inf) = 0.
    """
    common = xp.where(common == -xp.inf, xp.zeros_like(common), common)
    return xp.exp(acc_ref - common), xp.exp(blk_ref - common)


def _rescale_add(acc_out, acc_factor, blk_out, blk_factor) -> None:
    """acc_out ← acc_factor·acc_out + blk_factor·blk_out, in place; outs (…, Tq, Dv), factors (…, Tq)."""
    acc_out *= acc_factor[..., None]
    acc_out += blk_out * blk_factor[..., None]


def merge_into(acc_out, acc_max, acc_sum, blk_out, blk_max, blk_sum) -> None:
    """acc ← merge(acc, blk), in place on acc_out (…, Tq, Dv), acc_max and acc_sum (…, Tq).

    This is steps 6–7 of the online softmax: new max, rescale both sides, add. blk_* are only
    read. No NaN for empty rows: a −inf common max is replaced by 0 before the subtraction, so
    both factors become exp(−inf) = 0 and the row stays empty (row_max −inf, row_sum 0, out 0).
    NumPy arrays or torch tensors (views work: they are written through).
    """
    xp = _namespace(acc_out=acc_out, acc_max=acc_max, acc_sum=acc_sum, blk_out=blk_out, blk_max=blk_max,
                   blk_sum=blk_sum)
    new_max = xp.maximum(acc_max, blk_max)
    acc_factor, blk_factor = _factors(xp, acc_max, blk_max, new_max)  # 0 for an empty side
    _rescale_add(acc_out, acc_factor, blk_out, blk_factor)
    acc_sum *= acc_factor
    acc_sum += blk_sum * blk_factor
    acc_max[...] = new_max


def merge_lse_into(acc_out, acc_lse, blk_out, blk_lse) -> None:
    """acc ← exact attention over acc's keys ∪ blk's keys, in log-sum-exp form, in place.

    Args:
      acc_out: (…, Tq, Dv) the running normalised output (softmax-weighted values); written.
      acc_lse: (…, Tq) its log-sum-exp log Σ_j exp(s_ij) over the keys seen so far; −inf for a
        row with no key yet (its acc_out row must then be finite, e.g. 0); written.
      blk_out: (…, Tq, Dv), blk_lse: (…, Tq) the same for a disjoint block of keys (as
        `qkv.attention(..., return_lse=True)` returns them); only read.

    Computes lse = logaddexp(acc_lse, blk_lse) and
    acc_out = exp(acc_lse − lse)·acc_out + exp(blk_lse − lse)·blk_out, then acc_lse = lse.
    A row empty on both sides stays empty (out 0 if both outs were 0, lse −inf), never NaN;
    a row empty on one side takes the other side's values. NumPy arrays or torch tensors, in
    place on views too (e.g. `out[..., rows, :]` and `lse[..., rows]` of a larger result are
    written through to it).
    """
    xp = _namespace(acc_out=acc_out, acc_lse=acc_lse, blk_out=blk_out, blk_lse=blk_lse)
    new_lse = xp.logaddexp(acc_lse, blk_lse)
    acc_factor, blk_factor = _factors(xp, acc_lse, blk_lse, new_lse)
    _rescale_add(acc_out, acc_factor, blk_out, blk_factor)
    acc_lse[...] = new_lse


def finalize_into(out, row_sum) -> None:
    """out ← out / row_sum in place, out (…, Tq, Dv), row_sum (…, Tq) (rows with row_sum = 0,
    i.e. no allowed key, become 0). NumPy arrays or torch tensors."""
    xp = _namespace(out=out, row_sum=row_sum)
    empty = row_sum <= 0
    denominator = xp.astype(xp.where(empty, xp.ones_like(row_sum), row_sum), out.dtype, copy=False)
    out /= denominator[..., None]
    if bool(xp.any(empty)):
        out[empty] = 0
