"""`qkv serve`'s JSON API through Starlette's TestClient (httpx): the answers are the library's own
Traces and explanations, the limits answer 413 / 422 / 429 with one line, and no request reaches
the file system (file opens observed with an audit hook)."""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import json
import shutil
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from starlette.testclient import TestClient

import qkv.examples
from qkv import models, serve
from qkv.cli import main as cli_main
from qkv.examples.runner import trace_spec
from qkv.explain import derivation_html
from qkv.serve.app import CSP, Limits
from qkv.spec import load_spec
from qkv.trace import Trace

BASE = "http://127.0.0.1"
JSON = {"Content-Type": "application/json"}       # /api/whatif takes this type only (a cross-site page cannot send it)
TEXT = "The cat sat on the mat."


# ------------------------------------------------------------------ fixtures
def tiny_bert(directory: Path, *, max_positions: int = 16, seed: int = 0) -> Path:
    """A random BERT (hidden 8, 2 layers × 2 heads, at most ``max_positions`` tokens) with MiniLM's tokenizer."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(seed)
    d, f, vocab = 8, 16, 30522
    tensors = {"embeddings.word_embeddings.weight": (vocab, d), "embeddings.position_embeddings.weight": (max_positions, d),
               "embeddings.token_type_embeddings.weight": (2, d), "embeddings.LayerNorm.weight": (d,),
               "embeddings.LayerNorm.bias": (d,)}
    for i in range(2):
        p = f"encoder.layer.{i}"
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            tensors[f"{p}.{name}.weight"], tensors[f"{p}.{name}.bias"] = (d, d), (d,)
        tensors[f"{p}.intermediate.dense.weight"], tensors[f"{p}.intermediate.dense.bias"] = (f, d), (f,)
        tensors[f"{p}.output.dense.weight"], tensors[f"{p}.output.dense.bias"] = (d, f), (d,)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[f"{p}.{norm}.weight"], tensors[f"{p}.{norm}.bias"] = (d,), (d,)
    arrays = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in tensors.items()}
    directory.mkdir(parents=True, exist_ok=True)
    save_file(arrays, str(directory / "model.safetensors"))
    config = {"model_type": "bert", "vocab_size": vocab, "hidden_size": d, "num_hidden_layers": 2,
              "num_attention_heads": 2, "intermediate_size": f, "max_position_embeddings": max_positions}
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    from qkv.models.files import locate      # qkv.models imports its submodules on first use (e0c2b64)

    shutil.copy(locate("minilm").tokenizer, directory / "tokenizer.json")   # its path: no load
    return directory


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    directory = tiny_bert(tmp_path_factory.mktemp("models") / "tiny-bert")
    return serve.load_models([directory])


@pytest.fixture(scope="module")
def decoders():
    """GPT-2 and a grouped-query Llama (RoPE, causal), tiny checkpoints made by transformers (tests/model_fixtures.py)."""
    from model_fixtures import built

    return serve.load_models([built("gpt2"), built("llama-gqa")], minilm=False)


@pytest.fixture(scope="module")
def client(loaded):
    with TestClient(serve.create_app(loaded), base_url=BASE) as test_client:
        yield test_client


def error(response) -> str:
    body = response.json()
    assert set(body) in ({"error"}, {"error", "field", "problem"}) and "\n" not in body["error"], body
    return body["error"]


def served_as(name: str, trace: Trace, model) -> Trace:
    """The library's trace as the server names it: by the model's name in the server, not its directory."""
    own = str(model.name)
    trace.title = trace.title.replace(own, name, 1)
    if trace.meta.get("model") == own:
        trace.meta["model"] = name
    return trace


def assert_same_trace(ours: Trace, expected: Trace, *, rtol: float = 0.0) -> None:
    assert ours.names() == expected.names()
    assert ours.title == expected.title
    assert json.loads(json.dumps(ours.meta)) == json.loads(json.dumps(expected.meta, default=lambda v: v.tolist()))
    for got, want in zip(ours.steps, expected.steps):
        assert got.formula == want.formula and got.shape == want.shape, got.name
        np.testing.assert_allclose(got.value, want.value, rtol=rtol, atol=0, err_msg=got.name)


# ------------------------------------------------------------------ the numbers are the library's
def test_models_lists_minilm_and_the_directory(client):
    body = client.get("/api/models").json()["models"]
    assert [m["name"] for m in body] == ["minilm", "tiny-bert"]
    assert body[0]["layers"] == 6 and body[0]["heads"] == 12 and body[0]["max_tokens"] == 256
    assert body[1]["layers"] == 2 and body[1]["heads"] == 2 and body[1]["max_tokens"] == 16


@pytest.mark.parametrize("name, layer, head, query", [("minilm", 2, 5, "cat"), ("minilm", 0, 11, None),
                                                       ("tiny-bert", 1, 0, "2")])
def test_trace_json_is_the_library_trace(client, loaded, name, layer, head, query):
    params = {"model": name, "text": TEXT, "layer": layer, "head": head}
    if query is not None:
        params["query"] = query
    response = client.get("/api/trace", params=params)
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    expected = served_as(name, loaded[name].trace(TEXT, layer=layer, head=head, query=query), loaded[name])
    # the same float32 computation in another thread; JSON carries every digit of the float64 copy
    assert_same_trace(Trace.from_json(response.text), expected, rtol=1e-6)


def test_decoders_trace_overview_and_length(decoders):
    with TestClient(serve.create_app(decoders), base_url=BASE) as client:
        described = {m["name"]: m for m in client.get("/api/models").json()["models"]}
        assert described["gpt2"]["max_tokens"] == 64 and described["llama-gqa"]["kind"] == "CausalLM"
        for name, layer, head in (("gpt2", 2, 3), ("llama-gqa", 1, 2)):
            response = client.get("/api/trace", params={"model": name, "text": TEXT, "layer": layer, "head": head,
                                                          "query": "cat"})
            expected = served_as(name, decoders[name].trace(TEXT, layer=layer, head=head, query="cat"), decoders[name])
            assert_same_trace(Trace.from_json(response.text), expected, rtol=1e-6)
            assert "mask" in expected and "weights" in expected
            body = client.get("/api/overview", params={"model": name, "text": TEXT}).json()
            weights = decoders[name].attention_weights(TEXT)
            levels = np.frombuffer(base64.b64decode(body["weights"]), dtype=np.uint8).reshape(weights.shape)
            assert np.abs(levels / 255 - weights).max() <= 0.5 / 255 + 1e-6
            assert not levels[..., np.triu_indices(weights.shape[-1], 1)[0], np.triu_indices(weights.shape[-1], 1)[1]].any()
        long_text = "the cat sat on the mat " * 20
        count = len(decoders["gpt2"].tokens(long_text))
        response = client.get("/api/trace", params={"model": "gpt2", "text": long_text, "layer": 0, "head": 0})
        assert count > 64 and response.status_code == 422
        assert f"{count} tokens" in error(response) and "at most 64" in error(response)


def test_trace_of_the_whole_model_and_a_step_filter(client, loaded):
    whole = Trace.from_json(client.get("/api/trace", params={"model": "minilm", "text": TEXT}).text)
    weights = loaded["minilm"].attention_weights(TEXT)                            # (L, H, T, T)
    assert whole.names() == [f"layer {l}/weights" for l in range(6)]
    np.testing.assert_allclose(np.stack([s.value for s in whole]), weights, rtol=1e-6, atol=1e-7)
    some = Trace.from_json(client.get("/api/trace", params={"model": "minilm", "text": TEXT, "layer": 1, "head": 3,
                                                             "steps": "weights,q_heads,mask?"}).text)
    assert some.names() == ["q_heads", "weights"]                # in the trace's order; MiniLM records no mask
    assert "no step named 'nope'" in error(client.get("/api/trace", params={
        "model": "minilm", "text": TEXT, "layer": 1, "head": 3, "steps": "weights,nope"}))


def test_overview_holds_every_head_quantised(client, loaded):
    body = client.get("/api/overview", params={"model": "minilm", "text": TEXT}).json()
    weights = loaded["minilm"].attention_weights(TEXT)
    assert body["shape"] == list(weights.shape) and body["tokens"] == loaded["minilm"].tokens(TEXT)
    levels = np.frombuffer(base64.b64decode(body["weights"]), dtype=np.uint8).reshape(weights.shape)
    assert np.abs(levels / body["scale"] - weights).max() <= 0.5 / 255 + 1e-6


def test_explain_is_the_library_derivation(client, loaded):
    params = {"model": "minilm", "text": TEXT, "layer": 3, "head": 4, "query": "mat", "lang": "ko"}
    body = client.get("/api/explain", params=params).json()
    trace = loaded["minilm"].trace(TEXT, layer=3, head=4, query="mat")
    assert body["query"] == trace.meta["query"] == 6
    assert body["html"] == derivation_html(trace, lang="ko")


@pytest.mark.parametrize("name", qkv.examples.names())
def test_worked_examples(client, name):
    body = client.get("/api/example", params={"name": name, "lang": "ko"}).json()
    expected = qkv.examples.run(name)
    assert_same_trace(Trace.from_dict(body["trace"]), expected)
    assert body["html"] == derivation_html(expected, lang="ko")


def test_examples_are_numbered_as_their_posts(client):
    """Every post counts from 1: serve sends each example's base with its trace (the page labels rows
    with it) and the note saying how the numbers shown meet the API's index; query= stays that index."""
    for name, token, number in (("self-attention", "love", 2), ("group-meeting", "lot", 4)):
        body = client.get("/api/example", params={"name": name}).json()
        assert body["trace"]["meta"]["token_base"] == 1 and body["trace"]["meta"]["head_base"] == 1
        assert f"“{token}” is token {number})" in body["html"] or f"&#8220;{token}&#8221; is token {number})" in body["html"]
    body = client.get("/api/example", params={"name": "self-attention", "query": "1"}).json()
    assert body["trace"]["meta"]["query"] == 1          # the HTTP API takes the 0-based index, as qkv's API


def test_style_is_the_one_colour_scale(client):
    from qkv.explain import style

    body = client.get("/api/style").json()
    assert body["gamma"] == style.WEIGHT_GAMMA and body["ticks"] == list(style.LEGEND_TICKS)
    assert [tuple(c) for c in body["stops"]] == list(style.BLUES_STOPS) and body["masked"] == style.MASKED_COLOUR


def test_examples_list(client):
    body = client.get("/api/examples").json()["examples"]
    assert [e["name"] for e in body] == qkv.examples.names()
    assert all(e["title"]["en"] and e["title"]["ko"] and e["title"]["en"] != e["title"]["ko"] for e in body)


GOOD_EXAMPLE = """title = "three tokens"
tokens = ["a", "b", "c"]
query = "b"
x = [[1.0, 0.0], [0.5, 1.0], [0.0, 2.0]]
w_q = [[1.0, 0.5], [0.0, 1.0]]
w_k = [[0.3, 0.2], [0.1, 0.9]]
w_v = [[1.0, 0.0], [0.2, 0.4]]
mask = "causal"
"""


def test_upload_runs_the_file_as_qkv_explain_does(client, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(GOOD_EXAMPLE, encoding="utf-8")
    expected = trace_spec(load_spec(path))
    body = client.post("/api/upload", params={"filename": "mine.toml"}, content=GOOD_EXAMPLE.encode()).json()
    got = Trace.from_dict(body["trace"])
    assert got.names() == expected.names()
    for a, b in zip(got.steps, expected.steps):
        np.testing.assert_array_equal(a.value, b.value)
    assert body["title"] == "three tokens" and body["html"] == derivation_html(expected, lang="en")
    as_json = json.dumps(__import__("tomllib").loads(GOOD_EXAMPLE))
    again = client.post("/api/upload", params={"filename": "mine.json"}, content=as_json.encode()).json()
    np.testing.assert_array_equal(Trace.from_dict(again["trace"])["weights"].value, expected["weights"].value)


def test_upload_a_saved_trace(client):
    saved = qkv.examples.run("projection")
    body = client.post("/api/upload", params={"filename": "saved.json"}, content=saved.to_json().encode()).json()
    assert_same_trace(Trace.from_dict(body["trace"]), saved)
    assert body["html"] == derivation_html(saved, lang="en")


BAD_FILES = [
    ("bad.toml", 'x = [1,\n'),                                              # malformed TOML
    ("bad.json", '{"x": [1, 2,'),                                           # malformed JSON
    ("list.json", "[1, 2]"),                                                # not an object
    ("nox.toml", 'tokens = ["a"]\nw_q = [[1.0]]\nw_k = [[1.0]]\nw_v = [[1.0]]\n'),  # x missing
    ("shape.toml", GOOD_EXAMPLE.replace("w_k = [[0.3, 0.2], [0.1, 0.9]]", "w_k = [[0.3, 0.2, 0.1]]")),
    ("field.toml", GOOD_EXAMPLE + "colour = 3\n"),                          # unknown field
    ("bytes.toml", "x = \"\xff\"\n"),                                       # not UTF-8 (written as latin-1)
    ("notes.txt", GOOD_EXAMPLE),                                            # unknown type
    ("trace.json", '{"format": "qkv-trace", "steps": [{"name": "weights", "shape": [2], "values": [1]}]}'),
]


@pytest.mark.parametrize("filename, text", BAD_FILES)
def test_a_bad_file_answers_the_line_the_cli_prints(client, tmp_path, capsys, filename, text):
    data = text.encode("latin-1") if filename == "bytes.toml" else text.encode()
    path = tmp_path / filename
    path.write_bytes(data)
    assert cli_main(["explain", str(path)]) == 2
    cli_line = capsys.readouterr().err.strip()
    response = client.post("/api/upload", params={"filename": filename}, content=data)
    assert response.status_code == 400
    assert "qkv: error: " + error(response).replace(filename, str(path), 1) == cli_line


def test_limits_are_checked_before_work(client, loaded):
    long_text = "word " * 300                                                    # > 256 tokens for MiniLM
    message = error(client.get("/api/trace", params={"model": "minilm", "text": long_text, "layer": 0, "head": 0}))
    assert "302 tokens" in message and "at most 256" in message
    response = client.get("/api/overview", params={"model": "tiny-bert", "text": "one two three four five six seven "
                                                   "eight nine ten eleven twelve thirteen fourteen fifteen"})
    assert response.status_code == 422 and "at most 16" in error(response)
    assert client.get("/api/overview", params={"model": "tiny-bert", "text": "one two three"}).status_code == 200
    assert client.get("/api/tokens", params={"model": "minilm", "text": "x" * 10_001}).status_code == 422
    cases = [({"model": "minilm", "text": TEXT, "layer": 6, "head": 0}, 400, "out of range"),
             ({"model": "minilm", "text": TEXT, "layer": "two", "head": 0}, 400, "not a whole number"),
             ({"model": "minilm", "text": TEXT, "layer": "9" * 5000, "head": 0}, 400, "at most 18 digits"),
             ({"model": "minilm", "text": TEXT, "layer": 0, "head": 0, "steps": ","}, 200, None),
             ({"model": "minilm", "text": TEXT, "head": 0}, 400, "needs layer"),
             ({"model": "gpt-5", "text": TEXT}, 404, "not loaded"),
             ({"model": "minilm"}, 400, "text: missing"),
             ({"model": "minilm", "text": "   "}, 400, "empty"),
             ({"model": "minilm", "text": TEXT, "layer": 0, "head": 0, "query": "dog"}, 400, "not one of the tokens")]
    for params, status, words in cases:
        response = client.get("/api/trace", params=params)
        assert response.status_code == status and (words is None or words in error(response)), (params, response.text)
    response = client.get("/api/explain", params={"model": "minilm", "text": TEXT, "layer": 0, "head": 0, "lang": "fr"})
    assert response.status_code == 400 and "lang" in error(response)


def test_oversized_upload_is_413_with_or_without_a_length(client):
    limit = Limits().upload_bytes
    response = client.post("/api/upload", params={"filename": "big.toml"}, content=b"#" * (limit + 1))
    assert response.status_code == 413 and "at most" in error(response)

    def chunks():                                                                # no Content-Length: streamed
        for _ in range(limit // 4096 + 2):
            yield b"#" * 4096

    response = client.post("/api/upload", params={"filename": "big.toml"}, content=chunks())
    assert response.status_code == 413 and "at most" in error(response)
    ok = client.post("/api/upload", params={"filename": "ok.toml"}, content=GOOD_EXAMPLE.encode() + b"#" * 1000)
    assert ok.status_code == 200


class SlowModel:
    """Stands for a model whose trace takes a while: it waits for ``release``."""

    def __init__(self, model):
        self.config, self.name, self.tokenizer, self.pooling = model.config, "slow", model.tokenizer, model.pooling
        self.model, self.entered, self.release = model, threading.Event(), threading.Event()

    def tokens(self, text):
        return self.model.tokens(text)

    def trace(self, text, **options):
        self.entered.set()
        assert self.release.wait(30)
        return self.model.trace(text, **options)


def test_too_many_requests_at_once_is_429(loaded):
    slow = SlowModel(loaded["tiny-bert"])
    app = serve.create_app({"slow": slow}, limits=Limits(workers=1, queue=1))
    with TestClient(app, base_url=BASE) as client:
        params = {"model": "slow", "text": "one two", "layer": 0, "head": 1}
        answers = []
        threads = [threading.Thread(target=lambda: answers.append(client.get("/api/trace", params=params)))
                   for _ in range(2)]
        for thread in threads:                     # one runs (and waits for release), one queues
            thread.start()
        assert slow.entered.wait(30)
        for _ in range(200):                       # until the second request is inside the gate
            if app.state.gate_inside() == 2:
                break
            threading.Event().wait(0.01)
        busy = client.get("/api/trace", params=params)
        assert busy.status_code == 429 and busy.headers["retry-after"] == "1"
        assert "too many requests" in error(busy)
        assert client.get("/api/models").status_code == 200                     # cheap routes still answer
        slow.release.set()
        for thread in threads:
            thread.join(30)
        assert [a.status_code for a in answers] == [200, 200]
        assert client.get("/api/trace", params=params).status_code == 200       # the gate empties again


# ------------------------------------------------------------------ the translator's cross-attention
def test_translator_routes_are_the_translators_own(loaded):
    from qkv.translator.explain import cross_attention_trace

    translator, why = serve.load_translator()
    assert translator is not None, why
    with TestClient(serve.create_app(loaded, translator=translator), base_url=BASE) as client:
        about = client.get("/api/models").json()["translator"]
        assert about == {"langs": ["ko", "ja"], "layers": len(translator.decoder), "heads": translator.config.n_heads}
        text = "my big dog saw the cat in the park"
        body = client.get("/api/translate", params={"text": text, "to": "ja"}).json()
        expected = translator.translate(text, "ja")
        assert body["source"] == expected.source and body["target"] == expected.target
        levels = np.frombuffer(base64.b64decode(body["weights"]), dtype=np.uint8).reshape(body["shape"])
        assert levels.shape == expected.cross_weights.shape
        assert np.abs(levels / 255 - expected.cross_weights).max() <= 0.5 / 255 + 1e-6
        got = Trace.from_json(client.get("/api/translate/trace", params={"text": text, "to": "ja", "layer": 1,
                                                                         "word": 2}).text)
        reference = cross_attention_trace(translator, expected, word=2, layer=1)
        assert_same_trace(got, reference)
        html = client.get("/api/translate/explain", params={"text": text, "to": "ja", "layer": 1, "word": 2,
                                                            "lang": "ko"}).json()["html"]
        assert html == derivation_html(reference, lang="ko")
        for params, status, words in (({"text": "I love pizza", "to": "ko"}, 400, "unknown word 'pizza'"),
                                      ({"text": text, "to": "fr"}, 400, "to: 'fr'"),
                                      ({"text": text, "to": "ko", "layer": 9}, 400, "decoder layers")):
            route = "/api/translate/trace" if "layer" in params else "/api/translate"
            response = client.get(route, params=params)
            assert response.status_code == status and words in error(response), response.text
    with TestClient(serve.create_app(loaded), base_url=BASE) as client:
        assert client.get("/api/models").json()["translator"] is None
        assert client.get("/api/translate", params={"text": "I love you"}).status_code == 404


# ------------------------------------------------------------------ security
def test_every_answer_carries_the_csp_and_stays_on_this_host(client):
    for path in ("/", "/static/app.js", "/api/models", "/api/nothing", "/static/nothing"):
        headers = client.get(path).headers
        assert headers["content-security-policy"] == CSP, path
        assert headers["x-content-type-options"] == "nosniff"
    assert "default-src 'none'" in CSP and "connect-src 'self'" in CSP and "script-src 'self'" in CSP
    assert "unsafe-eval" not in CSP and "http" not in CSP.replace("'self'", "")
    page = client.get("/").text
    assert "http://" not in page and "https://" not in page
    assert client.get("/", headers={"host": "evil.example"}).status_code == 400    # DNS rebinding
    assert client.get("/static/page.css").content == (Path(qkv.__file__).parent / "explain" / "page.css").read_bytes()
    assert client.post("/api/trace").status_code == 405


def test_the_route_list(client):
    routes = client.get("/api").json()["routes"]
    assert {(r["method"], r["path"].split("?")[0]) for r in routes} >= {
        ("GET", "/api/trace"), ("GET", "/api/overview"), ("GET", "/api/explain"), ("GET", "/api/example"),
        ("POST", "/api/upload"), ("GET", "/api/models")}


class Opens:
    """Records the file system events of this process (audit hooks cannot be removed: it is switched off)."""

    EVENTS = ("open", "os.listdir", "os.scandir", "os.walk", "glob.glob", "shutil.copyfile", "os.stat")

    def __init__(self):
        self.on, self.seen = False, []
        sys.addaudithook(self)

    def __call__(self, event, args):
        if self.on and event in self.EVENTS:
            self.seen.append((event, args[0] if args else None))


def raw_get(app, raw_path: bytes, query: bytes = b"") -> tuple[int, bytes]:
    """Send one request with exactly this path (httpx would normalise the dots away)."""
    from urllib.parse import unquote_to_bytes

    messages = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        messages.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": unquote_to_bytes(raw_path).decode("latin-1"), "raw_path": raw_path, "query_string": query,
             "root_path": "", "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 1),
             "server": ("127.0.0.1", 8000)}
    asyncio.run(app(scope, receive, send))
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
    return messages[0]["status"], body


TRAVERSALS = [b"/static/../../etc/passwd", b"/static/..%2f..%2fetc%2fpasswd", b"/static/%2e%2e/%2e%2e/etc/passwd",
              b"/../../../../etc/passwd", b"//etc/passwd", b"/static/page.css/../../../../etc/passwd",
              b"/static/..%5c..%5cetc%5cpasswd", b"/static/%00", b"/static//etc/passwd", b"/etc/passwd",
              b"/api/../../etc/passwd", b"/static/../serve/app.py", b"/static/../../pyproject.toml",
              b"/static/app.py", b"/static/index.html/..", b"/static/~root"]
QUERIES = [(b"/api/example", b"name=../../etc/passwd"), (b"/api/example", b"name=%2fetc%2fpasswd"),
           (b"/api/trace", b"model=../../../etc&text=x"), (b"/api/trace", b"model=%2fetc&text=x"),
           (b"/api/overview", b"model=..%2f..%2fminilm&text=x")]


def test_path_traversal_answers_4xx_and_opens_no_file(loaded, tmp_path):
    app = serve.create_app(loaded)
    uploads = [("../../etc/passwd.toml", GOOD_EXAMPLE.replace("x = [[1.0, 0.0], [0.5, 1.0], [0.0, 2.0]]", 'x = "/etc/passwd"')),
               ("x.toml", GOOD_EXAMPLE.replace("w_q = [[1.0, 0.5], [0.0, 1.0]]", 'w_q = {file = "../../w.npz", key = "q"}')),
               ("m.toml", GOOD_EXAMPLE.replace('mask = "causal"', f'mask = "{tmp_path}/mask.npy"'))]
    np.save(tmp_path / "mask.npy", np.ones((3, 3), dtype=bool))                 # would be read if the name got through
    with TestClient(app, base_url=BASE) as client:
        for path, query in [(p, b"") for p in TRAVERSALS] + QUERIES:        # warm up: imports open files once
            raw_get(app, path, query)
        for name, text in uploads:
            client.post("/api/upload", params={"filename": name}, content=text.encode())

        def ordinary(client, head):    # and ordinary requests: the page, a worked example, a head, its derivation
            return [client.get("/"), client.get("/static/app.js"),
                    client.get("/api/example", params={"name": "projection", "lang": "ko"}),
                    client.get("/api/trace", params={"model": "minilm", "text": TEXT, "layer": 1, "head": head}),
                    client.get("/api/explain", params={"model": "minilm", "text": TEXT, "layer": 1, "head": head})]

        ordinary(client, 2)            # the first call imports the renderers (Python opens their modules)
        opens = Opens()
        opens.on = True                                                          # the hook sees an open:
        (tmp_path / "mask.npy").read_bytes()
        assert opens.seen and opens.seen[0][0] == "open"
        opens.seen.clear()
        try:
            answers = [raw_get(app, path, query) for path, query in [(p, b"") for p in TRAVERSALS] + QUERIES]
            fine = ordinary(client, 3)  # a head not computed before (nothing cached)
            uploaded = [client.post("/api/upload", params={"filename": name}, content=text.encode())
                        for name, text in uploads]
        finally:
            opens.on = False
    for (status, body), path in zip(answers, TRAVERSALS + [q for q, _ in QUERIES]):
        assert 400 <= status < 500, (path, status)
        assert b"root:" not in body and b"[project]" not in body and b"import" not in body
    for response in uploaded:
        assert response.status_code == 400 and "array files" in error(response), response.text
    assert [response.status_code for response in fine] == [200] * 5
    assert opens.seen == []


# ------------------------------------------------------------------ the command
def test_the_command_binds_127_0_0_1_and_checks_its_options(monkeypatch, capsys, loaded, tmp_path):
    calls = []
    monkeypatch.setattr(serve, "run", lambda app, **kw: calls.append((app, kw)))
    monkeypatch.setattr(serve, "load_models", lambda dirs, minilm=True: {"minilm": loaded["minilm"]})
    import socket

    with socket.socket() as probe:     # a port free now (a fixed 8123 failed when another process held it)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert cli_main(["serve", "--port", str(port)]) == 0
    sock = calls[0][1].pop("sock")
    assert calls[0][1] == {"host": "127.0.0.1", "port": port} and sock.fileno() == -1   # served on, then closed
    assert f"http://127.0.0.1:{port}/" in capsys.readouterr().err
    for argv, words in ((["--port", "70000"], "--port"), (["--host", "my.host"], "--host"),
                        (["--no-minilm"], "--no-minilm")):
        assert cli_main(["serve", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("qkv: error: ") and words in err and "\n" not in err
    monkeypatch.undo()
    assert cli_main(["serve", "--no-minilm", "--model", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


def test_run_holds_blas_to_one_thread_while_serving(monkeypatch):
    from threadpoolctl import threadpool_info, threadpool_limits

    seen = []

    class Server:
        def __init__(self, app, sock, **kw):
            self.sock = sock

        def run(self, sockets):
            seen.append((sockets[0].getsockname()[0], [i["num_threads"] for i in threadpool_info()
                                                       if i["user_api"] == "blas"]))

    monkeypatch.setattr(serve, "server", Server)
    # BLAS at 2 threads before, as in a process of its own (the test workers start at 1: tests/conftest.py)
    with threadpool_limits(limits=2, user_api="blas"):
        serve.run(object(), port=0)
    host, threads = seen[0]
    assert host == "127.0.0.1" and threads and set(threads) == {1}


def test_load_models_names_directories_once(tmp_path):
    a = tiny_bert(tmp_path / "a" / "same")
    b = tiny_bert(tmp_path / "b" / "same", seed=1)
    loaded = serve.load_models([a, b], minilm=False)
    assert list(loaded) == ["same", "same-2"]


# ------------------------------------------------------------------ a small load run (the script in benchmarks/)
@pytest.mark.slow
def test_a_small_load_run_answers_only_200_or_429():
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "load_serve.py"
    spec = importlib.util.spec_from_file_location("load_serve", path)
    load_serve = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(load_serve)
    report = load_serve.run(requests=40, concurrency=12, deadline=240, retries=3)
    assert report["requests"] == 40 and report["errors"] == []
    assert set(report["answers"]) <= {"200", "429"} and set(report["status"]) <= {"200", "429"}
    assert report["status"].get("200", 0) > 0
    assert report["rss_mib"]["samples"] > 0 and len(report["rss_mib"]["quarter_peaks"]) == 4


def test_the_cache_stays_within_its_bytes_and_drops_the_oldest():
    from qkv.serve.app import Cache

    cache, computed = Cache(max_bytes=3 * 800), []

    def make(n):
        return lambda: computed.append(n) or np.full(100, n, dtype=np.float64)      # 800 bytes each

    for n in (1, 2, 3, 1, 4):                  # 1 is used again before 4 arrives: 2 is the oldest then
        assert cache.get(("k", n), make(n))[0] == n
        assert cache.bytes <= 3 * 800
    assert computed == [1, 2, 3, 4]
    cache.get(("k", 2), make(2))
    assert computed == [1, 2, 3, 4, 2]
    cache.get(("k", 1), make(1))                # still held
    assert computed == [1, 2, 3, 4, 2]
    assert cache.get(("big",), lambda: np.zeros(1000)).size == 1000 and cache.bytes <= 3 * 800   # too big: not kept


# ------------------------------------------------------------------ what-if: the examples recomputed with changes
def softmax_rows(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def reference_attention(name: str, cells: dict, factor: float, sqrt_dk: bool):
    """softmax(Q·Kᵀ·scale)·V in float64 from the example's TOML inputs with the edits applied (written here,
    not the library's code): scale = factor/√d_k, or factor alone without √d_k."""
    doc = qkv.examples.load(name)
    arrays = {m: np.array(doc[m], dtype=np.float64) for m in ("x", "memory", "w_q", "w_k", "w_v", "w_o") if m in doc}
    for matrix, edits in cells.items():
        for i, j, value in edits:
            arrays[matrix][i, j] = value
    source = arrays.get("memory", arrays["x"])
    q, k, v = arrays["x"] @ arrays["w_q"], source @ arrays["w_k"], source @ arrays["w_v"]
    heads = int(doc.get("heads", 1))
    dk = q.shape[1] // heads
    scale = factor / np.sqrt(dk) if sqrt_dk else factor
    weights, outs = [], []
    for h in range(heads):
        qh, kh, vh = (a[:, h * a.shape[1] // heads:(h + 1) * a.shape[1] // heads] for a in (q, k, v))
        w = softmax_rows(qh @ kh.T * scale)
        weights.append(w)
        outs.append(w @ vh)
    return np.stack(weights), np.stack(outs), arrays


def whatif(client, body, lang: str = "en"):
    if isinstance(body, bytes):                            # JSON a client library would not write (1e400)
        return client.post(f"/api/whatif?lang={lang}", content=body, headers=JSON)
    return client.post(f"/api/whatif?lang={lang}", json=body)


@pytest.mark.parametrize("name, cells, factor, sqrt_dk", [
    ("self-attention", {}, 1.0, True),
    ("self-attention", {"x": [[1, 0, 2.5]], "w_q": [[0, 1, -0.7]]}, 1.0, True),
    ("self-attention", {}, 3.0, True),
    ("self-attention", {"w_k": [[1, 1, 0.25]]}, 0.5, False),
    ("self-attention", {}, 0.0, True),                                     # factor 0: every weight 1/T
    ("cross-attention", {"memory": [[2, 0, -1.0]], "x": [[0, 1, 0.3]]}, 2.0, False),
    ("projection", {"w_v": [[7, 7, 1.5]]}, 1.0, True),
    ("projection", {"x": [[0, 3, 2.0]]}, 0.25, False),
])
def test_whatif_recomputes_as_float64_numpy(client, name, cells, factor, sqrt_dk):
    response = whatif(client, {"name": name, "cells": cells, "factor": factor, "sqrt_dk": sqrt_dk})
    assert response.status_code == 200, response.text
    body = response.json()
    trace = Trace.from_dict(body["trace"])
    weights, outs, arrays = reference_attention(name, cells, factor, sqrt_dk)
    np.testing.assert_allclose(trace["weights"].value, weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(trace["out"].value, outs, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(trace["x"].value, arrays["x"])            # the edited input, as recorded
    if name == "projection":                                               # W_O and R + Y follow the new heads
        y = np.concatenate(list(outs), axis=-1) @ arrays["w_o"]
        np.testing.assert_allclose(trace["y"].value, y, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(trace["residual"].value, arrays["x"] + y, rtol=1e-12, atol=1e-14)
    assert body["what_if"] == {"name": name, "factor": factor, "sqrt_dk": sqrt_dk, "scores": {},
                               "cells": {m: [list(e) for e in edits] for m, edits in cells.items()}}
    assert "<" in body["html"] and body["title"] == qkv.examples.run(name).title or body["title"]
    if factor == 0.0:
        np.testing.assert_allclose(trace["weights"].value, 0.25, rtol=1e-15)


def test_whatif_without_changes_is_the_worked_example(client):
    plain = client.get("/api/example", params={"name": "self-attention"}).json()
    same = whatif(client, {"name": "self-attention"}).json()
    reference = qkv.examples.run("self-attention")
    got = Trace.from_dict(same["trace"])
    for step in ("q", "k", "v", "scores", "weights", "out"):
        np.testing.assert_array_equal(got[step].value, reference[step].value)
    assert Trace.from_dict(plain["trace"])["weights"].value.tolist() == got["weights"].value.tolist()


def test_whatif_multi_head_follows_head_one_and_w_o(client):
    cells = {"x": [[1, 1, 0.6]], "w_o": [[0, 0, 1.0]]}
    body = whatif(client, {"name": "multi-head", "cells": cells, "factor": 2.0}).json()
    trace = Trace.from_dict(body["trace"])
    _, outs, arrays = reference_attention("self-attention", {"x": cells["x"]}, 2.0, True)
    doc = qkv.examples.load("multi-head")
    w_o = np.array(doc["w_o"], dtype=np.float64)
    w_o[0, 0] = 1.0
    concat = np.concatenate([outs[0][1], *np.array(doc["given_heads"], dtype=np.float64)])   # "love" is row 1
    np.testing.assert_allclose(trace["y"].value[0], concat @ w_o, rtol=1e-12)


def lot_weight(client, question_score: float | None = None, factor: float = 1.0) -> tuple[float, float]:
    """lot's weight in the two meetings, as the what-if answers it."""
    scores = {} if question_score is None else {"question": [[j, question_score] for j in range(4)]}
    trace = Trace.from_dict(whatif(client, {"name": "group-meeting", "scores": scores, "factor": factor}).json()["trace"])
    return float(trace["lot/weights"].value[0, 3]), float(trace["question/weights"].value[0, 7])   # (Tq = 1, Tk)


def test_whatif_the_group_meetings_question_score_moves_lots_weight(client):
    """The question words' score from 1 to 1000: lot's weight e^100 / (4·e^s + 3·e + e^100) goes from ~1 to ~0."""
    def expected(s: float) -> float:
        scores = np.array([s] * 4 + [1, 1, 1, 100], dtype=np.float64)
        return float(softmax_rows(scores[None])[0, 7])

    first_meeting = float(softmax_rows(np.array([[1.0, 1, 1, 100]]))[0, 3])       # not edited: stays ~1
    seen = []
    for s in (1, 50, 99, 100, 101, 150, 1000):
        lot, question = lot_weight(client, s)
        assert question == pytest.approx(expected(s), rel=1e-12, abs=1e-300)
        assert lot == pytest.approx(first_meeting, rel=1e-12)
        seen.append(question)
    assert seen[0] > 0.999999 and seen[-1] < 1e-300 and seen == sorted(seen, reverse=True)
    assert seen[3] == pytest.approx(0.2, rel=1e-12)                  # s = 100: lot and the four question words tie
    # as given (1000): lot's weight 0; the factor scales every score: 0 makes all 8 voices equal
    assert lot_weight(client)[1] < 1e-300
    lot, question = lot_weight(client, None, 0.0)
    assert lot == pytest.approx(0.25) and question == pytest.approx(0.125)
    lot, _ = lot_weight(client, None, 0.01)                           # scores 0.01 vs 1: lot only a little ahead
    e = np.exp(np.array([0.01, 0.01, 0.01, 1.0]))
    assert lot == pytest.approx(e[3] / e.sum(), rel=1e-12)


BAD_WHATIFS = [
    ({"name": "self-attention", "cells": {"x": [[9, 0, 1.0]]}}, 400, "cells.x[0]", "9행 0열"),
    ({"name": "self-attention", "cells": {"x": [[0, 0, "a"]]}}, 400, "cells.x[0]", "유한한 수"),
    ({"name": "self-attention", "cells": {"x": [[0, 0, 1e9]]}}, 400, "cells.x[0]", "범위"),
    ({"name": "self-attention", "cells": {"x": [[0.5, 0, 1.0]]}}, 400, "cells.x[0]", "정수"),
    ({"name": "self-attention", "cells": {"x": [[0, 0]]}}, 400, "cells.x[0]", "[행, 열, 값]"),
    ({"name": "self-attention", "cells": {"x": 5}}, 400, "cells.x", "[[행, 열, 값], …]"),
    ({"name": "group-meeting", "scores": {"question": 5}}, 400, "scores.question", "[[위치, 점수], …]"),
    ({"name": "group-meeting", "scores": [1]}, 400, "scores", "[[위치, 점수], …]"),
    (b"[" * 8000 + b"]" * 8000, 400, None, "JSON이 아니다"),
    ({"name": "self-attention", "cells": {"w_o": [[0, 0, 1.0]]}}, 400, "cells.w_o", "바꿀 수 없는 행렬"),
    ({"name": "self-attention", "cells": {"x": [[0, 0, 1.0]] * 300}}, 400, "cells.x", "너무 많다"),
    ({"name": "self-attention", "factor": -1}, 400, "factor", "범위"),
    (b'{"name": "self-attention", "factor": 1e400}', 400, "factor", "유한한 수"),
    (b'{"name": "self-attention", "factor": NaN}', 400, "factor", "유한한 수"),
    ({"name": "self-attention", "factor": True}, 400, "factor", "유한한 수"),
    ({"name": "self-attention", "sqrt_dk": "no"}, 400, "sqrt_dk", "true 또는 false"),
    ({"name": "self-attention", "scores": {"lot": [[0, 1.0]]}}, 400, "scores", "조모임뿐"),
    ({"name": "self-attention", "temperature": 2}, 400, "temperature", "모르는 필드"),
    ({"name": "group-meeting", "sqrt_dk": False}, 400, "sqrt_dk", "√d_k"),
    ({"name": "group-meeting", "scores": {"meeting": [[0, 1.0]]}}, 400, "scores.meeting", "모임"),
    ({"name": "group-meeting", "scores": {"question": [[8, 1.0]]}}, 400, "scores.question[0]", "위치 8"),
    ({"name": "group-meeting", "cells": {"x": [[0, 0, 1.0]]}}, 400, "cells.x", "바꿀 행렬이 없다"),
    ({"name": "nothing"}, 404, "name", "예제"),
    (["not", "an", "object"], 400, None, "JSON 객체"),
]


@pytest.mark.parametrize("body, status, field, korean", BAD_WHATIFS)
def test_a_bad_whatif_names_its_field_in_english_and_korean(client, body, status, field, korean):
    english = whatif(client, body)
    assert english.status_code == status, english.text
    line = error(english)
    assert "\n" not in line and (field is None or line.startswith(field + ": ")), line
    assert not any("\uac00" <= ch <= "\ud7a3" for ch in line)                     # no Hangul in English
    ko = whatif(client, body, "ko")
    assert ko.status_code == status and korean in error(ko), error(ko)
    assert field is None or error(ko).startswith(field + ": ")


def test_a_whatif_body_that_is_not_json_or_too_large(client):
    response = client.post("/api/whatif?lang=ko", content=b"{not json", headers=JSON)
    assert response.status_code == 400 and "JSON이 아니다" in error(response)
    response = client.post("/api/whatif", content=b"[" + b"0," * 20000 + b"0]", headers=JSON)
    assert response.status_code == 413 and "bytes" in error(response)


def test_errors_in_korean_and_api_fields_not_cli_options(loaded):
    translator, why = serve.load_translator()
    assert translator is not None, why
    with TestClient(serve.create_app(loaded, translator=translator), base_url=BASE) as client:
        ko = client.get("/api/translate", params={"text": "I love elephant", "to": "ko", "lang": "ko"})
        assert ko.status_code == 400 and "번역기가 모르는 단어가 있다: 'elephant'" in error(ko)
        said = error(ko).split("번역기가 아는 영어 단어:")[0]                   # then the vocabulary itself
        assert said.isascii() is False and not any(w in said for w in ("unknown", "the translator"))
        en = client.get("/api/translate", params={"text": "I love elephant", "to": "ko"})
        assert "unknown word 'elephant'" in error(en)
        empty = client.get("/api/tokens", params={"text": " ", "lang": "ko"})
        assert empty.status_code == 400 and error(empty).startswith("text: 비어 있다")
        # word counts from 1: 0 is refused (it used to become 1), naming the parameter, not --derive
        zero = client.get("/api/translate/trace", params={"text": "I love you", "to": "ko", "layer": 0, "word": 0})
        assert zero.status_code == 400 and error(zero).startswith("word: 0") and "--" not in error(zero)
        layer = client.get("/api/translate/trace", params={"text": "I love you", "to": "ko", "layer": 9})
        assert layer.status_code == 400 and error(layer).startswith("layer: 9") and "--" not in error(layer)
        query = client.get("/api/example", params={"name": "self-attention", "query": "zebra"})
        assert query.status_code == 400 and error(query).startswith("query: ") and "--" not in error(query)
        # one parameter's problem also comes apart from its name: the page says it in its own words
        # ("오류: 번역기가 모르는 단어가 …" under the box, not "오류: text: …")
        for answer, field in ((ko, "text"), (en, "text"), (zero, "word"), (layer, "layer"), (query, "query")):
            body = answer.json()
            assert body["field"] == field and body["error"] == f"{field}: {body['problem']}", body
        assert ko.json()["problem"].startswith("번역기가 모르는 단어가 있다: 'elephant'")


def test_a_trace_title_names_the_model_not_its_directory(client, loaded):
    trace = Trace.from_json(client.get("/api/trace", params={"model": "tiny-bert", "text": TEXT, "layer": 0,
                                                             "head": 1}).text)
    directory = str(loaded["tiny-bert"].name)
    assert trace.title.startswith("tiny-bert:"), trace.title
    assert "/" not in trace.title and directory not in json.dumps(trace.meta, ensure_ascii=False)


def test_the_pages_words_come_from_texts(client):
    from qkv.explain import texts

    words = client.get("/api/words").json()
    page, views = words["page"], words["views"]
    assert set(page["en"]) == set(page["ko"]) and len(page["en"]) > 50
    assert page["ko"]["title"] == texts.text("ko", "serve.ui.title")
    assert set(views["en"]) == set(views["ko"]) and views["ko"]["next"] == texts.text("ko", "page.next")
    for key in page["en"]:                 # the page's Korean words: Hangul, and no English word left in them
        ko = page["ko"][key]
        assert any("\uac00" <= ch <= "\ud7a3" for ch in ko) or key in ("hover", "meeting"), key
    examples = client.get("/api/examples").json()["examples"]
    assert {e["post"]["id"] for e in examples} == {"000", "001", "002"}
    assert {e["post"]["title"]["ko"] for e in examples} == {
        "Attention의 projection: Q·K·V와 멀티 헤드", "어텐션이 조모임이라면",
        "도해와 최소 사례로 직관적으로 이해하는 Self-attention, Cross-attention, Multi-head Attention"}


def test_port_0_prints_the_port_served_and_a_port_in_use_is_one_line(monkeypatch, capsys, loaded):
    import re
    import socket

    calls = []
    monkeypatch.setattr(serve, "run", lambda app, **kw: calls.append(kw))
    monkeypatch.setattr(serve, "load_models", lambda dirs, minilm=True: {"minilm": loaded["minilm"]})
    monkeypatch.setattr(serve, "load_translator", lambda: (None, "not needed here"))
    assert cli_main(["serve", "--port", "0"]) == 0
    port = calls[0]["port"]
    assert 0 < port < 65536
    assert re.search(rf"http://127\.0\.0\.1:{port}/", capsys.readouterr().err)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        busy = taken.getsockname()[1]
        assert cli_main(["serve", "--port", str(busy)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("qkv: error: --port: ") and f"{busy} is in use" in err and "\n" not in err
    assert len(calls) == 1                                   # the refused run never started a server


def test_a_foreign_host_is_refused_as_json_with_the_security_headers(client):
    response = client.get("/api/models", headers={"host": "evil.example:8000"})
    assert response.status_code == 400 and response.headers["content-security-policy"] == CSP
    assert error(response).startswith('Host: "evil.example:8000" is not this server')
    for host in ("127.0.0.1:8000", "localhost", "[::1]:8000"):
        assert client.get("/api/models", headers={"host": host}).status_code == 200, host


def test_the_servers_own_lines_in_korean(client):
    for route, params, status, english, korean in (
            ("/api/tokens", {"model": "nothing", "text": TEXT}, 404, "is not loaded", "불러오지 않은 모델"),
            ("/api/trace", {"text": TEXT, "layer": "x", "head": 0}, 400, "is not a whole number", "정수가 아니다"),
            ("/api/example", {"name": "nothing"}, 404, "unknown example", "예제"),
            ("/api/translate", {"text": "I love you"}, 404, "translator is not loaded", "번역기를 불러오지 않았다")):
        en = client.get(route, params=params)
        ko = client.get(route, params={**params, "lang": "ko"})
        assert en.status_code == ko.status_code == status, route
        assert english in error(en) and korean in error(ko), (error(en), error(ko))
        assert not any("\uac00" <= ch <= "\ud7a3" for ch in error(en))
    big = client.post("/api/upload?filename=big.toml&lang=ko", content=b"#" * (300 * 1024))
    assert big.status_code == 413 and "바이트" in error(big)


# ------------------------------------------------------------------ issue 22 part 4: cross-origin writes
def _post_routes(app) -> list[str]:
    """Every route of the app that takes a method other than GET/HEAD (read from the app, not a list)."""
    inner = app.app            # _SecurityHeaders → Starlette
    return sorted(r.path for r in inner.routes if set(getattr(r, "methods", None) or ()) - {"GET", "HEAD"})


def _good_body(path: str) -> tuple[bytes, str, dict]:
    if path == "/api/whatif":
        return json.dumps({"name": "self-attention", "factor": 2}).encode(), "application/json", {}
    if path == "/api/practice/check":
        return json.dumps({"name": "self-attention", "seed": 0, "question": 0, "answer": "1"}).encode(), "application/json", {}
    return GOOD_EXAMPLE.encode(), "application/octet-stream", {"filename": "mine.toml"}


HOSTILE_HEADERS = [
    ({"Origin": "http://evil.example"}, "another site"),
    ({"Origin": "null"}, "another site"),                                  # sandboxed frames, file:// pages
    ({"Origin": "http://127.0.0.1:9999"}, "another site"),                 # another port of this machine
    ({"Origin": "http://localhost"}, "another site"),                      # not the Host this request came to
    ({"Origin": "https://127.0.0.1"}, "another site"),
    ({"Origin": "http://127.0.0.1.evil.example"}, "another site"),
    ({"Sec-Fetch-Site": "cross-site"}, "Sec-Fetch-Site"),
    ({"Sec-Fetch-Site": "same-site"}, "Sec-Fetch-Site"),
    ({"Origin": "http://127.0.0.1", "Sec-Fetch-Site": "cross-site"}, "Sec-Fetch-Site"),
    ({"Content-Type": "text/plain"}, "Content-Type"),
    ({"Content-Type": "text/plain;charset=UTF-8"}, "Content-Type"),
    ({"Content-Type": "application/x-www-form-urlencoded"}, "Content-Type"),
    ({"Content-Type": "multipart/form-data; boundary=x"}, "Content-Type"),
]


def test_every_post_route_refuses_cross_origin_requests(client):
    """A text/plain POST with Origin: http://evil.example was accepted (any page the user visits could
    send one). Every state-changing route, each hostile header set: 403, one JSON line, CSP, no work."""
    routes = _post_routes(client.app)
    assert routes == ["/api/practice/check", "/api/upload", "/api/whatif"]
    count = 0
    for path in routes:
        body, media, params = _good_body(path)
        for headers, words in HOSTILE_HEADERS:
            sent = {"Content-Type": media, **headers}
            for lang in ("en", "ko"):
                response = client.post(path, params={**params, "lang": lang}, content=body, headers=sent)
                assert response.status_code == 403, (path, headers, response.text)
                assert response.headers["content-security-policy"] == CSP
                line = error(response)
                assert "\n" not in line and (words in line if lang == "en" else "거부했다" in line), (path, headers, line)
                count += 1
        # the same request from the server's own page passes
        ok = client.post(path, params=params, content=body,
                         headers={"Content-Type": media, "Origin": BASE, "Sec-Fetch-Site": "same-origin"})
        assert ok.status_code == 200, (path, ok.text)
        # a script without browser headers passes too (curl, httpx), with a non-form type
        assert client.post(path, params=params, content=body, headers={"Content-Type": media}).status_code == 200
    assert count == len(routes) * len(HOSTILE_HEADERS) * 2


def test_json_routes_take_application_json_only(client):
    body = json.dumps({"name": "self-attention"}).encode()
    for media in ("", "application/octet-stream", "text/json", "application/jsonx"):
        headers = {"Content-Type": media} if media else {}
        response = client.post("/api/whatif", content=body, headers=headers)
        assert response.status_code == 403 and "application/json" in error(response), media
    assert client.post("/api/whatif", content=body,
                       headers={"Content-Type": "Application/JSON; charset=utf-8"}).status_code == 200


def test_a_cross_origin_upload_is_refused_before_the_body_is_read(loaded):
    """The hostile trace (dtype "U50000000") posted cross-origin: refused without reading the body."""
    app = serve.create_app(loaded)
    read = []

    async def call():
        scope = {"type": "http", "method": "POST", "path": "/api/upload", "raw_path": b"/api/upload",
                 "query_string": b"filename=t.json", "scheme": "http", "server": ("127.0.0.1", 8000),
                 "headers": [(b"host", b"127.0.0.1:8000"), (b"origin", b"http://evil.example"),
                             (b"content-type", b"text/plain")], "http_version": "1.1"}
        sent = []

        async def receive():
            read.append(1)
            return {"type": "http.request", "body": HOSTILE_TRACE, "more_body": False}

        async def send(message):
            sent.append(message)

        await app(scope, receive, send)
        return sent

    sent = asyncio.run(call())
    assert sent[0]["status"] == 403 and read == []
    assert json.loads(sent[1]["body"])["error"].startswith("refused: this request comes from another site")


HOSTILE_TRACE = json.dumps({"format": "qkv-trace", "steps": [
    {"name": "x", "values": [1, 2, 3], "shape": [3], "dtype": "U50000000"}]}).encode()


def test_a_hostile_saved_trace_upload_is_one_line_before_any_array(client):
    """Posted from the page itself, the trace is refused by its dtype before an array is made (it took
    the server from 191 MB to 1.71 GB)."""
    response = client.post("/api/upload", params={"filename": "t.json"}, content=HOSTILE_TRACE,
                           headers={"Content-Type": "application/octet-stream"})
    assert response.status_code == 400
    assert 'dtype "U50000000" is not a number type' in error(response)


# ------------------------------------------------------------------ issue 22 part 4: the server's own connections
@pytest.fixture()
def live(loaded, monkeypatch):
    """The app served by uvicorn (serve.server, as `qkv serve` runs it) on a free port, in a thread;
    the request deadline shortened to 2 s so a slow client is seen closed quickly."""
    import socket
    import time

    monkeypatch.setattr(serve, "REQUEST_SECONDS", 2.0)
    sock = serve.listen("127.0.0.1", 0)
    server = serve.server(serve.create_app(loaded), sock)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    port = sock.getsockname()[1]
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    yield port
    server.should_exit = True
    thread.join(10)
    sock.close()


def _raw(port: int, data: bytes, *, wait: float = 5.0) -> bytes:
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=wait) as conn:
        conn.sendall(data)
        chunks = []
        while True:
            try:
                chunk = conn.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def _closed_after(port: int, send: Callable[[Any], None] | None, limit: float) -> float:
    """Seconds until the server closes a connection that ``send`` feeds (or that sends nothing)."""
    import socket
    import time

    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=limit) as conn:
        conn.setblocking(False)
        while time.monotonic() - start < limit:
            if send is not None:
                send(conn)
            try:
                if conn.recv(4096) == b"":
                    return time.monotonic() - start
            except BlockingIOError:
                pass
            except OSError:
                return time.monotonic() - start
            time.sleep(0.2)
    return float("inf")


def test_a_slowloris_connection_is_closed_within_the_deadline(live):
    """Partial headers, one more byte every 0.2 s (each within any idle timeout): closed after the 2 s
    request deadline; before, uvicorn held it open for as long as bytes kept coming."""
    sent = iter([b"GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n"] + [b"X-A: b\r\n"] * 1000)
    # Not a speed check: the server's 2 s deadline against a connection held open for as long as bytes come (inf
    # here, at the 12 s watch); the upper bound leaves a loaded machine room.
    elapsed = _closed_after(live, lambda conn: conn.send(next(sent)), 12.0)
    assert 1.5 < elapsed < 10.0, elapsed
    assert 1.5 < _closed_after(live, None, 12.0) < 10.0            # connects and says nothing
    slow_body = iter([b"POST /api/whatif HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100000\r\n\r\n"] + [b" "] * 1000)
    assert 1.5 < _closed_after(live, lambda conn: conn.send(next(slow_body)), 12.0) < 10.0


def test_a_request_in_time_is_answered_and_kept_alive(live):
    answer = _raw(live, b"GET /api/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200") and b"tiny-bert" in answer
    import socket
    import time

    with socket.create_connection(("127.0.0.1", live), timeout=5) as conn:   # two requests, 1 s apart
        for _ in range(2):
            conn.sendall(b"GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            time.sleep(1.0)
            assert conn.recv(65536).startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("request_bytes", [
    b"NOT HTTP AT ALL\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20000,        # 16 KiB and the headers not ended
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n",
])
def test_the_servers_own_400_is_json_with_the_security_headers(live, request_bytes):
    """uvicorn answered a malformed request in plain text, without the CSP and friends."""
    answer = _raw(live, request_bytes)
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").lower().splitlines()
    assert lines[0].startswith("http/1.1 400")
    assert f"content-security-policy: {CSP}".lower() in lines and "x-content-type-options: nosniff" in lines
    assert "content-type: application/json" in lines
    assert json.loads(body)["error"].startswith("invalid HTTP request")


def test_a_host_check_refusal_on_the_wire_has_the_headers(live):
    answer = _raw(live, b"GET /api HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
    head = answer.partition(b"\r\n\r\n")[0].decode("latin-1").lower()
    assert head.startswith("http/1.1 400") and "content-security-policy:" in head and "x-frame-options: deny" in head


def test_the_origin_is_the_host_the_request_was_sent_to(client):
    """Origin is compared with the Host header (already checked against the server's addresses), port
    included: a port forwarded to the server (docker -p 9000:8000) is the page's own origin; another
    port or name of this machine is another site."""
    body = json.dumps({"name": "self-attention"}).encode()
    for host, origin, status in (("localhost:9000", "http://localhost:9000", 200),
                                 ("localhost:9000", "http://localhost:8000", 403),
                                 ("[::1]:8000", "http://[::1]:8000", 200),
                                 ("127.0.0.1:8000", "http://[::1]:8000", 403),
                                 ("127.0.0.1:8000", "http://127.0.0.1:8000/", 403)):   # an Origin has no path
        response = client.post("/api/whatif", content=body,
                               headers={"Host": host, "Origin": origin, "Content-Type": "application/json"})
        assert response.status_code == status, (host, origin, response.text)


def test_any_command_line_option_is_named_as_an_api_field():
    """The class, not a list: every option of every command, as a library error would name it."""
    from qkv.cli import build_parser
    from qkv.serve.app import api_field

    parser = build_parser()
    options = {option for action in parser._actions if hasattr(action, "choices") and isinstance(action.choices, dict)
               for sub in action.choices.values() for a in sub._actions for option in a.option_strings}
    assert len(options) > 30
    for option in options:
        name = api_field(option)
        assert not name.startswith("-") and "-" not in name, (option, name)
    assert api_field("--derive") == "word" and api_field("TEXT") == "text" and api_field("cells.x[0]") == "cells.x[0]"


# ------------------------------------------------------------------ does the model read the text? (issue 29)
def test_tokens_and_overview_count_the_pieces_the_tokenizer_does_not_read(client, decoders):
    """Korean into MiniLM: jamo and [UNK], counted from the tokenizer's own output; English: none. A byte-level
    tokenizer (GPT-2) splits a Hangul syllable into bytes, each of which decodes alone to "�"."""
    from qkv import models

    tokenizer = models.load("minilm").tokenizer
    korean = "고양이가 매트 위에 앉았다."
    encoding = tokenizer.encode(korean)
    pieces = [t for t, special in zip(encoding.tokens, encoding.special_tokens_mask) if not special]
    jamo = [t for t in pieces if any("\u1100" <= c <= "\u11ff" for c in t)]       # Hangul Jamo block
    unknown = [t for t in pieces if t == "[UNK]"]
    assert jamo and unknown
    for route in ("tokens", "overview"):
        reading = client.get(f"/api/{route}", params={"model": "minilm", "text": korean}).json()["reading"]
        assert (reading["pieces"], reading["unknown"], reading["split"]) == (len(pieces), len(unknown), len(jamo))
        assert reading["hangul"] == sum("\uac00" <= c <= "\ud7a3" for c in korean) == 11
        assert reading["korean"] == "bert-base-multilingual-cased"
        english = client.get(f"/api/{route}", params={"model": "minilm", "text": "The cat sat on the mat."}).json()
        assert english["reading"]["unknown"] == english["reading"]["split"] == 0
    # accents a tokenizer drops are still read ("café" → "cafe")
    accented = client.get("/api/tokens", params={"model": "minilm", "text": "café naïve Über"}).json()["reading"]
    assert accented["unknown"] == accented["split"] == 0
    with TestClient(serve.create_app(decoders), base_url=BASE) as byte_level:
        name = next(n for n in decoders if "gpt2" in n)
        reading = byte_level.get("/api/tokens", params={"model": name, "text": "안녕 ok"}).json()["reading"]
        assert reading["split"] >= 2 and reading["hangul"] == 2       # two syllables, 3 UTF-8 bytes each
