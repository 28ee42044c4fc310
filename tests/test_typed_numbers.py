"""One rule for a number typed as text, in every reader (issue 29's leftovers): digits 0–9, an optional sign,
point and exponent, spaces or tabs around (`qkv._io.as_number`, as `as_int` is for whole numbers).

`qkv example NAME --what-if factor=１` ran the example with factor 1 (its pattern used Python's `\\d`, which takes
every script's digits: '１', '٣', '०'), and `factor=1\\n` was read as 1; `qkv generate --temperature ١` ran at
temperature 1 (float()), while serve's ?temperature=١, the example files (TOML) and the pages' editors refused
them. Every reader now refuses them, naming what was typed, in English and Korean."""

from __future__ import annotations

import math

import pytest

from qkv._io import as_number
from qkv.cli import main

# other scripts' digits (full-width, Arabic-Indic, Extended Arabic-Indic, Devanagari), superscripts, a trailing
# newline, Python's own extras (underscores, inf, nan, hexadecimal), and the empty text
REFUSED = ["１", "١", "١.٥", "۳", "०.५", "1２", "²", "1\n", "1\r\n", "\n1", "1_0", "inf", "-inf", "nan", "0x10",
           "1e", ".", "", " ", "1 2", "--1"]
READ = {"1": 1.0, " 0.5\t": 0.5, "−0.5": -0.5, "+.5e1": 5.0, "5.": 5.0, "1E-3": 0.001, "-2": -2.0}


@pytest.mark.parametrize("typed", REFUSED)
def test_as_number_refuses_what_float_reads_beyond_the_digits_0_to_9(typed):
    assert as_number(typed) is None


def test_as_number_reads_decimal_numbers():
    assert {typed: as_number(typed) for typed in READ} == READ
    assert as_number("1e999") == math.inf          # a caller bounds it (each of them refuses it as not finite)
    assert as_number(1.0) is None and as_number(None) is None


SAID = {"en": "expected a finite number written with the digits 0–9", "ko": "0–9 숫자로 쓴 유한한 수"}


@pytest.mark.parametrize("typed", ["１", "١", "1\n", "0.５", "1_0"])
@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("key", ["factor", "x[2,1]", "w_q[1,1]"])
def test_a_what_if_number_in_other_digits_is_one_line_naming_it(typed, lang, key, capsys):
    assert main(["example", "self-attention", "--what-if", f"{key}={typed}", "--lang", lang]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert f"--what-if: {key}: {SAID[lang]}" in captured.err and repr(typed) in captured.err, captured.err


def test_a_meetings_score_in_other_digits_is_refused(capsys):
    assert main(["example", "group-meeting", "--what-if", "lot[1]=٥٠"]) == 2
    assert f"lot[1]: {SAID['en']}" in capsys.readouterr().err


def test_what_if_numbers_with_spaces_and_the_minus_sign_still_read():
    from qkv import examples

    changes = examples.changes_from("self-attention", ["factor = 0.5 ", "\tx[2,1]=−2"])     # love's row, column 1
    assert changes.factor == 0.5 and changes.cells == {"x": ((1, 1, -2.0),)}


@pytest.mark.parametrize("option", ["--temperature", "--top-p"])
@pytest.mark.parametrize("typed", ["１", "٠.٥", "1_0", "0.5\n"])
def test_generate_reads_its_numbers_by_the_same_rule(option, typed, capsys):
    # refused before any model is read: the folder does not exist
    assert main(["generate", "the cat", "--model", "/nonexistent", "--sample", option, typed]) == 2
    err = capsys.readouterr().err
    assert f"{option}: {typed!r}: expected a positive number written with the digits 0–9" in err, err
    assert main(["generate", "the cat", "--model", "/nonexistent", "--sample", option, typed, "--lang", "ko"]) == 2
    assert "0–9 숫자로 쓴 양수" in capsys.readouterr().err


@pytest.mark.parametrize("typed", ["１e-3", "٠.١", "1_0e-3"])
def test_train_reads_its_learning_rate_by_the_same_rule(typed, capsys):
    assert main(["train", "translator", "--learning-rate", typed]) == 2
    assert "--learning-rate" in capsys.readouterr().err


@pytest.mark.parametrize("typed, key", [("١", "error.ascii_number"), ("１２", "error.ascii_number"),
                                        ("1_0", "whatif.number"), ("inf", "whatif.number"), ("0.5", None)])
def test_serves_decimal_parameters_read_by_the_same_rule(typed, key):
    from qkv.explain import texts
    from qkv.serve.app import ApiError, _float_param

    class Request:
        query_params = {"temperature": typed, "lang": "ko"}

    if key is None:
        assert _float_param(Request(), "temperature") == 0.5
        return
    with pytest.raises(ApiError) as caught:
        _float_param(Request(), "temperature")
    assert caught.value.status == 400 and caught.value.field == "temperature"
    assert caught.value.problem == texts.text("ko", f"serve.{key}", value=f'"{typed}"')
