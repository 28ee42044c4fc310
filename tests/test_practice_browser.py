"""Practice in a real browser (Debian's Chromium, headless, Playwright): a full session through each worked
example, in English and Korean, on the offline page (`qkv example NAME --format html`, checked by the page's
script against the values `qkv.practice.offline` embedded) and on `qkv serve` (each answer posted to
/api/practice/check). Every question gets a bad answer (empty, text, NaN, 1e400), a wrong one (a known
slip's number), and the right one, computed by tests/test_practice.py's float64 NumPy reference; the last
question gets three wrong answers and shows the answer. Each line the browser shows is the line
`qkv.practice.check` says for the same typed text: the page's script and the server agree with the library.
Then the reader's side: the keyboard reaches the drill picker, the answer box and its button (the box is
labelled by its question), the verdict is a live region, every text reaches 4.5:1, no sideways scroll at
390 px.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qkv import practice, serve
from qkv.cli import main
from qkv.explain import texts

from browser_support import OpenPage, browser_context, keep_screenshot, low_contrast_text, serving  # noqa: F401  (fixture)
from test_practice import EXAMPLES, ref_value, reference
from test_serve import tiny_bert

pytestmark = pytest.mark.browser

LANGS = ("en", "ko")
BAD = ("", "abc", "nan", "1e400")
DESKTOP, PHONE = (1366, 900), (390, 844)
# The waits for a verdict or a new drill check the page every 20 ms rather than at every animation frame (Playwright's
# default), which made Chromium draw a frame every 16 ms for as long as serve took to answer: ~0.1 CPU-s a second.
POLL = 20


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`qkv serve` (a tiny BERT: the worked examples need no model) on 127.0.0.1, as `qkv serve` runs it."""
    models = serve.load_models([tiny_bert(tmp_path_factory.mktemp("models") / "tiny-bert")], minilm=False)
    with serving(serve.create_app(models)) as url:
        yield url


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("practice-pages")


def page_file(folder: Path, name: str, lang: str) -> Path:
    path = folder / f"{name}-{lang}.html"
    if not path.exists():
        assert main(["example", name, "--format", "html", "--lang", lang, "--out", str(path)]) == 0
    return path


class Served(OpenPage):
    """A `qkv serve` page, opened on a worked example."""

    def __init__(self, context, url: str, viewport=DESKTOP):
        self.requests, self.errors = [], []
        self.page = context.new_page()
        self.page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.goto(url)
        self.page.wait_for_selector('.qkv-view[data-ready="1"] .qkv-practice .qkv-pr-input', timeout=120_000)


# The verdict, read in one round trip: the page is polled every POLL ms by a script of its own (an evaluate that waits),
# rather than by Playwright's wait_for_function and a json_value after it, and data-status is cleared as it is read, so
# that the next answer's wait sees its own verdict only (an evaluate before each answer cleared it: one round trip
# more). The page itself never reads data-status; ask() sets it to "" for each new question.
_VERDICT_JS = """async ([poll, limit]) => {
    const run = document.querySelector('.qkv-practice .qkv-pr-run'), end = Date.now() + limit;
    for (;;) {
        const status = run.getAttribute('data-status');
        if (status) {
            run.setAttribute('data-status', '');
            return JSON.stringify([status, Array.from(document.querySelectorAll('.qkv-practice .qkv-pr-verdict p'), (p) => p.textContent)]);
        }
        if (Date.now() > end) throw new Error(`no verdict within ${limit} ms`);
        await new Promise((resume) => setTimeout(resume, poll));
    }
}"""


def answer(page, typed: str) -> tuple[str, list[str]]:
    """Type into the answer box, press Enter, wait for the verdict; its status (bad, wrong, right) and its lines."""
    box = page.locator(".qkv-practice .qkv-pr-input")
    box.fill(typed)
    box.press("Enter")
    status, lines = json.loads(page.evaluate(_VERDICT_JS, [POLL, 30_000]))
    assert status != "error", lines
    return status, lines


def expected(question, typed: str, lang: str, wrong_before: int) -> list[str]:
    verdict = practice.check(question, typed, lang)
    lines = list(verdict.lines)
    if verdict.status == "wrong":
        if wrong_before + 1 >= practice.ATTEMPTS:
            how = texts.text(lang, question.how[0], **question.how[1])
            lines.append(texts.text(lang, "practice.reveal", how=how))
        else:
            lines.append(texts.text(lang, "practice.again"))
    return lines


def wrong_number(question) -> str:
    """A known slip's number (the first that is not the by-hand value), else a number far from every slip."""
    for slip in question.slips:
        if abs(slip.value - question.by_hand) > 2 * question.tolerance:
            return repr(slip.value)
    return repr(question.answer + 1000.5)


# What the practice panel shows of the current question, in one round trip (a locator call each was six): the run's
# attributes, each element's text (a list, so that "exactly one" is checked as the locators' strict mode checked it),
# the steps' texts and marks. It waits (polling) until the run shows question k: Enter on the next button moves on.
_QUESTION_JS = """async ([k, poll, limit]) => {
    const all = (s) => Array.from(document.querySelectorAll('.qkv-practice ' + s)), end = Date.now() + limit;
    const run = document.querySelector('.qkv-practice .qkv-pr-run');
    while (run.getAttribute('data-question') !== String(k) && Date.now() < end) await new Promise((resume) => setTimeout(resume, poll));
    const text = (s) => all(s).map((e) => e.textContent), steps = all('.qkv-pr-steps li');
    return JSON.stringify({seed: run.getAttribute('data-seed'), question: run.getAttribute('data-question'),
        header: text('.qkv-pr-header'), title: text('.qkv-pr-title'), given: text('.qkv-pr-given'), ask: text('label.qkv-pr-ask'),
        steps: steps.map((e) => e.textContent), current: steps.map((e) => e.getAttribute('aria-current'))});
}"""

# After a question's last answer, in one round trip: the run's data-done, the step's mark, the focused element.
_DONE_JS = """(k) => JSON.stringify([document.querySelector('.qkv-practice .qkv-pr-run').getAttribute('data-done'),
    document.querySelectorAll('.qkv-practice .qkv-pr-steps li')[k].getAttribute('data-mark'), document.activeElement.className])"""


def play_session(page, session, lang: str, right_of) -> None:
    """Every question of ``session`` on the open page: shown as qkv.practice words it; answered bad, wrong,
    right (the last one: wrong three times, then the answer is shown); the summary at the end."""
    shown = practice.shown(session)
    n = len(session.questions)
    for k, question in enumerate(session.questions):
        view = shown["questions"][k]
        now = json.loads(page.evaluate(_QUESTION_JS, [k, POLL, 30_000]))
        assert now["seed"] == str(session.seed) and now["header"] == [shown["header"]]
        assert now["question"] == str(k)
        assert now["title"] == [view["title"]]
        assert now["given"] == view["given"]
        assert now["ask"] == [view["ask"]]
        assert now["steps"] == [q["what"] for q in shown["questions"]]        # the drill's steps, in the post's order
        assert now["current"] == ["step" if m == k else "false" for m in range(n)]
        bad = BAD[k % len(BAD)]
        assert answer(page, bad) == ("bad", expected(question, bad, lang, 0))
        last = k == n - 1
        for tries in range(practice.ATTEMPTS if last else 1):
            typed = wrong_number(question) if tries == 0 else repr(question.answer + 1000.5 + tries)
            said = expected(question, typed, lang, tries)
            assert answer(page, typed) == (practice.check(question, typed, lang).status, said), (k, typed)
        if not last:
            right = f"{right_of(question):.{question.digits}f}"
            assert answer(page, right) == ("right", expected(question, right, lang, 1))
        # done, the step marked, and the next button takes the focus: Enter moves on
        assert json.loads(page.evaluate(_DONE_JS, k)) == ["1", "shown" if last else "right", "qkv-pr-next"]
        page.keyboard.press("Enter")
    summary = texts.text(lang, "practice.summary", right=n - 1, first=0, asked=n)
    run = page.locator(".qkv-practice .qkv-pr-run")
    assert page.locator(".qkv-practice .qkv-pr-summary").text_content() == summary
    assert run.get_attribute("data-question") == str(n)


def right_from_reference(name: str):
    ref = reference(name)
    return lambda question: ref_value(ref, question)


# ------------------------------------------------------------------ the offline page
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", EXAMPLES)
def test_a_session_on_the_offline_page(browser_context, folder, name, lang):  # noqa: F811
    opened = OpenPage(browser_context, page_file(folder, name, lang))
    page = opened.page
    try:
        play_session(page, practice.drill(name, lang=lang, seed=0), lang, right_from_reference(name))
        # new numbers of the same shapes: the page's second drill, picked with the keyboard
        page.locator(".qkv-practice .qkv-pr-pick").focus()
        page.keyboard.press("ArrowDown")
        run = page.locator(".qkv-practice .qkv-pr-run")
        assert run.get_attribute("data-fresh") == "1" and run.get_attribute("data-seed") == "1"
        fresh = practice.drill(name, lang=lang, seed=1, fresh=True)
        first = fresh.questions[0]
        assert answer(page, f"{first.answer:.{first.digits}f}")[1] == expected(first, f"{first.answer:.{first.digits}f}", lang, 0)
        assert "--fresh" in page.locator(".qkv-practice .qkv-pr-header").text_content()
        assert opened.outside_requests() == [] and opened.errors == [], opened.errors
    finally:
        opened.close()


# ------------------------------------------------------------------ qkv serve
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", EXAMPLES)
def test_a_session_on_serve(browser_context, server, name, lang):  # noqa: F811
    opened = Served(browser_context, f"{server}/?example={name}&lang={lang}")
    page = opened.page
    try:
        play_session(page, practice.drill(name, lang=lang, seed=0), lang, right_from_reference(name))
        run = page.locator(".qkv-practice .qkv-pr-run")
        # new numbers: the server draws a seed and computes them
        page.locator(".qkv-practice .qkv-pr-new").click()
        page.wait_for_function("() => document.querySelector('.qkv-practice .qkv-pr-run').getAttribute('data-fresh') === '1'",
                               polling=POLL)
        seed = int(run.get_attribute("data-seed"))
        assert page.locator(".qkv-practice .qkv-pr-seed").input_value() == str(seed)
        assert f"practice={seed}f" in page.url            # the drill is part of the permalink
        fresh = practice.drill(name, lang=lang, seed=seed, fresh=True)
        first, typed = fresh.questions[0], repr(fresh.questions[0].answer)
        assert answer(page, typed)[1] == expected(first, typed, lang, 0)
        # a seed typed by hand repeats a drill; a seed that is no number is refused in one line
        page.locator(".qkv-practice .qkv-pr-seed").fill("12")
        page.locator(".qkv-practice .qkv-pr-fresh").uncheck()
        page.locator(".qkv-practice .qkv-pr-start").click()
        page.wait_for_function("() => document.querySelector('.qkv-practice .qkv-pr-run').getAttribute('data-seed') === '12'",
                               polling=POLL)
        again = practice.drill(name, lang=lang, seed=12)
        assert page.locator(".qkv-practice .qkv-pr-title").text_content() == practice.shown(again)["questions"][0]["title"]
        assert page.locator(".qkv-practice .qkv-pr-ask").text_content() == practice.shown(again)["questions"][0]["ask"]
        assert "practice=12" in page.url and "practice=12f" not in page.url
        page.goto(page.url)                                # the permalink opens the same drill
        page.wait_for_selector('.qkv-view[data-ready="1"] .qkv-practice .qkv-pr-run[data-seed="12"] .qkv-pr-input')
        assert page.locator(".qkv-practice .qkv-pr-ask").text_content() == practice.shown(again)["questions"][0]["ask"]
        page.locator(".qkv-practice .qkv-pr-seed").fill("twelve")
        page.locator(".qkv-practice .qkv-pr-start").click()
        page.wait_for_function("() => document.querySelector('.qkv-practice .qkv-pr-error').textContent.length > 0", polling=POLL)
        line = page.locator(".qkv-practice .qkv-pr-error").text_content()
        assert "twelve" in line and "\n" not in line
        assert [e for e in opened.errors if "400 (Bad Request)" not in e] == [], opened.errors
    finally:
        opened.close()


# ------------------------------------------------------------------ the reader's side
def reader_checks(opened, width: int, name: str, lang: str) -> None:
    page = opened.page
    box = page.locator(".qkv-practice .qkv-pr-input")
    # the keyboard: from the drill's first control, Tab reaches the answer box, then its button
    first = page.locator(".qkv-practice .qkv-pr-pick, .qkv-practice .qkv-pr-new").last
    first.focus()
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.className") == "qkv-pr-input"
    label = page.evaluate("() => Array.from(document.activeElement.labels).map((l) => l.textContent).join(' ')")
    assert label == page.locator(".qkv-practice .qkv-pr-ask").text_content() and label
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.className") == "qkv-pr-check"
    verdict = page.locator(".qkv-practice .qkv-pr-verdict")
    assert verdict.get_attribute("role") == "status" and verdict.get_attribute("aria-live") == "polite"
    # every kind of verdict drawn, then every text on the page against its background
    for typed in ("1e400", "123456.5"):
        answer(page, typed)
        assert low_contrast_text(page) == [], (typed, low_contrast_text(page))
    session = practice.drill(name, lang=lang, seed=0)
    right = f"{session.questions[0].answer:.{session.questions[0].digits}f}"
    answer(page, right)
    assert low_contrast_text(page) == []
    assert opened.overflow() <= 0, opened.overflow()
    box.scroll_into_view_if_needed()
    keep_screenshot(page.locator(".qkv-practice"), f"practice-{name}-{lang}-{width}")


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1366", "390"])
def test_the_page_practice_for_a_reader(browser_context, folder, size, lang):  # noqa: F811
    opened = OpenPage(browser_context, page_file(folder, "projection", lang), viewport=size)
    try:
        reader_checks(opened, size[0], "projection", lang)
        assert opened.errors == []
    finally:
        opened.close()


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1366", "390"])
def test_serve_practice_for_a_reader(browser_context, server, size, lang):  # noqa: F811
    opened = Served(browser_context, f"{server}/?example=self-attention&lang={lang}", viewport=size)
    try:
        reader_checks(opened, size[0], "self-attention", lang)
        assert opened.errors == []
    finally:
        opened.close()


# ------------------------------------------------------------------ the page reads a typed answer as Python does
TYPED = ["0.25", " 0.25 ", "+.5", "5.", "−0.5", "-0", "1_0", "1__0", "_1", "1_", "1e3", "1E-3", "1e-400", "1e400",
         "-1e400", "inf", "-Infinity", "iNf", "nan", "NaN", "+nan", "0,25", "0x10", "abc", "a'b", "a'b\"c", "\\", "",
         "   ", "1 2", "2.14", "2.140", "2.1408", "2.14080", "2.1409", "2.1407", "-2.1408", "1e0", "0.3382", ".3382",
         "1.5138", "1.51", "1.5", "2", "3", "0.893", "0.89", "9" * 30, "٣", "１"]


@pytest.mark.parametrize("lang", LANGS)
def test_the_page_says_what_practice_check_says_for_any_typed_text(browser_context, folder, lang):  # noqa: F811
    """Every question of the self-attention and group-meeting pages' post drills, ~50 typed texts each (numbers
    Python's float() reads and does not, right to fewer decimals, slips, text): the page's status and lines
    are `qkv.practice.check`'s — other scripts' digits ("٣", "１") included: both read digits 0–9 only."""
    for name in ("self-attention", "group-meeting"):
        opened = OpenPage(browser_context, page_file(folder, name, lang))
        try:
            session = practice.drill(name, lang=lang, seed=0)
            for k, question in enumerate(session.questions):
                typed = TYPED + [repr(s.value) for s in question.slips] + [f"{question.answer:.{p}f}" for p in range(6)]
                got = opened.page.evaluate("""([k, typed]) => { const pr = document.querySelector('.qkv-view').qkv.payload.practice;
                    const d = pr.drills[0]; return typed.map((t) => window.qkvViews.practiceCheck(d.questions[k], t, d.lines)); }""",
                                           [k, typed])
                for text, verdict in zip(typed, got):
                    said = practice.check(question, text, lang)
                    assert (verdict["status"], verdict["lines"]) == (said.status, list(said.lines)), (name, k, text)
        finally:
            opened.close()


# ------------------------------------------------------------------ qkv.show: the same panel, two views in one notebook
def test_two_notebook_views_practise_apart(browser_context, tmp_path):  # noqa: F811
    """Two `qkv.show` outputs on one page (as a notebook shows them): each panel has its own labelled box and
    checks against its own drills."""
    import qkv.notebook

    first, second = qkv.notebook.view("self-attention"), qkv.notebook.view("group-meeting", lang="ko")
    path = tmp_path / "notebook.html"
    path.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{first.fragment()}"
                    f"{second.fragment()}</body></html>", encoding="utf-8")
    opened = OpenPage(browser_context, path)
    page = opened.page
    try:
        page.wait_for_function("() => document.querySelectorAll('.qkv-view[data-ready=\"1\"]').length === 2")
        boxes = page.locator(".qkv-practice .qkv-pr-input")
        assert boxes.count() == 2
        ids = [boxes.nth(n).get_attribute("id") for n in range(2)]
        assert len(set(ids)) == 2
        for n, (name, lang) in enumerate((("self-attention", "en"), ("group-meeting", "ko"))):
            question = practice.drill(name, lang=lang, seed=0).questions[0]
            label = page.evaluate("(id) => document.getElementById(id).labels[0].textContent", ids[n])
            assert label == practice.shown(practice.drill(name, lang=lang, seed=0))["questions"][0]["ask"]
            typed = f"{question.answer:.{question.digits}f}"
            boxes.nth(n).fill(typed)
            boxes.nth(n).press("Enter")
            verdict = page.locator(".qkv-practice .qkv-pr-verdict").nth(n)
            assert verdict.locator("p").first.text_content() == practice.check(question, typed, lang).lines[0]
        assert opened.errors == []
    finally:
        opened.close()
