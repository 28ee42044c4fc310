"""The tokens a reader sees for a model: the text each piece stands for (" cat"), never a tokenizer's stand-in
letters (byte-level BPE's "Ġcat", "ìķĪ" for 안; SentencePiece's "▁cat"); `--query cat` finds " cat".

Expected values come from the text itself (the pieces of a byte-level tokenizer put together are the text typed)
and from the tokenizers library's own decoding, never from qkv's output. The `qkv inspect` case on a built GPT-2 folder is in test_models_hf (it needs
transformers to build the folder)."""

from __future__ import annotations

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from qkv.models.decoder import _byte_of_stand_in, find_token, piece_text, query_index

from model_fixtures import train_tokenizer

TEXT = "The cat sat on the mat."


def _pieces(tokenizer, text):
    return [piece_text(tokenizer, i) for i in tokenizer.encode(text).ids]


def test_byte_level_pieces_are_the_text_they_stand_for():
    tokenizer = train_tokenizer(bos=False)
    raw = tokenizer.encode(TEXT).tokens
    assert any(token.startswith("Ġ") for token in raw)             # the stand-in letters this test is about
    pieces = _pieces(tokenizer, TEXT)
    assert "".join(pieces) == TEXT and len(pieces) == len(raw)
    assert not any("Ġ" in piece for piece in pieces)
    assert " cat" in pieces


def test_byte_level_pieces_of_a_split_character_are_its_bytes():
    tokenizer = train_tokenizer(bos=False)
    rare = "뷁똠"                    # two syllables no token of the trained vocabulary holds whole
    assert not any(c in tokenizer.decode([i]) for i in range(tokenizer.get_vocab_size()) for c in rare)
    pieces = _pieces(tokenizer, rare)
    assert pieces == [f"<0x{b:02X}>" for b in rare.encode()]          # one byte a piece, not "ë", "·", …
    assert tokenizer.decode(tokenizer.encode(rare).ids) == rare        # together they are the text again


def test_a_control_character_is_named_by_its_byte():
    tokenizer = train_tokenizer(bos=False)
    pieces = _pieces(tokenizer, "cat\nsat")
    assert "<0x0A>" in pieces and not any("\n" in piece or "Ċ" in piece for piece in pieces)


def test_the_stand_in_letters_are_the_tokenizers_own():
    """Every byte a UTF-8 text can hold (all but C0, C1, F5–FF), read back from the letters the tokenizers
    library's ByteLevel pre-tokenizer writes for it."""
    letters = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    seen = {}
    for code in [*range(0x00, 0x800, 1), *range(0x800, 0x10000, 64), *range(0x10000, 0x110000, 4096)]:
        char = chr(code)
        if 0xD800 <= code <= 0xDFFF:
            continue
        (written, _), = letters.pre_tokenize_str(char)
        seen.update(zip(written, char.encode()))
    assert len(seen) == 256 - 13
    assert all(_byte_of_stand_in()[letter] == byte for letter, byte in seen.items())


def test_special_tokens_are_shown_as_they_are():
    tokenizer = train_tokenizer(bos=True)
    pieces = _pieces(tokenizer, TEXT)
    assert pieces[0] == "<s>" and "".join(pieces[1:]) == TEXT


def test_sentencepiece_word_marks_are_spaces():
    tokenizer = Tokenizer(models.WordLevel({"▁the": 0, "▁cat": 1, "<unk>": 2}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    assert tokenizer.encode("the cat").tokens == ["▁the", "▁cat"]
    assert _pieces(tokenizer, "the cat") == [" the", " cat"]


def test_wordpiece_keeps_its_continuation_mark():
    tokenizer = Tokenizer(models.WordPiece({"[UNK]": 0, "play": 1, "##ing": 2}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    assert _pieces(tokenizer, "playing") == ["play", "##ing"]


def test_an_id_outside_the_vocabulary_is_named_by_its_number():
    tokenizer = train_tokenizer(bos=False)
    assert piece_text(tokenizer, 10 ** 6) == "<1000000>"


@pytest.mark.parametrize("typed, row", [("cat", 1), (" cat", 1), ("The", 0), ("the", 4), ("CAT", 1), ("3", 3)])
def test_a_query_is_found_as_typed_or_after_its_leading_space(typed, row):
    tokens = ["The", " cat", " sat", " on", " the", " mat", "."]
    assert query_index(tokens, typed) == row


def test_a_word_that_is_no_token_is_not_found():
    assert find_token(["The", " cat"], "dog") is None
    assert find_token(["The", " cat"], "ca") is None
