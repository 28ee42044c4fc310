"""Starting a process group: under torchrun (env://), or P local processes on 127.0.0.1.

`init_from_env` is what a rank calls when a launcher (torchrun, or `run_local` below) has set
MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE: it joins the group with a bounded timeout, so a
rank that never joins makes the others fail after `timeout` seconds instead of waiting forever.

`run_local(fn, procs)` is the local launcher behind `qkv ring` and the tests: it picks a free port,
starts `procs` processes (multiprocessing "spawn"), each joins through env:// exactly as under
torchrun, runs `fn(*args)` and sends back its result. If any rank fails or dies, the others stop
(their collectives and ring exchanges fail within the timeout) and `run_local` raises one
`DistributedError` that names the first failure; no process is left behind.

Signals: the ranks ignore SIGINT (a Ctrl-C reaches the whole terminal process group; the launcher
answers it, not each rank with a traceback). While `run_local` waits, SIGTERM and SIGHUP to the
launcher raise `Interrupted` in it (SIGINT raises KeyboardInterrupt as usual); either way the ranks
are sent SIGTERM, then SIGKILL after `_STOP_GRACE` seconds, before the exception leaves. Each rank
also watches the launcher's process: if the launcher disappears (even by SIGKILL, which cannot be
answered), the rank exits within `_WATCH_INTERVAL` seconds.
"""

from __future__ import annotations

import contextlib
import datetime
import multiprocessing as mp
import multiprocessing.connection
import os
import re
import signal
import socket
import threading
import time
import traceback
from typing import Any, Callable, Sequence

from ..kernels import pool

__all__ = ["DistributedError", "Interrupted", "init_from_env", "run_local", "free_port"]

_STOP_GRACE = 3.0       # seconds the ranks get to exit after SIGTERM before SIGKILL
_WATCH_INTERVAL = 0.5   # seconds between a rank's checks that its launcher is still there


class DistributedError(RuntimeError):
    """A rank died, hung, or never joined; the message names which rank and what it saw."""


class Interrupted(Exception):
    """The launcher received SIGTERM or SIGHUP while its ranks ran; they have been stopped."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"stopped by {signal.Signals(signum).name}")


def init_from_env(*, backend: str | None = None, timeout: float = 60.0):
    """Join the process group described by the environment (torchrun's env:// rendezvous).

    backend: "gloo" (CPU; the default when no GPU is visible) or "nccl" (CUDA tensors).
    timeout: seconds any rendezvous, collective or ring exchange may wait for another rank
    before failing with a `DistributedError` (not hanging). Returns the default group.
    A group already initialised is returned as it is.
    """
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return dist.group.WORLD
    missing = [name for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE") if name not in os.environ]
    if missing:
        raise DistributedError(f"cannot join a process group: {', '.join(missing)} not set "
                               "(start the program with torchrun, or use qkv.distributed.run_local)")
    backend = backend or ("nccl" if torch.cuda.is_available() else "gloo")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    try:
        dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=timeout))
    except Exception as exc:  # torch raises DistStoreError / RuntimeError / TimeoutError here
        raise DistributedError(
            f"rank {rank} of {world}: the group did not form within {timeout:g} s at "
            f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']} (a rank never joined or the "
            f"address is unreachable): {_first_line(exc)}") from None
    return dist.group.WORLD


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def run_local(fn: Callable[..., Any], procs: int, *args, timeout: float = 60.0, ranks: Sequence[int] | None = None,
              port: int | None = None, threads: int | None = None, backend: str = "gloo",
              env: dict[str, str] | None = None, start_method: str = "spawn") -> list[Any]:
    """Run ``fn(*args)`` on ``procs`` local ranks joined in one process group; results by rank.

    fn must be importable (a module-level function: the processes are spawned). Inside it,
    torch.distributed is initialised (gloo on 127.0.0.1 by default).
    timeout: seconds any rank may wait for another (rendezvous, collectives, ring exchanges); the
        whole run is also bounded: startup allowance + the time fn takes, and after the first
        failure the others get `timeout` + 10 s to stop before they are killed.
    ranks: start only these ranks (default all); the others must join from elsewhere with the same
        port (another shell, or torchrun) — or, if they never do, the started ones fail after timeout.
    threads: torch threads per rank (default: the CPUs this process may use // procs, at least 1;
        `qkv.kernels.use_machine` sets them).
    env: extra environment variables for the ranks, set before they start (e.g. glibc's
        MALLOC_MMAP_THRESHOLD_, read once at process start; with "forkserver" they reach the
        ranks only if this call starts the server).
    start_method: "spawn" (a fresh interpreter per rank: imports torch each time, seconds) or
        "forkserver" (ranks forked from one server that imported torch and qkv once, kept for the
        rest of this process: later groups start in a fraction of a second; tests use it).
    Raises `DistributedError` naming the first rank that failed or died and the message of every
    rank that stopped because of it; `Interrupted` when this process receives SIGTERM or SIGHUP
    while waiting (KeyboardInterrupt for SIGINT), after the ranks have been stopped.
    """
    if procs < 1:
        raise ValueError(f"procs must be at least 1, got {procs}")
    ranks = list(range(procs)) if ranks is None else sorted(set(ranks))
    if not ranks or ranks[0] < 0 or ranks[-1] >= procs:
        raise ValueError(f"ranks must be a non-empty subset of 0 … {procs - 1}, got {ranks}")
    port = free_port() if port is None else port
    threads = threads or max(1, pool.available_cpus() // procs)   # the machine's CPUs (native.use_machine's)
    ctx = mp.get_context(start_method)
    if start_method == "forkserver":
        ctx.set_forkserver_preload(["torch", "torch.distributed", "qkv.distributed"])
    children, pipes = {}, {}
    saved = {name: os.environ.get(name) for name in (env or {})}
    os.environ.update(env or {})
    with _signals_raise():
        try:
            with _sigint_ignored():   # inherited by spawned ranks: a Ctrl-C during their start stays quiet
                for rank in ranks:
                    receive, send = ctx.Pipe(duplex=False)
                    child = ctx.Process(target=_rank_main, args=(rank, procs, port, threads, backend, timeout, fn,
                                                                 args, send),
                                        name=f"qkv-rank-{rank}", daemon=True)
                    child.start()
                    send.close()
                    children[rank], pipes[rank] = child, receive
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            saved = {}
            return _collect(children, pipes, timeout)
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            _stop(children.values())


def _stop(children) -> None:
    """SIGTERM to every rank still running, SIGKILL to those still there after _STOP_GRACE s; reaped."""
    alive = [child for child in children if child.is_alive()]
    for child in alive:
        child.terminate()
    deadline = time.monotonic() + _STOP_GRACE
    for child in alive:
        child.join(max(0.0, deadline - time.monotonic()))
    for child in children:
        if child.is_alive():
            child.kill()
        child.join(5)


@contextlib.contextmanager
def _signals_raise():
    """SIGTERM and SIGHUP raise `Interrupted` in this (main) thread while the block runs, so that its
    finally-clauses stop the ranks; elsewhere than the main thread nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_interrupted(signum, frame):
        raise Interrupted(signum)

    previous = {}
    for signum in (signal.SIGTERM, signal.SIGHUP):
        previous[signum] = signal.signal(signum, raise_interrupted)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def _sigint_ignored():
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _collect(children: dict, pipes: dict, timeout: float) -> list[Any]:
    results: dict[int, Any] = {}
    errors: dict[int, str] = {}
    first_failure: tuple[float, int] | None = None
    pending = dict(children)
    deadline_after_failure = None
    while pending:
        waitables = [pipes[r] for r in pending] + [children[r].sentinel for r in pending]
        wait_for = None if deadline_after_failure is None else max(0.0, deadline_after_failure - time.monotonic())
        ready = mp.connection.wait(waitables, timeout=wait_for)
        if not ready:  # the survivors did not stop within the bound: report them as hung
            for rank in pending:
                errors[rank] = f"still running {timeout + 10:g} s after rank {first_failure[1]} failed; killed"
            break
        for rank in list(pending):
            status, payload = None, None
            if pipes[rank] in ready or (children[rank].sentinel in ready and pipes[rank].poll()):
                try:
                    status, payload = pipes[rank].recv()
                except (EOFError, OSError):
                    status = None
            elif children[rank].sentinel not in ready:
                continue
            children[rank].join(5)
            if status == "ok":
                results[rank] = payload
            else:
                errors[rank] = payload if status == "error" else _death(children[rank].exitcode)
                if first_failure is None:
                    first_failure = (time.monotonic(), rank)
                    deadline_after_failure = time.monotonic() + timeout + 10
            del pending[rank]
    if errors:
        # a rank that died without a word is the cause; the others' errors are its consequences
        died = [r for r in sorted(errors) if errors[r].startswith("died")]
        first = died[0] if died else (first_failure[1] if first_failure else min(errors))
        others = sorted(r for r in errors if r != first)
        message = f"rank {first}: {errors[first]}"
        if others:  # the first of them speaks for the rest (their messages differ only in rank numbers)
            message += (f"; then rank{'s' if len(others) > 1 else ''} {', '.join(map(str, others))} stopped, "
                        f"rank {others[0]} saying: {errors[others[0]]}")
        raise DistributedError(message)
    return [results[r] for r in sorted(results)]


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"died (killed by {signal.Signals(-exitcode).name})"
        except ValueError:
            return f"died (signal {-exitcode})"
    return f"died (exit code {exitcode}) without reporting a result"


def _first_line(exc: BaseException) -> str:
    """The exception's first line, without gloo's source-file prefix and its boilerplate advice."""
    text = str(exc).strip().splitlines()
    line = re.sub(r"^\[[^\]]*\]\s*", "", text[0] if text else "")
    line = line.split(". This is typically caused")[0]
    return f"{type(exc).__name__}: {line}".strip()


def _watch_launcher() -> None:
    """Exit this rank when the process that started it is gone (the launcher, or the forkserver,
    which ends with its launcher) — even killed by SIGKILL: its children are then handed to another
    parent at once, whether or not anyone has reaped it yet, so the parent's pid changes."""
    parent = os.getppid()

    def watch():
        while True:
            time.sleep(_WATCH_INTERVAL)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="qkv-launcher-watch", daemon=True).start()


def _rank_main(rank, world, port, threads, backend, timeout, fn, args, conn) -> None:
    """Entry point of one spawned rank: join via env://, run fn, send ("ok", result) or ("error", text)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the launcher answers Ctrl-C and stops the ranks
    _watch_launcher()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world))
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    try:
        import torch
        import torch.distributed as dist

        torch.set_num_threads(threads)
        init_from_env(backend=backend, timeout=timeout)
        try:
            result = fn(*args)
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()
        report = ("ok", result)
    except DistributedError as exc:
        report = ("error", str(exc))
    except Exception as exc:  # a bug or bad input in fn: the message and where it came from
        where = traceback.extract_tb(exc.__traceback__)[-1]
        report = ("error", f"{_first_line(exc)} (at {os.path.basename(where.filename)}:{where.lineno})")
    try:
        conn.send(report)
        conn.close()
    except (OSError, EOFError):
        # the launcher is gone (killed, even by SIGKILL, while this rank was busy in a call that held the
        # interpreter, so the watch could not see it): nobody is left to tell, and nothing to print
        os._exit(1)
