"""The translator: corpus, the shipped checkpoint, cached decoding, training, the commands."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from qkv.cli import main
from qkv.translator import corpus, explain
from qkv.translator.model import Config, Translator, exact_match, load, save

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def model() -> Translator:
    return load()


# --------------------------------------------------------------------------- corpus
def test_corpus_reorders_and_marks_particles():
    """Hand-written translations of the grammar's cases (the lexicon's own words, put together as
    Korean and Japanese grammar say): SOV order, topic/object particles by the last syllable, the
    verbs whose objects take に/が/에게, the place after the subject, past tense."""
    P, V, N = corpus.PRONOUNS, {v.base: v for v in corpus.VERBS}, {n.en: n for n in corpus.NOUNS}
    I, you, she = (corpus.Phrase(pronoun=P[i]) for i in (0, 1, 3))
    cases = [
        (corpus.Sentence(I, V["love"], you), "I love you", "나는 너를 사랑해", "私は あなたを 愛してる"),
        (corpus.Sentence(she, V["like"], corpus.Phrase(noun=N["teacher"])), "she likes the teacher",
         "그녀는 선생님을 좋아해", "彼女は 先生が 好きだ"),
        (corpus.Sentence(corpus.Phrase(determiner="my", adjective="big", noun=N["dog"]), V["phone"], you,
                         past=True, place=corpus.PLACES[0]),
         "my big dog phoned you in the park", "내 큰 개는 공원에서 너에게 전화했어", "私の 大きい 犬は 公園で あなたに 電話した"),
        (corpus.Sentence(corpus.Phrase(noun=N["king"]), V["wait for"], corpus.Phrase(determiner="your", noun=N["cat"])),
         "the king waits for your cat", "왕은 너의 고양이를 기다려", "王は あなたの 猫を 待つ"),
    ]
    for sentence, en, ko, ja in cases:
        assert " ".join(sentence.english()) == en
        assert " ".join(sentence.target("ko")) == ko
        assert " ".join(sentence.target("ja")) == ja


def test_held_out_compositions_never_reach_training():
    rng = np.random.default_rng(5)
    stream = corpus.training_sentences(rng)
    seen = {next(stream).composition for _ in range(3000)}
    held = corpus.held_out_sentences(200)
    assert all(corpus.is_held_out(s.composition) for s in held)
    assert not seen & {s.composition for s in held}
    # every word of the held-out sentences does occur in training, in other combinations
    training_words = {w for _ in range(3000) for s in [next(stream)] for w in s.english()}
    assert {w for s in held for w in s.english()} <= training_words
    assert len({tuple(s.english()) for s in held}) == 200


# --------------------------------------------------------------------------- the shipped model
def test_shipped_checkpoint_translates_held_out_sentences(model):
    """≥ 95 % exact match on 300 sentences whose (subject, verb, object) composition never occurs
    in training, for both languages; the examples of the docs are exact."""
    held = corpus.held_out_sentences(300)
    for lang in corpus.LANGUAGES:
        assert exact_match(model, held, lang) >= 0.95
    assert " ".join(model.translate("I love you", "ja").target) == "私は あなたを 愛してる"
    assert " ".join(model.translate("I love you.", "ko").target) == "나는 너를 사랑해"


def test_cached_decoding_equals_uncached(model):
    texts = ["I love you", "my small bird saw the kind teacher in the garden", "they waited for him"]
    for lang in corpus.LANGUAGES:
        cached = model.translate_batch(texts, lang)
        uncached = model.translate_batch(texts, lang, use_cache=False)
        for a, b in zip(cached, uncached):
            assert a.target == b.target
            np.testing.assert_allclose(a.cross_weights, b.cross_weights, atol=2e-6)
        one = model.translate(texts[1], lang, use_cache=False)     # batch padding changes nothing
        assert one.target == cached[1].target
        np.testing.assert_allclose(one.cross_weights, cached[1].cross_weights, atol=2e-6)


def test_numpy_forward_equals_torch_forward(model):
    """Inference (NumPy) and training (torch) run the same block code: one forward pass, float64
    weights in both, same logits."""
    params64 = {k: v.astype(np.float64) for k, v in model.params.items()}
    numpy_model = Translator(model.config, params64)
    torch_model = Translator(model.config, {k: torch.from_numpy(v) for k, v in params64.items()})
    source = np.array([[5, 9, 3, 0], [7, 2, 11, 4]])
    source_mask = source != 0
    target = np.array([[2, 40, 41], [3, 50, 60]])
    expected = numpy_model.decode(target, numpy_model.encode(source, source_mask), source_mask)
    got = torch_model.decode(torch.from_numpy(target),
                             torch_model.encode(torch.from_numpy(source), torch.from_numpy(source_mask)),
                             torch.from_numpy(source_mask))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-10)


def test_cross_attention_aligns_and_reorders(model):
    """The learned alignment: the last generated word (the verb) reads the English verb most,
    the first (the subject) reads the subject — the reordering SVO → SOV."""
    for lang in corpus.LANGUAGES:
        t = model.translate("I love you", lang)
        weights = explain.alignment(t)                                  # (T, S)
        np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)
        assert t.source[int(np.argmax(weights[-1]))] == "love"
        assert t.source[int(np.argmax(weights[1]))] == "you"


# --------------------------------------------------------------------------- training
@pytest.mark.slow
def test_short_training_lowers_the_loss_and_is_deterministic(tmp_path):
    from qkv.translator.train import TrainConfig, train

    small = Config(d_model=16, n_heads=2, d_ff=32, n_encoder=1, n_decoder=1)
    tc = TrainConfig(steps=40, batch_size=16, learning_rate=2e-2, warmup=5, seed=3)
    model_a, losses_a = train(tc, config=small)
    _, losses_b = train(tc, config=small)
    assert losses_a == losses_b
    start, end = np.mean(losses_a[:5]), np.mean(losses_a[-5:])
    assert end < 0.8 * start and end < np.log(len(small.target_vocab)) - 1   # well below guessing uniformly
    path = save(tmp_path / "small.safetensors", model_a.to_numpy())
    again = load(path)
    for name, value in model_a.to_numpy().params.items():
        np.testing.assert_array_equal(again.params[name], value)


def test_train_command_writes_a_checkpoint(tmp_path, capsys, monkeypatch):
    from qkv.translator import train as train_module

    monkeypatch.setattr(train_module, "Config", lambda: Config(d_model=8, n_heads=2, d_ff=8, n_encoder=1,
                                                               n_decoder=1))
    out = tmp_path / "t.safetensors"
    assert main(["train", "translator", "--steps", "3", "--batch-size", "4", "--eval", "5", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "held-out exact match" in captured.out and f"wrote {out}" in captured.err     # `qkv: wrote FILE` (qkv.cli)
    assert load(out).config.d_model == 8


# --------------------------------------------------------------------------- commands
def test_translate_command(capsys):
    assert main(["translate", "I love you", "--to", "ja"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "私は あなたを 愛してる" and lines[1].startswith("probability of each chosen token: 私は ")
    assert main(["translate", "I love you"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "ko: 나는 너를 사랑해" and lines[2] == "ja: 私は あなたを 愛してる"


@pytest.mark.parametrize("lang, words", [("en", ["query", "love"]), ("ko", ["Query", "love"])])
def test_translate_explain(capsys, lang, words):
    assert main(["translate", "I love you", "--to", "ko", "--explain", "--lang", lang]) == 0
    text = capsys.readouterr().out
    assert all(w in text for w in words)
    assert "사랑해" in text


def test_derivation_trace_holds_the_decoding_weights(model):
    """The step-by-step trace of one generated word's cross-attention (a teacher-forced rerun with a
    recorder) holds the weights the cached decoding used, and Q from the decoder, K/V from memory."""
    t = model.translate("my big dog saw you in the park", "ja")
    for word in (1, len(t.target)):
        trace = explain.cross_attention_trace(model, t, word=word, layer=0)
        np.testing.assert_allclose(trace["weights"].value[:, word - 1], t.cross_weights[0][:, word - 1], atol=2e-6)
        assert trace["memory"].value.shape == (len(t.source), model.config.d_model)
        assert trace["q_heads"].value.shape == (model.config.n_heads, len(t.target), 16)
        assert trace["k_heads"].value.shape == (model.config.n_heads, len(t.source), 16)


def test_translate_derive(capsys):
    assert main(["translate", "I love you", "--to", "ja", "--derive", "2", "--digits", "3"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("私は あなたを 愛してる\n")
    assert "私は ◀" in text and "Cross-attention" in text


def test_translate_figure(tmp_path, capsys):
    path = tmp_path / "align.png"
    assert main(["translate", "my big dog saw you", "--to", "ja", "--figure", str(path)]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, message", [
    (["translate", "I love pizza"], "unknown word 'pizza'"),
    (["translate", "   "], "empty"),
    (["translate", " ".join(["you"] * 17)], "over the translator's limit of 16"),
    (["translate", "I love you", "--to", "fr"], "--to"),
    (["translate", "I love you", "--figure", "x.png"], "one language"),
    (["translate", "I love you", "--to", "ko", "--head", "9", "--explain"], "--head"),
    (["translate", "I love you", "--checkpoint", "/nonexistent/t.safetensors"], "not found"),
    (["translate", "I love you", "--to", "ko", "--derive", "4"], "--derive"),
    (["translate", "I love you", "--to", "ko", "--figure", "/nonexistent/a.png"], "does not exist"),
    (["train", "translator", "--steps", "0"], "--steps"),
    (["train", "translator", "--out", "/nonexistent/dir/t.safetensors"], "does not exist"),
])
def test_bad_input_is_one_line_exit_2(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("qkv: error:") and err.count("\n") == 1 and message in err


def test_translate_needs_no_torch(tmp_path):
    """The shipped model runs with NumPy only: torch is never imported by `qkv translate`."""
    import subprocess

    code = ("import sys\n"
            "from qkv.cli import main\n"
            "status = main(['translate', 'I love you', '--to', 'ko', '--explain'])\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n"
            "raise SystemExit(status)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "나는 너를 사랑해" in done.stdout


# --------------------------------------------------------------------------- the grammar: what the translator knows
ISSUE_SENTENCES = [   # issue 20 item 6: known words outside the grammar, which the model translated without a warning
    ("the child called my friend at the park", "at the park", "place"),
    ("she waited in the park", "in", "expected"),
    ("I love love you", "love", "expected"),
    ("I love you you", "you", "place"),
]


def grammar_regex():
    """The grammar's sentences as one regular expression over the lexicon (an independent statement of
    corpus.py's rules: subject, verb agreeing unless past, object, then nothing or one place)."""
    import re

    def alt(words):
        return "(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + ")"

    noun_phrase = f"{alt(corpus.DETERMINERS)}(?: {alt(corpus.ADJECTIVES)})? {alt(n.en for n in corpus.NOUNS)}"
    third = alt([p.subject for p in corpus.PRONOUNS if p.third_singular]) + "|" + noun_phrase
    other = alt([p.subject for p in corpus.PRONOUNS if not p.third_singular])
    past = [v.past for v in corpus.VERBS]
    verb_third, verb_other = alt([v.third for v in corpus.VERBS] + past), alt([v.base for v in corpus.VERBS] + past)
    obj = alt([p.object for p in corpus.PRONOUNS]) + "|" + noun_phrase
    place = alt(p.en for p in corpus.PLACES)
    return re.compile(f"(?:(?:{third}) {verb_third}|(?:{other}) {verb_other}) (?:{obj})(?: {place})?")


def test_parse_reads_back_every_generated_sentence():
    rng = np.random.default_rng(11)
    regex = grammar_regex()
    for _ in range(3000):
        sentence = corpus.sample_sentence(rng)
        assert corpus.parse(sentence.english()) == sentence
        assert regex.fullmatch(" ".join(sentence.english()))


def test_parse_refuses_exactly_what_the_grammar_does_not_generate():
    """Mutated grammar sentences (a word repeated, dropped, swapped with its neighbour, replaced or inserted):
    the parser accepts a word list iff the independent regular expression matches it, and a refusal names
    the part outside the grammar in its message."""
    from qkv.translator.model import tokenize

    rng = np.random.default_rng(12)
    regex = grammar_regex()
    vocabulary = corpus.source_words()
    counts = {True: 0, False: 0}
    for _ in range(4000):
        words = corpus.sample_sentence(rng).english()
        i = int(rng.integers(len(words)))
        kind = int(rng.integers(5))
        if kind == 0:
            words = words[:i + 1] + words[i:]                           # a repeated word
        elif kind == 1 and len(words) > 1:
            words = words[:i] + words[i + 1:]
        elif kind == 2 and i + 1 < len(words):
            words = words[:i] + [words[i + 1], words[i]] + words[i + 2:]
        elif kind == 3:
            words = words[:i] + [vocabulary[rng.integers(len(vocabulary))]] + words[i + 1:]
        else:
            words = words[:i] + [vocabulary[rng.integers(len(vocabulary))]] + words[i:]
        in_grammar = bool(regex.fullmatch(" ".join(words)))
        counts[in_grammar] += 1
        try:
            parsed = corpus.parse(words)
        except corpus.OutsideGrammar as problem:
            assert not in_grammar, words
            assert 0 <= problem.start <= problem.stop <= len(words)
            if problem.stop > problem.start:
                assert f"“{' '.join(words[problem.start:problem.stop])}”" in str(problem)
            assert tokenize(" ".join(words)) == words
        else:
            assert in_grammar and parsed.english() == words, words
    assert counts[False] > 3000 and counts[True] > 100, counts          # both sides of the boundary are tried


@pytest.mark.parametrize("text, part, kind", ISSUE_SENTENCES)
def test_issue_sentences_are_refused_naming_the_part(model, text, part, kind):
    with pytest.raises(corpus.OutsideGrammar) as caught:
        model.translate(text, "ja")
    problem = caught.value
    assert problem.key == f"error.translator.grammar.{kind}"
    assert f"“{part}” is outside the translator's grammar" in str(problem)
    assert f"“{part}”: 번역기의 문법 밖이다" in problem.say("ko")
    # asked to translate anyway, the result carries the same problem
    guessed = model.translate(text, "ja", outside_grammar=True)
    assert guessed.outside_grammar is not None and guessed.outside_grammar.key == problem.key
    assert model.translate("she waited for the dog in the park", "ja", outside_grammar=True).outside_grammar is None


@pytest.mark.parametrize("text, part", [("me love you", "me"), ("I love I", "I"), ("I loves you", "loves"),
                                        ("dog saw you", "dog"), ("the big small dog saw you", "small"),
                                        ("love you", "love"), ("I love you in the park at home", "at home")])
def test_other_grammar_errors_name_their_part(model, text, part):
    with pytest.raises(corpus.OutsideGrammar, match=f"“{part}” is outside"):
        model.source_ids(text)


def test_a_sentence_that_stops_early_says_what_should_follow(model):
    with pytest.raises(corpus.OutsideGrammar, match="stops too early .* after “she waited” it expects: for$"):
        model.source_ids("she waited")
    with pytest.raises(corpus.OutsideGrammar, match="after “I love the” it expects: big, small"):
        model.source_ids("I love the")


def test_outside_grammar_on_the_command_line(capsys):
    assert main(["translate", "the child called my friend at the park", "--to", "ja"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "“at the park” is outside the translator's grammar" in err
    assert main(["translate", "the child called my friend at the park", "--to", "ja", "--lang", "ko"]) == 2
    assert "“at the park”: 번역기의 문법 밖이다" in capsys.readouterr().err
    assert main(["translate", "she waited in the park", "--outside-grammar"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("“in” is outside the translator's grammar") and out[0].endswith("the model's guess")
    assert out[1].startswith("ko: ") and out[4].startswith("ja: ") and "unsure" in out[3]
    assert main(["translate", "she waited in the park", "--outside-grammar", "--to", "ko", "--lang", "ko"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("그래서 아래 번역은 모델의 추측이다") and out[2].startswith("모델이 고른 각 토큰의 확률: ")


# --------------------------------------------------------------------------- how sure the model is
def test_probabilities_are_the_softmax_of_the_teacher_forced_logits(model):
    """Each chosen token's probability (and </s>'s) equals torch's softmax of the logits of one
    uncached, teacher-forced forward over the whole output, in float64 weights; greedy chose the argmax."""
    params64 = {k: v.astype(np.float64) for k, v in model.params.items()}
    reference = Translator(model.config, params64)
    index = {w: i for i, w in enumerate(model.config.target_vocab)}
    texts = ["I love you", "my small bird saw the kind teacher in the garden", "she waited in the park"]
    for text in texts:
        for lang in corpus.LANGUAGES:
            t = model.translate(text, lang, outside_grammar=True)
            source = np.array([model.source_ids(text, grammar=False)])
            tokens = [index["<" + lang + ">"]] + [index[w] for w in t.target]
            logits = reference.decode(np.array([tokens]), reference.encode(source))[0]      # (T + 1, Vt)
            p = torch.softmax(torch.from_numpy(logits), dim=-1).numpy()
            chosen = tokens[1:] + [index["</s>"]]
            expected = p[np.arange(len(chosen)), chosen]
            np.testing.assert_allclose(t.probabilities, expected[:-1], atol=2e-5)
            assert t.end_probability == pytest.approx(expected[-1], abs=2e-5)
            assert np.all(p[np.arange(len(chosen)), chosen] >= p.max(axis=-1) - 1e-5)
            assert t.sequence_probability == pytest.approx(np.prod(expected), abs=1e-4)
    # cached and uncached decoding agree on the probabilities too
    a, b = model.translate(texts[1], "ko"), model.translate(texts[1], "ko", use_cache=False)
    np.testing.assert_allclose(a.probabilities, b.probabilities, atol=1e-6)


def test_the_command_says_how_sure_the_model_is(capsys, model):
    t = model.translate("she waited in the park", "ja", outside_grammar=True)
    assert main(["translate", "she waited in the park", "--to", "ja", "--outside-grammar"]) == 0
    lines = capsys.readouterr().out.splitlines()
    shown = " · ".join(f"{w} {p:.3f}" for w, p in zip(t.target, t.probabilities))
    assert lines[2] == (f"probability of each chosen token: {shown} · (end) {t.end_probability:.3f}; "
                        f"of the whole sentence: {t.sequence_probability:.3f}")
    assert t.sequence_probability < 0.5                     # this guess is unsure, and the output says where
    low = int(np.argmin(t.probabilities))
    assert lines[3] == f"the model is unsure: it gave “{t.target[low]}” a probability of only {t.probabilities[low]:.3f}"


# --------------------------------------------------------------------------- malformed checkpoints: one line each
def _shipped():
    from safetensors.numpy import load_file

    from qkv.translator.model import DEFAULT_CHECKPOINT, checkpoint_metadata

    metadata = {k: (v if isinstance(v, str) else __import__("json").dumps(v))
                for k, v in checkpoint_metadata(DEFAULT_CHECKPOINT).items()}
    return load_file(str(DEFAULT_CHECKPOINT)), metadata


def _write(path, tensors, metadata):
    from safetensors.numpy import save_file

    save_file(tensors, str(path), metadata=metadata)
    return path


def _config_with(metadata, **changes):
    import json

    config = json.loads(metadata["config"])
    config.update(changes)
    return {**metadata, "config": json.dumps(config)}


def _raw(path, header: bytes, body: bytes = b""):
    path.write_bytes(len(header).to_bytes(8, "little") + header + body)
    return path


def _malformed(kind, tmp_path):
    import json
    import os

    tensors, metadata = _shipped()
    p = tmp_path / "bad.safetensors"
    if kind == "device":
        return "/dev/zero"
    if kind == "directory":
        return str(tmp_path)
    if kind == "fifo":
        os.mkfifo(p)
        return str(p)
    if kind == "empty":
        p.write_bytes(b"")
    elif kind == "not safetensors":
        p.write_bytes(b"\xff" * 64)
    elif kind == "header not JSON":
        _raw(p, b"{not json")
    elif kind == "header a list":
        _raw(p, b"[1, 2, 3]")
    elif kind == "metadata not strings":
        _raw(p, json.dumps({"__metadata__": {"format": 3}}).encode())
    elif kind == "no format":
        _write(p, tensors, {k: v for k, v in metadata.items() if k != "format"})
    elif kind == "no config":
        _write(p, tensors, {k: v for k, v in metadata.items() if k != "config"})
    elif kind == "config not JSON":
        _write(p, tensors, {**metadata, "config": "{oops"})
    elif kind == "config a list":
        _write(p, tensors, {**metadata, "config": "[64, 4]"})
    elif kind == "config field missing":
        config = json.loads(metadata["config"])
        del config["d_ff"]
        _write(p, tensors, {**metadata, "config": json.dumps(config)})
    elif kind == "config size huge":
        _write(p, tensors, _config_with(metadata, d_model=10**9))
    elif kind == "config size a string":
        _write(p, tensors, _config_with(metadata, n_heads="4"))
    elif kind == "heads do not divide":
        _write(p, tensors, _config_with(metadata, n_heads=3))
    elif kind == "vocab not a list":
        _write(p, tensors, _config_with(metadata, source_vocab="the cat"))
    elif kind == "vocab repeats":
        config = json.loads(metadata["config"])
        _write(p, tensors, _config_with(metadata, source_vocab=config["source_vocab"] + ["cat"]))
    elif kind == "missing weight":
        _write(p, {k: v for k, v in tensors.items() if k != "decoder_norm.bias"}, metadata)
    elif kind == "extra weight":
        _write(p, {**tensors, "surprise": np.zeros(3, np.float32)}, metadata)
    elif kind == "int weights":
        _write(p, {**tensors, "encoder_norm.bias": np.zeros(64, np.int64)}, metadata)
    elif kind == "wrong shape":
        _write(p, {**tensors, "encoder_norm.bias": np.zeros(63, np.float32)}, metadata)
    elif kind == "NaN weight":
        bad = tensors["decoder.1.mlp.w_in"].copy()
        bad[3, 5] = np.nan
        _write(p, {**tensors, "decoder.1.mlp.w_in": bad}, metadata)
    elif kind == "inf weight":
        _write(p, {**tensors, "source_embedding": np.full_like(tensors["source_embedding"], np.inf)}, metadata)
    elif kind == "truncated":
        _write(p, tensors, metadata)
        p.write_bytes(p.read_bytes()[:-1000])
    return str(p)


CHECKPOINT_CASES = {
    "device": "character device", "directory": "is a directory", "fifo": "named pipe",
    "empty": "shorter than the 8-byte", "not safetensors": "the header says", "header not JSON": "header is not JSON",
    "header a list": "header is a JSON list", "metadata not strings": "__metadata__ is not an object of strings",
    "no format": "not a qkv translator checkpoint", "no config": "config is missing",
    "config not JSON": "config is not JSON", "config a list": "config is a JSON list",
    "config field missing": "wrong fields (missing: d_ff", "config size huge": "d_model is 1000000000",
    "config size a string": "n_heads is '4'", "heads do not divide": "does not split into 3 heads",
    "vocab not a list": "source_vocab is not a list", "vocab repeats": "source_vocab lists a word twice",
    "missing weight": "missing 1: decoder_norm.bias", "extra weight": "unexpected 1: 'surprise'",
    "int weights": "encoder_norm.bias is 'I64'", "wrong shape": "encoder_norm.bias has shape (63,)",
    "NaN weight": "decoder.1.mlp.w_in holds 1 values that are not finite",
    "inf weight": "source_embedding holds", "truncated": "not a valid safetensors file",
}


@pytest.mark.parametrize("kind", list(CHECKPOINT_CASES))
def test_a_malformed_checkpoint_is_one_error_line(kind, tmp_path, capsys):
    """Every class of broken checkpoint (issue 22: 9 of 13 gave tracebacks, /dev/zero read until OOM, NaN
    weights were accepted): exit 2, one line naming the file and the problem; the library raises InputError."""
    from qkv.errors import InputError

    path = _malformed(kind, tmp_path)
    assert main(["translate", "I love you", "--checkpoint", path]) == 2
    err = capsys.readouterr().err
    assert err.startswith("qkv: error:") and err.count("\n") == 1 and CHECKPOINT_CASES[kind] in err, err
    with pytest.raises(InputError, match=CHECKPOINT_CASES[kind].replace("(", r"\(").replace(")", r"\)")):
        load(path)


def test_finite_weights_whose_output_overflows_are_refused_not_printed(tmp_path, capsys):
    """One weight of 3e38 is finite, so the checkpoint loads, but the forward pass overflows: the old
    code printed tokens (argmax of NaN) with exit 0; now one line, in English or Korean."""
    tensors, metadata = _shipped()
    big = tensors["decoder.0.mlp.w_in"].copy()
    big[:, 0] = 3e38
    path = _write(tmp_path / "big.safetensors", {**tensors, "decoder.0.mlp.w_in": big}, metadata)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # NumPy's overflow warnings would be lines of their own
        assert main(["translate", "I love you", "--checkpoint", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "output scores are not finite" in err
    assert main(["translate", "I love you", "--checkpoint", str(path), "--lang", "ko"]) == 2
    assert "출력 점수가 유한하지 않다" in capsys.readouterr().err


def test_save_refuses_non_finite_weights_and_writes_nothing(model, tmp_path):
    params = dict(model.params)
    params["encoder_norm.weight"] = np.full_like(params["encoder_norm.weight"], np.nan)
    with pytest.raises(ValueError, match="not finite"):
        save(tmp_path / "nan.safetensors", Translator(model.config, params))
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- training: bounded, and never non-finite
@pytest.mark.parametrize("option, value", [("--seed", "-1"), ("--seed", str(2**32)), ("--learning-rate", "1e308"),
                                           ("--learning-rate", "inf"), ("--learning-rate", "nan"),
                                           ("--learning-rate", "0"), ("--learning-rate", "１e-3"),
                                           ("--learning-rate", "1_0"), ("--batch-size", "100000000"),
                                           ("--eval", "100000000"), ("--steps", "100000000"), ("--eval", "-1")])
def test_train_options_are_bounded_before_training(option, value, tmp_path, capsys):
    out = tmp_path / "t.safetensors"
    assert main(["train", "translator", option, value, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("qkv: error:") and err.count("\n") == 1 and option in err
    assert not out.exists()


def test_train_config_refuses_what_the_command_refuses():
    from qkv.translator.train import TrainConfig

    for bad in ({"seed": -1}, {"learning_rate": float("inf")}, {"learning_rate": float("nan")}, {"learning_rate": 1e308},
                {"batch_size": 10**8}, {"steps": 0}, {"steps": True}):
        with pytest.raises(ValueError):
            TrainConfig(**bad)


def test_training_that_goes_non_finite_stops_and_writes_nothing(tmp_path, capsys, monkeypatch):
    """One weight of 3e38 overflows the forward pass (float32): the old code trained on, exit 0, and wrote
    a checkpoint of NaN; now the first non-finite step is one error line (EN and KO) and no file."""
    from qkv.translator import train as train_module
    from qkv.translator.train import TrainConfig, TrainingDiverged

    tiny = Config(d_model=8, n_heads=2, d_ff=8, n_encoder=1, n_decoder=1)
    real_init = train_module.init_params

    def huge_init(config, seed):
        params = real_init(config, seed)
        params["encoder.0.mlp.w_in"][0, 0] = 3e38
        return params

    monkeypatch.setattr(train_module, "init_params", huge_init)
    with pytest.raises(TrainingDiverged) as caught:
        train_module.train(TrainConfig(steps=5, batch_size=4, seed=1), config=tiny)
    assert caught.value.step == 1 and "학습이 5단계 중 1단계에서 발산했다" in caught.value.say("ko")
    monkeypatch.setattr(train_module, "Config", lambda: tiny)
    out = tmp_path / "t.safetensors"
    assert main(["train", "translator", "--steps", "5", "--batch-size", "4", "--eval", "5", "--out", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()          # the progress bar (stderr), then the one error line
    assert [line for line in err if line.startswith("qkv:")] == err[-1:]
    assert "training diverged at step 1 of 5" in err[-1] and "lower the learning rate (it was 0.003)" in err[-1]
    assert list(tmp_path.iterdir()) == []
