"""`qkv serve` under stress (issue 32 §4): clients that never read a large answer, bodies cut off mid-way, and JSON
strings that are no text (a lone surrogate, "\\ud800").

The server runs as `qkv serve` runs it (`serve.server`: uvicorn with qkv's protocol) in a thread, on a free port;
every socket has a timeout, so a hang fails instead of stalling.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import tomllib
import tracemalloc

import pytest
from starlette.testclient import TestClient

import qkv
from qkv import serve
from qkv.trace import Trace

from test_serve import BASE, GOOD_EXAMPLE, _good_body, _post_routes, tiny_bert

LONG_TEXT = " ".join(["the cat sat on the mat while the dog slept"] * 50)     # 500 words, 502 tokens


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """A random BERT of 512 positions: its whole-model trace on LONG_TEXT is about 21 MB of JSON."""
    return serve.load_models([tiny_bert(tmp_path_factory.mktemp("models") / "wide-bert", max_positions=512)],
                             minilm=False)


@pytest.fixture(scope="module")
def client(wide):
    with TestClient(serve.create_app(wide), base_url=BASE, raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.fixture()
def live(wide, monkeypatch):
    """(port, the log records uvicorn and the app wrote) of the app served as `qkv serve` serves it; a stalled
    answer is dropped after 2 s here (`serve.WRITE_SECONDS`)."""
    monkeypatch.setattr(serve, "WRITE_SECONDS", 2.0)
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    sock = serve.listen("127.0.0.1", 0)
    server = serve.server(serve.create_app(wide), sock)      # configures uvicorn's loggers: ours are added after
    handler = Keep(level=logging.DEBUG)
    loggers = [logging.getLogger(name) for name in ("uvicorn", "uvicorn.error", "uvicorn.access")]
    for logger in loggers:
        logger.addHandler(handler)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(400):
        if server.started:
            break
        time.sleep(0.05)
    yield sock.getsockname()[1], records
    server.should_exit = True
    thread.join(20)
    sock.close()
    for logger in loggers:
        logger.removeHandler(handler)


def _request(port: int, target: str) -> bytes:
    return f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()


def _whole_trace_target() -> str:
    from urllib.parse import urlencode

    return "/api/trace?" + urlencode({"model": "wide-bert", "text": LONG_TEXT})


def _read_all(conn: socket.socket, limit: float) -> bytes:
    conn.settimeout(limit)
    chunks = []
    while True:
        try:
            chunk = conn.recv(1 << 20)
        except (socket.timeout, ConnectionResetError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _body_of(response: bytes) -> bytes:
    head, _, body = response.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" not in head.lower():
        return body
    out, rest = bytearray(), body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        out += rest[:size]
        rest = rest[size + 2:]
    return bytes(out)


# ------------------------------------------------------------------ a large answer nobody reads
def test_the_streamed_trace_is_exactly_to_json(wide):
    """The whole-model trace is sent in pieces (`Trace.iter_json`): joined, the very text `to_json` writes."""
    import numpy as np

    from qkv.trace import Step

    model = next(iter(wide.values()))
    odd = Trace("odd «values»", {"k": [1, "ü"]}, [
        Step("inf and nan", np.array([[1.0, np.inf], [-np.inf, np.nan]] * 700), "f", "n", {"m": 1}),
        Step("empty", np.zeros((0, 5))), Step("scalar", np.array(3.5)), Step("mask", np.tri(40, dtype=bool)),
        Step("ints", np.arange(3000).reshape(30, 10, 10))])
    for trace in (model.trace(LONG_TEXT), model.trace("the cat", layer=1, head=0), qkv.examples.run("group-meeting"),
                  Trace("empty", {}, []), odd):
        assert "".join(trace.iter_json(numbers=1000)) == trace.to_json()


def test_a_served_whole_model_trace_is_the_librarys(client, wide):
    model = next(iter(wide.values()))
    response = client.get("/api/trace", params={"model": "wide-bert", "text": LONG_TEXT})
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    assert len(response.content) > 15 * 2**20
    got, expected = Trace.from_json(response.content), model.trace(LONG_TEXT)
    assert got.names() == expected.names()
    for a, b in zip(got.steps, expected.steps):
        assert (a.value == b.value).all()


def test_clients_that_never_read_a_whole_model_trace_hold_no_copy_of_it(live):
    """Four clients ask for the whole-model trace (21 MB of JSON) and never read a byte. Before, each pinned
    the whole answer in the server (the text, then its bytes in the connection's buffer: 8 clients took it
    from 166 MB to 1.24 GB on MiniLM); now the answer is streamed, at most a piece in flight per client, and
    a client that stops reading is dropped after WRITE_SECONDS."""
    port, _ = live
    target = _whole_trace_target()
    with socket.create_connection(("127.0.0.1", port), timeout=120) as conn:      # computes and caches it
        conn.sendall(_request(port, target))
        full = _body_of(_read_all(conn, 120))
    assert len(full) > 15 * 2**20
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        stalled = []
        for _ in range(4):
            conn = socket.create_connection(("127.0.0.1", port), timeout=60)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            conn.sendall(_request(port, target))
            stalled.append(conn)
        time.sleep(1.5)          # the answers start; each stops when its client's buffers are full
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        # stopped before the wait: tracing every allocation slowed the server's answers so much that two of
        # them had not yet filled their buffers (no stall begun) when the test read them, and reading then
        # drained one at 40 kB/s for 100 s
        tracemalloc.stop()
    assert held < 8 * 2**20, held
    time.sleep(3.5)              # past WRITE_SECONDS (2 s here) after each answer stalled: each is dropped
    ends = [_read_until_closed(conn, 10) for conn in stalled]
    for conn in stalled:
        conn.close()
    assert all(how in ("reset", "eof") for _, how in ends), ends        # closed by the server, none left open
    assert all(n < len(full) for n, _ in ends), (ends, len(full))


def _read_until_closed(conn: socket.socket, limit: float) -> tuple[int, str]:
    """(bytes read, how the reading ended: "reset" or "eof" when the server closed the connection, "open" when
    it was still open after ``limit`` seconds in all)."""
    deadline, count = time.monotonic() + limit, 0
    while (left := deadline - time.monotonic()) > 0:
        conn.settimeout(left)
        try:
            chunk = conn.recv(1 << 20)
        except socket.timeout:
            break
        except ConnectionResetError:
            return count, "reset"
        if not chunk:
            return count, "eof"
        count += len(chunk)
    return count, "open"


# ------------------------------------------------------------------ bodies cut off
@pytest.mark.parametrize("route", ["/api/practice/check", "/api/upload", "/api/whatif"])
def test_a_body_cut_off_mid_way_logs_no_traceback(live, route):
    """The client says Content-Length: 1000, sends 20 bytes and goes away. Before: "Exception in ASGI
    application" and a ClientDisconnect traceback in the server's log for each; now nothing is logged."""
    port, records = live
    body, kind, params = _good_body(route)
    query = "?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""
    head = (f"POST {route}{query} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {kind}\r\n"
            f"Content-Length: {len(body) + 1000}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(head + body[:20])
        time.sleep(0.3)
    time.sleep(1.0)
    said = [record.getMessage() for record in records if record.levelno >= logging.WARNING]
    assert said == [], said
    assert all(record.exc_info is None for record in records)


def test_every_post_route_is_covered(client):
    assert _post_routes(client.app) == ["/api/practice/check", "/api/upload", "/api/whatif"]


# ------------------------------------------------------------------ lone surrogates
LONE = ["\\ud800", "\\udfff", "a\\udc00b"]


@pytest.mark.parametrize("lone", LONE)
@pytest.mark.parametrize("where", ["whatif name", "whatif key", "practice answer", "upload token", "upload key"])
def test_a_lone_surrogate_in_a_json_body_is_a_400_naming_it(client, where, lone):
    """JSON may write "\\ud800" alone and Python's json reads it, but it is no character: the answer that
    repeated it failed to encode (500). Now every JSON the server parses is checked: 400, one line."""
    if where.startswith("whatif"):
        body = (f'{{"name": "{lone}", "factor": 2}}' if where == "whatif name"
                else f'{{"name": "self-attention", "{lone}": 1}}')
        response = client.post("/api/whatif", content=body.encode(), headers={"Content-Type": "application/json"})
    elif where == "practice answer":
        body = f'{{"name": "self-attention", "seed": 0, "question": 0, "answer": "{lone}"}}'
        response = client.post("/api/practice/check", content=body.encode(),
                               headers={"Content-Type": "application/json"})
    else:
        doc = tomllib.loads(GOOD_EXAMPLE)
        text = json.dumps(doc)
        if where == "upload token":
            text = text.replace(json.dumps(doc["tokens"][0]), f'"{lone}"', 1)
        else:
            text = text[:-1] + f', "{lone}": 1}}'
        response = client.post("/api/upload", params={"filename": "mine.json"}, content=text.encode(),
                               headers={"Content-Type": "application/octet-stream"})
    assert response.status_code == 400, response.text
    message = response.json()["error"]
    assert "surrogate" in message and "\n" not in message, message


def test_a_lone_surrogate_in_a_file_is_one_line_on_the_command_line(tmp_path, capsys):
    from qkv.cli import main

    doc = tomllib.loads(GOOD_EXAMPLE)
    text = json.dumps(doc).replace(json.dumps(doc["tokens"][0]), '"\\ud800"', 1)
    path = tmp_path / "mine.json"
    path.write_text(text, encoding="utf-8")
    assert main(["explain", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "surrogate" in captured.err, captured.err
