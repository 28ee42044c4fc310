"""Decoding with the KV cache: greedy, or sampling with temperature, top-k and top-p from a seed.

    prompt ids ─ forward (fills one qkv.KVCache per layer) ─ logits of the last position
    repeat: choose a token ─ forward that one token (its keys/values appended to the caches) ─ logits

Each step runs only the new token through the blocks; its queries attend over the cached keys
and values (RoPE positions and GPT-2's learned positions continue from the cache's length).

The choice is made as transformers' `generate` makes it, so that the same weights give the same
tokens: the last position's logits in float32; temperature divides them; top-k keeps the k largest
(and any tied with the k-th), the rest become −∞; top-p (nucleus) then removes, in ascending order
of score, the tokens whose cumulative probability is ≤ 1 − p (the most likely token always stays);
then greedy takes the first largest, and
sampling draws from softmax(scores) as `torch.multinomial` does for one sample: argmax(p / E) with
E ~ Exp(1) per token (the "exponential race", equivalent to drawing from p). The Exp(1) draws come
from a `torch.Generator` seeded with ``seed`` when torch is installed — the same numbers
`torch.manual_seed(seed)` gives transformers — and otherwise from NumPy's
``default_rng(seed)`` (the same rule, a different random stream).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..attention import softmax  # the one softmax: over the last axis, −∞ entries get 0
from ..errors import InputError

__all__ = ["Generation", "generate", "softmax", "choose"]


@dataclass(frozen=True)
class Generation:
    """The result of `generate`.

    prompt_ids (P,), ids (N,): the new tokens; tokens: their strings; text: the new tokens decoded;
    logits (N, V) float32: the model's logits for step i's token (before temperature and top-k);
    stopped: "eos" (an end-of-sequence token was produced, and kept) or "length" (max_new_tokens).
    """

    prompt_ids: np.ndarray
    ids: np.ndarray
    tokens: list[str]
    text: str
    logits: np.ndarray
    stopped: str

    @property
    def probabilities(self) -> np.ndarray:
        """(N, V): the model's next-token distribution at each step, softmax(logits) (temperature 1, no top-k)."""
        return softmax(self.logits)

    @property
    def chosen_probabilities(self) -> np.ndarray:
        """(N,): the probability the model gave each token it produced."""
        return self.probabilities[np.arange(len(self.ids)), self.ids]


class _Noise:
    """Exp(1) draws, one per vocabulary entry per step: torch's generator (as transformers) or NumPy's."""

    def __init__(self, seed: int | None, source: str):
        self.torch = None
        if source == "torch":
            import torch

            self.torch = torch
            self.generator = torch.Generator()
            if seed is None:
                self.generator.seed()
            else:
                self.generator.manual_seed(seed)
        else:
            self.rng = np.random.default_rng(seed)

    def draw(self, size: int) -> np.ndarray:
        """(size,) float32 Exp(1) draws (shape (1, size) on torch's side, as transformers' probabilities)."""
        if self.torch is not None:
            draws = self.torch.empty((1, size), dtype=self.torch.float32).exponential_(1, generator=self.generator)
            return draws.numpy()[0]
        return self.rng.standard_exponential(size, dtype=np.float32)


def _noise_source(requested: str | None) -> str:
    if requested not in (None, "torch", "numpy"):
        raise ValueError(f"noise must be \"torch\", \"numpy\" or None (torch when installed), got {requested!r}")
    if requested is not None:
        return requested
    try:
        import torch  # noqa: F401
    except ImportError:
        return "numpy"
    return "torch"


def choose(logits: np.ndarray, *, sample: bool, temperature: float, top_k: int | None, noise: _Noise | None,
           top_p: float | None = None) -> int:
    """The next token from logits (V,): transformers' temperature → top-k → top-p → greedy or multinomial."""
    scores = np.asarray(logits, dtype=np.float32)
    if not sample:
        return int(np.argmax(scores))
    with np.errstate(over="ignore"):
        scores = scores / np.float32(temperature)
    if not np.isfinite(scores).all():
        raise InputError.keyed("error.generate.overflow", field="temperature", value=repr(temperature),
                               largest=f"{float(np.max(np.abs(logits))):.4g}")
    if top_k is not None and top_k < scores.shape[-1]:
        kth = np.partition(scores, -top_k)[-top_k]
        scores = np.where(scores < kth, np.float32(-np.inf), scores)
    if top_p is not None and top_p < 1.0:
        order = np.argsort(scores, kind="stable")                                 # ascending
        cumulative = np.cumsum(softmax(scores[order]).astype(np.float32), dtype=np.float32)
        remove = cumulative <= np.float32(1 - top_p)
        remove[-1] = False                                                         # keep the most likely
        scores = scores.copy()
        scores[order[remove]] = np.float32(-np.inf)
    probabilities = softmax(scores).astype(np.float32)
    with np.errstate(divide="ignore"):
        return int(np.argmax(probabilities / noise.draw(scores.shape[-1])))


def generate(model, prompt: str | np.ndarray, max_new_tokens: int = 20, *, sample: bool = False,
             temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None, seed: int | None = None,
             stop_at_eos: bool = True, noise: str | None = None) -> Generation:
    """Continue ``prompt`` (a text, or token ids (P,)) by up to ``max_new_tokens`` tokens.

    sample=False: greedy (the most likely token each step; temperature and top_k are unused).
    sample=True: draw from softmax(logits / temperature) restricted to the top_k tokens (None: all)
      and then to the top_p nucleus (None: all), reproducibly from ``seed`` (None: a fresh seed). noise: "torch" | "numpy" | None (torch when
      installed), where the random numbers come from (see the module docstring).
    stop_at_eos: stop after producing one of config.eos_token_ids (the token is kept).
    Equal, token for token, to transformers' ``model.generate(ids, max_new_tokens=…, do_sample=sample,
    temperature=…, top_k=top_k or 0, top_p=top_p or 1.0)`` after ``torch.manual_seed(seed)``.
    """
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise InputError.keyed("error.arg.positive_int", field="max_new_tokens", value=repr(max_new_tokens))
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature > 0 \
            or not np.isfinite(temperature):
        raise InputError.keyed("error.config.positive", field="temperature", value=repr(temperature))
    if sample and not np.float32(temperature) > 0:
        raise InputError.keyed("error.generate.zero", field="temperature", value=repr(temperature))
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise InputError.keyed("error.arg.positive_int_or_none", field="top_k", value=repr(top_k))
    if top_p is not None and (isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or not 0 < top_p <= 1):
        raise InputError.keyed("error.arg.unit_or_none", field="top_p", value=repr(top_p))
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise InputError.keyed("error.arg.natural_or_none", field="seed", value=repr(seed))
    prompt_ids = model.token_ids(prompt) if isinstance(prompt, str) else np.asarray(prompt, dtype=np.int64)
    if prompt_ids.ndim != 1 or prompt_ids.size == 0:
        raise InputError.keyed("error.generate.empty", field="prompt")
    limit = model.config.max_positions
    if model.arrays.position_embeddings is not None and len(prompt_ids) + max_new_tokens > limit:
        raise InputError.keyed("error.generate.positions", field="max_new_tokens", prompt=len(prompt_ids),
                               new=max_new_tokens, limit=limit)
    draws = _Noise(seed, _noise_source(noise)) if sample else None
    stop = set(model.config.eos_token_ids) if stop_at_eos else set()
    caches = model.new_caches()
    step_logits = model.forward(prompt_ids, caches=caches, last_only=True).logits[0]       # (V,)
    ids, all_logits, stopped = [], [], "length"
    for step in range(max_new_tokens):
        all_logits.append(np.asarray(step_logits, dtype=np.float32))
        token = choose(step_logits, sample=sample, temperature=temperature, top_k=top_k, top_p=top_p, noise=draws)
        ids.append(token)
        if token in stop:
            stopped = "eos"
            break
        if step + 1 < max_new_tokens:
            step_logits = model.forward(np.array([token]), caches=caches, last_only=True).logits[0]
    new = np.array(ids, dtype=np.int64)
    return Generation(prompt_ids, new, model.token_strings(new), model.decode(new),
                      np.stack(all_logits), stopped)
