"""qkv against its peer on the same call, each side in its own process, CPU time (issue 31 §3).

    .venv/bin/python benchmarks/bench_peers.py [--sizes 256,1024,4096] [--rounds 5] [--calls 5]
                                               [--kinds numpy,bfloat16,float16] [--json FILE]
                                               [--shape 1,8,64] [--cpus N] [--route torch_flash]

Kinds: `numpy` — qkv.attention on NumPy float32 arrays against torch's SDPA on float32 tensors of the
same values; `bfloat16` / `float16` / `float32` — qkv.attention on torch tensors of that dtype against SDPA
on the same tensors (forward, no autograd). B = 1, H = 8, D = 64 (`--shape B,H,D`), unmasked and causal
(`is_causal`). `--cpus N`: each child is held to the first N CPUs this process may use (its affinity set
before torch is imported, so torch's threads and qkv's pool both see N; `--cpus 1`: one thread a side). `--route NAME`: the qkv side pinned to that route (`torch_flash`: the C kernel,
`torch_sdpa`: qkv's own front before SDPA), where the default lets qkv choose: how the speed rules
(kernels/speed.py) are measured, each side in its own process.
A call shorter than ~20 ms is timed in runs of calls in a row that fill ~20 ms (a sample; `--calls` samples).

Made for a machine other work shares: each (kind, T, side) runs in a fresh process (no thread pool, cache
or allocator of one side near the other's), the sides alternate round by round (round r: qkv then the
peer, round r + 1 the other way round), and each process, after two warm-up calls per case, times
`--calls` calls and reports the median of each call's CPU time (time.process_time: every thread of the
process, so a neighbour taking the cores adds waiting, not CPU time) and of its wall time. The table gives,
per case, the median over rounds and the spread (lowest–highest round) of both, and ratios peer / qkv
(> 1: qkv faster) of the medians; the CPU model, NumPy's BLAS, torch's configuration and the load
average before, during (each round) and after. Prints a table, then writes JSON with every round.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

HEADS, WIDTH = 8, 64
SAMPLE_SECONDS = 0.02   # a short call is timed in runs of calls this long (process_time ticks ~1 µs, calls ~60 µs)


def _parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="256,1024,4096")
    parser.add_argument("--kinds", default="numpy,bfloat16,float16")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=5, help="timed calls per case in each process")
    parser.add_argument("--json", default=None)
    parser.add_argument("--shape", default=f"1,{HEADS},{WIDTH}", help="B,H,D")
    parser.add_argument("--cpus", type=int, default=None, help="hold each child to this many CPUs")
    parser.add_argument("--route", default=None, help="pin the qkv side to this route (torch_flash, torch_sdpa)")
    parser.add_argument("--side", default=None, help=argparse.SUPPRESS)   # internal: one process's side
    parser.add_argument("--kind", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--t", type=int, default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _timed(fn, calls: int) -> dict:
    """Median CPU and wall seconds per call over `calls` samples, a sample being `repeat` calls in a row
    (1 for long calls; as many as fill SAMPLE_SECONDS for short ones, measured on the warm-up)."""
    fn()
    cpu = time.process_time()
    fn()
    once = time.process_time() - cpu
    repeat = max(1, min(1000, int(SAMPLE_SECONDS / max(once, 1e-6))))
    walls, cpus = [], []
    for _ in range(calls):
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(repeat):
            fn()
        cpus.append((time.process_time() - cpu) / repeat)
        walls.append((time.perf_counter() - wall) / repeat)
    return {"cpu": statistics.median(cpus), "wall": statistics.median(walls), "repeat": repeat}


def run_side(args) -> int:
    """In a child: one side of one kind at one T, unmasked and causal; a JSON line."""
    if args.cpus:   # before torch is imported: its thread count follows the affinity, as qkv's pool does
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:args.cpus])
    import numpy as np
    import torch

    batch, heads, width = _shape(args.shape)
    rng = np.random.default_rng(args.t)
    q, k, v = (rng.standard_normal((batch, heads, args.t, width)).astype(np.float32) for _ in range(3))
    if args.kind == "numpy":
        arrays = (q, k, v) if args.side == "qkv" else tuple(torch.from_numpy(a) for a in (q, k, v))
    else:
        arrays = tuple(torch.from_numpy(a).to(getattr(torch, args.kind)) for a in (q, k, v))
    if args.side == "qkv":
        import qkv
        from qkv.attention import _attention

        def call(causal):   # (the public call when nothing is pinned: what a user's call costs)
            if args.route is None:
                return qkv.attention(*arrays, causal=causal)
            return _attention(*arrays, causal=causal, route=args.route)
    else:
        sdpa = torch.nn.functional.scaled_dot_product_attention

        def call(causal):
            return sdpa(*arrays, is_causal=causal)
    out = {}
    with torch.no_grad():
        for causal in (False, True):
            out["causal" if causal else "dense"] = _timed(lambda: call(causal), args.calls)
    route = None
    if args.side == "qkv":
        from qkv.kernels import route as route_mod
        from qkv.kernels.call import check_call

        with torch.no_grad():
            route = {name: route_mod.choose_call_route(check_call(*arrays, causal=causal), route=args.route)[1].name.value
                     for name, causal in (("dense", False), ("causal", True))}
    print(json.dumps({"times": out, "route": route, "torch_threads": torch.get_num_threads()}))
    return 0


def _shape(text: str) -> tuple:
    try:
        batch, heads, width = (int(n) for n in text.split(","))
    except ValueError:
        raise SystemExit(f"--shape must be B,H,D (three integers), got {text!r}") from None
    return batch, heads, width


def _machine() -> dict:
    import numpy as np
    import torch

    from qkv.kernels import native, pool

    try:
        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        blas_name = f"{blas.get('name')} {blas.get('version')}"
    except Exception:   # older NumPy: no dicts
        blas_name = None
    try:
        import threadpoolctl

        pools = [f"{p['internal_api']} {p['version']} ({p.get('threading_layer')}, {p['num_threads']} threads, "
                 f"{p.get('architecture')})" for p in threadpoolctl.threadpool_info()]
    except ImportError:
        pools = []
    wanted = []
    for line in torch.__config__.show().splitlines():   # its libraries, vector level and BLAS, not its flags
        line = line.strip()
        if line.startswith("- Build settings:"):
            wanted += re.findall(r"(?:BLAS_INFO|LAPACK_INFO)=[^,]*", line)
        elif any(word in line for word in ("MKL", "OpenMP", "CPU capability")):
            wanted.append(line.lstrip("- "))
    return {"cpu": native.cpu_name(), "cpus": pool.available_cpus(), "numpy": np.__version__,
            "numpy_blas": blas_name, "thread_pools": pools, "torch": torch.__version__,
            "torch_config": wanted, "torch_threads": torch.get_num_threads(), "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def main(argv=None) -> int:
    args = _parse(argv)
    if args.side:
        return run_side(args)
    sizes = [int(t) for t in args.sizes.split(",")]
    kinds = args.kinds.split(",")
    batch, heads, width = _shape(args.shape)
    unknown = sorted(set(kinds) - {"numpy", "bfloat16", "float16", "float32"})
    if unknown:
        raise SystemExit(f"--kinds takes numpy, bfloat16, float16, float32; got {', '.join(unknown)}")
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)          # children read compiled bytecode, as an install does
    env.setdefault("PYTHONPYCACHEPREFIX", "/tmp/pyc-bench-peers")
    machine = _machine()
    if args.cpus:
        machine["cpus_per_side"] = args.cpus
    if args.route:
        machine["qkv_route"] = args.route
    machine["load_before"] = os.getloadavg()[0]
    rounds = {(kind, t): [] for kind in kinds for t in sizes}
    loads = []
    sides = ("qkv", "peer")
    for round_index in range(args.rounds):
        for kind in kinds:
            for t in sizes:
                got = {}
                for side in (sides if round_index % 2 == 0 else sides[::-1]):
                    command = [sys.executable, os.path.abspath(__file__), "--side", side, "--kind", kind,
                               "--t", str(t), "--calls", str(args.calls), "--shape", args.shape]
                    if args.cpus:
                        command += ["--cpus", str(args.cpus)]
                    if args.route:
                        command += ["--route", args.route]
                    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
                    if done.returncode:
                        print(done.stderr, file=sys.stderr)
                        return 1
                    got[side] = json.loads(done.stdout.strip().splitlines()[-1])
                rounds[(kind, t)].append(got)
        loads.append(os.getloadavg()[0])
        print(f"round {round_index + 1}/{args.rounds} done, load average {loads[-1]:.1f}", file=sys.stderr, flush=True)
    machine["load_rounds"] = loads
    machine["load_after"] = os.getloadavg()[0]

    rows = []
    for (kind, t), runs in rounds.items():
        for mask in ("dense", "causal"):
            row = {"kind": kind, "t": t, "mask": mask, "route": runs[0]["qkv"]["route"][mask],
                   "torch_threads": runs[0]["qkv"]["torch_threads"]}
            for clock in ("cpu", "wall"):
                ours = [r["qkv"]["times"][mask][clock] for r in runs]
                theirs = [r["peer"]["times"][mask][clock] for r in runs]
                row[clock] = {"qkv": statistics.median(ours), "peer": statistics.median(theirs),
                              "qkv_range": [min(ours), max(ours)], "peer_range": [min(theirs), max(theirs)],
                              "ratio": statistics.median(theirs) / statistics.median(ours),
                              "ratio_per_round": [b / a for a, b in zip(ours, theirs)]}
            rows.append(row)
    peer_name = {"numpy": "SDPA float32", "bfloat16": "SDPA bfloat16", "float16": "SDPA float16",
                 "float32": "SDPA float32"}
    print(f"{machine['cpu']}, {machine['cpus']} CPUs; NumPy {machine['numpy']} ({machine['numpy_blas']}); "
          f"torch {machine['torch']} ({machine['torch_threads']} threads); load {machine['load_before']:.1f} "
          f"before, {min(loads):.1f}–{max(loads):.1f} per round, {machine['load_after']:.1f} after")
    print(f"B={batch} H={heads} D={width}; each side in its own process"
          f"{f' held to {args.cpus} CPU(s)' if args.cpus else ''} (torch threads {rows[0]['torch_threads']}), "
          f"{f'qkv pinned to {args.route}, ' if args.route else ''}"
          f"alternating, {args.rounds} rounds × median of {args.calls} samples; CPU ms (process_time, all threads) "
          f"and wall ms; × = peer / qkv (> 1: qkv faster)")
    print(f"{'qkv on':<10}{'T':>6} {'mask':<7}{'qkv route':<14}{'qkv CPU ms':>20}{'peer CPU ms':>22}{'×CPU':>7}"
          f"{'range':>13}{'qkv wall':>10}{'peer wall':>10}{'×wall':>7}  peer")
    for row in rows:
        cpu, wall = row["cpu"], row["wall"]
        low, high = min(cpu["ratio_per_round"]), max(cpu["ratio_per_round"])
        print(f"{row['kind']:<10}{row['t']:>6} {row['mask']:<7}{row['route']:<14}"
              f"{cpu['qkv'] * 1e3:>9.3f} ({cpu['qkv_range'][0] * 1e3:.3f}–{cpu['qkv_range'][1] * 1e3:.3f})"
              f"{cpu['peer'] * 1e3:>9.3f} ({cpu['peer_range'][0] * 1e3:.3f}–{cpu['peer_range'][1] * 1e3:.3f})"
              f"{cpu['ratio']:>7.2f}{f'{low:.2f}–{high:.2f}':>13}{wall['qkv'] * 1e3:>10.1f}{wall['peer'] * 1e3:>10.1f}"
              f"{wall['ratio']:>7.2f}  {peer_name[row['kind']]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine, "rounds": args.rounds, "calls": args.calls, "batch": batch, "heads": heads,
                       "width": width, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
