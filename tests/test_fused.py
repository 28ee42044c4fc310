"""The C extension qkv.kernels._fused: its float32 exponential against float64 np.exp, and its
one-pass softmax step against the NumPy steps it replaces. (The whole kernel on both paths is
tested in test_kernels.py.)

Accuracy of _fused.exp (measured on 2·10⁷ points of [−87.3, 88.7]): ≤ 1.6 float32 ulps with
AVX2+FMA, ≤ 1.7 ulps in the scalar loop (NumPy's own float32 exp measures ≤ 2.4 there); the
tests allow 2. Below ln(FLT_MIN) ≈ −87.34 it returns 0 (absolute error < FLT_MIN ≈ 1.2e-38).
"""

from __future__ import annotations

import numpy as np
import pytest

from qkv.kernels import blocked

_fused = blocked._fused
HEADROOM = blocked._HEADROOM


def test_extension_is_built_here():
    """setup.py builds it with optional=True, so a failed compile would pass silently; not here."""
    assert _fused is not None, ("qkv.kernels._fused did not build: rerun `pip install -e .` "
                                "and read the compiler errors")
    assert blocked._USE_FUSED


needs_fused = pytest.mark.skipif(_fused is None, reason="qkv.kernels._fused is not built")
LOOPS = [pytest.param(True, id="vector"), pytest.param(False, id="scalar")]


def ulps(out, x):
    """|out − exp(x)| in float32 ulps of the exact (float64) value."""
    exact = np.exp(x.astype(np.float64))
    return np.abs(out.astype(np.float64) - exact) / np.spacing(exact.astype(np.float32)).astype(np.float64)


@needs_fused
@pytest.mark.parametrize("vector", LOOPS)
def test_exp_within_two_ulps(vector):
    x = np.concatenate([np.linspace(-87.3, 88.7, 2_000_003, dtype=np.float32),
                        np.random.default_rng(0).uniform(-20, 16, 500_001).astype(np.float32),
                        np.float32([0, -0.0, 1e-30, -1e-30, 0.3465736, -0.3465736, 0.6931472, -0.6931472])])
    out = np.empty_like(x)
    _fused.exp(x, out, vector=vector)
    assert ulps(out, x).max() <= 2.0
    assert out[np.float32(x) == 0].tolist() == [1.0, 1.0]


@needs_fused
@pytest.mark.parametrize("vector", LOOPS)
def test_exp_special_values(vector):
    # 33 values: the AVX2 loop's 8-wide steps and its scalar tail both see each kind.
    x = np.float32([-np.inf, -1e30, -1000, -104, -88, -87.5, np.inf, 1e30, 89, 88.73, np.nan] * 3)
    out = np.empty_like(x)
    with np.errstate(all="raise"):
        _fused.exp(x, out, vector=vector)
    np.testing.assert_array_equal(out[:6], 0)          # below ln(FLT_MIN): exactly 0, never NaN
    assert np.all(np.isposinf(out[6:10]))
    assert np.isnan(out[10]) and np.array_equal(out[:11], out[11:22], equal_nan=True)
    y = np.float32(-87.3)
    assert 0 < _one(y, vector) and abs(_one(y, vector) - np.exp(np.float64(y))) < 1.2e-38 * 2 ** -20


def _one(x, vector):
    out = np.empty(1, np.float32)
    _fused.exp(np.float32([x]), out, vector=vector)
    return out[0]


@pytest.fixture(params=LOOPS)
def loops(request):
    """softmax_rows with the AVX2 loops, then with the scalar fallback."""
    previous = _fused.set_vector(request.param)
    yield request.param
    _fused.set_vector(previous)


def numpy_step(scores, ref, row_sum, row_max, headroom):
    """What blocked.py's NumPy steps 3–5 compute: the subtractions in float32 as there (they
    round), the exponentials and sums in float64."""
    with np.errstate(invalid="ignore"):
        block_max = scores.max(axis=1)
        new_max = np.fmax(row_max, block_max) if row_max is not None else None
        gap = block_max - ref                                              # float32
        up = gap > headroom
        down = (row_sum == 0) & (gap < -headroom) & np.isfinite(gap)
        alpha = np.where(up, np.exp(np.where(up, -gap, 0).astype(np.float64)), 1.0)
        ref = np.where(up | down, block_max, ref)
        probs = np.exp((scores - ref[:, None]).astype(np.float64))        # float32 subtraction
    return probs, ref, row_sum.astype(np.float64) * alpha + probs.sum(1), alpha, new_max


@needs_fused
@pytest.mark.parametrize("cols", [1, 7, 8, 16, 23, 512])
def test_softmax_rows_matches_the_numpy_steps(cols, loops):
    rng = np.random.default_rng(cols)
    rows = 9
    buffer = rng.standard_normal((rows, 520)).astype(np.float32) * 4
    scores = buffer[:, :cols]                                 # rows not adjacent, as the scratch block
    scores[0] += 40                                           # moves up: α = exp(r − m) < 1
    scores[1] -= 200                                          # nothing summed yet, far below: moves down
    scores[2, : max(cols - 1, 1)] = -np.inf                   # (partly) masked row
    scores[3] = -np.inf                                       # fully masked row: P = 0, no NaN
    scores[4] -= 200                                          # far below but already summed: stays
    ref = np.zeros(rows, np.float32)
    ref[5] = 3.5
    row_sum = np.float32([0, 0, 0, 0, 2, 1, 0, 3, 0])
    row_max = np.full(rows, -np.inf, np.float32)
    row_max[6] = 1e3
    outside = buffer[:, cols:].copy()
    expected = numpy_step(scores, ref, row_sum, row_max, HEADROOM)
    alpha = np.empty(rows, np.float32)
    moved = _fused.softmax_rows(scores, ref, row_sum, alpha, row_max, HEADROOM)
    assert moved is True
    probs, new_ref, new_sum, new_alpha, new_max = expected
    np.testing.assert_array_equal(ref, new_ref.astype(np.float32))
    np.testing.assert_array_equal(row_max, new_max.astype(np.float32))
    np.testing.assert_allclose(alpha, new_alpha, rtol=3e-7)
    np.testing.assert_allclose(scores, probs, rtol=3e-7, atol=1e-30)
    np.testing.assert_allclose(row_sum, new_sum, rtol=2e-6)
    assert np.all(np.isfinite(scores)) and scores[3].max() == 0 and row_sum[3] == 0
    np.testing.assert_array_equal(buffer[:, cols:], outside)  # columns past the view untouched


@needs_fused
def test_softmax_rows_reports_no_move_and_skips_row_max(loops):
    scores = np.random.default_rng(5).standard_normal((4, 40)).astype(np.float32)
    ref, row_sum, alpha = np.zeros(4, np.float32), np.ones(4, np.float32), np.empty(4, np.float32)
    expected = np.exp(scores.astype(np.float64)).sum(1) + 1
    assert _fused.softmax_rows(scores, ref, row_sum, alpha, None, HEADROOM) is False
    np.testing.assert_array_equal(alpha, 1)
    np.testing.assert_allclose(row_sum, expected, rtol=2e-6)


@needs_fused
def test_softmax_rows_refuses_wrong_arrays():
    good = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match="scores must be a writable 2-D float32"):
        _fused.softmax_rows(np.zeros((3, 4)), good, good.copy(), good.copy(), None, HEADROOM)
    with pytest.raises(ValueError, match="contiguous rows"):
        _fused.softmax_rows(np.zeros((3, 8), np.float32)[:, ::2], good, good.copy(), good.copy(), None, HEADROOM)
    with pytest.raises(ValueError, match="3 rows"):
        _fused.softmax_rows(np.zeros((3, 4), np.float32), np.zeros(2, np.float32), good, good.copy(), None, HEADROOM)
    with pytest.raises((ValueError, BufferError, TypeError)):
        frozen = np.zeros((3, 4), np.float32)
        frozen.flags.writeable = False
        _fused.softmax_rows(frozen, good, good.copy(), good.copy(), None, HEADROOM)


@needs_fused
def test_kernel_through_the_c_step_matches_the_numpy_step(loops):
    """The whole kernel through the C step (AVX2 or scalar) against the NumPy step: mask, bias
    that moves references, the causal diagonal and a Partial."""
    from qkv.kernels import blocked_attention, partial_attention

    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((2, 61, 9)).astype(np.float32) * 3 for _ in range(3))
    mask = rng.random((61, 61)) < 0.7
    bias = np.where(rng.random((61, 61)) < 0.1, 50.0, 0.0)
    results, saved = {}, blocked._USE_FUSED
    try:
        for fused in (True, False):
            blocked._USE_FUSED = fused
            results[fused] = (blocked_attention(q, k, v, mask, bias=bias, causal=True, block_q=16, block_k=13),
                              partial_attention(q, k, v, mask, bias=bias))
    finally:
        blocked._USE_FUSED = saved
    np.testing.assert_allclose(results[True][0], results[False][0], rtol=0, atol=2e-5)
    for mine, theirs in zip(results[True][1], results[False][1]):
        np.testing.assert_allclose(mine, theirs, rtol=2e-5, atol=2e-5)


# --------------------------------------------------------------------------- gelu
def exact_gelu(x):
    """x·Φ(x) in float64 through math.erf."""
    import math

    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in x.ravel()]).reshape(x.shape))


@needs_fused
def test_gelu_matches_math_erf_and_the_numpy_path(loops):
    """_fused.gelu against float64 math.erf (|error| ≤ 1e-7 + 1.2e-7·|x|, test_models' tolerance), and the
    NumPy path it replaces (same A&S formula; only the exp differs, by ≤ 2 ulps)."""
    from qkv import activations as layers

    x = np.linspace(-12.0, 12.0, 24001).astype(np.float32)   # exact inputs: no rounding of x in the error
    mine = x.copy()
    _fused.gelu(mine)
    error = np.abs(mine - exact_gelu(x))
    assert np.all(error <= 1e-7 + 1.2e-7 * np.abs(x)), error.max()
    saved = layers._USE_FUSED
    try:
        layers._USE_FUSED = False
        numpy_path = layers.gelu(x.copy())
    finally:
        layers._USE_FUSED = saved
    assert np.abs(mine - numpy_path).max() <= 3e-7


@needs_fused
@pytest.mark.parametrize("cols", [1, 7, 8, 37, 1536])
def test_gelu_adds_the_bias_per_row(cols, loops):
    """gelu(x, bias) = gelu(x + bias) row by row, for widths around the 8-wide vector loop."""
    rng = np.random.default_rng(cols)
    x = (rng.standard_normal((3, 5, cols)) * 4).astype(np.float32)
    bias = rng.standard_normal(cols).astype(np.float32)
    summed = x + bias
    expected = summed.copy()
    _fused.gelu(expected)
    _fused.gelu(x, bias)
    np.testing.assert_array_equal(x, expected)
    np.testing.assert_allclose(x, exact_gelu(summed), rtol=0, atol=1e-7 + 1.2e-7 * np.abs(summed).max())


@needs_fused
def test_gelu_special_values(loops):
    x = np.float32([0.0, -0.0, np.nan, -np.inf, -100.0, 100.0, 1e-30, -1e-30])
    _fused.gelu(x)
    assert x[0] == 0 and x[1] == 0 and np.isnan(x[2])
    assert x[3] == 0 or np.isnan(x[3])          # −inf·Φ(−inf): 0 in the limit; NumPy's path gives NaN too
    assert x[4] == 0 and x[5] == 100.0
    assert abs(x[6] - 5e-31) < 1e-36 and abs(x[7] + 5e-31) < 1e-36


@needs_fused
def test_gelu_refuses_wrong_arrays():
    with pytest.raises(ValueError):
        _fused.gelu(np.zeros(8))                                       # float64
    with pytest.raises((ValueError, BufferError)):
        _fused.gelu(np.zeros((4, 8), np.float32)[:, ::2])              # not contiguous
    with pytest.raises(ValueError):
        _fused.gelu(np.zeros((4, 8), np.float32), np.zeros(7, np.float32))
    with pytest.raises((ValueError, BufferError, TypeError)):
        frozen = np.zeros(8, np.float32)
        frozen.flags.writeable = False
        _fused.gelu(frozen)
