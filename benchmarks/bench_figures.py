"""The speed a learner feels: `import qkv`, each example's --figure, and a model's figures (issue 29).

    .venv/bin/python benchmarks/bench_figures.py [--rounds 5] [--json FILE] [--only ROWS] [--baseline REF]

Every number is a median over --rounds, wall and CPU time (the process's; on a busy shared machine the
CPU time is the steadier of the two), each round in a fresh interpreter (a learner runs one command
in a new process; a warm process would hide matplotlib's and the fonts' first-use costs):
  import qkv       the time of `import qkv` (and of `import numpy` alone, which it cannot beat);
  <example>        `qkv example NAME --figure`'s figure part: draw the figure that suits the example's
                   trace (qkv.viz.figure_for) and write it as a PNG, matplotlib's import included;
  <example> page   `qkv example NAME --format html --out FILE`, the whole command (the offline page: the
                   interpreter's start, `import qkv`, the example's run and the page), wall and CPU time of the
                   process (its rusage);
  minilm grid      `qkv inspect TEXT --figure`'s figure: the 6 × 12 layers × heads grid of MiniLM;
  minilm head      `qkv inspect TEXT --layer 2 --head 3 --figure`'s figure (one head, its chain).
The model runs before the clock starts (it is not the figure's time). The figure rows' children import
matplotlib as the `qkv` command's own process does (`qkv._matplotlib`: without writing its artists' `set`
docstrings). Python's bytecode is compiled before
the first round, as an installed package has it: with PYTHONDONTWRITEBYTECODE set, each fresh process would
otherwise compile qkv's modules again (about 0.1 s of every row) — and matplotlib's, where the environment was
installed without bytecode (this machine's venv, 7 December: `import matplotlib.figure` 1.8 s of CPU instead
of 0.4 s). Every child therefore reads its bytecode from one folder (PYTHONPYCACHEPREFIX, under the temporary
directory): qkv's is compiled into it (`compileall`), and one untimed run of each kind of row, allowed to write
bytecode, compiles what it imports (matplotlib, Pillow, numpy, …) there. Prints the CPU model (name, family
and model numbers), the core count and the load average: a shared machine's other work changes every number.
With --baseline REF (a git commit) each row also runs the code of REF (its src/ exported to a temporary
folder, this checkout's built C extension copied in), alternating round by round with the current code, so
that before and after see the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ("self-attention", "cross-attention", "multi-head", "projection", "group-meeting")
TEXT = "The cat sat on the mat."

_IMPORT = """
import time
t, c = time.perf_counter(), time.process_time(); import numpy
numpy_s, numpy_c = time.perf_counter() - t, time.process_time() - c
t, c = time.perf_counter(), time.process_time(); import qkv
print(numpy_s + time.perf_counter() - t, numpy_c + time.process_time() - c, numpy_s, numpy_c)
"""

# The children import matplotlib as the `qkv` command does (`qkv._matplotlib.install`, which `qkv.cli.main` calls
# in a process of its own); a baseline commit from before that module imports it as it is.
_AS_COMMAND = """
try:
    from qkv import _matplotlib
    _matplotlib.install()
except ImportError:
    pass
"""

_EXAMPLE = _AS_COMMAND + """
import sys, time, tempfile, os
import qkv.examples
trace = qkv.examples.run(sys.argv[1])
out = os.path.join(tempfile.mkdtemp(), "f.png")
t, c = time.perf_counter(), time.process_time()
from qkv.viz import save_figure
save_figure(trace, out, lang=sys.argv[2])
print(time.perf_counter() - t, time.process_time() - c)
"""

_MODEL = _AS_COMMAND + """
import sys, time, tempfile, os
from qkv.models import load
model = load("minilm")
out = os.path.join(tempfile.mkdtemp(), "f.png")
if sys.argv[1] == "grid":
    weights = model.attention_weights(sys.argv[2])
    tokens = model.tokens(sys.argv[2])
    t, c = time.perf_counter(), time.process_time()
    from qkv.viz import attention_grid, write_figure
    write_figure(attention_grid(weights, tokens, title="minilm"), out)
else:
    trace = model.trace(sys.argv[2], layer=2, head=3, query=1)
    t, c = time.perf_counter(), time.process_time()
    from qkv.viz import save_figure
    save_figure(trace, out)
print(time.perf_counter() - t, time.process_time() - c)
"""


# Where every child reads (and a warm-up run writes) its bytecode; see the module's docstring.
_PYCACHE = Path(__import__("tempfile").gettempdir()) / "qkv-bench-pycache"


def _env(src: Path | None, *, write_bytecode: bool = False) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src or ROOT / "src"), "PYTHONPYCACHEPREFIX": str(_PYCACHE)}
    if write_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _run(code: str, *args: str, src: Path | None = None, write_bytecode: bool = False) -> list[float]:
    env = _env(src, write_bytecode=write_bytecode)
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                          check=True)
    return [float(x) for x in done.stdout.split()]


def _command(*args: str, src: Path | None = None, write_bytecode: bool = False) -> list[float]:
    """Wall and CPU seconds (user + system, from the child's rusage) of ``qkv ARGS`` in a fresh process."""
    import resource
    import time

    env = _env(src, write_bytecode=write_bytecode)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "qkv", *args], capture_output=True, env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return [wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime]


def _compile(src: Path) -> None:
    """Bytecode for every module under ``src``, in the children's bytecode folder (read even where
    PYTHONDONTWRITEBYTECODE stops writing it)."""
    import compileall

    sys.pycache_prefix = str(_PYCACHE)      # where compileall writes (importlib's cache_from_source)
    compileall.compile_dir(str(src), quiet=1)


def _cpu() -> str:
    """"AMD EPYC (family 25, model 17)": the name /proc/cpuinfo gives and, as a virtual machine's name
    may be generic, the family and model numbers that name the generation."""
    try:
        fields = {}
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
            if not line.strip():
                break
        name = fields.get("model name", "unknown CPU")
        if "cpu family" in fields and "model" in fields:
            name += f" (family {fields['cpu family']}, model {fields['model']})"
        return name
    except OSError:
        return "unknown CPU"


def _export(ref: str) -> Path:
    """src/ of the commit ``ref`` in a temporary folder, with this checkout's built C extension."""
    import shutil
    import tarfile
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="qkv-baseline-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "src"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    for built in (ROOT / "src").rglob("*.so"):
        target = folder / built.relative_to(ROOT)
        if target.parent.is_dir() and not target.exists():
            shutil.copy2(built, target)
    return folder / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--only", help="comma-separated rows to run (import, example names, page (every example's "
                                       "page) or 'NAME page', grid, head)")
    parser.add_argument("--baseline", metavar="REF", help="also time the code of this git commit, alternating")
    args = parser.parse_args()
    baseline = _export(args.baseline) if args.baseline else None
    for src in (ROOT / "src", baseline):
        if src is not None:
            _compile(src)
    only = set(args.only.split(",")) if args.only else None
    print(f"{_cpu()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
    rows: dict[str, float] = {}
    warm: set[str | None] = set()
    _run(_IMPORT, write_bytecode=True)

    print(f"  {'':<26} {'wall':>7}   {'CPU':>7}   (median of {args.rounds} fresh processes; CPU range)")

    def record(name: str, runs: list[list[float]], goal: float) -> None:
        wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        rows[name] = {"wall": wall, "cpu": cpu}
        spread = f"{min(r[1] for r in runs):.3f}–{max(r[1] for r in runs):.3f}"
        print(f"  {name:<26} {wall:7.3f} s {cpu:7.3f} s   ({spread}; goal ≤ {goal:g} s)", flush=True)

    def timed(name: str, code: str | None, argv: tuple, goal: float) -> None:
        """The row, and with --baseline the same row of the old code, their rounds alternating; code None:
        argv is a qkv command line, timed whole."""
        def once(src: Path | None = None) -> list[float]:
            return _command(*argv, src=src) if code is None else _run(code, *argv, src=src)

        if code not in warm:                         # untimed: compiles what this kind of row imports
            warm.add(code)
            _command(*argv, write_bytecode=True) if code is None else _run(code, *argv, write_bytecode=True)
        now, before = [], []
        for _ in range(args.rounds):
            now.append(once())
            if baseline is not None:
                before.append(once(baseline))
        if baseline is not None:
            record(f"{name} (before)", before, goal)
        record(name, now, goal)

    if only is None or "import" in only:
        runs = [_run(_IMPORT) for _ in range(args.rounds)]
        record("import qkv", [r[:2] for r in runs], 0.15)
        record("  of which numpy", [r[2:] for r in runs], 0.15)
    for name in EXAMPLES:
        for lang in ("en", "ko"):
            row = f"{name}" + (" (ko)" if lang == "ko" else "")
            if only is None or name in only:
                timed(row, _EXAMPLE, (name, lang), 1.0)
    import tempfile

    page = Path(tempfile.mkdtemp(prefix="qkv-bench-page-")) / "page.html"
    for name in EXAMPLES:
        for lang in ("en", "ko"):
            row = f"{name} page" + (" (ko)" if lang == "ko" else "")
            if only is None or "page" in only or f"{name} page" in only:
                timed(row, None, ("example", name, "--format", "html", "--lang", lang, "--out", str(page)), 1.0)
    for kind, goal in (("grid", 2.0), ("head", 1.0)):
        if only is None or kind in only:
            timed(f"minilm {kind}", _MODEL, (kind, TEXT), goal)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    if args.json:
        Path(args.json).write_text(json.dumps({"cpu": _cpu(), "cores": os.cpu_count(), "seconds": rows}, indent=1))


if __name__ == "__main__":
    main()
