"""A short CPU torch call's kept plan (kernels/execute.py `short_torch`, issue 31 §3: a T = 16 call through qkv no
slower than SDPA's): an unmasked or causal call no gradient is asked of runs the route the rulebook gives its kind
of call with ordinary values — decided once per kind, not per call — after one read of its values.

Expected values: the same call on the general path (`_attention`: checked, routed and executed per call) — the
same route, so the same bits — and a float64 reference computed here with NumPy (within the dtype's rounding).
Nothing here times anything.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import qkv  # noqa: E402
from qkv.attention import _attention  # noqa: E402
from qkv.kernels import execute, native  # noqa: E402
from qkv.kernels import route as route_mod  # noqa: E402
from qkv.kernels.call import check_call  # noqa: E402

pytestmark = pytest.mark.usefixtures("own_cache")     # tests/conftest.py: the rules, never a calibration

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
TOLERANCE = {torch.float32: 2e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}   # of max |out|, after rounding


def _inputs(dtype, b, h, g, d, tq, tk, seed=0, heads_last=False):
    """q (b, h, tq, d), k and v (b, g, tk, d); heads_last: each made (b, t, heads, d) and transposed to
    (b, heads, t, d), as a model's projections give them (not contiguous)."""
    gen = torch.Generator().manual_seed(seed)

    def one(heads, t):
        if heads_last:
            return torch.randn(b, t, heads, d, generator=gen).to(dtype).transpose(1, 2)
        return torch.randn(b, heads, t, d, generator=gen).to(dtype)

    return one(h, tq), one(g, tk), one(g, tk)


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


def _same(a, b) -> bool:
    """Equal bits where finite, NaN where the other is NaN."""
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(torch.nan_to_num(a, 7.0, 8.0, 9.0),
                                                                      torch.nan_to_num(b, 7.0, 8.0, 9.0)) \
        and torch.equal(a.isnan(), b.isnan())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["dense", "causal"])
def test_the_short_path_gives_the_general_paths_bits(dtype, causal):
    """Shapes short and less short (T = 1 … 64, Tq ≠ Tk both ways, GQA, D = 80, heads split off by a
    transpose): qkv.attention through its kept plan gives exactly what the general path gives for the same
    call (its route is the rulebook's), and the float64 reference's output to the dtype's rounding. The plan
    is taken for every unmasked call of one layout on a machine with the C kernel's short forward."""
    taken = 0
    shapes = [(1, 8, 8, 64, False), (2, 4, 4, 32, True), (1, 8, 2, 64, False), (1, 4, 4, 80, False)]
    for (b, h, g, d, heads_last), tq, tk in itertools.product(shapes, (1, 5, 16, 64), (1, 16, 33)):
        q, k, v = _inputs(dtype, b, h, g, d, tq, tk, seed=tq * 100 + tk, heads_last=heads_last)
        with torch.no_grad():
            short = execute.short_torch(q, k, v, causal, None)
            out = qkv.attention(q, k, v, causal=causal)
            general = _attention(q, k, v, causal=causal)
        taken += short is not None
        assert _same(out, general), (b, h, g, d, heads_last, tq, tk)
        if short is not None:
            assert _same(short, general), (b, h, g, d, heads_last, tq, tk)
        want = _float64(q, k, v, causal)
        err = np.abs(out.double().numpy() - want).max()
        assert err <= TOLERANCE[dtype] * max(1.0, np.abs(want).max()), (b, h, g, d, tq, tk, err)
    if native.fused is not None and route_mod.current_machine().backward:
        assert taken == 48   # every case: the C kernel's short forward or SDPA, each a kind's kept plan


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_values_that_are_not_ordinary_leave_the_short_path(dtype):
    """A NaN or an inf in k or v, |v| above 2^60, or |q|·|k|·Dk near the float range: the plan's route may not be
    the rulebook's for these values, so short_torch gives None and the call takes the general path (the plain
    path's exact shifts for the large scores: finite, and the float64 reference's to the dtype's rounding).
    An ordinary call of the same kind afterwards takes the plan again."""
    q, k, v = _inputs(dtype, 1, 4, 4, 32, 16, 16, seed=3)
    with torch.no_grad():
        assert execute.short_torch(q, k, v, True, None) is not None or native.fused is None
        cases = {"nan in v": (q, k, v.clone().index_fill_(2, torch.tensor([3]), float("nan"))),
                 "inf in k": (q, k.clone().index_fill_(2, torch.tensor([5]), float("inf")), v),
                 "large v": (q, k, v * 2.0 ** 62),
                 "large q and k": (q / q.abs().max() * 1e19, k / k.abs().max() * 1e19, v)}
        for name, (qx, kx, vx) in cases.items():
            assert execute.short_torch(qx, kx, vx, True, None) is None, name
            assert _same(qkv.attention(qx, kx, vx, causal=True), _attention(qx, kx, vx, causal=True)), name
        big = cases["large q and k"]
        out = qkv.attention(*big, causal=True)
        want = _float64(*big, causal=True)
        assert torch.isfinite(out).all()
        assert np.abs(out.double().numpy() - want).max() <= TOLERANCE[dtype] * np.abs(want).max()
        assert _same(qkv.attention(q, k, v, causal=True), _attention(q, k, v, causal=True))
        if native.fused is not None:
            assert execute.short_torch(q, k, v, True, None) is not None


def test_a_first_call_whose_values_are_not_ordinary_keeps_no_plan():
    """The kind's first call decides its plan from the route its values got; values that are not ordinary keep
    nothing (that route is theirs alone), and the next ordinary call of the kind makes the plan."""
    q, k, v = _inputs(torch.float32, 1, 2, 2, 16, 7, 7, seed=5)
    bad = v.clone()
    bad[0, 0, 0, 0] = float("nan")
    with torch.no_grad():
        assert execute.short_torch(q, k, bad, False, 0.3) is None
        assert not any(key[:3] == (q.shape, k.shape, v.shape) and key[7] == 0.3 for key in execute._SHORT)
        out = execute.short_torch(q, k, v, False, 0.3)
        assert (out is None) == (native.fused is None)
        if out is not None:
            assert _same(out, _attention(q, k, v, scale=0.3))


def test_a_plan_is_made_once_per_kind(monkeypatch):
    """Repeated calls of one kind check the call once (the plan's), and another scale, dtype or causal is
    another kind with its own plan; a bad call of a new kind is refused by check_call's words."""
    checked = []
    real = execute.check_call
    monkeypatch.setattr(execute, "check_call", lambda *a, **kw: checked.append(1) or real(*a, **kw))
    q, k, v = _inputs(torch.bfloat16, 1, 8, 8, 64, 16, 16, seed=8)
    with torch.no_grad():
        outs = [execute.short_torch(q, k, v, False, 0.125) for _ in range(4)]
        if native.fused is None:
            return
        assert len(checked) == 1 and all(_same(o, outs[0]) for o in outs)
        execute.short_torch(q, k, v, True, 0.125)
        execute.short_torch(q, k, v, False, 0.25)
        execute.short_torch(*(x.float() for x in (q, k, v)), False, 0.125)
        assert len(checked) == 4
        with pytest.raises(ValueError, match="scale must be a finite real number"):
            qkv.attention(q, k, v, scale=math.inf)
        with pytest.raises(ValueError, match="k has shape"):
            qkv.attention(q, k[..., :32], v)
        with pytest.raises(TypeError, match="share one dtype"):
            qkv.attention(q, k.float(), v)


def test_what_the_short_path_leaves_to_dispatch():
    """Not a short plan's call: a gradient asked of it, NumPy arrays, tensors on another device, a bool or zero
    scale, a causal that is not a bool; each gives None (qkv.attention then checks and routes it as before)."""
    q, k, v = _inputs(torch.float32, 1, 2, 2, 8, 4, 4)
    assert execute.short_torch(q.clone().requires_grad_(True), k, v, False, None) is None
    with torch.no_grad():
        assert execute.short_torch(q.clone().requires_grad_(True), k, v, False, None) is not None or \
            native.fused is None   # (no grad mode: nothing is recorded)
        assert execute.short_torch(q.numpy(), k.numpy(), v.numpy(), False, None) is None
        assert execute.short_torch(q.to("meta"), k, v, False, None) is None
        assert execute.short_torch(q, k, v, False, True) is None
        assert execute.short_torch(q, k, v, False, 0.0) is None
        assert execute.short_torch(q, k, v, 1, None) is None


def test_the_values_read_with_the_arithmetic_are_absmax_at():
    """flash_at's tops (read by the same C call) and absmax3_at give what absmax_at gives for each tensor:
    max |x| as a float for float32 (NaN when one is), the largest 16-bit pattern without its sign for bfloat16
    and float16, 0 for an empty run; magnitude.value_tops reads three tensors of one dtype in that one call."""
    from qkv.kernels import magnitude

    fused = native.fused
    if fused is None or not hasattr(fused, "absmax3_at"):
        pytest.skip("the C extension did not build")
    for dtype, size in ((torch.float32, 4), (torch.bfloat16, 2), (torch.float16, 2)):
        q, k, v = _inputs(dtype, 1, 2, 2, 16, 5, 9, seed=1)
        k[0, 1, 2, 3] = -float("inf")
        v[0, 0, 4, 1] = float("nan") if dtype == torch.float32 else v[0, 0, 4, 1]
        one = tuple(fused.absmax_at(x.data_ptr(), x.numel(), size) for x in (q, k, v))
        three = fused.absmax3_at(q.data_ptr(), q.numel(), k.data_ptr(), k.numel(), v.data_ptr(), v.numel(), size)
        assert _tuple_same(three, one)
        out = torch.empty_like(q)
        kind = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}[dtype]
        read = fused.flash_at(q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), 2, 2, 5, 9, 16, 16, 0.25,
                              16.0, False, kind, tops=True)
        assert _tuple_same(read, one)
        assert fused.flash_at(q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), 2, 2, 5, 9, 16, 16, 0.25,
                              16.0, False, kind) is None
        assert _tuple_same(magnitude.value_tops(q, k, v), magnitude.tops_of(one, dtype))
        assert _tuple_same(magnitude.value_tops(q, k, v),
                           tuple(float(x.double().abs().max()) for x in (q, k, v)))
    assert fused.absmax3_at(0, 0, 0, 0, 0, 0, 4) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="absmax3_at"):
        fused.absmax3_at(0, 5, 0, 0, 0, 0, 4)
    with pytest.raises(ValueError, match="absmax3_at"):
        fused.absmax3_at(0, 0, 0, 0, 0, 0, 8)
    with pytest.raises(TypeError, match="absmax3_at"):
        fused.absmax3_at(0, 0, 0)


def _tuple_same(a, b) -> bool:
    return len(a) == len(b) and all(x == y or (x != x and y != y) for x, y in zip(a, b))
