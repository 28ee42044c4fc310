"""Adversarial checks of the per-call fast path, mask arrays as key ranges, and one-head views of a layer.

Every expected value comes from an independent float64 computation (NumPy written out here, or torch's
scaled_dot_product_attention in float64), never from qkv's own output."""
import contextlib
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import qkv
from qkv import masks
from qkv.errors import InputError


def _reference(q, k, v, allowed=None, scale=None, bias=None):
    """float64 softmax(q·kᵀ·scale + bias, masked)·v in NumPy; fully masked rows give 0. Returns (out, weights)."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if bias is not None:
        s = s + bias
    if allowed is not None:
        s = np.where(allowed, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    d = e.sum(-1, keepdims=True)
    w = np.where(d > 0, e / np.where(d > 0, d, 1.0), 0.0)
    return w @ v, w


# ---------------------------------------------------------------- 3. one-head views keep head i's things
def _layer(h, g, d=16, score_mod=None, seed=0):
    rng = np.random.default_rng(seed)
    dk = d // h
    return qkv.MultiHeadAttention(rng.standard_normal((d, h * dk)), rng.standard_normal((d, g * dk)),
                                  rng.standard_normal((d, g * dk)), rng.standard_normal((h * dk, d)), h,
                                  n_kv_heads=g, score_mod=score_mod)


def _head_reference(layer, x, i, bias_fn, allowed):
    """Head i's float64 weights computed by hand from the layer's slices: bias_fn(i) (Tq, Tk) added."""
    own = layer.head(i)
    q, k, v = x @ own.w_q, x @ own.w_k, x @ own.w_v
    return _reference(q, k, v, allowed, bias=bias_fn(i))[1]


@pytest.mark.parametrize("kind", ["alibi", "t5", "function", "scoremod_function"])
@pytest.mark.parametrize("groups", [4, 2])
def test_single_head_keeps_its_score_mod(kind, groups):
    h, t = 4, 7
    rel = np.arange(t)[None, :] - np.arange(t)[:, None]                      # kv − q
    slopes = np.array([0.5, 0.25, 0.125, 0.0625])
    table = np.random.default_rng(1).standard_normal((h, 8))
    per_head = np.array([0.3, -0.7, 1.1, 2.0])
    if kind == "alibi":
        mod, bias = masks.alibi(slopes), (lambda i: slopes[i] * rel)
    elif kind == "t5":
        mod = masks.t5_relative_buckets(table, max_distance=16)
        buckets = masks.t5_bucket(rel.astype(np.int64), 8, 16, True)
        bias = lambda i: table[i][buckets]
    elif kind == "function":
        arr = per_head
        mod = lambda s, b, hh, qi, ki: s + arr[hh] * (ki - qi) ** 2 / 10.0
        bias = lambda i: per_head[i] * rel ** 2 / 10.0
    else:
        mod = masks.ScoreMod("squared", "s + c_h (kv−q)²/10",
                             lambda s, b, hh, qi, ki: s + per_head[hh] * (ki - qi) ** 2 / 10.0)
        bias = lambda i: per_head[i] * rel ** 2 / 10.0
    layer = _layer(h, groups, score_mod=mod)
    x = np.random.default_rng(2).standard_normal((t, 16))
    allowed = np.tril(np.ones((t, t), bool))
    _, full = layer(x, causal=True, return_weights=True)
    for i in range(h):
        expected = _head_reference(layer, x, i, bias, allowed)
        np.testing.assert_allclose(full[i], expected, rtol=1e-10, atol=1e-12)         # the full layer
        _, alone = layer.single(i)(x, causal=True, return_weights=True)
        np.testing.assert_allclose(alone[0], expected, rtol=1e-10, atol=1e-12)        # head i alone


def test_single_head_reads_a_per_head_mask_at_its_head():
    h, t = 4, 6
    layer = _layer(h, h)
    rng = np.random.default_rng(3)
    mask = rng.random((2, h, t, t)) < 0.6
    mask[..., 0] = True                                                      # no empty row
    x = rng.standard_normal((2, t, 16))
    y_full, w_full = layer(x, mask=mask, return_weights=True)
    parts = 0
    for i in range(h):
        own = layer.head(i)
        _, expected = _reference(x @ own.w_q, x @ own.w_k, x @ own.w_v, mask[:, i])
        np.testing.assert_allclose(w_full[:, i], expected, rtol=1e-10, atol=1e-12)
        y, alone = layer.single(i)(x, mask=mask, return_weights=True)
        np.testing.assert_allclose(alone[:, 0], expected, rtol=1e-10, atol=1e-12)
        parts = parts + y
    np.testing.assert_allclose(parts, y_full, rtol=1e-10, atol=1e-10)        # the heads' shares sum to y


def test_single_head_torch_alibi_matches_float64():
    h, t = 4, 5
    layer = _layer(h, 2, score_mod=masks.alibi(h))
    tl = qkv.MultiHeadAttention(*(torch.from_numpy(a) for a in (layer.w_q, layer.w_k, layer.w_v, layer.w_o)), h,
                                n_kv_heads=2, score_mod=masks.alibi(h))
    x = np.random.default_rng(4).standard_normal((t, 16))
    rel = np.arange(t)[None, :] - np.arange(t)[:, None]
    slopes = masks.alibi_slopes(h)
    for i in range(h):
        expected = _head_reference(layer, x, i, lambda j: slopes[j] * rel, np.tril(np.ones((t, t), bool)))
        _, alone = tl.single(i)(torch.from_numpy(x), causal=True, return_weights=True)
        np.testing.assert_allclose(alone[0].numpy(), expected, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- 1. the per-call fast path: no stale answers
B, H, T, D = 2, 4, 80, 32          # 6400 scores per head: above the C routes' size floor


def _sdpa64(q, k, v, mask=None, causal=False, scale=None):
    """torch's own float64 attention (GQA by repeating key/value heads); fully masked rows → 0 (qkv's rule)."""
    q, k, v = (a.detach().double() if torch.is_tensor(a) else torch.from_numpy(np.array(a, np.float64))
               for a in (q, k, v))
    if q.ndim > 2 and k.shape[-3] != q.shape[-3]:
        k, v = (a.repeat_interleave(q.shape[-3] // a.shape[-3], dim=-3) for a in (k, v))
    allowed = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool)
    if causal:
        allowed = torch.ones_like(allowed).tril(k.shape[-2] - q.shape[-2])
    if mask is not None:
        allowed = allowed & torch.as_tensor(np.asarray(mask))
    allowed = allowed.expand(q.shape[:-1] + (k.shape[-2],))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=scale)
    return torch.where(allowed.any(-1, keepdim=True), out, 0.0).numpy()


def _qkv(seed, dtype=torch.float32, g=H, grad=False):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, T, D, generator=gen, dtype=dtype)
    k = torch.randn(B, g, T, D, generator=gen, dtype=dtype)
    v = torch.randn(B, g, T, D, generator=gen, dtype=dtype)
    return tuple(a.requires_grad_(grad) for a in (q, k, v))


def _close(got, expected, tol=2e-5):
    got = got.detach().numpy() if torch.is_tensor(got) else np.asarray(got)
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=tol, atol=tol)


def _variants():
    """(name, make) pairs: each makes (q, k, v) of the same shapes (B, H, T, D) with another property."""
    def transposed(seed):
        q, k, v = (a.transpose(1, 2).contiguous().transpose(1, 2) for a in _qkv(seed))   # (B, H, T, D) views
        return q, k, v

    def expanded(seed):
        q, k, v = _qkv(seed)
        return q, k[:, :1].expand(B, H, T, D), v[:, :1].expand(B, H, T, D)

    def sliced(seed):
        gen = torch.Generator().manual_seed(seed)
        big = torch.randn(3, B, H, T, 2 * D, generator=gen)
        return big[0, ..., ::2], big[1, ..., 1::2], big[2, ..., :D]

    def float64(seed):
        return _qkv(seed, torch.float64)

    return [("plain", _qkv), ("transposed", transposed), ("expanded", expanded), ("sliced", sliced),
            ("float64", float64)]


@pytest.mark.parametrize("first", [name for name, _ in _variants()])
@pytest.mark.parametrize("causal", [False, True])
def test_layouts_after_one_another_are_never_stale(first, causal):
    makers = dict(_variants())
    order = [first] + [name for name in makers if name != first] + [first]
    for n, name in enumerate(order):
        q, k, v = makers[name](n)
        _close(qkv.attention(q, k, v, causal=causal), _sdpa64(q, k, v, causal=causal),
               1e-10 if name == "float64" else 2e-5)


@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference", "plain"])
def test_grad_modes_after_one_another(mode):
    import contextlib
    for n, current in enumerate(["plain", mode, "grad", mode]):
        q, k, v = _qkv(10 + n, grad=current == "grad")
        context = {"no_grad": torch.no_grad, "inference": torch.inference_mode}.get(current, contextlib.nullcontext)
        with context():
            out = qkv.attention(q, k, v, causal=True)
        _close(out, _sdpa64(q, k, v, causal=True))
        if current == "grad":
            gen = torch.Generator().manual_seed(99)
            g = torch.randn(out.shape, generator=gen)
            (out * g).sum().backward()
            q64, k64, v64 = (a.detach().double().requires_grad_() for a in (q, k, v))
            ref = F.scaled_dot_product_attention(q64, k64, v64, is_causal=True)
            (ref * g.double()).sum().backward()
            for a, b in ((q, q64), (k, k64), (v, v64)):
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_scale_causal_groups_changes_between_calls():
    for n, (scale, causal, g) in enumerate([(None, False, H), (0.5, False, H), (0.5, True, H), (None, True, 2),
                                            (0.25, True, 1), (None, False, H), (0.5, True, H)]):
        q, k, v = _qkv(20 + n, g=g)
        _close(qkv.attention(q, k, v, causal=causal, scale=scale), _sdpa64(q, k, v, causal=causal, scale=scale))


def test_torch_threads_changed_between_calls():
    before = torch.get_num_threads()
    try:
        for n, threads in enumerate([1, 2, 1, before]):
            torch.set_num_threads(threads)
            q, k, v = _qkv(30 + n)
            _close(qkv.attention(q, k, v), _sdpa64(q, k, v))
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("bad", ["v_inf", "v_nan", "k_inf", "q_huge", "v_huge"])
def test_values_turn_bad_after_a_finite_call(lib, bad):
    q, k, v = (a.detach().numpy().copy() for a in _qkv(40))
    first = qkv.attention(q, k, v) if lib == "numpy" else qkv.attention(*map(torch.from_numpy, (q, k, v)))
    _close(first, _sdpa64(q, k, v))
    q2, k2, v2 = q.copy(), k.copy(), v.copy()
    where = (0, 1, 5, 3)
    {"v_inf": v2, "v_nan": v2, "k_inf": k2, "q_huge": q2, "v_huge": v2}[bad][where] = \
        {"v_inf": np.inf, "v_nan": np.nan, "k_inf": np.inf, "q_huge": 3e37, "v_huge": 3e37}[bad]
    arrays = (q2, k2, v2) if lib == "numpy" else tuple(map(torch.from_numpy, (q2, k2, v2)))
    # k_inf: an inf key's score is inf in some rows, whose softmax is then inf − inf (NaN, as float64 SDPA
    # gives): NumPy's 'invalid value' warning about the caller's inf is not what this test checks
    def quiet():
        return np.errstate(invalid="ignore") if bad == "k_inf" else contextlib.nullcontext()

    with quiet():
        got = qkv.attention(*arrays)
    got = got.numpy() if torch.is_tensor(got) else got
    # the same call with the caches emptied: what the uncached path gives
    from qkv.kernels import call as call_module, route as route_module
    call_module._CHECKED.clear()
    route_module._ROUTES.clear()
    with quiet():
        fresh = qkv.attention(*arrays)
    fresh = fresh.numpy() if torch.is_tensor(fresh) else fresh
    np.testing.assert_array_equal(np.isnan(got), np.isnan(fresh))
    np.testing.assert_allclose(np.nan_to_num(got.astype(np.float64)), np.nan_to_num(fresh.astype(np.float64)),
                               rtol=1e-6, atol=1e-6)
    if bad in ("v_huge",):          # finite: float64 reference of the same numbers (float32 v_huge ~3e37)
        ref = _sdpa64(q2, k2, v2)
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-3 * np.abs(ref).max())


def test_in_place_mutation_between_calls():
    q, k, v = _qkv(50)
    _close(qkv.attention(q, k, v, causal=True), _sdpa64(q, k, v, causal=True))
    with torch.no_grad():
        v.mul_(100.0)
        k[:, :, :7] = -k[:, :, :7]
    _close(qkv.attention(q, k, v, causal=True), _sdpa64(q, k, v, causal=True), 2e-3)


def test_numpy_then_torch_then_numpy_same_shapes():
    for n, lib in enumerate(["numpy", "torch", "numpy", "torch"]):
        q, k, v = _qkv(60 + n)
        if lib == "numpy":
            q, k, v = (a.numpy() for a in (q, k, v))
        out = qkv.attention(q, k, v, causal=True)
        assert (type(out) is np.ndarray) == (lib == "numpy")
        _close(out, _sdpa64(q, k, v, causal=True))


def test_more_signatures_than_kept_then_the_first_again():
    from qkv.kernels import call as call_module
    small = [(1, 1, 4 + n % 40, 8 + 8 * (n // 40)) for n in range(300)]
    rng = np.random.default_rng(70)
    first = None
    for shape in small:
        q, k, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
        out = qkv.attention(q, k, v, causal=True)
        first = first or (q, k, v, out)
        np.testing.assert_allclose(out, _sdpa64(q, k, v, causal=True), rtol=2e-5, atol=2e-5)
    assert len(call_module._CHECKED) <= call_module._CHECKED_KEPT
    q, k, v, _ = first
    np.testing.assert_allclose(qkv.attention(q, k, v, causal=True), _sdpa64(q, k, v, causal=True), rtol=2e-5, atol=2e-5)


def _run_threads(work, threads: int, calls_each: int) -> None:
    """work(n, rng) -> [(got, expected), …] on `threads` Python threads at once (each with its own
    generator, seeded by n); every thread must finish without an error, give `calls_each` pairs, and
    every result must equal its float64 expectation."""
    errors, results = [], []

    def run(n):
        try:
            results.extend(work(n, np.random.default_rng(460 + n)))
        except Exception as error:    # reported below, with its thread
            errors.append((n, error))

    started = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    for t in started:
        t.start()
    for t in started:
        t.join(120)
    assert not any(t.is_alive() for t in started), "a thread did not finish in 120 s"
    assert not errors
    assert len(results) == threads * calls_each
    for got, expected in results:
        _close(got, expected)


def test_python_threads_calling_at_once_with_their_own_values():
    def work(n, _):
        pairs = []
        for r in range(4):
            q, k, v = _qkv(100 + 10 * n + r, g=[H, 2, 1][n % 3])
            scale, causal = [None, 0.3][r % 2], bool(n % 2)
            pairs.append((qkv.attention(q, k, v, causal=causal, scale=scale),
                          _sdpa64(q, k, v, causal=causal, scale=scale)))
        return pairs

    _run_threads(work, 6, 4)


@pytest.mark.parametrize("bad", ["k_width", "v_rows", "mask_shape"])
def test_errors_name_the_bad_input_after_kept_calls(bad):
    q, k, v = (a.numpy() for a in _qkv(80))
    for _ in range(2):
        qkv.attention(q, k, v, mask=np.ones((T, T), bool))
    if bad == "k_width":
        k = k[..., :D - 1]
    elif bad == "v_rows":
        v = v[..., :T - 1, :]
    mask = np.ones((T, T + 1), bool) if bad == "mask_shape" else np.ones((T, T), bool)
    name = {"k_width": "k", "v_rows": "v", "mask_shape": "mask"}[bad]
    with pytest.raises((ValueError, InputError), match=rf"\b{name}\b"):
        qkv.attention(q, k, v, mask=mask)


def _np_variants(seed, t=160):
    """NumPy float32 (B, H, t, D) triples of one shape in other layouts: C order, transposed views, a key
    broadcast over heads (stride 0), reversed rows (negative strides), Fortran order, read-only."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((B, H, t, D)).astype(np.float32) for _ in range(3))
    yield "c", (q, k, v)
    yield "transposed", tuple(np.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2) for a in (q, k, v))
    yield "broadcast", (q, np.broadcast_to(k[:, :1], k.shape), np.broadcast_to(v[:, :1], v.shape))
    yield "reversed", (q[..., ::-1, :], k[..., ::-1, :], v)
    yield "fortran", tuple(np.asfortranarray(a) for a in (q, k, v))
    ro = tuple(a.copy() for a in (q, k, v))
    for a in ro:
        a.flags.writeable = False
    yield "read-only", ro


@pytest.mark.parametrize("causal", [False, True])
def test_numpy_layouts_on_the_c_routes_after_one_another(causal):
    for n in range(2):
        for name, (q, k, v) in _np_variants(200 + n):
            _close(qkv.attention(q, k, v, causal=causal), _sdpa64(q, k, v, causal=causal))


def test_numpy_in_place_mutation_and_kept_tables_not_written():
    rng = np.random.default_rng(210)
    q, k, v = (rng.standard_normal((B, H, 160, D)).astype(np.float32) for _ in range(3))
    _close(qkv.attention(q, k, v, causal=True), _sdpa64(q, k, v, causal=True))
    v *= 50.0
    q[:, :, 10:20] = 0.0
    _close(qkv.attention(q, k, v, causal=True), _sdpa64(q, k, v, causal=True), 1e-3)
    out = qkv.attention(q, k, v, causal=True)
    out[...] = 7.0                                    # the caller's own result: writing it changes nothing kept
    _close(qkv.attention(q, k, v, causal=True), _sdpa64(q, k, v, causal=True), 1e-3)


# ---------------------------------------------------------------- 2. mask arrays as key ranges
def _masks(t=160):
    """(name, mask) for B=2, H=4: ranges, and masks that are almost ranges."""
    pad = np.ones((B, 1, 1, t), bool)
    pad[0, ..., 100:] = False
    pad[1, ..., 37:] = False
    causal = np.tril(np.ones((t, t), bool))
    out = [("padding", pad), ("causal+padding", causal & pad)]
    hole = pad.copy()
    hole[1, 0, 0, 5] = False                          # one hole in one batch
    out.append(("hole one batch", hole))
    heads = np.broadcast_to(pad, (B, H, 1, t)).copy()
    heads[1, 2, 0, 30:] = False                       # one head's range differs
    out.append(("one head differs", heads))
    rows = np.broadcast_to(causal & pad, (B, H, t, t)).copy()
    rows[0, 1, 50] = False                            # a row fully masked in one head
    out.append(("empty row one head", rows))
    allrow = np.broadcast_to(causal & pad, (B, 1, t, t)).copy()
    allrow[:, :, 3] = False                           # a row fully masked in every head
    out.append(("empty row every head", allrow))
    per_head_same = np.broadcast_to(pad, (B, H, t, t)).copy()   # per head but the same ranges everywhere
    out.append(("per head same", per_head_same))
    gap = np.ones((t, t), bool)
    gap[:, 60:70] = False                             # two ranges per row (a gap), (Tq, Tk)
    out.append(("gap", gap))
    window = np.tril(np.ones((t, t), bool)) & ~np.tril(np.ones((t, t), bool), -20)
    out.append(("window", window))
    noncontig = np.ones((B, 1, 1, 2 * t), bool)
    noncontig[0, ..., 200:] = False
    out.append(("strided view", noncontig[..., ::2]))
    return out


@pytest.mark.parametrize("name", [name for name, _ in _masks()])
def test_mask_arrays_numpy_match_float64(name):
    mask = dict(_masks())[name]
    rng = np.random.default_rng(300)
    q, k, v = (rng.standard_normal((B, H, 160, D)).astype(np.float32) for _ in range(3))
    for causal in (False, True):
        _close(qkv.attention(q, k, v, mask=mask, causal=causal), _sdpa64(q, k, v, mask=mask, causal=causal))


@pytest.mark.parametrize("name", [name for name, _ in _masks()])
def test_mask_arrays_torch_autograd_match_float64(name):
    mask = torch.from_numpy(np.ascontiguousarray(dict(_masks())[name]))
    gen = torch.Generator().manual_seed(301)
    q, k, v = (torch.randn(B, H, 160, D, generator=gen).requires_grad_() for _ in range(3))
    out = qkv.attention(q, k, v, mask=mask)
    _close(out, _sdpa64(q, k, v, mask=mask.numpy()))
    g = torch.randn(out.shape, generator=gen)
    (out * g).sum().backward()
    q64, k64, v64 = (a.detach().double().requires_grad_() for a in (q, k, v))
    allowed = mask.expand(B, H, 160, 160)
    ref = F.scaled_dot_product_attention(q64, k64, v64, attn_mask=allowed)
    ref = torch.where(allowed.any(-1, keepdim=True), ref, 0.0)
    (ref * g.double()).sum().backward()
    for a, b in ((q, q64), (k, k64), (v, v64)):
        np.testing.assert_allclose(a.grad.numpy(), np.nan_to_num(b.grad.numpy()), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind", ["int", "float", "uint8", "additive"])
@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_non_bool_masks_are_refused_naming_mask(kind, lib):
    """The API promises a boolean mask (True = may attend); an int/float 0/1 mask or torch's additive float
    mask (0 / −inf) is refused with one line naming mask — after a boolean mask of the same shape was kept."""
    pad = dict(_masks())["padding"]
    mask = pad.astype({"int": np.int64, "float": np.float32, "uint8": np.uint8, "additive": np.float32}[kind])
    if kind == "additive":
        mask = np.where(pad, 0.0, -np.inf).astype(np.float32)
    rng = np.random.default_rng(310)
    q, k, v = (rng.standard_normal((B, H, 160, D)).astype(np.float32) for _ in range(3))
    if lib == "torch":
        q, k, v, mask, pad = (torch.from_numpy(a) for a in (q, k, v, mask, pad))
    for _ in range(2):
        _close(qkv.attention(q, k, v, mask=pad), _sdpa64(q, k, v, mask=np.asarray(pad)))
    with pytest.raises(TypeError, match=r"^mask must be boolean"):
        qkv.attention(q, k, v, mask=mask)


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_mask_values_change_between_calls_of_one_shape(lib):
    """One mask shape, other values each call: ranges, then holes, then other ranges, then empty rows."""
    rng = np.random.default_rng(320)
    q, k, v = (rng.standard_normal((B, H, 160, D)).astype(np.float32) for _ in range(3))
    if lib == "torch":
        q, k, v = (torch.from_numpy(a) for a in (q, k, v))
    for n in range(6):
        mask = np.ones((B, 1, 160, 160), bool)
        mask &= np.arange(160) < rng.integers(1, 161, size=(B, 1, 1, 1))       # key padding per batch
        if n % 2:
            mask &= rng.random(mask.shape) < 0.8                              # holes
        if n == 4:
            mask[:, :, 7] = False                                             # an empty row
        given = torch.from_numpy(mask) if lib == "torch" else mask
        _close(qkv.attention(q, k, v, mask=given), _sdpa64(q, k, v, mask=mask))
        _close(qkv.attention(q, k, v, mask=given, causal=True), _sdpa64(q, k, v, mask=mask, causal=True))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_dtypes_after_float32_of_one_shape(dtype):
    for n, current in enumerate([torch.float32, dtype, torch.float32, dtype]):
        q, k, v = (a.to(current) for a in _qkv(330 + n))
        out = qkv.attention(q, k, v, causal=True)
        assert out.dtype == current
        _close(out.float(), _sdpa64(q, k, v, causal=True), 2e-5 if current == torch.float32 else 2e-2)


@pytest.mark.parametrize("which", ["q", "kv", "expanded_kv", "transposed"])
def test_partial_requires_grad_and_views(which):
    """Gradients reach only what asks for them, through views (expand, transpose), vs float64 autograd."""
    gen = torch.Generator().manual_seed(340)
    base = [torch.randn(B, H, T, D, generator=gen) for _ in range(3)]
    if which == "expanded_kv":
        base[1], base[2] = (torch.randn(B, 1, T, D, generator=gen) for _ in range(2))
    if which == "transposed":
        base = [torch.randn(B, T, H, D, generator=gen) for _ in range(3)]
    leaves = [a.clone().requires_grad_(which == "transposed" or (i == 0) == (which == "q")) for i, a in enumerate(base)]

    def shaped(arrays):
        if which == "expanded_kv":
            return arrays[0], arrays[1].expand(B, H, T, D), arrays[2].expand(B, H, T, D)
        if which == "transposed":
            return tuple(a.transpose(1, 2) for a in arrays)
        return tuple(arrays)

    for _ in range(2):                                    # the second call is served from the kept route
        for a in leaves:
            a.grad = None
        out = qkv.attention(*shaped(leaves), causal=True)
        g = torch.randn(out.shape, generator=gen)
        (out * g).sum().backward()
        leaves64 = [a.detach().double().requires_grad_(a.requires_grad) for a in leaves]
        ref = F.scaled_dot_product_attention(*shaped(leaves64), is_causal=True)
        _close(out, ref.detach().numpy())
        (ref * g.double()).sum().backward()
        for a, b in zip(leaves, leaves64):
            assert (a.grad is None) == (b.grad is None)
            if a.grad is not None:
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("lead", [(), (3,), (3, 2), (2, 3, 2)])
@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_range_masks_on_other_leading_shapes(lead, lib):
    """q of 2 to 5 dimensions with a key-padding mask over its first leading axis (per "batch", where the
    only leading axis is the heads' one for 3-D q) and a (Tq, Tk) causal+gap mask, vs float64."""
    t = 160
    rng = np.random.default_rng(350 + len(lead))
    q, k, v = (rng.standard_normal(lead + (t, D)).astype(np.float32) for _ in range(3))
    masks_ = []
    if lead:
        pad = np.arange(t) < rng.integers(1, t + 1, size=(lead[0],) + (1,) * len(lead))
        masks_.append(pad.reshape((lead[0],) + (1,) * (len(lead) - 1) + (1, t)))
    gap = np.tril(np.ones((t, t), bool))
    gap[:, 40:45] = False
    masks_.append(gap)
    for mask in masks_:
        given = (q, k, v, mask) if lib == "numpy" else tuple(torch.from_numpy(a) for a in (q, k, v, mask))
        for causal in (False, True):
            got = qkv.attention(*given[:3], mask=given[3], causal=causal)
            _close(got, _sdpa64(q, k, v, mask=mask, causal=causal))


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("kind", ["alibi", "t5"])
def test_single_head_score_mod_on_the_c_routes(lib, kind):
    """Long enough for the C routes (relative tables per head): head i alone vs float64 by hand."""
    h, t, d = 4, 160, 32
    rel = np.arange(t)[None, :] - np.arange(t)[:, None]
    table = np.random.default_rng(360).standard_normal((h, 32))
    if kind == "alibi":
        slopes = masks.alibi_slopes(h)
        mod, bias = masks.alibi(h), (lambda i: slopes[i] * rel)
    else:
        mod = masks.t5_relative_buckets(table)
        buckets = masks.t5_bucket(rel.astype(np.int64), 32, 128, True)
        bias = lambda i: table[i][buckets]
    layer = _layer(h, 2, d=d, score_mod=mod, seed=361)
    x = np.random.default_rng(362).standard_normal((2, t, d))
    if lib == "torch":
        layer32 = qkv.MultiHeadAttention(*(torch.from_numpy(a.astype(np.float32)) for a in
                                           (layer.w_q, layer.w_k, layer.w_v, layer.w_o)), h, n_kv_heads=2,
                                         score_mod=mod)
        given = torch.from_numpy(x.astype(np.float32))
    else:
        layer32 = qkv.MultiHeadAttention(*(a.astype(np.float32) for a in (layer.w_q, layer.w_k, layer.w_v, layer.w_o)),
                                         h, n_kv_heads=2, score_mod=mod)
        given = x.astype(np.float32)
    allowed = np.tril(np.ones((t, t), bool))
    x32 = x.astype(np.float32).astype(np.float64)
    for i in range(h):
        own = layer32.head(i)
        wq, wk, wv, wo = (np.asarray(a, np.float64) for a in (own.w_q, own.w_k, own.w_v, own.w_o))
        heads, _ = _reference(x32 @ wq, x32 @ wk, x32 @ wv, allowed, bias=bias(i))
        expected = heads @ wo                                                  # head i's share of y
        got = layer32.single(i)(given, causal=True)
        _close(got, expected, 1e-3)


@pytest.mark.parametrize("tq, tk", [(160, 160), (32, 256), (256, 48)])
@pytest.mark.parametrize("g", [H, 2, 1])
def test_per_batch_padding_with_an_empty_batch_gqa_and_gradients(tq, tk, g):
    """Key padding per batch (one batch has no key at all) with causal, Tq ≠ Tk and GQA: output and
    gradients of q, k, v vs float64 autograd (fully masked rows: output 0, no gradient)."""
    gen = torch.Generator().manual_seed(370 + g)
    nb = 3
    q = torch.randn(nb, H, tq, D, generator=gen).requires_grad_()
    k, v = (torch.randn(nb, g, tk, D, generator=gen).requires_grad_() for _ in range(2))
    lengths = torch.tensor([tk, 0, tk // 3])
    mask = (torch.arange(tk) < lengths[:, None]).reshape(nb, 1, 1, tk)
    for causal in (False, True):
        for a in (q, k, v):
            a.grad = None
        out = qkv.attention(q, k, v, mask=mask, causal=causal, scale=0.2)
        grad = torch.randn(out.shape, generator=gen)
        (out * grad).sum().backward()
        q64, k64, v64 = (a.detach().double().requires_grad_() for a in (q, k, v))
        kk, vv = (a.repeat_interleave(H // g, dim=1) for a in (k64, v64))
        allowed = mask.expand(nb, H, tq, tk)
        if causal:
            allowed = allowed & torch.ones(tq, tk, dtype=torch.bool).tril(tk - tq)
        s = (q64 @ kk.transpose(-1, -2) * 0.2).masked_fill(~allowed, -torch.inf)
        w = torch.softmax(s, -1).nan_to_num(0.0)
        ref = w @ vv
        (ref * grad.double()).sum().backward()
        _close(out, ref.detach().numpy())
        for a, b in ((q, q64), (k, k64), (v, v64)):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4)


def _odd_shaped_masks(t=160):
    rng = np.random.default_rng(380)
    keys = np.arange(t) < 100
    rows = (np.arange(t) % 7 != 3)[:, None]                        # (Tq, 1): whole rows hidden
    return [("scalar true", np.array(True)), ("scalar false", np.array(False)), ("keys (Tk,)", keys),
            ("keys (1, Tk)", keys[None]), ("rows (Tq, 1)", rows), ("rows per batch (B,1,Tq,1)",
            rng.random((B, 1, t, 1)) < 0.7), ("heads (H,1,1)", np.array([True, False, True, True])[:, None, None]),
            ("keys per head (1,H,1,Tk)", np.arange(t)[None, None, None] < np.array([160, 5, 80, 1])[None, :, None, None])]


@pytest.mark.parametrize("name", [name for name, _ in _odd_shaped_masks()])
@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_odd_shaped_masks(name, lib):
    mask = dict(_odd_shaped_masks())[name]
    rng = np.random.default_rng(381)
    q, k, v = (rng.standard_normal((B, H, 160, D)).astype(np.float32) for _ in range(3))
    given = (q, k, v, mask) if lib == "numpy" else tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in (q, k, v, mask))
    for causal in (False, True):
        _close(qkv.attention(*given[:3], mask=given[3], causal=causal), _sdpa64(q, k, v, mask=mask, causal=causal))


@pytest.mark.parametrize("g", [H, 2, 1])
def test_small_torch_calls_sdpa_route_layouts_and_masks(g):
    """Below the C floor (torch's SDPA or the plain path): GQA, transposed and expanded views, a per-head
    mask with an empty row, float32 then float64 of one shape; output and gradients vs float64 autograd."""
    gen = torch.Generator().manual_seed(390 + g)
    t = 12
    mask = torch.rand(B, H, t, t, generator=gen) < 0.7
    mask[0, 1, 4] = False
    for n, dtype in enumerate([torch.float32, torch.float64, torch.float32]):
        q = torch.randn(B, t, H, D, generator=gen, dtype=dtype).transpose(1, 2).requires_grad_()
        base_k, base_v = (torch.randn(B, g, t, D, generator=gen, dtype=dtype).requires_grad_() for _ in range(2))
        out = qkv.attention(q, base_k, base_v, mask=mask, causal=bool(n % 2))
        grad = torch.randn(out.shape, generator=gen, dtype=dtype)
        (out * grad).sum().backward()
        q64, k64, v64 = (a.detach().double().requires_grad_() for a in (q, base_k, base_v))
        kk, vv = (a.repeat_interleave(H // g, dim=1) for a in (k64, v64))
        allowed = mask & torch.ones(t, t, dtype=torch.bool).tril() if n % 2 else mask
        w = torch.softmax((q64 @ kk.transpose(-1, -2) * D ** -0.5).masked_fill(~allowed, -torch.inf), -1).nan_to_num(0.0)
        ref = w @ vv
        (ref * grad.double()).sum().backward()
        tol = 1e-10 if dtype == torch.float64 else 2e-5
        _close(out, ref.detach().numpy(), tol)
        for a, b in ((q, q64), (base_k, k64), (base_v, v64)):
            np.testing.assert_allclose(a.grad.double().numpy(), b.grad.numpy(), rtol=max(tol, 1e-4) if dtype == torch.float32 else tol, atol=max(tol, 1e-4) if dtype == torch.float32 else tol)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("t", [12, 160])
@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_value_under_the_mask_after_a_finite_call(t, lib, bad):
    """A NaN/inf in a key and value that every query has masked out (key padding) must not reach the output,
    also when the call before (same shapes, finite) kept its route; and a right result prints no warning
    (NumPy's 'invalid value encountered in matmul' from q·kᵀ on the plain path before)."""
    rng = np.random.default_rng(400)
    q, k, v = (rng.standard_normal((B, H, t, D)).astype(np.float32) for _ in range(3))
    mask = np.ones((B, 1, 1, t), bool)
    mask[:, ..., t - 3:] = False
    k2, v2 = k.copy(), v.copy()
    k2[:, :, t - 2], v2[:, :, t - 1] = bad, bad
    expected = _sdpa64(q, k, v, mask=mask)          # the hidden keys' values do not matter
    for arrays in ((q, k, v), (q, k2, v2), (q, k, v), (q, k2, v2)):
        given = arrays + (mask,)
        if lib == "torch":
            given = tuple(torch.from_numpy(a) for a in given)
        _close(qkv.attention(*given[:3], mask=given[3]), expected)


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_mask_views_transposed_strided_expanded(lib):
    """The same key ranges given as a transposed view, a strided view and an expand()ed mask, and a window mask
    as a transposed view of its transpose: each vs float64, forward and (torch) backward through TORCH_FLASH."""
    t = 160
    rng = np.random.default_rng(410)
    q, k, v = (rng.standard_normal((B, H, t, D)).astype(np.float32) for _ in range(3))
    window = np.tril(np.ones((t, t), bool)) & ~np.tril(np.ones((t, t), bool), -30)
    pad = np.arange(t)[None, :] < np.array([[150], [70]])                     # (B, Tk)
    dense = np.broadcast_to(pad[:, None, None, :], (B, 1, t, t))
    views = [window.T.copy().T, np.repeat(window, 2, axis=1)[:, ::2], np.asfortranarray(dense)]
    for mask in views:
        expected = _sdpa64(q, k, v, mask=mask)
        if lib == "numpy":
            _close(qkv.attention(q, k, v, mask=mask), expected)
            continue
        tq_, tk_, tv_ = (torch.from_numpy(a).requires_grad_() for a in (q, k, v))
        m = torch.from_numpy(np.ascontiguousarray(mask.T)).T if mask.ndim == 2 else \
            torch.from_numpy(pad)[:, None, None, :].expand(B, 1, t, t)
        out = qkv.attention(tq_, tk_, tv_, mask=m)
        _close(out, expected)
        out.sum().backward()
        q64, k64, v64 = (torch.from_numpy(a.astype(np.float64)).requires_grad_() for a in (q, k, v))
        allowed = torch.from_numpy(np.ascontiguousarray(mask)).expand(B, H, t, t)
        F.scaled_dot_product_attention(q64, k64, v64, attn_mask=allowed).sum().backward()
        for a, b in ((tq_, q64), (tk_, k64), (tv_, v64)):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_cpu_affinity_changed_between_calls(lib):
    """The kept route's thread split follows the CPUs this process may use (os.sched_setaffinity between
    calls of one signature, big enough to run in parallel): every result vs float64."""
    import os
    cpus = os.sched_getaffinity(0)
    rng = np.random.default_rng(420)
    q, k, v = (rng.standard_normal((B, H, 256, D)).astype(np.float32) for _ in range(3))
    given = (q, k, v) if lib == "numpy" else tuple(torch.from_numpy(a) for a in (q, k, v))
    expected = _sdpa64(q, k, v, causal=True)
    try:
        for n, allowed in enumerate([cpus, {min(cpus)}, cpus, {min(cpus)}]):
            os.sched_setaffinity(0, allowed)
            _close(qkv.attention(*given, causal=True), expected)
    finally:
        os.sched_setaffinity(0, cpus)


def test_single_head_with_too_few_alibi_slopes_is_refused_as_the_layer_is():
    """A table with fewer rows than the layer's heads: head i alone is refused naming the table and the
    layer's head count, as the whole layer is (not as a table of 0 rows)."""
    layer = _layer(4, 4, score_mod=masks.alibi(np.array([0.5, 0.25])))
    x = np.random.default_rng(430).standard_normal((5, 16))
    with pytest.raises(InputError) as whole:
        layer(x)
    for i in (0, 3):
        with pytest.raises(InputError) as alone:
            layer.single(i)(x)
        assert "slopes" in str(alone.value) and "(2,)" in str(alone.value)
        assert str(alone.value) == str(whole.value)


@pytest.mark.parametrize("t", [12, 160])
def test_numpy_dtypes_alternating_on_one_shape(t):
    rng = np.random.default_rng(440)
    base = [rng.standard_normal((B, H, t, D)) for _ in range(3)]
    for dtype in (np.float32, np.float16, np.float64, np.longdouble, np.float32, np.float64):
        q, k, v = (a.astype(dtype) for a in base)
        for scale in (None, 0.3, 1):
            out = qkv.attention(q, k, v, causal=True, scale=scale)
            assert out.dtype == dtype
            tol = {np.float16: 5e-3, np.float32: 2e-5}.get(dtype, 1e-12)
            _close(out.astype(np.float64), _sdpa64(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64),
                                                   causal=True, scale=scale), tol)


@pytest.mark.parametrize("kind", ["bool", "float", "bool+causal"])
def test_torch_dropin_key_padding_on_the_range_route_matches_torch(kind):
    """qkv.torch.MultiheadAttention with a key-padding mask long enough for the C range route, vs
    torch.nn.MultiheadAttention in float64 with the same weights: output and every parameter's gradient."""
    from qkv.torch.mha import MultiheadAttention
    torch.manual_seed(450)
    e, h, t, nb = 32, 4, 96, 3
    ours = MultiheadAttention(e, h, batch_first=True)
    ref = torch.nn.MultiheadAttention(e, h, batch_first=True, dtype=torch.float64)
    ref.load_state_dict({name: p.double() for name, p in ours.state_dict().items()})
    x = torch.randn(nb, t, e)
    padded = torch.arange(t)[None, :] >= torch.tensor([[t], [40], [1]])          # True = ignore (torch's)
    kpm = padded if kind != "float" else torch.zeros(nb, t).masked_fill(padded, -torch.inf)
    causal = torch.ones(t, t, dtype=torch.bool).triu(1) if kind == "bool+causal" else None
    out, _ = ours(x, x, x, key_padding_mask=kpm, attn_mask=causal, need_weights=False)
    expected, _ = ref(x.double(), x.double(), x.double(), key_padding_mask=kpm if kind != "float" else kpm.double(),
                      attn_mask=causal, need_weights=False)
    _close(out, expected.detach().numpy(), 1e-4)
    g = torch.randn(out.shape)
    (out * g).sum().backward()
    (expected * g.double()).sum().backward()
    for (name, a), (_, b) in zip(ours.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(a.grad.double().numpy(), b.grad.numpy(), rtol=1e-3, atol=1e-3, err_msg=name)


def test_numpy_threads_with_masks_and_shapes_at_once():
    """Python threads calling NumPy attention at once on the C routes: per-batch padding masks (the range
    route), masks with holes, causal, GQA, their own values each; every result vs float64."""
    def work(n, rng):
        pairs = []
        for r in range(3):
            g = [H, 2, 1][(n + r) % 3]
            q = rng.standard_normal((B, H, 160, D)).astype(np.float32)
            k, v = (rng.standard_normal((B, g, 160, D)).astype(np.float32) for _ in range(2))
            mask = np.arange(160) < rng.integers(1, 161, size=(B, 1, 1, 1))
            if r == 1:
                mask = mask & (rng.random((B, 1, 160, 160)) < 0.9)
            causal = bool((n + r) % 2)
            pairs.append((qkv.attention(q, k, v, mask=mask, causal=causal), _sdpa64(q, k, v, mask=mask, causal=causal)))
        return pairs

    _run_threads(work, 4, 3)
