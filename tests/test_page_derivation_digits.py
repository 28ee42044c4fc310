"""The offline page's derivation shows each step as the post prints it, as the text, Markdown and serve do
(found in the learner's pass of issue 29: `qkv example … --format html` built its derivation at 4 decimals
everywhere — the group meeting's given scores read 100.0000 and e^(1.0000 − 100.0000), self-attention's
z_love [0.8933, 0.9295, 0.8176] beside the terminal's and the post's [0.893, 0.930, 0.818], and the multi-head
page dropped the note on why its z_final differs from the post's). The page's views keep 4 decimals: they
store exactly what they show.

Expected numbers are the posts' own, as printed in “도해와 최소 사례로 직관적으로 이해하는 Self-attention,
Cross-attention, Multi-head Attention” and “어텐션이 조모임이라면”.
"""

from __future__ import annotations

import html
import re

import pytest

from qkv import examples
from qkv.cli import main
from qkv.explain import derivation_html, render


def _derivation_text(page: str) -> str:
    """The derivation section of a page as plain text, numbers of a vector joined as the posts write them."""
    start = page.index('<div class="qkv-steps">')
    text = re.sub(r"<[^>]+>", " ", page[start:page.index("</section>", start)])
    text = html.unescape(re.sub(r"\s+", " ", text))
    return re.sub(r"\s*([\[\],()])\s*", r"\1", text)


# (example, what the post prints, in the post's notation)
POSTS = [
    ("self-attention", ["[0.893,0.930,0.818]", "[1.1580,1.6976,1.6888,2.1408]"]),     # z_love; the raw scores
    ("multi-head", ["[0.893,0.930,0.818,1.020,0.710,0.640,0.640,1.210,0.580]"]),     # z_concat
    ("group-meeting", ["e^(1 − 100)", "e^(100 − 1000)", "m = 100"]),                 # lot 100, the others 1; 1000
]


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("name, printed", POSTS, ids=[n for n, _ in POSTS])
def test_the_page_derivation_keeps_the_posts_numbers(name, printed, lang):
    shown = _derivation_text(render(examples.run(name), "html", lang=lang))
    for number in printed:
        assert number in shown, (name, lang, number, shown[:3000])
    if name == "group-meeting":
        assert "100.0000" not in shown and "1000.0000" not in shown, shown[:3000]


@pytest.mark.parametrize("name", examples.names())
def test_the_page_derivation_is_serves(name):
    """One derivation per trace: the page embeds what serve answers (derivation_html with the example's digits)."""
    trace = examples.run(name)
    page = render(trace, "html", lang="ko")
    assert derivation_html(trace, lang="ko") in page


def test_the_multi_head_page_says_why_it_differs_from_the_post():
    shown = _derivation_text(render(examples.run("multi-head"), "html", lang="en"))
    assert "0.874339" in shown and "--by-hand" in shown        # the note: the exact z_final, and how to get the post's


def test_digits_asked_for_are_the_pages_everywhere(tmp_path):
    out = tmp_path / "page.html"
    assert main(["example", "group-meeting", "--digits", "2", "--format", "html", "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "e^(1.00 − 100.00)" in _derivation_text(page) and '"digits":2' in page.replace(" ", "")


def test_the_views_keep_four_decimals():
    page = render(examples.run("group-meeting"), "html")
    assert '"digits":4' in page.replace(" ", "")
