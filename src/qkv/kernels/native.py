"""The one handle on the C extension `qkv.kernels._fused` and on this machine's CPU.

`fused` is the extension (None when it did not build; `import_error` says why, as `qkv doctor` does).
Every module reads it through `extension()` at the time it uses it, never a copy taken at import and
never `fused` itself: `extension()` is the extension as this context sees it (below).

`Machine` is what the rulebook decides from — the extension, its sgemm, its backward, the CPUs this
process may use — as one value: `kernels.route.current_machine()` reads the live one, and a caller (a test)
passes its own instead of patching module state: to one call (`choose_route(call, machine=…)`,
`Machine.without_c()`), or to everything run inside a block — whole models, blocks, GELU, the softmax
step, every route — with `use_machine(machine)`, a context manager over a `contextvars.ContextVar`
(`current_machine()`, `extension()`, `blas.sgemm_ready()` and `autograd.available()` read it first; no
module global is changed, so other threads and asyncio tasks keep their own machine). qkv's own worker
threads (the kernel's pool, `MultiHeadAttention`/BERT's batch threads, the op's fresh thread) run in a
copy of the caller's context (`carry`), so the machine follows the work into them. `os_cpus()` is the one reading of the CPUs this process may
use (the live machine's `cpus`; every decision reads `Machine.cpus`, never the OS). `cpu()` (model name and flags
from /proc/cpuinfo), `cpu_name()` and `load_average()` are the one reading of the CPU for the speed table's machine key and for `qkv bench`'s results.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
from typing import Any

try:
    from . import _fused as fused
    import_error: ImportError | None = None
except ImportError as exc:   # not built (setup.py builds it as optional): the NumPy paths are used
    fused = None
    import_error = exc

__all__ = ["fused", "import_error", "Machine", "extension", "use_machine", "machine_in_use", "carry", "cpu",
           "cpu_name", "load_average", "os_cpus"]

_CPUINFO_BYTES = 1 << 20


@dataclasses.dataclass(frozen=True)
class Machine:
    """What this process can run, as the rulebook sees it (hashable: part of a kept route's key).

    fused: the C extension module, or None. sgemm: NumPy's cblas_sgemm was found and handed to it (the C
    walks' products). backward: the C backward can run (the TORCH_FLASH route). cpus: the CPUs this
    process may use (the kernel's threads)."""

    fused: Any
    sgemm: bool
    backward: bool
    cpus: int

    def __post_init__(self):
        if isinstance(self.cpus, bool) or not isinstance(self.cpus, int) or self.cpus < 1:
            raise ValueError(f"Machine.cpus must be a positive integer (the CPUs this process may use), "
                             f"got {self.cpus!r}")

    def __hash__(self) -> int:
        # part of every kept route's key: hashed once (the generated __hash__ built a tuple each call)
        found = self.__dict__.get("_hash")
        if found is None:
            found = hash((self.fused, self.sgemm, self.backward, self.cpus))
            object.__setattr__(self, "_hash", found)
        return found

    def without_c(self) -> "Machine":
        """This machine as an install without the C extension sees it (the NumPy paths)."""
        return dataclasses.replace(self, fused=None, sgemm=False, backward=False)


_MACHINE: contextvars.ContextVar = contextvars.ContextVar("qkv_machine", default=None)


def machine_in_use() -> Machine | None:
    """The Machine a `use_machine` block around this code set, or None (the live one applies)."""
    return _MACHINE.get()


def extension():
    """The C extension as this context sees it: the machine in use's (None: run as if it did not build),
    else the one this process loaded (`fused`). Read at each use."""
    machine = _MACHINE.get()
    return fused if machine is None else machine.fused


@contextlib.contextmanager
def use_machine(machine: Machine):
    """Run the block as on `machine` (e.g. `route.current_machine().without_c()`: no C extension, so
    NumPy's GELU, softmax step and walks everywhere). Set in a ContextVar: this thread or asyncio task
    only, restored on exit, nested blocks allowed."""
    if not isinstance(machine, Machine):
        raise TypeError(f"use_machine takes a qkv.kernels.native.Machine (route.current_machine(), or its "
                        f"without_c()); got {type(machine).__name__}")
    token = _MACHINE.set(machine)
    try:
        yield machine
    finally:
        _MACHINE.reset(token)


def carry(fn):
    """fn wrapped to run in a copy of the calling thread's context (made now): for a job handed to another
    thread, which would otherwise start with an empty context and the live machine. One copy per job (a
    context cannot be entered by two threads at once)."""
    context = contextvars.copy_context()
    return lambda *args, **kwargs: context.run(fn, *args, **kwargs)


def os_cpus() -> int:
    """The CPUs the operating system lets this process use (its affinity; else the CPU count): the live
    machine's `cpus`. Nothing else reads the OS for it: every decision reads `Machine.cpus` — through
    `route.current_machine()` or `pool.available_cpus()` — so a `use_machine` block saying "N CPUs" is
    obeyed everywhere (the kernel's threads, the C training route's, BERT's batch threads, the ranks'
    torch threads, the speed table's machine key)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def cpu() -> tuple[str | None, tuple] | None:
    """(model name, or None when /proc/cpuinfo names none; its flags) of the first CPU, or None when
    /proc/cpuinfo cannot be read (not Linux)."""
    try:
        with open("/proc/cpuinfo", "rb") as f:
            info = f.read(_CPUINFO_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    lines = info.splitlines()
    model = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), None)
    flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
    return model, tuple(flags)


def cpu_name() -> str | None:
    """The CPU's model name and its widest vector unit ("…, AVX-512" / "…, AVX2"), or None."""
    found = cpu()
    if found is None or found[0] is None:
        return None
    model, flags = found
    return model + (", AVX-512" if "avx512f" in flags else ", AVX2" if "avx2" in flags else "")


def load_average() -> float | None:
    """The 1-minute load average (other processes on the cores), or None where there is none."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None
