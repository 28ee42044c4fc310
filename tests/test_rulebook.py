"""One rulebook: `route.choose_route(call, looks)` decides eager and traced calls alike (the traced case is the
looks `_Traced()`, answering every question about the values "unknown"). Every route the two rulebooks before it
chose (eager `choose_route`, traced `_static_torch_plan`, commit 56297f1) must be chosen again for the same call:
tests/reference/routes_before_rulebook.json holds what that commit chose for each call of tests/route_cases.py,
written by running that commit's code (route_cases.py's docstring says how), not by hand."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import route_cases
from qkv.kernels import native, route, speed
from qkv.kernels.call import Static, check_call

BEFORE = json.loads((Path(__file__).parent / "reference" / "routes_before_rulebook.json").read_text())


@pytest.fixture(autouse=True)
def rules_not_calibration(monkeypatch, tmp_path):
    """The speed table's rules (no calibration file of this machine): the routes recorded were chosen by them,
    the rules of AVX-512 CPUs (the only ones then; the AVX2-only rules since are tests/test_speed_routes.py's)."""
    if native.fused is None:
        pytest.fail("qkv.kernels._fused is not built (tests/test_fused.py says why)")
    monkeypatch.setenv("QKV_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(speed, "has_avx512", lambda: True)
    monkeypatch.setattr(speed, "has_amx", lambda: True)   # (AVX-512 without AMX has its own rule since)
    speed.load(refresh=True)
    yield
    monkeypatch.undo()
    speed.load(refresh=True)


def _label(case) -> str:
    return " ".join(str(part) for part in case)


def test_eager_calls_take_the_routes_they_took_before():
    cases = route_cases.eager_cases()
    assert len(cases) == len(BEFORE["eager"])
    differ = [(_label(case), before, now) for case, before in zip(cases, BEFORE["eager"])
              if (now := route_cases.describe_eager(case)) != before]
    assert not differ, f"{len(differ)} of {len(cases)} calls route differently, first: {differ[:3]}"


def test_every_traced_call_is_routed_as_before_by_the_rulebook_asked_directly():
    """Every traced call's route asked of the rulebook directly (route_cases.describe_traced_plan: check_call and
    traced_torch_route as qkv.attention runs them inside torch.compile, read as the qkv ops the graph holds);
    test_traced_calls_take_the_routes_they_took_before traces one call of each answer to check that reading against
    real graphs."""
    cases = route_cases.traced_cases()
    assert len(cases) == len(BEFORE["traced"])
    differ = [(_label(case), before, now) for case, before in zip(cases, BEFORE["traced"])
              if (now := route_cases.describe_traced_plan(case)) != before]
    assert not differ, f"{len(differ)} of {len(cases)} traced calls route differently, first: {differ[:3]}"


def _first_of_each_answer() -> list[int]:
    first = {}
    for i, before in enumerate(BEFORE["traced"]):
        first.setdefault(json.dumps(before, sort_keys=True), i)
    return sorted(first.values())


def _plan(name, reason, rows):
    return name, reason, [[r.tolist() for r in per_batch] for per_batch in rows]


@pytest.mark.parametrize("index", _first_of_each_answer(),
                         ids=lambda i: _label(route_cases.traced_cases()[i]).replace(" ", "-"))
def test_traced_calls_take_the_routes_they_took_before(index, monkeypatch):
    """torch.compile(fullgraph=True) of the first call of each answer recorded (6 of the 36: every route and
    every count of qkv ops; tracing all 36 took 38 CPU-s, these 6 about 9): the ops in its graph are the ones
    recorded and the ones the rulebook's direct answer reads (describe_traced_plan), and the route the trace
    asked for (`route._traced_plan`, which Dynamo runs eagerly) is the direct answer's, reason and key ranges
    included. (A dispatch that left the rulebook's route under trace fails here: checked by making TORCH_SDPA
    take PLAIN in execute.dispatch's traced branch.)"""
    case = route_cases.traced_cases()[index]
    direct, _ = route_cases.traced_plan(case)
    asked, real = [], route._traced_plan

    def spy(*args):
        asked.append(real(*args))
        return asked[-1]

    spy._dynamo_marked_constant = True   # as the real one: run eagerly, its result a constant of the graph
    monkeypatch.setattr(route, "_traced_plan", spy)
    graph = route_cases.describe_traced(case)
    assert graph == BEFORE["traced"][index] == route_cases.describe_traced_plan(case)
    assert asked and all(_plan(*plan) == _plan(direct.name.value, direct.reason, direct.key_rows) for plan in asked)


_WINDOW = route_cases._masks().sliding_window(16)


def _window_call(values=1.0):
    q = torch.full((1, 2, 128, 16), values)
    return check_call(q, q, q, mask_mod=_WINDOW)


def test_traced_looks_answer_unknown_and_the_route_is_right_whatever_the_answer():
    """The same Static routed with the eager looks of finite values, of an infinite value, and with the traced
    looks: eager takes TORCH_FLASH only when the values are finite; traced takes it without knowing (the op checks)."""
    finite, infinite = _window_call(), _window_call(float("inf"))
    # the static description holds no value (the two analyses of one mask are equal, not one object)
    assert dataclasses.replace(finite.static, mask_info=None) == dataclasses.replace(infinite.static, mask_info=None)
    assert route.choose_route(finite).name == route.TORCH_FLASH
    assert route.choose_route(infinite).name == route.PLAIN
    traced = route._Traced()
    assert all(traced.ask(name) is None for name in ("v_top", "overflow", "lse", "values_ok", "kv_finite"))
    assert route.choose_route(finite.static, traced).name == route.TORCH_FLASH
    assert route.choose_route(finite.static, route._Traced(mask_readable=False)).name == route.PLAIN


def test_a_static_description_is_routed_with_its_looks():
    with pytest.raises(TypeError, match="with its looks"):
        route.choose_route(_window_call().static)


def test_a_split_pass_is_the_same_rule_on_the_pass_static_description():
    """A call of sinks | window splits into one pass per key range; each pass's route is choose_route of that
    pass (split_call's Call, or split_static's description: the two agree), pinned to the split's route."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 2, 200, 8)).astype(np.float32)
    call = check_call(q, q, q, mask_mod=route_cases._masks().sinks(2) | route_cases._masks().sliding_window(16))
    chosen = route.choose_route(call)
    table = route.range_split(call.static)
    assert chosen.key_rows and table is not None
    for r in range(table.shape[1]):
        as_call = route.choose_route(route.split_call(call, table, 0, r), want="lse", route=chosen.name)
        as_static = route.choose_route(route.split_static(call.static, table, 0, r), route._Looks(call),
                                       want="lse", route=chosen.name)
        assert isinstance(route.split_static(call.static, table, 0, r), Static)
        assert (as_call.name, as_call.block_q, as_call.block_k, len(as_call.tasks)) == \
            (as_static.name, as_static.block_q, as_static.block_k, len(as_static.tasks))
        assert [t[3].tolist() for t in as_call.tasks] == [t[3].tolist() for t in as_static.tasks]


def test_calls_of_one_signature_share_their_static_description():
    """Call.static is built once per signature and autograd state (check_call keeps it with the signature); a
    call that autograd records is described as differentiated, the same call under no_grad is not."""
    t = torch.zeros(1, 2, 64, 8)
    first, second = check_call(t, t, t, causal=True), check_call(t.clone(), t.clone(), t.clone(), causal=True)
    assert first.static is second.static and not first.static.differentiated
    leaf = t.clone().requires_grad_()
    graded = check_call(leaf, leaf, leaf, causal=True)
    assert graded.static.differentiated and graded.static == dataclasses.replace(first.static, differentiated=True)
    with torch.no_grad():
        assert not check_call(leaf, leaf, leaf, causal=True).static.differentiated
