"""qkv.torch.flex_attention with the import swapped: PyTorch's own flex test functions and
attention-gym's masks, forward and backward, against a float64 dense reference.

Upstream sources (the functions below are copied from them, with the test-only CUDA buffers put on the CPU):
- pytorch/pytorch test/inductor/test_flex_attention.py at commit 00125ef3dad64a9f8dd8768e81326a34ed7ba91d:
  the score_mods _causal, _rel_bias, _rel_causal, _generate_alibi_bias, _inverse_causal, _times_two, _squared,
  _head_offset (captured buffer), _trig, _trig2; the mask_mods _causal_mask, _inverse_causal_mask, noop_mask;
  its pairing `test_score_mask_mod_map`; the score_mods of its captured-buffer tests (`_captured`).
- meta-pytorch/attention-gym attn_gym/masks and attn_gym/mods at commit 7fdb85d0b96668397adee48de54b6f1036497717:
  causal_mask, generate_sliding_window (and_masks), generate_prefix_lm_mask (or_masks), generate_doc_mask_mod
  (offsets, captured tensors indexed by q_idx), generate_natten (clamp, abs), generate_dilated_sliding_window
  (torch.abs), generate_alibi_bias, generate_tanh_softcap.

The reference is independent of qkv: the float64 scores softmax(QKᵀ·scale + score_mod)·V with −inf where
masked, score_mod and mask_mod called one (b, h, q_idx, kv_idx) at a time with 0-d tensors in Python loops,
the mask read from the BlockMask's blocks as torch's rule says (a full block, or a partial block where
mask_mod allows). Slow cases (torch.compile, torch's own compiled CPU forward) are in test_flex_compile.py.
"""

import math
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from qkv.torch import and_masks, create_block_mask, flex_attention, noop_mask, or_masks  # noqa: E402
from torch.nn.attention.flex_attention import BlockMask  # noqa: E402


# --------- pytorch/pytorch test/inductor/test_flex_attention.py (00125ef) ---------
def _identity(score, b, h, m, n):
    return score


def _causal(score, batch, head, token_q, token_kv):
    return torch.where(token_q >= token_kv, score, float("-inf"))


def _rel_bias(score, batch, head, token_q, token_kv):
    return score + (token_q - token_kv)


def _rel_causal(score, batch, head, token_q, token_kv):
    return torch.where(token_q >= token_kv, score + (token_q - token_kv), float("-inf"))


def _generate_alibi_bias(num_heads: int):
    def _alibi_bias(score, batch, head, token_q, token_kv):
        scale = torch.exp2(-((head + 1) * 8.0 / num_heads))
        return score + (token_kv - token_q) * scale

    return _alibi_bias


def _inverse_causal(score, b, h, m, n):
    return torch.where(m <= n, score, float("-inf"))


def _times_two(score, b, h, m, n):
    return score * 2


def _squared(score, b, h, m, n):
    return score * score


def _head_offset(dtype, heads):
    head_offset = torch.rand(heads, dtype=dtype)   # upstream: on "cuda"

    def score_mod(score, b, h, m, n):
        return score * head_offset[h]

    return score_mod


def _trig(score, b, h, m, n):
    return torch.sin(torch.cos(score)) + torch.tan(b)


def _trig2(score, b, h, m, n):
    cos_score = torch.cos(score)
    sin_score = torch.sin(score)
    z = cos_score * sin_score + torch.tan(b)
    return z


def _causal_mask(batch, head, token_q, token_kv):
    return token_q >= token_kv


def _inverse_causal_mask(batch, head, token_q, token_kv):
    return token_q <= token_kv


UPSTREAM = [   # test_score_mask_mod_map, plus _trig/_trig2 (upstream's "joint graph" cases) under noop
    ("identity", _identity, noop_mask), ("times_two", _times_two, noop_mask), ("squared", _squared, noop_mask),
    ("causal", _causal, _causal_mask), ("inverse_causal", _inverse_causal, _inverse_causal_mask),
    ("rel_bias", _rel_bias, noop_mask), ("rel_causal", _rel_causal, _causal_mask),
    ("alibi", _generate_alibi_bias(8), noop_mask), ("trig", _trig, noop_mask), ("trig2", _trig2, _causal_mask),
]


def _captured(B, H, S, dtype):
    """The score_mods of test_flex_attention.py's captured-buffer tests (test_function_composition,
    test_captured_buffers_all_dims, test_seq_masking, test_load_from_bias_seq_only / _seq_batch /
    _head_seq_batch, test_load_rel_bias, test_dependent_causal_bidirectional, test_natten_2d,
    test_silu_on_score, test_padded_dense_causal, test_captured_scale), their buffers made for (B, H, S)
    on the CPU from a seeded generator (upstream: torch.randn on "cuda")."""
    g = torch.Generator().manual_seed(7)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=dtype)

    def score_mod_1(score, b, h, m, n):
        return score + (m - n)

    def score_mod_2(score, b, h, m, n):
        return torch.where(m <= n, score, float("-inf"))

    def composed_score_mod(score, b, h, m, n):
        return score_mod_2(score_mod_1(score, b, h, m, n), b, h, m, n)

    head_scale, batch_scale, tok_scale = randn(H), randn(B), randn(S)

    def all_bias(score, batch, head, token_q, token_kv):
        score = score + tok_scale[token_q]
        score = score + batch_scale[batch]
        score = score + head_scale[head]
        return score

    seq_idx = torch.zeros(S, dtype=torch.bool)
    seq_idx[S // 2:] = 1

    def seq_mask_mod(score, b, h, q, kv):
        return torch.where(seq_idx[q] == seq_idx[kv], score, float("-inf"))

    bias_seq, bias_batch, bias_all, rel_bias = randn(S, S), randn(B, S, S), randn(B, H, S, S), randn(2 * S)

    def bias_seq_only(score, b, h, q, kv):
        return score + bias_seq[q, kv]

    def bias_seq_batch(score, b, h, q, kv):
        return score + bias_batch[b, q, kv]

    def bias_head_seq_batch(score, b, h, q, kv):
        return score + bias_all[b, h, q, kv]

    def load_rel_bias(score, b, h, q, kv):
        return score + rel_bias[(q - kv) + S]

    num_bidirectional = torch.randint(0, S, (B,), generator=g, dtype=torch.int32)

    def dependent_causal_bidirectional(score, b, h, q, kv):
        causal_attention = q >= kv
        cur_num_bidirectional = num_bidirectional[b]
        bidirectional_attention_on_video = (q <= cur_num_bidirectional) & (kv <= cur_num_bidirectional)
        return torch.where(bidirectional_attention_on_video | causal_attention, score, -float("inf"))

    W, WINDOW = 4, 1   # upstream: H = 32 rows of W = S // 32, WINDOW = 3

    def natten_mask(score, b, h, q, kv):
        q_x, q_y = q / W, q % W
        kv_x, kv_y = kv / W, kv % W
        return torch.where(((q_x - kv_x).abs() <= WINDOW) | ((q_y - kv_y).abs() <= WINDOW), score, float("-inf"))

    def silu_score(score, b, h, q, kv):
        return torch.nn.functional.silu(score)

    seq_len = torch.arange(B, dtype=torch.int32) + 1

    def njt_score_mod(qk, b, h, q, kv):
        return torch.where(qk <= seq_len[b], _causal(qk, b, h, q, kv), -float("inf"))

    scale = torch.ones((), dtype=torch.int32)

    def score_mod_scale(qk, b, h, q, kv):
        return qk + scale

    return {"function_composition": composed_score_mod, "captured_buffers_all_dims": all_bias,
            "seq_masking": seq_mask_mod, "load_from_bias_seq_only": bias_seq_only,
            "load_from_bias_seq_batch": bias_seq_batch, "load_from_bias_head_seq_batch": bias_head_seq_batch,
            "load_rel_bias": load_rel_bias, "dependent_causal_bidirectional": dependent_causal_bidirectional,
            "natten_2d": natten_mask, "silu_on_score": silu_score, "padded_dense_causal": njt_score_mod,
            "captured_scale": score_mod_scale}


# --------- meta-pytorch/attention-gym attn_gym (7fdb85d) ---------
def gym_causal_mask(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def generate_sliding_window(window_size):
    def sliding_window(b, h, q_idx, kv_idx):
        return q_idx - kv_idx <= window_size

    return and_masks(sliding_window, gym_causal_mask)


def generate_prefix_lm_mask(prefix_length):
    def prefix_mask(b, h, q_idx, kv_idx):
        return kv_idx < prefix_length

    return or_masks(prefix_mask, gym_causal_mask)


def _offsets_to_doc_ids_tensor(offsets):
    counts = offsets[1:] - offsets[:-1]
    return torch.repeat_interleave(torch.arange(len(counts), dtype=torch.int32), counts)


def length_to_offsets(lengths):
    return torch.cumsum(torch.tensor([0] + list(lengths), dtype=torch.int32), dim=-1)


def generate_doc_mask_mod(mask_mod, offsets):
    document_id = _offsets_to_doc_ids_tensor(offsets)

    def doc_mask_mod(b, h, q_idx, kv_idx):
        same_doc = document_id[q_idx] == document_id[kv_idx]
        q_logical = q_idx - offsets[document_id[q_idx]]
        kv_logical = kv_idx - offsets[document_id[kv_idx]]
        inner_mask = mask_mod(b, h, q_logical, kv_logical)
        return same_doc & inner_mask

    return doc_mask_mod


def generate_natten(canvas_w, canvas_h, kernel_w, kernel_h):
    def get_x_y(idx):
        return idx // canvas_w, idx % canvas_w

    def natten_mask_mod(b, h, q_idx, kv_idx):
        q_x, q_y = get_x_y(q_idx)
        kv_x, kv_y = get_x_y(kv_idx)
        kernel_center_x = q_x.clamp(kernel_w // 2, (canvas_w - 1) - kernel_w // 2)
        kernel_center_y = q_y.clamp(kernel_h // 2, (canvas_h - 1) - kernel_h // 2)
        hori_mask = (kernel_center_x - kv_x).abs() <= kernel_w // 2
        vert_mask = (kernel_center_y - kv_y).abs() <= kernel_h // 2
        return hori_mask & vert_mask

    return natten_mask_mod


def generate_dilated_sliding_window(window_size, dilation):
    def dilated_sliding_window(b, h, q_idx, kv_idx):
        diff = torch.abs(q_idx - kv_idx)
        in_window = diff <= window_size
        is_dilated = (diff % dilation) == 0
        return in_window & is_dilated

    return dilated_sliding_window


def generate_alibi_bias(H):
    def alibi_mod(score, b, h, q_idx, kv_idx):
        scale = torch.exp2(-((h + 1) * 8.0 / H))
        bias = (kv_idx - q_idx) * scale
        return score + bias

    return alibi_mod


def generate_tanh_softcap(soft_cap):
    def tanh_softcap(score, b, h, q_idx, kv_idx):
        return soft_cap * torch.tanh(score / soft_cap)

    return tanh_softcap


# 12 tokens = a 4 × 3 canvas for natten; documents of lengths 3, 5, 4
GYM_MASKS = {
    "causal": gym_causal_mask,
    "sliding_window": generate_sliding_window(3),
    "prefix_lm": generate_prefix_lm_mask(4),
    "document_causal": generate_doc_mask_mod(gym_causal_mask, length_to_offsets([3, 5, 4])),
    "document_noop": generate_doc_mask_mod(noop_mask, length_to_offsets([3, 5, 4])),
    "natten": generate_natten(4, 3, 3, 3),
    "dilated_window": generate_dilated_sliding_window(4, 2),
}
GYM_SCORES = {"alibi": generate_alibi_bias(4), "tanh_softcap": generate_tanh_softcap(2)}


# --------- the independent reference ---------
def _t(i):
    return torch.tensor(i)


def dense_mask(block_mask, B, H, L, S):
    """(B, H, L, S) bool from a BlockMask by torch's rule, element by element (Python loops)."""
    q_block, kv_block = block_mask.BLOCK_SIZE
    def blocks(num, idx):
        found = np.zeros((num.shape[0], num.shape[1], num.shape[2], math.ceil(S / kv_block)), bool)
        for b in range(num.shape[0]):
            for h in range(num.shape[1]):
                for r in range(num.shape[2]):
                    for j in range(int(num[b, h, r])):
                        found[b, h, r, int(idx[b, h, r, j])] = True
        return found
    partial = blocks(block_mask.kv_num_blocks, block_mask.kv_indices)
    full = None if block_mask.full_kv_num_blocks is None else blocks(block_mask.full_kv_num_blocks,
                                                                     block_mask.full_kv_indices)
    out = np.zeros((B, H, L, S), bool)
    for b in range(B):
        for h in range(H):
            bb, hh = b % partial.shape[0], h % partial.shape[1]
            for i in range(L):
                for j in range(S):
                    if full is not None and full[bb, hh, i // q_block, j // kv_block]:
                        out[b, h, i, j] = True
                    elif partial[bb, hh, i // q_block, j // kv_block]:
                        out[b, h, i, j] = bool(block_mask.mask_mod(_t(b), _t(h), _t(i), _t(j)))
    return torch.from_numpy(out)


def reference(q, k, v, score_mod=None, mask=None, scale=None):
    """float64 softmax(QKᵀ·scale + score_mod, −inf where masked)·V, a row with no key → 0; and its lse."""
    q, k, v = (x.double() for x in (q, k, v))
    B, H, L, E = q.shape
    S = k.shape[-2]
    k = k.expand(B, *k.shape[1:]).repeat_interleave(H // k.shape[1], 1)
    v = v.expand(B, *v.shape[1:]).repeat_interleave(H // v.shape[1], 1)
    s = q @ k.transpose(-1, -2) * (1 / math.sqrt(E) if scale is None else scale)
    if score_mod is not None:
        s = torch.stack([torch.stack([torch.stack([torch.stack([
            score_mod(s[b, h, i, j], _t(b), _t(h), _t(i), _t(j)).double() for j in range(S)])
            for i in range(L)]) for h in range(H)]) for b in range(B)])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(s, -1)
    w = torch.exp(s - torch.where(lse == -math.inf, 0, lse)[..., None])
    return w @ v, lse


def inputs(B, H, L, E, dtype, *, Hkv=None, S=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    Hkv, S = Hkv or H, S or L
    return (torch.randn(B, H, L, E, generator=g, dtype=dtype).requires_grad_(),
            torch.randn(B, Hkv, S, E, generator=g, dtype=dtype).requires_grad_(),
            torch.randn(B, Hkv, S, E, generator=g, dtype=dtype).requires_grad_())


TOL = {torch.float64: 1e-10, torch.float32: 2e-5}


def check(q, k, v, score_mod=None, block_mask=None, *, enable_gqa=False, scale=None):
    """flex_attention's out, lse and the gradients of q, k, v against the float64 reference."""
    B, H, L, _ = q.shape
    mask = None if block_mask is None else dense_mask(block_mask, B, H, L, k.shape[-2])
    out, lse = flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask, enable_gqa=enable_gqa,
                              scale=scale, return_lse=True)
    want, want_lse = reference(q, k, v, score_mod, mask, scale)
    tol = TOL[q.dtype]
    assert out.dtype == q.dtype and out.shape == want.shape
    torch.testing.assert_close(out.double(), want.detach(), atol=tol, rtol=tol)
    torch.testing.assert_close(lse.double(), want_lse.detach(), atol=tol, rtol=tol)
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    got = torch.autograd.grad(out, (q, k, v), grad.to(out.dtype))
    wanted = torch.autograd.grad(want, (q, k, v), grad)
    for name, a, b in zip("qkv", got, wanted):
        torch.testing.assert_close(a.double(), b.double(), atol=10 * tol, rtol=10 * tol, msg=lambda m: f"d{name}: {m}")
    return out


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("name,score_mod,mask_mod", UPSTREAM, ids=[u[0] for u in UPSTREAM])
def test_upstream_score_and_mask_mods(name, score_mod, mask_mod, dtype):
    """Each of test_flex_attention.py's score_mods with its mask_mod, forward and backward on the CPU."""
    B, H, L, E = 2, 2, 10, 4
    q, k, v = inputs(B, H, L, E, dtype)
    block_mask = create_block_mask(mask_mod, B, H, L, L, BLOCK_SIZE=4)
    check(q, k, v, score_mod, block_mask)


def test_upstream_captured_buffer_score_mod():
    """_head_offset: a score_mod indexing a captured tensor by h (upstream's captured_buffers_map)."""
    q, k, v = inputs(1, 3, 7, 4, torch.float64)
    check(q, k, v, _head_offset(torch.float64, 3), None)


@pytest.mark.parametrize("name", list(_captured(1, 1, 2, torch.float64)))
def test_upstream_captured_buffer_tests(name):
    """test_flex_attention.py's tests whose score_mod reads captured tensors by b, h, q and kv, forward and
    backward (float64, B = 2, H = 2, S = 12)."""
    B, H, S = 2, 2, 12
    q, k, v = inputs(B, H, S, 4, torch.float64)
    check(q, k, v, _captured(B, H, S, torch.float64)[name], None)


@pytest.mark.parametrize("name", list(GYM_MASKS))
def test_attention_gym_masks(name):
    """attention-gym's masks through create_block_mask and flex_attention, forward and backward (float64),
    with B = 2, H = 2 and 12 tokens (natten: a 4 × 3 canvas, 3 × 3 kernel; documents 3, 5, 4)."""
    q, k, v = inputs(2, 2, 12, 4, torch.float64)
    block_mask = create_block_mask(GYM_MASKS[name], None, None, 12, 12, BLOCK_SIZE=4)
    check(q, k, v, None, block_mask)


@pytest.mark.parametrize("name", list(GYM_SCORES))
def test_attention_gym_score_mods(name):
    q, k, v = inputs(1, 4, 9, 4, torch.float64)
    check(q, k, v, GYM_SCORES[name], create_block_mask(gym_causal_mask, None, None, 9, 9, BLOCK_SIZE=4))


def test_float32_long_enough_for_the_kernel_routes():
    """T = 96 (above the kernels' 64² scores per head): causal, window and documents in float32, forward
    and backward, against the float64 reference (the mask read vectorised here: pure index masks)."""
    B, H, L, E = 1, 2, 96, 16
    for mask_mod in (gym_causal_mask, generate_sliding_window(20),
                     generate_doc_mask_mod(gym_causal_mask, length_to_offsets([30, 40, 26]))):
        q, k, v = inputs(B, H, L, E, torch.float32)
        block_mask = create_block_mask(mask_mod, None, None, L, L)
        idx = torch.arange(L)
        mask = torch.stack([mask_mod(_t(0), _t(0), _t(i), idx) for i in range(L)])   # (L, S), row by row
        out = flex_attention(q, k, v, block_mask=block_mask)
        want = reference(q, k, v, None, mask.expand(B, H, L, L))[0]
        torch.testing.assert_close(out.double(), want, atol=2e-5, rtol=2e-5)
        grad = torch.randn(out.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
        got = torch.autograd.grad(out, (q, k, v), grad.float())
        wanted = torch.autograd.grad(want, (q, k, v), grad)
        for a, b in zip(got, wanted):
            torch.testing.assert_close(a.double(), b.double(), atol=1e-4, rtol=1e-4)


def test_gqa_and_key_batch_broadcast():
    """enable_gqa (Hq = 4 over Hkv = 2: query head h reads kv head h // 2) and a mask that depends on b and h."""
    q, k, v = inputs(2, 4, 8, 4, torch.float64, Hkv=2)
    block_mask = create_block_mask(lambda b, h, m, n: (m >= n) | (h == b), 2, 4, 8, 8, BLOCK_SIZE=4)
    check(q, k, v, _rel_bias, block_mask, enable_gqa=True)
    with pytest.raises(ValueError, match="Try setting enable_gqa=True"):
        flex_attention(q, k, v)
    # keys and values of batch 1 under queries of batch 2 (torch allows it with a BlockMask of the queries' batch)
    k1, v1 = (x[:1].detach().requires_grad_() for x in (k, v))
    check(q, k1, v1, None, block_mask, enable_gqa=True)
    with pytest.raises(ValueError, match="same batch size"):
        flex_attention(q, k1, v1, enable_gqa=True)


def test_from_kv_blocks_without_mask_mod_and_tq_ne_tk():
    """A BlockMask made of blocks alone (BlockMask.from_kv_blocks, noop mask_mod): the blocks are the mask;
    L = 8 queries, S = 12 keys."""
    num = torch.tensor([[[1, 2]]], dtype=torch.int32)
    idx = torch.tensor([[[[2, 0, 0], [0, 1, 0]]]], dtype=torch.int32)
    block_mask = BlockMask.from_kv_blocks(num, idx, BLOCK_SIZE=4, seq_lengths=(8, 12))
    q, k, v = inputs(1, 1, 8, 4, torch.float64, S=12)
    check(q, k, v, None, block_mask)


def test_a_row_with_no_key_is_zero_with_lse_minus_inf_and_bf16_lse_float32():
    mask_mod = lambda b, h, m, n: (m != 3) & (m >= n)  # noqa: E731
    q, k, v = inputs(1, 1, 6, 4, torch.bfloat16)
    out, lse = flex_attention(q, k, v, block_mask=create_block_mask(mask_mod, 1, 1, 6, 6), return_lse=True)
    assert lse.dtype == torch.float32 and out.dtype == torch.bfloat16   # torch's dtypes
    assert lse[0, 0, 3] == -math.inf and bool((out[0, 0, 3] == 0).all())
    out.float().sum().backward()
    assert all(bool(torch.isfinite(x.grad).all()) for x in (q, k, v))


def test_torch_words_for_a_block_mask_of_another_length_and_a_sliced_one():
    q, k, v = inputs(1, 1, 8, 4, torch.float32)
    with pytest.raises(ValueError, match="created for a smaller length"):
        flex_attention(q, k, v, block_mask=create_block_mask(_causal_mask, 1, 1, 4, 4))
    with pytest.raises(ValueError, match="created for a larger length"):
        flex_attention(q, k, v, block_mask=create_block_mask(_causal_mask, 1, 1, 16, 16))
    with pytest.raises(RuntimeError, match="sliced BlockMask"):
        flex_attention(q, k, v, block_mask=create_block_mask(_causal_mask, 2, 1, 8, 8)[0])


def test_stale_block_mask_is_refused():
    """A BlockMask whose mask_mod reads a tensor changed in place after it was used raises ValueError
    naming that tensor (torch's own flex would mix old blocks with the new tensor)."""
    allowed = torch.ones(8, dtype=torch.bool)
    mask_mod = and_masks(_causal_mask, lambda b, h, m, n: allowed[n])
    block_mask = create_block_mask(mask_mod, 1, 1, 8, 8, BLOCK_SIZE=4)
    q, k, v = inputs(1, 1, 8, 4, torch.float64)
    flex_attention(q, k, v, block_mask=block_mask)
    allowed[2] = False
    with pytest.raises(ValueError, match="'allowed' captured by"):
        flex_attention(q, k, v, block_mask=block_mask)
    check(q, k, v, None, create_block_mask(mask_mod, 1, 1, 8, 8, BLOCK_SIZE=4))   # built again: the new mask


def test_mask_mod_errors_name_mask_mod():
    q, k, v = inputs(1, 1, 8, 4, torch.float32)
    num = torch.tensor([[[1, 1]]], dtype=torch.int32)
    idx = torch.tensor([[[[0, 1], [0, 1]]]], dtype=torch.int32)
    returns_float = BlockMask.from_kv_blocks(num, idx, BLOCK_SIZE=4, seq_lengths=(8, 8),
                                             mask_mod=lambda b, h, m, n: (m - n).float())
    with pytest.raises(TypeError, match="mask_mod .* must return booleans"):
        flex_attention(q, k, v, block_mask=returns_float)
    two_values = BlockMask.from_kv_blocks(num, idx, BLOCK_SIZE=4, seq_lengths=(8, 8),
                                          mask_mod=lambda b, h, m, n: torch.stack([m >= n, m >= n]))
    with pytest.raises(ValueError, match="mask_mod .* one value"):
        flex_attention(q, k, v, block_mask=two_values)


def test_random_masks_agree_with_the_reference():
    """Random per-(b, h) boolean tables indexed in the mask_mod (upstream's `am[b, h, q, kv]` style),
    random block sizes and lengths."""
    rng = random.Random(5)
    for trial in range(4):
        B, H, L, S = rng.randint(1, 2), rng.randint(1, 3), rng.randint(1, 11), rng.randint(1, 11)
        table = torch.rand(B, H, L, S, generator=torch.Generator().manual_seed(trial)) > 0.4

        def mask_mod(b, h, m, n):
            return table[b, h, m, n]

        q, k, v = inputs(B, H, L, 4, torch.float64, S=S, seed=trial)
        check(q, k, v, None, create_block_mask(mask_mod, B, H, L, S, BLOCK_SIZE=rng.choice([2, 4, 128])))


# --------- qkv's own entry points on flex-style functions (issue 31 §2, issue 32 §4) ---------
import qkv  # noqa: E402
from qkv import masks  # noqa: E402
from torch.nn.attention.flex_attention import and_masks as torch_and, or_masks as torch_or  # noqa: E402

TORCH_ONLY = {   # each failed on qkv.masks.block_mask's NumPy indices
    "(q - kv).abs()": lambda b, h, q, kv: (q - kv).abs() <= 3,
    "q.clamp(…)": lambda b, h, q, kv: q.clamp(5, 20) >= kv,
    "torch.abs": lambda b, h, q, kv: torch.abs(q - kv) <= 4,
    "torch and_masks": torch_and(lambda b, h, q, kv: q >= kv, lambda b, h, q, kv: q - kv < 6),
    "torch or_masks": torch_or(lambda b, h, q, kv: kv < 3, lambda b, h, q, kv: q >= kv),
    "natten (clamp, abs)": GYM_MASKS["natten"],
    "dilated window (torch.abs)": GYM_MASKS["dilated_window"],
    "prefix-LM (or_masks)": GYM_MASKS["prefix_lm"],
}


def _elementwise_mask(fn, T, b=0, h=0):
    """(T, T) NumPy bool, fn called with 0-d tensors one pair at a time."""
    return np.array([[bool(fn(_t(b), _t(h), _t(i), _t(j))) for j in range(T)] for i in range(T)])


@pytest.mark.parametrize("name", list(TORCH_ONLY))
def test_qkv_block_mask_takes_torch_written_masks(name):
    """qkv.masks.block_mask and qkv.attention (NumPy float64, and torch) with masks written for torch."""
    fn, T = TORCH_ONLY[name], 12
    want = _elementwise_mask(fn, T)
    block = masks.block_mask(fn, 1, 2, T, T, block_size=4)
    assert (masks.dense_mask(block, T, T) == want).all()
    x = np.random.default_rng(0).standard_normal((1, 2, T, 4))
    scores = np.where(want, x @ np.swapaxes(x, -1, -2) / 2.0, -np.inf)     # float64, written out: √4 = 2
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    expected = weights / weights.sum(axis=-1, keepdims=True) @ x
    np.testing.assert_allclose(qkv.attention(x, x, x, mask_mod=block), expected, atol=1e-12)
    np.testing.assert_allclose(qkv.attention(x, x, x, mask_mod=fn), expected, atol=1e-12)
    xt = torch.from_numpy(x)
    torch.testing.assert_close(qkv.attention(xt, xt, xt, mask_mod=fn), torch.from_numpy(expected), atol=1e-12,
                               rtol=1e-12)


def test_indexing_a_captured_table_twice_means_what_it_means_in_torch():
    """`bias[q_idx][kv_idx]` (mask and score) was refused (broadcast index arrays index the wrong axis);
    it is now evaluated per element, as flex_attention does. NumPy and torch, against the dense math."""
    T = 9
    table = torch.randn(T, T, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    mask_mod = lambda b, h, q, kv: table[q][kv] > -0.5  # noqa: E731
    score_mod = lambda s, b, h, q, kv: s + table[q][kv]  # noqa: E731
    allowed = table > -0.5
    q, k, v = inputs(1, 2, T, 4, torch.float64)
    got = qkv.attention(q, k, v, mask_mod=mask_mod, score_mod=score_mod)
    want = reference(q, k, v, score_mod, allowed.expand(1, 2, T, T))[0]
    torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)
    got_np = qkv.attention(*(x.detach().numpy() for x in (q, k, v)), mask_mod=mask_mod, score_mod=score_mod)
    np.testing.assert_allclose(got_np, want.detach().numpy(), atol=1e-12)
    block = masks.block_mask(mask_mod, 1, 2, T, T, block_size=4)
    assert (masks.dense_mask(block, T, T) == allowed.numpy()).all()


def test_qkv_block_mask_of_a_changed_tensor_is_refused():
    """A qkv.masks.BlockMask is an analysis of its function's values: a tensor the function reads,
    changed in place after block_mask, raises ValueError naming it (it silently gave stale blocks)."""
    window = torch.tensor(2)
    fn = lambda b, h, q, kv: (q >= kv) & (q - kv <= window)  # noqa: E731
    block = masks.block_mask(fn, 1, 1, 16, 16, block_size=4)
    x = torch.randn(1, 1, 16, 4)
    qkv.attention(x, x, x, mask_mod=block)
    window += 6
    with pytest.raises(ValueError, match="stale BlockMask: 'window' captured by <lambda>"):
        qkv.attention(x, x, x, mask_mod=block)
    fresh = masks.block_mask(fn, 1, 1, 16, 16, block_size=4)
    want = reference(x, x, x, None, torch.from_numpy(_elementwise_mask(fn, 16)).expand(1, 1, 16, 16))[0]
    torch.testing.assert_close(qkv.attention(x, x, x, mask_mod=fresh).double(), want, atol=2e-5, rtol=2e-5)


@pytest.mark.parametrize("result,words", [
    (lambda b, h, q, kv: None, "mask_mod must return booleans .* got NoneType None"),
    (lambda b, h, q, kv: torch.ones(3, dtype=torch.bool), "mask_mod '<lambda>' returned shape \\(3,\\) per element"),
    (lambda b, h, q, kv: (q - kv).float(), "mask_mod must return booleans .* got dtype torch.float32"),
])
def test_a_torch_mask_mod_of_the_wrong_type_or_shape_is_named(result, words):
    """Issue 32 §4: torch's own words ("can't convert np.ndarray of type numpy.object_", "The expanded
    size of the tensor…") reached the user without naming mask_mod."""
    x = torch.randn(1, 2, 8, 4)
    with pytest.raises((TypeError, ValueError), match=words):
        qkv.attention(x, x, x, mask_mod=result)


def test_q_on_meta_beside_k_v_on_the_cpu_is_a_device_mismatch():
    """Issue 32 §4: it failed with "Tensor.item() cannot be called on meta tensors"."""
    k = torch.randn(1, 2, 8, 4)
    with pytest.raises(ValueError, match="one device, got q on meta, k on cpu, v on cpu"):
        qkv.attention(k.to("meta"), k, k)
    with pytest.raises(ValueError, match="mask on meta"):
        qkv.attention(k, k, k, torch.ones(8, 8, dtype=torch.bool, device="meta"))
