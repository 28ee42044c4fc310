"""`--lang ko` leaves no English in what qkv says — checked by class, so that new English fails here.

Four nets, each generated from the code rather than from a list of known strings:

1. argparse: for every command, every option that takes a value is given none, every number-typed
   option is given "x", an unknown option, an ambiguous prefix, a missing positional — each run under
   `--lang ko` must print one Korean line.
2. The sentence tables: every Korean text of the messages (``error.*``, ``cli.*``, ``argparse.*``,
   ``doctor.*``, ``serve.error.*``), filled with placeholder values, has no English word outside the
   allowlist (`foreign_words` of test_cli_korean, plus code shown as typed: identifiers, file names,
   quoted values, commands).
3. The raise sites: no `InputError("…")` with English words of its own is left in the modules that
   read models, example files, saved traces, files and the command line (src/qkv/models/*.py,
   spec.py, _io.py, cli.py): each error names a text key (`InputError.keyed`, ``key=``, or a
   helper taking a key), and every key they name exists in both tables.
4. Real runs: qkv doctor (every branch of its report), qkv --version, model directories qkv refuses
   (mamba, a missing model_type, Falcon, a bad field, missing files), bad example files, bad output
   paths — each under --lang ko, checked by `foreign_words`.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from pathlib import Path

import pytest

from qkv.cli import build_parser, main
from qkv.explain import texts

from test_cli_korean import ALLOWED, HANGUL, foreign_words, words_of

SRC = Path(__file__).resolve().parents[1] / "src" / "qkv"

# Words the messages show as typed (not translated), and why.
SHOWN_AS_TYPED = {
    # names of programs, libraries, formats, file kinds and model families
    "Python", "NumPy", "OpenBLAS", "BLAS", "sgemm", "torch", "SDPA", "AVX", "AVX2", "FMA", "Debian",
    "GEMM", "flex",       # bench's column headings ×GEMM and ×flex (ratios, written as ×torch is)
    "JSON", "TOML", "HTML", "UTF", "NaN", "NUL", "FIFO", "Hugging", "Face", "BERT", "GPT", "Gemma", "Falcon", "ALiBi",
    "Phi", "OPT", "LayerNorm", "LayerNorms", "Llama", "transformers", "safetensors", "yarn", "llama3", "longrope",
    "Transformer", "Pooling", "Normalize", "cls", "max", "mean", "SEP", "MLP", "RMS", "PYTHONIOENCODING",
    "BertLMHeadModel", "Gemma3ForCausalLM", "W_O", "Concat", "heads",
    "LANG",               # the locale variables --lang falls back to (LC_ALL, LC_MESSAGES are identifiers)
    # the commands a message tells the reader to type, and the commands and models it names
    "pip", "install", "make", "test", "demo", "ulimit", "starlette", "uvicorn", "qkv", "help", "embed", "generate", "bert", "minilm", "pickle",
    # fields, arguments and types named as the code and config.json spell them
    "dtype", "id", "logits", "temperature", "truncate", "float", "API", "True",
    "eager", "sdpa",      # transformers' attn_implementation values
    # JSON/TOML values and the example format's words, shown as a file spells them
    "true", "false", "null", "None", "inf", "causal", "attention", "shown", "exact", "any", "by",
    "hand", "file", "key", "transpose", "step", "text", "value", "trace", "steps", "meta", "title", "query",
    "tokens", "memory", "residual", "npy", "npz", "toml", "json", "proc", "sys", "markdown",
    # (no metavariables: under --lang ko the usage line's placeholders are Korean, `qkv.explain.texts.metavar`)
}
# English sentences a message gives as examples of what to type (the translator reads English), and "lot",
# the token the group-meeting post follows
EXAMPLE_WORDS = {"The", "the", "cat", "sat", "on", "mat", "love", "you", "my", "your", "lot"}
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.\-/][A-Za-z0-9_]+)+|[A-Za-z]*_[A-Za-z0-9_]*|[A-Za-z]+[0-9][A-Za-z0-9]*")
QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'|“[^”]*”|「[^」]*」|\{[^{}]*=[^{}]*\}")   # 「…」: a post's title, as written


def korean_only(output: str, allowed=()) -> list[str]:
    """The English words left in ``output``: `foreign_words` after code shown as typed is set aside
    (identifiers with _ . - / or digits: model_type, config.json, qkv.kernels._fused; quoted values)."""
    stripped = IDENTIFIER.sub(" ", QUOTED.sub(" ", output))
    return foreign_words(stripped, SHOWN_AS_TYPED | set(allowed))


def run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def parser_words() -> set[str]:
    """The metavariables, destinations and choices of every option (the usage line's own words), as the Korean
    parser has them: its placeholders are Korean (파일, 키=값), so an English one left in a message fails."""
    parsers = [build_parser("ko"), *_commands("ko").values()]
    return {w for p in parsers for a in p._actions
            for w in words_of(a.metavar or "", a.dest, *(a.choices or ()))}


def assert_one_korean_error(capsys, argv, allowed=()) -> None:
    allowed = set(allowed) | PARSER_WORDS
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1, (argv, code, out, err)
    assert err.startswith("qkv: 오류: ") and HANGUL.search(err[len("qkv: 오류: "):]), (argv, err)
    assert korean_only(err, words_of(*argv, *allowed)) == [], (argv, err)


# ------------------------------------------------------------------ 1. argparse, every option of every command
def _commands(lang: str = "en"):
    return build_parser(lang)._subparsers._group_actions[0].choices


def argparse_cases():
    """(id, argv) for every class of argparse complaint, generated from the parsers."""
    cases = []
    for name, parser in _commands().items():
        options = [a for a in parser._actions if a.option_strings and a.help != "==SUPPRESS=="]
        longs = [s for a in options for s in a.option_strings if s.startswith("--")]
        for action in options:
            option = action.option_strings[-1]
            if action.nargs != 0 and option != "--lang":
                cases.append((f"{name}-{option}-missing", [name, "--lang", "ko", option]))
            if getattr(action.type, "__name__", "") in ("integer", "int", "float"):
                cases.append((f"{name}-{option}-x", [name, "--lang", "ko", option, "x"]))
        cases.append((f"{name}-unknown", [name, "--lang", "ko", "--zzz-nope"]))
        for a, b in itertools.combinations(sorted(longs), 2):       # a prefix two options share: ambiguous
            prefix = next((a[:n] for n in range(3, min(len(a), len(b))) if a[:n] == b[:n] and a[:n + 1] != b[:n + 1]), None)
            if prefix and prefix not in longs and sum(s.startswith(prefix) for s in longs) >= 2:
                cases.append((f"{name}-ambiguous-{prefix}", [name, "--lang", "ko", prefix, "1"]))
                break
        if any(not a.option_strings and a.nargs is None and a.default is None and a.dest != "help"
               for a in parser._actions):
            cases.append((f"{name}-positional", [name, "--lang", "ko"]))
    return cases


ARGPARSE_CASES = argparse_cases()
PARSER_WORDS = parser_words()


def test_the_argparse_cases_cover_every_class():
    kinds = {case_id.rsplit("-", 1)[-1] for case_id, _ in ARGPARSE_CASES}
    assert {"missing", "x", "unknown", "positional"} <= kinds, kinds
    assert any("-ambiguous-" in case_id for case_id, _ in ARGPARSE_CASES)
    assert len(ARGPARSE_CASES) > 80, len(ARGPARSE_CASES)


@pytest.mark.parametrize("argv", [argv for _, argv in ARGPARSE_CASES], ids=[i for i, _ in ARGPARSE_CASES])
def test_argparse_complaints_are_korean(capsys, argv):
    assert_one_korean_error(capsys, argv)


def test_argparse_english_is_unchanged(capsys):
    """Without --lang ko, argparse's own words and qkv's prefix stay English (the old code's lines)."""
    assert run(capsys, "inspect")[2] == "qkv: error: the following arguments are required: TEXT (see 'qkv inspect --help')\n"
    assert run(capsys, "--digits")[2] == "qkv: error: argument --digits: expected one argument (see 'qkv example --help')\n"
    assert run(capsys, "serve", "--port", "x")[2] == \
        "qkv: error: argument --port: invalid int value: 'x' (see 'qkv serve --help')\n"
    assert run(capsys, "--digits", "x")[2] == "qkv: error: --digits: 'x': expected a whole number of decimals from 0 to 12\n"
    import argparse

    assert argparse._("options") == "options"          # the swap of argparse's words ends with the run


def test_the_usage_words_of_help_are_korean(capsys):
    code, out, _ = run(capsys, "inspect", "--lang", "ko", "--help")
    assert code == 0 and out.startswith("사용법: qkv inspect") and "\n위치 인수:\n" in out and "\n옵션:\n" in out
    assert "이 도움말을 보이고 끝낸다" in out


# ------------------------------------------------------------------ 2. the Korean table itself
MESSAGE_PREFIXES = ("error.", "cli.", "argparse.", "doctor.", "serve.error.")


def _filled(template: str) -> str:
    names = texts.placeholders(template)
    if "%" in template and not names:                       # argparse's %-placeholders
        return re.sub(r"%(\([a-z_]+\))?[sr]", "X", template)
    return texts._COUNTS.format(template, **{n: "1" for n in names})


@pytest.mark.parametrize("key", sorted(k for k in texts.KO if k.startswith(MESSAGE_PREFIXES)))
def test_every_korean_message_is_korean(key):
    said = _filled(texts.KO[key])
    assert korean_only(said, EXAMPLE_WORDS) == [], (key, korean_only(said, EXAMPLE_WORDS), said)
    if korean_only(_filled(texts.EN[key]), EXAMPLE_WORDS) and key != "argparse.argument":
        assert HANGUL.search(said), (key, said)      # English words in EN: KO is a sentence (argparse.argument:
                                                     # "FIELD: problem", qkv's own form, has no word of its own)


def test_the_check_finds_english_in_a_message():
    assert korean_only("config.json: model_type: 'mamba': 지원하지 않는다") == []
    assert korean_only("model_type 'mamba' is not supported") == ["is", "not", "supported"]
    assert korean_only("표준 출력에 쓸 수 없다 (file not found)") == ["found", "not"]


# ------------------------------------------------------------------ 3. every raise site names a text
# the modules a --lang ko command reaches: reading models, example files, saved traces and files, the
# command line, and the commands that have --lang (bench, train and serve have none: their words are English)
LANG_COMMANDS = ["_options", "doctor", "embed", "example", "explain", "generate", "heads", "inspect", "masks", "ring",
                 "translate"]
RAISE_FILES = (sorted((SRC / "models").glob("*.py")) + sorted((SRC / "examples").glob("*.py"))
               + [SRC / "spec.py", SRC / "_io.py", SRC / "cli.py", SRC / "frontdoor.py"]
               + [SRC / "commands" / f"{name}.py" for name in LANG_COMMANDS])
# the one English-only message left on purpose: parse_int for a `what` with no text (no caller passes one)
ENGLISH_ONLY = {("_io.py", "int_error")}


def _english_messages(path: Path) -> list[str]:
    """InputError(...) calls whose first argument is a literal sentence (no text key) in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for func in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        for node in ast.walk(func):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "InputError"):
                continue
            if any(k.arg == "key" for k in node.keywords) or (path.name, func.name) in ENGLISH_ONLY:
                continue
            first = node.args[0] if node.args else None
            if isinstance(first, (ast.Constant, ast.JoinedStr, ast.BinOp)):
                found.append(f"{path.name}:{node.lineno} in {func.name}")
    return found


def test_no_raise_site_carries_english_of_its_own():
    left = [m for path in RAISE_FILES for m in _english_messages(path)]
    assert left == [], left


def test_the_raise_site_check_catches_english(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f(x):\n    raise InputError(f'{x} is not supported', field='x')\n", encoding="utf-8")
    assert _english_messages(sample) == ["sample.py:2 in f"]


KEY_CALL = re.compile(r"""(?:keyed|_fail|fail|_read_error|_error)\(\s*(?:f?)["']((?:error|cli)\.[a-z0-9_.]+)["']""")


def test_every_key_a_raise_site_names_exists():
    named = {k for path in RAISE_FILES
             for k in KEY_CALL.findall(path.read_text(encoding="utf-8"))}
    complete = {k for k in named if not k.endswith(".")}
    assert len(complete) > 100, len(complete)
    assert complete <= set(texts.EN) and complete <= set(texts.KO), sorted(complete - set(texts.KO))
    from qkv import models

    for name in models.MISSING:                            # error.model_type.NAME, named by an f-string
        assert f"error.model_type.{name}" in texts.KO


# ------------------------------------------------------------------ 4. real runs
def test_doctor_every_branch_is_korean():
    from qkv.commands import doctor

    for ext, sgemm, backward, torch, width, error in itertools.product(
            (True, False), (True, False), (True, False), ("2.13.0", None), (16, 8, 1, 4),
            ("not built", "built but not loaded by qkv.kernels",
             "No module named 'qkv.kernels._fused'",                       # Python's ImportError, as routes() has it
             "/x/_fused.so: undefined symbol: cblas_sgemm")):
        info = {"extension": ext, "extension_error": None if ext else error, "width": width if ext else None,
                "sgemm": sgemm if ext else None, "backward": backward, "torch": torch, "numpy": "2.4.6"}
        for said in (doctor.report(info, "ko"), doctor.summary(info, "ko")):
            assert HANGUL.search(said) and korean_only(said, words_of(doctor.APT, doctor.PIP)) == [], said
        assert doctor.report(info, "en") != doctor.report(info, "ko")


def test_doctor_and_version_commands_are_korean(capsys):
    from qkv.commands.doctor import routes

    versions = words_of(routes()["torch"])                 # "2.13.0+cpu": torch's version as it names itself
    code, out, err = run(capsys, "doctor", "--lang", "ko")
    assert code == 0 and err == "" and HANGUL.search(out) and korean_only(out, versions) == [], out
    code, out, err = run(capsys, "--lang", "ko", "--version")
    assert code == 0 and out.startswith("qkv ") and HANGUL.search(out) and korean_only(out, versions) == [], out
    code, english, _ = run(capsys, "--version")
    assert code == 0 and "C kernel" in english and english != out


def _model_dir(tmp_path: Path, config: dict | None, files=("tokenizer.json", "model.safetensors")) -> Path:
    directory = tmp_path / "model"
    directory.mkdir()
    if config is not None:
        (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for name in files:
        (directory / name).write_bytes(b"")
    return directory


@pytest.mark.parametrize("config, files", [
    ({"model_type": "mamba"}, ("tokenizer.json", "model.safetensors")),
    ({"hidden_size": 8}, ("tokenizer.json", "model.safetensors")),
    ({"model_type": "falcon"}, ("tokenizer.json", "model.safetensors")),
    ({"model_type": "gemma3"}, ("tokenizer.json", "model.safetensors")),
    ({"model_type": "llama", "hidden_size": "x"}, ("tokenizer.json", "model.safetensors")),
    ({"model_type": "llama", "hidden_size": 8, "num_attention_heads": 3, "num_hidden_layers": 1,
      "vocab_size": 10, "intermediate_size": 4}, ("tokenizer.json", "model.safetensors")),
    ({"model_type": "bert", "position_embedding_type": "relative_key"}, ("tokenizer.json", "model.safetensors")),
    ({"model_type": "gpt2"}, ("model.safetensors",)),
    (None, ("tokenizer.json", "model.safetensors")),
], ids=["mamba", "no-model_type", "falcon", "gemma3", "bad-field", "heads", "bert-relative", "no-tokenizer",
        "no-config"])
def test_model_refusals_are_korean(capsys, tmp_path, config, files):
    from qkv.models import SUPPORTED

    directory = _model_dir(tmp_path, config, files)
    assert_one_korean_error(capsys, ["inspect", "cat", "--model", str(directory), "--lang", "ko"],
                            words_of(directory, *SUPPORTED))      # the model_types qkv runs, as config.json names them
    code, _, english = run(capsys, "inspect", "cat", "--model", str(directory))
    assert code == 2 and english.startswith("qkv: error: ") and not HANGUL.search(english)


def test_unknown_model_is_korean(capsys, tmp_path):
    assert_one_korean_error(capsys, ["inspect", "cat", "--model", str(tmp_path / "nowhere"), "--lang", "ko"],
                            ["minilm", *words_of(tmp_path)])


@pytest.mark.parametrize("name, body", [
    ("a.toml", "x = [[1, 2], [3]]"),
    ("a.toml", "x = [[1, \"a\"]]"),
    ("a.toml", "x = [[1, 2]]"),
    ("a.toml", "x = \"missing.npy\""),
    ("a.toml", "x = [[1e300, 2]]\ntokens = [\"a\"]"),
    ("a.toml", "x = [[1, 2]]\ntokens = [\"a\"]\nw_q = [[1], [2]]\nw_k = [[1], [2]]\nw_v = [[1], [2]]\nheads = 0"),
    ("a.toml", "wq = 1"),
    ("a.toml", "x = = 1"),
    ("a.json", "{\"x\": "),
    ("a.json", "[1, 2]"),
    ("a.txt", "x = 1"),
    ("a.json", "{\"format\": \"qkv-explanation\", \"trace\": 3}"),
    ("a.toml", "x = {file = \"a.npy\", kye = \"w\"}"),
], ids=["ragged", "not-number", "no-tokens", "array-file", "too-big", "heads", "unknown-field", "bad-toml",
        "bad-json", "json-list", "suffix", "saved-trace", "array-table-key"])
def test_example_file_errors_are_korean(capsys, tmp_path, name, body):
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    # the parser's own words (tomllib's "Invalid value") are Python's: the check sets aside their sentence
    code, out, err = run(capsys, "explain", str(path), "--lang", "ko")
    assert code == 2 and err.startswith("qkv: 오류: ") and HANGUL.search(err), err
    from qkv.spec import FIELDS

    said = err.split(": TOML 형식이 잘못되었다: ")[0]
    assert korean_only(said, words_of(path, body, *FIELDS)) == [], err      # the file's own words; the format's fields


def test_file_and_output_errors_are_korean(capsys, tmp_path):
    (tmp_path / "dir.toml").mkdir()
    for argv in (["explain", str(tmp_path / "none.toml")], ["explain", str(tmp_path / "dir.toml")],
                 ["example", "--out", str(tmp_path / "nowhere" / "x.txt")], ["example", "--out", str(tmp_path)],
                 ["masks", "--figure", str(tmp_path / "m.gif")], ["masks", "--figure", str(tmp_path / "m")]):
        assert_one_korean_error(capsys, [*argv, "--lang", "ko"], words_of(tmp_path, "gif"))


def test_an_ascii_standard_error_gets_the_english_line():
    """Under --lang ko with PYTHONIOENCODING=ascii the Korean line cannot be written: the English one is."""
    import os
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "qkv", "--lang", "ko", "--digits", "x"], capture_output=True,
                            text=True, timeout=120, env=dict(os.environ, PYTHONIOENCODING="ascii",
                                                             PYTHONPATH=str(SRC.parent)))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "qkv: error: --digits: 'x': expected a whole number of decimals from 0 to 12\n"
