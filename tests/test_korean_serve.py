"""`qkv serve`'s Korean read by a native reader in the page itself (issue 29): every view at 1366 × 900 and
390 × 844 in Chromium, the words of /api/words in context, the errors of bad what-if input, uploads and requests.
Each test holds a class of what was found, not one sentence:

- a number the page gives is counted as the page counts: a matrix label's tooltip said “0: I” beside
  “Query 1 “I”” on every worked example (the posts count tokens from 1), on serve and on the offline page alike;
  the translator's cell said “2번째 단어 “너를” → 영어 단어 1 “love”” (love is the second English word: an
  index from 0 beside an ordinal from 1);
- a field is named in the page's words: a drill's seed refused as “오류: seed: 'abc': …” under the box labelled 시드;
- a count says what it counts: “minilm (6 × 12)” and “minilm: 6 × 12” left the reader to guess layers × heads;
  the note on a text MiniLM does not read said “1개가 [UNK]이거나 쪼개진 조각([UNK])이다” for one [UNK] (the
  example list hung on the kind that was not there) and counted pieces without the special tokens beside a
  heading that counts them (“토큰 12개” over “조각 10개”) — the same note on the command line;
- a caption cut at a phone's edge: the derivation's "X_dec (3 × 64; 열 64개 중 8" was centred over a table that pans;
- a negative m in a written softmax read “e^(-5 − -2)”: a negative number after “−” is put in parentheses, as a
  negative factor already is (“× (-0.3)”), in the explanation serve, the offline page and the command line share.

The expected words and numbers come from this reading, the tokenizer's own output counted here and float64
arithmetic, not from the sentences under test.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import types

import pytest

from qkv.cli import main
from qkv.explain import texts

from browser_support import browser_context  # noqa: F401  (fixture: the page's test below)


def run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue() + err.getvalue()


def minilm_tokenizer():
    """MiniLM's own tokenizer file, read by `tokenizers` (no model loaded)."""
    from tokenizers import Tokenizer

    from qkv.models import files

    return Tokenizer.from_file(str(files.locate("minilm").tokenizer))


def counted(tokenizer, text: str) -> tuple[int, int, int]:
    """(pieces, [UNK] pieces, pieces holding a Hangul jamo) of ``text``, special tokens left out: counted here from
    the tokenizer's output, independently of qkv.models.reading."""
    tokenizer.no_padding()                          # the file pads to 128 for sentence-transformers' batches
    encoding = tokenizer.encode(text)
    pieces = [t for t, special in zip(encoding.tokens, encoding.special_tokens_mask) if not special]
    return (len(pieces), sum(t == "[UNK]" for t in pieces),
            sum(t != "[UNK]" and any("\u1100" <= c <= "\u11ff" for c in t) for t in pieces))


# ------------------------------------------------------------------------------------------ what a count counts
KOREAN = "고양이가 매트 위에 앉았다."
SNOWMAN = "The cat sat on the mat ☃."        # one piece MiniLM does not know, nothing taken apart


def test_the_unread_note_counts_each_kind_apart_on_the_command_line():
    """The note said “{n}개가 [UNK](모르는 조각)이거나 쪼개진 조각({examples})이다”: for one [UNK] and nothing taken
    apart it named a kind that was not there and hung the [UNK] on it. Each kind present is counted apart, only
    the kinds there are, and the pieces are said to leave the special tokens out."""
    from qkv.commands._options import reading_note, words

    tokenizer = minilm_tokenizer()
    model = types.SimpleNamespace(tokenizer=tokenizer, name="minilm")
    total, unknown, jamo = counted(tokenizer, KOREAN)
    assert unknown > 0 and jamo > 0 and unknown + jamo <= total
    ko = " ".join(reading_note(model, KOREAN, words("ko")).split())
    assert (f"이 모델이 보는 조각 {total}개(특수 토큰 제외) 가운데 [UNK](모르는 조각)이 {unknown}개이고 자모로 쪼개진 "
            f"글자가 {jamo}개(예: ") in ko, ko
    # the examples are of the letters taken apart: jamo pieces, no [UNK] (it is its own example)
    shown = re.search(r"\(예: ([^)]*)\)이다\.", ko).group(1).split()
    assert shown and all(any("\u1100" <= c <= "\u11ff" for c in piece) for piece in shown), shown
    en = " ".join(reading_note(model, KOREAN, words("en")).split())
    assert (f"of the {total} pieces it sees (special tokens left out), {unknown} are [UNK] (a piece it does not know) "
            f"and {jamo} are letters taken apart into jamo (e.g. {' '.join(shown)}), so ") in en, en

    total, unknown, jamo = counted(tokenizer, SNOWMAN)
    assert (unknown, jamo) == (1, 0)
    ko = " ".join(reading_note(model, SNOWMAN, words("ko")).split())
    assert f"조각 {total}개(특수 토큰 제외) 가운데 [UNK](모르는 조각)이 1개이다. 그래서 " in ko, ko
    assert "쪼개진" not in ko and "이거나" not in ko and "예:" not in ko, ko
    en = " ".join(reading_note(model, SNOWMAN, words("en")).split())
    assert f"of the {total} pieces it sees (special tokens left out), 1 is [UNK] (a piece it does not know), so " in en
    assert "taken apart" not in en and "e.g." not in en, en


def byte_level_tokenizer():
    """A byte-level BPE tokenizer (GPT-2's kind) trained here on two English sentences: Hangul becomes bytes."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(["The cat sat on the mat.", "A dog ran in the park."] * 5, trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    return tokenizer


def test_hangul_taken_apart_into_bytes_is_not_said_to_be_jamo():
    """GPT-2's byte-level tokenizer takes Hangul apart into bytes (ê ³ ł …), and the note said “자모로 쪼개진 글자가
    21개(예: ê ³ ł ì ĸ ĳ)”: its own examples refuted it. Jamo are named only where the pieces are jamo."""
    from qkv.commands._options import reading_note, words

    tokenizer = byte_level_tokenizer()
    model = types.SimpleNamespace(tokenizer=tokenizer, name="bpe")
    text = "고양이가 앉았다"
    encoding = tokenizer.encode(text)
    broken = sum("\ufffd" in tokenizer.decode([i]) for i in encoding.ids)     # a byte of a syllable, alone
    assert 0 < broken <= len(encoding.ids)
    ko = " ".join(reading_note(model, text, words("ko")).split())
    assert "bpe 모델은 한국어를 읽지 못한다." in ko and f"가운데 쪼개진 조각이 {broken}개(예: " in ko, ko
    assert "자모" not in ko, ko
    en = " ".join(reading_note(model, text, words("en")).split())
    assert f"{broken} are pieces taken apart (e.g. " in en and "jamo" not in en, en


def test_the_pages_note_has_a_word_for_each_kind_and_the_page_fills_it_as_the_command_line():
    """serve's page words the same note from its own texts (serve.ui.*), filled in the browser: the same kinds,
    the same sentences as the command line's, so that the two cannot drift apart again."""
    for lang in ("en", "ko"):
        for page, cli in (("readingUnknown", "cli.reading.unknown"), ("readingSplitKorean", "cli.reading.split.korean"),
                          ("readingSplitOther", "cli.reading.split.other"), ("readingBoth", "cli.reading.both")):
            assert texts.text(lang, f"serve.ui.{page}", n=3, unknown="A", split="B", examples="ᄆ ##ᅢ") == \
                texts.text(lang, cli, n=3, unknown="A", split="B", examples="ᄆ ##ᅢ")
    assert texts.text("ko", "serve.ui.readingUnknown", n=3) == "[UNK](모르는 조각)이 3개"
    assert texts.text("en", "serve.ui.readingUnknown", n=1) == "1 is [UNK] (a piece it does not know)"
    assert texts.text("en", "serve.ui.readingSplitKorean", n=2, examples="ᄆ ##ᅢ") == \
        "2 are letters taken apart into jamo (e.g. ᄆ ##ᅢ)"
    assert texts.text("ko", "serve.ui.readingSplitKorean", n=2, examples="ᄆ ##ᅢ") == "자모로 쪼개진 글자가 2개(예: ᄆ ##ᅢ)"


def test_a_model_is_offered_with_its_size_in_words():
    """The model picker said “minilm (6 × 12)” and the overview “minilm: 6 × 12”: which is the layers?"""
    assert texts.text("ko", "serve.ui.modelOption", name="minilm", layers=6, heads=12) == "minilm (층 6개 × 헤드 12개)"
    assert texts.text("en", "serve.ui.modelOption", name="minilm", layers=6, heads=12) == "minilm (6 layers × 12 heads)"
    assert texts.text("en", "serve.ui.modelOption", name="one", layers=1, heads=1) == "one (1 layer × 1 head)"


# ------------------------------------------------------------------------------------------ numbered as the page numbers
def test_the_translators_cell_does_not_number_the_english_word_from_0_beside_word_t_from_1():
    """“2번째 단어 “너를” … → 영어 단어 1 “love””: love is the second English word; the 1 was an array index beside
    an ordinal from 1. The English word is named by itself, as the pointer's line (crossHover) names it."""
    values = {"t": 2, "word": "너를", "prev": "나는", "j": 1, "k": "love"}
    assert texts.text("ko", "serve.ui.crossCell", **values) == \
        "한 칸의 계산 과정: 번역문의 2번째 단어 “너를” (Query: “나는”에서의 상태) → 영어 단어 “love”"
    assert texts.text("en", "serve.ui.crossCell", **values) == \
        "Derivation of one cell: word 2 “너를” (query: the state at “나는”) → the English word “love”"


# ------------------------------------------------------------------------------------------ a negative after “−”
MEETING = ["lot[1]=-5", "lot[2]=-6", "lot[3]=-7", "lot[4]=-2"]     # the first meeting's scores, all below 0


@pytest.mark.parametrize("lang", ["ko", "en"])
def test_a_negative_m_is_subtracted_in_parentheses(lang):
    """The group meeting with scores −5, −6, −7, −2 (m = −2) printed “e^(-5 − -2) = 0.049787”. The lines now read
    e^(s − (m)) and each value is e^(s − m) computed here in float64, at the 6 decimals the line prints."""
    code, out = run("example", "group-meeting", "--what-if", *MEETING, "--lang", lang)
    assert code == 0, out
    assert not re.search(r"− -\d", out), out
    for s in (-5, -6, -7, -2):
        assert f"e^({s} − (-2)) = {math.exp(s + 2):.6f}" in out, (s, out)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny BERT with MiniLM's tokenizer (test_serve's), loaded as serve loads it."""
    from test_serve import tiny_bert

    from qkv import serve

    return serve.load_models([tiny_bert(tmp_path_factory.mktemp("models") / "tiny-bert")])


def test_serve_writes_the_same_lines_for_a_what_if(tiny):
    """The page's step-by-step text is the same renderer's: POST /api/whatif with those scores."""
    from starlette.testclient import TestClient

    from qkv import serve

    base = "http://127.0.0.1"
    with TestClient(serve.create_app(tiny), base_url=base) as client:
        meta = client.get("/api/example", params={"name": "group-meeting"}).json()["trace"]["meta"]
        first = meta["scenes"][0]["name"]
        body = {"name": "group-meeting", "scores": {first: [[0, -5], [1, -6], [2, -7], [3, -2]]}}
        html = client.post("/api/whatif?lang=ko", json=body, headers={"Origin": base}).json()["html"]
    assert "− -" not in html
    assert f"e^(-5 − (-2)) = <span class=\"qkv-n\">{math.exp(-3):.6f}</span>" in html, html


# ------------------------------------------------------------------------------------------ in the browser
@pytest.fixture(scope="module")
def served(tiny):
    """serve's app with the tiny BERT, the run's tiny GPT-2 (byte-level BPE) and the translator on 127.0.0.1,
    opening in Korean (`qkv serve --lang ko`)."""
    from browser_support import serving
    from model_fixtures import built        # the run's shared checkpoint: read, never changed

    from qkv import serve

    translator, why = serve.load_translator()
    assert translator is not None, why
    models = dict(tiny, **serve.load_models([built("gpt2")], minilm=False))
    with serving(serve.create_app(models, translator=translator, lang="ko")) as url:
        yield url


def opened(context, url: str, width: int = 1366, height: int = 900):
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": height})
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    page.wait_for_selector('#app[data-ready="1"]', timeout=60_000)
    return page, errors


def test_the_page_counts_as_it_says_in_korean(browser_context, served):  # noqa: F811
    """In the page (Korean, as `qkv serve --lang ko` opens it): a worked example's labels' tooltips number the
    tokens from 1 as its cells do; the translator's cell names word t from 1 and its English word by itself; the
    model picker and the overview say layers and heads; the unread note counts each kind apart."""
    import json
    from urllib.request import urlopen

    base = served
    page, errors = opened(browser_context, base + "/?example=self-attention")
    page.wait_for_selector(".qkv-mx-row")
    rows = page.eval_on_selector_all(".qkv-example-pane .qkv-mx-row", "els => els.map(e => [e.textContent, e.title])")
    cols = page.eval_on_selector_all(".qkv-example-pane .qkv-mx-col", "els => els.map(e => [e.textContent, e.title])")
    tokens = ["I", "love", "machine", "learning"]                  # the post's sentence, counted from 1
    assert rows == [[t, f"{n}: {t}"] for n, t in enumerate(tokens, 1)], rows
    assert cols == [[t, f"{n}: {t}"] for n, t in enumerate(tokens, 1)], cols
    # the drill's seed box refused in the page's word for it (시드), not as the API's parameter "seed"
    page.wait_for_selector(".qkv-pr-seed")
    page.fill(".qkv-pr-seed", "abc")
    page.click(".qkv-pr-start")
    # a function, not an expression: Playwright polls an expression through eval, which the page's CSP refuses
    page.wait_for_function("() => document.querySelector('.qkv-pr-error').textContent !== ''")
    said = page.locator(".qkv-pr-error").text_content()
    assert said.startswith("오류: 시드: 'abc': ") and "seed" not in said, said
    page.close()

    page, more = opened(browser_context, base + "/?tab=translate&source=I+love+you&to=ko&view=head&layer=0&head=1&cell=1,1")
    errors += more
    page.wait_for_selector(".qkv-translate-pane .qkv-cell h3")
    title = " ".join(page.locator(".qkv-translate-pane .qkv-cell h3").text_content().split())
    translation = json.load(urlopen(base + "/api/translate?text=I+love+you&to=ko"))["target"]
    assert title.startswith(f"한 칸의 계산 과정: 번역문의 2번째 단어 “{translation[1]}”"), title
    assert title.endswith("→ 영어 단어 “love”"), title
    rows = page.eval_on_selector_all(".qkv-mx-row", "els => els.map(e => e.title)")
    assert rows == [f"{n}: {w}" for n, w in enumerate(translation, 1)], rows
    page.close()

    text = "고양이가 매트 위에 앉았다."
    page, more = opened(browser_context, base + "/?tab=model&model=tiny-bert&view=overview&text=" + text, 390, 844)
    errors += more
    page.wait_for_selector(".qkv-overview h2")
    assert page.locator("#qkv-model option[value=\"tiny-bert\"]").text_content() == "tiny-bert (층 2개 × 헤드 2개)"
    total, unknown, jamo = counted(minilm_tokenizer(), text)
    heading = page.locator(".qkv-overview h2").text_content()
    assert heading == f"모든 층 × 헤드 — tiny-bert (층 2개 × 헤드 2개), 토큰 {total + 2}개", heading   # + [CLS], [SEP]
    note = " ".join(page.locator(".qkv-reading").text_content().split())
    assert (f"조각 {total}개(특수 토큰 제외) 가운데 [UNK](모르는 조각)이 {unknown}개이고 자모로 쪼개진 글자가 {jamo}개(예: "
            in note), note
    assert "[UNK] ᄆ" not in note and "예: [UNK]" not in note, note
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.close()

    # the translator's step-by-step text on a phone: a matrix's caption ("X_dec (3 × 64; 열 64개 중 8개 표시)") stands
    # within its table's box, read where the table starts (it was centred over the panning width: cut at the edge)
    page, more = opened(browser_context, base + "/?tab=translate&source=I+love+you&to=ko&view=head&layer=0&head=1&cell=1,1",
                        390, 844)
    errors += more
    page.wait_for_selector(".qkv-derivation caption")
    spans = page.evaluate("""() => Array.from(document.querySelectorAll('.qkv-derivation caption')).map(c => {
        const words = document.createRange(); words.selectNodeContents(c);
        const w = words.getBoundingClientRect(), t = c.closest('table').getBoundingClientRect();
        return [c.textContent, w.left - t.left, t.right - w.right]; })""")
    assert any("X_dec" in text for text, _, _ in spans), spans
    assert all(left >= -0.5 and right >= -0.5 for _, left, right in spans), spans
    page.close()

    # GPT-2's byte-level tokenizer: the same text in bytes, not jamo
    page, more = opened(browser_context, base + "/?tab=model&model=gpt2&view=overview&text=" + text, 390, 844)
    errors += more
    page.wait_for_selector(".qkv-reading")
    note = " ".join(page.locator(".qkv-reading").text_content().split())
    assert "쪼개진 조각이" in note and "자모" not in note, note
    page.close()
    assert errors == []


# ------------------------------------------------------------------------------------------ one word for one thing
def _korean_docs() -> dict[str, str]:
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8")
            for p in [root / "README.ko.md", *sorted((root / "docs" / "ko").glob("*.md"))]}


def test_pressing_something_on_the_page_is_누르다():
    """The serve page said “칸(Query 행, Key 열)을 누르면” (serve.ui) above “왼쪽 토큰을 클릭하라” (page.*), one
    sentence of the step-through even both (“버튼을 누르면 … 토큰을 클릭하라”), and the page is read on a phone
    too: a button, a cell, a token or a thumbnail is pressed, 누르다, in the catalogue and the Korean docs."""
    found = {key: value for key, value in {**texts.KO, **_korean_docs()}.items()
             if isinstance(value, str) and "클릭" in value}
    assert found == {}, found
    assert "왼쪽 토큰을 누르라" in texts.KO["page.stepper_hint"]


def test_the_three_attentions_are_capitalised_where_they_begin():
    """The translator's head was headed “cross-attention, 층 0, 헤드 1”: a heading or a sentence beginning with the
    post's term writes it as the post's title does (Self-attention, Cross-attention, Multi-head attention)."""
    found = {key: value for key, value in {**texts.KO, **texts.EN}.items()
             if isinstance(value, str) and re.search(r"(?:^|[.:!?] )(?:self|cross|multi)-(?:attention|head)", value)
             and not re.fullmatch(r"[a-z-]+", value)}        # an example's name as typed: qkv example self-attention
    assert found == {}, found
    assert texts.text("ko", "serve.ui.crossOf", layer=0, head=1) == "Cross-attention, 층 0, 헤드 1"


def test_after_a_symbol_the_copula_is_이다_too():
    """test_korean_wording's rule (“Key이다”, not “Key다”) looked at Latin letters and brackets only: the heads'
    lens ended on “‖Y − b_O‖ ≤ Σ_g ‖c_g‖다”. After any symbol or number the catalogue writes 이다."""
    found = {key: value for key, value in texts.KO.items() if isinstance(value, str)
             and re.search(r"[^\s가-힣]다(?=[.,:;)\s]|$)", re.sub(r"\{[^}]*\}", "{}", value).replace("{}", "X"))}
    assert found == {}, found


def test_the_temperature_slider_says_what_it_picks_from():
    """“슬라이더는 그중 하나(온도 12개)를 고를 뿐이고”: one of what? — of the temperatures computed beforehand."""
    said = texts.text("ko", "page.next.slider", vocab=300, n=12)
    assert "슬라이더는 미리 계산한 온도 12개 가운데 하나를 고를 뿐이고" in said and "그중 하나(" not in said, said
