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

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._io import as_int, check_input_file, load_json, load_toml, read_text, short_repr
from .errors import InputError, plural

__all__ = ["Spec", "load_spec", "parse_spec", "read_document", "read_array", "resolve_query", "FIELDS",
           "MAX_MAGNITUDE", "MAX_NUMBERS", "MAX_TOKENS", "MAX_WIDTH", "MAX_SCORES"]

# Bounds on a user example (checked before any attention is computed; docs/reliability.md).
MAX_MAGNITUDE = 1e30     # |every input number|: keeps every step finite in float64 (1e30⁴·2048³ < 1e308)
MAX_NUMBERS = 2**20      # numbers in one array (x, a weight matrix, the mask, ...) and in all of them together
MAX_TOKENS = 512         # rows of x (queries) and of memory (keys)
MAX_WIDTH = 2048         # columns of x, memory and every weight matrix
MAX_SCORES = 2**18       # heads × queries × keys: the score matrices the explanation records
MAX_VALUES_IN_FILE = 16 * MAX_NUMBERS   # commas in a document (a saved explanation repeats every step)

FIELDS = ("title", "tokens", "query", "x", "memory", "memory_tokens", "w_q", "w_k", "w_v", "w_o",
          "b_q", "b_k", "b_v", "b_o", "heads", "mask", "residual", "digits", "notes", "kind", "example",
          "post", "seed", "head_base")


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
    post: str | None = None           # the post a worked example comes from ("000", "001", "002"); "seed" is read too
    head_base: int = 0                # 1: heads are shown numbered from 1, as the example's post numbers them
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
    """Parse a .toml or .json file (at most 64 MiB, nested at most 64 deep) into a dict.

    Every failure is an InputError naming the file (see `qkv._io.read_text`, `load_json`, `load_toml`).
    """
    path = Path(path)
    source = str(path)
    check_input_file(path)
    _check_suffix(path.suffix.lower(), source)
    return parse_document(read_text(path), source=source, suffix=path.suffix.lower())


def parse_document(text: str, *, source: str, suffix: str) -> dict:
    """Parse the text of a .toml or .json example (``suffix``) into a dict, as `read_document` parses a
    file: the same bounds and the same one-line messages naming ``source`` (`qkv serve` parses
    uploads, held in memory, with it)."""
    _check_suffix(suffix, source)
    if text.count(",") > MAX_VALUES_IN_FILE:          # counted before parsing: a 10,000 × 10,000 example stops here
        raise InputError(f"holds more than {MAX_VALUES_IN_FILE:,} values; qkv explains examples of at most "
                         f"{MAX_NUMBERS:,} numbers (see docs/reliability.md)", source=source)
    if suffix == ".toml":
        return load_toml(text, source=source)
    doc = load_json(text, source=source)
    if not isinstance(doc, dict):
        raise InputError(f"the JSON must be an object with named fields, got {_describe(doc)}", source=source)
    return doc


def _check_suffix(suffix: str, source: str) -> None:
    if suffix not in (".toml", ".json"):
        raise InputError(f"unknown file type {suffix or '(none)'!r}; use .toml or .json", source=source)


def read_array(value: Any, *, source: str, field: str, base: Path | None, ndim: int | None = 2,
               boolean: bool = False) -> np.ndarray:
    """A field's numbers as a float64 (or bool) array: nested lists, or an array file.

    A string names a .npy file (or an .npz/.safetensors file holding exactly one array); a table
    ``{file = "...", key = "...", transpose = false}`` picks one array of an .npz/.safetensors file
    (``transpose = true`` converts torch's (d_out, d_in) layout to qkv's (d_in, d_out), explicitly).
    Ragged rows, non-numbers, NaN/inf and numbers beyond ±MAX_MAGNITUDE are refused with the row
    and column (1-based); so are arrays of more than MAX_NUMBERS numbers.
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
        array = _array_from_lists(value, source=source, field=field, boolean=boolean, ndim=ndim)
    else:
        raise InputError(f"expected a matrix (a list of rows) or an array file name, got {_describe(value)}",
                         source=source, field=field)
    if ndim is not None and array.ndim != ndim:
        what = {1: "a list of numbers", 2: "a matrix (a list of rows)"}.get(ndim, f"{ndim}-D")
        raise InputError(f"expected {what}, got an array of shape {_shape(array.shape)}", source=source, field=field)
    if array.size == 0:
        raise InputError(f"is empty (shape {_shape(array.shape)})", source=source, field=field)
    if array.size > MAX_NUMBERS:
        raise InputError(f"has {array.size:,} numbers (shape {_shape(array.shape)}); an example array may hold "
                         f"at most {MAX_NUMBERS:,}", source=source, field=field)
    if not boolean:
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(array) | (np.abs(array) > MAX_MAGNITUDE)
        if bad.any():
            where = np.argwhere(bad)[0]
            raise InputError(f"{_position(where)} is {array[tuple(where)]}; {_RANGE}", source=source, field=field)
    return array


_RANGE = f"every number must be finite and within ±{MAX_MAGNITUDE:g} (so that every step stays finite)"


def _array_from_lists(value: list, *, source: str, field: str, boolean: bool, ndim: int | None) -> np.ndarray:
    deepest = ndim or 8

    def check(item: Any, index: tuple[int, ...]) -> Any:
        if isinstance(item, list):
            if len(index) >= deepest:
                what = {1: "a list of numbers", 2: "a matrix (a list of rows)"}.get(ndim, f"{deepest}-D at most")
                raise InputError(f"{_position(index)} is a list nested too deep: expected {what}",
                                 source=source, field=field)
            return [check(v, index + (i,)) for i, v in enumerate(item)]
        if boolean:
            if isinstance(item, bool) or (isinstance(item, (int, float)) and item in (0, 1)):
                return bool(item)
            raise InputError(f"{_position(index)} is {_describe(item)}, not true/false (or 1/0)",
                             source=source, field=field)
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            raise InputError(f"{_position(index)} is {_describe(item)}, not a number", source=source, field=field)
        if isinstance(item, int) and abs(item) > MAX_MAGNITUDE:
            raise InputError(f"{_position(index)} is {_describe(item)}; {_RANGE}", source=source, field=field)
        if not math.isfinite(item) or abs(item) > MAX_MAGNITUDE:
            raise InputError(f"{_position(index)} is {item}; {_RANGE}", source=source, field=field)
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
                raise InputError(f"ragged rows: row {i + 1} has {plural(n, 'value')} but row 1 has {lengths[0]}",
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
    if not name:
        raise InputError("the array file name is empty", source=source, field=field)
    try:
        check_input_file(path, source=source, field=field, what="array file", fifo=False, shown=name)
    except InputError as exc:
        if "not found" in exc.problem and base is not None and not Path(name).is_absolute():
            raise InputError(f"{exc.problem} (looked in {str(path.parent)!r})", source=source, field=field) from None
        raise
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            if key is not None:
                raise InputError(f"{name!r} is a .npy file holding one array; it has no key {key!r}",
                                 source=source, field=field)
            array = np.load(path, allow_pickle=False, mmap_mode="r")
            _check_count(array.shape, name, source=source, field=field)
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


def _check_count(shape, name: str, *, source: str, field: str) -> None:
    count = int(np.prod(shape, dtype=object))
    if count > MAX_NUMBERS:
        raise InputError(f"{name!r} holds {count:,} numbers (shape {_shape(shape)}); an example array may hold at "
                         f"most {MAX_NUMBERS:,}", source=source, field=field)


def _load_many(path: Path, suffix: str) -> dict[str, np.ndarray]:
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as archive:
            # refuse a small archive that expands to something huge before decompressing it
            if sum(info.file_size for info in archive.zip.infolist()) > 16 * MAX_NUMBERS * 8:
                raise ValueError("it expands to more than an example's arrays may hold")
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
    """A short, one-line description of a field's value for messages."""
    if isinstance(value, str):
        return short_repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, int) and abs(value) >= 10**18:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    return f"{value!r}" if isinstance(value, (int, float)) else f"a {type(value).__name__}"


def _shape(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


# --------------------------------------------------------------------------- fields
def read_tokens(doc: dict, name: str, count: int, *, source: str, rows_of: str) -> list[str]:
    """A list of ``count`` token strings (one per row of ``rows_of``)."""
    if name not in doc:
        raise InputError(f"missing: give one token string per row of {rows_of}", source=source, field=name)
    tokens = doc[name]
    if not isinstance(tokens, list):
        raise InputError(f"expected a list of strings, got {_describe(tokens)}", source=source, field=name)
    for i, token in enumerate(tokens):
        if not isinstance(token, str):
            raise InputError(f"entry {i + 1} is {_describe(token)}, not a string (tokens are strings)",
                             source=source, field=name)
    if len(tokens) != count:
        raise InputError(f"has {plural(len(tokens), 'token')} but {rows_of} has {plural(count, 'row')}", source=source, field=name)
    return list(tokens)


def resolve_query(query: Any, tokens: list[str], *, source: str | None, field: str = "query") -> int:
    """The row index of ``query``: a token string (its first occurrence), or an integer row index
    (an int, or a string of ASCII digits that is no token; parsed by `qkv._io.as_int`)."""
    if isinstance(query, str) and query in tokens:
        return tokens.index(query)
    number = as_int(query)
    if number is not None and 0 <= number < len(tokens):
        return number
    shown = ", ".join(tokens[:12]) + (f", … ({len(tokens)} tokens)" if len(tokens) > 12 else "")
    raise InputError(f"{_describe(query)} is not one of the tokens ({shown}) nor a row index 0–{len(tokens) - 1}",
                     source=source, field=field)


def _check_size(rows: int | None, columns: int, name: str, *, source: str) -> None:
    """MAX_TOKENS rows (tokens) and MAX_WIDTH columns at most, before any attention is computed."""
    if rows is not None and rows > MAX_TOKENS:
        raise InputError(f"has {rows:,} rows (tokens); an example may have at most {MAX_TOKENS}", source=source,
                         field=name)
    if columns > MAX_WIDTH:
        raise InputError(f"has {columns:,} columns; an example's widths are at most {MAX_WIDTH}", source=source,
                         field=name)


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
    for i, note in enumerate(notes):
        if note.get("value", "shown") not in ("shown", "exact"):
            raise InputError(f"{_describe(note['value'])}: expected \"shown\" or \"exact\" (which number {{value}} is)",
                             source=source, field=f"notes[{i}].value")
        if note.get("mode", "any") not in ("any", "exact", "by-hand"):
            raise InputError(f"{_describe(note['mode'])}: expected \"any\", \"exact\" or \"by-hand\" (when the note "
                             "is shown)", source=source, field=f"notes[{i}].mode")
    return [dict(n) for n in notes]


def load_spec(path: str | Path) -> Spec:
    """Read and validate a user example file (.toml or .json)."""
    path = Path(path)
    return parse_spec(read_document(path), source=str(path), base=path.parent)


def parse_spec(doc: dict, *, source: str, base: Path | None) -> Spec:
    """Validate a parsed example document; shapes must chain from x to y."""
    if not isinstance(doc, dict):
        raise InputError(f"expected a table of named fields, got {_describe(doc)}", source=source)
    unknown = [k for k in doc if k not in FIELDS]
    if unknown:
        raise InputError(f"unknown field (known fields: {', '.join(FIELDS)})", source=source,
                         field=short_repr(unknown[0], 40).strip("'"))
    kind = doc.get("kind", "attention")
    if kind != "attention":
        raise InputError(f"{_describe(kind)} is not a kind of user example; use \"attention\" (or leave it out)",
                         source=source, field="kind")
    for name in ("title", "example", "post", "seed"):
        if name in doc and not isinstance(doc[name], str):
            raise InputError(f"expected a string, got {_describe(doc[name])}", source=source, field=name)
    head_base = doc.get("head_base", 0)
    if head_base not in (0, 1) or isinstance(head_base, bool):
        raise InputError(f"expected 0 (heads counted from 0, as qkv's API) or 1 (from 1), got {_describe(head_base)}",
                         source=source, field="head_base")

    def array(name: str, required: bool = True, ndim: int = 2) -> np.ndarray | None:
        if name not in doc:
            if required:
                raise InputError("missing: this matrix is required", source=source, field=name)
            return None
        return read_array(doc[name], source=source, field=name, base=base, ndim=ndim)

    x = array("x")
    tq, d = x.shape
    _check_size(tq, d, "x", source=source)
    tokens = read_tokens(doc, "tokens", tq, source=source, rows_of="x")
    memory = array("memory", required=False)
    memory_tokens = None
    if memory is not None:
        memory_tokens = read_tokens(doc, "memory_tokens", memory.shape[0], source=source, rows_of="memory")
    elif "memory_tokens" in doc:
        raise InputError("given without memory (memory_tokens label the rows of memory)", source=source,
                         field="memory_tokens")
    kv_source, d_kv = ("memory", memory.shape[1]) if memory is not None else ("x", d)
    if memory is not None:
        _check_size(*memory.shape, "memory", source=source)
    w_q, w_k, w_v, w_o = array("w_q"), array("w_k"), array("w_v"), array("w_o", required=False)
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v), ("w_o", w_o)):
        if w is not None:
            _check_size(None, w.shape[1], name, source=source)
    for name, w, width, of in (("w_q", w_q, d, "x"), ("w_k", w_k, d_kv, kv_source), ("w_v", w_v, d_kv, kv_source)):
        if w.shape[0] != width:
            raise InputError(f"has {plural(w.shape[0], 'row')} but {of} has {plural(width, 'column')}; {of}·{name.upper()} needs "
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
        raise InputError(f"has {plural(w_o.shape[0], 'row')} but the concatenated heads ({heads}) have {plural(w_v.shape[1], 'value')} "
                         "(the columns of w_v); Concat(heads)·W_O needs them equal", source=source, field="w_o")
    biases = {}
    for name, width in (("b_q", w_q.shape[1]), ("b_k", w_k.shape[1]), ("b_v", w_v.shape[1]),
                        ("b_o", None if w_o is None else w_o.shape[1])):
        if name in doc:
            if width is None:
                raise InputError("given without w_o", source=source, field=name)
            b = read_array(doc[name], source=source, field=name, base=base, ndim=1)
            if b.shape[0] != width:
                raise InputError(f"has {plural(b.shape[0], 'value')} but needs {width}", source=source, field=name)
            biases[name] = b
    tk = tq if memory is None else memory.shape[0]
    total = sum(a.size for a in (x, memory, w_q, w_k, w_v, w_o, *biases.values()) if a is not None)
    if total > MAX_NUMBERS:
        raise InputError(f"holds {total:,} numbers in all; an example may hold at most {MAX_NUMBERS:,} (the "
                         "explanation records every step)", source=source)
    if heads * tq * tk > MAX_SCORES:
        raise InputError(f"{plural(heads, 'head')} × {plural(tq, 'query', 'queries')} × {plural(tk, 'key')} = {heads * tq * tk:,} scores; an example may "
                         f"have at most {MAX_SCORES:,} (the explanation records every one)", source=source,
                         field="heads" if heads > 1 else "x")
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
                raise InputError(f"has shape {_shape(mask.shape)} but there are {plural(tq, 'query', 'queries')} and {plural(tk, 'key')} "
                                 f"(expected ({tq}, {tk}))", source=source, field="mask")
    residual = doc.get("residual", False)
    if not isinstance(residual, bool):
        raise InputError(f"expected true or false, got {_describe(residual)}", source=source, field="residual")
    if residual and (w_o is None or w_o.shape[1] != d):
        raise InputError("R + Y needs w_o with as many columns as x" + ("" if w_o is None else
                         f" ({d}); w_o has {w_o.shape[1]}"), source=source, field="residual")
    query = resolve_query(doc.get("query", tokens[-1]), tokens, source=source)
    title = doc.get("title", "")
    return Spec(source=source, tokens=tokens, x=x, w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, heads=heads,
                memory=memory, memory_tokens=memory_tokens, mask=mask, causal=causal, residual=residual,
                query=query, title=title, example=doc.get("example"),
                post=doc.get("post", doc.get("seed")), head_base=head_base, biases=biases,
                digits=read_digits(doc, source=source), notes=read_notes(doc, source=source))


# --------------------------------------------------------------------------- saved traces
SAVED_FORMATS = ("qkv-trace", "qkv-explanation")


def is_saved_trace(doc: dict) -> bool:
    """Whether a parsed document is a trace saved by qkv (`--format json` or `Trace.to_json`)."""
    return isinstance(doc, dict) and isinstance(doc.get("format"), str) and doc["format"] in SAVED_FORMATS


def read_saved_trace(doc: dict, *, source: str):
    """The `Trace` of a saved ``qkv-trace`` / ``qkv-explanation`` document, checked enough to render.

    Checks: the trace object is present; every step's values are numbers of its stated shape (bool,
    int or float), finite except ±inf in a mask step; the tokens are strings and the followed query
    a row index. Anything else is an InputError naming the file and the field ("trace").
    """
    from .trace import Trace

    data = doc.get("trace") if doc.get("format") == "qkv-explanation" else doc
    if not isinstance(data, dict):
        raise InputError(f"a qkv-explanation needs its \"trace\" object, got {_describe(data) if data is not None else 'none'}",
                         source=source, field="trace")
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        raise InputError("\"steps\" must be a non-empty list of objects", source=source, field="trace")
    if not isinstance(data.get("meta", {}), dict):
        raise InputError("\"meta\" must be an object", source=source, field="trace")
    try:
        trace = Trace.from_dict(data)       # checks dtypes and shapes before making any array
    except InputError as exc:
        raise InputError(f"not a readable qkv trace: {exc.problem}", source=source, field="trace") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, MemoryError) as exc:
        raise InputError(f"not a readable qkv trace ({type(exc).__name__}: {short_repr(str(exc), 80)})",
                         source=source, field="trace") from None
    if not isinstance(trace.title, str) or not isinstance(trace.meta, dict):
        raise InputError("the title must be a string and meta an object", source=source, field="trace")
    for step in trace.steps:
        if not isinstance(step.name, str) or step.value.dtype.kind not in "biuf":
            raise InputError(f"step {_describe(step.name)} does not hold numbers", source=source, field="trace")
        if step.value.dtype.kind == "f":
            allowed = np.isfinite(step.value)
            if step.name == "mask" or step.name.endswith("/mask"):
                allowed |= np.isneginf(step.value)
            if not allowed.all():
                raise InputError(f"step {_describe(step.name)} holds {step.value[~allowed].flat[0]}; saved values "
                                 "must be finite (a mask may hold -inf)", source=source, field="trace")
    meta = trace.meta
    for name in ("tokens", "key_tokens"):
        if name in meta and (not isinstance(meta[name], list) or not all(isinstance(t, str) for t in meta[name])):
            raise InputError(f"meta.{name} must be a list of strings", source=source, field="trace")
    if "query" in meta and as_int(meta["query"]) is None:
        raise InputError(f"meta.query must be a row index, got {_describe(meta['query'])}", source=source,
                         field="trace")
    return trace
