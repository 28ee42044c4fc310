"""Right at every magnitude (issue 31 §1): for every finite input, every route's output (and, for torch,
its gradients) is finite and within the dtype's error of a wider reference — max |q| = max |k|
swept from 1 to the dtype's range, with a bias, every catalogue score function, masks and GQA, on
NumPy and on eager torch, short calls (the plain path, SDPA) and long ones (the kernel, the C
training route).

The reference is computed here, in numpy.longdouble for float64 inputs and in float64 for the narrower dtypes
(their eps is 2^29 times float64's or more), from the inputs as rounded to their dtype: the scores
s = q·kᵀ·scale + bias (+ the score function's term, or its soft-cap), the softmax, out, and the gradients
by their formulas (dv = Pᵀ·dO, dS = P∘(dO·vᵀ − rowsum(dO∘O)), dq = dS·k·scale, dk = dSᵀ·q·scale).
The tolerance is the dtype's error carried through: a computed score may be off by δ = c·eps·A
(A = scale·Σ|q||k| + |bias| + |term|, the bound of a dot product's rounding, eps the input
dtype's); weights computed from scores off by at most δ in a row differ from the reference's by at most
Σ|ΔP| ≤ 2·min(1, e^{2δ} − 1, e^{2δ}·(1 − P_max)) — tight where the row is one key (large scores) and
where δ is small (small ones), loose only where the dtype itself cannot tell the keys apart.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import qkv
from qkv import masks

torch = pytest.importorskip("torch")

LD = np.longdouble
D = 16          # scale 1/√16 = 0.25, exact
CAP = 20.0
SLOPES_H = 4

MAGNITUDES = {
    "float16": [1.0, 1e1, 1e2, 2e4],
    "bfloat16": [1.0, 1e2, 1e4, 1e6, 1e10, 1e19, 1e30, 1e38],
    "float32": [1.0, 1e2, 1e4, 1e6, 1e10, 1e19, 1e30, 1e38],
    "float64": [1.0, 1e4, 1e10, 1e19, 1e100, 1e154, 1e300],
}
EPS = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24, "float64": 2.0 ** -53}
VARIANTS = ["plain", "bias0", "bias", "causal", "mask", "gqa", "alibi", "softcap", "t5"]
LONG_VARIANTS = ["plain", "causal", "bias", "alibi", "softcap", "gqa"]   # T = 136: the kernel, the C route


def _cases(lib):
    dtypes = ["float16", "float32", "float64"] if lib == "numpy" else ["bfloat16", "float16", "float32", "float64"]
    for dtype in dtypes:
        for m in MAGNITUDES[dtype]:
            for variant in VARIANTS:
                yield pytest.param(dtype, m, variant, 8, id=f"{dtype}-{m:g}-{variant}-T8")
            for variant in LONG_VARIANTS:
                yield pytest.param(dtype, m, variant, 136, id=f"{dtype}-{m:g}-{variant}-T136")


def _inputs(dtype, m, variant, t, seed):
    """q, k (max |.| about m), v, in float64 already rounded to dtype, and the call's extras."""
    rng = np.random.default_rng(seed)
    heads, kv_heads = (4, 2) if variant == "gqa" else (SLOPES_H, SLOPES_H)
    big = float(np.finfo(np.float16).max if dtype == "float16" else
                torch.finfo(torch.bfloat16).max if dtype == "bfloat16" else np.finfo(dtype).max)
    q = rng.uniform(-1, 1, (1, heads, t, D)) * m
    k = rng.uniform(-1, 1, (1, kv_heads, t, D)) * m
    v = rng.standard_normal((1, kv_heads, t, D))
    q, k, v = (_round(x, dtype) for x in (q, k, v))
    extra = {}
    if variant == "bias0":
        extra["bias"] = np.zeros((1, heads, t, t))
    elif variant == "bias":
        extra["bias"] = _round(rng.standard_normal((1, heads, t, t)) * min(m * m, big / 16), dtype)
    elif variant == "causal":
        extra["causal"] = True
    elif variant == "mask":
        allowed = rng.random((1, 1, t, t)) < 0.6
        allowed[..., 1, :] = False   # a row with no key
        extra["mask"] = allowed
    elif variant == "alibi":
        extra["score_mod"] = masks.alibi(heads)
    elif variant == "softcap":
        extra["score_mod"] = masks.soft_cap(CAP)
    elif variant == "t5":
        extra["score_mod"] = masks.t5_relative_buckets(rng.standard_normal((heads, 32)) * 3)
    return q, k, v, extra


def _round(x, dtype):
    if dtype == "bfloat16":
        return torch.from_numpy(x).to(torch.bfloat16).double().numpy()
    return x.astype(dtype).astype(np.float64)


def _reference(q, k, v, extra, dtype, d_out=None):
    """(out, tolerance on out) and, with d_out, ((dq, dk, dv), their tolerances): long double for float64 inputs;
    float64 (NumPy's BLAS) for the narrower dtypes, whose eps (2^-11 … 2^-24) is 2^29 times float64's or more and
    whose range (≤ 3.4e38, products ≤ 1.2e77) is far inside float64's. Long double's products, without BLAS, were
    ~40 % of this file's time."""
    W = LD if dtype == "float64" else np.float64
    eps = W(EPS[dtype])
    c = W(D + 16)
    heads, kv_heads, t = q.shape[1], k.shape[1], q.shape[2]
    group = heads // kv_heads
    ql, kl, vl = (x.astype(W) for x in (q, k, v))
    kx, vx = np.repeat(kl, group, axis=1), np.repeat(vl, group, axis=1)
    scale = W(1) / W(4)
    s = np.einsum("bhid,bhjd->bhij", ql, kx) * scale
    a = np.einsum("bhid,bhjd->bhij", np.abs(ql), np.abs(kx)) * scale
    if "bias" in extra:
        bias = extra["bias"].astype(W)
        s, a = s + bias, a + np.abs(bias)
    qi, kj = np.arange(t)[:, None], np.arange(t)[None, :]
    mod = extra.get("score_mod")
    slope = np.ones((1, heads, 1, 1), dtype=W)   # dS0/dS
    if mod is not None and mod.params[0] == "alibi":
        term = mod.params[1].astype(W)[None, :, None, None] * (kj - qi).astype(W)
        s, a = s + term, a + np.abs(term)
    elif mod is not None and mod.params[0] == "t5_relative_buckets":
        # the additive term f(h, kv − q) read off the function at score 0 (its buckets are checked
        # against transformers in test_masks); here only the magnitudes matter
        zero = np.zeros((1, heads, t, t))
        b, h = np.zeros((1, 1, 1, 1), np.int64), np.arange(heads)[None, :, None, None]
        term = np.asarray(mod(zero, b, h, qi, kj), dtype=np.float64).astype(W)
        s, a = s + term, a + np.abs(term)
    delta = c * eps * a
    if mod is not None and mod.params[0] == "soft_cap":
        cap = W(CAP)
        th = np.tanh(s / cap)
        slope = 1 - th * th
        s = cap * th
        delta = slope * delta + c * eps * cap
    allowed = np.ones(s.shape, bool)
    if extra.get("causal"):
        allowed = allowed & (kj <= qi)
    if "mask" in extra:
        allowed = allowed & extra["mask"]
    allowed = np.broadcast_to(allowed, s.shape)
    sm = np.where(allowed, s, -np.inf)
    top = sm.max(axis=-1, keepdims=True)
    empty = ~allowed.any(axis=-1, keepdims=True)
    top = np.where(empty, 0, top)
    e = np.exp(sm - top)
    total = e.sum(axis=-1, keepdims=True)
    w = np.where(empty, 0, e / np.where(empty, 1, total))
    out = w @ vx
    # the weights' error from scores off by at most δ in each row
    dmax = np.where(allowed, delta, 0).max(axis=-1, keepdims=True)
    top_j = np.argmax(w, axis=-1)[..., None]
    rest = np.where(np.arange(t) == top_j, 0, w).sum(axis=-1, keepdims=True)   # (not 1 − max: it would round)
    with np.errstate(divide="ignore", over="ignore"):
        log_rest = np.log(np.maximum(rest, 0))
        ew = 2 * np.minimum(np.minimum(W(1), np.expm1(np.minimum(2 * dmax, W(50)))),
                            np.exp(np.minimum(2 * dmax + log_rest, W(50))))
    vtop = np.abs(vx).max(axis=(-1, -2), keepdims=True)
    tol_out = vtop * (ew + c * eps)
    if d_out is None:
        return out, tol_out
    do = d_out.astype(W)
    dp = do @ np.swapaxes(vx, -1, -2)                       # (…, Tq, Tk)
    dd = (do * out).sum(axis=-1, keepdims=True)
    ds = w * (dp - dd) * slope
    dq = ds @ kx * scale
    dk = np.swapaxes(ds, -1, -2) @ ql * scale
    dv = np.swapaxes(w, -1, -2) @ do
    # each (i, j) of dS off by at most e_ij: the weights' error (ew_i) times what multiplies them, the
    # dtype's rounding of P, dP and D
    do1 = np.abs(do).sum(axis=-1, keepdims=True)
    # the rounding of dP and D is relative to their terms' magnitudes, Σ|dO||v|, not to their sums
    rp = np.abs(do) @ np.swapaxes(np.abs(vx), -1, -2)
    rd = (np.abs(do) * np.abs(out)).sum(axis=-1, keepdims=True)
    dpmax = np.abs(dp).max(axis=-1, keepdims=True)
    e_row = ew * (2 * dpmax + np.abs(dd) + do1 * vtop)
    e_ij = c * eps * w * (rp + rd) + np.minimum(ew, 1) * (dpmax + np.abs(dd) + do1 * vtop)
    ktop = np.abs(kx).max(axis=(-1, -2), keepdims=True)
    qtop = np.abs(ql).max(axis=(-1, -2), keepdims=True)
    tol_dq = scale * ktop * (e_row + c * eps * (w * (rp + rd)).sum(axis=-1, keepdims=True)) \
        + c * eps * np.abs(ds) @ np.abs(kx) * scale
    tol_dk = scale * qtop * np.swapaxes(e_ij, -1, -2).sum(axis=-1, keepdims=True) \
        + c * eps * np.swapaxes(np.abs(ds), -1, -2) @ np.abs(ql) * scale
    tol_dv = np.swapaxes(np.minimum(ew, 1) * np.abs(do).max(axis=-1, keepdims=True), -1, -2).sum(axis=-1, keepdims=True) \
        + c * eps * np.swapaxes(w, -1, -2) @ np.abs(do)

    def per_kv(x):   # a query head's part of a shared key/value head's gradient, summed
        return x.reshape((1, kv_heads, group) + x.shape[2:]).sum(axis=2)

    tol_dk = np.broadcast_to(tol_dk, dk.shape)
    return (out, tol_out), ((dq, tol_dq), (per_kv(dk), per_kv(tol_dk)), (per_kv(dv), per_kv(tol_dv)))


def _floor(dtype, *tops):
    """The absolute error of results below the float range: the dtype's subnormal spacing, and the
    work's smallest normal (float32's, float64's) carried through a row of T products."""
    spacing = {"float16": 2.0 ** -24, "bfloat16": 2.0 ** -133, "float32": 2.0 ** -149, "float64": 2.0 ** -1074}[dtype]
    tiny = 2.0 ** -1022 if dtype == "float64" else 2.0 ** -126
    return LD(2 * spacing) + LD(1e3) * LD(tiny) * LD(max([1.0, *tops])) ** 2


def _check(name, got, want, tol, dtype, floor=LD(0)):
    got = np.asarray(got, dtype=np.float64).astype(LD)
    assert np.all(np.isfinite(got)), f"{name}: not finite at {np.argwhere(~np.isfinite(got))[:3].tolist()}"
    # the result's own rounding to its dtype, on top
    # and values below the float range: flushed to 0 (or to subnormals) where the reference has e^−1000
    bound = np.broadcast_to(tol, want.shape) + 2 * LD(EPS[dtype]) * np.abs(want) + floor
    err = np.abs(got - want)
    worst = np.unravel_index(np.argmax(err / bound), err.shape)
    assert np.all(err <= bound), (f"{name}: off by {float(err[worst]):.3g} at {list(worst)} "
                                  f"(allowed {float(bound[worst]):.3g}; want {float(want[worst]):.6g})")


@pytest.mark.parametrize("dtype, m, variant, t", list(_cases("numpy")))
def test_numpy_every_magnitude(dtype, m, variant, t):
    q, k, v, extra = _inputs(dtype, m, variant, t, seed=t)
    want, tol = _reference(q, k, v, extra, dtype)
    args = {key: (val.astype(dtype) if key == "bias" else val) for key, val in extra.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no "overflow encountered" on a correct result
        got = qkv.attention(q.astype(dtype), k.astype(dtype), v.astype(dtype), **args)
    assert got.dtype == np.dtype(dtype)
    _check("out", got, want, tol, dtype, _floor(dtype))


@pytest.mark.parametrize("dtype, m, variant, t", list(_cases("torch")))
def test_torch_every_magnitude_forward_and_backward(dtype, m, variant, t):
    q, k, v, extra = _inputs(dtype, m, variant, t, seed=t + 1)
    d_out = np.random.default_rng(7).standard_normal(q.shape[:-1] + (D,))
    (want, tol), grads = _reference(q, k, v, extra, dtype, d_out=d_out)
    tdt = getattr(torch, dtype)
    qt, kt, vt = (torch.from_numpy(x).to(tdt).requires_grad_(True) for x in (q, k, v))
    args = {}
    for key, val in extra.items():
        args[key] = torch.from_numpy(val).to(tdt) if key == "bias" else torch.from_numpy(val) if key == "mask" \
            else val
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = qkv.attention(qt, kt, vt, **args)
        out.backward(torch.from_numpy(d_out).to(tdt))
    assert out.dtype == tdt
    floor = _floor(dtype, m)
    _check("out", out.detach().double().numpy(), want, tol, dtype, floor)
    for name, tensor, (ref, tol_g) in zip(("dq", "dk", "dv"), (qt, kt, vt), grads):
        _check(name, tensor.grad.double().numpy(), ref, tol_g, dtype, floor)


# ------------------------------------------------------------------ max |x| of half-precision tensors
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_tops_are_exact_and_read_no_torch_op(dtype):
    """max |x| of bfloat16/float16 CPU tensors equals NumPy's float64 max |x| of the same values (negatives,
    −0, subnormals, the largest finite, ±inf, NaN), and is read from the bits without torch's abs()/max()
    (13 ms of CPU for 2M bfloat16 values on the AVX2 EPYC: three of them cost a T = 256 SDPA call 7×)."""
    from qkv.kernels import magnitude

    tdtype = getattr(torch, dtype)
    info = torch.finfo(tdtype)
    rng = np.random.default_rng(7)
    base = rng.standard_normal(4 * 33 * 7) * 3
    cases = {
        "normal": base,
        "negative top": np.concatenate([base, [-50.0]]),
        "zeros": np.array([0.0, -0.0, 0.0]),
        "subnormal": np.array([info.tiny / 4, -info.tiny / 2, 0.0]),
        "largest": np.concatenate([base, [-info.max]]),
        "-inf": np.concatenate([base, [-np.inf]]),
        "nan": np.concatenate([base, [np.nan, -np.inf]]),
    }
    for name, values in cases.items():
        x = torch.tensor(values, dtype=torch.float64).to(tdtype)
        expected = np.abs(x.double().numpy()).max()   # the values as rounded to the dtype, in float64
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            (top,) = magnitude.value_tops(x)
        assert (np.isnan(top) and np.isnan(expected)) or top == expected, (name, top, expected)
        ops = {event.key for event in prof.key_averages()}
        assert not ops & {"aten::abs", "aten::max", "aten::amax"}, (name, ops)
    shaped = torch.tensor(base.reshape(4, 33, 7), dtype=tdtype)
    strided = shaped[:, ::2]                           # not contiguous: torch's own reduction, same answer
    assert magnitude.value_tops(shaped, strided) == (np.abs(shaped.double().numpy()).max(),
                                                     np.abs(strided.double().numpy()).max())
    assert magnitude.value_tops(torch.zeros(0, dtype=tdtype)) == (0.0,)
