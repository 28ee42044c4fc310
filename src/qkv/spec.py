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

from ._io import MAX_FILE_BYTES, as_int, check_input_file, load_json, load_toml, open_input, read_text, short_repr
from .errors import InputError, python_reason
from .trace import Shown
from .explain.texts import text

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
          "post", "seed", "head_base", "token_base", "tokens_ko")


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
    token_base: int = 0               # 1: query/key rows are shown numbered from 1, as the example's post numbers them
    tokens_ko: list[str] | None = None  # the tokens' names on Korean output (default: ``tokens``)
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
        raise _fail("error.spec.file_values", source=source, values=f"{MAX_VALUES_IN_FILE:,}", most=f"{MAX_NUMBERS:,}")
    if suffix == ".toml":
        return load_toml(text, source=source)
    doc = load_json(text, source=source)
    if not isinstance(doc, dict):
        raise _fail("error.spec.json_object", source=source, parts=lambda lang: {"got": _describe(doc, lang)})
    return doc


def _check_suffix(suffix: str, source: str) -> None:
    if suffix not in (".toml", ".json"):
        raise _fail("error.spec.file_type", source=source,
                    parts=lambda lang: {"suffix": repr(suffix) if suffix else text(lang, "cli.no_suffix")})


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
            raise _fail("error.spec.dtype", source=source, field=field, dtype=array.dtype)
        else:
            array = array.astype(np.float64)
    elif isinstance(value, list):
        array = _array_from_lists(value, source=source, field=field, boolean=boolean, ndim=ndim)
    else:
        raise _fail("error.spec.matrix_or_file", source=source, field=field,
                    parts=lambda lang: {"got": _describe(value, lang)})
    if ndim is not None and array.ndim != ndim:
        raise _fail("error.spec.shape", source=source, field=field, shape=_shape(array.shape),
                    parts=lambda lang: {"what": _expected(ndim, lang)})
    if array.size == 0:
        raise _fail("error.spec.empty", source=source, field=field, shape=_shape(array.shape))
    if array.size > MAX_NUMBERS:
        raise _fail("error.spec.too_many", source=source, field=field, count=f"{array.size:,}",
                    shape=_shape(array.shape), most=f"{MAX_NUMBERS:,}")
    if not boolean:
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(array) | (np.abs(array) > MAX_MAGNITUDE)
        if bad.any():
            where = np.argwhere(bad)[0]
            raise _fail("error.spec.out_of_range", source=source, field=field, value=array[tuple(where)],
                        limit=f"{MAX_MAGNITUDE:g}", parts=lambda lang: {"where": _position(where, lang)})
    return array


def _array_from_lists(value: list, *, source: str, field: str, boolean: bool, ndim: int | None) -> np.ndarray:
    deepest = ndim or 8

    def check(item: Any, index: tuple[int, ...]) -> Any:
        if isinstance(item, list):
            if len(index) >= deepest:
                raise _fail("error.spec.too_deep", source=source, field=field, parts=lambda lang: {
                    "where": _position(index, lang), "what": _expected(ndim or deepest, lang)})
            return [check(v, index + (i,)) for i, v in enumerate(item)]
        if boolean:
            if isinstance(item, bool) or (isinstance(item, (int, float)) and item in (0, 1)):
                return bool(item)
            raise _fail("error.spec.not_bool", source=source, field=field, parts=lambda lang: {
                "where": _position(index, lang), "got": _describe(item, lang)})
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            raise _fail("error.spec.not_number", source=source, field=field, parts=lambda lang: {
                "where": _position(index, lang), "got": _describe(item, lang)})
        if isinstance(item, int) and abs(item) > MAX_MAGNITUDE:
            raise _fail("error.spec.out_of_range", source=source, field=field, limit=f"{MAX_MAGNITUDE:g}", parts=lambda lang: {"where": _position(index, lang),
                                                                        "value": _describe(item, lang)})
        if not math.isfinite(item) or abs(item) > MAX_MAGNITUDE:
            raise _fail("error.spec.out_of_range", source=source, field=field, value=item,
                        limit=f"{MAX_MAGNITUDE:g}", parts=lambda lang: {"where": _position(index, lang)})
        return item

    checked = check(value, ())
    _check_rectangular(checked, (), source=source, field=field)
    return np.array(checked, dtype=bool if boolean else np.float64)


def _check_rectangular(value: list, index: tuple[int, ...], *, source: str, field: str) -> None:
    kinds = {isinstance(v, list) for v in value}
    if len(kinds) > 1:
        raise _fail("error.spec.mixed_at" if index else "error.spec.mixed", source=source, field=field,
                    parts=lambda lang: {"where": _position(index, lang) if index else ""})
    if kinds == {True}:
        lengths = [len(v) for v in value]
        for i, n in enumerate(lengths):
            if n != lengths[0]:
                raise _fail("error.spec.ragged", source=source, field=field, row=i + 1, n=n, first=lengths[0])
        for i, v in enumerate(value):
            _check_rectangular(v, index + (i,), source=source, field=field)


def _array_from_file(value: str | dict, *, source: str, field: str, base: Path | None) -> np.ndarray:
    if isinstance(value, dict):
        unknown = set(value) - {"file", "key", "transpose"}
        if unknown or "file" not in value:
            raise _fail("error.spec.file_table.unknown" if unknown else "error.spec.file_table.no_file", source=source,
                        field=field, key=repr(sorted(unknown)[0]) if unknown else "")
        name, key, transpose = value["file"], value.get("key"), value.get("transpose", False)
        if not isinstance(name, str) or (key is not None and not isinstance(key, str)) or not isinstance(transpose, bool):
            raise _fail("error.spec.file_table.types", source=source, field=field)
    else:
        name, key, transpose = value, None, False
    path = Path(name) if base is None or Path(name).is_absolute() else base / name
    if not name:
        raise _fail("error.spec.file_name_empty", source=source, field=field)
    try:       # opened once and read through that descriptor only (a file swapped after the check is not read)
        handle = open_input(path, limit=MAX_FILE_BYTES, source=source, field=field, what="array file", shown=name)
    except InputError as exc:
        if "not found" in exc.problem and base is not None and not Path(name).is_absolute():
            raise _fail("error.spec.looked_in", source=source, field=field, folder=repr(str(path.parent)),
                        parts=lambda lang: {"problem": exc.problem_in(lang)}) from None
        raise
    suffix = path.suffix.lower()
    with handle:
        try:
            if suffix == ".npy":
                if key is not None:
                    raise _fail("error.spec.npy_key", source=source, field=field, name=repr(name), key=repr(key))
                array = _read_npy(handle, name, source=source, field=field)
            elif suffix in (".npz", ".safetensors"):
                arrays = _load_many(handle, path, suffix)
                if key is None:
                    if len(arrays) != 1:
                        raise _fail("error.spec.many_arrays", source=source, field=field, name=repr(name),
                                    n=len(arrays), names=", ".join(sorted(arrays)))
                    key = next(iter(arrays))
                if key not in arrays:
                    raise _fail("error.spec.no_array" if arrays else "error.spec.no_arrays", source=source,
                                field=field, name=repr(name), key=repr(key), names=", ".join(sorted(arrays)))
                array = arrays[key]
            else:
                raise _fail("error.spec.array_type", source=source, field=field, name=repr(name),
                            parts=lambda lang: {"suffix": repr(suffix) if suffix else text(lang, "cli.no_suffix")})
        except InputError:
            raise
        except Exception as exc:  # corrupt files raise many different exception types
            raise _fail("error.spec.array_unreadable", source=source, field=field, name=repr(name),
                        reason=exc) from None
    array = np.asarray(array)
    if transpose:
        if array.ndim != 2:
            raise _fail("error.spec.transpose", source=source, field=field, name=repr(name), shape=_shape(array.shape))
        array = array.T
    return array


def _check_count(shape, name: str, *, source: str, field: str) -> None:
    count = int(np.prod(shape, dtype=object))
    if count > MAX_NUMBERS:
        raise _fail("error.spec.file_too_many", source=source, field=field, name=repr(name), count=f"{count:,}",
                    shape=_shape(shape), most=f"{MAX_NUMBERS:,}")


def _read_npy(handle, name: str, *, source: str, field: str) -> np.ndarray:
    """An .npy file from its open handle: the header read and its count bounded before the data is read
    (into memory of its own: never memory-mapped, so a file cut short is refused, never a SIGBUS)."""
    from numpy.lib import format as npy

    if handle.read(len(npy.MAGIC_PREFIX)) == npy.MAGIC_PREFIX:
        handle.seek(0)
        version = npy.read_magic(handle)
        header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0   # 3.0: as 2.0
        shape, _, _ = header(handle)
        _check_count(shape, name, source=source, field=field)
    handle.seek(0)
    return np.load(handle, allow_pickle=False)      # NumPy's own refusals (pickled, empty, short) by its words


def _load_many(handle, path: Path, suffix: str) -> dict[str, np.ndarray]:
    if suffix == ".npz":
        with np.load(handle, allow_pickle=False) as archive:
            # refuse a small archive that expands to something huge before decompressing it
            if sum(info.file_size for info in archive.zip.infolist()) > 16 * MAX_NUMBERS * 8:
                raise ValueError("it expands to more than an example's arrays may hold")
            return {k: archive[k] for k in archive.files}
    from ._safetensors import SafetensorsFile, widen

    try:
        opened = SafetensorsFile(path, handle=handle)
        return {k: widen(opened.read(k), opened.dtype(k)) for k in opened.names()}
    except InputError as exc:        # the library's reason, worded as any other array file's
        reason = exc.values.get("reason")
        if isinstance(reason, Exception):
            raise reason from None
        raise


def _as_bool(array: np.ndarray, *, source: str, field: str) -> np.ndarray:
    if array.dtype == bool:
        return array
    if np.issubdtype(array.dtype, np.number) and np.all((array == 0) | (array == 1)):
        return array.astype(bool)
    raise _fail("error.spec.bool_values", source=source, field=field)


def _position(index, lang: str = "en") -> str:
    """Where a value is, 1-based, in ``lang``: "row 2, column 3", "entry 4", "entry [1, 2, 3]"."""
    index = tuple(int(i) for i in index)
    if len(index) == 2:
        return text(lang, "error.spec.cell", row=index[0] + 1, column=index[1] + 1)
    if len(index) == 1:
        return text(lang, "error.spec.entry", n=index[0] + 1)
    return text(lang, "error.spec.entry_at", n="[" + ", ".join(str(i + 1) for i in index) + "]")


def _describe(value: Any, lang: str = "en") -> str:
    """A short, one-line description of a field's value for messages, in ``lang``."""
    if isinstance(value, str):
        return short_repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return text(lang, "error.spec.a_table")
    if isinstance(value, int) and abs(value) >= 10**18:
        return text(lang, "error.spec.big_int", digits=int(value.bit_length() * 0.30103) + 1)
    if isinstance(value, list):
        return text(lang, "error.spec.a_list", n=len(value))
    return f"{value!r}" if isinstance(value, (int, float)) else text(lang, "error.spec.a_type", type=type(value).__name__)


def _expected(ndim: int | None, lang: str = "en") -> str:
    """What an array of ``ndim`` dimensions is called in messages: "a matrix (a list of rows)", in ``lang``."""
    return text(lang, f"error.spec.ndim.{ndim}") if ndim in (1, 2) else text(lang, "error.spec.ndim", n=ndim)


def _fail(key: str, /, *, source: str | None, field: str | None = None, parts=None, **values) -> InputError:
    """The InputError worded by the text ``key``; ``parts(lang)`` gives the values that are words themselves
    (a value's description, a position) in each language, so that `InputError.say` words them too."""
    from .explain.texts import LANGS

    error = InputError.keyed(key, source=source, field=field, **values, **(parts("en") if parts else {}))
    if parts:
        error.values["by_lang"] = {lang: parts(lang) for lang in LANGS}
    return error


def _shape(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


# --------------------------------------------------------------------------- fields
def read_tokens(doc: dict, name: str, count: int, *, source: str, rows_of: str) -> list[str]:
    """A list of ``count`` token strings (one per row of ``rows_of``)."""
    if name not in doc:
        raise _fail("error.spec.tokens_missing", source=source, field=name, rows_of=rows_of)
    tokens = doc[name]
    if not isinstance(tokens, list):
        raise _fail("error.spec.strings", source=source, field=name, parts=lambda lang: {"got": _describe(tokens, lang)})
    for i, token in enumerate(tokens):
        if not isinstance(token, str):
            raise _fail("error.spec.token_type", n=i + 1, parts=lambda lang: {"got": _describe(token, lang)},
                             source=source, field=name)
    if len(tokens) != count:
        raise _fail("error.spec.token_count", source=source, field=name, n=len(tokens), rows_of=rows_of, rows=count)
    return list(tokens)


def resolve_query(query: Any, tokens: list[str], *, source: str | None, field: str = "query", base: int = 0,
                  shown: bool | None = None, tokens_ko: list[str] | None = None) -> int:
    """The row index (from 0) of ``query``: a token string (its first occurrence), or a row number (an int,
    or a string of ASCII digits that is no token; parsed by `qkv._io.as_int`).

    A number counts from 0, the API's index, unless ``query`` is a `qkv.trace.Shown` (what a reader
    types, ``--query 2``): then it counts from ``base``, the example's token base, as the rows are shown
    (`qkv.trace.token_number`), and so does any ``query`` when ``shown`` is True (an example file's own
    ``query`` counts from its ``token_base``). The error names the numbers in the base they were read in.
    ``tokens_ko``: the tokens' names on Korean output, which the Korean error lists.
    """
    if not (isinstance(query, Shown) if shown is None else shown):
        base = 0
    if isinstance(query, str) and query in tokens:
        return tokens.index(query)
    number = as_int(query)
    if number is not None and 0 <= number - base < len(tokens):
        return number - base
    named = {"ko": tokens_ko or tokens}
    raise _fail("error.spec.query.more" if len(tokens) > 12 else "error.spec.query", source=source, field=field,
                n=len(tokens), first=base, last=len(tokens) - 1 + base,
                parts=lambda lang: {"got": _describe(query, lang), "shown": ", ".join(named.get(lang, tokens)[:12])})


def _check_size(rows: int | None, columns: int, name: str, *, source: str) -> None:
    """MAX_TOKENS rows (tokens) and MAX_WIDTH columns at most, before any attention is computed."""
    if rows is not None and rows > MAX_TOKENS:
        raise _fail("error.spec.rows", source=source, field=name, rows=f"{rows:,}", most=MAX_TOKENS)
    if columns > MAX_WIDTH:
        raise _fail("error.spec.columns", source=source, field=name, columns=f"{columns:,}", most=MAX_WIDTH)


def read_digits(doc: dict, *, source: str) -> dict[str, int]:
    digits = doc.get("digits", {})
    if not isinstance(digits, dict) or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 12
                                               for v in digits.values()):
        raise _fail("error.spec.digits", source=source, field="digits")
    return dict(digits)


def read_notes(doc: dict, *, source: str) -> list[dict]:
    notes = doc.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, dict) and isinstance(n.get("step"), str)
                                              and isinstance(n.get("text", n.get("key")), str) for n in notes):
        raise _fail("error.spec.notes", source=source, field="notes")
    for i, note in enumerate(notes):
        if note.get("value", "shown") not in ("shown", "exact"):
            raise _fail("error.spec.note_value", source=source, field=f"notes[{i}].value",
                        parts=lambda lang: {"got": _describe(note["value"], lang)})
        if note.get("precision", "any") not in ("any", "post"):
            raise _fail("error.spec.note_mode", source=source, field=f"notes[{i}].precision",
                        parts=lambda lang: {"got": _describe(note["precision"], lang)})
        if note.get("mode", "any") not in ("any", "exact", "by-hand"):
            raise _fail("error.spec.note_mode", source=source, field=f"notes[{i}].mode",
                        parts=lambda lang: {"got": _describe(note["mode"], lang)})
    return [dict(n) for n in notes]


def load_spec(path: str | Path) -> Spec:
    """Read and validate a user example file (.toml or .json)."""
    path = Path(path)
    return parse_spec(read_document(path), source=str(path), base=path.parent)


def parse_spec(doc: dict, *, source: str, base: Path | None) -> Spec:
    """Validate a parsed example document; shapes must chain from x to y."""
    if not isinstance(doc, dict):
        raise _fail("error.spec.table", source=source, parts=lambda lang: {"got": _describe(doc, lang)})
    unknown = [k for k in doc if k not in FIELDS]
    if unknown:
        raise _fail("error.spec.unknown_field", fields=", ".join(FIELDS), source=source,
                         field=short_repr(unknown[0], 40).strip("'"))
    kind = doc.get("kind", "attention")
    if kind != "attention":
        raise _fail("error.spec.kind", source=source, field="kind", parts=lambda lang: {"got": _describe(kind, lang)})
    for name in ("title", "example", "post", "seed"):
        if name in doc and not isinstance(doc[name], str):
            raise _fail("error.spec.string", source=source, field=name, parts=lambda lang: {"got": _describe(doc[name], lang)})
    head_base = doc.get("head_base", 0)
    if head_base not in (0, 1) or isinstance(head_base, bool):
        raise _fail("error.spec.head_base", source=source, field="head_base",
                    parts=lambda lang: {"got": _describe(head_base, lang)})
    token_base = doc.get("token_base", 0)
    if token_base not in (0, 1) or isinstance(token_base, bool):
        raise _fail("error.spec.token_base", source=source, field="token_base",
                    parts=lambda lang: {"got": _describe(token_base, lang)})

    def array(name: str, required: bool = True, ndim: int = 2) -> np.ndarray | None:
        if name not in doc:
            if required:
                raise _fail("error.spec.matrix_missing", source=source, field=name)
            return None
        return read_array(doc[name], source=source, field=name, base=base, ndim=ndim)

    x = array("x")
    tq, d = x.shape
    _check_size(tq, d, "x", source=source)
    tokens = read_tokens(doc, "tokens", tq, source=source, rows_of="x")
    tokens_ko = read_tokens(doc, "tokens_ko", tq, source=source, rows_of="x") if "tokens_ko" in doc else None
    memory = array("memory", required=False)
    memory_tokens = None
    if memory is not None:
        memory_tokens = read_tokens(doc, "memory_tokens", memory.shape[0], source=source, rows_of="memory")
    elif "memory_tokens" in doc:
        raise _fail("error.spec.memory_tokens", source=source, field="memory_tokens")
    kv_source, d_kv = ("memory", memory.shape[1]) if memory is not None else ("x", d)
    if memory is not None:
        _check_size(*memory.shape, "memory", source=source)
    w_q, w_k, w_v, w_o = array("w_q"), array("w_k"), array("w_v"), array("w_o", required=False)
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v), ("w_o", w_o)):
        if w is not None:
            _check_size(None, w.shape[1], name, source=source)
    for name, w, width, of in (("w_q", w_q, d, "x"), ("w_k", w_k, d_kv, kv_source), ("w_v", w_v, d_kv, kv_source)):
        if w.shape[0] != width:
            raise _fail("error.spec.w_rows", source=source, field=name, rows=w.shape[0], of=of, columns=width,
                        w=name.upper())
    if w_k.shape[1] != w_q.shape[1]:
        raise _fail("error.spec.w_k", source=source, field="w_k", k=w_k.shape[1], q=w_q.shape[1])
    heads = doc.get("heads", 1)
    if isinstance(heads, bool) or not isinstance(heads, int) or heads < 1:
        raise _fail("error.spec.heads", source=source, field="heads", parts=lambda lang: {"got": _describe(heads, lang)})
    for name, w in (("w_q", w_q), ("w_v", w_v)):
        if w.shape[1] % heads:
            raise _fail("error.spec.split", source=source, field="heads", name=name, columns=w.shape[1], heads=heads,
                        rest=w.shape[1] % heads)
    if w_o is not None and w_o.shape[0] != w_v.shape[1]:
        raise _fail("error.spec.w_o", source=source, field="w_o", rows=w_o.shape[0], heads=heads, values=w_v.shape[1])
    biases = {}
    for name, width in (("b_q", w_q.shape[1]), ("b_k", w_k.shape[1]), ("b_v", w_v.shape[1]),
                        ("b_o", None if w_o is None else w_o.shape[1])):
        if name in doc:
            if width is None:
                raise _fail("error.spec.without_w_o", source=source, field=name)
            b = read_array(doc[name], source=source, field=name, base=base, ndim=1)
            if b.shape[0] != width:
                raise _fail("error.spec.bias", source=source, field=name, n=b.shape[0], width=width)
            biases[name] = b
    tk = tq if memory is None else memory.shape[0]
    total = sum(a.size for a in (x, memory, w_q, w_k, w_v, w_o, *biases.values()) if a is not None)
    if total > MAX_NUMBERS:
        raise _fail("error.spec.total", source=source, total=f"{total:,}", most=f"{MAX_NUMBERS:,}")
    if heads * tq * tk > MAX_SCORES:
        raise _fail("error.spec.scores", source=source, field="heads" if heads > 1 else "x", heads=heads, tq=tq,
                    tk=tk, scores=f"{heads * tq * tk:,}", most=f"{MAX_SCORES:,}")
    mask, causal = None, False
    if "mask" in doc:
        if doc["mask"] == "causal":
            causal = True
        elif isinstance(doc["mask"], str) and not Path(doc["mask"]).suffix:
            raise _fail("error.spec.mask", source=source, field="mask", value=repr(doc["mask"]), tq=tq, tk=tk)
        else:
            mask = read_array(doc["mask"], source=source, field="mask", base=base, boolean=True)
            if mask.shape != (tq, tk):
                raise _fail("error.spec.mask_shape", source=source, field="mask", shape=_shape(mask.shape), tq=tq, tk=tk)
    residual = doc.get("residual", False)
    if not isinstance(residual, bool):
        raise _fail("error.spec.residual", source=source, field="residual", parts=lambda lang: {"got": _describe(residual, lang)})
    if residual and (w_o is None or w_o.shape[1] != d):
        raise _fail("error.spec.residual_w_o" if w_o is None else "error.spec.residual_width", source=source,
                    field="residual", d=d, columns=None if w_o is None else w_o.shape[1])
    query = resolve_query(doc.get("query", tokens[-1]), tokens, source=source, base=token_base, shown=True)
    title = doc.get("title", "")
    return Spec(source=source, tokens=tokens, x=x, w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, heads=heads,
                memory=memory, memory_tokens=memory_tokens, mask=mask, causal=causal, residual=residual,
                query=query, title=title, example=doc.get("example"),
                post=doc.get("post", doc.get("seed")), head_base=head_base, token_base=token_base,
                tokens_ko=tokens_ko, biases=biases,
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
        raise _fail("error.trace.object", source=source, field="trace",
                    parts=lambda lang: {"got": _describe(data, lang) if data is not None else text(lang, "cli.no_suffix")})
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        raise _fail("error.trace.steps", source=source, field="trace")
    if not isinstance(data.get("meta", {}), dict):
        raise _fail("error.trace.meta", source=source, field="trace")
    try:
        trace = Trace.from_dict(data)       # checks dtypes and shapes before making any array
    except InputError as exc:
        raise _fail("error.trace.unreadable", source=source, field="trace",
                    parts=lambda lang: {"problem": exc.problem_in(lang)}) from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, MemoryError) as exc:
        raise InputError.keyed("error.trace.broken", source=source, field="trace",
                               **python_reason(f"{type(exc).__name__}: {short_repr(str(exc), 80)}")) from None
    if not isinstance(trace.title, str) or not isinstance(trace.meta, dict):
        raise _fail("error.trace.title", source=source, field="trace")
    for step in trace.steps:
        if not isinstance(step.name, str) or step.value.dtype.kind not in "biuf":
            raise _fail("error.trace.not_numbers", source=source, field="trace",
                        parts=lambda lang: {"step": _describe(step.name, lang)})
        if step.value.dtype.kind == "f":
            allowed = np.isfinite(step.value)
            if step.name == "mask" or step.name.endswith("/mask"):
                allowed |= np.isneginf(step.value)
            if not allowed.all():
                raise _fail("error.trace.not_finite", source=source, field="trace", value=step.value[~allowed].flat[0],
                            parts=lambda lang: {"step": _describe(step.name, lang)})
    meta = trace.meta
    for name in ("tokens", "key_tokens"):
        if name in meta and (not isinstance(meta[name], list) or not all(isinstance(t, str) for t in meta[name])):
            raise _fail("error.trace.tokens", source=source, field="trace", name=name)
    if "query" in meta and as_int(meta["query"]) is None:
        raise _fail("error.trace.query", source=source, field="trace",
                    parts=lambda lang: {"got": _describe(meta["query"], lang)})
    return trace
