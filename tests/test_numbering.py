"""Rows and tokens numbered and named as the posts do, and the worked examples' wording.

«Attention의 projection: Q·K·V와 멀티 헤드» counts its tokens from 1 ("토큰 3의 입력으로 Q·K·V 각각의 세 번째
행") and its heads from 1 ("Head 1", "Head 2"): the projection example says so (token_base = 1,
head_base = 1) and names its tokens in Korean (tokens_ko). The other two posts count from 1 too
(«도해와 최소 사례로 …»: 헤드 1, 2, 3, W_Q^(1), "첫 번째 인코더 층"; «어텐션이 조모임이라면»: A_1 … A_n), so every
example counts its tokens and heads from 1. Every renderer then shows query/key rows from that base
and the names in the reader's language, --query reads a number in the same base (`qkv.trace.Shown`),
an out-of-range one is refused naming the range in that base, and each explanation says once how its
numbers meet the API's 0-based index; the indices used for computation, and the API's query=N, stay.
The expected numbers come from the posts (token 3 is its third row, love the second word of
"I love machine learning") and from the example files' token lists, never from qkv's output.
"""

from __future__ import annotations

import re

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

import qkv  # noqa: E402
import qkv.examples  # noqa: E402
from qkv import viz  # noqa: E402
from qkv.cli import main  # noqa: E402
from qkv.errors import InputError  # noqa: E402
from qkv.explain import texts  # noqa: E402
from qkv.explain.page import trace_html  # noqa: E402
from qkv.spec import parse_spec  # noqa: E402
from qkv.trace import Shown, in_language, token_number  # noqa: E402

# the post's names for the projection example's three tokens, and which of them it follows (its third row)
POST_TOKENS = {"en": ["token 1", "token 2", "token 3"], "ko": ["토큰 1", "토큰 2", "토큰 3"]}
QUERY_PAIR = re.compile(r"(?:query|Query) (\d+) “([^”]+)”")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def figure_texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


def pairs_follow(text: str, names: list[str], base: int) -> int:
    """Every "query N “name”" in ``text`` has N = the name's row + base; returns how many were checked."""
    checked = 0
    for number, name in QUERY_PAIR.findall(text):
        if name in names:
            assert int(number) == names.index(name) + base, (number, name)
            checked += 1
    return checked


def small_doc(**extra) -> dict:
    doc = {"tokens": ["a", "b"], "x": [[1.0, 0.0], [0.0, 1.0]], "w_q": [[1.0, 0.0], [0.0, 1.0]],
           "w_k": [[1.0, 0.0], [0.0, 1.0]], "w_v": [[1.0, 0.0], [0.0, 1.0]]}
    doc.update(extra)
    return doc


# --------------------------------------------------------------------------- the example file's fields
@pytest.mark.parametrize("bad", [2, -1, True, "1", [1]])
def test_a_bad_token_base_is_one_clear_error_in_each_language(bad):
    with pytest.raises(InputError) as caught:
        parse_spec(small_doc(token_base=bad), source="my.toml", base=None)
    error = caught.value
    assert error.field == "token_base"
    english = str(error)
    assert "\n" not in english and "token_base" in english and "0" in english and "1" in english
    korean = texts.text("ko", "error.spec.token_base", got="2")
    assert "0부터" in korean and "1부터" in korean
    assert set(re.findall(r"[A-Za-z_]+", korean)) <= {"qkv", "API", "Query", "Key"}, korean


@pytest.mark.parametrize("bad, says", [(["가"], "tokens_ko"), ("가 나", "tokens_ko"), ([1, 2], "tokens_ko")])
def test_korean_names_must_name_every_row(bad, says):
    with pytest.raises(InputError) as caught:
        parse_spec(small_doc(tokens_ko=bad), source="my.toml", base=None)
    assert caught.value.field == says


def test_the_cli_says_a_bad_token_base_in_one_line_with_status_2(capsys, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('tokens = ["a", "b"]\ntoken_base = 2\nx = [[1, 0], [0, 1]]\nw_q = [[1, 0], [0, 1]]\n'
                    'w_k = [[1, 0], [0, 1]]\nw_v = [[1, 0], [0, 1]]\n', encoding="utf-8")
    for lang in ("en", "ko"):
        code, out, err = run(capsys, "explain", str(path), "--lang", lang)
        assert code == 2 and out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("qkv: ") and "token_base" in lines[0], err
        if lang == "ko":
            assert "1부터" in lines[0]


def test_a_user_file_keeps_rows_from_0_and_may_count_them_from_1(tmp_path):
    spec = parse_spec(small_doc(), source="my.toml", base=None)
    assert spec.token_base == 0 and spec.tokens_ko is None
    spec = parse_spec(small_doc(token_base=1, tokens_ko=["가", "나"]), source="my.toml", base=None)
    assert spec.token_base == 1 and spec.tokens_ko == ["가", "나"]


# --------------------------------------------------------------------------- the projection example
@pytest.fixture(scope="module")
def projection():
    trace = qkv.examples.run("projection")
    trace.meta["variants"] = qkv.examples.variants("projection", trace)     # what `--format html` adds
    return trace


def test_the_projection_example_counts_as_its_post(projection):
    doc = qkv.examples.load("projection")
    assert doc["tokens"] == POST_TOKENS["en"] and doc["tokens_ko"] == POST_TOKENS["ko"]
    assert projection.meta["token_base"] == 1 and projection.meta["head_base"] == 1
    # the indices used for computation never change: token 3 is row 2 of every array
    assert projection.meta["query"] == 2 and projection.info.tokens[2] == "token 3"
    assert token_number(projection.meta, 2) == 3
    q = projection["q"].value
    x, w_q = np.array(doc["x"], dtype=np.float64), np.array(doc["w_q"], dtype=np.float64)
    np.testing.assert_allclose(q[2], x[2] @ w_q, rtol=0, atol=1e-12)


def test_a_korean_name_follows_the_same_row(projection):
    assert qkv.examples.run("projection", query="토큰 2").meta["query"] == 1
    assert qkv.examples.run("projection", query="token 2").meta["query"] == 1
    assert qkv.examples.run("projection", query=Shown("토큰 2")).meta["query"] == 1
    assert qkv.examples.run("projection", query=1).meta["query"] == 1      # the API's query=N is the row index
    assert qkv.examples.run("projection", query=Shown("2")).meta["query"] == 1   # --query N the row shown as N


def test_in_language_names_the_tokens_and_leaves_the_trace_alone(projection):
    shown = in_language(projection, "ko")
    assert list(shown.info.tokens) == POST_TOKENS["ko"] and list(shown.info.key_tokens) == POST_TOKENS["ko"]
    assert shown.meta["variants"]["qToken"] == "토큰 3" and shown.meta["variants"]["tokens"] == POST_TOKENS["ko"]
    assert shown.steps is projection.steps
    assert list(projection.info.tokens) == POST_TOKENS["en"]                 # the API's names kept
    assert projection.meta["variants"]["qToken"] == "token 3"
    assert in_language(projection, "en") is projection
    plain = qkv.examples.run("self-attention")
    assert in_language(plain, "ko") is plain


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_english_explanations_never_pair_query_2_with_token_3(capsys, projection, fmt):
    code, out, err = run(capsys, "example", "projection", "--format", fmt)
    assert code == 0 and err == ""
    pairs_follow(out, POST_TOKENS["en"], 1)
    assert "token 3" in out and not re.search(r"query 2 “token 3”", out, re.I)
    # the note says how the numbers shown meet the API's: token 3 is row 2 of every array, --query 3 reads it
    said = " ".join(out.split())
    # a token named by its number is not glossed by it (“token 3” is token 3 said nothing)
    assert "token 3 is row index 2" in said and "(--query 3)" in said and "(query=2)" in said
    assert "“token 3” is token 3" not in said


def test_figures_number_the_followed_query_as_the_post(projection):
    for lang in ("en", "ko"):
        text = "\n".join(figure_texts(viz.query_path(projection, lang=lang)))
        pairs_follow(text, POST_TOKENS[lang], 1)           # its tokens are named by their numbers: no pair left
        assert ("query 3" if lang == "en" else "Query 3") in text
        assert not re.search(r"query 3 “(token|토큰) 3”", text, re.I)          # not glossed by its own name
        assert "query 2" not in text.lower()


def payload_of(html: str) -> dict:
    """The page's data, as its script reads it."""
    import json

    match = re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', html, re.S)
    assert match
    return json.loads(match.group(1))


def test_the_page_payload_counts_rows_from_1(projection):
    for lang in ("en", "ko"):
        payload = payload_of(trace_html(projection, lang=lang))
        names = POST_TOKENS[lang]
        assert payload["tokenBase"] == 1 and payload["headBase"] == 1
        assert all(part["qTokens"] == names and part["kTokens"] == names for part in payload["parts"])
        assert payload["whatIf"]["qToken"] == names[2] and payload["whatIf"]["tokens"] == names
        assert payload["query"] == 2                    # the index the page computes with stays the API's


def test_korean_outputs_name_no_english_token(capsys, projection):
    for fmt in ("text", "markdown", "html"):
        code, out, err = run(capsys, "example", "projection", "--format", fmt, "--lang", "ko")
        assert code == 0 and err == ""
        if fmt == "html":     # the page's script has the word "token" in its code; no name of a token
            assert not re.search(r"token \d", out, re.I)
            assert "토큰 3" in out
        else:
            assert "token" not in out.lower(), [line for line in out.splitlines() if "token" in line.lower()][:3]
            assert "토큰 3" in out
            assert "배열에서 토큰 3의 행 인덱스는 2이다" in " ".join(out.split())
    for fig in (viz.figure_for(projection, lang="ko"), viz.query_path(projection, lang="ko")):
        text = "\n".join(figure_texts(fig))
        assert "token" not in text.lower(), text[:300]


# --------------------------------------------------------------------------- wording
def test_the_cell_derivation_words_read_right():
    for lang in ("en", "ko"):
        value = texts.text(lang, "page.value", j=3)
        assert "v[3]" in value and "it weights" not in value
        scaled = texts.text(lang, "page.scaled_is", formula="Q·Kᵀ · 0.707107 (= 1/√d_k)")
        assert scaled.count("(") == 1, scaled                 # no brackets inside brackets
        for key in ("page.scaled", "fig.scaled"):
            assert "√dₖ" not in texts.text(lang, key) and "√d_k" in texts.text(lang, key)
        assert "(" not in texts.text(lang, "page.sum1")          # the page writes it in brackets
        given = texts.text(lang, "page.score_given")
        assert "raw" not in given and given != texts.text(lang, "page.score")
    assert texts.text("en", "page.value", j=3) == "the value row v[3] this weight multiplies"


def test_the_concat_label_keeps_its_phrases_whole():
    trace = qkv.examples.run("projection")
    # the label names both phrases ("헤드 출력", "이어 붙이기"; "heads", "concatenated"), each whole on one line:
    # broken across lines (as it once was) it breaks between them, never inside one
    for lang, phrases in (("ko", ("헤드 출력", "이어 붙이기")), ("en", ("heads", "concatenated"))):
        labels = [t for t in figure_texts(viz.figure_for(trace, lang=lang)) if phrases[1] in t]
        assert labels, lang
        for label in labels:
            lines = label.split("\n")
            assert all(any(p in line for line in lines) for p in phrases), label
            assert all(any(p in line for p in phrases) or not line.strip(" ↓") for line in lines), label


def test_a_meetings_scores_are_labelled_as_given():
    trace = qkv.examples.run("group-meeting")
    prefix = next(step.name.split("/")[0] for step in trace if step.name.endswith("/weights"))
    text = figure_texts(viz.query_path(trace, part=prefix + "/"))
    assert texts.text("en", "fig.scores_given") in text and texts.text("en", "fig.scores") not in text


def test_a_saved_korean_explanation_keeps_the_apis_names_and_the_numbering(capsys, tmp_path):
    """--format json --lang ko saves the trace as computed (tokens as in the file, tokens_ko and token_base
    beside them): explained again in English it says token 3, in Korean 토큰 3, and its figure says query 3."""
    import json

    code, out, err = run(capsys, "example", "projection", "--format", "json", "--lang", "ko")
    assert code == 0 and err == ""
    saved = json.loads(out)["trace"]
    assert saved["meta"]["tokens"] == POST_TOKENS["en"] and saved["meta"]["tokens_ko"] == POST_TOKENS["ko"]
    assert saved["meta"]["token_base"] == 1
    path = tmp_path / "saved.json"
    path.write_text(out, encoding="utf-8")
    for lang in ("en", "ko"):
        code, text, err = run(capsys, "explain", str(path), "--lang", lang)
        assert code == 0 and err == "", err
        assert POST_TOKENS[lang][2] in text and (lang == "en" or "token" not in text.lower())
    trace = qkv.Trace.from_dict(saved)
    assert "query 3" in "\n".join(figure_texts(viz.query_path(trace, lang="en")))


# --------------------------------------------------------------------------- every example counts as its post
# the row the post follows, counted from 1 by its position in the post's sentence (independent of qkv)
FOLLOWED = {"self-attention": ("love", 2), "cross-attention": ("私は", 1), "multi-head": ("love", 2),
            "projection": ("token 3", 3), "group-meeting": ("lot", 4)}


@pytest.mark.parametrize("name", sorted(FOLLOWED))
def test_every_example_counts_from_1_and_says_so_once(capsys, name):
    token, number = FOLLOWED[name]
    for lang in ("en", "ko"):
        code, out, err = run(capsys, "example", name, "--lang", lang)
        assert code == 0 and err == ""
        said = " ".join(out.split())
        needle = f"(“{token}” is token {number})" if lang == "en" else f"(“{token}” = 토큰 {number})"
        if name == "projection":            # a token named by its number: the note names its row only
            needle = "token 3 is row index 2" if lang == "en" else "배열에서 토큰 3의 행 인덱스는 2이다"
        assert said.count(needle) == 1, said[:400]
        assert ("index " if lang == "en" else "인덱스는 ") + f"{number - 1}" in said
    trace = qkv.examples.run(name)
    assert trace.meta["token_base"] == 1 and trace.meta["head_base"] == 1


@pytest.mark.parametrize("name", ["self-attention", "cross-attention", "multi-head", "projection"])
def test_the_json_explanation_carries_the_numbers_shown(capsys, name):
    import json

    token, number = FOLLOWED[name]
    code, out, err = run(capsys, "example", name, "--format", "json")
    assert code == 0 and err == ""
    saved = json.loads(out)
    notes = [b["text"] for b in saved["blocks"] if b["type"] == "note" and "API counts from 0" in b["text"]]
    said = f"{token} is row index {number - 1}" if name == "projection" else f"is token {number})"
    assert len(notes) == 1 and said in notes[0] and f"(--query {number})" in notes[0]
    meta = saved["trace"]["meta"]
    assert meta["token_base"] == 1 and meta["query"] == number - 1     # the index stays the API's


@pytest.mark.parametrize("name", ["self-attention", "cross-attention", "projection"])
def test_query_reads_the_number_shown(capsys, name):
    import json

    tokens = qkv.examples.load(name)["tokens"]
    for number, row in ((1, 0), (len(tokens), len(tokens) - 1)):
        code, out, err = run(capsys, "example", name, "--query", str(number), "--format", "json")
        assert code == 0 and err == "", err
        assert json.loads(out)["trace"]["meta"]["query"] == row
    # the API's query=N stays the 0-based row
    assert qkv.examples.run(name, query=len(tokens) - 1).meta["query"] == len(tokens) - 1


def test_projection_query_3_is_token_3_and_self_attention_query_2_is_love(capsys):
    import json

    code, out, err = run(capsys, "example", "projection", "--query", "3", "--format", "json")
    assert code == 0 and json.loads(out)["trace"]["meta"]["query"] == 2
    code, out, err = run(capsys, "example", "self-attention", "--query", "2")
    assert code == 0 and "(“love” is token 2)" in " ".join(out.split())
    code, out, err = run(capsys, "example", "multi-head", "--query", "2")      # love, the one it follows
    assert code == 0 and err == ""


@pytest.mark.parametrize("name, bad", [("self-attention", "0"), ("self-attention", "5"), ("projection", "4"),
                                       ("cross-attention", "2")])
def test_an_out_of_range_query_names_the_range_shown(capsys, name, bad):
    n = len(qkv.examples.load(name)["tokens"])
    for lang in ("en", "ko"):
        code, out, err = run(capsys, "example", name, "--query", bad, "--lang", lang)
        assert code == 2 and out == ""
        line = err.strip()
        assert "\n" not in line and "--query" in line and f"1–{n}" in line and f"0–{n - 1}" not in line, line
        if lang == "ko":
            assert "행 번호" in line


def test_a_user_file_reads_its_query_in_its_own_base(tmp_path, capsys):
    import json

    spec = parse_spec(small_doc(token_base=1, query=2), source="my.toml", base=None)
    assert spec.query == 1
    assert parse_spec(small_doc(query=1), source="my.toml", base=None).query == 1
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(small_doc(token_base=1)), encoding="utf-8")
    code, out, err = run(capsys, "explain", str(path), "--query", "1", "--format", "json")
    assert code == 0 and json.loads(out)["trace"]["meta"]["query"] == 0
    code, out, err = run(capsys, "explain", str(path), "--query", "3")
    assert code == 2 and "1–2" in err


@pytest.mark.parametrize("name", ["self-attention", "cross-attention", "projection"])
def test_figures_label_the_followed_query_as_the_post(name):
    token, number = FOLLOWED[name]
    trace = qkv.examples.run(name)
    text = "\n".join(figure_texts(viz.query_path(trace, lang="en")))
    said = f"query {number}" if name == "projection" else f"query {number} “{token}”"   # “token 3” not glossed
    assert said in text and f"query {number - 1} " not in text
    assert "head 0" not in text


def test_the_projection_path_names_its_head_as_the_post():
    trace = qkv.examples.run("projection")
    for head, lang, said in ((0, "en", "head 1"), (1, "en", "head 2"), (0, "ko", "헤드 1")):
        titles = [t for t in figure_texts(viz.query_path(trace, head=head, lang=lang)) if " — " in t]
        assert any(title.endswith(said) for title in titles), titles


@pytest.mark.parametrize("name", sorted(FOLLOWED))
def test_every_page_counts_from_1(name):
    trace = qkv.examples.run(name)
    for lang in ("en", "ko"):
        payload = payload_of(trace_html(trace, lang=lang))
        assert payload["tokenBase"] == 1 and payload["headBase"] == 1



# --------------------------------------------------------------------------- models and the translator: from 0
def test_the_translator_names_its_layer_and_head_counted_from_0():
    """A model counts layers and heads from 0, as its arrays: the last of 2 layers is "layer 1 of 0–1"
    (it said "layer 1 of 2", which reads as the first of two), in both languages, text and figure."""
    from qkv import translator
    from qkv.translator.explain import alignment_figure, explain_text

    model = translator.load()
    translation = model.translate("I love the cat", "ko")
    n_layers, n_heads = translation.cross_weights.shape[:2]
    last = n_layers - 1
    text = explain_text(translation, lang="en")
    assert f"layer {last} of 0–{last}" in text and f"of {n_layers}," not in text
    assert f"head 1 of 0–{n_heads - 1}" in explain_text(translation, lang="en", head=1)
    assert f"층 {last} (0–{last} 중)" in explain_text(translation, lang="ko")
    assert f"헤드 1 (0–{n_heads - 1} 중)" in explain_text(translation, lang="ko", head=1)
    title = "\n".join(figure_texts(alignment_figure(translation, head=0)))
    assert f"layer {last} of 0–{last}, head 0 of 0–{n_heads - 1}" in title


# --------------------------------------------------------------------------- a meeting's question: one number
def _meeting_numbers() -> dict[str, tuple[int, str]]:
    """From the group meeting's TOML itself (not qkv's output): each scene's question and the number its
    token has in the scene's sentence, counted from the file's token_base (lot is token 4 of “I have a lot”)."""
    import tomllib
    from pathlib import Path

    doc = tomllib.loads((Path(qkv.examples.__file__).parent / "group-meeting.toml").read_text(encoding="utf-8"))
    base = doc["token_base"]
    return {s["name"]: (len(s["tokens"]) - 1 - s["tokens"][::-1].index(s["query"]) + base, s["query"])
            for s in doc["scenes"]}


def test_a_meetings_question_is_numbered_as_its_token_on_the_page():
    """The page numbered lot's query row from the row (“query 1 'lot'”) while the text says “lot is token 4”:
    each meeting's part now carries the number of its query row 0, the question's place in its sentence."""
    trace = qkv.examples.run("group-meeting")
    expected = _meeting_numbers()
    for lang in ("en", "ko"):
        parts = {p.get("name"): p for p in payload_of(trace_html(trace, lang=lang))["parts"]}
        for name, (number, token) in expected.items():
            assert parts[name]["qTokens"] == [token] and parts[name]["qFrom"] == number, (lang, name, parts[name])
        # the notation part (rows/columns): queries are the sentence's own tokens, numbered from the base
        assert all(p["qFrom"] == 1 for n, p in parts.items() if n not in expected)


def test_a_self_attention_page_numbers_queries_and_keys_alike():
    trace = qkv.examples.run("self-attention")
    (part,) = payload_of(trace_html(trace, lang="en"))["parts"]
    assert part["qTokens"] == part["kTokens"] and part["qFrom"] == 1
