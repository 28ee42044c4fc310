"""`qkv.torch.MultiheadAttention`: torch.nn.MultiheadAttention's interface, qkv's attention.

Same constructor, same parameters under the same names (so ``state_dict`` / ``load_state_dict``
work both ways), same ``forward`` arguments and return values. The projections are torch's
nn.Linear convention (weights stored (out, in), ``F.linear``); the attention itself is
`qkv.attention` on the projected heads.

Masks at this boundary (torch's conventions, converted once, explicitly):

====================  ======================================  ====================================
torch argument         torch meaning                           what qkv receives
====================  ======================================  ====================================
bool ``attn_mask``     True = this key is masked OUT           ``mask = ~attn_mask`` (True = may attend)
float ``attn_mask``    added to the scaled scores (-inf blocks) ``bias = attn_mask``
bool key_padding_mask  True = padding, ignore this key         ``mask &= ~key_padding_mask`` (B, 1, 1, S)
float key_padding_mask added to the scaled scores              ``bias += key_padding_mask`` (B, 1, 1, S)
``is_causal``          hint that attn_mask is causal            attn_mask is used as given; without
                                                               one, qkv's causal mask (torch raises)
====================  ======================================  ====================================

One deliberate difference: a query row whose keys are all masked (by either mask, or -inf in a
float mask) gets a zero output row, zero weights and zero gradients. torch.nn.MultiheadAttention
returns NaN there.
"""

from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.init import constant_, xavier_normal_, xavier_uniform_
from torch.nn.modules.linear import NonDynamicallyQuantizableLinear

from ..attention import attention, causal_mask
from ..heads import merge_heads, split_heads
from ..kernels.autograd import in_fresh_thread

__all__ = ["MultiheadAttention", "InputShapeError", "MaskDtypeError"]


class MultiheadAttention(nn.Module):
    """Multi-head attention with torch.nn.MultiheadAttention's constructor and forward.

    Args (as torch's):
      embed_dim: E, the model width; num_heads: H (E % H == 0, head width Dh = E / H).
      dropout: dropout probability on the attention weights (training mode only).
      bias: in- and out-projection biases. add_bias_kv: learned key/value rows appended to the
      keys and values. add_zero_attn: a zero key/value row appended after the heads are split.
      kdim, vdim: widths of key and value inputs (default E). batch_first: inputs (B, T, E)
      instead of (T, B, E). device, dtype: of the parameters.

    Parameters (state_dict keys as torch's): in_proj_weight (3E, E) when kdim == vdim == E, else
    q_proj_weight (E, E), k_proj_weight (E, kdim), v_proj_weight (E, vdim); in_proj_bias (3E,);
    out_proj.weight (E, E), out_proj.bias (E,); bias_k, bias_v (1, 1, E).
    """

    __constants__ = ["batch_first"]

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None, dtype=None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} "
                             f"and num_heads={num_heads}")
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim={embed_dim} does not split into num_heads={num_heads} heads "
                             f"(embed_dim % num_heads = {embed_dim % num_heads})")
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        # Created in torch's order, so that one seed gives both modules the same initial weights.
        if self._qkv_same_embed_dim:
            self.in_proj_weight = nn.Parameter(torch.empty((3 * embed_dim, embed_dim), **factory))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = nn.Parameter(torch.empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = nn.Parameter(torch.empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = nn.Parameter(torch.empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = nn.Parameter(torch.empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = nn.Parameter(torch.empty((1, 1, embed_dim), **factory))
            self.bias_v = nn.Parameter(torch.empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """torch's initialisation: Xavier-uniform projections, zero biases, Xavier-normal bias_k/v."""
        if self._qkv_same_embed_dim:
            xavier_uniform_(self.in_proj_weight)
        else:
            xavier_uniform_(self.q_proj_weight)
            xavier_uniform_(self.k_proj_weight)
            xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            constant_(self.in_proj_bias, 0.0)
            constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            xavier_normal_(self.bias_k)
            xavier_normal_(self.bias_v)

    # ------------------------------------------------------------------ forward
    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Optional[Tensor] = None,
                need_weights: bool = True, attn_mask: Optional[Tensor] = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> Tuple[Tensor, Optional[Tensor]]:
        """Attention of query over key/value, torch's shapes and conventions.

        Args:
          query: (L, B, E), or (B, L, E) with batch_first, or (L, E) unbatched.
          key: (S, B, kdim) / (B, S, kdim) / (S, kdim); value: the same with vdim.
          key_padding_mask: (B, S) or (S,) unbatched; bool True = ignore this key, or float added.
          need_weights: also return the attention weights.
          attn_mask: (L, S) or (B·H, L, S); bool True = may NOT attend, or float added to scores.
          average_attn_weights: average the returned weights over heads.
          is_causal: a hint that attn_mask is causal; with no attn_mask, a causal mask is used.

        Returns:
          (attn_output, attn_weights): output shaped like query (last dim E); weights (B, L, S)
          averaged or (B, H, L, S) per head ((L, S) / (H, L, S) unbatched), or None when
          need_weights is False. S counts the bias_k and zero-attention keys when present.
          A query with no allowed key gets zeros (torch: NaN).

        Under ``torch.jit.script`` this signature is compiled and the body below runs in Python
        (`torch.jit.ignore`): a scripted model runs, but ``torch.jit.save`` cannot export it.
        """
        return self._forward(query, key, value, key_padding_mask, need_weights, attn_mask,
                             average_attn_weights, is_causal)

    @torch.jit.ignore
    def _forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Optional[Tensor],
                 need_weights: bool, attn_mask: Optional[Tensor], average_attn_weights: bool,
                 is_causal: bool) -> Tuple[Tensor, Optional[Tensor]]:
        """forward's body (Python: qkv.attention is not TorchScript). Under torch.jit.script ``self``
        is the scripted module, which keeps attributes but not Python methods: hence the helpers are
        called through the class."""
        if is_causal and attn_mask is not None and key_padding_mask is None and not need_weights:
            # torch's rule: with no padding mask and no weights asked for, the is_causal hint replaces
            # attn_mask (torch then never reads it, whatever its shape); the causal mask is applied.
            attn_mask = None
        batched = MultiheadAttention._check_shapes(self, query, key, value, key_padding_mask, attn_mask)
        if not batched:                                                     # (L, E) → (1, L, E)
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            key_padding_mask = None if key_padding_mask is None else key_padding_mask.unsqueeze(0)
        elif not self.batch_first:                                          # (L, B, E) → (B, L, E)
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        b, tq, tk = query.shape[0], query.shape[1], key.shape[1]
        if is_causal and attn_mask is None:
            attn_mask = ~causal_mask(tq, tk, like=query)                    # torch's convention: True = blocked
        q, k, v = MultiheadAttention._project(self, query, key, value)                          # (B, T, E) each
        if self.bias_k is not None:                                         # one learned key/value more
            k = torch.cat([k, self.bias_k.expand(b, 1, self.embed_dim)], dim=1)
            v = torch.cat([v, self.bias_v.expand(b, 1, self.embed_dim)], dim=1)
        q, k, v = (split_heads(t, self.num_heads) for t in (q, k, v))       # (B, H, T, Dh)
        if self.add_zero_attn:                                              # a zero key/value row per head
            zeros = k.new_zeros(b, self.num_heads, 1, self.head_dim)
            k, v = torch.cat([k, zeros], dim=2), torch.cat([v, zeros], dim=2)
        extra = k.shape[2] - tk
        mask, bias = _to_qkv_masks(key_padding_mask, attn_mask, b, self.num_heads, extra, q.dtype)
        keep = None
        if self.training and self.dropout > 0:                              # dropout on the weights
            keep = _dropout_multiplier((b, self.num_heads, tq, k.shape[2]), self.dropout, q)
        if torch.compiler.is_compiling():                                   # one opaque op for the compiler
            heads, weights = torch.ops.qkv.mha_attention(q, k, v, mask, bias, keep, need_weights)
            weights = weights if need_weights else None
        else:
            heads, weights = _attend(q, k, v, mask, bias, keep, need_weights)   # heads (B, H, L, Dh)
        # out_proj's linear map, called as F.linear: under torch.jit.script self.out_proj is a script
        # module that this Python body cannot call.
        out = F.linear(merge_heads(heads), self.out_proj.weight, self.out_proj.bias)   # (B, L, E)
        if weights is not None and average_attn_weights:
            weights = weights.mean(dim=1)                                   # (B, L, S)
        if not batched:
            return out.squeeze(0), None if weights is None else weights.squeeze(0)
        return (out if self.batch_first else out.transpose(0, 1)), weights

    def _project(self, query, key, value):
        """Q, K, V = query·W_Qᵀ + b_Q, key·W_Kᵀ + b_K, value·W_Vᵀ + b_V (torch's (out, in) weights)."""
        if self._qkv_same_embed_dim:
            w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        b_q, b_k, b_v = (None, None, None) if self.in_proj_bias is None else self.in_proj_bias.chunk(3)
        return _linear(query, w_q, b_q), _linear(key, w_k, b_k), _linear(value, w_v, b_v)

    def merge_masks(self, attn_mask: Optional[Tensor], key_padding_mask: Optional[Tensor],
                    query: Tensor) -> Tuple[Optional[Tensor], Optional[int]]:
        """torch.nn.MultiheadAttention.merge_masks: the masks of torch's fused encoder kernel.

        torch's nn.TransformerEncoderLayer calls this in eval mode (no autograd, no hooks) before
        running its own fused kernel on this module's parameters (see docs/torch.md). torch's
        meaning and types, unchanged:
          attn_mask: (L, L) or (B·H, L, L), or None; key_padding_mask: (B, L) or None;
          query: (B, L, E).
        Returns (merged, mask_type): (key_padding_mask, 1) alone; with an attn_mask, that mask
        expanded to (B, H, L, L) and type 2, plus the padding mask broadcast over heads and
        queries when both are given (they are added: float masks, as torch's layer passes them);
        (None, None) without masks.
        """
        merged: Optional[Tensor] = None
        mask_type: Optional[int] = None
        if key_padding_mask is not None:
            merged, mask_type = key_padding_mask, 1
        if attn_mask is not None:
            batch, length = query.shape[0], query.shape[1]
            if attn_mask.dim() == 3:
                full = attn_mask.view(batch, -1, length, length)
            else:
                full = attn_mask.view(1, 1, length, length).expand(batch, self.num_heads, -1, -1)
            merged, mask_type = full, 2
            if key_padding_mask is not None:
                padding = key_padding_mask.view(batch, 1, 1, length).expand(-1, self.num_heads, -1, -1)
                merged = full + padding
        return merged, mask_type

    def _check_shapes(self, query, key, value, key_padding_mask, attn_mask) -> bool:
        """torch's shape rules; returns whether batched. A wrong shape raises `InputShapeError`, a
        mask of another dtype `MaskDtypeError`: ValueError / TypeError as qkv raises everywhere, and
        AssertionError as torch's module raises, so code written against torch catches them too.
        Messages start with torch's sentence and add the shapes."""
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{name} must be a torch tensor, got {type(t).__name__}")
            if t.is_nested:
                raise InputShapeError(f"{name} is a nested tensor; this module takes dense tensors: pad it "
                                      "(nt.to_padded_tensor(0.0)) and pass key_padding_mask")
        if query.dim() not in (2, 3):
            raise InputShapeError(f"query should be unbatched 2D or batched 3D tensor but received "
                                  f"{query.dim()}-D query tensor (shape {tuple(query.shape)})")
        batched = query.dim() == 3
        want = query.dim()
        if key.dim() != want or value.dim() != want:
            raise InputShapeError(f"expected `key` and `value` to be {want}-D but found {key.dim()}-D and "
                                  f"{value.dim()}-D tensors respectively (query is {want}-D)")
        for name, t, width in (("query", query, self.embed_dim), ("key", key, self.kdim), ("value", value, self.vdim)):
            if t.shape[-1] != width:
                raise InputShapeError(f"{name} has shape {tuple(t.shape)} but this module expects width {width} "
                                      f"(embed_dim={self.embed_dim}, kdim={self.kdim}, vdim={self.vdim})")
        if key.shape[:-1] != value.shape[:-1]:
            raise InputShapeError(f"key has shape {tuple(key.shape)} and value has shape {tuple(value.shape)}: "
                                  "their sequence and batch dimensions must match")
        batch_axis = 0 if self.batch_first else 1
        if batched and query.shape[batch_axis] != key.shape[batch_axis]:
            raise InputShapeError(f"query has shape {tuple(query.shape)} and key has shape {tuple(key.shape)}: "
                                  f"batch sizes differ (batch_first={self.batch_first})")
        b = query.shape[batch_axis] if batched else 1
        tq = query.shape[batch_axis ^ 1] if batched else query.shape[0]
        tk = key.shape[batch_axis ^ 1] if batched else key.shape[0]
        for name, m in (("key_padding_mask", key_padding_mask), ("attn_mask", attn_mask)):
            if m is not None and not (m.dtype == torch.bool or torch.is_floating_point(m)):
                raise MaskDtypeError(f"only bool and floating types of masks are supported: {name} has dtype "
                                     f"{m.dtype} (bool: True = masked out; floating: added to the scores)")
        if key_padding_mask is not None:
            expected = (b, tk) if batched else (tk,)
            if key_padding_mask.dim() != len(expected):
                raise InputShapeError(f"expected `key_padding_mask` to be `None` or {len(expected)}-D but found "
                                      f"{key_padding_mask.dim()}-D tensor instead (shape "
                                      f"{tuple(key_padding_mask.shape)}, expected {expected})")
            if tuple(key_padding_mask.shape) != expected:
                raise InputShapeError(f"key_padding_mask has shape {tuple(key_padding_mask.shape)}, expected "
                                      f"{expected} " + ("(batch, source length)" if batched else
                                                        "(source length) for unbatched input"))
        if attn_mask is not None:
            allowed = [(tq, tk), (b * self.num_heads, tq, tk)]
            if attn_mask.dim() not in (2, 3):
                raise InputShapeError(f"expected `attn_mask` to be `None`, 2-D or 3-D but found "
                                      f"{attn_mask.dim()}-D tensor instead (shape {tuple(attn_mask.shape)}, "
                                      f"expected {allowed[0]} or {allowed[1]})")
            expected = allowed[attn_mask.dim() - 2]
            if tuple(attn_mask.shape) != expected:
                raise InputShapeError(f"Expected `attn_mask` shape to be {expected}, but got "
                                      f"{tuple(attn_mask.shape)} ((target length, source length) or "
                                      f"(batch·heads, target length, source length))")
        return batched


class InputShapeError(ValueError, AssertionError):
    """A query, key, value or mask of the wrong shape (torch's module raises AssertionError there)."""


class MaskDtypeError(TypeError, AssertionError):
    """A mask neither bool nor floating (torch's module raises AssertionError there)."""


def _to_qkv_masks(key_padding_mask, attn_mask, b: int, h: int, extra: int, dtype):
    """torch's masks → qkv's (mask: bool True = may attend, bias: float added), each broadcastable
    to (B, H, L, S). ``extra`` keys appended (bias_k, zero attention) are always allowed."""
    mask = bias = None
    for m, is_padding in ((key_padding_mask, True), (attn_mask, False)):
        if m is None:
            continue
        if is_padding:
            m = m[:, None, None, :]                                         # (B, S) → (B, 1, 1, S)
        elif m.dim() == 3:
            m = m.reshape(b, h, m.shape[-2], m.shape[-1])                   # (B·H, L, S) → (B, H, L, S)
        if extra:
            m = F.pad(m, (0, extra), value=False if m.dtype == torch.bool else 0.0)
        if m.dtype == torch.bool:
            allowed = ~m
            mask = allowed if mask is None else mask & allowed
        else:
            m = m.to(dtype)
            bias = m if bias is None else bias + m
    return mask, bias


def _linear(x: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    """x·Wᵀ + b as torch's module computes it. A bias of another dtype is added with torch's type
    promotion (torch's MultiheadAttention accepts a float16 in_proj_bias with float64 inputs: the
    sum is float64); F.linear alone refuses mixed dtypes."""
    if bias is None or bias.dtype == x.dtype:
        return F.linear(x, weight, bias)
    return F.linear(x, weight) + bias


def _dropout_multiplier(shape, p: float, like: Tensor) -> Tensor:
    """What dropout multiplies the weights by: 0 with probability p, else 1 / (1 - p) (F.dropout's
    rule). Drawn before the attention call so that the compiled route's backward, which computes
    the attention again, sees the same dropped weights."""
    if p >= 1:
        return torch.zeros(shape, dtype=like.dtype, device=like.device)
    keep = torch.empty(shape, dtype=like.dtype, device=like.device).bernoulli_(1 - p)
    return keep / (1 - p)


def _attend(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], bias: Optional[Tensor],
            keep: Optional[Tensor], need_weights: bool) -> Tuple[Tensor, Optional[Tensor]]:
    """qkv.attention on the heads q (B, H, L, Dh), k and v (B, H, S, Dh); mask (bool, True = may
    attend) and bias (float, added) broadcast to (B, H, L, S); keep (B, H, L, S) multiplies the
    weights (dropout) before they meet v. Returns (heads (B, H, L, Dh), weights (B, H, L, S) or None)."""
    record = None
    if keep is not None:
        def record(name, value, **_):
            # qkv.attention's recorder may replace an intermediate: the output is computed from
            # the dropped-out weights.
            return value * keep.to(value.dtype) if name == "weights" else None
    result = attention(q, k, v, mask, bias=bias, return_weights=need_weights, record=record)
    return result if need_weights else (result, None)


# ---------------------------------------------------------------------------- torch.compile route
# torch.compile cannot trace qkv.attention's Python (its checks branch on the data: non-finite keys
# under a mask take another route), so under the compiler the call is one custom operator whose body
# is the same `_attend`; its backward is a second operator that runs `_attend` again under autograd.
@torch.library.custom_op("qkv::mha_attention", mutates_args=())
def _attention_op(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], bias: Optional[Tensor],
                  keep: Optional[Tensor], need_weights: bool) -> Tuple[Tensor, Tensor]:
    heads, weights = _attend(q, k, v, mask, bias, keep, need_weights)
    # Fresh contiguous tensors (an operator's outputs may not alias its inputs; the fake below says so).
    return heads.contiguous().clone(), (weights.contiguous().clone() if weights is not None else q.new_empty(0))


@_attention_op.register_fake
def _(q, k, v, mask, bias, keep, need_weights):
    scores = q.shape[:-1] + (k.shape[-2],)
    return q.new_empty(q.shape[:-1] + (v.shape[-1],)), q.new_empty(scores if need_weights else (0,))


@torch.library.custom_op("qkv::mha_attention_backward", mutates_args=())
def _attention_backward_op(grad_heads: Tensor, grad_weights: Tensor, q: Tensor, k: Tensor, v: Tensor,
                           mask: Optional[Tensor], bias: Optional[Tensor], keep: Optional[Tensor],
                           need_weights: bool) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    def gradients():
        inputs = [t.detach().requires_grad_(True) for t in (q, k, v)]
        bias_in = None if bias is None else bias.detach().requires_grad_(True)
        with torch.enable_grad():
            heads, weights = _attend(*inputs, mask, bias_in, keep, need_weights)
            outputs, grads = [heads], [grad_heads]
            if weights is not None and grad_weights.numel():
                outputs.append(weights)
                grads.append(grad_weights)
            wrt = inputs + ([bias_in] if bias_in is not None else [])
            found = torch.autograd.grad(outputs, wrt, grads, allow_unused=True)
        found = [torch.zeros_like(w) if g is None else g for g, w in zip(found, wrt)]
        found = [g.contiguous() for g in found]
        return found[0], found[1], found[2], (found[3] if bias_in is not None else q.new_empty(0))

    return in_fresh_thread(gradients)


@_attention_backward_op.register_fake
def _(grad_heads, grad_weights, q, k, v, mask, bias, keep, need_weights):
    return (q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape),
            bias.new_empty(bias.shape) if bias is not None else q.new_empty(0))


def _setup_context(ctx, inputs, output):
    q, k, v, mask, bias, keep, need_weights = inputs
    ctx.save_for_backward(q, k, v, mask, bias, keep)
    ctx.need_weights = need_weights


def _backward(ctx, grad_heads, grad_weights):
    q, k, v, mask, bias, keep = ctx.saved_tensors
    if grad_weights is None:
        grad_weights = q.new_empty(0)
    dq, dk, dv, dbias = torch.ops.qkv.mha_attention_backward(grad_heads, grad_weights, q, k, v, mask, bias,
                                                             keep, ctx.need_weights)
    if bias is not None:
        dbias = _sum_to(dbias, bias.shape)
    return dq, dk, dv, None, (dbias if bias is not None else None), None, None


def _sum_to(grad: Tensor, shape) -> Tensor:
    """The gradient of a broadcast input: summed over the axes it was broadcast along."""
    return grad.sum_to_size(shape) if tuple(grad.shape) != tuple(shape) else grad


_attention_op.register_autograd(_backward, setup_context=_setup_context)
