"""qkv.kernels.merge on NumPy arrays and torch tensors, against a float64 reference written here.

The reference is the softmax over the concatenated key ranges, computed directly in float64 NumPy
(no merge at all). The partial results fed to the merge are computed here too, per key range, in
float64, then cast to the dtype and library under test, so these tests exercise only the merge.

Tolerances (outputs and lse of size ~1): float64 |got − ref| ≤ 1e-12 (observed ≤ 9e-16 over 39
seeds); float32 ≤ 2e-6 (observed ≤ 4.8e-7, about 4 float32 ulps at 1.0: the inputs are rounded
to float32, then a few exps, products and one sum per row; the tolerance leaves a factor 4).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import qkv
from qkv.kernels import merge
from qkv.kernels.merge import Partial, finalize, finalize_into, lse_of, merge_into, merge_lse_into, merge_partials

TOL = {"float32": 2e-6, "float64": 1e-12}
SPLIT = 6                        # keys [0, 6) are range A, [6, 13) range B
EMPTY_A, EMPTY_B, EMPTY_BOTH = 1, 3, 5   # query rows with no allowed key in A, in B, in either


# --------------------------------------------------------------------------- the reference
def problem(seed: int = 0):
    """q (2, 3, 7, 5), k (2, 3, 13, 5), v (2, 3, 13, 4) float64 and a mask (7, 13), True = may
    attend, with rows empty in range A, in range B, and in both."""
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(2, 3, 7, 5)), rng.normal(size=(2, 3, 13, 5)), rng.normal(size=(2, 3, 13, 4))
    mask = rng.random((7, 13)) < 0.7
    mask[:, 0] = mask[:, SPLIT] = True                              # other rows: something on both sides
    mask[EMPTY_A, :SPLIT] = False
    mask[EMPTY_B, SPLIT:] = False
    mask[EMPTY_BOTH, :] = False
    return q, k, v, mask


def softmax_attention(q, k, v, mask):
    """float64 softmax(q·kᵀ/√Dk over allowed keys)·v and each row's log Σ exp(s); empty rows → 0, −inf.
    Returns out (…, Tq, Dv), lse (…, Tq), and the un-normalised pieces row_max, row_sum, Σ exp(s − m)·v."""
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])    # (…, Tq, Tk)
    scores = np.where(mask, scores, -np.inf)
    row_max = scores.max(-1) if scores.shape[-1] else np.full(scores.shape[:-1], -np.inf)
    reference_max = np.where(np.isneginf(row_max), 0, row_max)
    exps = np.exp(scores - reference_max[..., None])               # 0 where masked
    row_sum = exps.sum(-1)
    unnormalised = exps @ v
    empty = row_sum == 0
    out = unnormalised / np.where(empty, 1, row_sum)[..., None]
    with np.errstate(divide="ignore"):
        lse = np.where(empty, -np.inf, reference_max + np.log(np.where(empty, 1, row_sum)))
    return out, lse, row_max, row_sum, unnormalised


def ranges(seed: int = 0):
    """(whole, A, B): softmax_attention over all keys, over keys [0, SPLIT) and over [SPLIT, Tk)."""
    q, k, v, mask = problem(seed)
    whole = softmax_attention(q, k, v, mask)
    a = softmax_attention(q, k[..., :SPLIT, :], v[..., :SPLIT, :], mask[:, :SPLIT])
    b = softmax_attention(q, k[..., SPLIT:, :], v[..., SPLIT:, :], mask[:, SPLIT:])
    return whole, a, b


def test_the_reference_splits_as_intended():
    whole, a, b = ranges()
    assert np.all(np.isneginf(a[1][..., EMPTY_A])) and np.all(np.isfinite(b[1][..., EMPTY_A]))
    assert np.all(np.isneginf(b[1][..., EMPTY_B])) and np.all(np.isfinite(a[1][..., EMPTY_B]))
    assert np.all(np.isneginf(whole[1][..., EMPTY_BOTH])) and np.all(whole[0][..., EMPTY_BOTH, :] == 0)
    assert np.isfinite(whole[0]).all() and np.isfinite(np.delete(whole[1], EMPTY_BOTH, axis=-1)).all()


# --------------------------------------------------------------------------- the libraries
LIBS = [("numpy", "float32"), ("numpy", "float64"), ("torch", "float32"), ("torch", "float64")]


def as_lib(x, lib: str, dtype: str):
    x = np.asarray(x, dtype=dtype)
    return torch.from_numpy(x.copy()) if lib == "torch" else x.copy()


def check_lib(x, lib: str, dtype: str):
    if lib == "torch":
        assert isinstance(x, torch.Tensor) and x.dtype == getattr(torch, dtype), (type(x), x.dtype)
        return x.numpy()
    assert isinstance(x, np.ndarray) and x.dtype == np.dtype(dtype), (type(x), x.dtype)
    return x


def assert_close(got, expected, dtype: str):
    """Equal within the dtype's tolerance, −inf exactly where expected is −inf, and no NaN."""
    assert not np.isnan(got).any()
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=0, atol=TOL[dtype])


@pytest.fixture(autouse=True)
def numpy_warnings_are_errors():
    """No 'invalid value' / 'divide by zero' from NumPy on the way (an −inf − −inf would raise)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# --------------------------------------------------------------------------- the merges
@pytest.mark.parametrize("lib,dtype", LIBS)
def test_merge_partials_finalize_and_lse_equal_the_softmax_over_both_ranges(lib, dtype):
    whole, a, b = ranges(1)
    part_a, part_b = (Partial(*(as_lib(x, lib, dtype) for x in (p[4], p[2], p[3]))) for p in (a, b))
    merged = merge_partials(part_a, part_b)
    out, lse = finalize(merged), lse_of(merged)
    assert_close(check_lib(out, lib, dtype), whole[0], dtype)
    assert_close(check_lib(lse, lib, dtype), whole[1], dtype)
    assert np.all(check_lib(out, lib, dtype)[..., EMPTY_BOTH, :] == 0)
    for field in merged:
        check_lib(field, lib, dtype)
    # the inputs are not modified
    np.testing.assert_array_equal(check_lib(part_a.out, lib, dtype), np.asarray(a[4], dtype))


@pytest.mark.parametrize("lib,dtype", LIBS)
def test_merge_lse_into_equals_the_softmax_over_both_ranges(lib, dtype):
    whole, a, b = ranges(2)
    acc_out, acc_lse = as_lib(a[0], lib, dtype), as_lib(a[1], lib, dtype)
    blk_out, blk_lse = as_lib(b[0], lib, dtype), as_lib(b[1], lib, dtype)
    assert merge_lse_into(acc_out, acc_lse, blk_out, blk_lse) is None          # in place
    assert_close(check_lib(acc_out, lib, dtype), whole[0], dtype)
    assert_close(check_lib(acc_lse, lib, dtype), whole[1], dtype)
    assert np.all(check_lib(acc_out, lib, dtype)[..., EMPTY_BOTH, :] == 0)
    np.testing.assert_array_equal(check_lib(blk_out, lib, dtype), np.asarray(b[0], dtype))  # only read


@pytest.mark.parametrize("lib,dtype", LIBS)
def test_merge_into_and_finalize_into_in_place(lib, dtype):
    whole, a, b = ranges(3)
    out, row_max, row_sum = (as_lib(x, lib, dtype) for x in (a[4], a[2], a[3]))
    merge_into(out, row_max, row_sum, *(as_lib(x, lib, dtype) for x in (b[4], b[2], b[3])))
    assert_close(check_lib(row_max, lib, dtype), whole[2], dtype)
    assert_close(check_lib(row_sum, lib, dtype) / np.where(whole[3] == 0, 1, whole[3]),
                 np.where(whole[3] == 0, 0, 1.0), dtype)                   # relative: sums can be large
    finalize_into(out, row_sum)
    assert_close(check_lib(out, lib, dtype), whole[0], dtype)


@pytest.mark.parametrize("lib,dtype", LIBS)
def test_empty_rows_on_one_or_both_sides(lib, dtype):
    """Both sides empty → out 0, lse −inf; one side empty → exactly the other side's values."""
    rng = np.random.default_rng(4)
    out_a, out_b = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    lse_a, lse_b = rng.normal(size=3), rng.normal(size=3)
    out_a[0] = out_b[0] = 0                       # row 0: empty on both sides
    lse_a[0] = lse_b[0] = -np.inf
    out_a[1], lse_a[1] = 0, -np.inf               # row 1: empty in acc only
    out_b[2], lse_b[2] = 0, -np.inf               # row 2: empty in the block only
    acc_out, acc_lse = as_lib(out_a, lib, dtype), as_lib(lse_a, lib, dtype)
    merge_lse_into(acc_out, acc_lse, as_lib(out_b, lib, dtype), as_lib(lse_b, lib, dtype))
    got_out, got_lse = check_lib(acc_out, lib, dtype), check_lib(acc_lse, lib, dtype)
    assert not np.isnan(got_out).any() and not np.isnan(got_lse).any()
    assert np.all(got_out[0] == 0) and np.isneginf(got_lse[0])
    np.testing.assert_array_equal(got_out[1], np.asarray(out_b[1], dtype))
    np.testing.assert_array_equal(got_lse[1], np.asarray(lse_b[1], dtype))
    np.testing.assert_array_equal(got_out[2], np.asarray(out_a[2], dtype))
    np.testing.assert_array_equal(got_lse[2], np.asarray(lse_a[2], dtype))

    # the same in the un-normalised form: an empty partial is row_max −inf, row_sum 0, out 0
    empty = Partial(*(as_lib(x, lib, dtype) for x in (np.zeros((3, 4)), np.full(3, -np.inf), np.zeros(3))))
    both = merge_partials(empty, empty)
    assert np.all(check_lib(finalize(both), lib, dtype) == 0)
    assert np.all(np.isneginf(check_lib(lse_of(both), lib, dtype)))
    assert not np.isnan(check_lib(both.out, lib, dtype)).any()


# --------------------------------------------------------------------------- torch specifics
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_merge_lse_into_writes_through_torch_views_of_a_larger_result(dtype):
    """As ring attention uses it: the running result is (B, H, T, Dv) and (B, H, T); each merge
    writes rows [2, 9) through views, here of a (B, T, H, Dv) tensor transposed (not contiguous)."""
    q, k, v, mask = problem(5)
    rows = slice(2, 9)
    whole = softmax_attention(q, k, v, mask)                           # 7 query rows
    t = torch.tensor
    parent_out = torch.full((2, 9, 3, 4), 7.0, dtype=getattr(torch, dtype)).transpose(1, 2)  # (B, H, 9, Dv)
    parent_lse = torch.full((2, 3, 9), 7.0, dtype=getattr(torch, dtype))
    parent_out[..., rows, :] = 0
    parent_lse[..., rows] = -float("inf")
    acc_out, acc_lse = parent_out[..., rows, :], parent_lse[..., rows]
    assert not acc_out.is_contiguous()
    for start, stop in ((0, 4), (4, 6), (6, 13)):                    # three key blocks, one at a time
        blk = softmax_attention(q, k[..., start:stop, :], v[..., start:stop, :], mask[:, start:stop])
        merge_lse_into(acc_out, acc_lse, t(blk[0]).to(parent_out.dtype), t(blk[1]).to(parent_out.dtype))
    assert_close(parent_out[..., rows, :].numpy(), whole[0], dtype)
    assert_close(parent_lse[..., rows].numpy(), whole[1], dtype)
    outside = np.ones(9, bool)
    outside[rows] = False
    assert torch.all(parent_out[..., outside, :] == 7) and torch.all(parent_lse[..., outside] == 7)


def test_merge_lse_into_with_qkv_attention_blocks_as_ring_attention_calls_it():
    """Blocks from qkv.attention(..., return_lse=True) in torch, merged one by one = one call."""
    q, k, v, mask = problem(6)
    qt, kt, vt, maskt = (torch.from_numpy(x) for x in (q, k, v, mask))
    out = torch.zeros(2, 3, 7, 4, dtype=torch.float64)
    lse = torch.full((2, 3, 7), -float("inf"), dtype=torch.float64)
    for start, stop in ((0, 5), (5, 13)):
        blk_out, blk_lse = qkv.attention(qt, kt[..., start:stop, :], vt[..., start:stop, :], maskt[:, start:stop],
                                         return_lse=True)
        merge_lse_into(out, lse, blk_out, blk_lse)
    expected = softmax_attention(q, k, v, mask)
    assert_close(out.numpy(), expected[0], "float64")
    assert_close(lse.numpy(), expected[1], "float64")


def test_mixed_libraries_are_refused_naming_them():
    with pytest.raises(TypeError, match="acc_out is NumPy, acc_lse is torch"):
        merge_lse_into(np.zeros((2, 3)), torch.zeros(2), np.zeros((2, 3)), np.zeros(2))
    part = Partial(np.zeros((2, 3)), np.zeros(2), np.ones(2))
    torch_part = Partial(torch.zeros(2, 3), torch.zeros(2), torch.ones(2))
    with pytest.raises(TypeError, match="mixed array types"):
        merge_partials(part, torch_part)
    with pytest.raises(ValueError, match=r"b has out shape \(3, 3\) but a has \(2, 3\)"):
        merge_partials(torch_part, Partial(torch.zeros(3, 3), torch.zeros(3), torch.ones(3)))


def test_merge_module_imports_neither_torch_nor_the_blocked_kernel():
    """torch is optional at run time; blocked.py builds on merge.py, not the other way round."""
    tree = ast.parse(Path(merge.__file__).read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not any("torch" in name or "blocked" in name for name in imported), imported
    code = "import sys, qkv.kernels.merge; assert 'torch' not in sys.modules, 'torch was imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
