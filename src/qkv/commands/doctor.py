"""`qkv doctor`: which routes of the kernel are live on this machine, and how to fix a missing one.

    qkv doctor          # the C extension, its vector width, NumPy's BLAS sgemm, torch
    qkv --version       # the same, in one line

The fast kernel has optional parts, each with a slower fallback that gives the same numbers:
- the C extension ``qkv.kernels._fused`` (built by setup.py when a C compiler is present): the
  float32 softmax steps in one vectorised pass; without it, NumPy's passes;
- its vector width, chosen at run time from the CPU: AVX-512 (16 floats), AVX2+FMA (8) or scalar;
- NumPy's OpenBLAS ``cblas_sgemm``, handed to the extension: the fused flash route (both products
  inside C); without it the key blocks are walked in Python;
- the same extension's backward (``_fused.backward_many``, kernels/_backward.c) for CPU torch tensors
  (route TORCH_FLASH: the C forward and backward under autograd); without it torch calls take SDPA or
  the plain path;
- torch: ``qkv.torch``, ``qkv ring`` and the reference checks need it; qkv itself does not.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import platform
import sys

__all__ = ["routes", "summary", "missing_kernel_line", "FIX"]

# The same fix setup.py prints when the build fails (one wording).
FIX = ("install a C compiler and Python's headers (Debian: sudo apt-get install gcc python3-dev) and reinstall qkv "
       "(pip install --force-reinstall --no-deps -e .)")
WIDTHS = {16: "AVX-512", 8: "AVX2+FMA", 1: "scalar"}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "doctor", help="which kernel routes are live here (C extension, vector width, BLAS, torch)",
        description="Say which routes of qkv's kernel are live on this machine: the C extension (built or not, "
        "and how to build it), its vector width (AVX-512, AVX2+FMA or scalar), NumPy's BLAS sgemm for the fused "
        "route, and whether torch is installed.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    # `make demo` runs this after installing: one warning line when the extension is missing, else nothing.
    parser.add_argument("--install-check", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(func=handler)


def routes() -> dict:
    """What is live: ``{"extension": bool, "extension_error": str | None, "width": int | None,
    "sgemm": bool | None, "backward": bool, "torch": str | None, "numpy": str}`` (None: not applicable
    or not installed; ``backward``: the C backward for torch tensors can run — its extension, the
    forward's and NumPy's sgemm).

    ``extension`` is the module the kernel really uses (`qkv.kernels.blocked._fused`), so a build that
    exists but fails to load counts as missing; ``sgemm`` looks for NumPy's cblas_sgemm only when the
    extension is there (the only route that uses it)."""
    import numpy as np

    from ..kernels import blas, blocked

    info: dict = {"extension": blocked._fused is not None, "extension_error": None, "width": None, "sgemm": None,
                  "backward": False, "torch": None, "numpy": np.__version__}
    if blocked._fused is None:
        try:
            importlib.import_module("qkv.kernels._fused")
            info["extension_error"] = "built but not loaded by qkv.kernels"
        except ImportError as exc:
            info["extension_error"] = " ".join(str(exc).split()) or "not built"
    else:
        info["width"] = int(blocked._fused.vector_width())
        info["sgemm"] = bool(blas.sgemm_ready())
    info["backward"] = bool(info["sgemm"]) and hasattr(blocked._fused, "backward_many")
    if importlib.util.find_spec("torch") is not None:
        try:
            info["torch"] = importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:
            info["torch"] = "installed"
    return info


def missing_kernel_line(info: dict) -> str:
    """The one warning line for a missing extension (the wording setup.py uses too)."""
    return (f"qkv: warning: the C kernel (qkv.kernels._fused) is not built ({info['extension_error']}); qkv works on "
            f"its slower NumPy path. To build it: {FIX}")


def summary(info: dict | None = None) -> str:
    """One line for ``qkv --version``: ``C kernel built (AVX2+FMA, BLAS sgemm); torch 2.13.0``."""
    info = routes() if info is None else info
    if info["extension"]:
        width = WIDTHS.get(info["width"], f"{info['width']} lanes")
        kernel = (f"C kernel built ({width}, {'BLAS sgemm' if info['sgemm'] else 'no BLAS sgemm'}, "
                  f"{'C backward' if info['backward'] else 'no C backward'})")
    else:
        kernel = "C kernel NOT built: NumPy path (see 'qkv doctor')"
    return f"{kernel}; {'torch ' + info['torch'] if info['torch'] else 'no torch'}"


def report(info: dict) -> str:
    from .. import __version__

    lines = [f"qkv {__version__} (Python {platform.python_version()}, NumPy {info['numpy']})"]
    if info["extension"]:
        width = info["width"]
        lines.append("C extension qkv.kernels._fused: built — float32 softmax steps in one C pass")
        lines.append(f"vector width: {WIDTHS.get(width, str(width))} ({width} float{'s' if width != 1 else ''} "
                     "per instruction, chosen from this CPU)")
        lines.append("BLAS sgemm: found in NumPy's OpenBLAS — the fused flash route (both products in C) is live"
                     if info["sgemm"] else
                     "BLAS sgemm: not found (NumPy's BLAS is not OpenBLAS) — key blocks are walked in Python")
    else:
        lines.append(f"C extension qkv.kernels._fused: NOT built ({info['extension_error']}) — qkv runs on its slower "
                     "NumPy path (same numbers)")
        lines.append(f"to build it: {FIX}")
    lines.append("C backward (qkv.kernels._fused.backward_many): live — torch tensors (CPU, float32) train through "
                 "the C forward and backward (route torch_flash)" if info["backward"] else
                 "C backward: not live (qkv.kernels._fused not built, or no BLAS sgemm) — torch tensors take "
                 "SDPA or the plain path (same numbers)")
    lines.append(f"torch: {info['torch']} — qkv.torch, qkv ring and the reference checks are available"
                 if info["torch"] else
                 "torch: not installed — qkv.torch and qkv ring need it (pip install torch, or make test)")
    return "\n".join(lines) + "\n"


def handler(args: argparse.Namespace) -> int:
    info = routes()
    if args.install_check:
        if not info["extension"]:
            print(missing_kernel_line(info), file=sys.stderr)
        return 0
    sys.stdout.write(report(info))
    return 0
