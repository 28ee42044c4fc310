"""A synthetic parallel corpus: English (SVO) → Korean and Japanese (SOV, with particles).

A small grammar generates every sentence; a lexicon gives each word its Korean and Japanese
forms. The target order differs from the source order, so a model must learn to reorder:

    English   subject  verb  object  [place]           I  love  you
    Korean    subject+는  [place+에서]  object+를  verb    나는  너를  사랑해
    Japanese  subject+は  [place+で]    object+を  verb    私は  あなたを  愛してる

A noun phrase is a pronoun, or [the | my | your] [adjective] noun ("my big dog" → "내 큰 개" /
"私の 大きい 犬"). Verbs come in present and past ("loves", "saw"); English adds -s for a
third-person subject. Japanese marks some objects with に or が instead of を (電話する, 好きだ), Korean
with 에게 instead of 을/를 (전화해); 은/는 and 을/를 follow the noun's last syllable.

Held-out compositions: a sentence's *composition* is its (subject head, verb, object head)
triple, e.g. (dog, see, teacher). About 12 % of the triples never occur in training (chosen
from the seed); `held_out_sentences` draws test sentences only from those, so a model that
translates them has composed words it only ever saw in other combinations.

Tokens are words: English words as written (lower case, "I"), target words with their particle
attached ("너를" is one token), as in seed 001 (私は is one decoder token).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterator, NamedTuple

import numpy as np

from ..errors import InputError

__all__ = ["parse", "OutsideGrammar", "Pronoun", "Noun", "Verb", "Place", "PRONOUNS", "NOUNS", "VERBS", "PLACES", "ADJECTIVES",
           "DETERMINERS", "Sentence", "sample_sentence", "is_held_out", "training_sentences",
           "held_out_sentences", "source_words", "target_words", "LANGUAGES"]

LANGUAGES = ("ko", "ja")


class Pronoun(NamedTuple):
    subject: str          # English subject form
    object: str           # English object form
    third_singular: bool  # takes "loves"
    ko: str
    ja: str


class Noun(NamedTuple):
    en: str
    ko: str
    ja: str


class Verb(NamedTuple):
    base: str             # "love", "wait for"
    third: str            # "loves", "waits for"
    past: str             # "loved", "waited for"
    ko: str               # present, casual: 사랑해
    ko_past: str          # 사랑했어
    ja: str               # 愛してる
    ja_past: str          # 愛してた
    ja_particle: str      # the particle Japanese puts on the object: を, に or が
    ko_particle: str = "object"  # Korean: 을/를 by the last syllable, or 에게


class Place(NamedTuple):
    en: str               # "in the park"
    ko: str               # 공원에서
    ja: str               # 公園で


PRONOUNS = (
    Pronoun("I", "me", False, "나", "私"),
    Pronoun("you", "you", False, "너", "あなた"),
    Pronoun("he", "him", True, "그", "彼"),
    Pronoun("she", "her", True, "그녀", "彼女"),
    Pronoun("we", "us", False, "우리", "私たち"),
    Pronoun("they", "them", False, "그들", "彼ら"),
)

NOUNS = (
    Noun("cat", "고양이", "猫"),
    Noun("dog", "개", "犬"),
    Noun("teacher", "선생님", "先生"),
    Noun("friend", "친구", "友達"),
    Noun("child", "아이", "子供"),
    Noun("horse", "말", "馬"),
    Noun("bird", "새", "鳥"),
    Noun("king", "왕", "王"),
)

# English determiner → Korean, Japanese words before the noun ("" = nothing).
DETERMINERS = {"the": ("", ""), "my": ("내", "私の"), "your": ("너의", "あなたの")}

ADJECTIVES = {"big": ("큰", "大きい"), "small": ("작은", "小さい"), "kind": ("친절한", "優しい"),
              "happy": ("행복한", "幸せな")}

VERBS = (
    Verb("love", "loves", "loved", "사랑해", "사랑했어", "愛してる", "愛してた", "を"),
    Verb("see", "sees", "saw", "봐", "봤어", "見る", "見た", "を"),
    Verb("like", "likes", "liked", "좋아해", "좋아했어", "好きだ", "好きだった", "が"),
    Verb("help", "helps", "helped", "도와", "도왔어", "助ける", "助けた", "を"),
    Verb("know", "knows", "knew", "알아", "알았어", "知ってる", "知ってた", "を"),
    Verb("phone", "phones", "phoned", "전화해", "전화했어", "電話する", "電話した", "に", "에게"),
    Verb("call", "calls", "called", "불러", "불렀어", "呼ぶ", "呼んだ", "を"),
    Verb("wait for", "waits for", "waited for", "기다려", "기다렸어", "待つ", "待った", "を"),
)

PLACES = (
    Place("in the park", "공원에서", "公園で"),
    Place("at home", "집에서", "家で"),
    Place("in the garden", "정원에서", "庭で"),
    Place("in the city", "도시에서", "町で"),
)

# Triples always kept in training, whatever the seed: the examples the docs show.
_SHOWCASE = {("I", "love", "you")}
_HELD_OUT_FRACTION = 0.12


@dataclass(frozen=True)
class Phrase:
    """A noun phrase: a pronoun, or determiner + optional adjective + noun."""

    pronoun: Pronoun | None = None
    determiner: str = "the"
    adjective: str | None = None
    noun: Noun | None = None

    @property
    def head(self) -> str:
        return self.pronoun.subject if self.pronoun else self.noun.en

    def english(self, role: str) -> list[str]:
        if self.pronoun:
            return [self.pronoun.subject if role == "subject" else self.pronoun.object]
        return [self.determiner] + ([self.adjective] if self.adjective else []) + [self.noun.en]

    def target(self, lang: str, particle: str) -> list[str]:
        """Words in ``lang`` with the particle attached to the last one."""
        i = LANGUAGES.index(lang)
        if self.pronoun:
            words = [self.pronoun.ko if lang == "ko" else self.pronoun.ja]
        else:
            words = [w for w in (DETERMINERS[self.determiner][i],
                                 ADJECTIVES[self.adjective][i] if self.adjective else "", self.noun[1 + i]) if w]
        return words[:-1] + [words[-1] + _particle(words[-1], lang, particle)]


@dataclass(frozen=True)
class Sentence:
    """One sentence of the grammar and its translations."""

    subject: Phrase
    verb: Verb
    object: Phrase
    past: bool = False
    place: Place | None = None

    @property
    def composition(self) -> tuple[str, str, str]:
        """(subject head, verb, object head): what the held-out split is made of."""
        return (self.subject.head, self.verb.base, self.object.head)

    def english(self) -> list[str]:
        third = self.subject.pronoun.third_singular if self.subject.pronoun else True
        verb = self.verb.past if self.past else (self.verb.third if third else self.verb.base)
        place = self.place.en.split() if self.place else []
        return self.subject.english("subject") + verb.split() + self.object.english("object") + place

    def target(self, lang: str) -> list[str]:
        if lang not in LANGUAGES:
            raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
        v = self.verb
        verb = (v.ko_past if self.past else v.ko) if lang == "ko" else (v.ja_past if self.past else v.ja)
        place = [self.place.ko if lang == "ko" else self.place.ja] if self.place else []
        obj = v.ko_particle if lang == "ko" else v.ja_particle
        return self.subject.target(lang, "topic") + place + self.object.target(lang, obj) + [verb]


def _particle(word: str, lang: str, kind: str) -> str:
    """The particle that follows ``word``: topic 은/는 は, object 을/를 を (or Japanese に, が)."""
    if lang == "ja" or kind not in ("topic", "object"):
        return {"topic": "は", "object": "を"}.get(kind, kind)
    last = ord(word[-1]) - 0xAC00
    batchim = 0 <= last < 11172 and last % 28 != 0        # the syllable ends in a consonant
    return {"topic": ("는", "은"), "object": ("를", "을")}[kind][batchim]


# --------------------------------------------------------------------------- sampling
def _phrase(rng: np.random.Generator) -> Phrase:
    if rng.random() < 0.35:
        return Phrase(pronoun=PRONOUNS[rng.integers(len(PRONOUNS))])
    adjectives = list(ADJECTIVES)
    adjective = adjectives[rng.integers(len(adjectives))] if rng.random() < 0.5 else None
    determiners = list(DETERMINERS)
    return Phrase(determiner=determiners[rng.integers(len(determiners))], adjective=adjective,
                  noun=NOUNS[rng.integers(len(NOUNS))])


def sample_sentence(rng: np.random.Generator) -> Sentence:
    """One sentence drawn from the grammar (any composition)."""
    subject, verb, obj = _phrase(rng), VERBS[rng.integers(len(VERBS))], _phrase(rng)
    place = PLACES[rng.integers(len(PLACES))] if rng.random() < 0.3 else None
    return Sentence(subject, verb, obj, past=bool(rng.random() < 0.5), place=place)


def is_held_out(composition: tuple[str, str, str], seed: int = 0) -> bool:
    """Whether the (subject head, verb, object head) triple is reserved for testing."""
    if composition in _SHOWCASE:
        return False
    digest = hashlib.sha256(f"{seed}|{'|'.join(composition)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < _HELD_OUT_FRACTION


def training_sentences(rng: np.random.Generator, *, split_seed: int = 0) -> Iterator[Sentence]:
    """An endless stream of sentences whose composition is not held out."""
    while True:
        sentence = sample_sentence(rng)
        if not is_held_out(sentence.composition, split_seed):
            yield sentence


def held_out_sentences(n: int, *, seed: int = 1234, split_seed: int = 0) -> list[Sentence]:
    """n distinct sentences whose composition never occurs in training."""
    rng = np.random.default_rng(seed)
    found: dict[tuple[str, ...], Sentence] = {}
    while len(found) < n:
        sentence = sample_sentence(rng)
        if is_held_out(sentence.composition, split_seed):
            found.setdefault(tuple(sentence.english()), sentence)
    return list(found.values())


# --------------------------------------------------------------------------- vocabularies
def source_words() -> list[str]:
    """Every English word the grammar uses, sorted."""
    words = {p.subject for p in PRONOUNS} | {p.object for p in PRONOUNS} | {n.en for n in NOUNS}
    words |= set(DETERMINERS) | set(ADJECTIVES)
    for v in VERBS:
        words |= set(v.base.split()) | set(v.third.split()) | set(v.past.split())
    for p in PLACES:
        words |= set(p.en.split())
    return sorted(words)


def target_words() -> list[str]:
    """Every Korean and Japanese word the grammar can produce, sorted."""
    words: set[str] = set()
    phrases = [Phrase(pronoun=p) for p in PRONOUNS] + [
        Phrase(determiner=d, adjective=a, noun=n) for d in DETERMINERS for a in (None, *ADJECTIVES) for n in NOUNS]
    for lang in LANGUAGES:
        particles = ["topic", "object", "에게"] if lang == "ko" else ["topic", "を", "に", "が"]
        for phrase in phrases:
            for particle in particles:
                words |= set(phrase.target(lang, particle))
        for v in VERBS:
            words |= {v.ko, v.ko_past} if lang == "ko" else {v.ja, v.ja_past}
        for p in PLACES:
            words.add(p.ko if lang == "ko" else p.ja)
    return sorted(words)


# --------------------------------------------------------------------------- parsing
class OutsideGrammar(InputError):
    """English words (all known to the translator) that the grammar cannot parse.

    ``start``/``stop``: the span of words (indices into the tokenized text, stop exclusive) that is
    outside the grammar — where the parse failed; start == stop == len(words) when the sentence
    stops too early. The message (``key`` error.translator.grammar.*, EN and KO) names that part
    and what the grammar expects there.
    """

    def __init__(self, key: str, start: int, stop: int, **values):
        from ..explain import texts

        self.start, self.stop = start, stop
        super().__init__(texts.text("en", f"error.translator.grammar.{key}", **values), field="TEXT",
                         key=f"error.translator.grammar.{key}", values=values)


def _said(words: list[str]) -> str:
    return " ".join(words)


def _phrase_starts(role: str) -> str:
    pronouns = [p.subject if role == "subject" else p.object for p in PRONOUNS]
    return ", ".join(pronouns + [f"{d} …" for d in DETERMINERS])


def parse(words: list[str]) -> Sentence:
    """The grammar's Sentence for a list of English words (as `qkv.translator.model.tokenize` gives
    them), or `OutsideGrammar` naming the first part it cannot parse.

    The grammar: subject, verb, object, then nothing or one place. A noun phrase is a pronoun in
    its subject or object form, or the|my|your [adjective] noun; the verb is past, or present
    agreeing with the subject (third-person singular: "loves"). Every sentence `sample_sentence`
    draws parses back to itself, and nothing else parses.
    """
    words = list(words)
    n = len(words)

    def phrase(i: int, role: str) -> tuple[Phrase, int]:
        before = _said(words[:i])
        if i == n:
            raise OutsideGrammar("stops", n, n, before=before, expected=_phrase_starts(role))
        word = words[i]
        for p in PRONOUNS:
            if word == (p.subject if role == "subject" else p.object):
                return Phrase(pronoun=p), i + 1
        for p in PRONOUNS:
            if word in (p.subject, p.object):          # the other form: "me love you", "I love I"
                right = p.subject if role == "subject" else p.object
                raise OutsideGrammar(f"{role}_form", i, i + 1, part=word, right=right)
        if word in ADJECTIVES or word in {x.en for x in NOUNS}:
            raise OutsideGrammar("determiner", i, i + 1, part=word, example=f"the {word}")
        if word not in DETERMINERS:
            if i == 0:
                raise OutsideGrammar("start", 0, 1, part=word, expected=_phrase_starts("subject"))
            raise OutsideGrammar("expected", i, i + 1, part=word, before=before, expected=_phrase_starts(role))
        nouns = {x.en: x for x in NOUNS}
        adjective = None
        j = i + 1
        if j < n and words[j] in ADJECTIVES:
            adjective, j = words[j], j + 1
        expected = ", ".join(([] if adjective else list(ADJECTIVES)) + list(nouns))
        if j == n:
            raise OutsideGrammar("stops", n, n, before=_said(words[:j]), expected=expected)
        if words[j] not in nouns:
            raise OutsideGrammar("expected", j, j + 1, part=words[j], before=_said(words[:j]), expected=expected)
        return Phrase(determiner=word, adjective=adjective, noun=nouns[words[j]]), j + 1

    subject, i = phrase(0, "subject")
    # the verb: its form must agree with the subject unless it is past
    third = subject.pronoun.third_singular if subject.pronoun else True
    agreeing = [(v, False) for v in VERBS] + [(v, True) for v in VERBS]

    def form(v: Verb, past: bool) -> list[str]:
        return (v.past if past else v.third if third else v.base).split()

    expected_verbs = ", ".join(_said(form(v, past)) for v, past in agreeing)
    if i == n:
        raise OutsideGrammar("stops", n, n, before=_said(words), expected=expected_verbs)
    verb = past = None
    for v in VERBS:
        for is_past, written in ((True, v.past), (False, v.third), (False, v.base)):
            parts = written.split()
            if words[i] != parts[0]:
                continue
            if words[i: i + len(parts)] != parts:           # "waited" without "for"
                if i + 1 == n:
                    raise OutsideGrammar("stops", n, n, before=_said(words), expected=_said(parts[1:]))
                raise OutsideGrammar("expected", i + 1, i + 2, part=words[i + 1], before=_said(words[:i + 1]),
                                     expected=_said(parts[1:]))
            if not is_past and written != (v.third if third else v.base):
                raise OutsideGrammar("agreement", i, i + len(parts), part=written, subject=_said(words[:i]),
                                     right=v.third if third else v.base, past=v.past)
            verb, past, i = v, is_past, i + len(parts)
            break
        if verb is not None:
            break
    if verb is None:
        raise OutsideGrammar("expected", i, i + 1, part=words[i], before=_said(words[:i]), expected=expected_verbs)
    obj, i = phrase(i, "object")
    place = None
    if i < n:
        for p in PLACES:
            parts = p.en.split()
            if words[i: i + len(parts)] == parts:
                place = p
                break
        if place is None:
            raise OutsideGrammar("place", i, n, part=_said(words[i:]), before=_said(obj.english("object")),
                                 places=", ".join(p.en for p in PLACES))
        i += len(place.en.split())
        if i < n:
            raise OutsideGrammar("after_place", i, n, part=_said(words[i:]), before=place.en)
    return Sentence(subject, verb, obj, past=past, place=place)
