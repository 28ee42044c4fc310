"""Slow first calls after idleness: is it qkv's pool waking, OpenBLAS's threads, or page faults?

    .venv/bin/python benchmarks/bench_idle.py [--rounds 7] [--idle 0,0.03,0.1,1,5] [--t 1024] [--json FILE]

One process, NumPy float32 inputs B=1, H=8, D=64 (non-causal), qkv.attention. For each idle time
(0 = back to back), --rounds times: sleep, then time the first call and the next two calls. Beside
each call it records
  wake  the time from handing the job to the pool until its worker starts running it (qkv's thread
        pool, kernels/pool.py; monkeypatched in for this script only), "—" with one thread;
  on CPU the worker's thread CPU time / its wall time while it ran the job (below 1: the worker
        was runnable but its core was taken: other processes, or the host);
  flt   the minor page faults the process took during the call (getrusage);
and the same schedule runs with num_threads=1 (qkv.kernels.blocked_attention), which has no pool to
wake, so a slowdown that stays with one thread is not the pool's; and for the pool alone (two empty
jobs that wait for each other: the time is how long a worker takes to wake and answer). Medians over the rounds; the
machine's load average is printed (a shared machine's other work changes every number).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time


def _instrument_pool():
    """Wrap pool._submit so every job records when its worker started: wake latencies, seconds."""
    import threading

    from qkv.kernels import pool

    meet = threading.Barrier(2)
    wakes: list[float] = []
    busy: list[float] = []        # per worker job: its thread's CPU time / its wall time (below 1: it lost its core)
    original = pool._submit

    def submit(fn, count):
        handed = time.perf_counter()

        def timed():
            began, cpu = time.perf_counter(), time.thread_time()
            wakes.append(began - handed)
            try:
                return fn()
            finally:
                wall = time.perf_counter() - began
                if wall > 1e-3:
                    busy.append((time.thread_time() - cpu) / wall)

        return original(timed, count)

    pool._submit = submit
    return wakes, busy


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--idle", default="0,0.03,0.1,1,5", help="seconds of sleep before the first call")
    parser.add_argument("--t", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--json", metavar="FILE", help="also write every call's time as JSON")
    args = parser.parse_args(argv)
    import numpy as np

    import qkv
    from qkv.kernels import blocked_attention

    idles = [float(x) for x in args.idle.split(",")]
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, args.heads, args.t, 64), dtype=np.float32) for _ in range(3))
    wakes, busy = _instrument_pool()
    import threading

    from qkv.kernels import pool

    meet = threading.Barrier(2)
    variants = {"qkv.attention (pool, all CPUs)": lambda: qkv.attention(q, k, v),
                "num_threads=1 (no pool)": lambda: blocked_attention(q, k, v, num_threads=1),
                # the pool alone: two jobs that only meet each other: the caller runs one and waits for a
                # worker to wake and run the other
                "pool round trip, no work": lambda: pool.run_all(lambda: meet.wait(10), [(), ()], 2)}
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"T={args.t} H={args.heads} D=64 float32, {args.rounds} rounds, load average {load} before")
    results = []
    for name, call in variants.items():
        for _ in range(20):
            call()                                        # warm: tables cached, pool started
        print(f"\n{name}")
        print("  idle s | 1st call ms | wake ms | worker on CPU | flt | 2nd call ms | 3rd call ms")
        for idle in idles:
            firsts, seconds, thirds, first_wakes, faults, on_cpu = [], [], [], [], [], []
            for _ in range(args.rounds):
                for _ in range(3):
                    call()                                # back to back before the pause
                time.sleep(idle)
                got = []
                for n in range(3):
                    del wakes[:], busy[:]
                    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                    started = time.perf_counter()
                    call()
                    got.append(time.perf_counter() - started)
                    if n == 0:
                        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
                        first_wakes.append(max(wakes) if wakes else None)
                        on_cpu.append(min(busy) if busy else None)
                firsts.append(got[0]), seconds.append(got[1]), thirds.append(got[2])
            results.append({"variant": name, "idle_s": idle, "first_ms": [x * 1e3 for x in firsts],
                            "second_ms": [x * 1e3 for x in seconds], "third_ms": [x * 1e3 for x in thirds],
                            "wake_ms": [x * 1e3 for x in first_wakes if x is not None], "minor_faults": faults,
                            "worker_cpu_over_wall": [c for c in on_cpu if c is not None]})
            wake = [w for w in first_wakes if w is not None]
            print(f"  {idle:6.3f} | {statistics.median(firsts) * 1e3:11.2f} | "
                  f"{(statistics.median(wake) * 1e3) if wake else float('nan'):7.3f} | "
                  f"{statistics.median(cpu) if (cpu := [c for c in on_cpu if c is not None]) else float('nan'):13.2f} | "
                  f"{statistics.median(faults):3.0f} | "
                  f"{statistics.median(seconds) * 1e3:11.2f} | {statistics.median(thirds) * 1e3:11.2f}")
    with open("/proc/loadavg") as f:
        after = f.read().split()[0]
    print(f"\nload average {after} after")
    if args.json:
        import json

        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"load_before": float(load), "load_after": float(after), "t": args.t, "heads": args.heads,
                       "results": results}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
