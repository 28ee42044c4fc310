"""The C extension's buffer checks read an array's item format one way (`_fused.c`: item_format, is_float32,
is_16bit, is_int64), and the three max |x| entry points share one pass of each kind (absmax, absmax_bits16,
absmax_at).

Expected values: max |x| computed in float64 by NumPy on the same numbers; the refusals are the checks' own
words. A byte-order prefix of this machine's order ('<', '=') is the same format as none; the other order
('>') is not (its bytes would be read wrong) and is refused.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from qkv.kernels import native

_fused = native.fused
pytestmark = pytest.mark.skipif(_fused is None, reason="the C extension did not build")

NATIVE, FOREIGN = ("<", ">") if sys.byteorder == "little" else (">", "<")


def _values(n=1001, seed=3):
    x = np.random.default_rng(seed).standard_normal(n) * 7
    x[n // 2] = -40.5                                    # the largest magnitude, negative, in the vector part
    return x


@pytest.mark.parametrize("width", [1, 8, 16])
def test_absmax_and_absmax_at_agree_with_float64(width):
    """float32: absmax over the buffer and absmax_at at its address give max |x| exactly (a float32 value
    is its own float64), also with the format written with this machine's byte order."""
    x = _values().astype(np.float32)
    want = float(np.abs(x.astype(np.float64)).max())
    for dtype in ("f4", NATIVE + "f4", "=f4"):
        y = x.astype(dtype)
        assert _fused.absmax(y, width=width) == want
        assert _fused.absmax_at(y.ctypes.data, y.size, 4, width=width) == want


@pytest.mark.parametrize("width", [1, 8, 16])
def test_absmax_bits16_and_absmax_at_agree_with_float64(width):
    """float16 (and the same bytes as int16, uint16): the largest pattern without its sign bit is max |x|'s,
    from the buffer and at the address alike."""
    x = _values().astype(np.float16)
    want = float(np.abs(x.astype(np.float64)).max())
    for view in (x, x.view(np.int16), x.view(np.uint16), x.astype(NATIVE + "f2")):
        top = _fused.absmax_bits16(view, width=width)
        assert np.array([top], np.uint16).view(np.float16)[0] == want
        assert _fused.absmax_at(view.ctypes.data, view.size, 2, width=width) == top


def test_every_absmax_refuses_what_it_cannot_read():
    """The other byte order, another item size or kind, and a strided buffer are refused, each naming
    what x must be; absmax_at refuses an item size other than 2 or 4 and a null address."""
    x = _values(64)
    for bad in (x.astype(FOREIGN + "f4"), x, x.astype(np.int32), x.astype(np.float32)[::2]):
        with pytest.raises(ValueError, match="C-contiguous float32|not C-contiguous"):
            _fused.absmax(bad)
    for bad in (x.astype(FOREIGN + "f2"), x.astype(np.float32), x.astype(np.int8), x.astype(np.float16)[::2]):
        with pytest.raises(ValueError, match="2-byte items|not C-contiguous"):
            _fused.absmax_bits16(bad)
    good = x.astype(np.float32)
    for address, count, itemsize in ((good.ctypes.data, good.size, 8), (0, 4, 4), (good.ctypes.data, -1, 4)):
        with pytest.raises(ValueError, match="itemsize 2 or 4"):
            _fused.absmax_at(address, count, itemsize)
    assert _fused.absmax_at(0, 0, 4) == 0.0 and _fused.absmax_at(0, 0, 2) == 0


def test_the_kernels_other_float32_checks_read_the_prefix_alike():
    """gelu's x and its bias (two of the other checks on the same reading): the same values with this
    machine's byte order written out give the same bits as without it; the other byte order is refused
    naming the argument."""
    x, bias = _values(24).reshape(4, 6).astype(np.float32), _values(6, seed=4).astype(np.float32)
    plain = x.copy()
    _fused.gelu(plain, bias)
    for dtype in (NATIVE + "f4", "=f4"):
        y = x.astype(dtype)
        _fused.gelu(y, bias.astype(dtype))
        np.testing.assert_array_equal(y, plain)
    with pytest.raises(ValueError, match="x must be a writable C-contiguous float32"):
        _fused.gelu(x.astype(FOREIGN + "f4"), bias)
    with pytest.raises(ValueError, match="bias must be a writable 1-D float32"):
        _fused.gelu(x.copy(), bias.astype(FOREIGN + "f4"))
