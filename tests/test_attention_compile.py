"""qkv.attention itself under torch.compile(fullgraph=True): the traced route (kernels/route.py
`traced_torch_route`) decides without reading values, the C op keeps forward and backward, and the
plain path's value handling has no data-dependent branch. Outputs and gradients are compared with
the eager call and with float64 torch autograd through the plain path."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import qkv
from qkv import masks
from qkv.attention import _attention
from qkv.kernels import autograd as ag

T = 256


def _window_lambda(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx <= 40)


def _inputs(seed=0, shape=(2, 2, T, 16)):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g) for _ in range(3)]


_WINDOW = masks.sliding_window(32)
_BLOCK_MASK = masks.block_mask(_window_lambda, 2, 2, T, T)
_DOCS = masks.document(np.repeat(np.arange(4), T // 4))
_BATCH_DOCS = masks.document(np.stack([np.repeat(np.arange(4), T // 4), np.repeat(np.arange(2), T // 2)]))
# each case's keyword arguments, made inside the compiled function (so masks built there are traced)
CASES = {
    "causal": lambda: dict(causal=True),
    "catalogue window": lambda: dict(mask_mod=_WINDOW),
    "catalogue built inside": lambda: dict(mask_mod=masks.sinks(3) | masks.sliding_window(32) & masks.causal()),
    "catalogue with ids": lambda: dict(mask_mod=_DOCS & masks.causal()),
    "per-batch documents": lambda: dict(mask_mod=_BATCH_DOCS | masks.sinks(2)),   # two ranges, by batch
    "lambda": lambda: dict(mask_mod=_window_lambda),
    "lambda made inside": lambda: dict(mask_mod=lambda b, h, q_idx, kv_idx: q_idx - kv_idx <= 40),
    "BlockMask": lambda: dict(mask_mod=_BLOCK_MASK),
    "unmasked": lambda: {},
}


def _grads(fn, q, k, v, dout):
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    out = fn(*leaves)
    out.backward(dout)
    return out.detach(), [x.grad for x in leaves]


@pytest.fixture
def forward_calls(monkeypatch):
    """How many times the C forward ran (the custom op's body calls it)."""
    calls = []
    real = ag._forward_tensors

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(ag, "_forward_tensors", counted)
    return calls


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("route", [None, "plain"])
def test_fullgraph_compile_of_attention_matches_eager(name, route, forward_calls):
    make = CASES[name]
    torch._dynamo.reset()
    q, k, v = _inputs()
    dout = _inputs(1)[0]

    def fn(q, k, v):
        return _attention(q, k, v, route=route, **make())

    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
    eager_out, eager_grads = _grads(fn, q, k, v, dout)
    forward_calls.clear()
    out, grads = _grads(compiled, q, k, v, dout)
    torch.testing.assert_close(out, eager_out, rtol=1e-6, atol=1e-6)
    for got, want in zip(grads, eager_grads):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    # without route="plain" the compiled call ran the C op (CPU float32 of 256² scores per head)
    assert bool(forward_calls) == (route is None)
    # and both agree with float64 torch autograd through the plain path
    ref_out, ref_grads = _grads(lambda *x: _attention(*x, route="plain", **make()),
                                *(x.double() for x in (q, k, v)), dout.double())
    torch.testing.assert_close(out.double(), ref_out, rtol=2e-5, atol=2e-5)
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got.double(), want, rtol=2e-4, atol=2e-4)


def test_a_new_mask_object_is_not_served_the_old_graphs_key_ranges():
    """The route and key ranges are constants of a compiled graph: a different mask must not reuse them."""
    torch._dynamo.reset()
    q, k, v = _inputs(4)
    holder = [masks.sliding_window(8)]

    def fn(q, k, v):
        return qkv.attention(q, k, v, mask_mod=holder[0])

    compiled = torch.compile(fn, fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(q, k, v), fn(q, k, v))
    holder[0] = masks.sliding_window(100)
    torch.testing.assert_close(compiled(q, k, v), fn(q, k, v))
    ref = _attention(*(x.double() for x in (q, k, v)), mask_mod=masks.sliding_window(100), route="plain")
    torch.testing.assert_close(compiled(q, k, v).double(), ref, rtol=1e-5, atol=1e-5)
    # another length: the sizes are guarded numbers, not symbols the key ranges would be baked for
    q, k, v = _inputs(5, (1, 2, T + 64, 16))
    ref = _attention(*(x.double() for x in (q, k, v)), mask_mod=masks.sliding_window(100), route="plain")
    torch.testing.assert_close(compiled(q, k, v).double(), ref, rtol=1e-5, atol=1e-5)


def test_traced_plain_path_keeps_non_finite_values_of_masked_keys_out():
    """Under compile the plain path has no branch on the values: a NaN or inf value of a key a row may
    not see does not reach that row; rows that see it get what the sum gives (NaN or that inf)."""
    torch._dynamo.reset()
    q, k, v = (x.double() for x in _inputs(5, (1, 2, 12, 4)))
    v = v.clone()
    v[0, 0, 5, 1] = float("nan")
    v[0, 1, 7, 2] = float("inf")
    v[0, 1, 8, 2] = float("-inf")
    v[0, 0, 9, 3] = float("inf")

    def fn(q, k, v):
        return qkv.attention(q, k, v, causal=True)

    out = torch.compile(fn, fullgraph=True, backend="eager")(q, k, v)
    expected = fn(q, k, v)
    torch.testing.assert_close(out, expected, equal_nan=True)
    # float64 by hand: softmax over each row's keys j <= i, then Σ w·v column by column (0·NaN never formed)
    qn, kn, vn = (x.numpy() for x in (q, k, v))
    for head in range(2):
        for i in range(12):
            s = qn[0, head, i] @ kn[0, head, :i + 1].T / 2.0
            w = np.exp(s - s.max())
            w /= w.sum()
            with np.errstate(invalid="ignore"):   # inf + (−inf) in head 1's column 2 from row 8: NaN, as expected
                want = [sum(w[j] * vn[0, head, j, c] for j in range(i + 1)) for c in range(4)]
            np.testing.assert_allclose(out[0, head, i].numpy(), want, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(expected[0, head, i].numpy(), want, rtol=1e-12, atol=1e-12)
    assert torch.isfinite(out[0, 0, :5]).all() and torch.isnan(out[0, 0, 5:, 1]).all()
    assert torch.isnan(out[0, 1, 8:, 2]).all() and (out[0, 1, 7, 2] == float("inf"))
    assert (out[0, 0, 9:, 3] == float("inf")).all()


def test_the_op_refuses_non_finite_values_under_compile():
    """Outside compile such a call takes the plain path; the compiled graph cannot branch, so the op
    itself says what is wrong."""
    torch._dynamo.reset()
    q, k, v = _inputs(6)
    v = v.clone()
    v[0, 0, 3, 0] = float("nan")

    def fn(q, k, v):
        return qkv.attention(q, k, v, causal=True)

    with pytest.raises(ValueError, match="non-finite value"):
        torch.compile(fn, fullgraph=True, backend="eager")(q, k, v)
    assert torch.isnan(fn(q, k, v)[0, 0, 3:, 0]).all()   # eager: the plain path


def test_compiling_attention_prints_no_warning_about_array_api_compats_caches():
    """Dynamo warns once per lru_cache-wrapped function it traces; array-api-compat's type checks are
    such functions (pure in their key). Compiling qkv.attention in a fresh process (Dynamo's warn_once
    has seen nothing) prints no warning at all; a global W read by the mask is guarded (a changed W
    recompiles: the result follows it)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import warnings
        warnings.simplefilter("default")
        import torch, qkv
        g = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(1, 2, 256, 32, generator=g) for _ in range(3))
        W = 16
        def f(q, k, v):
            return qkv.attention(q, k, v, mask_mod=lambda b, h, i, j: (i >= j) & (i - j <= W))
        compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
        errors = []
        for W in (16, 64):
            errors.append(float((compiled(q, k, v) - f(q, k, v)).abs().max()))
        print(max(errors))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.split()[-1]) < 1e-5
    assert "Warning" not in done.stderr, done.stderr


_OVERFLOWING = torch.compile(lambda q, k, v, causal: qkv.attention(q, k, v, causal=causal), fullgraph=True,
                             backend="aot_eager")


@pytest.mark.parametrize("dtype, grow, t, causal", [
    ("float32", 1e19, 16, False),     # a short call: traced SDPA before, the plain path now
    ("float32", 1e19, 160, False),    # the C op: its body asks the overflow look and takes the plain path
    ("float32", 1e19, 160, True),
    ("bfloat16", 1e19, 160, False),   # computed in float32 inside the op: past its range too
    ("float16", 40.0, 160, True),     # past float16's range, not float32's: the C passes in float32
    ("float64", 1e154, 80, False),    # traced SDPA: inside qkv's op, which reads the values
])
def test_compiled_scores_past_the_float_range_stay_finite(dtype, grow, t, causal):
    """|q|·|k|·Dk past the float range under torch.compile(fullgraph=True): the traced route reads no
    values, so the op's body (run with the real tensors) or the plain path's branch-free shift does the
    eager route's work; output and gradients against float64 autograd, as the eager test does
    (tests/test_attention.py). One compiled function serves every case (a new dtype or shape retraces)."""
    from overflow_reference import big_inputs, check_against_float64

    leaves, dout = big_inputs(dtype, grow, (1, 2, t, 32), seed=t)
    out = _OVERFLOWING(*leaves, causal)
    allowed = torch.ones(t, t, dtype=torch.bool).tril() if causal else None
    check_against_float64(out, leaves, dout, allowed, 1 / np.sqrt(32), dtype)


_MASKED = torch.compile(lambda q, k, v, mask, causal: qkv.attention(q, k, v, mask, causal=causal), fullgraph=True,
                        backend="aot_eager")


def _mask_array(kind: str, t: int):
    """(B = 3, 1 or H = 2, 1 or T, T) boolean masks: key padding (one run per row), with causal, a
    random hole pattern (not ranges), heads that differ (not ranges)."""
    g = torch.Generator().manual_seed(7)
    mask = (torch.arange(t)[None, :] < torch.tensor([t, 70, 1])[:, None])[:, None, None, :]
    if kind == "holes":
        mask = mask & (torch.rand(3, 1, t, t, generator=g) < 0.9)
    if kind == "heads differ":
        mask = mask.expand(3, 2, 1, t).clone()
        mask[0, 1, 0, 5] = False
    return mask


@pytest.mark.parametrize("kind, causal, ranges", [("padding", False, True), ("padding", True, True),
                                                  ("holes", False, False), ("heads differ", True, False)])
def test_compiled_mask_arrays_are_read_as_key_ranges_inside_the_op(kind, causal, ranges, forward_calls):
    """A boolean mask array under torch.compile: the op qkv::flash_attention_mask reads it at run time as
    the eager route does (each row one run of keys, heads alike: the C forward and backward on those
    ranges, every batch in one pass), else computes the plain path inside the op. Output and gradients
    against float64 autograd with the same mask (and the eager call)."""
    t = 200
    q, k, v = _inputs(3, (3, 2, t, 16))
    dout = _inputs(4, (3, 2, t, 16))[0]
    mask = _mask_array(kind, t)
    out, grads = _grads(lambda *a: _MASKED(*a, mask, causal), q, k, v, dout)
    assert bool(forward_calls) == ranges
    allowed = mask & torch.ones(t, t, dtype=torch.bool).tril() if causal else mask
    q64, k64, v64 = (x.double().requires_grad_() for x in (q, k, v))
    scores = (q64 @ k64.transpose(-1, -2) / 4).masked_fill(~allowed, -torch.inf)
    weights = torch.nan_to_num(torch.softmax(scores, dim=-1))           # a row with no key: zeros
    expected = weights @ v64
    expected.backward(dout.double())
    torch.testing.assert_close(out.double(), expected.detach(), rtol=2e-5, atol=2e-5)
    for mine, ref in zip(grads, (q64, k64, v64)):
        torch.testing.assert_close(mine.double(), ref.grad, rtol=1e-4, atol=1e-4)
    eager, eager_grads = _grads(lambda *a: qkv.attention(*a, mask, causal=causal), q, k, v, dout)
    torch.testing.assert_close(out, eager, rtol=1e-5, atol=1e-5)


def test_compiled_mask_array_with_scores_past_float32s_range_stays_finite():
    """The masked op asks the overflow look too: q·kᵀ past float32's range with a key-padding mask gives
    float64 autograd's answer, not NaN."""
    from overflow_reference import big_inputs, check_against_float64

    t = 160
    leaves, dout = big_inputs("float32", 1e19, (3, 2, t, 16), seed=9)
    mask = _mask_array("padding", t)
    mask = mask.clone()
    mask[2] = True   # (no empty row: float64's softmax would give NaN there)
    out = _MASKED(*leaves, mask, False)
    check_against_float64(out, leaves, dout, mask, 0.25, "float32")


@pytest.mark.parametrize("q_shape, kv_shape", [((2, 4, 150, 8), (2, 2, 150, 8)),          # GQA
                                               ((2, 3, 2, 150, 8), (2, 3, 2, 150, 8))])   # two batch dimensions
def test_compiled_mask_arrays_as_ranges_keep_gqa_and_batch_dimensions(q_shape, kv_shape):
    """The masked op's layouts: GQA heads and several batch dimensions, per-batch key padding with causal;
    output against float64 (a row with no key: zeros) and gradients equal to the eager call's (the same
    C passes)."""
    g = torch.Generator().manual_seed(12)
    q = torch.randn(q_shape, generator=g)
    k, v = (torch.randn(kv_shape, generator=g) for _ in range(2))
    lengths = torch.randint(1, 151, q_shape[:-3] + (1, 1, 1), generator=g)
    mask = torch.arange(150) < lengths                                   # (…, 1, 1, Tk)
    dout = torch.randn(q_shape, generator=g)
    out, grads = _grads(lambda *a: _MASKED(*a, mask, True), q, k, v, dout)
    eager, eager_grads = _grads(lambda *a: qkv.attention(*a, mask, causal=True), q, k, v, dout)
    allowed = mask & torch.ones(150, 150, dtype=torch.bool).tril()
    groups = q_shape[-3] // kv_shape[-3]
    k64, v64 = (x.double().repeat_interleave(groups, dim=-3) for x in (k, v))
    scores = (q.double() @ k64.transpose(-1, -2) / np.sqrt(8)).masked_fill(~allowed, -torch.inf)
    expected = torch.nan_to_num(torch.softmax(scores, dim=-1)) @ v64
    torch.testing.assert_close(out.double(), expected, rtol=2e-5, atol=2e-5)
    for mine, theirs in zip(grads, eager_grads):
        torch.testing.assert_close(mine, theirs, rtol=1e-6, atol=1e-6)


_BIASED = torch.compile(lambda q, k, v, bias, slopes: qkv.attention(
    q, k, v, bias=bias, score_mod=None if slopes is None else masks.alibi(slopes)), fullgraph=True, backend="aot_eager")


@pytest.mark.parametrize("dtype, grow, t, what", [
    ("float32", 4e19, 16, "zero bias"),    # the traced plain path: the bias divided by the shift (NaN rows before)
    ("float32", 4e19, 16, "bias"),
    ("float32", 4e19, 16, "alibi"),        # a relative score function: its term divided by the shift
    ("bfloat16", 1e4, 160, "none"),        # the C op: its backward takes the plain one (the lse loses dv)
])
def test_compiled_large_scores_with_a_bias_or_alibi_match_float64(dtype, grow, t, what):
    """issue 31 §1 under torch.compile(fullgraph=True): output and gradients against float64 autograd of
    softmax(q·kᵀ·scale + bias + slope_h·(kv − q))·v written here."""
    torch._dynamo.reset()
    g = torch.Generator().manual_seed(3)
    tdt = getattr(torch, dtype)
    q, k = (torch.rand(1, 2, t, 16, generator=g, dtype=torch.float64) * 2 - 1 for _ in range(2))
    v, dout = (torch.randn(1, 2, t, 16, generator=g, dtype=torch.float64) for _ in range(2))
    leaves = [(x * s).to(tdt).requires_grad_() for x, s in ((q, grow), (k, grow), (v, 1.0))]
    bias = None if what in ("none", "alibi") else torch.zeros(1, 2, t, t, dtype=tdt) if what == "zero bias" \
        else (torch.randn(1, 2, t, t, generator=g, dtype=torch.float64) * 1e37).to(tdt)
    slopes = np.array([0.5, 0.25]) if what == "alibi" else None
    out = _BIASED(*leaves, bias, slopes)
    (out.double() * dout).sum().backward()
    ref = [x.detach().double().requires_grad_() for x in leaves]
    s = ref[0] @ ref[1].transpose(-1, -2) * 0.25
    if bias is not None:
        s = s + bias.double()
    if slopes is not None:
        pos = torch.arange(t, dtype=torch.float64)
        s = s + torch.tensor(slopes)[:, None, None] * (pos[None, :] - pos[:, None])
    want = torch.softmax(s, dim=-1) @ ref[2]
    (want * dout).sum().backward()
    tol = 1e-5 if dtype == "float32" else 2e-2
    assert torch.isfinite(out).all()
    np.testing.assert_allclose(out.detach().double().numpy(), want.detach().numpy(), atol=tol, rtol=tol)
    for name, mine, theirs in zip("qkv", leaves, ref):
        bound = float(theirs.grad.abs().max()) + tol
        assert torch.isfinite(mine.grad).all(), name
        np.testing.assert_allclose(mine.grad.double().numpy() / bound, theirs.grad.numpy() / bound, atol=5 * tol,
                                   err_msg=name)
