"""User example files: a TOML or JSON file describing one attention computation to explain.

The format (documented in docs/examples.md)::

    title = "My example"                 # optional
    tokens = ["the", "cat", "sat"]       # one per row of x
    query = "cat"                        # the token to follow (default: the last one)
    x = [[1.0, 0.0], [0.5, 1.0], [0.0, 2.0]]
    w_q = [[1.0, 0.5], [0.0, 1.0]]       # (D, H·Dk), row-vector convention: Q = x·W_Q
    w_k = "w_k.npy"                      # arrays may live in .npy/.npz/.safetensors files,
    w_v = { file = "w.npz", key = "v" }  # named relative to this file
    w_o = [[...]]                        # optional: (H·Dv, D_out); without it the head outputs are the result
    heads = 1                            # optional
    mask = "causal"                      # optional: "causal" or a Tq×Tk matrix of true/false (1/0)
    residual = true                      # optional: add R + Y (needs w_o with D_out = D)
    # cross-attention: keys and values read the encoder's memory instead of x
    memory = [[...]]
    memory_tokens = ["le", "chat"]

Every problem is an `InputError` naming the file, the field and what is wrong.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError

__all__ = ["Spec", "load_spec", "parse_spec", "read_document", "read_array", "resolve_query", "FIELDS"]

FIELDS = ("title", "tokens", "query", "x", "memory", "memory_tokens", "w_q", "w_k", "w_v", "w_o",
          "b_q", "b_k", "b_v", "b_o", "heads", "mask", "residual", "digits", "notes", "kind", "example",
          "seed")


@dataclass(frozen=True, eq=False)
class Spec:
    """One validated attention example: arrays are float64, shapes chain, the query is a row index.

    x (Tq, D); memory (Tk, Dm) or None (self-attention, Tk = Tq); w_q (D, H·Dk); w_k (Dm or D, H·Dk);
    w_v (Dm or D, H·Dv); w_o (H·Dv, D_out) or None; mask (Tq, Tk) bool or None (True = may attend).
    ``digits`` maps step names to the precision shown (and used by the by-hand mode);
    ``notes`` are remarks attached to steps (see `qkv.explain`).
    """

    source: str
    tokens: list[str]
    x: np.ndarray
    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray | None = None
    heads: int = 1
    memory: np.ndarray | None = None
    memory_tokens: list[str] | None = None
    mask: np.ndarray | None = None
    causal: bool = False
    residual: bool = False
    query: int = 0
    title: str = ""
    example: str | None = None
    seed: str | None = None
    biases: dict = field(default_factory=dict)
    digits: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    @property
    def key_tokens(self) -> list[str]:
        return self.tokens if self.memory_tokens is None else self.memory_tokens

    @property
    def kind(self) -> str:
        if self.memory is not None:
            return "cross-attention"
        return "self-attention" if self.heads == 1 and self.w_o is None else "projection"


# --------------------------------------------------------------------------- reading files
def read_document(path: str | Path) -> dict:
    """Parse a .toml or .json file into a dict; every failure is an InputError naming the file."""
    path = Path(path)
    source = str(path)
    if not path.exists():
        raise InputError("file not found", source=source)
    if path.is_dir():
        raise InputError("is a directory, not a file", source=source)
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise InputError(f"unknown file type {suffix or '(none)'!r}; use .toml or .json", source=source)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", source=source) from None
    except OSError as exc:
        raise InputError(f"cannot read the file ({exc.strerror})", source=source) from None
    if suffix == ".toml":
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"malformed TOML: {exc}", source=source) from None
    else:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                             source=source) from None
        if not isinstance(doc, dict):
            raise InputError(f"the JSON must be an object with named fields, got {type(doc).__name__}",
                             source=source)
    return doc


def read_array(value: Any, *, source: str, field: str, base: Path | None, ndim: int | None = 2,
               boolean: bool = False) -> np.ndarray:
    """A field's numbers as a float64 (or bool) array: nested lists, or an array file.

    A string names a .npy file (or an .npz/.safetensors file holding exactly one array); a table
    ``{file = "...", key = "...", transpose = false}`` picks one array of an .npz/.safetensors file
    (``transpose = true`` converts torch's (d_out, d_in) layout to qkv's (d_in, d_out), explicitly).
    Ragged rows, non-numbers and NaN/inf are refused with the row and column (1-based).
    """
    if isinstance(value, (str, dict)):
        array = _array_from_file(value, source=source, field=field, base=base)
        if boolean:
            array = _as_bool(array, source=source, field=field)
        elif not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
            raise InputError(f"the array holds {array.dtype} values, not real numbers", source=source, field=field)
        else:
            array = array.astype(np.float64)
    elif isinstance(value, list):
        array = _array_from_lists(value, source=source, field=field, boolean=boolean)
    else:
        raise InputError(f"expected a matrix (a list of rows) or an array file name, got {_describe(value)}",
                         source=source, field=field)
    if ndim is not None and array.ndim != ndim:
        what = {1: "a list of numbers", 2: "a matrix (a list of rows)"}.get(ndim, f"{ndim}-D")
        raise InputError(f"expected {what}, got an array of shape {_shape(array.shape)}", source=source, field=field)
    if array.size == 0:
        raise InputError(f"is empty (shape {_shape(array.shape)})", source=source, field=field)
    if not boolean and not np.all(np.isfinite(array)):
        where = np.argwhere(~np.isfinite(array))[0]
        raise InputError(f"{_position(where)} is {array[tuple(where)]}; every number must be finite",
                         source=source, field=field)
    return array


def _array_from_lists(value: list, *, source: str, field: str, boolean: bool) -> np.ndarray:
    def check(item: Any, index: tuple[int, ...]) -> Any:
        if isinstance(item, list):
            return [check(v, index + (i,)) for i, v in enumerate(item)]
        if boolean:
            if isinstance(item, bool) or (isinstance(item, (int, float)) and item in (0, 1)):
                return bool(item)
            raise InputError(f"{_position(index)} is {_describe(item)}, not true/false (or 1/0)",
                             source=source, field=field)
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            raise InputError(f"{_position(index)} is {_describe(item)}, not a number", source=source, field=field)
        if not math.isfinite(item):
            raise InputError(f"{_position(index)} is {item}; every number must be finite", source=source, field=field)
        return item

    checked = check(value, ())
    _check_rectangular(checked, (), source=source, field=field)
    return np.array(checked, dtype=bool if boolean else np.float64)


def _check_rectangular(value: list, index: tuple[int, ...], *, source: str, field: str) -> None:
    kinds = {isinstance(v, list) for v in value}
    if len(kinds) > 1:
        raise InputError(f"{_position(index) + ' ' if index else ''}mixes numbers and lists", source=source, field=field)
    if kinds == {True}:
        lengths = [len(v) for v in value]
        for i, n in enumerate(lengths):
            if n != lengths[0]:
                raise InputError(f"ragged rows: row {i + 1} has {n} values but row 1 has {lengths[0]}",
                                 source=source, field=field)
        for i, v in enumerate(value):
            _check_rectangular(v, index + (i,), source=source, field=field)


def _array_from_file(value: str | dict, *, source: str, field: str, base: Path | None) -> np.ndarray:
    if isinstance(value, dict):
        unknown = set(value) - {"file", "key", "transpose"}
        if unknown or "file" not in value:
            raise InputError("an array file is given as {file = \"...\", key = \"...\", transpose = false}"
                             + (f"; unknown key {sorted(unknown)[0]!r}" if unknown else "; 'file' is missing"),
                             source=source, field=field)
        name, key, transpose = value["file"], value.get("key"), value.get("transpose", False)
        if not isinstance(name, str) or (key is not None and not isinstance(key, str)) or not isinstance(transpose, bool):
            raise InputError("file and key must be strings and transpose true or false", source=source, field=field)
    else:
        name, key, transpose = value, None, False
    path = Path(name) if base is None or Path(name).is_absolute() else base / name
    if not path.is_file():
        raise InputError(f"array file {name!r} not found" + (f" (looked in {str(path.parent)!r})" if base else ""),
                         source=source, field=field)
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            if key is not None:
                raise InputError(f"{name!r} is a .npy file holding one array; it has no key {key!r}",
                                 source=source, field=field)
            array = np.load(path, allow_pickle=False)
        elif suffix in (".npz", ".safetensors"):
            arrays = _load_many(path, suffix)
            if key is None:
                if len(arrays) != 1:
                    raise InputError(f"{name!r} holds {len(arrays)} arrays ({', '.join(sorted(arrays))}); "
                                     "name one with key = \"...\"", source=source, field=field)
                key = next(iter(arrays))
            if key not in arrays:
                raise InputError(f"{name!r} has no array {key!r} (it has: {', '.join(sorted(arrays)) or 'none'})",
                                 source=source, field=field)
            array = arrays[key]
        else:
            raise InputError(f"array file {name!r}: unknown type {suffix or '(none)'!r}; "
                             "use .npy, .npz or .safetensors", source=source, field=field)
    except InputError:
        raise
    except Exception as exc:  # corrupt files raise many different exception types
        raise InputError(f"cannot read array file {name!r}: {exc}", source=source, field=field) from None
    array = np.asarray(array)
    if transpose:
        if array.ndim != 2:
            raise InputError(f"transpose = true needs a matrix, {name!r} holds shape {_shape(array.shape)}",
                             source=source, field=field)
        array = array.T
    return array


def _load_many(path: Path, suffix: str) -> dict[str, np.ndarray]:
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as archive:
            return {k: archive[k] for k in archive.files}
    from safetensors.numpy import load_file

    return load_file(str(path))


def _as_bool(array: np.ndarray, *, source: str, field: str) -> np.ndarray:
    if array.dtype == bool:
        return array
    if np.issubdtype(array.dtype, np.number) and np.all((array == 0) | (array == 1)):
        return array.astype(bool)
    raise InputError("expected true/false (or 1/0) values", source=source, field=field)


def _position(index) -> str:
    index = tuple(int(i) for i in index)
    if len(index) == 2:
        return f"row {index[0] + 1}, column {index[1] + 1}"
    if len(index) == 1:
        return f"entry {index[0] + 1}"
    return "entry [" + ", ".join(str(i + 1) for i in index) + "]"


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    return f"{value!r}" if isinstance(value, (int, float)) else f"a {type(value).__name__}"


def _shape(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


# --------------------------------------------------------------------------- fields
def read_tokens(doc: dict, name: str, count: int, *, source: str, rows_of: str) -> list[str]:
    """A list of ``count`` token strings (one per row of ``rows_of``)."""
    if name not in doc:
        raise InputError(f"missing: give one token string per row of {rows_of}", source=source, field=name)
    tokens = doc[name]
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise InputError(f"expected a list of strings, got {_describe(tokens)}", source=source, field=name)
    if len(tokens) != count:
        raise InputError(f"has {len(tokens)} tokens but {rows_of} has {count} rows", source=source, field=name)
    return list(tokens)


def resolve_query(query: Any, tokens: list[str], *, source: str, field: str = "query") -> int:
    """The row index of ``query``: a token string (its first occurrence), or an integer row index."""
    if isinstance(query, str) and query in tokens:
        return tokens.index(query)
    if isinstance(query, int) and not isinstance(query, bool) and 0 <= query < len(tokens):
        return query
    if isinstance(query, str) and query.lstrip("-").isdigit() and 0 <= int(query) < len(tokens):
        return int(query)
    raise InputError(f"{query!r} is not one of the tokens ({', '.join(tokens)}) nor a row index 0–{len(tokens) - 1}",
                     source=source, field=field)


def read_digits(doc: dict, *, source: str) -> dict[str, int]:
    digits = doc.get("digits", {})
    if not isinstance(digits, dict) or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 12
                                               for v in digits.values()):
        raise InputError("expected a table of step name = number of decimals (0–12)", source=source, field="digits")
    return dict(digits)


def read_notes(doc: dict, *, source: str) -> list[dict]:
    notes = doc.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, dict) and isinstance(n.get("step"), str)
                                              and isinstance(n.get("text", n.get("key")), str) for n in notes):
        raise InputError("expected a list of tables with step = \"...\" and text = \"...\"", source=source,
                         field="notes")
    return [dict(n) for n in notes]


def load_spec(path: str | Path) -> Spec:
    """Read and validate a user example file (.toml or .json)."""
    path = Path(path)
    return parse_spec(read_document(path), source=str(path), base=path.parent)


def parse_spec(doc: dict, *, source: str, base: Path | None) -> Spec:
    """Validate a parsed example document; shapes must chain from x to y."""
    unknown = [k for k in doc if k not in FIELDS]
    if unknown:
        raise InputError(f"unknown field (known fields: {', '.join(FIELDS)})", source=source, field=unknown[0])
    kind = doc.get("kind", "attention")
    if kind != "attention":
        raise InputError(f"{kind!r} is not a kind of user example; use \"attention\" (or leave it out)",
                         source=source, field="kind")

    def array(name: str, required: bool = True, ndim: int = 2) -> np.ndarray | None:
        if name not in doc:
            if required:
                raise InputError("missing: this matrix is required", source=source, field=name)
            return None
        return read_array(doc[name], source=source, field=name, base=base, ndim=ndim)

    x = array("x")
    tq, d = x.shape
    tokens = read_tokens(doc, "tokens", tq, source=source, rows_of="x")
    memory = array("memory", required=False)
    memory_tokens = None
    if memory is not None:
        memory_tokens = read_tokens(doc, "memory_tokens", memory.shape[0], source=source, rows_of="memory")
    elif "memory_tokens" in doc:
        raise InputError("given without memory (memory_tokens label the rows of memory)", source=source,
                         field="memory_tokens")
    kv_source, d_kv = ("memory", memory.shape[1]) if memory is not None else ("x", d)
    w_q, w_k, w_v, w_o = array("w_q"), array("w_k"), array("w_v"), array("w_o", required=False)
    for name, w, width, of in (("w_q", w_q, d, "x"), ("w_k", w_k, d_kv, kv_source), ("w_v", w_v, d_kv, kv_source)):
        if w.shape[0] != width:
            raise InputError(f"has {w.shape[0]} rows but {of} has {width} columns; {of}·{name.upper()} needs "
                             f"one row of {name.upper()} per column of {of}", source=source, field=name)
    if w_k.shape[1] != w_q.shape[1]:
        raise InputError(f"has {w_k.shape[1]} columns but w_q has {w_q.shape[1]}; queries and keys must have "
                         "the same width to be compared (Q·Kᵀ)", source=source, field="w_k")
    heads = doc.get("heads", 1)
    if isinstance(heads, bool) or not isinstance(heads, int) or heads < 1:
        raise InputError(f"expected a positive whole number, got {_describe(heads)}", source=source, field="heads")
    for name, w in (("w_q", w_q), ("w_v", w_v)):
        if w.shape[1] % heads:
            raise InputError(f"{name} has {w.shape[1]} columns, which do not split into {heads} heads "
                             f"({w.shape[1]} % {heads} = {w.shape[1] % heads})", source=source, field="heads")
    if w_o is not None and w_o.shape[0] != w_v.shape[1]:
        raise InputError(f"has {w_o.shape[0]} rows but the {heads} concatenated heads have {w_v.shape[1]} values "
                         "(the columns of w_v); Concat(heads)·W_O needs them equal", source=source, field="w_o")
    biases = {}
    for name, width in (("b_q", w_q.shape[1]), ("b_k", w_k.shape[1]), ("b_v", w_v.shape[1]),
                        ("b_o", None if w_o is None else w_o.shape[1])):
        if name in doc:
            if width is None:
                raise InputError("given without w_o", source=source, field=name)
            b = read_array(doc[name], source=source, field=name, base=base, ndim=1)
            if b.shape[0] != width:
                raise InputError(f"has {b.shape[0]} values but needs {width}", source=source, field=name)
            biases[name] = b
    tk = tq if memory is None else memory.shape[0]
    mask, causal = None, False
    if "mask" in doc:
        if doc["mask"] == "causal":
            causal = True
        elif isinstance(doc["mask"], str) and not Path(doc["mask"]).suffix:
            raise InputError(f"{doc['mask']!r}: expected \"causal\" or a {tq}×{tk} matrix of true/false",
                             source=source, field="mask")
        else:
            mask = read_array(doc["mask"], source=source, field="mask", base=base, boolean=True)
            if mask.shape != (tq, tk):
                raise InputError(f"has shape {_shape(mask.shape)} but there are {tq} queries and {tk} keys "
                                 f"(expected ({tq}, {tk}))", source=source, field="mask")
    residual = doc.get("residual", False)
    if not isinstance(residual, bool):
        raise InputError(f"expected true or false, got {_describe(residual)}", source=source, field="residual")
    if residual and (w_o is None or w_o.shape[1] != d):
        raise InputError("R + Y needs w_o with as many columns as x" + ("" if w_o is None else
                         f" ({d}); w_o has {w_o.shape[1]}"), source=source, field="residual")
    query = resolve_query(doc.get("query", tokens[-1]), tokens, source=source)
    title = doc.get("title", "")
    if not isinstance(title, str):
        raise InputError("expected a string", source=source, field="title")
    return Spec(source=source, tokens=tokens, x=x, w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, heads=heads,
                memory=memory, memory_tokens=memory_tokens, mask=mask, causal=causal, residual=residual,
                query=query, title=title, example=doc.get("example"), seed=doc.get("seed"), biases=biases,
                digits=read_digits(doc, source=source), notes=read_notes(doc, source=source))
