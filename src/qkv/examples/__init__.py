"""The seed examples, shipped as TOML data, and the runner that turns one into a Trace.

    >>> import qkv.examples as ex
    >>> ex.names()
    ['self-attention', 'cross-attention', 'multi-head', 'projection', 'group-meeting']
    >>> trace = ex.run("self-attention")          # follows "love", as seed 001 does
    >>> trace["weights"].value.shape               # (H, Tq, Tk)
    (1, 4, 4)

The TOML files hold inputs only (embeddings, weight matrices, given head outputs, scores): every
other number is computed by the core with a recorder. `run(..., by_hand=True)` adds the by-hand
steps ("by hand/…", rounded to the digits shown) and their drift from the exact ones ("drift/…").
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..spec import parse_spec, read_array, read_digits, read_notes, resolve_query
from ..trace import Trace
from .runner import trace_group_meeting, trace_multi_head, trace_spec

__all__ = ["names", "load", "run", "source", "path"]

NAMES = ("self-attention", "cross-attention", "multi-head", "projection", "group-meeting")


def names() -> list[str]:
    """The shipped examples, in the order the seeds introduce them."""
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
        raise InputError(f"unknown example {name!r}; the examples are: {', '.join(NAMES)}", field="example")


def run(name: str, *, query: Any = None, by_hand: bool = False, digits: int | None = None) -> Trace:
    """Compute example ``name`` with recording on and return its Trace.

    query: the token to follow (a token string or a row index); default the seed's.
    by_hand: also run every step on numbers rounded to the digits shown (``digits`` for all steps,
      or the seed's own precision per step when None) and record the drift from the exact result.
    """
    _check_name(name)
    doc = load(name)
    where = f"qkv/examples/{name}.toml"
    kind = doc.get("kind", "attention")
    meta = {"example": name, "kind": name, "post": doc.get("post"), "head_base": int(doc.get("head_base", 0)),
            "digits": read_digits(doc, source=where),
            "notes": read_notes(doc, source=where)}
    if kind == "attention":
        spec = parse_spec(doc, source=where, base=None)
        return trace_spec(spec, query=query, by_hand=by_hand, digits=digits, meta=meta)
    if kind == "multi-head":
        first = run(doc["first_head"])
        tokens = first.meta["tokens"]
        followed = resolve_query(doc["query"], tokens, source=where)
        if query is not None and resolve_query(query, tokens, source=None, field="--query") != followed:
            raise InputError(f"{query!r}: the multi-head example follows {tokens[followed]!r} only (heads 2 and 3 "
                             "are given for that token)", field="--query")
        data = {"given_heads": list(read_array(doc["given_heads"], source=where, field="given_heads", base=None)),
                "w_o": read_array(doc["w_o"], source=where, field="w_o", base=None)}
        meta.update(tokens=tokens, query=followed, n_heads=1 + len(data["given_heads"]),
                    first_head=doc["first_head"])
        return trace_multi_head(data, first, query=followed, by_hand=by_hand, digits=digits, meta=meta)
    if kind == "group-meeting":
        if query is not None:
            raise InputError("the group-meeting example has no --query (each meeting follows lot's question)",
                             field="--query")
        scenes = []
        for i, scene in enumerate(doc["scenes"]):
            field = f"scenes[{i}]"
            scenes.append({"name": scene["name"], "tokens": list(scene["tokens"]),
                           "query": scene["query"],
                           "scores": read_array(scene["scores"], source=where, field=f"{field}.scores", base=None, ndim=1),
                           "values": read_array(scene["values"], source=where, field=f"{field}.values", base=None)})
        notation = run(doc["notation"])
        meta.update(answers=list(doc["answers"]), scenes=[{k: s[k] for k in ("name", "tokens", "query")} for s in scenes],
                    tokens=notation.meta["tokens"], notation=doc["notation"])
        return trace_group_meeting({"scenes": scenes}, notation, by_hand=by_hand, digits=digits, meta=meta)
    raise InputError(f"unknown kind {kind!r}", source=where, field="kind")


def path(name: str) -> Path:
    """Where the example's TOML file lies (inside the installed package)."""
    _check_name(name)
    return Path(str(resources.files(__package__).joinpath(f"{name}.toml")))
