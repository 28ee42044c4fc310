"""A short CPU torch call no gradient is asked of runs the C kernel through one `_fused.flash_at` call
(kernels/autograd.py `_short_forward`): the tensors read at their addresses, no NumPy views, casts, task
table, pool or torch.autograd.Function around the arithmetic (issue 31 §3: short calls).

Expected values: the same call through the route's general path (the C training route's forward, run
under autograd) — the same blocks and steps, so the same bits — and a float64 reference computed here with
NumPy from the same numbers (within the dtype's rounding).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from qkv.attention import _attention  # noqa: E402
from qkv.kernels import autograd, native  # noqa: E402
from qkv.kernels.call import check_call  # noqa: E402

pytestmark = pytest.mark.skipif(native.fused is None or not autograd.available(),
                                reason="the C extension (its forward and backward) did not build")

# B, H (query heads), G (key/value heads), D
SHAPES = [(1, 8, 8, 64), (2, 12, 12, 32), (1, 8, 2, 64), (1, 4, 4, 80)]
DTYPES = [torch.float32, torch.bfloat16, torch.float16]
TOLERANCE = {torch.float32: 2e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}   # of max |out|, after rounding


def _inputs(dtype, b, h, g, d, tq, tk, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, tq, d, generator=gen).to(dtype)
    k, v = (torch.randn(b, g, tk, d, generator=gen).to(dtype) for _ in range(2))
    return q, k, v


def _float64(q, k, v, causal):
    """softmax(q·kᵀ/√D)·v in float64 (NumPy), bottom-right causal, query head h reading kv head h // (H/G)."""
    q, k, v = (x.double().numpy() for x in (q, k, v))
    groups = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, groups, axis=1), np.repeat(v, groups, axis=1)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    tq, tk = s.shape[-2:]
    if causal:
        s = np.where(np.arange(tk)[None, :] <= np.arange(tq)[:, None] + (tk - tq), s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    w = np.exp(s - top)
    total = w.sum(axis=-1, keepdims=True)
    return np.where(total > 0, (w / np.where(total > 0, total, 1)) @ v, 0.0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
def test_flash_at_gives_the_general_paths_bits_and_the_float64_reference(dtype, causal):
    """Every shape (GQA, D = 80, one query row, Tq ≠ Tk both ways, causal bottom-right with rows that see no
    key): _short_forward takes the call and gives exactly the general path's output (the same call with q
    requiring a gradient, which goes through autograd's Function), and the float64 reference's to the
    dtype's rounding."""
    taken = 0
    for (b, h, g, d), tq, tk in itertools.product(SHAPES, (1, 5, 16, 64, 130), (16, 64, 200)):
        q, k, v = _inputs(dtype, b, h, g, d, tq, tk, seed=tq + tk)
        with torch.no_grad():
            lean = autograd._short_forward(check_call(q, k, v, causal=causal))
        if lean is None:   # (more work than one thread's: the general path's pool)
            assert tq * tk * b * h >= autograd._PARALLEL_MIN_SCORES
            continue
        taken += 1
        general = autograd.run(check_call(q.clone().requires_grad_(True), k, v, causal=causal)).detach()
        assert lean.dtype == dtype and lean.shape == (b, h, tq, d)
        assert torch.equal(lean, general), (b, h, g, d, tq, tk)
        want = _float64(q, k, v, causal)
        err = np.abs(lean.double().numpy() - want).max()
        assert err <= TOLERANCE[dtype] * max(1.0, np.abs(want).max()), (b, h, g, d, tq, tk, err)
    assert taken >= 50   # (58 of the 60 combinations)


def test_a_short_call_takes_flash_at_and_nothing_else(monkeypatch):
    """qkv.attention's C route on a short no-grad call calls flash_at once and never the general path's
    pieces (forward_arrays, the autograd Function); under autograd, with a mask function or with lse asked
    it takes the general path as before."""
    q, k, v = _inputs(torch.bfloat16, 1, 8, 8, 64, 64, 64)
    calls = {"flash_at": 0, "forward_arrays": 0}
    real_at, real_forward = native.fused.flash_at, autograd.forward_arrays

    class Counting:   # the extension with flash_at counted (the module itself cannot take an attribute)
        def __getattr__(self, name):
            return getattr(native.fused, name)

        def flash_at(self, *args, **kw):
            calls["flash_at"] += 1
            return real_at(*args, **kw)

    def forward_arrays(*args, **kw):
        calls["forward_arrays"] += 1
        return real_forward(*args, **kw)

    monkeypatch.setattr(native, "extension", lambda: Counting())
    monkeypatch.setattr(autograd, "forward_arrays", forward_arrays)
    with torch.no_grad():
        out = _attention(q, k, v, route="torch_flash")
    assert calls == {"flash_at": 1, "forward_arrays": 0}
    qg = q.clone().requires_grad_(True)
    same = _attention(qg, k, v, route="torch_flash")
    assert calls == {"flash_at": 1, "forward_arrays": 1}
    assert torch.equal(out, same.detach())
    with torch.no_grad():
        _attention(q, k, v, route="torch_flash", return_lse=True)
    assert calls["flash_at"] == 1


def test_flash_at_refuses_what_it_cannot_read():
    """Bad sizes, a kind it does not know, or null addresses are refused by name, before any read."""
    x = torch.zeros(1, 4, 8)
    p = x.data_ptr()
    with pytest.raises(ValueError, match="flash_at"):
        native.fused.flash_at(p, p, p, p, 3, 2, 4, 8, 8, 8, 1.0, 16.0, False, 0)   # heads not a multiple
    with pytest.raises(ValueError, match="flash_at"):
        native.fused.flash_at(p, p, p, p, 1, 1, 4, 8, 8, 8, 1.0, 16.0, False, 3)   # no kind 3
    with pytest.raises(ValueError, match="flash_at"):
        native.fused.flash_at(0, p, p, p, 1, 1, 4, 8, 8, 8, 1.0, 16.0, False, 0)   # a null address
    with pytest.raises(ValueError, match="flash_at"):
        native.fused.flash_at(p, p, p, p, 1, 1, 0, 8, 8, 8, 1.0, 16.0, False, 0)   # Tq = 0
