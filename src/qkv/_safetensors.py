"""Reading a safetensors file through one open descriptor, into private memory: the one safetensors reader.

Every safetensors file qkv reads (a model's weights and shards, an example's array file) is opened once
(`qkv._io.open_input`: a regular file, checked on the open descriptor), its header read and checked as the
safetensors library checks it, and each tensor read from that descriptor into memory of its own
(``os.preadv`` into a fresh array). Nothing is memory-mapped and the file is never opened by name again:

- a file rewritten in place after loading cannot change a loaded model's numbers (a memory map shows the
  file's new bytes), and a file made shorter cannot kill the process with SIGBUS (a read returns fewer bytes,
  refused in one line: "changed while it was being read");
- a file swapped for a named pipe after the check is refused by its kind, never waited on.

The header is checked as safetensors 0.8 checks it (`SafeTensors::read_metadata`), and a refusal carries a
``safetensors.SafetensorError`` with that library's words, so `qkv.errors` words it in every language as
before: too small, too large, an invalid length, not UTF-8, not JSON (Python's JSON reader's words inside
the library's), an unknown dtype, a tensor whose offsets do not follow the previous one's, a shape that does
not fit its bytes, an overflow, and data that does not cover the file exactly ("incomplete metadata").
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .errors import InputError

__all__ = ["SafetensorsFile", "DTYPE_BITS", "MAX_HEADER", "read_all"]

MAX_HEADER = 100_000_000            # safetensors' own bound on the header's length
# safetensors' dtypes → bits per element (the order and names of safetensors 0.8's `Dtype`)
DTYPE_BITS = {"BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8,
              "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
              "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64}
# the dtypes NumPy reads as they are stored (bfloat16 as its raw 16 bits; the callers widen it)
NUMPY = {"BOOL": "?", "U8": "u1", "I8": "i1", "I16": "<i2", "U16": "<u2", "F16": "<f2", "BF16": "<u2",
         "I32": "<i4", "U32": "<u4", "F32": "<f4", "C64": "<c8", "F64": "<f8", "I64": "<i8", "U64": "<u8"}
_LIMIT = 1 << 62                    # any regular file: the weights have no size bound of their own


def _library_error(words: str) -> Exception:
    """The safetensors library's own exception with its own words (so `qkv.errors` words it by class)."""
    from safetensors import SafetensorError

    return SafetensorError("Error while deserializing header: " + words)


class SafetensorsFile:
    """One safetensors file, open for reading until `close` (also a context manager).

    ``handle``: the file already opened by `qkv._io.open_input` (then closed with this object).
    ``names()``, ``dtype(name)``, ``shape(name)`` come from the checked header; ``read(name)`` is the tensor's
    bytes as a fresh, writable NumPy array of the stored dtype (``np.dtype(NUMPY[dtype])``), read from the
    descriptor opened at the start. Every problem is one `InputError` naming the file (``source``).
    """

    def __init__(self, path: str | os.PathLike, *, source: str | None = None, field: str | None = None,
                 shown: str | None = None, what: str = "file", handle: BinaryIO | None = None):
        from ._io import open_input

        self.path = Path(path)
        self.source = source or str(path)
        self._field = field
        self._handle = handle if handle is not None else open_input(path, limit=_LIMIT, source=source, field=field,
                                                                    what=what, shown=shown)
        try:
            self._size = os.fstat(self._handle.fileno()).st_size
            self._start, self._header, self.metadata = self._read_header()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ the header
    def _refuse(self, words: str) -> InputError:
        return InputError.keyed("error.safetensors.unreadable", source=self.source, field=self._field,
                                reason=_library_error(words))

    def _read_header(self) -> tuple[int, dict[str, dict], dict[str, str]]:
        head = self._pread(8, 0)
        if len(head) < 8:
            raise self._refuse("header too small")
        length = int.from_bytes(head, "little")
        if length > MAX_HEADER:
            raise self._refuse("header too large")
        if length + 8 > self._size:
            raise self._refuse("invalid header length")
        raw = self._pread(length, 8)
        if len(raw) < length:
            raise self._changed()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._refuse(f"invalid UTF-8 in header: {exc.reason} at byte {exc.start}") from None
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise self._refuse(f"invalid JSON in header: {exc}") from None
        if not isinstance(data, dict):
            raise self._refuse(f"invalid JSON in header: invalid type: {type(data).__name__}, expected struct "
                               "HashMetadata at line 1 column 0")
        metadata = data.pop("__metadata__", None)
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
            raise self._refuse("invalid JSON in header: invalid type in __metadata__, expected a map of strings")
        tensors: dict[str, dict] = {}
        for name, info in data.items():
            tensors[name] = self._entry(name, info)
        end = 0
        for name, info in sorted(tensors.items(), key=lambda item: tuple(item[1]["data_offsets"])):
            begin, stop = info["data_offsets"]
            if begin != end or stop < begin:
                raise self._refuse(f"invalid offset for tensor `{name}`")
            end = stop
            count = 1
            for dim in info["shape"]:
                count *= dim
            bits = count * DTYPE_BITS[info["dtype"]]
            if bits >= 1 << 64:
                raise self._refuse("overflow computing buffer size from shape and/or element type")
            if bits % 8:
                raise self._refuse(f"invalid shape, data type, or offset for tensor `{name}`: not a whole number "
                                   "of bytes")
            if stop - begin != bits // 8:
                raise self._refuse("invalid shape, data type, or offset for tensor")
        if end + 8 + length != self._size:
            raise self._refuse("incomplete metadata, file not fully covered")
        return 8 + length, tensors, metadata

    def _entry(self, name: str, info: Any) -> dict:
        def whole(value: Any) -> bool:
            return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 64

        if not isinstance(info, dict):
            raise self._refuse(f"invalid JSON in header: invalid type for tensor `{name}`, expected struct "
                               "TensorInfo")
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if dtype not in DTYPE_BITS:
            raise self._refuse(f"invalid JSON in header: unknown variant `{dtype}`, expected one of "
                               + ", ".join(f"`{d}`" for d in DTYPE_BITS))
        if not isinstance(shape, list) or not all(whole(d) for d in shape):
            raise self._refuse(f"invalid JSON in header: invalid shape for tensor `{name}`")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(whole(o) for o in offsets)):
            raise self._refuse(f"invalid JSON in header: invalid data_offsets for tensor `{name}`")
        return {"dtype": dtype, "shape": tuple(shape), "data_offsets": tuple(offsets)}

    # ------------------------------------------------------------------ the tensors
    def names(self) -> list[str]:
        return list(self._header)

    def keys(self) -> list[str]:
        return self.names()

    def __contains__(self, name: str) -> bool:
        return name in self._header

    def dtype(self, name: str) -> str:
        return self._header[name]["dtype"]

    def shape(self, name: str) -> tuple[int, ...]:
        return self._header[name]["shape"]

    def read(self, name: str) -> np.ndarray:
        """Tensor ``name``'s bytes as a fresh array of its stored dtype (a dtype NumPy cannot hold is refused)."""
        info = self._header[name]
        kind = info["dtype"]
        if kind not in NUMPY:
            raise InputError.keyed("error.safetensors.dtype", source=self.source, field=name, kind=kind)
        begin, end = info["data_offsets"]
        array = np.empty(info["shape"], dtype=np.dtype(NUMPY[kind]))
        if end > begin:
            view = memoryview(array.reshape(-1).view(np.uint8))
            offset, done = self._start + begin, 0
            while done < len(view):
                got = os.preadv(self._handle.fileno(), [view[done:]], offset + done)
                if got <= 0:
                    raise self._changed()
                done += got
        return array

    def _pread(self, count: int, offset: int) -> bytes:
        parts, done = [], 0
        while done < count:
            chunk = os.pread(self._handle.fileno(), min(count - done, 1 << 24), offset + done)
            if not chunk:
                break
            parts.append(chunk)
            done += len(chunk)
        return b"".join(parts)

    def _changed(self) -> InputError:
        return InputError.keyed("error.safetensors.changed", source=self.source, field=self._field)

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle is not None:
            handle.close()

    def __enter__(self) -> "SafetensorsFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_all(path: str | os.PathLike, **where) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file, each a fresh array (`SafetensorsFile`; ``where`` names the file);
    bfloat16 widened to float32 exactly (its bits are float32's upper half)."""
    with SafetensorsFile(path, **where) as opened:
        return {name: widen(opened.read(name), opened.dtype(name)) for name in opened.names()}


def widen(array: np.ndarray, kind: str) -> np.ndarray:
    """A tensor as read (`SafetensorsFile.read`) in a dtype NumPy computes with: bfloat16's raw bits as float32."""
    return (array.astype(np.uint32) << 16).view(np.float32) if kind == "BF16" else array
