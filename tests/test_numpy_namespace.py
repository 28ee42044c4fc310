"""NumPy arrays go through NumPy's own namespace where NumPy implements the array API (NumPy ≥ 2.1), not
array-api-compat's wrapper of it, whose import cost more than NumPy's own (issue 29, "Speed a learner feels").
What the core computes must not depend on which of the two it was given: each case here runs once through
`numpy` and once through `array_api_compat.numpy` (forced by `_backend.NUMPY_IS_STANDARD`) and compares the
results bit for bit — and both with a float64 reference written here, so that the pair cannot agree on a
wrong answer."""

from __future__ import annotations

import numpy as np
import pytest

import qkv
import qkv.examples as examples
from qkv import _backend, masks

pytestmark = pytest.mark.skipif(not _backend.NUMPY_IS_STANDARD,
                                reason="this NumPy predates the array API in its own namespace")


def reference(q, k, v, *, causal=False, bias=None, kv_groups=1):
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    k, v = np.repeat(k, kv_groups, axis=-3), np.repeat(v, kv_groups, axis=-3)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if bias is not None:
        s = s + bias
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ v


def both(monkeypatch, run):
    """``run()`` through NumPy's namespace, then through array-api-compat's; the two results. Which namespace
    each run was given is counted, so that the comparison cannot pass by running one path twice."""
    import array_api_compat

    asked = []
    compat = array_api_compat.array_namespace
    monkeypatch.setattr(array_api_compat, "array_namespace", lambda *a, **k: asked.append(1) or compat(*a, **k))
    first = run()
    assert not asked, "the NumPy run went through array-api-compat"
    with monkeypatch.context() as patched:
        patched.setattr(_backend, "NUMPY_IS_STANDARD", False)
        second = run()
    assert asked, "the array-api-compat run never asked array-api-compat"
    return first, second


def same_bits(a, b):
    a, b = (x if isinstance(x, tuple) else (x,) for x in (a, b))
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def test_a_numpy_array_gets_numpys_namespace_and_a_mix_is_still_refused():
    x = np.zeros((2, 3), np.float32)
    assert _backend.array_namespace(x) is np
    assert _backend.array_namespace(x, None, 2.0) is np
    assert _backend.is_numpy_namespace(_backend.array_namespace(x))
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="mixed array types"):
        _backend.namespace(q=x, k=torch.zeros(2, 3))


def test_torch_tensors_keep_array_api_compats_namespace():
    torch = pytest.importorskip("torch")
    import array_api_compat

    t = torch.zeros(2, 3)
    assert _backend.array_namespace(t) is array_api_compat.array_namespace(t)
    assert _backend.is_torch_namespace(_backend.array_namespace(t))


RNG = np.random.default_rng(7)
Q = RNG.standard_normal((2, 4, 6, 8)).astype(np.float32)
K = RNG.standard_normal((2, 4, 9, 8)).astype(np.float32)
V = RNG.standard_normal((2, 4, 9, 5)).astype(np.float32)
K2, V2 = K[:, :2], V[:, :2]                           # two key/value heads for four query heads (GQA)
BIAS = RNG.standard_normal((4, 6, 9))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["plain", "causal", "bias", "gqa", "mask", "alibi", "soft_cap", "window"])
def test_attention_gives_the_same_bits_through_either_namespace(monkeypatch, case, dtype):
    q, k, v = (a.astype(dtype) for a in (Q, K, V))
    kwargs, expected = {}, None
    if case == "plain":
        expected = reference(q, k, v)
    elif case == "causal":
        q, kwargs = q[..., :6, :], {"causal": True}
        k, v = k[..., :6, :], v[..., :6, :]
        expected = reference(q, k, v, causal=True)
    elif case == "bias":
        kwargs = {"bias": BIAS.astype(dtype)}
        expected = reference(q, k, v, bias=BIAS)
    elif case == "gqa":
        k, v = K2.astype(dtype), V2.astype(dtype)
        expected = reference(q, k, v, kv_groups=2)
    elif case == "mask":
        keep = RNG.random((6, 9)) > 0.3
        keep[:, 0] = True
        kwargs = {"mask": keep}
        expected = reference(q, k, v, bias=np.where(keep, 0.0, -np.inf))
    elif case == "alibi":
        slopes = np.array([0.5, 0.25, 0.125, 0.0625])
        kwargs = {"score_mod": masks.alibi(slopes)}
        distance = np.arange(9)[None, :] - np.arange(6)[:, None]
        # ALiBi adds slope·(j − i) to the scaled score
        expected = reference(q, k, v, bias=slopes[:, None, None] * distance)
    elif case == "soft_cap":
        kwargs = {"score_mod": masks.soft_cap(2.0)}
        s = np.asarray(q, np.float64) @ np.swapaxes(np.asarray(k, np.float64), -1, -2) / np.sqrt(8)
        capped = 2.0 * np.tanh(s / 2.0)
        w = np.exp(capped - capped.max(-1, keepdims=True))
        expected = (w / w.sum(-1, keepdims=True)) @ np.asarray(v, np.float64)
    elif case == "window":
        kwargs = {"mask_mod": masks.sliding_window(2, 0)}
        i, j = np.arange(6)[:, None], np.arange(9)[None, :]
        expected = reference(q, k, v, bias=np.where((j <= i) & (i - j <= 2), 0.0, -np.inf))
    out, again = both(monkeypatch, lambda: qkv.attention(q, k, v, **kwargs, return_weights=True))
    same_bits(out, again)
    tolerance = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out[0], expected, rtol=tolerance, atol=tolerance)


def test_multi_head_attention_with_a_kv_cache_gives_the_same_bits(monkeypatch):
    x = RNG.standard_normal((1, 5, 16)).astype(np.float32)

    def run():
        mha = qkv.MultiHeadAttention.random(16, n_heads=4, n_kv_heads=2, seed=3)
        cache = qkv.KVCache()
        first = mha(x[:, :3], causal=True, cache=cache)
        rest = [mha(x[:, t:t + 1], causal=True, cache=cache) for t in (3, 4)]
        whole = mha(x, causal=True)
        return (np.concatenate([first, *rest], axis=1), whole)

    (stepped, whole), (stepped_again, whole_again) = both(monkeypatch, run)
    same_bits((stepped, whole), (stepped_again, whole_again))
    np.testing.assert_allclose(stepped, whole, rtol=1e-5, atol=1e-6)     # the cache changes nothing


@pytest.mark.parametrize("name", examples.names())
def test_every_worked_example_records_the_same_bits(monkeypatch, name):
    first, second = both(monkeypatch, lambda: examples.run(name))
    steps = [s.name for s in first.steps]
    assert steps == [s.name for s in second.steps]
    for a, b in zip(first.steps, second.steps):
        same_bits(np.asarray(a.value), np.asarray(b.value))
