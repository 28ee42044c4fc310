"""An adversarial pass on issue 21's new entry points, as a hostile but realistic user would call
them. Each test names the class of input it covers; the oracle is the plain path on float64 inputs
(NumPy), or torch autograd through the plain path in float64 (torch).

Classes covered:
- relative score functions (`ScoreMod(..., relative=True)`, ALiBi, T5's buckets) on the C routes:
  a declaration that is false (the function reads q, kv or b on its own), a function reading an
  array or a global that changes between calls, a function written with torch methods, a function
  whose result does not have one score per score, a function reading a tensor that is trained;
- the automatic mask-analysis cache (h/masks): a value read through a module attribute or from a
  nested code object (comprehension, inner lambda) changed between calls;
- split calls (h/masks): a pass whose band does not straddle the diagonal;
- torch.compile(fullgraph=True) (h/masks): a mask function reading a global or module value that changes —
  in tests/test_flex_compile.py, with the suite's other inductor-compiled tests (one xdist worker compiles them).
"""

from __future__ import annotations

import numpy as np
import pytest

from qkv import masks
from qkv.attention import _attention
from qkv.attention import attention_reference as plain
from qkv.kernels import native

torch = pytest.importorskip("torch")

needs_fused = pytest.mark.skipif(native.fused is None, reason="qkv.kernels._fused is not built")
NUMPY_ROUTES = ["flash_many", "flash_rows", "py_walk"]
# float32 kernels against float64: what float32 rounding of scores and sums gives on these sizes
TOL = 2e-5


def _inputs(b=2, h=3, tq=150, tk=170, d=16, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in ((b, h, tq, d), (b, h, tk, d), (b, h, tk, d))]


def _numpy_error(score_mod, route, *, causal=False, tq=150, tk=170):
    q, k, v = _inputs(tq=tq, tk=tk)
    got = _attention(*(x.astype(np.float32) for x in (q, k, v)), score_mod=score_mod, causal=causal,
                     route=route)
    want = plain(q, k, v, score_mod=score_mod, causal=causal)
    return float(np.max(np.abs(got - want)))


def _torch_errors(score_mod, *, causal=False, route="torch_flash"):
    """(out error, dq, dk, dv errors) of float32 torch through `route` against float64 autograd."""
    q, k, v = (torch.from_numpy(x) for x in _inputs(tq=160, tk=160))
    cot = torch.from_numpy(np.random.default_rng(1).standard_normal((2, 3, 160, 16)))
    results = []
    for dtype, run in ((torch.float32, lambda *a, **kw: _attention(*a, **kw, route=route)), (torch.float64, plain)):
        leaves = [x.to(dtype).requires_grad_() for x in (q, k, v)]
        out = run(*leaves, score_mod=score_mod, causal=causal)
        (out * cot.to(dtype)).sum().backward()
        results.append([out.detach().double()] + [x.grad.double() for x in leaves])
    return [float((a - b).abs().max()) for a, b in zip(*results)]


# --------------------------------------------------------------------------- relative declared falsely
# Each of these is declared relative=True but is not a function of (h, kv − q): the C routes must not
# add a bias table built from one diagonal position (before: errors of 0.3–0.9, silently).
FALSE_RELATIVE = {
    "reads q": lambda s, b, h, q, kv: s + 0.02 * q,
    "reads kv": lambda s, b, h, q, kv: s + 0.03 * kv * (kv % 3 == 0),
    "reads b": lambda s, b, h, q, kv: s + 0.05 * b * (kv - q),
    "one row differs": lambda s, b, h, q, kv: s + 4.0 * (q == 75),
}


@needs_fused
@pytest.mark.parametrize("route", NUMPY_ROUTES)
@pytest.mark.parametrize("name", list(FALSE_RELATIVE))
def test_false_relative_declaration_numpy(name, route):
    mod = masks.ScoreMod(name, "?", FALSE_RELATIVE[name], relative=True)
    assert _numpy_error(mod, route) < TOL
    assert _numpy_error(mod, route, causal=True) < TOL


@needs_fused
@pytest.mark.parametrize("name", list(FALSE_RELATIVE))
def test_false_relative_declaration_torch(name):
    mod = masks.ScoreMod(name, "?", FALSE_RELATIVE[name], relative=True)
    errors = _torch_errors(mod, causal=True)
    assert max(errors) < TOL, errors


@needs_fused
def test_true_relative_declaration_still_takes_c():
    """The check does not turn honest relative functions away: ALiBi, T5 and a user's table keep C."""
    from qkv.kernels import autograd, route as route_mod
    from qkv.kernels.call import check_call

    q, k, v = (x.astype(np.float32) for x in _inputs())
    table = np.random.default_rng(3).standard_normal((3, 150 + 170 - 1))
    user = masks.ScoreMod("table", "s + t[h, kv − q]", lambda s, b, h, qi, ki: s + table[h, ki - qi + 149],
                          relative=True)
    for mod in (masks.alibi(3), masks.t5_relative_buckets(table[:, :32]), user):
        call = check_call(q, k, v, score_mod=mod)
        spec = autograd.score_spec(call)
        assert spec is not None and spec[0] == autograd.SCORE_RELATIVE
        assert route_mod.choose_route(call).name == route_mod.FLASH_MANY
        assert _numpy_error(mod, "flash_many") < TOL


# --------------------------------------------------------------------------- values that change between calls
@needs_fused
@pytest.mark.parametrize("route", ["flash_many", "flash_rows"])
def test_relative_function_reading_a_changed_array(route):
    """A user's relative function reading an array the user updates between calls (a bias table being
    tuned): the second call sees the new values (before: the table of the first call, kept by id)."""
    table = np.zeros((3, 150 + 170 - 1))
    mod = masks.ScoreMod("table", "s + t[h, kv − q]", lambda s, b, h, qi, ki: s + table[h, ki - qi + 149],
                         relative=True)
    assert _numpy_error(mod, route) < TOL
    table[:] = np.random.default_rng(5).standard_normal(table.shape) * 3
    assert _numpy_error(mod, route) < TOL


@needs_fused
def test_relative_function_reading_a_changed_global_torch():
    global _SLOPE
    mod = masks.ScoreMod("global slope", "s + m·(kv − q)", lambda s, b, h, qi, ki: s + _SLOPE * (ki - qi),
                         relative=True)
    _SLOPE = 0.0
    assert max(_torch_errors(mod)) < TOL
    _SLOPE = 0.4
    assert max(_torch_errors(mod)) < TOL


_SLOPE = 0.0


@needs_fused
def test_catalogue_tables_are_copied():
    """alibi(slopes) and t5_relative_buckets(table) copy their arrays: changing the caller's array
    afterwards changes neither the plain path nor the C routes (before: the plain path read the new
    values, C the kept table — the route decided the result)."""
    slopes = np.array([0.5, 0.25, 0.125])
    bias = np.random.default_rng(2).standard_normal((3, 32))
    for mod, array in ((masks.alibi(slopes), slopes), (masks.t5_relative_buckets(bias), bias)):
        q, k, v = _inputs()
        before = plain(q, k, v, score_mod=mod)
        assert _numpy_error(mod, "flash_many") < TOL
        array *= 7
        np.testing.assert_array_equal(plain(q, k, v, score_mod=mod), before)
        assert _numpy_error(mod, "flash_many") < TOL


# --------------------------------------------------------------------------- functions written for torch
TORCH_WRITTEN = {
    "clamp": lambda s, b, h, q, kv: s + (kv - q).clamp(min=-8, max=8).to(s.dtype) * 0.1,
    "new_tensor": lambda s, b, h, q, kv: s + s.new_tensor([0.1, 0.2, 0.3])[h] * (kv - q),
    "torch.where": lambda s, b, h, q, kv: torch.where(kv - q > 3, s - 1.0, s),
}


@needs_fused
@pytest.mark.parametrize("name", list(TORCH_WRITTEN))
def test_relative_function_written_with_torch_methods(name):
    """A relative score function written for torch tensors runs on float32 torch as on float64 (before:
    AttributeError on float32 only: the C route's table was probed with NumPy arrays)."""
    mod = masks.ScoreMod(name, "?", TORCH_WRITTEN[name], relative=True)
    errors = _torch_errors(mod, causal=True)
    assert max(errors) < TOL, errors


@needs_fused
def test_relative_function_reading_a_trained_tensor():
    """A relative bias read from a tensor that requires grad gets its gradient (the C backward gives
    none to captured tensors: such a function stays on torch autograd)."""
    bias = torch.nn.Parameter(torch.randn(3, 2 * 160 - 1, dtype=torch.float64) * 0.5)
    mod = masks.ScoreMod("learned", "s + B[h, kv − q]", lambda s, b, h, q, kv: s + bias.to(s.dtype)[h, kv - q + 159],
                         relative=True)
    q, k, v = (torch.from_numpy(x) for x in _inputs(tq=160, tk=160))
    grads = []
    for dtype, run in ((torch.float32, lambda *a, **kw: _attention(*a, **kw, route="torch_flash")),
                       (torch.float64, plain)):
        bias.grad = None
        run(*(x.to(dtype) for x in (q, k, v)), score_mod=mod, causal=True).pow(2).sum().backward()
        grads.append(bias.grad.clone())
    assert float((grads[0] - grads[1]).abs().max()) < 1e-3 * float(grads[1].abs().max())


# --------------------------------------------------------------------------- the result's shape
@needs_fused
@pytest.mark.parametrize("result", [lambda s: s[..., :1] + 1.0, lambda s: s[0]])
def test_relative_function_with_the_wrong_result_shape(result):
    """One score per score, on every route: a relative function returning a broadcastable shape that is
    not one score per score (and cannot run on one score either) is refused on float32 as on the plain path
    (before: the C route took it silently)."""
    mod = masks.ScoreMod("bad", "?", lambda s, b, h, q, kv: result(s), relative=True)
    q, k, v = _inputs()
    with pytest.raises(ValueError, match="one score per score") as want:
        plain(q, k, v, score_mod=mod)
    for route in NUMPY_ROUTES:
        with pytest.raises(ValueError, match="one score per score"):
            _attention(*(x.astype(np.float32) for x in (q, k, v)), score_mod=mod, route=route)
    assert "score_mod" in str(want.value)


@needs_fused
def test_a_constant_score_function_means_the_same_on_every_route():
    """A score function returning one number (`lambda s, b, h, q, kv: 1.0`) is read as torch's flex_attention
    reads a score_mod — once per score, evaluated element by element — so every score is 1.0 and every
    query's weights are even: the output is the mean of the values (float64 by NumPy), on every route."""
    mod = masks.ScoreMod("constant", "1", lambda s, b, h, q, kv: 1.0, relative=True)
    q, k, v = _inputs()
    expected = np.broadcast_to(v.mean(axis=-2, keepdims=True), q.shape[:-1] + (v.shape[-1],))
    np.testing.assert_allclose(plain(q, k, v, score_mod=mod), expected, rtol=0, atol=1e-12)
    for route in NUMPY_ROUTES:
        got = _attention(*(x.astype(np.float32) for x in (q, k, v)), score_mod=mod, route=route)
        np.testing.assert_allclose(got, expected, rtol=0, atol=TOL)


# --------------------------------------------------------------------------- the mask-analysis cache
# (h/masks: masks._frozen_inputs keys an automatic analysis by code and the plain values it reads.)
# A mask analysed with one value and then served after the value changed gives wrong block kinds:
# keys skipped, or kept, that the function no longer allows. Each case builds the lambda afresh, as
# a user writing it inline would, so only the key can tell the two calls apart.
def _mask_error(make):
    q, k, v = _inputs(b=1, h=2, tq=600, tk=600)
    mod = make()
    got = _attention(*(x.astype(np.float32) for x in (q, k, v)), mask_mod=mod, route="flash_many")
    return float(np.max(np.abs(got - plain(q, k, v, mask_mod=mod))))


_WINDOW = 10


def _set_window(value):
    global _WINDOW
    _WINDOW = value


def _module_with(**values):
    import types

    module = types.ModuleType("adversary_settings")
    module.__dict__.update(values)
    return module


settings = _module_with(WINDOW=10, inner=_module_with(WINDOW=10))

STALE_CASES = {
    # a module attribute (a settings module read as cfg.WINDOW), one level and two levels down
    "module attribute": (lambda: (lambda b, h, q, kv: (q >= kv) & (q - kv <= settings.WINDOW)),
                         lambda w: setattr(settings, "WINDOW", w)),
    "submodule attribute": (lambda: (lambda b, h, q, kv: (q >= kv) & (q - kv <= settings.inner.WINDOW)),
                            lambda w: setattr(settings.inner, "WINDOW", w)),
    # a global read only inside a comprehension or an inner lambda (a code object of its own)
    "global in a comprehension": (lambda: (lambda b, h, q, kv: (q >= kv) & [q - kv <= _WINDOW for _ in (0,)][0]),
                                  _set_window),
    "global in an inner lambda": (lambda: (lambda b, h, q, kv: (q >= kv) & (lambda d: d <= _WINDOW)(q - kv)),
                                  _set_window),
    # the plain cases the cache already handled, kept as guards
    "global": (lambda: (lambda b, h, q, kv: (q >= kv) & (q - kv <= _WINDOW)), _set_window),
}


@needs_fused
@pytest.mark.parametrize("name", list(STALE_CASES))
def test_mask_cache_serves_no_stale_analysis(name):
    make, change = STALE_CASES[name]
    try:
        for window in (10, 200, 3, 10):
            change(window)
            assert _mask_error(make) < TOL, window
    finally:
        change(10)


def test_mask_cache_still_keeps_library_calls():
    """Reading NumPy's functions and constants (np.abs, np.pi) does not make a function uncacheable."""
    from qkv.masks import _frozen_inputs

    w = 12
    assert _frozen_inputs(lambda b, h, q, kv: np.abs(q - kv) <= w + int(np.pi)) is not None
    assert _frozen_inputs(lambda b, h, q, kv: np.abs(q - kv) <= settings.WINDOW) is not None
    table = np.zeros(3)
    assert _frozen_inputs(lambda b, h, q, kv: q - kv <= table[0]) is None


# --------------------------------------------------------------------------- several key ranges per row
# (h/masks: a split call's passes are key_range_mask; a pass that is a band keeps the kernel's band
# masking, with the block kinds of sliding_window(−a, b − 1).) A band beside the diagonal — the window
# part of chunked | sliding_window under causal=True becomes kv < q in some passes — raised
# "ValueError: right must be ≥ 0, got -1" on every C route, though the plain path computes it.
BESIDE_THE_DIAGONAL = {
    "chunked | window, causal": (lambda: masks.or_masks(masks.chunked(8), masks.sliding_window(36)), True, 61),
    "document | causal, causal": (lambda: masks.or_masks(masks.document(np.repeat(np.arange(4), 15)[:58]),
                                                         masks.causal()), True, 58),
    "key ranges ahead of q": (lambda: masks.key_range_mask(np.arange(90) + 3, np.arange(90) + 20), False, 90),
    "key ranges behind q": (lambda: masks.key_range_mask(np.maximum(np.arange(90) - 20, 0), np.arange(90) - 2),
                            False, 90),
}


@needs_fused
@pytest.mark.parametrize("name", list(BESIDE_THE_DIAGONAL))
def test_split_pass_band_beside_the_diagonal(name):
    make, causal, t = BESIDE_THE_DIAGONAL[name]
    q, k, v = _inputs(b=2, h=2, tq=t, tk=t)
    mod = make()
    want, want_lse = plain(q, k, v, mask_mod=mod, causal=causal, return_lse=True)
    for route in ("flash_many", "flash_rows"):
        got, lse = _attention(*(x.astype(np.float32) for x in (q, k, v)), mask_mod=mod, causal=causal,
                              return_lse=True, route=route)
        np.testing.assert_allclose(got, want, atol=TOL, rtol=0)
        np.testing.assert_allclose(lse, want_lse, atol=TOL, rtol=0)
