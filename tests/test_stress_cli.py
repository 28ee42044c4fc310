"""The command line under stress (issue 32 §4): a text with no tokens, a signal in the middle of a write, a file
that cannot be written after the work is done.

The rule is §1 of docs/reliability.md: one `qkv: error:` line, exit 2, nothing on standard output, no file made
or left behind (hidden temporary files included). Processes run with a timeout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from model_fixtures import built

SRC = str(Path(__file__).resolve().parents[1] / "src")
TIMEOUT = 180


@pytest.fixture(scope="module")
def bert():
    """A BERT whose tokenizer adds no [CLS]/[SEP] (tests/model_fixtures.py): "" has no tokens at all."""
    return built("bert")


def _main(capsys, *argv: str) -> tuple[int, str, str]:
    from qkv.cli import main

    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ------------------------------------------------------------------ a text with no tokens
@pytest.mark.parametrize("command", ["embed", "heads", "inspect"])
@pytest.mark.parametrize("texts", [[""], ["the cat", ""]], ids=["alone", "second"])
def test_a_text_with_no_tokens_is_one_line_on_every_model_command(capsys, bert, command, texts):
    """A BERT without [CLS]/[SEP] (issue 32 §4: a traceback once): an empty text is refused as empty before the
    model is asked (commands/_options.require_text, a8bb409); one line, exit 2, naming the text — embed's second
    text by its row in embed's table (counted from 0: #1). The library's own refusal: the next test."""
    if command != "embed" and len(texts) > 1:
        texts = texts[1:]                            # heads and inspect read one text
    code, out, err = _main(capsys, command, "--model", str(bert), *texts)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("qkv: error: ") and "Traceback" not in err, err
    assert "the text is empty" in err, err
    where = "TEXT #1" if len(texts) > 1 else "TEXT:"
    assert err.startswith(f"qkv: error: {where}"), err


def test_a_text_with_no_tokens_is_named_by_the_library(bert):
    import qkv.models
    from qkv.errors import InputError

    model = qkv.models.load(bert)
    for call, said in ((lambda: model.encode(["the cat", ""]), "text 2 of 2 ('')"),
                       (lambda: model.trace(""), "the text has no tokens"),
                       (lambda: model.hidden_states(""), "the text has no tokens"),
                       (lambda: model.attention_weights(""), "the text has no tokens")):
        with pytest.raises(InputError) as caught:
            call()
        assert said in str(caught.value), str(caught.value)
        assert "텍스트" in caught.value.say("ko")


# ------------------------------------------------------------------ a signal in the middle of a write
SIGNALLED = """
import os, signal, sys
import qkv._io, qkv.cli

where, signame, out = sys.argv[1], sys.argv[2], sys.argv[3]
signum = getattr(signal, signame)
if where == "writing":             # the temporary file is open and half-written when the signal comes
    real = os.chmod
    def chmod(path, mode, *args, **kwargs):
        if str(path).endswith(".tmp"):
            os.kill(os.getpid(), signum)
        return real(path, mode, *args, **kwargs)
    os.chmod = chmod
else:                              # every file written to its temporary, waiting for the command to end
    real = qkv._io._Batch.commit
    def commit(self):
        os.kill(os.getpid(), signum)
        return real(self)
    qkv._io._Batch.commit = commit
sys.exit(qkv.cli.main(["example", "self-attention", "--out", out, "--figure", out + ".png"]))
"""


@pytest.mark.parametrize("where", ["writing", "held"])
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_signal_during_a_write_leaves_no_temporary_file(tmp_path, where, signame):
    """SIGTERM (or SIGHUP) while qkv writes: before, the process died where it stood and left
    `.out.txt.XXXX.tmp` beside the target; now every temporary file is removed, no output is made, and the
    exit status is 128 + the signal, quietly (as Ctrl-C's 130)."""
    out = tmp_path / "out.txt"
    env = dict(os.environ, PYTHONPATH=SRC)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(SIGNALLED), where, signame, str(out)],
                          capture_output=True, text=True, timeout=TIMEOUT, env=env)
    signum = getattr(signal, signame)
    assert done.returncode == 128 + signum, (done.returncode, done.stderr[-2000:])
    assert done.stderr == "" and done.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == [], list(tmp_path.iterdir())


def test_the_signal_handlers_before_the_command_are_put_back(capsys, tmp_path):
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    assert _main(capsys, "example", "self-attention", "--out", str(tmp_path / "o.txt"))[0] == 0
    assert {s: signal.getsignal(s) for s in before} == before


# ------------------------------------------------------------------ a file that cannot be written
def _full(tmp_path: Path, suffix: str) -> str:
    """A path with ``suffix`` that is /dev/full (a character device: qkv writes it directly, and every write
    fails with ENOSPC)."""
    link = tmp_path / f"full{suffix}"
    link.symlink_to("/dev/full")
    return str(link)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("case", ["heads --json", "heads --figure", "example --out", "example --figure",
                                  "explain --figure"])
def test_a_file_that_cannot_be_written_is_one_line_and_nothing_is_printed_before_it(capsys, tmp_path, bert, case):
    """`qkv heads --json /dev/full` printed the whole table, then failed (exit 2): the table read as a success.
    Now what a command that writes files prints comes after the files are written, so a failed write is the
    one line said, naming the file."""
    command, option = case.split()
    target = _full(tmp_path, ".png" if option == "--figure" else ".json")
    argv = {"heads": ["heads", "--model", str(bert), "the cat sat"],
            "example": ["example", "self-attention"],
            "explain": ["explain", str(Path(SRC) / "qkv" / "examples" / "self-attention.toml")]}[command]
    code, out, err = _main(capsys, *argv, option, target)
    assert code == 2 and out == "" and err.count("\n") == 1, (out[:300], err)
    assert err.startswith(f"qkv: error: {target}: ") and "No space left" in err, err


def test_a_command_that_writes_files_still_prints_its_table_after_them(capsys, tmp_path, bert):
    out = tmp_path / "h.json"
    code, printed, err = _main(capsys, "heads", "--model", str(bert), "the cat sat", "--json", str(out))
    assert code == 0 and out.is_file() and "layer" in printed and f"wrote {out}" in err


# ------------------------------------------------------------------ out of memory, wherever it is raised
@pytest.mark.parametrize("raised", [
    MemoryError("Unable to allocate 2.25 MiB for an array with shape (1536, 384) and data type float32"),
    MemoryError("Cannot allocate memory (os error 12)"),                     # a Rust library's mmap ENOMEM
    OSError(12, "Cannot allocate memory"),                                   # mmap.mmap, os.* calls
    ImportError("x.so: failed to map segment from shared object"),           # a late import's dlopen ENOMEM
], ids=["numpy", "rust", "errno", "dlopen"])
def test_running_out_of_memory_anywhere_is_one_line(capsys, tmp_path, monkeypatch, raised):
    import qkv.commands.example as example

    def exhausted(*args, **kwargs):
        raise raised

    monkeypatch.setattr(example, "handler", exhausted)
    from qkv.cli import _PARSERS

    _PARSERS.clear()                                  # the parser binds the handler when it is built
    try:
        code, out, err = _main(capsys, "example", "self-attention", "--out", str(tmp_path / "o.txt"))
    finally:
        _PARSERS.clear()
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("qkv: error: out of memory"), err
    assert ("2.25 MiB" in err) == ("2.25 MiB" in str(raised))
    assert list(tmp_path.iterdir()) == []
