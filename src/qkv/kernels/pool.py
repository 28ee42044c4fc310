"""The kernel's threads: a pool kept between calls, the job runner, and the fork gate.

`run_all(run, jobs, threads)` runs run(*job) for every job on the caller and threads − 1 pooled
workers; `fork_gate()` is held by every kernel call so os.fork() never happens in the middle of
one; `available_cpus()` is how many CPUs this process may use: the machine in use's
(`native.use_machine`), else the operating system's answer (`native.os_cpus`).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import native

__all__ = ["run_all", "fork_gate", "available_cpus"]

# The thread tail's probe (benchmarks/bench_threads.py): when a list, every run_all on more than one
# thread appends one (call, thread, start, end, cpu) row per thread — perf_counter seconds when it
# began and stopped taking jobs, and its CPU seconds meanwhile — so the idle tail (last end − first
# end) and each thread's busy time can be read without trusting wall clocks on a loaded machine.
probe: list | None = None
_probe_calls = 0

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0


def run_all(run, jobs, threads) -> None:
    """run(*job) for every job, on `threads` threads: the caller and threads − 1 workers of a
    pool kept between calls (starting threads per call cost ~0.1–1 ms). Each thread takes the
    next job from the shared list (heaviest first), so a slow thread never holds up the rest."""
    threads = min(threads, len(jobs))
    if threads <= 1:
        for job in jobs:
            run(*job)
        return
    pending = iter(jobs)
    lock = threading.Lock()
    failed = []
    rows = probe
    if rows is not None:
        global _probe_calls
        _probe_calls += 1
        call = _probe_calls

    def drain():
        if rows is not None:
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                take()
            finally:
                rows.append((call, threading.get_ident(), start, time.perf_counter(), time.thread_time() - cpu))
        else:
            take()

    def take():
        while not failed:
            with lock:
                job = next(pending, None)
            if job is None:
                return
            try:
                run(*job)
            except BaseException:
                failed.append(True)
                raise

    futures = _submit(drain, threads - 1)
    try:
        drain()
    finally:
        for future in futures:
            future.cancel()   # not started (pool busy with another call): nothing left to do
        for future in futures:
            if not future.cancelled():
                future.result()   # waits; re-raises a worker's exception


def _submit(fn, count: int) -> list:
    """Submit fn `count` times to the shared pool, growing it first if it is too small.

    Under the lock, so a concurrent call that grows (replaces) the pool can never shut down the
    pool between our lookup and our submissions ("cannot schedule new futures after shutdown").
    A replaced pool is shut down without waiting: work already submitted to it still runs."""
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < count:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool, _pool_size = ThreadPoolExecutor(count, thread_name_prefix="qkv-attn"), count
        return [_pool.submit(native.carry(fn)) for _ in range(count)]   # each in the caller's context (its machine)


# os.fork() waits until no kernel call is running, and kernel calls wait while a fork is under way:
# OpenBLAS shuts its threads down at a fork and may restart them with its default thread count,
# so a BLAS call in flight in another thread across a fork can hang (seen: sgemm spinning in
# inner_thread after the fork) and the BLAS limit held for that call would be lost.
_gate = threading.Condition()
_gate_active = 0
_gate_forking = False


@contextlib.contextmanager
def fork_gate():
    global _gate_active
    with _gate:
        while _gate_forking:
            _gate.wait()
        _gate_active += 1
    try:
        yield
    finally:
        with _gate:
            _gate_active -= 1
            if _gate_active == 0:
                _gate.notify_all()


def _before_fork() -> None:
    global _gate_forking
    with _gate:
        _gate_forking = True
        while _gate_active:
            _gate.wait()


def _after_fork_in_parent() -> None:
    global _gate_forking
    with _gate:
        _gate_forking = False
        _gate.notify_all()


def _after_fork_in_child() -> None:
    """The child of os.fork() has only the forking thread: none of the pool's workers. Start from
    nothing: a new (empty) pool on first use, fresh locks and gate (qkv.kernels.blas resets its
    BLAS-limit count itself)."""
    global _pool, _pool_size, _pool_lock, _gate, _gate_active, _gate_forking
    _gate, _gate_active, _gate_forking = threading.Condition(), 0, False
    _pool, _pool_size, _pool_lock = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)


def available_cpus() -> int:
    """The CPUs this process may use, as the machine in use says (`native.use_machine(m)`: m.cpus), else
    as the operating system says (`native.os_cpus`, the live machine's). Read at each use."""
    machine = native.machine_in_use()
    return native.os_cpus() if machine is None else machine.cpus
