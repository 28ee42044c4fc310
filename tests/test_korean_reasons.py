"""The OS's reasons (errno) and TOML's parse errors inside a `--lang ko` error line are Korean, by class.

English keeps the OS's own words (strerror) and tomllib's message. Korean says each errno with
qkv.explain.texts' ``error.os.NAME`` (``error.os.other`` with its number for one the table lacks) and a
TOML error by where tomllib stopped (line and column, or the end of the document). Checked on every
errno Python knows, on real runs (a full device, a name too long, a file that cannot be opened for each
OSError class) and on TOML documents whose error position is known by construction. The English
detector is test_cli_lang_ko's `korean_only`.
"""

from __future__ import annotations

import errno
import os

import pytest

from qkv.cli import main
from qkv.errors import reason
from qkv.explain import texts

from test_cli_korean import HANGUL, words_of
from test_cli_lang_ko import korean_only

OS_KEYS = sorted(k for k in texts.EN if k.startswith("error.os.") and k not in ("error.os.other", "error.os.none"))


def run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_korean_line(err: str, *allowed) -> None:
    assert err.startswith("qkv: 오류: ") and err.count("\n") == 1, err
    assert korean_only(err, words_of(*allowed)) == [], (korean_only(err, words_of(*allowed)), err)


# ------------------------------------------------------------------ the table and every errno
@pytest.mark.parametrize("key", OS_KEYS)
def test_each_os_text_names_its_errno(key):
    """The English of each key is the OS's own strerror for the errno the key names (glibc's words here):
    the table maps each Korean text to the right errno."""
    number = getattr(errno, key.rsplit(".", 1)[1])
    assert texts.EN[key] == os.strerror(number)
    assert HANGUL.search(texts.KO[key]) and korean_only(texts.KO[key]) == []


@pytest.mark.parametrize("number", sorted(errno.errorcode))
def test_every_errno_is_korean(number):
    exc = OSError(number, os.strerror(number))
    assert reason(exc, "en") == os.strerror(number)
    said = reason(exc, "ko")
    assert HANGUL.search(said) and korean_only(said) == [], (errno.errorcode[number], said)


def test_an_os_error_without_errno_is_korean():
    assert reason(OSError("something the OS said"), "en") == "something the OS said"
    assert reason(OSError("something the OS said"), "ko") == texts.KO["error.os.none"]


def test_the_common_classes_are_named_not_numbered():
    """FileNotFoundError, PermissionError, IsADirectoryError, a full disk: their own Korean words."""
    for exc, key in ((FileNotFoundError(errno.ENOENT, "x"), "ENOENT"), (PermissionError(errno.EACCES, "x"), "EACCES"),
                     (IsADirectoryError(errno.EISDIR, "x"), "EISDIR"), (OSError(errno.ENOSPC, "x"), "ENOSPC")):
        assert reason(exc, "ko") == texts.KO[f"error.os.{key}"]


# ------------------------------------------------------------------ real runs
def test_a_full_device_is_korean(capsys, tmp_path):
    code, _, err = run(capsys, "example", "--out", "/dev/full", "--lang", "ko")
    assert code == 2 and texts.KO["error.os.ENOSPC"] in err
    assert_korean_line(err)
    code, _, english = run(capsys, "example", "--out", "/dev/full")
    assert code == 2 and os.strerror(errno.ENOSPC) in english


def test_a_name_too_long_is_korean(capsys, tmp_path):
    long = str(tmp_path / ("a" * 300))
    for argv in (["example", "--out", long + ".txt"], ["explain", long + ".toml"]):
        code, _, err = run(capsys, *argv, "--lang", "ko")
        assert code == 2 and texts.KO["error.os.ENAMETOOLONG"] in err, err
        assert_korean_line(err, tmp_path)


@pytest.mark.parametrize("exc_type, number", [(PermissionError, errno.EACCES), (IsADirectoryError, errno.EISDIR),
                                              (FileNotFoundError, errno.ENOENT), (OSError, errno.EIO)],
                         ids=["PermissionError", "IsADirectoryError", "FileNotFoundError", "EIO"])
def test_a_file_that_cannot_be_opened_is_korean(capsys, tmp_path, monkeypatch, exc_type, number):
    """The file passes the first check, then opening it fails (as root, permissions cannot make it fail)."""
    path = tmp_path / "spec.toml"
    path.write_text("x = [[1.0, 2.0]]\ntokens = [\"a\"]\n", encoding="utf-8")
    real_open = os.open

    def refusing_open(name, *args, **kwargs):
        if os.fspath(name) == str(path):
            raise exc_type(number, os.strerror(number), str(path))
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    code, _, err = run(capsys, "explain", str(path), "--lang", "ko")
    assert code == 2 and texts.KO[f"error.os.{errno.errorcode[number]}"] in err, err
    assert_korean_line(err, tmp_path)
    code, _, english = run(capsys, "explain", str(path))
    assert code == 2 and english.endswith(f"({os.strerror(number)})\n"), english


# ------------------------------------------------------------------ TOML
# (document, where tomllib stops: (line, column) or None for the end of the document), by construction
TOML_CASES = [
    ("x = = 1\n", (1, 5)),                              # a value expected after '='
    ("a = 1\nb = = 2\n", (2, 5)),
    ("a = 1\na = 2\n", (2, 6)),                         # a key given twice
    ("x = [1, 2\n", None),                              # an array never closed
    ("x 1\n", (1, 3)),                                  # no '=' after the key
]


@pytest.mark.parametrize("body, where", TOML_CASES, ids=[f"toml{i}" for i in range(len(TOML_CASES))])
def test_toml_errors_say_where_in_korean(capsys, tmp_path, body, where):
    import tomllib

    with pytest.raises(tomllib.TOMLDecodeError) as caught:
        tomllib.loads(body)
    path = tmp_path / "bad.toml"
    path.write_text(body, encoding="utf-8")
    code, _, err = run(capsys, "explain", str(path), "--lang", "ko")
    expected = texts.text("ko", "error.toml.at", line=where[0], column=where[1]) if where else texts.KO["error.toml.end"]
    assert code == 2 and err.endswith(f"TOML 형식이 잘못되었다: {expected}\n"), err
    assert_korean_line(err, tmp_path)
    code, _, english = run(capsys, "explain", str(path))
    assert english == f"qkv: error: {path}: malformed TOML: {str(caught.value).splitlines()[0]}\n"
    at = f"(at line {where[0]}, column {where[1]})" if where else "(at end of document)"
    assert english.endswith(at + "\n"), english                # tomllib agrees with the constructed position


# ------------------------------------------------------------------ saved traces
def _step(**fields):
    return {"format": "qkv-trace", "title": "t", "meta": {}, "steps": [{"name": "x", "shape": [2], "values": [1, 2],
                                                                         **fields}]}


# (document, the English the message has said since saved traces were read: an independent wording check)
TRACE_CASES = [
    (_step(name=1), 'a step\'s "name" must be a string, got 1'),
    (_step(dtype="U5"), 'step "x": dtype "U5" is not a number type'),
    (_step(shape=[2, "a"]), 'step "x": shape [2, "a"] is not a list of at most'),
    (_step(shape=[2], values=[1]), 'step "x": the values do not have shape [2] (a list of 1 where a list of 2 belongs'),
    (_step(shape=[2], values=7), 'step "x": the values do not have shape [2] (7 where a list of 2 belongs'),
    (_step(values=[1, "a"]), 'step "x": "a" is not a number'),
    (_step(note=3), 'step "x": "note" must be a string'),
    (_step(meta=[]), 'step "x": "meta" must be an object'),
]
# the documents `qkv explain` refuses before the trace reader sees them (spec.read_saved_trace): read by the
# library (Trace.from_json, as serve's uploads and a notebook read them)
LIBRARY_CASES = [
    ({"format": "qkv-trace", "steps": 3}, '"steps" must be a list, got int'),
    ({"format": "qkv-trace", "steps": [5]}, "a step must be an object, got int"),
    ({"format": "qkv-trace", "steps": [], "meta": [], "title": "t"}, '"meta" must be an object and "title" a string'),
    ({"format": "other"}, 'not a qkv trace: the JSON has no "format": "qkv-trace" field'),
]


@pytest.mark.parametrize("document, english", LIBRARY_CASES, ids=[f"library{i}" for i in range(len(LIBRARY_CASES))])
def test_trace_reader_errors_are_korean(document, english):
    import json

    from qkv.errors import InputError
    from qkv.trace import Trace

    with pytest.raises(InputError) as caught:
        Trace.from_json(json.dumps(document), source="saved.json")
    assert caught.value.say("en") == f"saved.json: {english}"
    said = caught.value.say("ko")
    assert HANGUL.search(said) and korean_only(said, words_of("steps", "meta", "title", "format")) == [], said


@pytest.mark.parametrize("document, english", TRACE_CASES, ids=[f"trace{i}" for i in range(len(TRACE_CASES))])
def test_saved_trace_errors_are_korean(capsys, tmp_path, document, english):
    path = tmp_path / "saved.json"
    path.write_text(__import__("json").dumps(document), encoding="utf-8")
    code, _, said = run(capsys, "explain", str(path))
    assert code == 2 and english in said, said
    code, _, err = run(capsys, "explain", str(path), "--lang", "ko")
    assert code == 2
    # the fields and dtype names as the file spells them
    assert_korean_line(err, tmp_path, "U5", "note", "meta", "name", "dtype", "bool")
