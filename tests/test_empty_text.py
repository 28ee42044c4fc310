"""An empty or whitespace-only text is refused by every command that reads one into a model (issue 29's
leftovers: `qkv inspect ""` printed the attention of [CLS] and [SEP] alone and said nothing). The refusal is
one `qkv: error: TEXT: …` line, exit 2, naming what was wrong (empty, or only spaces) in the reader's
language, as `qkv translate ""` and serve's page already refused it; `qkv embed` names which text."""

from __future__ import annotations

import pytest

from qkv.cli import main

COMMANDS = {"inspect": ["--layer", "0", "--head", "0"], "heads": [], "embed": []}
SAID = {("en", ""): "TEXT: the text is empty", ("en", "blank"): "TEXT: the text holds only spaces",
        ("ko", ""): "텍스트: 텍스트가 비어 있다", ("ko", "blank"): "텍스트: 텍스트에 공백만 있다"}


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
    assert ("TEXT #2: the text holds only spaces" if lang == "en" else "텍스트 #2: 텍스트에 공백만 있다") in err, err


def test_a_text_with_words_still_runs(capsys):
    assert main(["inspect", " cat ", "--layer", "0", "--head", "0"]) == 0
    assert "cat" in capsys.readouterr().out


# Characters MiniLM's tokenizer (BERT's normalizer) drops: a zero width space, a byte order mark, NUL and another
# control character. Not whitespace to str.strip(), so the blank check let them through and `qkv heads "\u200b"`
# showed "6 layers × 12 heads on 2 tokens", [CLS] and [SEP] alone (found in review, 7 December).
DROPPED = ["\u200b", "\ufeff", "\x00", "\u200b\x07\ufeff"]
UNSEEN = {"en": "minilm reads none of this text's characters", "ko": "minilm 모델은 이 텍스트의 문자"}
FIELD = {"en": "TEXT", "ko": "텍스트"}     # the placeholder, as each language's usage line shows it


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("text", DROPPED)
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_text_the_tokenizer_makes_nothing_of_is_refused(command, text, lang, capsys):
    assert main([command, text, *COMMANDS[command], "--lang", lang]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert f"{FIELD[lang]}: {UNSEEN[lang]}" in captured.err and f"U+{ord(text[0]):04X}" in captured.err, captured.err


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


# ------------------------------------------------------------------ what the refusal says the model would see
# The refusal said "only its own special tokens such as [CLS] and [SEP]" for every model (review, 7 December): a
# BERT folder whose tokenizer adds none, GPT-2's and Llama's (<s>) tokenizers do not add those. It names what the
# tokenizer really adds to this text, read from its own encoding, or says nothing of special tokens.
@pytest.fixture(scope="module")
def tiny():
    """Tiny random models saved locally by transformers (tests/model_fixtures.py; nothing is downloaded): a BERT
    whose tokenizer adds no special tokens, GPT-2 (none) and Llama (<s>)."""
    from model_fixtures import built

    return {name: str(built(name)) for name in ("bert", "gpt2", "llama-mqa")}


SPECIALS = {"minilm": "[CLS] [SEP]", "bert": None, "gpt2": None, "llama-mqa": "<s>"}      # what each adds to ""
SEEN = {("en", True): "the model would see none of your words, only its own special tokens {specials}; type",
        ("en", False): "the model would see none of your words; type",
        ("ko", True): "모델은 입력한 단어를 하나도 보지 못하고 자신의 특수 토큰 {specials}만 보게 된다. 문장을",
        ("ko", False): "모델은 입력한 단어를 하나도 보지 못한다. 문장을"}


# U+200B on MiniLM only: the tiny models' byte-level tokenizers read it as three bytes, pieces of the text
@pytest.mark.parametrize("model, text", [(m, t) for m in sorted(SPECIALS) for t in ("", "  ")] + [("minilm", "\u200b")])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_refusal_names_only_the_special_tokens_the_tokenizer_adds(tiny, model, text, lang, capsys):
    from tokenizers import Tokenizer

    from qkv import models

    where = "minilm" if model == "minilm" else tiny[model]
    # the expectation from the tokenizer itself, not from qkv's reading of it: special tokens are named when they
    # are all the model would see ("" on MiniLM: [CLS] [SEP]; "  " on Llama's is <s> and two spaces: not named)
    tokenizer = models.load("minilm").tokenizer if model == "minilm" else Tokenizer.from_file(f"{where}/tokenizer.json")
    encoding = tokenizer.encode(text)
    if text == "":
        assert " ".join(encoding.tokens) == (SPECIALS[model] or ""), encoding.tokens
    specials = " ".join(encoding.tokens) if encoding.tokens and all(encoding.special_tokens_mask) else None
    assert main(["heads", text, "--model", where, "--lang", lang]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert SEEN[lang, specials is not None].format(specials=specials) in err, err
    for other in ("[CLS]", "[SEP]", "<s>"):
        assert other not in err or (specials and other in specials), err


def test_embed_names_the_special_tokens_of_the_model_it_was_given(tiny, capsys):
    # embed refused an empty text before loading the model and so could not know its tokenizer: now one check
    assert main(["embed", "the cat", "", "--model", tiny["bert"]]) == 2
    err = capsys.readouterr().err
    assert "TEXT #1: the text is empty: the model would see none of your words; type" in err, err
    assert main(["embed", "the cat", "", "--model", "minilm"]) == 2
    assert "only its own special tokens [CLS] [SEP]; type" in capsys.readouterr().err


# ------------------------------------------------------------------ one encoding, checked and read
class _Counting:
    """A tokenizer that counts its encode calls and otherwise is the real one."""

    def __init__(self, real):
        self.real, self.calls = real, []

    def encode(self, text, *args, **kwargs):
        self.calls.append(text)
        return self.real.encode(text, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.mark.parametrize("text", ["The cat sat.", "안녕 고양이"])
def test_the_command_line_encodes_a_text_once_for_its_checks_and_its_note(text):
    """require_text encoded the text, then reading_note encoded it again: what was checked was not, by
    construction, what the note read. Now the note reads the encoding the check made."""
    import types

    from qkv import models
    from qkv.commands._options import reading_note, require_text, words

    minilm = models.load("minilm")
    counting = _Counting(minilm.tokenizer)
    model = types.SimpleNamespace(tokenizer=counting, name="minilm")
    t = words("en")
    encoding = require_text(text, t, model=model)
    note = reading_note(model, text, t, encodings=encoding)
    assert counting.calls == [text]
    assert (note is not None) == (text != "The cat sat."), note            # MiniLM takes Hangul apart: said
    several = [text, "A dog."]
    counting.calls.clear()
    encodings = [require_text(one, t, model=model, number=n) for n, one in enumerate(several)]
    reading_note(model, several, t, shows="embedding", encodings=encodings)
    assert counting.calls == several


def test_serve_encodes_a_text_once_for_its_checks_its_count_and_its_reading():
    """check_text encoded the text for `unseen`, again to count it, and `reading` a third time."""
    from qkv import models
    from qkv.serve.app import Limits, ModelEntry

    entry = ModelEntry("minilm", models.load("minilm"))
    assert entry.max_tokens is not None                   # the count is taken
    entry._counter = counting = _Counting(entry._counter)
    text = "안녕 cat"
    encoding = entry.check_text(text, Limits(), "en")
    reading = entry.reading(text, encoding)
    assert counting.calls == [text]
    assert reading["hangul"] == 2 and reading["unknown"] + reading["split"] > 0, reading
