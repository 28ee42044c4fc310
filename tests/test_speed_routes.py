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

T = 96   # above the C kernel's size floor (64·64 scores), small enough to be quick


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Each test reads its own (empty) cache directory: never the developer's calibration."""
    monkeypatch.setenv("QKV_CACHE_DIR", str(tmp_path))
    speed.load(refresh=True)
    yield tmp_path
    monkeypatch.delenv("QKV_CACHE_DIR")
    speed.load(refresh=True)


def _inputs(dtype, grad=False, tq=T, tk=T, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 4, tq, 32, generator=gen).to(dtype)
    k, v = (torch.randn(2, 4, tk, 32, generator=gen).to(dtype) for _ in range(2))
    return tuple(x.requires_grad_(grad) for x in (q, k, v))


def _chosen(q, k, v, **kw):
    call = check_call(q, k, v, **kw)
    return route_mod.choose_call_route(call)[1]


def _write(tmp_path, cases):
    table = {"format": 1, "key": speed.machine_key(), "cpu": "test", "torch": torch.__version__, "cases": [
        {"dtype": d, "causal": c, "train": tr, "t": t, "c_kernel_s": 1.0, "sdpa_s": 1.0, "winner": w}
        for d, c, tr, t, w in cases]}
    speed.save(table)


def test_the_rules_send_bfloat16_to_sdpa_and_float32_to_the_c_kernel():
    """No calibration: bfloat16 (SDPA ×1.0–3.7 faster on the CPUs measured) takes SDPA, float32 the C kernel,
    float16 SDPA forward and the C kernel under autograd (SDPA's float16 backward ×3.7–7.4 slower)."""
    with torch.no_grad():
        assert _chosen(*_inputs(torch.bfloat16)).name == route_mod.TORCH_SDPA
        assert _chosen(*_inputs(torch.bfloat16), causal=True).name == route_mod.TORCH_SDPA
        assert _chosen(*_inputs(torch.float32)).name == route_mod.TORCH_FLASH
        assert _chosen(*_inputs(torch.float16)).name == route_mod.TORCH_SDPA
    assert _chosen(*_inputs(torch.float16, grad=True)).name == route_mod.TORCH_FLASH
    assert _chosen(*_inputs(torch.bfloat16, grad=True)).name == route_mod.TORCH_SDPA
    reason = _chosen(*_inputs(torch.bfloat16)).reason
    assert "SDPA is faster here" in reason and "rules" in reason
    # float16 forward: SDPA up to T ≈ 2048, the C kernel beyond (×1.57 at T = 4096 in the measurements)
    assert speed.faster("float16", False, False, 2048, 2048) == speed.SDPA
    assert speed.faster("float16", False, False, 4096, 4096) == speed.C_KERNEL


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
def test_an_unreadable_or_foreign_calibration_falls_back_to_the_rules(own_cache, content):
    speed.cache_path().parent.mkdir(parents=True, exist_ok=True)
    speed.cache_path().write_bytes(content)
    table, source = speed.load(refresh=True)
    assert table is None and source.startswith("rules")
    with torch.no_grad():
        assert _chosen(*_inputs(torch.bfloat16)).name == route_mod.TORCH_SDPA


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
        plan = route_mod.choose_route(static, route_mod._Traced())
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
    """A tiny calibration (the sizes, not the timings, are what is checked): every case measured, each winner
    the smaller of its two medians, the file written whole under the machine's key and read back."""
    table = speed.calibrate(_attention, sizes={"forward": (80,), "train": (80,)}, repeats=1, heads=1, width=8)
    assert len(table["cases"]) == 3 * 2 * 2
    for case in table["cases"]:
        assert case["winner"] == (speed.C_KERNEL if case["c_kernel_s"] <= case["sdpa_s"] else speed.SDPA)
    path = speed.save(table)
    assert path.name == f"speed-{speed.machine_key()}.json"
    assert json.loads(path.read_text())["cases"] == table["cases"]
    for case in table["cases"]:
        assert speed.faster(case["dtype"], case["causal"], case["train"], 80, 80) == case["winner"]


def test_doctor_says_which_route_and_why(capsys):
    from qkv.cli import main

    assert main(["doctor", "--lang", "en"]) == 0
    out = capsys.readouterr().out
    assert "rules measured on CPUs the project has met" in out
    line = next(line for line in out.splitlines() if line.strip().startswith("bfloat16 unmasked, forward:"))
    assert "T=1024: SDPA" in line
    line = next(line for line in out.splitlines() if line.strip().startswith("float32 unmasked, forward:"))
    assert "T=1024: C kernel" in line
