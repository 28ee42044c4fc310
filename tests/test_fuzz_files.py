"""Fuzz the files and uploads qkv reads (issue 22, part 4: what an adversarial pass broke).

Generated hostile inputs, by class, each through every route that reads it:

1. file kinds: devices (/dev/zero read until the OOM killer came), directories, named pipes (a
   read blocks forever), sockets, links to them, missing and oversized files — through the one
   reader (`qkv._io.read_bytes` / `read_text`) and every command that reads a file;
2. saved traces whose steps name a non-numeric dtype ("U50000000": 121 bytes took `qkv explain` to
   1.6 GB), impossible shapes or values that are not numbers — through `Trace.from_json`,
   `qkv explain FILE` and `qkv serve`'s upload, with the memory they allocate measured;
3. state-changing requests to `qkv serve` with every method × Origin × route, each with a seeded
   sample of the Sec-Fetch-Site × Content-Type pairs (and every combination the rule lets through),
   judged against the rule written down independently here;
4. `qkv bench --from-json` documents mutated at random (keys removed, values of other types,
   control characters, deep nesting).

Every refusal is one line: an InputError (the CLI: exit status 2, one ``qkv: error:`` line on stderr,
nothing on stdout, no traceback), or a JSON ``{"error": …}`` answer from the server.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import random
import socket
import threading
import tracemalloc
from pathlib import Path

import pytest

from qkv import InputError
from qkv._io import read_bytes, read_text
from qkv.cli import main
from qkv.spec import read_document, read_saved_trace
from qkv.trace import MAX_SAVED_DIMS, MAX_SAVED_ELEMENTS, Trace

SEED = 22
CASES: dict[str, int] = {}          # class → cases run (summed in the last test, for docs/reliability.md)


def _count(kind: str, n: int = 1) -> None:
    CASES[kind] = CASES.get(kind, 0) + n


def _one_cli_line(capsys, argv: list[str]) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("qkv: error: "), (argv, code, err)
    assert "Traceback" not in err and out == "", (argv, out)
    return lines[0]


def _bounded(call, seconds: float = 20.0):
    """Run ``call`` in a thread; a read that blocks (a named pipe) fails the test instead of hanging it."""
    result: list = []

    def target():
        try:
            result.append(("ok", call()))
        except BaseException as exc:        # handed back to the test's thread
            result.append(("raised", exc))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the read blocked"
    kind, value = result[0]
    if kind == "raised":
        raise value
    return value


# ------------------------------------------------------------------ 1. file kinds
def _file_kinds(folder: Path) -> dict[str, tuple[str, str]]:
    """name → (path, the words the refusal must hold)."""
    (folder / "dir.json").mkdir()
    os.mkfifo(folder / "pipe.json")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(folder / "sock.json"))
    (folder / "zero.json").symlink_to("/dev/zero")
    (folder / "pipe-link.json").symlink_to(folder / "pipe.json")
    (folder / "loop.json").symlink_to(folder / "loop.json")
    (folder / "dangling.json").symlink_to(folder / "nowhere.json")
    with open(folder / "huge.json", "wb") as handle:
        handle.truncate(300 * 2**20)                    # sparse: refused by its size, never read
    kinds = {
        "/dev/zero": ("/dev/zero", "is a character device"),
        "/dev/urandom": ("/dev/urandom", "is a character device"),
        "/dev/null": ("/dev/null", "is a character device"),
        "/dev/full": ("/dev/full", "is a character device"),
        "directory": (str(folder / "dir.json"), "is a directory"),
        "named pipe": (str(folder / "pipe.json"), "is a named pipe (FIFO)"),
        "link to a named pipe": (str(folder / "pipe-link.json"), "is a named pipe (FIFO)"),
        "socket": (str(folder / "sock.json"), "is a socket"),
        "link to /dev/zero": (str(folder / "zero.json"), "is a character device"),
        "link loop": (str(folder / "loop.json"), "cannot be read"),
        "dangling link": (str(folder / "dangling.json"), "symbolic link to a missing file"),
        "missing": (str(folder / "none.json"), "not found"),
        "300 MiB": (str(folder / "huge.json"), "MiB"),
        "/dev": ("/dev", "is a directory"),
    }
    if os.path.exists("/dev/sda") or os.path.exists("/dev/loop0"):
        block = "/dev/sda" if os.path.exists("/dev/sda") else "/dev/loop0"
        kinds["block device"] = (block, "is a block device")
    return kinds


def test_every_reader_refuses_every_file_kind(tmp_path, capsys):
    kinds = _file_kinds(tmp_path)
    readers = {
        "read_bytes": lambda p: read_bytes(p, limit=2**20),
        "read_text": lambda p: read_text(p),
        "example file": lambda p: read_document(p),
        "Trace file": lambda p: Trace.from_json(read_text(p), source=p),
    }
    for (name, (path, words)), (reader, read) in itertools.product(kinds.items(), readers.items()):
        with pytest.raises(InputError) as info:
            _bounded(lambda: read(path))
        message = str(info.value)
        assert "\n" not in message and (words in message or (name == "300 MiB" and "at most" in message)), \
            (name, reader, message)
        _count("file kinds × readers")
    commands = {"qkv explain": ["explain"], "qkv bench --from-json": ["bench", "--from-json"]}
    for (name, (path, words)), (command, argv) in itertools.product(kinds.items(), commands.items()):
        line = _bounded(lambda: _one_cli_line(capsys, argv + [path]))
        assert words in line or (name == "300 MiB" and "at most" in line), (name, command, line)
        _count("file kinds × commands")


# ------------------------------------------------------------------ 2. saved traces
HOSTILE_DTYPES = ["U50000000", "<U50000000", "U", "S100000000", "V400000000", "O", "object", "complex128", "c16",
                  "datetime64[ns]", "m8", "float128", "longdouble", "f8", ">f8", "<f8", "int", "str", "bytes",
                  "(2,)f8", "f8,f8", "[('a', 'f8')]", "", "FLOAT64", "float64\u0000", " float64", 5, None, [],
                  {"U": 1}, True, 1.5]
HOSTILE_SHAPES = [[-1, 4], [4, -1], [2**62, 2**62], [0, 2**62, 2**62], [MAX_SAVED_ELEMENTS + 1],
                  [2**14, 2**14], [1.5, 2], ["2", 2], [True, 4], 4, None, "2,2", [[2], [2]],
                  [1] * (MAX_SAVED_DIMS + 1), [2, 3], [5], [], {"0": 2}]
HOSTILE_VALUES = ["abc", {"a": 1}, [[1, "x"], [3, 4]], [[1, None], [3, 4]], [[1, [2]], [3, 4]],
                  [[1, {"v": 2}], [3, 4]], [[1, "1e999"], [3, 4]], [[1, "0x10"], [3, 4]], None, True]
HOSTILE_STEPS = [5, "step", [], None, {"values": [1], "shape": [1]}, {"name": 5, "values": [1], "shape": [1]},
                 {"name": "x", "values": [1], "shape": [1], "meta": []},
                 {"name": "x", "values": [1], "shape": [1], "formula": 5}]
GOOD_STEP = {"name": "x", "values": [[1.0, 2.0], [3.0, 4.0]], "shape": [2, 2], "dtype": "float64"}


def _hostile_traces() -> list[tuple[str, dict]]:
    docs = []

    def trace_with(step) -> dict:
        return {"format": "qkv-trace", "title": "t", "meta": {}, "steps": [GOOD_STEP, step]}

    for dtype in HOSTILE_DTYPES:
        for values in ([1, 2, 3], [[1.0, 2.0], [3.0, 4.0]]):
            shape = [3] if len(values) == 3 else [2, 2]
            docs.append((f"dtype {dtype!r}", trace_with({"name": "y", "values": values, "shape": shape, "dtype": dtype})))
    for shape in HOSTILE_SHAPES:
        for values in ([[1.0, 2.0], [3.0, 4.0]], []):
            docs.append((f"shape {shape!r}", trace_with({"name": "y", "values": values, "shape": shape})))
    for values in HOSTILE_VALUES:
        docs.append((f"values {values!r}", trace_with({"name": "y", "values": values, "shape": [2, 2]})))
    for step in HOSTILE_STEPS:
        docs.append((f"step {step!r}", trace_with(step)))
    for top in ({"steps": 5}, {"steps": {"a": 1}}, {"meta": []}, {"title": 5}, {"format": "qkv-tracex"}):
        docs.append((f"top {top!r}", {**trace_with(GOOD_STEP), **top}))
    return docs


def test_hostile_saved_traces_are_refused_before_any_array(tmp_path, capsys):
    """Each hostile document: refused with one line by Trace.from_json, by the saved-trace reader of
    `qkv explain` (in-process and through the command) — and the memory allocated while refusing it
    stays under 8 MiB (the documents are under 2 KiB; "U50000000" allocated 200 MB per value)."""
    docs = _hostile_traces()
    assert len(docs) > 100
    tracemalloc.start()
    try:
        for n, (label, doc) in enumerate(docs):
            text = json.dumps(doc)
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            with pytest.raises(InputError) as info:
                Trace.from_json(text, source="t.json")
            peak = tracemalloc.get_traced_memory()[1] - base
            assert peak < 8 * 2**20, (label, peak)
            assert str(info.value).startswith("t.json: ") and "\n" not in str(info.value), (label, str(info.value))
            with pytest.raises(InputError) as info:
                read_saved_trace(doc, source="t.json")
            assert info.value.field == "trace" and "\n" not in str(info.value), label
            _count("saved traces × {Trace.from_json, the saved-trace reader}", 2)
    finally:
        tracemalloc.stop()
    for n, (label, doc) in enumerate(docs):
        path = tmp_path / f"trace{n}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        _one_cli_line(capsys, ["explain", str(path)])
        _count("saved traces × qkv explain")


def test_a_saved_trace_still_reads_back_exactly():
    """The checks refuse only what qkv never writes: every dtype a Trace records reads back bit for bit."""
    import numpy as np

    trace = Trace("t", {"tokens": ["a", "b"]})
    rng = np.random.default_rng(SEED)
    trace("x", rng.standard_normal((2, 3)))
    trace("mask", np.array([[0.0, -np.inf], [0.0, 0.0]]))
    trace("ids", np.array([3, 1, 2], dtype=np.int64))
    trace("flags", np.array([True, False]))
    trace("scalar", np.float64(2.5))
    back = Trace.from_json(trace.to_json())
    for step, again in zip(trace, back):
        assert again.value.dtype == step.value.dtype and again.value.shape == step.value.shape
        np.testing.assert_array_equal(again.value, step.value)


def test_hostile_uploads_to_serve_are_one_line_and_allocate_nothing_large(loaded_serve):
    """The same documents posted to `qkv serve` from its own page: 400 with one JSON line, and the
    server's traced allocations stay under 16 MiB over all of them (the 121-byte "U50000000" upload
    took the server from 191 MB to 1.71 GB in one request)."""
    client, own = loaded_serve
    docs = _hostile_traces()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for label, doc in docs:
            response = client.post("/api/upload", params={"filename": "t.json"}, content=json.dumps(doc).encode(),
                                   headers=own)
            assert response.status_code == 400, (label, response.text)
            assert "\n" not in response.json()["error"], label
            _count("saved traces × serve upload")
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, peak


# ------------------------------------------------------------------ 3. cross-origin requests
@pytest.fixture(scope="module")
def loaded_serve(tmp_path_factory):
    from starlette.testclient import TestClient

    from qkv import models, serve

    app = serve.create_app({"minilm": models.load("minilm")})
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        yield client, {"Origin": "http://127.0.0.1:8000", "Sec-Fetch-Site": "same-origin",
                       "Content-Type": "application/octet-stream"}


ORIGINS = [None, "http://127.0.0.1:8000", "http://evil.example", "null", "http://127.0.0.1", "http://127.0.0.1:8001",
           "https://127.0.0.1:8000", "http://localhost:8000", "http://127.0.0.1:8000.evil.example", "",
           "HTTP://127.0.0.1:8000"]
SITES = [None, "same-origin", "same-site", "cross-site", "none", "SAME-ORIGIN", "garbage"]
TYPES = [None, "application/json", "application/json; charset=utf-8", "application/octet-stream", "text/plain",
         "text/plain; charset=utf-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b",
         "application/toml"]
ROUTES = {"/api/upload": b"x = ", "/api/whatif": b'{"name": "no such example"}'}


def _allowed(origin, site, media, path) -> bool:
    """The rule, written down here on its own: a browser's cross-site request always carries an Origin
    other than the server's, or Sec-Fetch-Site other than same-origin, or is a form/text type."""
    own = "http://127.0.0.1:8000"
    if origin is not None and origin.lower() != own:
        return False
    if site is not None and site.lower() != "same-origin":
        return False
    kind = (media or "").split(";")[0].strip().lower()
    if kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        return False
    return path != "/api/whatif" or kind == "application/json"


METHODS = ("POST", "PUT", "DELETE")
PER_CLASS = 8           # (Sec-Fetch-Site, Content-Type) pairs drawn for each method × origin × route


def _cross_origin_requests() -> list[tuple]:
    """The requests sent: a seeded sample of the 4,158 combinations that keeps every class.

    - every method × Origin value × route (66 classes; each Origin value is its own kind: absent, the
      server's, foreign, "null", no port, another port, https, localhost, a suffix, empty, upper case)
      gets PER_CLASS distinct (Sec-Fetch-Site, Content-Type) pairs, dealt from a seeded shuffle of the 63
      pairs cycled per route, so every Sec-Fetch-Site × Content-Type pair also meets every route at least
      4 times (33 classes × 8 slots over 63 pairs), under different origins and methods;
    - every combination the rule lets through (189: the server's own origin, absent or in upper case,
      same-origin or absent Sec-Fetch-Site, a non-form type) is sent in full: these are the few that reach
      the route, and each one of them flipped by one header is among the refusals above.
    The full product took ~40 s of one busy worker for the same classes."""
    rng = random.Random(SEED)
    chosen = set()
    for path in ROUTES:
        pairs = list(itertools.product(SITES, TYPES))
        rng.shuffle(pairs)
        slot = 0
        for origin, method in itertools.product(ORIGINS, METHODS):
            for _ in range(PER_CLASS):
                site, media = pairs[slot % len(pairs)]
                chosen.add((origin, site, media, path, method))
                slot += 1
    for origin, site, media, path, method in itertools.product(ORIGINS, SITES, TYPES, ROUTES, METHODS):
        if _allowed(origin, site, media, path):
            chosen.add((origin, site, media, path, method))
    order = {value: n for n, value in enumerate(itertools.product(ORIGINS, SITES, TYPES, ROUTES, METHODS))}
    return sorted(chosen, key=order.__getitem__)


def test_the_cross_origin_sample_keeps_every_class():
    sample = _cross_origin_requests()
    classes = {(o, p, m) for o, _, _, p, m in sample}
    assert classes == set(itertools.product(ORIGINS, ROUTES, METHODS))
    assert {(s, t, p) for _, s, t, p, _ in sample} == set(itertools.product(SITES, TYPES, ROUTES))
    every = itertools.product(ORIGINS, SITES, TYPES, ROUTES, METHODS)
    assert {r for r in every if _allowed(*r[:4])} <= set(sample)
    assert len(sample) < 4158 // 4


def test_cross_origin_requests_against_the_rule(loaded_serve):
    client, _ = loaded_serve
    refused = passed = 0
    for origin, site, media, path, method in _cross_origin_requests():
        body = ROUTES[path]
        headers = {k: v for k, v in (("Origin", origin), ("Sec-Fetch-Site", site), ("Content-Type", media))
                   if v is not None}
        response = client.request(method, path, params={"filename": "t.toml"}, content=body, headers=headers)
        expected = _allowed(origin, site, media, path)
        if expected:
            # past the check: the route's own answer (400 bad file, 404 unknown example, 405 method)
            assert response.status_code in (400, 404, 405), (origin, site, media, path, method, response.text)
            passed += 1
        else:
            assert response.status_code == 403, (origin, site, media, path, method, response.text)
            assert response.json()["error"].startswith("refused: "), response.text
            refused += 1
        _count("cross-origin requests")
    assert refused > 400 and passed == 189


# ------------------------------------------------------------------ 4. bench --from-json
def _bench_result() -> dict:
    """A `qkv bench --json` result with every field the printer reads (values made up, shapes real)."""
    def row(impl, t, causal, **extra):
        return {"case": "attention", "impl": impl, "batch": 1, "heads": 8, "t": t, "width": 64, "causal": causal,
                "seconds": 0.0123, "gflops": 45.6, "vs_torch": 1.2, "qkv_speedup": 2.5, "pair": "torch sdpa",
                "mask": None, "vs_gemm": 0.4, "peak_mib": 3.5, "memory_method": "tracemalloc", "skipped": None,
                "times": [0.0123], **extra}

    return {"machine": {"gemm_n": 2048, "gemm_gflops": 101.5, "blas": "openblas", "numpy": "2.0", "torch": "2.5",
                        "cpus": 2, "cpu": "x", "load_average_before": 1.0, "load_average_after": 1.1},
            "rows": [row("qkv blocked", 512, False), row("torch sdpa", 512, False), row("plain reference", 512, True)],
            "memory": [row("qkv blocked", 65536, False, case="memory")],
            "masked": [row("qkv blocked (mask_mod)", 4096, False, mask="sliding window W=256")],
            "memory_inputs_mib": 48.0,
            "decode": {"t": 4096, "d_model": 512, "heads": 8, "ms_per_token_with_cache": 1.5,
                       "ms_per_token_without_cache": 40.0, "speedup": 26.7},
            "notes": ["a note"], "timing": "round-robin"}


JUNK = ["", "x", "\x1b[2J\x1b[31mred", "[bold]markup[/]", "[/]", -1, 0, 10**30, 1.5, True, None, [], {}, [[[]]],
        {"a": {"b": {}}}, "é한\u202e"]


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from _paths(item, prefix + (n,))


def test_bench_from_json_random_mutations(tmp_path, capsys):
    """Seeded mutations of a full result: a key removed, a value replaced by junk of another type or a
    string with control characters. Each prints (control characters shown, never sent) or is one line."""
    rng = random.Random(SEED)
    good = _bench_result()
    path = tmp_path / "result.json"
    path.write_text(json.dumps(good), encoding="utf-8")
    assert main(["bench", "--from-json", str(path)]) == 0
    capsys.readouterr()
    places = [p for p in _paths(good) if p]
    outcomes = {"printed": 0, "refused": 0}
    for n in range(400):
        doc = copy.deepcopy(good)
        for _ in range(rng.choice((1, 1, 2))):
            place = rng.choice(places)
            parent = doc
            try:
                for part in place[:-1]:
                    parent = parent[part]
                if rng.random() < 0.3 and isinstance(parent, dict):
                    parent.pop(place[-1], None)
                else:
                    parent[place[-1]] = rng.choice(JUNK)
            except (KeyError, IndexError, TypeError):      # an earlier mutation removed the way there
                pass
        path.write_text(json.dumps(doc), encoding="utf-8")
        code = main(["bench", "--from-json", str(path)])
        out, err = capsys.readouterr()
        assert "Traceback" not in err and "\x1b" not in out + err, (doc, err)
        if code == 0:
            outcomes["printed"] += 1
        else:
            lines = err.strip().splitlines()
            assert code == 2 and len(lines) == 1 and lines[0].startswith("qkv: error: "), (code, err)
            assert out == ""
            outcomes["refused"] += 1
        _count("bench --from-json mutations")
    assert outcomes["printed"] > 10 and outcomes["refused"] > 100, outcomes
    deep = tmp_path / "deep.json"
    for depth in (65, 1000, 200_000):
        deep.write_text("[" * depth + "]" * depth, encoding="utf-8")
        assert "nested more than 64" in _one_cli_line(capsys, ["bench", "--from-json", str(deep)])
        _count("bench --from-json mutations")


# ------------------------------------------------------------------ 5. API errors name API fields
def test_api_errors_name_the_parameter_never_a_cli_option(loaded_serve):
    """Every GET route × every parameter × junk values × en/ko: an error names the parameter (`layer`),
    never a command-line option (`--layer`) or argument (`TEXT`); word=0 is refused, never read as 1."""
    from starlette.testclient import TestClient

    from qkv import models, serve

    translator, why = serve.load_translator()
    assert translator is not None, why
    app = serve.create_app({"minilm": models.load("minilm")}, translator=translator)
    junk = ["-1", "99", "x", "", "zzz", "0", "1e3", "²", "9" * 30]
    base = {"/api/trace": {"text": "the cat", "layer": "0", "head": "0"},
            "/api/explain": {"text": "the cat", "layer": "0", "head": "0"},
            "/api/example": {"name": "self-attention"}, "/api/tokens": {"text": "the cat"},
            "/api/overview": {"text": "the cat"}, "/api/translate": {"text": "I love you", "to": "ko"},
            "/api/translate/trace": {"text": "I love you", "to": "ko", "layer": "0"},
            "/api/translate/explain": {"text": "I love you", "to": "ko", "layer": "0", "word": "1"}}
    names = {"/api/trace": ["layer", "head", "query", "steps", "model", "text"],
             "/api/explain": ["layer", "head", "query", "digits", "lang", "model"],
             "/api/example": ["name", "query", "lang", "digits"], "/api/tokens": ["text", "model"],
             "/api/overview": ["text", "model"], "/api/translate": ["text", "to", "lang"],
             "/api/translate/trace": ["text", "to", "layer", "word", "steps"],
             "/api/translate/explain": ["text", "to", "layer", "word", "lang", "digits"]}
    errors = 0
    with TestClient(app, base_url="http://127.0.0.1") as client:
        for route, fields in names.items():
            for name, value, lang in itertools.product(fields, junk, ("en", "ko")):
                params = {**base[route], name: value, **({} if name == "lang" else {"lang": lang})}
                response = client.get(route, params=params)
                _count("API parameters")
                if response.status_code < 400:
                    continue
                errors += 1
                line = response.json()["error"]
                assert "--" not in line and not line.startswith("TEXT") and "\n" not in line, (route, name, line)
        zero = client.get("/api/translate/trace", params={**base["/api/translate/trace"], "word": "0"})
        assert zero.status_code == 400 and zero.json()["error"].startswith("word: 0")
    assert errors > 300


def test_zz_case_count():
    """The total, for docs/reliability.md (printed with -s; asserted so a shrunken fuzz is noticed)."""
    total = sum(CASES.values())
    print("\nfuzz cases:", total, CASES)
    if len(CASES) == 8:                    # the whole file ran (not one test picked with -k)
        assert total > 2200, CASES         # 2,290 (the cross-origin requests sampled: 693 of 4,158)
        assert CASES["cross-origin requests"] == len(_cross_origin_requests()), CASES
