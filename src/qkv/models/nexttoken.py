"""The next token of a decoder, and which heads moved the last position most — from one forward pass.

    ids (T,) ─ CausalLM.forward(record=…) ─ logits (T, V) ─ the last row ℓ (V,)
                 │ per layer l, at the last position t = T − 1:
                 │   z = Concat(head₁, …, head_H)[t]  (H·Dv,)   W_O (H·Dv, D)   Y[t] = z·W_O (+ b_O)
                 └─ head h's share of Y[t]:  c_h = z^h · W_O^h  (D,), W_O^h = rows h·Dv … (h+1)·Dv − 1 of W_O

    p_T = softmax(ℓ / T)                  the next-token probabilities at temperature T (T > 0)
    ‖c_h‖                                 how far head h moved the last token's residual stream in layer l
    share_h = ‖c_h‖ / Σ_g ‖c_g‖           its part of the layer's heads' moves (Σ_h c_h + b_O = Y[t], but
                                          vectors can cancel: ‖Y[t] − b_O‖ ≤ Σ_g ‖c_g‖)

Everything is read from the model's own forward pass (`CausalLM.forward` with a recorder keeping each
layer's ``attention/concat`` and ``attention/w_o``): the logits are the ones `generate` and
`next_token_probabilities` use, and c_h are slices of the same product that made Y. The softmax is
`qkv.attention.softmax`, in float64.

Where Y is not what the residual stream receives the result says so (``residual``): "y" (pre-norm,
parallel blocks: x + Y), "normed" (Gemma 2/3 add N_out(Y), a norm of the sum), "post-norm" (OPT-350m:
N(x + Y)). ‖c_h‖ is always the head's part of Y, before any such norm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..attention import softmax
from ..errors import InputError

__all__ = ["NextToken", "next_token", "TEMPERATURES", "MAX_K"]

TEMPERATURES = (0.1, 0.2, 0.3, 0.5, 0.7, 0.85, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0)
"""The temperatures a page's slider steps through (each one's probabilities computed here, in Python)."""
MAX_K = 50
"""The most next tokens listed."""


@dataclass(frozen=True, eq=False)
class NextToken:
    """What `next_token` found. Shapes: V the vocabulary, L layers, H heads, D the model width.

    tokens: the text's tokens (the model's strings); logits (V,) float64: the last position's logits;
    top (k,): token ids by logit, largest first (ties: the smaller id first); top_tokens: their strings;
    head_norms (L, H): ‖z^h·W_O^h‖ at the last position; head_shares (L, H): each row's norms over
    their sum (0 for a row of zeros); attention_norms (L,): ‖Y[t]‖, the whole attention output there
    (with b_O); bias_norms (L,): ‖b_O‖ (0 without a bias); residual: what each layer adds to the
    stream ("y", "normed" or "post-norm", see the module's docstring); model: the model's name.
    """

    model: str
    tokens: tuple[str, ...]
    logits: np.ndarray
    top: np.ndarray
    top_tokens: tuple[str, ...]
    head_norms: np.ndarray
    head_shares: np.ndarray
    attention_norms: np.ndarray
    bias_norms: np.ndarray
    residual: tuple[str, ...]
    temperatures: tuple[float, ...] = field(default=TEMPERATURES)

    def probabilities(self, temperature: float = 1.0) -> np.ndarray:
        """(V,): softmax(logits / temperature), float64. temperature must be finite and > 0."""
        return softmax(self.logits / check_temperature(temperature))

    def top_probabilities(self, temperature: float = 1.0) -> np.ndarray:
        """(k,): the probabilities of the `top` tokens at this temperature (their sum ≤ 1: the rest is
        spread over the other V − k tokens)."""
        return self.probabilities(temperature)[self.top]

    def ranking(self) -> list[tuple[int, int, float]]:
        """Every (layer, head, ‖c_h‖), largest first (ties: lower layer, then lower head)."""
        layers, heads = self.head_norms.shape
        cells = [(l, h, float(self.head_norms[l, h])) for l in range(layers) for h in range(heads)]
        return sorted(cells, key=lambda cell: (-cell[2], cell[0], cell[1]))

    def to_dict(self, temperature: float | None = None) -> dict:
        """JSON-ready: the top tokens with their logits and their probabilities at every temperature of
        ``temperatures`` (rows in that order; ``rest``: 1 − their sum), optionally also at ``temperature``;
        the head norms and shares; the order of heads by norm."""
        temps = list(self.temperatures)
        table = [self.top_probabilities(t) for t in temps]
        out = {"model": self.model, "tokens": list(self.tokens), "position": len(self.tokens) - 1,
               "last": self.tokens[-1], "vocab": int(self.logits.shape[0]),
               "top": [{"id": int(i), "token": tok, "logit": float(self.logits[i])}
                       for i, tok in zip(self.top, self.top_tokens)],
               "temperatures": temps, "probabilities": [[float(p) for p in row] for row in table],
               "rest": [float(max(0.0, 1.0 - row.sum())) for row in table],
               "head_norms": self.head_norms.tolist(), "head_shares": self.head_shares.tolist(),
               "attention_norms": self.attention_norms.tolist(), "bias_norms": self.bias_norms.tolist(),
               "residual": list(self.residual),
               "ranking": [[l, h] for l, h, _ in self.ranking()]}
        if temperature is not None:
            row = self.top_probabilities(temperature)
            out["at"] = {"temperature": float(temperature), "probabilities": [float(p) for p in row],
                         "rest": float(max(0.0, 1.0 - row.sum()))}
        return out


def check_temperature(temperature: Any, *, field: str = "temperature") -> float:
    """A temperature as a float > 0 and finite, else `InputError` naming ``field``."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float, np.integer, np.floating)) \
            or not np.isfinite(temperature) or temperature <= 0:
        raise InputError.keyed("error.next.temperature", field=field, value=repr(temperature)[:40])
    return float(temperature)


def check_k(k: Any, vocab: int, *, field: str = "k") -> int:
    """k as a whole number 1 … min(MAX_K, vocab), else `InputError` naming ``field``."""
    top = min(MAX_K, vocab)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= top:
        raise InputError.keyed("error.next.k", field=field, value=repr(k)[:40], top=top)
    return int(k)


def next_token(model: Any, text: str, *, k: int = 10, temperatures: Sequence[float] = TEMPERATURES) -> NextToken:
    """The model's next token after ``text``: the k likeliest and each head's move of the last position.

    Args:
      model: a decoder (`qkv.models.CausalLM`: GPT-2, the Llama family, …); an encoder is refused.
      text: the text read (at least one token).
      k: how many next tokens to list, 1 … 50 (and at most the vocabulary).
      temperatures: the temperatures whose probabilities `NextToken.to_dict` lists (each > 0).
    Returns a `NextToken`. One forward pass, recorded: see the module's docstring.
    Raises `qkv.InputError` naming ``model``, ``text``, ``k`` or ``temperatures``.
    """
    from .decoder import CausalLM

    if not isinstance(model, CausalLM):
        raise InputError.keyed("error.next.not_decoder", field="model", kind=type(model).__name__)
    temps = tuple(check_temperature(t, field="temperatures") for t in temperatures)
    if not temps:
        raise InputError.keyed("error.next.temperature", field="temperatures", value="()")
    ids = model.token_ids(text)
    k = check_k(k, model.config.vocab_size)
    kept: dict[str, np.ndarray] = {}

    def record(name: str, value, **meta):
        layer, _, rest = name.partition("/")
        if rest in ("attention/concat", "attention/y"):
            kept[f"{layer}/{rest}"] = np.array(value[-1], dtype=np.float64)    # the last position only
        return None

    logits = np.asarray(model.forward(ids, record=record).logits[-1], dtype=np.float64)     # (V,)
    layers, heads = model.config.n_layers, model.config.n_heads
    norms = np.zeros((layers, heads))
    attention_norms, bias_norms, residual = np.zeros(layers), np.zeros(layers), []
    for index, block in enumerate(model.blocks):
        attention = block.attention
        z = kept[f"layer {index}/attention/concat"]                                 # (H·Dv,)
        w_o = np.asarray(attention.w_o, dtype=np.float64)                          # (H·Dv, D)
        width = z.shape[0] // heads                                                 # Dv
        parts = np.einsum("hv,hvd->hd", z.reshape(heads, width), w_o.reshape(heads, width, -1))   # (H, D): c_h
        norms[index] = np.linalg.norm(parts, axis=-1)                               # ‖z^h·W_O^h‖
        attention_norms[index] = np.linalg.norm(kept[f"layer {index}/attention/y"])
        if attention.b_o is not None:
            bias_norms[index] = np.linalg.norm(np.asarray(attention.b_o, dtype=np.float64))
        residual.append("post-norm" if block.norm_position == "post"
                        else "normed" if block.attention_out_norm is not None else "y")
    totals = norms.sum(axis=1, keepdims=True)
    shares = np.divide(norms, totals, out=np.zeros_like(norms), where=totals > 0)
    order = np.lexsort((np.arange(logits.shape[0]), -logits))[:k]                 # by logit, ties by id
    return NextToken(model=str(model.name), tokens=tuple(model.token_strings(ids)), logits=logits, top=order,
                     top_tokens=tuple(model.token_strings(order)), head_norms=norms, head_shares=shares,
                     attention_norms=attention_norms, bias_norms=bias_norms, residual=tuple(residual),
                     temperatures=temps)
