"""Run an example through the core with a recorder, producing the Trace the explainer reads.

Every number comes from the core's own functions (`MultiHeadAttention`, `qkv.attention`,
`qkv.residual`, `merge_heads`, `attention_columns`) called with ``record=``. The by-hand mode runs
the same calls again with a `ByHand` recorder, which rounds each intermediate and hands it back.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..attention import attention, attention_columns, residual
from ..errors import InputError
from ..heads import merge_heads
from ..mha import MultiHeadAttention
from ..spec import Spec, resolve_query
from ..trace import Recorder, Trace, emit, scoped
from .byhand import ByHand, digits_for, record_drift

__all__ = ["trace_spec", "traced", "check_digits"]



def check_digits(digits: Any) -> int | None:
    if digits is None:
        return None
    if isinstance(digits, bool) or not isinstance(digits, int) or not 0 <= digits <= 12:
        raise InputError.keyed("error.decimals.range", field="--digits", value=repr(digits), low=0, high=12)
    return digits


def traced(compute: Callable[[Recorder, Callable], None], trace: Trace, *, by_hand: bool,
           digits: int | None) -> Trace:
    """Run ``compute(record, inputs)`` exactly into ``trace``; with by_hand, again with rounding.

    ``inputs(name, array)`` is how compute receives its given numbers: unchanged in the exact run,
    rounded to the shown digits in the by-hand run (a person starts from the numbers printed).
    """
    digits = check_digits(digits)
    compute(trace, lambda name, array: array)
    if by_hand:
        table = digits if digits is not None else trace.meta.get("digits", {})
        recorder = ByHand(trace, lambda name: digits_for(name, table))
        compute(recorder, recorder.round)
        record_drift(trace)
        trace.meta["by_hand"] = {"digits": digits}
    return trace


# --------------------------------------------------------------------------- attention examples
def trace_spec(spec: Spec, *, query: Any = None, by_hand: bool = False, digits: int | None = None,
               meta: dict | None = None, scale: float | None = None) -> Trace:
    """The Trace of one attention example (self-, cross- or multi-head attention, W_O, R + Y).

    scale: what multiplies q·kᵀ (default 1/√d_k): a what-if's temperature, or 1 for no √d_k.
    """
    if query is not None and spec.tokens_ko and query in spec.tokens_ko and query not in spec.tokens:
        query = spec.tokens_ko.index(query)          # "토큰 3" names the row "token 3" names
    followed = spec.query if query is None else resolve_query(query, spec.tokens, source=None, field="--query",
                                                              base=spec.token_base, tokens_ko=spec.tokens_ko)
    info = {"kind": spec.kind, "tokens": spec.tokens, "key_tokens": spec.key_tokens, "query": followed,
            "n_heads": spec.heads, "digits": spec.digits, "notes": spec.notes, "source": spec.source,
            "causal": spec.causal, "head_base": spec.head_base, "token_base": spec.token_base}
    if spec.tokens_ko:
        info["tokens_ko"] = list(spec.tokens_ko)
    if spec.example:
        info["example"] = spec.example
    if spec.post:
        info["post"] = spec.post
    info.update(meta or {})
    trace = Trace(spec.title or spec.example or spec.source, info)
    traced(lambda record, inputs: _run_attention(spec, record, inputs, scale), trace, by_hand=by_hand, digits=digits)
    if spec.heads > 1:
        _run_heads_separately(spec, trace, scale)
    return trace


def _layer(spec: Spec, inputs: Callable, w_o=None) -> MultiHeadAttention:
    b = spec.biases
    return MultiHeadAttention(inputs("w_q", spec.w_q), inputs("w_k", spec.w_k), inputs("w_v", spec.w_v),
                              w_o if w_o is not None else inputs("w_o", spec.w_o), spec.heads,
                              b_q=b.get("b_q"), b_k=b.get("b_k"), b_v=b.get("b_v"), b_o=b.get("b_o"))


def _run_attention(spec: Spec, record: Recorder, inputs: Callable, scale: float | None = None) -> None:
    x = inputs("x", spec.x)
    memory = None if spec.memory is None else inputs("memory", spec.memory)
    if spec.w_o is None:
        # No output projection: the head outputs are the result (post 001's single-head examples).
        # W_O is unused here; project() only needs the layer's W_Q, W_K, W_V.
        layer = _layer(spec, inputs, w_o=np.eye(spec.w_v.shape[1]))
        q, k, v = layer.project(x, memory, record=record)
        out = attention(q, k, v, spec.mask, causal=spec.causal, scale=scale, record=record)   # (H, Tq, Dv)
        if spec.heads > 1:
            emit(record, "concat", merge_heads(out), formula="Concat(head₁, …, head_h)")
        return
    layer = _layer(spec, inputs)
    y = layer(x, memory, mask=spec.mask, causal=spec.causal, scale=scale, record=record)
    if spec.residual:
        residual(x, y, record=record)


def _run_heads_separately(spec: Spec, trace: Trace, scale: float | None = None) -> None:
    """Each head alone, as the layer's one-head layer (`MultiHeadAttention.single`: its own column slices
    and the layer's options), under "head i/…".

    Records heads_check/concat and heads_check/y: separate minus fused (zero up to rounding).
    """
    fused = MultiHeadAttention(spec.w_q, spec.w_k, spec.w_v,
                               spec.w_o if spec.w_o is not None else np.eye(spec.w_v.shape[1]), spec.heads,
                               **spec.biases)
    outs, shares = [], []
    for i in range(spec.heads):
        record = scoped(trace, f"head {i + 1}")
        share = fused.single(i)(spec.x, spec.memory, mask=spec.mask, causal=spec.causal, scale=scale, record=record)
        outs.append(trace[f"head {i + 1}/out"].value[0])
        shares.append(share)
    concat = np.concatenate(outs, axis=-1)                                         # (Tq, H·Dv)
    diff = concat - trace["concat"].value
    trace("heads_check/concat", diff, formula="Concat(z₁, …, z_h) − H",
          max_abs=float(np.max(np.abs(diff))))
    if spec.w_o is not None:
        y = sum(shares) + (spec.biases["b_o"] if "b_o" in spec.biases else 0.0)
        diff = y - trace["y"].value
        trace("heads_check/y", diff, formula="Σ_h z_h·W_O[h] − Y", max_abs=float(np.max(np.abs(diff))))


# --------------------------------------------------------------------------- multi-head (post 001)
def trace_multi_head(data: dict, first_head: Trace, *, query: int, by_hand: bool, digits: int | None,
                     meta: dict) -> Trace:
    """The multi-head step of «도해와 최소 사례로 직관적으로 이해하는 Self-attention, Cross-attention,
    Multi-head Attention»: three head outputs for one token, concatenated, times W_O.

    Head 1's output is taken from ``first_head`` (the self-attention example's trace, computed);
    heads 2 and 3 are given numbers. In by-hand mode each is rounded to the digits shown first,
    as the post does when it multiplies the printed vectors.
    """
    z1 = first_head["out"].value[0, query]                                         # (Dv,)
    given = data["given_heads"]
    w_o = data["w_o"]
    trace = Trace(meta.get("example", "multi-head"), meta)

    def compute(record: Recorder, inputs: Callable) -> None:
        heads = np.stack([z1] + [inputs("heads", z) for z in given])[:, None, :]   # (H, 1, Dv)
        heads = emit(record, "out", heads, formula="z⁽ʰ⁾")
        concat = emit(record, "concat", merge_heads(heads), formula="Concat(z⁽¹⁾, …, z⁽ʰ⁾)")   # (1, H·Dv)
        weights_o = emit(record, "w_o", inputs("w_o", w_o), formula="W_O")
        emit(record, "y", concat @ weights_o, formula="z_final = Concat(z⁽¹⁾, …, z⁽ʰ⁾)·W_O")

    return traced(compute, trace, by_hand=by_hand, digits=digits)


# --------------------------------------------------------------------------- group meeting (post 002)
def trace_group_meeting(data: dict, notation: Trace, *, by_hand: bool, digits: int | None, meta: dict,
                        scale: float = 1.0) -> Trace:
    """“어텐션이 조모임이라면”: compatibility scores → softmax weights → a blend of answers, in two meetings;
    then the paper's row form next to the column form, on the Q, K, V of “도해와 최소 사례로 …”.

    Each meeting's scores are fed to `qkv.attention` as keys of width 1 with the query [1] and
    scale 1 (the post does not scale its scores), so Q·Kᵀ is exactly the given scores; a what-if's
    ``scale`` multiplies them.
    """
    trace = Trace(meta.get("example", "group-meeting"), meta)
    q = notation["q"].value
    k = notation["k"].value
    v = notation["v"].value

    def compute(record: Recorder, inputs: Callable) -> None:
        for scene in data["scenes"]:
            rec = scoped(record, scene["name"])
            scores = inputs("scores", scene["scores"])[:, None]                     # (Tk, 1): keys of width 1
            values = emit(rec, "v", inputs("v", scene["values"]), formula="V")
            attention(np.ones((1, 1)), scores, values, scale=scale, record=rec)
        rows = scoped(record, "rows")
        qr, kr, vr = (emit(rows, n, inputs(f"rows/{n}", a)) for n, a in (("q", q), ("k", k), ("v", v)))
        out_rows = attention(qr, kr, vr, record=rows)                                    # (T, Dv)
        out_cols, weights_cols = attention_columns(qr.T, kr.T, vr.T, return_weights=True)  # (Dv, T), (Tk, Tq)
        emit(record, "columns/weights", weights_cols, formula="softmax(KᵀQ/√d_k)")
        out_cols = emit(record, "columns/out", out_cols, formula="V·softmax(KᵀQ/√d_k)")
        diff = out_cols.T - out_rows
        record("columns/difference", diff, formula="(V·softmax(KᵀQ/√d_k))ᵀ − softmax(QKᵀ/√d_k)·V",
               max_abs=float(np.max(np.abs(diff))))

    return traced(compute, trace, by_hand=by_hand, digits=digits)
