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


# ---------------------------------------------------------------- issue 9 item 1: what --out may replace
import re  # noqa: E402
import socket  # noqa: E402
import threading  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from qkv._io import (all_or_nothing, as_int, check_output, load_json, load_toml, parse_int,  # noqa: E402
                     read_text)


def test_symlink_is_followed_link_kept_target_mode_kept(tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.txt"
    link.symlink_to("real.txt")
    write_atomic(link, "new")
    assert link.is_symlink() and os.readlink(link) == "real.txt"
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["link.txt", "real.txt"]


def test_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.txt"
    link.symlink_to("later.txt")
    write_atomic(link, "made")
    assert link.is_symlink() and (tmp_path / "later.txt").read_text() == "made"


def _read_fifo(path, into: list) -> threading.Thread:
    def reader():
        with open(path, "rb") as handle:
            into.append(handle.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("through_link", [False, True])
def test_fifo_is_written_directly_never_replaced(tmp_path, through_link):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    path = fifo
    if through_link:
        path = tmp_path / "to-pipe"
        path.symlink_to(fifo)
    received: list = []
    thread = _read_fifo(fifo, received)
    write_atomic(path, "through the pipe")
    thread.join(timeout=10)
    assert received == [b"through the pipe"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == sorted(["pipe"] + (["to-pipe"] if through_link else []))


def test_fifo_inside_all_or_nothing_is_written_at_the_end(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list = []
    thread = _read_fifo(fifo, received)
    with all_or_nothing():
        write_atomic(fifo, "a")
        write_atomic(tmp_path / "file.txt", "b")
        assert not (tmp_path / "file.txt").exists()
    thread.join(timeout=10)
    assert received == [b"a"] and (tmp_path / "file.txt").read_text() == "b"


def test_read_only_file_is_refused_even_for_root(tmp_path):
    target = tmp_path / "ro.txt"
    target.write_text("keep")
    os.chmod(target, 0o444)
    with pytest.raises(InputError, match="read-only"):
        write_atomic(target, "x")
    with pytest.raises(InputError, match="read-only"):
        check_output(target, field="--out")
    assert target.read_text() == "keep" and os.listdir(tmp_path) == ["ro.txt"]


def test_open_descriptor_of_this_process_is_appended_to_in_place(tmp_path):
    """/dev/stdout redirected to a file reaches it through /proc/self/fd/N: written there, not replaced."""
    target = tmp_path / "redirected.txt"
    with open(target, "w") as handle:
        handle.write("earlier ")
        handle.flush()
        inode = os.stat(target).st_ino
        write_atomic(f"/proc/self/fd/{handle.fileno()}", "later")
    assert target.read_text() == "earlier later" and os.stat(target).st_ino == inode


def test_unusable_output_paths_are_one_line_input_errors(tmp_path):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock"))
    (tmp_path / "plain").write_text("")
    (tmp_path / "to-proc").symlink_to("/proc/self/status")
    cases = {"": "empty", str(tmp_path): "directory", "/proc/self/status": "/proc",
             str(tmp_path / "to-proc"): "/proc", "/proc/self/new-file": "/proc", "/sys/kernel/no-such": "/proc or /sys",
             str(tmp_path / "sock"): "socket", str(tmp_path / "plain" / "x.txt"): "not a directory",
             str(tmp_path / "missing" / "x.txt"): "does not exist"}
    try:
        for path, words in cases.items():
            for call in (lambda: check_output(path, field="--out"), lambda: write_atomic(path, "x")):
                with pytest.raises(InputError) as info:
                    call()
                assert words in str(info.value) and "\n" not in str(info.value), (path, str(info.value))
    finally:
        server.close()
    assert sorted(os.listdir(tmp_path)) == ["plain", "sock", "to-proc"]


# ---------------------------------------------------------------- issue 9 item 17: all or nothing
def test_all_or_nothing_leaves_every_path_as_it_was_on_failure(tmp_path):
    kept = tmp_path / "kept.txt"
    kept.write_text("old")
    with pytest.raises(InputError):
        with all_or_nothing():
            write_atomic(tmp_path / "figure.png", b"png")
            write_atomic(kept, "new")
            raise InputError("a later step failed")
    assert sorted(os.listdir(tmp_path)) == ["kept.txt"] and kept.read_text() == "old"


def test_a_failing_rename_puts_back_the_files_already_renamed(tmp_path, monkeypatch):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("a-old")
    real_replace = os.replace

    def replace(src, dst):
        if str(dst).endswith("b.txt"):
            raise OSError(16, "Device or resource busy", str(dst))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(InputError, match="left as they were"):
        with all_or_nothing():
            write_atomic(first, "a-new")
            write_atomic(second, "b-new")
    monkeypatch.undo()
    assert first.read_text() == "a-old" and sorted(os.listdir(tmp_path)) == ["a.txt"]


# ---------------------------------------------------------------- issue 9 item 13: strict integers
@pytest.mark.parametrize("text", ["²", "٣", "１", "1_000", "1e3", "", " ", "+", "0x10", "1.0", "⁵", "7" * 19, True])
def test_not_integers(text):
    assert as_int(text) is None
    with pytest.raises(InputError, match="expected a whole number"):
        parse_int(text, field="--digits")


@given(st.text(max_size=8))
@settings(max_examples=300, deadline=None)
def test_as_int_accepts_exactly_ascii_digit_strings(text):
    expected = int(text.strip(" \t")) if re.fullmatch(r"[ \t]*[+-]?[0-9]{1,18}[ \t]*", text) else None
    assert as_int(text) == expected


def test_parse_int_range_and_fields():
    assert parse_int(" 12 ", field="--digits", low=0, high=12) == 12
    with pytest.raises(InputError, match=r"--digits: '13': expected a whole number from 0 to 12"):
        parse_int("13", field="--digits", low=0, high=12)


# ---------------------------------------------------------------- issue 9 item 14: safe documents
@pytest.mark.parametrize("depth", [65, 900, 100_000])
def test_deep_nesting_is_refused_in_json_and_toml(depth):
    with pytest.raises(InputError, match="nested more than 64 levels deep"):
        load_json('{"a": ' + "[" * depth + "1" + "]" * depth + "}", source="f.json")
    with pytest.raises(InputError, match="nested more than 64 levels deep"):
        load_toml("a = " + "[" * depth + "1" + "]" * depth, source="f.toml")


def test_64_levels_are_accepted():
    assert load_json("[" * 64 + "]" * 64, source="f.json") is not None


def test_huge_integers_are_input_errors():
    with pytest.raises(InputError, match="more than 4300 digits"):
        load_json('{"a": 1' + "0" * 5000 + "}", source="config.json")
    with pytest.raises(InputError, match="more than 4300 digits"):
        load_toml("a = 1" + "0" * 5000, source="x.toml")


def test_read_text_bounds_size_before_reading(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:
        handle.truncate(257 * 2**20)              # sparse: nothing is really written or read
    with pytest.raises(InputError, match="at most 256 MiB"):
        read_text(big)
    (tmp_path / "bad.json").write_bytes(b"\xff\xfe")
    with pytest.raises(InputError, match="not UTF-8"):
        read_text(tmp_path / "bad.json")


def test_replacing_a_file_keeps_its_owner(tmp_path):
    """Root replacing another user's file gives it back to that user; anyone else keeps their own files."""
    target = tmp_path / "theirs.txt"
    target.write_text("old")
    owner = (1234, 5678) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    os.chown(target, *owner)
    write_atomic(target, "new")
    assert (target.stat().st_uid, target.stat().st_gid) == owner and target.read_text() == "new"


def test_proc_paths_that_lead_back_to_ordinary_files_are_ordinary(tmp_path, monkeypatch):
    """/proc/self/cwd/x is the file x of the working directory: replaced atomically, not appended to."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.txt").write_text("old")
    write_atomic("/proc/self/cwd/x.txt", "new")
    write_atomic("/proc/self/cwd/y.txt", "made")
    assert (tmp_path / "x.txt").read_text() == "new" and (tmp_path / "y.txt").read_text() == "made"


# ---------------------------------------------------------------- issue 22 part 4: one bounded reader
from qkv._io import read_bytes  # noqa: E402


@pytest.mark.parametrize("make, words", [
    (lambda d: "/dev/zero", "is a character device"),
    (lambda d: "/dev/urandom", "is a character device"),
    (lambda d: str(d), "is a directory"),
    (lambda d: (os.mkfifo(d / "p"), str(d / "p"))[1], "is a named pipe (FIFO)"),
    (lambda d: str(d / "none"), "not found"),
])
def test_read_bytes_refuses_every_non_regular_kind_by_name(tmp_path, make, words):
    """/dev/zero was read until the OOM killer came (19.8 GB); a FIFO would block forever."""
    path = make(tmp_path)
    for reader in (lambda: read_bytes(path, limit=1024), lambda: read_text(path, limit=1024)):
        with pytest.raises(InputError) as info:
            reader()
        assert words in str(info.value) and "\n" not in str(info.value)


def test_read_bytes_refuses_a_socket(tmp_path):
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "s"))
        with pytest.raises(InputError, match="is a socket"):
            read_bytes(tmp_path / "s", limit=10)
    finally:
        sock.close()


def test_read_bytes_limit_is_checked_before_and_while_reading(tmp_path):
    exact = tmp_path / "exact.bin"
    exact.write_bytes(b"x" * 100)
    assert read_bytes(exact, limit=100) == b"x" * 100
    with pytest.raises(InputError, match=r"is 100 bytes; qkv reads files of at most 99 bytes here"):
        read_bytes(exact, limit=99)
    # a /proc file reports size 0 but has content: the read itself stops at limit + 1 bytes
    with pytest.raises(InputError, match="is larger than 10 bytes"):
        read_bytes("/proc/self/status", limit=10)
    sparse = tmp_path / "sparse.bin"
    with open(sparse, "wb") as handle:
        handle.truncate(3 * 2**30)                  # 3 GiB, sparse: refused by its size, nothing read
    with pytest.raises(InputError, match="is 3072 MiB; qkv reads files of at most 4 MiB here"):
        read_bytes(sparse, limit=4 * 2**20)


def test_read_bytes_names_the_field_and_the_file_as_written(tmp_path):
    with pytest.raises(InputError) as info:
        read_bytes("/dev/zero", limit=5, source="ex.toml", field="w_v", what="array file", shown="zero.npy")
    assert str(info.value) == "ex.toml: w_v: array file 'zero.npy' is a character device, not a regular file"


def test_printable_field_and_stream_escape_the_same_controls():
    """One filter: a string read from a file (field) and a terminal stream escape the same control
    characters — the bidirectional overrides too — and differ only in what a stream keeps as layout."""
    from qkv._io import printable

    for code in [*range(0x00, 0x20), *range(0x7f, 0xa0), *range(0x202a, 0x202f), *range(0x2066, 0x206a)]:
        char = chr(code)
        field = printable(f"a{char}b")
        assert char not in field, hex(code)
        if char not in "\n\t":
            assert printable(f"a{char}b", stream=True) == field, hex(code)
    assert printable("a\nb\tc", stream=True) == "a\nb\tc"
    assert printable("\x1b[31mred\x1b[0m", stream=True) == "\x1b[31mred\x1b[0m"
    assert printable("\x1b[31mred") == "\\x1b[31mred"
