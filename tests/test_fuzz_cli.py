"""Fuzz the command line: every command, malformed options and files (issue 9).

A seeded generator builds a few hundred command lines that must all be refused: for every command
found in `qkv.commands.COMMANDS` (the list is read, not copied), argparse-level mistakes built from
the parser itself (unknown options, bad typed values, invalid choices, a missing value, unusable
output paths); for example / explain / inspect / embed also malformed files and values (example
files with junk in each field, broken TOML/JSON, saved traces without their parts, broken model
directories). Each case runs in-process (`qkv.cli.main`) and must give: exit status 2, exactly one
line on standard error starting ``qkv: error:``, nothing on standard output, no traceback, no
RuntimeWarning, and no file created or changed in the working directory.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import warnings
from pathlib import Path

import pytest

from qkv.cli import OUTPUT_OPTIONS, build_parser, main
from qkv.commands import COMMANDS

SEED = 9
GOOD_TOML = ('tokens = ["a", "b"]\nx = [[1.0, 0.5], [0.0, 1.0]]\nw_q = [[1, 0], [0, 1]]\nw_k = [[1, 0], [0, 1]]\n'
             'w_v = [[1, 0], [0, 1]]\n')
GOOD = {"tokens": ["a", "b"], "x": [[1.0, 0.5], [0.0, 1.0]], "w_q": [[1, 0], [0, 1]], "w_k": [[1, 0], [0, 1]],
        "w_v": [[1, 0], [0, 1]]}
# Values that are wrong for every matrix field (each must be refused, never explained).
BAD_MATRICES = ["²", 5, True, {}, [], [[]], [[1, 0], [0]], [["a", 0], [0, 1]], [[1e300, 0], [0, 1]],
                [[10**400, 0], [0, 1]], [[float("nan"), 0], [0, 1]], [[[1.0]]], "missing.npy", "", {"file": 3},
                {"file": "w.npz", "bogus": 1}, "/proc/self/status", ".", [[1, 0], [0, 1], [1, 1]],
                [[1, 0, 0]]]
BAD_FIELDS = {
    "tokens": [5, [1, 2], ["a"], ["a", "b", "c"], "ab", [["a"], ["b"]], None],
    "query": ["²", "١", 99, -1, 1.5, [], True, "zz", "1_0"],
    "heads": [0, -1, 3, "2", 1.5, True, 10**400],
    "mask": ["bidirectional", "causal ", [[1, 0]], [[2, 0], [0, 1]], [["yes", 0], [0, 1]], 7],
    "residual": ["yes", 1, True],
    "example": [5, [], {}], "title": [5, ["t"]], "seed": [1.0], "digits": [{"x": 13}, 3, {"x": "²"}],
    "notes": ["note", [1], [{"step": 1}]], "kind": ["multi-head", 5], "b_q": [[1.0], "x", [1.0, 2.0, 3.0]],
    "memory_tokens": [["m"]], "zz_unknown": [1],
}
BAD_INTS = ["²", "١", "１", "1_0", "1e3", "", "x", "0x1f", "9" * 40, "--"]
BAD_FLOATS = ["x", "", "1,5", "--", "1..0"]
RUNS = {"example", "explain", "inspect", "embed"}      # commands given malformed files and values too


# ------------------------------------------------------------------ the parser, read
def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _placeholders(sub: argparse.ArgumentParser) -> list[str]:
    """Values for the required positionals (a valid choice where there are choices)."""
    values = []
    for action in sub._actions:
        if action.option_strings or isinstance(action, argparse._SubParsersAction):
            continue
        if action.nargs in ("?", "*"):
            continue
        values.append(str(sorted(action.choices)[0]) if action.choices else "x")
    return values


def _strict(action: argparse.Action) -> bool:
    return getattr(action.type, "__name__", "") == "integer"     # qkv._io.int_option


def generic_cases(rng: random.Random, command: str, sub: argparse.ArgumentParser, bad_paths: list[str]) -> list[list[str]]:
    """argparse-level mistakes for one command, each sure to be refused before the command runs."""
    base = [command] + _placeholders(sub)
    options = [a for a in sub._actions if a.option_strings and a.dest != "help"]
    cases = [base + [f"--zz-{rng.randrange(10**6)}"], base[:1] + ["--zz-bogus"] + base[1:], [command, "-"] + ["--zz"]]
    for action in options:
        flag = max(action.option_strings, key=len)
        takes_value = action.nargs is None and not isinstance(action, (argparse._StoreTrueAction,
                                                                        argparse._StoreFalseAction,
                                                                        argparse._CountAction, argparse._VersionAction))
        if not takes_value:
            cases.append(base + [f"{flag}=x"])                       # a flag given a value
            continue
        cases.append(base + [flag])                                   # the value is missing
        if action.choices:
            cases.append(base + [flag, "zz-not-a-choice"])
        if action.type is int:
            cases.append(base + [flag, rng.choice(["²", "x", "1e3", "", "0x1f", "1.5"])])
        elif _strict(action):
            cases.append(base + [flag, rng.choice(BAD_INTS)])
        elif action.type is float:
            cases.append(base + [flag, rng.choice(BAD_FLOATS)])
        if action.dest in OUTPUT_OPTIONS:
            for path in rng.sample(bad_paths, 3):
                cases.append(base + [flag, path])
    return cases


# ------------------------------------------------------------------ malformed files and values
def _write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def example_files(rng: random.Random, folder: Path) -> list[str]:
    """Example files that must each be refused (one bad field, or broken syntax, or a bad saved trace)."""
    files = []
    for i, (field, values) in enumerate(BAD_FIELDS.items()):
        for j, value in enumerate(values):
            doc = dict(GOOD)
            if value is None:
                doc.pop(field)
            else:
                doc[field] = value
            if field == "residual":
                doc.pop("w_o", None)
            files.append(_write(folder, f"f{i}-{j}.json", json.dumps(doc)))
    for i, value in enumerate(BAD_MATRICES):
        field = rng.choice(["x", "w_q", "w_k", "w_v", "w_o"])
        doc = dict(GOOD, **{field: value})
        files.append(_write(folder, f"m{i}.json", json.dumps(doc)))
    for i, name in enumerate(["x", "w_q", "w_k", "w_v", "tokens"]):
        files.append(_write(folder, f"missing{i}.json", json.dumps({k: v for k, v in GOOD.items() if k != name})))
    deep = "[" * 5000 + "1" + "]" * 5000
    broken = [GOOD_TOML + "x = 1\n", GOOD_TOML + "w_o = [[1, 0]\n", GOOD_TOML + "= =\n", "w_q = " + deep,
              GOOD_TOML + "w_o = [[1" + "0" * 5000 + "]]\n", GOOD_TOML.replace("1.0", "1e400", 1), ""]
    files += [_write(folder, f"broken{i}.toml", text) for i, text in enumerate(broken)]
    good_json = json.dumps(GOOD)
    for i, text in enumerate([good_json[:-1], good_json + "}", "[1, 2]", "5", '"x"', "null", "{" + deep[:3000],
                              '{"x": 1' + "0" * 5000 + "}", "\ufeff" + good_json]):
        files.append(_write(folder, f"brokenjson{i}.json", text))
    for i, doc in enumerate([{"format": "qkv-explanation"}, {"format": "qkv-explanation", "trace": []},
                             {"format": "qkv-trace", "steps": 5},
                             {"format": "qkv-trace", "steps": [{"name": "x", "values": [1], "shape": [2]}]},
                             {"format": "qkv-trace", "steps": [{"name": "x", "values": ["nan"], "shape": [1]}]},
                             {"format": "qkv-trace", "steps": [{"values": [1], "shape": [1]}]},
                             {"format": "qkv-trace", "meta": {"tokens": 5}, "steps": []},
                             {"format": "qkv-trace", "meta": [], "steps": []}]):
        files.append(_write(folder, f"trace{i}.json", json.dumps(doc)))
    (folder / "dir.toml").mkdir()
    os.mkfifo(folder / "pipe.npy")
    files += [str(folder / "dir.toml"), str(folder / "none.toml"), _write(folder, "notes.txt", GOOD_TOML),
              _write(folder, "latin1.toml", "") if False else _binary(folder, "latin1.toml", b"title = '\xe9'\n"),
              _write(folder, "pipe.toml", GOOD_TOML.replace("w_v = [[1, 0], [0, 1]]", 'w_v = "pipe.npy"'))]
    big = folder / "big.json"
    with open(big, "wb") as handle:
        handle.truncate(257 * 2**20)                   # sparse; refused by its size before it is read
    files.append(str(big))
    return files


def _binary(folder: Path, name: str, data: bytes) -> str:
    (folder / name).write_bytes(data)
    return str(folder / name)


def model_dirs(folder: Path) -> list[str]:
    """Model directories that must be refused: broken config.json (deep, huge ints, not JSON), missing files."""
    dirs = []
    for i, config in enumerate(['{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
                                '{"hidden_size": 1' + "0" * 5000 + "}", "{", "[]", '{"model_type": "no-such"}']):
        directory = folder / f"model{i}"
        directory.mkdir()
        (directory / "config.json").write_text(config, encoding="utf-8")
        (directory / "model.safetensors").write_bytes(b"")
        (directory / "tokenizer.json").write_text("{}", encoding="utf-8")
        dirs.append(str(directory))
    (folder / "model-empty").mkdir()
    return dirs + [str(folder / "model-empty"), str(folder / "no-such-model")]


def semantic_cases(rng: random.Random, folder: Path, bad_paths: list[str]) -> list[list[str]]:
    files = example_files(rng, folder)
    good = _write(folder, "good.toml", GOOD_TOML)
    models = model_dirs(folder)
    out = str(folder / "out.txt")
    cases = [["explain", f, "--out", out] for f in files]
    cases += [["explain", good, "--digits", v] for v in ["13", "-1", *BAD_INTS]]
    cases += [["explain", good, "--query", v] for v in ["²", "١", "2", "-1", "zz", "", "9" * 30]]
    cases += [["example", "--query", v] for v in ["²", "١", "0", "5", "zz", "1_0"]]    # rows 1–4, as shown
    cases += [["example", "--digits", v] for v in ["13", "-1", *BAD_INTS]]
    cases += [["example", name] for name in ["nope", "", "SELF-ATTENTION", "../x"]]
    cases += [["example", "--lang", "fr"], ["example", "--format", "pdf"], ["example", "--by-hand", "--format", "html"],
              ["example", "--figure", str(folder / "f.gif")], ["example", "--figure", str(folder / "noext")],
              ["example", "group-meeting", "--query", "a"], ["example", "multi-head", "--query", "I"],
              ["explain", str(folder / "trace0.json"), "--by-hand"]]
    cases += [["example", "--out", p] for p in bad_paths] + [["example", "--figure", p] for p in bad_paths]
    cases += [["example", "--out", p, "--figure", str(folder / "ok.png")] for p in rng.sample(bad_paths, 3)]
    text = "The cat sat."
    cases += [["inspect", text, "--layer", v] for v in ["6", "-1", "²", "١", "1_0", "x", ""]]
    cases += [["inspect", text, "--layer", "0", "--head", v] for v in ["12", "-1", "²", "x"]]
    cases += [["inspect", text, "--layer", "0", "--head", "0", "--query", v] for v in ["²", "١", "99", "zebra", ""]]
    cases += [["inspect", text, "--digits", v] for v in ["13", "-1", "²"]] + [["inspect", text, "--top", "0"]]
    cases += [["inspect", text, "--format", "pdf"], ["inspect", text, "--lang", "fr"],
              ["inspect", text, "--figure", str(folder / "g.gif")]]
    cases += [["inspect", text, "--model", m] for m in models] + [["embed", "x", "--model", m] for m in models]
    cases += [["inspect", text, "--out", p] for p in rng.sample(bad_paths, 3)]
    cases += [["embed", "x", "--values", v] for v in ["-1", "²", "x"]]
    cases += [["embed", "x", "--batch-size", v] for v in ["0", "-3", "١"]]
    cases += [["embed", "x", "--out", p] for p in rng.sample(bad_paths, 3)]
    return cases


def bad_output_paths(folder: Path) -> list[str]:
    readonly = folder / "readonly.txt"
    readonly.write_text("keep")
    readonly.chmod(0o444)
    (folder / "a-dir").mkdir()
    (folder / "to-proc").symlink_to("/proc/self/status")
    return [str(folder / "a-dir"), "", " ", "/proc/self/status", "/sys/kernel/qkv-out.png", str(folder / "to-proc"),
            str(readonly), str(folder / "missing" / "x.png"), str(readonly / "x.png")]


# ------------------------------------------------------------------ the test
def all_cases(folder: Path) -> list[list[str]]:
    rng = random.Random(SEED)
    bad_paths = bad_output_paths(folder)
    cases = []
    for command, sub in subparsers().items():
        cases += generic_cases(rng, command, sub, bad_paths)
    cases += semantic_cases(rng, folder, bad_paths)
    return cases


def snapshot(folder: Path) -> dict[str, tuple]:
    return {str(p.relative_to(folder)): (p.lstat().st_mode, p.lstat().st_size, p.lstat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}


@pytest.fixture
def cached_models(monkeypatch):
    """Load each model once for the whole run (inspect and embed share `load_model`)."""
    import qkv.commands.embed as embed
    import qkv.commands.inspect as inspect

    cached = functools.lru_cache(maxsize=4)(inspect.load_model)
    monkeypatch.setattr(inspect, "load_model", cached)
    monkeypatch.setattr(embed, "load_model", cached)


def test_every_command_refuses_malformed_input_in_one_line(tmp_path, monkeypatch, capsys, cached_models):
    assert set(RUNS) <= set(COMMANDS) and set(subparsers()) == set(COMMANDS)
    monkeypatch.chdir(tmp_path)
    cases = all_cases(tmp_path)
    assert len(cases) >= 300, len(cases)
    assert {case[0] for case in cases} == set(COMMANDS)
    before = snapshot(tmp_path)
    failures = []
    for argv in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            try:
                code = main(argv)
            except BaseException as exc:                    # noqa: BLE001 — a traceback is itself the failure
                code = f"raised {type(exc).__name__}: {exc}"
        out, err = capsys.readouterr()
        lines = err.splitlines()
        ok = (code == 2 and out == "" and len(lines) == 1 and err.endswith("\n")
              and lines[0].startswith("qkv: error: ") and "Traceback" not in err)
        if not ok:
            failures.append(f"{argv!r:.200}: exit {code!r:.200}, stdout {out[:80]!r}, stderr {err[:300]!r}")
    assert not failures, f"{len(failures)} of {len(cases)} cases:\n" + "\n".join(failures[:40])
    assert snapshot(tmp_path) == before, "a refused command created or changed a file"


def _mutated_traces(rng: random.Random, count: int) -> list[dict]:
    """Saved traces of the shipped examples with steps dropped, reshaped, renamed or shuffled and meta junk."""
    import copy

    import numpy as np

    from qkv.examples import names, run

    saved = [json.loads(run(name).to_json()) for name in names()]
    docs = []
    for _ in range(count):
        doc = copy.deepcopy(rng.choice(saved))
        steps = doc["steps"]
        for _ in range(rng.randrange(1, 4)):
            change = rng.randrange(7)
            step = rng.choice(steps) if steps else None
            if change == 0 and steps:
                steps.pop(rng.randrange(len(steps)))
            elif change == 1 and step:
                step["shape"] = [rng.randrange(1, 4) for _ in range(rng.randrange(1, 4))]
                step["values"] = np.ones(step["shape"]).tolist()
            elif change == 2:
                doc["meta"][rng.choice(sorted(doc["meta"]) or ["x"])] = rng.choice([5, "x", [], {}, None, -1, 99, True])
            elif change == 3:
                doc["meta"]["tokens"] = rng.choice([[], ["a"], ["a"] * 50])
            elif change == 4:
                doc["meta"]["query"] = rng.choice([0, 3, 99, -1])
            elif change == 5 and step:
                step["name"] = rng.choice(["weights", "out", "x", "scores", "mask", "zz", "y", "k_heads"])
            else:
                rng.shuffle(steps)
        docs.append(doc)
    return docs


def test_saved_traces_explain_or_refuse_in_one_line(tmp_path, capsys):
    """A damaged saved trace either explains (exit 0) or is refused in one line with nothing written."""
    rng = random.Random(SEED)
    failures, refused = [], 0
    for i, doc in enumerate(_mutated_traces(rng, 150)):
        path = tmp_path / f"saved{i}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        out = tmp_path / "out.txt"
        fmt = rng.choice(["text", "json", "markdown", "html"])
        try:
            code = main(["explain", str(path), "--format", fmt, "--out", str(out)])
        except BaseException as exc:                        # noqa: BLE001 — a traceback is the failure
            code = f"raised {type(exc).__name__}: {exc}"
        _, err = capsys.readouterr()
        if code == 2:
            refused += 1
            if err.count("\n") != 1 or not err.startswith("qkv: error: ") or out.exists():
                failures.append(f"{fmt} {path.name}: {err[:200]!r}")
        elif code != 0:
            failures.append(f"{fmt} {path.name}: exit {code!r:.300}")
        out.unlink(missing_ok=True)
    assert not failures, "\n".join(failures[:20])
    assert 0 < refused < 150                                 # both outcomes are exercised


# ------------------------------------------------------------------ issue 22: the tracebacks that remained
# Each class below raised a traceback (or did the wrong thing) before; each case must now be one line.
NON_UTF8 = ["ab\udcffc", "\udcc3", "x\udc80\udc80y", "caf\udce9"]   # how Python hands over argv bytes that are not UTF-8


def _one_line(code, out: str, err: str) -> str | None:
    """None if (code, out, err) is a clean refusal; else what was wrong."""
    lines = err.splitlines()
    if code == 2 and out == "" and len(lines) == 1 and lines[0].startswith("qkv: error: ") and "Traceback" not in err:
        return None
    return f"exit {code!r:.200}, stdout {out[:80]!r}, stderr {err[:300]!r}"


@pytest.fixture(scope="module")
def decoder():
    from model_fixtures import built

    return str(built("gpt2"))


def test_text_that_is_not_utf8_is_one_line(capsys, monkeypatch, decoder):
    """Arguments: the tokenizer raised TypeError on surrogate-escaped argv (inspect, heads, generate,
    embed, translate); standard input to `embed -` likewise. Paths stay free: any bytes name a file."""
    import io

    failures = []
    for text in NON_UTF8:
        for argv in (["inspect", text], ["heads", text], ["embed", text], ["embed", "fine", text],
                     ["generate", "--model", decoder, text], ["translate", text], ["inspect", "a cat", "--query", text],
                     ["example", "--query", text], ["masks", "--only", text]):
            code = main(argv)
            out, err = capsys.readouterr()
            problem = _one_line(code, out, err) or (None if "not UTF-8 text" in err else f"worded {err!r}")
            if problem:
                failures.append(f"{argv!r}: {problem}")
        for data in (text.encode("utf-8", "surrogateescape") + b"\n", b"ok\n\xff\xfe\n"):
            monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
            code = main(["embed", "-"])
            out, err = capsys.readouterr()
            problem = _one_line(code, out, err) or (None if "standard input: not UTF-8" in err else f"worded {err!r}")
            if problem:
                failures.append(f"stdin {data!r}: {problem}")
    assert not failures, "\n".join(failures)


def _qkv(*argv: str, env: dict | None = None, **kwargs):
    import subprocess
    import sys

    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src"), **(env or {})}
    return subprocess.run([sys.executable, "-m", "qkv", *argv], capture_output=kwargs.pop("capture", True), text=True,
                          env=environment, timeout=120, **kwargs)


@pytest.mark.parametrize("argv", [["example"], ["example", "--lang", "ko"], ["masks", "--length", "8"],
                                  ["example", "--format", "json"], ["--version"], ["doctor"]])
def test_standard_output_full_closed_or_ascii_is_one_line(argv):
    """`> /dev/full` (OSError at the flush), `>&-` (sys.stdout is None), PYTHONIOENCODING=ascii
    (UnicodeEncodeError) were tracebacks: now one line, exit 2, and nothing more at exit."""
    import subprocess

    with open("/dev/full", "w") as full:
        result = subprocess.run(_qkv_command(argv), stdout=full, stderr=subprocess.PIPE, text=True, env=_env(),
                                timeout=120)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    korean = "ko" in argv                        # --lang ko: the same line in Korean
    assert result.stderr.startswith("qkv: 오류: 표준 출력에 쓸 수 없다 (" if korean else
                                    "qkv: error: cannot write to standard output (No space left on device)"), result.stderr
    closed = subprocess.run(_qkv_command(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env(),
                            timeout=120, pass_fds=(), preexec_fn=lambda: os.close(1))
    assert closed.returncode == 2 and closed.stderr.count("\n") == 1, closed.stderr
    assert closed.stderr.startswith("qkv: 오류: 표준 출력이 닫혀 있어" if korean else "qkv: error: standard output is closed")
    ascii_run = subprocess.run(_qkv_command(argv), capture_output=True, text=True, timeout=120,
                               env=_env(PYTHONIOENCODING="ascii"))
    if ascii_run.returncode == 0:                  # nothing outside ASCII to print: the output is whole
        assert ascii_run.stdout.isascii() and ascii_run.stdout and "Traceback" not in ascii_run.stderr
    else:
        assert ascii_run.returncode == 2 and ascii_run.stderr.count("\n") == 1, ascii_run.stderr
        # (in English under --lang ko too: an ASCII standard error cannot show the Korean line)
        assert "uses the encoding ascii, which cannot write" in ascii_run.stderr and "PYTHONIOENCODING=utf-8" in ascii_run.stderr


def _qkv_command(argv):
    import sys

    return [sys.executable, "-m", "qkv", *argv]


def _env(**extra):
    return {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src"), **extra}


def test_a_closed_pipe_is_not_an_error():
    """`qkv example | head -1`: the reader leaving is no error (exit 0, nothing on standard error)."""
    import subprocess

    producer = subprocess.Popen(_qkv_command(["example", "--format", "json"]), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=_env())
    first = producer.stdout.read(10)
    producer.stdout.close()
    err = producer.stderr.read()
    assert producer.wait(timeout=120) == 0 and first == b'{\n  "forma'[:10] or first
    assert b"Traceback" not in err and b"Exception ignored" not in err, err


def test_embed_refuses_a_decoder_in_one_line(capsys, decoder):
    """`embed --model` on a GPT-2 directory raised AttributeError (no `encode`)."""
    code = main(["embed", "hello there", "--model", decoder])
    out, err = capsys.readouterr()
    assert _one_line(code, out, err) is None, err
    assert "--model: " in err and "causal language model; embed needs a sentence encoder" in err
    code = main(["embed", "hello there", "--model", decoder, "--lang", "ko"])
    assert "인과 언어 모델" in capsys.readouterr().err


def test_generate_temperature_is_compared_as_a_number(capsys, decoder):
    """`--temperature 1` was refused without --sample while `1.0` passed (a string comparison)."""
    outputs = {}
    for value in ("1", "1.0", "1e0", "+1.000"):
        code = main(["generate", "--model", decoder, "the cat", "-n", "3", "--temperature", value, "--json"])
        out, err = capsys.readouterr()
        assert code == 0, (value, err)
        outputs[value] = json.loads(out)["ids"]
    assert len({tuple(ids) for ids in outputs.values()}) == 1            # greedy: the same tokens each time
    for value in ("2", "0.5", "1.0000001"):
        code = main(["generate", "--model", decoder, "the cat", "--temperature", value])
        out, err = capsys.readouterr()
        assert _one_line(code, out, err) is None and "--sample" in err, (value, err)


def test_read_only_directories_are_refused_even_for_root(tmp_path, capsys):
    """As root, --out into a mode-555 directory wrote, though read-only files are refused "even for root"."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        for argv in (["example", "--out", str(folder / "x.txt")], ["example", "--figure", str(folder / "x.png")],
                     ["masks", "--out", str(folder / "m.txt")], ["explain", "/nonexistent.toml", "--out",
                                                                  str(folder / "e.txt")]):
            code = main(argv)
            out, err = capsys.readouterr()
            assert _one_line(code, out, err) is None, (argv, err)
            assert "permission denied" in err or "does not exist" in err, err
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)


class _Terminal(__import__("io").StringIO):
    def isatty(self) -> bool:
        return True


def test_control_characters_are_escaped_on_a_terminal(tmp_path, monkeypatch):
    """Tokens and titles with terminal escape sequences (set the window title, clear the screen, move the
    cursor, reorder text) were printed raw; on a terminal they are now shown as escapes, colours kept.
    Piped, the output is the data itself (a JSON or text consumer gets what the file said)."""
    import re

    hostile = ["\x1b]0;owned\x07", "\x1b[2J", "a\rb", "\u202egnp", "\x9b31m", "x\x00y"]
    example = tmp_path / "hostile.toml"
    # JSON's \u escapes are TOML's too
    example.write_text(f"title = {json.dumps('T' + hostile[1] + 'itle' + chr(7))}\ntokens = {json.dumps(hostile[:2])}\n"
                       "x = [[1.0, 0.5], [0.0, 1.0]]\nw_q = [[1, 0], [0, 1]]\nw_k = [[1, 0], [0, 1]]\n"
                       "w_v = [[1, 0], [0, 1]]\n", encoding="utf-8")
    terminal = _Terminal()
    monkeypatch.setattr("sys.stdout", terminal)
    assert main(["explain", str(example)]) == 0
    shown = terminal.getvalue()
    leftover = re.sub(r"\x1b\[[0-9;]*m", "", shown)                 # colour sequences may stay
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", leftover), repr(leftover[:400])
    assert "\\x1b]0;owned" in shown and "\\x1b[2J" in shown      # shown, not acted on
    from qkv.frontdoor import printable

    for token in hostile:                                           # the one function, on each class
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", printable(token)), token
    assert printable("\x1b[1mbold\x1b[0m\tok\n") == "\x1b[1mbold\x1b[0m\tok\n"
    # a progress bar on a terminal (qkv train, qkv bench: rich) keeps working: what rich writes passes whole
    import time

    from rich.console import Console
    from rich.progress import Progress

    live = _Terminal()
    with Progress(console=Console(file=live, force_terminal=True, width=60)) as progress:
        task = progress.add_task("train", total=2)
        for _ in range(2):
            time.sleep(0.1)
            progress.update(task, advance=1)
    assert printable(live.getvalue()) == live.getvalue()
    assert printable("\r\x1b[1A\x1b[2K") == "\r\x1b[1A\x1b[2K" and printable("\rspoof") == "\\x0dspoof"
    assert printable("\x1b[1A\x1b[3Hx") == "\\x1b[1A\\x1b[3Hx"                  # cursor moves alone: escaped
    piped = __import__("io").StringIO()
    monkeypatch.setattr("sys.stdout", piped)
    assert main(["explain", str(example), "--format", "json"]) == 0
    assert json.loads(piped.getvalue())["trace"]["meta"]["tokens"][:2] == hostile[:2]
