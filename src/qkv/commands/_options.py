"""Options and output shared by several commands (not a command itself): --model, --lang, writing
the result. Commands import this and the library, never each other.

--lang is worded and checked as `qkv example --lang` does: ``--lang en|ko`` (default: the locale's), and a
value outside `qkv.explain.texts.LANGS` is the one-line error ``--lang: 'xx' is not one of en, ko``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .. import frontdoor
from .._io import check_output
from ..errors import InputError
from ..explain.texts import LANGS, text
from ..trace import Shown, Trace

__all__ = ["help_words", "add_model_option", "load_model", "add_lang_option", "check_lang", "words", "write_text",
           "add_output_options", "check_options", "emit", "EXPLANATION_FORMATS", "reading_note", "require_text"]


def help_words(lang: str):
    """``t(key, **values)``: the help text ``help.KEY`` of `qkv.explain.texts` in ``lang``, with ``%`` doubled
    (argparse formats every help with ``%``). Each command's ``register(subparsers, t)`` words its parser
    with it, so ``--help`` is in the call's language (`qkv.cli.build_parser`)."""
    def t(key: str, **values) -> str:
        return text(lang, f"help.{key}", **values).replace("%", "%%")
    return t


def add_model_option(parser: argparse.ArgumentParser, t, *, encoders_only: bool = False) -> None:
    from ..models import SUPPORTED           # the families load() runs: the help cannot fall behind them

    kinds = "bert" if encoders_only else t("model.types", types=", ".join(SUPPORTED[:-1]), last=SUPPORTED[-1])
    parser.add_argument("--model", default="minilm", metavar="minilm|DIR", help=t("model", kinds=kinds))


def load_model(name: str):
    """The model for --model (InputError for an unknown name or bad files)."""
    from ..models import load

    return load(name)


def _tokenizer(model):
    """The model's `tokenizers.Tokenizer` (anything with ``encode``), or None."""
    tokenizer = getattr(model, "tokenizer", None)
    return tokenizer if tokenizer is not None and hasattr(tokenizer, "encode") else None


def _is_jamo(c: str) -> bool:
    """A Hangul jamo (conjoining, U+1100–U+11FF, or compatibility, U+3130–U+318F): a syllable taken apart."""
    return "\u1100" <= c <= "\u11ff" or "\u3130" <= c <= "\u318f"


def reading_note(model, text: str | Sequence[str], t, *, shows: str = "attention", encodings=None) -> str | None:
    """A note when the model's tokenizer does not read (part of) ``text`` — MiniLM takes Hangul apart into jamo
    and [UNK] — counted from its own output (`qkv.models.reading`, as serve's page says it); None when it reads
    it all or has no `tokenizers.Tokenizer`. Several texts (`qkv embed`): one note for the unread texts with Hangul
    and one for the others, each naming its texts (#0, #2: numbered as embed's table numbers them) and counting
    their pieces, so that "does not read Korean" is said only of Korean texts. ``shows``: what the
    command shows of those pieces ("attention", "embedding"; the text ``cli.reading.shows.SHOWS``). encodings: what
    `require_text` returned for the text (a list for several), so that the text is encoded once."""
    from ..models.reading import READS_KOREAN, reading

    tokenizer = _tokenizer(model)
    if tokenizer is None:
        return None
    several = not isinstance(text, str)
    texts = list(text) if several else [text]
    encodings = [None] * len(texts) if encodings is None else (list(encodings) if several else [encodings])
    found = [reading(one, tokenizer, encoding=encoding) for one, encoding in zip(texts, encodings)]
    unread = [i for i, one in enumerate(found) if one.unread]
    if not unread:
        return None

    def note(group: list[int]) -> str:
        korean = any(found[i].hangul for i in group)
        # each kind counted apart ("3 are [UNK] … and 4 are letters taken apart (e.g. ᄆ ##ᅢ)"), only the kinds
        # there are; the examples are of the pieces taken apart ([UNK] is its own example)
        unknown_token = getattr(getattr(tokenizer, "model", None), "unk_token", None)
        examples = tuple(dict.fromkeys(piece for i in group for piece in found[i].examples
                                       if piece != unknown_token))[:6]
        # "letters taken apart into jamo" only where the pieces are jamo (MiniLM's WordPiece); a byte-level
        # tokenizer (GPT-2's) takes Hangul apart into bytes: "pieces taken apart"
        jamo = korean and any(_is_jamo(c) for piece in examples for c in piece)
        kinds = [t(key, n=n, examples=" ".join(examples)) for key, n in (
            ("cli.reading.unknown", sum(found[i].unknown for i in group)),
            ("cli.reading.split.korean" if jamo else "cli.reading.split.other", sum(found[i].split for i in group)))
            if n]
        unread_words = kinds[0] if len(kinds) == 1 else t("cli.reading.both", unknown=kinds[0], split=kinds[1])
        return t("cli.reading.korean" if korean else "cli.reading.other",
                 model=getattr(model, "name", "model"), unread=unread_words,
                 total=sum(found[i].pieces for i in group), korean=READS_KOREAN,
                 shows=t(f"cli.reading.shows.{shows}"))

    if not several:
        return note(unread)
    # One note for the texts with Hangul ("does not read Korean") and one for the others: a claim about Korean is
    # said only of the texts it is true of, and each note counts only its own texts' pieces.
    notes = []
    for group in ([i for i in unread if found[i].hangul], [i for i in unread if not found[i].hangul]):
        if group:
            which = ", ".join(f"#{i}" for i in group[:5]) + (", …" if len(group) > 5 else "")
            notes.append(t("cli.reading.text" if len(group) == 1 else "cli.reading.texts", which=which,
                           note=note(group)))
    return "\n".join(notes)


def require_text(text: str, t, *, model=None, field: str = "TEXT", number: int | None = None):
    """The ``model``'s tokenizer's encoding of ``text`` (None for a model without a `tokenizers.Tokenizer`) when the
    text holds something to read, for `reading_note` to read again (one encoding checked and read). An empty or
    whitespace-only text is refused, as `qkv translate` and serve's page refuse it, and so is a text the tokenizer
    makes nothing of but its own special tokens (only characters it drops: U+200B, U+FEFF, control characters;
    `qkv.models.reading.unseen`). The refusal names the special tokens that tokenizer really adds to this text
    ([CLS] [SEP] for MiniLM, <s> for Llama's, none for GPT-2's). ``number``: the text's place among several
    (`qkv embed`, numbered as its table numbers them)."""
    from ..models.reading import unseen

    where = field if number is None else f"{field} #{number}"
    tokenizer = _tokenizer(model)
    encoding = tokenizer.encode(text) if tokenizer is not None else None
    if not text.strip():
        raise InputError(t("cli.text.blank" if text else "cli.text.empty", seen=_seen(encoding, t)), field=where)
    if encoding is not None:
        chars = unseen(text, tokenizer, encoding=encoding)
        if chars is not None:
            raise InputError(t("cli.text.unseen", model=getattr(model, "name", "model"), chars=" ".join(chars),
                               seen=_seen(encoding, t)), field=where)
    return encoding


def _seen(encoding, t) -> str:
    """What the model would see of a text with none of the reader's words: its tokenizer's own special tokens,
    named ([CLS] [SEP]; <s>) where they are all it would see, else nothing said of them (GPT-2's tokenizer adds
    none; Llama's makes "<s>" and pieces of spaces of "  ")."""
    from ..models.reading import specials

    added = specials(encoding) if encoding is not None and all(encoding.special_tokens_mask) else ()
    return t("cli.text.seen.specials", specials=" ".join(added)) if added else t("cli.text.seen.none")


def add_lang_option(parser: argparse.ArgumentParser, t, command: str) -> None:
    """``--lang en|ko``; its help is the text ``help.COMMAND.lang`` (what the language is of). Not given, it
    is the locale's (LC_ALL, LC_MESSAGES, LANG; `qkv.frontdoor.locale_lang`), filled in by `qkv.cli.Parser`
    when the line is parsed. Its value is checked as it is parsed (``--lang: 'fr' is not one of en, ko``),
    before a missing argument is reported, so a command's own check (`check_lang`) is only a second guard."""
    parser.add_argument("--lang", default=None, choices=tuple(LANGS), metavar="|".join(LANGS), help=t(f"{command}.lang"))


def check_lang(lang: str) -> str:
    """``lang`` if it is one of the languages, else the one-line InputError every front end gives."""
    return frontdoor.check_lang(lang, field="--lang")


def words(lang: str):
    """``t(key, **values)``: the sentence ``key`` of `qkv.explain.texts` in ``lang``."""
    check_lang(lang)

    def t(key: str, **values) -> str:
        return text(lang, key, **values)
    return t


def write_text(output: str, out: str | None) -> None:
    """Print ``output``, or write it to the file ``out`` atomically."""
    if out is None:
        sys.stdout.write(output)
        sys.stdout.flush()
        return
    from .._io import write_atomic

    write_atomic(out, output)


# ------------------------------------------------------------------ `qkv example` and `qkv explain`
EXPLANATION_FORMATS = ("text", "markdown", "html", "json")


def add_output_options(parser: argparse.ArgumentParser, t) -> None:
    """The options `example` and `explain` share (validated by `check_options`, one-line errors)."""
    add_lang_option(parser, t, "output")
    parser.add_argument("--format", default="text", metavar="FORMAT", dest="format", help=t("output.format"))
    parser.add_argument("--out", metavar="FILE", help=t("out"))
    # a number is read as the rows are shown (the example's token base, qkv.trace.token_number)
    parser.add_argument("--query", metavar="TOKEN", type=Shown, help=t("output.query"))
    parser.add_argument("--digits", metavar="N", help=t("output.digits"))
    parser.add_argument("--by-hand", action="store_true", help=t("output.by_hand"))
    parser.add_argument("--terms", action="store_true", help=t("output.terms"))
    parser.add_argument("--key", metavar="TOKEN", type=Shown, help=t("output.key"))
    parser.add_argument("--figure", metavar="FILE", help=t("output.figure"))


def check_options(args: argparse.Namespace) -> int | None:
    """Validate lang, format, digits and the output files before anything is computed; returns digits."""
    check_lang(args.lang)
    frontdoor.check_choice(args.format, EXPLANATION_FORMATS, field="--format", lang=args.lang)
    digits = frontdoor.check_digits(args.digits, field="--digits")
    if args.by_hand and args.format == "html":
        raise InputError.keyed("error.by_hand_html", field="--by-hand")
    if getattr(args, "key", None) is not None and not getattr(args, "terms", False):
        raise InputError.keyed("error.terms.key_alone", field="--key")
    if getattr(args, "terms", False) and (args.format != "text" or args.figure is not None or args.by_hand):
        raise InputError.keyed("error.terms.format", field="--terms")
    if args.out is not None:
        check_output(args.out, field="--out")
    if args.figure is not None:
        frontdoor.check_figure(args.figure, field="--figure", lang=args.lang)
    return digits


def emit(trace: Trace, args: argparse.Namespace, digits: int | None) -> int:
    """Render ``trace`` as asked; write --out / --figure atomically, or print."""
    from .._io import write_atomic
    from ..explain import render

    if getattr(args, "terms", False):            # the neuron view as text: q_i·k_i, Σ, ÷ √d_k (qkv.explain.terms)
        return _emit_terms(trace, args, digits)
    color = args.format == "text" and args.out is None and sys.stdout.isatty()
    lenses = None
    if args.format == "html":      # several heads, coloured text, the neuron view's q_i·k_i: computed here, in Python
        from ..notebook import page_lenses

        lenses = page_lenses(trace)
    text_out = render(trace, args.format, lang=args.lang, digits=digits, by_hand=args.by_hand, color=color,
                      lenses=lenses)
    if args.figure is not None:
        from ..viz import save_figure

        save_figure(trace, args.figure, lang=args.lang, digits=digits)   # its numbers as the text prints them
    if args.out is not None:
        write_atomic(args.out, text_out)
    else:
        sys.stdout.write(text_out)
        sys.stdout.flush()
    return 0


def _emit_terms(trace: Trace, args: argparse.Namespace, digits: int | None) -> int:
    from ..explain.terms import terms_text
    from ..spec import resolve_query
    from ..trace import in_language

    key = None
    if args.key is not None:
        shown = in_language(trace, args.lang).meta
        keys = list(shown.get("key_tokens") or shown.get("tokens") or [])
        key = resolve_query(args.key, keys, source=None, field="--key", base=int(trace.meta.get("token_base", 0) or 0),
                            tokens_ko=keys)
    write_text(terms_text(trace, lang=args.lang, key=key, digits=4 if digits is None else digits), args.out)
    return 0
