"""Which of two right routes is faster on this CPU: the C kernel (TORCH_FLASH) or torch's SDPA.

For a CPU torch call that both can compute with the same numbers — no score function, no mask other
than `causal` (Tq = Tk: torch's own `is_causal`), no bias, finite values, no log-sum-exp asked —
`choose_route` takes the one this table says is faster (kernels/route.py, eager and traced alike).
Everything else about a route is decided by correctness alone; this module only breaks a tie between
two correct routes.

The table, in order of trust:
1. A calibration measured on this machine (`qkv doctor --calibrate`): both routes timed on the same
   inputs (B = 1, H = 8, D = 64; float32, bfloat16, float16; unmasked and causal; forward at
   T = 512, 1024, 2048, forward + backward at T = 512, 1024: `CALIBRATION_SIZES`), each side of each round
   in its own fresh process (timed in one process, SDPA's spinning OpenMP threads land on the C kernel's
   clock), in rounds whose order alternates, each route's fastest round in wall and in CPU time; a case overrides the rules only when
   both clocks agree by more than `MARGIN` (`decide`), and a calibration measured while other processes
   kept the load average above the CPU count is not saved (`calibrate`, `save`). (The first calibration
   took medians of 3 wall-time alternations and saved whatever it read: on 2 loaded AMD EPYC cores it
   picked the C kernel for bfloat16 T = 1024, which the rules and a quiet machine give to SDPA by ×3.) Training is
   not timed at 2048: its six cases took 72 CPU-s there against 28 at 1024 (326 s against 97 s of wall
   time, 2 AMD EPYC cores at load 11, SDPA's half-precision backward the most of it), which would more
   than double the calibration's "about two minutes"; a longer training call reads the T = 1024 row. It is kept as JSON in the cache directory
   ($QKV_CACHE_DIR, else $XDG_CACHE_HOME/qkv, else ~/.cache/qkv), named by a key of what decides speed
   (CPU model and its vector flags, torch version, qkv version, usable CPUs): another CPU, torch or
   thread count reads the rules, never another machine's measurements.
2. Rules from measurements on the CPUs the project has met (below), when no calibration fits.

Measured (medians of 5 alternations, B = 1, H = 8, D = 64; "×r" = SDPA time / C kernel time, > 1
means the C kernel is faster), on an AMD EPYC with AVX-512 and avx512_bf16 (no AMX), 2 cores, torch
2.13.0 (MKL, oneDNN), loaded cores:
  bfloat16 forward   T = 1024 ×0.31 (causal ×0.43), T = 4096 ×1.01 (×1.13)
  bfloat16 train     T = 1024 ×0.73 (causal ×0.86), T = 4096 ×0.88 (×1.00)
  float16 forward    T = 1024 ×0.49 (causal ×0.38), T = 4096 ×1.57 (×1.02)
  float16 train      T = 1024 ×3.66 (causal ×4.12), T = 4096 ×7.44 (SDPA's float16 backward is slow here)
  float32 forward    T = 1024 ×0.83 (causal ×1.00), T = 2048 ×1.15 (×1.16)
  float32 train      T = 1024 ×1.45 (causal ×1.80), T = 2048 ×1.02 (×1.34)
and on an Intel Xeon with AVX-512 and AMX (docs/benchmarks.md): bfloat16 forward T = 4096 ×0.27–0.49.
So the rules on AVX-512 CPUs: bfloat16 takes SDPA; float16 takes SDPA forward up to T ≈ 2048 and the C
kernel for training and longer forwards; float32 takes the C kernel. (Those half-precision figures were
taken while the C route cast with torch's .to(), whose OpenMP team cost 6–27 ms of CPU per cast on busy
cores, and alternating in one process, where the C route's clock also counts SDPA's OpenMP threads
spinning after their call: both against the C kernel. Re-measured on such a CPU, an AMD EPYC Zen 4 with
avx512_bf16 and no AMX, on 7 December, each side in its own process: the C kernel wins every case there,
×1.12–9.1 (`_NO_AMX`); these AVX-512 rules now stand for AVX-512 CPUs with AMX only.)

On an AMD EPYC Zen 3 with AVX2 only (no AVX-512), 2 cores, torch 2.13.0 (MKL, oneDNN), 7 December, after
the C route's casts moved into C (`autograd.cast`), forward, B = 1, H = 8, D = 64, each side on one thread
(torch.set_num_threads(1), qkv's pool held to one CPU: no OpenMP team on either side), alternating in one
process, medians of 7, thread time, load 25–29; ×r as above:
  float16  T = 64 ×1.39 (causal ×1.31), 128 ×1.89 (×2.27), 256 ×1.86 (×2.66), 512 ×1.96 (×3.36),
           1024 ×1.65 (×2.05)
  bfloat16 T = 64 ×0.62 (×0.63), 128 ×0.80 (×1.02), 256 ×0.84 (×1.11), 512 ×1.01 (×1.55),
           1024 ×1.01 (×1.39)
  float32  T = 64 ×0.72 (×0.76), 128 ×0.87 (×1.13), 256 ×0.91 (×1.29), 512 ×1.06 (×1.55),
           1024 ×0.97 (×1.29)
and with 2 threads each, each side in its own process (benchmarks/bench_peers.py's way), CPU time, load
~26–29, 3 rounds: bfloat16 T = 128 ×5.88 (causal ×8.05), 256 ×1.59 (×2.83), 512 ×1.25 (×1.97), 1024 ×1.36
(×1.70) — SDPA's OpenMP team costs a short call more than its arithmetic there; again on 7 December
(engine41: 2 CPUs a side, torch 2 threads, 3 rounds, CPU time, load 12–16), bfloat16 T = 64 ×8.08 (causal
×9.25), 128 ×5.60 (×7.93), 256 ×2.05 (×2.23), every round ≥ ×1.62, wall time ×1.28–6.31. So the rules on
CPUs without AVX-512: float16 takes the C kernel at every T; bfloat16 forward the C kernel at every T
(shorter than the C kernel's floor, 64·64 scores per head, SDPA: kernels/route.py), but with one CPU a
side below `_ONE_THREAD_SDPA_BELOW` (below), and SDPA under autograd (not measured here); float32 the C
kernel.

With one CPU a side — torch on one thread and qkv's kernel held to one CPU (bench_peers.py --cpus 1: each
side in its own process, its affinity one CPU; B1 H8 D64, 3 rounds, CPU time, load 5–13, AMD EPYC Zen 3) —
SDPA starts no OpenMP team and its short forward calls beat the C kernel's: float32 T = 64 ×0.27 (causal
×0.45), 128 ×0.49 (×0.77), 256 ×0.66 (×0.92), 512 ×1.00 (×1.65); float16 T = 64 ×0.68 (×1.02), 128 ×2.72;
bfloat16 T = 512 ×0.91 (causal ×2.00). So on such a machine (`_one_cpu`) forward calls below
`_ONE_THREAD_SDPA_BELOW` take SDPA. A calibration counts for the torch thread count it was measured with
(`calibration_applies`); kept routes are keyed by torch's thread count too.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import math
import os
import sys
import threading
from pathlib import Path

from . import native, pool

__all__ = ["SDPA", "C_KERNEL", "faster", "short_in_c", "torch_threads", "calibration_applies", "has_avx512", "has_amx", "machine_key", "cache_path", "load", "calibrate", "decide", "save",
           "calibration_cases", "time_side", "CALIBRATION_SIZES", "MARGIN"]

SDPA, C_KERNEL = "sdpa", "c_kernel"
DTYPES = ("float32", "bfloat16", "float16")
CALIBRATION_SIZES = {"forward": (512, 1024, 2048), "train": (512, 1024)}
_FORMAT = 2   # 2: fastest rounds, wall and CPU time, the margin, load checked (1's files are ignored)

_lock = threading.Lock()
_loaded: dict = {}   # machine key -> (table or None, where it came from)
_calibrated_threads: dict = {}   # machine key -> the torch threads its calibration was measured with (None: not said)
generation = 0       # bumped whenever the table is read again (kernels/route.py keys its kept routes by it)


def _rules(dtype: str, causal: bool, train: bool, t: float, avx512: bool | None = None, one_cpu: bool = False,
           amx: bool | None = None) -> str:
    """The rules when this machine has no calibration (the measurements in the module docstring). avx512:
    whether the CPU has AVX-512 (default: this CPU's flags, `has_avx512`): the half-precision rules differ
    between the AVX-512 CPUs measured first and the AVX2-only one (AMD EPYC Zen 3) measured since.
    one_cpu: torch runs one thread and qkv may use one CPU (`_one_cpu`): SDPA starts no OpenMP team there,
    and short forward calls are its (`_ONE_THREAD_SDPA_BELOW`, AVX2 CPUs: measured with each side in its
    own process held to one CPU). amx: whether it has AMX (default this CPU's flags, `has_amx`): an
    AVX-512 CPU without it has its own rule (`_NO_AMX`); the AVX-512 rules below now stand for CPUs with AMX,
    where the one such CPU measured (an Intel Xeon) gave bfloat16 forward to SDPA (×0.27–0.49; see the module)."""
    if avx512 is None:
        avx512 = has_avx512()
    if amx is None:
        amx = has_amx()
    if avx512 and not amx:   # AVX-512 without AMX (AMD EPYC Zen 4): the C kernel, every dtype and T
        return _NO_AMX
    if one_cpu and not avx512 and not train and t < _ONE_THREAD_SDPA_BELOW[dtype][causal]:
        return SDPA
    if dtype == "bfloat16":   # (one CPU a side: SDPA below _ONE_THREAD_SDPA_BELOW, returned above)
        return C_KERNEL if not avx512 and not train else SDPA
    if dtype == "float16":
        if not avx512:
            return C_KERNEL
        return SDPA if not train and t <= 2048 else C_KERNEL
    return C_KERNEL


# One torch thread, AVX2 CPUs (AMD EPYC Zen 3), forward: below these T (dtype → (dense, causal)) SDPA is
# faster than the C kernel (bench_peers.py --cpus 1, B1 H8 D64, 3 rounds, CPU time, load 5-13; × = SDPA /
# C kernel): float32 T = 64 ×0.27 (causal ×0.45), 128 ×0.49 (×0.77), 256 ×0.66 (×0.92), 512 ×1.00 (×1.65);
# float16 T = 64 ×0.68 (×1.02), 128 ×2.72 (×3.56); bfloat16 T = 512 ×0.91 (causal ×2.00).
_ONE_THREAD_SDPA_BELOW = {"float32": (512, 384), "float16": (96, 96), "bfloat16": (1024, 512)}


def torch_threads() -> int:
    """torch's intra-op threads (`torch.get_num_threads()`; 0 when torch is not imported): SDPA's OpenMP
    team, which decides how short calls compare (`_rules`); part of a kept route's key."""
    torch = sys.modules.get("torch")
    return torch.get_num_threads() if torch is not None else 0


def _one_cpu(threads: int) -> bool:
    """Whether calls run as measured for `_ONE_THREAD_SDPA_BELOW`: torch on one thread (`threads`) and qkv's
    C kernel on one CPU (the machine in use's `cpus`)."""
    return threads == 1 and pool.available_cpus() == 1


# AVX-512 with avx512_bf16 and no AMX, AMD EPYC Zen 4 (family 25 model 17), 2 cores, torch 2.13.0 (MKL, oneDNN,
# CPU capability AVX512), 7 December, engine42. The C kernel is faster than SDPA in every case measured:
# `qkv doctor --calibrate` (each side its own process, 5 rounds alternating, fastest round, 2 CPUs a side,
# load ~8 from other helpers' tests, so not saved; SDPA/C in wall time, CPU time in brackets):
#   float32  forward T = 512 ×1.19 (causal ×2.05), 1024 ×1.32 (×2.22), 2048 ×1.27 (×1.34);
#            train   T = 512 ×2.97 (×3.33), 1024 ×1.46 (×2.08)
#   bfloat16 forward T = 512 ×1.40 (×3.33), 1024 ×1.21 (×1.60), 2048 ×1.17 (×1.37);
#            train   T = 512 ×1.60 (×1.61), 1024 ×1.48 (×1.44)
#   float16  forward T = 512 ×2.90 (×3.36), 1024 ×1.94 (×2.09), 2048 ×1.98 (×2.20);
#            train   T = 512 ×4.05 (×9.10), 1024 ×5.90 (×5.98)
# (every case ≥ ×1.12 on both clocks); and one CPU a side (torch one thread, affinity one CPU, each side its own
# process, per-call CPU time, B1 H8 D64, 3 rounds, load 0-1), with the C route's short forward
# (`autograd._short_forward`): float32 T = 64 ×0.94-0.99, 128 ×1.14-1.22; bfloat16 T = 64 ×1.12-1.15, 128
# ×1.23-1.31; float16 T = 64 ×2.7-2.9, 128 ×3.3 (pinned, in a loop of the same call). float32 T = 64 on SDPA's
# route (qkv's look, then SDPA) read ×0.72-0.73 of bare SDPA in bench_peers --cpus 1 (3 rounds, load 1.0), where
# the C route read ×0.94-0.99 pinned and ×1.85 (dense) with two CPUs: so the C kernel there too. (Below T = 64
# the C kernel's size floor, kernels/route.py, leaves calls to SDPA.) The AVX-512 rules of `_rules` were measured
# on this kind of CPU too, loaded and before the casts moved into C (bfloat16 T = 1024 ×0.31 then): these
# measurements replace them here.
_NO_AMX = C_KERNEL


def short_in_c(train: bool, avx512: bool | None = None, amx: bool | None = None) -> bool:
    """Whether an eager call shorter than the C kernel's size floor (route._C_KERNEL_MIN_SCORES, Tq·Tk < 64·64)
    takes the C kernel anyway, where the speed table decides it as any other (`faster`): forward calls on
    AVX-512 CPUs without AMX (`_NO_AMX_SHORT`). Elsewhere such a call takes SDPA or the plain path, as
    measured where the floor was set (the C route's Python then cost more than a short call's arithmetic).
    The same CPUs take mid-sized NumPy float32 calls in the kernel at any work (route._whole_in_c).
    avx512, amx: this CPU's flags by default (`has_avx512`, `has_amx`)."""
    if train:
        return False
    avx512 = has_avx512() if avx512 is None else avx512
    amx = has_amx() if amx is None else amx
    return _NO_AMX_SHORT and avx512 and not amx


# AVX-512 without AMX, AMD EPYC Zen 5 (family 26 model 2), 2 cores, torch 2.13.0, 7-8 December (engine43): with the
# C kernel's short step (a 16-row group's q gathered, the division on 16 lanes) and a short call's plan kept by
# its kind (execute.short_torch: one flash_at call, which also reads the values), forward calls below 64·64
# scores per head are faster in C than SDPA: bench_peers --cpus 1 (each side its own process, 5 rounds, CPU
# time, B1 H8 D64, load 1.6-5.0), T = 16 float32 ×1.19 (causal ×1.17; rounds ×1.09-1.70), bfloat16 ×1.70
# (×1.71), float16 ×3.24 (×3.48), where SDPA's route through qkv read ×0.54, ×0.69, ×0.83 at main; with two
# CPUs a side SDPA starts its OpenMP team and the C kernel wins by more (docs/benchmarks.md, Zen 5). Calls
# with a few scores read below ×1 either way (Tq = 1, Tk = 16: C ×0.80, SDPA's own call ~6 µs).
_NO_AMX_SHORT = True


def has_amx() -> bool:
    """Whether this CPU has AMX (an amx_* flag: amx_tile, amx_bf16, amx_int8): an AVX-512 CPU without it has its
    own rule (`_rules`)."""
    return any(flag.startswith("amx") for flag in _cpu()[1])


def has_avx512() -> bool:
    """Whether this CPU has AVX-512 (avx512f in its flags): which half-precision rules apply (`_rules`)."""
    return "avx512f" in _cpu()[1]


def machine_key() -> str:
    """What decides which route is faster here, as one short string (the calibration file's name): the CPU
    model and vector flags, torch's and qkv's versions, and the CPUs the machine in use may use
    (`pool.available_cpus`: a `native.use_machine` block of another CPU count reads another file, or the
    rules)."""
    return _key(_fixed_part(), pool.available_cpus())


@functools.lru_cache(maxsize=8)
def _key(fixed: str, cpus: int) -> str:
    return hashlib.sha256(f"{fixed}|{cpus}".encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def _fixed_part() -> str:
    import importlib.metadata
    import platform

    from .._version import __version__

    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch_version = "none"
    model, flags = _cpu()
    wanted = sorted(f for f in flags if f.startswith(("avx512", "amx", "avx2", "fma", "avx_vnni")))
    return "|".join([platform.machine(), model, " ".join(wanted), torch_version, __version__])


def _cpu() -> tuple[str, list]:
    """(model, flags) for the machine key: "unknown" model when /proc/cpuinfo names none, the platform's
    processor when it cannot be read (`native.cpu`)."""
    found = native.cpu()
    if found is None:
        import platform

        return platform.processor() or "unknown", []
    return found[0] or "unknown", list(found[1])


def cache_path(key: str | None = None) -> Path:
    base = os.environ.get("QKV_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = os.path.join(xdg, "qkv") if xdg else os.path.join(os.path.expanduser("~"), ".cache", "qkv")
    return Path(base) / f"speed-{key or machine_key()}.json"


def load(refresh: bool = False) -> tuple[dict | None, str]:
    """(the calibration table for this machine or None, a description of the source). A file that is
    unreadable or not a table of this format counts as none (the rules apply; `qkv doctor` says so)."""
    global generation
    key = machine_key()
    with _lock:
        if refresh or key not in _loaded:
            generation += 1
            _calibrated_threads.pop(key, None)
            path = cache_path(key)
            table, source = None, "rules"
            try:
                with open(path, "rb") as f:
                    data = json.loads(f.read(1 << 20))
                if (data.get("format") == _FORMAT and data.get("key") == key and isinstance(data.get("cases"), list)
                        and not data.get("provisional")):
                    table = {}
                    for case in data["cases"]:
                        dtype, causal, train, t, winner = (case["dtype"], bool(case["causal"]), bool(case["train"]),
                                                           int(case["t"]), case["winner"])
                        if dtype in DTYPES and winner in (SDPA, C_KERNEL) and t > 0:
                            table.setdefault((dtype, causal, train), []).append((t, winner))
                    for rows in table.values():
                        rows.sort()
                    source = str(path)
                    threads = data.get("threads")
                    _calibrated_threads[key] = threads if isinstance(threads, int) and not isinstance(threads, bool) \
                        else None
                else:
                    source = "rules (unreadable calibration)"
            except FileNotFoundError:
                pass
            except (OSError, ValueError, KeyError, TypeError, AttributeError, ArithmeticError, RecursionError):
                # any content a file can hold that is not this table ("t": 1e999 → int(inf): OverflowError;
                # a file of nested brackets: RecursionError) counts as no calibration, never as a failed call
                source = "rules (unreadable calibration)"
            _loaded[key] = (table or None, source)
        return _loaded[key]


def faster(dtype: str, causal: bool, train: bool, tq: int, tk: int, threads: int | None = None) -> str:
    """SDPA or C_KERNEL: the faster of the two for a call both compute with the same numbers. dtype:
    the inputs' dtype name ("float32", "bfloat16", "float16"); train: autograd records the call; threads:
    torch's intra-op threads (default the current count: a calibration counts only for its own, and one
    thread on one CPU has its own rules).

    The table and the rules are measured on square calls (Tq = Tk = T); a call of Tq queries over Tk keys
    is read as the square of the same work, T = √(Tq·Tk): both routes cost in proportion to the Tq·Tk
    scores per head (two products over them, and the exponentials), so the square with as many scores is
    the measured case nearest in cost. (Causal calls reach here only when square: `route._sdpa_computes_same`.
    A very flat call — decoding, Tq = 1 — reads each key and value once per query and is bound by memory,
    unlike any square: there √(Tq·Tk) is an approximation, not a measurement.)"""
    t = math.sqrt(max(tq, 1) * max(tk, 1))   # the square of the same work (see above)
    threads = torch_threads() if threads is None else threads
    table, _ = load()
    # (a calibration counts for the torch threads it was measured with: SDPA's OpenMP team is part of it)
    rows = table.get((dtype, causal, train)) if table is not None and calibration_applies(threads) else None
    if rows:   # the measured size nearest on a log scale
        return min(rows, key=lambda row: abs(math.log(row[0] / t)))[1]
    return _rules(dtype, causal, train, t, one_cpu=_one_cpu(threads))


def calibration_cases(sizes: dict | None = None) -> list:
    """The cases a calibration times, in order: (dtype, train, t, causal) for every dtype, forward then
    training, each size of `sizes` (default CALIBRATION_SIZES), unmasked then causal."""
    sizes = CALIBRATION_SIZES if sizes is None else sizes
    return [(dtype, train, t, causal) for dtype in DTYPES for train in (False, True)
            for t in sizes["train" if train else "forward"] for causal in (False, True)]


def time_side(attend, route: str, cases: list, *, heads: int, width: int, clock=None) -> list:
    """One side's timings in this process: for each case (dtype, train, t, causal) of `cases`, inputs
    (1, heads, t, width) drawn from a generator seeded by the case's index (the same values in every
    process), one warm-up call and one timed call of `attend(q, k, v, causal=…, route=route)` (and its
    backward when train). Returns [(wall s, CPU s of this process), …] per case. clock: () -> (wall, CPU),
    default (perf_counter, process_time)."""
    import time

    import torch

    clock = clock or (lambda: (time.perf_counter(), time.process_time()))
    times = []
    for index, (dtype, train, t, causal) in enumerate(cases):
        gen = torch.Generator().manual_seed(index)
        q, k, v = (torch.randn(1, heads, t, width, generator=gen).to(getattr(torch, dtype)).requires_grad_(train)
                   for _ in range(3))

        def once():
            out = attend(q, k, v, causal=causal, route=route)
            if train:
                out.sum().backward()

        once()
        wall, cpu = clock()
        once()
        wall_after, cpu_after = clock()
        times.append((wall_after - wall, cpu_after - cpu))
    return times


_ROUTES_TIMED = ((C_KERNEL, "torch_flash"), (SDPA, "torch_sdpa"))


def _importable_name(attend) -> str | None:
    """"module:qualname" when a fresh interpreter can import `attend` by that name (a module-level
    function, e.g. qkv.attention._attention), else None."""
    import importlib

    module, name = getattr(attend, "__module__", None), getattr(attend, "__qualname__", "")
    if not module or not name or "<" in name or "." in name:
        return None
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    return f"{module}:{name}" if found is attend else None


def _in_fresh_process(attend_name: str, route: str, cases: list, heads: int, width: int) -> dict:
    """time_side in a new Python process (the same interpreter and qkv): its timings and process id."""
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[2])   # the directory this qkv was imported from
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    request = json.dumps({"attend": attend_name, "route": route, "cases": cases, "heads": heads, "width": width})
    done = subprocess.run([sys.executable, "-c", "from qkv.kernels import speed; speed._side_main()"],
                          input=request, capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        tail = " ".join(done.stderr.strip().splitlines()[-3:])
        raise RuntimeError(f"timing {route} in its own process failed (exit {done.returncode}): {tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _side_main() -> None:
    """A calibration's child process: read the request (JSON on stdin), time one side, print JSON."""
    import importlib
    import sys

    import torch

    request = json.loads(sys.stdin.read())
    module, name = request["attend"].split(":")
    attend = getattr(importlib.import_module(module), name)
    cases = [tuple(case) for case in request["cases"]]
    times = time_side(attend, request["route"], cases, heads=request["heads"], width=request["width"])
    print(json.dumps({"times": times, "pid": os.getpid(), "threads": torch.get_num_threads()}))


def calibration_applies(threads: int | None = None) -> bool:
    """Whether this machine's calibration (when there is one) speaks for calls made with `threads` torch
    threads (default: the current count): it was measured with that many, or its file does not say."""
    threads = torch_threads() if threads is None else threads
    return _calibrated_threads.get(machine_key()) in (None, threads)


def calibrate(attend, *, sizes: dict | None = None, rounds: int = 5, heads: int = 8, width: int = 64,
              progress=None, clock=None, load=None, fresh: bool | None = None) -> dict:
    """Time both routes on this machine and return the table as saved by `save` (decided by `decide`).

    Each side of each round runs in its own fresh process (`fresh`, the default for an `attend` importable
    by name): timed in one process, SDPA's OpenMP threads, still spinning after their call, land on the C
    kernel's clock — bfloat16 T = 128 read ×0.58 so, ×5.88 with each side in its own process (2 AMD EPYC
    Zen 3 cores). A side's process times every case: one warm-up call and one timed call each
    (`time_side`; the same inputs in every process). `rounds` rounds, the order of the two sides
    alternating (C kernel first in even rounds, SDPA first in odd ones), so a neighbour's burst or a
    drifting clock falls on both alike; each call's wall time and its process's CPU time are kept and
    `decide` compares each route's fastest round. The load average is read before the first round and after
    each one: when other processes' load (the reading, less this calibration's own threads — the
    machine's CPUs — once it runs) is above the machine's CPU count, the table is marked
    ``"provisional": true`` and `save` refuses it (the rules stay in use; run again when the machine is
    quiet). `progress(case)` is called for each case once every round is in.

    attend: `qkv.attention._attention` (attention with route=; passed in: the rules sit below the API; a
    child process imports it by name). clock: () -> (wall seconds, CPU seconds of this process), default
    (perf_counter, process_time); load: () -> the 1-minute load average or None, default
    `native.load_average`; fresh: False times both sides in this process (tests pass a stand-in clock and
    `attend` so: nothing is timed there; a stand-in clock implies it). Needs torch."""
    import torch

    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds!r}")
    if fresh is None:
        fresh = clock is None
    attend_name = _importable_name(attend) if fresh else None
    if fresh and attend_name is None:
        raise ValueError(f"calibrate times each side in a fresh process, which imports attend by name: "
                         f"{attend!r} is not a module-level function (fresh=False times it in this process)")
    load = load or native.load_average
    cpus = pool.available_cpus()
    cases = calibration_cases(sizes)
    timings = [{C_KERNEL: [], SDPA: []} for _ in cases]
    processes = []
    threads = torch.get_num_threads()
    before = load()
    others = [before]                 # other processes' load: before we start, then less our own threads
    for round_index in range(rounds):
        for name, route in (_ROUTES_TIMED if round_index % 2 == 0 else _ROUTES_TIMED[::-1]):
            if fresh:
                side = _in_fresh_process(attend_name, route, cases, heads, width)
                times = side["times"]
                processes.append({"round": round_index, "route": name, "pid": side["pid"]})
                threads = side["threads"]
            else:
                times = time_side(attend, route, cases, heads=heads, width=width, clock=clock)
            for timing, (wall, cpu) in zip(timings, times):
                timing[name].append((wall, cpu))
        reading = load()
        others.append(None if reading is None else reading - cpus)
    table_cases = []   # ("load": the reading after the last round)
    for (dtype, train, t, causal), timing in zip(cases, timings):
        case = {"dtype": dtype, "causal": causal, "train": train, "t": t,
                **decide(timing[C_KERNEL], timing[SDPA], _rules(dtype, causal, train, t, one_cpu=_one_cpu(threads))),
                "load": reading}
        table_cases.append(case)
        if progress is not None:
            progress(case)
    known = [value for value in others if value is not None]
    busiest = max(known) if known else None
    model, _ = _cpu()
    return {"format": _FORMAT, "key": machine_key(), "cpu": model, "torch": torch.__version__,
            "threads": threads, "cpus": cpus, "heads": heads, "width": width, "rounds": rounds,
            "load": before, "others_load": busiest, "provisional": busiest is not None and busiest > cpus,
            "processes": processes if fresh else "one (fresh=False)", "cases": table_cases}


# A measurement overrides the rules only when both clocks say the same route is faster by more than this
# (SDPA time / C kernel time beyond ×1.10 or below 1/1.10): within it the two are too close to matter, and
# a loaded machine's noise is larger.
MARGIN = 1.10


def decide(c_kernel: list, sdpa: list, rule: str) -> dict:
    """A case's winner from its rounds: `c_kernel` and `sdpa` are lists of (wall s, CPU s) per call; `rule`
    is what the rules say for the case. Each route's fastest round counts (another process can only add
    time to a call, never take it away, so the minimum is the call least disturbed), wall time and CPU
    time alike. The measured winner is taken when both clocks agree it is faster beyond `MARGIN`;
    otherwise (the two within the margin, or the clocks disagreeing: the CPU time of SDPA's OpenMP threads
    counts their spinning, wall time counts waiting for a core) the rule stands. Returns the case's
    fields: c_kernel_s, sdpa_s (fastest wall times), c_kernel_cpu_s, sdpa_cpu_s, winner and by
    ("measured" or "rules")."""
    if not c_kernel or not sdpa:
        raise ValueError("decide needs at least one timed round of each route")
    c_wall, c_cpu = min(wall for wall, _ in c_kernel), min(cpu for _, cpu in c_kernel)
    s_wall, s_cpu = min(wall for wall, _ in sdpa), min(cpu for _, cpu in sdpa)

    def verdict(c, s):   # C_KERNEL / SDPA when one is clearly faster, else None
        if c <= 0 or s <= 0:
            return None
        return C_KERNEL if s / c > MARGIN else SDPA if c / s > MARGIN else None

    wall, cpu = verdict(c_wall, s_wall), verdict(c_cpu, s_cpu)
    measured = wall if wall is not None and wall == cpu else None
    return {"c_kernel_s": c_wall, "sdpa_s": s_wall, "c_kernel_cpu_s": c_cpu, "sdpa_cpu_s": s_cpu,
            "winner": measured or rule, "by": "measured" if measured else "rules"}


def writable_cache(key: str | None = None) -> Path:
    """The calibration file's path, its directory made and a file tried in it — or InputError with one line
    naming the directory ($QKV_CACHE_DIR a file, read-only, under a file). `qkv doctor --calibrate` asks
    before minutes of timing, `save` again before writing."""
    import tempfile

    from .._io import _plan
    from ..errors import InputError

    path = cache_path(key)
    try:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:                      # $QKV_CACHE_DIR names a file: say what it is not
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)) from None
        _plan(path)                                  # the file itself: a directory or a device there is named
        fd, probe = tempfile.mkstemp(prefix=".qkv-probe.", dir=path.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError.keyed("error.out.create", folder=repr(str(path.parent)), reason=exc,
                               source=str(path)) from None
    return path


def save(table: dict) -> Path:
    """Write a calibration (from `calibrate`) for this machine, whole or not at all; return its path. A
    provisional one (measured on a busy machine) is refused: ValueError, nothing written."""
    from .._io import write_atomic

    if table.get("provisional"):
        raise ValueError(f"a calibration measured on a busy machine (other processes' load "
                         f"{table.get('others_load')} on {table.get('cpus')} CPUs) is not kept: run it again "
                         f"when the machine is quiet")

    path = writable_cache(table["key"])
    write_atomic(path, json.dumps(table, indent=1) + "\n")
    load(refresh=True)
    return path
