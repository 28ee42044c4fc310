"""torch.compile with qkv.torch.flex_attention and flex-style mask functions, and torch's own compiled CPU
flex_attention forward as a second reference (slow: inductor compiles each case; in conftest's COMPILES).

The functions are those of tests/test_flex.py (PyTorch's test_flex_attention.py at 00125ef and attention-gym
at 7fdb85d, cited there); the float64 reference is test_flex.reference.

Every test of the suite that compiles with inductor (torch.compile's default backend) is in this file, so that
under `make test` (xdist, --dist loadfile: one file, one worker) a single worker pays inductor's first use in a
process (its modules, the precompiled header's preprocessing, the first C++ builds): qkv.attention with a
catalogue mask (from tests/test_attention_compile.py, whose other graphs are aot_eager) and a mask function reading
a changed global (from tests/test_adversary_kernels.py). Measured 7 December (one process per file, OMP_NUM_THREADS=1,
load 17–34): the test reading a changed global took 26.7 CPU-s as test_adversary_kernels' only inductor test and
16.3 here after this file's first two; this file 49.8 → 73.6 CPU-s, test_adversary_kernels 53.6 → 7.6,
test_attention_compile 87–98 → 84.
"""

import pytest

torch = pytest.importorskip("torch")

import qkv  # noqa: E402
from qkv import masks  # noqa: E402
from qkv.attention import attention_reference as plain  # noqa: E402
from qkv.torch import create_block_mask, flex_attention  # noqa: E402
from test_adversary_kernels import TOL, _module_with, needs_fused  # noqa: E402
from test_adversary_kernels import _inputs as _numpy_inputs  # noqa: E402
from test_attention_compile import _grads  # noqa: E402
from test_attention_compile import _inputs as _torch_inputs  # noqa: E402
from test_flex import (GYM_MASKS, _rel_causal, dense_mask, generate_alibi_bias, generate_sliding_window,  # noqa: E402
                       inputs, reference)


def test_indexing_a_captured_table_by_b_and_h_under_inductor_fullgraph():
    """Issue 31 §2: qkv.attention compiled (inductor, fullgraph) with flex's `am[b, h.new_zeros(h.shape), q, kv]`
    raised GuardOnDataDependentSymNode; now forward and backward equal the eager call with the table as a mask."""
    B, H, L = 1, 2, 24
    table = torch.rand(B, H, L, L, generator=torch.Generator().manual_seed(0)) > 0.3

    def mask_mod(b, h, q_idx, kv_idx):
        return table[b, h.new_zeros(h.shape), q_idx, kv_idx]

    q, k, v = inputs(B, H, L, 8, torch.float32)
    torch._dynamo.reset()
    compiled = torch.compile(lambda q, k, v: qkv.attention(q, k, v, mask_mod=mask_mod), fullgraph=True)
    out = compiled(q, k, v)
    want = reference(q, k, v, None, table[:, :1].expand(B, H, L, L))[0]
    torch.testing.assert_close(out.double(), want, atol=2e-5, rtol=2e-5)
    got = torch.autograd.grad(out.sum(), (q, k, v))
    wanted = torch.autograd.grad(want.sum(), (q, k, v))
    for a, b in zip(got, wanted):
        torch.testing.assert_close(a.double(), b.double(), atol=1e-4, rtol=1e-4)


def test_flex_attention_compiled_fullgraph_forward_and_backward():
    """torch.compile(qkv.torch.flex_attention, fullgraph=True): a score_mod reading a captured table by
    q_idx and kv_idx, and a sliding-window BlockMask (and_masks), against the float64 reference."""
    B, H, L = 2, 2, 20
    table = torch.randn(L, L, dtype=torch.float64, generator=torch.Generator().manual_seed(1))

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + table[q_idx][kv_idx]

    block_mask = create_block_mask(generate_sliding_window(5), None, None, L, L, BLOCK_SIZE=8)
    q, k, v = inputs(B, H, L, 4, torch.float64)
    torch._dynamo.reset()
    out = torch.compile(flex_attention, fullgraph=True)(q, k, v, score_mod=score_mod, block_mask=block_mask)
    want = reference(q, k, v, score_mod, dense_mask(block_mask, B, H, L, L))[0]
    torch.testing.assert_close(out, want, atol=1e-10, rtol=1e-10)
    got = torch.autograd.grad(out.sum(), (q, k, v))
    wanted = torch.autograd.grad(want.sum(), (q, k, v))
    for a, b in zip(got, wanted):
        torch.testing.assert_close(a, b, atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("name,score_mod,mask_mod", [
    ("rel_causal + sliding window", _rel_causal, generate_sliding_window(6)),
    ("alibi + documents", generate_alibi_bias(2), GYM_MASKS["document_causal"]),
])
def test_torch_flex_forward_on_the_cpu_agrees(name, score_mod, mask_mod):
    """torch's own flex_attention (its compiled CPU forward, no gradients: torch has no CPU backward) and
    qkv.torch.flex_attention on the same float64 inputs and BlockMask."""
    import warnings

    from torch.nn.attention import flex_attention as torch_flex

    B, H, L = 1, 2, 12
    q, k, v = (x.detach() for x in inputs(B, H, L, 8, torch.float64))
    block_mask = create_block_mask(mask_mod, B, H, L, L, BLOCK_SIZE=4)
    with torch.no_grad(), warnings.catch_warnings():   # torch's advice to wrap it in torch.compile: not ours
        warnings.simplefilter("ignore", UserWarning)
        theirs, their_lse = torch_flex.flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask,
                                                      return_aux=torch_flex.AuxRequest(lse=True))
    ours, aux = flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask,
                               return_aux=torch_flex.AuxRequest(lse=True))
    torch.testing.assert_close(ours, theirs, atol=1e-9, rtol=1e-9)
    if their_lse.lse is not None:   # torch's CPU kernel may leave lse out
        torch.testing.assert_close(aux.lse, their_lse.lse, atol=1e-9, rtol=1e-9)


def test_inductor_compiles_attention_with_a_catalogue_mask():
    """qkv.attention with a catalogue mask under inductor (fullgraph): output and gradients equal the eager call's
    (tests/test_attention_compile.py compares the other masks and routes under aot_eager)."""
    torch._dynamo.reset()
    q, k, v = _torch_inputs(2)
    dout = _torch_inputs(3)[0]

    def fn(q, k, v):
        return qkv.attention(q, k, v, mask_mod=masks.sliding_window(32))

    eager_out, eager_grads = _grads(fn, q, k, v, dout)
    out, grads = _grads(torch.compile(fn, fullgraph=True), q, k, v, dout)
    torch.testing.assert_close(out, eager_out, rtol=1e-6, atol=1e-6)
    for got, want in zip(grads, eager_grads):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- torch.compile(fullgraph=True)
# (h/masks: a traced call's key ranges are computed beside the trace and baked into the graph.) Dynamo
# guards only what it traces, so a mask function reading a global or a module attribute that changes
# between calls was served the first call's graph (errors ~2): such functions now take the plain path,
# which traces the function itself.
_COMPILED_WINDOW = 10
compile_settings = _module_with(WINDOW=10)


def _set_compiled_window(value):
    global _COMPILED_WINDOW
    _COMPILED_WINDOW = value


COMPILED_CASES = {
    "global": (lambda b, h, q, kv: (q >= kv) & (q - kv <= _COMPILED_WINDOW), _set_compiled_window),
    "module attribute": (lambda b, h, q, kv: (q >= kv) & (q - kv <= compile_settings.WINDOW),
                         lambda w: setattr(compile_settings, "WINDOW", w)),
}


@needs_fused
@pytest.mark.parametrize("name", list(COMPILED_CASES))
def test_compiled_attention_follows_a_changed_global(name):
    """(From tests/test_adversary_kernels.py.) Compiled with inductor, a mask reading a changed global or module
    attribute gives the float64 plain path's answer for the new value at each of three windows."""
    from qkv.attention import attention

    mod, change = COMPILED_CASES[name]
    q, k, v = (torch.from_numpy(x) for x in _numpy_inputs(b=1, h=2, tq=300, tk=300))
    compiled = torch.compile(lambda q, k, v: attention(q, k, v, mask_mod=mod), fullgraph=True)
    try:
        for window in (10, 200, 3):
            change(window)
            got = compiled(q.float(), k.float(), v.float())
            want = plain(q, k, v, mask_mod=mod)
            assert float((got.double() - want).abs().max()) < TOL, window
    finally:
        change(10)
