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

from flash_reference import flash_reference
from qkv.kernels import blocked
from qkv.kernels import execute, native
from qkv.kernels import blas

_fused = native.fused
HEADROOM = blocked._HEADROOM


def test_extension_is_built_here():
    """setup.py builds it with optional=True, so a failed compile would pass silently; not here."""
    assert _fused is not None, ("qkv.kernels._fused did not build: rerun `pip install -e .` "
                                "and read the compiler errors")


needs_fused = pytest.mark.skipif(_fused is None, reason="qkv.kernels._fused is not built")
# The loops' widths: AVX-512 (16 lanes), AVX2+FMA (8) and scalar (1). On a CPU without AVX-512
# (or AVX2) width=16 falls back to the widest loop the CPU has. Every entry point takes the width
# per call (Route.width on the kernel's routes), so no test changes module state.
LOOPS = [pytest.param(16, id="avx512"), pytest.param(8, id="avx2"), pytest.param(1, id="scalar")]


def _exp(x, out, width):
    _fused.exp(x, out, width=width)


def ulps(out, x):
    """|out − exp(x)| in float32 ulps of the exact (float64) value."""
    exact = np.exp(x.astype(np.float64))
    return np.abs(out.astype(np.float64) - exact) / np.spacing(exact.astype(np.float32)).astype(np.float64)


@needs_fused
@pytest.mark.parametrize("width", LOOPS)
def test_exp_within_two_ulps(width):
    x = np.concatenate([np.linspace(-87.3, 88.7, 2_000_003, dtype=np.float32),
                        np.random.default_rng(0).uniform(-20, 16, 500_001).astype(np.float32),
                        np.float32([0, -0.0, 1e-30, -1e-30, 0.3465736, -0.3465736, 0.6931472, -0.6931472])])
    out = np.empty_like(x)
    _exp(x, out, width)
    assert ulps(out, x).max() <= 2.0
    assert out[np.float32(x) == 0].tolist() == [1.0, 1.0]


@needs_fused
@pytest.mark.parametrize("width", LOOPS)
def test_exp_special_values(width):
    # 33 values: the vector loops' full steps and their tails (scalar or masked) see each kind.
    x = np.float32([-np.inf, -1e30, -1000, -104, -88, -87.5, np.inf, 1e30, 89, 88.73, np.nan] * 3)
    out = np.empty_like(x)
    with np.errstate(all="raise"):
        _exp(x, out, width)
    np.testing.assert_array_equal(out[:6], 0)          # below ln(FLT_MIN): exactly 0, never NaN
    assert np.all(np.isposinf(out[6:10]))
    assert np.isnan(out[10]) and np.array_equal(out[:11], out[11:22], equal_nan=True)
    y = np.float32(-87.3)
    assert 0 < _one(y, width) and abs(_one(y, width) - np.exp(np.float64(y))) < 1.2e-38 * 2 ** -20


def _one(x, width):
    out = np.empty(1, np.float32)
    _exp(np.float32([x]), out, width)
    return out[0]


def test_width_argument_is_checked_by_every_entry_point():
    x = np.ones(4, np.float32)
    rows = np.zeros((1, 4), np.float32)
    one = np.zeros(1, np.float32)
    for call in (lambda: _fused.exp(x, x.copy(), width=4), lambda: _fused.gelu(x.copy(), width=2),
                 lambda: _fused.absmax(x, width=-1),
                 lambda: _fused.softmax_rows(rows, one, one.copy(), one.copy(), None, HEADROOM, width=32)):
        with pytest.raises(ValueError, match="width must be 0 .*, 1, 8 or 16"):
            call()
    with pytest.raises(ValueError, match="width must be 0, 1, 8 or 16"):
        execute.kernel_attention(x.reshape(2, 2), x.reshape(2, 2), x.reshape(2, 2), width=3)
    # (h/masks) a truthy non-bool tile, and width True / 8.0, were taken as choices
    for bad in ("no", 1, 0.0, [True]):
        with pytest.raises(TypeError, match="tile must be True, False or None"):
            execute.kernel_attention(x.reshape(2, 2), x.reshape(2, 2), x.reshape(2, 2), tile=bad)
    for bad in (True, 8.0, "8"):
        with pytest.raises(ValueError, match="width must be 0, 1, 8 or 16"):
            execute.kernel_attention(x.reshape(2, 2), x.reshape(2, 2), x.reshape(2, 2), width=bad)
    assert not hasattr(_fused, "set_width") and not hasattr(_fused, "set_tile")   # no module state to flip


@pytest.fixture(params=LOOPS)
def loops(request):
    """The width each test passes to the C calls: the AVX-512 loops, the AVX2 loops, then the scalar ones."""
    return request.param


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
    moved = _fused.softmax_rows(scores, ref, row_sum, alpha, row_max, HEADROOM, width=loops)
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
    assert _fused.softmax_rows(scores, ref, row_sum, alpha, None, HEADROOM, width=loops) is False
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
    """The whole kernel through the C step (every loop width) against the NumPy step: mask, bias
    that moves references, the causal diagonal and a Partial; without the bias (so through the C
    walk, flash_rows, too), large scores moving references instead."""
    from qkv.kernels import blocked_attention, partial_attention

    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((2, 61, 9)).astype(np.float32) * 3 for _ in range(3))
    k[:, 20] *= 30
    mask = rng.random((61, 61)) < 0.7
    bias = np.where(rng.random((61, 61)) < 0.1, 50.0, 0.0)
    results = {}
    for path, route in (("flash", "flash_rows"), ("fused", "py_walk"), ("numpy", "numpy_walk")):
        results[path] = (execute.kernel_attention(q, k, v, mask, bias=bias, causal=True, block_q=16, block_k=13, route=route,
                                            width=loops),
                         execute.kernel_attention(q, k, v, mask, bias=bias, want="partial", route=route, width=loops),
                         execute.kernel_attention(q, k, v, mask, causal=True, block_q=16, block_k=13, route=route,
                                            width=loops),
                         execute.kernel_attention(q, k, v, mask, want="partial", route=route, width=loops))
    for path in ("flash", "fused"):
        for mine, theirs in zip(results[path], results["numpy"]):
            mine = mine if isinstance(mine, tuple) else (mine,)
            theirs = theirs if isinstance(theirs, tuple) else (theirs,)
            for a, b in zip(mine, theirs):
                np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


@needs_fused
def test_kernel_calls_take_the_c_walk(monkeypatch):
    """float32 calls without a mask array, bias or a score_mod other than soft-cap / a relative bias
    run every task in C (flash_many: dense, causal, band masks, masks with per-row key ranges such as
    sorted documents); a mask, or a mask function that is neither (unsorted documents, sinks) go
    through flash_rows per task; bias, other score_mods, non-finite values and float64 take the
    Python walk."""
    import qkv
    from qkv import masks
    from qkv.kernels.call import check_call
    from qkv.kernels.route import choose_route

    def named(*args, **kwargs):   # the route qkv.kernels.route names for the call
        return choose_route(check_call(*args, **kwargs), route="flash_many").name.value

    # the first sgemm_ready() probes the BLAS with one small flash_rows call: done before recording (run
    # alone, this test's first call was that probe's)
    assert blas.sgemm_ready()
    calls = []
    for name in ("flash_rows", "flash_many"):
        real = getattr(native.fused, name)
        monkeypatch.setattr(native.fused, name,
                            lambda *a, _real=real, _name=name, **kw: calls.append(_name) or _real(*a, **kw))
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((1, 2, 300, 16)).astype(np.float32) for _ in range(3))
    for kwargs, route in (({}, "flash_many"), ({"causal": True}, "flash_many"),
                          ({"mask_mod": masks.sliding_window(40)}, "flash_many"),
                          ({"mask_mod": masks.document(np.repeat(np.arange(3), 100))}, "flash_many"),
                          ({"mask_mod": masks.causal() & masks.prefix_lm(40)}, "flash_many"),
                          ({"score_mod": masks.soft_cap(20.0)}, "flash_many"),          # score kinds in C
                          ({"score_mod": masks.t5_relative_buckets(np.ones((2, 32))), "causal": True}, "flash_many"),
                          ({"mask": rng.random((300, 300)) < 0.5}, "flash_rows"),
                          ({"mask_mod": masks.document(np.tile(np.arange(3), 100))}, "flash_rows"),
                          # several key ranges per row: one flash_many pass per range, merged by lse
                          ({"mask_mod": masks.sliding_window(20) | masks.sinks(4)}, "flash_many")):
        calls.clear()
        execute.blocked_attention(q, k, v, **kwargs)
        assert calls and set(calls) == {route}, (kwargs, calls)
        assert named(q, k, v, **kwargs) == route
    v_bad = v.copy()
    v_bad[0, 0, 3, 1] = np.nan
    for args, kwargs, route in (((q, k, v), {"bias": np.zeros((300, 300), np.float32)}, "py_walk"),
                                ((q, k, v), {"score_mod": lambda s, b, h, qi, ki: s * 0.5}, "py_walk"),
                                ((q, k, v_bad), {}, "py_walk"),
                                ((q.astype(np.float64), k.astype(np.float64), v.astype(np.float64)), {}, "numpy_walk")):
        calls.clear()
        execute.blocked_attention(*args, **kwargs)
        assert not calls, kwargs
        assert named(*args, **kwargs) == route
    calls.clear()
    qkv.attention(q, k, v, causal=True)
    assert calls


# --------------------------------------------------------------------------- flash_rows
def test_flash_rows_has_numpys_blas_here():
    """blocked finds cblas_sgemm in NumPy's BLAS (checked on a small product) in this environment;
    elsewhere the kernel falls back to the Python walk silently, so this test says when it did."""
    assert blas.sgemm_ready(), "no cblas_sgemm found in the BLAS libraries threadpoolctl lists"


@needs_fused
@pytest.mark.parametrize("dk, dv, cols", [(64, 64, 512), (5, 3, 7), (13, 17, 40)])
def test_flash_rows_matches_float64(dk, dv, cols, loops):
    """Several key blocks with masks (one leaving a row empty so far), a causal limit, a band's start
    (row ranges), scores that move the reference up and rows far below it: acc / l and row_max
    against float64."""
    assert blas.sgemm_ready()
    rng = np.random.default_rng(dk * 100 + cols)
    rows, tk = 9, 3 * cols + 5
    q = (rng.standard_normal((rows, dk)) / np.sqrt(dk)).astype(np.float32) * 3
    k = rng.standard_normal((tk, dk)).astype(np.float32)
    k[cols + 2] *= 40                                       # a key that moves references up in block 2
    q[1] *= 0.001
    v = rng.standard_normal((tk, dv)).astype(np.float32)
    blocks = [(0, cols, 2, 0, cols // 3 - 4), (cols, 2 * cols, 0, 0, 0), (2 * cols, 3 * cols, 1, 2 - rows, 0),
              (3 * cols, tk, 3, cols // 2 + 3, -1)]     # a band's start, none, a causal limit, both
    masks = [rng.random((rows, cols)) < 0.4, None, None, rng.random((rows, tk - 3 * cols)) < 0.5]
    masks[0][3] = True                                      # row 3: nothing in the first block
    acc = np.zeros((rows, dv), np.float32)
    ref, l, alpha = (np.zeros(rows, np.float32) for _ in range(3))
    row_max = np.full(rows, -np.inf, np.float32)
    scratch = np.full((rows + 2, cols + 3), np.nan, np.float32)   # larger than needed, as the kernel's
    _fused.flash_rows(q, k, v, acc, ref, l, alpha, row_max, scratch, np.array(blocks, np.int64), masks, HEADROOM,
                      width=loops)
    expected, top, _, _ = flash_reference(q, k, v, blocks, masks)
    got = np.where(l[:, None] > 0, acc / np.where(l > 0, l, 1)[:, None], 0)
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-6 * max(1, np.abs(v).max()))
    np.testing.assert_allclose(row_max, top, rtol=1e-6)
    assert np.all(ref <= row_max + 1e-6) and np.all(row_max - ref <= HEADROOM)


@needs_fused
def test_flash_rows_scales_q_and_finalizes(loops):
    """scale multiplies q (q itself untouched); finalize divides by the row sums, and a row with no
    allowed key becomes 0 (no NaN)."""
    assert blas.sgemm_ready()
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((5, 16)).astype(np.float32), *(rng.standard_normal((30, 16)).astype(np.float32)
                                                                   for _ in range(2))
    q_before = q.copy()
    blocks = [(0, 20, 0, 0, 0), (20, 30, 0, 0, 0)]
    masks = [np.zeros((5, 20), bool), np.zeros((5, 10), bool)]
    masks[0][2], masks[1][2] = True, True                    # row 2 sees nothing
    out = np.zeros((5, 16), np.float32)
    ref, l, alpha = (np.zeros(5, np.float32) for _ in range(3))
    _fused.flash_rows(q, k, v, out, ref, l, alpha, None, np.empty((5, 20), np.float32), np.array(blocks, np.int64),
                      masks, HEADROOM, scale=0.3, finalize=True, width=loops)
    expected = flash_reference(q * np.float32(0.3), k, v, blocks, masks)[0]
    np.testing.assert_allclose(out, expected, atol=2e-6)
    assert not out[2].any() and l[2] == 0
    np.testing.assert_array_equal(q, q_before)


@needs_fused
def test_flash_rows_accepts_strided_and_read_only_inputs():
    """k and v rows with a stride (every other row of a bigger array), read-only views, the acc rows
    of a larger output: the same result as contiguous copies."""
    assert blas.sgemm_ready()
    rng = np.random.default_rng(7)
    q = rng.standard_normal((6, 8)).astype(np.float32)
    big_k = rng.standard_normal((40, 12)).astype(np.float32)
    big_v = rng.standard_normal((40, 10)).astype(np.float32)
    k, v = big_k[::2, :8], big_v[::2, 2:7]
    k.flags.writeable = False
    blocks = np.array([[0, 11, 0, 0, 0], [11, 20, 0, 0, 0]], np.int64)
    results = []
    for kk, vv in ((k, v), (np.ascontiguousarray(k), np.ascontiguousarray(v))):
        out = np.zeros((6, 9), np.float32)
        ref, l, alpha = (np.zeros(6, np.float32) for _ in range(3))
        _fused.flash_rows(q, kk, vv, out[:, 2:7], ref, l, alpha, None, np.empty((6, 11), np.float32), blocks, None,
                          HEADROOM)
        results.append(out)
    np.testing.assert_array_equal(results[0], results[1])
    assert not results[0][:, :2].any() and not results[0][:, 7:].any()     # only acc's columns written
    expected = flash_reference(q, k, v, blocks.tolist(), None)[0]
    l_sum = np.exp(q.astype(np.float64) @ k.T.astype(np.float64)).sum(1)
    np.testing.assert_allclose(results[0][:, 2:7] / l_sum[:, None], expected, atol=1e-5)


@needs_fused
def test_flash_rows_refuses_wrong_arrays():
    assert blas.sgemm_ready()
    q, k, v = np.zeros((3, 4), np.float32), np.zeros((10, 4), np.float32), np.zeros((10, 2), np.float32)
    acc, vec = np.zeros((3, 2), np.float32), np.zeros(3, np.float32)
    scratch = np.zeros((3, 8), np.float32)
    one = np.array([[0, 8, 0, 0, 0]], np.int64)

    def call(**change):
        args = dict(q=q, k=k, v=v, acc=acc, ref=vec.copy(), l=vec.copy(), alpha=vec.copy(), row_max=None,
                    scores=scratch, blocks=one, masks=None)
        args.update(change)
        _fused.flash_rows(*args.values(), HEADROOM)

    with pytest.raises(ValueError, match="q must be a 2-D float32"):
        call(q=q.astype(np.float64))
    with pytest.raises(ValueError, match="k has shape"):
        call(k=np.zeros((10, 5), np.float32))
    with pytest.raises(ValueError, match="v has 9 rows but k has 10"):
        call(v=np.zeros((9, 2), np.float32))
    with pytest.raises(ValueError, match="acc"):
        call(acc=np.zeros((3, 3), np.float32))
    with pytest.raises((ValueError, BufferError, TypeError)):
        frozen = acc.copy()
        frozen.flags.writeable = False
        call(acc=frozen)
    with pytest.raises(ValueError, match="rows not overlapping"):
        call(k=np.lib.stride_tricks.as_strided(k, (10, 4), (4, 4)))
    with pytest.raises(ValueError, match="block 0 covers keys 0:11"):
        call(blocks=np.array([[0, 11, 0, 0, 0]], np.int64))
    with pytest.raises(ValueError, match="block 1 covers keys 5:5"):
        call(blocks=np.array([[0, 5, 0, 0, 0], [5, 5, 0, 0, 0]], np.int64))
    with pytest.raises(ValueError, match="at most 8 keys"):
        call(blocks=np.array([[0, 9, 0, 0, 0]], np.int64))
    with pytest.raises(ValueError, match="blocks must be a C-contiguous int64"):
        call(blocks=one.astype(np.int32))
    with pytest.raises(ValueError, match=r"shape \(n, 5\)"):
        call(blocks=one[:, :4].copy())
    with pytest.raises(ValueError, match=r"block 0 uses row ranges \(flag 4\) but no ranges were given"):
        call(blocks=np.array([[0, 8, 4, 0, 0]], np.int64))
    with pytest.raises(ValueError, match="masks has 2 entries for 1 blocks"):
        call(masks=[None, None])
    with pytest.raises(ValueError, match=r"masks\[0\] must be a bool \(3, 8\)"):
        call(masks=[np.zeros((3, 7), bool)])
    with pytest.raises(ValueError, match="must have q's 3 rows"):
        call(row_max=np.zeros(2, np.float32))


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
    _fused.gelu(mine, width=loops)
    error = np.abs(mine - exact_gelu(x))
    assert np.all(error <= 1e-7 + 1.2e-7 * np.abs(x)), error.max()
    numpy_path = layers.gelu(x.copy(), c=False)
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
    _fused.gelu(expected, width=loops)
    _fused.gelu(x, bias, width=loops)
    np.testing.assert_array_equal(x, expected)
    np.testing.assert_allclose(x, exact_gelu(summed), rtol=0, atol=1e-7 + 1.2e-7 * np.abs(summed).max())


@needs_fused
def test_gelu_special_values(loops):
    x = np.float32([0.0, -0.0, np.nan, -np.inf, -100.0, 100.0, 1e-30, -1e-30])
    _fused.gelu(x, width=loops)
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


@needs_fused
def test_flash_many_refuses_wrong_arrays():
    """Every index of a task and block is checked before any work (nothing written on refusal)."""
    assert blas.sgemm_ready()
    q, k, v = np.ones((2, 6, 4), np.float32), np.ones((1, 9, 4), np.float32), np.ones((1, 9, 3), np.float32)
    scores, vectors = np.zeros((6, 9), np.float32), np.zeros((3, 6), np.float32)
    blocks = np.array([[0, 9, 0, 0, 0]], np.int64)

    def call(task_rows, **change):
        args = dict(q=q, k=k, v=v, out=np.full((2, 6, 3), 7, np.float32), lse=None,
                    tasks=np.array(task_rows, np.int64).reshape(-1, 7), blocks=blocks, counter=np.zeros(1, np.int64),
                    scores=scores, vectors=vectors)
        args.update(change)
        try:
            _fused.flash_many(*args.values(), HEADROOM, 0.5)
        finally:
            assert np.all(args["out"] == 7)                         # refused before any work

    good = [0, 0, 1, 0, 6, 0, 1]
    for bad, what in (([2, 0, 0, 0, 6, 0, 1], "q head"), ([0, 1, 0, 0, 6, 0, 1], "kv head"),
                      ([0, 0, 2, 0, 6, 0, 1], "out head"), ([0, 0, 0, 3, 3, 0, 1], "no rows"),
                      ([0, 0, 0, 0, 7, 0, 1], "rows past Tq"), ([0, 0, 0, 0, 6, 0, 2], "blocks past the table")):
        with pytest.raises(ValueError, match="task 1 .* is out of range"):
            call([good, bad])
    with pytest.raises(ValueError, match="block 0 covers keys 0:10"):
        call([good], blocks=np.array([[0, 10, 0, 0, 0]], np.int64))
    with pytest.raises(ValueError, match="shapes do not agree"):
        call([good], v=np.ones((1, 8, 3), np.float32))
    with pytest.raises(ValueError, match=r"block 0 uses row ranges \(flag 4\) but no ranges were given"):
        call([good], blocks=np.array([[0, 9, 4, 0, 0]], np.int64))
    with pytest.raises(ValueError, match="tasks must be a C-contiguous int64 array of shape \\(n, 7\\)"):
        call([good], tasks=np.array([good], np.int32))
    with pytest.raises(ValueError, match="lse must be a writable float32 \\(2, 6\\)"):
        call([good], lse=np.zeros((2, 5), np.float32))
    with pytest.raises(ValueError, match="q must be a 3-D float32"):
        call([good], q=q[:, :, ::2])
    out, lse = np.zeros((2, 6, 3), np.float32), np.zeros((2, 6), np.float32)
    _fused.flash_many(q, k, v, out, lse, np.array([good], np.int64), blocks, np.zeros(1, np.int64), scores, vectors,
                      HEADROOM, 0.5)
    np.testing.assert_allclose(out[1], 1, rtol=1e-6)                  # uniform weights over ones
    np.testing.assert_allclose(lse[1], 2 + np.log(9), rtol=1e-6)     # scores q·k·0.5 = 2 each
    assert not out[0].any()


def test_ctrl_c_stops_a_long_call_before_its_work_is_done(tmp_path):
    """The all-C route goes back to Python every 50 ms (`blocked._FLASH_BUDGET_S`), so SIGINT interrupts a long
    call with KeyboardInterrupt while tasks are still untaken, and the threads stop. Counted, not timed: the
    child watches flash_many's shared task counter (tasks taken) and its task table, and says how many of the
    tasks had been taken when the KeyboardInterrupt came (a call that only noticed the signal once it was done
    would have taken them all)."""
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "long.py"
    script.write_text(
        "import numpy as np\n"
        "from qkv.kernels import blocked_attention, native\n"
        "seen = {}\n"
        "real = native.extension\n"
        "class Watched:\n"
        "    def __init__(self, extension):\n"
        "        self._extension = extension\n"
        "    def __getattr__(self, name):\n"
        "        return getattr(self._extension, name)\n"
        "    def flash_many(self, q, k, v, out, lse, tasks, blocks, counter, *rest, **kwargs):\n"
        "        seen['tasks'], seen['counter'] = tasks, counter\n"
        "        return self._extension.flash_many(q, k, v, out, lse, tasks, blocks, counter, *rest, **kwargs)\n"
        "native.extension = lambda *a, **k: Watched(real(*a, **k))\n"
        "q = np.random.default_rng(0).standard_normal((4, 16384, 64), dtype=np.float32)\n"
        "print('ready', flush=True)\n"
        "try:\n"
        "    blocked_attention(q, q, q)\n"
        "    print('finished', int(seen['counter'][0]), len(seen['tasks']), flush=True)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', int(seen['counter'][0]), len(seen['tasks']), flush=True)\n")
    # SIGINT at its default in the child, as at a terminal (a shell's background job, `make test &`,
    # ignores SIGINT and its children inherit that: Python would then install no handler)
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.3)                 # into the call (the sleep only places the signal; nothing is timed)
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=120)
    finally:
        child.kill()
    word, taken, tasks = out.split()
    assert word == "interrupted", out
    assert int(tasks) > 1 and int(taken) < int(tasks), out


@needs_fused
@pytest.mark.parametrize("values", [[1, -5, 3], [], [1, np.inf, -2], [-np.inf, 3], [np.nan, 1e30], [0.0, -0.0],
                                    "random", "nan_inside", "inf_inside", "nan_and_inf_inside"])
def test_absmax_is_max_abs_with_nan_and_inf(values, loops):
    """The kernel's one-pass check of the values: max |v| (NaN if any is NaN, inf if any is ±inf),
    also where the NaN or inf lies in the vector loops' part (not only in the scalar tail)."""
    if isinstance(values, str):
        x = np.random.default_rng(0).standard_normal(1001) * 7
        if "nan" in values:
            x[37] = np.nan
        if "inf" in values:
            x[500] = -np.inf
    else:
        x = np.array(values)
    x = x.astype(np.float32)
    expected = np.nan if np.isnan(x).any() else (float(np.abs(x).max()) if x.size else 0.0)
    got = _fused.absmax(x, width=loops)
    assert (np.isnan(got) and np.isnan(expected)) or got == expected
    with pytest.raises(ValueError, match="C-contiguous float32"):
        _fused.absmax(x.astype(np.float64))


# --------------------------------------------------------------------------- score functions in C
@needs_fused
@pytest.mark.parametrize("route", ["flash_many", "flash_rows"])
@pytest.mark.parametrize("options", [{}, {"causal": True}, {"mask_mod": "window"}], ids=["none", "causal", "window"])
def test_catalogue_score_functions_run_in_the_c_forward(route, options):
    """float32 NumPy calls with ALiBi, soft-cap and T5's buckets (bidirectional and not) take the C
    routes (a relative bias or soft-cap computed in C) and match float64 attention_reference
    (rounding only: 2e-6 of the largest value; a wrong offset or head row gives ≥ 1e-2)."""
    import qkv
    import qkv.masks as masks
    from qkv.kernels.call import check_call
    from qkv.kernels.route import choose_route

    if options.get("mask_mod") == "window":
        options = {"mask_mod": masks.sliding_window(40)}
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 4, 150, 16)).astype(np.float32)
    k, v = (rng.standard_normal((2, 2, 130, 16)).astype(np.float32) for _ in range(2))
    table = rng.standard_normal((4, 32))
    for score in (masks.alibi(4), masks.soft_cap(2.0), masks.t5_relative_buckets(table, max_distance=40),
                  masks.t5_relative_buckets(table, bidirectional=False, max_distance=40)):
        chosen = choose_route(check_call(q, k, v, score_mod=score, **options), route=route, block_q=32, block_k=16)
        assert chosen.name.value == route and chosen.score is not None
        want, want_lse = qkv.attention_reference(*(x.astype(np.float64) for x in (q, k, v)), score_mod=score,
                                                 return_lse=True, **options)
        got, lse = execute.kernel_attention(q, k, v, score_mod=score, route=route, block_q=32, block_k=16, want="lse",
                                      **options)
        assert np.abs(got - want).max() <= 2e-6 * np.abs(want).max(), score
        seen = np.isfinite(want_lse)   # causal with Tq > Tk: the first rows see no key (lse −inf)
        assert np.array_equal(np.isfinite(lse), seen)
        assert np.abs(lse[seen] - want_lse[seen]).max() <= 2e-6 * np.abs(want_lse[seen]).max(), score
        # decoding (two query rows: the plain C loops instead of sgemm), the bias at the last rows' offsets
        want = qkv.attention_reference(*(x.astype(np.float64) for x in (q[..., -2:, :], k, v)), score_mod=score,
                                       **options)
        got = execute.kernel_attention(q[..., -2:, :], k, v, score_mod=score, route=route, block_k=16, **options)
        assert np.abs(got - want).max() <= 2e-6 * np.abs(want).max(), score


def test_blocked_attention_runs_split_calls_as_qkv_attention_does():
    """blocked_attention (the kernel's own entry point) with a mask of several key ranges per row
    runs the split passes merged by lse, as qkv.attention does; before, it ran the split route's
    empty task table and raised. Against float64 (the NumPy walk)."""
    from qkv import masks

    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((1, 2, 300, 16)).astype(np.float32) for _ in range(3))
    for mask_mod in (masks.sliding_window(20) | masks.sinks(4), masks.global_tokens(3)):
        want = execute.blocked_attention(*(x.astype(np.float64) for x in (q, k, v)), mask_mod=mask_mod)
        want_out, want_lse = execute.blocked_attention(*(x.astype(np.float64) for x in (q, k, v)),
                                                       mask_mod=mask_mod, return_lse=True)
        out, lse = execute.blocked_attention(q, k, v, mask_mod=mask_mod, return_lse=True)
        np.testing.assert_allclose(execute.blocked_attention(q, k, v, mask_mod=mask_mod), want, rtol=0, atol=2e-6)
        np.testing.assert_allclose(out, want_out, rtol=0, atol=2e-6)
        np.testing.assert_allclose(lse, want_lse, rtol=0, atol=2e-5)
