"""The seed examples: every number the seeds print, reproduced from the inputs at the seed's precision.

The expected values below are copied from the seeds (the independent source); the package holds
only the inputs (tests/test_examples.py::test_no_seed_result_is_typed_into_the_package checks it).
"""

from __future__ import annotations

import json
import pathlib
import re

import numpy as np
import pytest

import qkv
import qkv.examples as ex
from qkv.examples.byhand import ByHand, round_half_up
from qkv.explain import render

SRC = pathlib.Path(qkv.__file__).parent


def at_seed_precision(values, seed: list[str]) -> None:
    """Each value, rounded half-up to as many decimals as the seed prints, equals the seed's number."""
    values = np.ravel(values)
    assert len(values) == len(seed)
    for value, printed in zip(values, seed):
        digits = len(printed.split(".")[1])
        assert float(round_half_up(value, digits)) == float(printed), (value, printed)


def flat(text: str) -> str:
    """Text with line breaks and runs of spaces folded (rich wraps long sentences)."""
    return " ".join(text.split())


def row(trace, name: str, query: int) -> np.ndarray:
    value = trace[name].value
    return value[0, query] if value.ndim == 3 else value[query]


# ----------------------------------------------------------------------------- seed 001, self-attention
def test_self_attention_matches_seed_001():
    t = ex.run("self-attention")
    love = t.meta["tokens"].index("love")
    assert t.meta["query"] == love
    # the Q/K/V table of all tokens (seed prints two decimals)
    table = {"Q": ["1.05 0.65", "0.92 1.24", "1.57 0.93", "0.78 1.74"],
             "K": ["0.45 0.60", "0.12 1.28", "0.69 0.85", "-0.18 1.86"],
             "V": ["1.10 0.40 0.65", "0.72 0.96 0.76", "1.66 0.56 0.96", "0.36 1.44 0.84"]}
    for name, rows in table.items():
        for i, printed in enumerate(rows):
            at_seed_precision(t[name.lower()].value[i], printed.split())
    at_seed_precision(row(t, "scores", love), ["1.158", "1.6976", "1.6888", "2.1408"])
    at_seed_precision(row(t, "scaled_scores", love), ["0.8188", "1.2004", "1.1942", "1.5138"])
    # the seed prints [0.1688, 0.2472, 0.2457, 0.3383]; the exact last weight rounds to 0.3382
    weights = row(t, "weights", love)
    at_seed_precision(weights[:3], ["0.1688", "0.2472", "0.2457"])
    assert round_half_up(weights[3], 4) == 0.3382 and abs(weights[3] - 0.3383) < 1e-4
    at_seed_precision(row(t, "out", love), ["0.893", "0.930", "0.818"])


def test_self_attention_printed_numbers_and_note():
    text = render(ex.run("self-attention"), "text")
    assert "[1.1580, 1.6976, 1.6888, 2.1408]" in text            # seed: 1.158 (three decimals)
    assert "[0.8188, 1.2004, 1.1942, 1.5138]" in text
    assert "z_love = [0.893, 0.930, 0.818]" in text
    assert "| " not in text.splitlines()[0]
    for tok, q, k, v in (("I", "[1.05, 0.65]", "[0.45, 0.60]", "[1.10, 0.40, 0.65]"),
                         ("learning", "[0.78, 1.74]", "[-0.18, 1.86]", "[0.36, 1.44, 0.84]")):
        line = next(line for line in text.splitlines() if line.strip().startswith(tok + " ") and q in line)
        assert k in line and v in line
    weights_rows = {}      # the softmax table (key, score, weight, ‖w·v‖, share) comes before the 4 × 4 matrix
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["key", "scaled"])
    for line in lines[start:start + 7]:
        if re.match(r"^ (I|love|machine|learning) +\d\.\d{4} +\d\.\d{4} +\d\.\d{4} +\d\.\d{4} *$", line):
            weights_rows.setdefault(line.split()[0], line.split()[2])
    assert weights_rows == {"I": "0.1688", "love": "0.2472", "machine": "0.2457", "learning": "0.3382"}
    # the exact value is printed, and a note says the seed prints something else
    assert "the post prints the weight of learning one unit higher" in flat(text)
    assert "0.338238" in text


# ----------------------------------------------------------------------------- seed 001, cross-attention
def test_cross_attention_matches_seed_001():
    t = ex.run("cross-attention")
    assert t.meta["tokens"] == ["私は"] and t.meta["key_tokens"] == ["I", "love", "machine", "learning"]
    at_seed_precision(row(t, "scores", 0), ["1.6709", "1.6830", "1.7060", "1.7302"])
    at_seed_precision(row(t, "scaled_scores", 0), ["1.1815", "1.1901", "1.2063", "1.2234"])
    at_seed_precision(row(t, "weights", 0), ["0.2453", "0.2474", "0.2515", "0.2558"])
    at_seed_precision(row(t, "out", 0), ["0.847", "0.887", "0.577"])
    at_seed_precision(t["v"].value[:2], ["0.940", "0.819", "0.590", "0.764", "0.918", "0.556"])
    # Q from the decoder, K and V from the encoder: memory is recorded and K/V have one row per encoder token
    assert "memory" in t and t["k"].shape == (4, 2) and t["q"].shape == (1, 2)
    text = flat(render(t, "text"))
    assert "[1.6709, 1.6830, 1.7060, 1.7302]" in text and "[0.847, 0.887, 0.577]" in text
    assert "the query comes from the decoder, the keys and values from the encoder" in text
    assert "K = M_enc·W_K and V = M_enc·W_V come from the encoder" in text


# ----------------------------------------------------------------------------- seed 001, multi-head
def test_multi_head_takes_z1_from_the_self_attention_example():
    t = ex.run("multi-head")
    first = ex.run("self-attention")
    love = first.meta["tokens"].index("love")
    np.testing.assert_array_equal(t["out"].value[0, 0], first["out"].value[0, love])   # computed, not typed
    at_seed_precision(t["out"].value[1:, 0], ["1.020", "0.710", "0.640", "0.640", "1.210", "0.580"])
    at_seed_precision(t["concat"].value, ["0.893", "0.930", "0.818", "1.020", "0.710", "0.640",
                                          "0.640", "1.210", "0.580"])
    w_o = t["w_o"].value
    np.testing.assert_array_equal(w_o, np.vstack([0.40 * np.eye(3), 0.35 * np.eye(3), 0.25 * np.eye(3)]))


def test_multi_head_final_vector_exact_and_by_hand():
    seed = np.array([0.8742, 0.9230, 0.6962])
    t = ex.run("multi-head", by_hand=True)
    exact = t["y"].value[0]
    # the seed multiplied z¹ as printed (three decimals): the exact result differs in the 4th decimal…
    assert list(round_half_up(exact, 4)) == [0.8743, 0.9228, 0.6961]
    assert np.max(np.abs(exact - seed)) < 2.5e-4
    # …and the by-hand mode, rounding like the seed, reproduces it exactly
    at_seed_precision(t["by hand/y"].value[0], ["0.8742", "0.9230", "0.6962"])
    exact_text = flat(render(t, "text"))
    assert "z_final = [0.8743, 0.9228, 0.6961]" in exact_text and "the post multiplies" in exact_text
    assert "z_final = [0.8742, 0.9230, 0.6962]" in render(t, "text", by_hand=True)


def test_multi_head_refuses_other_queries():
    with pytest.raises(qkv.InputError, match="follows 'love' only"):
        ex.run("multi-head", query="I")


# ----------------------------------------------------------------------------- seed 000, projection
def test_projection_shapes_and_float64_reference():
    t = ex.run("projection")
    shapes = {"x": (3, 8), "q": (3, 8), "q_heads": (2, 3, 4), "k_heads": (2, 3, 4), "v_heads": (2, 3, 4),
              "scores": (2, 3, 3), "weights": (2, 3, 3), "out": (2, 3, 4), "concat": (3, 8), "w_o": (8, 8),
              "y": (3, 8), "residual": (3, 8)}
    for name, shape in shapes.items():
        assert t[name].shape == shape, name
    # an independent float64 computation, written here
    doc = ex.load("projection")
    x, wq, wk, wv, wo = (np.array(doc[n], dtype=np.float64) for n in ("x", "w_q", "w_k", "w_v", "w_o"))
    q, k, v = x @ wq, x @ wk, x @ wv
    heads = []
    for h in range(2):
        cols = slice(4 * h, 4 * h + 4)
        s = q[:, cols] @ k[:, cols].T / 2.0
        w = np.exp(s - s.max(1, keepdims=True))
        w /= w.sum(1, keepdims=True)
        np.testing.assert_allclose(t["weights"].value[h], w, rtol=0, atol=1e-14)
        heads.append(w @ v[:, cols])
    h_all = np.concatenate(heads, 1)
    np.testing.assert_allclose(t["concat"].value, h_all, atol=1e-14)
    np.testing.assert_allclose(t["y"].value, h_all @ wo, atol=1e-13)
    np.testing.assert_allclose(t["residual"].value, x + h_all @ wo, atol=1e-13)
    # the reshape is the same numbers: head h is columns 4h…4h+3
    np.testing.assert_array_equal(t["q_heads"].value[1], t["q"].value[:, 4:8])
    # each head alone (its own column slices) equals the fused computation
    assert t["heads_check/concat"].meta["max_abs"] < 1e-14
    assert t["heads_check/y"].meta["max_abs"] < 1e-13
    np.testing.assert_array_equal(t["head 2/w_q"].value, wq[:, 4:8])
    text = flat(render(t, "text"))
    assert "3 × 2 × 4" in text and "Each head on its own gives the same numbers" in text


# ----------------------------------------------------------------------------- seed 002, group meeting
def test_group_meeting_softmax_and_notation():
    t = ex.run("group-meeting")
    lot = t["lot/weights"].value[0]
    assert lot[3] == pytest.approx(1.0, abs=1e-40)
    np.testing.assert_allclose(lot[:3], np.exp(-99.0) / (1 + 3 * np.exp(-99.0)), rtol=1e-12)
    question = t["question/weights"].value[0]
    np.testing.assert_allclose(question[:4], 0.25, rtol=1e-15)
    assert question[7] == 0.0                              # e^(100−1000): below float64
    assert question[7] < lot[3]
    np.testing.assert_array_equal(t["lot/out"].value[0], [1.0, 0.0])  # lot's answer "."
    np.testing.assert_allclose(t["question/out"].value[0], [0.0, 1.0], atol=1e-300)   # the question's "of"
    # row form == column form transposed, on seed 001's Q, K, V
    np.testing.assert_array_equal(t["rows/out"].value, ex.run("self-attention")["out"].value[0])
    np.testing.assert_allclose(t["columns/weights"].value, t["rows/weights"].value.T, atol=1e-15)
    assert t["columns/difference"].meta["max_abs"] < 1e-15
    np.testing.assert_allclose(t["columns/weights"].value.sum(0), 1.0, rtol=1e-14)   # per column
    text = flat(render(t, "text"))
    assert "1.0e-43" in text                                # e^-99 is tiny, not zero
    assert "The conclusion is “.”" in text and "The conclusion is “of”" in text


# ----------------------------------------------------------------------------- trace, JSON, by hand
@pytest.mark.parametrize("name", ex.names())
def test_trace_json_round_trip(name):
    t = ex.run(name, by_hand=True)
    back = qkv.Trace.from_json(t.to_json())
    assert back.title == t.title and back.names() == t.names()
    assert json.loads(json.dumps(back.meta)) == json.loads(t.to_json())["meta"]
    for a, b in zip(t, back):
        assert a.formula == b.formula and a.shape == b.shape
        np.testing.assert_array_equal(a.value, b.value)
    assert render(back, "markdown") == render(t, "markdown")


def test_iter_json_pieces_join_to_to_json_and_stay_small():
    """Trace.iter_json: joined, exactly to_json's text; each piece holds at most about ``numbers`` values (the
    server streams a whole model's trace with it) — a long 1-D step as well as rows of a matrix."""
    from qkv.trace import Step

    rng = np.random.default_rng(2)
    trace = qkv.Trace("pieces", {"tokens": ["a"]}, [Step("long", rng.standard_normal(5000)),
                                                    Step("matrix", rng.standard_normal((300, 7))),
                                                    Step("cube", np.arange(2400.0).reshape(4, 20, 30)),
                                                    Step("odd", np.array([np.inf, -np.inf, np.nan, 0.5]))])
    pieces = list(trace.iter_json(numbers=100))
    assert "".join(pieces) == trace.to_json()
    longest = max(len(piece) for piece in pieces)
    assert longest <= 100 * 26 + 200, longest     # 100 float64 values of at most ~25 characters, and a step's head


def test_by_hand_recorder_rounds_and_the_core_continues_from_the_rounded_numbers():
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((2, 3)), rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    trace = qkv.Trace()
    out = qkv.attention(q, k, v, record=ByHand(trace, lambda name: 2))
    scaled = trace["by hand/scaled_scores"].value
    np.testing.assert_array_equal(scaled, round_half_up(round_half_up(q @ k.T, 2) / np.sqrt(3), 2))
    # softmax as a person computes it: m, e^(s − m) rounded, their sum rounded, each divided by the sum
    exps = round_half_up(np.exp(scaled - scaled.max(axis=-1, keepdims=True)), 2)
    weights = round_half_up(exps / round_half_up(exps.sum(axis=-1, keepdims=True), 2), 2)
    np.testing.assert_array_equal(trace["by hand/exp_scores"].value, exps)
    np.testing.assert_array_equal(trace["by hand/weights"].value, weights)
    np.testing.assert_array_equal(out, round_half_up(weights @ v, 2))
    plain = qkv.Trace()
    exact = qkv.attention(q, k, v, record=plain)
    np.testing.assert_allclose(exact, qkv.softmax(q @ k.T / np.sqrt(3)) @ v, rtol=1e-13)
    assert not np.array_equal(exact, out)


def test_by_hand_self_attention_drifts_in_the_third_decimal():
    t = ex.run("self-attention", by_hand=True)
    love = t.meta["query"]
    np.testing.assert_array_equal(t["by hand/weights"].value[0, love], [0.1688, 0.2472, 0.2457, 0.3382])
    assert list(t["by hand/out"].value[0, love]) == [0.893, 0.929, 0.818]
    assert t["drift/out"].meta["max_abs"] > 1e-4
    t6 = ex.run("self-attention", by_hand=True, digits=6)
    assert t6["drift/out"].meta["max_abs"] < 1e-5


def test_round_half_up_is_what_a_person_does():
    assert list(round_half_up([0.125, -0.125, 2.5, 1.005, 0.3382382], 2)) == [0.13, -0.13, 2.5, 1.01, 0.34]
    assert float(round_half_up(2.5, 0)) == 3.0
    assert np.isneginf(round_half_up(-np.inf, 2))


def test_unknown_example_and_query():
    with pytest.raises(qkv.InputError, match="unknown example 'nope'"):
        ex.run("nope")
    with pytest.raises(qkv.InputError, match="'lov' is not one of the tokens"):
        ex.run("self-attention", query="lov")
    t = ex.run("self-attention", query="learning")
    assert t.meta["query"] == 3


def test_no_seed_result_is_typed_into_the_package():
    """The package holds inputs only: no number that the computation must produce appears in src/."""
    produced = ["1.6976", "1.6888", "2.1408", "0.8188", "1.2004", "1.1942", "1.5138", "0.1688", "0.2472",
                "0.2457", "0.3383", "0.3382", "0.893", "0.930", "0.818", "1.6709", "1.6830", "1.7060", "1.7302",
                "1.1815", "1.1901", "1.2063", "1.2234", "0.2453", "0.2474", "0.2515", "0.2558", "0.847", "0.887",
                "0.577", "0.8742", "0.9230", "0.6962", "0.8743", "0.9228", "0.6961", "1.158", "0.940", "0.819"]
    anywhere = re.compile(rf"(?<![\d.])(?:{'|'.join(map(re.escape, produced))})(?!\d)")   # one pass over each file
    for path in list(SRC.rglob("*.py")) + list(SRC.rglob("*.toml")):
        found = anywhere.search(path.read_text(encoding="utf-8"))
        assert found is None, (path.name, found and found.group())


# ----------------------------------------------------------------------------- what-if (qkv.examples.Changes)
def _softmax64(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_what_if_recomputes_self_attention_from_edited_inputs():
    doc = ex.load("self-attention")
    x, w_q, w_k, w_v = (np.array(doc[n], dtype=float) for n in ("x", "w_q", "w_k", "w_v"))
    x[1, 0] = 2.0
    w_k[0, 1] = -0.5
    for factor, sqrt_dk in ((1.0, True), (3.0, True), (0.5, False)):
        changes = ex.Changes(factor=factor, sqrt_dk=sqrt_dk, cells={"x": ((1, 0, 2.0),), "w_k": ((0, 1, -0.5),)})
        t = ex.run("self-attention", changes=changes)
        scale = factor / (np.sqrt(2) if sqrt_dk else 1.0)
        weights = _softmax64((x @ w_q) @ (x @ w_k).T * scale)
        np.testing.assert_allclose(t["weights"].value[0], weights, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(t["out"].value[0], weights @ (x @ w_v), rtol=1e-13)
        assert t.meta["notes"] == [] and t.meta["what_if"]["factor"] == factor


def test_what_if_group_meeting_score_scale_moves_lots_weight():
    # the post: lot 100 against 1 → lot's weight ~1; questions at 1000 → ~0. A factor of 0.01 brings
    # the scores close: every weight is the float64 softmax of the scaled scores.
    for factor in (0.001, 0.01, 1.0):
        t = ex.run("group-meeting", changes=ex.Changes(factor=factor))
        for scene in ex.load("group-meeting")["scenes"]:
            expected = _softmax64(np.array(scene["scores"], dtype=float) * factor)
            np.testing.assert_allclose(t[f"{scene['name']}/weights"].value[0], expected, rtol=1e-12, atol=1e-300)
    t = ex.run("group-meeting", changes=ex.Changes(scores={"question": ((7, 1000.0),)}))
    assert abs(t["question/weights"].value[0][7] - 0.2) < 1e-12      # lot now scores as the question words


def test_what_if_refuses_what_it_cannot_change():
    with pytest.raises(qkv.InputError, match="outside x"):
        ex.run("self-attention", changes=ex.Changes(cells={"x": ((9, 0, 1.0),)}))
    with pytest.raises(qkv.InputError, match="cannot be edited"):
        ex.run("self-attention", changes=ex.Changes(cells={"w_o": ((0, 0, 1.0),)}))
    with pytest.raises(qkv.InputError, match="no ÷√d_k to switch off"):
        ex.run("group-meeting", changes=ex.Changes(sqrt_dk=False))
    with pytest.raises(qkv.InputError, match="no meeting named 'nope'"):
        ex.run("group-meeting", changes=ex.Changes(scores={"nope": ((0, 1.0),)}))
    with pytest.raises(qkv.InputError, match="finite"):
        ex.run("self-attention", changes=ex.Changes(factor=float("nan")))


def test_group_meeting_by_hand_notation_rounds_v_as_shown_not_as_the_meetings_answers():
    # the notation part's V is the self-attention example's (two decimals), not the meetings' 0/1 answers
    t = ex.run("group-meeting", by_hand=True)
    np.testing.assert_array_equal(t["by hand/rows/v"].value, round_half_up(t["rows/v"].value, 2))
    assert np.max(np.abs(t["by hand/rows/out"].value - t["rows/out"].value)) < 2e-3
