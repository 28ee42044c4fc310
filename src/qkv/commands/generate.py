"""`qkv generate --model DIR "PROMPT"`: a causal language model continues a prompt, with qkv's KV cache.

    qkv generate --model path/to/gpt2 "The cat sat" -n 20                   # greedy
    qkv generate --model path/to/llama "The cat sat" --sample --temperature 0.8 --top-k 40 --seed 1
    qkv generate --model path/to/qwen2 "The cat sat" --json                  # ids, tokens, probabilities

Prints the prompt and its continuation, then one row per new token: its id, the probability the
model gave it, and the model's top alternatives at that step. The same seed gives the same tokens
as transformers' generate after torch.manual_seed(seed).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from .._io import as_number, short_repr
from ..errors import InputError
from ._options import add_lang_option, check_lang, words, write_text


def register(subparsers, t) -> None:
    parser = subparsers.add_parser("generate", help=t("generate"), description=t("generate.about"))
    parser.add_argument("prompt", metavar="PROMPT", help=t("generate.prompt"))
    from ..models import SUPPORTED           # the families load() runs: the help cannot fall behind them

    decoders = [name for name in SUPPORTED if name != "bert"]
    parser.add_argument("--model", required=True, metavar="DIR",
                        help=t("generate.model", kinds=t("model.types", types=", ".join(decoders[:-1]), last=decoders[-1])))
    parser.add_argument("-n", "--max-new-tokens", default="20", metavar="N", help=t("generate.max_new_tokens"))
    parser.add_argument("--sample", action="store_true", help=t("generate.sample"))
    parser.add_argument("--temperature", default="1.0", metavar="T", help=t("generate.temperature"))
    parser.add_argument("--top-k", default=None, metavar="K", help=t("generate.top_k"))
    parser.add_argument("--top-p", default=None, metavar="P", help=t("generate.top_p"))
    parser.add_argument("--seed", default=None, metavar="S", help=t("generate.seed"))
    parser.add_argument("--no-stop", action="store_true", help=t("generate.no_stop"))
    parser.add_argument("--top", default="3", metavar="K", help=t("generate.top"))
    parser.add_argument("--json", action="store_true", help=t("generate.json"))
    parser.add_argument("--out", metavar="FILE", help=t("out"))
    add_lang_option(parser, t, "generate")
    parser.set_defaults(func=handler)


def _integer(option: str, text: str | None, t, *, low: int) -> int | None:
    if text is None:
        return None
    from .._io import as_int

    value = as_int(str(text))
    if value is None or value < low:
        raise InputError(t("cli.generate.integer", value=short_repr(text), low=low), field=option)
    return value


def _number(option: str, text: str, t) -> float:
    value = as_number(text)            # digits 0–9, as every number qkv reads as text: float() also took '１', '1_0'
    if value is None or not np.isfinite(value) or value <= 0:
        raise InputError(t("cli.generate.positive", value=short_repr(text)), field=option)
    return value


def handler(args: argparse.Namespace) -> int:
    t = words(check_lang(args.lang))
    max_new = _integer("--max-new-tokens", args.max_new_tokens, t, low=1)
    top_k = _integer("--top-k", args.top_k, t, low=1)
    seed = _integer("--seed", args.seed, t, low=0)
    shown = _integer("--top", args.top, t, low=0)
    temperature = _number("--temperature", args.temperature, t)
    top_p = None if args.top_p is None else _number("--top-p", args.top_p, t)
    if top_p is not None and top_p > 1:
        raise InputError(t("cli.generate.probability", value=short_repr(args.top_p)), field="--top-p")
    if not args.sample and (top_k is not None or top_p is not None or seed is not None or temperature != 1.0):
        raise InputError(t("cli.generate.needs_sample"), field="--sample")
    if args.out is not None:
        from pathlib import Path

        if not Path(args.out).parent.is_dir():
            raise InputError(t("cli.no_directory", path=repr(str(Path(args.out).parent))), source=args.out,
                             field="--out")
    from ..models import load

    model = load(args.model)
    if not getattr(model, "is_causal", False):
        raise InputError(t("cli.generate.not_causal", model=short_repr(args.model), kind=type(model).__name__),
                         field="--model")
    generation = model.generate(args.prompt, max_new, sample=args.sample, temperature=temperature, top_k=top_k,
                                top_p=top_p, seed=seed, stop_at_eos=not args.no_stop)
    probabilities = generation.probabilities                                      # (N, V)
    steps = []
    for i, token_id in enumerate(generation.ids):
        order = np.argsort(-probabilities[i], kind="stable")[:shown]
        steps.append({"id": int(token_id), "token": generation.tokens[i], "probability": float(probabilities[i, token_id]),
                      "top": [{"id": int(j), "token": model.token_strings([j])[0], "probability": float(probabilities[i, j])}
                              for j in order]})
    if args.json:
        text = json.dumps({"format": "qkv-generate", "model": model.name, "model_type": model.config.model_type,
                           "prompt": args.prompt, "prompt_ids": generation.prompt_ids.tolist(),
                           "prompt_tokens": model.token_strings(generation.prompt_ids), "ids": generation.ids.tolist(),
                           "tokens": generation.tokens, "text": generation.text, "stopped": generation.stopped,
                           "sample": args.sample, "temperature": temperature, "top_k": top_k, "top_p": top_p,
                           "seed": seed,
                           "steps": steps}, ensure_ascii=False, allow_nan=False) + "\n"   # never bare NaN
    else:
        text = _text(model, args, generation, steps, t)
    write_text(text, args.out)
    return 0


def _text(model, args, generation, steps, t) -> str:
    from ..explain.model_text import pad

    lines = [t("cli.generate.title", model=model.name, kind=model.config.model_type, n=len(steps),
               how=t("cli.generate.sampled" if args.sample else "cli.generate.greedy"),
               stop=t("cli.generate.eos" if generation.stopped == "eos" else "cli.generate.length")),
             "", args.prompt + generation.text, "",
             f"{pad(t('cli.generate.col.step'), 4, '>')}  {pad(t('cli.generate.col.token'), 16, '<')} "
             f"{pad(t('cli.generate.col.id'), 6, '>')}  {'p':>6}   {t('cli.generate.col.top')}"]
    for i, step in enumerate(steps):
        alternatives = "  ".join(f"{a['token']} {a['probability']:.3f}" for a in step["top"])
        lines.append(f"{i:>4}  {step['token']:<16} {step['id']:>6}  {step['probability']:.3f}   {alternatives}")
    return "\n".join(lines) + "\n"
