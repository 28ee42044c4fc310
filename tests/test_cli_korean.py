"""Every command with --lang ko speaks Korean: no English word outside a short allowlist.

The check (`foreign_words`) takes every run of Latin letters in the output and keeps those that
are not allowed: the terms the posts keep in Latin letters (Query, Key, Value, softmax), acronyms
and units (RoPE, GQA, MQA, KV, LM, CLS, SEP, CPU, OS, MiB, ms), symbols (any single letter: T, q,
k, i, …; ln, mod, doc, exp in formulas), step names shown as code (q_heads, rope_angles, …),
option names and values (--layer, all, html, FILE, png), the tokens of the input, and the model's
name, path and type. Everything else — an English sentence, a header such as "top 5 keys" — is a
failure; `test_the_check_catches_english` shows that it fails on English.

Commands: inspect (every layer × head, one head; MiniLM and a tiny Llama with RoPE and
grouped-query attention), heads, masks, ring (its real run: in tests/test_distributed.py, with
this file's check), embed, generate, translate, and the errors each
raises itself. `qkv inspect --layer L --head H` prints its own summary and then the derivation of
`qkv.explain` (the worked examples' renderer, checked by its own tests); the summary is checked
here.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

from qkv.cli import main  # noqa: E402

HANGUL = re.compile("[\uac00-\ud7a3]")
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
OPTION = re.compile(r"--[a-z][a-z-]*")

# Latin-letter words a Korean output may show, and why.
ALLOWED = {
    # the posts keep these in Latin letters
    "Query", "Key", "Value", "softmax",
    # acronyms and units
    "RoPE", "GQA", "MQA", "KV", "LM", "CLS", "SEP", "UNK", "CPU", "OS", "MiB", "ms", "L2",   # CLS, SEP, UNK: BERT's tokens
    # symbols in formulas
    "ln", "mod", "doc", "kv", "exp", "q_m", "k_n", "d_k", "Tq", "Tk",
    # step names of the trace, shown as code
    "q_heads", "k_heads", "v_heads", "rope_angles", "q_rotated", "k_rotated",
    # option values and metavariables the hints name
    "all", "html", "png", "svg", "pdf", "qkv", "masks", "ko", "ja", "en", "both",
    "gpt2", "llama", "mistral", "qwen2", "float32", "float64",
    # the library whose head-detector definitions `qkv heads` uses, named as the source of its scores
    "TransformerLens",
    # ring's strategies (the values of --strategies)
    "ring", "contiguous", "zigzag", "ulysses",
}

TEXT = "Cats chase mice."                 # content words only: its tokens are allowed, so no "the", "on"
FIXTURE_TEXT = "cat dog garden birds"


def foreign_words(output: str, allowed=()) -> list[str]:
    """The Latin-letter words of ``output`` outside ALLOWED, ``allowed`` and single letters."""
    ok = ALLOWED | set(allowed)
    words = WORD.findall(OPTION.sub(" ", output))
    return sorted({w for w in words if len(w) > 1 and w not in ok and w.rstrip("_") not in ok})


def words_of(*texts) -> set[str]:
    """Every Latin-letter word inside ``texts`` (tokens, paths, names), for the allowlist."""
    return {w for text in texts for w in WORD.findall(str(text))}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_korean(output: str, allowed=()) -> None:
    assert HANGUL.search(output), output[:400]
    assert foreign_words(output, allowed) == [], output[:3000]


@pytest.fixture(scope="module")
def minilm():
    from qkv import models

    return models.load("minilm")


@pytest.fixture(scope="module", autouse=True)
def _one_minilm_for_the_commands():
    """The commands share one MiniLM of their own (model_fixtures.minilm_loaded_once), not a load per command."""
    from model_fixtures import minilm_loaded_once

    with minilm_loaded_once():
        yield


@pytest.fixture(scope="module")
def checkpoints():
    from model_fixtures import built

    return {name: built(name) for name in ("llama-gqa", "gpt2")}


# ------------------------------------------------------------------ the check itself
def test_the_check_catches_english(capsys, minilm):
    assert foreign_words("헤드 5의 가중치 (행: Query, 열: Key)") == []
    assert foreign_words("weights of head 5 (rows: queries…)") == ["head", "of", "queries", "rows", "weights"]
    assert foreign_words("top 5 keys", allowed={"top"}) == ["keys"]
    assert foreign_words("--layer L --head H로 고른다; rope_angles, q_rotated") == []
    code, out, _ = run(capsys, "inspect", TEXT, "--lang", "en")          # the same table in English
    assert code == 0
    found = foreign_words(out, words_of(*minilm.tokens(TEXT), minilm.name))
    assert {"attention", "layer", "head", "tokens", "next"} <= set(found), found


# ------------------------------------------------------------------ inspect
@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_inspect_every_head_in_korean(capsys, minilm, fmt):
    code, out, err = run(capsys, "inspect", TEXT, "--lang", "ko", "--format", fmt)
    assert code == 0, err
    assert "층 5" in out and "헤드" in out and "Query 1 “cats”" in out
    assert_korean(out, words_of(*minilm.tokens(TEXT), minilm.name))


def test_inspect_one_head_summary_in_korean(capsys, minilm):
    code, out, err = run(capsys, "inspect", TEXT, "--lang", "ko", "--layer", "2", "--head", "5", "--top", "3")
    assert code == 0, err
    from qkv.explain import texts

    title = texts.text("ko", "title.model.head", model=minilm.name, layer=2, head=5)   # where the derivation starts
    summary = out[: out.index("\n" + title + "\n")]
    assert "헤드 5의 가중치 (행: Query, 열: Key, 각 행의 합은 1)" in summary
    assert "Query 1 “cats”에서 가중치가 가장 큰 Key 3개" in summary
    weights = minilm.attention_weights(TEXT)[2, 5]
    assert f"{weights[1, 0]:.3f}" in summary                              # the head's own numbers
    assert_korean(summary, words_of(*minilm.tokens(TEXT), minilm.name))



@pytest.mark.parametrize("layer, head", [(2, 5), (2, None), (None, None)], ids=["head", "layer", "model"])
def test_a_model_figure_in_korean_has_no_english(minilm, layer, head):
    """The figure of a model's head, layer or whole model is titled in the figure's language (its title was
    the trace's English "minilm: layer 2, head 5"); no text of the Korean figure is English."""
    import matplotlib.text

    from qkv.viz.figures import figure_for

    trace = minilm.trace(TEXT, layer=layer, head=head)
    fig = figure_for(trace, lang="ko")
    shown = [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
    assert any(HANGUL.search(t) for t in shown)
    from test_cli_lang_ko import korean_only        # symbols such as q_cats and k_[CLS] are set aside

    assert korean_only(" ".join(shown), words_of(*minilm.tokens(TEXT), minilm.name)) == [], shown

def test_inspect_causal_model_in_korean(capsys, checkpoints):
    from qkv import models

    directory = checkpoints["llama-gqa"]
    model = models.load(str(directory))
    allowed = words_of(*model.tokens(FIXTURE_TEXT), model.name, directory)
    code, out, err = run(capsys, "inspect", "--model", str(directory), FIXTURE_TEXT, "--lang", "ko")
    assert code == 0, err
    assert "인과 마스크" in out and "그룹 Query 어텐션, GQA" in out and "Key/Value 헤드 0 공유: Query 헤드 0, 1" in out
    assert_korean(out, allowed)
    code, out, err = run(capsys, "inspect", "--model", str(directory), FIXTURE_TEXT, "--lang", "ko",
                         "--layer", "1", "--head", "3", "--query", "0")
    assert code == 0, err
    from qkv.explain import texts

    title = texts.text("ko", "title.model.kv_head", model=model.name, layer=1, head=3, kv=1)
    summary = out[: out.index("\n" + title + "\n")]
    assert "층 1 (0–2 중), 헤드 3 (0–3 중) — Key/Value 헤드 1, 이를 공유하는 Query 헤드: 2, 3" in summary
    assert "회전 전 q" in summary and "회전 후 k" in summary and "길이는 그대로이다" in summary
    assert_korean(summary, allowed)


# ------------------------------------------------------------------ the other commands
def test_heads_in_korean(capsys, minilm):
    code, out, err = run(capsys, "heads", TEXT, "--lang", "ko", "--top", "4", "--probe", "6")
    assert code == 0, err
    assert "엔트로피" in out and "인덕션" in out and "어텐션 롤아웃" in out
    assert_korean(out, words_of(*minilm.tokens(TEXT), minilm.name))


def test_masks_in_korean(capsys, tmp_path):
    code, out, err = run(capsys, "masks", "--lang", "ko", "--length", "16", "--figure", str(tmp_path / "m.png"))
    assert code == 0, err
    assert "인과: kv ≤ q" in out and "커널은 점수 행렬 가운데" in out and (tmp_path / "m.png").stat().st_size > 5000
    assert_korean(out)
    code, out, err = run(capsys, "masks", "--lang", "ko", "--length", "8", "--only", "문서 + 인과")
    assert code == 0 and out.startswith("문서 + 인과: (doc[q] = doc[kv]) 그리고 (kv ≤ q)"), (out, err)


def test_embed_in_korean(capsys, minilm):
    texts = (TEXT, "Dogs chase cats.")
    code, out, err = run(capsys, "embed", *texts, "--lang", "ko")
    assert code == 0, err
    assert "코사인 유사도" in out and "평균 풀링" in out
    assert_korean(out, words_of(*texts, minilm.name))


def test_generate_in_korean(capsys, checkpoints):
    directory = str(checkpoints["gpt2"])
    argv = ("generate", "--model", directory, "Cats", "-n", "4", "--top", "2")
    code, shown, err = run(capsys, *argv, "--json")
    assert code == 0, err
    document = json.loads(shown)
    steps = document["steps"]
    tokens = [document["text"]] + [s["token"] for s in steps] + [a["token"] for s in steps for a in s["top"]]
    code, out, err = run(capsys, *argv, "--lang", "ko")
    assert code == 0, err
    assert "탐욕 디코딩" in out and "KV 캐시" in out and "다른 후보" in out
    assert_korean(out, words_of(directory, "Cats", *tokens))


def test_translate_in_korean(capsys, tmp_path):
    figure = tmp_path / "alignment.png"
    code, out, err = run(capsys, "translate", "I love you", "--lang", "ko")
    assert code == 0, err
    assert out.startswith("한국어: ") and "\n일본어: " in out
    assert_korean(out)
    code, out, err = run(capsys, "translate", "I love you", "--lang", "ko", "--to", "ko", "--figure", str(figure))
    assert code == 0, err
    assert err == f"qkv: 저장했다: {figure}\n"          # on standard error: standard output is the translation
    assert_korean(out + err, words_of(figure))


# `qkv ring --lang ko` (a real run of two local processes: the table, its notes, the 'wrote' lines) is checked
# in tests/test_distributed.py::test_qkv_ring_under_torchrun_and_local, whose successful local run is this one
# too (one launch instead of two; assert_korean and words_of from here).


# ------------------------------------------------------------------ errors and the --lang flag
@pytest.mark.parametrize("argv", [
    ["inspect", TEXT, "--layer", "99"],
    ["inspect", TEXT, "--format", "pdf"],
    ["inspect", TEXT, "--layer", "0", "--head", "0", "--query", "dogs"],
    ["heads", TEXT, "--probe", "100000"],
    ["masks", "--only", "nonsense"],
    ["ring", "--kv-heads", "3"],
    ["generate", "--model", "minilm", "x", "--top-k", "3"],
    ["translate", "I love you", "--to", "xx"],
])
def test_own_errors_are_korean(capsys, argv):
    code, out, err = run(capsys, *argv, "--lang", "ko")
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err)
    problem = err.split(": ", 3)[-1]                 # after "qkv: error: FIELD: "
    assert_korean(problem, {"nonsense", "xx", "dogs", "cats", "chase", "mice", "text", "markdown", "json"})     # the values given or accepted


def test_notes_are_korean(capsys):
    long_text = " ".join(["cats"] * 300)                  # MiniLM reads 256 tokens
    code, out, err = run(capsys, "inspect", long_text, "--lang", "ko", "--format", "json")
    assert code == 0 and err == "qkv: 참고: 텍스트가 이 모델이 읽을 수 있는 길이보다 길다. 앞의 토큰 256개만 쓴다\n", err
    code, out, err = run(capsys, "embed", long_text, "short", "--lang", "ko", "--json")
    assert code == 0 and err.startswith("qkv: 참고: 텍스트 1개(#0)가 ") and err.count("\n") == 1, err
    assert_korean(err)


def test_embed_error_is_korean(capsys, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("\n"))
    code, out, err = run(capsys, "embed", "-", "--lang", "ko")
    assert code == 2 and err == "qkv: 오류: 텍스트: 임베딩할 텍스트가 없다 (표준 입력이 비어 있었다)\n", err


COMMANDS_WITH_LANG = [["inspect", TEXT], ["heads", TEXT], ["masks"], ["ring"], ["embed", TEXT],
                      ["generate", "--model", "x", "p"], ["translate", "I love you"]]


def lang_option(command: str):
    from qkv.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    return next(a for a in commands[command]._actions if "--lang" in a.option_strings)


@pytest.mark.parametrize("argv", COMMANDS_WITH_LANG, ids=lambda argv: argv[0])
def test_every_command_words_and_checks_lang_as_example_does(capsys, argv):
    code, _, example_error = run(capsys, "example", "--lang", "xx")
    assert code == 2 and example_error == "qkv: error: --lang: 'xx' is not one of en, ko\n"
    code, out, err = run(capsys, *argv, "--lang", "xx")
    assert code == 2 and out == "" and err == example_error, err
    mine, example = lang_option(argv[0]), lang_option("example")
    assert (mine.default, mine.metavar) == (example.default, example.metavar) == (None, "en|ko")   # None: the locale's
    assert mine.help.startswith("language of ") and mine.help.endswith(" (default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)")
    assert example.help.startswith("language of ") and example.help.endswith(" (default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)")


def test_no_command_imports_another():
    """Commands call the library (qkv.explain.model_text, commands/_options), never each other —
    except `explain`, which reuses `example`'s options (owned elsewhere)."""
    folder = Path(__file__).resolve().parents[1] / "src" / "qkv" / "commands"
    from qkv.commands import COMMANDS

    for name in COMMANDS:
        if name == "explain":
            continue
        source = (folder / f"{name}.py").read_text(encoding="utf-8")
        imported = set(re.findall(r"from \.(\w+) import|from qkv\.commands\.(\w+)|from \.\.commands\.(\w+)", source))
        others = {m for group in imported for m in group if m and m in COMMANDS}
        assert not others, (name, others)
    translator = (folder.parent / "translator" / "explain.py").read_text(encoding="utf-8")
    assert "commands" not in translator


def test_every_cli_text_key_used_exists():
    """Each literal texts key the commands and qkv.explain.model_text ask for is in both tables."""
    from qkv.explain import texts

    root = Path(__file__).resolve().parents[1] / "src" / "qkv"
    files = [root / "explain" / "model_text.py"] + sorted((root / "commands").glob("*.py"))
    pattern = re.compile(r"""["'](cli\.[a-z_.]*[a-z_])["']""")
    used = {key for path in files for key in pattern.findall(path.read_text(encoding="utf-8"))}
    assert len(used) > 60, len(used)
    assert used <= set(texts.EN) and used <= set(texts.KO), sorted(used - set(texts.EN))


def test_library_errors_with_a_text_key_answer_in_korean(capsys):
    """InputError(key=…) from the library (the translator's words, an unknown model) is said in the
    command's language; in English it is the library's own sentence."""
    code, out, err = run(capsys, "translate", "the elephant", "--to", "ko", "--lang", "ko")
    assert code == 2 and "번역기가 모르는 단어가 있다: 'elephant'" in err and "unknown word" not in err
    code, out, err = run(capsys, "translate", "the elephant", "--to", "ko")
    assert code == 2 and "unknown word 'elephant'" in err
    code, out, err = run(capsys, "inspect", "cat", "--model", "/nonexistent/model", "--lang", "ko")
    assert code == 2 and "알 수 없는 모델" in err and "unknown model" not in err
