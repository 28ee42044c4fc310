"""One self-contained, offline interactive page of a Trace: a head view (tokens left and right, lines
weighted by attention), a matrix view, layer/head pickers, and the derivation of any clicked cell.

No network: the script, the styles and the numbers are inline; a Content-Security-Policy in the
page forbids every fetch. The numbers are the Trace's recorded steps (scores, scaled_scores, mask,
weights, q_heads, k_heads, v_heads, out), stored once, compactly:

    each value x is stored as the integer round(x · 10^digits) — exactly the decimal the page
    shows — in int16 when it fits (weights at 4 digits always do), else int32; the bytes are
    split into planes (all low bytes, then all high bytes: near-zero weights make the high
    plane compress to almost nothing), deflated, and base64-encoded. The browser inflates them
    with its built-in DecompressionStream.

512 tokens × 12 heads × 6 layers of weights are 18.9 M numbers: about 1 byte each in the file
for real (peaked) attention, ~0.3–1.3 bytes for synthetic data (see docs/pictures.md).
"""

from __future__ import annotations

import base64
import html as _html
import json
import secrets
import zlib
from importlib import resources
from typing import Any, Sequence

import numpy as np

from .. import trace as _steps
from ..trace import (BIASED_SCORES, CONCAT, K, K_HEADS, MASK, MEMORY, OUT, Q, Q_HEADS, RESIDUAL, SCALED_SCORES, SCORES,
                     V, V_HEADS, W_K, W_O, W_Q, W_V, WEIGHTS, X, Y, Trace, head_number,
                     in_language, token_number)
from . import texts
from .parts import K_ROTATED, MODIFIED_SCORES, Q_ROTATED, as_heads, as_layers, attention_parts, title_of, token_labels
from .style import BLUES_STOPS, DIGITS, HEAD_COLOURS, LEGEND_TICKS, WEIGHT_GAMMA

__all__ = ["trace_html", "attention_page", "pack"]

# The softmax's own steps (m, e^(s − m), Σ e^(s − m)), recorded by qkv.attention where it records them.
SOFTMAX_MAX = getattr(_steps, "SOFTMAX_MAX", "softmax_max")
EXP_SCORES = getattr(_steps, "EXP_SCORES", "exp_scores")
EXP_SUM = getattr(_steps, "EXP_SUM", "exp_sum")
# Steps the page can show for one attention part, in derivation order.
_STEPS = (Q_HEADS, K_HEADS, V_HEADS, SCORES, SCALED_SCORES, BIASED_SCORES, MODIFIED_SCORES, MASK, SOFTMAX_MAX,
          EXP_SCORES, EXP_SUM, WEIGHTS, OUT, getattr(_steps, "CONTRIBUTIONS", "contributions"),
          getattr(_steps, "SHARES", "shares"))
# Steps around the attention core that the step-through shows where they were recorded (X → W → Q, K, V;
# concat → W_O → Y → R + Y). Kept only up to _FLOW_LIMIT numbers each: a model's 384 × 384 W_Q is left out.
_FLOW = (X, MEMORY, W_Q, W_K, W_V, Q, K, V, CONCAT, W_O, Y, RESIDUAL)
_FLOW_LIMIT = 20_000
_COMPRESS_ABOVE = 4096      # bytes; smaller arrays stay plain base64 (readable by any browser)
_DERIVATION_LIMIT = 2_000_000   # numbers; a bigger trace's step-by-step text would drown the page


def pack(values: Any, digits: int) -> dict:
    """Encode an array for the page: {"shape", "type", "exp", "z", "shuffle", "data"}.

    Floats become integers round(x·10^digits) (type "i16" or "i32"; the extreme integers stand for
    −∞, +∞ and NaN+1 for NaN), or stay "f64" when they do not fit in int32. Booleans become "u8".
    """
    array = np.asarray(values)
    shape = list(array.shape) if array.ndim == 3 else list(as_heads(array).shape)
    if array.dtype == bool:
        kind, raw, exp = "u8", array.astype(np.uint8).tobytes(), 0
    else:
        array = array.astype(np.float64)
        scaled = np.rint(array * 10.0 ** digits)
        finite = scaled[np.isfinite(scaled)]
        biggest = float(np.max(np.abs(finite))) if finite.size else 0.0
        for kind, dtype in (("i16", np.int16), ("i32", np.int32)):
            info = np.iinfo(dtype)
            if biggest < info.max - 1:
                ints = np.where(np.isfinite(scaled), scaled, 0).astype(dtype)
                ints[np.isneginf(scaled)] = info.min
                ints[np.isposinf(scaled)] = info.max
                ints[np.isnan(scaled)] = info.min + 1
                raw, exp = ints.astype(np.dtype(dtype).newbyteorder("<")).tobytes(), digits
                break
        else:
            kind, raw, exp = "f64", array.astype("<f8").tobytes(), digits
    size = {"u8": 1, "i16": 2, "i32": 4, "f64": 8}[kind]
    shuffle = size > 1
    if shuffle:  # byte planes: byte b of every number together
        raw = np.frombuffer(raw, dtype=np.uint8).reshape(-1, size).T.tobytes()
    compressed = len(raw) > _COMPRESS_ABOVE
    if compressed:
        raw = zlib.compress(raw, 6)
    return {"shape": shape, "type": kind, "exp": exp, "z": int(compressed), "shuffle": int(shuffle),
            "data": base64.b64encode(raw).decode("ascii")}


def _part_payload(label: str, q_tokens: Sequence[str], k_tokens: Sequence[str], steps: dict[str, np.ndarray],
                  formulas: dict[str, str], digits: int, query: int = 0) -> dict:
    weights = as_heads(steps["weights"], "weights")
    heads, tq, tk = weights.shape
    arrays, kv_heads = {}, heads
    for name in _STEPS + _FLOW:
        if name not in steps:
            continue
        value = np.asarray(steps[name])
        if name == "mask":
            value = ~np.isneginf(value) if value.dtype != bool else value   # recorded 0/−∞ → may attend
        value = as_heads(value, name)
        if name in ("k_heads", "v_heads"):
            kv_heads = value.shape[0]
        arrays[name] = pack(value, digits)
    return {"label": label, "qTokens": [str(t) for t in q_tokens], "kTokens": [str(t) for t in k_tokens],
            "heads": heads, "kvHeads": kv_heads, "tq": tq, "tk": tk, "query": query,
            "formulas": {k: v for k, v in formulas.items() if v}, "arrays": arrays}


def _blocks_a_cell(mask) -> bool:
    """True where a recorded mask (True / 0 = may attend; False / −∞ = blocked) blocks at least one cell."""
    if mask is None:
        return False
    mask = np.asarray(mask)
    return bool(np.any(~mask)) if mask.dtype == bool else bool(np.any(np.isneginf(mask)))


def _payload(trace: Trace, digits: int, lang: str = "en") -> dict:
    parts, masked = [], False
    for part in attention_parts(trace):
        label = part.label
        if part.prefix.startswith("layer "):               # "layer 3" in the page's language
            label = texts.text(lang, "fig.layer", l=int(part.prefix.split()[1].rstrip("/")))
        steps, formulas = {}, {}
        for name in _STEPS + _FLOW:
            step = trace.get(part.prefix + name)
            if step is not None and (name in _STEPS or step.value.size <= _FLOW_LIMIT):
                steps[name], formulas[name] = step.value, step.formula
        rotated = part.prefix + Q_ROTATED in trace and part.prefix + K_ROTATED in trace
        if rotated:   # RoPE: the scores read the rotated q and k, so the q and k rows show those
            for name, turned in ((Q_HEADS, Q_ROTATED), (K_HEADS, K_ROTATED)):
                step = trace[part.prefix + turned]
                steps[name], formulas[name] = step.value, step.formula
        # projections are shared by all heads; keep only those that line up with these weights
        weights = as_heads(steps["weights"])
        for name, axis_len in (("q_heads", weights.shape[1]), ("k_heads", weights.shape[2]),
                               ("v_heads", weights.shape[2])):
            if name in steps and as_heads(steps[name], name).shape[1] != axis_len:
                del steps[name]
        parts.append(_part_payload(_part_label(trace, part.prefix, label, lang), part.q_tokens, part.k_tokens,
                                   steps, formulas, digits, part.query))
        masked = masked or _blocks_a_cell(steps.get("mask"))
        parts[-1]["rotated"] = rotated
        parts[-1]["qFrom"] = token_number(trace.meta, part.q_from)   # the number shown for query row 0
        if part.prefix and not part.prefix.startswith("layer "):
            parts[-1]["name"] = part.prefix.rstrip("/")
    is_model = bool(parts) and attention_parts(trace)[0].prefix.startswith("layer ")
    # meta["head"] picks the first head shown when the weights hold several; in a one-head trace it
    # names the model's head (shown as the head's label), it is no index.
    label = trace.info.head
    several = bool(parts) and parts[0]["heads"] > 1
    payload = {"title": trace.title, "parts": parts, "isModel": is_model,
               "head": int(label or 0) if several else 0, "lead": _lead(_lead_titles(trace), parts, is_model),
               "headBase": head_number(trace.meta, 0), "tokenBase": token_number(trace.meta, 0),
               "kind": trace.info.kind or "",
               "query": _followed(trace, parts), "masked": masked}
    if not parts:                 # no weights (the multi-head example): the steps around the heads
        payload["flow"] = _flow(trace, digits)
        payload["lead"] = {language: _untitled(texts.text(language, "page.lead.flow", title=_lead_titles(trace)[language]))
                           for language in ("en", "ko")}
    drills = trace.meta.get("practice")         # computed by qkv.practice.offline, read here, never computed
    if isinstance(drills, dict) and drills.get("lang") == lang and drills.get("drills"):
        payload["practice"] = drills

    variants = trace.meta.get("variants")      # computed by qkv.examples.variants, read here, never computed
    if isinstance(variants, dict) and variants.get("kind") in ("meeting", "scale"):
        payload["whatIf"] = {**variants, "digits": digits}
    if is_model and trace.info.derivation is False:       # a long text: weights only (a size bound)
        for language in payload["lead"]:
            payload["lead"][language] += texts.text(language, "page.weights_only",
                                                    limit=trace.info.derivation_tokens or "?",
                                                    tokens=parts[0]["tq"])
    if label is not None and not several:     # the page writes "layer 2, head 3" in its language
        payload["headName"] = {"layer": trace.info.layer, "head": head_number(trace.meta, int(label))}
    return payload


def _lenses(trace: Trace, digits: int, lang: str, lenses: dict | None = None) -> dict:
    """What the lenses (lenses.js) draw beside the views, as the library computed it (both given by `qkv.show`): a
    decoder's next token (meta "next_token", `qkv.models.NextToken.to_dict`); ``lenses`` (`qkv.notebook`'s
    `View.lenses`): several heads and text coloured by attention (from the weights the page holds anyway), the
    heads' text colours (`style.head_colour(h, "text")`, AA on white) and, per part, the neuron view's products
    ("neuron": prefix → `qkv.analysis.score_products`' terms (H, Tq, Tk, Dk) and sums, packed here) or, when
    they were left out for size, a note."""
    out = {}
    next_token = trace.meta.get("next_token")
    if isinstance(next_token, dict):
        out["nextToken"] = next_token
    if isinstance(lenses, dict):
        from .style import HEAD_COLOURS, head_colour

        neuron, index = {}, {part.prefix: n for n, part in enumerate(attention_parts(trace))}
        for prefix, found in (lenses.get("neuron") or {}).items():
            if prefix in index:
                terms = np.asarray(found["terms"], dtype=np.float64)                  # (H, Tq, Tk, Dk)
                heads, tq, tk, dk = terms.shape
                neuron[index[prefix]] = {"terms": pack(terms.reshape(heads, tq, tk * dk), digits), "dk": dk,
                                         "sums": pack(np.asarray(found["sums"], dtype=np.float64), digits),
                                         "rotated": bool(found.get("rotated"))}
        left_out = lenses.get("neuron_left_out")
        out["lenses"] = {"inks": [head_colour(h, "text") for h in range(len(HEAD_COLOURS))], "neuron": neuron,
                         "neuronNote": texts.text(lang, "page.lens.neuron.left_out", n=f"{left_out:,}",
                                                  limit=f"{lenses.get('neuron_limit', 0):,}") if left_out else ""}
    return out


def _part_label(trace: Trace, prefix: str, label: str, lang: str) -> str:
    """The name a reader knows a part by: the group meeting's meetings and notation by their titles."""
    name = prefix.rstrip("/")
    if trace.info.kind == "group-meeting":
        scenes = {str(s.get("name")): s for s in trace.info.scenes if isinstance(s, dict)}
        if name in scenes and f"gm.{name}.title" in texts.LANGS[lang]:
            return texts.text(lang, f"gm.{name}.title", sentence=" ".join(map(str, scenes[name].get("tokens", []))))
        if f"page.part.{name}" in texts.LANGS[lang]:
            return texts.text(lang, f"page.part.{name}")
    return label


def _followed(trace: Trace, parts: list[dict]) -> int:
    """The followed query of a trace without weights (the multi-head example): meta query, else 0."""
    query = trace.info.query
    return int(query) if isinstance(query, (int, np.integer)) else 0


def _flow(trace: Trace, digits: int) -> dict:
    """The recorded steps around the heads (out of each head, concat, W_O, Y, R + Y) for a trace with no weights."""
    arrays, formulas = {}, {}
    for name in (OUT,) + _FLOW:
        step = trace.get(name)
        if step is not None and step.value.size <= _FLOW_LIMIT:
            arrays[name] = pack(step.value if name == OUT else np.asarray(step.value), digits)
            formulas[name] = step.formula
    tokens = [str(t) for t in trace.info.tokens]
    return {"arrays": arrays, "formulas": formulas, "tokens": tokens,
            "heads": int(as_heads(trace[OUT].value, OUT).shape[0]) if OUT in trace else 0}


def _titles(trace: Trace) -> dict[str, str]:
    """The page's title in each language: a worked example's own title (texts ``title.<example>``, as its
    explanation is headed), else the trace's title."""
    return {language: title_of(trace, language) for language in texts.LANGS}


def _lead_titles(trace: Trace) -> dict[str, str]:
    """The title the first line starts with: none where the page's heading already says it (a worked example, and
    any trace with a title: "minilm: attention of every layer and head" was said twice, heading and first line)."""
    return {language: "" if (trace.info.example or title_of(trace, language)) else "qkv" for language in texts.LANGS}


def _untitled(line: str) -> str:
    """A first line written for "{title}: …" with an empty title: its rest, starting with a capital."""
    if line.startswith(": "):
        line = line[2:]
        return line[:1].upper() + line[1:]
    return line


def _lead(title: str | dict, parts: list[dict], is_model: bool, lang: str = "en") -> dict:
    """The page's first line, in both languages (the page picks its own): what it shows."""
    if not parts:
        return {}
    first = parts[0]
    out = {}
    for language in ("en", "ko"):
        name = title.get(language, "") if isinstance(title, dict) else title      # "": the heading says it
        if is_model:
            out[language] = texts.text(language, "page.lead.model", title=name, layers=len(parts),
                                       heads=first["heads"], tokens=first["tq"])
        else:
            out[language] = texts.text(language, "page.lead.trace", title=name, heads=first["heads"],
                                       tq=first["tq"], tk=first["tk"])
        out[language] = _untitled(out[language])
    return out


def _words(lang: str) -> dict[str, str]:
    """The page's words (keys ``page.*`` of `qkv.explain.texts`), without the prefix."""
    table = texts.LANGS[lang]
    return {key[len("page."):]: value for key, value in table.items() if key.startswith("page.")}


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _json_for_script(data: Any) -> str:
    """JSON safe inside <script>: no "</script>", no "<!--", no U+2028/2029 surprises."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
        "connect-src 'none'; font-src 'none'; form-action 'none'; base-uri 'none'")


def _page(payload: dict, *, title: str, lang: str, digits: int, derivation: str, inline: bool) -> str:
    if lang not in ("en", "ko"):
        raise ValueError(f"lang must be 'en' or 'ko', got {lang!r}")
    if isinstance(digits, bool) or not isinstance(digits, int) or not 0 <= digits <= 12:
        raise ValueError(f"digits must be an integer from 0 to 12, got {digits!r}")
    payload = dict(payload, lang=lang, digits=digits, words=_words(lang), gamma=WEIGHT_GAMMA,
                   headColours=[colour for colour, _, _ in HEAD_COLOURS],
                   stops=[list(stop) for stop in BLUES_STOPS],
                   legendTicks=list(LEGEND_TICKS), lead=(payload.get("lead") or {}).get(lang, ""),
                   compressed=any(a["z"] for p in payload["parts"] + [payload.get("flow") or {"arrays": {}}]
                                  for a in p["arrays"].values()))
    view_id = "qkv-" + secrets.token_hex(4)
    heading = f"<h1>{_html.escape(title)}</h1>" if title else ""
    body = (f'<div class="qkv-view" id="{view_id}" data-ready="0" lang="{lang}">{heading}'
            f'<div class="qkv-app"></div>{derivation}</div>\n'
            f'<script type="application/json" id="{view_id}-data">{_json_for_script(payload)}</script>\n'
            f"<script>{_asset('views.js')}\n{_asset('lenses.js')}\n{_asset('page.js')}\n"
            f'qkvView(document.getElementById("{view_id}"), '
            f'JSON.parse(document.getElementById("{view_id}-data").textContent));\n'
            f'qkvLenses.page(document.getElementById("{view_id}"), '
            f'JSON.parse(document.getElementById("{view_id}-data").textContent));</script>\n')
    style = f"<style>{_asset('page.css')}\n{_asset('lenses.css')}</style>\n"
    if inline:
        return style + body
    return (f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{_html.escape(title or 'qkv attention')}</title>\n{style}</head>\n<body>\n{body}</body>\n</html>\n")


def _derivation(trace: Trace, lang: str, digits: int | None, full: bool = False) -> str:
    """The step-by-step derivation (`qkv.explain.derivation_html`), or a note when the trace is too large.

    A whole model's trace lists its layers' weights there; the other recorded steps of each layer
    (q, k, v, scores, …) are in the interactive view, cell by cell, not printed again."""
    parts = attention_parts(trace)
    if len(parts) > 1 and parts[0].prefix.startswith("layer "):
        trace = Trace(trace.title, trace.meta, [step for step in trace if step.name.endswith("/" + WEIGHTS)])
    size = sum(step.value.size for step in trace)
    heading = "<h2>{}</h2>".format(_html.escape(texts.text(lang, "page.steps")))
    if size > _DERIVATION_LIMIT:
        note = _html.escape(texts.text(lang, "page.too_large", n=f"{size:,}"))
        return f'<div class="qkv-steps"><section class="qkv-derivation">{heading}<p class="qkv-note">{note}</p></section></div>'
    from . import derivation_html   # a <section> with its own heading

    # headed as the note under the controls names it (page.storage_steps: “Step by step” below)
    return f'<div class="qkv-steps">{heading}{derivation_html(trace, lang=lang, digits=digits, full=full)}</div>'


def trace_html(trace: Trace, *, lang: str = "en", digits: int | None = None, inline: bool = False,
               full: bool = False, lenses: dict | None = None) -> str:
    """The interactive page of a Trace, as one self-contained HTML document (or a fragment when inline).

    Args:
      trace: a finished Trace: a single layer (``weights`` (H, Tq, Tk) or (Tq, Tk), with whatever of
        scores, scaled_scores, biased_scores, mask, q_heads, k_heads, v_heads, out was recorded), a
        whole model (``layer {l}/weights`` …), or scoped parts (``question/weights``).
      lang: "en" or "ko" for the page's words; digits: decimals shown (and stored) for every number; None:
        the views show (and store) `qkv.explain.style.DIGITS` (4) and the derivation shows each step as the
        trace asks (a worked example's steps at the precision its post prints them), as the text, Markdown
        and serve's derivation do.
      inline: a fragment (styles + view + script) for Jupyter's ``_repr_html_``; else a full page.
      full: the derivation prints every number of long matrices (default: NumPy-style ellipses; the
        interactive views above it always hold every recorded number).
      lenses: `qkv.show`'s additions (`qkv.notebook.View.lenses`): several heads at once, text coloured by
        attention and the neuron view's products; None: the page's own views only.
    Returns the HTML text. The step-by-step derivation of `qkv.explain.derivation_html` follows the view.
    """
    trace = in_language(trace, lang)        # the example's token names in the page's language ("토큰 3")
    shown = DIGITS if digits is None else digits     # the views' decimals: they store what they show
    payload = _payload(trace, shown, lang)
    payload.update(_lenses(trace, shown, lang, lenses))
    # the derivation at each step's own precision (a worked example's, digits None) is not at the views' decimals
    payload["stepDigits"] = digits is None and bool(trace.info.digits)
    return _page(payload, title=_titles(trace)[lang] if lang in ("en", "ko") else trace.title, lang=lang, digits=shown,
                 derivation=_derivation(trace, lang, digits, full), inline=inline)


def attention_page(weights: Any, q_tokens: Sequence[str] | None = None, k_tokens: Sequence[str] | None = None, *,
                   title: str = "", lang: str = "en", digits: int = DIGITS,
                   layer_names: Sequence[str] | None = None) -> str:
    """The interactive page for weights alone, e.g. a whole model's attention.

    Args:
      weights: (L, H, Tq, Tk) — or (H, Tq, Tk) for one layer; each row sums to 1 (or is all 0).
      q_tokens: Tq labels; k_tokens: Tk labels (default q_tokens when Tq == Tk).
      title, lang ("en" | "ko"), digits: decimals shown and stored.
      layer_names: L labels for the layer picker (default "layer 0" …).
    Returns a full self-contained HTML page (no derivation section: only weights are known).
    """
    array = as_layers(weights)                                      # (L, H, Tq, Tk)
    n_layers, _, tq, tk = array.shape
    if layer_names is not None and len(layer_names) != n_layers:
        raise ValueError(f"layer_names has {len(layer_names)} names for {n_layers} layers")
    names = list(layer_names) if layer_names is not None else [texts.text(lang, "fig.layer", l=l) for l in range(n_layers)]
    queries, keys = token_labels({"tokens": q_tokens, "key_tokens": k_tokens}, tq, tk)
    parts = [_part_payload(names[l], queries, keys, {"weights": array[l]}, {}, digits) for l in range(n_layers)]
    payload = {"title": title, "parts": parts, "isModel": True, "head": 0,
               "lead": _lead("" if title else "qkv", parts, True)}     # the heading says the title
    return _page(payload, title=title, lang=lang, digits=digits, derivation="", inline=False)
