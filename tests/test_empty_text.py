"""An empty or whitespace-only text is refused by every command that reads one into a model (issue 29's
leftovers: `qkv inspect ""` printed the attention of [CLS] and [SEP] alone and said nothing). The refusal is
one `qkv: error: TEXT: …` line, exit 2, naming what was wrong (empty, or only spaces) in the reader's
language, as `qkv translate ""` and serve's page already refused it; `qkv embed` names which text."""

from __future__ import annotations

import pytest

from qkv.cli import main

COMMANDS = {"inspect": ["--layer", "0", "--head", "0"], "heads": [], "embed": []}
SAID = {("en", ""): "TEXT: the text is empty", ("en", "blank"): "TEXT: the text holds only spaces",
        ("ko", ""): "TEXT: 텍스트가 비어 있다", ("ko", "blank"): "TEXT: 텍스트에 공백만 있다"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("text", ["", "   ", "\t \n"])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_an_empty_text_is_refused_with_what_was_wrong(command, text, lang, capsys):
    assert main([command, text, *COMMANDS[command], "--lang", lang]) == 2
    captured = capsys.readouterr()
    said = SAID[lang, "blank" if text else ""]
    assert captured.out == "" and said in captured.err, captured.err
    assert captured.err.count("\n") == 1 and captured.err.startswith("qkv: error:" if lang == "en" else "qkv: 오류:")


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_embed_names_the_empty_text_among_several(lang, capsys):
    assert main(["embed", "The cat sat.", "A dog.", " ", "--lang", lang]) == 2
    err = capsys.readouterr().err
    assert ("TEXT #2: the text holds only spaces" if lang == "en" else "TEXT #2: 텍스트에 공백만 있다") in err, err


def test_a_text_with_words_still_runs(capsys):
    assert main(["inspect", " cat ", "--layer", "0", "--head", "0"]) == 0
    assert "cat" in capsys.readouterr().out
