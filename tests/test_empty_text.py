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


# Characters MiniLM's tokenizer (BERT's normalizer) drops: a zero width space, a byte order mark, NUL and another
# control character. Not whitespace to str.strip(), so the blank check let them through and `qkv heads "\u200b"`
# showed "6 layers × 12 heads on 2 tokens", [CLS] and [SEP] alone (found in review, 7 December).
DROPPED = ["\u200b", "\ufeff", "\x00", "\u200b\x07\ufeff"]
UNSEEN = {"en": "minilm reads none of this text's characters", "ko": "minilm 모델은 이 텍스트의 문자"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("text", DROPPED)
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_text_the_tokenizer_makes_nothing_of_is_refused(command, text, lang, capsys):
    assert main([command, text, *COMMANDS[command], "--lang", lang]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert f"TEXT: {UNSEEN[lang]}" in captured.err and f"U+{ord(text[0]):04X}" in captured.err, captured.err


def test_embed_names_the_text_the_tokenizer_makes_nothing_of(capsys):
    assert main(["embed", "The cat sat.", "\u200b", "A dog."]) == 2
    assert f"TEXT #1: {UNSEEN['en']} (U+200B)" in capsys.readouterr().err


def test_a_word_beside_a_dropped_character_still_runs(capsys):
    assert main(["heads", "\u200bcat\ufeff"]) == 0
    assert "on 3 tokens" in capsys.readouterr().out          # [CLS] cat [SEP]: the tokenizer's own count


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_serve_refuses_a_text_the_tokenizer_makes_nothing_of(lang):
    """serve's page refused "" and "   " (400) but ran "\u200b" on [CLS] [SEP] alone."""
    from qkv import models
    from qkv.serve.app import ApiError, Limits, ModelEntry

    entry = ModelEntry("minilm", models.load("minilm"))
    with pytest.raises(ApiError) as caught:
        entry.check_text("\u200b\ufeff", Limits(), lang)
    assert caught.value.status == 400 and caught.value.field == "text"
    said = {"en": "the model reads none of these characters (U+200B U+FEFF)", "ko": "모델이 이 문자(U+200B U+FEFF)를"}
    assert said[lang] in caught.value.problem, caught.value.problem
    entry.check_text("\u200bcat", Limits(), lang)            # a word the tokenizer reads: no refusal
