"""`qkv translate "TEXT"`: English → Korean / Japanese with qkv's tiny trained translator (NumPy only).

    qkv translate "I love you" --to ja
    qkv translate "the big dog saw my cat" --explain --lang ko
    qkv translate "she helped the teacher" --to ko --figure alignment.png
    qkv translate "I love you" --to ja --derive 2 --lang ko     # seed 001's derivation, learned weights
    qkv translate "I love machine learning" --to ja --compare-post   # learned vs the post's weights (from its assumed inputs)

Greedy decoding with a KV cache, on the checkpoint shipped with qkv (or --checkpoint FILE, as
written by `qkv train translator`). The text is parsed with the grammar first: outside it, one
error line names the part (--outside-grammar translates anyway and flags it). Under each
translation: the probability of each chosen word, of the end, and of the whole sentence. --explain shows the decoder's cross-attention for each
generated word (query from the decoder, keys and values from the encoder); --figure draws that
alignment matrix, where the reordering (the English verb read last) is visible; --derive N
prints the step-by-step derivation (qkv.explain) of the cross-attention that produced word N;
--compare-post puts the learned weights of the decoder's state for 私は next to the post's hand-made
ones (`qkv.translator.compare`; with --figure, the comparison is what is drawn).
"""

from __future__ import annotations

import argparse

from .. import frontdoor
from .._io import int_option
from ..errors import InputError
from ..translator.model import UNSURE  # below it, the output names the least likely token
from ._options import add_lang_option, check_lang, words

TARGETS = ("ko", "ja", "both")


def register(subparsers, t) -> None:
    parser = subparsers.add_parser("translate", help=t("translate"), description=t("translate.about"))
    parser.add_argument("text", metavar="TEXT", help=t("translate.text"))
    parser.add_argument("--to", default="both", metavar="ko|ja|both", help=t("translate.to"))
    parser.add_argument("--explain", action="store_true", help=t("translate.explain"))
    add_lang_option(parser, t, "translate")
    parser.add_argument("--derive", type=int_option(), default=None, metavar="N", help=t("translate.derive"))
    parser.add_argument("--figure", metavar="FILE", help=t("translate.figure"))
    parser.add_argument("--layer", type=int_option(), default=None, metavar="L", help=t("translate.layer"))
    parser.add_argument("--head", type=int_option(), default=None, metavar="H", help=t("translate.head"))
    parser.add_argument("--digits", type=int_option(), default=2, metavar="N", help=t("translate.digits"))
    parser.add_argument("--checkpoint", metavar="FILE", help=t("translate.checkpoint"))
    parser.add_argument("--outside-grammar", action="store_true", help=t("translate.outside_grammar"))
    parser.add_argument("--compare-post", action="store_true", help=t("translate.compare_post"))
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    t = words(check_lang(args.lang))
    frontdoor.check_choice(args.to, TARGETS, field="--to", lang=args.lang)
    if args.figure and args.to == "both":
        raise InputError(t("cli.translate.figure_one"), field="--figure")
    if args.derive is not None and args.to == "both":
        raise InputError(t("cli.translate.derive_one"), field="--derive")
    if not 0 <= args.digits <= 8:
        raise InputError(t("cli.translate.digits", value=args.digits), field="--digits")
    if args.figure:
        frontdoor.check_figure(args.figure, field="--figure", lang=args.lang)
    from ..translator import explain
    from ..translator.model import load

    model = load(args.checkpoint)
    langs = ("ko", "ja") if args.to == "both" else (args.to,)
    # raises InputError on bad text, and on text outside the grammar unless --outside-grammar
    translations = [model.translate(args.text, lang, outside_grammar=args.outside_grammar) for lang in langs]
    for translation in translations:
        explain.alignment(translation, layer=args.layer, head=args.head)   # checks --layer / --head
    parts = []
    problem = translations[0].outside_grammar
    if problem is not None:
        parts.append(t("cli.translate.outside", problem=problem.problem_in(args.lang)))
    for translation in translations:
        sentence = " ".join(translation.target)
        indent = "    " if len(langs) > 1 and not args.explain else ""
        if args.explain:
            parts.append(explain.explain_text(translation, lang=args.lang, layer=args.layer, head=args.head,
                                              digits=args.digits))
        else:
            parts.append(f"{t('cli.translate.lang.' + translation.lang)}: {sentence}" if len(langs) > 1 else sentence)
        parts.extend(indent + line for line in _sureness(translation, t))
    comparison = None
    if args.compare_post:
        from ..translator import compare

        comparison = compare.post_comparison(model, translations[-1])     # --to both: the Japanese one
        parts.append(compare.comparison_text(comparison, lang=args.lang, digits=max(args.digits, 4)))
    if args.derive is not None:
        from ..explain import render

        trace = explain.cross_attention_trace(model, translations[0], word=args.derive, layer=args.layer)
        asked = trace.meta["tokens"][trace.meta["query"]]        # the decoder input whose state asked for the word
        parts.append(t("cli.translate.derive_step", generated=translations[0].target[args.derive - 1], n=args.derive,
                       query=asked))
        parts.append(render(trace, "text", lang=args.lang, digits=args.digits))
    if args.figure:                       # written before anything is printed: an error leaves nothing half-done
        from ..viz import write_figure

        if comparison is not None:
            figure = compare.comparison_figure(comparison, lang=args.lang, digits=max(args.digits, 4))
        else:
            figure = explain.alignment_figure(translations[0], layer=args.layer, head=args.head, lang=args.lang)
        write_figure(figure, args.figure)        # `qkv: wrote FILE` on stderr (qkv.cli)
    print("\n".join(parts))
    return 0


def _sureness(translation, t) -> list[str]:
    """How sure the model was: each chosen token's probability, the end's, the whole sentence's."""
    shown = [f"{word} {p:.3f}" for word, p in zip(translation.target, translation.probabilities)]
    limit = len(translation.target)
    shown.append(t("cli.translate.end", p=f"{translation.end_probability:.3f}") if translation.end_probability is not None
                 else t("cli.translate.no_end", limit=limit))
    total = translation.sequence_probability
    lines = [t("cli.translate.probabilities", tokens=" · ".join(shown), total=f"{total:.3f}")]
    if total < UNSURE:
        i, p = translation.least_likely
        word = translation.target[i] if i < len(translation.target) else t("cli.translate.end_word")
        lines.append(t("cli.translate.unsure", word=word, p=f"{p:.3f}"))
    return lines
