"""The `qkv example` and `qkv explain` commands, run in-process (and once as the installed script)."""

from __future__ import annotations

import argparse
import json
import pathlib
import re
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
    assert code == 0 and out == "" and err == f"qkv: wrote {target}\n"      # the one line saying so, on stderr
    doc = json.loads(target.read_text(encoding="utf-8"))
    assert doc["trace"]["meta"]["query"] == 3 and doc["digits"] == 6
    code, out, _ = run(capsys, "example", "cross-attention", "--by-hand")
    assert code == 0 and "By hand versus exact" in out
    code, out, _ = run(capsys, "example", "multi-head", "--by-hand", "--lang", "ko")
    assert "z_final = [0.8742, 0.9230, 0.6962]" in out and "손 계산" in out


def test_figure(capsys, tmp_path):
    figure = tmp_path / "love.png"
    code, out, err = run(capsys, "example", "--figure", str(figure), "--out", str(tmp_path / "love.txt"))
    assert code == 0 and out == "" and err == f"qkv: wrote {tmp_path / 'love.txt'}\nqkv: wrote {figure}\n"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_explain_round_trip_equals_float64_numpy(capsys, tmp_path):
    target = tmp_path / "mine.json"
    code, _, err = run(capsys, "explain", str(ROOT / "examples" / "my-example.toml"), "--format", "json",
                       "--out", str(target))
    assert code == 0 and err == f"qkv: wrote {target}\n"
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


# ---------------------------------------------------------------- issue 9: one line, exit 2, nothing written
from qkv.commands import COMMANDS  # noqa: E402


def one_line(capsys, *argv) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 2, (argv, out, err)
    assert err.startswith("qkv: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("command", COMMANDS)
def test_argparse_errors_are_one_line_for_every_command(capsys, command):
    """Item 16: unknown options and missing arguments print no usage block."""
    err = one_line(capsys, command, "--no-such-option")
    assert "--no-such-option" in err or "required" in err


def test_argparse_type_and_top_level_errors_are_one_line(capsys):
    assert "unrecognized arguments: --bogus" in one_line(capsys, "--bogus")
    assert "COMMAND: 'nope' is not one of example, explain, " in one_line(capsys, "nope")
    assert "--values" in one_line(capsys, "embed", "x", "--values", "²")
    code, out, err = run(capsys, "--version")
    assert code == 0 and out.startswith("qkv ") and err == ""


@pytest.mark.parametrize("option", ["--out", "--figure"])
@pytest.mark.parametrize("where", ["directory", "proc", "sys", "empty", "read-only"])
def test_unusable_output_paths_are_one_line(capsys, tmp_path, option, where):
    """Item 12: checked before any work, for --out and --figure alike."""
    readonly = tmp_path / "ro.png"
    readonly.write_text("keep")
    readonly.chmod(0o444)
    path = {"directory": str(tmp_path), "proc": "/proc/self/status", "sys": "/sys/kernel/qkv.png", "empty": "",
            "read-only": str(readonly)}[where]
    err = one_line(capsys, "example", option, path)
    assert option in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ro.png"] and readonly.read_text() == "keep"


def test_same_file_for_out_and_figure_is_refused(capsys, tmp_path):
    err = one_line(capsys, "example", "--out", str(tmp_path / "a.png"), "--figure", str(tmp_path / "a.png"))
    assert "same file" in err and list(tmp_path.iterdir()) == []


def test_failing_out_leaves_no_figure(capsys, tmp_path, monkeypatch):
    """Item 17: the figure written before --out failed is not left behind (nor is an old one changed)."""
    import os

    figure, out = tmp_path / "fig.png", tmp_path / "out.txt"
    figure.write_bytes(b"old figure")
    real_replace = os.replace

    def replace(src, dst):
        if str(dst).endswith("out.txt"):
            raise OSError(28, "No space left on device", str(dst))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    err = one_line(capsys, "example", "--figure", str(figure), "--out", str(out))
    monkeypatch.undo()
    assert "No space left on device" in err
    assert figure.read_bytes() == b"old figure" and sorted(p.name for p in tmp_path.iterdir()) == ["fig.png"]


def test_out_through_a_symlink_and_into_a_fifo(capsys, tmp_path):
    """Item 1 end to end: the link stays a link, the pipe stays a pipe."""
    import os
    import stat
    import threading

    target = tmp_path / "real.txt"
    target.write_text("")
    target.chmod(0o640)
    (tmp_path / "link.txt").symlink_to("real.txt")
    code, _, _ = run(capsys, "example", "--out", str(tmp_path / "link.txt"))
    assert code == 0 and (tmp_path / "link.txt").is_symlink() and "z_love" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, _, _ = run(capsys, "example", "--out", str(fifo), "--format", "json")
    reader.join(timeout=30)
    assert code == 0 and json.loads(received[0])["format"] == "qkv-explanation"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("argv, field", [
    (["example", "--digits", "²"], "--digits"),
    (["example", "--digits", "١"], "--digits"),
    (["example", "--query", "²"], "--query"),
    (["example", "--query", "1_0"], "--query"),
])
def test_integers_are_parsed_strictly(capsys, argv, field):
    """Item 13: '²' passes str.isdigit and '١' int(); neither is a whole number here."""
    err = one_line(capsys, *argv)
    assert f"qkv: error: {field}: " in err


def test_query_index_still_works(capsys):
    code, out, _ = run(capsys, "example", "--query", " 3 ", "--digits", "+2")
    assert code == 0 and "learning" in out


def test_huge_values_and_saved_trace_without_trace(capsys, tmp_path):
    """Items 6 and 14 end to end: no NaN explained with exit 0, no KeyError."""
    huge = _spec(tmp_path, GOOD.replace("[[1.0, 0.0]", "[[1e300, 0.0]") + "w_v = [[1, 0], [0, 1]]\n", "huge.toml")
    assert "x: row 1, column 1 is 1e+300" in one_line(capsys, "explain", huge)
    bare = tmp_path / "bare.json"
    bare.write_text('{"format": "qkv-explanation"}')
    assert 'trace: a qkv-explanation needs its "trace" object' in one_line(capsys, "explain", str(bare))


def test_saved_trace_whose_steps_do_not_fit_is_one_line(capsys, tmp_path):
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps({"format": "qkv-trace", "meta": {"tokens": ["a"], "query": 0},
                                 "steps": [{"name": "weights", "values": [1.0], "shape": [1]}]}))
    assert "trace:" in one_line(capsys, "explain", str(saved), "--format", "html", "--out", str(tmp_path / "o.txt"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["saved.json"]


def test_fully_masked_row_is_not_said_to_add_up_to_1(capsys, tmp_path):
    """Item 18: a query that may see no key has all-zero weights, and the text says so."""
    spec = _spec(tmp_path, GOOD + 'w_v = [[1, 0], [0, 1]]\nmask = [[false, false], [true, true]]\nquery = "a"\n')
    code, out, _ = run(capsys, "explain", spec)
    assert code == 0
    assert "gets weight 0 everywhere" in flat(out)
    code, out, _ = run(capsys, "explain", spec, "--lang", "ko")
    assert "모든 가중치가 0" in flat(out)


# ---------------------------------------------------------------- issue 22: one CLI voice
@pytest.mark.parametrize("options", [["--lang", "ko"], ["--by-hand"], ["--digits", "2"], ["--format", "markdown"],
                                     ["--query", "learning", "--digits", "3"]])
def test_top_level_options_are_the_default_examples(capsys, options):
    """Bare `qkv --lang ko` was refused ("invalid choice: 'ko'"); it runs `qkv example self-attention --lang ko`."""
    code, out, err = run(capsys, *options)
    assert code == 0 and err == "", err
    assert (code, out) == run(capsys, "example", "self-attention", *options)[:2]


def test_misspelled_commands_and_choices_get_did_you_mean(capsys):
    assert one_line(capsys, "exmaple") == (
        "qkv: error: COMMAND: 'exmaple' is not one of " + ", ".join(COMMANDS) + "; did you mean 'example'?\n")
    assert "did you mean 'multi-head'?" in one_line(capsys, "example", "multihead")
    assert one_line(capsys, "example", "--format", "jsn").endswith(
        "--format: 'jsn' is not one of text, markdown, html, json; did you mean 'json'?\n")
    assert one_line(capsys, "--lang", "fr") == "qkv: error: --lang: 'fr' is not one of en, ko\n"   # nothing close
    assert "did you mean 'induction'?" in one_line(capsys, "heads", "x", "--sort", "inductoin")
    assert "did you mean 'ring:zigzag'?" in one_line(capsys, "ring", "--strategies", "ring:zigzga")
    assert "did you mean 'ko'?" in one_line(capsys, "translate", "I love you", "--to", "koo")


def _choice_cases():
    """Every option with a fixed set of values, read from the parser (argparse choices) or named here
    (checked by the command: --lang everywhere, --format, --to, --only, --strategies, NAME)."""
    from qkv.cli import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    needs = {"inspect": ["a cat"], "heads": ["a cat"], "embed": ["a cat"], "translate": ["I love you"],
             "explain": [str(ROOT / "examples" / "my-example.toml")],
             "generate": ["--model", "nowhere", "a cat"]}
    cases = []
    for name, sub in commands.items():
        for action in sub._actions:
            if action.choices is not None and action.option_strings:
                cases.append([name, *needs.get(name, []), action.option_strings[-1], "zzz"])
            if "--lang" in action.option_strings:
                cases.append([name, *needs.get(name, []), "--lang", "zzz"])
    cases += [["example", "zzz"], ["example", "--format", "zzz"], ["inspect", "a cat", "--format", "zzz"],
              ["translate", "I love you", "--to", "zzz"], ["masks", "--only", "zzz"], ["ring", "--strategies", "zzz"],
              ["zzz"], ["train", "zzz"]]
    return cases


def test_invalid_choices_are_worded_one_way_everywhere(capsys):
    """"expected one of en, ko", "choose ko, ja or both" and argparse's "invalid choice" were three wordings."""
    cases = _choice_cases()
    assert len(cases) >= 15
    for argv in cases:
        err = one_line(capsys, *argv)
        assert "'zzz' is not one of " in err and "invalid choice" not in err and "expected" not in err, (argv, err)


def test_counts_have_their_noun():
    """"layer(s)", "token(s)", "1 queries": a count now takes the singular for 1 (texts.py, views.js fill)."""
    import re

    from qkv.explain import texts

    for key, sentence in texts.EN.items():
        assert "(s)" not in sentence and "(es)" not in sentence, key
        assert not re.search(r"\{\w+\} (queries|tokens|layers|rows|texts|steps|scores)\b", sentence), key
    assert texts.text("en", "show.shape", heads=1, tq=1, tk=2) == ": 1 head, 1 query × 2 keys"
    assert texts.text("en", "show.shape", heads=2, tq=3, tk=1) == ": 2 heads, 3 queries × 1 key"
    assert texts.text("en", "cli.inspect.range", value="'9'", count=6, what="layers", last=5) == (
        "'9' is out of range: the model has 6 layers (0 … 5, or all)")
    assert texts.text("en", "generic.large", rows=2, cols=1) == "Showing the first 2 × 1 entry."
    views = (ROOT / "src" / "qkv" / "explain" / "views.js").read_text(encoding="utf-8")
    assert "String(values[k]) === \"1\" ? one : many" in views           # the browser reads the same form
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "src" / "qkv").rglob("*.py"))
    assert not re.search(r"\w\(s\)", source.replace("exp(s)", "").replace("softmax(s)", "").replace("str(s)", "")
                         .replace("float(s)", "").replace("Step.from_dict(s)", "")), "a '(s)' plural is left"


def test_written_files_are_named_on_stderr_and_stdout_stays_clean(capsys, tmp_path, monkeypatch):
    """example, masks, explain (and every command with --out/--figure/--json/--markdown) say 'qkv: wrote FILE'.

    What is asserted is the naming (`qkv.cli.say_written`) and a clean standard output, not the drawing:
    the example's figure is a one-axes stand-in written through the real `save_figure` → `write_figure`
    (test_figure and tests/test_viz.py draw the real one), and masks draws one 4×4 panel (--only), not
    eight 8×8 ones (tests/test_masks.py, test_viz_learner.py draw the full grid)."""
    from matplotlib.figure import Figure

    drawn = []

    def stand_in(trace, **_):
        drawn.append(trace)
        figure = Figure(figsize=(1, 1))
        figure.subplots().plot([0, 1])
        return figure

    monkeypatch.setattr("qkv.viz.figure_for", stand_in)
    for argv, files in ((["example", "--out", "a.md", "--format", "markdown"], ["a.md"]),
                        (["example", "--figure", "f.png"], ["f.png"]),
                        (["masks", "--length", "4", "--only", "causal", "--out", "m.txt", "--figure", "m.png"],
                         ["m.txt", "m.png"]),
                        (["explain", str(ROOT / "examples" / "my-example.toml"), "--out", "e.txt"], ["e.txt"])):
        paths = [str(tmp_path / f) for f in files]
        argv = [str(tmp_path / a) if a in files else a for a in argv]
        code, out, err = run(capsys, *argv)
        assert code == 0 and err == "".join(f"qkv: wrote {p}\n" for p in paths), (argv, err)
        assert (out == "") == ("--out" in argv), (argv, out[:200])
        assert all((tmp_path / f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for f in files if f.endswith(".png"))
    assert len(drawn) == 1                                                # the example's figure went through save_figure
    code, out, err = run(capsys, "example", "--out", "/dev/stdout")      # a stream, not a file: no line
    assert code == 0 and "wrote" not in err


def test_help_is_complete_with_defaults_and_named_metavars():
    """Every option's help states its default; every value has a named metavar (ring had PROCS, SEQ…);
    test-only options are hidden but still work (ring --fail-rank)."""
    from qkv.cli import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    problems = []
    for name, sub in commands.items():
        shown = sub.format_help()
        for action in sub._actions:
            if not action.option_strings or action.help == argparse.SUPPRESS or action.dest == "help":
                continue
            if action.nargs != 0 and action.metavar is None and action.choices is None:
                problems.append(f"{name} {action.option_strings[-1]}: metavar {action.dest.upper()}")
            if action.default not in (None, False, []) and "default" not in (action.help or "") and (
                    f"(default {action.default})" not in " ".join(shown.split())):
                problems.append(f"{name} {action.option_strings[-1]}: default {action.default!r} not shown")
    assert not problems, problems
    ring = " ".join(commands["ring"].format_help().split())
    assert "--fail-rank" not in ring and "--dtype float32|float64" in ring and "(default float32)" in ring
    assert "--procs P" in ring and "--seq T" in ring and "--timeout SECONDS" in ring
    assert parser.parse_args(["ring", "--fail-rank", "1"]).fail_rank == 1


def test_ring_without_torch_is_the_install_hint(capsys, monkeypatch):
    """`qkv ring` without torch exited 1 with a rank's ModuleNotFoundError; now the hint, exit 2, no rank started."""
    import qkv.distributed

    monkeypatch.setitem(sys.modules, "torch", None)                  # find_spec("torch") → None: not installed
    monkeypatch.setattr(qkv.distributed, "run_local", lambda *a, **k: pytest.fail("a rank was launched"))
    err = one_line(capsys, "ring", "--procs", "2", "--seq", "16")
    assert err == "qkv: error: qkv ring needs torch (its ranks run torch.distributed): pip install torch (in a checkout: make torch, the CPU build)\n"


def test_serve_hint_names_an_install_that_exists(capsys, monkeypatch):
    """The hint said `pip install 'qkv[serve]'`, but no package named qkv is on PyPI: it names the two packages
    pip can fetch, and what installs them in a checkout — in the table, and as `qkv serve` says it when
    starlette is missing (one line, exit 2, in the language asked for)."""
    from qkv.explain.texts import EN, KO

    assert EN["cli.serve.needs"].endswith("pip install starlette uvicorn (in a checkout: make demo)")
    assert KO["cli.serve.needs"].endswith("pip install 'starlette' 'uvicorn' (저장소 사본에서는 'make demo')")
    import qkv.commands.serve

    # import starlette → ImportError; its submodules too (a test run earlier in this process may have imported
    # starlette.applications, which `from starlette.applications import …` would then find without its parent)
    for name in ["starlette", *[name for name in sys.modules if name.startswith("starlette.")]]:
        monkeypatch.setitem(sys.modules, name, None)
    for name in [name for name in sys.modules if name == "qkv.serve" or name.startswith("qkv.serve.")]:
        monkeypatch.delitem(sys.modules, name)
    if "serve" in vars(qkv):            # `from .. import serve` reads the package's attribute before importing
        monkeypatch.delattr(qkv, "serve")
    # never a real server, whatever is imported: a server here would run until the test's timeout
    monkeypatch.setattr(qkv.commands.serve, "_serve", lambda *args: pytest.fail("qkv serve started: starlette was found"))
    err = one_line(capsys, "serve", "--port", "0")
    assert err.startswith("qkv: error: serve: qkv serve needs starlette and uvicorn (starlette")
    assert err.endswith(" is missing): pip install starlette uvicorn (in a checkout: make demo)\n"), err
    code, out, err = run(capsys, "serve", "--port", "0", "--lang", "ko")
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("qkv: 오류: serve: "), err
    assert "“starlette”와 “uvicorn”이 필요하다 (starlette" in err, err
    assert err.endswith("pip install 'starlette' 'uvicorn' (저장소 사본에서는 'make demo')\n"), err


def test_no_install_hint_names_a_package_pypi_lacks():
    """Every install hint in English and Korean names packages that exist (`qkv[...]` is not on PyPI) or a
    make target of the checkout."""
    from qkv.explain.texts import LANGS

    for lang, texts in LANGS.items():
        for key, text in texts.items():
            assert "qkv[" not in text, (lang, key, text)
            for target in re.findall(r"\bmake (\w+)", text):
                assert re.search(rf"^{target}:", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M), (key, target)


def test_documented_submodules_import_lazily():
    """`import qkv; qkv.masks` raised AttributeError (also analysis, torch, distributed, translator, serve)."""
    code = ("import sys, qkv\n"
            "names = ['masks', 'analysis', 'torch', 'distributed', 'translator', 'serve', 'models', 'viz']\n"
            "assert not any(f'qkv.{n}' in sys.modules for n in names), [n for n in names if f'qkv.{n}' in sys.modules]\n"
            "for n in names: assert getattr(qkv, n).__name__ == f'qkv.{n}'\n"
            "assert callable(qkv.masks.causal) and 'masks' in dir(qkv)\n"
            "try:\n    qkv.nonexistent\nexcept AttributeError as e:\n    print('refused', e)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**__import__("os").environ, "PYTHONPATH": str(ROOT / "src")})
    assert result.returncode == 0, result.stderr
    assert result.stdout == "refused module 'qkv' has no attribute 'nonexistent'\n"
