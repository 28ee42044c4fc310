"""The README's promises: its Python quickstart runs as written and prints what it says; the set-up it
names exists; its links resolve; its command table is qkv's commands; its headline numbers are rows of
the measured tables in docs/benchmarks.md. (tests/test_docs.py runs every block of every page too.)"""

from __future__ import annotations

import pathlib
import re

import numpy as np

from qkv import residual as qkv_residual

ROOT = pathlib.Path(__file__).parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BENCHMARKS = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")


def section(title: str, text: str = README) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def table_rows(text: str) -> list[list[str]]:
    """Every Markdown table row of text, as stripped cells (separator rows left out)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not re.fullmatch(r"[|:\- ]+", line):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def test_quickstart_runs_as_written(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks, "README has no ```python quickstart block"
    namespace: dict = {}
    for block in blocks:  # one session, as a reader would type them in order
        exec(compile(block, "README.md", "exec"), namespace)
    printed = capsys.readouterr().out
    # the quickstart prints shapes and the weights' row sums; check them against what it computed
    assert "(4, 8)" in printed
    weights = namespace["weights"]
    np.testing.assert_allclose(weights.sum(-1), 1, rtol=1e-12)
    # the worked example: love's weights, checked against seed 001's printed values (4 decimals;
    # the seed prints learning's as 0.3383, one unit above the exact 0.338238)
    love = namespace["trace"]["weights"].value[0, 1]
    np.testing.assert_allclose(love, [0.1688, 0.2472, 0.2457, 0.3383], atol=1.5e-4)
    assert "[0.1688 0.2472 0.2457 0.3382]" in printed
    # the torch variant's gradient, against central differences of the NumPy layer (float64)
    x, mha = namespace["x"], namespace["mha"]
    def loss(x_):
        return float(np.sum(qkv_residual(x_, mha(x_, causal=True))))
    numeric = np.zeros_like(x)
    for index in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[index] = 1e-6
        numeric[index] = (loss(x + step) - loss(x - step)) / 2e-6
    np.testing.assert_allclose(namespace["xt"].grad.numpy(), numeric, atol=1e-7)


def test_setup_it_names_exists():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("demo", "test", "check", "docs"):
        assert f"make {target}" in README
        assert re.search(rf"^{target}:", makefile, flags=re.M), f"the Makefile has no {target} target"
    prerequisites = section("Set-up")
    assert "python3-venv" in prerequisites and "chromium" in prerequisites and "fonts-noto-cjk" in prerequisites
    assert ".venv/bin/qkv" in README and "source .venv/bin/activate" in README   # how to reach qkv after set-up


def test_links_resolve():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert local, "README links no page"
    for link in local:
        assert (ROOT / link).exists(), f"README links {link}, which does not exist"
    for page in sorted((ROOT / "docs").glob("*.md")):     # every guide page is reachable from the front door
        assert f"docs/{page.name}" in README, f"README does not link docs/{page.name}"


def test_command_table_is_the_cli():
    from qkv.commands import COMMANDS

    table = table_rows(section("The commands"))
    named = {m.group(1) for row in table for m in [re.match(r"`qkv (\w+)", row[0])] if m}
    assert not set(COMMANDS) - named, f"README's command table lacks {sorted(set(COMMANDS) - named)}"
    assert not named - set(COMMANDS), f"README's command table names {sorted(named - set(COMMANDS))}, not qkv commands"


def test_readme_headline_rows_are_the_benchmarks_headline_rows():
    """The README keeps a short table; each of its rows is a row of docs/benchmarks.md's headline section,
    which the next test checks against the measured tables."""
    ours = table_rows(section("Headline numbers"))
    full = table_rows(section("Headline numbers", BENCHMARKS))
    assert len(ours) >= 4 and all(row in full for row in ours), [row for row in ours if row not in full]
    assert len(README.splitlines()) <= 100       # the front door: what it is, the set-up, the first commands


def test_headline_numbers_are_measured_rows():
    """docs/benchmarks.md's headline rows (the README quotes some) are rows of the measured tables below them."""
    headline_section = section("Headline numbers", BENCHMARKS)
    measured = table_rows(BENCHMARKS.replace(headline_section, "\n"))       # the measured tables, not the headline
    headline = table_rows(headline_section)
    attention = [row for row in headline if row[0].startswith(("dense", "causal"))]
    training = [row for row in headline if row[0].startswith("training step")]
    masks = [row for row in headline if row[0].startswith(("sliding", "8 documents"))]
    lambdas = [row for row in headline if row[0].startswith("the same window as a lambda")]
    models = [row for row in headline if row[0].startswith(("MiniLM", "GPT-2", "Llama"))]
    assert len(attention) >= 5 and len(training) == 2 and len(masks) >= 3 and len(lambdas) == 1 and len(models) == 3
    for kind, T, qkv_ms, sdpa_ms, ratio in training:   # the training table of qkv bench (docs/benchmarks.md)
        step = "causal" if "causal" in kind else "sliding window W=256 (user lambda)"
        h = kind.split("H=")[1]
        ours = next(r for r in measured if r[:4] == [step, h, T, "**qkv.attention (C forward + backward)**"])
        theirs = next(r for r in measured if r[:3] == [step, h, T] and r[3].startswith("torch sdpa"))
        assert (ours[4], ours[5], theirs[4]) == (qkv_ms, ratio, sdpa_ms.split(" (")[0]), kind
    for name, h, T, qkv_ms, *_ in lambdas:
        assert any(r[1:5] == [h, T, "**qkv blocked (user lambda)**", qkv_ms] for r in measured), name
    for kind, T, qkv_ms, sdpa_ms, ratio in attention:
        h, causal = kind.split("H=")[1], "yes" if kind.startswith("causal") else "no"
        assert [h, T, causal, "**qkv blocked**", qkv_ms] == measured_row(measured, h, T, causal, "**qkv blocked**")[:5]
        assert measured_row(measured, h, T, causal, "**qkv blocked**")[6] == ratio
        assert measured_row(measured, h, T, causal, "torch sdpa")[4] == sdpa_ms
    for name, h, T, qkv_ms, flex_ms, sdpa_ms in masks:
        rows = [row for row in measured if row[:3] == [name, h, T]]
        assert any(r[3] == "**qkv blocked (mask_mod)**" and r[4] == qkv_ms for r in rows), name
        assert any(r[3] == "torch sdpa (dense mask)" and r[4] == sdpa_ms for r in rows), name
        assert flex_ms == "failed to allocate" or any(
            r[3] == "torch flex_attention (compiled)" and r[4] == flex_ms for r in rows), name
    minilm = next(row for row in models if row[0].startswith("MiniLM"))
    assert any(r[0].startswith("qkv") and r[1] == minilm[2] and r[3] == minilm[4] for r in measured)
    assert any(r[0].startswith("sentence-transformers") and r[1] == minilm[3] for r in measured)
    for row in models:
        if row[0].startswith(("GPT-2", "Llama")):
            shape = row[0].split(" (")[0]
            full = next(r for r in measured if r[:2] == [shape, row[1]])
            assert (full[2], full[4], full[6]) == (row[2], row[3], row[4]), row     # qkv, sdpa, ×sdpa


def measured_row(rows, h, T, causal, implementation):
    return next(row for row in rows if row[:4] == [h, T, causal, implementation])


def test_the_korean_readme_says_what_the_english_one_says():
    """README.ko.md had fallen behind: no torch or GPU set-up, no headline numbers, English link labels; its
    commands, set-up targets and numbers are the English README's."""
    korean = (ROOT / "README.ko.md").read_text(encoding="utf-8")
    from qkv.commands import COMMANDS

    table = table_rows(section("명령", korean))
    named = {m.group(1) for row in table for m in [re.match(r"`qkv (\w+)", row[0])] if m}
    assert named == set(COMMANDS), sorted(named ^ set(COMMANDS))
    for words in ("make demo", "make test", "make check", "make torch", "TORCH_INDEX=https://download.pytorch.org/whl/",
                  "python3-venv", "chromium", "fonts-noto-cjk", ".venv/bin/qkv", "source .venv/bin/activate",
                  "qkv.show("):
        assert words in README and words in korean, words
    ours = [row[1:] for row in table_rows(section("대표 측정값", korean))]
    english = [row[1:] for row in table_rows(section("Headline numbers"))]
    def numbers(rows):       # T, qkv, torch SDPA (its note aside), ×; the header row aside
        return [(row[0], row[1], row[2].split(" (")[0], row[3]) for row in rows[1:]]
    assert numbers(ours) and numbers(ours) == numbers(english)
    assert len(korean.splitlines()) <= 100
    # a link's words are Korean; an English page says so
    for label, target in re.findall(r"\[([^\]]+)\]\(([^)]+)\)", korean):
        assert re.search("[가-힣]", label) or label in ("English", "torch"), label
        assert target.startswith(("docs/ko/", "README.md")) or "(영어)" in label or label in ("torch", "신뢰성", "내부 구조"), label
