"""Between two right routes, the faster one on this CPU (kernels/speed.py; issue 31 §3).

A CPU torch call that both the C kernel (TORCH_FLASH) and torch's SDPA compute — no mask but a square
causal, no bias, no score function, only the output asked — takes the route the speed table names:
this machine's calibration (`qkv doctor --calibrate`) when there is one, else the rules measured on
the CPUs the project has met. Nothing here times anything: the tests check which route a table
chooses, that both routes give the float64 reference's numbers to the dtype's rounding (forward
and gradients, eager and compiled), and that a calibration is written whole and read back.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from qkv.attention import _attention  # noqa: E402
from qkv.kernels import route as route_mod  # noqa: E402
from qkv.kernels import speed  # noqa: E402
from qkv.kernels.call import check_call  # noqa: E402
from speed_support import cpus_a_side  # noqa: E402

T = 96   # above the C kernel's size floor (64·64 scores), small enough to be quick


pytestmark = pytest.mark.usefixtures("own_cache")     # tests/conftest.py: the rules, never a calibration


def _inputs(dtype, grad=False, tq=T, tk=T, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 4, tq, 32, generator=gen).to(dtype)
    k, v = (torch.randn(2, 4, tk, 32, generator=gen).to(dtype) for _ in range(2))
    return tuple(x.requires_grad_(grad) for x in (q, k, v))


def _chosen(q, k, v, **kw):
    call = check_call(q, k, v, **kw)
    return route_mod.choose_call_route(call)[1]


def _write(tmp_path, cases):
    table = {"format": speed._FORMAT, "key": speed.machine_key(), "cpu": "test", "torch": torch.__version__, "cases": [
        {"dtype": d, "causal": c, "train": tr, "t": t, "c_kernel_s": 1.0, "sdpa_s": 1.0, "winner": w}
        for d, c, tr, t, w in cases]}
    speed.save(table)


@pytest.fixture
def cpu_kind():
    """pin(kind): the rules read this CPU kind's flags — "avx2" (no AVX-512), "avx512_amx" (an Intel Xeon's),
    "avx512" (AVX-512 without AMX: AMD EPYC Zen 4) — whatever CPU runs the test; kept routes are dropped
    (speed.load(refresh=True) moves the generation they are keyed by). Restored after."""
    with pytest.MonkeyPatch.context() as patch:   # (its own: undoing it leaves the cache fixture's alone)
        def pin(kind):
            patch.setattr(speed, "has_avx512", lambda: kind != "avx2")
            patch.setattr(speed, "has_amx", lambda: kind == "avx512_amx")
            speed.load(refresh=True)

        yield pin
    speed.load(refresh=True)


def _two_cpus():
    """Two CPUs a side: torch on two threads, qkv's machine two CPUs (restored after)."""
    return cpus_a_side(2)


@pytest.mark.parametrize("kind", ["avx2", "avx512_amx", "avx512"])
def test_the_rules_send_each_dtype_where_it_was_measured_faster(cpu_kind, kind):
    """No calibration, two CPUs a side, each CPU kind's rules whatever CPU runs this: bfloat16 forward takes
    SDPA on AVX-512 CPUs with AMX and the C kernel on AVX2-only ones (SDPA's OpenMP team costs a short call
    ~8 ms of CPU there: ×2.0–9.3 at T = 64–256), SDPA under autograd on both; float32 the C kernel, float16
    under autograd the C kernel (SDPA's float16 backward ×3.7–7.4 slower); float16 forward SDPA on AVX-512
    CPUs with AMX, the C kernel on AVX2-only ones (`test_the_half_precision_rules_follow_the_cpu`). AVX-512
    without AMX (AMD EPYC Zen 4): the C kernel for every dtype, forward and under autograd (×1.12–9.1)."""
    cpu_kind(kind)
    sdpa_forward = kind == "avx512_amx"
    sdpa_train_bf16 = kind != "avx512"
    with torch.no_grad(), _two_cpus():
        bf16 = route_mod.TORCH_SDPA if sdpa_forward else route_mod.TORCH_FLASH
        assert _chosen(*_inputs(torch.bfloat16)).name == bf16
        assert _chosen(*_inputs(torch.bfloat16), causal=True).name == bf16   # (T = 96)
        assert _chosen(*_inputs(torch.float32)).name == route_mod.TORCH_FLASH
        assert _chosen(*_inputs(torch.float16)).name == bf16
    with _two_cpus():
        assert _chosen(*_inputs(torch.float16, grad=True)).name == route_mod.TORCH_FLASH
        trained = _chosen(*_inputs(torch.bfloat16, grad=True))
    if sdpa_train_bf16:
        assert trained.name == route_mod.TORCH_SDPA
        assert "SDPA is faster here" in trained.reason and "rules" in trained.reason
    else:
        assert trained.name == route_mod.TORCH_FLASH


def test_the_half_precision_rules_follow_the_cpu():
    """AVX-512 CPUs with AMX (the first measurements): float16 forward SDPA up to T ≈ 2048, the C kernel beyond (×1.57
    at T = 4096), bfloat16 SDPA. AVX2-only (AMD EPYC Zen 3, measured one thread a side after the casts moved
    into C): float16 the C kernel at every T (×1.3–3.4), bfloat16 forward the C kernel at every T with two
    CPUs a side (×2.0–9.3 at T = 64–256, ×1.25–1.97 from 512) and from T = 1024 (causal 512) with one, SDPA
    under autograd. AVX-512 without AMX (AMD EPYC Zen 4, measured 7 December): the C kernel for every dtype and
    T, one CPU a side too. This machine follows its own CPU's rules."""
    rules = speed._rules
    assert rules("float16", False, False, 2048, avx512=True, amx=True) == speed.SDPA
    assert rules("float16", False, False, 4096, avx512=True, amx=True) == speed.C_KERNEL
    assert rules("bfloat16", True, False, 4096, avx512=True, amx=True) == speed.SDPA
    for dtype in speed.DTYPES:   # AVX-512 without AMX: the C kernel everywhere, one CPU a side too
        for t in (64, 512, 1024, 4096):
            for causal in (False, True):
                for train in (False, True):
                    for one_cpu in (False, True):
                        assert rules(dtype, causal, train, t, avx512=True, amx=False, one_cpu=one_cpu) == speed.C_KERNEL
    for t in (64, 256, 1024, 2048, 8192):
        for causal in (False, True):
            assert rules("float16", causal, False, t, avx512=False) == speed.C_KERNEL
            assert rules("float16", causal, True, t, avx512=False) == speed.C_KERNEL
            assert rules("bfloat16", causal, False, t, avx512=False) == speed.C_KERNEL
            assert rules("bfloat16", causal, False, t, avx512=False, one_cpu=True) == \
                (speed.C_KERNEL if t >= (512 if causal else 1024) else speed.SDPA)
            assert rules("bfloat16", causal, True, t, avx512=False) == speed.SDPA
            assert rules("float32", causal, False, t, avx512=False) == speed.C_KERNEL
    wide = speed.has_avx512()
    for dtype in ("float16", "bfloat16", "float32"):
        for t in (96, 512, 4096):
            for causal in (False, True):
                assert speed.faster(dtype, causal, False, t, t) == rules(
                    dtype, causal, False, t, avx512=wide, one_cpu=speed._one_cpu(speed.torch_threads()))
    with torch.no_grad(), _two_cpus():   # the route itself, at T = 512 (the half-precision rules differ by CPU there)
        q, k, v = _inputs(torch.bfloat16, tq=512, tk=512)
        expected = route_mod.TORCH_SDPA if wide and speed.has_amx() else route_mod.TORCH_FLASH
        assert _chosen(q, k, v, causal=True).name == expected
        assert _chosen(q, k, v).name == expected
        assert _chosen(*_inputs(torch.float16, tq=512, tk=512)).name == expected


@pytest.mark.parametrize("kw", [
    {"causal": True, "tq": T - 32},                               # bottom-right causal, not torch's is_causal
    {"mask_mod": "window"},                                        # a mask SDPA would need densely
    {"score_mod": "softcap"},                                      # a score function SDPA cannot take
], ids=["causal-not-square", "window", "softcap"])
def test_calls_sdpa_cannot_compute_the_same_stay_on_the_c_kernel(kw):
    from qkv import masks

    kw = dict(kw)
    tq = kw.pop("tq", T)
    if kw.get("mask_mod") == "window":
        kw["mask_mod"] = masks.sliding_window(16)
    if kw.get("score_mod") == "softcap":
        kw["score_mod"] = masks.soft_cap(30.0)
    with torch.no_grad():
        chosen = _chosen(*_inputs(torch.bfloat16, tq=tq), **kw)
    assert chosen.name == route_mod.TORCH_FLASH, chosen.reason


def test_a_calibration_decides_over_the_rules(own_cache):
    """This machine's measurements win over the rules, at the measured size nearest on a log scale."""
    _write(own_cache, [("float32", False, False, 64, "sdpa"), ("float32", False, False, 4096, "c_kernel"),
                       ("bfloat16", False, False, 64, "c_kernel")])
    with torch.no_grad():
        near = _chosen(*_inputs(torch.float32))
        assert near.name == route_mod.TORCH_SDPA and "measured on this machine" in near.reason
        assert _chosen(*_inputs(torch.bfloat16)).name == route_mod.TORCH_FLASH
    assert speed.faster("float32", False, False, 3000, 3000) == speed.C_KERNEL
    # T = 700: nearer 64 by difference (636 against 3396), nearer 4096 on a log scale (×10.9 against ×5.9)
    assert speed.faster("float32", False, False, 700, 700) == speed.C_KERNEL
    assert speed.faster("float32", True, False, 96, 96) == speed.C_KERNEL   # not calibrated: the rules


@pytest.mark.parametrize("content", [b"{not json", b'{"format": 1, "key": "another machine", "cases": []}',
                                     b'{"format": 99}', b"[1, 2]"])
def test_an_unreadable_or_foreign_calibration_falls_back_to_the_rules(own_cache, cpu_kind, content):
    cpu_kind("avx2")   # (rules whose answer here, SDPA, differs from the C kernel's floor-free default)
    speed.cache_path().parent.mkdir(parents=True, exist_ok=True)
    speed.cache_path().write_bytes(content)
    table, source = speed.load(refresh=True)
    assert table is None and source.startswith("rules")
    assert _chosen(*_inputs(torch.bfloat16, grad=True)).name == route_mod.TORCH_SDPA   # (AVX2's rules)


def _reference(q, k, v, causal):
    qd, kd, vd = (x.detach().double().requires_grad_() for x in (q, k, v))
    s = qd @ kd.transpose(-1, -2) / np.sqrt(q.shape[-1])
    if causal:
        tq, tk = s.shape[-2:]
        allowed = torch.arange(tk)[None, :] <= torch.arange(tq)[:, None] + (tk - tq)
        s = s.masked_fill(~allowed, float("-inf"))
    out = torch.softmax(s, -1) @ vd
    return out, (qd, kd, vd)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("pinned", ["torch_flash", "torch_sdpa", None], ids=["c", "sdpa", "chosen"])
def test_both_routes_give_the_reference_to_the_dtypes_rounding(dtype, causal, pinned):
    """Either route: output and gradients within a few units of the dtype's rounding of a float64 reference
    (tolerance from torch.finfo(dtype).eps, scaled by the values' size; never from the output)."""
    q, k, v = _inputs(dtype, grad=True, seed=3)
    out = _attention(q, k, v, causal=causal, route=pinned)
    dout = torch.randn(out.shape, generator=torch.Generator().manual_seed(4)).to(dtype)
    out.backward(dout)
    ref, leaves = _reference(q, k, v, causal)
    ref.backward(dout.double())
    eps = torch.finfo(dtype).eps
    assert (out.double() - ref).abs().max() <= 4 * eps * ref.abs().max()
    for got, want in zip((q.grad, k.grad, v.grad), (x.grad for x in leaves)):
        assert (got.double() - want).abs().max() <= 16 * eps * want.abs().max() + 8 * eps


def test_a_traced_call_follows_the_same_table():
    """torch.compile (fullgraph): a traced forward asks the same table (bfloat16 → SDPA inside qkv's checked
    op; float32 → the C op); under autograd it keeps the C op (the checked op's backward would compute the
    forward again); the compiled results match the reference."""
    for dtype, train, expected in ((torch.bfloat16, False, route_mod.TORCH_SDPA),
                                   (torch.float32, False, route_mod.TORCH_FLASH),
                                   (torch.bfloat16, True, route_mod.TORCH_FLASH)):
        q = torch.zeros(2, 4, T, 32, dtype=dtype, requires_grad=train)
        static = check_call(q, q, q, causal=True).static   # (what a trace knows of the call)
        with _two_cpus():
            plan = route_mod.choose_route(static, route_mod._Traced())
            eager = speed.faster(str(dtype).removeprefix("torch."), True, train, T, T)
        if dtype == torch.bfloat16 and not train and eager == speed.C_KERNEL:   # (AVX2: the C op, as eager)
            expected = route_mod.TORCH_FLASH
        assert plan.name == expected, plan.reason
    q, k, v = _inputs(torch.bfloat16, grad=True, seed=5)
    compiled = torch.compile(lambda q, k, v: _attention(q, k, v, causal=True), fullgraph=True, backend="aot_eager")
    out = compiled(q, k, v)
    out.float().sum().backward()
    ref, leaves = _reference(q, k, v, True)
    ref.sum().backward()
    eps = torch.finfo(torch.bfloat16).eps
    assert (out.double() - ref).abs().max() <= 4 * eps * ref.abs().max()
    assert (q.grad.double() - leaves[0].grad).abs().max() <= 16 * eps * leaves[0].grad.abs().max() + 8 * eps


def test_calibrate_writes_a_whole_table_that_the_routes_then_follow(own_cache):
    """A tiny calibration on the real routes (the sizes, not the timings, are what is checked): every case
    measured, each winner the one `decide` gives from its rounds, the file written whole under the machine's
    key and read back (a quiet machine as the load reading: the table is not provisional)."""
    table = speed.calibrate(_attention, sizes={"forward": (80,), "train": (80,)}, rounds=1, heads=1, width=8,
                            load=lambda: 0.0, fresh=False)
    assert len(table["cases"]) == 3 * 2 * 2 and not table["provisional"]
    for case in table["cases"]:
        assert case["winner"] in (speed.SDPA, speed.C_KERNEL) and case["by"] in ("measured", "rules")
        if case["by"] == "rules":
            assert case["winner"] == speed._rules(case["dtype"], case["causal"], case["train"], case["t"])
    path = speed.save(table)
    assert path.name == f"speed-{speed.machine_key()}.json"
    assert json.loads(path.read_text())["cases"] == table["cases"]
    for case in table["cases"]:
        assert speed.faster(case["dtype"], case["causal"], case["train"], 80, 80) == case["winner"]


class _StandIn:
    """A clock and an `attend` that compute nothing: each timed call of a route advances the clock by that
    route's scripted (wall, CPU) seconds for the round (the same for every case of the round), each warm-up
    call by (9, 9), so the calibration's decisions are tested without timing. calls: the routes called, in
    order (warm-up and timed call of each case)."""

    def __init__(self, script, cases=6):
        self.script = {route: list(times) for route, times in script.items()}
        self.cases = cases
        self.now = [0.0, 0.0]
        self.calls = []

    def clock(self):
        return tuple(self.now)

    def attend(self, q, k, v, *, causal, route):
        made = self.calls.count(route)
        self.calls.append(route)
        if made % 2 == 0:   # each case's warm-up call
            wall, cpu = 9.0, 9.0
        else:
            rounds = self.script.get(route, [])
            round_index = made // 2 // self.cases
            wall, cpu = rounds[round_index] if round_index < len(rounds) else (1.0, 1.0)
        self.now = [self.now[0] + wall, self.now[1] + cpu]
        return (q.float() * 0).sum() if q.requires_grad else q


def _calibrated(script, load=lambda: 0.5, dtype_case=("bfloat16", False, False), rounds=5):
    stand_in = _StandIn(script)   # 3 dtypes × unmasked, causal at T = 1024: 6 cases
    table = speed.calibrate(stand_in.attend, sizes={"forward": (1024,), "train": ()}, rounds=rounds, heads=1,
                            width=4, clock=stand_in.clock, load=load)
    case = next(c for c in table["cases"] if (c["dtype"], c["causal"], c["train"]) == dtype_case)
    return table, case, stand_in


def test_a_busy_round_does_not_decide():
    """bfloat16 T = 1024 (issue 31: a calibration under load picked the C kernel, against the rule): SDPA
    3× faster in its quiet rounds, slowed 4× in three of five by a neighbour. The medians (the old rule)
    say the C kernel; each route's fastest round says SDPA, on both clocks."""
    sdpa = [(0.010, 0.020), (0.040, 0.080), (0.041, 0.082), (0.011, 0.021), (0.042, 0.084)]
    c_kernel = [(0.030, 0.060), (0.031, 0.062), (0.030, 0.061), (0.032, 0.063), (0.030, 0.060)]
    import statistics
    assert statistics.median(t for t, _ in sdpa) > statistics.median(t for t, _ in c_kernel)  # old: C
    table, case, _ = _calibrated({"torch_sdpa": sdpa, "torch_flash": c_kernel})
    assert case["winner"] == speed.SDPA and case["by"] == "measured"
    assert case["sdpa_s"] == pytest.approx(0.010) and case["c_kernel_s"] == pytest.approx(0.030)
    assert case["sdpa_cpu_s"] == pytest.approx(0.020) and case["c_kernel_cpu_s"] == pytest.approx(0.060)


def test_the_rounds_alternate_their_order():
    """Each round times one side's every case (a warm-up call and a timed call each), then the other's: C
    kernel first in even rounds, SDPA first in odd ones."""
    _, _, stand_in = _calibrated({}, rounds=4)
    side = ["torch_flash"] * 12, ["torch_sdpa"] * 12   # 6 cases × (warm-up, timed)
    assert stand_in.calls == (side[0] + side[1] + side[1] + side[0]) * 2


def test_each_side_of_each_round_runs_in_its_own_process(own_cache):
    """The default protocol (issue 31 §3: SDPA's spinning OpenMP threads on the C kernel's clock): every
    (round, side) is timed by a process of its own — none of them this one, no two alike —, and the table
    says which processes measured it. Nothing about the times is checked."""
    import os

    table = speed.calibrate(_attention, sizes={"forward": (64,), "train": ()}, rounds=1, heads=1, width=8,
                            load=lambda: 0.0)
    processes = table["processes"]   # (the order of later rounds: test_the_rounds_alternate_their_order)
    assert [(p["round"], p["route"]) for p in processes] == [(0, speed.C_KERNEL), (0, speed.SDPA)]
    pids = [p["pid"] for p in processes]
    assert len(set(pids)) == 2 and os.getpid() not in pids
    assert len(table["cases"]) == 3 * 2 and not table["provisional"]
    for case in table["cases"]:
        assert case["winner"] in (speed.SDPA, speed.C_KERNEL)


def test_calibrate_refuses_an_attend_a_fresh_process_cannot_import():
    """A lambda cannot be imported by a child process: named, unless fresh=False (this process) is asked."""
    with pytest.raises(ValueError, match="not a module-level function"):
        speed.calibrate(lambda q, k, v, *, causal, route: q, rounds=1)


@pytest.mark.parametrize("c, s, winner, by", [
    ((0.100, 0.200), (0.105, 0.210), "rule", "rules"),          # within the margin on both clocks: the rule
    ((0.100, 0.200), (0.150, 0.300), speed.C_KERNEL, "measured"),
    ((0.150, 0.300), (0.100, 0.200), speed.SDPA, "measured"),
    ((0.100, 0.400), (0.150, 0.300), "rule", "rules"),          # wall says C, CPU time says SDPA: the rule
    ((0.100, 0.200), (0.150, 0.215), "rule", "rules"),          # wall clear, CPU time within the margin
], ids=["close", "c-clear", "sdpa-clear", "clocks-disagree", "cpu-close"])
@pytest.mark.parametrize("rule", [speed.SDPA, speed.C_KERNEL])
def test_decide_takes_a_measurement_only_when_both_clocks_agree_beyond_the_margin(c, s, winner, by, rule):
    """Each side's fastest round (noise only adds time) on wall and CPU time; the rule stands unless both say
    the same route is faster by more than `speed.MARGIN` (×1.10)."""
    decided = speed.decide([c, (c[0] * 3, c[1] * 3)], [(s[0] * 2, s[1] * 2), s], rule)
    assert decided["winner"] == (rule if winner == "rule" else winner) and decided["by"] == by
    assert (decided["c_kernel_s"], decided["c_kernel_cpu_s"]) == c and (decided["sdpa_s"], decided["sdpa_cpu_s"]) == s


def test_decide_refuses_no_rounds():
    with pytest.raises(ValueError, match="at least one timed round"):
        speed.decide([], [(1.0, 1.0)], speed.SDPA)


@pytest.mark.parametrize("rounds", [0, -1, True, 2.5])
def test_calibrate_refuses_rounds_that_are_not_a_count(rounds):
    with pytest.raises(ValueError, match="rounds must be a positive integer"):
        speed.calibrate(_StandIn({}).attend, rounds=rounds)


@pytest.mark.parametrize("readings, provisional", [
    ([0.5] + [2.5] * 6, False),            # quiet before; during, 2.5 less our own threads (the CPUs)
    ([3.0] + [2.5] * 6, True),             # already busier than the CPU count before starting
    ([0.5] + [2.5] * 3 + [5.0] * 3, True),  # others' load rose above the CPU count during the run
    ([None] * 7, False),                   # no load average on this system: nothing to go by
])
def test_a_calibration_on_a_busy_machine_is_provisional_and_not_kept(own_cache, readings, provisional):
    """The load average before the first round and after each one; others' load above the machine's CPU count
    (2 here, `use_machine`) marks the table provisional, and `save` refuses it (the rules stay)."""
    import dataclasses

    from qkv.kernels import native, route

    values = iter(readings)
    with native.use_machine(dataclasses.replace(route.current_machine(), cpus=2)):
        table, _, _ = _calibrated({"torch_sdpa": [], "torch_flash": []}, load=lambda: next(values))
        assert table["provisional"] == provisional and table["cpus"] == 2
        if provisional:
            with pytest.raises(ValueError, match="busy machine"):
                speed.save(table)
            assert not speed.cache_path().exists()
        else:
            speed.save(table)
            assert speed.load(refresh=True)[0] is not None


def test_a_provisional_file_counts_as_none(own_cache, cpu_kind):
    """A file marked provisional (written by hand or by another tool) is not read: the rules (an AVX2 CPU's,
    whose answer differs from the file's)."""
    cpu_kind("avx2")
    _write(own_cache, [("bfloat16", False, True, 256, "c_kernel")])
    data = json.loads(speed.cache_path().read_text())
    speed.cache_path().write_text(json.dumps(dict(data, provisional=True)))
    table, source = speed.load(refresh=True)
    assert table is None and source.startswith("rules")
    assert speed.faster("bfloat16", False, True, 256, 256) == speed.SDPA   # (AVX2's rules)


def test_doctor_keeps_no_calibration_of_a_busy_machine(own_cache, monkeypatch, capsys):
    """`qkv doctor --calibrate` on a busy machine: the cases printed, one line saying why nothing is saved
    (en, ko), exit 1, no file. (speed.calibrate is the stand-in seam docs/internals.md lists.)"""
    from qkv.cli import main

    busy = {"key": speed.machine_key(), "provisional": True, "others_load": 3.4, "cpus": 2, "cases": []}
    monkeypatch.setattr(speed, "calibrate", lambda attend, **kw: busy)
    for lang, words in (("en", "not saved"), ("ko", "저장하지 않았다")):
        assert main(["doctor", "--calibrate", "--lang", lang]) == 1
        err = capsys.readouterr().err
        assert words in err and "3.4" in err, err
    assert not speed.cache_path().exists()


def test_doctor_says_which_route_and_why(capsys):
    from qkv.cli import main

    assert main(["doctor", "--lang", "en"]) == 0
    out = capsys.readouterr().out
    assert "rules measured on CPUs the project has met" in out
    assert _doctor_row(out, "bfloat16 unmasked, forward")[1024] == ("SDPA" if speed.has_avx512() and speed.has_amx()
                                                                     else "C kernel")
    assert _doctor_row(out, "float32 unmasked, forward")[1024] == "C kernel"   # (the rules differ by CPU)


def _doctor_row(out: str, start: str) -> dict:
    """{T: route} of one line of `qkv doctor`'s speed table ("  bfloat16 unmasked, forward: T=64–256: SDPA,
    T=512–4096: C kernel"), each range expanded to the sizes the doctor shows."""
    from qkv.commands.doctor import SPEED_SIZES

    line = next(line for line in out.splitlines() if line.strip().startswith(start + ":"))
    row = {}
    for part in line.split(": ", 1)[1].split(", "):
        sizes, name = part.removeprefix("T=").split(": ")
        lo, _, hi = sizes.partition("–")
        row.update({t: name for t in SPEED_SIZES if int(lo) <= t <= int(hi or lo)})
    assert sorted(row) == list(SPEED_SIZES), line
    return row


def test_doctor_shows_the_short_calls_the_rules_decide(capsys, cpu_kind):
    """An AVX2 CPU's rules (whatever CPU runs this: the one-CPU rules were measured on one). One CPU a side (torch on one thread, qkv's machine one CPU): the rules give short forward calls to SDPA,
    and the doctor's table says so from T = 64 (it showed T ≥ 512 only), each size as speed.faster decides
    it; the same table with two torch threads gives bfloat16 forward to the C kernel at every size shown."""
    import dataclasses

    from qkv.cli import main
    from qkv.commands.doctor import SPEED_SIZES
    from qkv.kernels import native

    cpu_kind("avx2")
    before = torch.get_num_threads()
    try:
        with native.use_machine(dataclasses.replace(route_mod.current_machine(), cpus=1)):
            torch.set_num_threads(1)
            assert main(["doctor", "--lang", "en"]) == 0
            out = capsys.readouterr().out
            for dtype in speed.DTYPES:
                for causal, kind in ((False, "unmasked"), (True, "causal")):
                    row = _doctor_row(out, f"{dtype} {kind}, forward")
                    assert row == {t: "SDPA" if speed.faster(dtype, causal, False, t, t) == speed.SDPA else "C kernel"
                                   for t in SPEED_SIZES}
            assert _doctor_row(out, "float32 unmasked, forward")[64] == "SDPA"
            assert _doctor_row(out, "float32 unmasked, forward")[4096] == "C kernel"
            torch.set_num_threads(2)
            assert main(["doctor", "--lang", "ko"]) == 0
            row = _doctor_row(capsys.readouterr().out, "bfloat16 마스크 없음, 순전파")
            assert set(row.values()) == {"C 커널"}
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("kind", ["avx2", "avx512_amx", "avx512"])
def test_short_forward_calls_take_the_c_kernel_where_it_was_measured_faster(cpu_kind, kind):
    """Below the C kernel's size floor (64·64 scores per head): an unmasked or causal forward call takes the C
    kernel on AVX-512 CPUs without AMX (AMD EPYC Zen 5, measured one and two CPUs a side: kernels/speed.py
    short_in_c), SDPA on the other CPU kinds, one CPU a side or two; under autograd, with lse asked or with a
    score function it takes what it took before (SDPA, the plain path, the plain path)."""
    from qkv import masks

    cpu_kind(kind)
    in_c = kind == "avx512"
    assert speed.short_in_c(False) == in_c and not speed.short_in_c(True)
    for cpus in (1, 2):
        with torch.no_grad(), cpus_a_side(cpus):
            for dtype in (torch.float32, torch.bfloat16, torch.float16):
                for tq, tk in ((16, 16), (1, 16), (8, 40)):
                    for causal in (False, True):
                        chosen = _chosen(*_inputs(dtype, tq=tq, tk=tk), causal=causal)
                        assert chosen.name == (route_mod.TORCH_FLASH if in_c else route_mod.TORCH_SDPA), \
                            (dtype, tq, tk, causal, chosen.reason)
                q, k, v = _inputs(torch.float32, tq=16, tk=16)
                assert route_mod.choose_route(check_call(q, k, v), want="lse").name == route_mod.PLAIN
                assert _chosen(q, k, v, score_mod=masks.soft_cap(5.0)).name == route_mod.PLAIN
        with cpus_a_side(cpus):
            chosen = _chosen(*_inputs(torch.float32, grad=True, tq=16, tk=16))
            assert chosen.name == route_mod.TORCH_SDPA and "short call" not in chosen.reason


@pytest.mark.parametrize("kind", ["avx2", "avx512"])
def test_doctor_says_where_short_calls_go(capsys, cpu_kind, kind):
    """`qkv doctor` names the route of calls below the C kernel's floor: forward the C kernel on an AVX-512 CPU
    without AMX, SDPA on the others; under autograd SDPA — what choose_route gives a T = 16 call of each kind."""
    from qkv.cli import main

    cpu_kind(kind)
    assert main(["doctor", "--lang", "en"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if "below 64·64 scores per head" in line)
    with torch.no_grad():
        forward = _chosen(*_inputs(torch.float32, tq=16, tk=16)).name
    trained = _chosen(*_inputs(torch.float32, grad=True, tq=16, tk=16)).name
    assert trained == route_mod.TORCH_SDPA and line.endswith("forward + backward SDPA")
    assert f"forward {'C kernel' if forward == route_mod.TORCH_FLASH else 'SDPA'}," in line
    assert forward == (route_mod.TORCH_FLASH if kind == "avx512" else route_mod.TORCH_SDPA)


@pytest.mark.parametrize("kind", ["avx2", "avx512"])
def test_mid_sized_numpy_calls_take_the_kernel_where_it_was_measured_faster(cpu_kind, kind):
    """NumPy float32 from 64·64 scores per head: the plain path below the work floor (route._C_KERNEL_MIN_WORK,
    measured on the AVX2 EPYC), the kernel (FLASH_MANY) at every work on an AVX-512 CPU without AMX for widths
    the register tiles take (Dk ≤ 128, Dv a multiple of 16); Dk = Dv = 8 keeps the plain path there too. Both
    routes give the float64 reference's output to float32's rounding."""
    from qkv.attention import attention

    cpu_kind(kind)
    gen = np.random.default_rng(4)
    for d, tiled in ((64, True), (16, True), (8, False)):
        q, k, v = (gen.standard_normal((1, 8, 64, d)).astype(np.float32) for _ in range(3))
        chosen = route_mod.choose_route(check_call(q, k, v))
        expected = route_mod.FLASH_MANY if kind == "avx512" and tiled else route_mod.PLAIN_C_SOFTMAX
        assert chosen.name == expected, (kind, d, chosen.reason)
        qd, kd, vd = (x.astype(np.float64) for x in (q, k, v))
        s = qd @ np.swapaxes(kd, -1, -2) / np.sqrt(d)
        w = np.exp(s - s.max(-1, keepdims=True))
        want = (w / w.sum(-1, keepdims=True)) @ vd
        assert np.abs(attention(q, k, v) - want).max() <= 1e-5 * np.abs(want).max()
