"""The neuron view as text (`qkv example --terms`, `qkv explain --terms`): one query's score against each key, q·k,
written dimension by dimension — each product q_i·k_i, their sum Σ (the score), then ÷ √d_k (the scaled score).

The products come from `qkv.analysis.score_terms` (float64, from the trace's recorded q and k); this module only
formats them, and writes each equation so that it is true as printed: "=" when the printed numbers give the printed
result at the printed decimals, else "≈" and a note that the result is of the unrounded numbers. Tokens and heads
are numbered as the example's post numbers them (`qkv.trace.token_number`, `head_number`).
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np

from ..errors import InputError
from ..trace import Trace, head_number, in_language, token_number
from .parts import attention_parts
from .texts import text

__all__ = ["terms_text"]

NEEDED = ("q_heads", "k_heads", "scores", "scaled_scores")


def _fmt(value: float, digits: int) -> str:
    out = f"{value:.{digits}f}"
    return "0." + "0" * digits if out.lstrip("-").strip("0.") == "" else out     # no "-0.0000"


def _units(printed: str, digits: int) -> int:
    return int((Decimal(printed) * (10 ** digits)).to_integral_value())


def terms_text(trace: Trace, *, lang: str = "en", key: int | None = None, digits: int = 4) -> str:
    """The followed query's (``trace.meta["query"]``) q·k with every key (or only ``key``, a 0-based key row), term by
    term, in every head of the trace's first attention part that records q, k and the scores. InputError when the
    trace has none (the scores were given, as in the group meeting, or only the heads' outputs, as in the
    multi-head example) or ``key`` is no key row."""
    def t(name: str, **values) -> str:
        return text(lang, f"terms.{name}", **values)

    from ..analysis import score_terms

    shown = in_language(trace, lang)
    parts = [p for p in attention_parts(trace) if all(p.prefix + name in trace for name in NEEDED)]
    if not parts:
        raise InputError.keyed("error.terms.no_qk", field="--terms")
    part = parts[0]
    meta = shown.meta
    q_tokens = list(meta.get("tokens") or [])
    k_tokens = list(meta.get("key_tokens") or q_tokens)
    query = int(trace.meta.get("query") or 0)
    scores = np.asarray(trace[part.prefix + "scores"].value)
    heads, k_count = (scores.shape[0], scores.shape[-1]) if scores.ndim == 3 else (1, scores.shape[-1])
    if key is not None and not 0 <= key < k_count:
        raise InputError.keyed("error.terms.key", field="--key", value=token_number(meta, key), first=token_number(meta, 0),
                               last=token_number(meta, k_count - 1))
    formula = trace[part.prefix + "scaled_scores"].formula or ""
    by_root = "1/√d_k" in formula
    q_name = q_tokens[query] if query < len(q_tokens) else str(query)
    lines = []
    for head in range(heads):
        lines.append(t("title", q=q_name, qn=token_number(meta, part.q_from + query), head=head_number(meta, head)))
        for j in ([key] if key is not None else range(k_count)):
            found = score_terms(trace, query=query, key=j, head=head, prefix=part.prefix)
            dk = len(found["terms"])
            if j == (key if key is not None else 0):
                lines.append(t("lead", dk=dk))
                if found["rotated"]:
                    lines.append(t("rotated"))
            k_name = k_tokens[j] if j < len(k_tokens) else str(j)
            lines.append("")
            lines.append(t("pair", q=q_name, k=k_name, kn=token_number(meta, j)))
            q_txt = [_fmt(v, digits) for v in found["q"]]
            k_txt = [_fmt(v, digits) for v in found["k"]]
            p_txt = [_fmt(v, digits) for v in found["terms"]]
            width = max(len(cell) for cell in q_txt + k_txt + p_txt + ["q_i·k_i"])
            lines.append(f"  {'i':>3}  {'q_i':>{width}}  {'k_i':>{width}}  {'q_i·k_i':>{width}}")
            exact_products = True
            for i in range(dk):
                lines.append(f"  {i:>3}  {q_txt[i]:>{width}}  {k_txt[i]:>{width}}  {p_txt[i]:>{width}}")
                product = Decimal(q_txt[i]) * Decimal(k_txt[i])
                if round(product, digits) != Decimal(p_txt[i]):
                    exact_products = False
            if not exact_products:
                lines.append("  " + t("products_unrounded"))
            total = _fmt(found["sum"], digits)
            adds = sum(_units(p, digits) for p in p_txt) == _units(total, digits)
            written = " + ".join(p if n == 0 or not p.startswith("-") else f"({p})" for n, p in enumerate(p_txt))
            line = f"  Σ q_i·k_i = {written} {'=' if adds else '≈'} {total}"
            if not adds:
                line += " " + t("sum_unrounded")
            score = _fmt(found["score"], digits)
            line += " = q·k" if score == total else "; " + t("recorded", score=score)
            lines.append(line)
            scaled = _fmt(found["scaled"], digits)
            if by_root:
                holds = abs(float(score) / np.sqrt(dk) - float(scaled)) <= 0.5 * 10 ** -digits + 1e-12
                lines.append(f"  {score} ÷ √{dk} {'=' if holds else '≈'} {scaled} " + t("scaled") +
                             ("" if holds else " " + t("scaled_unrounded")))
            else:
                lines.append("  " + t("scaled_other", formula=formula, scaled=scaled))
        lines.append("")
    return "\n".join(lines)
