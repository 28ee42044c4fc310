"""Training the translator with torch autograd, on the same block code that inference runs on NumPy.

The weights are torch leaf tensors in the flat ``params`` dict; `Translator` builds qkv blocks
around them, so the forward pass is qkv's (`TransformerBlock`, `MultiHeadAttention`,
`qkv.attention` on torch tensors) and torch only supplies autograd, the loss and Adam.

Each step draws ``batch_size`` English sentences from the training part of the corpus (held-out
compositions never appear) and trains both directions, en→ko and en→ja, from one encoder pass.
Everything is drawn from ``seed``: the initial weights (NumPy) and the sentences; torch runs in
deterministic mode, so one seed gives one checkpoint on one machine.

Bounds (`TrainConfig` refuses others): steps 1 … 100,000, batch_size 1 … 1,024 sentences, a finite
learning rate in (0, 1], warmup 0 … 100,000, seed and split_seed 0 … 2³² − 1. A run whose loss,
gradients or weights stop being finite raises `TrainingDiverged` at that step (the weights are
discarded), so no non-finite model ever comes out of `train`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import InputError
from . import corpus
from .model import EOS, LANG_TOKENS, PAD, Config, Translator, init_params

__all__ = ["TrainConfig", "TrainingDiverged", "train", "make_batch", "MAX_STEPS", "MAX_BATCH", "MAX_LEARNING_RATE",
           "MAX_SEED"]

MAX_STEPS = 100_000
MAX_BATCH = 1024           # sentences per step (2 × that many target rows): a few hundred MB at most
MAX_LEARNING_RATE = 1.0    # Adam's step per weight is about the learning rate: beyond 1 nothing is learned
MAX_SEED = 2**32 - 1


class TrainingDiverged(InputError):
    """The loss, the gradients or the weights stopped being finite at ``step`` (from 1): the run is
    abandoned and nothing is returned or written."""

    def __init__(self, step: int, steps: int, loss: float, learning_rate: float):
        from ..explain import texts

        values = {"step": step, "steps": steps, "loss": f"{loss:.4g}", "rate": f"{learning_rate:g}"}
        self.step = step
        super().__init__(texts.text("en", "error.train.diverged", **values), key="error.train.diverged", values=values)


@dataclass(frozen=True)
class TrainConfig:
    """Steps, batch size (sentences; each gives a Korean and a Japanese example), peak learning
    rate (linear warm-up over ``warmup`` steps, then cosine decay to 5 %), seed. Out-of-bounds
    values raise ValueError when the config is made (bounds in the module's docstring)."""

    steps: int = 1500
    batch_size: int = 64
    learning_rate: float = 3e-3
    warmup: int = 100
    seed: int = 0
    split_seed: int = 0

    def __post_init__(self):
        for name, low, high in (("steps", 1, MAX_STEPS), ("batch_size", 1, MAX_BATCH), ("warmup", 0, MAX_STEPS),
                                ("seed", 0, MAX_SEED), ("split_seed", 0, MAX_SEED)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
                raise ValueError(f"{name} must be a whole number from {low} to {high:,}, got {value!r}")
        rate = self.learning_rate
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= MAX_LEARNING_RATE:
            raise ValueError(f"learning_rate must be a finite number in (0, {MAX_LEARNING_RATE:g}], got {rate!r}")


def make_batch(config: Config, sentences: list[corpus.Sentence]):
    """Padded integer arrays for a list of sentences, both target languages.

    Returns source (B, S), source_mask (B, S) True = a real token, decoder_in (2B, T) and
    decoder_out (2B, T): rows 0 … B−1 Korean, B … 2B−1 Japanese; decoder_in is the language
    token then the words, decoder_out the words then </s>, both padded with <pad> (id 0).
    """
    source_index = {w: i for i, w in enumerate(config.source_vocab)}
    target_index = {w: i for i, w in enumerate(config.target_vocab)}
    sources = [[source_index[w] for w in s.english()] for s in sentences]
    targets = [[target_index[LANG_TOKENS[lang]]] + [target_index[w] for w in s.target(lang)] + [target_index[EOS]]
               for lang in corpus.LANGUAGES for s in sentences]
    s_len, t_len = max(map(len, sources)), max(map(len, targets)) - 1
    source = np.zeros((len(sources), s_len), np.int64)
    for i, ids in enumerate(sources):
        source[i, : len(ids)] = ids
    decoder_in = np.zeros((len(targets), t_len), np.int64)
    decoder_out = np.zeros((len(targets), t_len), np.int64)
    for i, ids in enumerate(targets):
        decoder_in[i, : len(ids) - 1] = ids[:-1]
        decoder_out[i, : len(ids) - 1] = ids[1:]
    assert config.source_vocab[0] == PAD and config.target_vocab[0] == PAD
    return source, source != 0, decoder_in, decoder_out


def train(train_config: TrainConfig = TrainConfig(), *, config: Config | None = None,
          on_step: Callable[[int, float, float], None] | None = None) -> tuple[Translator, list[float]]:
    """Train a translator; returns it (torch weights; `.to_numpy()` for inference) and the loss of
    every step. on_step(step, loss, token_accuracy) is called after each step (progress bars).

    TrainingDiverged (an InputError: lower the learning rate) when the loss, the gradient norm or a
    weight is not finite after a step; nothing is returned then."""
    import torch
    import torch.nn.functional as F

    config = config or Config()
    was_deterministic, threads = torch.are_deterministic_algorithms_enabled(), torch.get_num_threads()
    torch.use_deterministic_algorithms(True)
    # One thread: the matrices are small, and a second thread only waits for the first (measured
    # on 2 busy cores: 0.14 s per step with 1 thread, 2.3 s with 2).
    torch.set_num_threads(1)
    try:
        params = {k: torch.tensor(v, requires_grad=True) for k, v in init_params(config, train_config.seed).items()}
        model = Translator(config, params)
        optimizer = torch.optim.Adam(params.values(), lr=train_config.learning_rate, betas=(0.9, 0.98), eps=1e-9)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: _rate(step, train_config))
        stream = corpus.training_sentences(np.random.default_rng(train_config.seed + 1),
                                           split_seed=train_config.split_seed)
        losses: list[float] = []
        for step in range(train_config.steps):
            batch = [next(stream) for _ in range(train_config.batch_size)]
            source, source_mask, decoder_in, decoder_out = (torch.from_numpy(a) for a in make_batch(config, batch))
            memory = model.encode(source, source_mask)                                  # (B, S, D)
            memory, source_mask = torch.cat([memory, memory]), torch.cat([source_mask, source_mask])  # ko, ja
            logits = model.decode(decoder_in, memory, source_mask)                      # (2B, T, Vt)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), decoder_out.reshape(-1), ignore_index=0)
            if not torch.isfinite(loss):
                raise TrainingDiverged(step + 1, train_config.steps, float(loss.detach()), train_config.learning_rate)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(params.values(), 1.0)
            if not torch.isfinite(norm):
                raise TrainingDiverged(step + 1, train_config.steps, float(loss.detach()), train_config.learning_rate)
            optimizer.step()
            schedule.step()
            # the update itself can overflow (a large learning rate): check every weight after it
            if not all(bool(torch.isfinite(p).all()) for p in params.values()):
                raise TrainingDiverged(step + 1, train_config.steps, float(loss.detach()), train_config.learning_rate)
            real = decoder_out != 0
            accuracy = float(((logits.argmax(-1) == decoder_out) & real).sum() / real.sum())
            losses.append(float(loss.detach()))
            if on_step is not None:
                on_step(step, losses[-1], accuracy)
        return model, losses
    finally:
        torch.use_deterministic_algorithms(was_deterministic)
        torch.set_num_threads(threads)


def _rate(step: int, tc: TrainConfig) -> float:
    """Learning-rate multiplier: linear warm-up, then cosine from 1 to 0.05."""
    if step < tc.warmup:
        return (step + 1) / tc.warmup
    progress = (step - tc.warmup) / max(1, tc.steps - tc.warmup)
    return 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
