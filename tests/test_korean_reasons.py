"""The OS's reasons (errno) and the parsing libraries' own descriptions (json, tomllib, safetensors, tokenizers,
NumPy's .npy/.npz readers) inside a `--lang ko` error line are Korean, by class.

English keeps the OS's own words (strerror) and each library's message. Korean says each errno with
qkv.explain.texts' ``error.os.NAME`` (``error.os.other`` with its number for one the table lacks), and a
library's complaint by its class (``error.lib.*``) with where it stopped (line and column, or the end of the
document). Checked on every errno Python knows, on real runs (a full device, a name too long, a file that
cannot be opened for each OSError class) and on documents and files broken in one known way each, whose
error position is known by construction. The English detector is test_cli_lang_ko's `korean_only`.
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
# (document, where tomllib stops: (line, column) or None for the end of the document, the class's text key),
# by construction
TOML_CASES = [
    ("x = = 1\n", (1, 5), "toml.value"),                     # a value expected after '='
    ("a = 1\nb = = 2\n", (2, 5), "toml.value"),
    ("a = 1\na = 2\n", (2, 6), "toml.redefined"),            # a key given twice
    ("x = [1, 2\n", None, "toml.unclosed_array"),           # an array never closed
    ("x 1\n", (1, 3), "toml.equals"),                       # no '=' after the key
    ("[table\n", (1, 7), "toml.table_end"),                 # a table header never closed
    ("[[rows]\n", (1, 7), "toml.array_table_end"),
    ("x = 1 y\n", (1, 7), "toml.newline"),                  # two statements on one line
    ("x = {a = 1\n", (1, 11), "toml.unclosed_table"),
    ('x = "abc\n', (1, 9), "toml.character"),             # a line break inside a one-line string
    ('x = """abc', None, "unterminated"),
    ("= 1\n", (1, 1), "toml.statement"),
    ('x = "\\q"\n', (1, 8), "escape"),
    ("x = 1979-13-27\n", (1, 9), "toml.newline"),           # not a date: read as 1979, then "-13-27"
]


@pytest.mark.parametrize("body, where, kind", TOML_CASES, ids=[f"toml{i}" for i in range(len(TOML_CASES))])
def test_toml_errors_say_what_and_where_in_korean(capsys, tmp_path, body, where, kind):
    import tomllib

    with pytest.raises(tomllib.TOMLDecodeError) as caught:
        tomllib.loads(body)
    path = tmp_path / "bad.toml"
    path.write_text(body, encoding="utf-8")
    code, _, err = run(capsys, "explain", str(path), "--lang", "ko")
    what = texts.KO[f"error.lib.{kind}"]
    expected = (texts.text("ko", "error.lib.at", what=what, line=where[0], column=where[1]) if where
                else texts.text("ko", "error.lib.at_end", what=what))
    assert code == 2 and err.endswith(f"TOML 형식이 잘못되었다: {expected}\n"), err
    assert_korean_line(err, tmp_path)
    code, _, english = run(capsys, "explain", str(path))
    assert english == f"qkv: error: {path}: malformed TOML: {str(caught.value).splitlines()[0]}\n"
    at = f"(at line {where[0]}, column {where[1]})" if where else "(at end of document)"
    assert english.endswith(at + "\n"), english                # tomllib agrees with the constructed position


# ------------------------------------------------------------------ a parsing library's own words, by class
# JSON documents and the class of Python's json decoder's complaint, with where it stops (line, column), by
# construction
JSON_CASES = [
    ('{"a": 1 "b": 2}', (1, 9), "comma"),
    ('{"a": }', (1, 7), "value"),
    ("{'a': 1}", (1, 2), "key_name"),
    ('{"a" 1}', (1, 6), "colon"),
    ('{"a": 1} x', (1, 10), "extra"),
    ('{"a": "abc', (1, 7), "unterminated"),
    ('{"a": "a\tb"}', (1, 9), "control"),
    ('{"a": "\\q"}', (1, 8), "escape"),
    ('{"a": "\\u12"}', (1, 9), "escape"),
    ('{\n  "a": 1,\n  "b": \n}', (4, 1), "value"),
]


@pytest.mark.parametrize("body, where, kind", JSON_CASES, ids=[f"json{i}" for i in range(len(JSON_CASES))])
def test_json_errors_say_what_and_where_in_korean(capsys, tmp_path, body, where, kind):
    import json

    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(body)
    assert (caught.value.lineno, caught.value.colno) == where       # the construction is right
    path = tmp_path / "bad.json"
    path.write_text(body, encoding="utf-8")
    code, _, err = run(capsys, "explain", str(path), "--lang", "ko")
    assert code == 2 and err.endswith(f"JSON 형식이 잘못되었다: {texts.KO[f'error.lib.{kind}']} "
                                      f"({where[0]}행 {where[1]}열)\n"), err
    assert_korean_line(err, tmp_path)
    code, _, english = run(capsys, "explain", str(path))
    assert english == f"qkv: error: {path}: malformed JSON: {caught.value.msg} (line {where[0]}, column {where[1]})\n"


def test_a_huge_json_integer_is_korean(capsys, tmp_path):
    path = tmp_path / "big.json"
    path.write_text('{"x": ' + "9" * 5000 + "}", encoding="utf-8")
    code, _, err = run(capsys, "explain", str(path), "--lang", "ko")
    assert code == 2 and err.endswith(texts.KO["error.lib.digits"] + "\n"), err
    assert_korean_line(err, tmp_path)


def _raw_safetensors(header: bytes, tail: bytes = b"") -> bytes:
    return len(header).to_bytes(8, "little") + header + tail


def _good_safetensors() -> bytes:
    import numpy as np
    from safetensors.numpy import save

    return save({"w": np.arange(64, dtype=np.float32)})


# safetensors files broken in each way its reader names, with the class's text key
SAFETENSORS_CASES = {
    "short": (lambda: b"abc", "st.small"),
    "length": (lambda: b"\xff" * 8 + b"xx", "st.large"),
    "json": (lambda: _raw_safetensors(b"{x   "), "st.json"),
    "truncated": (lambda: _good_safetensors()[:-100], "st.incomplete"),
    "offsets": (lambda: _raw_safetensors(b'{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}}', b"\0" * 8),
                "st.tensor"),
}


def _readers():
    """Every reader of a safetensors file a command uses: a model's weights (whole and lazily opened), an
    example's array file, the translator's checkpoint; each returns the InputError it raises."""
    from qkv.errors import InputError
    from qkv.models import checkpoint, files

    def catch(call):
        with pytest.raises(InputError) as caught:
            call()
        return caught.value

    return {"read_tensors": lambda p: catch(lambda: files.read_tensors(p)),
            "safe_open": lambda p: catch(lambda: checkpoint._safe_open(p))}


@pytest.mark.parametrize("case", sorted(SAFETENSORS_CASES))
@pytest.mark.parametrize("reader", sorted(_readers()))
def test_safetensors_errors_are_korean_by_class(tmp_path, case, reader):
    make, kind = SAFETENSORS_CASES[case]
    path = tmp_path / "model.safetensors"
    path.write_bytes(make())
    error = _readers()[reader](path)
    said = error.say("ko")
    assert texts.KO[f"error.lib.{kind}"].split("{")[0] in said, said
    assert HANGUL.search(said) and korean_only(said, words_of(tmp_path)) == [], said
    assert "Error while deserializing" in error.say("en")           # English: the library's own words


@pytest.mark.parametrize("case", sorted(SAFETENSORS_CASES))
def test_an_example_array_in_a_broken_safetensors_file_is_korean(capsys, tmp_path, case):
    make, kind = SAFETENSORS_CASES[case]
    (tmp_path / "x.safetensors").write_bytes(make())
    spec = tmp_path / "spec.toml"
    spec.write_text('tokens = ["a", "b"]\nx = "x.safetensors"\n', encoding="utf-8")
    code, _, err = run(capsys, "explain", str(spec), "--lang", "ko")
    assert code == 2 and texts.KO[f"error.lib.{kind}"].split("{")[0] in err, err
    assert_korean_line(err, tmp_path, "x.safetensors")


def _npy() -> bytes:
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, np.arange(6.0).reshape(2, 3))
    return buffer.getvalue()


def _npz() -> bytes:
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, x=np.arange(6.0).reshape(2, 3))
    return buffer.getvalue()


# .npy/.npz files broken in each way NumPy names, with the class's text key
ARRAY_CASES = [
    ("x.npy", lambda: b"", "npy.empty"),
    ("x.npy", lambda: b"not an array at all", "npy.pickle"),
    ("x.npy", lambda: _npy()[:-8], "npy.short"),
    ("x.npy", lambda: _npy()[:20], "npy.header"),
    ("x.npz", lambda: b"PK\x03\x04 broken", "npy.zip"),
    ("x.npz", lambda: _npz()[:40], "npy.zip"),
]


@pytest.mark.parametrize("name, make, kind", ARRAY_CASES, ids=[f"array{i}" for i in range(len(ARRAY_CASES))])
def test_a_broken_array_file_is_korean_by_class(capsys, tmp_path, name, make, kind):
    (tmp_path / name).write_bytes(make())
    spec = tmp_path / "spec.toml"
    spec.write_text(f'tokens = ["a", "b"]\nx = "{name}"\n', encoding="utf-8")
    code, _, err = run(capsys, "explain", str(spec), "--lang", "ko")
    assert code == 2 and texts.KO[f"error.lib.{kind}"] in err, err
    assert_korean_line(err, tmp_path, name)
    code, _, english = run(capsys, "explain", str(spec))
    assert code == 2 and "cannot read array file" in english, english


# tokenizer.json documents, each refused by tokenizers (serde_json's words, or its own) for one class
TOKENIZER_CASES = [
    ('{"version": "1.0"', "eof", (1, 17)),
    ("[]", "type", (1, 2)),
    ("{}", "missing_field", (1, 2)),
    ('{"version": "1.0", "model": {"type": "Nope"}}', "no_variant", None),
    ("{x}", "key_string", (1, 2)),
    ('{"version" "1.0"}', "expected", (1, 12)),             # serde: expected `:`
    ("", "eof", (1, 0)),
]


@pytest.mark.parametrize("body, kind, where", TOKENIZER_CASES, ids=[f"tokenizer{i}" for i in range(len(TOKENIZER_CASES))])
def test_a_broken_tokenizer_is_korean_by_class(tmp_path, body, kind, where):
    from qkv.errors import InputError
    from qkv.models.files import read_tokenizer

    path = tmp_path / "tokenizer.json"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_tokenizer(path)
    english, said = caught.value.say("en"), caught.value.say("ko")
    assert texts.KO[f"error.lib.{kind}"].split("{")[0] in said or kind == "expected", said
    if kind == "expected":
        assert texts.text("ko", "error.lib.expected", what="':'") in said, said
    if where is not None:
        assert f"at line {where[0]} column {where[1]})" in english, english     # the library says where
        assert f"{where[0]}행 {where[1]}열: " in said, said
    assert HANGUL.search(said) and korean_only(said, words_of(tmp_path)) == [], said


def test_a_tokenizer_that_is_not_utf8_is_korean(tmp_path):
    from qkv.errors import InputError
    from qkv.models.files import read_tokenizer

    path = tmp_path / "tokenizer.json"
    path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(InputError) as caught:
        read_tokenizer(path)
    assert texts.KO["error.lib.not_utf8"] in caught.value.say("ko")
    assert korean_only(caught.value.say("ko"), words_of(tmp_path)) == []


def test_every_library_class_names_a_text_both_tables_have():
    """The class tables of `qkv.errors` name only keys both languages have, with the same placeholders."""
    from qkv import errors

    keys = {"error.lib." + key for table in (errors._JSON, errors._TOML, errors._SERDE, errors._SAFETENSORS,
                                             errors._NUMPY) for _, key in table}
    keys |= {k for k in texts.EN if k.startswith("error.lib.")}
    for key in keys:
        assert key in texts.EN and key in texts.KO, key
        assert texts.placeholders(texts.EN[key]) == texts.placeholders(texts.KO[key]), key
        assert HANGUL.search(texts.KO[key]) and korean_only(texts.text("ko", key, what="값", name="'x'", detail="값",
                                                                        line=1, column=2, at=3)) == [], key


def test_an_unknown_library_message_is_korean_and_points_to_english():
    import json

    from qkv.errors import reason

    unknown = Exception("something new the library says at line 2 column 3")
    assert reason(unknown, "en") == str(unknown)
    said = reason(unknown, "ko")
    assert said == texts.text("ko", "error.lib.at", what=texts.KO["error.lib.other"], line=2, column=3)
    assert reason(json.JSONDecodeError("A message json never had", "x", 0), "ko").startswith("1행 1열: ")


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


def test_python_own_words_about_a_saved_trace_are_not_english_in_korean(capsys, tmp_path):
    """A saved trace whose steps do not fit: English gives what Python said (the exception's class and
    words); Korean says that Python said it in English only and where to read it, with no English."""
    import json

    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps({"format": "qkv-trace", "meta": {"tokens": ["a"], "query": 0},
                                 "steps": [{"name": "weights", "values": [1.0], "shape": [1]}]}), encoding="utf-8")
    out = ["--format", "html", "--out", str(tmp_path / "o.html")]          # the page reads every step
    code, _, english = run(capsys, "explain", str(saved), *out)
    assert code == 2 and "the saved trace's steps do not fit together (" in english and "Error: " in english, english
    code, _, err = run(capsys, "explain", str(saved), *out, "--lang", "ko")
    assert code == 2 and texts.KO["error.python"] in err, err
    assert_korean_line(err, tmp_path, "trace")
