"""The Korean added since af72ca5 read in context by a native reader, and a learner's pass over what was least
reviewed (`qkv translate --derive/--figure/--compare-post`, `qkv inspect`/`heads` on MiniLM, `qkv practice`,
`qkv doctor`, the offline page). Each test holds a class of what was found, not one sentence:

- `--derive N` followed the decoder token *before* word N (나는 for 너를) and never said so: a learner read
  “디코더 토큰 나는의 Query” under “--derive 2” as the wrong word; the figure's rows and --compare-post said it;
- a what-if refusal named a one-row range as “토큰 1–1”;
- help lists of model families read as complete (“BERT, GPT-2, Llama, Mistral, Qwen2”) while --model's own line
  lists fourteen model types;
- the post's weights were called 손으로 정한 가중치: the post hand-makes its *inputs* (its dummy values) and
  computes the weights from them;
- “헤드 8개가 저마다 한 단어에 주는 가중치는 0.5753에서 1.0000 사이” reads as any word's weight: it is the weight
  each head gives the word it reads most;
- the page sent a reader to qkv serve alone for a change `qkv example --what-if` makes;
- the translator's Korean tables (translator.compare, translator.explain) were outside the wording net.
The expected words and numbers come from the posts, the printed tables and this reading, not from the sentences
under test.
"""

from __future__ import annotations

import contextlib
import io
import pathlib
import re

import pytest

from qkv.cli import main
from qkv.explain import texts
from qkv.models import SUPPORTED

import test_korean_wording as wording

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue() + err.getvalue()


def translator_tables() -> dict[str, str]:
    from qkv.translator import compare, explain

    return {f"{name}.{key}": value for name, module in (("compare", compare), ("translator", explain))
            for key, value in module._TEXTS["ko"].items() if isinstance(value, str)}


# ------------------------------------------------------------------------------------------ --derive's word
# (sentence, --to, N, the word N as the translation prints it, the decoder input whose state asks for it)
DERIVE = [("I love you", "ko", 1, "나는", "<ko>"), ("I love you", "ko", 2, "너를", "나는"),
          ("I love you", "ja", 2, "あなたを", "私は"), ("I love you", "ja", 3, "愛してる", "あなたを")]


@pytest.mark.parametrize("sentence,to,n,word,asked", DERIVE)
def test_derive_names_the_word_and_the_token_whose_state_asks_for_it(sentence, to, n, word, asked):
    """Under --derive N the reader is told which word is made (word N of the translation) and that the followed
    query is the decoder's state for the token before it, as the post's 私は asks for the next word; the
    derivation's followed row (◀) is that token."""
    code, out = run("translate", sentence, "--to", to, "--derive", str(n), "--lang", "ko")
    assert code == 0, out
    translation = out.splitlines()[0].split()
    assert translation[n - 1] == word                       # the translation as printed, word N counted from 1
    said = next(line for line in out.splitlines() if line.startswith("이 단계에서 번역기가 생성한 단어:"))
    assert f"생성한 단어: {word} (단어 {n}, 디코더 입력 {asked} → {word})" in said, said
    assert f"바로 앞 토큰 {asked}에서의 디코더 상태이다" in said, said
    assert re.search(rf"^ {re.escape(asked)} ◀ ", out, re.M), out[:2000]


# ------------------------------------------------------------------------------------------ ranges
@pytest.mark.parametrize("lang", ["ko", "en"])
def test_a_range_of_one_row_is_one_number(lang):
    """The cross-attention example's x is the one decoder token 私は: its one row is token 1, not rows 1–1 (nor
    "the rows are the tokens 1")."""
    code, out = run("example", "cross-attention", "--what-if", "x[2,0]=1", "--lang", lang)
    assert code == 2 and "1–1" not in out, out
    assert ("행은 토큰 1 하나이고" if lang == "ko" else "its one row is token 1,") in out, out
    assert "rows are the tokens 1," not in out, out            # a single row is not written as a plural
    code, out = run("example", "cross-attention", "--what-if", "memory[9,0]=1", "--lang", lang)
    assert code == 2 and "1–4" in out, out                  # memory: I love machine learning, tokens 1 to 4


# ------------------------------------------------------------------------------------------ open lists
def test_a_list_of_model_families_shorter_than_model_is_open():
    """--model takes every model type of qkv.models.SUPPORTED; a help sentence naming fewer families ends its
    list as open (등, …), never as the whole."""
    for lang, more in (("ko", " 등"), ("en", ", …")):
        for key in ("help.inspect.about", "help.generate"):
            listed = re.search(r"(?:BERT|GPT-2)[^()]*(?=\))", texts.text(lang, key))[0]
            assert len(listed.split(", ")) < len(SUPPORTED), (key, lang, listed)
            assert listed.endswith(more), (key, lang, listed)


# ------------------------------------------------------------------------------------------ true as printed
def test_the_posts_weights_are_computed_from_hand_made_inputs():
    """«도해와 최소 사례로 …» makes up its inputs (“더미 값”) and computes the weights softmax(QKᵀ/√d_k) from them:
    no Korean text calls them hand-made weights (손으로 정한 가중치)."""
    found = {key: value for key, value in {**wording.korean_tables(), **translator_tables()}.items()
             if "손으로 정한 가중치" in value}
    for path in [*sorted((ROOT / "docs" / "ko").glob("*.md")), ROOT / "README.ko.md"]:
        if "손으로 정한 가중치" in path.read_text(encoding="utf-8"):
            found[str(path.relative_to(ROOT))] = "손으로 정한 가중치"
    assert found == {}, found
    # --compare-post's row of the post's weights and its figure's title name what the post made by hand: its inputs
    code, out = run("translate", "I love machine learning", "--to", "ja", "--compare-post", "--lang", "ko")
    assert code == 0 and re.search(r"^글 \(손으로 정한 입력\)\s+0\.2453\s+0\.2474\s+0\.2515\s+0\.2558", out, re.M), out
    assert "(손으로 정한 입력)과" in translator_tables()["compare.figure_title"]


def test_each_heads_peak_is_said_as_the_table_prints_it():
    """--compare-post: “헤드 8개가 저마다 가장 많이 읽는 단어에 주는 가중치는 LOW에서 HIGH 사이이다”, LOW and HIGH the
    smallest and largest of each head row's largest weight in the printed table."""
    code, out = run("translate", "I love machine learning", "--to", "ja", "--compare-post", "--lang", "ko")
    assert code == 0, out
    peaks = [max(float(v) for v in m[1].split()[:4])
             for m in re.finditer(r"^층 \d 헤드 \d\s+((?:[\d.]+\s+){4})", out, re.M)]
    assert len(peaks) == 8, out
    said = f"헤드 8개가 저마다 가장 많이 읽는 단어에 주는 가중치는 {min(peaks):.4f}에서 {max(peaks):.4f} 사이이다"
    assert said in out, out


# ------------------------------------------------------------------------------------------ the page's pointers
@pytest.mark.parametrize("name,change", [("self-attention", "x[2,0]=2"), ("group-meeting", "question[1]=50"),
                                         ("multi-head", "w_o[0,0]=1")])
def test_the_page_points_to_the_command_lines_what_if(name, change, tmp_path):
    """The page's what-if slider changes one thing (or, on the multi-head page, nothing); for the rest it sent
    the reader to qkv serve only, where `qkv example NAME --what-if` (a0ffa63's placeholders: 이름, 키=값)
    recomputes the same post's example. The page's words are plain text: no Markdown backticks (`qkv serve`)."""
    page = tmp_path / "page.html"
    code, out = run("example", name, "--format", "html", "--lang", "ko", "--out", str(page))
    assert code == 0, out
    html = page.read_text(encoding="utf-8")
    assert re.search(r"qkv serve를 (?:쓰거나|실행하고)[^\"]*qkv example (?:이름|group-meeting) --what-if", html), name
    assert not any("`" in value for key, value in texts.KO.items() if key.startswith("page."))
    code, out = run("example", name, "--what-if", change, "--lang", "ko")    # the change the page points to runs
    assert code == 0 and out.startswith(texts.KO[f"title.{name}"].split(":")[0]), out[:300]


# ------------------------------------------------------------------------------------------ the wording net
CALQUES = [    # (name, pattern, why)
    ("met-cpus", r"겪어 본", "“CPUs the project has met”, word for word: 재 본 CPU들에서 얻은 규칙"),
    ("any-word", r"저마다 한 단어에 주는", "each head's largest weight, not any word's: 가장 많이 읽는 단어에 주는"),
    ("besides-the-mask", r"마스크 말고는 인과 마스크가 없다",
     "“non-causal besides the mask”, word for word: 그 마스크 외에 인과 마스크를 따로 걸지 않는다"),
    ("quoted-column", r"“×flex”", "a column name is written as the table heads it, as ×카탈로그 beside it: ×flex"),
]


@pytest.mark.parametrize("pattern,why", [c[1:] for c in CALQUES], ids=[c[0] for c in CALQUES])
def test_a_calque_found_in_this_read_is_not_written_again(pattern, why):
    found = {key: value for key, value in {**wording.korean_tables(), **translator_tables()}.items()
             if re.search(pattern, value)}
    assert found == {}, (why, found)


def test_the_translators_tables_pass_the_wording_net():
    """translator.compare and translator.explain hold their own Korean: the particles after Latin words, the
    copula and test_korean_wording's calques hold there too."""
    tables = translator_tables()
    assert len(tables) > 30
    assert {key: wording._wrong_particles(value) for key, value in tables.items() if wording._wrong_particles(value)} == {}
    assert {key for key, value in tables.items()
            if re.search(r"[A-Za-z\)\]]다(?=[.,:;)\s]|$)", re.sub(r"\{[^}]*\}", "{}", value))} == set()
    assert {(name, key) for name, pattern, _ in wording.CALQUES + CALQUES
            for key, value in tables.items() if re.search(pattern, value)} == set()


@pytest.mark.parametrize("lang", ["ko", "en"])
@pytest.mark.parametrize("name", ["self-attention", "group-meeting"])
def test_the_section_the_pages_note_names_is_on_the_page(name, lang, tmp_path):
    """The note under the controls (239f433) sends the reader to “단계별 계산” / “Step by step” below; the
    derivation was headed only by the example's title, so no such heading was there to find."""
    page = tmp_path / "page.html"
    code, out = run("example", name, "--format", "html", "--lang", lang, "--out", str(page))
    assert code == 0, out
    html = page.read_text(encoding="utf-8")
    note = texts.text(lang, "page.storage_steps", d=4)
    named = re.search(r"“([^”]+)”", note)[1]
    assert named in ("단계별 계산", "Step by step")
    assert f"<h2>{named}</h2>" in html, named
    assert html.index(f"<h2>{named}</h2>") < html.index(f"<h2>{texts.text(lang, f'title.{name}')}</h2>")
