"""A pytest plugin that records, for each test file, the CPU-seconds its worker spent on it, and a summary of them.

Why CPU-seconds: on a shared machine the wall clock measures the other work too; the order of tests/conftest.py
(LONGEST_FIRST) and its groups are decided from what each file costs, which is its CPU. A file's cost here is its
worker's own CPU (user + system), the processes it waited for (RUSAGE_CHILDREN: fresh interpreters, torchrun
ranks, g++), and the live processes under the worker read from /proc (Chromium and Playwright's driver run for the
whole worker and are never waited for while it runs: RUSAGE_CHILDREN misses them). Wall seconds are recorded beside
it: a file whose wall is far above its CPU waits (sleeps, timeouts, a server's deadline).

With QKV_FILECPU_SAMPLE=1 each worker also has its process tree looked at every 0.1 s (a detached process reading /proc) and
counts, per file, the looks in which nothing of the tree was runnable (state R): the worker and everything it
started were all waiting (a sleep, a timeout, a deadline, a socket). Those seconds leave a core idle on a quiet
machine whatever the order of the files, so they are what a shorter suite must shorten; the column `idle` gives
them (looks × 0.1 s). Unlike wall time it hardly moves with the load: a process that waits for a CPU is runnable.

Use (from a checkout, any pytest command line):
    QKV_FILECPU=/tmp/run1 PYTHONPATH=$PWD/src:$PWD/tools .venv/bin/python -m pytest -p filecpu ...
Each process (each xdist worker, or the one process without xdist) writes DIR/<worker>.json. Then
    .venv/bin/python tools/filecpu.py /tmp/run1 [/tmp/run2]
prints the files by CPU, each worker's total, and the collection cost (and the change between two runs).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _processes() -> dict[int, list[str]]:
    """Every process's /proc/PID/stat fields after "(comm)" (the name may hold spaces), by pid: [0] the state,
    [1] the parent's pid, [11:15] utime, stime, cutime, cstime (fields 14-17 of proc(5))."""
    fields = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode("latin-1")
        except OSError:
            continue
        fields[int(entry)] = stat[stat.rindex(")") + 2:].split()
    return fields


def _under(root: int, processes: dict[int, list[str]]) -> list[int]:
    """The pids of processes (`_processes`) under root, root excluded."""
    parent = {pid: int(f[1]) for pid, f in processes.items()}
    found = []
    for pid in parent:
        p = parent[pid]
        while p and p != root and p in parent:
            p = parent[p]
        if p == root and pid != root:
            found.append(pid)
    return found


def _descendants_cpu(root: int) -> float:
    """user + system CPU-seconds of the live processes under root (and what they reaped), from /proc."""
    processes = _processes()
    return sum(sum(int(x) for x in processes[pid][11:15]) for pid in _under(root, processes)) / _TICK


def _tree_runnable(root: int) -> bool:
    """Whether any thread of root or of a process under it is runnable (state R) at this moment, from /proc."""
    for pid in [root, *_under(root, _processes())]:
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in threads:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                    stat = f.read().decode("latin-1")
            except OSError:
                continue
            if stat[stat.rindex(")") + 2] == "R":
                return True
    return False


LOOK = 0.1    # seconds between two looks at a worker's process tree (QKV_FILECPU_SAMPLE)


def _look(worker: int, out: str) -> None:
    """The sampler (QKV_FILECPU_SAMPLE): until the worker exits, every LOOK seconds, the time of each look in which
    no thread of the worker or of a process under it was runnable."""
    with open(out, "a") as f:
        while os.path.exists(f"/proc/{worker}"):
            t = time.time()
            if not _tree_runnable(worker):
                f.write(f"{t}\n")
                f.flush()
            time.sleep(LOOK)


def _snapshot() -> tuple[float, float, float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (time.monotonic(), me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime,
            _descendants_cpu(os.getpid()))


class _Recorder:
    def __init__(self, out: str):
        self.out = out
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.files: dict[str, dict] = {}
        self.current: str | None = None
        self.start = None
        self.opened = 0.0     # time.time() when the current file began (its span for the sampler's looks)
        self.t0 = time.monotonic()
        self.collection = None
        self.spans: dict[str, list[list[float]]] = {}     # file: its [start, end] times (time.time())
        self.looks_file = None
        if os.environ.get("QKV_FILECPU_SAMPLE"):
            import subprocess
            import tempfile

            # A process of its own, detached (sh starts it in the background and exits, so init adopts it): no
            # thread, file or child of the worker that a test could see (test_serve audits the files its
            # process opens; tests count a process's children). It appends the time of each idle look to a file.
            fd, self.looks_file = tempfile.mkstemp(prefix="filecpu-looks-")
            os.close(fd)
            subprocess.run(["sh", "-c", f'"{sys.executable}" "{os.path.abspath(__file__)}" --look {os.getpid()} '
                            f'"{self.looks_file}" </dev/null >/dev/null 2>&1 &'], check=True)

    def _close(self):
        if self.current is None:
            return
        end = _snapshot()
        rec = self.files[self.current]
        rec["wall"] += end[0] - self.start[0]
        rec["self"] += end[1] - self.start[1]
        rec["children"] += end[2] - self.start[2]
        rec["live"] += end[3] - self.start[3]
        self.spans.setdefault(self.current, []).append([self.opened, time.time()])
        self.current = None

    def pytest_collection_finish(self, session):
        me = resource.getrusage(resource.RUSAGE_SELF)
        # the process's CPU up to here: interpreter start, plugins, conftest and every test module's imports
        self.collection = {"cpu": me.ru_utime + me.ru_stime, "wall": time.monotonic() - self.t0}

    def pytest_runtest_logstart(self, nodeid, location):
        name = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
        if name != self.current:
            self._close()
            self.current, self.start, self.opened = name, _snapshot(), time.time()
        self.files.setdefault(name, {"wall": 0.0, "self": 0.0, "children": 0.0, "live": 0.0, "tests": 0,
                                     "began": time.time()})
        self.files[name]["tests"] += 1

    def pytest_sessionfinish(self, session):
        self._close()
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        os.makedirs(self.out, exist_ok=True)
        if self.looks_file:
            with open(self.looks_file) as f:
                looks = [float(line) for line in f if line.strip()]
            os.unlink(self.looks_file)
            for name, spans in self.spans.items():
                n = sum(1 for t in looks for a, b in spans if a <= t < b)
                self.files[name]["idle"] = round(n * LOOK, 1)
        with open(os.path.join(self.out, f"{self.worker}.json"), "w") as f:
            json.dump({"worker": self.worker, "pid": os.getpid(), "collection": self.collection, "files": self.files,
                       "total": {"wall": time.monotonic() - self.t0, "self": me.ru_utime + me.ru_stime,
                                 "children": kids.ru_utime + kids.ru_stime},
                       "order": list(self.files)}, f, indent=1)


def pytest_configure(config):
    out = os.environ.get("QKV_FILECPU")
    if out and not config.pluginmanager.has_plugin("qkv-filecpu"):
        # the xdist controller runs no tests: only the workers (or a run without xdist) record
        if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):
            config.pluginmanager.register(_Recorder(out), "qkv-filecpu")


def _load(directory: str) -> list[dict]:
    runs = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".json"):
            with open(os.path.join(directory, name)) as f:
                runs.append(json.load(f))
    if not runs:
        raise SystemExit(f"filecpu: no worker records (*.json) in {directory}")
    return runs


def _per_file(runs: list[dict]) -> dict[str, dict]:
    files = {}
    for run in runs:
        for name, rec in run["files"].items():
            rec = dict(rec, worker=run["worker"], cpu=rec["self"] + rec["children"] + rec["live"])
            files[name] = rec
    return files


def main(argv: list[str]) -> int:
    if argv[:1] == ["--look"]:
        _look(int(argv[1]), argv[2])
        return 0
    if not argv or len(argv) > 2:
        print(__doc__, file=sys.stderr)
        return 2
    runs = _load(argv[0])
    files = _per_file(runs)
    before = _per_file(_load(argv[1])) if len(argv) == 2 else None
    for run in runs:
        cpu = sum(r["self"] + r["children"] + r["live"] for r in run["files"].values())
        col = run["collection"] or {"cpu": 0.0, "wall": 0.0}
        print(f"{run['worker']}: {len(run['files'])} files, {cpu:.1f} CPU-s in files, collection {col['cpu']:.1f} "
              f"CPU-s ({col['wall']:.1f} s wall), process total wall {run['total']['wall']:.1f} s, "
              f"self {run['total']['self']:.1f} + waited children {run['total']['children']:.1f} CPU-s")
    print(f"all files: {sum(r['cpu'] for r in files.values()):.1f} CPU-s, {len(files)} files")
    sampled = any("idle" in r for r in files.values())
    if sampled:
        idle = sum(r.get("idle", 0.0) for r in files.values())
        print(f"idle (nothing of a worker's tree runnable): {idle:.1f} s in all files")
    print(f"{'file':40} {'worker':>6} {'tests':>6} {'CPU-s':>7} {'self':>7} {'kids':>6} {'live':>6} {'wall':>7}"
          + (f" {'idle':>6}" if sampled else "") + ("  before" if before else ""))
    for name, r in sorted(files.items(), key=lambda kv: -kv[1]["cpu"]):
        extra = ""
        if before:
            b = before.get(name)
            extra = f"  {b['cpu']:7.1f}" if b else "       -"
        print(f"{name:40} {r['worker']:>6} {r['tests']:6d} {r['cpu']:7.1f} {r['self']:7.1f} {r['children']:6.1f} "
              f"{r['live']:6.1f} {r['wall']:7.1f}" + (f" {r.get('idle', 0.0):6.1f}" if sampled else "") + extra)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
