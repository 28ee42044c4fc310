"""The offline page (and the notebook's fragment of it) for a reader who uses the keyboard, a screen reader or
reads by contrast, and the page's what-ifs: Chromium, headless, driven by Playwright.

- Keyboard: every query token, key token and the matrix are reached with Tab; Enter / Space on a token act
  as its click; in the matrix the arrow keys move the chosen cell (the shared views.js, as in `qkv serve`).
- Labels: every canvas is an image with a label, or hidden inside a control that has one.
- Contrast (WCAG AA, 4.5:1): every text of every worked example's page (its practice panel included, as
  `qkv example --format html` writes it; the practice's own checks are tests/test_practice_browser.py), in both languages and at both
  sizes, and every number the matrix writes on its canvas, computed from the colours actually painted.
- Layout: the first step's text starts on the first screen at 1366 × 900; no sideways scroll at 390 px.
- What-ifs: the scale what-if follows the chosen query; the group meeting's "given score" row names
  every score (1 included).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import qkv
import qkv.examples
import qkv.notebook
import qkv.practice
from qkv.explain.style import BLUES_STOPS, WEIGHT_GAMMA
from qkv.viz.html import trace_html

from browser_support import OpenPage, browser_context, low_contrast_text, matrix_number_contrasts, wcag_contrast  # noqa: F401

pytestmark = pytest.mark.browser

EXAMPLES = ["self-attention", "cross-attention", "multi-head", "projection", "group-meeting"]
DESKTOP, PHONE = (1366, 900), (390, 844)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("pages")


def page_of(context, folder: Path, name: str, lang: str = "en", viewport=DESKTOP) -> OpenPage:
    path = folder / f"{name}-{lang}.html"
    if not path.exists():
        trace = qkv.examples.run(name)
        trace.meta["variants"] = qkv.examples.variants(name, trace)     # what `qkv example --format html` adds
        trace.meta["practice"] = qkv.practice.offline(name, lang=lang)   # (and its practice panel)
        path.write_text(trace_html(trace, lang=lang, digits=4), encoding="utf-8")
    return OpenPage(context, path, viewport=viewport)


def tab_through(page, limit: int = 200) -> list[dict]:
    """Press Tab from the top of the page until focus comes round again; what each press reached."""
    page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
    reached = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        info = page.evaluate("""() => { const e = document.activeElement;
          if (!e || e === document.body) return null;
          return { tag: e.tagName, cls: String(e.className), index: e.getAttribute('data-index'),
                   side: e.closest('.qkv-left') ? 'query' : e.closest('.qkv-right') ? 'key' : null,
                   role: e.getAttribute('role'), label: e.getAttribute('aria-label') }; }""")
        if info is None or (reached and info == reached[0]):
            break
        reached.append(info)
    return reached


# ------------------------------------------------------------------ the keyboard
def test_tab_reaches_every_token_and_the_matrix(browser_context, folder):  # noqa: F811
    page = page_of(browser_context, folder, "self-attention")
    try:
        reached = tab_through(page.page)
        queries = sorted(int(r["index"]) for r in reached if r["side"] == "query")
        keys = sorted(int(r["index"]) for r in reached if r["side"] == "key")
        tokens = qkv.examples.run("self-attention").info.tokens
        assert queries == list(range(len(tokens))) and keys == list(range(len(tokens))), reached
        matrix = [r for r in reached if "qkv-mx-cells" in r["cls"]]
        assert len(matrix) == 1 and matrix[0]["role"] == "img" and matrix[0]["label"], reached
        # every token control says what it is: "query 2 “machine”" (the post's numbering)
        labels = [r["label"] for r in reached if r["side"] == "query"]
        assert all(label and tokens[int(r["index"])] in label for label, r in
                   zip(labels, [r for r in reached if r["side"] == "query"]))
    finally:
        page.close()


def test_enter_on_a_token_and_arrows_in_the_matrix_act_as_the_mouse(browser_context, folder):  # noqa: F811
    page = page_of(browser_context, folder, "self-attention")
    p = page.page
    try:
        p.focus('.qkv-left .qkv-tok[data-index="2"]')
        p.keyboard.press("Enter")                          # follows query 2 instead of the example's "love"
        view = p.locator(".qkv-view")
        assert view.get_attribute("data-selected") == "2"
        assert p.get_attribute('.qkv-left .qkv-tok[data-index="2"]', "aria-pressed") == "true"
        p.focus('.qkv-right .qkv-tok[data-index="0"]')
        p.keyboard.press(" ")                              # the key token: query 2's cell with key 0
        assert view.get_attribute("data-cell") == "2,0"
        p.focus("canvas.qkv-mx-cells")
        p.keyboard.press("ArrowDown")
        assert view.get_attribute("data-cell") == "3,0"
        p.keyboard.press("ArrowRight")
        p.keyboard.press("ArrowRight")
        assert view.get_attribute("data-cell") == "3,2"
        p.keyboard.press("ArrowDown")                      # the last row: the edge holds
        assert view.get_attribute("data-cell") == "3,2"
        p.keyboard.press("End")
        assert view.get_attribute("data-cell") == "3,3"
        # the line under the matrix (aria-live) says the cell and its recorded weight
        weights = qkv.examples.run("self-attention")["weights"].value.reshape(4, 4)
        info = p.text_content(".qkv-matrix .qkv-info")
        assert f"{weights[3, 3]:.4f}" in info and p.get_attribute(".qkv-matrix .qkv-info", "aria-live") == "polite"
        assert page.errors == []
    finally:
        page.close()


# ------------------------------------------------------------------ labels
CANVAS_LABELS_JS = r"""
() => Array.from(document.querySelectorAll("canvas")).map((c) => {
  const control = c.closest("button, [role=button]");
  return { cls: String(c.className), role: c.getAttribute("role"), label: c.getAttribute("aria-label"),
           hidden: c.getAttribute("aria-hidden"), control: control ? control.getAttribute("aria-label") : null };
})
"""


def unlabelled_canvases(page) -> list[dict]:
    out = []
    for c in page.evaluate(CANVAS_LABELS_JS):
        named = c["role"] == "img" and bool((c["label"] or "").strip())
        inside = c["hidden"] == "true" and bool((c["control"] or "").strip())
        if not (named or inside):
            out.append(c)
    return out


def test_the_notebook_fragment_is_labelled_and_reachable(browser_context, tmp_path):  # noqa: F811
    fragment = qkv.notebook.view("self-attention").fragment()
    path = tmp_path / "notebook.html"
    path.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{fragment}</body></html>",
                    encoding="utf-8")
    page = OpenPage(browser_context, path)
    try:
        assert unlabelled_canvases(page.page) == []
        reached = tab_through(page.page)
        assert sum(r["side"] == "query" for r in reached) == 4 and sum(r["side"] == "key" for r in reached) == 4
        assert any("qkv-mx-cells" in r["cls"] for r in reached)
        assert low_contrast_text(page.page) == []
    finally:
        page.close()


# ------------------------------------------------------------------ contrast
def _blues(weight: float) -> tuple[float, ...]:
    """matplotlib's Blues at weight ** γ, from its nine ColorBrewer stops (as qkv.explain.style documents)."""
    t = min(1.0, max(0.0, weight)) ** WEIGHT_GAMMA * (len(BLUES_STOPS) - 1)
    k = min(int(t), len(BLUES_STOPS) - 2)
    return tuple(round(a + (t - k) * (b - a)) for a, b in zip(BLUES_STOPS[k], BLUES_STOPS[k + 1]))


def test_text_on_every_weight_colour_reaches_four_and_a_half_to_one(browser_context, folder):  # noqa: F811
    """The page's text colour on each of 1001 weights 0, 0.001, …, 1 (where white text used to stand on
    0.37–0.49 at 3.25–4.4:1): the ratio computed here from the WCAG definition."""
    page = page_of(browser_context, folder, "self-attention")
    try:
        pairs = page.page.evaluate("() => { const V = window.qkvViews, out = [];"
                                   " for (let k = 0; k <= 1000; k++) { const c = V.colour(k / 1000); out.push([c, V.ink(c)]); }"
                                   " return out; }")
    finally:
        page.close()
    worst = 21.0
    for k, (fill, ink) in enumerate(pairs):
        assert tuple(fill) == _blues(k / 1000), (k, fill)     # the page paints the documented scale
        ratio = wcag_contrast((0, 0, 0) if ink == "#000" else (255, 255, 255), fill)
        worst = min(worst, ratio)
        assert ratio >= 4.5, (k / 1000, fill, ink, ratio)
    assert worst >= 4.5


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_every_example_page_fits_is_labelled_and_reaches_four_and_a_half_to_one(browser_context, folder, lang, size):  # noqa: F811
    """Each worked example's page, opened once per language and size and read as a reader meets it (these were three
    tests that opened the same five pages again, 50 page loads for 20):
    - layout, as the page opens: no sideways scroll; at 1366 × 900 the first step's text starts on the first screen
      and nothing sticks out of its panel (the legend's bar did, past a 3-token matrix's panel);
    - labels (at 1366 × 900): with the first query chosen, every canvas (head view lines, matrix, legend) is an image
      with a label or hidden inside a control that has one;
    - contrast: every text against what is behind it, as opened and with a query chosen and a cell's derivation open,
      and every number the matrix writes on its canvas against the colour painted under it."""
    for name in EXAMPLES:
        page = page_of(browser_context, folder, name, lang, viewport=size)
        try:
            p = page.page
            assert page.overflow() <= 0, name
            if size == DESKTOP:
                top = p.evaluate("() => document.querySelector('.qkv-steptext').getBoundingClientRect().top")
                assert top < DESKTOP[1] - 60, f"{name}: the step's text starts at {top:.0f} px"
                out = p.evaluate("""() => Array.from(document.querySelectorAll('.qkv-panel canvas, .qkv-panel .qkv-ticks span'))
                  .filter((e) => !e.closest('.qkv-pan, .qkv-hv-scroll, .qkv-flow, .qkv-thumbs'))
                  .map((e) => e.getBoundingClientRect().right - e.closest('.qkv-panel').getBoundingClientRect().right)
                  .filter((d) => d > 0.5)""")
                assert out == [], f"{name}: {out}"
            bad = low_contrast_text(p)
            if name != "multi-head":
                p.click('.qkv-left .qkv-tok[data-index="0"]')      # a chosen query paints the key tokens
            if size == DESKTOP:
                count = p.evaluate("() => document.querySelectorAll('canvas').length")
                assert count >= (0 if name == "multi-head" else 3), name       # head view lines, matrix, legend
                assert unlabelled_canvases(p) == [], name
            if name != "multi-head":
                p.click('.qkv-right .qkv-tok[data-index="0"]')     # and opens a cell's derivation
                bad += low_contrast_text(p)
                numbers = matrix_number_contrasts(p)
                assert numbers, f"{name}: the matrix wrote no numbers"
                bad += [f"matrix {k['i']},{k['j']}: {r:.2f}:1" for r, k in numbers if r < 4.5]
                # the cell colour the view reports is the colour on the canvas (the contrast is of what is seen)
                assert all(np.abs(np.subtract(k["fill"], k["pixel"])).max() <= 1 for _, k in numbers), name
            assert sorted(set(bad)) == [], f"{name} ({lang}, {size[0]} px)"
        finally:
            page.close()


# ------------------------------------------------------------------ what-ifs
def _softmax_rows(q, k, scale):
    s = (q @ k.T) * scale
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_the_scale_what_if_follows_the_chosen_query(browser_context, folder):  # noqa: F811
    trace = qkv.examples.run("self-attention")
    q, k = trace["q_heads"].value[0], trace["k_heads"].value[0]
    page = page_of(browser_context, folder, "self-attention")
    p = page.page
    try:
        box = p.locator(".qkv-whatif")
        assert box.get_attribute("data-query") == str(trace.info.query)
        p.click('.qkv-left .qkv-tok[data-index="3"]')          # "learning" instead of "love"
        assert box.get_attribute("data-query") == "3"
        assert "learning" in p.text_content(".qkv-whatif p")
        slider = p.locator(".qkv-whatif-slider")
        for position in range(int(slider.get_attribute("max")) + 1):
            slider.evaluate("(s, v) => { s.value = v; s.dispatchEvent(new Event('input')); }", str(position))
            scale = float(box.get_attribute("data-scale"))
            expected = _softmax_rows(q, k, scale)[3]           # float64, from the recorded q and k
            shown = [float(c.replace("−", "-")) for c in
                     p.eval_on_selector_all(".qkv-whatif td[data-key]", "els => els.map(e => e.textContent)")]
            assert np.allclose(shown, expected, atol=0.5e-4 + 1e-12), (scale, shown, expected)
    finally:
        page.close()


def test_the_group_meeting_what_if_names_every_given_score(browser_context, folder):  # noqa: F811
    trace = qkv.examples.run("group-meeting")
    scene = trace.info.scenes[-1]["name"]
    given = trace[f"{scene}/scores"].value.reshape(-1)
    page = page_of(browser_context, folder, "group-meeting")
    p = page.page
    try:
        slider = p.locator(".qkv-whatif-slider")
        for position in (0, int(slider.get_attribute("max"))):
            slider.evaluate("(s, v) => { s.value = v; s.dispatchEvent(new Event('input')); }", str(position))
            score = float(p.get_attribute(".qkv-whatif", "data-score"))
            row = p.eval_on_selector_all(".qkv-whatif tr:nth-child(2) td", "els => els.map(e => e.textContent)")
            asked = [j for j, t in enumerate(trace.info.scenes[-1]["tokens"]) if t not in trace.info.scenes[0]["tokens"]]
            expected = [score if j in asked else given[j] for j in range(len(given))]
            assert all(cell.strip() for cell in row), row          # no blank score, 1 included
            assert [float(c) for c in row] == expected
            assert any(math.isclose(float(c), 1.0) for c in row)   # the meeting's scores of 1 are shown
    finally:
        page.close()


# ------------------------------------------------------------------ the multi-head picture
def test_the_multi_head_page_draws_heads_concat_w_o_and_y(browser_context, folder):  # noqa: F811
    trace = qkv.examples.run("multi-head")
    page = page_of(browser_context, folder, "multi-head")
    p = page.page
    try:
        def block(part):
            return [[float(c.replace("−", "-")) for c in row] for row in p.eval_on_selector_all(
                f'.qkv-flowpic-block[data-part="{part}"] tr',
                "rows => rows.map(r => Array.from(r.querySelectorAll('td')).map(td => td.textContent))")]
        out = trace["out"].value                       # (heads, 1, 3): the heads' outputs
        assert np.allclose(block("heads"), out[:, 0, :], atol=0.5e-4)
        concat = block("concat")                       # one row per head's columns, in order
        assert len(concat) == out.shape[0]
        assert np.allclose(np.concatenate(concat)[None, :], trace["concat"].value, atol=0.5e-4)
        assert np.allclose(block("wo"), trace["w_o"].value, atol=0.5e-4)
        assert np.allclose(block("y"), trace["y"].value, atol=0.5e-4)
        # the output block is named as the post names it (z_final), not by qkv's step name y
        assert p.text_content('.qkv-flowpic-block[data-part="y"] .qkv-flowpic-title').strip() == "z_final"
        # concat's cells keep their head's colour: head n's tint on columns 3n … 3n + 2
        tints = p.eval_on_selector_all('.qkv-flowpic-block[data-part="concat"] td', "els => els.map(e => e.style.background)")
        width = out.shape[-1]
        assert all(tints[c] == tints[(c // width) * width] for c in range(len(tints)))
        assert len({tints[h * width] for h in range(out.shape[0])}) == out.shape[0]
        # the step-through marks the parts of its step
        marked = lambda: p.eval_on_selector_all(".qkv-flowpic-block.qkv-on", "els => els.map(e => e.dataset.part)")
        assert marked() == ["heads"]
        p.click(".qkv-next"); assert marked() == ["heads", "concat"]
        p.click(".qkv-next"); assert marked() == ["concat", "wo", "y"]
        assert page.errors == []
    finally:
        page.close()


def test_a_cells_derivation_shows_the_keys_contribution_beside_its_weight(browser_context, folder):  # noqa: F811
    """A weight is not a contribution: the cell's rows give ‖wⱼ·vⱼ‖ and its share, computed here in float64
    from the recorded weights and value rows."""
    trace = qkv.examples.run("self-attention")
    w, v = trace["weights"].value[0], trace["v_heads"].value[0]
    page = page_of(browser_context, folder, "self-attention")
    p = page.page
    try:
        p.click('.qkv-left .qkv-tok[data-index="1"]')
        for j in range(w.shape[1]):
            p.click(f'.qkv-right .qkv-tok[data-index="{j}"]')
            row = p.text_content('.qkv-cell tr[data-step="contributions"] td')
            contribution = w[1] * np.linalg.norm(v, axis=1)
            shown = [float(x) for x in re.findall(r"\d+\.\d+", row)]
            assert abs(shown[0] - contribution[j]) <= 0.5e-4 + 1e-12, (j, row)
            assert abs(shown[1] - contribution[j] / contribution.sum()) <= 0.5e-4 + 1e-12, (j, row)
    finally:
        page.close()


# ------------------------------------------------------------------ which decimals where
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_page_says_which_decimals_the_views_and_the_derivation_show(browser_context, tmp_path, lang):  # noqa: F811
    """The learner's pass: the note under the controls said every number shows 4 decimals, while the derivation
    below ("Step by step") gives each step at the post's precision (bb14dff). A worked example's page says both;
    a page asked for 2 decimals everywhere says that one number."""
    from qkv.explain.texts import LANGS

    def note(page) -> str:
        return page.page.evaluate("""() => Array.from(document.querySelectorAll('.qkv-note'))
          .map((e) => e.textContent).filter((t) => t.includes('10^−'))""")

    for digits, key, shown in ((None, "page.storage_steps", "4"), (2, "page.storage", "2")):   # None: as the CLI
        path = tmp_path / f"self-attention-{lang}-{digits}.html"
        path.write_text(trace_html(qkv.examples.run("self-attention"), lang=lang, digits=digits), encoding="utf-8")
        page = OpenPage(browser_context, path, viewport=DESKTOP)
        try:
            assert note(page) == [LANGS[lang][key].replace("{d}", shown)], digits
            assert page.errors == []
        finally:
            page.close()
