"""Hostile input at today's entry points (qkv serve's /api/next, /api/neuron, /api/practice and
/api/practice/check; qkv practice; qkv doctor --calibrate): each class found by an adversarial pass, one
test per class, the expected answer from the rule (never from the output): a 4xx with one line in the
request's language, never a 500, nothing half-written. docs/reliability.md lists the classes."""

from __future__ import annotations

import json
import os

import pytest
from starlette.testclient import TestClient

from qkv import practice, serve
from qkv.cli import main as cli_main

from test_serve import BASE, JSON, TEXT, error

HANGUL = ("\uac00", "\ud7a3")


def korean(line: str) -> bool:
    return any(HANGUL[0] <= ch <= HANGUL[1] for ch in line)


def latin_words(line: str) -> list[str]:
    """English words left in a line (the API's field names, JSON's own words and example names allowed)."""
    import re

    allowed = {"layer", "head", "query", "key", "text", "name", "seed", "question", "answer", "model", "lang",
               "temperature", "fresh", "self", "attention", "json", "utf", "host", "get", "post", "api", "nothing",
               "static", "x", "js", "practice", "check", "e", "g", "application", "content", "type"}
    return [w for w in re.findall(r"[A-Za-z]+", line) if w.lower() not in allowed]


@pytest.fixture(scope="module")
def client():
    from model_fixtures import built

    loaded = serve.load_models([built("gpt2")], minilm=False)
    with TestClient(serve.create_app(loaded), base_url=BASE, raise_server_exceptions=False) as test_client:
        yield test_client


def get(client, path: str, query: str):
    """A GET with this exact (already percent-encoded) query string."""
    return client.get(f"{path}?{query}")


# ------------------------------------------------------------------ class 1: fixed English lines under lang=ko
FIXED_LINES = [
    ("/api/neuron", "model=gpt2&text=The+cat&head=0", 400),                       # head without layer
    ("/api/neuron", "model=gpt2&text=The+cat", 400),                               # neither layer nor head
    ("/api/explain", "model=gpt2&text=The+cat&layer=0", 400),                      # the derivation's own line
    ("/api/nothing", "", 404),                                                      # starlette's 404
    ("/api/practice/check", "", 405),                                               # a GET on a POST route
    ("/static/nothing.js", "", 404),                                                # the assets table
]


@pytest.mark.parametrize("path, query, status", FIXED_LINES)
def test_every_refusal_is_in_the_requests_language(client, path, query, status):
    """lang=ko gives a Korean line, lang=en (or none) an English one, for the lines serve wrote in English
    whatever the language ("layer and head: both needed", "not found", "method not allowed", "no such file")."""
    for lang in ("en", "ko"):
        response = get(client, path, "&".join(p for p in (query, f"lang={lang}") if p))
        assert response.status_code == status, response.text
        line = error(response)
        assert korean(line) == (lang == "ko"), line
        if lang == "ko":
            assert not latin_words(line), (line, latin_words(line))


def test_a_wrong_host_is_refused_in_the_requests_language(client):
    for lang in ("en", "ko"):
        response = client.get(f"/api?lang={lang}", headers={"Host": "evil.example"})
        assert response.status_code == 400
        assert korean(error(response)) == (lang == "ko"), error(response)


# ------------------------------------------------------------------ class 2: a query string that is not UTF-8
NOT_UTF8 = ["%ED%A0%80", "%FF", "caf%E9", "%C3", "%F0%9F%98"]      # a lone surrogate, stray and cut-short bytes


@pytest.mark.parametrize("bad", NOT_UTF8)
@pytest.mark.parametrize("path, query, field", [
    ("/api/next", "model=gpt2&text={bad}", "text"),
    ("/api/next", "model=gpt2&text=The+cat&temperature={bad}", "temperature"),
    ("/api/neuron", "model=gpt2&text={bad}&layer=0&head=0&query=0&key=0", "text"),
    ("/api/practice", "name={bad}", "name"),
    ("/api/tokens", "model={bad}&text=x", "model"),
])
def test_a_query_that_is_not_utf8_is_refused_not_replaced(client, bad, path, query, field):
    """Starlette reads such bytes as U+FFFD: /api/next ran the model on '���', text nobody sent. Now a 400 that
    names the parameter and the bytes, in the request's language."""
    for lang in ("en", "ko"):
        response = get(client, path, query.format(bad=bad) + f"&lang={lang}")
        assert response.status_code == 400, response.text
        body = response.json()
        assert body["field"] == field and korean(body["error"]) == (lang == "ko"), body
        assert "UTF-8" in body["error"] and "\ufffd" not in body["error"]
    good = get(client, "/api/tokens", "model=gpt2&text=caf%C3%A9")                 # UTF-8 é still passes
    assert good.status_code == 200


# ------------------------------------------------------------------ class 3: a body's JSON problem in Python's English
@pytest.mark.parametrize("body", [b"\xff\xfe{}", b"{not json", b'{"name": ', b"[" * 5000 + b"]" * 5000])
def test_a_bad_json_body_is_said_in_the_requests_language(client, body):
    """The body's problem was Python's own words ("Expecting value: line 1 column 2 (char 1)", "'utf-8' codec
    can't decode byte 0xff …") inside the Korean line; now qkv's words in both languages."""
    for path in ("/api/practice/check", "/api/whatif"):
        ko = client.post(f"{path}?lang=ko", content=body, headers=JSON)
        assert ko.status_code in (400, 413), ko.text
        if ko.status_code == 413:
            continue
        line = error(ko)
        assert korean(line) and not latin_words(line), line
        en = client.post(path, content=body, headers=JSON)
        assert en.status_code == 400 and not korean(error(en))
        for python_words in ("Expecting", "codec", "decode", "char "):
            assert python_words not in error(en), error(en)


@pytest.mark.parametrize("body", [[], "x", None, 3, True])
def test_a_practice_body_that_is_json_but_no_object(client, body):
    """'the body is not JSON (list)' said of a JSON list; now: the body must be a JSON object, with an example."""
    for lang in ("en", "ko"):
        response = client.post(f"/api/practice/check?lang={lang}", content=json.dumps(body), headers=JSON)
        assert response.status_code == 400
        line = error(response)
        assert ("JSON object" in line) if lang == "en" else ("JSON 객체" in line), line
        assert '"answer"' in line


# ------------------------------------------------------------------ class 4: numbers in other scripts' digits
OTHER_DIGITS = ["٣", "１", "１２", "۳.۵", "०.५", "1_0"]


@pytest.mark.parametrize("typed", OTHER_DIGITS)
def test_numbers_are_read_with_the_digits_0_to_9_only(client, typed):
    """Python's float() reads '٣' as 3 and '1_0' as 10: /api/next ran at temperature 3 for '٣' where k='٣' was
    refused; qkv practice's check and serve's check called '１２' a wrong number 12 where the page's own reading
    says it is no number. One rule now: digits 0–9 (practice keeps Python's underscores, as the page reads them)."""
    response = get(client, "/api/next", f"model=gpt2&text=The+cat&temperature={typed}")
    assert response.status_code == 400 and response.json()["field"] == "temperature", response.text
    if "_" in typed:
        return
    question = practice.drill("self-attention", seed=0).questions[0]
    for lang in ("en", "ko"):
        verdict = practice.check(question, typed, lang)
        assert verdict.status == "bad", (typed, verdict)
        assert verdict.lines == (practice._words(lang)("practice.bad.text", value=repr(typed)),)
        served = client.post(f"/api/practice/check?lang={lang}", headers=JSON,
                             content=json.dumps({"name": "self-attention", "seed": 0, "question": 0, "answer": typed}))
        assert served.json()["status"] == "bad"
    assert practice.parse_answer(" −0.5 ") == (-0.5, None)               # the minus sign the pages print still reads


# ------------------------------------------------------------------ class 5: a seed serve shows that the CLI refuses
@pytest.mark.parametrize("seed", [10**9 + 1, 999_999_999_999_999_999])
def test_a_drill_serve_shows_is_one_the_command_replays(client, capsys, seed):
    """serve took seeds up to 10¹⁸ and printed 'qkv practice … --seed N' in the drill's header, a command the CLI
    refused (its --seed takes 0 … 10⁹). One range now (practice.SEED_MAX), in every entry point."""
    assert practice.SEED_MAX == 10**9
    for lang in ("en", "ko"):
        response = get(client, "/api/practice", f"name=self-attention&seed={seed}&lang={lang}")
        assert response.status_code == 400 and response.json()["field"] == "seed", response.text
        assert f"{practice.SEED_MAX}" in error(response) and korean(error(response)) == (lang == "ko")
        checked = client.post(f"/api/practice/check?lang={lang}", headers=JSON,
                              content=json.dumps({"name": "self-attention", "seed": seed, "question": 0, "answer": "1"}))
        assert checked.status_code == 400 and checked.json()["field"] == "seed"
    with pytest.raises(Exception) as refused:
        practice.drill("self-attention", seed=seed)
    assert "seed" in str(refused.value)
    top = get(client, "/api/practice", f"name=self-attention&seed={practice.SEED_MAX}")
    assert top.status_code == 200
    command = top.json()["header"].split("qkv practice ", 1)[1].split(")")[0]
    assert f"--seed {practice.SEED_MAX}" in command
    capsys.readouterr()
    assert cli_main(["practice", "self-attention", "--seed", str(seed)]) == 2   # the CLI's bound is the same number
    assert f"{practice.SEED_MAX}" in capsys.readouterr().err


# ------------------------------------------------------------------ class 6: the calibration file and its directory
def test_a_corrupted_calibration_counts_as_none(tmp_path, monkeypatch):
    """speed.load read "t": 1e999 with int() (OverflowError) and a file of nested brackets (RecursionError):
    neither was caught, so every torch call that asks the table raised. Any content that is not the table
    means the rules."""
    from qkv.kernels import speed

    monkeypatch.setenv("QKV_CACHE_DIR", str(tmp_path))
    key = speed.machine_key()
    path = speed.cache_path(key)
    good = {"format": speed._FORMAT, "key": key, "cases": []}
    contents = [
        json.dumps(dict(good, cases=[{"dtype": "float32", "causal": False, "train": False, "t": 1e999,
                                      "winner": speed.SDPA}])),
        "[" * 200_000 + "]" * 200_000,
        json.dumps(dict(good, cases=[{"dtype": "float32", "causal": False, "train": False, "t": float("nan"),
                                      "winner": speed.SDPA}])),
        json.dumps(dict(good, cases=["x"])),
        "\xff",
    ]
    try:
        for content in contents:
            path.write_text(content, encoding="utf-8", errors="surrogateescape")
            table, source = speed.load(refresh=True)
            assert table is None and source == "rules (unreadable calibration)", content[:60]
            assert speed.faster("float32", False, False, 64, 64) in (speed.SDPA, speed.C_KERNEL)
    finally:
        path.unlink()
        speed.load(refresh=True)


def test_calibrate_names_an_unusable_cache_before_timing(tmp_path, monkeypatch, capsys):
    """QKV_CACHE_DIR a file (or under one): a traceback (FileExistsError / NotADirectoryError from mkdir) after
    the two minutes of timing; now one line in the user's language, before any timing, nothing written."""
    pytest.importorskip("torch")
    from qkv.kernels import speed

    timed = []
    monkeypatch.setattr(speed, "calibrate", lambda attend, **kw: timed.append(1) or {"key": speed.machine_key(), "cases": []})
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    for cache, lang in ((a_file, "en"), (a_file, "ko"), (a_file / "under", "ko")):
        monkeypatch.setenv("QKV_CACHE_DIR", str(cache))
        code = cli_main(["doctor", "--calibrate", "--lang", lang])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert str(cache) in err and korean(err) == (lang == "ko"), err
        assert "Traceback" not in err
    assert not timed and a_file.read_text() == "x"


def test_calibrate_interrupted_leaves_no_file(tmp_path, monkeypatch):
    """Ctrl-C during the timing: no calibration file and no temporary or probe file in the cache directory."""
    pytest.importorskip("torch")
    from qkv.kernels import speed

    def interrupted(attend, **kw):
        raise KeyboardInterrupt

    monkeypatch.setenv("QKV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(speed, "calibrate", interrupted)
    from qkv.commands import doctor

    with pytest.raises(KeyboardInterrupt):
        doctor.calibrate("en")
    cache = tmp_path / "cache"
    assert not cache.exists() or os.listdir(cache) == []


# ------------------------------------------------------------------ class 8: a parameter or a JSON key given twice
@pytest.mark.parametrize("path, query, field", [
    ("/api/next", "model=gpt2&text=The+cat&k=3&k=50", "k"),
    ("/api/next", "model=gpt2&text=The+cat&temperature=1&temperature=0.5", "temperature"),
    ("/api/practice", "name=self-attention&seed=1&seed=2", "seed"),
    ("/api/neuron", "model=gpt2&text=The+cat&layer=0&head=0&query=0&key=0&key=1", "key"),
    ("/api/tokens", "model=gpt2&text=a&text=b", "text"),
])
def test_a_parameter_given_twice_is_refused(client, path, query, field):
    """k=3&k=50: starlette keeps the last and the answer was for k=50 without a word; now a 400 naming it."""
    for lang in ("en", "ko"):
        response = get(client, path, f"{query}&lang={lang}")
        assert response.status_code == 400, response.text
        body = response.json()
        assert body["field"] == field and korean(body["error"]) == (lang == "ko"), body
    once = get(client, path, query.rsplit("&", 1)[0])
    assert once.status_code == 200, once.text


@pytest.mark.parametrize("body", [
    b'{"name": "self-attention", "seed": 0, "seed": 5, "question": 0, "answer": "1"}',
    b'{"name": "x", "name": "self-attention", "seed": 0, "question": 0, "answer": "1"}',
])
def test_a_json_key_given_twice_is_refused(client, body):
    """Python's json keeps the last of {"seed": 0, "seed": 5}: the check answered for a drill the page did not show."""
    for path in ("/api/practice/check", "/api/whatif"):
        for lang in ("en", "ko"):
            response = client.post(f"{path}?lang={lang}", content=body, headers=JSON)
            assert response.status_code == 400, response.text
            line = error(response)
            assert korean(line) == (lang == "ko") and '"' + ("seed" if b'"seed": 5' in body else "name") + '"' in line


def test_the_pages_own_address_is_not_refused(client):
    """The checks of classes 2 and 8 are the API's: a bookmark of the page with a repeated or odd parameter still
    opens the page (its script reads the address)."""
    for query in ("model=gpt2&model=gpt2", "text=%FF"):
        response = get(client, "/", query)
        assert response.status_code == 200 and "text/html" in response.headers["content-type"]
