"""Rotary position embedding (RoPE): queries and keys rotated by an angle that grows with position.

Pairs of a head's columns are rotated by the angle position·θᵢ, θᵢ = theta^(−2i/d), i = 0 … d/2 − 1,
in the "rotate half" layout of Hugging Face's Llama (column i pairs with column i + d/2):

    x_rot = x·cos + rotate_half(x)·sin,   rotate_half([x₁ | x₂]) = [−x₂ | x₁]
    cos, sin = cos/sin([angles | angles]),  angles (T, d/2) = positions ⊗ θ

A rotation keeps lengths, and q_m·k_n after rotating each by its own position depends only on
m − n: the score sees relative position. `qkv.MultiHeadAttention(rope=RoPE(...))` applies it to q
and k heads after projection (keys are cached rotated), positions offset by the KV cache length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _backend as compat  # array-api-compat, imported on first use
from ._backend import namespace, shape_str

__all__ = ["RoPE", "rotate_half"]


def rotate_half(x):
    """(…, d) → (…, d): [x₁ | x₂] ↦ [−x₂ | x₁], halves split at d/2 (d even)."""
    xp = namespace(x=x)
    half = x.shape[-1] // 2
    return xp.concat((-x[..., half:], x[..., :half]), axis=-1)


@dataclass(frozen=True)
class RoPE:
    """Rotary position embedding for heads of width ``head_dim``.

    theta: the base (10000 in Llama 2, 500000 in Llama 3, 1000000 in Qwen2), > 0.
    rotary_dim: rotate only the first rotary_dim columns of each head (even, ≤ head_dim; default
      all), the rest pass through unchanged (partial rotary, as GPT-NeoX and Phi).
    inv_freq: the frequencies θᵢ (rotary_dim/2 numbers) when they are not theta^(−2i/d), e.g. after
      Llama 3's frequency scaling; theta is then unused.
    float32_angles: compute θ and the angles in float32 and round cos/sin through float32, as Hugging
      Face transformers does whatever the model's dtype (needed to match its float64 outputs to
      1e-10); default False: angles in float64, exact.
    attention_factor: cos and sin are multiplied by it (YaRN's "mscale", 0.1·ln(factor) + 1), which
      scales every q·k score by its square; default 1.
    long_inv_freq, long_after: a second set of frequencies (rotary_dim/2 numbers) used for a call whose
      last position + 1 exceeds long_after (LongRoPE, Phi-3: short_factor within the original context,
      long_factor beyond it, chosen per call as transformers chooses them); default: one set.
    """

    head_dim: int
    theta: float = 10000.0
    rotary_dim: int | None = None
    inv_freq: Any = None
    float32_angles: bool = False
    attention_factor: float = 1.0
    long_inv_freq: Any = None
    long_after: int | None = None

    def __post_init__(self) -> None:
        d = self.head_dim
        if isinstance(d, bool) or not isinstance(d, int) or d < 2:
            raise ValueError(f"head_dim must be an integer ≥ 2, got {d!r}")
        r = d if self.rotary_dim is None else self.rotary_dim
        if isinstance(r, bool) or not isinstance(r, int) or r < 2 or r % 2 or r > d:
            raise ValueError(f"rotary_dim must be an even integer in [2, head_dim={d}], got {self.rotary_dim!r}")
        object.__setattr__(self, "rotary_dim", r)
        factor = self.attention_factor
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor <= 0:
            raise ValueError(f"attention_factor must be a finite positive number, got {factor!r}")
        theta = self.theta
        if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not math.isfinite(theta) or theta <= 0:
            raise ValueError(f"theta must be a finite positive number, got {theta!r}")
        if self.inv_freq is not None:
            freq = np.asarray(self.inv_freq.detach().cpu() if compat.is_torch_array(self.inv_freq)
                              else self.inv_freq, dtype=np.float64)
            if freq.shape != (r // 2,) or not np.all(np.isfinite(freq)):
                raise ValueError(f"inv_freq must hold {r // 2} finite numbers (rotary_dim/2), got shape "
                                 f"{shape_str(freq.shape)}")
            object.__setattr__(self, "inv_freq", freq)
        if (self.long_inv_freq is None) != (self.long_after is None):
            raise ValueError("long_inv_freq and long_after go together (LongRoPE's second set and where it starts)")
        if self.long_inv_freq is not None:
            long = np.asarray(self.long_inv_freq, dtype=np.float64)
            if long.shape != (r // 2,) or not np.all(np.isfinite(long)):
                raise ValueError(f"long_inv_freq must hold {r // 2} finite numbers (rotary_dim/2), got shape "
                                 f"{shape_str(long.shape)}")
            after = self.long_after
            if isinstance(after, bool) or not isinstance(after, int) or after < 1:
                raise ValueError(f"long_after must be a positive integer, got {after!r}")
            object.__setattr__(self, "long_inv_freq", long)

    def frequencies(self, xp=np, device=None, *, long: bool = False):
        """θᵢ (rotary_dim/2,) in namespace xp: float64, or float32 when float32_angles. long: the second set
        (LongRoPE's long_factor), when there is one."""
        if long and self.long_inv_freq is not None:
            freq = xp.asarray(self.long_inv_freq, device=device)
            return xp.astype(freq, xp.float32) if self.float32_angles else freq
        if self.inv_freq is not None:
            freq = xp.asarray(self.inv_freq, device=device)
            return xp.astype(freq, xp.float32) if self.float32_angles else freq
        if self.float32_angles:  # as transformers: 1.0 / (base ** (arange(0, d, 2).float() / d)), all float32
            steps = xp.astype(xp.arange(0, self.rotary_dim, 2, device=device), xp.float32)
            return 1.0 / (float(self.theta) ** (steps / self.rotary_dim))
        steps = xp.astype(xp.arange(0, self.rotary_dim, 2, device=device), xp.float64)
        return 1.0 / (float(self.theta) ** (steps / self.rotary_dim))

    def angles(self, positions, xp=np, device=None):
        """positions (…, T) integers → angles (…, T, rotary_dim/2) = position·θᵢ (float64, or float32). With
        two sets (LongRoPE), the long one when the last position + 1 exceeds long_after."""
        if compat.is_torch_array(positions) and not compat.is_torch_namespace(xp):
            positions = np.asarray(positions.detach().cpu())
        positions = xp.asarray(positions, device=device)
        if not xp.isdtype(positions.dtype, "integral"):
            raise TypeError(f"positions must be integers, got dtype {positions.dtype}")
        long = self.long_after is not None and math.prod(positions.shape) > 0 \
            and int(xp.max(positions)) + 1 > self.long_after
        freq = self.frequencies(xp, device, long=long)
        return xp.astype(positions, freq.dtype)[..., None] * freq

    def __call__(self, x, positions):
        """Rotate x (…, T, head_dim) by its positions: (T,), or (B, T) for x (B, H, T, head_dim).

        cos and sin are computed in float64 (float32 with float32_angles) in x's own library and
        then cast to x's dtype. Returns a new array of x's type, dtype and device.
        """
        xp = namespace(x=x)
        if x.ndim < 2 or x.shape[-1] != self.head_dim:
            raise ValueError(f"x has shape {shape_str(x.shape)} but RoPE expects heads of width {self.head_dim} "
                             f"(…, T, {self.head_dim})")
        angles = self.angles(positions, xp, compat.device(x))      # (…, T, r/2)
        if angles.ndim < 2 or angles.shape[-2] != x.shape[-2]:
            raise ValueError(f"positions have shape {shape_str(angles.shape[:-1])} but x has T={x.shape[-2]} "
                             f"(shape {shape_str(x.shape)})")
        if angles.ndim > 2:  # per-sequence positions (B, T): broadcast over the head axis of (B, H, T, d)
            angles = xp.expand_dims(angles, axis=-3)
        both = xp.concat((angles, angles), axis=-1)                        # (…, T, r): [angles | angles]
        cos, sin = xp.cos(both), xp.sin(both)
        if self.attention_factor != 1.0:                                  # YaRN: in the angles' dtype, as transformers
            cos, sin = cos * self.attention_factor, sin * self.attention_factor
        cos, sin = xp.astype(cos, x.dtype), xp.astype(sin, x.dtype)
        r = self.rotary_dim
        if r == self.head_dim:
            return x * cos + rotate_half(x) * sin
        part = x[..., :r]
        return xp.concat((part * cos + rotate_half(part) * sin, x[..., r:]), axis=-1)
