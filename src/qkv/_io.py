"""Reading user input and writing files safely: the one place for both.

Writing (``write_atomic``, ``write_atomic_with``, ``check_output``, ``all_or_nothing``):
- a regular file (or a new one) is written atomically: a temporary file beside it, renamed over
  it; a symbolic link is followed and its target replaced (the link stays a link) with the
  target's permission bits kept;
- a pipe or a terminal (a FIFO or character device, e.g. /dev/stdout) is written directly, never
  replaced; so is a regular file reached through one of this process's descriptors
  (/dev/stdout redirected to a file, /proc/self/fd/N), opened for appending;
- refused with one `InputError`: the empty path, a directory, a block device or socket, a path
  in /proc or /sys, a missing directory, a read-only file or directory (no write bit, even for root);
- inside ``with all_or_nothing():`` (the command line wraps every command in it) nothing is
  renamed into place or written to a pipe until the block ends without an exception, so a
  failing command leaves every output path as it was.

Reading (``read_bytes``, ``read_text``, ``load_json``, ``load_toml``, ``parse_int``): one bounded
reader for every file qkv reads — regular files only (a directory, a device such as /dev/zero, a
named pipe or a socket is refused by its kind before anything is read), at most a size limit each
caller states (checked before and while reading) — bounded nesting, strict integers, and every
failure an `InputError` naming the file.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import io
import json
import os
import re
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from .errors import InputError, describe

FIGURE_SUFFIXES = (".png", ".svg", ".pdf")
"""The figure files qkv writes (the format follows the suffix): one list for viz, the CLI and serve."""

__all__ = ["write_atomic", "write_atomic_with", "check_output", "all_or_nothing", "read_bytes", "read_text",
           "decode_utf8", "size_text", "printable", "load_json",
           "load_toml", "parse_int", "as_int", "as_number", "int_option", "check_input_file", "open_input", "check_strings", "MAX_FILE_BYTES", "MAX_DEPTH",
           "MAX_INT_DIGITS"]

MAX_FILE_BYTES = 256 * 2**20      # the largest TOML/JSON document read (example files, saved traces, configs)
MAX_DEPTH = 64                    # the deepest nesting of lists/tables accepted in a document
MAX_INT_DIGITS = 18               # the longest integer accepted on the command line or as a field
KERNEL_FILESYSTEMS = ("/proc", "/sys")


# =========================================================================== writing
@dataclass(frozen=True)
class _Plan:
    """Where and how one output is written: ``direct`` (open and write in place) or atomic rename."""

    path: Path          # what the user named
    target: Path        # the file that is written (a symlink's target)
    direct: bool
    append: bool = False
    mode: int | None = None
    owner: tuple[int, int] | None = None      # (uid, gid) of the file replaced


def _fail(key: str, path: Any, field: str | None, /, **values) -> InputError:
    """An output path's refusal, worded by the text ``key`` (said in the reader's language)."""
    return InputError.keyed(key, source=str(path) if str(path) else None, field=field, **values)


def _in_kernel_fs(path: str) -> bool:
    return any(path == top or path.startswith(top + "/") for top in KERNEL_FILESYSTEMS)


_FD_FOLDER = re.compile(r"/proc/[^/]+(/task/[^/]+)?/fd")


def _through_descriptor(text: str) -> bool:
    """Whether following ``text``'s links passes through a process's descriptor folder
    (e.g. /dev/stdout → /proc/self/fd/1): then it names an open file, not a place for a new one."""
    current = os.path.abspath(text)
    for _ in range(40):
        parent, name = os.path.split(current)
        parent = os.path.realpath(parent)
        if _FD_FOLDER.fullmatch(parent):
            return True
        full = os.path.join(parent, name)
        if not os.path.islink(full):
            return False
        current = os.path.join(parent, os.readlink(full))
    return False


def _plan(path: str | os.PathLike, field: str | None = None) -> _Plan:
    """Validate an output path and decide how to write it (raises InputError with one line)."""
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text.strip():
        raise InputError.keyed("error.out.empty", field=field)
    if "\0" in text:
        raise _fail("error.out.nul", repr(text), field)
    try:
        st = os.stat(text)                                            # follows symbolic links
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise _fail("error.out.part", text, field) from None
    except OSError as exc:
        raise _fail("error.out.unusable", text, field, reason=exc) from None
    if st is not None:
        kind = st.st_mode
        if stat.S_ISDIR(kind):
            raise _fail("error.out.directory", text, field)
        if stat.S_ISFIFO(kind) or stat.S_ISCHR(kind):
            if not os.access(text, os.W_OK):
                raise _fail("error.out.not_writable", text, field)
            return _Plan(Path(text), Path(text), direct=True)
        if not stat.S_ISREG(kind):
            raise _fail("error.out.block" if stat.S_ISBLK(kind) else "error.out.socket" if stat.S_ISSOCK(kind)
                        else "error.out.not_file", text, field)
        if _through_descriptor(text) and not _in_kernel_fs(os.path.realpath(text)):
            # an open descriptor of this process (/dev/stdout redirected to a file): write through it
            return _Plan(Path(text), Path(text), direct=True, append=True)
    real = os.path.realpath(text)
    if _in_kernel_fs(real):
        raise _fail("error.out.kernel", text, field)
    target = Path(real)
    folder = target.parent
    if not folder.is_dir():
        raise _fail("error.out.no_directory", text, field, folder=repr(str(Path(text).parent)))
    if st is not None and (not os.access(target, os.W_OK) or not st.st_mode & 0o222):
        raise _fail("error.out.read_only", text, field)
    # os.access says yes to root for any directory; its mode bits decide, as for a read-only file
    if not os.access(folder, os.W_OK | os.X_OK) or not folder.stat().st_mode & 0o222:
        raise _fail("error.out.permission", text, field, folder=repr(str(folder)))
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
    owner = (st.st_uid, st.st_gid) if st is not None else None
    return _Plan(Path(text), target, direct=False, mode=mode, owner=owner)


def check_output(path: str | os.PathLike, *, field: str | None = None) -> Path:
    """Validate an output path before any work: raises InputError (one line) if qkv would refuse it.

    Returns the path that would be written (a symbolic link's target; a pipe or terminal itself).
    """
    return _plan(path, field).target


@dataclass
class _Batch:
    """Writes held back until the block of `all_or_nothing` ends: temporary files and direct data."""

    renames: list = field(default_factory=list)      # (temporary path, target)
    direct: list = field(default_factory=list)       # (plan, bytes)

    def discard(self) -> None:
        for tmp, _ in self.renames:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self.renames.clear()
        self.direct.clear()

    def commit(self) -> None:
        """Renames first (each replaced file kept as a hard-linked backup until the end), then direct
        writes; if anything fails, the renamed files are put back as they were."""
        done: list[tuple[Path, str | None]] = []
        try:
            for tmp, target in self.renames:
                backup = None
                if os.path.lexists(target):
                    backup = tmp + ".old"
                    try:
                        os.link(target, backup)
                    except OSError:         # no hard links here: the file is replaced without a way back
                        backup = None
                os.replace(tmp, target)
                done.append((target, backup))
            for plan, data in self.direct:
                try:
                    _write_direct(plan, data)
                except OSError as exc:              # named: os.write's error carries no file name
                    exc.filename = exc.filename or str(plan.path)
                    raise
        except BaseException as exc:       # a failed write, or a signal (SIGTERM: `qkv.cli.Stopped`) midway
            for target, backup in reversed(done):
                with contextlib.suppress(OSError):
                    if backup is not None:
                        os.replace(backup, target)
                    else:
                        os.unlink(target)
            if not isinstance(exc, OSError):
                raise
            raise InputError.keyed("error.out.write_rest", reason=exc,
                             source=getattr(exc, "filename", None)) from None
        finally:
            for _, backup in done:
                if backup is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(backup)
            self.discard()


_PENDING: contextvars.ContextVar[_Batch | None] = contextvars.ContextVar("qkv_pending_writes", default=None)


@contextlib.contextmanager
def all_or_nothing() -> Iterator[None]:
    """Hold back every write made with `write_atomic`/`write_atomic_with` inside the block.

    When the block ends normally every file is put in place (pipes and terminals first, then the
    renames); when it raises, the temporary files are removed and every output path is left as it
    was. Nested blocks join the outer one.
    """
    if _PENDING.get() is not None:
        yield
        return
    batch = _Batch()
    token = _PENDING.set(batch)
    try:
        yield
    except BaseException:
        batch.discard()
        raise
    finally:
        _PENDING.reset(token)
    try:
        batch.commit()
    except BaseException:
        batch.discard()          # commit removes its temporary files itself; this covers a signal before it began
        raise


def write_atomic(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write text (UTF-8) or bytes to ``path`` (atomically for a regular file; see the module); returns the path."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    return write_atomic_with(path, lambda handle: handle.write(payload))


def write_atomic_with(path: str | os.PathLike, writer: Callable) -> Path:
    """Call ``writer(binary_file)`` and put what it wrote at ``path``; returns ``Path(path)``.

    Regular files: a temporary file beside the target (a symlink's target), renamed into place
    with the target's permission bits (a new file gets the umask's). Pipes and terminals: written
    directly. An unusable path raises InputError naming it (nothing is written); on any error the
    temporary file is removed and an existing file at ``path`` is left as it was.
    """
    plan = _plan(path)
    batch = _PENDING.get()
    if plan.direct:
        buffer = io.BytesIO()
        writer(buffer)
        if batch is not None:
            batch.direct.append((plan, buffer.getvalue()))
        else:
            try:
                _write_direct(plan, buffer.getvalue())
            except OSError as exc:
                raise InputError.keyed("error.out.write", source=str(plan.path), reason=exc) from None
        return plan.path
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{plan.target.name}.", suffix=".tmp", dir=plan.target.parent)
    except OSError as exc:
        raise InputError.keyed("error.out.create", folder=repr(str(plan.target.parent)), reason=exc,
                         source=str(plan.path)) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            writer(handle)
        os.chmod(tmp, plan.mode)
        if plan.owner is not None and plan.owner != (os.geteuid(), os.getegid()):
            with contextlib.suppress(OSError):      # only root may give a file away; others keep their own
                os.chown(tmp, *plan.owner)
        if batch is not None:
            batch.renames.append((tmp, plan.target))
        else:
            os.replace(tmp, plan.target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, (BrokenPipeError, InterruptedError)):
            raise InputError.keyed("error.out.write", source=str(plan.path), reason=exc) from None
        raise
    return plan.path


def _write_direct(plan: _Plan, data: bytes) -> None:
    flags = os.O_WRONLY | (os.O_APPEND if plan.append else 0)
    fd = os.open(plan.target, flags)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# =========================================================================== reading
def size_text(count: int) -> str:
    """A byte count for a message: '256 MiB', '2000 MiB', '4 KiB', '1.5 KiB', '300 bytes'."""
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            value = count / scale
            return f"{value:.0f} {unit}" if value == int(value) or value >= 10 else f"{value:.1f} {unit}"
    return f"{count} bytes"


def _kind(mode: int) -> str | None:
    """The words for a file kind qkv never reads (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    return ("a directory" if stat.S_ISDIR(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a named pipe (FIFO)" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def check_input_file(path: str | os.PathLike, *, source: str | None = None, field: str | None = None,
                     what: str = "file", fifo: bool = False, shown: str | None = None,
                     limit: int | None = None) -> Path:
    """An existing regular file of at most ``limit`` bytes (default MAX_FILE_BYTES) to read; otherwise
    one precise InputError naming the kind: "is a directory", "is a character device" (/dev/zero),
    "is a named pipe (FIFO)", "is a socket", "is 300 MiB; qkv reads at most 256 MiB here".

    ``fifo=True`` lets a named pipe through (its size is then bounded while reading, see `read_bytes`).
    ``source``/``field`` name where the path was given (default: the path itself is the source);
    ``shown`` is the name as the user wrote it (default: the path).
    """
    path = Path(path)
    limit = MAX_FILE_BYTES if limit is None else limit
    named = short_repr(shown if shown is not None else str(path)) if source is not None else None

    def fail(key: str, **values) -> InputError:
        return _read_error(key, what, named, source=source or str(path), field=field, **values)

    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise fail("error.read.dangling" if os.path.islink(path)
                   else "error.read.not_found" if named else "error.read.file_not_found") from None
    except NotADirectoryError:
        raise fail("error.read.part") from None
    except ValueError:                         # os.stat's refusal of a NUL in the name
        raise fail("error.read.nul") from None
    except OSError as exc:
        raise fail("error.read.unreadable", reason=exc) from None
    _check_kind(st, fail, fifo=fifo, limit=limit)
    return path


def _check_kind(st: os.stat_result, fail: Callable[[str], InputError], *, fifo: bool, limit: int) -> None:
    kind = _kind(st.st_mode)
    if kind == "a directory":
        raise fail("error.read.directory")
    if kind is not None and not (fifo and stat.S_ISFIFO(st.st_mode)):
        raise fail(_KIND_KEYS[kind])
    if kind is None and st.st_size > limit:
        raise fail("error.read.size", size=size_text(st.st_size), limit=size_text(limit))


# The refusal of each file kind `_kind` names (texts keys).
_KIND_KEYS = {"a character device": "error.read.chr", "a block device": "error.read.blk",
              "a named pipe (FIFO)": "error.read.fifo", "a socket": "error.read.sock",
              "not a regular file": "error.read.other"}
# What a named input is called in messages ("array file 'w.npy' not found").
_WHAT_KEYS = {"file": "error.read.what.file", "array file": "error.read.what.array"}


def _read_error(key: str, what: str, named: str | None, /, *, source: str, field: str | None, **values) -> InputError:
    """A file's refusal in the reader's language: the text ``key``; when the file was named inside another
    (``named``: an array file of an example), prefixed with what it is and its name."""
    from .errors import worded
    from .explain.texts import LANGS, text

    if named is None:
        return InputError.keyed(key, source=source, field=field, **values)

    def parts(lang: str) -> dict:
        return {"what": text(lang, _WHAT_KEYS[what]) if what in _WHAT_KEYS else what,
                "problem": text(lang, key, **worded(values, lang))}

    error = InputError.keyed("error.read.named", source=source, field=field, name=named, **parts("en"))
    error.values["by_lang"] = {lang: parts(lang) for lang in LANGS}
    return error


def _open_checked(path: str | os.PathLike, *, limit: int, source: str | None, field: str | None, what: str,
                  shown: str | None, fifo: bool) -> tuple[int, Callable[..., InputError]]:
    """``path`` checked by name (`check_input_file`), opened once without blocking, and checked again on the
    open descriptor: (the descriptor, the function that words a refusal). Whatever is read next is read from
    that descriptor, never by name again, so a file swapped for a named pipe after the check is refused by
    its kind instead of hanging the reader. A named pipe (``fifo``) is set blocking for its writer."""
    checked = check_input_file(path, source=source, field=field, what=what, fifo=fifo, shown=shown, limit=limit)
    where = source or str(checked)
    named = short_repr(shown if shown is not None else str(checked)) if source is not None else None

    def fail(key: str, **values) -> InputError:
        return _read_error(key, what, named, source=where, field=field, **values)

    try:
        fd = os.open(checked, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise fail("error.read.unreadable", reason=exc) from None
    try:
        _check_kind(os.fstat(fd), fail, fifo=fifo, limit=limit)
        os.set_blocking(fd, True)          # a regular file never blocks; a pipe's writer may come later
    except BaseException:
        os.close(fd)
        raise
    return fd, fail


def open_input(path: str | os.PathLike, *, limit: int, source: str | None = None, field: str | None = None,
               what: str = "file", shown: str | None = None) -> io.BufferedReader:
    """A regular file of at most ``limit`` bytes, opened once for reading (binary) and checked on the open
    descriptor, with `read_bytes`'s refusals: for readers that read a file in parts (an .npy header and then
    its data, a safetensors header and then each tensor) and must not open it by name a second time. The
    caller closes it. Its size may still change under the caller (another process writing the file), so a
    reader that trusts a header checks that each read returned every byte it asked for."""
    fd, _ = _open_checked(path, limit=limit, source=source, field=field, what=what, shown=shown, fifo=False)
    return os.fdopen(fd, "rb")


def read_bytes(path: str | os.PathLike, *, limit: int, source: str | None = None, field: str | None = None,
               what: str = "file", shown: str | None = None, fifo: bool = False) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes: the one bounded reader.

    Refused with one InputError naming the kind before anything is read: a missing file, a
    directory, a character or block device (/dev/zero, /dev/urandom), a named pipe (unless
    ``fifo``), a socket, a file whose size is over ``limit``. The file is opened without blocking
    and checked again on the open descriptor (a path swapped after the first check is caught), and
    at most ``limit + 1`` bytes are ever read (a file that grows, or a /proc file that reports size
    0, is still bounded). Each caller documents its own ``limit``.
    """
    fd, fail = _open_checked(path, limit=limit, source=source, field=field, what=what, shown=shown, fifo=fifo)
    try:
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise fail("error.read.unreadable", reason=exc) from None
    finally:
        os.close(fd)
    if total > limit:
        raise fail("error.read.larger", limit=size_text(limit))
    return b"".join(chunks)


def read_text(path: str | os.PathLike, *, source: str | None = None, field: str | None = None,
              limit: int | None = None, what: str = "file", shown: str | None = None) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes (default MAX_FILE_BYTES), read
    with `read_bytes` (the same refusals); text that is not UTF-8 is an InputError naming the byte."""
    data = read_bytes(path, limit=MAX_FILE_BYTES if limit is None else limit, source=source, field=field,
                      what=what, shown=shown)
    return decode_utf8(data, source=source or str(path), field=field)


# Python's UTF-8 decoder's reasons, in Korean (any other reason is shown as Python gives it)
_CODEC_KO = {"invalid start byte": "잘못된 시작 바이트", "invalid continuation byte": "잘못된 연속 바이트",
             "unexpected end of data": "데이터가 중간에 끝났다"}


def decode_utf8(data: bytes, *, source: str | None, field: str | None = None) -> str:
    """``data`` as UTF-8 text, or one InputError: "not UTF-8 text (invalid start byte at byte 0)"."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError.keyed("error.read.utf8", source=source, field=field, reason=exc.reason, at=exc.start,
                               by_lang={"ko": {"reason": _CODEC_KO.get(exc.reason, exc.reason)}}) from None


def load_json(text: str, *, source: str) -> Any:
    """Parse JSON text: malformed text, huge integers and deep nesting are InputErrors naming ``source``.

    NaN and Infinity (not JSON, but Python's json accepts them) are returned as floats; callers that
    need finite numbers check them.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # the decoder's description in each language (`qkv.errors.describe`); the template says where
        raise InputError.keyed("error.json.malformed", source=source, reason=exc.msg, line=exc.lineno,
                               column=exc.colno, by_lang={"ko": {"reason": describe(exc, "ko")}}) from None
    except RecursionError:
        raise InputError.keyed("error.json.deep", source=source, depth=MAX_DEPTH) from None
    except ValueError as exc:          # e.g. an integer longer than Python's conversion limit (4300 digits)
        raise InputError.keyed("error.json.other", source=source, reason=exc) from None
    _check_depth(data, source)
    return data


def load_toml(text: str, *, source: str) -> dict:
    """Parse TOML text, with the same guarantees as `load_json`."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:      # worded by `qkv.errors.reason`: Korean by class, line and column
        raise InputError.keyed("error.toml.malformed", source=source, reason=exc) from None
    except RecursionError:
        raise InputError.keyed("error.toml.deep", source=source, depth=MAX_DEPTH) from None
    except ValueError as exc:
        raise InputError.keyed("error.toml.malformed", source=source, reason=exc) from None
    _check_depth(data, source)
    return data


def _check_depth(data: Any, source: str) -> None:
    """Refuse documents nested deeper than MAX_DEPTH, and strings holding a lone surrogate (`check_strings`)
    (walked without recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (list, dict)):
            if depth > MAX_DEPTH:
                raise InputError.keyed("error.nested", source=source, depth=MAX_DEPTH)
            items = [*value, *value.values()] if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items if isinstance(item, (list, dict, str)))
        elif isinstance(value, str) and _SURROGATE.search(value):
            raise _surrogate(value, source)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _surrogate(value: str, source: str | None, field: str | None = None) -> InputError:
    found = _SURROGATE.search(value).group()
    return InputError.keyed("error.json.surrogate", source=source, field=field, value=short_repr(value, 40),
                            char=f"\\u{ord(found):04x}")


def check_strings(data: Any, *, source: str | None = None, field: str | None = None) -> Any:
    """``data`` (parsed JSON) when none of its strings, keys included, holds a lone surrogate; else an InputError
    naming the string. JSON may write "\\ud800" alone, and Python's json reads it, but it is no character: no
    UTF-8 text can hold it, so it would fail wherever the string is printed, saved or sent. `load_json` checks
    every document; a server checks the JSON bodies it parses itself."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                raise _surrogate(value, source, field)
        elif isinstance(value, dict):
            stack.extend(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return data


# =========================================================================== integers
_INTEGER = re.compile(r"[+-]?[0-9]+")


def as_int(value: Any) -> int | None:
    """``value`` as an int when it is one: an int (not a bool) or a string of ASCII digits with an
    optional sign and surrounding spaces, at most MAX_INT_DIGITS digits; otherwise None.

    Stricter than ``int()`` and ``str.isdigit``: '²', '٣', '１', '1_000', '1e3' and '' are not integers.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        return None
    text = value.strip(" \t")
    if not _INTEGER.fullmatch(text) or len(text.lstrip("+-")) > MAX_INT_DIGITS:
        return None
    return int(text)


# One rule for a decimal number typed as text (a what-if's value, --temperature, --top-p, --learning-rate, serve's
# ?temperature=): ASCII digits 0–9, an optional sign, point and exponent. float() also reads '１', '٣', '1_0',
# 'inf', 'nan' and a trailing newline; TOML and JSON (the example files, serve's what-if body) and the pages'
# editors (a 0–9 pattern before Number()) read none of them.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def as_number(value: Any) -> float | None:
    """``value`` as a float when it is a decimal number written with the ASCII digits 0–9: an optional sign
    ('−', U+2212, as the renderers print it, reads as '-'), digits with an optional point, an optional exponent,
    surrounded by spaces or tabs; otherwise None. Stricter than ``float()``, as `as_int` is than ``int()``:
    '１', '٣', '²', '1_0', 'inf', 'nan', '0x10', '1\\n' and '' are not numbers. A number too large for a float
    (1e999) is ±inf: the caller bounds it."""
    if not isinstance(value, str):
        return None
    text = value.strip(" \t").replace("\u2212", "-")
    if not _DECIMAL.fullmatch(text):
        return None
    return float(text)


def parse_int(value: Any, *, field: str | None = None, source: str | None = None, low: int | None = None,
              high: int | None = None, what: str = "a whole number") -> int:
    """A strict integer (see `as_int`) within [low, high], or an InputError naming the field."""
    number = as_int(value)
    if number is None or (low is not None and number < low) or (high is not None and number > high):
        raise int_error(value, low=low, high=high, what=what, source=source, field=field)
    return number


# The words of `parse_int`'s refusal, by what is expected: text keys of `qkv.explain.texts`.
_INT_KEYS = {"a whole number": "error.int", "a whole number of decimals": "error.decimals"}


def int_error(value: Any, *, low: int | None = None, high: int | None = None, what: str = "a whole number",
              source: str | None = None, field: str | None = None) -> InputError:
    """``'x': expected a whole number from 1 to 64`` (the bounds given), keyed so that it is said in the
    reader's language; a ``what`` outside `_INT_KEYS` is said in English only."""
    span = ("" if low is None and high is None else f" from {low} to {high}" if low is not None and high is not None
            else f" ≥ {low}" if low is not None else f" ≤ {high}")
    if what in _INT_KEYS:
        suffix = "" if not span else ".range" if low is not None and high is not None else \
            ".low" if low is not None else ".high"
        return InputError.keyed(_INT_KEYS[what] + suffix, source=source, field=field, value=short_repr(value),
                                low=low, high=high)
    return InputError(f"{short_repr(value)}: expected {what}{span}", source=source, field=field)


def int_option(low: int | None = None, high: int | None = None, what: str = "a whole number") -> Callable[[str], int]:
    """An argparse ``type=`` that parses strictly (argparse reports the message as one line)."""

    def convert(text: str) -> int:
        try:
            return parse_int(text, low=low, high=high, what=what)
        except InputError as exc:
            error = argparse.ArgumentTypeError(exc.problem)
            error.input_error = exc           # type: ignore[attr-defined]  # the command line words it in --lang
            raise error from None

    convert.__name__ = "integer"
    return convert


# Characters a terminal acts on instead of showing: C0 (ESC starts an escape sequence; CR, BS can overwrite
# what was printed), DEL, C1, and the bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069),
# which reorder what follows so a line reads differently than it is.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# In a whole terminal stream (`stream=True`): newlines and tabs are layout, and three sequences are kept —
# SGR colours, rich's cursor hide/show, and its progress redraw (CR, cursor up, erase line), which can only
# erase, never write text that looks like qkv's. Everything else (titles, clipboard, clear screen, cursor
# moves, bells) is shown as an escape.
_STREAM_CONTROL = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\?25[hl]|\r(?:\x1b\[[0-9]*A)*\x1b\[2K|"
                             r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match) -> str:
    found = match.group()
    if len(found) > 1:                      # a kept sequence (stream mode)
        return found
    code = ord(found)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, stream: bool = False) -> str:
    """``text`` with every control character written as a visible escape (``\\x1b``, ``\\u202e``) instead
    of acted on: C0 (ESC of a terminal escape sequence, a carriage return), DEL, C1 and the bidirectional
    overrides. A single string read from a file (``stream=False``, the default) has its newlines and tabs
    escaped too, so a one-line message stays one line. ``stream=True`` filters a whole terminal stream (the
    command line passes everything it prints to a terminal through it): newlines and tabs are kept, and so
    are colour sequences and rich's progress redraws."""
    return (_STREAM_CONTROL if stream else _CONTROL).sub(_escaped, text)


def short_repr(value: Any, limit: int = 60) -> str:
    """repr(value), cut to ``limit`` characters (messages stay one short line)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
