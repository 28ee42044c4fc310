"""The translator: corpus, the shipped checkpoint, cached decoding, training, the commands."""

from __future__ import annotations

import math
import re
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
    """100 % exact match on 300 sentences whose (subject, verb, object) composition never occurs
    in training, for both languages; the examples of the docs are exact."""
    held = corpus.held_out_sentences(300)
    for lang in corpus.LANGUAGES:
        assert exact_match(model, held, lang) == 1.0
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
    corpus.py's rules: subject, verb agreeing unless past, object, then nothing or one place; or subject
    and "have a lot" alone; or a choice, noun or another noun, without determiners)."""
    import re

    def alt(words):
        return "(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + ")"

    mass = alt(n.en for n in corpus.MASS_NOUNS)
    noun_phrase = f"{alt(corpus.DETERMINERS)}(?: {alt(corpus.ADJECTIVES)})? {alt(n.en for n in corpus.NOUNS)}|{mass}"
    third = alt([p.subject for p in corpus.PRONOUNS if p.third_singular]) + "|" + noun_phrase
    other = alt([p.subject for p in corpus.PRONOUNS if not p.third_singular])
    transitive = [v for v in corpus.VERBS if v.transitive]
    past = [v.past for v in transitive]
    verb_third, verb_other = alt([v.third for v in transitive] + past), alt([v.base for v in transitive] + past)
    obj = alt([p.object for p in corpus.PRONOUNS]) + "|" + noun_phrase
    place = alt(p.en for p in corpus.PLACES)
    statement = f"(?:(?:{third}) {verb_third}|(?:{other}) {verb_other}) (?:{obj})(?: {place})?"
    have = f"(?:(?:{third}) (?:has|had) a lot|(?:{other}) (?:have|had) a lot)"
    item = alt(n.en for n in corpus.NOUNS + corpus.MASS_NOUNS)
    choice = f"(?P<first>{item}) or (?!(?P=first)$){item}"          # two different nouns
    return re.compile(f"{statement}|{have}|{choice}")


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


def test_outside_grammar_on_the_command_line(capsys, model):
    assert main(["translate", "the child called my friend at the park", "--to", "ja"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "“at the park” is outside the translator's grammar" in err
    assert main(["translate", "the child called my friend at the park", "--to", "ja", "--lang", "ko"]) == 2
    assert "“at the park”: 번역기의 문법 밖이다" in capsys.readouterr().err
    assert main(["translate", "she waited in the park", "--outside-grammar"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("“in” is outside the translator's grammar") and out[0].endswith("the model's guess")
    # each language's block: the words, the probabilities, and "unsure" below 0.5 (the model's guess decides)
    unsure = model.translate("she waited in the park", "ko", outside_grammar=True).sequence_probability < 0.5
    ja = 3 + unsure
    assert out[1].startswith("ko: ") and out[ja].startswith("ja: ") and ("unsure" in out[3]) == unsure
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


# --------------------------------------------------------------------------- the posts' own sentences (issue 30 §6)
def reference_model(path=None):
    """The checkpoint's weights in float64 torch tensors and its config, read straight from the safetensors
    file (not through qkv.translator.load)."""
    import json

    from safetensors.numpy import load_file

    from qkv.translator.model import DEFAULT_CHECKPOINT, checkpoint_metadata

    target = path or DEFAULT_CHECKPOINT
    weights = {k: torch.from_numpy(v.astype(np.float64)) for k, v in load_file(str(target)).items()}
    return weights, json.loads(checkpoint_metadata(target)["config"])


def reference_forward(weights, config, source, target, memory=None):
    """An independent float64 forward of the encoder–decoder (torch functional ops, written from the
    architecture: pre-norm blocks, exact GELU, sinusoidal positions, tied output embedding): source (B, S)
    and target (B, T) integer arrays, 0 = padding → logits (B, T, Vt), the cross-attention weights
    [(B, H, T, S) per decoder layer], their raw scores q·k (same shapes) and the encoder's output (B, S, D),
    which a later call may pass back as ``memory`` (the source's encoding is then not recomputed)."""
    import torch.nn.functional as F

    d, h = config["d_model"], config["n_heads"]
    source, target = torch.as_tensor(source), torch.as_tensor(target)
    n = max(source.shape[1], target.shape[1])
    position = torch.arange(n, dtype=torch.float64)[:, None]
    rate = 1.0 / 10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(position * rate), torch.cos(position * rate)

    def norm(x, name):
        return F.layer_norm(x, (d,), weights[f"{name}.weight"], weights[f"{name}.bias"], eps=1e-5)

    def attend(x, memory, name, allowed):
        def split(t):
            return t.reshape(t.shape[0], t.shape[1], h, d // h).transpose(1, 2)
        q = split(x @ weights[f"{name}.w_q"] + weights[f"{name}.b_q"])
        k = split(memory @ weights[f"{name}.w_k"] + weights[f"{name}.b_k"])
        v = split(memory @ weights[f"{name}.w_v"] + weights[f"{name}.b_v"])
        raw = q @ k.transpose(-1, -2)
        w = torch.softmax((raw / math.sqrt(d // h)).masked_fill(~allowed, float("-inf")), dim=-1)
        out = (w @ v).transpose(1, 2).reshape(x.shape[0], x.shape[1], d)
        return out @ weights[f"{name}.w_o"] + weights[f"{name}.b_o"], w, raw

    def mlp(x, name):
        return F.gelu(x @ weights[f"{name}.w_in"] + weights[f"{name}.b_in"]) @ weights[f"{name}.w_out"] \
            + weights[f"{name}.b_out"]

    keys = (source != 0)[:, None, None, :]                              # (B, 1, 1, S)
    if memory is None:
        x = weights["source_embedding"][source] * math.sqrt(d) + pe[: source.shape[1]]
        for i in range(config["n_encoder"]):
            x = x + attend(norm(x, f"encoder.{i}.norm1"), norm(x, f"encoder.{i}.norm1"), f"encoder.{i}.attention",
                           keys)[0]
            x = x + mlp(norm(x, f"encoder.{i}.norm2"), f"encoder.{i}.mlp")
        memory = norm(x, "encoder_norm")
    t = target.shape[1]
    causal = torch.ones(t, t, dtype=torch.bool).tril()[None, None]
    y = weights["target_embedding"][target] * math.sqrt(d) + pe[:t]
    cross, raws = [], []
    for i in range(config["n_decoder"]):
        y = y + attend(norm(y, f"decoder.{i}.norm1"), norm(y, f"decoder.{i}.norm1"), f"decoder.{i}.attention",
                       causal)[0]
        out, w, raw = attend(norm(y, f"decoder.{i}.cross_norm"), memory, f"decoder.{i}.cross_attention", keys)
        y = y + out
        cross.append(w)
        raws.append(raw)
        y = y + mlp(norm(y, f"decoder.{i}.norm2"), f"decoder.{i}.mlp")
    return norm(y, "decoder_norm") @ weights["target_embedding"].T, cross, raws, memory


def reference_greedy(weights, config, sentences, lang):
    """Greedy decoding by `reference_forward`, rerun on the whole prefix each step (no cache), choosing
    among </s> and the words written in ``lang``'s script (Hangul for ko, none for ja)."""
    vocab = config["target_vocab"]
    hangul = [any("\uac00" <= c <= "\ud7a3" for c in w) for w in vocab]
    special = {"<pad>", "<ko>", "<ja>", "</s>"}
    allowed = torch.tensor([w == "</s>" or (w not in special and hangul[i] == (lang == "ko"))
                            for i, w in enumerate(vocab)])
    index = {w: i for i, w in enumerate(config["source_vocab"])}
    rows = [[index[w] for w in s.english()] for s in sentences]
    source = np.zeros((len(rows), max(map(len, rows))), np.int64)
    for i, row in enumerate(rows):
        source[i, : len(row)] = row
    target = np.full((len(rows), 1), vocab.index(f"<{lang}>"))
    memory = None
    threads = torch.get_num_threads()
    torch.set_num_threads(1)               # small matrices: a second thread only waits (on shared cores, far slower)
    try:
        for _ in range(config["max_len"] + 1):
            logits, _, _, memory = reference_forward(weights, config, source, target, memory)
            logits = logits[:, -1]
            choice = torch.where(allowed, logits, torch.tensor(float("-inf"), dtype=logits.dtype)).argmax(-1).numpy()
            target = np.concatenate([target, choice[:, None]], axis=1)
            if (target[:, 1:] == vocab.index("</s>")).any(axis=1).all():
                break
    finally:
        torch.set_num_threads(threads)
    out = []
    for row in target[:, 1:].tolist():
        words = [vocab[i] for i in row]
        out.append(words[: words.index("</s>")] if "</s>" in words else words)
    return out


HELD_OUT = 400     # held-out sentences per language, decoded by the reference


def test_held_out_sentences_are_translated_exactly_by_an_independent_decode():
    """The shipped checkpoint translates every one of 400 held-out sentences (compositions never trained on;
    statements, "have a lot" and choice questions) exactly, in both languages — decoded by an independent
    float64 forward from the safetensors file, not by `Translator.translate`."""
    weights, config = reference_model()
    held = corpus.held_out_sentences(HELD_OUT)
    assert any(isinstance(s, corpus.Choice) for s in held) and any(s.object is None for s in held
                                                                    if isinstance(s, corpus.Sentence))
    for lang in corpus.LANGUAGES:
        found = reference_greedy(weights, config, held, lang)
        wrong = [(" ".join(s.english()), got) for s, got in zip(held, found) if got != s.target(lang)]
        assert wrong == [], (lang, wrong[:5])


POSTS = [   # each English sentence of the posts, as written there, and its translations (by hand: Korean and Japanese grammar)
    ("I love machine learning", "나는 기계 학습을 사랑해", "私は 機械 学習を 愛してる"),   # the post translates into Japanese
    ("I have a lot", "나는 많아", "私は たくさん 持ってる"),              # the group-meeting post: "나는 많아."
    # the group-meeting post writes 신용카드에요; after a final vowel the standard spelling is 예요 (현금 ends in ㅁ: 이에요)
    ("Cash or credit card?", "현금이에요? 신용카드예요?", "現金ですか？ クレジットカードですか？"),
]


@pytest.mark.parametrize("text, ko, ja", POSTS)
def test_the_posts_sentences_translate(model, text, ko, ja, capsys):
    assert model.translate(text, "ko").target == ko.split()
    assert model.translate(text, "ja").target == ja.split()
    weights, config = reference_model()
    sentence = corpus.parse(__import__("qkv.translator.model", fromlist=["tokenize"]).tokenize(text))
    assert reference_greedy(weights, config, [sentence], "ja") == [ja.split()]
    assert main(["translate", text]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"ko: {ko}" and out[2] == f"ja: {ja}"


def test_the_posts_sentences_are_the_corpus_list_and_the_cut_sentence_is_refused(model):
    """corpus.POST_SENTENCES names exactly the sentences above; the post's query token 私は starts the
    Japanese; the group-meeting post's "I have a lot of" (cut before its next word on purpose) is refused
    at "of" (an unknown word, and the grammar ends the sentence at "lot"), in both languages; "cash or cash"
    is no choice."""
    assert [s[0] for s in corpus.POST_SENTENCES] == [p[0] for p in POSTS]
    from qkv import examples

    query = examples.load("cross-attention")["query"]
    assert model.translate("I love machine learning", "ja").target[0] == query
    from qkv.errors import InputError

    with pytest.raises(InputError, match="unknown word 'of'"):          # a word the translator never saw
        model.translate("I have a lot of", "ko")
    with pytest.raises(corpus.OutsideGrammar) as caught:                # and the grammar ends at "lot"
        corpus.parse(["I", "have", "a", "lot", "of"])
    assert "“of” is outside the translator's grammar: the sentence ends with “I have a lot”" in str(caught.value)
    assert "“of”: 번역기의 문법 밖이다. 문장은 “I have a lot”에서 끝난다" in caught.value.say("ko")
    with pytest.raises(corpus.OutsideGrammar, match="two different nouns"):
        model.translate("cash or cash", "ko")
    with pytest.raises(corpus.OutsideGrammar, match="after “I love machine” it expects: learning"):
        model.translate("I love machine", "ja")


# --------------------------------------------------------------------------- learned vs the post's hand-made weights
def _post_weights_float64():
    """The post's cross-attention weights recomputed in float64 from the example's TOML inputs."""
    from qkv import examples

    data = examples.load("cross-attention")
    x, memory = np.array(data["x"], float), np.array(data["memory"], float)
    q, k = x @ np.array(data["w_q"], float), memory @ np.array(data["w_k"], float)
    s = (q @ k.T)[0] / math.sqrt(q.shape[1])
    e = np.exp(s - s.max())
    return e / e.sum(), data


def _learned_float64():
    """The translator's cross-attention for 私は's row, every layer and head, recomputed by the reference
    forward on the translation the checkpoint gives: (L, H, S), the row's step, the translation."""
    weights, config = reference_model()
    sentence = corpus.parse(["I", "love", "machine", "learning"])
    target_words = reference_greedy(weights, config, [sentence], "ja")[0]
    vocab, source_vocab = config["target_vocab"], config["source_vocab"]
    inputs = ["<ja>", *target_words]
    source = np.array([[source_vocab.index(w) for w in sentence.english()]])
    target = np.array([[vocab.index(w) for w in inputs]])
    _, cross, raws, _ = reference_forward(weights, config, source, target)
    step = inputs.index("私は")
    return np.stack([w[0, :, step].numpy() for w in cross]), step, target_words, [r[0].numpy() for r in raws], inputs


def test_compare_post_puts_the_learned_row_next_to_the_posts(model, capsys):
    from qkv.translator import compare

    post, data = _post_weights_float64()
    learned, step, target_words, _, _ = _learned_float64()
    c = compare.post_comparison(model, model.translate("I love machine learning", "ja"))
    np.testing.assert_allclose(c.post, post, rtol=1e-12)
    np.testing.assert_allclose(c.learned, learned, atol=2e-5)
    assert c.query == data["query"] and c.keys == data["memory_tokens"] and c.generated == target_words[step]
    assert c.post_dk == 2 and c.learned_dk == 16
    assert main(["translate", "I love machine learning", "--to", "ja", "--compare-post"]) == 0
    out = capsys.readouterr().out
    mean = learned[-1].mean(axis=0)
    keys = data["memory_tokens"]
    top_post, top_learned = keys[int(np.argmax(post))], keys[int(np.argmax(mean))]
    if top_post == top_learned:
        assert f"the largest weight falls on the same word, {top_post}: the post {post.max():.4f}" in out
    else:
        assert f"the post's is {top_post} ({post.max():.4f}), the translator's (layer 1, mean of the heads) is " \
               f"{top_learned} ({mean.max():.4f})" in out
    entropy = -(post * np.log2(post)).sum()
    assert f"within {post.max() - post.min():.4f} of each other (entropy {entropy:.3f} of 2 bits" in out
    learned_entropy = -(mean * np.log2(mean)).sum()
    how = "more concentrated" if learned_entropy < entropy else "more even"
    assert (f"the translator's (layer 1, mean) range over {mean.max() - mean.min():.4f} (entropy "
            f"{learned_entropy:.3f} bits): {how} than the post's") in " ".join(out.split())
    peaks = learned.max(axis=-1)
    assert f"heads puts between {peaks.min():.4f} and {peaks.max():.4f} on a single word" in out
    heads_top = int((np.argmax(learned, axis=-1) == int(np.argmax(post))).sum())
    assert f"{heads_top} of the translator's 8 heads read {top_post} most" in out
    # the words by weight, and how many of the 6 pairs of words the two rows order alike (counted here)
    same = sum((post[i] - post[j]) * (mean[i] - mean[j]) > 0 for i in range(4) for j in range(i + 1, 4))
    by_post, by_mean = (" > ".join(keys[i] for i in sorted(range(4), key=lambda i: -row[i])) for row in (post, mean))
    assert (f"the post {by_post}; the translator (layer 1, mean) {by_mean}: they order {same} of 6 pairs of words "
            f"the same way") in " ".join(out.split())
    table = {" ".join(line.split()[:4]): line.split()[4:8] for line in out.splitlines() if line.startswith("layer ")}
    for layer in range(2):
        for head in range(4):
            shown = np.array(table[f"layer {layer} head {head}"], dtype=float)
            np.testing.assert_allclose(shown, learned[layer, head], atol=5.1e-5)     # printed at 4 decimals
    code = main(["translate", "I love machine learning", "--to", "ja", "--compare-post", "--lang", "ko"])
    out_ko = capsys.readouterr().out
    from test_cli_lang_ko import korean_only

    assert code == 0 and "같은 점:" in out_ko and "다른 점:" in out_ko
    assert korean_only(out_ko, ["I", "love", "machine", "learning", "Self", "attention", "Cross", "Multi", "head",
                                "Attention", "Query", "Key", "Value", "softmax", "d_k"]) == []


@pytest.mark.parametrize("args, message", [
    (["translate", "I love you", "--to", "ja", "--compare-post"], "--compare-post needs that sentence with --to ja"),
    (["translate", "I love machine learning", "--to", "ko", "--compare-post"], "(got “I love machine learning” into ko)"),
])
def test_compare_post_refuses_another_sentence_or_language(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_compare_post_figure(model, tmp_path, capsys, lang):
    """The file is a PNG, and the grid it draws holds the float64 reference rows: the post's on top, then each
    layer's four heads and their mean, each cell's number written to 4 decimals (or one digit, below them)."""
    from qkv.translator import compare

    path = tmp_path / f"compare-{lang}.png"
    assert main(["translate", "I love machine learning", "--to", "ja", "--compare-post", "--lang", lang,
                 "--figure", str(path)]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    post, _ = _post_weights_float64()
    learned = _learned_float64()[0]                                           # (L, H, S)
    rows = [post] + [row for layer in learned for row in (*layer, layer.mean(axis=0))]
    c = compare.post_comparison(model, model.translate("I love machine learning", "ja"))
    figure = compare.comparison_figure(c, lang=lang)
    (image,) = figure.axes[0].get_images()
    np.testing.assert_allclose(np.asarray(image.get_array()), np.stack(rows), rtol=0, atol=2e-5)
    written = [t.get_text() for t in figure.axes[0].texts]                  # row by row, as the cells are drawn
    assert len(written) == np.size(rows)
    for text, value in zip(written, np.ravel(rows)):
        if re.fullmatch(r"\d\.\d{4}", text):
            assert abs(float(text) - value) <= 0.5e-4 + 2e-5, (text, value)
        else:                                                                   # below the 4th decimal: 3e-05
            assert re.fullmatch(r"\de-\d\d", text) and value < 0.5e-4 + 2e-5, (text, value)
            assert abs(float(text) - value) <= 0.5 * 10.0 ** math.floor(math.log10(value)) * 1.05, (text, value)


# --------------------------------------------------------------------------- qkv why sqrt-dk: a saturated head of the translator
def test_why_sqrt_dk_finds_the_translators_most_saturated_head(capsys):
    """The head `qkv why sqrt-dk` shows is the cross-attention row (of the post's sentence into Japanese,
    teacher-forced, the rows that chose a word) farthest toward one-hot, found here from the reference
    forward's float64 scores; its weights with and without ÷√d_k are those scores' softmax."""
    from qkv import why

    _, _, target_words, raws, inputs = _learned_float64()
    best = None
    for layer, raw in enumerate(raws):                                  # (H, T, S)
        for head in range(raw.shape[0]):
            for step in range(len(target_words)):
                s = raw[head, step] / 4.0
                w = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
                rest = np.sort(w)[:-1].sum()
                if best is None or rest < best[0]:
                    best = (rest, layer, head, step)
    rest, layer, head, step = best
    found = why.run("sqrt-dk").data["translator"]
    assert (found["layer"], found["head"], found["step"]) == (layer, head, step)
    scores = raws[layer][head, step]
    np.testing.assert_allclose(found["scores"], scores, rtol=1e-4, atol=1e-3)
    plain = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    np.testing.assert_allclose(found["plain"], plain, rtol=1e-3, atol=1e-300)
    assert found["rest"] == pytest.approx(rest, rel=1e-2)
    assert found["query"] == inputs[step] and found["generated"] == target_words[step]
    assert main(["why", "sqrt-dk"]) == 0
    out = capsys.readouterr().out
    assert f"decoder layer {layer} of 0–1, head {head} of 0–3, the decoder's state for {inputs[step]}" in out
    words = ["I", "love", "machine", "learning"]
    top = int(np.argmax(scores))
    assert (f"its largest weight is 1 − {rest:.1e}, on {words[top]}" in out) == (rest < 5e-5)
    others = np.delete(plain, top).sum()
    ratio = (1 - rest) * rest / (plain[top] * others)
    assert (f"its gradient w(1 − w) falls from {(1 - rest) * rest:.1e} to {plain[top] * others:.1e} "
            f"({ratio:.1e} times smaller)") in " ".join(out.split())
    assert main(["why", "sqrt-dk", "--lang", "ko"]) == 0
    assert f"디코더 층 {layer} (0–1 중), 헤드 {head} (0–3 중)의 행으로, Query는 “{inputs[step]}”" in capsys.readouterr().out
