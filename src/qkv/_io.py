"""File output that never leaves a half-written file: write to a temporary file, then rename."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

from .errors import InputError

__all__ = ["write_atomic", "write_atomic_with"]


def write_atomic(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write text (UTF-8) or bytes to ``path`` atomically; returns the path."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    return write_atomic_with(path, lambda handle: handle.write(payload))


def write_atomic_with(path: str | os.PathLike, writer: Callable) -> Path:
    """Call ``writer(binary_file)`` on a temporary file beside ``path``, then rename it into place.

    A missing directory raises InputError naming the path; on any error the temporary file is removed
    and an existing file at ``path`` is left as it was.
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"directory {str(folder)!r} does not exist", source=str(target))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            writer(handle)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target
