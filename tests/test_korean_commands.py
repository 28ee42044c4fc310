"""`qkv bench`, `qkv train` and `qkv serve` take --lang as every other command does, and under
`--lang ko` say everything of their own in Korean: bench's progress lines, tables, legend and notes (a
fresh run's sentences are `qkv.bench.Said`; English is what --json saves), train's progress bar, report
and refusals, serve's lines and refusals, and the page's language (`create_app(lang=)`, <html lang>).

The English detector is test_cli_lang_ko's `korean_only`; the words allowed beyond it are listed in
SHOWN with why. Each check fails on the code before these commands had --lang (they refused it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qkv.cli import main
from qkv.explain import texts

from test_cli_korean import HANGUL, words_of
from test_cli_lang_ko import korean_only

# Words the output shows as typed, and why.
SHOWN = {
    "GEMM", "flex",               # the table's column headings ×GEMM and ×flex (symbols, as ×torch)
    "bench",                      # the command word of the progress prefix "qkv bench:"
}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_korean_error(capsys, argv, key, *allowed) -> None:
    """One Korean line, and it is the text ``key`` (its longest fixed part), not another complaint (an old
    parser's "unrecognized arguments: --lang ko" is Korean too)."""
    import re

    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("qkv: 오류: "), (argv, err)
    assert HANGUL.search(err[len("qkv: 오류: "):]) and korean_only(err, words_of(*argv, *allowed)) == [], (argv, err)
    fixed = max(re.split(r"\{[^{}]*\}", texts.KO[key]), key=len)
    assert fixed in err, (argv, key, fixed, err)


# ------------------------------------------------------------------ bench
@pytest.fixture(scope="module")
def tiny_run():
    """A real run of the benchmark at toy sizes (no mask or training cases: seconds), with its progress; the
    half-precision rows at toy sizes too (Plan's default, bfloat16/float16 up to T = 4096 with training, took
    ~40 CPU-seconds here once they were added)."""
    from qkv.bench import HalfCase, Plan, run_benchmark

    plan = Plan(sizes=(16,), heads=1, repeats=1, memory_t=64, decode_t=32, decode_steps=1, gemm_n=64,
                mask_cases=(), compile_flex=False, train_cases=(),
                half_cases=(HalfCase("bfloat16", 16, 1, repeats=1), HalfCase("float16", 16, 1, True, True, repeats=1)))
    said = []
    result = run_benchmark(plan, progress=said.append)
    return result, said


def test_bench_in_korean(capsys, monkeypatch, tiny_run):
    from qkv import bench

    result, said = tiny_run
    monkeypatch.setattr(bench, "run_benchmark", lambda plan, *, sizes=None, repeats=None, progress=None:
                        ([progress(line) for line in said], result)[1])
    code, out, err = run(capsys, "bench", "--quick", "--lang", "ko")
    machine = words_of(*(str(v) for v in result["machine"].values()))
    assert code == 0 and HANGUL.search(out) and korean_only(out, SHOWN | machine) == [], (korean_only(out, SHOWN | machine), out)
    lines = err.splitlines()
    assert len(lines) == len(said) + 1 and lines[-1] == f"qkv bench: {texts.KO['cli.bench.done']}", err
    assert all(line.startswith("qkv bench: ") and HANGUL.search(line) for line in lines), err
    assert korean_only(err, SHOWN) == [], err
    flat = " ".join(out.split())                      # rich wraps long lines
    for note in result["notes"]:                      # every note is said in Korean, not printed as saved
        assert " ".join(note.in_lang("ko").split()) in flat and " ".join(str(note).split()) not in flat


def test_bench_english_and_json_are_unchanged(capsys, monkeypatch, tiny_run, tmp_path):
    """English output keeps the saved sentences; --json saves English whatever --lang is."""
    from qkv import bench

    result, said = tiny_run
    monkeypatch.setattr(bench, "run_benchmark", lambda plan, *, sizes=None, repeats=None, progress=None: result)
    saved = tmp_path / "r.json"
    code, out, _ = run(capsys, "bench", "--quick", "--lang", "ko", "--json", str(saved))
    assert code == 0
    data = json.loads(saved.read_text(encoding="utf-8"))
    assert data["notes"] == [str(note) for note in result["notes"]] and not HANGUL.search(saved.read_text("utf-8"))
    code, english, _ = run(capsys, "bench", "--from-json", str(saved))
    flat = " ".join(english.split())                  # rich wraps long lines
    assert code == 0 and not HANGUL.search(english) and all(" ".join(note.split()) in flat for note in data["notes"])
    assert english.startswith("float32 GEMM (") and "load average before" in english


@pytest.mark.parametrize("document, key", [
    ([1, 2], "cli.bench.json.not_result"),
    ({"machine": {}}, "cli.bench.json.incomplete"),
    ({"machine": {}, "rows": [], "memory": [], "decode": {}, "notes": [], "memory_inputs_mib": "x"},
     "cli.bench.json.missing")], ids=["list", "incomplete", "missing"])
def test_bench_saved_result_errors_are_korean(capsys, tmp_path, document, key):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert_korean_error(capsys, ["bench", "--from-json", str(path), "--lang", "ko"], key, tmp_path, "rows", "memory",
                        "decode", "notes", "memory_inputs_mib", "machine", "gemm_n", "null")


def test_bench_field_type_is_worded_in_korean(capsys, tmp_path, tiny_run):
    result = json.loads(json.dumps(tiny_run[0]))
    result["rows"][0]["t"] = "x"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result), encoding="utf-8")
    code, _, english = run(capsys, "bench", "--from-json", str(path))
    assert english.endswith("rows[0].t must be a whole number, got 'x'\n"), english     # the old wording
    assert_korean_error(capsys, ["bench", "--from-json", str(path), "--lang", "ko"], "cli.bench.json.type", tmp_path,
                        "rows")


@pytest.mark.parametrize("sizes, key", [("12,x", "cli.bench.sizes.format"), ("0", "cli.bench.sizes.range"),
                                       (",".join(["8"] * 17), "cli.bench.sizes.many")], ids=["format", "range", "many"])
def test_bench_size_errors_are_korean(capsys, sizes, key):
    assert_korean_error(capsys, ["bench", "--sizes", sizes, "--lang", "ko"], key)


# ------------------------------------------------------------------ bench --markdown and --from-json
def _with_masks_and_training(result: dict) -> dict:
    """A saved result (JSON) with masked and training rows added, named as the benchmark names its cases
    (`MaskCase.name`, `TrainCase.name`), some skipped with the reasons it gives."""
    from qkv.bench import MaskCase, TrainCase, said

    saved = json.loads(json.dumps(result))

    def row(case, impl, mask, skipped=None, **numbers):
        base = {"case": case, "impl": impl, "batch": 1, "heads": 4, "t": 256, "width": 64, "causal": False,
                "seconds": None, "gflops": None, "vs_torch": None, "qkv_speedup": None, "pair": None, "mask": str(mask),
                "vs_gemm": None, "peak_mib": None, "memory_method": None, "skipped": skipped and str(skipped),
                "times": [], "vs_flex": None, "vs_catalogue": None}
        return {**base, **numbers}

    window, documents = MaskCase("window", 64, 256, 4).name, MaskCase("documents", 8, 256, 4).name
    saved["masked"] = [row("masked", "qkv blocked (mask_mod)", window, seconds=0.0125, peak_mib=1.5),
                       row("masked", "torch sdpa (dense mask)", window, seconds=0.0371, qkv_speedup=2.968),
                       row("masked", "torch flex_attention (compiled)", documents, said("cli.bench.skip.quick")),
                       row("masked", "qkv blocked (user lambda)", window, seconds=0.0131, vs_catalogue=0.954)]
    causal, lambda_ = TrainCase("causal", 256, 4).name, TrainCase("window", 256, 4, window=64).name
    saved["training"] = [row("training", "qkv.attention (C forward + backward)", causal, seconds=0.021, vs_torch=1.11,
                             peak_mib=12.0),
                         row("training", "torch sdpa (is_causal)", causal, seconds=0.0233, qkv_speedup=1.11, peak_mib=20.0),
                         row("training", "torch flex_attention (compiled)", lambda_,
                             said("cli.bench.skip.no_flex_backward", error="NotImplementedError"))]
    return saved


def _numbers(markdown: str) -> list[str]:
    """The numbers of every table row, in order (cells that are numbers, — for none)."""
    import re

    cells = [cell.strip() for line in markdown.splitlines() if line.startswith("| ") and not line.startswith("|--")
             for cell in line.strip("|").split("|")]
    return [cell for cell in cells if re.fullmatch(r"[\d.]+( †)?|—", cell)]


def test_bench_markdown_in_korean(capsys, tmp_path, tiny_run):
    saved = tmp_path / "r.json"
    saved.write_text(json.dumps(_with_masks_and_training(tiny_run[0])), encoding="utf-8")
    english, korean = tmp_path / "en.md", tmp_path / "ko.md"
    assert run(capsys, "bench", "--from-json", str(saved), "--markdown", str(english))[0] == 0
    assert run(capsys, "bench", "--from-json", str(saved), "--markdown", str(korean), "--lang", "ko")[0] == 0
    en, ko = english.read_text(encoding="utf-8"), korean.read_text(encoding="utf-8")
    machine = words_of(*(str(v) for v in tiny_run[0]["machine"].values()))
    assert HANGUL.search(ko) and korean_only(ko, SHOWN | machine | {"NotImplementedError"}) == [], \
        (korean_only(ko, SHOWN | machine), ko)
    numbers = _numbers(en)
    assert len(numbers) > 60 and _numbers(ko) == numbers                  # the same numbers in both languages
    assert len(ko.splitlines()) == len(en.splitlines())
    # English is unchanged: its column headings are the ones docs/benchmarks.md shows (written by earlier runs)
    docs = (Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    for heading in [line for line in en.splitlines() if line.startswith("| H |") or line.startswith("| mask |")]:
        assert heading in docs, heading
    assert not HANGUL.search(en) and "sliding window W=64" in en and "8 documents" in en


def test_bench_from_json_in_korean_says_the_saved_sentences_in_korean(capsys, tmp_path, tiny_run):
    saved = tmp_path / "r.json"
    saved.write_text(json.dumps(_with_masks_and_training(tiny_run[0])), encoding="utf-8")
    code, out, _ = run(capsys, "bench", "--from-json", str(saved), "--lang", "ko")
    machine = words_of(*(str(v) for v in tiny_run[0]["machine"].values()))
    assert code == 0 and korean_only(out, SHOWN | machine | {"NotImplementedError"}) == [], \
        (korean_only(out, SHOWN | machine), out)
    flat = " ".join(out.split())
    for note in tiny_run[0]["notes"]:
        assert " ".join(note.in_lang("ko").split()) in flat


def test_every_sentence_a_result_saves_is_read_back():
    """`heard` turns the English a result saves back into its sentence: for each sentence the benchmark
    saves (notes, timing methods, skip reasons, mask names), said in Korean from its saved English equals
    it said in Korean from the sentence itself."""
    from qkv.bench import PAIRING, TRAINING, MaskCase, TrainCase, heard, said

    sentences = [PAIRING, TRAINING, said("cli.bench.note.timing", pairing=PAIRING, repeats=5),
                 said("cli.bench.note.training", training=TRAINING), said("cli.bench.skip.too_big", t=65536, gib="16"),
                 said("cli.bench.skip.flex_failed", error="RuntimeError: x; y"), said("cli.bench.skip.quick"),
                 said("cli.bench.skip.no_mha", error="ImportError: no"), said("cli.bench.skip.torch"),
                 MaskCase("window", 256, 4096, 8).name, MaskCase("documents", 8, 16384, 4).name,
                 TrainCase("causal", 2048, 8).name, TrainCase("window", 16384, 4).name]
    sentences += [said(key) for key in texts.EN if key.startswith("cli.bench.note.") and not texts.placeholders(texts.EN[key])]
    for sentence in sentences:
        back = heard(str(sentence))
        assert back.in_lang("ko") == sentence.in_lang("ko") and HANGUL.search(back.in_lang("ko")), str(sentence)
    assert heard("some text no sentence has") == "some text no sentence has"


# ------------------------------------------------------------------ train
@pytest.mark.parametrize("argv, key", [(["--out", "x.txt"], "cli.train.suffix"),
                                       (["--out", "nowhere/x.safetensors"], "error.out.no_directory"),
                                       (["--learning-rate", "0"], "cli.train.learning_rate"),
                                       (["--learning-rate", "nan"], "cli.train.learning_rate")],
                         ids=["suffix", "folder", "rate-0", "rate-nan"])
def test_train_refusals_are_korean(capsys, argv, key):
    assert_korean_error(capsys, ["train", "translator", *argv, "--lang", "ko"], key, "safetensors")


def test_train_progress_and_report_words_are_korean(capsys):
    from qkv.commands import train
    from qkv.commands._options import words

    with train._progress(3, words("ko")) as on_step:
        on_step(0, 1.5, 0.25)
    err = capsys.readouterr().err
    for key in ("cli.train.bar.training", "cli.train.bar.loss", "cli.train.bar.accuracy", "cli.train.bar.left"):
        assert texts.KO[key] in err, (key, err)
    assert korean_only(err) == [], err
    said = texts.text("ko", "cli.train.done", steps=1, seconds="1.0", loss="0.5")
    assert HANGUL.search(said) and korean_only(said) == []
    assert texts.text("en", "cli.train.done", steps=1, seconds="1.0", loss="0.5") == "trained 1 step in 1.0 s; final loss 0.5"


# ------------------------------------------------------------------ serve
@pytest.mark.parametrize("argv, key", [(["--port", "70000"], "cli.serve.port"), (["--host", "nope"], "cli.serve.host"),
                                       (["--no-minilm"], "cli.serve.no_model")], ids=["port", "host", "no-model"])
def test_serve_refusals_are_korean(capsys, argv, key):
    assert_korean_error(capsys, ["serve", *argv, "--lang", "ko"], key)


def test_serve_port_in_use_is_korean():
    import socket

    from qkv import serve
    from qkv.errors import InputError

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    try:
        with pytest.raises(InputError) as caught:
            serve.listen("127.0.0.1", holder.getsockname()[1])
    finally:
        holder.close()
    said = caught.value.say("ko")
    assert HANGUL.search(said) and korean_only(said) == [], said
    assert "is in use on 127.0.0.1" in caught.value.say("en")


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_serve_lang_sets_the_pages_language(lang):
    """`qkv serve --lang ko`: the page is served with <html lang="ko">, which app.js opens in when a link
    names no ?lang= (a reader can still switch)."""
    from starlette.testclient import TestClient

    from qkv import serve
    from qkv.serve import app as serve_app

    class Stub:                      # create_app reads only the config and the tokenizer of a model
        config = type("Config", (), {"n_layers": 1, "n_heads": 1, "max_positions": 8})()
        tokenizer = None

    original = serve_app.ModelEntry.__init__

    def entry(self, name, model):
        self.name, self.model, self.config, self.max_tokens, self._counter = name, model, model.config, 8, None

    serve_app.ModelEntry.__init__ = entry
    try:
        app = serve.create_app({"stub": Stub()}, lang=lang)
    finally:
        serve_app.ModelEntry.__init__ = original
    with TestClient(app, base_url="http://127.0.0.1") as client:
        page = client.get("/").text
    assert f'<html lang="{lang}">' in page
    script = (serve_app.resources.files("qkv") / "serve" / "app.js").read_text(encoding="utf-8")
    assert 'var DEFAULT_LANG = document.documentElement.lang === "ko" ? "ko" : "en";' in script
    assert 'if (state.lang !== DEFAULT_LANG) p.set("lang", state.lang);' in script


def test_the_three_commands_refuse_a_bad_lang_as_the_others(capsys):
    for argv in (["bench"], ["train", "translator"], ["serve"], ["inspect", "a cat"]):
        code, _, err = run(capsys, *argv, "--lang", "fr")
        assert code == 2 and err.startswith("qkv: error: --lang: 'fr' is not one of en, ko"), (argv, err)


def test_serve_says_why_the_translator_is_missing_in_korean(monkeypatch, tmp_path):
    """The translator's checkpoint cannot be read (a class of OSError): the reason in each language."""
    import errno
    import os

    from qkv import serve, translator

    def refuse():
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(tmp_path / "translator.safetensors"))

    monkeypatch.setattr(translator, "load", refuse)
    model, why = serve.load_translator()
    assert model is None and why.startswith("[Errno 13] Permission denied")        # English as before
    assert why.by_lang["ko"] == texts.KO["error.os.EACCES"]


# ------------------------------------------------------------------ translate's ranges (translator/explain.py)
@pytest.mark.parametrize("argv, key", [(["--layer", "9", "--explain"], "error.translator.layer"),
                                       (["--head", "9", "--explain"], "error.translator.head"),
                                       (["--derive", "9", "--to", "ko"], "error.translator.word")],
                         ids=["layer", "head", "word"])
def test_translate_ranges_are_korean(capsys, argv, key):
    assert_korean_error(capsys, ["translate", "I love you", *argv, "--lang", "ko"], key)


# ------------------------------------------------------------------ a broken translator checkpoint
def _checkpoint_kinds():
    from test_translator import CHECKPOINT_CASES

    return [kind for kind in CHECKPOINT_CASES if kind not in ("device", "directory", "fifo")]   # the reader's own




@pytest.mark.parametrize("kind", _checkpoint_kinds())
def test_a_malformed_checkpoint_is_korean(kind, tmp_path, capsys):
    from test_translator import _malformed

    path = _malformed(kind, tmp_path)
    code, _, err = run(capsys, "translate", "I love you", "--checkpoint", path, "--lang", "ko")
    assert code == 2 and err.startswith("qkv: 오류: ") and err.count("\n") == 1, err
    assert HANGUL.search(err[len("qkv: 오류: "):]), err
    # the file's own words: tensor and field names, dtype codes, a JSON type's Python name; the library's
    # own description of what it could not parse (json, safetensors) is worded in Korean too
    assert korean_only(err, words_of(path, "list", "config", "format", "dtype", "shape")) == [], err
