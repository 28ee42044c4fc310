"""The registered torch ops work as the first thing a process does.

torch.ops.qkv.flash_attention (and its backward) call NumPy's cblas_sgemm, which qkv looks for the first
time a route is chosen. Called directly, before any qkv.attention call, the op used to fail with
"flash_many needs a BLAS sgemm" — and the suite hid it, because earlier tests in the same worker had
chosen routes. Each case runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import numpy as np, torch
    from qkv.kernels import autograd as ag
    ag.op()
    torch.manual_seed(0)
    q, k, v = (torch.randn(4, 48, 16, requires_grad=True) for _ in range(3))
    t = torch.arange(48)
    rows = torch.stack([torch.zeros(48, dtype=torch.int64), t + 1])        # causal: keys 0..i
    out, lse = torch.ops.qkv.flash_attention(q, k, v, rows, 0.25, 32, 32)
    (out.square().sum() + lse.sum()).backward()
    q64, k64, v64 = (x.detach().double().requires_grad_() for x in (q, k, v))
    s = (q64 @ k64.transpose(1, 2)) * 0.25
    s = s.masked_fill(t[None, :] > t[:, None], float("-inf"))
    ref_lse = torch.logsumexp(s, -1)
    ref = torch.softmax(s, -1) @ v64
    (ref.square().sum() + ref_lse.sum()).backward()
    for a, b in ((out, ref), (lse, ref_lse), (q.grad, q64.grad), (k.grad, k64.grad), (v.grad, v64.grad)):
        torch.testing.assert_close(a.double(), b.detach(), rtol=2e-5, atol=2e-5)
    print("ok")
""")


def test_the_op_is_the_first_call_of_a_process():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("ok")
