"""`qkv serve` shows how sure the translator was, as `qkv translate` prints it: each chosen token's
probability, the end's, the whole sentence's, and below 0.5 the least likely token — in the JSON of
/api/translate and on the page, in English and Korean, at a desktop and a phone width.

Expected values: the translator's own probabilities (`Translator.translate`), the sentence's as their
float64 product computed here, and the line the command line prints (`qkv translate`), which the page
must repeat word for word. The "unsure" branch cannot be reached inside the translator's grammar (every
in-grammar sentence is translated with probability ≈ 1), so the page is given a translation whose
probabilities are lowered in flight (Playwright's route), and its line is checked against the CLI's
wording of the same numbers.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
from starlette.testclient import TestClient

from qkv import serve
from qkv.cli import main as cli_main
from qkv.explain import texts

from browser_support import browser_context  # noqa: F401  (fixture)
from test_serve import BASE, loaded  # noqa: F401  (fixture)
from test_serve_browser import Walk, server  # noqa: F401  (fixture)

TEXT = "my big dog saw the cat in the park"
SHOTS = Path(os.environ.get("QKV_SHOTS", "")) if os.environ.get("QKV_SHOTS") else None   # keep screenshots here
HANGUL = re.compile("[\uac00-\ud7a3]")


@pytest.fixture(scope="module")
def translator():
    loaded, why = serve.load_translator()
    assert loaded is not None, why
    return loaded


def cli_lines(capsys, text: str, to: str, lang: str) -> list[str]:
    """What `qkv translate TEXT --to TO --lang LANG` prints after the translation itself."""
    capsys.readouterr()
    assert cli_main(["translate", text, "--to", to, "--lang", lang]) == 0
    return capsys.readouterr().out.splitlines()[1:]


def test_the_json_carries_the_translators_probabilities(translator, loaded):  # noqa: F811
    with TestClient(serve.create_app(loaded, translator=translator), base_url=BASE) as client:
        for to in ("ko", "ja"):
            body = client.get("/api/translate", params={"text": TEXT, "to": to}).json()
            expected = translator.translate(TEXT, to)
            assert body["target"] == list(expected.target)
            np.testing.assert_array_equal(body["probabilities"], np.asarray(expected.probabilities, dtype=np.float64))
            assert body["end_probability"] == expected.end_probability
            product = math.prod([*map(float, expected.probabilities), expected.end_probability])   # float64, here
            assert body["sequence_probability"] == pytest.approx(product, rel=1e-12)
            assert body["unsure_below"] == 0.5
            i = int(np.argmin(expected.probabilities))
            assert body["least_likely"] == {"index": i, "token": expected.target[i],
                                            "probability": float(expected.probabilities[i])}


def test_least_likely_names_the_end_only_when_it_is_lower():
    from qkv.translator.model import Translation

    def made(probabilities, end):
        return Translation(["I"], ["a", "b"], "ko", np.zeros((1, 1, 2, 1)), np.asarray(probabilities), end)

    assert made([0.9, 0.4], 0.3).least_likely == (2, 0.3)          # the end, strictly lowest
    assert made([0.9, 0.3], 0.3).least_likely == (1, 0.3)          # a tie goes to the word
    assert made([0.2, 0.2], None).least_likely == (0, 0.2)          # no end; ties: the first word
    assert made([0.9, 0.4], 0.3).sequence_probability == pytest.approx(0.9 * 0.4 * 0.3, rel=1e-15)


def lowered(route):
    """The real /api/translate answer with the 4th word made unlikely (0.2) and the total recomputed."""
    response = route.fetch()
    body = response.json()
    body["probabilities"][3] = 0.2
    body["sequence_probability"] = math.prod(body["probabilities"]) * body["end_probability"]
    body["least_likely"] = {"index": 3, "token": body["target"][3], "probability": 0.2}
    route.fulfill(response=response, body=json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_the_page_shows_the_probabilities(browser_context, server, capsys, tmp_path, lang, width, height):  # noqa: F811
    base, _ = server
    walk = Walk(browser_context, base, width, height)
    page = walk.page
    page.goto(f"{base}/?tab=translate&source={TEXT.replace(' ', '+')}&to=ja&lang={lang}")
    walk.ready(tab="translate")
    page.wait_for_selector(".qkv-translate-pane .qkv-probs")
    shown = page.locator(".qkv-translate-pane .qkv-probs").text_content().replace("\u00a0", " ")   # word p: one line
    assert shown == cli_lines(capsys, TEXT, "ja", lang)[0]             # the command line's line, word for word
    assert page.locator(".qkv-translate-pane .qkv-unsure").count() == 0   # every word ≈ 1: nothing to name
    walk.no_sideways_scroll(f"translator probabilities ({lang}, {width} px)")
    if lang == "ko":
        assert HANGUL.search(shown)
    folder = SHOTS or tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"sureness-{lang}-{width}.png"), full_page=False)

    # an unsure translation: the least likely word is named, in the page's language
    page.route("**/api/translate?*", lowered)
    page.goto(f"{base}/?tab=translate&source={TEXT.replace(' ', '+')}&to=ko&lang={lang}")
    walk.ready(tab="translate")
    page.wait_for_selector(".qkv-translate-pane .qkv-unsure")
    target = page.locator(".qkv-translated").text_content().split(" → ")[1].split(" ")
    unsure = page.locator(".qkv-translate-pane .qkv-unsure").text_content()
    assert unsure == texts.text(lang, "cli.translate.unsure", word=target[3], p="0.200")
    probs = page.locator(".qkv-translate-pane .qkv-probs").text_content().replace("\u00a0", " ")
    assert f"{target[3]} 0.200" in probs
    walk.no_sideways_scroll(f"translator unsure ({lang}, {width} px)")
    page.screenshot(path=str(folder / f"sureness-unsure-{lang}-{width}.png"), full_page=False)
    assert walk.errors == []
    page.close()
