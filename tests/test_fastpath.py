"""The per-call fast path: checks and routes kept by a call's signature (kernels/call.py `signature`,
`_CHECKED`; kernels/route.py `_ROUTES`) give what the full checks and decision give, and are never
served to a call whose input changed in a way they depend on.

Expected values: the same call with the caches emptied (bitwise where the route is the same), and a
float64 NumPy computation of softmax(q·kᵀ·scale)·v written here.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import qkv
from qkv.kernels import call as call_module
from qkv.kernels import route as route_module
from qkv.kernels.call import check_call
from qkv.kernels.route import choose_route

torch = pytest.importorskip("torch")

ROUTES = ["flash_many", "flash_rows", "py_walk", "numpy_walk", "plain_c_softmax", "plain"]


def _attend(q, k, v, **kw):
    from qkv.attention import _attention

    return _attention(q, k, v, **kw)


def _clear():
    call_module._CHECKED.clear()
    route_module._ROUTES.clear()


def _reference(q, k, v, mask=None, causal=False, scale=None):
    """float64 softmax(q·kᵀ·scale)·v with qkv's mask rules (bottom-right causal, empty rows → 0)."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    allowed = np.ones(s.shape, bool)
    if causal:
        tq, tk = s.shape[-2:]
        allowed &= np.arange(tk)[None, :] <= np.arange(tq)[:, None] + (tk - tq)
    if mask is not None:
        allowed &= np.asarray(mask)
    s = np.where(allowed, s, -np.inf)
    top = np.max(s, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    e = np.where(allowed, np.exp(s - top), 0)
    total = e.sum(-1, keepdims=True)
    return (e / np.where(total == 0, 1, total)) @ v


def _fields(call):
    """A Call's fields but its arrays (compared by value; the arrays are the caller's own)."""
    return {name: value for name, value in call.__dict__.items() if name not in ("q", "k", "v", "mask", "bias")}


def _inputs(shape=(2, 4, 160, 32), seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(shape).astype(dtype) for _ in range(3))


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("causal", [False, True])
def test_kept_route_gives_the_bits_of_a_fresh_decision(route, causal):
    """Every NumPy route, pinned: a second call (served from the caches) equals a first call made with
    the caches emptied, bit for bit, and both match float64 to float32 rounding."""
    q, k, v = _inputs()
    _clear()
    first = _attend(q, k, v, causal=causal, route=route)
    assert call_module._CHECKED and route_module._ROUTES
    second = _attend(q, k, v, causal=causal, route=route)
    np.testing.assert_array_equal(second, first)
    np.testing.assert_allclose(first, _reference(q, k, v, causal=causal), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("kind", ["dense", "causal", "padding"])
def test_default_route_kept_and_fresh_agree(lib, kind):
    """The common calls (dense, causal, a key-padding array) on the default route, NumPy and torch: the
    kept route is the route a fresh decision takes, and the results are the same bits."""
    q, k, v = _inputs((2, 4, 200, 32))
    mask = qkv.padding_mask(np.array([200, 130]), 200) if kind == "padding" else None
    expected = _reference(q, k, v, mask=mask, causal=kind == "causal")
    if lib == "torch":
        q, k, v = (torch.from_numpy(x) for x in (q, k, v))
        mask = None if mask is None else torch.from_numpy(mask)
    _clear()
    fresh_call = check_call(q, k, v, mask, causal=kind == "causal")
    fresh_route = choose_route(fresh_call)
    first = qkv.attention(q, k, v, mask, causal=kind == "causal")
    kept_call = check_call(q, k, v, mask, causal=kind == "causal")
    assert _fields(kept_call) == _fields(fresh_call)
    assert kept_call.q is q and kept_call.mask is fresh_call.mask
    kept_route = choose_route(kept_call)
    assert kept_route.name == fresh_route.name and kept_route.tasks == fresh_route.tasks
    second = qkv.attention(q, k, v, mask, causal=kind == "causal")
    first, second = (np.asarray(x) for x in (first, second))
    np.testing.assert_array_equal(second, first)
    np.testing.assert_allclose(first, expected, rtol=2e-5, atol=2e-6)


def test_kept_call_holds_the_new_arrays():
    """The kept fields are the checks' results; the arrays are the call's own (never the first call's)."""
    a, b = _inputs(seed=1), _inputs(seed=2)
    _clear()
    first = check_call(*a, causal=True)
    second = check_call(*b, causal=True)
    assert second.q is b[0] and second.k is b[1] and second.v is b[2] and second.key == first.key
    np.testing.assert_allclose(qkv.attention(*b, causal=True), _reference(*b, causal=True), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("change", ["shape", "dtype", "causal", "scale", "mask shape", "mask values",
                                    "mask mutated in place"])
def test_a_changed_input_is_never_served_a_stale_plan(change):
    """Warm the caches with one call, change one thing, and compare with float64 for the changed call."""
    q, k, v = _inputs((2, 4, 160, 32))
    lengths = np.array([160, 100])
    mask = qkv.padding_mask(lengths, 160)
    _clear()
    qkv.attention(q, k, v, mask)
    qkv.attention(q, k, v, mask)
    causal, scale = False, None
    if change == "shape":
        q, k, v = (x[:, :, :150] for x in (q, k, v))
        mask = mask[..., :150]
    elif change == "dtype":
        q, k, v = (x.astype(np.float64) for x in (q, k, v))
    elif change == "causal":
        causal = True
    elif change == "scale":
        scale = 0.5
    elif change == "mask shape":
        mask = np.broadcast_to(mask, (2, 4, 160, 160)).copy()
        mask[:, :, :, 7] = False
    elif change == "mask values":
        mask = qkv.padding_mask(np.array([3, 160]), 160)
    else:
        mask[1, ..., 50:] = False   # the same object, mutated in place
    out = qkv.attention(q, k, v, mask, causal=causal, scale=scale)
    np.testing.assert_allclose(out, _reference(q, k, v, mask=mask, causal=causal, scale=scale),
                               rtol=2e-5 if q.dtype == np.float32 else 1e-12, atol=2e-6 if q.dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_value_checks_run_on_every_call(lib):
    """Values are looked at on every call: a NaN in a masked key's value after clean calls of the same
    signature takes the route that never reads it (no NaN out), and a value near the float range
    after clean calls takes the route whose scores do not overflow."""
    q, k, v = _inputs((1, 2, 160, 32))
    mask = qkv.padding_mask(np.array([150]), 160)
    conv = (lambda x: torch.from_numpy(x)) if lib == "torch" else (lambda x: x)
    _clear()
    for _ in range(2):
        qkv.attention(conv(q), conv(k), conv(v), conv(mask))
    bad = v.copy()
    bad[..., 155, :] = np.nan                      # a key the mask hides
    out = np.asarray(qkv.attention(conv(q), conv(k), conv(bad), conv(mask)))
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, _reference(q, k, v, mask=mask), rtol=2e-5, atol=2e-6)
    for _ in range(2):
        qkv.attention(conv(q), conv(k), conv(v), causal=True)
    big_q, big_k = q * np.float32(1e19), k * np.float32(1e19)   # |q|·|k|·Dk beyond float32's range
    out = np.asarray(qkv.attention(conv(big_q), conv(big_k), conv(v), causal=True))
    expected = _reference(big_q, big_k, v, causal=True)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_threads_are_part_of_the_key():
    """A changed number of usable CPUs is a new decision, not the kept route's threads."""
    import dataclasses

    from qkv.kernels import route

    q, k, v = _inputs((1, 8, 512, 64))
    _clear()
    call = check_call(q, k, v, causal=True)
    two = choose_route(call, machine=dataclasses.replace(route.current_machine(), cpus=2))
    one = choose_route(check_call(q, k, v, causal=True), machine=dataclasses.replace(route.current_machine(), cpus=1))
    assert two.threads == 2 and one.threads == 1


def test_no_extension_is_part_of_the_key():
    """The C extension gone (as unbuilt installs have it) is a new decision: the NumPy walk."""
    from qkv.kernels import route

    q, k, v = _inputs((1, 8, 512, 64))
    _clear()
    assert choose_route(check_call(q, k, v)).name.value == "flash_many"
    assert choose_route(check_call(q, k, v), machine=route.current_machine().without_c()).name.value == "numpy_walk"
    assert choose_route(check_call(q, k, v)).name.value == "flash_many"


@pytest.mark.parametrize("bad", ["causal int", "scale bool", "mask dtype", "mask shape", "v shape", "k dtype"])
def test_errors_still_name_the_bad_input_after_a_kept_call(bad):
    """A call that differs from a kept one in what the checks refuse is refused, naming the argument:
    True and 1 (and 1 and True as a scale) hash alike but are not the same input."""
    q, k, v = _inputs((1, 2, 32, 8))
    mask = np.ones((32, 32), bool)
    _clear()
    qkv.attention(q, k, v, mask, causal=True, scale=1)
    qkv.attention(q, k, v, mask, causal=True, scale=1)
    kw = dict(causal=True, scale=1)
    if bad == "causal int":
        kw["causal"] = 1
        with pytest.raises(TypeError, match="causal must be True or False"):
            qkv.attention(q, k, v, mask, **kw)
    elif bad == "scale bool":
        kw["scale"] = True
        with pytest.raises(TypeError, match="scale must be a finite real number"):
            qkv.attention(q, k, v, mask, **kw)
    elif bad == "mask dtype":
        with pytest.raises(TypeError, match="mask must be boolean"):
            qkv.attention(q, k, v, mask.astype(np.float32), **kw)
    elif bad == "mask shape":
        with pytest.raises(ValueError, match=r"mask has shape \(31, 32\)"):
            qkv.attention(q, k, v, mask[:31], **kw)
    elif bad == "v shape":
        with pytest.raises(ValueError, match=r"v has shape"):
            qkv.attention(q, k, v[..., :31, :], mask, **kw)
    else:
        with pytest.raises(TypeError, match="q, k and v must share one dtype"):
            qkv.attention(q, k.astype(np.float64), v, mask, **kw)


def test_derived_calls_have_no_key():
    """A call made from another with dataclasses.replace (a split's or a batch's pass) is decided afresh."""
    q, k, v = _inputs((1, 2, 160, 32))
    call = check_call(q, k, v)
    assert call.key is not None
    assert dataclasses.replace(call, causal=True).key is None


def test_torch_kept_route_autograd_matches_fresh():
    """TORCH_FLASH forward and backward through kept checks and route: the gradients of a second step
    equal those of a first step taken with the caches emptied, bit for bit."""
    rng = np.random.default_rng(3)
    q, k, v, dout = (torch.from_numpy(rng.standard_normal((1, 4, 256, 32)).astype(np.float32)) for _ in range(4))
    grads = []
    for clear in (True, False):
        if clear:
            _clear()
        leaves = [x.clone().requires_grad_() for x in (q, k, v)]
        out = qkv.attention(*leaves, causal=True)
        out.backward(dout)
        grads.append([x.grad for x in leaves] + [out.detach()])
    route = choose_route(check_call(q, k, v, causal=True))
    assert route.name.value == "torch_flash"
    for a, b in zip(*grads):
        assert torch.equal(a, b)


def test_threads_sharing_the_caches_while_entries_are_dropped(monkeypatch):
    """Several threads calling at once (as MiniLM's encode does) with more shapes than the caches keep:
    every result is its own call's (float64 reference), and no thread sees a cache error."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(call_module, "_CHECKED_KEPT", 2)
    monkeypatch.setattr(route_module, "_ROUTES_KEPT", 2)
    _clear()
    cases = [(_inputs((1, 2, t, 16), seed=t), t % 2 == 0) for t in (20, 33, 48, 65, 80)]
    expected = [_reference(*qkv_, causal=causal) for qkv_, causal in cases]

    def work(i):
        j = i % len(cases)
        (q, k, v), causal = cases[j]
        out = qkv.attention(q, k, v, causal=causal)
        np.testing.assert_allclose(out, expected[j], rtol=2e-5, atol=2e-6)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, range(200)))
