"""qkv.masks (mask and score functions) on the plain path, the blocked kernel and torch tensors,
against torch's flex_attention (CPU, eager) and a float64 dense-mask reference written here.

Tolerances: float64 everywhere; ≤ 1e-12 against the dense reference (observed ≤ 2e-15) and
against flex_attention (it computes in float64 too).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import qkv
from qkv import masks
from qkv.attention import _attention, attention_reference
from qkv.kernels import blocked_attention

TOL = 1e-12


def dense_reference(q, k, v, allowed, scores_fn=None):
    """float64 softmax over the allowed keys (a dense (…, Tq, Tk) bool), rows with none → 0; GQA by
    repeating key/value heads. scores_fn(s) modifies the scaled scores (a score function's math,
    written here independently)."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    if k.ndim >= 3 and k.shape[-3] < q.shape[-3]:
        k = np.repeat(k, q.shape[-3] // k.shape[-3], axis=-3)
        v = np.repeat(v, q.shape[-3] // v.shape[-3], axis=-3)
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if scores_fn is not None:
        s = scores_fn(s)
    allowed = np.broadcast_to(allowed, s.shape)
    top = np.max(np.where(allowed, s, -np.inf), axis=-1, keepdims=True)
    e = np.where(allowed, np.exp(s - np.where(np.isfinite(top), top, 0)), 0.0)
    total = e.sum(-1, keepdims=True)
    return (e / np.where(total > 0, total, 1)) @ v


def flex(q, k, v, mask_mod=None, score_mod=None):
    """torch's flex_attention (eager, CPU) on NumPy inputs (B, H, T, D), float64."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    tq, tk = q.shape[-2], k.shape[-2]
    t = [torch.from_numpy(np.ascontiguousarray(a)) for a in (q, k, v)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        block_mask = None if mask_mod is None else create_block_mask(mask_mod, q.shape[0], q.shape[1], tq, tk,
                                                                      device="cpu")
        out = flex_attention(*t, score_mod=score_mod, block_mask=block_mask, enable_gqa=k.shape[1] != q.shape[1])
    return out.numpy()


def inputs(seed, b, h, g, tq, tk, d=5, dv=5):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((b, h, tq, d)), rng.standard_normal((b, g, tk, d)),
            rng.standard_normal((b, g, tk, dv)))


def every_path(q, k, v, **kw):
    """qkv.attention (NumPy: plain path at these sizes), the kernel with small blocks, the plain
    path, and qkv.attention on torch tensors."""
    t = [torch.from_numpy(a) for a in (q, k, v)]
    torch_kw = {name: torch.from_numpy(value) if isinstance(value, np.ndarray) else value for name, value in kw.items()}
    return {
        "attention": qkv.attention(q, k, v, **kw),
        "kernel": blocked_attention(q, k, v, block_q=16, block_k=24, **kw),
        "kernel default blocks": blocked_attention(q, k, v, **kw),
        "reference": attention_reference(q, k, v, **kw),
        "torch": qkv.attention(*t, **torch_kw).numpy(),
    }


# --------------------------------------------------------------------------- the catalogue vs flex
CASES = [  # (seed, H, G, Tq, Tk): odd sizes, GQA, Tq ≠ Tk
    (1, 2, 2, 1, 1), (2, 4, 2, 7, 7), (3, 4, 1, 129, 129), (4, 3, 3, 33, 70),
]


def case_masks(tq, tk):
    """Every catalogue entry for this (Tq, Tk); documents get key ids for Tk and query ids for the
    last Tq positions (Tq ≤ Tk), causal aligned bottom-right."""
    entries = masks.catalogue(max(tq, tk))
    if tq != tk:
        ids = np.repeat(np.arange(4), -(-tk // 4))[:tk]
        entries["document"] = masks.document(ids[tk - tq:], kv_ids=ids)
        entries["document + causal"] = entries["document"] & masks.causal(tk - tq)
    return entries


@pytest.mark.parametrize("seed,h,g,tq,tk", CASES)
def test_catalogue_matches_flex_attention_and_dense_reference(seed, h, g, tq, tk):
    """All catalogue entries at once: entry i is batch element i of one flex_attention call."""
    entries = list(case_masks(tq, tk).items())
    q, k, v = inputs(seed, len(entries), h, g, tq, tk)
    allowed = np.stack([masks.dense_mask(mask_mod, tq, tk) for _, mask_mod in entries])[:, None]  # (B, 1, Tq, Tk)
    expected = dense_reference(q, k, v, allowed)

    def batched(b, h, q_idx, kv_idx):
        result = None
        for i, (_, mask_mod) in enumerate(entries):
            term = mask_mod(b, h, q_idx, kv_idx) & (b == i)
            result = term if result is None else (result | term)
        return result

    np.testing.assert_allclose(flex(q, k, v, batched), expected, rtol=0, atol=TOL)
    for i, (name, mask_mod) in enumerate(entries):
        for path, out in every_path(q[i], k[i], v[i], mask_mod=mask_mod).items():
            assert out.shape == expected[i].shape, path
            np.testing.assert_allclose(out, expected[i], rtol=0, atol=TOL, err_msg=f"{name}: {path}")


def test_score_functions_match_flex_attention_and_their_formulas():
    q, k, v = inputs(5, 2, 4, 2, 7, 129)
    rng = np.random.default_rng(6)
    table = rng.standard_normal((4, 32))
    rel = np.arange(129)[None, :] - np.arange(7)[:, None]               # kv − q
    slopes = 2.0 ** (-8 * np.arange(1, 5) / 4)                           # ALiBi, H = 4: 1/4, 1/16, …
    buckets = t5_buckets_by_hand(rel)
    cases = [
        (masks.alibi(4), lambda s: s + slopes[:, None, None] * rel),
        (masks.soft_cap(1.5), lambda s: 1.5 * np.tanh(s / 1.5)),
        (masks.t5_relative_buckets(table), lambda s: s + table[:, buckets]),
    ]
    causal = masks.causal(129 - 7)
    for score_mod, by_hand in cases:
        allowed = masks.dense_mask(causal, 7, 129)
        expected = dense_reference(q, k, v, allowed, by_hand)
        np.testing.assert_allclose(flex(q, k, v, causal, score_mod), expected, rtol=0, atol=TOL, err_msg=str(score_mod))
        for path, out in every_path(q, k, v, mask_mod=causal, score_mod=score_mod).items():
            np.testing.assert_allclose(out, expected, rtol=0, atol=TOL, err_msg=f"{score_mod} {path}")


def t5_buckets_by_hand(rel, num_buckets=32, max_distance=128):
    """T5's bidirectional bucket, one position at a time (transformers' rule, float32 log)."""
    out = np.empty(rel.shape, np.int64)
    half = num_buckets // 2
    exact = half // 2
    for idx, r in np.ndenumerate(rel):
        bucket = half if r > 0 else 0
        n = abs(int(r))
        if n < exact:
            bucket += n
        else:
            large = np.float32(np.log(np.float32(n) / np.float32(exact))) / np.float32(math.log(max_distance / exact))
            bucket += min(exact + int(large * np.float32(half - exact)), half - 1)
        out[idx] = bucket
    return out


def test_t5_bucket_matches_transformers():
    t5 = pytest.importorskip("transformers.models.t5.modeling_t5")
    rel = torch.arange(-300, 300)[None, :]
    for bidirectional in (True, False):
        expected = t5.T5Attention._relative_position_bucket(rel, bidirectional=bidirectional, num_buckets=32,
                                                            max_distance=128)
        got = masks.t5_bucket(rel.numpy(), 32, 128, bidirectional)
        np.testing.assert_array_equal(got, expected.numpy())
        np.testing.assert_array_equal(masks.t5_bucket(rel, 32, 128, bidirectional).numpy(), expected.numpy())


# --------------------------------------------------------------------------- flex_attention's own functions
SLIDING = 3
DOCUMENT_ID = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3])
ALIBI_BIAS = torch.tensor([0.5, 0.25, 0.125, 0.0625], dtype=torch.float64)


def flex_causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def flex_sliding_window_causal(b, h, q_idx, kv_idx):
    causal_mask = q_idx >= kv_idx
    window_mask = q_idx - kv_idx <= SLIDING
    return causal_mask & window_mask


def flex_document_masking(b, h, q_idx, kv_idx):
    return DOCUMENT_ID[q_idx] == DOCUMENT_ID[kv_idx]


def flex_relative_positional(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx)


def flex_alibi(score, b, h, q_idx, kv_idx):
    bias = ALIBI_BIAS[h] * (kv_idx - q_idx)
    return score + bias


@pytest.mark.parametrize("mask_mod,score_mod", [
    (flex_causal, flex_relative_positional), (flex_sliding_window_causal, None),
    (flex_document_masking, flex_alibi),
])
def test_functions_written_for_flex_attention_work_unchanged(mask_mod, score_mod):
    """Functions from flex_attention's documentation (plain operators, torch tensors inside) work
    on NumPy arrays (the plain path and the kernel) and torch tensors."""
    q, k, v = inputs(7, 1, 4, 4, 11, 11)
    expected = flex(q, k, v, mask_mod, score_mod)
    with warnings.catch_warnings():   # qkv's probe and its calls through torch warn nothing: NumPy's __array_wrap__
        warnings.simplefilter("error")  # deprecation (a tensor times a probe array), torch's read-only array warning
        outs = every_path(q, k, v, mask_mod=mask_mod, score_mod=score_mod)
    for path, out in outs.items():
        np.testing.assert_allclose(out, expected, rtol=0, atol=TOL, err_msg=path)


# --------------------------------------------------------------------------- empty rows, lse, combinations
def test_rows_a_mask_leaves_empty_give_zeros_and_minus_infinite_lse():
    q, k, v = inputs(8, 1, 2, 2, 9, 12)
    mask_mod = masks.document(np.array([0, 0, 5, 5, 9, 9, 9, 1, 1]), kv_ids=np.repeat([0, 1, 2], 4))
    allowed = masks.dense_mask(mask_mod, 9, 12)
    empty = ~allowed.any(-1)
    assert empty.sum() == 5
    expected = dense_reference(q, k, v, allowed)
    for path in (qkv.attention, attention_reference, blocked_attention):
        out, lse = path(q, k, v, mask_mod=mask_mod, return_lse=True)
        np.testing.assert_allclose(out, expected, rtol=0, atol=TOL)
        assert np.all(out[:, :, empty] == 0) and np.all(np.isneginf(lse[:, :, empty]))
        assert np.all(np.isfinite(lse[:, :, ~empty]))
    nothing = lambda b, h, q_idx, kv_idx: kv_idx > q_idx + 1000
    for path in (qkv.attention, attention_reference, blocked_attention):
        assert np.all(path(q, k, v, mask_mod=nothing) == 0)


def test_mask_mod_is_anded_with_mask_and_causal():
    q, k, v = inputs(9, 2, 2, 2, 40, 40)
    mask = np.random.default_rng(10).random((40, 40)) < 0.7
    window = masks.sliding_window(5, 5)
    allowed = mask & masks.dense_mask(window, 40) & np.tril(np.ones((40, 40), bool))
    expected = dense_reference(q, k, v, allowed)
    for path, out in every_path(q, k, v, mask=mask, causal=True, mask_mod=window).items():
        np.testing.assert_allclose(out, expected, rtol=0, atol=TOL, err_msg=path)


def test_combinators_and_dense_masks():
    t = 20
    a, b = masks.sliding_window(3), masks.sinks(2)
    np.testing.assert_array_equal(masks.dense_mask(a | b, t), masks.dense_mask(a, t) | masks.dense_mask(b, t))
    np.testing.assert_array_equal(masks.dense_mask(a & b, t), masks.dense_mask(a, t) & masks.dense_mask(b, t))
    np.testing.assert_array_equal(masks.dense_mask(masks.and_masks(a, b, masks.causal()), t),
                                  masks.dense_mask(a, t) & masks.dense_mask(b, t) & np.tril(np.ones((t, t), bool)))
    by_rule = np.array([[i - 3 <= j <= i for j in range(t)] for i in range(t)])
    np.testing.assert_array_equal(masks.dense_mask(a, t), by_rule)


# --------------------------------------------------------------------------- block kinds
@settings(max_examples=40, deadline=None)
@given(index=st.integers(0, 9), t=st.integers(1, 90), bq=st.integers(1, 20), bk=st.integers(1, 20))
def test_block_kinds_never_contradict_the_mask(index, t, bq, bk):
    """EMPTY blocks hold no allowed pair and FULL blocks only allowed pairs (PARTIAL is always safe)."""
    name = list(masks.catalogue(t))[index]
    mask_mod = masks.catalogue(t)[name]
    dense = masks.dense_mask(mask_mod, t)
    kinds = masks.block_map(mask_mod, t, block_q=bq, block_k=bk)
    for (i, j), kind in np.ndenumerate(kinds):
        block = dense[i * bq:(i + 1) * bq, j * bk:(j + 1) * bk]
        if kind == masks.EMPTY:
            assert not block.any(), (name, i, j)
        if kind == masks.FULL:
            assert block.all(), (name, i, j)


def test_sliding_window_computes_only_the_band():
    """The kernel computes only blocks the window touches: counted through a score function (called
    once per computed block), scored entries ≤ T·(W + 2·block), not T²; memory O(T·D)."""
    import tracemalloc

    t, w, block = 4096, 64, 64
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((t, 16)).astype(np.float32) for _ in range(3))
    scored = []

    def counting(score, b, h, q_idx, kv_idx):
        scored.append(score.size)
        return score

    window = masks.sliding_window(w)
    blocked_attention(q[:600], k[:600], v[:600], mask_mod=window)   # first-call set-up (pool, BLAS limits)
    tracemalloc.start()
    try:
        out = blocked_attention(q, k, v, mask_mod=window, score_mod=counting, block_q=block, block_k=block)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(scored) <= t * (w + 2 * block)
    assert peak < t * t // 16        # a (T, T) bool would be t² bytes
    sample = slice(1000, 1100)
    expected = dense_reference(q[sample], k, v, masks.dense_mask(window, t)[sample])
    np.testing.assert_allclose(out[sample], expected, rtol=0, atol=4e-6)


def test_documents_cost_the_sum_of_their_squares():
    sizes = [100, 300, 50, 574]
    ids = np.repeat(np.arange(4), sizes)
    t = ids.size
    q, k, v = (np.random.default_rng(12).standard_normal((t, 8)) for _ in range(3))
    scored = []
    blocked_attention(q, k, v, mask_mod=masks.document(ids),
                      score_mod=lambda s, b, h, qi, ki: scored.append(s.size) or s, block_q=32, block_k=32)
    assert sum(scored) <= sum((n + 64) ** 2 for n in sizes)


# --------------------------------------------------------------------------- torch autograd, traces
def test_torch_gradients_through_mask_and_score_functions():
    q, k, v = (torch.tensor(a, requires_grad=True) for a in inputs(13, 1, 2, 2, 9, 9))
    mask_mod, score_mod = masks.sliding_window(2) | masks.sinks(1), masks.soft_cap(2.0)
    out = qkv.attention(q, k, v, mask_mod=mask_mod, score_mod=score_mod)
    out.sum().backward()
    allowed = torch.from_numpy(masks.dense_mask(mask_mod, 9))
    qr, kr, vr = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    s = 2.0 * torch.tanh((qr @ kr.transpose(-1, -2)) / math.sqrt(5) / 2.0)
    ref = torch.softmax(s.masked_fill(~allowed, -torch.inf), -1) @ vr
    ref.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=0, atol=TOL)
    for mine, theirs in ((q, qr), (k, kr), (v, vr)):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=0, atol=TOL)


def test_trace_records_the_modified_scores():
    q, k, v = inputs(14, 1, 2, 2, 4, 4)
    trace = qkv.Trace()
    qkv.attention(q[0], k[0], v[0], score_mod=masks.alibi(2), mask_mod=masks.causal(), record=trace)
    names = [step.name for step in trace.steps]
    assert names.index("scaled_scores") < names.index("modified_scores") < names.index("mask") < names.index("weights")
    rel = np.arange(4)[None, :] - np.arange(4)[:, None]
    expected = trace["scaled_scores"].value + masks.alibi_slopes(2)[:, None, None] * rel
    np.testing.assert_allclose(trace["modified_scores"].value, expected, rtol=0, atol=1e-15)
    assert "m_h" in trace["modified_scores"].formula


def test_alibi_slopes_follow_the_paper():
    np.testing.assert_allclose(masks.alibi_slopes(8), [2.0 ** -(i + 1) for i in range(8)])
    # non-powers of two: the 4 slopes of H = 4, then every other one of H = 8 (ALiBi's reference code)
    np.testing.assert_allclose(masks.alibi_slopes(6), [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3])


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="left must be ≥ 0"):
        masks.sliding_window(-1)
    with pytest.raises(TypeError, match="size must be an integer"):
        masks.chunked(2.5)
    with pytest.raises(ValueError, match="cap must be a positive finite number"):
        masks.soft_cap(0)
    with pytest.raises(ValueError, match="ids must be integers"):
        masks.document(np.zeros((2, 2, 2), int))
    with pytest.raises(TypeError, match="mask_mod must return booleans"):
        qkv.attention(*inputs(1, 1, 1, 1, 3, 3), mask_mod=lambda b, h, q, kv: q - kv)


# --------------------------------------------------------------------------- `qkv masks`
def test_masks_command_prints_each_mask_and_its_block_map(capsys):
    from qkv.cli import main

    assert main(["masks", "--length", "12", "--block", "4"]) == 0
    text = capsys.readouterr().out
    for name in masks.catalogue(12):
        assert f"{name}: " in text
    window = text.split("sliding window: ")[1].split("\n\n")[0].splitlines()
    rows = [line.strip() for line in window[1:13]]
    np.testing.assert_array_equal(np.array([[c == "█" for c in row] for row in rows]),
                                  masks.dense_mask(masks.sliding_window(1), 12))
    kinds = [line.split() for line in window[14:17]]
    letters = {masks.EMPTY: "S", masks.PARTIAL: "P", masks.FULL: "F"}
    assert kinds == [[letters[int(x)] for x in row] for row in masks.block_map(masks.sliding_window(1), 12,
                                                                                  block_q=4, block_k=4)]


def test_masks_command_figure_and_errors(tmp_path, capsys):
    from qkv.cli import main

    figure = tmp_path / "masks.png"
    assert main(["masks", "--length", "20", "--only", "document + causal", "--figure", str(figure)]) == 0
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 5000
    assert "document + causal" in capsys.readouterr().out
    assert main(["masks", "--only", "nonsense", "--figure", str(tmp_path / "never.png")]) == 2
    assert "--only: 'nonsense' is not one of " in capsys.readouterr().err
    assert not (tmp_path / "never.png").exists()


@settings(max_examples=30, deadline=None)
@given(index=st.integers(0, 9), t=st.integers(1, 80), bq=st.integers(1, 24), bk=st.integers(1, 24),
       seed=st.integers(0, 2**32 - 1))
def test_kernel_with_any_blocks_matches_the_dense_mask(index, t, bq, bk, seed):
    """Skipped, full, partial and reused (relative) mask blocks at any block sizes: the kernel's
    output equals the dense-mask reference."""
    name = list(masks.catalogue(t))[index]
    mask_mod = masks.catalogue(t)[name]
    q, k, v = inputs(seed % 1000, 1, 2, 2, t, t)
    expected = dense_reference(q, k, v, masks.dense_mask(mask_mod, t))
    out = blocked_attention(q, k, v, mask_mod=mask_mod, block_q=bq, block_k=bk)
    np.testing.assert_allclose(out, expected, rtol=0, atol=TOL, err_msg=name)


# --------------------------------------------------------------------------- user-written functions
def dense_ranges(allowed):
    """(lo, hi) per row when every row of a dense (Tq, Tk) mask allows one run of keys, else None;
    empty rows (0, 0). Written here from the dense mask, independently of qkv.masks."""
    lo, hi = [], []
    for row in allowed:
        keys = np.flatnonzero(row)
        if not len(keys):
            lo.append(0)
            hi.append(0)
            continue
        if keys[-1] - keys[0] + 1 != len(keys):
            return None
        lo.append(keys[0])
        hi.append(keys[-1] + 1)
    return np.array(lo), np.array(hi)


WINDOW = 37
USER_FUNCTIONS = {
    "window": lambda b, h, q, kv: (q >= kv) & (q - kv <= WINDOW),
    "chunks": lambda b, h, q, kv: (q // 50 == kv // 50) & (kv <= q),
    "every third": lambda b, h, q, kv: ((q - kv) % 3 == 0) & (kv <= q),
    "per head": lambda b, h, q, kv: (kv <= q + 10 * h) & (kv >= q - 40),
    "not arithmetic": lambda b, h, q, kv: np.asarray(kv <= q) & np.asarray(q - kv < 64),
}


@pytest.mark.parametrize("name", list(USER_FUNCTIONS))
@pytest.mark.parametrize("block", [16, 128])
def test_block_mask_of_a_user_function_matches_its_dense_mask(name, block):
    """block_mask's kinds are exactly the dense mask's per block (a block full / empty for every
    (b, h), else partial) and its key ranges are the rows' runs where every row has one."""
    fn, t, heads = USER_FUNCTIONS[name], 301, 3
    built = masks.block_mask(fn, 2, heads, t, t, block_size=block)
    dense = np.stack([masks.dense_mask(fn, t, b=b, h=h) for b in range(2) for h in range(heads)])
    n = -(-t // block)
    for i in range(n):
        for j in range(n):
            tile = dense[:, i * block:(i + 1) * block, j * block:(j + 1) * block]
            expected = masks.FULL if tile.all() else masks.EMPTY if not tile.any() else masks.PARTIAL
            assert built.kinds[i, j] == expected, (i, j)
    same = all(np.array_equal(d, dense[0]) for d in dense)
    expected = dense_ranges(dense[0]) if same else None
    got = built.key_ranges(t, t)
    if expected is None:
        assert got is None
    else:
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_array_equal(got[1], expected[1])
    assert name != "window" or got is not None
    assert name != "every third" or got is None


@pytest.mark.parametrize("name", list(USER_FUNCTIONS))
def test_user_functions_match_the_dense_mask_on_every_route(name):
    """qkv.attention with a user function, a BlockMask of it, and each kernel route: float32 against
    the float64 dense reference; a window takes flash_many (key ranges found), a function whose rows
    are not one run takes flash_rows with its block kinds."""
    from qkv.attention import _attention
    from qkv.kernels import choose_route
    from qkv.kernels.call import check_call

    fn, t = USER_FUNCTIONS[name], 300
    q, k, v = (a.astype(np.float32) for a in inputs(31, 1, 3, 3, t, t, d=16, dv=8))
    dense = np.stack([masks.dense_mask(fn, t, h=h) for h in range(3)])[None]
    expected = dense_reference(q, k, v, dense)
    built = masks.block_mask(fn, 1, 3, t, t)
    for mask_mod in (fn, built):
        call = check_call(q, k, v, mask_mod=mask_mod)
        chosen = choose_route(call, route="flash_many").name.value
        if name in ("window", "chunks"):
            assert chosen == "flash_many", name
        elif name == "every third":
            assert chosen == "flash_rows"
        for route in ("flash_many", "flash_rows", "py_walk", "numpy_walk", "plain"):
            out = _attention(q, k, v, mask_mod=mask_mod, route=route)
            np.testing.assert_allclose(out, expected, rtol=0, atol=4e-6, err_msg=f"{name} {route}")


def test_user_function_analysis_is_kept_per_function_and_shape(monkeypatch):
    """A plain function is analysed once per shape (kept with the function object); one whose
    closure holds an array is never analysed automatically, so changing the array changes the
    result (a kept analysis would be stale)."""
    calls = []
    real = masks._analyse_function
    monkeypatch.setattr(masks, "_analyse_function", lambda *a, **kw: calls.append(a[1:5]) or real(*a, **kw))
    t = 300
    q, k, v = inputs(32, 1, 2, 2, t, t, d=8, dv=8)
    fn = lambda b, h, q_idx, kv_idx: (q_idx >= kv_idx) & (q_idx - kv_idx <= 20)   # noqa: E731
    for _ in range(3):
        qkv.attention(q, k, v, mask_mod=fn)
    assert calls == [(1, 2, t, t)]
    qkv.attention(q[..., :200, :], k[..., :200, :], v[..., :200, :], mask_mod=fn)
    assert calls == [(1, 2, t, t), (1, 2, 200, 200)]
    ids = np.repeat(np.arange(3), 100)
    by_ids = lambda b, h, q_idx, kv_idx: ids[q_idx] == ids[kv_idx]   # noqa: E731
    calls.clear()
    first = qkv.attention(q, k, v, mask_mod=by_ids)
    np.testing.assert_allclose(first, dense_reference(q, k, v, ids[:, None] == ids[None, :]), rtol=0, atol=TOL)
    ids[:] = np.repeat(np.arange(5), 60)
    second = qkv.attention(q, k, v, mask_mod=by_ids)
    np.testing.assert_allclose(second, dense_reference(q, k, v, ids[:, None] == ids[None, :]), rtol=0, atol=TOL)
    assert calls == []


def test_block_mask_refuses_another_shape_and_bad_arguments():
    built = masks.block_mask(USER_FUNCTIONS["window"], 1, 2, 64, 64)
    q = np.zeros((1, 2, 65, 4))
    with pytest.raises(ValueError, match=r"BlockMask built for \(B, H, Tq, Tk\) = \(1, 2, 64, 64\).*\(1, 2, 65, 65\)"):
        qkv.attention(q, q, q, mask_mod=built)
    with pytest.raises(ValueError, match="block_size must be ≥ 1"):
        masks.block_mask(USER_FUNCTIONS["window"], 1, 1, 8, 8, block_size=0)
    with pytest.raises(TypeError, match="mask_mod must be a function"):
        masks.block_mask(3, 1, 1, 8, 8)


# PyTorch's flex tests index captured tensors in steps: bias[b][q_idx], bias[0][b, h][q_idx].
STEP_BIAS = torch.randn(2, 70, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
STEP_TABLE = torch.randn(1, 2, 3, 70, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
STEP_KEEP = torch.rand(2, 70, generator=torch.Generator().manual_seed(7)) < 0.7


def step_score(score, b, h, q_idx, kv_idx):
    return score + STEP_BIAS[b][q_idx] + STEP_TABLE[0][b, h][kv_idx]


def step_mask(b, h, q_idx, kv_idx):
    return STEP_KEEP[b][kv_idx] | (q_idx == kv_idx)


@pytest.mark.parametrize("t", [9, 70])
def test_functions_indexing_captured_tensors_in_steps_work_on_every_route(t):
    """Called with scalar b and h on every route (NumPy plain path, the kernel, torch SDPA, torch's
    plain path with return_lse), the same results as a dense float64 reference written here."""
    q, k, v = inputs(33, 2, 3, 3, t, t, d=6, dv=4)
    keep = STEP_KEEP.numpy()[:, :t]
    allowed = (keep[:, None, None, :] | np.eye(t, dtype=bool))                     # (B, 1, T, T)
    bias = STEP_BIAS.numpy()[:, None, :t, None] + STEP_TABLE.numpy()[0][:, :, None, :t]   # (B, H, T, T)
    expected = dense_reference(q, k, v, allowed, scores_fn=lambda s: s + bias)
    expected_mask_only = dense_reference(q, k, v, allowed)
    for path, out in every_path(q, k, v, mask_mod=step_mask, score_mod=step_score).items():
        np.testing.assert_allclose(out, expected, rtol=0, atol=TOL, err_msg=path)
    for path, out in every_path(q, k, v, mask_mod=step_mask).items():
        np.testing.assert_allclose(out, expected_mask_only, rtol=0, atol=TOL, err_msg=path)
    t_q, t_k, t_v = (torch.from_numpy(a) for a in (q, k, v))
    out, lse = qkv.attention(t_q, t_k, t_v, mask_mod=step_mask, return_lse=True)
    np.testing.assert_allclose(out.numpy(), expected_mask_only, rtol=0, atol=TOL)


def test_a_user_lambda_on_torch_takes_the_c_route_with_gradients():
    """On torch tensors (outside torch.compile) a plain index-arithmetic function is analysed too: a
    window lambda finds its key ranges and takes torch_flash (the C forward and backward); output and
    gradients against float64 autograd through the dense mask (float32 tolerance)."""
    from qkv.kernels import RouteName, choose_route
    from qkv.kernels.call import check_call

    fn = lambda b, h, q_idx, kv_idx: (q_idx >= kv_idx) & (q_idx - kv_idx <= 40)   # noqa: E731
    g = torch.Generator().manual_seed(44)
    q, k, v = (torch.randn(1, 2, 300, 16, generator=g) for _ in range(3))
    assert choose_route(check_call(q, k, v, mask_mod=fn)).name == RouteName.TORCH_FLASH
    leaves32 = [a.clone().requires_grad_() for a in (q, k, v)]
    leaves64 = [a.double().requires_grad_() for a in (q, k, v)]
    out = qkv.attention(*leaves32, mask_mod=fn)
    allowed = torch.from_numpy(masks.dense_mask(fn, 300))
    s = leaves64[0] @ leaves64[1].transpose(-1, -2) / 4
    expected = torch.softmax(s.masked_fill(~allowed, float("-inf")), dim=-1) @ leaves64[2]
    weights = torch.randn(out.shape, generator=g)
    (out * weights).sum().backward()
    (expected * weights.double()).sum().backward()
    torch.testing.assert_close(out.double(), expected.detach(), rtol=0, atol=2e-6)
    for mine, theirs in zip(leaves32, leaves64):
        torch.testing.assert_close(mine.grad.double(), theirs.grad, rtol=0, atol=2e-5)


def _window_of(w):
    """A window lambda made afresh on each call (a new function object and closure every time)."""
    return lambda b, h, q_idx, kv_idx: (q_idx >= kv_idx) & (q_idx - kv_idx <= w)


def test_fresh_lambdas_are_analysed_once_per_captured_value_and_shape(monkeypatch):
    """A lambda written afresh on every call is kept by its code, captured values and shape: analysed
    once; a changed captured int is another analysis (never the old one's result)."""
    calls = []
    real = masks._analyse_function
    monkeypatch.setattr(masks, "_analyse_function", lambda *a, **kw: calls.append(a[1:5]) or real(*a, **kw))
    monkeypatch.setattr(masks, "_AUTO", {})
    t = 300
    q, k, v = inputs(34, 1, 2, 2, t, t, d=8, dv=8)
    rows, cols = np.arange(t)[:, None], np.arange(t)[None, :]
    for w in (20, 20, 20, 50, 20, 50):
        out = qkv.attention(q, k, v, mask_mod=_window_of(w))
        np.testing.assert_allclose(out, dense_reference(q, k, v, (rows >= cols) & (rows - cols <= w)), rtol=0, atol=TOL)
    assert calls == [(1, 2, t, t), (1, 2, t, t)]   # w = 20 once, w = 50 once
    # equal values of other types are other keys (1 == 1.0 == True, but not as index arithmetic)
    keys = {masks._frozen_inputs(_window_of(x)) for x in (1, 1.0, True, np.int64(1), (1, 2))}
    assert len(keys) == 5 and None not in keys


def test_a_mutated_captured_array_is_never_served_from_a_cache(monkeypatch):
    """A lambda that captures an array (or a list, or another function) has no cache key: each call sees
    the array as it is now, on fresh closures and on one kept function alike."""
    monkeypatch.setattr(masks, "_AUTO", {})
    t = 300
    q, k, v = inputs(35, 1, 2, 2, t, t, d=8, dv=8)
    rows, cols = np.arange(t)[:, None], np.arange(t)[None, :]
    width = np.array([20])
    make = lambda: (lambda b, h, q_idx, kv_idx: (q_idx >= kv_idx) & (q_idx - kv_idx <= width[0]))   # noqa: E731
    kept = make()
    for w in (20, 60, 5):
        width[0] = w
        want = dense_reference(q, k, v, (rows >= cols) & (rows - cols <= w))
        for fn in (make(), kept):
            np.testing.assert_allclose(qkv.attention(q, k, v, mask_mod=fn), want, rtol=0, atol=TOL)
    for captured in (width, [20], lambda: 20):
        assert masks._frozen_inputs(lambda b, h, q_idx, kv_idx, c=captured: q_idx >= kv_idx) is None
        assert masks._frozen_inputs(lambda b, h, q_idx, kv_idx: q_idx - kv_idx <= len(str(captured))) is None
    assert masks._AUTO == {}


# --------------------------------------------------------------------------- arrays against the call's shape
# (h/masks) A constructor's per-batch, per-position or per-head array is checked against the call's
# (B, H, Tq, Tk) when the call is made: one InputError naming the argument, its shape and the call's
# (before: a bare IndexError from deep inside the route, or on some routes none).
SHAPE_CASES = {
    "document: fewer id rows than the batch": (lambda: masks.document(np.zeros((2, 12), int)), {},
                                               r"ids has shape \(2, 12\): its first axis is 2, but the call \(B, H, Tq, Tk\) = "
                                               r"\(4, 3, 12, 12\) has B = 4"),
    "document: more id rows than the batch": (lambda: masks.document(np.zeros((5, 12), int)), {},
                                              r"ids has shape \(5, 12\): its first axis is 5,"),
    "document: fewer ids than positions": (lambda: masks.document(np.zeros(11, int)), {},
                                           r"ids has shape \(11,\): its last axis is 11, .* needs at least 12"),
    "document: fewer key ids than keys": (lambda: masks.document(np.zeros(12, int), kv_ids=np.zeros((4, 9), int)), {},
                                          r"kv_ids has shape \(4, 9\): its last axis is 9,"),
    "document inside & and |": (lambda: masks.causal() & (masks.sinks(2) | masks.document(np.zeros((3, 12), int))),
                                {}, r"ids has shape \(3, 12\): its first axis is 3,"),
    "key ranges: fewer rows than queries": (lambda: masks.key_range_mask(np.zeros(7, int), np.ones(7, int)), {},
                                            r"lo has shape \(7,\): its last axis is 7,"),
    "key ranges per batch: other batch": (lambda: masks.key_range_mask(np.zeros((2, 12), int),
                                                                       np.arange(24).reshape(2, 12)), {},
                                          r"lo has shape \(2, 12\): its first axis is 2,"),
    "ALiBi: fewer slopes than heads": (None, {"score_mod": masks.alibi(2)}, r"slopes has shape \(2,\): its first axis is 2, "
                                       r"but the call \(B, H, Tq, Tk\) = \(4, 3, 12, 12\) has H = 3"),
    "T5: fewer table rows than heads": (None, {"score_mod": masks.t5_relative_buckets(np.zeros((1, 32)))},
                                        r"table has shape \(1, 32\): its first axis is 1,"),
}


@pytest.mark.parametrize("name", list(SHAPE_CASES))
@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_constructor_arrays_are_checked_against_the_call(name, library):
    from qkv.errors import InputError

    make, options, message = SHAPE_CASES[name]
    q = np.random.default_rng(0).standard_normal((4, 3, 12, 8))
    if library == "torch":
        q = torch.from_numpy(q)
    for route in (None, "plain"):
        with pytest.raises(InputError, match=message) as caught:
            _attention(q, q, q, mask_mod=make() if make else None, route=route, **options)
    korean = caught.value.say("ko")   # the same facts in Korean (texts.py), no English words
    assert "형태" in korean and not any(word in korean for word in ("shape", "axis", "rows", "heads", "call", "give"))


def test_one_id_row_serves_every_batch_and_padding_masks_name_their_shape():
    """document ids (1, T) are the same ids for every batch (before: an IndexError past batch 0); a
    padding_mask for another batch is refused naming both shapes."""
    rng = np.random.default_rng(1)
    q = rng.standard_normal((4, 3, 12, 8))
    ids = np.repeat(np.arange(3), 4)
    np.testing.assert_allclose(qkv.attention(q, q, q, mask_mod=masks.document(ids[None])),
                               qkv.attention(q, q, q, mask_mod=masks.document(ids)), rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"mask has shape \(2, 1, 1, 12\) but must broadcast to the scores' shape "
                                         r"\(4, 3, 12, 12\)"):
        qkv.attention(q, q, q, qkv.padding_mask([12, 5], 12))


# --------------------------------------------------------------------------- mask functions made inside torch.compile
# (h/masks) A mask lambda made inside the compiled function that captures a tensor of an enclosing function
# crashed Dynamo (ClosureConversionError: qkv handed the function to its eager analysis, which makes Dynamo
# rebuild it from its closure); a catalogue mask `&` such a lambda inside the trace broke the graph (a weak
# reference made in the trace). Now the first takes the plain path (traced), the second too; a closure over
# numbers still reaches the C op. Expected values: float64 torch autograd through the plain path, eagerly.
def _compiled_cases(window_tensor, window_int):
    return {
        "closure over an enclosing tensor": (lambda: lambda b, h, q, kv: (q >= kv) & (q - kv <= window_tensor), False),
        "catalogue & a lambda made inside": (lambda: masks.causal() & (lambda b, h, q, kv: q - kv <= window_int), False),
        "closure over an enclosing int": (lambda: lambda b, h, q, kv: (q >= kv) & (q - kv <= window_int), True),
    }


@pytest.mark.parametrize("name", list(_compiled_cases(None, None)))
def test_mask_lambdas_made_inside_torch_compile(name, monkeypatch):
    from qkv.kernels import autograd as ag

    calls = []
    real = ag._forward_tensors
    monkeypatch.setattr(ag, "_forward_tensors", lambda *args: calls.append(1) or real(*args))

    def build(window):   # the enclosing function whose variable the mask captures
        make, c_route = _compiled_cases(torch.tensor(window), window)[name]

        def fn(q, k, v):
            return qkv.attention(q, k, v, mask_mod=make())

        return torch.compile(fn, fullgraph=True, backend="aot_eager"), c_route

    torch._dynamo.reset()
    g = torch.Generator().manual_seed(3)
    q, k, v, dout = (torch.randn(2, 2, 128, 16, generator=g) for _ in range(4))
    compiled, c_route = build(20)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    out = compiled(*leaves)
    out.backward(dout)
    assert bool(calls) == c_route
    ref = [x.double().requires_grad_() for x in (q, k, v)]
    allowed = torch.from_numpy(np.tri(128, dtype=bool) & ~np.tri(128, k=-21, dtype=bool))   # q − 20 ≤ kv ≤ q
    want = _attention(*ref, allowed, route="plain")
    want.backward(dout.double())
    torch.testing.assert_close(out.detach().double(), want.detach(), rtol=0, atol=2e-6)
    for got, expected in zip(leaves, ref):
        torch.testing.assert_close(got.grad.double(), expected.grad, rtol=2e-5, atol=2e-5)
