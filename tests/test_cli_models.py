"""`qkv inspect` and `qkv embed` on the installed MiniLM: outputs, files written, one-line errors (exit 2)."""

from __future__ import annotations

import json
import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv.cli import main  # noqa: E402

TEXT = "The cat sat on the mat."
TOKENS = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]


@pytest.fixture(scope="module")
def model():
    from qkv import models

    return models.load("minilm")


@pytest.fixture(scope="module", autouse=True)
def _one_minilm_for_the_commands():
    """The commands share one MiniLM of their own (model_fixtures.minilm_loaded_once), not a load per command."""
    from model_fixtures import minilm_loaded_once

    with minilm_loaded_once():
        yield


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line_error(capsys, *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 2, (out, err)
    assert err.startswith("qkv: error: ") and err.count("\n") == 1, err
    return err


# ------------------------------------------------------------------ inspect: one head
def test_inspect_one_head_text(capsys, model):
    code, out, _ = run(capsys, "inspect", TEXT, "--layer", "2", "--head", "5", "--query", "cat")
    assert code == 0
    assert "layer 2, head 5" in out
    assert "0:[CLS]  1:the  2:cat" in out
    weights = model.attention_weights(TEXT)[2, 5]
    assert f"{weights[2, 0]:.3f}" in out                     # the head's weights, row "cat"
    assert "top 5 keys for query 2 “cat”" in out
    assert "Inputs" in out                                   # the derivation follows (qkv.explain)


def test_inspect_one_head_json_matches_the_model(capsys, model):
    code, out, _ = run(capsys, "inspect", TEXT, "--layer", "4", "--head", "0", "--query", "mat", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["tokens"] == TOKENS and doc["query"] == 6 and doc["layer"] == 4 and doc["head"] == 0
    np.testing.assert_allclose(doc["weights"], model.attention_weights(TEXT)[4, 0], atol=1e-6)
    top = doc["top_keys"]
    assert top[0]["weight"] == max(doc["weights"][6]) and len(top) == 5
    assert doc["explanation"]["trace"]["meta"]["kind"] == "model"


def test_inspect_one_head_markdown_html_and_figure(capsys, tmp_path):
    code, out, _ = run(capsys, "inspect", TEXT, "--layer", "0", "--head", "1", "--format", "markdown")
    assert code == 0 and out.startswith("# minilm: layer 0 of 0–5, head 1 of 0–11") and "| key | token | weight |" in out
    page, figure = tmp_path / "head.html", tmp_path / "head.png"
    code, out, _ = run(capsys, "inspect", TEXT, "--layer", "0", "--head", "1", "--format", "html",
                       "--out", str(page), "--figure", str(figure))
    assert code == 0 and out == ""
    assert page.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_inspect_one_head_is_short_and_names_the_real_head(capsys, tmp_path):
    """A 384-wide model head prints like NumPy: W matrices and X elided, full shapes stated; the figure
    and the explanation use the trace as recorded (meta head 3 is a label, not an index)."""
    figure = tmp_path / "head3.png"
    code, out, err = run(capsys, "inspect", TEXT, "--layer", "2", "--head", "3", "--figure", str(figure))
    assert code == 0 and figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out == "" and err == f"qkv: wrote {figure}\n"      # the figure alone was asked for: nothing else
    code, out, _ = run(capsys, "inspect", TEXT, "--layer", "2", "--head", "3", "--figure", str(figure), "--format", "text")
    assert len(out.splitlines()) < 300                       # was ~1,400 lines, mostly "…"
    assert "X  (9 × 384; 8 of 9 rows shown" not in out      # 9 tokens: every row shown
    assert "X  (9 × 384; 8 of 384 columns shown)" in out
    assert "W_Q  (384 × 32; 8 of 384 rows shown, 8 of 32 columns shown)" in out
    assert "layer 2, head 3 of 0–11" in out and "layer 2 of 0–5, head 3 of 0–11" in out   # models count from 0
    code, out, _ = run(capsys, "inspect", TEXT, "--layer", "2", "--head", "3", "--format", "markdown")
    assert code == 0 and r"\cdots" in out and r"\ddots" in out and "8 of 384 columns shown" in out
    assert len(out) < 40_000                                  # was ~520 kB of LaTeX
    code, out, _ = run(capsys, "inspect", TEXT, "--layer", "2", "--head", "3", "--format", "json")
    doc = json.loads(out)
    assert doc["explanation"]["trace"]["meta"]["head"] == 3 and doc["head"] == 3
    w_q = next(b for b in doc["explanation"]["blocks"] if b["type"] == "matrix" and b["step"] == "w_q")
    assert w_q["shape"] == [384, 32] and len(w_q["values"]) == 384      # JSON keeps every number



def test_inspect_full_prints_every_number(capsys):
    code, out, _ = run(capsys, "inspect", TEXT, "--layer", "2", "--head", "3", "--format", "markdown", "--full")
    assert code == 0
    assert "columns shown" not in out and r"\cdots" not in out   # nothing elided
    assert len(out) > 100_000                                      # every one of W_Q's 384 × 32 numbers

# ------------------------------------------------------------------ inspect: the grid
def test_inspect_grid_text_and_json(capsys, model):
    code, out, _ = run(capsys, "inspect", TEXT, "--query", "cat")
    assert code == 0
    assert "6 layers × 12 heads" in out and "layer 5" in out
    code, out, _ = run(capsys, "inspect", TEXT, "--layer", "all", "--head", "all", "--format", "json")
    doc = json.loads(out)
    assert np.array(doc["weights"]).shape == (6, 12, 9, 9)
    np.testing.assert_allclose(doc["weights"], model.attention_weights(TEXT), atol=1e-6)
    assert len(doc["top_keys"]) == 72 and doc["query"] == 1          # default query: the first word


def test_inspect_grid_figure_and_page(capsys, tmp_path):
    figure, page = tmp_path / "grid.svg", tmp_path / "grid.html"
    code, _, _ = run(capsys, "inspect", TEXT, "--figure", str(figure), "--format", "html", "--out", str(page))
    assert code == 0
    assert "<svg" in figure.read_text(encoding="utf-8")
    assert "layer 5" in page.read_text(encoding="utf-8")


def test_inspect_layer_alone_figure_names_that_layer(capsys, tmp_path):
    """`--layer 2` alone (every head): the grid's panels say "layer 2", never "layer 0"; `--head 5` alone: "head 5"."""
    import re

    for option, number, other in (("--layer", "2", "layer"), ("--head", "5", "head")):
        figure = tmp_path / f"{other}.svg"
        code, _, _ = run(capsys, "inspect", TEXT, option, number, "--figure", str(figure))
        assert code == 0
        svg = figure.read_text(encoding="utf-8")
        written = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
        named = [t for t in written if re.search(rf"\b{other} \d+", t)]
        assert named and all(re.search(rf"\b{other} {number}\b", t) for t in named), named


def test_inspect_page_records_every_derivation_step_of_the_chosen_layer(capsys, tmp_path):
    """`--layer 3 --format html`: the trace page of layer 3 alone, with every step a cell's derivation reads."""
    import re

    page = tmp_path / "layer3.html"
    code, _, _ = run(capsys, "inspect", TEXT, "--layer", "3", "--format", "html", "--out", str(page))
    assert code == 0
    data = json.loads(re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>',
                                page.read_text(encoding="utf-8"), re.S).group(1))
    assert [p["label"] for p in data["parts"]] == ["layer 3"] and data["isModel"]
    assert {"q_heads", "k_heads", "v_heads", "scores", "scaled_scores", "weights", "out"} <= set(data["parts"][0]["arrays"])
    assert data["parts"][0]["arrays"]["weights"]["shape"] == [12, 9, 9]


def test_inspect_one_layer_all_heads(capsys):
    code, out, _ = run(capsys, "inspect", TEXT, "--layer", "3", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["layers"] == [3] and doc["heads"] == list(range(12))
    assert np.array(doc["weights"]).shape == (1, 12, 9, 9)


# ------------------------------------------------------------------ inspect: errors
@pytest.mark.parametrize("argv, words", [
    (["--layer", "6", "--head", "0"], ["--layer", "6", "0 … 5"]),
    (["--layer", "0", "--head", "12"], ["--head", "12", "0 … 11"]),
    (["--layer", "x"], ["--layer"]),
    (["--layer", "0", "--head", "0", "--query", "zebra"], ["--query", "zebra"]),
    (["--layer", "0", "--head", "0", "--query", "40"], ["--query", "40"]),
    (["--model", "no-such-model"], ["no-such-model", "unknown model"]),
    (["--format", "pdf"], ["--format"]),
    (["--figure", "grid.gif"], ["--figure", ".gif"]),
    (["--out", "/no/such/dir/x.txt"], ["--out", "does not exist"]),
])
def test_inspect_errors_are_one_line(capsys, argv, words):
    err = one_line_error(capsys, "inspect", TEXT, *argv)
    for word in words:
        assert word in err


def test_inspect_bad_model_directory(capsys, tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "no-such-architecture"}', encoding="utf-8")
    (tmp_path / "model.safetensors").write_bytes(b"")
    (tmp_path / "tokenizer.json").write_text("{}", encoding="utf-8")
    err = one_line_error(capsys, "inspect", TEXT, "--model", str(tmp_path))
    assert "config.json" in err and "model_type" in err


# ------------------------------------------------------------------ embed
def test_embed_prints_shapes_values_and_similarities(capsys, model):
    texts = ["A cat sits on the mat.", "A kitten rests on the rug.", "Stock markets fell sharply today."]
    code, out, _ = run(capsys, "embed", *texts)
    assert code == 0
    assert "(3, 384)" in out and "cosine similarity" in out
    embeddings = model.encode(texts)
    assert f"{embeddings[0, 0]:+.4f}" in out
    similarity = embeddings @ embeddings.T
    assert f"{similarity[0, 1]:.3f}" in out and f"{similarity[0, 2]:.3f}" in out
    assert similarity[0, 1] > similarity[0, 2]                 # the cat is nearer the kitten than the markets


def test_embed_json(capsys, model):
    code, out, _ = run(capsys, "embed", "안녕하세요", "Hello", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["shape"] == [2, 384] and doc["texts"] == ["안녕하세요", "Hello"]
    np.testing.assert_allclose(doc["embeddings"], model.encode(["안녕하세요", "Hello"]), atol=1e-6)
    np.testing.assert_allclose(np.diag(doc["similarity"]), 1.0, atol=1e-6)


def test_embed_single_text_has_no_matrix(capsys):
    code, out, _ = run(capsys, "embed", "just one")
    assert code == 0 and "(1, 384)" in out and "cosine" not in out


def test_embed_errors(capsys):
    assert "unknown model" in one_line_error(capsys, "embed", "x", "--model", "nope")
    assert "--batch-size" in one_line_error(capsys, "embed", "x", "--batch-size", "0")


# ------------------------------------------------------------------ issue 9: strict integers, truncation said
@pytest.mark.parametrize("argv, field", [
    (["--layer", "²"], "--layer"), (["--head", "²"], "--head"), (["--layer", "0", "--head", "١"], "--head"),
    (["--layer", "0", "--head", "0", "--query", "²"], "--query"), (["--layer", "0", "--head", "0", "--query", "١"],
                                                                   "--query"), (["--digits", "²"], "--digits"),
    (["--top", "３"], "--top"),
])
def test_inspect_integers_are_strict(capsys, argv, field):
    assert field in one_line_error(capsys, "inspect", TEXT, *argv)


def test_embed_integers_are_strict(capsys):
    assert "--values" in one_line_error(capsys, "embed", "x", "--values", "²")
    assert "--batch-size" in one_line_error(capsys, "embed", "x", "--batch-size", "1_0")


def test_long_text_is_said_to_be_truncated(capsys, model):
    """Item 18: 10,000 words are cut to the model's 256 tokens, and the command says so on stderr."""
    long_text = "word " * 10_000
    code, out, err = run(capsys, "inspect", long_text, "--layer", "0", "--head", "0")
    assert code == 0 and f"only its first {model.pooling.max_seq_length} tokens are used" in err
    code, out, err = run(capsys, "embed", long_text, "short")
    assert code == 0 and "longer than this model reads: 1 text (#0)" in err
    code, out, err = run(capsys, "inspect", TEXT, "--layer", "0", "--head", "0")
    assert code == 0 and err == ""


@pytest.mark.parametrize("config, words", [
    ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested more than 64 levels deep"),
    ('{"hidden_size": 1' + "0" * 5000 + "}", "more than 4300 digits"),
])
def test_model_config_nesting_and_huge_integers_are_one_line(capsys, tmp_path, config, words):
    """Item 14: config.json read through qkv._io (depth, integer length), naming the file."""
    (tmp_path / "config.json").write_text(config, encoding="utf-8")
    (tmp_path / "model.safetensors").write_bytes(b"")
    (tmp_path / "tokenizer.json").write_text("{}", encoding="utf-8")
    err = one_line_error(capsys, "inspect", TEXT, "--model", str(tmp_path))
    assert "config.json" in err and words in err


def test_inspect_names_the_heaviest_key_the_strongest_and_the_sink(capsys, model):
    """Issue 29: [CLS] has weight 0.748 but ‖w·v‖ 0.059 for “cat” (layer 2, head 5); cat contributes most.
    Expected: ‖wⱼ·vⱼ‖ from the head's recorded weights and value rows, by NumPy here."""
    trace = model.trace(TEXT, layer=2, head=5, query=2)
    w, v = trace["weights"].value[0, 2], trace["v_heads"].value[0]
    c = w * np.linalg.norm(v, axis=1)
    assert np.argmax(w) == 0 and np.argmax(c) == 2
    code, out, _ = run(capsys, "inspect", TEXT, "--layer", "2", "--head", "5", "--query", "cat", "--format", "json")
    doc = json.loads(out)
    said = doc["weight_vs_contribution"]
    assert (said["largest_weight"], said["contributes_most"], said["sink"]) == (0, 2, 0)
    np.testing.assert_allclose(said["contributions"], c, rtol=1e-5)
    np.testing.assert_allclose(said["shares"], c / c.sum(), rtol=1e-5)
    assert doc["top_keys"][0]["token"] == "[CLS]"
    np.testing.assert_allclose(doc["top_keys"][0]["contribution"], c[0], rtol=1e-5)
    for lang, words in (("en", ("[CLS] has the largest weight (0.748), but cat contributes most",
                                "[CLS] is an attention sink for cat")),
                        ("ko", ("가중치가 가장 큰 Key는 [CLS](0.748)이지만", "어텐션 싱크: cat의 Query에서 [CLS]의 가중치는"))):
        code, out, _ = run(capsys, "inspect", TEXT, "--layer", "2", "--head", "5", "--query", "cat", "--lang", lang)
        text = " ".join(out.split())
        assert all(word in text for word in words), lang
        assert "therefore contributes most" not in text
