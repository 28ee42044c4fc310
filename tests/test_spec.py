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
    ({"x": [[1, 2], [3]]}, "x", "ragged rows: row 2 has 1 values but row 1 has 2"),
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
    ({"w_o": [[1, 0], [0, 1], [1, 1]]}, "w_o", "has 3 rows but the 1 concatenated heads have 2"),
    ({"tokens": ["a"]}, "tokens", "has 1 tokens but x has 2 rows"),
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
