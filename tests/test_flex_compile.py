"""torch.compile with qkv.torch.flex_attention and flex-style mask functions, and torch's own compiled CPU
flex_attention forward as a second reference (slow: inductor compiles each case; in conftest's COMPILES).

The functions are those of tests/test_flex.py (PyTorch's test_flex_attention.py at 00125ef and attention-gym
at 7fdb85d, cited there); the float64 reference is test_flex.reference.
"""

import pytest

torch = pytest.importorskip("torch")

import qkv  # noqa: E402
from qkv.torch import create_block_mask, flex_attention  # noqa: E402
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
