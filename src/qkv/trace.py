"""The recording protocol and the Trace: an ordered record of the named steps of one computation.

This module is the bottom layer: it imports nothing of qkv but the array conversion, and every
computing layer (the core, the blocks, the models, the translator, the worked examples) records
through it.

- `Recorder`: anything called as ``record(name, value, *, formula="", note="", **meta)``. It may
  return None (keep the value) or a replacement of the same shape and array type, which the
  computation continues with (the worked examples' by-hand mode rounds every intermediate so).
- `emit(record, name, value, **meta)`: the one way a computation hands a step to a recorder (or
  to none) and gets back the value to continue with.
- `scoped(record, prefix)`: a recorder filing every step under ``prefix/`` that passes
  replacements back (None stays None).
- `Trace`: the recorder that keeps everything; `Trace.info` its metadata as a typed record
  (`TraceInfo`); `STEPS` the names of the steps and their shapes.

The renderers (text, Markdown, HTML, JSON, figures) only read a finished Trace; they never
compute attention themselves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterator, Protocol

import numpy as np

from ._backend import to_numpy
from .errors import InputError

__all__ = ["Recorder", "emit", "scoped", "TraceInfo", "Step", "Trace", "STEPS", "SAVED_DTYPES", "MAX_SAVED_ELEMENTS",
           "MAX_SAVED_DIMS", "X", "MEMORY", "W_Q", "W_K", "W_V", "Q", "K", "V", "Q_HEADS", "K_HEADS", "V_HEADS",
           "ROPE_ANGLES", "Q_ROTATED", "K_ROTATED", "SCORES", "SCALED_SCORES", "BIASED_SCORES", "MODIFIED_SCORES",
           "MASK", "SOFTMAX_MAX", "EXP_SCORES", "EXP_SUM", "WEIGHTS", "OUT", "CONTRIBUTIONS", "SHARES",
           "SINK_WEIGHT", "SINK_RATIO", "TIE_RTOL", "tied", "Reading", "read_row", "CONCAT", "W_O", "Y", "RESIDUAL", "layer_step", "head_number", "token_number", "Shown", "in_language", "BY_HAND", "DRIFT"]

FORMAT_VERSION = 1

SAVED_DTYPES = ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint64", "uint32", "uint16",
                "uint8", "bool")
"""The dtypes a saved step may name (what `Trace` records: float64, and the integer and bool arrays of
masks and token ids). Anything else — a string "U50000000", "object", a structured dtype — is refused
before an array is made."""
MAX_SAVED_ELEMENTS = 2**27    # values in one saved step: as many as a 256 MiB file of "0,0,…" holds
MAX_SAVED_DIMS = 8            # axes of one saved step (Trace records at most 4: B, H, T, T)


# ----------------------------------------------------------------------------------- the protocol
class Recorder(Protocol):
    """Handed each named intermediate; returns None (keep it) or a replacement to continue with."""

    def __call__(self, name: str, value: Any, *, formula: str = "", note: str = "", **meta: Any) -> Any: ...


def emit(record: Recorder | None, name: str, value: Any, **meta: Any) -> Any:
    """Hand ``value`` to ``record`` (if any) as step ``name``; return the value to continue with.

    A recorder normally returns None and the value is kept. It may instead return a replacement of
    the same shape and array type (the worked examples' by-hand mode rounds every intermediate to
    the digits shown, and the next step is computed from the rounded numbers by the same code).
    """
    if record is None:
        return value
    replacement = record(name, value, **meta)
    return value if replacement is None else replacement


def scoped(record: Recorder | None, prefix: str) -> Recorder | None:
    """A recorder filing every step under ``prefix/`` and passing the recorder's replacements back."""
    if record is None:
        return None

    def record_scoped(name: str, value: Any, **meta: Any) -> Any:
        return record(f"{prefix}/{name}", value, **meta)

    return record_scoped

# ----------------------------------------------------------------------------------- step names
# The names of the steps that attention, MultiHeadAttention and the residual record, written down
# once with their shapes (shape letters as in docs/internals.md; a batch axis B may lead any of
# them). Readers (explain, viz) use these constants; a writer may too.
X = "x"                          # (T, D)      the layer's input, one row per token
MEMORY = "memory"                # (Tk, D)     cross-attention: the encoder's outputs (keys and values come from here)
W_Q, W_K, W_V = "w_q", "w_k", "w_v"   # (D, H·Dk), (D, G·Dk), (D, G·Dv)  row-vector convention: X·W
Q, K, V = "q", "k", "v"          # (Tq, H·Dk), (Tk, G·Dk), (Tk, G·Dv)
Q_HEADS = "q_heads"              # (H, Tq, Dk) Q read as T × H × Dk, heads first (a reshape, no arithmetic)
K_HEADS = "k_heads"              # (G, Tk, Dk)
V_HEADS = "v_heads"              # (G, Tk, Dv)
ROPE_ANGLES = "rope_angles"      # (T, Dk/2)   RoPE only: position · θᵢ for each position and column pair
Q_ROTATED = "q_rotated"          # (H, Tq, Dk) RoPE only: q_heads rotated by their positions (the scores use these)
K_ROTATED = "k_rotated"          # (G, Tk, Dk) RoPE only: k_heads rotated
SCORES = "scores"                # (H, Tq, Tk) Q·Kᵀ
SCALED_SCORES = "scaled_scores"  # (H, Tq, Tk) Q·Kᵀ · scale (1/√Dk by default)
BIASED_SCORES = "biased_scores"  # (H, Tq, Tk) scaled scores + bias (only when a bias or score_mod is given)
MODIFIED_SCORES = "modified_scores"  # (H, Tq, Tk) score_mod(scaled (+ bias)): ALiBi, soft-capping, … (only with one)
MASK = "mask"                    # (H or 1, Tq, Tk) additive: 0 where the query may attend, −∞ where it may not
SOFTMAX_MAX = "softmax_max"      # (H, Tq, 1)  m, each row's largest allowed score (subtracted before e^)
EXP_SCORES = "exp_scores"        # (H, Tq, Tk) e^(s − m): the softmax's numerators (0 where masked)
EXP_SUM = "exp_sum"              # (H, Tq, 1)  Σ e^(s − m): the softmax's denominator
WEIGHTS = "weights"              # (H, Tq, Tk) softmax per row; each row sums to 1 (all 0 when every key is masked)
OUT = "out"                      # (H, Tq, Dv) weights · V, one output row per query and head
CONTRIBUTIONS = "contributions"  # (H, Tq, Tk) ‖wⱼ·vⱼ‖ = wⱼ·‖vⱼ‖: how much key j adds to the query's output
SHARES = "shares"                # (H, Tq, Tk) ‖wⱼ·vⱼ‖ / Σₖ ‖wₖ·vₖ‖: key j's share of the output (a row sums to 1, or is all 0)
CONCAT = "concat"                # (Tq, H·Dv)  the heads side by side
W_O = "w_o"                      # (H·Dv, D)
Y = "y"                          # (Tq, D)     Concat(heads)·W_O
RESIDUAL = "residual"            # (Tq, D)     R + Y

BY_HAND = "by hand"   # prefix of a worked example's by-hand steps (each rounded to the digits shown)
DRIFT = "drift"       # prefix of by hand − exact, one step per by-hand step with an exact twin

STEPS: dict[str, str] = {
    X: "(T, D)", MEMORY: "(Tk, D)", W_Q: "(D, H·Dk)", W_K: "(D, G·Dk)", W_V: "(D, G·Dv)",
    Q: "(Tq, H·Dk)", K: "(Tk, G·Dk)", V: "(Tk, G·Dv)", Q_HEADS: "(H, Tq, Dk)", K_HEADS: "(G, Tk, Dk)",
    V_HEADS: "(G, Tk, Dv)", ROPE_ANGLES: "(T, Dk/2)", Q_ROTATED: "(H, Tq, Dk)", K_ROTATED: "(G, Tk, Dk)",
    SCORES: "(H, Tq, Tk)", SCALED_SCORES: "(H, Tq, Tk)", BIASED_SCORES: "(H, Tq, Tk)",
    MODIFIED_SCORES: "(H, Tq, Tk)", MASK: "(H or 1, Tq, Tk)", SOFTMAX_MAX: "(H, Tq, 1)", EXP_SCORES: "(H, Tq, Tk)",
    EXP_SUM: "(H, Tq, 1)", WEIGHTS: "(H, Tq, Tk)", OUT: "(H, Tq, Dv)", CONTRIBUTIONS: "(H, Tq, Tk)",
    SHARES: "(H, Tq, Tk)", CONCAT: "(Tq, H·Dv)", W_O: "(H·Dv, D)",
    Y: "(Tq, D)", RESIDUAL: "(Tq, D)",
}
"""Every step name above → its shape, in recording order."""


# ----------------------------------------------------------------------------------- weight vs contribution
# A weight is not a contribution: key j adds wⱼ·vⱼ to the query's output, so a key with a large weight
# but a short value vector adds little (the core records both, CONTRIBUTIONS and SHARES). The rule
# every reader (text, JSON, pages) uses to name an attention sink, written once:
SINK_WEIGHT = 0.5   # the key holds at least this much of the weight (most of it) …
SINK_RATIO = 0.5    # … and its share of the output is at most this fraction of its weight


TIE_RTOL = 1e-6    # two keys tie for the largest weight (or contribution) when they differ by at most this, relatively


def tied(values: Any) -> tuple[int, ...]:
    """The keys that share the largest of ``values`` (finite ones; within TIE_RTOL of it, in key order): one
    key when one is largest, several when they tie (the group meeting's second meeting: four keys at 0.25).
    Empty when no value is finite."""
    x = np.asarray(values, dtype=float).reshape(-1)
    finite = np.isfinite(x)
    if not finite.any():
        return ()
    top = float(np.max(x[finite]))
    return tuple(int(j) for j in np.flatnonzero(finite & (x >= top - TIE_RTOL * abs(top))))


@dataclass(frozen=True)
class Reading:
    """What one query's row says about its keys (`read_row`): indices into the row.

    heaviest_keys: the keys with the largest weight; strongest_keys: the keys with the largest ‖wⱼ·vⱼ‖ (the
    ones that contribute most) — one key each unless several tie (`tied`), and a reader names them all, never
    the first of a tie alone; heaviest / strongest: the first of each; sink: the key that is an attention
    sink for this query, or None.
    """

    heaviest_keys: tuple[int, ...]
    strongest_keys: tuple[int, ...]
    sink: int | None

    @property
    def heaviest(self) -> int:
        return self.heaviest_keys[0]

    @property
    def strongest(self) -> int:
        return self.strongest_keys[0]

    @property
    def same(self) -> bool:
        return self.heaviest_keys == self.strongest_keys


def read_row(weights: Any, contributions: Any) -> "Reading | None":
    """The keys a query's row names (see `Reading`): weights and contributions of one query, (Tk,).

    An attention sink is the key with the largest weight when it holds most of the weight
    (w ≥ SINK_WEIGHT) yet gives at most SINK_RATIO of that as its share of the output
    (share = ‖w·v‖ / Σₖ ‖wₖ·vₖ‖ ≤ SINK_RATIO·w), and it is not the key that contributes most.
    None for a row with no weight (every key masked). Keys that tie are all kept (`tied`).
    """
    w = np.asarray(weights, dtype=float).reshape(-1)
    c = np.asarray(contributions, dtype=float).reshape(-1)
    if w.size == 0 or not np.any(w > 0):
        return None
    heaviest_keys = tied(w)
    strongest_keys = tied(c) or heaviest_keys
    heaviest = heaviest_keys[0]
    total = float(np.sum(c[np.isfinite(c)]))
    share = float(c[heaviest]) / total if total > 0 else 0.0
    sink = heaviest if (len(heaviest_keys) == 1 and heaviest not in strongest_keys and w[heaviest] >= SINK_WEIGHT
                        and share <= SINK_RATIO * w[heaviest]) else None
    return Reading(heaviest_keys, strongest_keys, sink)


def head_number(meta: dict, head: int) -> int:
    """The number a reader sees for head ``head`` (0-based in the API and every array).

    A worked example whose post numbers its heads from 1 (every example of the three posts: "Head 1",
    "헤드 1, 2, 3", A_1 …) sets ``meta["head_base"] = 1``; everything else (models, user examples unless
    their file sets head_base) counts from 0, as ``--head`` does. Renderers label heads with this, never
    with ``head`` itself.
    """
    return int(head) + int(meta.get("head_base", 0) or 0)


def token_number(meta: dict, row: int) -> int:
    """The number a reader sees for query or key row ``row`` (0-based in the API and every array).

    A worked example whose post numbers its tokens from 1 (every example of the three posts: "토큰 3의
    입력", love is token 2) sets ``meta["token_base"] = 1``; models and user files (unless they set
    token_base) count from 0, as the API's ``query=`` does (``--query`` reads a `Shown` number in the base).
    Renderers label rows ("query 3", "q[3]") with this, never with ``row`` itself; indices used
    for computation never change.
    """
    return int(row) + int(meta.get("token_base", 0) or 0)


class Shown(str):
    """A row as a reader names it (``qkv example --query 2``, ``qkv explain --query 2``): a token, or a
    number counted from the example's token base as every renderer shows it (`token_number`), so
    ``Shown("2")`` is "love" (row 1) in the self-attention example, whose post counts from 1. The API's
    plain ``query=1`` (or "1") stays the 0-based row. `qkv.spec.resolve_query` reads both; a str, so
    every check of text arguments applies to it unchanged.
    """

    __slots__ = ()


def in_language(trace: "Trace", lang: str) -> "Trace":
    """``trace`` as a reader of ``lang`` sees it: the tokens named in that language where the
    example gives names per language (``meta["tokens_ko"]``: one name per query row, e.g. "토큰 3"
    for "token 3"; the key side and the page's what-if, ``meta["variants"]``, follow when they name
    the same sequence). The steps are shared, not copied; a trace without such names is returned as
    it is. Renderers call this first; the trace's own meta keeps the API's names.
    """
    names = trace.meta.get(f"tokens_{lang}")
    tokens = trace.meta.get("tokens")
    if not names or not tokens or len(names) != len(tokens):
        return trace
    meta = dict(trace.meta, tokens=list(names))
    keys = trace.meta.get("key_tokens")
    if keys is None or list(keys) == list(tokens):
        meta["key_tokens"] = list(names)
    variants = trace.meta.get("variants")      # the page's what-ifs name the tokens too
    if isinstance(variants, dict) and list(variants.get("tokens") or []) == list(tokens):
        meta["variants"] = dict(variants, tokens=list(names))
        if variants.get("qToken") in tokens:
            meta["variants"]["qToken"] = names[list(tokens).index(variants["qToken"])]
    shown = Trace(trace.title, meta)
    shown.steps = trace.steps
    return shown


def layer_step(layer: int, name: str) -> str:
    """The name of step ``name`` of layer ``layer`` in a whole-model trace: ``"layer 2/weights"``."""
    return f"layer {int(layer)}/{name}"


@dataclass(frozen=True)
class Step:
    """One named intermediate: ``value`` is a NumPy copy (float64 for float inputs)."""

    name: str
    value: np.ndarray
    formula: str = ""
    note: str = ""
    meta: dict = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.value.shape)

    def to_dict(self) -> dict:
        return {"name": self.name, "formula": self.formula, "note": self.note, "shape": list(self.shape),
                "dtype": str(self.value.dtype), "values": _encode(self.value), "meta": self.meta}

    @classmethod
    def from_dict(cls, data: dict) -> "Step":
        """A step from its JSON form, checked before any array is made: the dtype is one of
        `SAVED_DTYPES` (a string dtype such as "U50000000" would allocate 200 MB per value), the shape
        a list of at most `MAX_SAVED_DIMS` whole numbers from 0 to `MAX_SAVED_ELEMENTS` whose product
        is at most `MAX_SAVED_ELEMENTS` and equals the number of values given. Raises InputError (one
        line) naming the step."""
        if not isinstance(data, dict):
            raise _fail("error.trace.step.object", shown={"type": data}, english={"type": type(data).__name__})
        name = data.get("name")
        if not isinstance(name, str):
            raise _fail("error.trace.step.name", shown={"value": name})
        where = {"step": name}
        dtype = data.get("dtype", "float64")
        if not isinstance(dtype, str) or dtype not in SAVED_DTYPES:
            raise _fail("error.trace.step.dtype", **where, shown={"value": dtype}, dtypes=", ".join(SAVED_DTYPES))
        shape = data.get("shape")
        if (not isinstance(shape, list) or len(shape) > MAX_SAVED_DIMS
                or not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_SAVED_ELEMENTS
                           for n in shape)):
            raise _fail("error.trace.step.shape", **where, shown={"value": shape}, dims=MAX_SAVED_DIMS,
                        max=f"{MAX_SAVED_ELEMENTS:,}")
        size = 1
        for n in shape:
            size *= n
        if size > MAX_SAVED_ELEMENTS:
            raise _fail("error.trace.step.size", **where, shown={"value": shape}, size=f"{size:,}",
                        max=f"{MAX_SAVED_ELEMENTS:,}")
        values = _decode(data.get("values"), shape, name)
        for key in ("formula", "note"):
            if not isinstance(data.get(key, ""), str):
                raise _fail("error.trace.step.text", **where, key=key)
        meta = data.get("meta", {})
        if not isinstance(meta, dict):
            raise _fail("error.trace.step.meta", **where)
        try:
            value = np.array(values, dtype=dtype).reshape(shape)
        except OverflowError:
            raise _fail("error.trace.step.overflow", **where, dtype=dtype) from None
        return cls(name, value, data.get("formula", ""), data.get("note", ""), dict(meta))


class Trace:
    """An ordered record of steps. Call it like a function to record: ``trace(name, value, formula=…)``.

    ``meta`` holds what the renderers need besides numbers (tokens, the followed query, the
    example's title). Names may repeat (a later step of the same name shadows an earlier one
    for ``trace[name]``); `scoped` prefixes names, e.g. ``"layer 0/head 3/weights"``.
    """

    def __init__(self, title: str = "", meta: dict | None = None, steps: list[Step] | None = None):
        self.title = title
        self.meta: dict = dict(meta or {})
        self.steps: list[Step] = list(steps or [])

    # recording ---------------------------------------------------------------------------
    def __call__(self, name: str, value: Any, *, formula: str = "", note: str = "", **meta: Any) -> None:
        array = to_numpy(value)
        array = np.array(array, dtype=np.float64 if array.dtype.kind == "f" else array.dtype, copy=True)
        self.steps.append(Step(name, array, formula, note, meta))

    def scoped(self, prefix: str) -> Recorder:
        """A recorder that files every step under ``prefix/`` (`qkv.trace.scoped` on this trace)."""
        return scoped(self, prefix)

    @property
    def info(self) -> "TraceInfo":
        """``meta`` as a typed record (what the renderers read); `TraceInfo` lists the fields."""
        return TraceInfo.of(self.meta)

    # reading -----------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Step:
        for step in reversed(self.steps):
            if step.name == name:
                return step
        raise KeyError(f"no step named {name!r}; steps: {', '.join(self.names())}")

    def get(self, name: str, default: Any = None) -> Step | Any:
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name: object) -> bool:
        return any(step.name == name for step in self.steps)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def names(self) -> list[str]:
        return [step.name for step in self.steps]

    def __repr__(self) -> str:
        body = ", ".join(f"{s.name}{list(s.shape)}" for s in self.steps)
        return f"Trace({self.title!r}: {body})"

    # serialisation -----------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"format": "qkv-trace", "version": FORMAT_VERSION, "title": self.title,
                "meta": _jsonable(self.meta), "steps": [s.to_dict() for s in self.steps]}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kwargs)

    def iter_json(self, numbers: int = 1 << 14) -> Iterator[str]:
        """`to_json()`'s text in pieces (joined, exactly `to_json()`), each holding at most about ``numbers``
        values: a whole model's trace (about 100 MB of JSON for MiniLM at 256 tokens) written or sent without
        its whole text, or its whole nested-list form, in memory at once."""
        head = json.dumps({"format": "qkv-trace", "version": FORMAT_VERSION, "title": self.title,
                           "meta": _jsonable(self.meta), "steps": []}, ensure_ascii=False)
        yield head[:-2]                                            # up to the steps' "["
        for i, step in enumerate(self.steps):
            if i:
                yield ", "
            yield json.dumps({"name": step.name, "formula": step.formula, "note": step.note,
                              "shape": list(step.shape), "dtype": str(step.value.dtype)},
                             ensure_ascii=False)[:-1] + ', "values": '
            yield from _json_values(step.value, numbers)
            yield ', "meta": ' + json.dumps(step.meta, ensure_ascii=False) + "}"
        yield "]}"

    @classmethod
    def from_dict(cls, data: dict) -> "Trace":
        """A Trace from its `to_dict` form. Every step is checked before its array is made (see
        `Step.from_dict`: numeric dtypes only, bounded shapes); anything else raises InputError
        (a ValueError) with one line, e.g. "step 'x': dtype 'U50000000' is not a number type …"."""
        if not isinstance(data, dict) or data.get("format") != "qkv-trace":
            raise _fail("error.trace.doc.format")
        steps, meta, title = data.get("steps", []), data.get("meta", {}), data.get("title", "")
        if not isinstance(steps, list):
            raise _fail("error.trace.doc.steps", shown={"type": steps}, english={"type": type(steps).__name__})
        if not isinstance(meta, dict) or not isinstance(title, str):
            raise _fail("error.trace.doc.meta")
        return cls(title, meta, [Step.from_dict(s) for s in steps])

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str | None = None) -> "Trace":
        """A Trace from `to_json`'s text (or UTF-8 bytes), read with the bounds of `qkv._io.load_json`
        (nesting, huge integers) and the checks of `from_dict`; raises InputError naming ``source``."""
        from ._io import decode_utf8, load_json

        if isinstance(text, (bytes, bytearray)):
            text = decode_utf8(bytes(text), source=source)
        try:
            return cls.from_dict(load_json(text, source=source or "trace"))
        except InputError as exc:
            if exc.source is not None or source is None:
                raise
            raise InputError(exc.problem, source=source, field=exc.field, key=exc.key, values=exc.values) from None

    def _repr_html_(self) -> str | None:
        """Jupyter shows the interactive view: `HTML_VIEW`, which the package sets (the renderers sit
        above this module, so this module never imports them)."""
        return None if HTML_VIEW is None else HTML_VIEW(self)


HTML_VIEW: Callable[[Trace], str] | None = None
"""How a Trace shows itself in a notebook; set by ``qkv/__init__.py`` to the interactive page."""


@dataclass(frozen=True)
class TraceInfo:
    """What a Trace's ``meta`` says, typed (every field optional; unknown keys are kept in ``meta``).

    kind: "self-attention" | "cross-attention" | "multi-head" | "projection" | "group-meeting" | "model"
    example: the worked example's name; post: the post it comes from ("000", "001", "002");
    head_base: 1 where the post numbers heads from 1 (see `head_number`); token_base: 1 where it
    numbers query/key rows from 1 (see `token_number`); tokens / key_tokens: the
    query-side and key-side token strings (key_tokens defaults to tokens); query: the followed query
    (row index); n_heads; head and layer: the head and layer shown (0-based); model: the model's name;
    digits: decimals per step; notes: the example's notes; scenes, answers, notation: the group
    meeting's; first_head: the multi-head example's computed head; rope_theta; bias_out: False when
    a model's W_O has no bias; derivation / derivation_tokens: a model trace's recorded layers.
    """

    kind: str | None = None
    example: str | None = None
    post: str | None = None
    head_base: int = 0
    token_base: int = 0
    tokens: tuple = ()
    key_tokens: tuple = ()
    query: int = 0
    n_heads: int | None = None
    head: int | None = None
    kv_head: int | None = None
    layer: int | None = None
    model: str | None = None
    digits: Any = None
    notes: tuple = ()
    scenes: tuple = ()
    answers: tuple = ()
    notation: str | None = None
    first_head: str | None = None
    rope_theta: float | None = None
    bias_out: bool | None = None
    derivation: Any = None
    derivation_tokens: int | None = None
    what_if: dict | None = None

    @classmethod
    def of(cls, meta: dict) -> "TraceInfo":
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in meta.items() if k in names and v is not None}
        for name in ("tokens", "key_tokens", "notes", "scenes", "answers"):
            if name in values:
                values[name] = tuple(values[name])
        if "key_tokens" not in values or not values["key_tokens"]:
            values["key_tokens"] = values.get("tokens", ())
        values["query"] = int(values.get("query", 0) or 0)
        values["head_base"] = int(values.get("head_base", 0) or 0)
        values["token_base"] = int(values.get("token_base", 0) or 0)
        return cls(**values)


def _json_values(value: np.ndarray, numbers: int) -> Iterator[str]:
    """``json.dumps(_encode(value))`` in pieces of at most about ``numbers`` values (split along the first axes)."""
    if value.ndim == 0 or value.size <= numbers:
        yield json.dumps(_encode(value), ensure_ascii=False)
        return
    yield "["
    for i in range(value.shape[0]):
        if i:
            yield ", "
        yield from _json_values(value[i], numbers)
    yield "]"


def _encode(value: np.ndarray) -> Any:
    """Nested lists; non-finite floats as the strings "inf", "-inf", "nan" (JSON has no such numbers)."""
    if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
        return np.vectorize(lambda x: float(x) if np.isfinite(x) else str(x), otypes=[object])(value).tolist()
    return value.tolist()


def _decode(values: Any, shape: list, step: Any = None) -> list:
    """The values of a saved step of ``shape``, flattened (row-major) without recursion: nested lists
    exactly ``shape`` deep and long, holding numbers, booleans, or the strings "inf", "-inf", "nan"
    that `_encode` writes. Anything else is an InputError naming what is wrong (and the step's name,
    ``step``, when given)."""
    flat: list = []
    stack = [(values, 0)]
    while stack:
        value, depth = stack.pop()
        if depth < len(shape):
            if not isinstance(value, list) or len(value) != shape[depth]:
                raise _fail("error.trace.values.shape", step=step, shape=shape, n=shape[depth], depth=depth + 1,
                            **({"listed": {"got": len(value)}} if isinstance(value, list) else {"shown": {"got": value}}))
            stack.extend((item, depth + 1) for item in reversed(value))
        elif isinstance(value, (bool, int, float)):
            flat.append(value)
        elif isinstance(value, str) and value.strip().lower() in _NON_FINITE:
            flat.append(float(value))
        else:
            raise _fail("error.trace.values.number", step=step, shown={"value": value})
    return flat


_NON_FINITE = ("inf", "-inf", "+inf", "nan", "infinity", "-infinity")


def _shown(value: Any, lang: str = "en") -> str:
    """A short picture of a JSON value for a message (a list or object is described, never dumped), in ``lang``."""
    from .explain.texts import text

    if isinstance(value, list):
        return text(lang, "error.trace.shown.list", n=len(value)) if len(value) > 8 or \
            any(isinstance(v, (list, dict)) for v in value) else json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return text(lang, "error.trace.shown.object")
    if isinstance(value, str):
        value = value[:60]
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, (str, int, float, bool, type(None))) \
        else type(value).__name__
    return text if len(text) <= 40 else text[:39] + "…"


_NO_STEP = object()


def _fail(key: str, /, *, step: Any = _NO_STEP, shown: dict | None = None, listed: dict | None = None,
          english: dict | None = None, **values) -> InputError:
    """The InputError ``key`` of `qkv.explain.texts` about a saved trace, worded in each language: ``step`` (a
    step's name) becomes ``where`` ("step 'x'"; None: "a step"), each of ``shown`` is a value pictured by
    `_shown`, each of ``listed`` a list's length ("a list of 3"), and ``english`` overrides a value in English
    only (a Python type name, as the message always said)."""
    from .explain.texts import LANGS, text

    def parts(lang: str) -> dict:
        said = {name: _shown(value, lang) for name, value in (shown or {}).items()}
        if step is not _NO_STEP:
            said["where"] = text(lang, "error.trace.where", name=_shown(step, lang)) if step is not None \
                else text(lang, "error.trace.where.any")
        said.update({name: text(lang, "error.trace.shown.list", n=n) for name, n in (listed or {}).items()})
        return {**said, **(english or {})} if lang == "en" else said

    error = InputError.keyed(key, **values, **parts("en"))
    error.values["by_lang"] = {lang: parts(lang) for lang in LANGS}
    return error


def _jsonable(meta: Any) -> Any:
    if isinstance(meta, dict):
        return {str(k): _jsonable(v) for k, v in meta.items()}
    if isinstance(meta, (list, tuple)):
        return [_jsonable(v) for v in meta]
    if isinstance(meta, np.ndarray):
        return meta.tolist()
    if isinstance(meta, np.generic):
        return meta.item()
    return meta
