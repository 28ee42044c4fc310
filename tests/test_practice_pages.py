"""Practice on the pages, without a browser: what the offline page (`qkv example NAME --format html`) and
`qkv.show` embed is `qkv.practice.offline`, and each value and line in it is what `qkv.practice` itself
computes and says (`drill`, `check`); `qkv serve`'s /api/practice routes answer with `practice.shown` and
`practice.check`, and refuse bad requests with one line. The right answers of the post's numbers come from
tests/test_practice.py's float64 NumPy reference, not from the drill. The browser plays the same sessions in
tests/test_practice_browser.py. Every test fails on the code before the practice mode reached the pages
(no `practice.offline`, no embedded drills, no /api/practice).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import qkv.notebook
from qkv import practice, serve
from qkv.cli import main
from qkv.explain import texts

from test_cli_korean import HANGUL
from test_cli_lang_ko import korean_only
from test_practice import EXAMPLES, ref_value, reference
from test_serve import BASE, JSON, error, tiny_bert

LANGS = ("en", "ko")


def embedded(html: str) -> dict:
    """The payload the page's script reads (its JSON block), parsed as the browser parses it."""
    block = re.search(r'<script type="application/json" id="qkv-[0-9a-f]+-data">(.*?)</script>', html, re.S)
    assert block, "no embedded payload"
    return json.loads(block.group(1))


def as_json(value):
    return json.loads(json.dumps(value, ensure_ascii=False))


def put(line: str, name: str, value: str) -> str:
    return line.replace("{" + name + "}", value)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """name, lang → the page `qkv example NAME --format html --lang LANG` writes (made once)."""
    folder, made = tmp_path_factory.mktemp("practice-pages"), {}

    def page(name: str, lang: str) -> str:
        if (name, lang) not in made:
            path = folder / f"{name}-{lang}.html"
            assert main(["example", name, "--format", "html", "--lang", lang, "--out", str(path)]) == 0
            made[name, lang] = path.read_text(encoding="utf-8")
        return made[name, lang]
    return page


# ------------------------------------------------------------------ the offline page's drills
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", EXAMPLES)
def test_the_page_embeds_the_drills_practice_computes(pages, capsys, name, lang):
    data = embedded(pages(name, lang))["practice"]
    assert data == as_json(practice.offline(name, lang=lang))
    assert [(d["seed"], d["fresh"]) for d in data["drills"]] == [(0, False), (1, True), (2, True), (3, True)]
    ref = reference(name)
    for d in data["drills"]:
        session = practice.drill(name, lang=lang, seed=d["seed"], fresh=d["fresh"])
        assert len(d["questions"]) == len(session.questions) > 0
        for q, entry in zip(session.questions, d["questions"]):
            assert (entry["answer"], entry["byHand"], entry["digits"]) == (q.answer, q.by_hand, q.digits)
            assert entry["tolerance"] == 10.0 ** -q.digits
            if not d["fresh"]:           # the post's numbers: the answer is the float64 reference's
                right = ref_value(ref, q)
                assert abs(entry["answer"] - right) <= 1e-9 * max(1.0, abs(right)), (q.kind, entry["answer"], right)
            # each line the page can say is the one qkv.practice.check says for the same typed text
            typed = f"{q.answer:.{q.digits}f}"
            assert practice.check(q, typed, lang).lines == (entry["right"],)
            for slip in entry["slips"]:
                typed = repr(slip["value"])
                verdict = practice.check(q, typed, lang)
                if verdict.status == "right":          # the by-hand value can sit on a slip's number
                    assert abs(slip["value"] - q.by_hand) <= q.tolerance * (1 + 1e-9)
                    continue
                assert verdict.status == "wrong" and verdict.lines == (put(slip["line"], "yours", typed),), typed
            far = repr(q.answer + 1e6 + 0.123456789)
            assert practice.check(q, far, lang).lines == tuple(put(line, "yours", far) for line in entry["unknown"])
            for places, rounded in enumerate(entry["places"]):
                assert rounded["rounded"] == round(q.answer, places)
                typed = f"{q.answer:.{places}f}"
                verdict = practice.check(q, typed, lang)
                if verdict.status == "bad":
                    assert verdict.lines == (rounded["line"],)
            assert entry["reveal"] == texts.text(lang, "practice.reveal", how=texts.text(lang, q.how[0], **q.how[1]))
        lines = d["lines"]
        assert practice.check(session.questions[0], "  ", lang).lines == (lines["empty"],)
        assert practice.check(session.questions[0], "abc", lang).lines == (put(lines["text"], "value", "'abc'"),)
        assert practice.check(session.questions[0], "nan", lang).lines == (put(lines["nan"], "value", "nan"),)
        assert practice.check(session.questions[0], "1e400", lang).lines == (put(lines["inf"], "value", "1e400"),)
    capsys.readouterr()


@pytest.mark.parametrize("name", EXAMPLES)
def test_fresh_sets_are_new_numbers_of_the_same_shapes(name):
    drills = practice.offline(name)["drills"]
    kinds = [[q["kind"] for q in d["questions"]] for d in drills]
    assert all(k == kinds[0] for k in kinds)          # the same steps, in the post's order
    answers = [tuple(q["answer"] for q in d["questions"]) for d in drills]
    assert len(set(answers)) == len(answers)          # each set its own numbers
    assert [q["title"] for q in drills[0]["questions"]] == [q["title"] for q in drills[1]["questions"]]


def test_a_page_of_no_worked_example_has_no_practice(tmp_path):
    import numpy as np
    from qkv import attention
    from qkv.trace import Trace

    trace = Trace("mine", {})
    x = np.arange(12.0).reshape(3, 4) / 10
    attention(x, x, x, record=trace)
    from qkv.explain.page import trace_html

    assert "practice" not in embedded(trace_html(trace))
    # drills for another language than the page's are not shown in it
    named = qkv.examples.run("self-attention")
    named.meta["practice"] = practice.offline("self-attention", lang="ko")
    assert "practice" not in embedded(trace_html(named, lang="en"))


@pytest.mark.parametrize("lang", LANGS)
def test_qkv_show_embeds_the_same_drills(lang):
    for name in ("self-attention", "multi-head"):
        view = qkv.notebook.view(name, lang=lang)
        assert embedded(view.fragment())["practice"] == as_json(practice.offline(name, lang=lang))
        assert embedded(view.html())["practice"]["lang"] == lang


def test_the_pages_words_are_korean_in_korean():
    keys = [k for k in texts.LANGS["en"] if k.startswith(("page.practice", "serve.practice"))]
    assert len(keys) >= 15 and all(k in texts.LANGS["ko"] for k in keys)
    for key in keys:
        en, ko = texts.LANGS["en"][key], texts.LANGS["ko"][key]
        assert texts.placeholders(en) == texts.placeholders(ko), key
        assert HANGUL.search(ko), key
        said = texts.text("ko", key, **{name: "3" for name in texts.placeholders(ko)})
        assert korean_only(said, {"qkv", "serve", "practice", "fresh", "seed", "true", "false"}) == [], (key, said)


# ------------------------------------------------------------------ qkv serve's /api/practice
@pytest.fixture(scope="module")
def client(tmp_path_factory):
    models = serve.load_models([tiny_bert(tmp_path_factory.mktemp("models") / "tiny-bert")], minilm=False)
    with TestClient(serve.create_app(models), base_url=BASE) as test_client:
        yield test_client


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", EXAMPLES)
def test_serve_gives_the_drill_and_checks_with_practice(client, name, lang):
    answer = client.get("/api/practice", params={"name": name, "seed": 7, "lang": lang})
    assert answer.status_code == 200, answer.text
    session = practice.drill(name, lang=lang, seed=7)
    shown = answer.json()
    assert shown == as_json(practice.shown(session))
    assert "answer" not in shown["questions"][0] and "slips" not in shown["questions"][0]   # the server checks
    ref = reference(name)
    for number, q in enumerate(session.questions):
        right = ref_value(ref, q)
        slip = repr(q.slips[0].value) if q.slips else "123456.789"
        for typed in (f"{right:.{q.digits}f}", slip, "", "abc", "nan", "1e400", "−0.5"):
            body = {"name": name, "seed": 7, "fresh": False, "question": number, "answer": typed}
            said = client.post("/api/practice/check", params={"lang": lang}, json=body)
            assert said.status_code == 200, said.text
            verdict = practice.check(q, typed, lang)
            assert said.json() == {"status": verdict.status, "lines": list(verdict.lines),
                                   "reveal": texts.text(lang, "practice.reveal", how=texts.text(lang, q.how[0], **q.how[1]))}
        first = client.post("/api/practice/check", params={"lang": lang},
                            json={"name": name, "seed": 7, "question": number, "answer": f"{right:.{q.digits}f}"})
        assert first.json()["status"] == "right"


def test_serve_draws_a_seed_and_fresh_numbers(client):
    drawn = client.get("/api/practice", params={"name": "group-meeting", "fresh": "1"}).json()
    assert drawn["fresh"] is True and isinstance(drawn["seed"], int) and drawn["seed"] >= 0
    again = client.get("/api/practice", params={"name": "group-meeting", "fresh": "1", "seed": drawn["seed"]}).json()
    assert again == drawn                      # the seed it drew repeats the drill
    assert drawn == as_json(practice.shown(practice.drill("group-meeting", seed=drawn["seed"], fresh=True)))
    q = practice.drill("group-meeting", seed=drawn["seed"], fresh=True).questions[0]
    said = client.post("/api/practice/check", json={"name": "group-meeting", "seed": drawn["seed"], "fresh": True,
                                                     "question": 0, "answer": repr(q.answer)}).json()
    assert said["status"] == "right"


@pytest.mark.parametrize("params, status, field", [
    ({"name": "nope"}, 404, "name"), ({"name": "self-attention", "seed": "-1"}, 400, "seed"),
    ({"name": "self-attention", "seed": "x"}, 400, "seed"), ({"name": "self-attention", "fresh": "maybe"}, 400, "fresh"),
    ({"name": "self-attention", "lang": "fr"}, 400, "lang")])
def test_serve_refuses_a_bad_drill_request(client, params, status, field):
    answer = client.get("/api/practice", params=params)
    assert answer.status_code == status and answer.json()["field"] == field, answer.text
    error(answer)


@pytest.mark.parametrize("body, status, field", [
    ({"name": "self-attention", "seed": 0, "question": 99, "answer": "1"}, 400, "question"),
    ({"name": "self-attention", "seed": 0, "question": -1, "answer": "1"}, 400, "question"),
    ({"name": "self-attention", "seed": 0, "question": "0", "answer": "1"}, 400, "question"),
    ({"name": "self-attention", "seed": 0, "question": 0, "answer": 1.5}, 400, "answer"),
    ({"name": "self-attention", "seed": -2, "question": 0, "answer": "1"}, 400, "seed"),
    ({"name": "self-attention", "seed": True, "question": 0, "answer": "1"}, 400, "seed"),
    ({"name": "self-attention", "seed": 0, "fresh": "yes", "question": 0, "answer": "1"}, 400, "fresh"),
    ({"name": ["self-attention"], "seed": 0, "question": 0, "answer": "1"}, 404, "name")])
def test_serve_refuses_a_bad_answer_request(client, body, status, field):
    for lang in LANGS:
        answer = client.post("/api/practice/check", params={"lang": lang}, json=body)
        assert answer.status_code == status and answer.json()["field"] == field, answer.text
        line = error(answer)
        assert (HANGUL.search(line) is not None) == (lang == "ko"), line


def test_serve_refuses_a_body_that_is_no_json_or_too_large(client):
    bad = client.post("/api/practice/check", content=b"{nope", headers=JSON)
    assert bad.status_code == 400 and "JSON" in error(bad)
    listed = client.post("/api/practice/check", content=b"[1, 2]", headers=JSON)
    assert listed.status_code == 400 and "JSON" in error(listed)
    big = json.dumps({"name": "self-attention", "seed": 0, "question": 0, "answer": "1" * 5000}).encode()
    assert client.post("/api/practice/check", content=big, headers=JSON).status_code == 413
    plain = client.post("/api/practice/check", content=b'{"name": "self-attention"}', headers={"Content-Type": "text/plain"})
    assert plain.status_code == 403 and "application/json" in error(plain)
