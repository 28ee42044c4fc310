"""Files that change under a loaded model or a reader (issue 32 §4): rewritten in place, cut short, swapped for a
named pipe between the check and the read.

The promise: a loaded model's numbers never change under it (its weights are read into memory of its own, never
memory-mapped), a file cut short under it cannot kill the process (SIGBUS), and a reader that checked a path reads
what it checked (one open descriptor), so a file swapped for a named pipe is refused by its kind, never waited on.
The process cases run in a fresh interpreter with a timeout: on the old code they died of SIGBUS or hung.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import model_fixtures

SRC = str(Path(__file__).resolve().parents[1] / "src")
TIMEOUT = 180


@pytest.fixture(scope="module")
def built():
    return {name: model_fixtures.built(name) for name in ("bert", "gpt2", "llama-gqa")}


def _copy(built, tmp_path, name) -> Path:
    target = tmp_path / name
    shutil.copytree(built[name], target)
    return target


def _weights(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.safetensors"))


def _rewrite_in_place(path: Path) -> None:
    """Every float of the file's data halved, written over the same bytes (same inode, same size): what a
    copy or a training run writing into the file does."""
    data = bytearray(path.read_bytes())
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + length])
    start = 8 + length
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        begin, end = info["data_offsets"]
        values = np.frombuffer(bytes(data[start + begin:start + end]), dtype="<f4") * np.float32(0.5)
        data[start + begin:start + end] = values.astype("<f4").tobytes()
    with open(path, "r+b") as handle:          # in place: no new file, no rename
        handle.write(bytes(data))


def _numbers(model) -> np.ndarray:
    """What a loaded model computes for one text: every layer's states."""
    return np.concatenate([np.ravel(h) for h in model.hidden_states("the cat sat on the mat")]).astype(np.float64)


@pytest.mark.parametrize("name", ["bert", "gpt2", "llama-gqa"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_loaded_models_numbers_never_change_when_its_file_is_rewritten_in_place(built, tmp_path, name, dtype):
    import qkv.models

    directory = _copy(built, tmp_path, name)
    model = qkv.models.load(directory, dtype=dtype)
    before = _numbers(model)
    for path in _weights(directory):
        _rewrite_in_place(path)
    reloaded = qkv.models.load(directory, dtype=dtype)
    assert not np.array_equal(_numbers(reloaded), before)          # the rewrite did change the file's numbers
    np.testing.assert_array_equal(_numbers(model), before)         # ...and not the loaded model's


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + str(Path(__file__).parent), PYTHONFAULTHANDLER="")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env)


CUT_SHORT = """
import sys
from pathlib import Path
import numpy as np
import qkv.models

directory = Path(sys.argv[1])
model = qkv.models.load(directory)
def numbers():
    return np.concatenate([np.ravel(h) for h in model.hidden_states("the cat sat on the mat")])
before = numbers()
for path in sorted(directory.glob("*.safetensors")):
    with open(path, "r+b") as handle:
        handle.truncate(int(sys.argv[3]))          # cut short in place: the pages behind a memory map are gone
after = numbers()
print("same" if np.array_equal(before, after) else "changed")
"""


@pytest.mark.parametrize("name", ["bert", "gpt2", "llama-gqa"])
@pytest.mark.parametrize("size", [0, 100])
def test_a_file_cut_short_under_a_loaded_model_does_not_kill_it(built, tmp_path, name, size):
    directory = _copy(built, tmp_path, name)
    done = _run(CUT_SHORT, str(directory), name, str(size))
    assert done.returncode == 0, (done.returncode, -signal.SIGBUS, done.stderr[-2000:])
    assert done.stdout.strip() == "same", done.stdout


SWAPPED = """
import os, sys
from pathlib import Path
import qkv._io, qkv.models.checkpoint, qkv.spec
from qkv.errors import InputError

target = Path(sys.argv[1])
what = sys.argv[2]

def swap():
    if target.exists() and not target.is_fifo():
        target.unlink()
        os.mkfifo(target)       # nobody ever writes to it: a reader that opens it by name waits for ever

def after(check):
    def checked(path, *args, **kwargs):
        result = check(path, *args, **kwargs)
        if Path(path).name == target.name:
            swap()
        return result
    return checked

qkv._io.check_input_file = after(qkv._io.check_input_file)
if hasattr(qkv.spec, "check_input_file"):
    qkv.spec.check_input_file = after(qkv.spec.check_input_file)
qkv.models.checkpoint.is_present = after(qkv.models.checkpoint.is_present)
try:
    if what == "model":
        import qkv.models
        qkv.models.load(target.parent)
    elif what == "tensors":
        from qkv.models.files import read_tensors
        read_tensors(target)
    else:
        spec = target.parent / "spec.toml"
        spec.write_text('tokens = ["a", "b"]\\nx = "' + target.name + '"\\n', encoding="utf-8")
        qkv.spec.load_spec(spec)
except InputError as exc:
    print(str(exc))
else:
    print("read")
"""


def _array_file(tmp_path: Path, suffix: str) -> Path:
    x = np.arange(6.0).reshape(2, 3)
    path = tmp_path / f"x{suffix}"
    if suffix == ".npy":
        np.save(path, x)
    elif suffix == ".npz":
        np.savez(path, x=x)
    else:
        from safetensors.numpy import save_file

        save_file({"x": x}, str(path))
    return path


@pytest.mark.parametrize("case", ["model", "shards", "tensors", ".npy", ".npz", ".safetensors"])
def test_a_file_swapped_for_a_named_pipe_after_the_check_is_refused_not_waited_on(built, tmp_path, case):
    if case in ("model", "shards"):
        directory = _copy(built, tmp_path, "gpt2" if case == "model" else "llama-gqa")
        target, what = _weights(directory)[0], "model"
    elif case == "tensors":
        target, what = _array_file(tmp_path, ".safetensors"), "tensors"
    else:
        target, what = _array_file(tmp_path, case), "spec"
    done = _run(SWAPPED, str(target), what)
    assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]
    line = done.stdout.strip()
    assert "\n" not in line and target.name in line and "named pipe (FIFO)" in line, line


def test_the_loader_reads_each_weights_file_through_one_descriptor(built, tmp_path, monkeypatch):
    """No reader opens a weights file by name after the check: every open of a .safetensors path is counted."""
    import builtins

    import qkv.models

    directory = _copy(built, tmp_path, "llama-gqa")
    opened: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def counting_open(file, *args, **kwargs):
        if str(file).endswith(".safetensors"):
            opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def counting_os_open(path, *args, **kwargs):
        if str(path).endswith(".safetensors"):
            opened.append(str(path))
        return real_os_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(os, "open", counting_os_open)
    qkv.models.load(directory)
    shards = [str(p) for p in _weights(directory)]
    assert sorted(opened) == sorted(shards), opened     # each shard opened exactly once (the Rust side opens none)


@pytest.mark.parametrize("size", [300 * 2**20, 2 * 2**30 + 1], ids=["300MiB", "2GiB"])
def test_a_huge_tokenizer_json_is_refused_by_its_size_before_it_is_read(built, tmp_path, size):
    """tokenizer.json goes through the one bounded reader (256 MiB): a larger file (sparse here: it costs no disk)
    is refused by its size from stat, before any of it is read into memory."""
    import tracemalloc

    import qkv.models
    from qkv.errors import InputError

    directory = _copy(built, tmp_path, "gpt2")
    with open(directory / "tokenizer.json", "r+b") as handle:
        handle.truncate(size)
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as caught:
            qkv.models.load(directory)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(caught.value)
    assert "tokenizer.json" in message and "256 MiB" in message and "\n" not in message, message
    assert peak < 16 * 2**20, peak


OUT_OF_MEMORY = """
import contextlib, ctypes, io, resource, sys
import qkv.cli
with contextlib.redirect_stdout(io.StringIO()):   # once with no limit: every module the command imports is loaded
    assert qkv.cli.main(["embed", "hello"]) == 0   # (an import at the limit fails in ways no program can word)
for line in open("/proc/self/status"):
    if line.startswith("VmSize"):
        size = int(line.split()[1]) * 1024
# The first model's tensors, freed, stay in malloc's heap (still counted in VmSize): the second load can take
# them again without asking for address space, so the room is counted beyond that free heap (glibc's mallinfo2).
# Without it the 64 MB case loaded MiniLM again inside its "room" in some runs (the CI of 7 December, 16:17).
class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
free_heap = libc.mallinfo2().fordblks
# room for the tokenizer and a few tensors, not for the 90 MB of MiniLM's weights
resource.setrlimit(resource.RLIMIT_AS, (size - free_heap + int(sys.argv[1]) * 2**20, resource.RLIM_INFINITY))
sys.exit(qkv.cli.main(["embed", "hello", "--json", "--out", sys.argv[2]]))
"""


@pytest.mark.parametrize("room", [24, 48, 64])
def test_running_out_of_memory_is_one_line_and_writes_nothing(tmp_path, room):
    """A command that runs out of memory (an address-space limit: NumPy's "Unable to allocate", or ENOMEM from
    the system) says so in one line, exit 2, and leaves no output file (nor a temporary one). The modules are
    loaded first: under the limit, Python's own import machinery can fail with a SystemError, not a class a
    program can name."""
    out = tmp_path / "out.json"
    done = _run(OUT_OF_MEMORY, str(room), str(out))
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith("qkv: error: out of memory"), lines
    assert done.stdout == "" and list(tmp_path.iterdir()) == []
