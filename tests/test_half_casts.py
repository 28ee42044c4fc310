"""Half-precision bits in C: `_fused.absmax_bits16` (max |x| of bfloat16/float16 from their bits) and
`_fused.convert16` (float32 <-> bfloat16/float16 casts in one thread), and `kernels.autograd.cast`, which
the C training route (TORCH_FLASH) casts its inputs and outputs with instead of torch's .to() (whose OpenMP
team cost 6-27 ms of CPU per cast on busy cores: docs/benchmarks.md).

References: torch's own .to() (every 16-bit pattern, sampled float32 patterns and the rounding edges),
NumPy's float64 abs max, and the route's float32 computation cast by torch."""

from __future__ import annotations

import numpy as np
import pytest

from qkv.kernels import autograd, magnitude, native

torch = pytest.importorskip("torch")
_fused = native.fused
needs_fused = pytest.mark.skipif(_fused is None, reason="qkv.kernels._fused is not built")
HALVES = [pytest.param(torch.bfloat16, id="bfloat16"), pytest.param(torch.float16, id="float16")]
ALL_BITS = np.arange(1 << 16, dtype=np.uint16)


def _loops(dtype):
    # float16 needs F16C (the AVX2 loops); bfloat16 also runs the scalar loop
    return (1, 8, 16) if dtype == torch.bfloat16 else (8, 16)


def _same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Element-wise: the same value, NaN where the reference has NaN (payloads may differ)."""
    return (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))


@needs_fused
@pytest.mark.parametrize("dtype", HALVES)
def test_convert16_widens_every_pattern_as_torch(dtype):
    want = torch.from_numpy(ALL_BITS.view(np.int16)).view(dtype).to(torch.float32).numpy()
    for width in _loops(dtype):
        got = np.full(ALL_BITS.size, 7.0, np.float32)
        _fused.convert16(ALL_BITS, got, dtype == torch.bfloat16, width=width)
        assert _same(got, want).all(), (width, np.flatnonzero(~_same(got, want))[:5])


@needs_fused
@pytest.mark.parametrize("dtype", HALVES)
def test_convert16_narrows_as_torch_rounds(dtype):
    """Round to nearest even at the halfway points, overflow to inf, subnormals, -0, NaN."""
    rng = np.random.default_rng(3)
    edges = np.array([0x7F7FFFFF, 0xFF7FFFFF, 0x477FEFFF, 0x477FF000, 0x477FF001, 0x33000000, 0x33000001, 0x337FFFFF,
                      0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x80000000, 0x00000001, 0x3F808000,
                      0x3F818000, 0x3F808001, 0x3F80FFFF, 0x7F7F8000, 0x00400000], np.uint32)
    bits = np.concatenate([rng.integers(0, 1 << 32, 300_000, dtype=np.uint64).astype(np.uint32), edges])
    x = bits.view(np.float32)
    want = torch.from_numpy(x).to(dtype).float().numpy()
    for width in _loops(dtype):
        out = np.empty(x.size, np.uint16)
        _fused.convert16(x, out, dtype == torch.bfloat16, width=width)
        got = torch.from_numpy(out.view(np.int16)).view(dtype).float().numpy()
        assert _same(got, want).all(), (width, bits[~_same(got, want)][:5])


@needs_fused
def test_convert16_names_what_it_does_not_take():
    with pytest.raises(ValueError, match="of as many items"):
        _fused.convert16(np.zeros(3, np.float32), np.zeros(4, np.uint16), True)
    with pytest.raises(ValueError, match="float32 and 2-byte"):
        _fused.convert16(np.zeros(3, np.float64), np.zeros(3, np.uint16), True)
    with pytest.raises(ValueError, match="float32 and 2-byte"):
        _fused.convert16(np.zeros(3, np.float32), np.zeros(3, np.float32), True)
    with pytest.raises(ValueError, match="F16C"):
        _fused.convert16(np.zeros(3, np.float32), np.zeros(3, np.uint16), False, width=1)
    with pytest.raises(ValueError, match="not C-contiguous"):   # (NumPy's words)
        _fused.convert16(np.zeros(6, np.float32)[::2], np.zeros(3, np.uint16), True)


@needs_fused
@pytest.mark.parametrize("dtype", HALVES)
def test_absmax_bits16_is_max_abs(dtype):
    every = torch.from_numpy(ALL_BITS.view(np.int16)).view(dtype)
    finite = every[torch.isfinite(every)]
    rng = np.random.default_rng(5)
    cases = {"every pattern": every, "finite": finite, "negatives": -finite.abs(),
             "shuffled finite": finite[torch.from_numpy(rng.permutation(finite.numel()))],
             "zeros and -0": torch.tensor([0.0, -0.0, -0.0], dtype=dtype), "one": torch.tensor([-3.5], dtype=dtype),
             "inf": torch.tensor([1.0, -float("inf"), 2.0] * 11, dtype=dtype), "empty": torch.zeros(0, dtype=dtype)}
    for name, x in cases.items():
        values = x.double().numpy()
        want = 0.0 if values.size == 0 else np.nan if np.isnan(values).any() else np.abs(values).max()
        for width in (1, 8, 16):
            top = _fused.absmax_bits16(x.contiguous().view(torch.int16).numpy(), width=width)
            got = torch.tensor([top], dtype=torch.int16).view(dtype).double().item()
            assert (np.isnan(got) and np.isnan(want)) or got == want, (name, width, got, want)
        (got,) = magnitude.value_tops(x)
        assert (np.isnan(got) and np.isnan(want)) or got == want, (name, got, want)
    with pytest.raises(ValueError, match="2-byte items"):
        _fused.absmax_bits16(np.zeros(4, np.float32))


@needs_fused
@pytest.mark.parametrize("dtype", HALVES)
def test_cast_is_to_without_torch_threads(dtype):
    """autograd.cast gives .to()'s values and gradients, and for contiguous CPU tensors runs no aten::copy_
    (torch's cast, whose OpenMP team is what it avoids); a strided tensor takes .to() and is still right."""
    g = torch.Generator().manual_seed(1)
    x32 = torch.randn(2, 3, 70, 33, generator=g) * 300
    x = x32.to(dtype)
    for source, target in ((x, torch.float32), (x32, dtype)):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            got = autograd.cast(source, target)
        ops = {event.key for event in prof.key_averages()}
        assert not ops & {"aten::copy_", "aten::_to_copy"}, ops
        assert got.dtype == target and got.shape == source.shape
        assert torch.equal(got, source.to(target))
    strided = x[:, :, ::2]
    assert torch.equal(autograd.cast(strided, torch.float32), strided.to(torch.float32))
    assert autograd.cast(x, dtype) is x
    # gradients: through cast as through .to()
    for source, target in ((x, torch.float32), (x32, dtype)):
        a, b = source.clone().requires_grad_(), source.clone().requires_grad_()
        weight = torch.randn(source.shape, generator=g).to(target)
        (autograd.cast(a, target) * weight).float().sum().backward()
        (b.to(target) * weight).float().sum().backward()
        assert a.grad.dtype == source.dtype and torch.equal(a.grad, b.grad)


@needs_fused
@pytest.mark.parametrize("dtype", HALVES)
def test_the_c_route_on_half_tensors_casts_in_c(dtype):
    """TORCH_FLASH on bfloat16/float16 (T = 128: above the 32,768 values from which torch's .to() starts an
    OpenMP team) computes the float32 route on the inputs cast exactly and rounds the result once: its output
    and gradients equal the float32 route's on q, k, v cast by torch, cast back by torch, and no aten::copy_
    runs (the old code cast with .to(): four aten::_to_copy per call)."""
    from qkv.attention import _attention

    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, 8, 128, 64, generator=g).to(dtype) for _ in range(3))
    with torch.no_grad(), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = _attention(q, k, v, causal=True, route="torch_flash")
    ops = {event.key for event in prof.key_averages()}
    assert not ops & {"aten::copy_", "aten::_to_copy"}, ops
    wide = [x.to(torch.float32).requires_grad_() for x in (q, k, v)]
    want = _attention(*wide, causal=True, route="torch_flash")
    assert out.dtype == dtype and torch.equal(out, want.to(dtype))
    # gradients: the float32 route's, cast by torch
    half = [x.clone().requires_grad_() for x in (q, k, v)]
    weight = torch.randn(out.shape, generator=g)
    (_attention(*half, causal=True, route="torch_flash").float() * weight).sum().backward()
    (want.to(dtype).float() * weight).sum().backward()
    for got, ref in zip(half, wide):
        assert got.grad.dtype == dtype and torch.equal(got.grad, ref.grad.to(dtype))
