"""What an adversarial pass over the new entry points broke (translate, the top-level command line,
the new model families, serve's same-origin check), one test per class of failure. Each test fails on
the code before its fix; docs/reliability.md §9 lists the classes.
"""

from __future__ import annotations

import json
import warnings

import pytest

import qkv
from qkv.cli import main
from qkv.translator import corpus


def _run(capsys, *argv):
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_error(capsys, *argv) -> str:
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == "", (code, out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(("qkv: error: ", "qkv: 오류: ")), err     # --lang ko: 오류
    return lines[0]


# ---------------------------------------------------------------- translate: text as people type it
@pytest.mark.parametrize("typed", [
    "'I love you'", '"I love you"', "“I love you”", "«I love you»", "I love you;", "I love you:", "I love you…",
    "¿I love you?", "(I love you)",                                    # punctuation around words (was: unknown word)
    "Ｉ ｌｏｖｅ ｙｏｕ", "I\u3000love\u3000you",                        # full-width letters and space (NFKC)
    "I lo\u200bve you", "I love \u202eyou\u202c", "\ufeffI love you",  # invisible format characters
])
def test_translate_takes_text_as_typed(capsys, typed):
    """Quotes, semicolons, full-width letters and zero-width characters made every word "unknown"."""
    expected = " ".join(corpus.parse(["I", "love", "you"]).target("ko"))      # the grammar's own translation
    code, out, err = _run(capsys, "translate", typed, "--to", "ko")
    assert code == 0 and err == "", err
    assert out.splitlines()[0] == expected


@pytest.mark.parametrize("typed", ["I-love-you", "I love yo'u", "I lové you"])
def test_translate_keeps_punctuation_inside_a_word(capsys, typed):
    assert "unknown word" in _one_error(capsys, "translate", typed)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_an_unknown_word_is_shown_cut_in_both_languages(capsys, lang):
    """A 10,000-letter word was echoed whole in the English error line (the Korean one cut it at 40)."""
    line = _one_error(capsys, "translate", "I love " + "x" * 10_000, "--lang", lang)
    assert "x" * 39 + "…" in line and "x" * 41 not in line and len(line) < 1000


# ---------------------------------------------------------------- one CLI voice: case and misspelt options
@pytest.mark.parametrize("argv, guess", [
    (["EXAMPLE"], "'example'"), (["Translate", "I love you"], "'translate'"),
    (["--lang", "KO"], "'ko'"), (["translate", "I love you", "--to", "JA"], "'ja'"),
])
def test_did_you_mean_ignores_case(capsys, argv, guess):
    """'EXAMPLE', --lang KO: no guess was offered (difflib compares case-sensitively)."""
    assert f"did you mean {guess}?" in _one_error(capsys, *argv)


@pytest.mark.parametrize("argv, guess", [
    (["--lnag", "ko"], "'--lang'"), (["--versio"], "'--version'"), (["--by-hnad"], "'--by-hand'"),
    (["translate", "I love you", "--too", "ko"], "'--to'"), (["doctor", "--install-chek"], "'--install-check'"),
    (["heads", "--modle", "x", "text"], "'--model'"),
])
def test_a_misspelt_option_gets_did_you_mean(capsys, argv, guess):
    """Misspelt commands got "did you mean"; misspelt options only "unrecognized arguments"."""
    line = _one_error(capsys, *argv)
    assert "unrecognized arguments" in line and f"did you mean {guess}?" in line


@pytest.mark.parametrize("argv, command", [
    (["example", "self-attention", "--qeury", "2"], "example"), (["--lnag", "ko"], "example"),
    (["translate", "I love you", "--too", "ko"], "translate"), (["doctor", "--install-chek"], "doctor"),
    (["inspect", "a", "--lnag", "ko", "--lang", "ko"], "inspect"),
])
def test_an_unknown_option_points_to_its_commands_help(capsys, argv, command):
    """An option of no command pointed to 'qkv --help', which lists commands, not the options one can give
    (found in the learner's pass of issue 29); a missing argument already pointed to the command's help."""
    line = _one_error(capsys, *argv)
    assert f"'qkv {command} --help'" in line and "'qkv --help'" not in line, line


def test_an_option_nothing_resembles_gets_no_guess(capsys):
    line = _one_error(capsys, "--zzzzzz")
    assert "unrecognized arguments: --zzzzzz" in line and "did you mean" not in line


@pytest.mark.parametrize("argv", [["--lang", "ko", "--version"], ["--by-hand", "--digits", "3", "--version"]])
def test_version_after_the_default_examples_options(capsys, argv):
    """`qkv --lang ko --version` was refused ("unrecognized arguments: --version")."""
    code, out, err = _run(capsys, *argv)
    assert code == 0 and err == "" and out.startswith(f"qkv {qkv.__version__} (")


def test_options_before_a_command_word_are_the_commands(capsys):
    """`qkv --lang ko doctor` read doctor as the default example's NAME ("NAME: 'doctor' is not one of
    …"); the options before a command word are now that command's. A value of an option is no command
    word (`--figure doctor.png` stays the example's), and `qkv --lang ko` alone is still the example."""
    from qkv.commands.doctor import report, routes

    code, out, err = _run(capsys, "--lang", "ko", "doctor")
    assert code == 0 and err == "" and out == report(routes(), "ko")
    code, out, err = _run(capsys, "--lang", "ko", "masks", "--help")
    assert code == 0 and out.startswith("사용법: qkv masks")
    code, out, err = _run(capsys, "--digits", "2", "cross-attention")
    assert code == 0 and out.startswith("Cross-attention")


# ---------------------------------------------------------------- serve: the page's own origin, spelt differently
@pytest.mark.parametrize("host, origin, allowed", [
    ("127.0.0.1:80", "http://127.0.0.1", True),           # the default port: in Host, not in Origin
    ("127.0.0.1", "http://127.0.0.1:80", True),
    ("[::1]:80", "http://[::1]", True),
    ("localhost:443", "https://localhost", "https"),
    ("localhost.:8000", "http://localhost.:8000", True),   # a fully qualified name (trailing dot)
    ("localhost:8000", "http://localhost.:8000", True),
    ("LOCALHOST:8000", "http://localhost:8000", True),
    ("localhost:8000", "http://localhost:8001", False),
    ("localhost:8000", "http://localhost", False),         # port 80 is another origin than 8000
    ("127.0.0.1:80", "https://127.0.0.1", False),
    ("localhost:8000", "null", False),
    ("localhost:8000", "http://localhost:8000/", False),
    ("localhost:8000", "http://localhost:8000@evil.example", False),
    ("localhost:8000", "http://evil.example#localhost:8000", False),
    ("localhost:8000", "http://localhost:8000.evil.example", False),
    ("[::1]:8000", "http://[::2]:8000", False),
    ("", "http://", False),                                 # no host at all is nobody's origin
])
def test_same_origin_compares_origins_not_strings(host, origin, allowed):
    """The page at http://127.0.0.1 reached with Host 127.0.0.1:80, or at http://localhost.:8000, was refused."""
    import asyncio

    from qkv.serve.app import _HostCheck, _SameOrigin

    scheme = "https" if allowed == "https" else "http"
    scope = {"type": "http", "method": "POST", "path": "/api/whatif", "scheme": scheme, "query_string": b"",
             "headers": [(b"host", host.encode()), (b"origin", origin.encode()), (b"sec-fetch-site", b"same-origin"),
                         (b"content-type", b"application/json")]}
    reached, sent = [], []

    async def app(scope, receive, send):
        reached.append(True)

    async def send(message):
        sent.append(message)

    hosts = ["127.0.0.1", "localhost", "[::1]"] if allowed else ["*"]     # a refusal must come from _SameOrigin itself
    asyncio.run(_HostCheck(_SameOrigin(app), hosts)(scope, None, send))
    assert bool(reached) == bool(allowed), (host, origin, sent[:1])


# ---------------------------------------------------------------- the new model families: config values
def _family(tmp_path, name):
    pytest.importorskip("transformers")
    from model_fixtures import copy_of

    return copy_of(tmp_path, name)


def _set(directory, **changes):
    path = directory / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


@pytest.mark.slow
@pytest.mark.parametrize("family, key, value", [
    ("gpt_neox", "layer_norm_eps", 1e308), ("qwen3", "rms_norm_eps", 1e300), ("gemma2", "final_logit_softcapping", 1e308),
    ("gemma2", "attn_logit_softcapping", 1e39), ("gemma2", "query_pre_attn_scalar", 5e38),
    ("gpt_neox", "rotary_pct", 2), ("gpt_neox", "rotary_pct", 1.5),
])
def test_a_config_number_beyond_range_is_one_line(tmp_path, capsys, family, key, value):
    """eps 1e308 printed NumPy RuntimeWarnings (it is ∞ in float32); rotary_pct 2 ended in a ValueError traceback."""
    directory = _family(tmp_path, family)
    _set(directory, **{key: value})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        line = _one_error(capsys, "generate", "--model", str(directory), "the cat", "-n", "2")
    assert f"config.json: {key}:" in line


@pytest.mark.slow
@pytest.mark.parametrize("family, tensor", [
    ("gemma2", "model.norm.weight"), ("mixtral", "model.layers.0.block_sparse_moe.experts.0.w1.weight"),
    ("gemma3", "model.layers.0.post_feedforward_layernorm.weight"), ("opt", "model.decoder.layers.1.fc1.weight"),
])
def test_a_forward_overflow_is_one_error_and_no_warnings(tmp_path, capsys, family, tensor):
    """A weight of 3e38 was refused, but only after NumPy's RuntimeWarnings (overflow in matmul …) had
    printed lines of their own on standard error."""
    import numpy as np
    from safetensors.numpy import load_file, save_file

    directory = _family(tmp_path, family)
    path = directory / "model.safetensors"
    tensors = {k: v.copy() for k, v in load_file(str(path)).items()}
    tensors[tensor][...] = np.float32(3e38)
    save_file(tensors, str(path), metadata={"format": "pt"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # a RuntimeWarning is a failure, as it is a line on stderr
        for argv in (["generate", "--model", str(directory), "the cat"],
                     ["heads", "--model", str(directory), "the cat sat on the mat"]):
            assert "forward pass is not finite" in _one_error(capsys, *argv)


@pytest.mark.slow
def test_a_library_warning_is_one_cli_line(tmp_path, capsys):
    """transformers warns and loads an eos id outside the vocabulary; so does qkv — but the command line
    printed Python's two-line form (``…/generate.py:91: UserWarning: …`` and the calling source line)."""
    directory = _family(tmp_path, "opt")
    _set(directory, eos_token_id=5000)
    code, out, err = _run(capsys, "generate", "--model", str(directory), "the cat", "-n", "2")
    assert code == 0 and out
    assert err.splitlines() == [f"qkv: warning: {directory / 'config.json'}: eos_token_id 5000 is outside the "
                                "vocabulary of 300 (ids 0 … 299); that token can never be produced"]


@pytest.mark.parametrize("command", ["generate", "heads", "inspect"])
def test_model_help_names_every_family_load_runs(capsys, command):
    """`qkv generate --help` said "model_type gpt2, llama, mistral or qwen2" after nine families were added."""
    from qkv.models import SUPPORTED

    code, out, _ = _run(capsys, command, "--help")
    text = " ".join(out.split())
    assert code == 0
    for model_type in SUPPORTED:
        if model_type != "bert" or command != "generate":
            assert model_type in text, (command, model_type)


def _grammar_words(lang: str) -> set[str]:
    """Every word the grammar writes in ``lang``, from the lexicon (corpus.target_words, one language)."""
    phrases = [corpus.Phrase(pronoun=p) for p in corpus.PRONOUNS] + [
        corpus.Phrase(determiner=d, adjective=a, noun=n) for d in corpus.DETERMINERS
        for a in (None, *corpus.ADJECTIVES) for n in corpus.NOUNS] + [
        corpus.Phrase(determiner=None, noun=n) for n in corpus.MASS_NOUNS]
    particles = ["topic", "object", "에게"] if lang == "ko" else ["topic", "を", "に", "が"]
    words = {w for phrase in phrases for particle in particles for w in phrase.target(lang, particle)}
    words |= {w for v in corpus.VERBS for form in ((v.ko, v.ko_past) if lang == "ko" else (v.ja, v.ja_past))
              for w in form.split()}                                    # たくさん 持ってる: two words
    nouns = corpus.NOUNS + corpus.MASS_NOUNS                             # choice questions: 현금이에요? …
    words |= {w for a in nouns for b in nouns if a != b for w in corpus.Choice(a, b).target(lang)}
    return words | {p.ko if lang == "ko" else p.ja for p in corpus.PLACES}


def test_outside_the_grammar_a_translation_stays_in_its_language():
    """`qkv translate "I I I" --to ja --outside-grammar` printed 私は … 나는 나는: the decoder's one
    vocabulary holds both languages, and greedy decoding took the other language's word."""
    import numpy as np

    from qkv.translator.model import PAD, load

    model = load(None)
    vocab = [w for w in model.config.source_vocab if w != PAD]
    rng = np.random.default_rng(7)
    texts = ["I I I"] + [" ".join(rng.choice(vocab, int(rng.integers(1, 17)))) for _ in range(60)]
    for lang in ("ko", "ja"):
        words = _grammar_words(lang)
        for translation in model.translate_batch(texts, lang, outside_grammar=True):
            assert set(translation.target) <= words, (translation.source, lang, translation.target)
            assert np.all((translation.probabilities > 0) & (translation.probabilities <= 1))
