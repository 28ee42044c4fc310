"""tile_block (src/qkv/kernels/_tile.h): flash_rows' register-tiled step (AVX-512, or AVX2+FMA) against
a float64 reference and against flash_block_blas (tile=False: the BLAS products and softmax_block).

Tolerances, from float64 (both paths are held to them; measured maxima in brackets):
|out − exact| ≤ 3e-6·max|v| where the top scores are moderate [1.0e-6], ≤ 1e-5·max|v| in the
cases with a key ×40, scores up to ~750 [2.7e-6]; row_max within 1e-6·max(1, max|s|) [3.3e-7];
the row sums l, taken back to the float64 max, within 1e-5 + 4e-7·max|s| relative [8.4e-5 at
max|s| = 256: float32 s itself is off by ~|s|·2⁻²⁴ there, and exp(s − m) by as much relative].

Whether the tile path ran is visible: it never writes flash_rows' scores scratch (BLAS leaves S
and P there), so a scratch filled with NaN stays NaN.
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
# tile_block has AVX-512 and AVX2+FMA register tiles: with the scalar loops only (width=1, or a CPU
# without AVX2) flash_rows declines it and the BLAS step computes every block. These tests check
# whichever path this CPU runs, against float64, and that the tile runs exactly where it can; on an
# AVX-512 CPU the AVX2 tiles are tested too (width=8).
TILES = _fused is not None and _fused.vector_width() >= 8
WIDTHS = [16, 8] if _fused is not None and _fused.vector_width() >= 16 else [8]


def flash(q, k, v, blocks, masks, tile, row_max=True, width=16):
    """flash_rows from a zero state with tile= and width= passed to the call; returns acc, ref, l,
    alpha, row_max (or None) and the scratch (NaN where never written)."""
    assert _fused is not None and blas.sgemm_ready()
    rows, dv = q.shape[0], v.shape[1]
    acc = np.zeros((rows, dv), np.float32)
    ref, l, alpha = (np.zeros(rows, np.float32) for _ in range(3))
    top = np.full(rows, -np.inf, np.float32) if row_max else None
    scratch = np.full((rows + 1, max(j1 - j0 for j0, j1, *_ in blocks) + 3), np.nan, np.float32)
    _fused.flash_rows(q, k, v, acc, ref, l, alpha, top, scratch, np.array(blocks, np.int64), masks, HEADROOM,
                      tile=tile, width=width)
    return acc, ref, l, alpha, top, scratch


def normalised(acc, l):
    return np.where(l[:, None] > 0, acc / np.where(l > 0, l, 1)[:, None], 0)


def problem(rows, cols, dk, dv, seed, big=True):
    """Four key blocks: a mask (row 3 sees nothing there), a plain block (with big: a key ×40 that
    moves references up), a causal limit (the first rows see nothing), and a shorter block with a
    mask and a limit. Row 4's scores in block 0 lie far below 0 (its reference moves down)."""
    rng = np.random.default_rng(seed)
    tail = max(1, cols // 2 + 1)
    tk = 3 * cols + tail
    q = (rng.standard_normal((rows, dk)) / np.sqrt(dk)).astype(np.float32) * 3
    k = rng.standard_normal((tk, dk)).astype(np.float32)
    v = rng.standard_normal((tk, dv)).astype(np.float32)
    k[:cols, 0] += 6                                        # block 0: s = −8·k[:, 0] < −16 for row 4
    if rows > 4:
        q[4] = 0
        q[4, 0] = -8
    if big:
        k[cols + min(2, cols - 1)] *= 40
    blocks = [(0, cols, 0, 0, 0), (cols, 2 * cols, 0, 0, 0), (2 * cols, 3 * cols, 1, 2 - rows // 2, 0),
              (3 * cols, tk, 1, tail // 2 + 1, 0)]
    masks = [rng.random((rows, cols)) < 0.4, None, None, rng.random((rows, tail)) < 0.5]
    if rows > 3:
        masks[0][3] = True
    return q, k, v, blocks, masks


CASES = [(256, 512, 64, 64), (255, 512, 64, 64), (1, 1, 64, 64), (7, 17, 64, 64), (1, 512, 64, 64),
         (3, 1, 64, 64), (3, 512, 64, 64), (16, 512, 64, 64), (17, 33, 64, 64), (255, 17, 64, 64),
         (33, 100, 128, 128), (40, 100, 13, 32), (9, 40, 64, 48), (64, 8, 64, 16)]


@pytest.mark.parametrize("rows, cols, dk, dv", CASES)
@pytest.mark.parametrize("row_max", [True, False], ids=["row_max", "no_row_max"])
@pytest.mark.parametrize("big", [True, False], ids=["big_key", "moderate"])
@pytest.mark.parametrize("width", WIDTHS)
def test_tile_matches_float64_and_blas(rows, cols, dk, dv, row_max, big, width):
    q, k, v, blocks, masks = problem(rows, cols, dk, dv, seed=rows * 1000 + cols + dk, big=big)
    expected, top, total, smax = flash_reference(q, k, v, blocks, masks)
    tol = (1e-5 if big else 3e-6) * np.abs(v).max()
    tile = flash(q, k, v, blocks, masks, True, row_max, width=width)
    blas = flash(q, k, v, blocks, masks, False, row_max, width=width)
    # 1 or 2 rows: declined (BLAS's matrix-vector product is faster); otherwise the tile takes every block
    assert np.isnan(tile[5]).all() == (rows >= 3 and TILES), "tile_block took or declined the wrong blocks"
    assert not np.isnan(blas[5]).all()
    for acc, ref, l, alpha, got_max, _ in (tile, blas):
        assert np.isfinite(acc).all() and np.isfinite(ref).all() and np.isfinite(l).all()
        np.testing.assert_allclose(normalised(acc, l), expected, rtol=0, atol=tol)
        seen = np.isfinite(top)
        assert np.array_equal(l > 0, seen)
        assert np.all(acc[~seen] == 0) and np.all(ref[~seen] == 0)   # nothing allowed: untouched
        np.testing.assert_allclose(l[seen] * np.exp(ref[seen].astype(np.float64) - top[seen]), total[seen],
                                   rtol=1e-5 + 4e-7 * smax)
        assert np.all(top[seen] - ref[seen] <= HEADROOM + 1e-3 * max(1, smax))
        if row_max:
            np.testing.assert_allclose(got_max, top, rtol=0, atol=1e-6 * max(1, smax))
        else:
            assert got_max is None
    # the same reference moves as softmax_block (S differs only by rounding)
    np.testing.assert_allclose(tile[1], blas[1], rtol=0, atol=1e-6 * max(1, smax))


def test_rows_far_below_and_far_above_move_references():
    """Row 4 (scores ≈ −48 in block 0, nothing summed yet) moves its reference down; rows whose
    scores reach ~100 move theirs up; the float64 softmax agrees."""
    q, k, v, blocks, masks = problem(40, 64, 64, 64, seed=5)
    tile = flash(q, k, v, blocks[:1], masks[:1], True)
    acc, ref, l, _, got_max, scratch = tile
    assert np.isnan(scratch).all() == TILES
    assert ref[4] < -16 and ref[4] == got_max[4]
    q[5] *= 40                                              # row 5: scores ~ ±100 in block 0
    acc, ref, l, alpha, got_max, _ = flash(q, k, v, blocks[:1], masks[:1], True)
    assert ref[5] > 16 and ref[5] == got_max[5]
    expected, top, total, smax = flash_reference(q, k, v, blocks[:1], masks[:1])
    np.testing.assert_allclose(normalised(acc, l), expected, rtol=0, atol=1e-5 * np.abs(v).max())


@pytest.mark.parametrize("jump", [30.0, 60.0, 100.0])
@pytest.mark.parametrize("masked", [False, True], ids=["dense", "masked"])
def test_reference_moves_by_rescaling_or_recomputing(jump, masked):
    """A row's score jumps to `jump` in block 0 (nothing summed yet) and another's in block 1 (acc
    already holds block 0): moves by ≤ 64 rescale P, larger ones take P again from S. Other rows
    stay below the headroom. ref ends at the row max, out matches float64."""
    rng = np.random.default_rng(int(jump))
    rows, cols, dk, dv = 40, 96, 64, 64
    q = (rng.standard_normal((rows, dk)) / np.sqrt(dk)).astype(np.float32)
    k = rng.standard_normal((2 * cols, dk)).astype(np.float32)
    v = rng.standard_normal((2 * cols, dv)).astype(np.float32)
    k[7] = q[2] * np.float32(jump / np.dot(q[2], q[2]))             # s[2, 7] = jump, block 0
    k[cols + 9] = q[33] * np.float32(jump / np.dot(q[33], q[33]))   # s[33, cols + 9] = jump, block 1
    blocks = [(0, cols, 0, 0, 0), (cols, 2 * cols, 0, 0, 0)]
    masks = [rng.random((rows, cols)) < 0.3, rng.random((rows, cols)) < 0.3] if masked else None
    if masked:
        masks[0][2, 7] = masks[1][33, 9] = False
    acc, ref, l, alpha, got_max, scratch = flash(q, k, v, blocks, masks, True)
    assert np.isnan(scratch).all() == TILES
    expected, top, total, smax = flash_reference(q, k, v, blocks, masks)
    np.testing.assert_allclose(normalised(acc, l), expected, rtol=0, atol=3e-6 * np.abs(v).max())
    np.testing.assert_allclose(ref[[2, 33]], jump, rtol=1e-5)
    assert ref[2] == got_max[2] and ref[33] == got_max[33]
    assert alpha[33] < np.exp(16 - jump) * 1.01 and alpha[2] == 1    # block 1 moved row 33 only
    calm = top < HEADROOM - 1e-3                                     # (the big keys raise other rows too)
    assert calm.sum() > rows // 2 and np.all(ref[calm] == 0)
    assert np.all((top - ref)[~calm] <= HEADROOM + 1e-4 * jump)
    np.testing.assert_allclose(l * np.exp(ref.astype(np.float64) - top), total, rtol=1e-5 + 4e-7 * smax)


@pytest.mark.parametrize("dk, dv, width", [(64, 20, 16), (130, 64, 16), (64, 144, 16), (64, 20, 8), (64, 64, 1)])
def test_declined_shapes_take_blas_bit_for_bit(dk, dv, width):
    """dv not a multiple of 16 or above 128, dk above 128, only the scalar loops: BLAS computes the block."""
    q, k, v, blocks, masks = problem(20, 48, dk, dv, seed=3)
    on = flash(q, k, v, blocks, masks, True, width=width)
    off = flash(q, k, v, blocks, masks, False, width=width)
    assert not np.isnan(on[5]).all()
    for a, b in zip(on, off):
        np.testing.assert_array_equal(a, b)


def softmax64(q, k, v, allowed, scale):
    s = np.where(allowed, np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64)) * scale, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhqk,bhkd->bhqd", w / w.sum(-1, keepdims=True), v.astype(np.float64))


@pytest.mark.parametrize("causal", [False, True])
def test_blocked_attention_float32_against_float64(causal):
    rng = np.random.default_rng(11)
    b, h, t, d = 1, 2, 700, 64
    q, k, v = (rng.standard_normal((b, h, t, d)).astype(np.float32) for _ in range(3))
    mask = rng.random((t, t)) < 0.9
    mask[:, 0] = True
    allowed = mask & (np.tril(np.ones((t, t), bool)) if causal else True)
    out = execute.blocked_attention(q, k, v, mask=mask, causal=causal)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, softmax64(q, k, v, allowed, 1 / np.sqrt(d)), rtol=0, atol=2e-6)


@pytest.mark.parametrize("rows", [40, 256])
def test_band_blocks(rows):
    """Blocks with a band's start (flags & 2: row i keeps keys c >= start + i), alone and with a
    causal limit and a mask, as flash_many hands them over for sliding windows: float64's answer
    and the BLAS step's references, whichever step flash_rows gives them to."""
    rng = np.random.default_rng(rows)
    cols, dk, dv = 512, 64, 64
    q = (rng.standard_normal((rows, dk)) / np.sqrt(dk)).astype(np.float32) * 3
    k, v = rng.standard_normal((4 * cols, dk)).astype(np.float32), rng.standard_normal((4 * cols, dv)).astype(np.float32)
    blocks = [(0, cols, 2, 0, -rows // 2), (cols, 2 * cols, 3, cols - rows + 40, 100 - rows),
              (2 * cols, 3 * cols, 2, 0, cols - 20), (3 * cols, 4 * cols, 3, 60, 5)]
    masks = [None, rng.random((rows, cols)) < 0.3, None, None]
    expected, top, total, smax = flash_reference(q, k, v, blocks, masks)
    tile, blas = flash(q, k, v, blocks, masks, True), flash(q, k, v, blocks, masks, False)
    for acc, ref, l, alpha, got_max, _ in (tile, blas):
        np.testing.assert_allclose(normalised(acc, l), expected, rtol=0, atol=3e-6 * np.abs(v).max())
        np.testing.assert_allclose(got_max, top, rtol=0, atol=1e-6 * max(1, smax))
        seen = np.isfinite(top)
        assert np.array_equal(l > 0, seen) and np.all(acc[~seen] == 0)
    np.testing.assert_allclose(tile[1], blas[1], rtol=0, atol=1e-6 * max(1, smax))


def test_non_finite_inputs_give_the_same_non_finite_pattern_as_blas():
    """NaN or ±inf in q or k (flash_rows' callers send finite values, but flash_rows is public):
    the NaN / inf entries of acc, ref, l, alpha and row_max are where the BLAS step has them."""
    q, k, v, blocks, masks = problem(40, 64, 64, 64, seed=1, big=False)
    q[5, 3] = np.nan                                        # row 5: every score NaN
    k[70, 2] = np.inf                                       # key 70 (block 1): ±inf scores
    q[7] = 0
    q[7, 0] = np.inf                                        # row 7: ±inf and NaN scores
    tile, blas = flash(q, k, v, blocks, masks, True), flash(q, k, v, blocks, masks, False)
    assert np.isnan(tile[5]).all() == TILES
    assert np.isnan(tile[0]).any() and not np.isfinite(tile[1]).all()
    for got, want in zip(tile[:5], blas[:5]):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
        np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))


def test_strided_inputs_and_outputs():
    """q, k, v rows with strides (views into bigger arrays), acc the rows of a wider output: the
    same as contiguous copies, bit for bit."""
    rng = np.random.default_rng(9)
    rows, tk, dk, dv = 45, 300, 64, 32
    big_q = rng.standard_normal((rows, 80)).astype(np.float32) / 8
    big_k, big_v = rng.standard_normal((2 * tk, 70)).astype(np.float32), rng.standard_normal((2 * tk, 40)).astype(np.float32)
    q, k, v = big_q[:, 3:3 + dk], big_k[::2, 1:1 + dk], big_v[::2, 5:5 + dv]
    blocks = np.array([(0, 128, 0, 0, 0), (128, 256, 1, 100, 0), (256, tk, 0, 0, 0)], np.int64)
    outs = []
    for qq, kk, vv in ((q, k, v), (q.copy(), k.copy(), v.copy())):
        wide = np.zeros((rows, dv + 16), np.float32)
        acc = wide[:, 8:8 + dv]
        ref, l, alpha = (np.zeros(rows, np.float32) for _ in range(3))
        scratch = np.full((rows, 128), np.nan, np.float32)
        assert blas.sgemm_ready()
        _fused.flash_rows(qq, kk, vv, acc, ref, l, alpha, None, scratch, blocks, None, HEADROOM)
        assert np.isnan(scratch).all() == TILES and not wide[:, :8].any() and not wide[:, 8 + dv:].any()
        outs.append((acc.copy(), ref, l))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


def test_blocked_attention_threads_against_float64():
    """Two worker threads (each with its own per-thread buffers) give the float64 answer."""
    rng = np.random.default_rng(12)
    q, k, v = (rng.standard_normal((2, 3, 600, 64)).astype(np.float32) for _ in range(3))
    allowed = np.ones((600, 600), bool)
    out = execute.blocked_attention(q, k, v, num_threads=2)
    np.testing.assert_allclose(out, softmax64(q, k, v, allowed, 1 / 8), rtol=0, atol=2e-6)


def test_the_route_plans_the_per_block_choice():
    """The route's plan carries the C per-block choice (Route.tile, Route.width: the hardware's
    best), and a call can replace it by argument: every flash_many / flash_rows call of the route
    gets it, tiles or the BLAS step giving the same result to rounding (against float64)."""
    from qkv.kernels.call import check_call
    from qkv.kernels.route import FLASH_MANY, choose_route

    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal((2, 200, 32)).astype(np.float32) for _ in range(3))
    planned = choose_route(check_call(q, k, v, causal=True), route=FLASH_MANY)
    assert planned.tile is True and planned.width == _fused.vector_width()
    s = np.einsum("hqd,hkd->hqk", q.astype(np.float64), k.astype(np.float64)) / np.sqrt(32)
    s = np.where(np.tri(200, dtype=bool), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)
    for route in ("flash_many", "flash_rows"):
        for tile in (True, False):
            for width in (16, 8, 1):
                got = execute.kernel_attention(q, k, v, causal=True, route=route, block_q=64, block_k=64, tile=tile,
                                         width=width)
                np.testing.assert_allclose(got, want, rtol=0, atol=3e-6 * np.abs(v).max())


@pytest.mark.parametrize("route", ["flash_many", "flash_rows"])
def test_causal_calls_on_the_c_walks_build_no_causal_band(route, monkeypatch):
    """The 0/−inf band (_causal_band, ~1 MiB at block_q = 256) is for the Python walks that add it;
    the C walks mask the diagonal themselves, so a causal call there never builds it (it took
    0.2–0.5 ms of every causal call); the result is still float64's."""
    assert native.fused is not None and blas.sgemm_ready()

    def refuse(*args):
        raise AssertionError("the causal band was built on a C walk")

    monkeypatch.setattr(blocked, "_causal_band", refuse)
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 2, 300, 32)).astype(np.float32) for _ in range(3))
    out = execute.kernel_attention(q, k, v, causal=True, route=route)
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64)) / np.sqrt(32)
    s = np.where(np.tril(np.ones((300, 300), bool)), s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    expected = np.einsum("bhqk,bhkd->bhqd", w / w.sum(-1, keepdims=True), v.astype(np.float64))
    np.testing.assert_allclose(out, expected, rtol=0, atol=2e-6)


@pytest.mark.parametrize("seed", range(30))
def test_random_shapes_and_block_kinds_match_float64(seed):
    """Random rows (3-299: every group shape), keys, Dk (1-128), Dv (16-128), and key blocks that are
    plain, causal-limited, band-started, both, with or without a mask array: the tile (at the
    widest loops here) and the BLAS step both give float64's answer, and the tile takes every block."""
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(3, 300)), int(rng.integers(1, 513))
    dk, dv, n_blocks = int(rng.integers(1, 129)), 16 * int(rng.integers(1, 9)), int(rng.integers(1, 4))
    q = (rng.standard_normal((rows, dk)) * rng.uniform(0.1, 4) / np.sqrt(dk)).astype(np.float32)
    k = rng.standard_normal((cols * n_blocks, dk)).astype(np.float32)
    v = rng.standard_normal((cols * n_blocks, dv)).astype(np.float32)
    blocks, masks = [], []
    for b in range(n_blocks):
        flags = int(rng.integers(0, 4))
        limit = int(rng.integers(-rows, cols + rows)) if flags & 1 else 0
        start = int(rng.integers(-rows, cols)) if flags & 2 else 0
        blocks.append((b * cols, (b + 1) * cols, flags, limit, start))
        masks.append(rng.random((rows, cols)) < 0.3 if rng.random() < 0.3 else None)
    masks = None if all(m is None for m in masks) else masks
    expected, top, total, smax = flash_reference(q, k, v, blocks, masks)
    tile, blas = flash(q, k, v, blocks, masks, True), flash(q, k, v, blocks, masks, False)
    assert np.isnan(tile[5]).all() == TILES
    for acc, ref, l, *_ in (tile, blas):
        np.testing.assert_allclose(normalised(acc, l), expected, rtol=0, atol=3e-6 * np.abs(v).max())
        assert np.array_equal(l > 0, np.isfinite(top))
