"""The C training route for CPU torch tensors (qkv/kernels/autograd.py, _backward.c): forward and
gradients against float64 autograd through the plain path (qkv.attention_reference on float64
tensors: an independent computation, the full score matrix and torch's own softmax backward), on
every mask kind the route takes, GQA/MQA, batch dimensions, odd sizes, Tq ≠ Tk, empty rows,
non-contiguous and half-precision inputs; the custom op under torch.compile(fullgraph=True); and
the calls the route declines (which keep correct gradients on the other paths).

Tolerance: float32 results differ from float64 by rounding only; measured ≤ 6e-7 of the largest
reference value for these sizes, so 2e-5 (relative to the largest value) leaves room and still
catches any wrong term (a missing block, a wrong mask or scale gives errors ≥ 1e-2).
"""

import numpy as np
import pytest
import torch

import qkv
from qkv.errors import InputError
import qkv.masks as masks
from qkv.kernels import autograd as ag
from qkv.kernels import blas
from qkv.kernels import execute, native
from qkv.kernels import route
from qkv.kernels.call import check_call
from qkv.kernels.route import choose_route



TOL = 2e-5


def test_the_route_is_available_here():
    # the C extension, with its backward, is built in this project's environment (as tests/test_fused.py asserts)
    assert hasattr(native.fused, "backward_many") and ag.available()


def _inputs(q_shape, k_shape, v_shape, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g, dtype=dtype) for s in (q_shape, k_shape, v_shape)]


def _reference(q, k, v, dout, **options):
    """out, (dq, dk, dv) and lse in float64 through the plain path with torch autograd."""
    q, k, v = (x.detach().double().requires_grad_() for x in (q, k, v))
    out, lse = qkv.attention_reference(q, k, v, return_lse=True, **options)
    grads = torch.autograd.grad(out, (q, k, v), dout.double())
    return out.detach(), grads, lse.detach()


def _flash(q, k, v, dout, dtype=torch.float32, **options):
    q, k, v = (x.detach().to(dtype).requires_grad_() for x in (q, k, v))
    out, lse = execute.flash_attention(q, k, v, return_lse=True, **options)
    grads = torch.autograd.grad(out, (q, k, v), dout.to(dtype))
    return out.detach(), grads, lse.detach()


def _close(got, want, tol=TOL, what=""):
    got, want = got.double(), want.double()
    assert got.shape == want.shape, what
    # relative to the largest reference value; at least 0.1 (inputs and dout are O(1)): where the exact
    # gradient is 0 (one key: softmax does not depend on q) float32 leaves ~1e-8 of rounding
    scale = max(float(want.abs().max()), 0.1)
    err = float((got - want).abs().max()) / scale
    assert err <= tol, f"{what}: relative error {err:.2e} > {tol:.0e}"


def _check(q_shape, k_shape, v_shape, seed=0, dtype=torch.float32, tol=TOL, block_q=ag.BLOCK_Q,
           block_k=ag.BLOCK_K, **options):
    q, k, v = _inputs(q_shape, k_shape, v_shape, seed)
    ref_out = qkv.attention_reference(q, k, v, **options)
    dout = torch.randn(ref_out.shape, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64)
    out_ref, grads_ref, lse_ref = _reference(q, k, v, dout, **options)
    out, grads, lse = _flash(q, k, v, dout, dtype=dtype, block_q=block_q, block_k=block_k, **options)
    _close(out, out_ref, tol, "out")
    finite = torch.isfinite(lse_ref)
    assert torch.equal(torch.isfinite(lse), finite), "lse: −inf exactly on the rows with no key"
    _close(lse[finite], lse_ref[finite], tol, "lse")
    for name, got, want in zip("qkv", grads, grads_ref):
        _close(got, want, tol, f"d{name}")
    return out, grads, lse


# --------------------------------------------------------------------------- every mask kind
MASKS = {
    "none": {},
    "causal": {"causal": True},
    "causal mask_mod": {"mask_mod": masks.causal()},
    "causal offset": {"mask_mod": masks.causal(3)},
    "sliding window": {"mask_mod": masks.sliding_window(9)},
    "two-sided window": {"mask_mod": masks.sliding_window(5, 7)},
    "window and causal": {"mask_mod": masks.sliding_window(11, None), "causal": True},
    "prefix-LM": {"mask_mod": masks.prefix_lm(13)},
    "chunked": {"mask_mod": masks.chunked(16)},
    "chunked causal": {"mask_mod": masks.chunked(16) & masks.causal()},
    "documents": {"mask_mod": masks.document(np.repeat(np.arange(5), [3, 20, 1, 30, 46]))},
    "documents causal": {"mask_mod": masks.document(np.repeat(np.arange(4), [40, 1, 25, 34])) & masks.causal()},
}


@pytest.mark.parametrize("name", list(MASKS))
def test_gradients_match_float64_on_every_mask(name):
    _check((2, 3, 100, 16), (2, 3, 100, 16), (2, 3, 100, 8), block_q=32, block_k=16, **MASKS[name])


@pytest.mark.parametrize("name", ["none", "causal", "sliding window", "documents"])
def test_default_blocks_many_threads(name):
    # big enough for both passes to use the thread pool and, with one head, to split each head's
    # key blocks into ranges whose dQ parts are summed
    _check((1, 1, 700, 32), (1, 1, 700, 32), (1, 1, 700, 32), seed=3,
           **({"mask_mod": masks.document(np.repeat(np.arange(4), [100, 250, 50, 300]))} if name == "documents"
              else MASKS[name]))


# --------------------------------------------------------------------------- layouts and sizes
@pytest.mark.parametrize("tq,tk", [(1, 1), (1, 7), (7, 7), (7, 1), (129, 129), (33, 129), (129, 33)])
@pytest.mark.parametrize("causal", [False, True])
def test_odd_sizes_and_bottom_right_causal(tq, tk, causal):
    # Tq > Tk with causal: the first Tq − Tk rows see no key (zero output and gradients, lse −inf)
    out, grads, lse = _check((2, tq, 5), (2, tk, 5), (2, tk, 3), block_q=16, block_k=8, causal=causal)
    if causal and tq > tk:
        empty = tq - tk
        assert torch.all(out[:, :empty] == 0) and torch.all(grads[0][:, :empty] == 0)
        assert torch.all(torch.isneginf(lse[:, :empty]))


def test_grouped_query_and_multi_query_heads():
    _check((2, 6, 50, 8), (2, 2, 60, 8), (2, 2, 60, 4), block_q=16, block_k=16, causal=True)   # GQA, H/G = 3
    _check((2, 4, 50, 8), (2, 1, 50, 8), (2, 1, 50, 8), block_q=16, block_k=16,
           mask_mod=masks.sliding_window(7))                                                   # MQA
    _check((3, 40, 8), (40, 8), (40, 8), block_q=16, block_k=16)   # k, v broadcast over q's heads


def test_batch_dimensions_broadcast():
    # two batch dimensions; k and v shared by every batch entry (their gradients summed over it)
    _check((2, 3, 4, 30, 8), (1, 1, 4, 30, 8), (1, 1, 4, 30, 8), block_q=8, block_k=8, causal=True)
    _check((2, 30, 8), (2, 30, 8), (2, 30, 8), scale=0.3, block_q=8, block_k=16)


def test_empty_rows_from_a_mask():
    # a document's keys absent from the key sequence: its queries see nothing
    ids_q = np.repeat(np.arange(3), [10, 15, 15])
    ids_k = np.repeat(np.array([0, 2]), [12, 28])
    out, grads, lse = _check((2, 40, 8), (2, 40, 8), (2, 40, 8), block_q=8, block_k=8,
                             mask_mod=masks.document(ids_q, ids_k))
    rows = slice(10, 25)
    assert torch.all(out[:, rows] == 0) and torch.all(grads[0][:, rows] == 0)
    assert torch.all(torch.isneginf(lse[:, rows]))


def test_non_contiguous_inputs():
    q, k, v = _inputs((2, 40, 3, 8), (2, 40, 3, 8), (2, 40, 3, 8))
    q, k, v = (x.transpose(1, 2) for x in (q, k, v))   # (2, 3, 40, 8) views, not contiguous
    assert not q.is_contiguous()
    dout = torch.randn(2, 3, 40, 8, dtype=torch.float64)
    out_ref, grads_ref, _ = _reference(q, k, v, dout, causal=True)
    out, grads, _ = _flash(q, k, v, dout, causal=True, block_q=16, block_k=8)
    _close(out, out_ref)
    for got, want in zip(grads, grads_ref):
        _close(got, want)


@pytest.mark.parametrize("dtype,tol", [(torch.bfloat16, 2e-2), (torch.float16, 3e-3)])
def test_half_precision_inputs_computed_in_float32(dtype, tol):
    # the inputs are rounded to dtype first; the reference gets the same rounded values
    q, k, v = (x.to(dtype).double() for x in _inputs((2, 50, 16), (2, 50, 16), (2, 50, 16)))
    dout = torch.randn(2, 50, 16, dtype=torch.float64).to(dtype).double()
    out_ref, grads_ref, _ = _reference(q, k, v, dout, causal=True)
    out, grads, _ = _flash(q, k, v, dout, dtype=dtype, causal=True, block_q=16, block_k=16)
    assert out.dtype == dtype and all(g.dtype == dtype for g in grads)
    _close(out, out_ref, tol)
    for got, want in zip(grads, grads_ref):
        _close(got, want, tol)


def test_gradient_through_lse():
    # a loss on the lse too (ring attention merges partials with it): d lse / d score = P
    q, k, v = _inputs((2, 60, 8), (2, 60, 8), (2, 60, 8))
    weights = torch.randn(2, 60, dtype=torch.float64)

    def loss(out, lse):
        return out.square().sum() + (weights * lse).sum()

    qd, kd, vd = (x.clone().requires_grad_() for x in (q, k, v))
    want = torch.autograd.grad(loss(*qkv.attention_reference(qd, kd, vd, causal=True, return_lse=True)), (qd, kd, vd))
    qf, kf, vf = (x.float().requires_grad_() for x in (q, k, v))
    got = torch.autograd.grad(loss(*execute.flash_attention(qf, kf, vf, causal=True, return_lse=True, block_q=16,
                                                     block_k=16)), (qf, kf, vf))
    for g, w in zip(got, want):
        _close(g, w)


@pytest.mark.parametrize("width", [1, 8, 16], ids=["scalar", "avx2", "avx512"])
def test_every_vector_loop_of_the_backward(width):
    # the loops are chosen per call (width=; 16 on a CPU without AVX-512 runs the widest it has)
    assert ag.available()   # (hands NumPy's sgemm to the extension)
    q, k, v, dout = (x.float().numpy() for x in _inputs((2, 70, 16), (2, 70, 16), (2, 70, 16)) +
                     [torch.randn(2, 70, 16, dtype=torch.float64)])
    rows = ag.row_ranges(check_call(q, k, v, causal=True))
    out, lse = ag.forward_arrays(q, k, v, rows, 0.25, 16, 16)
    out_ref = qkv.attention_reference(*(x.astype(np.float64) for x in (q, k, v)), causal=True, scale=0.25)
    np.testing.assert_allclose(out, out_ref, atol=1e-5)
    _, grads_ref, _ = _reference(*(torch.from_numpy(x) for x in (q, k, v, dout)), causal=True, scale=0.25)
    grads = ag.backward_arrays(dout, q, k, v, out, lse, rows, 0.25, None, 16, 16, width=width)
    for got, want in zip(grads, grads_ref):
        _close(torch.from_numpy(got), want)


def test_arrays_threads_and_parts_agree():
    """backward_arrays with one thread, and with several threads splitting one head's keys into
    ranges (dQ parts), gives the same gradients to rounding."""
    rng = np.random.default_rng(5)
    q, k, v, dout = (rng.standard_normal((1, 300, 16)).astype(np.float32) for _ in range(4))
    rows = ag.row_ranges(check_call(q, k, v, causal=True))
    out, lse = ag.forward_arrays(q, k, v, rows, 0.25, 32, 32)
    one = ag.backward_arrays(dout, q, k, v, out, lse, rows, 0.25, None, 32, 32, threads=1)
    many = ag.backward_arrays(dout, q, k, v, out, lse, rows, 0.25, None, 32, 32, threads=3)
    for a, b in zip(one, many):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * np.abs(a).max())


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("name", ["none", "causal", "sliding window", "documents", "unseen keys", "gqa"])
def test_threaded_backward_one_key_block_per_task(name, threads):
    """With threads, every task is one key block and each thread adds dQ into its own part (summed
    at the end): against float64 autograd, on GQA heads and on key blocks no query sees (their dK,
    dV must be exactly 0: the arrays start uninitialised, so a skipped block would leave garbage)."""
    assert ag.available()   # (hands NumPy's sgemm to the extension)
    heads, kv_heads = (4, 2) if name == "gqa" else (3, 3)
    q, k, v, dout = _inputs((heads, 200, 16), (kv_heads, 200, 16), (kv_heads, 200, 8), seed=7) + \
        [torch.randn(heads, 200, 8, generator=torch.Generator().manual_seed(8), dtype=torch.float64)]
    ids_k = np.repeat(np.arange(3), [60, 70, 70])
    options = {"causal": {"causal": True}, "gqa": {"causal": True},
               "sliding window": {"mask_mod": masks.sliding_window(20)},
               "documents": {"mask_mod": masks.document(ids_k)},
               # the last 70 keys belong to a document none of the queries is in
               "unseen keys": {"mask_mod": masks.document(np.repeat(np.arange(2), [120, 80]), ids_k)},
               }.get(name, {})
    out_ref, grads_ref, _ = _reference(q, k, v, dout, **options)
    q32, k32, v32, d32 = (np.ascontiguousarray(x.float().numpy()) for x in (q, k, v, dout))
    call = check_call(q32, k32, v32, **options)
    rows = ag.row_ranges(call)
    scale = 16 ** -0.5
    out, lse = ag.forward_arrays(q32, k32, v32, rows, scale, 32, 16, threads=threads)
    _close(torch.from_numpy(out), out_ref, what="out")
    plan = ag._plan(rows, 200, 200, 32, 16)
    tasks = ag._backward_tasks(plan, kv_heads, threads)
    assert len(tasks) == kv_heads * 13 and np.all(tasks[:, 2] - tasks[:, 1] == 1)   # 200 keys / 16: 13 blocks
    weights = plan.kb_weight[tasks[::kv_heads, 1]]
    assert np.all(np.diff(weights) <= 0), "heaviest key blocks first"
    for group in (1, 2, 3):   # consecutive query blocks of a key block as one taller block (backward_many's group)
        grads = ag.backward_arrays(d32, q32, k32, v32, out, lse, rows, scale, None, 32, 16, threads=threads,
                                   group=group)
        for letter, got, want in zip("qkv", grads, grads_ref):
            _close(torch.from_numpy(got), want, what=f"d{letter}, group {group}")
        if name == "unseen keys":
            assert np.all(grads[1][:, 130:] == 0) and np.all(grads[2][:, 130:] == 0)


def test_backward_part_and_group_out_of_range_are_refused():
    assert ag.available()
    q = np.zeros((1, 8, 4), np.float32)
    rows = ag.row_ranges(check_call(q, q, q, causal=True))
    out, lse = ag.forward_arrays(q, q, q, rows, 0.5, 8, 8)
    plan = ag._plan(rows, 8, 8, 8, 8)
    dq, dk, dv = np.zeros((2, 8, 4), np.float32), np.empty((1, 8, 4), np.float32), np.empty((1, 8, 4), np.float32)
    tasks = np.array([[0, 0, 1, 0]], np.int64)
    args = (q, q, q, q, lse, np.zeros((1, 8), np.float32), rows, dq, dk, dv, tasks, plan.pairs, plan.offsets,
            np.zeros(1, np.int64), 8, 8, 0.5)
    for part in (2, -2):
        with pytest.raises(ValueError, match="part"):
            native.fused.backward_many(*args, part=part)
    for group in (0, 65):
        with pytest.raises(ValueError, match="group"):
            native.fused.backward_many(*args, group=group)


# --------------------------------------------------------------------------- qkv.attention's route
def _node_names(t):
    names, todo = [], [t.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is not None:
            names.append(type(fn).__name__)
            todo += [n for n, _ in fn.next_functions]
    return names


def test_qkv_attention_takes_the_route_for_float32_torch():
    q, k, v = (x.float().requires_grad_() for x in _inputs((2, 4, 80, 16), (2, 2, 80, 16), (2, 2, 80, 16)))
    out = qkv.attention(q, k, v, mask_mod=masks.sliding_window(20))
    assert "FlashAttentionBackward" in _node_names(out)
    dout = torch.randn(out.shape, dtype=torch.float64)
    out.backward(dout.float())
    out_ref, grads_ref, _ = _reference(q, k, v, dout, mask_mod=masks.sliding_window(20))
    _close(out.detach(), out_ref)
    for got, want in zip((q.grad, k.grad, v.grad), grads_ref):
        _close(got, want)


def test_declined_calls_keep_correct_gradients():
    q, k, v = _inputs((2, 70, 8), (2, 70, 8), (2, 70, 8))

    def route_of(*args, **options):
        return choose_route(check_call(*args, **options)).name

    assert route_of(q.float(), k.float(), v.float(), causal=True) == route.TORCH_FLASH
    # float64 stays on the plain path (torch autograd); short calls a gradient is asked of go to SDPA (short
    # forward calls too, but on CPUs whose rules take them in C: AVX-512 without AMX, kernels/speed.py short_in_c)
    assert route_of(q, k, v, causal=True) != route.TORCH_FLASH
    short = [x[:, :10].float().requires_grad_() for x in (q, k, v)]
    assert route_of(*short) == route.TORCH_SDPA
    # a mask function without key ranges, a mask array, a bias, non-finite values: declined, with a reason
    lam = lambda b, h, qi, ki: (qi - ki) % 3 == 0   # noqa: E731
    qf, kf, vf = (x.float() for x in (q, k, v))
    for options in ({"mask_mod": lam}, {"mask": torch.rand(70, 70) > 0.5}, {"bias": torch.randn(70, 70)}):
        call = check_call(qf, kf, vf, options.pop("mask", None), **options)
        assert route.torch_flash_why_not(call) is not None
        assert choose_route(call).name != route.TORCH_FLASH
    bad = vf.clone()
    bad[0, 5, 0] = float("nan")
    assert "non-finite" in route.torch_flash_why_not(check_call(qf, kf, bad, causal=True))
    with pytest.raises(ValueError, match="training route"):
        execute.flash_attention(q, k, v)
    # through qkv.attention a NaN value that no query attends to (key 5, hidden by causal from
    # rows < 5) reaches only the rows that attend to it
    out = qkv.attention(qf, kf, bad, causal=True)
    assert torch.isfinite(out[:, :5]).all() and torch.isnan(out[0, 5:, 0]).all()


def test_route_pinned_by_argument():
    """route="torch_flash" takes the C route even for a short call; the result and gradients agree
    with SDPA's route on the same float32 inputs."""
    from qkv.attention import _attention

    q, k, v = (x.float().requires_grad_() for x in _inputs((2, 2, 20, 8), (2, 2, 20, 8), (2, 2, 20, 8)))
    out = _attention(q, k, v, causal=True, route="torch_flash")
    assert "FlashAttentionBackward" in _node_names(out)
    grads = torch.autograd.grad(out.sum(), (q, k, v))
    peer = _attention(q, k, v, causal=True, route="torch_sdpa")
    assert "FlashAttentionBackward" not in _node_names(peer)
    peer_grads = torch.autograd.grad(peer.sum(), (q, k, v))
    _close(out.detach(), peer.detach(), 1e-5)
    for a, b in zip(grads, peer_grads):
        _close(a, b, 1e-5)


def test_arbitrary_score_mod_gets_correct_gradients():
    """A differentiable score_mod written by the user: qkv.attention (float32, the plain path) against
    the same formula written out in float64 torch."""
    q, k, v = _inputs((2, 80, 8), (2, 80, 8), (2, 80, 8))
    table = torch.linspace(-1, 1, 160, dtype=torch.float64)

    def score_mod(score, b, h, qi, ki):
        return 5 * torch.tanh(score / 5) + table.to(score.dtype)[qi - ki + 79]

    qd, kd, vd = (x.clone().requires_grad_() for x in (q, k, v))
    i, j = torch.arange(80)[:, None], torch.arange(80)
    scores = 5 * torch.tanh(qd @ kd.transpose(-1, -2) / np.sqrt(8) / 5) + table[i - j + 79]
    scores = scores.masked_fill(j > i, float("-inf"))
    want_out = torch.softmax(scores, -1) @ vd
    dout = torch.randn(want_out.shape, dtype=torch.float64)
    want = torch.autograd.grad(want_out, (qd, kd, vd), dout)
    qf, kf, vf = (x.float().requires_grad_() for x in (q, k, v))
    out = qkv.attention(qf, kf, vf, causal=True, score_mod=score_mod)
    got = torch.autograd.grad(out, (qf, kf, vf), dout.float())
    _close(out.detach(), want_out.detach())
    for g, w in zip(got, want):
        _close(g, w)


# --------------------------------------------------------------------------- torch.compile
def test_compile_fullgraph_keeps_the_op():
    q, k, v = (x.float() for x in _inputs((2, 2, 64, 16), (2, 2, 64, 16), (2, 2, 64, 16)))
    rows = torch.from_numpy(ag.row_ranges(check_call(q, k, v, causal=True)))

    def step(q, k, v):
        out, lse = torch.ops.qkv.flash_attention(q.reshape(4, 64, 16), k.reshape(4, 64, 16), v.reshape(4, 64, 16),
                                                 rows, 0.25, 32, 32)
        return (out.square().sum() + lse.sum())

    ag.op()
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    eager_in = [x.clone().requires_grad_() for x in (q, k, v)]
    compiled_in = [x.clone().requires_grad_() for x in (q, k, v)]
    step(*eager_in).backward()
    compiled(*compiled_in).backward()
    for a, b in zip(eager_in, compiled_in):
        torch.testing.assert_close(a.grad, b.grad)
    # and the op's fake implementation agrees with the real shapes (opcheck runs the schema,
    # fake tensor and autograd registration checks)
    torch.library.opcheck(torch.ops.qkv.flash_attention.default, (q.reshape(4, 64, 16), k.reshape(4, 64, 16),
                                                                  v.reshape(4, 64, 16), rows, 0.25, 32, 32))


def test_bands_go_to_the_forward_as_limit_and_start():
    """Causal and window ranges reach flash_many as its band flags (limit/start: its AVX-512 tiles take
    them); ranges of another shape (documents) as per-row ranges."""
    rows = ag.row_ranges(check_call(np.zeros((10, 4)), np.zeros((14, 4)), np.zeros((14, 4)),
                                                     causal=True))
    assert ag._band_of(rows, 10, 14) == (None, 5)               # key j <= i + 4
    rows = np.stack([np.clip(np.arange(10) - 3, 0, 10), np.arange(10) + 1])
    assert ag._band_of(rows, 10, 10) == (-3, 1)
    rows = np.stack([np.array([0] * 5 + [5] * 5), np.array([5] * 5 + [10] * 5)])   # two documents
    assert ag._band_of(rows, 10, 10) is None


def test_custom_op_and_eager_function_agree():
    """qkv.attention runs the passes through a torch.autograd.Function (no torch._dynamo import on the
    first call); the custom op for torch.compile runs the same functions: the same bits."""
    q, k, v = (x.float().reshape(4, 40, 8) for x in _inputs((2, 2, 40, 8), (2, 2, 40, 8), (2, 2, 40, 8)))
    rows = torch.from_numpy(ag.row_ranges(check_call(q, k, v, mask_mod=masks.sliding_window(6))))
    results = []
    for fn in (ag.op(), ag._eager_function()):
        inputs = [x.clone().requires_grad_() for x in (q, k, v)]
        out, lse = fn(*inputs, rows, 0.3, 16, 16)
        (out.square().sum() + lse.sum()).backward()
        results.append([out, lse] + [x.grad for x in inputs])
    for a, b in zip(*results):
        assert torch.equal(a, b)


# --------------------------------------------------------------------------- catalogue score functions
@pytest.mark.parametrize("score,options", [
    (masks.alibi(4), {"causal": True}),
    (masks.alibi(4), {"mask_mod": masks.sliding_window(30)}),
    (masks.alibi(np.array([0.5, 0.25, 0.125, 0.0625])), {}),
    (masks.soft_cap(2.0), {"causal": True}),
    (masks.soft_cap(5.0), {"mask_mod": masks.document(np.repeat(np.arange(3), [30, 50, 40]))}),
], ids=["alibi causal", "alibi window", "alibi slopes given", "soft-cap causal", "soft-cap documents"])
def test_catalogue_score_functions_with_their_derivatives(score, options):
    # ALiBi (∂/∂s = 1) and soft-cap (∂/∂s = 1 − tanh²) in the C backward; GQA and a batch dimension
    _check((2, 4, 120, 8), (2, 2, 120, 8), (2, 2, 120, 8), block_q=32, block_k=16, score_mod=score, **options)
    q, k, v = (x.float() for x in _inputs((2, 4, 120, 8), (2, 2, 120, 8), (2, 2, 120, 8)))
    assert choose_route(check_call(q, k, v, score_mod=score, **options)).name == route.TORCH_FLASH


@pytest.mark.parametrize("width", [1, 8, 16], ids=["scalar", "avx2", "avx512"])
def test_soft_cap_backward_on_every_vector_loop(width):
    """Soft-cap's backward computes tanh with the forward's own vector function (qkv_soft_cap_row:
    the module's exponential, 8 or 16 lanes, a scalar tail) and 1 − tanh² on vectors too. Scores
    up to ~±12 against caps of 3 reach tanh's flat ends, where a wrong derivative shows; 101 keys
    in blocks of 24 leave tails on every loop. Against float64 autograd through the plain path."""
    assert ag.available()
    cap = 3.0
    q, k, v = _inputs((3, 101, 16), (3, 101, 16), (3, 101, 8), seed=21)
    q = q * 3
    dout = torch.randn(3, 101, 8, generator=torch.Generator().manual_seed(22), dtype=torch.float64)
    out_ref, grads_ref, lse_ref = _reference(q, k, v, dout, causal=True, score_mod=masks.soft_cap(cap))
    q32, k32, v32, d32 = (np.ascontiguousarray(x.float().numpy()) for x in (q, k, v, dout))
    rows = ag.row_ranges(check_call(q32, k32, v32, causal=True))
    spec = (2, None, cap)   # score_kind 2: soft-cap (kernels/_kernel.h)
    out, lse = ag.forward_arrays(q32, k32, v32, rows, 0.25, 16, 24, score=spec, width=width)
    _close(torch.from_numpy(out), out_ref, what="out")
    _close(torch.from_numpy(lse), lse_ref, what="lse")
    for threads in (1, 2):
        grads = ag.backward_arrays(d32, q32, k32, v32, out, lse, rows, 0.25, None, 16, 24, threads=threads,
                                   score=spec, width=width)
        for letter, got, want in zip("qkv", grads, grads_ref):
            _close(torch.from_numpy(got), want, what=f"d{letter}")
    grads = ag.backward_arrays(d32, q32, k32, v32, out, lse, rows, 0.25, None, 16, 24, threads=1, score=spec,
                               width=width, group=4)   # a taller block: rows of full and partial blocks
    for letter, got, want in zip("qkv", grads, grads_ref):
        _close(torch.from_numpy(got), want, what=f"d{letter}, group 4")


T5_TABLE = np.random.default_rng(7).standard_normal((4, 32))


@pytest.mark.parametrize("bidirectional", [True, False], ids=["bidirectional", "one-way"])
@pytest.mark.parametrize("options", [{}, {"causal": True}, {"mask_mod": masks.sliding_window(30)},
                                     {"mask_mod": masks.sliding_window(12, 20)}],
                         ids=["no mask", "causal", "window", "two-sided window"])
def test_t5_buckets_as_a_relative_bias_with_their_derivative(bidirectional, options):
    # T5's bias depends on (h, kv − q) only: one C score kind (a relative bias, ∂/∂s = 1) with its table
    # taken from the ScoreMod itself; GQA, a batch dimension, Tq ≠ Tk, max_distance reached (bucket 31)
    score = masks.t5_relative_buckets(T5_TABLE, max_distance=40, bidirectional=bidirectional)
    _check((2, 4, 120, 8), (2, 2, 90, 8), (2, 2, 90, 8), block_q=32, block_k=16, score_mod=score, **options)
    _check((1, 4, 70, 8), (1, 1, 130, 8), (1, 1, 130, 8), seed=3, block_q=16, block_k=32, score_mod=score, **options)
    q, k, v = (x.float() for x in _inputs((2, 4, 120, 8), (2, 2, 90, 8), (2, 2, 90, 8)))
    assert choose_route(check_call(q, k, v, score_mod=score, **options)).name == route.TORCH_FLASH


def test_a_score_mod_declared_relative_takes_the_c_route():
    # any ScoreMod(…, relative=True) is evaluated once on score 0 over the relative positions
    table = torch.linspace(-1, 1, 300, dtype=torch.float64)

    def fn(score, b, h, qi, ki):
        t = table.numpy() if isinstance(score, np.ndarray) else table.to(score.dtype)
        return score + t[ki - qi + 150] * (1 + h)

    score = masks.ScoreMod("own", "s + t[kv − q]·(1 + h)", fn, relative=True)
    _check((1, 3, 100, 8), (1, 3, 100, 8), (1, 3, 100, 8), block_q=32, block_k=16, score_mod=score, causal=True)
    q, k, v = (x.float() for x in _inputs((1, 3, 100, 8), (1, 3, 100, 8), (1, 3, 100, 8)))
    assert choose_route(check_call(q, k, v, score_mod=score)).name == route.TORCH_FLASH


def test_other_score_functions_take_the_plain_path():
    q, k, v = (x.float() for x in _inputs((2, 70, 8), (2, 70, 8), (2, 70, 8)))
    own = lambda score, b, h, qi, ki: score * 0.5   # noqa: E731
    too_few_slopes = masks.alibi(np.array([0.5]))   # two heads: refused when the call is checked
    q3, k3, v3 = (x.float() for x in _inputs((2, 2, 70, 8), (2, 2, 70, 8), (2, 2, 70, 8)))
    assert choose_route(check_call(q, k, v, score_mod=own)).name == route.PLAIN
    with pytest.raises(InputError, match=r"slopes has shape \(1,\): its first axis is 1, but the call .* has H = 2"):
        qkv.attention(q3, k3, v3, score_mod=too_few_slopes)


# --------------------------------------------------------------------------- register tiles against sgemm
# backward_many computes a block pair's five products either in its AVX2+FMA register tiles
# (_backward.c, bt_gemm) or through NumPy's sgemm (tile=1 / tile=0; −1 picks the tiles on an AVX2
# CPU without AVX-512 when Dk and Dv are multiples of 8). Both against float64 autograd, and
# against each other, on odd sizes (rows and keys not multiples of the 6 × 16 tile or of the
# blocks), every D the tiles serve, masks, GQA, score functions, threads and groups.
_HAS_AVX2 = native.fused.vector_width() >= 8 if native.fused is not None else False
# (on a CPU without AVX2, test_tile_choice_and_refusals checks that tile=1 is refused)
_TILE_ROUTES = (1, 0) if _HAS_AVX2 else (0,)

TILE_CASES = [
    # (T, Dk, Dv, heads, kv_heads, options, blocks (q, k), threads, group)
    (1, 8, 8, 2, 1, {}, (128, 128), 1, 2),
    (7, 16, 16, 2, 2, {"causal": True}, (128, 128), 2, 1),
    (63, 40, 40, 4, 2, {"causal": True}, (32, 16), 1, 4),
    (65, 64, 64, 2, 1, {"mask_mod": masks.sliding_window(9)}, (32, 48), 2, 2),
    (130, 72, 72, 2, 2, {}, (64, 40), 1, 2),
    (130, 128, 64, 2, 1, {"causal": True}, (128, 128), 2, 4),
    (130, 64, 128, 3, 3, {"mask_mod": masks.document(np.repeat(np.arange(3), [50, 1, 79]))}, (32, 24), 2, 1),
    (1000, 64, 64, 2, 1, {"causal": True}, (128, 128), 2, 2),
    (200, 16, 8, 4, 2, {"mask_mod": masks.prefix_lm(37)}, (48, 32), 1, 1),
]


def _tile_inputs(t, dk, dv, heads, kv_heads, options, seed=31):
    q, k, v = _inputs((heads, t, dk), (kv_heads, t, dk), (kv_heads, t, dv), seed)
    dout = torch.randn(heads, t, dv, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64)
    _, grads_ref, _ = _reference(q, k, v, dout, **options)
    q32, k32, v32, d32 = (np.ascontiguousarray(x.float().numpy()) for x in (q, k, v, dout))
    return (q32, k32, v32, d32), grads_ref


@pytest.mark.parametrize("t,dk,dv,heads,kv_heads,options,blocks,threads,group", TILE_CASES,
                         ids=[f"T{c[0]}-D{c[1]}x{c[2]}-{c[3]}/{c[4]}h-{'+'.join(c[5]) or 'none'}-t{c[7]}-g{c[8]}"
                              for c in TILE_CASES])
def test_tiles_and_sgemm_both_match_float64(t, dk, dv, heads, kv_heads, options, blocks, threads, group):
    assert ag.available()
    (q, k, v, dout), grads_ref = _tile_inputs(t, dk, dv, heads, kv_heads, options)
    rows = ag.row_ranges(check_call(q, k, v, **options))
    scale = dk ** -0.5
    out, lse = ag.forward_arrays(q, k, v, rows, scale, *blocks)
    found = {}
    for tile in _TILE_ROUTES:
        found[tile] = ag.backward_arrays(dout, q, k, v, out, lse, rows, scale, None, *blocks, threads=threads,
                                         group=group, tile=tile)
        for letter, got, want in zip("qkv", found[tile], grads_ref):
            _close(torch.from_numpy(got), want, what=f"d{letter}, tile={tile}")
    for letter, a, b in zip("qkv", found[_TILE_ROUTES[0]], found[0]):   # the two routes agree to float32 rounding
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-5 * max(np.abs(b).max(), 0.1), err_msg=f"d{letter}")


@pytest.mark.parametrize("score,options", [
    (masks.alibi(4), {"causal": True}),
    (masks.soft_cap(2.0), {"mask_mod": masks.sliding_window(40)}),
    (masks.t5_relative_buckets(T5_TABLE, bidirectional=True), {}),
], ids=["alibi causal", "soft-cap window", "t5"])
def test_tiles_with_score_functions(score, options):
    """Score functions run between the tiles' products (S = scale·Q·Kᵀ stored, the bias or cap, then
    exp; dS through the cap's derivative): against float64, both routes, threads 1 and 2."""
    assert ag.available()
    q, k, v = _inputs((4, 150, 24), (2, 150, 24), (2, 150, 16), seed=41)
    q = q * 2
    dout = torch.randn(4, 150, 16, generator=torch.Generator().manual_seed(42), dtype=torch.float64)
    _, grads_ref, _ = _reference(q, k, v, dout, score_mod=score, **options)
    q32, k32, v32, d32 = (np.ascontiguousarray(x.float().numpy()) for x in (q, k, v, dout))
    call = check_call(q32, k32, v32, score_mod=score, **options)
    spec = ag.score_spec(call)
    assert spec is not None and spec[0] != 0
    rows = ag.row_ranges(call)
    scale = 24 ** -0.5
    out, lse = ag.forward_arrays(q32, k32, v32, rows, scale, 32, 40, score=spec)
    for tile in _TILE_ROUTES:
        for threads in (1, 2):
            grads = ag.backward_arrays(d32, q32, k32, v32, out, lse, rows, scale, None, 32, 40, threads=threads,
                                       score=spec, tile=tile, group=2)
            for letter, got, want in zip("qkv", grads, grads_ref):
                _close(torch.from_numpy(got), want, what=f"d{letter}, tile={tile}, threads={threads}")


def test_tile_choice_and_refusals():
    """tile=-1 takes the tiles exactly where they serve (same bits as tile=1) and sgemm elsewhere
    (same bits as tile=0): D not a multiple of 8, the scalar loops; tile=1 where they do not serve
    is refused with the reason."""
    assert ag.available()
    rng = np.random.default_rng(3)

    def grads(d, **kw):
        q, k, v, dout = (rng.standard_normal((2, 90, d)).astype(np.float32) for _ in range(4))
        rows = ag.row_ranges(check_call(q, k, v, causal=True))
        out, lse = ag.forward_arrays(q, k, v, rows, 0.3, 32, 32)
        return lambda **more: ag.backward_arrays(dout, q, k, v, out, lse, rows, 0.3, None, 32, 32, threads=1,
                                                 **kw, **more)

    odd = grads(12)   # 12: not a multiple of 8, so the sgemm route
    for a, b in zip(odd(tile=-1), odd(tile=0)):
        assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="multiples of 8"):
        odd(tile=1)
    scalar = grads(16, width=1)   # the scalar loops: sgemm
    for a, b in zip(scalar(tile=-1), scalar(tile=0)):
        assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="AVX2"):
        scalar(tile=1)
    with pytest.raises(ValueError, match="tile must be"):
        grads(16)(tile=2)
    if native.fused.vector_width() == 8:   # AVX2 without AVX-512: the tiles by default
        served = grads(16)
        for a, b, c in zip(served(tile=-1), served(tile=1), served(tile=0)):
            assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_tiles_taller_and_wider_than_one_tile_list():
    """bt_gemm lists a product's row tiles up to 1,464 rows and does taller ones in two calls (the
    ranges of a partial pair shifted with them): one pair of 1,500 query rows (group 2 of 750) ×
    1,500 keys, a window of 200 keys before each query (so a span shifted wrongly misses keys), so S,
    dS and dQ (rows) and dV, dK (keys) all take the second call."""
    assert ag.available()
    window = {"mask_mod": masks.sliding_window(200)}
    (q, k, v, dout), grads_ref = _tile_inputs(1500, 8, 8, 1, 1, window, seed=51)
    rows = ag.row_ranges(check_call(q, k, v, **window))
    scale = 8 ** -0.5   # the reference's default
    out, lse = ag.forward_arrays(q, k, v, rows, scale, 750, 1500)
    for tile in _TILE_ROUTES:
        grads = ag.backward_arrays(dout, q, k, v, out, lse, rows, scale, None, 750, 1500, threads=1, group=2,
                                   tile=tile)
        for letter, got, want in zip("qkv", grads, grads_ref):
            _close(torch.from_numpy(got), want, tol=5e-5, what=f"d{letter}, tile={tile}")


@pytest.mark.parametrize("threads", [1, 2])
def test_blas_held_to_one_thread_inside_big_calls(monkeypatch, threads):
    """With threads=1 as with 2, a big forward_arrays / backward_arrays call holds NumPy's BLAS to one
    thread while the C kernel runs (where a product still goes to sgemm — the scalar loops, D not a
    multiple of 8 — OpenBLAS's own threads would otherwise spin against ours). The BLAS thread count
    is read (threadpoolctl) inside the kernel call, with the process's BLAS set to 2 threads outside.
    The library read is the one whose sgemm the kernel calls (NumPy's OpenBLAS): other BLAS libraries a
    process may load later (SciPy's own OpenBLAS) are never called by the kernel."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not threadpoolctl.threadpool_info() or not any(i["user_api"] == "blas" for i in threadpoolctl.threadpool_info()):
        pytest.fail("NumPy's BLAS is not visible to threadpoolctl in this environment")
    assert blas.sgemm_ready()   # the C calls below use it (ag.available() finds it on the torch route)
    seen = []

    def spy(original):
        def call(*args, **kwargs):
            seen.append(next(i["num_threads"] for i in threadpoolctl.threadpool_info()
                             if i["filepath"] == blas.sgemm_path))
            return original(*args, **kwargs)
        return call

    for name in ("flash_many", "backward_many"):
        monkeypatch.setattr(native.fused, name, spy(getattr(native.fused, name)))
    rng = np.random.default_rng(8)
    # 1 head × 1024 × 1024 scores, D 12 (not a multiple of 8: sgemm products) — above the pool threshold
    q, k, v, dout = (rng.standard_normal((1, 1024, 12)).astype(np.float32) for _ in range(4))
    rows = ag.row_ranges(check_call(q, k, v))
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        out, lse = ag.forward_arrays(q, k, v, rows, 0.25, threads=threads, width=1)
        ag.backward_arrays(dout, q, k, v, out, lse, rows, 0.25, None, threads=threads, width=1)
        after = next(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["filepath"] == blas.sgemm_path)
    assert seen and set(seen) == {1}, seen
    assert after == 2   # the limit is given back when the call ends
