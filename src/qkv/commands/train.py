"""`qkv train translator`: train the English → Korean/Japanese translator with torch (CPU).

    qkv train translator                          # the shipped recipe, writes translator.safetensors
    qkv train translator --steps 300 --out small.safetensors --seed 1

Deterministic from --seed; a progress bar shows the loss, the token accuracy and the time left.
The checkpoint (safetensors, weights float32 plus the config) is written atomically; then the
exact-match accuracy on held-out sentences (compositions never seen in training) is printed.
Every option is checked before training starts (bounds: `qkv.translator.train`); a run whose loss or
weights stop being finite stops with one error line and writes nothing.
"""

from __future__ import annotations

import argparse
import sys
import time

from .._io import as_number, int_option
from ..errors import InputError
from ._options import add_lang_option, words

MODELS = ("translator",)
MAX_EVAL = 10_000          # held-out sentences scored after training (decoded in batches of _EVAL_BATCH)
_EVAL_BATCH = 256


def _learning_rate(text: str) -> float:
    """argparse type: a finite number in (0, MAX_LEARNING_RATE]."""
    from ..translator.train import MAX_LEARNING_RATE

    value = as_number(text)            # digits 0–9, as every number qkv reads as text (float() takes '１', '1_0')
    if value is None or not 0 < value <= MAX_LEARNING_RATE:     # NaN and ±inf fail this too
        exc = InputError.keyed("cli.train.learning_rate", value=repr(text[:40]), max=f"{MAX_LEARNING_RATE:g}")
        error = argparse.ArgumentTypeError(exc.problem)
        error.input_error = exc           # type: ignore[attr-defined]  # the command line words it in --lang
        raise error
    return value


def register(subparsers, t) -> None:
    parser = subparsers.add_parser("train", help=t("train"), description=t("train.about"))
    parser.add_argument("model", choices=MODELS, help=t("train.model"))
    from ..translator.train import MAX_BATCH, MAX_LEARNING_RATE, MAX_SEED, MAX_STEPS

    parser.add_argument("--steps", type=int_option(low=1, high=MAX_STEPS), default=None, metavar="N",
                        help=t("train.steps", max=f"{MAX_STEPS:,}"))
    parser.add_argument("--batch-size", type=int_option(low=1, high=MAX_BATCH), default=None, metavar="N",
                        help=t("train.batch_size", max=MAX_BATCH))
    parser.add_argument("--learning-rate", type=_learning_rate, default=None, metavar="LR",
                        help=t("train.learning_rate", max=f"{MAX_LEARNING_RATE:g}"))
    parser.add_argument("--seed", type=int_option(low=0, high=MAX_SEED), default=0, metavar="S",
                        help=t("train.seed", max=MAX_SEED))
    parser.add_argument("--out", default="translator.safetensors", metavar="FILE", help=t("train.out"))
    parser.add_argument("--eval", type=int_option(low=0, high=MAX_EVAL), default=300, metavar="N",
                        help=t("train.eval", max=f"{MAX_EVAL:,}"))
    add_lang_option(parser, t, "train")
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from ..translator.train import TrainConfig

    t = words(args.lang)
    defaults = TrainConfig()
    steps = defaults.steps if args.steps is None else args.steps
    batch = defaults.batch_size if args.batch_size is None else args.batch_size
    rate = defaults.learning_rate if args.learning_rate is None else args.learning_rate
    _check_out(args.out)         # the options' bounds were checked as they were parsed
    try:
        import torch  # noqa: F401
    except ImportError:
        raise InputError.keyed("cli.train.needs_torch") from None
    from ..translator import corpus
    from ..translator.model import exact_match, save
    from ..translator.train import train

    config = TrainConfig(steps=steps, batch_size=batch, learning_rate=rate, seed=args.seed)
    started = time.perf_counter()
    with _progress(steps, t) as on_step:
        model, losses = train(config, on_step=on_step)
    seconds = time.perf_counter() - started
    model = model.to_numpy()
    metadata = {"seed": args.seed, "steps": steps, "batch_size": batch, "learning_rate": rate,
                "final_loss": losses[-1], "train_seconds": round(seconds, 1)}
    lines = [t("cli.train.done", steps=steps, seconds=f"{seconds:.1f}", loss=f"{losses[-1]:.4f}")]
    if args.eval:
        held_out = corpus.held_out_sentences(args.eval)
        scores = {lang: sum(exact_match(model, held_out[i: i + _EVAL_BATCH], lang) * len(held_out[i: i + _EVAL_BATCH])
                            for i in range(0, len(held_out), _EVAL_BATCH)) / len(held_out)
                  for lang in corpus.LANGUAGES}
        metadata["held_out_exact_match"] = scores
        lines.append(t("cli.train.held_out", n=args.eval,
                       scores=", ".join(f"{lang} {score:.1%}" for lang, score in scores.items())))
    save(args.out, model, metadata=metadata)      # `qkv: wrote FILE` on stderr (qkv.cli)
    print("\n".join(lines))
    return 0


def _check_out(out: str) -> None:
    from pathlib import Path

    target = Path(out)
    if target.suffix != ".safetensors":
        raise InputError.keyed("cli.train.suffix", source=out)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise InputError.keyed("cli.no_directory", path=repr(str(folder)), source=out)


class _progress:
    """A rich progress bar on stderr: step, loss, token accuracy, elapsed and remaining time, worded by
    ``t`` (`words` of the run's --lang)."""

    def __init__(self, steps: int, t):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
            TimeRemainingColumn

        self.progress = Progress(TextColumn(t("cli.train.bar.training")), BarColumn(), MofNCompleteColumn(),
                                 TextColumn(t("cli.train.bar.loss") + " {task.fields[loss]:.4f}"),
                                 TextColumn(t("cli.train.bar.accuracy") + " {task.fields[accuracy]:.1%}"),
                                 TimeElapsedColumn(), TextColumn(t("cli.train.bar.left")), TimeRemainingColumn(),
                                 console=Console(file=sys.stderr), transient=False)
        self.task = self.progress.add_task("train", total=steps, loss=float("nan"), accuracy=0.0)

    def __enter__(self):
        self.progress.__enter__()

        def on_step(step: int, loss: float, accuracy: float) -> None:
            self.progress.update(self.task, completed=step + 1, loss=loss, accuracy=accuracy)

        return on_step

    def __exit__(self, *exc):
        return self.progress.__exit__(*exc)
