"""The Korean a learner reads (`qkv example`, `qkv practice`, `qkv why` under --lang ko, and the page, serve
and figure words) read by classes a native review found (issue 29's "have them read again"):

- no English prose: a stricter net than test_korean_everywhere's (whose allow-list admits words such as
  "temperature", "exact" or "heads" anywhere because commands and file fields spell them): here only the
  input's tokens, the posts' own Latin terms and formula symbols pass, and code (--options, dotted names,
  name=value, `qkv …` commands) is set aside;
- one term per thing, the posts' own: 차원 for a width (the posts' "모델 차원 d", "head 하나의 차원 dh",
  "2차원 벡터"), never 너비/폭; the three attentions as «도해와 최소 사례로 …» writes them (Self-attention,
  Cross-attention, Multi-head attention) in the text, the figures and the pages alike; a Key's contribution
  named as the table names it (기여도, 기여 비율), not 몫 ("quotient");
- one register: 한다체 throughout, and the reader told what to type in 하라체 ("입력하라"), not described
  ("입력한다");
- what a sentence says is true of its example: the group meeting's scores are not "scaled"; the causal
  mask is not said as "keys 0 … i" in examples that count from 1; an answer right in its whole part is not
  "right to 0 decimals".
The expected words are written here, from the posts, not read from the code under test.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys

import pytest

from qkv import examples, practice
from qkv.cli import main
from qkv.explain import texts

from browser_support import OpenPage, browser_context  # noqa: F401  (fixture: the page's test below)

WHY = ["sqrt-dk", "softmax", "order", "temperature", "mask", "dot-product"]

# Latin words that are not English prose under --lang ko: the posts' own terms (Query/Key/Value and softmax
# as posts 000 and 001 write them; their titles' "Self-attention, Cross-attention, Multi-head Attention",
# "Core Attention", "reshape", "projection"; the paper's title; 3Blue1Brown), symbols of the formulas, and
# the row/column glosses post 002 writes itself ("행마다(row-wise)").
POST_TERMS = {"Query", "Key", "Value", "softmax", "Self", "Cross", "Multi", "head", "attention", "Attention",
              "cross", "multi",          # the post's prose: "cross-attention을 통해", "multi-head attention에서는"
              "Core", "reshape", "projection", "Is", "All", "You", "Need", "row", "column", "wise",
              "Concat", "exp", "cos", "std", "Enter", "abc"}            # abc: the drill's own echo of a typed answer
WORD = re.compile(r"(?<![\w.\-=/])[A-Za-z]+(?![\w.=(/])")
CODE = re.compile(r"--[\w-]+|\b\w+(?:\.\w+)+\b|\b\w+=\S*|qkv (?:example|practice|why|explain) [\w-]+")
WRONG_ANSWERS = "0.5\nabc\n1\n1\n1\n2\n2\n2\n0.3\n0.3\n0.3\n" * 3


def _tokens() -> set[str]:
    found = set()
    for name in examples.names():
        meta = examples.run(name).meta
        for token in [*meta.get("tokens", []), *meta.get("key_tokens", []),
                      *[t for scene in meta.get("scenes", []) for t in scene["tokens"]], *meta.get("answers", [])]:
            found |= set(re.findall(r"[A-Za-z]+", str(token)))
    # `qkv why sqrt-dk` also reads the translator on the post's sentence: its decoder's tokens <ko>, <ja> are input
    from qkv.translator.model import LANG_TOKENS

    found |= {word for token in LANG_TOKENS.values() for word in re.findall(r"[A-Za-z]+", token)}
    return found


ALLOWED = POST_TERMS | _tokens()


def run_ko(*argv: str, stdin: str = "") -> str:
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdin", io.StringIO(stdin))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*argv, "--lang", "ko"])
    assert code == 0, (argv, err.getvalue()[-500:])
    return out.getvalue() + err.getvalue()


def english_prose(text: str) -> list[str]:
    """Latin words of ``text`` that are prose: not a symbol (one letter or a subscripted name), not a token of
    the input, not one of the posts' terms, not inside code (an option, a dotted name, name=value, a command)."""
    words = WORD.findall(CODE.sub(" ", text))
    return sorted({w for w in words if len(w) > 1 and w not in ALLOWED})


# ------------------------------------------------------------------------------------------ no English prose
@pytest.mark.parametrize("mode", [[], ["--by-hand"]], ids=["default", "by-hand"])
@pytest.mark.parametrize("name", examples.names())
def test_a_korean_example_has_no_english_prose(name, mode):
    assert english_prose(run_ko("example", name, *mode)) == []


@pytest.mark.parametrize("name", examples.names())
def test_a_korean_drill_has_no_english_prose(name):
    """Wrong answers, a non-number and a whole number reach the drill's hints, slips and refusals."""
    assert english_prose(run_ko("practice", name, "--seed", "3", stdin=WRONG_ANSWERS)) == []


@pytest.mark.parametrize("topic", WHY)
def test_a_korean_why_has_no_english_prose(topic):
    assert english_prose(run_ko("why", topic)) == []


def test_the_net_catches_what_it_should():
    assert english_prose("가중치가 바뀐다(temperature, √d_k로 나누기). Y = Concat(heads)·W_O") == ["heads", "temperature"]
    assert english_prose("q_love · k_I = 0.92 × 0.45, --query 2, qkv.examples.run(query=1), qkv example self-attention") == []


# ------------------------------------------------------------------------------------------ one term per thing
def test_a_width_is_called_차원_as_the_posts_call_it():
    """Post 000: "모델 차원 d", "head 하나의 차원 dh"; post 001: "Q와 K는 2차원 벡터이므로". 너비 and 폭
    (calques of "width") said the same thing in other words; a SIMD register's 벡터 폭 and the terminal's
    width are other things."""
    found = {key: value for key, value in texts.KO.items()
             if re.search(r"너비|(?<!벡터 )(?<!터미널 )폭", re.sub(r"\{[^}]*\}", "", value))}
    assert found == {}, found
    assert "2차원 벡터" in run_ko("example", "self-attention")           # the post's own wording


def test_the_three_attentions_are_named_alike_in_text_figures_and_pages():
    """«도해와 최소 사례로 …» writes "Self-attention", "Cross-attention", "Multi-head attention" in its Korean
    text: the text's titles, the figures' titles and the sentences naming the self-attention example use the
    same words (the figures had said 셀프 어텐션, 크로스 어텐션, 멀티 헤드 어텐션 beside the text's Latin)."""
    for name, term in (("self-attention", "Self-attention"), ("cross-attention", "Cross-attention"),
                       ("multi-head", "Multi-head attention")):
        assert texts.KO[f"title.{name}"].startswith(term + ":"), name
        assert texts.KO[f"fig.title.{name}"].startswith(term + ":"), name
    said = run_ko("example", "multi-head") + run_ko("example", "group-meeting")
    assert "Self-attention 예제" in said and "self-attention 예제" not in said
    for key, value in texts.KO.items():
        assert not re.search(r"셀프 어텐션|크로스 어텐션|self-attention 예제", value), key


def test_a_contribution_is_named_as_the_table_names_it():
    """The table's columns say ‖w·v‖ and 출력 기여 비율, the sentence 기여도: the step names and the drill say the
    same (they said 기여, 출력에서 차지하는 몫, and a head's "몫" of Y, which reads as a quotient)."""
    assert texts.KO["col.share"] == texts.KO["step.shares"] == "출력 기여 비율"
    assert texts.KO["step.contributions"].startswith("기여도")
    drill = run_ko("practice", "multi-head", "--seed", "3", stdin=WRONG_ANSWERS)
    assert "몫" not in drill and "보탠 값의 합" in drill


# ------------------------------------------------------------------------------------------ one register
FORMAL = re.compile(r"(?<!아)니다|세요|해요|어요|아요|이에요|예요|십시오")     # 합니다체, 해요체 (아니다 is 한다체)


def test_one_register_한다체():
    found = {key: value for key, value in texts.KO.items() if FORMAL.search(value)}
    assert found == {}, found


def test_the_reader_is_told_what_to_type_in_하라체():
    """“0.25처럼 숫자를 입력한다.” describes; the drill and serve tell the reader: “입력하라.”"""
    told = {key: value for key, value in texts.KO.items() if re.search(r"처럼[^.]*입력한다\.", value)}
    assert told == {}, told
    said = run_ko("practice", "self-attention", "--seed", "3", stdin="abc\n\n")
    assert "0.25처럼 숫자를 입력하라." in said


# ------------------------------------------------------------------------------------------ true of its example
@pytest.mark.parametrize("lang,scaled", [("en", "scaled"), ("ko", "스케일링")])
def test_a_meetings_hint_never_calls_its_scores_scaled(lang, scaled):
    """The group meeting applies softmax to the scores as given (no ÷√d_k); the weight question's hint said
    "scaled scores"."""
    drill = practice.drill("group-meeting", lang=lang, seed=3)
    weights = [q for q in drill.questions if q.kind == "weight"]
    assert weights
    for question in weights:
        said = " ".join(practice.check(question, "7", lang=lang).lines)
        assert scaled not in said and "m =" in said, said


@pytest.mark.parametrize("lang,whole", [("en", "right rounded to a whole number"), ("ko", "정수로 반올림하면 맞다")])
def test_an_answer_right_as_a_whole_number_is_told_so(lang, whole):
    """2 for a score of 1.6976 was "right to 0 decimals" (“소수점 아래 0자리까지는 맞다”): it is right rounded
    to a whole number, and is said so."""
    drill = practice.drill("self-attention", lang=lang, seed=3)
    question = next(q for q in drill.questions if q.digits >= 2 and abs(q.answer) >= 1)
    said = " ".join(practice.check(question, str(round(question.answer)), lang=lang).lines)
    assert whole in said and "0 decimals" not in said and "0자리" not in said, said


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_causal_mask_is_said_without_a_zero_based_range(lang):
    """The self-attention example counts its tokens from 1: “query i may attend to keys 0 … i” named a key 0
    that it has not. The rule is said without numbers."""
    said = texts.text(lang, "why.about.mask")
    assert not re.search(r"0 … i|0–i|0 to i", said), said


def test_no_part_of_a_sum_reads_as_a_quotient():
    """몫 is a share and a quotient: "Y를 헤드별로 나눈 몫" (the heads' parts of Y, in the next-token view) and
    "헤드 3개의 몫의 합" (the drill's Y) read as division. One term per thing: a head's part is what it 맡은
    (its columns, its rows of W_O, its part of Y: "이 헤드의 몫인 행" sat beside "모든 헤드가 맡은 부분" in one
    sentence); a fraction of a whole is a 비율 (rollout's “가져오는 몫” is how much of the position comes from
    each token; a head's attention on a pattern). No Korean text says 몫."""
    from qkv.translator import explain as translator_explain

    found = {key: value for key, value in texts.KO.items() if isinstance(value, str) and "몫" in value}
    found |= {key: value for key, value in texts.CAUSAL_MODEL_TEXTS["ko"].items() if "몫" in value}
    found |= {key: value for key, value in translator_explain._TEXTS["ko"].items() if isinstance(value, str) and "몫" in value}
    assert found == {}, found
    rollout = " ".join(run_ko("heads", "The cat sat on the mat.").split())
    assert "각 토큰에서 가져오는 비율: 0:“[CLS]”" in rollout and "몫" not in rollout
    # "the" is in the text twice: each share names its position, as inspect lists the tokens (0:[CLS] 1:the …)
    assert re.search(r"1:“the” 0\.\d{3}", rollout) and re.search(r"5:“the” 0\.\d{3}", rollout), rollout
    said = " ".join(run_ko("example", "projection").split())
    assert "헤드 1에서는 Q와 K 가운데 이 헤드가 맡은 열 4개" in said


def test_a_scaled_score_has_one_name():
    """The posts' "스케일링 (Scaling)": 스케일링한 점수 everywhere (the neuron view said 스케일한 점수)."""
    found = {key: value for key, value in texts.KO.items() if "스케일한" in value}
    assert found == {}, found
    assert all("스케일링한 점수" in texts.KO[key] for key in ("col.score", "step.scaled_scores", "page.lens.neuron.scaled"))


def test_imperatives_are_하라체_not_해라체():
    """Written Korean tells the reader “설치하라”, “고르라”, “올리라” (하라체); “올려라” (해라체, spoken) slipped into
    the out-of-memory line."""
    spoken = re.compile(r"(?:려|어|아|해|워|꿔|줘|와|봐|써)라(?=[\s.,:;)]|$)")
    found = {key: value for key, value in texts.KO.items() if spoken.search(value)}
    assert found == {}, found


def test_a_post_is_named_in_its_brackets():
    """Korean names a post 「title」 (as the explanations' first line does): the help of `qkv` and the
    translator's story wrote “title”."""
    from qkv.translator.explain import _TEXTS as TEXTS

    starts = ("도해와 최소 사례로", "Attention의 projection", "어텐션이 조모임이라면")
    where = {**{k: v for k, v in texts.KO.items() if not k.startswith(("post.", "title.", "fig.title."))},
             **{f"translator.{k}": v for k, v in TEXTS["ko"].items() if isinstance(v, str)}}
    for key, value in where.items():
        for start in starts:
            for found in re.finditer(re.escape(start), value):
                assert value[found.start() - 1:found.start()] == "「", (key, value)
    assert "「" in TEXTS["ko"]["story"]


def test_numbered_layers_and_heads_are_written_one_way():
    """A numbered layer or head reads "층 3", "헤드 2" in every Korean text — serve's own labels, the shared page
    words on the same serve page, the figures, the CLI and the translator's story (which counts from 0 and says
    so: "층 {layer} (0–{last} 중)") — never "3번 층" / "2번 헤드" beside it."""
    from qkv.translator import explain as translator_explain

    found = {key: value for key, value in texts.KO.items() if isinstance(value, str)}
    story = translator_explain._TEXTS          # the translator's own words table
    for key, value in (story.get("ko", {}) if isinstance(story, dict) else {}).items():
        if isinstance(value, str):
            found[f"translator.{key}"] = value
    other = {key: value for key, value in found.items() if re.search(r"\{\w+\}\s*번\s*(층|헤드)", value)}
    assert other == {}
    # the layer and head labels serve shows next to the page's own words say the number after the noun
    assert texts.text("ko", "serve.ui.layerHead", layer=2, head=5) == "층 2, 헤드 5"
    assert texts.text("ko", "serve.ui.layerN", layer=2) == texts.text("ko", "page.heads.layer", l=2) == "층 2"
    assert texts.text("ko", "serve.ui.crossOf", layer=1, head=0).endswith("층 1, 헤드 0")


def test_no_particle_hangs_on_a_quoted_placeholder():
    """A particle after “{sentence}” agrees with a text the sentence does not know: “I love machine learning”를
    (learning ends in ㅇ: 을) and “{text}”을 were both written. A quoted placeholder takes no particle; the
    sentence is built around it (문장 “…”의, “…” → …에서)."""
    particle = re.compile(r"“\{[^}]+\}”(?:을|를|은|는|이|가|과|와|으로|로)(?![가-힣])")
    found = {key: value for key, value in texts.KO.items() if particle.search(value)}
    assert found == {}, found


# ------------------------------------------------------------------------------------------ no token glossed by itself
# The projection example's tokens are named by their numbers (“토큰 3”, as post 000 writes them): a gloss of such
# a name by its number says nothing — “(“토큰 3” = 토큰 3)”, query “token 3” (token 3), query 3 “token 3”.
SELF_GLOSS = re.compile(r"“((?:token|토큰) )?(\d+)”\S*(?: \S+)? ?\((?:token|토큰|query|Query) \2\)"
                        r"|(?<![\d.])(\d+) “(?:(?:token|토큰) )?\3”"
                        r"|“(?:(?:token|토큰) )?(\d+)” (?:=|is) (?:token|토큰) \4")


def test_the_self_gloss_net_catches_what_it_should():
    assert SELF_GLOSS.search("번호는 글처럼 1부터 센다 (“토큰 3” = 토큰 3).")
    assert SELF_GLOSS.search("as in the post (“token 3” is token 3)")
    assert SELF_GLOSS.search("query “token 3” (token 3), head 1") and SELF_GLOSS.search("Key “토큰 1”(토큰 1):")
    assert SELF_GLOSS.search("“토큰 3”의 행(Query 3)을") and SELF_GLOSS.search("query 3 “token 3” → key 1 “1”")
    assert not SELF_GLOSS.search("(“love” = 토큰 2)") and not SELF_GLOSS.search("query 2 “love” → key 3 “machine”")


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("mode", [[], ["--by-hand"], ["--terms"]], ids=["default", "by-hand", "terms"])
def test_no_token_is_glossed_by_its_own_number(lang, mode):
    said = run_ko("example", "projection", *mode) if lang == "ko" else _run_en("example", "projection", *mode)
    said = " ".join(said.split())                      # rich wraps lines at the terminal's width
    assert SELF_GLOSS.findall(said) == [], SELF_GLOSS.findall(said)
    # what the gloss said is still said where it means something: the row index, and a named token's number
    assert ("배열에서 토큰 3의 행 인덱스는 2이다" if lang == "ko" else "token 3 is row index 2") in said or mode == ["--terms"]
    other = run_ko("example", "self-attention") if lang == "ko" else _run_en("example", "self-attention")
    other = " ".join(other.split())
    assert ("(“love” = 토큰 2)" if lang == "ko" else "(“love” is token 2)") in other


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_sentence_with_a_token_and_its_number_drops_the_self_gloss(lang):
    """The rule is the formatter's (texts.text), so it holds for every sentence that names a token beside a
    number — the page, serve and figure words too — for a token named by its number and for a user file's
    position label ("2"), and leaves a real word's gloss alone."""
    found = {}
    for key, template in texts.LANGS[lang].items():
        names = texts.placeholders(template) if isinstance(template, str) else set()
        if not names:
            continue
        numbered = {name: 3 for name in names}
        for token_name in names:
            for label in ("token 3" if lang == "en" else "토큰 3", "3"):
                values = {**numbered, token_name: label}
                try:
                    said = texts.text(lang, key, **values)
                except (KeyError, ValueError, IndexError):
                    continue
                if SELF_GLOSS.search(said):
                    found[key] = said
    assert found == {}, found
    assert texts.text(lang, "serve.ui.hover", i=2, q="love", j=3, k="machine", w="0.2") in (
        "query 2 “love” → key 3 “machine”: 0.2", "Query 2 “love” → Key 3 “machine”: 0.2")


def test_the_page_drops_the_self_gloss_as_the_cli_does(browser_context, tmp_path):  # noqa: F811
    """views.js's fill (the offline page and serve) applies texts.unglossed's rules in the browser."""
    from qkv.explain.page import trace_html

    trace = examples.run("projection")
    path = tmp_path / "projection-ko.html"
    path.write_text(trace_html(trace, lang="ko"), encoding="utf-8")
    page = OpenPage(browser_context, path)
    try:
        p = page.page
        p.wait_for_selector('.qkv-view[data-ready="1"]', timeout=60_000)
        fill = "([t, v]) => window.qkvViews.fill(t, v)"
        assert p.evaluate(fill, [texts.KO["page.st.x.text"], {"t": 3, "d": 8, "tok": "“토큰 3”", "i": 3}]).endswith(
            "토큰 3의 행을 따라간다.")
        assert p.evaluate(fill, [texts.EN["serve.ui.hover"], {"i": 3, "q": "token 3", "j": 1, "k": "1", "w": "0.5"}]) == \
            "query 3 → key 1: 0.5"
        assert p.evaluate(fill, [texts.EN["serve.ui.hover"], {"i": 2, "q": "love", "j": 3, "k": "machine", "w": "0.2"}]) == \
            "query 2 “love” → key 3 “machine”: 0.2"
        # the labels page.js puts together itself: the cell's derivation title, the tokens' aria-labels
        p.evaluate("() => document.querySelector('.qkv-view').qkv.showCell(2, 0)")
        title = p.locator(".qkv-cell h3").first.inner_text()
        assert "Query 3 → Key 1" in title and "“토큰" not in title, title
        labels = p.eval_on_selector_all("[aria-label]", "els => els.map(e => e.getAttribute('aria-label'))")
        assert "Query 3" in labels and not [label for label in labels if SELF_GLOSS.search(label)], labels
        said = p.inner_text("body")
        assert SELF_GLOSS.findall(said) == [], SELF_GLOSS.findall(said)
        assert page.errors == []
    finally:
        page.close()


def _run_en(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*argv, "--lang", "en"])
    assert code == 0, (argv, err.getvalue()[-500:])
    return out.getvalue() + err.getvalue()


# ------------------------------------------------------------------------------------------ the native read of 7 December
def _korean_tables() -> dict[str, str]:
    """Every Korean sentence a learner can meet: the texts, the model structure's words, the translator's story and
    its comparison with the post."""
    from qkv.translator import compare, explain as translator_explain

    found = {key: value for key, value in texts.KO.items() if isinstance(value, str)}
    found |= {f"causal.{key}": value for key, value in texts.CAUSAL_MODEL_TEXTS["ko"].items()}
    found |= {f"translator.{key}": value for key, value in translator_explain._TEXTS["ko"].items() if isinstance(value, str)}
    found |= {f"compare.{key}": value for key, value in compare._TEXTS["ko"].items() if isinstance(value, str)}
    return found


def _korean_docs() -> dict[str, str]:
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    return {str(path.relative_to(root)): path.read_text(encoding="utf-8")
            for path in [root / "README.ko.md", *sorted((root / "docs" / "ko").glob("*.md"))]}


def test_n_decimals_are_said_one_way():
    """소수점 아래 N자리 (the drill, the notes, the docs): the help and the errors said 소수 자릿수, the rounding note
    소수점 아래 세 자리, the drill's help 소수 한 자리."""
    wrong = re.compile(r"소수 자릿수|소수 [한두세네]\s?자리|소수점 아래 [한두세네다섯여]+ 자리")
    found = {key: value for key, value in {**_korean_tables(), **_korean_docs()}.items() if wrong.search(value)}
    assert found == {}, {key: wrong.findall(value) for key, value in found.items()}
    assert "소수점 아래 자릿수" in texts.KO["help.output.digits"]


def test_every_post_title_is_in_its_brackets_in_the_comparison_and_the_docs():
    """The translator's comparison with «도해와 최소 사례로 …» wrote its title “…” (test_a_post_is_named_in_its_brackets
    read only the translator's story)."""
    starts = ("도해와 최소 사례로", "Attention의 projection", "어텐션이 조모임이라면")
    where = {**{k: v for k, v in _korean_tables().items() if not k.startswith(("post.", "title.", "fig.title."))},
             **_korean_docs()}
    for key, value in where.items():
        for start in starts:
            for found in re.finditer(re.escape(start), value):
                before = value[found.start() - 1:found.start()]
                assert before in ("「", "#", " ") and (before == "「" or value[found.start() - 3:found.start()] != "글 “"), \
                    (key, value[max(0, found.start() - 20):found.start() + 30])
    said = " ".join(run_ko("translate", "I love machine learning", "--to", "ja", "--compare-post").split())
    assert "글 「도해와 최소 사례로 직관적으로 이해하는 Self-attention, Cross-attention, Multi-head Attention」의" in said


def test_the_help_says_the_default_language_truly():
    """practice and why answer in Korean under LANG=ko_KR (qkv.frontdoor.locale_lang) as every command does;
    their help said "(default en)"."""
    for lang in ("en", "ko"):
        for key, value in texts.LANGS[lang].items():
            if re.fullmatch(r"help(\.\w+)*\.lang", key):
                assert "LC_ALL" in value, (lang, key, value)


def test_the_multi_head_example_is_named_as_the_post_names_it():
    """«도해와 최소 사례로 …» writes "Multi-head Attention"; the texts call the example Multi-head attention 예제 —
    the errors and the docs said 멀티 헤드 예제 and Multi-head 예제 beside it."""
    found = {key: value for key, value in {**_korean_tables(), **_korean_docs()}.items()
             if re.search(r"멀티 헤드 예제|Multi-head 예제", value)}
    assert found == {}, found


def test_attention_is_one_word_and_a_key_is_not_a_technician():
    """The projection rule said V is what a token gives when it receives 주의 (a second word for 어텐션) and K a
    기술자 (a descriptor, and a technician)."""
    found = {key: value for key, value in _korean_tables().items() if re.search(r"주의를|기술자", value)}
    assert found == {}, found
    assert "어텐션을 받을 때" in texts.KO["projection.rule"]


def test_no_quote_inside_a_quote_and_no_english_link_in_the_korean_tables():
    """The docs wrote love as “Query 2 “love””; the Korean README's command table linked [real models], [masks] …
    (an English document is said to be one: "(영어)")."""
    nested = re.compile(r"“[^”]*“")
    for name, text in {**_korean_docs(), **_korean_tables()}.items():
        assert not nested.search(text), (name, nested.search(text).group())
    readme = _korean_docs()["README.ko.md"]
    table = [line for line in readme.splitlines() if line.startswith("| `qkv")]
    labels = [label for line in table for label in re.findall(r"\[([^\]]+)\]\(", line)]
    assert labels and all(re.search(r"[가-힣]", label) for label in labels), labels


def test_the_reader_is_told_to_run_a_model_in_하라체_and_sentences_end():
    """serve's Korean-text warning described running another model ("…로 실행한다") where it tells the reader to;
    the contribution sentence ended on a bare number ("…0.3358(기여 비율 0.2451).")."""
    assert texts.KO["serve.ui.readingKorean"].endswith("실행하라.")
    said = texts.text("ko", "weights.top.differ", top="learning", w="0.2558", token="私は", most="machine",
                      c_most="0.3699", w_most="0.2515", share_most="0.2700", c="0.3358", share="0.2451")
    assert said.endswith("(기여 비율 0.2451)이다."), said


# ------------------------------------------------------------------------------------------ the pages, looked at
def _page_data(html: str) -> dict:
    import json

    return json.loads(re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', html, re.S).group(1))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_pages_first_line_does_not_repeat_its_heading(lang):
    """The model page read "minilm: attention of every layer and head" as its heading and again as the start of
    its first line ("minilm: attention of every layer and head: attention of 6 layers × 12 heads …"); a worked
    example's page already left its title out of the first line."""
    import numpy as np

    import qkv
    from qkv.explain.page import attention_page, trace_html

    trace = qkv.Trace("two heads, causal", meta={"tokens": ["I", "love", "machine", "learning", "!"]})
    qkv.MultiHeadAttention.random(8, n_heads=2, seed=3)(np.random.default_rng(3).standard_normal((5, 8)),
                                                        causal=True, record=trace)
    weights = np.full((2, 3, 4, 4), 0.25)
    for html, title in ((trace_html(trace, lang=lang), "two heads, causal"),
                        (attention_page(weights, ["a", "b", "c", "d"], title="512 tokens", lang=lang), "512 tokens"),
                        (trace_html(examples.run("self-attention"), lang=lang), texts.text(lang, "title.self-attention"))):
        assert f"<h1>{title}</h1>" in html
        lead = _page_data(html)["lead"]
        assert lead and title not in lead, lead
        assert ("Query" in lead and "Key" in lead) if lang == "ko" else ("quer" in lead.lower())


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_meetings_by_hand_table_lists_no_scaled_scores(lang):
    """The group meeting's scores are given and never scaled (its text says so, its page has no scaling step); the
    --by-hand comparison still listed "조모임 1 / 스케일링한 점수" (lot/scaled_scores), a row repeating the scores."""
    said = run_ko("example", "group-meeting", "--by-hand") if lang == "ko" else \
        _run_en("example", "group-meeting", "--by-hand")
    table = said[said.index("손 계산과 정확한 값의 비교" if lang == "ko" else "By hand versus exact"):]
    meetings = ("조모임 1", "조모임 2") if lang == "ko" else ("meeting 1 /", "meeting 2 /")
    scaled = "스케일링한 점수" if lang == "ko" else "scaled scores"
    rows = [line for line in table.splitlines() if line.strip().startswith(meetings)]
    assert rows and not any(scaled in line for line in rows), rows
    # the notation part (d_k = 2) is scaled and keeps its row (the table wraps "스케일링한 점수" after its first word)
    assert any(scaled.split()[0] in line for line in table.splitlines() if "행벡터" in line or "notation" in line or line.strip().startswith("scaled scores"))
    other = run_ko("example", "self-attention", "--by-hand") if lang == "ko" else \
        _run_en("example", "self-attention", "--by-hand")
    assert scaled in other[other.index("손 계산과" if lang == "ko" else "By hand versus"):]


def test_this_computer_has_one_name():
    """The reader's machine was 이 기계 in doctor's and bench's help and serve's --host, 이 컴퓨터 in doctor's
    --calibrate and serve's docs; 기계 reads as machinery (and is the 기계 of 기계 학습): 이 컴퓨터 everywhere."""
    found = {key: value for key, value in {**_korean_tables(), **_korean_docs()}.items() if "이 기계" in value}
    assert found == {}, found
    assert "이 컴퓨터에서" in texts.KO["help.doctor"]


@pytest.mark.parametrize("command", ["inspect", "heads", "embed"])
def test_korean_typed_into_minilm_is_said_to_be_unread_on_the_command_line(command, capsys):
    """serve's page said MiniLM takes Korean apart into jamo and [UNK] (issue 29); `qkv inspect` and `qkv heads`
    showed the jamo's attention with no word. The count is the tokenizer's own (qkv.models.reading): all 16
    pieces of this sentence are jamo or [UNK] (MiniLM's BERT-uncased tokenizer decomposes Hangul, NFD)."""
    argv = [command, "나는 기계 학습을 좋아한다"] + (["--layer", "0", "--head", "0"] if command == "inspect" else [])
    # (each kind counted apart since the serve read of issue 29: ᄂ ##ᅡ ##ᄂ ##ᅳ ##ᆫ [UNK] ᄒ ##ᅡ ##ᆨ ##ᄉ ##ᅳ ##ᆸ ##ᄋ ##ᅳ ##ᆯ
    # [UNK], the tokenizer's own pieces: 2 [UNK] and 14 jamo)
    for lang, said, option in (("ko", "minilm 모델은 한국어를 읽지 못한다. 이 모델이 보는 조각 16개(특수 토큰 제외) 가운데 "
                                "[UNK](모르는 조각)이 2개이고 자모로 쪼개진 글자가 14개(예:",
                                "--model 디렉터리"),          # the placeholder as `qkv inspect --help --lang ko` shows it
                               ("en", "minilm does not read Korean: of the 16 pieces it sees (special tokens left out), "
                                "2 are [UNK] (a piece it does not know) and 14 are letters taken apart into jamo",
                                "--model DIR")):
        assert main([*argv, "--lang", lang]) == 0
        err = " ".join(capsys.readouterr().err.split())
        assert said in err and "bert-base-multilingual-cased" in err and option in err, err
    english = [command, "The cat sat on the mat."] + (["--layer", "0", "--head", "0"] if command == "inspect" else [])
    assert main(english) == 0
    assert "does not read" not in capsys.readouterr().err


def test_embed_names_the_texts_minilm_does_not_read(capsys):
    """`qkv embed` gave no note (issue 29's leftovers): the note names the unread texts as embed's table numbers
    them, counts their pieces (the tokenizer's own: the Korean sentence is 16 pieces, none read; "The cat sat."
    and "A dog." are read and not counted), and says what is made of the pieces: the embedding."""
    argv = ["embed", "The cat sat.", "나는 기계 학습을 좋아한다", "A dog."]
    for lang, said in (("en", "text #1: minilm does not read Korean: of the 16 pieces it sees (special tokens left out), "
                              "2 are [UNK] (a piece it does not know) and 14 are letters taken apart into jamo"),
                       ("ko", "텍스트 #1: minilm 모델은 한국어를 읽지 못한다. 이 모델이 보는 조각 16개(특수 토큰 제외) 가운데 "
                              "[UNK](모르는 조각)이 2개이고 자모로 쪼개진 글자가 14개(예:")):
        assert main([*argv, "--lang", lang]) == 0
        err = " ".join(capsys.readouterr().err.split())
        assert said in err, err
        assert ("its embedding" if lang == "en" else "임베딩") in err and "어텐션" not in err, err


def _unread_pieces(text: str) -> tuple[int, int]:
    """(pieces MiniLM's tokenizer does not know, pieces it makes) of ``text``, special tokens left out: read from
    the tokenizers library directly ([UNK] tokens; this text's other pieces are all whole words or accents)."""
    from tokenizers import Tokenizer

    from qkv.models.files import locate

    tokenizer = Tokenizer.from_file(str(locate("minilm").tokenizer))
    tokenizer.no_padding()                          # the file pads to 128 for sentence-transformers' batches
    tokens = tokenizer.encode(text, add_special_tokens=False).tokens
    return tokens.count("[UNK]"), len(tokens)


def test_embed_says_does_not_read_korean_only_of_the_korean_texts(capsys):
    """`qkv embed "고양이가 앉았다" "The cat" "café 猫"` said "texts #0, #2: minilm does not read Korean", and
    counted both texts' pieces together, though #2 holds no Korean (the note chose its wording by whether any text
    had Hangul). Each kind of unread text gets its own line: the Korean ones "does not read Korean", the others
    "does not read part of this text", each counting only its own texts' pieces; a text read whole is named in
    neither."""
    texts = ["고양이가 앉았다", "The cat", "café 猫"]
    korean_unk, korean_total = _unread_pieces(texts[0])
    other_unk, other_total = _unread_pieces(texts[2])
    assert korean_unk == korean_total and 0 < other_unk < other_total          # the case this test is about
    for lang, korean_line, other_line in (
            ("en", f"text #0: minilm does not read Korean: of the {korean_total} pieces it sees (special tokens left "
                   f"out), {korean_unk} {'is' if korean_unk == 1 else 'are'} [UNK]",
             f"text #2: minilm does not read part of this text: of the {other_total} pieces it sees (special tokens "
             f"left out), {other_unk} {'is' if other_unk == 1 else 'are'} [UNK]"),
            ("ko", f"텍스트 #0: minilm 모델은 한국어를 읽지 못한다. 이 모델이 보는 조각 {korean_total}개(특수 토큰 제외) 가운데 "
                   f"[UNK](모르는 조각)이 {korean_unk}개",
             f"텍스트 #2: minilm 모델은 이 텍스트의 일부를 읽지 못한다. 이 모델이 보는 조각 {other_total}개(특수 토큰 제외) "
             f"가운데 [UNK](모르는 조각)이 {other_unk}개")):
        assert main(["embed", *texts, "--lang", lang]) == 0
        lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        note = "qkv: note: " if lang == "en" else "qkv: 참고: "
        assert len(lines) == 2 and all(line.startswith(note) for line in lines), lines
        assert korean_line in lines[0] and other_line in lines[1], lines
        assert ("Korean" if lang == "en" else "한국어") not in lines[1], lines
        assert "#1" not in " ".join(lines), lines


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_drills_sum_never_adds_a_minus(lang):
    """The drill's worked answer read "… + -0.5000 × (-0.2500) + -0.1250 × 0.3750" (issue 29 named "+ -0.5000" in
    the explanation); a negative term after the first is written "− 0.5000 × (-0.2500)", as the explanation does,
    and the printed sum still holds."""
    from decimal import Decimal

    for name in examples.names():
        for seed in range(4):
            drill = practice.drill(name, lang=lang, seed=seed)
            for question in drill.questions:
                said = " ".join(practice.check(question, "1e9", lang=lang).lines) + " " + practice.reveal(question, lang=lang)
                assert "+ -" not in said and "+ −" not in said, said
                for found in re.finditer(r"= ((?:\(?-?\d+\.\d+\)? × \(?-?\d+\.\d+\)?(?: [+−] )?)+) = (-?\d+\.\d+)", said):
                    terms = re.findall(r"(^|[+−]) ?(-?\d+\.\d+) × \(?(-?\d+\.\d+)\)?", found.group(1))
                    total = sum((-1 if sign == "−" else 1) * Decimal(x) * Decimal(y) for sign, x, y in terms)
                    shown = Decimal(found.group(2))
                    assert abs(total - shown) <= Decimal(5) * Decimal(10) ** (shown.as_tuple().exponent - 1) * 10, said


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_underflow_note_names_where_float64_reaches_0(lang):
    """The group meeting's figure said exp(s − m) "below about 10⁻³⁰⁸ is 0": 10⁻³⁰⁸ is float64's smallest normal
    number, and below it come subnormals down to 4.9·10⁻³²⁴ (np.exp(-740) is 4.2e-322, not 0). The power the note
    names is checked against float64 itself."""
    import numpy as np

    said = texts.text(lang, "fig.eq_underflow")
    power = int(re.search(r"10⁻([⁰¹²³⁴⁵⁶⁷⁸⁹]+)", said).group(1).translate(str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")))
    assert np.float64(10.0 ** -(power - 1)) > 0 and np.float64(float(f"1e-{power + 1}")) == 0, power
    assert float(f"1e-{power + 1}") == 0.0 and np.exp(-740.0) > 0 and np.exp(-746.0) == 0
