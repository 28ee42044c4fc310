"""A synthetic parallel corpus: English (SVO) → Korean and Japanese (SOV, with particles).

A small grammar generates every sentence; a lexicon gives each word its Korean and Japanese
forms. The target order differs from the source order, so a model must learn to reorder:

    English   subject  verb  object  [place]           I  love  you
    Korean    subject+는  [place+에서]  object+를  verb    나는  너를  사랑해
    Japanese  subject+は  [place+で]    object+を  verb    私は  あなたを  愛してる

A noun phrase is a pronoun, [the | my | your] [adjective] noun ("my big dog" → "내 큰 개" /
"私の 大きい 犬"), or a mass noun alone ("machine learning" → "기계 학습" / "機械 学習"). Verbs come
in present and past ("loves", "saw"); English adds -s for a third-person subject. Japanese marks
some objects with に or が instead of を (電話する, 好きだ), Korean with 에게 instead of 을/를
(전화해); 은/는 and 을/를 follow the noun's last syllable. One verb phrase takes no object and no
place: "have a lot" (나는 많아 / 私は たくさん 持ってる).

A second kind of sentence is a choice question between two different nouns without a determiner, "cash or
credit card" (the question mark is punctuation: `tokenize` drops it) → "현금이에요? 신용카드예요?" /
"現金ですか？ クレジットカードですか？" (polite, as a shop assistant asks; 이에요 after a final
consonant, 예요 after a vowel).

The posts' own English sentences are in the grammar: "I love machine learning" (the post
“도해와 최소 사례로 직관적으로 이해하는 Self-attention, Cross-attention, Multi-head Attention”), "I
have a lot" and "Cash or credit card?" (the post “어텐션이 조모임이라면”); see `POST_SENTENCES`.

Held-out compositions: a sentence's *composition* is its (subject head, verb, object head)
triple, e.g. (dog, see, teacher) — (first, "or", second) for a choice, (subject, "have a lot", "")
for the verb without an object. About 12 % of the triples never occur in training (chosen from
the seed); `held_out_sentences` draws test sentences only from those, so a model that translates
them has composed words it only ever saw in other combinations. The posts' sentences and the
docs' example are always in training (`_SHOWCASE`).

Tokens are words: English words as written (lower case, "I"), target words with their particle
attached ("너를" is one token), as in the post's cross-attention (私は is one decoder token).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterator, NamedTuple

import numpy as np

from ..errors import InputError

__all__ = ["parse", "OutsideGrammar", "Pronoun", "Noun", "Verb", "Place", "PRONOUNS", "NOUNS", "MASS_NOUNS", "VERBS",
           "PLACES", "ADJECTIVES", "DETERMINERS", "POST_SENTENCES", "Phrase", "Sentence", "Choice", "sample_sentence",
           "is_held_out", "training_sentences", "held_out_sentences", "source_words", "target_words", "LANGUAGES"]

LANGUAGES = ("ko", "ja")


class Pronoun(NamedTuple):
    subject: str          # English subject form
    object: str           # English object form
    third_singular: bool  # takes "loves"
    ko: str
    ja: str


class Noun(NamedTuple):
    en: str               # one word, or two ("credit card", "machine learning")
    ko: str               # one token, or two ("기계 학습"): the particle goes on the last
    ja: str


class Verb(NamedTuple):
    base: str             # "love", "wait for"
    third: str            # "loves", "waits for"
    past: str             # "loved", "waited for"
    ko: str               # present, casual: 사랑해
    ko_past: str          # 사랑했어
    ja: str               # 愛してる ("たくさん 持ってる": two tokens)
    ja_past: str          # 愛してた
    ja_particle: str      # the particle Japanese puts on the object: を, に or が
    ko_particle: str = "object"  # Korean: 을/를 by the last syllable, or 에게
    transitive: bool = True      # False: no object and no place follow ("have a lot")


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

NOUNS = (             # countable: after the, my or your
    Noun("cat", "고양이", "猫"),
    Noun("dog", "개", "犬"),
    Noun("teacher", "선생님", "先生"),
    Noun("friend", "친구", "友達"),
    Noun("child", "아이", "子供"),
    Noun("horse", "말", "馬"),
    Noun("bird", "새", "鳥"),
    Noun("king", "왕", "王"),
    Noun("credit card", "신용카드", "クレジットカード"),
)

MASS_NOUNS = (        # alone, without a determiner or an adjective
    Noun("machine learning", "기계 학습", "機械 学習"),
    Noun("music", "음악", "音楽"),
    Noun("coffee", "커피", "コーヒー"),
    Noun("cash", "현금", "現金"),
    Noun("math", "수학", "数学"),
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
    # "have a lot" (of something the context names): Korean says the subject has much, 많아
    Verb("have a lot", "has a lot", "had a lot", "많아", "많았어", "たくさん 持ってる", "たくさん 持ってた", "",
         transitive=False),
)

PLACES = (
    Place("in the park", "공원에서", "公園で"),
    Place("at home", "집에서", "家で"),
    Place("in the garden", "정원에서", "庭で"),
    Place("in the city", "도시에서", "町で"),
)

POST_SENTENCES = (
    # (English as the post writes it, the post's title, the target language the post translates into)
    ("I love machine learning",
     "도해와 최소 사례로 직관적으로 이해하는 Self-attention, Cross-attention, Multi-head Attention", "ja"),
    ("I have a lot", "어텐션이 조모임이라면", "ko"),
    ("Cash or credit card?", "어텐션이 조모임이라면", "ko"),
)
"""Every English sentence the three posts use (“Attention의 projection: Q·K·V와 멀티 헤드” uses none).
The group-meeting post's "Cash or credit card? I have a lot" is two of them; its "I have a lot of"
is a sentence cut off on purpose (its next word is the post's question) and stays outside."""

# Triples always kept in training, whatever the seed: the posts' sentences and the docs' example.
_SHOWCASE = {("I", "love", "you"), ("I", "love", "machine learning"), ("I", "have a lot", ""),
             ("cash", "or", "credit card")}
_HELD_OUT_FRACTION = 0.12
_CHOICE_FRACTION = 0.08      # of sampled sentences, choice questions
_QUESTION = {"ko": ("이에요?", "예요?"), "ja": "ですか？"}


def _batchim(word: str) -> bool:
    """Whether a Korean word's last syllable ends in a consonant (받침)."""
    last = ord(word[-1]) - 0xAC00
    return 0 <= last < 11172 and last % 28 != 0


def _noun_words(noun: Noun, lang: str) -> list[str]:
    return (noun.ko if lang == "ko" else noun.ja).split()


@dataclass(frozen=True)
class Phrase:
    """A noun phrase: a pronoun, determiner + optional adjective + noun, or a mass noun alone
    (determiner None)."""

    pronoun: Pronoun | None = None
    determiner: str | None = "the"
    adjective: str | None = None
    noun: Noun | None = None

    @property
    def head(self) -> str:
        return self.pronoun.subject if self.pronoun else self.noun.en

    def english(self, role: str) -> list[str]:
        if self.pronoun:
            return [self.pronoun.subject if role == "subject" else self.pronoun.object]
        return ([self.determiner] if self.determiner else []) + ([self.adjective] if self.adjective else []) \
            + self.noun.en.split()

    def target(self, lang: str, particle: str) -> list[str]:
        """Words in ``lang`` with the particle attached to the last one."""
        i = LANGUAGES.index(lang)
        if self.pronoun:
            words = [self.pronoun.ko if lang == "ko" else self.pronoun.ja]
        else:
            before = [DETERMINERS[self.determiner][i] if self.determiner else "",
                      ADJECTIVES[self.adjective][i] if self.adjective else ""]
            words = [w for w in before if w] + _noun_words(self.noun, lang)
        return words[:-1] + [words[-1] + _particle(words[-1], lang, particle)]


@dataclass(frozen=True)
class Sentence:
    """One statement of the grammar and its translations (object None: the verb takes none)."""

    subject: Phrase
    verb: Verb
    object: Phrase | None
    past: bool = False
    place: Place | None = None

    @property
    def composition(self) -> tuple[str, str, str]:
        """(subject head, verb, object head): what the held-out split is made of."""
        return (self.subject.head, self.verb.base, self.object.head if self.object else "")

    def english(self) -> list[str]:
        third = self.subject.pronoun.third_singular if self.subject.pronoun else True
        verb = self.verb.past if self.past else (self.verb.third if third else self.verb.base)
        place = self.place.en.split() if self.place else []
        obj = self.object.english("object") if self.object else []
        return self.subject.english("subject") + verb.split() + obj + place

    def target(self, lang: str) -> list[str]:
        if lang not in LANGUAGES:
            raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
        v = self.verb
        verb = (v.ko_past if self.past else v.ko) if lang == "ko" else (v.ja_past if self.past else v.ja)
        place = [self.place.ko if lang == "ko" else self.place.ja] if self.place else []
        particle = v.ko_particle if lang == "ko" else v.ja_particle
        obj = self.object.target(lang, particle) if self.object else []
        return self.subject.target(lang, "topic") + place + obj + verb.split()


@dataclass(frozen=True)
class Choice:
    """A choice question between two different nouns without a determiner: "cash or credit card" →
    현금이에요? 신용카드예요? / 現金ですか？ クレジットカードですか？"""

    first: Noun
    second: Noun

    @property
    def composition(self) -> tuple[str, str, str]:
        return (self.first.en, "or", self.second.en)

    def english(self) -> list[str]:
        return self.first.en.split() + ["or"] + self.second.en.split()

    def target(self, lang: str) -> list[str]:
        if lang not in LANGUAGES:
            raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
        return _asked(self.first, lang) + _asked(self.second, lang)


def _asked(noun: Noun, lang: str) -> list[str]:
    """A noun as a polite question, "is it …?": 현금이에요? 신용카드예요? / 現金ですか？"""
    words = _noun_words(noun, lang)
    ending = _QUESTION["ja"] if lang == "ja" else _QUESTION["ko"][0 if _batchim(words[-1]) else 1]
    return words[:-1] + [words[-1] + ending]


def _particle(word: str, lang: str, kind: str) -> str:
    """The particle that follows ``word``: topic 은/는 は, object 을/를 を (or Japanese に, が)."""
    if lang == "ja" or kind not in ("topic", "object"):
        return {"topic": "は", "object": "を"}.get(kind, kind)
    return {"topic": ("는", "은"), "object": ("를", "을")}[kind][_batchim(word)]


# --------------------------------------------------------------------------- sampling
def _phrase(rng: np.random.Generator) -> Phrase:
    draw = rng.random()
    if draw < 0.3:
        return Phrase(pronoun=PRONOUNS[rng.integers(len(PRONOUNS))])
    if draw < 0.45:
        return Phrase(determiner=None, noun=MASS_NOUNS[rng.integers(len(MASS_NOUNS))])
    adjectives = list(ADJECTIVES)
    adjective = adjectives[rng.integers(len(adjectives))] if rng.random() < 0.5 else None
    determiners = list(DETERMINERS)
    return Phrase(determiner=determiners[rng.integers(len(determiners))], adjective=adjective,
                  noun=NOUNS[rng.integers(len(NOUNS))])


def sample_sentence(rng: np.random.Generator) -> Sentence | Choice:
    """One sentence drawn from the grammar (any composition)."""
    if rng.random() < _CHOICE_FRACTION:
        nouns = NOUNS + MASS_NOUNS
        first = int(rng.integers(len(nouns)))
        second = (first + 1 + int(rng.integers(len(nouns) - 1))) % len(nouns)      # another noun
        return Choice(nouns[first], nouns[second])
    subject, verb = _phrase(rng), VERBS[rng.integers(len(VERBS))]
    if not verb.transitive:
        return Sentence(subject, verb, None, past=bool(rng.random() < 0.5))
    obj = _phrase(rng)
    place = PLACES[rng.integers(len(PLACES))] if rng.random() < 0.3 else None
    return Sentence(subject, verb, obj, past=bool(rng.random() < 0.5), place=place)


def is_held_out(composition: tuple[str, str, str], seed: int = 0) -> bool:
    """Whether the (subject head, verb, object head) triple is reserved for testing."""
    if composition in _SHOWCASE:
        return False
    digest = hashlib.sha256(f"{seed}|{'|'.join(composition)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < _HELD_OUT_FRACTION


def training_sentences(rng: np.random.Generator, *, split_seed: int = 0) -> Iterator[Sentence | Choice]:
    """An endless stream of sentences whose composition is not held out."""
    while True:
        sentence = sample_sentence(rng)
        if not is_held_out(sentence.composition, split_seed):
            yield sentence


def held_out_sentences(n: int, *, seed: int = 1234, split_seed: int = 0) -> list[Sentence | Choice]:
    """n distinct sentences whose composition never occurs in training."""
    rng = np.random.default_rng(seed)
    found: dict[tuple[str, ...], Sentence | Choice] = {}
    while len(found) < n:
        sentence = sample_sentence(rng)
        if is_held_out(sentence.composition, split_seed):
            found.setdefault(tuple(sentence.english()), sentence)
    return list(found.values())


# --------------------------------------------------------------------------- vocabularies
def source_words() -> list[str]:
    """Every English word the grammar uses, sorted."""
    words = {p.subject for p in PRONOUNS} | {p.object for p in PRONOUNS} | {"or"}
    for n in NOUNS + MASS_NOUNS:
        words |= set(n.en.split())
    words |= set(DETERMINERS) | set(ADJECTIVES)
    for v in VERBS:
        words |= set(v.base.split()) | set(v.third.split()) | set(v.past.split())
    for p in PLACES:
        words |= set(p.en.split())
    return sorted(words)


def target_words() -> list[str]:
    """Every Korean and Japanese word the grammar can produce, sorted."""
    words: set[str] = set()
    phrases = [Phrase(pronoun=p) for p in PRONOUNS] + [Phrase(determiner=None, noun=n) for n in MASS_NOUNS] + [
        Phrase(determiner=d, adjective=a, noun=n) for d in DETERMINERS for a in (None, *ADJECTIVES) for n in NOUNS]
    for lang in LANGUAGES:
        particles = ["topic", "object", "에게"] if lang == "ko" else ["topic", "を", "に", "が"]
        for phrase in phrases:
            for particle in particles:
                words |= set(phrase.target(lang, particle))
        for v in VERBS:
            words |= set((v.ko + " " + v.ko_past).split()) if lang == "ko" else set((v.ja + " " + v.ja_past).split())
        for p in PLACES:
            words.add(p.ko if lang == "ko" else p.ja)
        for n in NOUNS + MASS_NOUNS:
            words |= set(_asked(n, lang))
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
    return ", ".join(pronouns + [f"{d} …" for d in DETERMINERS] + [n.en for n in MASS_NOUNS])


def _mismatch(words: list[str], i: int, parts: list[str]) -> int | None:
    """The first k where words[i + k] is not parts[k] (k == len(words) − i when the words stop first),
    or None when all of parts follow at i."""
    for k, part in enumerate(parts):
        if i + k >= len(words) or words[i + k] != part:
            return k
    return None


def parse(words: list[str]) -> Sentence | Choice:
    """The grammar's Sentence (or Choice) for a list of English words (as
    `qkv.translator.model.tokenize` gives them), or `OutsideGrammar` naming the first part it cannot
    parse.

    The grammar: subject, verb, object, then nothing or one place; or subject and "have a lot" (no
    object, no place); or a choice question, noun "or" another noun, both without a determiner. A noun
    phrase is a pronoun in its subject or object form, the|my|your [adjective] noun, or a mass noun
    alone; the verb is past, or present agreeing with the subject (third-person singular: "loves").
    Every sentence `sample_sentence` draws parses back to itself, and nothing else parses.
    """
    words = list(words)
    n = len(words)

    def fail_inside(i: int, parts: list[str], k: int):
        """parts[:k] matched at i, parts[k] did not (or the words stopped)."""
        if i + k >= n:
            raise OutsideGrammar("stops", n, n, before=_said(words), expected=_said(parts[k:]))
        raise OutsideGrammar("expected", i + k, i + k + 1, part=words[i + k], before=_said(words[:i + k]),
                             expected=_said(parts[k:]))

    def noun_at(i: int, nouns) -> tuple[Noun, int] | None:
        """The noun of ``nouns`` written at i (all its words), or None if none starts there;
        OutsideGrammar when a two-word noun's first word is not followed by its second."""
        for noun in nouns:
            parts = noun.en.split()
            if i < n and words[i] == parts[0]:
                k = _mismatch(words, i, parts)
                if k is not None:
                    fail_inside(i, parts, k)
                return noun, i + len(parts)
        return None

    def ends_here(i: int, before: list[str]) -> None:
        if i < n:
            raise OutsideGrammar("ends", i, n, part=_said(words[i:]), before=_said(before))

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
        mass = noun_at(i, MASS_NOUNS)
        if mass is not None:
            return Phrase(determiner=None, noun=mass[0]), mass[1]
        firsts = {x.en.split()[0]: x for x in NOUNS}
        if word in ADJECTIVES or word in firsts:
            example = f"the {firsts[word].en}" if word in firsts else f"the {word}"
            raise OutsideGrammar("determiner", i, i + 1, part=word, example=example)
        if word not in DETERMINERS:
            if i == 0:
                raise OutsideGrammar("start", 0, 1, part=word, expected=_phrase_starts("subject"))
            raise OutsideGrammar("expected", i, i + 1, part=word, before=before, expected=_phrase_starts(role))
        adjective = None
        j = i + 1
        if j < n and words[j] in ADJECTIVES:
            adjective, j = words[j], j + 1
        expected = ", ".join(([] if adjective else list(ADJECTIVES)) + [x.en for x in NOUNS])
        if j == n:
            raise OutsideGrammar("stops", n, n, before=_said(words[:j]), expected=expected)
        found = noun_at(j, NOUNS)
        if found is None:
            raise OutsideGrammar("expected", j, j + 1, part=words[j], before=_said(words[:j]), expected=expected)
        return Phrase(determiner=word, adjective=adjective, noun=found[0]), found[1]

    # a choice question: a noun without a determiner, then "or"
    first = noun_at(0, NOUNS + MASS_NOUNS)
    if first is not None and first[1] < n and words[first[1]] == "or":
        i = first[1] + 1
        items = ", ".join(x.en for x in NOUNS + MASS_NOUNS)
        if i == n:
            raise OutsideGrammar("stops", n, n, before=_said(words), expected=items)
        second = noun_at(i, NOUNS + MASS_NOUNS)
        if second is None:
            raise OutsideGrammar("expected", i, i + 1, part=words[i], before=_said(words[:i]), expected=items)
        if second[0] == first[0]:
            raise OutsideGrammar("choice_same", i, second[1], part=second[0].en, first=first[0].en)
        ends_here(second[1], words[:second[1]])
        return Choice(first[0], second[0])

    subject, i = phrase(0, "subject")
    # the verb: its form must agree with the subject unless it is past
    third = subject.pronoun.third_singular if subject.pronoun else True
    agreeing = [(v, False) for v in VERBS] + [(v, True) for v in VERBS]

    def form(v: Verb, past: bool) -> list[str]:
        return (v.past if past else v.third if third else v.base).split()

    choices = ["or"] if subject.noun is not None and subject.determiner is None else []   # "cash" may start a choice
    expected_verbs = ", ".join([_said(form(v, past)) for v, past in agreeing] + choices)
    if i == n:
        raise OutsideGrammar("stops", n, n, before=_said(words), expected=expected_verbs)
    verb = past = None
    for v in VERBS:
        for is_past, written in ((True, v.past), (False, v.third), (False, v.base)):
            parts = written.split()
            if words[i] != parts[0]:
                continue
            k = _mismatch(words, i, parts)
            if k is not None:                                # "waited" without "for", "have a" without "lot"
                fail_inside(i, parts, k)
            if not is_past and written != (v.third if third else v.base):
                raise OutsideGrammar("agreement", i, i + len(parts), part=written, subject=_said(words[:i]),
                                     right=v.third if third else v.base, past=v.past)
            verb, past, i = v, is_past, i + len(parts)
            break
        if verb is not None:
            break
    if verb is None:
        raise OutsideGrammar("expected", i, i + 1, part=words[i], before=_said(words[:i]), expected=expected_verbs)
    if not verb.transitive:
        ends_here(i, words[:i])
        return Sentence(subject, verb, None, past=past)
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
