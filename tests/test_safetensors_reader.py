"""qkv._safetensors, the one safetensors reader, against the safetensors library it stands in for: its module
docstring says the header is checked "as safetensors 0.8 checks it". Each file below (a good one, and headers
broken one way each: offsets with a gap or an overlap, a file not covered, a shape that does not fit its bytes,
a dtype or a field of the wrong kind, metadata that is no map of strings, lengths past the file) is read by
both; the expected outcome is the library's: refused by both, or accepted by both with the same arrays."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

from qkv._safetensors import SafetensorsFile, read_all  # noqa: E402
from qkv.errors import InputError  # noqa: E402


def _file(header, data: bytes = b"", *, length: int | None = None) -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return (len(raw) if length is None else length).to_bytes(8, "little") + raw + data


F32 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
TWO = np.arange(4, dtype="<f4").tobytes()           # 16 bytes: two tensors of two float32 each

CASES = {
    "good": _file({"a": F32, "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}, TWO),
    "good with metadata": _file({"__metadata__": {"format": "pt"}, "a": F32}, TWO[:8]),
    "good, empty tensor": _file({"a": F32, "e": {"dtype": "F32", "shape": [0, 3], "data_offsets": [8, 8]}}, TWO[:8]),
    "good, bfloat16 and int64": _file({"h": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
                                       "i": {"dtype": "I64", "shape": [1], "data_offsets": [4, 12]}}, bytes(range(12))),
    "gap between tensors": _file({"a": F32, "b": {"dtype": "F32", "shape": [1], "data_offsets": [12, 16]}}, TWO),
    "overlapping tensors": _file({"a": F32, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, TWO[:12]),
    "data past the last tensor": _file({"a": F32}, TWO),
    "data short of the last tensor": _file({"a": F32}, TWO[:4]),
    "shape larger than its bytes": _file({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, TWO[:8]),
    "shape smaller than its bytes": _file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 8]}}, TWO[:8]),
    "offsets backwards": _file({"a": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}}, TWO[:8]),
    "unknown dtype": _file({"a": {"dtype": "F31", "shape": [2], "data_offsets": [0, 8]}}, TWO[:8]),
    "shape of strings": _file({"a": {"dtype": "F32", "shape": ["2"], "data_offsets": [0, 8]}}, TWO[:8]),
    "negative dimension": _file({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, TWO[:8]),
    "one offset": _file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8]}}, TWO[:8]),
    "tensor not an object": _file({"a": [1, 2]}, TWO[:8]),
    "metadata of numbers": _file({"__metadata__": {"n": 1}, "a": F32}, TWO[:8]),
    "header a list": _file([1, 2], b""),
    "header not JSON": _file(b"{nope", b""),
    "header not UTF-8": _file(b'{"\xff": 1}', b""),
    "length past the file": _file({"a": F32}, TWO[:8], length=10_000),
    "eight bytes only": (100).to_bytes(8, "little"),
    "shorter than eight bytes": b"\x01\x02",
}


def _library(path):
    try:
        return safetensors_torch.load_file(str(path))
    except Exception as error:   # noqa: BLE001 — the library's refusal, whatever its class
        return error


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_reader_accepts_and_refuses_what_the_library_does(tmp_path, name):
    path = tmp_path / "x.safetensors"
    path.write_bytes(CASES[name])
    theirs = _library(path)
    if isinstance(theirs, Exception):
        with pytest.raises(InputError) as caught:
            read_all(path)
        assert "\n" not in str(caught.value) and "x.safetensors" in str(caught.value), str(caught.value)
        assert not name.startswith("good"), theirs         # the cases are what their names say
        return
    assert name.startswith("good"), name
    ours = read_all(path)
    assert sorted(ours) == sorted(theirs)
    for key, value in theirs.items():                   # bfloat16: ours widened to float32 exactly, as torch's
        want = value.float().numpy() if value.dtype == torch.bfloat16 else value.numpy()
        assert ours[key].shape == want.shape and ours[key].dtype == want.dtype, key
        np.testing.assert_array_equal(ours[key], want)
    with SafetensorsFile(path) as opened:
        assert sorted(opened.names()) == sorted(theirs)
        assert all(opened.shape(key) == tuple(value.shape) for key, value in theirs.items())
