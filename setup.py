"""Builds the optional C extension qkv.kernels._fused (the kernel, _fused.c, and its backward for torch
tensors, _backward.c: one extension, one module); all metadata lives in pyproject.toml.

Where it does not compile (no C compiler, no Python headers, a compiler error) the install still
succeeds and the blocked kernel uses its NumPy path; the build says so in one warning line on
standard error (pip shows it with -v; `make demo` and `qkv doctor` say it too), with how to fix it.
tests/test_fused.py asserts the extension is built in this project's environment.
No -march: the AVX2 and AVX-512 code is chosen at run time (see _fused.c).
No debug information: Python's own CFLAGS carry -g, which made the wheel's .so 1.78 MB; it is built with -g0
and linked stripped on Linux (QKV_DEBUG=1 in the environment keeps both, for gdb or perf annotate).
"""

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# One line, the same one `qkv doctor` gives when the extension is missing (qkv/commands/doctor.py).
FIX = ("install a C compiler and Python's headers (Debian: sudo apt-get install gcc python3-dev) and reinstall qkv "
       "(pip install --force-reinstall --no-deps -e .)")


DEBUG = os.environ.get("QKV_DEBUG", "") not in ("", "0")
NO_DEBUG_INFO = [] if DEBUG else ["-g0"]                                       # after Python's own -g: it wins
STRIP = [] if DEBUG or not sys.platform.startswith("linux") else ["-s"]      # GNU ld: drop the symbol table too


class BuildReporting(build_ext):
    """build_ext that never fails the install over the optional kernels, and says once why they are missing."""

    def run(self):
        self._missing: list[tuple[str, str]] = []
        try:
            super().run()
        except Exception as exc:        # e.g. no compiler at all: setuptools fails before compiling anything
            self._missing = [(ext.name, _reason(exc)) for ext in self.extensions]
        if self._missing:               # one line for the whole build, however many extensions failed
            names = " and ".join(name for name, _ in self._missing)
            reason = self._missing[0][1]
            print(f"qkv: warning: the C kernel ({names}) was not built ({reason}); qkv works on its slower "
                  f"NumPy path. To build it: {FIX}", file=sys.stderr)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:        # CompileError, LinkError, a missing gcc (DistutilsExecError) …
            self._missing.append((ext.name, _reason(exc)))


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


setup(
    ext_modules=[
        Extension(   # one extension, two sources: the forward (and the module table) and the backward
            "qkv.kernels._fused",
            ["src/qkv/kernels/_fused.c", "src/qkv/kernels/_backward.c"],
            depends=["src/qkv/kernels/_kernel.h", "src/qkv/kernels/_tile.h", "src/qkv/kernels/_exp.h"],
            extra_compile_args=["-O3", "-fno-math-errno", "-Wall", *NO_DEBUG_INFO],
            extra_link_args=STRIP,
        ),
    ],
    cmdclass={"build_ext": BuildReporting},
)
