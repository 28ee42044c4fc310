"""Hostile calls of qkv.torch.flex_attention and create_block_mask (an adversarial pass; classes in
docs/reliability.md): a BlockMask built for another batch or head count than the query's, and sizes torch
divides by or allocates from. Expected values: torch's own flex_attention forward on the CPU and a float64
computation of softmax(q·kᵀ·scale, masked by mask_mod over the query's own b and h)·v written out here."""

from __future__ import annotations

import math
import warnings

import pytest

torch = pytest.importorskip("torch")
flex = pytest.importorskip("torch.nn.attention.flex_attention")

import qkv.torch as qt  # noqa: E402


def by_batch(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (b % 2 == 0) | (q_idx == kv_idx)


def by_head(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (h % 2 == 0) | (q_idx == kv_idx)


def reference(q, mask_mod):
    """float64 softmax(q·qᵀ/√E masked)·q, mask_mod evaluated for the query's every b and h."""
    x = q.double()
    B, H, L, E = x.shape
    b, h = torch.arange(B).view(B, 1, 1, 1), torch.arange(H).view(1, H, 1, 1)
    i, j = torch.arange(L).view(1, 1, L, 1), torch.arange(L).view(1, 1, 1, L)
    scores = (x @ x.transpose(-1, -2) / math.sqrt(E)).masked_fill(~mask_mod(b, h, i, j), float("-inf"))
    return torch.softmax(scores, -1) @ x


@pytest.mark.parametrize("built, called, mask_mod", [
    ((3, 1), (2, 2), by_batch),      # a BlockMask of more batches than the query's
    ((2, 1), (3, 2), by_batch),      # of fewer (neither 1 nor the query's)
    ((1, 3), (1, 2), by_head),       # of more heads
    ((1, 2), (1, 4), by_head),       # of fewer
    ((2, 4), (2, 2), by_head),
])
def test_a_block_mask_of_another_batch_or_head_count(built, called, mask_mod):
    """torch reads a BlockMask of B' batches for batch b at row b % B' (head h at h % H'); qkv failed with
    "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"."""
    B, H = called
    q = torch.randn(B, H, 16, 4, generator=torch.Generator().manual_seed(B * 10 + H))
    ours = qt.flex_attention(q, q, q, block_mask=qt.create_block_mask(mask_mod, *built, 16, 16, BLOCK_SIZE=4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # torch's "flex_attention called without torch.compile()" notice
        theirs = flex.flex_attention(q, q, q, block_mask=flex.create_block_mask(mask_mod, *built, 16, 16, device="cpu",
                                                                                BLOCK_SIZE=4))
    want = reference(q, mask_mod)
    torch.testing.assert_close(ours.double(), want, rtol=0, atol=1e-6)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)


BAD_SIZES = [
    ({"Q_LEN": 0}, ValueError, "Q_LEN"), ({"KV_LEN": 0}, ValueError, "KV_LEN"), ({"Q_LEN": -1}, ValueError, "Q_LEN"),
    ({"Q_LEN": 1.5}, TypeError, "Q_LEN"), ({"BLOCK_SIZE": 0}, ValueError, "BLOCK_SIZE"),
    ({"BLOCK_SIZE": -1}, ValueError, "BLOCK_SIZE"), ({"BLOCK_SIZE": (0, 4)}, ValueError, "BLOCK_SIZE"),
    ({"BLOCK_SIZE": (4,)}, ValueError, "BLOCK_SIZE"), ({"BLOCK_SIZE": 1.5}, TypeError, "BLOCK_SIZE"),
    ({"BLOCK_SIZE": "x"}, TypeError, "BLOCK_SIZE"), ({"B": 0}, ValueError, "B "), ({"H": -2}, ValueError, "H "),
    ({"B": 2.0}, TypeError, "B "),
]


@pytest.mark.parametrize("change, error, named", BAD_SIZES)
def test_create_block_mask_names_a_bad_size(change, error, named):
    """torch's create_block_mask answered Q_LEN=0 and BLOCK_SIZE=0 with ZeroDivisionError, a negative size with
    'invalid shape dimension -6', a float BLOCK_SIZE with 'cannot unpack non-iterable float object', and built a
    BlockMask of length 1.5; qkv's names the argument and what it takes."""
    sizes = dict(B=1, H=1, Q_LEN=8, KV_LEN=8)
    sizes.update(change)
    with pytest.raises(error) as refused:
        qt.create_block_mask(by_batch, **sizes)
    assert str(refused.value).startswith(named.strip()) and "\n" not in str(refused.value)


def test_good_sizes_still_build_torchs_block_mask():
    for sizes in (dict(B=None, H=None, Q_LEN=130, KV_LEN=7, BLOCK_SIZE=(4, 8)), dict(B=2, H=3, Q_LEN=8, KV_LEN=8,
                                                                                    BLOCK_SIZE=128)):
        ours = qt.create_block_mask(by_batch, **sizes)
        theirs = flex.create_block_mask(by_batch, device="cpu", **sizes)
        assert ours.shape == theirs.shape and ours.BLOCK_SIZE == theirs.BLOCK_SIZE
        assert torch.equal(ours.kv_num_blocks, theirs.kv_num_blocks) and torch.equal(ours.kv_indices, theirs.kv_indices)


def test_queries_and_keys_of_width_0():
    """E = 0: q·kᵀ is 0 everywhere, so each row is the mean of v (SDPA's answer); the default scale 1/√E
    divided by zero (ZeroDivisionError, as torch's own flex_attention does)."""
    v = torch.randn(2, 3, 5, 4, dtype=torch.float64)
    q = torch.randn(2, 3, 5, 0, dtype=torch.float64)
    ours = qt.flex_attention(q, q, v)
    torch.testing.assert_close(ours, v.mean(-2, keepdim=True).expand_as(v), rtol=0, atol=1e-12)
    torch.testing.assert_close(ours, torch.nn.functional.scaled_dot_product_attention(q, q, v), rtol=0, atol=1e-12)
    causal = qt.flex_attention(q, q, v, block_mask=qt.create_block_mask(lambda b, h, i, j: i >= j, None, None, 5, 5))
    want = torch.cumsum(v, -2) / torch.arange(1, 6, dtype=torch.float64).view(5, 1)
    torch.testing.assert_close(causal, want, rtol=0, atol=1e-12)
