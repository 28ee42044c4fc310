"""The scale of the scores said as what it is (issue 29's leftovers): MiniLM's Q·Kᵀ · 0.176777 is 1/√d_k and
says so, as the worked examples do, wherever the scale equals 1/√d_k to float32's precision (the default, or
given: MultiHeadAttention and the models pass it); a scale that is not 1/√d_k says what it is where the model
says why — GPT-2's scale_attn_by_inverse_layer_idx (1/(√d_k · (layer + 1))) and Gemma 2/3's
query_pre_attn_scalar (1/√scalar). The expected numbers are computed here in float64."""

from __future__ import annotations

import contextlib
import io
import math
import re

import numpy as np
import pytest

import qkv
import qkv.examples
from qkv.cli import main


def formula_of(scale, dtype=np.float64, dk=32):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 2, 3, dk)).astype(dtype) for _ in range(3))
    trace = qkv.Trace("scale")
    qkv.attention(q, k, v, scale=scale, record=trace)
    return trace["scaled_scores"].formula


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_scale_given_as_1_over_root_dk_is_said_so(dtype):
    for scale in (None, 1 / math.sqrt(32), float(np.float32(1 / math.sqrt(32))), 32 ** -0.5):
        assert formula_of(scale, dtype).endswith("(= 1/√d_k)"), scale
    for scale in (0.2, 1.0, 1 / (math.sqrt(32) * 3), 12 ** -0.5, 1 / math.sqrt(32) * (1 + 1e-5)):
        assert "√" not in formula_of(scale, dtype), scale
    # a scale of 1 given with d_k = 1 is "not scaled" (the group meeting's given scores), not 1/√1
    assert formula_of(1.0, dtype, dk=1) == "Q·Kᵀ · 1" and formula_of(None, dtype, dk=1).endswith("(= 1/√d_k)")
    meeting = qkv.examples.run("group-meeting")
    assert [s.formula for s in meeting if s.name in ("lot/scaled_scores", "question/scaled_scores")] == ["Q·Kᵀ · 1"] * 2


def test_multi_head_attention_says_its_scale_is_1_over_root_dk():
    trace = qkv.Trace("mha")
    qkv.MultiHeadAttention.random(8, n_heads=2, seed=1)(np.random.default_rng(1).standard_normal((3, 8)), record=trace)
    assert trace["scaled_scores"].formula == f"Q·Kᵀ · {1 / math.sqrt(4):.6g} (= 1/√d_k)"


def say(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        assert main(list(argv)) == 0
    return " ".join(out.getvalue().split())


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_minilm_says_its_scale_is_1_over_root_dk(lang):
    said = say("inspect", "The cat sat on the mat.", "--layer", "2", "--head", "5", "--lang", lang)
    # MiniLM: 384 wide, 12 heads: d_k = 32, its scores divided by √32 as the examples write it
    assert "√32" in said and f"{1 / math.sqrt(32):.6f}" not in said.replace("(= 1/√d_k)", "")
    assert ("divided by √d_k = √32" if lang == "en" else "√d_k(= √32)로 나누어") in said


@pytest.fixture(scope="module")
def families():
    from model_fixtures import built

    return {name: built(name) for name in ("gpt2-layer-scaled", "gemma2")}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_scale_other_than_1_over_root_dk_says_what_it_is(families, lang):
    # gpt2-layer-scaled: n_embd 20, 4 heads (d_k = 5), layer 2 scaled by 1/(√5 · 3)
    said = say("inspect", "the cat sat", "--model", str(families["gpt2-layer-scaled"]), "--layer", "2", "--head", "1",
               "--lang", lang)
    assert f"Q·Kᵀ · {1 / (math.sqrt(5) * 3):.6g} (= 1/(√d_k · 3))" in said
    assert "scale_attn_by_inverse_layer_idx" in said and "2 + 1 = 3" in said
    # gemma2: head_dim 10, query_pre_attn_scalar 12: 1/√12, not 1/√10
    said = say("inspect", "the cat sat", "--model", str(families["gemma2"]), "--layer", "1", "--head", "1", "--lang", lang)
    assert f"Q·Kᵀ · {12 ** -0.5:.6g} (= 1/√12)" in said and "query_pre_attn_scalar" in said
    assert ("d_k = 10" if lang == "en" else "d_k(= 10)") in said
    assert not re.search(r"Q·Kᵀ · [\d.]+ \(= 1/√d_k\)", said)
