"""Atomic writes: the right mode, nothing left behind on failure, the old file kept."""

from __future__ import annotations

import os
import stat

import pytest

from qkv import InputError
from qkv._io import write_atomic, write_atomic_with


def test_written_file_has_ordinary_permissions(tmp_path):
    mask = os.umask(0o022)
    try:
        path = write_atomic(tmp_path / "a.txt", "héllo")
    finally:
        os.umask(mask)
    assert path.read_text(encoding="utf-8") == "héllo"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_failure_keeps_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "b.bin"
    path.write_bytes(b"old")

    def broken(handle):
        handle.write(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_atomic_with(path, broken)
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["b.bin"]


def test_missing_directory_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        write_atomic(tmp_path / "nope" / "c.txt", "x")
