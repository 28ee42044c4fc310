"""Does a model's tokenizer read a text? Counted from the tokenizer's own output, never guessed from the text.

MiniLM's tokenizer (BERT uncased) strips accents by decomposing letters (NFD), which takes a Hangul syllable
apart into its jamo: "안녕" becomes "ᄋ ##ᅡ ##ᆫ ##ᄂ ##ᅧ ##ᆼ", and a syllable it has no jamo for becomes
[UNK]. Its attention over such pieces says little about the words. `reading` counts, among the pieces that
are not special tokens ([CLS], [SEP], …):

- unknown: the tokenizer's unknown token ([UNK], <unk>);
- split: a piece whose letters do not occur in the text as written (compared after the comparisons any
  tokenizer may make: case folded, accents dropped), e.g. a jamo cut out of a syllable, or a byte of a
  character a byte-level tokenizer split (decoded alone it is "�").

    >>> from qkv import models
    >>> r = reading("안녕 ok", models.load("minilm").tokenizer)
    >>> (r.pieces, r.unknown, r.split, r.hangul)
    (7, 0, 6, 2)
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

__all__ = ["Reading", "reading", "unseen", "specials", "READS_KOREAN"]

READS_KOREAN = "bert-base-multilingual-cased"
"""A BERT checkpoint whose vocabulary holds Hangul syllables and whose tokenizer keeps them whole (cased:
no accent stripping, no NFD): `qkv serve --model DIR` and `qkv.models.load(DIR)` read it (config.json,
model.safetensors, tokenizer.json)."""

_PREFIXES = ("##", "Ġ", "▁")       # WordPiece's continuation, byte-level BPE's and SentencePiece's space marks


@dataclass(frozen=True)
class Reading:
    """What a tokenizer made of a text: pieces (special tokens left out), unknown ones, split ones, the text's
    Hangul syllables, and up to 6 of the unread pieces as examples."""

    pieces: int
    unknown: int
    split: int
    hangul: int
    examples: tuple[str, ...]

    @property
    def unread(self) -> int:
        return self.unknown + self.split

    def describe(self) -> dict:
        return {"pieces": self.pieces, "unknown": self.unknown, "split": self.split, "hangul": self.hangul,
                "examples": list(self.examples)}


def _plain(text: str) -> str:
    """The text as a tokenizer may compare it: accents dropped (NFD, marks removed, NFC again), case folded."""
    decomposed = unicodedata.normalize("NFD", text)
    kept = "".join(c for c in decomposed if unicodedata.category(c) != "Mn")
    return unicodedata.normalize("NFC", kept).casefold()


def _is_hangul(c: str) -> bool:
    return "\uac00" <= c <= "\ud7a3"


def reading(text: str, tokenizer, *, encoding=None) -> Reading:
    """Count the pieces of ``text`` that ``tokenizer`` (a `tokenizers.Tokenizer`) does not read (see the module).
    encoding: ``tokenizer.encode(text)`` when the caller has it already (the text checked is the text read)."""
    encoding = tokenizer.encode(text) if encoding is None else encoding
    unk = getattr(getattr(tokenizer, "model", None), "unk_token", None)
    byte_level = "ByteLevel" in repr(getattr(tokenizer, "pre_tokenizer", None))
    plain = _plain(text)
    pieces = unknown = split = 0
    examples: list[str] = []
    for token, token_id, special in zip(encoding.tokens, encoding.ids, encoding.special_tokens_mask):
        if special:
            continue
        pieces += 1
        if unk is not None and token == unk:
            unknown += 1
            examples.append(token)
            continue
        piece = tokenizer.decode([token_id], skip_special_tokens=False) if byte_level else token
        for prefix in _PREFIXES:
            if piece.startswith(prefix) and len(piece) > len(prefix):
                piece = piece[len(prefix):]
        piece = piece.strip()
        if piece and (_plain(piece) not in plain or "\ufffd" in piece):
            split += 1
            examples.append(token)
    return Reading(pieces, unknown, split, sum(map(_is_hangul, text)), tuple(dict.fromkeys(examples))[:6])


def specials(encoding) -> tuple[str, ...]:
    """The special tokens a tokenizer's encoding of a text holds, in order — what the tokenizer adds of its own:
    [CLS] [SEP] for MiniLM, <s> for Llama's, none for GPT-2's or a BERT folder whose tokenizer adds none."""
    return tuple(token for token, special in zip(encoding.tokens, encoding.special_tokens_mask) if special)


def unseen(text: str, tokenizer, *, encoding=None) -> tuple[str, ...] | None:
    """The characters of ``text`` (as U+XXXX, up to 6) when ``tokenizer`` makes nothing of it but its own special
    tokens — BERT's normalizer drops control and format characters (U+200B zero width space, U+FEFF, U+0000), so
    MiniLM sees [CLS] [SEP] alone, as for an empty text; None when it makes at least one piece of the text.
    encoding: ``tokenizer.encode(text)`` when the caller has it already."""
    encoding = tokenizer.encode(text) if encoding is None else encoding
    if any(not special for special in encoding.special_tokens_mask):
        return None
    return tuple(dict.fromkeys(f"U+{ord(c):04X}" for c in text))[:6]
