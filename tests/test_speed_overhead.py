"""What qkv reads before handing a torch call to SDPA (issue 31 §3: never slower than SDPA on the same call).

An unmasked call SDPA computes needs one look at its values: whether q·kᵀ could pass the float range (then
the plain path's exact shifts take it). The C kernel's own value check (max |v|, finiteness) decides nothing
there — SDPA takes the call whatever it answers — so it is not read; and float16 computed in float32 cannot
reach the overflow rule (65504²·Dk is 10²⁸ times below it), so its look reads no value at all. Nothing here
times anything: the tests read which looks a route asked (`_Looks.trail`) and which tensors were read, and
check that the outputs stay right where the looks were dropped (float64 references).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import qkv  # noqa: E402
from qkv.kernels import route as route_mod  # noqa: E402
from qkv.kernels import speed  # noqa: E402
from qkv.kernels.call import check_call  # noqa: E402


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """The rules, never the developer's calibration."""
    monkeypatch.setenv("QKV_CACHE_DIR", str(tmp_path))
    speed.load(refresh=True)
    yield tmp_path
    monkeypatch.delenv("QKV_CACHE_DIR")
    speed.load(refresh=True)


def _looked(q, k, v, **kw):
    """(route, the looks' trail, the names of the tensors whose max |x| was read) for one eager call."""
    call = check_call(q, k, v, **kw)
    looks = route_mod._Looks(call)
    chosen = route_mod.choose_route(call.static, looks)
    return chosen, [name for name, _ in looks.trail], set(looks._tops)


def _inputs(dtype, t, b=2, h=4, d=32, seed=0, top=None):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, h, t, d, generator=gen, dtype=torch.float64) for _ in range(3))
    if top is not None:   # max |q| = max |k| = top
        q, k = (x / x.abs().max() * top for x in (q, k))
    return tuple(x.to(dtype) for x in (q, k, v))


def _sdpa_takes(dtype, t, causal=False):
    """Whether the rules here send an unmasked square call of this dtype and length to SDPA (C kernel built)."""
    if t * t < route_mod._C_KERNEL_MIN_SCORES:
        return True
    return speed.faster(str(dtype).removeprefix("torch."), causal, False, t, t) == speed.SDPA


@pytest.mark.parametrize("t", [16, 96])
def test_an_unmasked_sdpa_call_reads_q_and_k_only(t):
    """bfloat16 (SDPA below T = 512 by the rules on every CPU met): the overflow look alone, reading max |q|
    and max |k|; max |v| — the C kernel's value check — is never read (the old route asked `values_ok`,
    reading all three, on every call at T = 96)."""
    dtype = torch.bfloat16
    assert _sdpa_takes(dtype, t)
    with torch.no_grad():
        chosen, trail, read = _looked(*_inputs(dtype, t))
    assert chosen.name == route_mod.TORCH_SDPA, chosen.reason
    assert trail == ["overflow"] and read == {"q", "k"}


@pytest.mark.parametrize("t", [16, 96])
def test_a_causal_sdpa_call_still_checks_the_future_values(t):
    """Causal: SDPA multiplies the future keys' values by 0, so a NaN there would reach every earlier row.
    Its trail asks whether k and v are finite; with a NaN in the last value the call leaves SDPA and every
    row but the last (the one query that attends to it) equals the float64 reference."""
    dtype = torch.bfloat16
    assert _sdpa_takes(dtype, t, causal=True)
    q, k, v = _inputs(dtype, t, seed=2)
    with torch.no_grad():
        chosen, trail, _ = _looked(q, k, v, causal=True)
        assert chosen.name == route_mod.TORCH_SDPA and trail == ["overflow", "kv_finite"]
        v[..., -1, :] = float("nan")
        chosen, _, _ = _looked(q, k, v, causal=True)
        assert chosen.name == route_mod.PLAIN, chosen.reason
        out = qkv.attention(q, k, v, causal=True)
    qd, kd, vd = (x.double() for x in (q, k, v))
    scores = qd @ kd.transpose(-1, -2) / np.sqrt(q.shape[-1])
    scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    want = torch.softmax(scores, -1)[..., :-1, :-1] @ vd[..., :-1, :]   # rows before the last never see it
    eps = torch.finfo(dtype).eps
    assert torch.isfinite(out[..., :-1, :]).all()
    assert (out[..., :-1, :].double() - want).abs().max() <= 4 * eps * vd[..., :-1, :].abs().max()


def test_a_float16_sdpa_call_reads_no_value():
    """float16 in float32 work: no value of the dtype can pass the overflow rule, so its look answers
    without reading (the old route read max |q|, |k| and |v| of every call)."""
    with torch.no_grad():
        chosen, trail, read = _looked(*_inputs(torch.float16, 16))
    assert chosen.name == route_mod.TORCH_SDPA, chosen.reason
    assert trail == ["overflow"] and read == set()
    assert not route_mod._range_may_overflow(check_call(*_inputs(torch.float16, 16)))
    for dtype in (torch.bfloat16, torch.float32, torch.float64):   # these can: their looks read q and k
        assert route_mod._range_may_overflow(check_call(*_inputs(dtype, 16)))


@pytest.mark.parametrize("t", [16, 96])
def test_float16_at_its_largest_values_stays_right_on_sdpa(t):
    """What the dropped read relied on: q and k at float16's largest magnitude (65504) on the route chosen
    for them (SDPA at T = 16; the C kernel at T = 96 on CPUs where the rules give it float16) — finite and
    within float16's rounding of a float64 reference computed from the same rounded inputs."""
    top = float(torch.finfo(torch.float16).max)
    q, k, v = _inputs(torch.float16, t, top=top, seed=t)
    with torch.no_grad():
        out = qkv.attention(q, k, v)
    qd, kd, vd = (x.double() for x in (q, k, v))
    weights = torch.softmax(qd @ kd.transpose(-1, -2) / np.sqrt(q.shape[-1]), -1)
    want = weights @ vd
    assert torch.isfinite(out).all()
    # scores reach ~1e10: a score's rounding in float32 work is ~1e10·2^-24 ≈ 600, far past any softmax
    # difference, so the weights are one-hot or split among equal maxima exactly as the reference's
    eps = torch.finfo(torch.float16).eps
    assert (out.double() - want).abs().max() <= 4 * eps * vd.abs().max()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_scores_past_the_float_range_still_leave_sdpa(dtype):
    """The one look kept: |q|, |k| ≈ 1e20 (q·kᵀ past float32's range) takes the plain path, whose output is
    finite and within the dtype's rounding of a float64 reference; SDPA's would not be."""
    q, k, v = _inputs(dtype, 16, top=1e20, seed=5)
    with torch.no_grad():
        chosen, trail, _ = _looked(q, k, v)
        out = qkv.attention(q, k, v)
        bare = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    assert chosen.name == route_mod.PLAIN and trail == ["overflow"]
    qd, kd, vd = (x.double() for x in (q, k, v))
    want = torch.softmax(qd @ kd.transpose(-1, -2) / np.sqrt(q.shape[-1]), -1) @ vd
    eps = torch.finfo(dtype).eps
    tolerance = 4 * eps * vd.abs().max()
    assert torch.isfinite(out).all()
    assert (out.double() - want).abs().max() <= tolerance
    # why the look stays: SDPA's own answer there is NaN or far off (zeros, measured for both dtypes)
    assert not (torch.isfinite(bare).all() and (bare.double() - want).abs().max() <= tolerance)


def test_the_live_machine_is_built_once():
    """current_machine() hands back the same Machine while nothing it reads changed (one dataclass a call
    was ~2 µs of a 60 µs SDPA call), and a use_machine block's own machine inside it."""
    import dataclasses

    from qkv.kernels import native

    first = route_mod.current_machine()
    assert route_mod.current_machine() is first
    other = dataclasses.replace(first, cpus=first.cpus + 1)
    with native.use_machine(other):
        assert route_mod.current_machine() is other
    assert route_mod.current_machine() == first
