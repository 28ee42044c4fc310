"""Every integer option of every command is parsed strictly (issue 9 item 13): '１' (fullwidth), '٣'
(Arabic-Indic) and '²' pass Python's int() or str.isdigit, and each must be one line, exit 2."""

import pytest

from qkv.cli import main

CASES = [
    ["translate", "I love you", "--digits", "{}"],
    ["translate", "I love you", "--layer", "{}"],
    ["train", "translator", "--steps", "{}"],
    ["train", "translator", "--seed", "{}"],
    ["bench", "--repeats", "{}"],
    ["bench", "--sizes", "512,{}"],
    ["generate", "hello", "--model", "nowhere", "-n", "{}"],
    ["heads", "hello", "--top", "{}"],
    ["ring", "--procs", "{}"],
]


@pytest.mark.parametrize("digit", ["１", "٣", "²"])
@pytest.mark.parametrize("argv", CASES, ids=lambda argv: " ".join(argv[:1] + argv[-2:-1]))
def test_unicode_digits_are_refused_in_one_line(capsys, tmp_path, monkeypatch, argv, digit):
    monkeypatch.chdir(tmp_path)
    assert main([part.format(digit) for part in argv]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("qkv: error:"), captured.err
    assert captured.out == "" and list(tmp_path.iterdir()) == []
