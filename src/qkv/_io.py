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
        # mkstemp creates 0600; give the file the mode an ordinary open() would (or keep the old one's)
        os.chmod(tmp, target.stat().st_mode & 0o777 if target.exists() else 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
