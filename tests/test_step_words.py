"""A learner reads a trace's steps named in words, in English as in Korean (issue 29's leftovers): the
by-hand tables, the shape table, a model's derivation headings and `qkv inspect`'s notes on a causal model
said "scaled_scores", "(step modified_scores)", "(단계 rope_angles, q_rotated, k_rotated)". The API's names
(``trace["scaled_scores"]``) stay where an API name is meant: JSON keys and code. The words expected here
are written from the posts' and the docstrings' own descriptions, not read from the code under test."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from qkv.cli import main
from qkv.explain import texts
from qkv.explain.model_text import causal_structure
from qkv.trace import STEPS

API_NAMES = sorted(name for name in STEPS if "_" in name)          # scaled_scores, q_heads, rope_angles, …
AS_CODE = re.compile(r"(?<![\w/])(?:%s)(?![\w/])" % "|".join(map(re.escape, API_NAMES)))

WORDS = {"en": {"scaled_scores": "scaled scores", "rope_angles": "RoPE angles", "q_rotated": "rotated Q",
                "k_rotated": "rotated K", "modified_scores": "scores after the score function",
                "out": "attention output", "concat": "concatenated head outputs", "y": "output projection Y",
                "x": "input X", "q_heads": "Q per head", "w_q": "W_Q"},
         "ko": {"scaled_scores": "스케일링한 점수", "rope_angles": "RoPE 회전각", "q_rotated": "회전한 Q",
                "k_rotated": "회전한 K", "modified_scores": "점수 함수를 거친 점수", "out": "어텐션 출력",
                "w_q": "W_Q"}}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_step_is_named_in_words(lang):
    names = [*STEPS, "head 1/scaled_scores", "layer 2/q_rotated", "rows/scaled_scores", "by hand/out"]
    for name in names:
        said = texts.step_name(lang, name)
        assert not AS_CODE.search(said), (name, said)
    for name, words in WORDS[lang].items():
        assert texts.step_name(lang, name) == words


def _causal_model(**config):
    defaults = dict(n_layers=2, sliding_window=None, n_kv_heads=2, n_heads=2, rope_theta=10000.0, head_dim=4)
    return SimpleNamespace(is_causal=True, config=SimpleNamespace(**{**defaults, **config}),
                           kv_groups=lambda: [[0], [1]])


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_causal_models_notes_name_its_steps_in_words(lang):
    said = " ".join(text for _, text in causal_structure(_causal_model(attn_softcap=50.0), lang))
    assert not AS_CODE.search(said), said
    steps = ", ".join(WORDS[lang][name] for name in ("rope_angles", "q_rotated", "k_rotated"))
    assert steps in said and WORDS[lang]["modified_scores"] in said, said


CLI = [["example", name, "--by-hand"] for name in ("self-attention", "cross-attention", "multi-head", "projection",
                                                   "group-meeting")] + \
      [["translate", "I love you", "--to", "ja", "--derive", "1"], ["inspect", "The cat sat.", "--layer", "0", "--head", "1"],
       ["heads", "The cat sat."]]


@pytest.mark.parametrize("argv", CLI, ids=lambda argv: " ".join(argv[:2]))
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_command_line_names_no_step_as_code(argv, lang, capsys):
    assert main([*argv, "--lang", lang]) == 0
    out = capsys.readouterr().out
    assert not AS_CODE.search(out), AS_CODE.findall(out)
