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
from speed_support import cpus_a_side  # noqa: E402


pytestmark = pytest.mark.usefixtures("own_cache")     # tests/conftest.py: the rules, never a calibration


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


def _one_cpu_a_side():
    """torch on one thread and qkv's machine one CPU (restored after): where the rules give short forward
    calls of every dtype to SDPA on AVX2 CPUs (with two CPUs a side bfloat16 takes the C kernel there)."""
    return cpus_a_side(1)


@pytest.fixture
def avx2_rules():
    """The rules of an AVX2 CPU, whatever CPU runs the test (one CPU a side they send bfloat16 below T = 1024 to
    SDPA; an AVX-512 CPU without AMX takes the C kernel from T = 64: kernels/speed.py). Restored after."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(speed, "has_avx512", lambda: False)
        speed.load(refresh=True)   # (kept routes are keyed by the table's generation)
        yield
    speed.load(refresh=True)


def _sdpa_takes(dtype, t, causal=False):
    """Whether the rules here send an unmasked square forward call of this dtype and length to SDPA (C kernel
    built): below the C kernel's floor, unless this CPU's rules take short calls in C (`speed.short_in_c`)."""
    if t * t < route_mod._C_KERNEL_MIN_SCORES and not speed.short_in_c(False):
        return True
    return speed.faster(str(dtype).removeprefix("torch."), causal, False, t, t) == speed.SDPA


@pytest.mark.parametrize("t", [16, 96])
def test_an_unmasked_sdpa_call_reads_q_and_k_only(t, avx2_rules):
    """bfloat16, one CPU a side (SDPA below T = 1024 by an AVX2 CPU's rules): the overflow look alone, reading max |q|
    and max |k|; max |v| — the C kernel's value check — is never read (the old route asked `values_ok`,
    reading all three, on every call at T = 96)."""
    dtype = torch.bfloat16
    with _one_cpu_a_side(), torch.no_grad():
        assert _sdpa_takes(dtype, t)
        chosen, trail, read = _looked(*_inputs(dtype, t))
    assert chosen.name == route_mod.TORCH_SDPA, chosen.reason
    assert trail == ["overflow"] and read == {"q", "k"}


@pytest.mark.parametrize("t", [16, 96])
def test_a_causal_sdpa_call_still_checks_the_future_values(t, avx2_rules):
    """Causal: SDPA multiplies the future keys' values by 0, so a NaN there would reach every earlier row.
    Its trail asks whether k and v are finite; with a NaN in the last value the call leaves SDPA and every
    row but the last (the one query that attends to it) equals the float64 reference."""
    dtype = torch.bfloat16
    q, k, v = _inputs(dtype, t, seed=2)
    with _one_cpu_a_side(), torch.no_grad():
        assert _sdpa_takes(dtype, t, causal=True)
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


def test_a_float16_sdpa_call_reads_no_value(avx2_rules):
    """float16 in float32 work: no value of the dtype can pass the overflow rule, so its look answers
    without reading (the old route read max |q|, |k| and |v| of every call). (An AVX2 CPU's rules, which
    give a T = 16 call to SDPA.)"""
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


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_tops_read_at_a_tensors_address_equal_float64s(dtype):
    """value_tops reads a contiguous CPU tensor at its address (no NumPy view): on a tensor whose storage
    starts before it (a row slice), on its largest value, on inf and NaN, it equals max |x| of the same
    values in float64 (NaN when one is NaN)."""
    from qkv.kernels import magnitude

    base = torch.randn(5, 7, 33, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    base[0, 0, 0] = 1e4                                   # outside the slice: never the answer
    for name, edit in (("plain", None), ("largest", torch.finfo(dtype).max), ("inf", -float("inf")),
                       ("nan", float("nan"))):
        x = base.to(dtype)[1:]                             # contiguous, storage offset 7·33
        assert x.is_contiguous() and x.storage_offset() > 0
        if edit is not None:
            x[2, 3, 4] = edit
        (top,) = magnitude.value_tops(x)
        want = x.double().abs().max().item()
        assert (np.isnan(top) and np.isnan(want)) or top == want, (name, top, want)


def _one_cpu_machine():
    import dataclasses

    from qkv.kernels import native

    return native.use_machine(dataclasses.replace(route_mod.current_machine(), cpus=1))


def test_one_cpu_a_side_sends_short_forward_calls_to_sdpa():
    """An AVX2 CPU's rules, whatever CPU runs this (the one-CPU rules were measured on one; AVX-512 CPUs
    without AMX take the C kernel from T = 64 with one CPU too: kernels/speed.py). torch on one thread and qkv on one CPU (bench_peers.py --cpus 1: float32 T = 96 between ×0.27 at 64
    and ×0.49 at 128 for the C kernel): short forward calls take SDPA; the same calls with torch on two
    threads, or under autograd, keep the C kernel; a kept route follows a change of torch's threads."""
    patch = pytest.MonkeyPatch()   # (its own: undoing it leaves the cache fixture's alone)
    patch.setattr(speed, "has_avx512", lambda: False)
    speed.load(refresh=True)   # (kept routes are keyed by the table's generation)
    before = torch.get_num_threads()
    q, k, v = _inputs(torch.float32, 96)
    try:
        with _one_cpu_machine(), torch.no_grad():
            torch.set_num_threads(1)
            chosen = route_mod.choose_call_route(check_call(q, k, v))[1]
            assert chosen.name == route_mod.TORCH_SDPA and "rules" in chosen.reason
            assert speed.faster("bfloat16", False, False, 512, 512) == speed.SDPA
            assert speed.faster("bfloat16", True, False, 512, 512) == speed.C_KERNEL
            assert speed.faster("float16", False, False, 64, 64) == speed.SDPA
            assert speed.faster("float16", False, False, 128, 128) == speed.C_KERNEL
            assert speed.faster("float32", False, False, 512, 512) == speed.C_KERNEL
            torch.set_num_threads(2)   # the same call, the kept route's key changed
            assert route_mod.choose_call_route(check_call(q, k, v))[1].name == route_mod.TORCH_FLASH
        torch.set_num_threads(1)
        with _one_cpu_machine():
            trained = route_mod.choose_call_route(check_call(*(x.requires_grad_() for x in (q, k, v))))[1]
            assert trained.name == route_mod.TORCH_FLASH
    finally:
        torch.set_num_threads(before)
        patch.undo()
        speed.load(refresh=True)


def test_a_calibration_counts_for_its_own_torch_threads(own_cache):
    """A calibration measured with 2 torch threads decides for 2 threads; with another count the rules."""
    table = {"format": speed._FORMAT, "key": speed.machine_key(), "cpu": "test", "threads": 2, "cases": [
        {"dtype": "float32", "causal": False, "train": False, "t": 96, "c_kernel_s": 1.0, "sdpa_s": 1.0,
         "winner": "sdpa"}]}
    speed.save(table)
    assert speed.calibration_applies(2) and not speed.calibration_applies(3)
    assert speed.faster("float32", False, False, 96, 96, threads=2) == speed.SDPA
    assert speed.faster("float32", False, False, 96, 96, threads=3) == speed.C_KERNEL   # the rules


def test_the_dtype_range_rule_warns_of_nothing():
    """The static overflow answer squares each dtype's largest value (long double's is inf there): no
    RuntimeWarning (issue 31 §1: warnings printed on correct results), and the answers float16 False, the
    others True."""
    import warnings

    answers = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for dtype in (np.float16, np.float32, np.float64, np.longdouble):
            x = np.ones((2, 3, 4), dtype=dtype)
            answers[dtype] = route_mod._range_may_overflow(check_call(x, x, x))
    assert answers == {np.float16: False, np.float32: True, np.float64: True, np.longdouble: True}


@pytest.mark.parametrize("causal", [False, True])
def test_a_kept_sdpa_call_asks_each_question_once(monkeypatch, causal, avx2_rules):
    """A repeated short call SDPA takes (its signature's checks and route kept; an AVX2 CPU's rules, which
    give it to SDPA), on the general path (`_attention`: what a call takes that has no short plan, such as
    one with a mask): whether torch.compile is tracing is asked once (the signature's; the old path asked it
    again in dispatch and in the SDPA executor), the call's Static is not built (its autograd state is read
    alone: building it was ~6 µs of a ~30 µs SDPA call), and max |q| and max |k| are each read once. Nothing
    is timed; the output is checked against a float64 reference."""
    from qkv.attention import _attention
    from qkv.kernels import call as call_module
    from qkv.kernels import magnitude

    q, k, v = _inputs(torch.bfloat16, 16, seed=11)
    with torch.no_grad():
        _attention(q, k, v, causal=causal)            # first call: checked and routed in full, kept
        asked, built, read = [], [], []
        real_compiling, real_static, real_tops = torch.compiler.is_compiling, call_module.Call.static, \
            magnitude.value_tops
        monkeypatch.setattr(torch.compiler, "is_compiling", lambda: asked.append(1) or real_compiling())
        monkeypatch.setattr(call_module.Call, "static",
                            property(lambda self: built.append(1) or real_static.fget(self)))
        monkeypatch.setattr(route_mod, "value_tops", lambda *xs: read.extend(id(x) for x in xs) or real_tops(*xs))
        out = _attention(q, k, v, causal=causal)
        counts = len(asked), len(built), sorted(read)
    chosen, _, _ = _looked(q, k, v, causal=causal)
    assert chosen.name == route_mod.TORCH_SDPA, chosen.reason
    assert counts == (1, 0, sorted([id(q), id(k)] + ([id(v)] if causal else [])))
    qd, kd, vd = (x.double() for x in (q, k, v))
    scores = qd @ kd.transpose(-1, -2) / np.sqrt(q.shape[-1])
    if causal:
        scores = scores.masked_fill(torch.ones(16, 16, dtype=torch.bool).triu(1), float("-inf"))
    want = torch.softmax(scores, -1) @ vd
    assert (out.double() - want).abs().max() <= 4 * torch.finfo(torch.bfloat16).eps * vd.abs().max()
