"""Every command and worked example run with --lang ko says no English word outside an allow-list: a
net by class (the by-hand comparison's step names, the shape table's step column, "scores·scale",
"memory", a --query error's token names, a benchmark's raw exception were each found English here).

The allow-list (`ALLOWED` of test_cli_korean, `SHOWN_AS_TYPED` of test_cli_lang_ko) holds commands,
symbols, file and model names; here are added what a run shows as its input: the examples' tokens and
sentences (the posts' English sentences), the post's own title, and the terms the posts write in Latin
letters. LaTeX commands of --format markdown (\\begin, \\text, …) are set aside; the words inside
\\text{…} are checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from qkv import examples
from qkv.cli import main
from qkv.commands import COMMANDS
from qkv.explain import texts

from test_cli_korean import words_of
from test_cli_lang_ko import korean_only

ROOT = Path(__file__).resolve().parents[1]
# Latin words the posts themselves write in Korean text, and what else a run shows as its input
POST_TERMS = {"Attention", "Core", "reshape", "Self", "Cross", "Multi", "head",   # post titles and 000's "Core
              "projection", "QK",                                                 # Attention", "reshape"; QKᵀ
              "dec", "enc", "final", "concat",  # the subscripts of x_dec, x_enc, z_final, z_concat (the posts')
              "of",                            # the group meeting's answer ("of cash or credit card")
              "Is", "All", "You", "Need"}      # the paper's title, "Attention Is All You Need"
LATEX = re.compile(r"\\(?:begin|end|color|operatorname)\{[^{}]*\}|\\(?!text\{)[A-Za-z]+")


def _example_words() -> set[str]:
    """The tokens of every worked example, as its trace names them (the posts' sentences: "I love machine
    learning", "Cash or credit card? I have a lot")."""
    found = set()
    for name in examples.names():
        meta = examples.run(name).meta
        found |= words_of(*meta.get("tokens", []), *meta.get("key_tokens", []),
                          *[t for scene in meta.get("scenes", []) for t in scene["tokens"]])
    return found


ALLOWED = POST_TERMS | _example_words() | words_of(*examples.names(), *COMMANDS)


def english(out: str, allowed=()) -> list[str]:
    return korean_only(LATEX.sub(" ", out), ALLOWED | set(allowed))


def run(capsys, *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main([*argv, "--lang", "ko"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


MODES = [[], ["--by-hand"], ["--digits", "2"], ["--by-hand", "--digits", "2"], ["--format", "markdown"]]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: " ".join(m) or "default")
@pytest.mark.parametrize("name", examples.names())
def test_every_example_in_korean(capsys, name, mode):
    code, out = run(capsys, "example", name, *mode)
    assert code == 0 and english(out) == [], english(out)


@pytest.mark.parametrize("mode", MODES[:2], ids=["default", "by-hand"])
@pytest.mark.parametrize("file", ["my-example.toml", "my-cross-example.json"])
def test_user_examples_in_korean(capsys, file, mode):
    path = ROOT / "examples" / file
    code, out = run(capsys, "explain", str(path), *mode)
    assert code == 0 and english(out, words_of(path.read_text())) == [], english(out)


@pytest.mark.parametrize("argv", [
    ["example", "--list"],
    ["example", "projection", "--query", "9"],                 # the tokens listed are their Korean names
    ["example", "self-attention", "--query", "nobody"],
    ["masks"], ["doctor"],
    ["translate", "I love you", "--to", "ko", "--derive", "1"],
    ["translate", "I love you", "--to", "ko", "--explain"],
], ids=lambda argv: " ".join(argv[:3]))
def test_commands_in_korean(capsys, argv):
    code, out = run(capsys, *argv)
    assert english(out, {"love", "you", "nobody", "cpu"}) == []   # cpu: torch's version (2.13.0+cpu), (english(out), out[:2000])


def test_a_custom_scale_is_named_in_korean(capsys):
    """A model's head whose scores are scaled by other than 1/√d_k (or any trace): the line is worded."""
    from qkv.explain.document import _worded

    assert _worded(texts.text("ko", "sym.scores_scale")).plain == "점수·배율"
    assert english(texts.text("ko", "sym.scores_scale") + texts.text("ko", "sym.bias")) == []


def test_every_step_name_is_korean():
    """Every step a trace records (qkv.trace.STEPS) and every part that groups steps has a Korean name."""
    from qkv.trace import STEPS

    names = [*STEPS, "head 1/scores", "layer 2/weights", "lot/weights", "question/out", "rows/scaled_scores",
             "columns/difference", "heads_check/concat", "by hand/y", "drift/out"]
    for name in names:
        said = texts.step_name("ko", name)
        assert english(said) == [], (name, said)
        # English too names a step in words (tests/test_step_words.py); the API's name only in JSON keys and code
        assert "_" not in texts.step_name("en", name).replace("W_", ""), name


def test_a_benchmark_failure_is_said_in_korean():
    """A row that failed with torch's own exception: its words are English only, so Korean names them and
    points to --lang en; JSON (the English) keeps them."""
    from qkv.bench import python_said, said

    for key in ("cli.bench.skip.failed", "cli.bench.skip.no_flex_backward", "cli.bench.skip.flex_failed",
                "cli.bench.skip.no_mha"):
        sentence = said(key, error=python_said("RuntimeError: flex_attention does not support backward on CPU"))
        assert "RuntimeError: flex_attention does not support backward on CPU" in str(sentence)
        assert english(sentence.in_lang("ko"), {"torch", "flex_attention"}) == [], sentence.in_lang("ko")


@pytest.mark.parametrize("argv", [
    ["inspect", "The cat sat on the mat.", "--layer", "2", "--head", "5", "--query", "cat"],
    ["heads", "The cat sat on the mat."],
    ["embed", "The cat sat.", "A cat sat on the mat."],
], ids=lambda argv: argv[0])
def test_model_commands_in_korean(capsys, argv):
    """MiniLM's derivation (its scores are scaled by 1/√d_k with d_k = 32 … or by what the model says)."""
    code, out = run(capsys, *argv)
    assert code == 0 and english(out, words_of(*argv, "A", "minilm", "MiniLM", "all", "L6", "v2")) == [], english(out)


# Wordings a native reader stumbles on, each with the word the Korean texts use instead (read 6 December).
AWKWARD = {
    "넘치": "오버플로 (overflow: 계산이 ‘넘친다’고 하지 않는다)",
    "아니오": "아니요 (표준어)",
    "가공되지 않은": "스케일링하기 전의 (raw의 직역)",
    "걸러 들은": "반영한",
    "(concat)": "이어 붙인 (영어를 괄호에 남기지 않는다)",
    "가진 객체": "이루어진 객체 (‘have’의 직역)",
    "계산과 같은 계산": "결과가 같다 (같은 말의 반복)",
}


def test_no_awkward_korean_wording():
    found = {(key, word) for key, sentence in texts.KO.items() for word in AWKWARD if word in sentence}
    assert not found, sorted(found)


@pytest.mark.parametrize("name", examples.names())
def test_a_korean_title_is_not_glossed_in_korean(capsys, name):
    """The posts' titles are Korean: after 「title」 a Korean reader gets no gloss in parentheses (an English
    reader does)."""
    code, out = run(capsys, "example", name)
    assert code == 0 and "」의 예제이다" in " ".join(out.split()), out[:400]
    capsys.readouterr()
    assert main(["example", name]) == 0 and "” (" in capsys.readouterr().out.split("\n\n")[0]
