"""The one handle on the C extension `qkv.kernels._fused` and on this machine's CPU.

`fused` is the extension (None when it did not build; `import_error` says why, as `qkv doctor` does).
Every module of the core reads it here at the time it uses it, never a copy taken at import.

`Machine` is what the rulebook decides from — the extension, its sgemm, its backward, the CPUs this
process may use — as one value: `kernels.route.current_machine()` reads the live one, and a caller (a test)
passes its own (`choose_route(call, machine=…)`, `Machine.without_c()`) instead of patching module
state. `cpu()` (model name and flags from /proc/cpuinfo), `cpu_name()` and `load_average()` are the one
reading of the CPU for the speed table's machine key and for `qkv bench`'s results.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

try:
    from . import _fused as fused
    import_error: ImportError | None = None
except ImportError as exc:   # not built (setup.py builds it as optional): the NumPy paths are used
    fused = None
    import_error = exc

__all__ = ["fused", "import_error", "Machine", "cpu", "cpu_name", "load_average"]

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

    def without_c(self) -> "Machine":
        """This machine as an install without the C extension sees it (the NumPy paths)."""
        return dataclasses.replace(self, fused=None, sgemm=False, backward=False)


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
