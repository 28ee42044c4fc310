"""The worked examples of the three posts, shipped as TOML data, and the runner that turns one into a Trace.

    >>> import qkv.examples as ex
    >>> ex.names()
    ['self-attention', 'cross-attention', 'multi-head', 'projection', 'group-meeting']
    >>> trace = ex.run("self-attention")          # follows "love", as “도해와 최소 사례로 …” does
    >>> trace["weights"].value.shape               # (H, Tq, Tk)
    (1, 4, 4)

The TOML files hold inputs only (embeddings, weight matrices, given head outputs, scores): every
other number is computed by the core with a recorder. `run(..., by_hand=True)` adds the by-hand
steps ("by hand/…", rounded to the digits shown) and their drift from the exact ones ("drift/…").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .._io import as_int, as_number
from ..errors import InputError
from ..spec import MAX_MAGNITUDE, parse_spec, read_array, read_digits, read_notes, resolve_query
from ..trace import Trace
from .runner import trace_group_meeting, trace_multi_head, trace_spec

__all__ = ["names", "load", "run", "source", "path", "Changes", "EDITABLE", "variants", "what_ifs", "changes_from"]

NAMES = ("self-attention", "cross-attention", "multi-head", "projection", "group-meeting")


def names() -> list[str]:
    """The shipped examples, in the order the posts introduce them."""
    return list(NAMES)


def source(name: str) -> str:
    """The example's TOML text."""
    _check_name(name)
    return resources.files(__package__).joinpath(f"{name}.toml").read_text(encoding="utf-8")


def load(name: str) -> dict:
    """The example's TOML data, parsed (raw: lists, not arrays)."""
    import tomllib

    return tomllib.loads(source(name))


def _check_name(name: str) -> None:
    if name not in NAMES:
        raise InputError.keyed("error.example.unknown", field="example", name=repr(name), names=", ".join(NAMES))


# The inputs a what-if may edit, per example (the multi-head example's x and W_Q/W_K/W_V are its
# first head's, the self-attention example's; its W_O is its own).
EDITABLE = {"self-attention": ("x", "w_q", "w_k", "w_v"), "cross-attention": ("x", "memory", "w_q", "w_k", "w_v"),
            "projection": ("x", "w_q", "w_k", "w_v", "w_o"), "multi-head": ("x", "w_q", "w_k", "w_v", "w_o"),
            "group-meeting": ()}


@dataclass(frozen=True)
class Changes:
    """A what-if: the same example with some of its inputs changed, computed by the same code.

    factor: multiplies every score before the softmax (1/temperature). sqrt_dk: False leaves the
    scores undivided by √d_k (the group meeting never divides). cells: input name → ((row, column,
    value), …), an edited entry of x, memory or a W (see EDITABLE). scores: the group meeting's
    meeting name → ((position, score), …). Indices count from 0.
    """

    factor: float = 1.0
    sqrt_dk: bool = True
    cells: dict = field(default_factory=dict)
    scores: dict = field(default_factory=dict)

    def describe(self) -> dict:
        return {"factor": self.factor, "sqrt_dk": self.sqrt_dk,
                "cells": {m: [list(e) for e in edits] for m, edits in self.cells.items()},
                "scores": {s: [list(e) for e in edits] for s, edits in self.scores.items()}}

    def apply(self, doc: dict, names: tuple) -> dict:
        """``doc`` with this what-if's cells of ``names`` edited (a copy; indices checked)."""
        doc = dict(doc)
        for matrix, edits in self.cells.items():
            if matrix not in names:
                continue
            rows = [list(r) for r in doc[matrix]]
            for n, (i, j, value) in enumerate(edits):
                if not (0 <= i < len(rows) and 0 <= j < len(rows[0])):
                    raise _said(f"cells.{matrix}[{n}]", "whatif.index", row=i, column=j, matrix=matrix,
                                rows=len(rows), columns=len(rows[0]))
                rows[i][j] = float(value)
            doc[matrix] = rows
        return doc


def _said(field: str, key: str, **values: Any) -> InputError:
    """A what-if's error, worded once (texts ``key``): English here, the reader's language where said. A value
    that is a `_Worded` (the offers' forms, factor=NUMBER / factor=수) is given in each language."""
    from ..explain import texts

    plain = {name: value.say("en") if isinstance(value, _Worded) else value for name, value in values.items()}
    error = InputError(texts.text("en", key, **plain), field=field, key=key, values=plain)
    worded = {name: value for name, value in values.items() if isinstance(value, _Worded)}
    if worded:
        error.values["by_lang"] = {lang: {name: value.say(lang) for name, value in worded.items()}
                                   for lang in texts.LANGS}
    return error


class _Worded:
    """Words of a value made in each language at the moment they are said (`_said`)."""

    def __init__(self, say):
        self.say = say


def _check_changes(name: str, changes: "Changes") -> None:
    if not isinstance(changes, Changes):
        raise TypeError(f"changes must be a qkv.examples.Changes, got {type(changes).__name__}")
    if isinstance(changes.factor, bool) or not isinstance(changes.factor, (int, float)) or \
            not math.isfinite(changes.factor):
        raise InputError.keyed("error.example.factor", field="factor", value=repr(changes.factor))
    if abs(changes.factor) > MAX_MAGNITUDE:   # finite, but the scores times it overflow (1e308: NaN rows)
        raise InputError.keyed("error.example.factor_range", field="factor", value=repr(changes.factor),
                               limit=f"{MAX_MAGNITUDE:g}")
    if not changes.sqrt_dk and name == "group-meeting":
        raise _said("sqrt_dk", "whatif.no_sqrt")
    unknown = [m for m in changes.cells if m not in EDITABLE[name]]
    if unknown:
        raise _said(f"cells.{str(unknown[0])[:20]}", "whatif.matrix" if EDITABLE[name] else "whatif.no_matrices",
                    fields=", ".join(EDITABLE[name]))
    if changes.scores and name != "group-meeting":
        raise _said("scores", "whatif.scores_only")


# KEY, [INDEX] and VALUE, spaces or tabs around each; VALUE is read by `as_number` (digits 0–9, as every number
# qkv reads as text), so "factor=１" and "factor=1\n" are refused as numbers, naming the what-if
_ITEM = re.compile(r"[ \t]*([A-Za-z_][\w]*)[ \t]*(?:\[([^\]]*)\])?[ \t]*=[ \t]*(.*?)[ \t]*", re.DOTALL)


def what_ifs(name: str) -> dict[str, tuple[int, ...]]:
    """The changes example ``name`` offers (the page's and serve's what-ifs), as `changes_from` reads them:
    ``factor`` and ``sqrt_dk`` → (); an input matrix (`EDITABLE`) → its shape (rows, columns); a group meeting's
    meeting → (its number of scores,)."""
    _check_name(name)
    doc = load(name)
    offered: dict[str, tuple[int, ...]] = {"factor": ()}
    if name == "group-meeting":
        offered.update({scene["name"]: (len(scene["scores"]),) for scene in doc["scenes"]})
        return offered
    offered["sqrt_dk"] = ()
    first = load(doc["first_head"]) if "first_head" in doc else doc      # multi-head: head 1's inputs, its own W_O
    for matrix in EDITABLE[name]:
        rows = (doc if matrix == "w_o" else first)[matrix]
        offered[matrix] = (len(rows), len(rows[0]))
    return offered


TOKEN_ROWS = ("x", "memory")       # matrices whose rows are tokens (every other row and column is an array subscript)


def _base(name: str) -> int:
    """The number the example gives its first token (1 in every shipped example: each counts as its post does);
    `changes_from` reads a token's row of x or memory and a meeting's position in it, as ``--query`` reads a
    token's number. Columns, and the rows of a W, are array subscripts, counted from 0 (docs/examples.md)."""
    return int(load(name).get("token_base", 0) or 0)


def _span(first: int, count: int) -> str:
    """The numbers ``first`` … of ``count`` rows or columns as a refusal names them: "1–4", or "1" for one (not "1–1")."""
    return str(first) if count == 1 else f"{first}–{first + count - 1}"


def _offers(name: str) -> "_Worded":
    """The changes an example offers, written as they are typed, the placeholders in the reader's language:
    factor=NUMBER, x[TOKEN,COLUMN]=NUMBER, w_q[ROW,COLUMN]=NUMBER, lot[TOKEN]=SCORE, … (factor=수, x[토큰,열]=수, …
    in Korean)."""
    from ..explain import texts

    forms = {0: "whatif.offer.number", 1: "whatif.offer.position", 2: "whatif.offer.cell"}
    offered = what_ifs(name)
    return _Worded(lambda lang: ", ".join(
        texts.text(lang, "whatif.offer.switch" if key == "sqrt_dk" else "whatif.offer.token_cell"
                   if key in TOKEN_ROWS else forms[len(shape)], key=key)
        for key, shape in offered.items()))


def changes_from(name: str, items, *, field: str = "--what-if") -> Changes:
    """A `Changes` from what-ifs typed as ``KEY=VALUE`` (``qkv example NAME --what-if …``): ``factor=0.5`` (the
    scores times 0.5 before the softmax), ``sqrt_dk=off``, ``x[2,0]=0.5`` (a cell of an input matrix),
    ``question[1]=50`` (a group meeting's given score). Numbered as the example numbers everything else: a row of x
    or memory and a meeting's position are tokens, numbered from the example's ``token_base`` (1 in every shipped
    example, as in the posts and as ``--query`` reads them: “love” is x's row 2); columns and a W's rows are array
    subscripts, counted from 0. The `Changes` returned counts from 0, as the API does. A bad key, value or index
    is an InputError naming it and listing what the example offers (`what_ifs`), or the rows and columns it has."""
    offered, base = what_ifs(name), _base(name)
    factor, sqrt_dk, cells, scores, seen = 1.0, True, {}, {}, set()
    for item in items:
        match = _ITEM.fullmatch(str(item))
        if match is None:
            raise _said(field, "whatif.cli.form", item=repr(str(item)[:40]), offers=_offers(name))
        key, index, value = match.group(1), match.group(2), match.group(3)
        if key == "sqrt_dk" and name == "group-meeting":          # the meeting's scores are given: nothing to divide
            raise _said(field, "whatif.no_sqrt")
        if key not in offered:
            raise _said(field, "whatif.cli.key", name=repr(key[:20]), offers=_offers(name))
        written = f"{key}[{index}]" if index is not None else key
        if written.replace(" ", "") in seen:
            raise _said(field, "whatif.cli.twice", name=written)
        seen.add(written.replace(" ", ""))
        shape = offered[key]
        if key == "sqrt_dk":
            if index is not None or value.lower() not in ("on", "off"):
                raise _said(field, "whatif.cli.switch", value=repr(value[:20]))
            sqrt_dk = value.lower() == "on"
            continue
        number = as_number(value)
        if number is None or not math.isfinite(number):
            raise _said(field, "whatif.cli.number", name=written, value=repr(value[:20]))
        if abs(number) > MAX_MAGNITUDE:    # a factor of 1e308 overflowed the scores into NaN rows
            raise _said(field, "whatif.cli.range", name=written, value=repr(value[:20]), limit=f"{MAX_MAGNITUDE:g}")
        if not shape:
            if index is not None:
                raise _said(field, "whatif.cli.key", name=repr(written[:20]), offers=_offers(name))
            factor = number
            continue
        tokens = len(shape) == 1 or key in TOKEN_ROWS             # its rows (a meeting's positions) are tokens
        typed = [] if index is None else [as_int(p) for p in index.split(",")]      # digits 0–9, as --query
        if len(typed) != len(shape) or None in typed:
            raise _said(field, "whatif.cli.position" if len(shape) == 1 else
                        "whatif.cli.index.tokens" if tokens else "whatif.cli.index", name=key, base=base)
        first = base if tokens else 0
        where = (typed[0] - first, *typed[1:])                  # the API's, from 0
        if not all(0 <= n < size for n, size in zip(where, shape)):
            rows, cell = _span(first, shape[0]), written.replace(" ", "")
            if len(shape) == 1:
                raise _said(field, "whatif.cli.score_outside", name=cell, count=shape[0], range=rows, base=base)
            # a one-row matrix (cross-attention's decoder row x) has "one row", not "rows … 1"
            key_said = ("whatif.cli.cell_outside.tokens" if tokens else "whatif.cli.cell_outside") + \
                (".one" if shape[0] == 1 else "")
            raise _said(field, key_said, name=cell,
                        matrix=key, shape=f"{shape[0]} × {shape[1]}", rows=rows, columns=_span(0, shape[1]),
                        base=base)
        if len(shape) == 2:
            cells.setdefault(key, []).append((*where, number))
        else:
            scores.setdefault(key, []).append((where[0], number))
    return Changes(factor, sqrt_dk, {m: tuple(e) for m, e in cells.items()}, {k: tuple(e) for k, e in scores.items()})


def run(name: str, *, query: Any = None, by_hand: bool = False, digits: int | None = None,
        changes: Changes | None = None) -> Trace:
    """Compute example ``name`` with recording on and return its Trace.

    query: the token to follow: a token string or a row index (from 0, the API's), or a
      `qkv.trace.Shown` number counted as the example shows its rows (``--query``); default the post's.
    by_hand: also run every step on numbers rounded to the digits shown (``digits`` for all steps,
      or the post's own precision per step when None) and record the drift from the exact result.
    changes: a what-if (`Changes`): edited inputs, a factor on the scores, √d_k off. The trace then
      carries meta["what_if"] and none of the post's notes (they speak of the post's numbers).
    """
    _check_name(name)
    doc = load(name)
    where = f"qkv/examples/{name}.toml"
    kind = doc.get("kind", "attention")
    meta = {"example": name, "kind": name, "post": doc.get("post"), "head_base": int(doc.get("head_base", 0)),
            "token_base": int(doc.get("token_base", 0)),
            "digits": read_digits(doc, source=where),
            "notes": read_notes(doc, source=where)}
    if changes is not None:
        _check_changes(name, changes)
        meta.update(notes=[], what_if=changes.describe())
        if changes.factor != 1.0 or not changes.sqrt_dk:
            # the post's decimals for scaled scores suit its own scale (whole numbers in the meeting)
            meta["digits"] = {k: v for k, v in meta["digits"].items() if not k.endswith("scaled_scores")}
    if kind == "attention":
        if changes is not None:
            doc = changes.apply(doc, EDITABLE[name])
        spec = parse_spec(doc, source=where, base=None)
        scale = None
        if changes is not None and (changes.factor != 1.0 or not changes.sqrt_dk):
            d_k = spec.w_q.shape[1] // spec.heads
            scale = changes.factor * (1.0 / math.sqrt(d_k) if changes.sqrt_dk else 1.0)
        return trace_spec(spec, query=query, by_hand=by_hand, digits=digits, meta=meta, scale=scale)
    if kind == "multi-head":
        first = run(doc["first_head"], changes=None if changes is None else
                    Changes(changes.factor, changes.sqrt_dk, {m: e for m, e in changes.cells.items() if m != "w_o"}))
        if changes is not None:
            doc = changes.apply(doc, ("w_o",))
        tokens = first.meta["tokens"]
        followed = resolve_query(doc["query"], tokens, source=where)
        if query is not None and resolve_query(query, tokens, source=None, field="--query",
                                               base=first.info.token_base, tokens_ko=first.meta.get("tokens_ko")) != followed:
            raise InputError.keyed("error.example.multi_head_query", field="--query", value=repr(query),
                                   token=repr(tokens[followed]))
        data = {"given_heads": list(read_array(doc["given_heads"], source=where, field="given_heads", base=None)),
                "w_o": read_array(doc["w_o"], source=where, field="w_o", base=None)}
        meta.update(tokens=tokens, query=followed, n_heads=1 + len(data["given_heads"]),
                    first_head=doc["first_head"])
        return trace_multi_head(data, first, query=followed, by_hand=by_hand, digits=digits, meta=meta)
    if kind == "group-meeting":
        if query is not None:
            raise InputError.keyed("error.example.meeting_query", field="--query")
        scenes = []
        for i, scene in enumerate(doc["scenes"]):
            field = f"scenes[{i}]"
            scores = [float(s) for s in scene["scores"]]
            for n, (j, value) in enumerate(() if changes is None else changes.scores.get(scene["name"], ())):
                if not 0 <= j < len(scores):
                    raise _said(f"scores.{scene['name']}[{n}]", "whatif.score_index", index=j, count=len(scores))
                scores[j] = float(value)
            scenes.append({"name": scene["name"], "tokens": list(scene["tokens"]),
                           "query": scene["query"],
                           "scores": read_array(scores, source=where, field=f"{field}.scores", base=None, ndim=1),
                           "values": read_array(scene["values"], source=where, field=f"{field}.values", base=None)})
        notation = run(doc["notation"])
        meta.update(answers=list(doc["answers"]), scenes=[{k: s[k] for k in ("name", "tokens", "query")} for s in scenes],
                    tokens=notation.meta["tokens"], notation=doc["notation"])
        if changes is not None:
            unknown = [s for s in changes.scores if s not in [scene["name"] for scene in scenes]]
            if unknown:
                raise _said(f"scores.{unknown[0][:20]}", "whatif.scene", scene=unknown[0][:20],
                            scenes=", ".join(scene["name"] for scene in scenes))
        return trace_group_meeting({"scenes": scenes}, notation, by_hand=by_hand, digits=digits, meta=meta,
                                   scale=1.0 if changes is None else float(changes.factor))
    raise InputError.keyed("error.example.kind", source=where, field="kind", kind=repr(kind))


def variants(name: str, trace: Trace | None = None) -> dict | None:
    """What-ifs an offline page can show without a server, each computed by `run` with `Changes`.

    The group meeting: meeting 2 again with the question's words scored s (1 … 1000) instead of 1000, so
    lot's weight goes from ~1 to ~0. Other worked examples without a mask: every query's weights (H, Tq, Tk)
    and output (H, Tq, Dv) for score scales 0 … 4 (0: every key alike; 1/√d_k: as recorded; 1: no ÷√d_k). The page
    only looks these numbers up (`trace_html` reads ``trace.meta["variants"]``). None: nothing to vary.
    """
    trace = trace if trace is not None else run(name)
    info = trace.info
    if name == "group-meeting":
        scenes = [s for s in info.scenes if isinstance(s, dict)]
        if len(scenes) < 2:
            return None
        tokens, first = [str(t) for t in scenes[1]["tokens"]], scenes[0]["tokens"]
        asked = list(range(len(tokens) - len(first)))          # the question's words come first
        scores = trace[f"{scenes[1]['name']}/scores"].value.reshape(-1)
        rows = []
        for s in (1, 10, 50, 90, 95, 100, 105, 110, 150, 200, 500, 1000):
            changed = run(name, changes=Changes(scores={scenes[1]["name"]: tuple((j, float(s)) for j in asked)}))
            rows.append({"score": s, "weights": changed[f"{scenes[1]['name']}/weights"].value.reshape(-1).tolist(),
                         "out": changed[f"{scenes[1]['name']}/out"].value.reshape(-1).tolist()})
        return {"kind": "meeting", "tokens": tokens, "asked": asked, "lot": len(tokens) - 1,
                "recorded": float(scores[asked[0]]), "lotScore": float(scores[-1]),
                "scores": [float(s) for s in scores],          # every token's given score (the asked ones vary)
                "answers": [str(a) for a in info.answers], "variants": rows}
    if name not in EDITABLE or name == "multi-head" or "mask" in trace or "q_heads" not in trace:
        return None
    q_heads = trace["q_heads"].value
    d_k, query = q_heads.shape[-1], info.query
    root = math.sqrt(d_k)
    scales = [(0.0, ""), (0.25 / root, ""), (0.5 / root, ""), (1 / root, "recorded"), (1.0, "plain"), (2.0, ""),
              (4.0, "")]
    rows = []
    for scale, role in sorted(scales):          # every query's row: the page follows whichever query is chosen
        changed = trace if role == "recorded" else run(name, changes=Changes(factor=scale, sqrt_dk=False))
        rows.append({"scale": scale, "role": role, "weights": changed["weights"].value.tolist(),
                     "out": changed["out"].value.tolist()})
    return {"kind": "scale", "dk": d_k, "query": query, "qToken": info.tokens[query],
            "tokens": list(info.key_tokens), "variants": rows}


def path(name: str) -> Path:
    """Where the example's TOML file lies (inside the installed package)."""
    _check_name(name)
    return Path(str(resources.files(__package__).joinpath(f"{name}.toml")))
