"""Why experiments: each choice of attention's formula tested on numbers, with the sentences written
from the numbers they describe.

    >>> from qkv import why
    >>> found = why.run("softmax")
    >>> found.data["added_change"] < 1e-12 < found.data["scaled_change"]    # + c changes nothing, × a does
    True

Topics (`TOPICS`):

- ``sqrt-dk``: random q, k (standard normal) with d_k = 2, 16, 64, 512: std(q·k) ≈ √d_k; the largest
  weight with and without ÷√d_k; the softmax gradient w(1 − w) of that weight collapsing without it.
- ``softmax``: love's scaled scores of the self-attention example used as weights directly (they do not
  add up to 1, go negative after a shift, grow with the length T) against softmax; + c changes nothing,
  × a changes everything.
- ``order``: Q and K swapped, softmax(K·Qᵀ/√d_k)·V, gives other numbers; post 002's column form
  V·softmax(KᵀQ/√d_k), transposed, gives the same; softmax along the wrong axis does not.
- ``temperature``: the group meeting's own scores times 1, 0.01, 0.003 (`qkv.examples.Changes`).
- ``mask``: the causal mask on “I love machine learning”: what each token may see, and why.
- ``dot-product``: the self-attention example's q and keys (d_k = 2) as arrows: q·k = |q|·|k|·cos θ.

Every number comes from the library (`qkv.attention`, `qkv.softmax`, `qkv.attention_columns`, the
examples' traces); the table cells and sentences are formatted here. `render(found, lang)` writes the text,
`figure(found, lang)` draws the figure.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass, field

import numpy as np

from .explain.numbers import fmt
from .explain.texts import text
from .trace import Trace

__all__ = ["TOPICS", "Found", "run", "render", "figure"]

TOPICS = ("sqrt-dk", "softmax", "order", "temperature", "mask", "dot-product")
"""The experiments `run` knows."""

WIDTHS = (2, 16, 64, 512)
FACTORS = (1.0, 0.01, 0.003)


@dataclass(frozen=True)
class Found:
    """One experiment's result. ``columns``: the table's heading keys (texts ``why.col.*``); ``rows``: its
    cells (already formatted, or a (key, values) pair to word in the reader's language); ``said``: the
    sentences as (key, values), each chosen and filled from ``data``, the numbers themselves."""

    topic: str
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]
    said: tuple[tuple[str, dict], ...]
    data: dict = field(repr=False)


def run(topic: str, *, seed: int = 0) -> Found:
    """The experiment ``topic`` (one of `TOPICS`); ``seed`` draws the random q, k of ``sqrt-dk``."""
    from .frontdoor import check_choice

    check_choice(topic, TOPICS, field="TOPIC")
    return _RUNS[topic](seed)


def _n(value: float, digits: int = 4) -> str:
    return fmt(float(value), digits)


def _tiny(value: float) -> str:
    """A difference that should be zero: "0" when it is, else its order of magnitude (1e-16)."""
    return "0" if value == 0 else f"{value:.0e}"


def _vec(values, digits: int = 4) -> str:
    return "[" + ", ".join(_n(v, digits) for v in values) + "]"


def _example(name: str) -> Trace:
    from . import examples

    return examples.run(name)


# ------------------------------------------------------------------ √d_k
def _sqrt_dk(seed: int) -> Found:
    from .attention import attention

    rng = np.random.default_rng(seed)
    rows, data = [], {"widths": list(WIDTHS), "std": [], "top_scaled": [], "top_plain": [], "grad_scaled": [],
                      "grad_plain": []}
    for d_k in WIDTHS:
        q = rng.standard_normal((256, d_k))                       # (Tq, Dk): 256 queries
        k = rng.standard_normal((16, d_k))                        # (Tk, Dk): 16 keys
        v = rng.standard_normal((16, 4))
        trace = Trace("sqrt-dk")
        _, plain = attention(q, k, v, scale=1.0, return_weights=True, record=trace)
        _, scaled = attention(q, k, v, return_weights=True)        # scale 1/√d_k
        scores = np.asarray(trace["scores"].value)
        top = {"scaled": scaled.max(axis=-1), "plain": plain.max(axis=-1)}
        data["std"].append(float(scores.std()))
        for kind in ("scaled", "plain"):
            data[f"top_{kind}"].append(float(top[kind].mean()))
            data[f"grad_{kind}"].append(float((top[kind] * (1 - top[kind])).mean()))
        rows.append((str(d_k), _n(math.sqrt(d_k), 2), _n(data["std"][-1], 2), _n(data["top_scaled"][-1], 3),
                     _n(data["top_plain"][-1], 3), _n(data["grad_scaled"][-1], 3), _n(data["grad_plain"][-1], 3)))
    ratios = [s / math.sqrt(d) for s, d in zip(data["std"], WIDTHS)]
    said = [("why.sqrt.std", {"low": _n(min(ratios), 2), "high": _n(max(ratios), 2), "first": _n(data["std"][0], 2),
                              "d0": WIDTHS[0], "last": _n(data["std"][-1], 2), "d1": WIDTHS[-1],
                              "root": _n(math.sqrt(WIDTHS[-1]), 2)})]
    plain_top, plain_grad = data["top_plain"], data["grad_plain"]
    said.append(("why.sqrt.plain.onehot" if plain_top[-1] > 0.9 else "why.sqrt.plain.grows",
                 {"first": _n(plain_top[0], 3), "last": _n(plain_top[-1], 3), "d1": WIDTHS[-1]}))
    if plain_grad[-1] < plain_grad[0]:
        said.append(("why.sqrt.grad.falls", {"first": _n(plain_grad[0], 3), "last": _n(plain_grad[-1], 3),
                                             "times": _n(plain_grad[0] / max(plain_grad[-1], 1e-300), 0)}))
    said.append(("why.sqrt.scaled", {"low": _n(min(data["top_scaled"]), 3), "high": _n(max(data["top_scaled"]), 3),
                                     "glow": _n(min(data["grad_scaled"]), 3), "ghigh": _n(max(data["grad_scaled"]), 3)}))
    data["ratios"] = ratios
    head = _translator_head()
    data["translator"] = head
    said += _translator_said(head)
    return Found("sqrt-dk", ("why.col.dk", "why.col.root", "why.col.std", "why.col.top_scaled", "why.col.top_plain",
                             "why.col.grad_scaled", "why.col.grad_plain"), tuple(rows), tuple(said), data)


def _translator_head(text: str | None = None, lang: str | None = None) -> dict:
    """The shipped translator's most saturated cross-attention row on the post's sentence: every decoder
    layer's cross-attention is recorded while the decoder reads its own translation (teacher forcing,
    `qkv.translator.explain.cross_attention_trace`'s way), and the (layer, head, step) whose largest weight
    is the largest is kept, with its q·k, q·k/√d_k, its weights and softmax(q·k) — the weights the same
    learned q and k would give without ÷√d_k."""
    from .attention import softmax
    from .translator import corpus
    from .translator.model import LANG_TOKENS, load

    if text is None:
        text, _, lang = corpus.POST_SENTENCES[0]          # “I love machine learning” into the post's Japanese
    model = load()
    translation = model.translate(text, lang)
    source = np.asarray([[model.config.source_vocab.index(w) for w in translation.source]])          # (1, S)
    inputs = [LANG_TOKENS[lang], *translation.target]
    target = np.asarray([[model.config.target_vocab.index(w) for w in inputs]])                    # (1, T + 1)
    found: dict[str, np.ndarray] = {}

    def record(name: str, value, **meta):
        layer, _, step = name.partition("/")
        if step in ("cross_attention/scores", "cross_attention/weights", "cross_attention/q_heads"):
            found[f"{layer}/{step.rpartition('/')[2]}"] = np.asarray(value[0], dtype=np.float64)
        return None

    model.decode(target, model.encode(source), record=record)
    # how far each row is from one-hot, 1 − max w = the other weights' sum, in float64 from the recorded
    # q·k (the float32 weights round a largest weight of 1 − 1e-8 to 1)
    best = None
    for layer in range(len(model.decoder)):
        scores = found[f"decoder {layer}/scores"][:, :-1]              # (H, T, S): the rows that chose a word
        d_k = found[f"decoder {layer}/q_heads"].shape[-1]
        weights = np.asarray(softmax(scores / math.sqrt(d_k)), dtype=np.float64)
        rest = np.sort(weights, axis=-1)[..., :-1].sum(axis=-1)          # (H, T)
        h, t = np.unravel_index(int(np.argmin(rest)), rest.shape)
        if best is None or rest[h, t] < best[3]:
            best = (layer, int(h), int(t), float(rest[h, t]))
    layer, h, t, _ = best
    scores = found[f"decoder {layer}/scores"][h, t]                       # (S,) q·k, recorded
    d_k = found[f"decoder {layer}/q_heads"].shape[-1]
    weights = np.asarray(softmax(scores / math.sqrt(d_k)), dtype=np.float64)   # as the model weighs (÷√d_k)
    recorded = found[f"decoder {layer}/weights"][h, t]                    # the decoding's own float32 weights
    plain = np.asarray(softmax(scores), dtype=np.float64)                 # the same q, k without ÷√d_k
    order = np.sort(scores)[::-1]
    top = int(np.argmax(weights))
    return {"text": text, "lang": lang, "target": translation.target, "keys": translation.source, "layer": layer,
            "head": h, "step": t, "query": inputs[t], "generated": translation.target[t], "d_k": int(d_k),
            "layers": len(model.decoder), "heads": model.config.n_heads, "scores": scores.tolist(),
            "scaled": (scores / math.sqrt(d_k)).tolist(), "weights": weights.tolist(), "recorded": recorded.tolist(),
            "plain": plain.tolist(), "gap": float(order[0] - order[1]),
            "gap_scaled": float(order[0] - order[1]) / math.sqrt(d_k), "top": float(weights[top]),
            "rest": float(np.delete(weights, top).sum()), "top_plain": float(plain[top]),
            "rest_plain": float(np.delete(plain, top).sum()), "word": translation.source[top]}


def _near_one(value: float, rest: float) -> str:
    """A weight near 1 written so that its distance from 1 shows: 0.9731, or 1 − 3.3e-08."""
    return _n(value) if rest >= 5e-5 else f"1 − {rest:.1e}"


def _translator_said(head: dict) -> list[tuple[str, dict]]:
    top, plain = head["top"], head["top_plain"]
    grad, grad_plain = top * head["rest"], plain * head["rest_plain"]        # w(1 − w), 1 − w summed, not subtracted
    said = [("why.sqrt.translator.head" if top > 0.9 else "why.sqrt.translator.head.spread",
             {"text": head["text"], "target": " ".join(head["target"]), "layer": head["layer"],
              "last": head["layers"] - 1, "head": head["head"], "hlast": head["heads"] - 1, "query": head["query"],
              "generated": head["generated"], "top": _near_one(top, head["rest"]), "word": head["word"]}),
            ("why.sqrt.translator.spread", {"scores": _vec(head["scores"], 2), "gap": _n(head["gap"], 2),
                                            "dk": head["d_k"], "root": _n(math.sqrt(head["d_k"]), 0),
                                            "scaled": _vec(head["scaled"], 2), "gap_scaled": _n(head["gap_scaled"], 2),
                                            "weights": _vec(head["weights"])})]
    said.append(("why.sqrt.translator.without",
                 {"plain": _vec(head["plain"]), "top_plain": _near_one(plain, head["rest_plain"]),
                  "grad": _n(grad) if grad >= 5e-5 else f"{grad:.1e}",
                  "grad_plain": _n(grad_plain) if grad_plain >= 5e-5 else f"{grad_plain:.1e}",
                  "times": _times(grad, grad_plain)}))
    return said


def _times(a: float, b: float) -> str:
    """a / b as a whole number, in powers of ten past a million (2.6e+22), ∞ when b underflowed to 0."""
    if b == 0:
        return "∞"
    ratio = a / b
    return _n(ratio, 0) if ratio < 1e6 else f"{ratio:.1e}"


# ------------------------------------------------------------------ softmax
SHIFTS = (("why.row.s", 0.0, 1.0), ("why.row.minus", -2.0, 1.0), ("why.row.plus", 5.0, 1.0),
          ("why.row.times", 0.0, 2.0), ("why.row.times", 0.0, 0.5), ("why.row.times", 0.0, 10.0))
REPEATS = (1, 2, 4, 8)


def _softmax(seed: int) -> Found:
    from .attention import attention, softmax

    trace = _example("self-attention")
    i = int(trace.meta["query"])
    token = trace.meta["tokens"][i]
    s = np.asarray(trace["scaled_scores"].value, dtype=float)[0, i]          # (Tk,)
    base = softmax(s)
    rows, data = [], {"token": token, "s": s.tolist(), "variants": []}
    for key, added, factor in SHIFTS:
        changed = s * factor + added
        weights = softmax(changed)
        change = float(np.max(np.abs(weights - base)))
        data["variants"].append({"added": added, "factor": factor, "raw": changed.tolist(),
                                 "weights": weights.tolist(), "change": change})
        rows.append(((key, {"c": _n(abs(added), 0), "a": _n(factor, 1 if factor < 1 else 0)}), _vec(changed),
                     _n(changed.sum()), _vec(weights), _n(change) if change >= 5e-5 else _tiny(change)))
    added = [v["change"] for v in data["variants"] if v["factor"] == 1.0]
    scaled = [v["change"] for v in data["variants"] if v["factor"] != 1.0]
    data["added_change"], data["scaled_change"] = max(added), min(scaled)
    minus = data["variants"][1]
    said = [("why.softmax.sum", {"token": token, "sum": _n(s.sum())}),
            ("why.softmax.negative", {"count": int((np.array(minus["raw"]) < 0).sum()), "n": s.size,
                                      "sum": _n(sum(minus["raw"]))})]
    said.append(("why.softmax.constant.same" if data["added_change"] < 1e-12 else "why.softmax.constant.differs",
                 {"change": _tiny(data['added_change'])}))
    said.append(("why.softmax.factor.differs" if data["scaled_change"] > 1e-3 else "why.softmax.factor.same",
                 {"low": _n(min(scaled)), "high": _n(max(scaled))}))
    # the sentence repeated n times: softmax's output stays, raw scores as weights grow with T
    q = np.asarray(trace["q_heads"].value, dtype=float)[0, i:i + 1]           # (1, Dk)
    k = np.asarray(trace["k_heads"].value, dtype=float)[0]                    # (Tk, Dk)
    v = np.asarray(trace["v_heads"].value, dtype=float)[0]                    # (Tk, Dv)
    grow = []
    for n in REPEATS:
        keys, values = np.tile(k, (n, 1)), np.tile(v, (n, 1))                 # (n·Tk, ·)
        record = Trace("repeat")
        out = attention(q, keys, values, record=record)
        raw = np.asarray(record["scaled_scores"].value, dtype=float)[0]       # (n·Tk,)
        grow.append({"n": n, "t": len(keys), "sum": float(raw.sum()), "raw_out": float((raw @ values)[0]),
                     "out": float(out[0, 0])})
    data["repeats"] = grow
    said.append(("why.softmax.length", {"n": grow[-1]["n"], "t": grow[-1]["t"], "sum0": _n(grow[0]["sum"]),
                                        "sum1": _n(grow[-1]["sum"]), "raw0": _n(grow[0]["raw_out"]),
                                        "raw1": _n(grow[-1]["raw_out"]),
                                        "times": _n(grow[-1]["raw_out"] / grow[0]["raw_out"], 1),
                                        "out": _n(grow[-1]["out"]),
                                        "change": _tiny(max(abs(g['out'] - grow[0]['out']) for g in grow))}))
    return Found("softmax", ("why.col.scores", "why.col.values", "why.col.raw_sum", "why.col.weights",
                             "why.col.change"), tuple(rows), tuple(said), data)


# ------------------------------------------------------------------ order
def _order(seed: int) -> Found:
    from .attention import attention, attention_columns, softmax

    trace = _example("self-attention")
    i = int(trace.meta["query"])
    tokens = list(trace.meta["tokens"])
    q, k, v = (np.asarray(trace[n].value, dtype=float)[0] for n in ("q_heads", "k_heads", "v_heads"))
    rows_out, rows_w = attention(q, k, v, return_weights=True)                     # softmax(QKᵀ/√d_k)·V
    swapped_out, swapped_w = attention(k, q, v, return_weights=True)               # softmax(KQᵀ/√d_k)·V
    cols_out, cols_w = attention_columns(q.T, k.T, v.T, return_weights=True)       # V·softmax(KᵀQ/√d_k)
    scaled = np.asarray(trace["scaled_scores"].value, dtype=float)[0]
    wrong_w = softmax(scaled, axis=0)                                              # normalised over queries
    wrong_out = wrong_w @ v
    forms = (("why.row.rows", rows_w[i], rows_out[i]), ("why.row.swapped", swapped_w[i], swapped_out[i]),
             ("why.row.columns", cols_w[:, i], cols_out[:, i]), ("why.row.axis", wrong_w[i], wrong_out[i]))
    diffs = [float(np.max(np.abs(out - rows_out))) for out in (rows_out, swapped_out, cols_out.T, wrong_out)]
    rows = tuple(((key, {}), _vec(w), _vec(o, 3), _n(d) if d >= 5e-5 else _tiny(d))
                 for (key, w, o), d in zip(forms, diffs))
    data = {"token": tokens[i], "tokens": tokens, "weights": rows_w.tolist(), "swapped": swapped_w.tolist(),
            "columns": cols_w.tolist(), "axis": wrong_w.tolist(), "differences": diffs}
    said = [("why.order.swapped" if diffs[1] > 1e-6 else "why.order.swapped.same",
             {"diff": _n(diffs[1]), "token": tokens[i]}),
            ("why.order.columns" if diffs[2] < 1e-12 else "why.order.columns.differs", {"diff": _tiny(diffs[2])}),
            ("why.order.axis" if diffs[3] > 1e-6 else "why.order.axis.same",
             {"diff": _n(diffs[3]), "sum": _n(float(wrong_w[i].sum()))})]
    return Found("order", ("why.col.form", "why.col.weights_of", "why.col.out_of", "why.col.difference"), rows,
                 tuple(said), data)


# ------------------------------------------------------------------ temperature
def _temperature(seed: int) -> Found:
    from . import examples

    rows, runs = [], []
    for factor in FACTORS:
        trace = examples.run("group-meeting", changes=examples.Changes(factor=factor))
        scenes = trace.meta["scenes"]
        found = {"factor": factor}
        for scene in scenes:
            weights = np.asarray(trace[f"{scene['name']}/weights"].value, dtype=float).reshape(-1)
            out = np.asarray(trace[f"{scene['name']}/out"].value, dtype=float).reshape(-1)
            found[scene["name"]] = {"lot": float(weights[-1]), "weights": weights.tolist(), "out": out.tolist(),
                                    "tokens": list(scene["tokens"])}
        runs.append(found)
    answers = [str(a) for a in examples.load("group-meeting")["answers"]]
    first, second = (scene["name"] for scene in trace.meta["scenes"])
    for found in runs:
        a, b = found[first], found[second]
        rows.append((f"{found['factor']:g}", _n(a["lot"]), _vec(a["out"]), _n(b["lot"]),
                     _n(sum(b["weights"][:-4])), _vec(b["out"])))
    data = {"runs": runs, "answers": answers, "scenes": [first, second]}
    said = []
    for found in runs:
        dot, of = found[second]["out"]
        key = "why.temperature.none" if dot < 1e-4 else "why.temperature.blend" if of > dot else \
            "why.temperature.lot_wins"
        said.append((key, {"factor": f"{found['factor']:g}", "lot": _n(found[second]["lot"]), "dot": _n(dot),
                           "of": _n(of), "a": answers[0], "b": answers[1]}))
    said.append(("why.temperature.first", {"high": _n(runs[0][first]["lot"]), "low": _n(runs[-1][first]["lot"]),
                                           "factor": f"{runs[-1]['factor']:g}"}))
    return Found("temperature", ("why.col.factor", "why.col.lot1", "why.col.out1", "why.col.lot2", "why.col.question",
                                 "why.col.out2"), tuple(rows), tuple(said), data)


# ------------------------------------------------------------------ mask
def _mask(seed: int) -> Found:
    from .attention import attention, causal_mask

    trace = _example("self-attention")
    tokens = list(trace.meta["tokens"])
    q, k, v = (np.asarray(trace[n].value, dtype=float)[0] for n in ("q_heads", "k_heads", "v_heads"))
    plain = np.asarray(trace["weights"].value, dtype=float)[0]
    _, masked = attention(q, k, v, causal=True, return_weights=True)
    allowed = np.asarray(causal_mask(len(tokens)))
    rows, said = [], []
    for i, token in enumerate(tokens):
        seen = [tokens[j] for j in range(len(tokens)) if allowed[i, j]]
        hidden = [tokens[j] for j in range(len(tokens)) if not allowed[i, j]]
        rows.append((token, "".join("█" if a else "·" for a in allowed[i]), _vec(masked[i]), _vec(plain[i])))
        if hidden:
            said.append(("why.mask.sees", {"token": token, "seen": ", ".join(seen), "hidden": ", ".join(hidden),
                                           "share": _n(float(plain[i][~allowed[i]].sum())),
                                           "sum": _n(float(masked[i].sum()))}))
        else:
            said.append(("why.mask.all", {"token": token, "diff": _tiny(float(np.max(np.abs(masked[i] - plain[i]))))}))
    said.append(("why.mask.why", {"first": tokens[0], "weight": _n(masked[0, 0])}))
    data = {"tokens": tokens, "allowed": allowed.tolist(), "masked": masked.tolist(), "plain": plain.tolist()}
    return Found("mask", ("why.col.token", "why.col.sees", "why.col.masked", "why.col.plain"), tuple(rows),
                 tuple(said), data)


# ------------------------------------------------------------------ q·k as alignment
def _dot_product(seed: int) -> Found:
    trace = _example("self-attention")
    i = int(trace.meta["query"])
    tokens = list(trace.meta["tokens"])
    q = np.asarray(trace["q_heads"].value, dtype=float)[0, i]
    keys = np.asarray(trace["k_heads"].value, dtype=float)[0]
    scores = np.asarray(trace["scores"].value, dtype=float)[0, i]            # recorded q·k
    q_len = float(np.linalg.norm(q))
    lengths = np.linalg.norm(keys, axis=1)
    cosines = scores / (q_len * lengths)
    angles = np.degrees(np.arccos(np.clip(cosines, -1, 1)))
    rows = tuple((tokens[j], _vec(keys[j], 2), _n(lengths[j], 3), _n(cosines[j], 3), _n(angles[j], 1),
                  f"{_n(q_len, 3)} × {_n(lengths[j], 3)} × {_n(cosines[j], 3)}", _n(scores[j]))
                 for j in range(len(tokens)))
    best, aligned, longest = int(np.argmax(scores)), int(np.argmax(cosines)), int(np.argmax(lengths))
    said = [("why.dot.rule", {"token": tokens[i], "q": _vec(q, 2), "length": _n(q_len, 3)})]
    if best == aligned:
        said.append(("why.dot.aligned_wins", {"best": tokens[best], "score": _n(scores[best]),
                                              "angle": _n(angles[best], 1)}))
    else:
        said.append(("why.dot.length_wins", {"best": tokens[best], "score": _n(scores[best]),
                                             "length": _n(lengths[best], 3), "aligned": tokens[aligned],
                                             "angle": _n(angles[aligned], 1), "angle_best": _n(angles[best], 1)}))
    worst = int(np.argmin(scores))
    said.append(("why.dot.worst.short" if worst == aligned and worst == int(np.argmin(lengths)) else "why.dot.worst",
                 {"worst": tokens[worst], "score": _n(scores[worst]), "angle": _n(angles[worst], 1),
                  "length": _n(lengths[worst], 3)}))
    data = {"token": tokens[i], "tokens": tokens, "q": q.tolist(), "keys": keys.tolist(), "scores": scores.tolist(),
            "cosines": cosines.tolist(), "angles": angles.tolist(), "best": best, "aligned": aligned,
            "longest": longest}
    return Found("dot-product", ("why.col.key", "why.col.k", "why.col.length", "why.col.cos", "why.col.angle",
                                 "why.col.product", "why.col.dot"), rows, tuple(said), data)


_RUNS = {"sqrt-dk": _sqrt_dk, "softmax": _softmax, "order": _order, "temperature": _temperature, "mask": _mask,
         "dot-product": _dot_product}


# ------------------------------------------------------------------ text
def _width(cell: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in cell)


def _cell(cell, lang: str) -> str:
    return text(lang, cell[0], **cell[1]) if isinstance(cell, tuple) else str(cell)


def render(found: Found, lang: str = "en") -> str:
    """The experiment as text: its title, what it does, the table, then the sentences its numbers give."""
    header = [text(lang, key) for key in found.columns]
    body = [[_cell(cell, lang) for cell in row] for row in found.rows]
    widths = [max(_width(r[c]) for r in [header, *body]) for c in range(len(header))]
    lines = [text(lang, f"why.title.{found.topic}"), text(lang, f"why.about.{found.topic}"), ""]
    for r, row in enumerate([header, *body]):
        lines.append("  " + "  ".join(cell + " " * (w - _width(cell)) for cell, w in zip(row, widths)).rstrip())
        if r == 0:
            lines.append("  " + "  ".join("─" * w for w in widths))
    lines.append("")
    lines += [text(lang, key, **values) for key, values in found.said]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ figures
def figure(found: Found, lang: str = "en"):
    """The experiment's figure (a matplotlib Figure), labelled in ``lang``."""
    from .viz import fonts

    with fonts.context():
        return _FIGURES[found.topic](found, lambda key, **values: text(lang, key, **values))


def _new(width: float, height: float, columns: int = 1):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, columns, squeeze=False)[0]
    return fig, axes


def _sqrt_figure(found: Found, t):
    data = found.data
    fig, (left, right, learned) = _new(16, 4.4, 3)
    widths = np.array(data["widths"], dtype=float)
    left.plot(widths, data["std"], "o-", color="#1f77b4", label=t("why.fig.std"))
    left.plot(widths, np.sqrt(widths), "--", color="0.4", label="√d_k")
    left.set_xscale("log", base=2)
    left.set_yscale("log", base=2)
    left.set_xticks(widths, [str(int(w)) for w in widths])
    left.set_xlabel("d_k")
    left.set_title(t("why.fig.std.title"), fontsize=10)
    left.legend(fontsize=8)
    right.plot(widths, data["top_plain"], "o-", color="#d62728", label=t("why.fig.top_plain"))
    right.plot(widths, data["top_scaled"], "o-", color="#1f77b4", label=t("why.fig.top_scaled"))
    right.plot(widths, data["grad_plain"], "s--", color="#d62728", label=t("why.fig.grad_plain"))
    right.plot(widths, data["grad_scaled"], "s--", color="#1f77b4", label=t("why.fig.grad_scaled"))
    right.set_xscale("log", base=2)
    right.set_xticks(widths, [str(int(w)) for w in widths])
    right.set_ylim(0, 1.02)
    right.set_xlabel("d_k")
    right.set_title(t("why.fig.top.title"), fontsize=10)
    right.legend(fontsize=8)
    _translator_panel(learned, data["translator"], t)
    fig.suptitle(t("why.title.sqrt-dk"), fontsize=11)
    return fig


def _translator_panel(ax, head: dict, t) -> None:
    """The translator's most saturated row: its weights with ÷√d_k (as it runs) and without, on a log scale
    (the small weights are the point: without the division they fall by many powers of ten)."""
    keys = head["keys"]
    x = np.arange(len(keys))
    floor = 1e-300                                      # a weight that underflowed to 0 is drawn at the floor
    for n, (name, color, label) in enumerate((("weights", "#1f77b4", t("why.fig.translator.scaled", dk=head["d_k"])),
                                              ("plain", "#d62728", t("why.fig.translator.plain")))):
        values = np.maximum(np.asarray(head[name], dtype=float), floor)
        ax.bar(x + (n - 0.5) * 0.38, values, 0.38, color=color, label=label)
        for j, v in enumerate(values):
            ax.text(x[j] + (n - 0.5) * 0.38, v * 1.5, _n(v, 4) if v >= 5e-5 else f"{v:.0e}", ha="center",
                    fontsize=7, rotation=90, va="bottom")
    ax.set_yscale("log")
    low = max(min(min(head["plain"]), min(head["weights"])), floor)
    ax.set_ylim(low / 10, 1e4)                          # room above 1 for the labels
    ax.set_xticks(x, keys, fontsize=8)
    ax.set_ylabel(t("why.fig.translator.axis"), fontsize=8)
    ax.set_title(t("why.fig.translator.title", layer=head["layer"], head=head["head"], query=head["query"],
                   generated=head["generated"]), fontsize=9)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)   # below: the bars fill the axes


def _softmax_figure(found: Found, t):
    data = found.data
    fig, (left, right) = _new(12, 4.4, 2)
    keys = list(_example_tokens())
    x = np.arange(len(keys))
    shown = [(0, "#1f77b4"), (1, "#9467bd")]
    width = 0.2
    for n, (index, color) in enumerate(shown):
        variant = data["variants"][index]
        label = t(found.rows[index][0][0], **found.rows[index][0][1])
        left.bar(x + (n - 1) * width, variant["raw"], width, color=color, label=t("why.fig.raw", what=label))
    left.bar(x + width, data["variants"][0]["weights"], width, color="#2ca02c", label=t("why.fig.softmax_any"))
    left.axhline(0, color="0.3", linewidth=0.8)
    left.set_xticks(x, keys)
    left.set_title(t("why.fig.raw.title", token=data["token"]), fontsize=10)
    left.legend(fontsize=8)
    variants = data["variants"]
    width = 0.8 / len(variants)
    colors = ["#1f77b4", "#aec7e8", "#c5b0d5", "#d62728", "#ff9896", "#8c564b"]
    for n, (variant, row) in enumerate(zip(variants, found.rows)):
        right.bar(x - 0.4 + (n + 0.5) * width, variant["weights"], width, color=colors[n],
                  label=t(row[0][0], **row[0][1]))
    right.set_xticks(x, keys)
    right.set_ylim(0, 1)
    right.set_ylabel(t("why.col.weights"))
    right.set_title(t("why.fig.weights.title"), fontsize=10)
    right.legend(fontsize=8, ncol=2)
    fig.suptitle(t("why.title.softmax"), fontsize=11)
    return fig


def _example_tokens():
    return _example("self-attention").meta["tokens"]


def _heat(ax, matrix, tokens, title, t, allowed=None):
    """A weights matrix, queries down and keys across, each cell's number written (— where ``allowed`` hides it)."""
    matrix = np.asarray(matrix, dtype=float)
    ax.imshow(matrix, cmap="Blues", vmin=0, vmax=1)
    for (r, c), value in np.ndenumerate(matrix):
        blocked = allowed is not None and not allowed[r][c]
        ax.text(c, r, "—" if blocked else _n(value, 3), ha="center", va="center", fontsize=8,
                color="white" if value > 0.6 else "black")
    ax.set_xticks(range(len(tokens)), tokens, fontsize=8)
    ax.set_yticks(range(len(tokens)), tokens, fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(t("why.fig.keys"), fontsize=8)
    ax.set_ylabel(t("why.fig.queries"), fontsize=8)


def _order_figure(found: Found, t):
    data = found.data
    fig, axes = _new(13, 4.2, 4)
    columns = np.asarray(data["columns"]).T
    for ax, matrix, key in zip(axes, (data["weights"], data["swapped"], columns, data["axis"]),
                               ("why.row.rows", "why.row.swapped", "why.row.columns", "why.row.axis")):
        _heat(ax, matrix, data["tokens"], t(key), t)
    fig.suptitle(t("why.title.order"), fontsize=11)
    return fig


def _temperature_figure(found: Found, t):
    data = found.data
    runs = data["runs"]
    fig, axes = _new(13, 4.2, len(runs))
    second = data["scenes"][1]
    tokens = runs[0][second]["tokens"]
    for ax, found_run in zip(axes, runs):
        weights = found_run[second]["weights"]
        colors = ["#ff7f0e" if n == len(tokens) - 1 else "#1f77b4" for n in range(len(tokens))]
        ax.bar(range(len(tokens)), weights, color=colors)
        for n, w in enumerate(weights):
            ax.text(n, w + 0.01, _n(w, 3), ha="center", fontsize=7)
        ax.set_xticks(range(len(tokens)), tokens, fontsize=8, rotation=30)
        ax.set_ylim(0, 1.05)
        dot, of = found_run[second]["out"]
        ax.set_title(t("why.fig.temperature", factor=f"{found_run['factor']:g}", a=data["answers"][0], dot=_n(dot, 3),
                       b=data["answers"][1], of=_n(of, 3)), fontsize=9)
    axes[0].set_ylabel(t("why.col.weights"))
    fig.suptitle(t("why.title.temperature"), fontsize=11)
    return fig


def _mask_figure(found: Found, t):
    data = found.data
    fig, axes = _new(9, 4.2, 2)
    _heat(axes[0], data["plain"], data["tokens"], t("why.fig.plain"), t)
    _heat(axes[1], data["masked"], data["tokens"], t("why.fig.masked"), t, allowed=data["allowed"])
    fig.suptitle(t("why.title.mask"), fontsize=11)
    return fig


def _dot_figure(found: Found, t):
    data = found.data
    fig, axes = _new(7.5, 6.5)
    ax = axes[0]
    q = np.asarray(data["q"])
    keys = np.asarray(data["keys"])
    colors = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    unit = q / np.linalg.norm(q)
    for j, (token, key) in enumerate(zip(data["tokens"], keys)):
        color = colors[j % len(colors)]
        ax.annotate("", xy=key, xytext=(0, 0), arrowprops={"arrowstyle": "-|>", "color": color, "lw": 1.6}, zorder=3)
        foot = unit * (key @ unit)                       # k's projection on q's direction: q·k = |q|·|foot|
        ax.plot([key[0], foot[0]], [key[1], foot[1]], ":", color=color, linewidth=1)
        # a key right of q (clockwise) is labelled square to q, away from it; one left of q just right of its tip
        right = q[0] * key[1] - q[1] * key[0] < 0
        away = tuple(np.array([unit[1], -unit[0]]) * 30) if right else (8, 4)
        ax.annotate(f"k_{token}\nq·k = {_n(data['scores'][j])}\nθ = {_n(data['angles'][j], 1)}°", xy=key,
                    xytext=away, textcoords="offset points", color=color, fontsize=8,
                    va="center" if right else "bottom", ha="left")
    ax.annotate("", xy=q, xytext=(0, 0), arrowprops={"arrowstyle": "-|>", "color": "#d62728", "lw": 2.6, "alpha": 0.85},
                zorder=2)
    ax.text(q[0], q[1], f"  q_{data['token']}", color="#d62728", fontsize=11, va="bottom")
    reach = max(np.abs(keys).max(), np.abs(q).max()) * 1.35
    ax.plot([-unit[0] * reach, unit[0] * reach], [-unit[1] * reach, unit[1] * reach], color="#d62728",
            linewidth=0.6, alpha=0.4)
    ax.set_xlim(min(-0.3, keys[:, 0].min() - 0.3), reach)      # room for the labels right of each tip
    ax.set_ylim(min(-0.3, keys[:, 1].min() - 0.3), reach)
    ax.set_aspect("equal")
    ax.axhline(0, color="0.7", linewidth=0.6)
    ax.axvline(0, color="0.7", linewidth=0.6)
    ax.grid(alpha=0.25)
    ax.set_title(t("why.fig.dot", token=data["token"]), fontsize=10)
    return fig


_FIGURES = {"sqrt-dk": _sqrt_figure, "softmax": _softmax_figure, "order": _order_figure,
            "temperature": _temperature_figure, "mask": _mask_figure, "dot-product": _dot_figure}
