"""User example files: parsing, array files, validation (one InputError naming file and field)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import qkv
from qkv.examples.runner import trace_spec
from qkv.spec import load_spec, parse_spec

ROOT = pathlib.Path(__file__).parents[1]


def reference(x, w_q, w_k, w_v, w_o=None, heads=1, memory=None, mask=None):
    """A float64 attention written here, independently of qkv."""
    source = x if memory is None else memory
    q, k, v = x @ w_q, source @ w_k, source @ w_v
    dk, dv = q.shape[1] // heads, v.shape[1] // heads
    outs = []
    for h in range(heads):
        s = q[:, h * dk:(h + 1) * dk] @ k[:, h * dk:(h + 1) * dk].T / np.sqrt(dk)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        w = np.exp(s - s.max(1, keepdims=True))
        w /= w.sum(1, keepdims=True)
        outs.append(w @ v[:, h * dv:(h + 1) * dv])
    concat = np.concatenate(outs, 1)
    return concat if w_o is None else concat @ w_o


def test_sample_user_example_matches_a_float64_reference():
    spec = load_spec(ROOT / "examples" / "my-example.toml")
    assert spec.heads == 2 and spec.causal and spec.residual and spec.tokens[spec.query] == "sat"
    np.testing.assert_array_equal(spec.w_v, np.load(ROOT / "examples" / "my-example-w_v.npy"))
    t = trace_spec(spec)
    y = reference(spec.x, spec.w_q, spec.w_k, spec.w_v, spec.w_o, heads=2, mask=np.tril(np.ones((4, 4), bool)))
    np.testing.assert_allclose(t["y"].value, y, rtol=0, atol=1e-14)
    np.testing.assert_allclose(t["residual"].value, spec.x + y, atol=1e-14)
    assert t["weights"].value[:, 0, 1:].max() == 0.0             # causal: "the" sees itself only


def test_sample_cross_example_json():
    spec = load_spec(ROOT / "examples" / "my-cross-example.json")
    assert spec.kind == "cross-attention" and spec.key_tokens == ["the", "cat", "sleeps"]
    t = trace_spec(spec)
    np.testing.assert_allclose(t["out"].value[0], reference(spec.x, spec.w_q, spec.w_k, spec.w_v, memory=spec.memory),
                               atol=1e-14)


def test_arrays_from_npz_and_safetensors(tmp_path):
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    w_q, w_k, w_v = (rng.standard_normal((3, 4)) for _ in range(3))
    np.savez(tmp_path / "w.npz", q=w_q, k=w_k)
    save_file({"v.weight": np.ascontiguousarray(w_v.T)}, str(tmp_path / "w.safetensors"))
    (tmp_path / "x.json").write_text(json.dumps({"x": [[1, 2, 3], [0, 1, 0]]}))
    doc = {"tokens": ["a", "b"], "x": [[1, 2, 3], [0, 1, 0]], "w_q": {"file": "w.npz", "key": "q"},
           "w_k": {"file": "w.npz", "key": "k"},
           "w_v": {"file": "w.safetensors", "key": "v.weight", "transpose": True}, "query": 0, "heads": 2,
           "mask": [[1, 0], [1, 1]]}
    spec = parse_spec(doc, source="doc.toml", base=tmp_path)
    np.testing.assert_array_equal(spec.w_v, w_v)
    assert spec.mask.tolist() == [[True, False], [True, True]]
    t = trace_spec(spec)
    np.testing.assert_allclose(t["concat"].value, reference(spec.x, w_q, w_k, w_v, heads=2, mask=spec.mask), atol=1e-14)


BAD = [
    ({"x": [[1, 2], [3]]}, "x", "ragged rows: row 2 has 1 value but row 1 has 2"),
    ({"x": [[1, "a"], [3, 4]]}, "x", "row 1, column 2 is 'a', not a number"),
    ({"x": [[1, True], [3, 4]]}, "x", "not a number"),
    ({"x": [[1, float("nan")], [3, 4]]}, "x", "every number must be finite"),
    ({"w_q": [[1, 0], [0, float("inf")]]}, "w_q", "every number must be finite"),
    ({"w_k": None}, "w_k", "missing"),
    ({"w_k": [[1, 0], [0, 1], [1, 1]]}, "w_k", "has 3 rows but x has 2 columns"),
    ({"w_k": [[1, 0, 1], [0, 1, 1]]}, "w_k", "has 3 columns but w_q has 2"),
    ({"heads": 3, "w_q": [[1, 0, 0, 1], [0, 1, 1, 0]], "w_k": [[1, 0, 0, 1], [0, 1, 1, 0]]}, "heads",
     "w_q has 4 columns, which do not split into 3 heads"),
    ({"heads": 0}, "heads", "positive whole number"),
    ({"w_o": [[1, 0], [0, 1], [1, 1]]}, "w_o", "has 3 rows but the concatenated heads (1) have 2 values"),
    ({"tokens": ["a"]}, "tokens", "has 1 token but x has 2 rows"),
    ({"query": "c"}, "query", "'c' is not one of the tokens (a, b)"),
    ({"mask": [[1, 0]]}, "mask", "has shape (1, 2) but there are 2 queries and 2 keys"),
    ({"mask": "future"}, "mask", "expected \"causal\""),
    ({"w_v": "missing.npy"}, "w_v", "array file 'missing.npy' not found"),
    ({"residual": True}, "residual", "R + Y needs w_o"),
    ({"colour": 1}, "colour", "unknown field"),
    ({"memory_tokens": ["z"]}, "memory_tokens", "given without memory"),
]


@pytest.mark.parametrize("change,field,problem", BAD)
def test_bad_fields_name_the_field(change, field, problem, tmp_path):
    doc = {"tokens": ["a", "b"], "x": [[1.0, 0.0], [0.0, 1.0]], "w_q": [[1, 0], [0, 1]], "w_k": [[1, 0], [0, 1]],
           "w_v": [[1, 0], [0, 1]]}
    doc.update(change)
    doc = {k: v for k, v in doc.items() if v is not None}
    with pytest.raises(qkv.InputError) as info:
        parse_spec(doc, source="mine.toml", base=tmp_path)
    assert info.value.source == "mine.toml" and info.value.field == field
    assert problem in info.value.problem
    assert str(info.value).startswith(f"mine.toml: {field}: ") and "\n" not in str(info.value)


def test_unreadable_files(tmp_path):
    cases = {"missing.toml": (None, "file not found"),
             "bad.toml": ("x = [[1, 2]\n", "malformed TOML"),
             "bad.json": ('{"x": [1, 2,', "malformed JSON"),
             "list.json": ("[1, 2]", "must be an object"),
             "notes.txt": ("x = 1", "unknown file type")}
    for name, (content, problem) in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_text(content)
        with pytest.raises(qkv.InputError) as info:
            load_spec(path)
        assert info.value.source == str(path) and problem in info.value.problem, name


# ---------------------------------------------------------------- issue 9 items 6, 10, 14, 18
import warnings  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from qkv.spec import (MAX_MAGNITUDE, MAX_NUMBERS, MAX_SCORES, MAX_TOKENS, MAX_WIDTH,  # noqa: E402
                      read_document, read_saved_trace)

EXTREME = st.one_of(st.sampled_from([0.0, MAX_MAGNITUDE, -MAX_MAGNITUDE, 1e-300, -1e15]),
                    st.floats(-MAX_MAGNITUDE, MAX_MAGNITUDE, allow_nan=False, allow_infinity=False))


@st.composite
def examples(draw):
    """Any example the bounds accept: small shapes, numbers anywhere in ±MAX_MAGNITUDE, masks with empty rows."""
    heads = draw(st.integers(1, 2))
    t, tk, d, dk, dv = (draw(st.integers(1, 3)) for _ in range(5))
    cross = draw(st.booleans())
    tk = tk if cross else t

    def matrix(rows, cols):
        return draw(st.lists(st.lists(EXTREME, min_size=cols, max_size=cols), min_size=rows, max_size=rows))

    doc = {"tokens": [f"t{i}" for i in range(t)], "x": matrix(t, d), "w_q": matrix(d, heads * dk), "heads": heads}
    d_kv = d
    if cross:
        d_kv = draw(st.integers(1, 3))
        doc.update(memory=matrix(tk, d_kv), memory_tokens=[f"m{j}" for j in range(tk)])
    doc.update(w_k=matrix(d_kv, heads * dk), w_v=matrix(d_kv, heads * dv))
    if draw(st.booleans()):
        doc["w_o"] = matrix(heads * dv, d)
        doc["residual"] = draw(st.booleans())
    if draw(st.booleans()):
        doc["mask"] = draw(st.lists(st.lists(st.booleans(), min_size=tk, max_size=tk), min_size=t, max_size=t))
    return doc


@given(examples(), st.booleans())
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_accepted_example_gives_finite_steps_without_warnings(doc, by_hand):
    """Item 6: finite inputs within the bound never explain NaN or inf (and never warn)."""
    spec = parse_spec(doc, source="p.toml", base=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = trace_spec(spec, by_hand=by_hand)
    for step in trace.steps:
        value = step.value
        if step.name.endswith("mask"):
            assert np.all(np.isfinite(value) | np.isneginf(value)), step.name
        else:
            assert np.all(np.isfinite(value)), (step.name, value)
    weights = trace["weights"].value
    sums = weights.sum(-1)
    assert np.all(np.isclose(sums, 1.0) | (sums == 0.0))


@pytest.mark.parametrize("value", [1e300, -1e31, 10**400, -(10**31), float("1e308")])
def test_numbers_beyond_the_bound_are_refused_naming_the_place(value):
    doc = {"tokens": ["a", "b"], "x": [[1.0, 0.0], [0.0, value]], "w_q": [[1, 0], [0, 1]], "w_k": [[1, 0], [0, 1]],
           "w_v": [[1, 0], [0, 1]]}
    with pytest.raises(qkv.InputError, match=r"x: row 2, column 2 is .*within ±1e\+30"):
        parse_spec(doc, source="big.toml", base=None)


def _square(t: int, d: int = 1) -> dict:
    eye = [[1.0 if i == j else 0.0 for j in range(d)] for i in range(d)]
    return {"tokens": [f"t{i}" for i in range(t)], "x": [[1.0] * d for _ in range(t)], "w_q": eye, "w_k": eye,
            "w_v": eye}


def test_size_bounds_are_checked_before_any_attention():
    """Item 10: a too-large example is one clear error before the work (each bound at its edge)."""
    parse_spec(_square(MAX_TOKENS), source="ok.toml", base=None)            # at the bound: accepted
    with pytest.raises(qkv.InputError, match=f"x: has {MAX_TOKENS + 1} rows .* at most {MAX_TOKENS}"):
        parse_spec(_square(MAX_TOKENS + 1), source="big.toml", base=None)
    wide = {"tokens": ["a"], "x": [[1.0] * (MAX_WIDTH + 1)]}
    with pytest.raises(qkv.InputError, match=f"x: has {MAX_WIDTH + 1:,} columns"):
        parse_spec(wide, source="wide.toml", base=None)
    heads = 2 * MAX_SCORES // MAX_TOKENS**2 + 1
    doc = _square(MAX_TOKENS, heads)
    doc["heads"] = heads
    with pytest.raises(qkv.InputError, match="heads: .* scores; an example may have at most"):
        parse_spec(doc, source="heads.toml", base=None)


def test_array_file_bounds(tmp_path):
    np.save(tmp_path / "big.npy", np.zeros(MAX_NUMBERS + 1, dtype=np.uint8).reshape(1, -1))
    np.savez_compressed(tmp_path / "bomb.npz", w=np.zeros((4096, 4096)))   # 134 MB of zeros in a small file
    for name, words in (("big.npy", "holds 1,048,577 numbers"), ("bomb.npz", "expands to more")):
        doc = {"tokens": ["a"], "x": name}
        with pytest.raises(qkv.InputError, match=words):
            parse_spec(doc, source="f.toml", base=tmp_path)


def test_a_huge_file_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:
        handle.truncate(2000 * 2**20)              # sparse: a 10,000 × 10,000 example is about this size
    with pytest.raises(qkv.InputError, match="big.json: is 2000 MiB; qkv reads files of at most 256 MiB"):
        read_document(big)


def test_a_file_of_too_many_values_is_refused_before_it_is_parsed(tmp_path):
    """Item 10: 10,000 × 10,000 zeros fit in 191 MiB; they are counted, not parsed."""
    many = tmp_path / "many.json"
    many.write_text('{"x": [[' + "0," * (16 * MAX_NUMBERS + 1) + "0]]}")
    with pytest.raises(qkv.InputError, match="many.json: holds more than 16,777,216 values"):
        read_document(many)


def test_total_numbers_are_bounded():
    side = 2**9                                           # four 512 × 512 matrices: 4 × 262,144 > 2**20 in all
    eye = np.eye(side).tolist()
    doc = {"tokens": [f"t{i}" for i in range(8)], "x": np.ones((8, side)).tolist(), "w_q": eye, "w_k": eye,
           "w_v": eye, "w_o": eye}
    with pytest.raises(qkv.InputError, match=f"holds {8 * side + 4 * side**2:,} numbers in all; an example may hold at most "
                       f"{MAX_NUMBERS:,}"):
        parse_spec(doc, source="big.toml", base=None)


@pytest.mark.parametrize("text, field, words", [
    ("example = 5\n", "example", "expected a string, got 5"),
    ("title = [1]\n", "title", "expected a string, got a list of 1 item"),
    ('seed = {a = 1}\n', "seed", "expected a string, got a table"),
    ('query = "²"\n', "query", "'²' is not one of the tokens"),
    ("query = 7\n", "query", "7 is not one of the tokens (a, b) nor a row number 0–1"),
    ("w_o = " + "[" * 900 + "1" + "]" * 900 + "\n", None, "nested more than 64 levels deep"),
    ("w_o = [[[1.0]]]\n", "w_o", "row 1, column 1 is a list nested too deep: expected a matrix"),
    ("w_o = [[1" + "0" * 400 + "]]\n", "w_o", "is an integer of about 401 digits"),
])
def test_malformed_fields_are_one_line_errors(tmp_path, text, field, words):
    path = tmp_path / "mine.toml"
    path.write_text('tokens = ["a", "b"]\nx = [[1.0], [2.0]]\nw_q = [[1]]\nw_k = [[1]]\nw_v = [[1]]\n' + text)
    with pytest.raises(qkv.InputError) as info:
        load_spec(path)
    assert info.value.field == field and words in info.value.problem and "\n" not in str(info.value)


def test_resolve_query_reads_a_repeated_token_as_its_first_row():
    """resolve_query, as its docstring says: a token string names its first occurrence; a string of digits that is
    also a token names the token; a number is the API's row index from 0, or counted from the example's base when
    it is what a reader typed (`qkv.trace.Shown`, --query)."""
    from qkv.spec import resolve_query
    from qkv.trace import Shown

    tokens = ["the", "cat", "the", "2"]
    assert resolve_query("the", tokens, source=None) == 0
    assert resolve_query(Shown("the"), tokens, source=None, base=1) == 0
    assert resolve_query("2", tokens, source=None) == 3 and resolve_query(Shown("2"), tokens, source=None, base=1) == 3
    assert resolve_query(1, tokens, source=None, base=1) == 1               # the API's index: the base is not read
    assert resolve_query(Shown("3"), tokens, source=None, base=1) == 2      # row 3 as shown from 1
    with pytest.raises(qkv.InputError, match="1–4"):
        resolve_query(Shown("5"), tokens, source=None, base=1)


def test_tokens_message_names_the_entry(tmp_path):
    with pytest.raises(qkv.InputError, match=r"tokens: entry 2 is 1, not a string"):
        parse_spec({"tokens": ["a", 1], "x": [[1.0], [2.0]]}, source="t.toml", base=None)


def test_file_kinds_are_named_not_called_missing(tmp_path):
    """Item 18: a directory, a pipe and a missing file each get their own words."""
    os = __import__("os")
    (tmp_path / "dir.npy").mkdir()
    os.mkfifo(tmp_path / "pipe.npy")
    cases = {"dir.npy": "array file 'dir.npy' is a directory", "pipe.npy": "array file 'pipe.npy' is a named pipe",
             "none.npy": "array file 'none.npy' not found (looked in"}
    for name, words in cases.items():
        doc = {"tokens": ["a"], "x": name}
        with pytest.raises(qkv.InputError) as info:
            parse_spec(doc, source="f.toml", base=tmp_path)
        assert words in str(info.value), str(info.value)
    with pytest.raises(qkv.InputError, match="is a directory, not a file"):
        read_document(tmp_path / "dir.npy")


@pytest.mark.parametrize("doc, words", [
    ({"format": "qkv-explanation"}, 'needs its "trace" object'),
    ({"format": "qkv-explanation", "trace": 5}, 'needs its "trace" object, got 5'),
    ({"format": "qkv-trace", "steps": 3}, '"steps" must be a non-empty list'),
    ({"format": "qkv-trace", "steps": []}, '"steps" must be a non-empty list'),
    ({"format": "qkv-trace", "meta": [], "steps": [{"name": "x", "values": [1], "shape": [1]}]}, '"meta" must be'),
    ({"format": "qkv-trace", "steps": [{"name": "x", "values": [1, 2], "shape": [3]}]}, "not a readable qkv trace"),
    ({"format": "qkv-trace", "steps": [{"name": "x", "values": ["nan"], "shape": [1]}]}, "must be finite"),
    ({"format": "qkv-trace", "steps": [{"name": "x", "values": ["a"], "shape": [1], "dtype": "U1"}]},
     "not a readable qkv trace"),
    ({"format": "qkv-trace", "meta": {"tokens": [1]}, "steps": [{"name": "x", "values": [1], "shape": [1]}]},
     "meta.tokens must be a list of strings"),
    ({"format": "qkv-trace", "meta": {"query": "²"}, "steps": [{"name": "x", "values": [1], "shape": [1]}]},
     "meta.query must be a row index"),
])
def test_saved_traces_are_checked(doc, words):
    with pytest.raises(qkv.InputError) as info:
        read_saved_trace(doc, source="saved.json")
    assert words in str(info.value) and info.value.field == "trace"


def test_a_saved_trace_round_trips():
    trace = trace_spec(load_spec(ROOT / "examples" / "my-example.toml"))
    again = read_saved_trace(json.loads(trace.to_json()), source="saved.json")
    assert again.names() == trace.names()
    np.testing.assert_array_equal(again["mask"].value, trace["mask"].value)    # −inf kept in the mask


class _Bait:
    """Unpickling this creates a file: proof that nothing was unpickled if the file is absent."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


@pytest.mark.parametrize("suffix", [".npy", ".npz"])
def test_pickled_array_files_are_refused_unopened(tmp_path, suffix):
    marker = tmp_path / "unpickled"
    bait = np.array([_Bait(marker)], dtype=object)
    path = tmp_path / f"bait{suffix}"
    if suffix == ".npy":
        np.save(path, bait, allow_pickle=True)
    else:
        np.savez(path, w=bait)
    with pytest.raises(qkv.InputError, match=f"cannot read array file 'bait{suffix}'"):
        parse_spec({"tokens": ["a"], "x": f"bait{suffix}"}, source="f.toml", base=tmp_path)
    assert not marker.exists()
