"""The `qkv example` and `qkv explain` commands, run in-process (and once as the installed script)."""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from qkv.cli import main

ROOT = pathlib.Path(__file__).parents[1]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def flat(text: str) -> str:
    return " ".join(text.split())


def test_no_arguments_runs_self_attention(capsys):
    code, out, err = run(capsys)
    assert code == 0 and err == ""
    assert out.startswith("Self-attention: how “love” builds its context")
    assert "z_love = [0.893, 0.930, 0.818]" in out


def test_list(capsys):
    code, out, _ = run(capsys, "example", "--list")
    assert code == 0
    for name in ("self-attention", "cross-attention", "multi-head", "projection", "group-meeting"):
        assert f"  {name} " in out
    code, out, _ = run(capsys, "example", "--list", "--lang", "ko")
    assert "예제 목록" in out


@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "html"])
@pytest.mark.parametrize("name", ["self-attention", "cross-attention", "multi-head", "projection", "group-meeting"])
def test_every_example_every_format(capsys, name, fmt):
    code, out, err = run(capsys, "example", name, "--format", fmt, "--lang", "ko")
    assert code == 0 and err == ""
    if fmt == "json":
        assert json.loads(out)["trace"]["meta"]["example"] == name
    elif fmt == "markdown":
        assert r"\begin{bmatrix}" in out
    elif fmt == "html":
        assert out.lstrip().lower().startswith("<!doctype html") and "qkv-derivation" in out


def test_out_query_digits_by_hand(capsys, tmp_path):
    target = tmp_path / "love.json"
    code, out, err = run(capsys, "example", "--query", "learning", "--digits", "6", "--format", "json",
                         "--out", str(target))
    assert code == 0 and out == "" and err == ""
    doc = json.loads(target.read_text(encoding="utf-8"))
    assert doc["trace"]["meta"]["query"] == 3 and doc["digits"] == 6
    code, out, _ = run(capsys, "example", "cross-attention", "--by-hand")
    assert code == 0 and "By hand versus exact" in out
    code, out, _ = run(capsys, "example", "multi-head", "--by-hand", "--lang", "ko")
    assert "z_final = [0.8742, 0.9230, 0.6962]" in out and "손 계산" in out


def test_figure(capsys, tmp_path):
    figure = tmp_path / "love.png"
    code, _, err = run(capsys, "example", "--figure", str(figure), "--out", str(tmp_path / "love.txt"))
    assert code == 0 and err == ""
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_explain_round_trip_equals_float64_numpy(capsys, tmp_path):
    target = tmp_path / "mine.json"
    code, _, err = run(capsys, "explain", str(ROOT / "examples" / "my-example.toml"), "--format", "json",
                       "--out", str(target))
    assert code == 0 and err == ""
    trace = json.loads(target.read_text(encoding="utf-8"))["trace"]
    steps = {s["name"]: np.array(s["values"], dtype=float) for s in trace["steps"] if "/" not in s["name"]}
    # the same computation, written here in float64 NumPy
    x, w_q, w_k, w_o = (steps[n] for n in ("x", "w_q", "w_k", "w_o"))
    w_v = np.load(ROOT / "examples" / "my-example-w_v.npy")
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    causal = np.tril(np.ones((4, 4), dtype=bool))
    heads = []
    for h in range(2):
        s = q[:, 2 * h:2 * h + 2] @ k[:, 2 * h:2 * h + 2].T / np.sqrt(2)
        w = np.exp(np.where(causal, s, -np.inf) - s.max(1, keepdims=True))
        w /= w.sum(1, keepdims=True)
        np.testing.assert_allclose(steps["weights"][h], w, rtol=0, atol=1e-15)
        heads.append(w @ v[:, 2 * h:2 * h + 2])
    y = np.concatenate(heads, 1) @ w_o
    np.testing.assert_allclose(steps["y"], y, rtol=0, atol=1e-14)
    np.testing.assert_allclose(steps["residual"], x + y, rtol=0, atol=1e-14)
    # a saved trace is explained again without recomputing
    code, out, _ = run(capsys, "explain", str(target), "--query", "down")
    assert code == 0 and "The query of down is compared" in flat(out)


def test_explain_json_spec_korean(capsys):
    code, out, _ = run(capsys, "explain", str(ROOT / "examples" / "my-cross-example.json"), "--lang", "ko")
    assert code == 0 and "디코더 토큰 chat의 Query" in flat(out)


def _spec(tmp_path, text: str, name: str = "mine.toml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


GOOD = 'tokens = ["a", "b"]\nx = [[1.0, 0.0], [0.0, 1.0]]\nw_q = [[1, 0], [0, 1]]\nw_k = [[1, 0], [0, 1]]\n'


@pytest.mark.parametrize("case,field", [
    ("missing file", None),
    ("malformed toml", None),
    ("malformed json", None),
    ("missing matrix", "w_v"),
    ("ragged rows", "w_v"),
    ("not a number", "w_v"),
    ("nan", "w_v"),
    ("inf", "w_v"),
    ("shapes do not chain", "w_v"),
    ("d % h", "heads"),
    ("unknown token", "query"),
    ("unknown --query", "--query"),
    ("missing array file", "w_v"),
    ("unknown example", "NAME"),
    ("bad digits", "--digits"),
    ("bad lang", "--lang"),
    ("bad format", "--format"),
    ("missing out dir", "--out"),
])
def test_bad_input_exit_2_one_line_no_file(capsys, tmp_path, case, field):
    out_file = tmp_path / "out.md"
    texts = {
        "malformed toml": GOOD + "w_v = [[1, 0], [0, 1]\n",
        "malformed json": '{"tokens": ["a"],',
        "missing matrix": GOOD,
        "ragged rows": GOOD + "w_v = [[1, 0], [0]]\n",
        "not a number": GOOD + 'w_v = [[1, 0], [0, "one"]]\n',
        "nan": GOOD + "w_v = [[1, 0], [0, nan]]\n",
        "inf": GOOD + "w_v = [[1, 0], [0, -inf]]\n",
        "shapes do not chain": GOOD + "w_v = [[1, 0], [0, 1], [1, 1]]\n",
        "d % h": GOOD + "w_v = [[1, 0], [0, 1]]\nheads = 3\n",
        "unknown token": GOOD + 'w_v = [[1, 0], [0, 1]]\nquery = "c"\n',
        "missing array file": GOOD + 'w_v = "w_v.npy"\n',
    }
    spec = {"missing file": str(tmp_path / "nope.toml")}
    if case in texts:
        spec[case] = _spec(tmp_path, texts[case], "mine.json" if "json" in case else "mine.toml")
    good = _spec(tmp_path, GOOD + "w_v = [[1, 0], [0, 1]]\n", "good.toml")
    argv = {
        "unknown --query": ["explain", good, "--query", "zzz"],
        "unknown example": ["example", "nope"],
        "bad digits": ["example", "--digits", "many"],
        "bad lang": ["example", "--lang", "fr"],
        "bad format": ["example", "--format", "pdf"],
        "missing out dir": ["example", "--out", str(tmp_path / "no" / "such" / "out.md")],
    }.get(case, ["explain", spec.get(case, good)])
    if case != "missing out dir":
        argv = argv + ["--out", str(out_file)]
    code, out, err = run(capsys, *argv)
    assert code == 2, (case, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("qkv: error: "), err
    assert "Traceback" not in err
    if field is not None:
        assert f": {field}: " in lines[0] or lines[0].startswith(f"qkv: error: {field}: "), lines[0]
    if case in spec:
        assert spec[case] in lines[0]                      # names the file
    assert not out_file.exists() and list(tmp_path.glob(".out.md.*")) == []   # nothing (half-)written


def test_failed_write_leaves_the_old_file(capsys, tmp_path):
    target = tmp_path / "keep.txt"
    target.write_text("old")
    code, _, err = run(capsys, "explain", str(tmp_path / "missing.toml"), "--out", str(target))
    assert code == 2 and target.read_text() == "old"


def test_installed_script(tmp_path):
    script = shutil.which("qkv", path=str(pathlib.Path(sys.executable).parent))
    assert script is not None
    done = subprocess.run([script, "example", "cross-attention", "--lang", "ko"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "[0.847, 0.887, 0.577]" in done.stdout and "디코더" in done.stdout
    bad = subprocess.run([script, "explain", str(tmp_path / "none.toml")], capture_output=True, text=True,
                         timeout=120, check=False)
    assert bad.returncode == 2 and bad.stderr.strip() == f"qkv: error: {tmp_path / 'none.toml'}: file not found"
