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
import importlib.util
import platform
import sys

from ._options import add_lang_option, check_lang

__all__ = ["routes", "summary", "missing_kernel_line", "FIX"]

# The same fix setup.py prints when the build fails (one wording); the commands are shown as they are typed.
APT = "sudo apt-get install gcc python3-dev"
PIP = "pip install --force-reinstall --no-deps -e ."
FIX = f"install a C compiler and Python's headers (Debian: {APT}) and reinstall qkv ({PIP})"
WIDTHS = {16: "AVX-512", 8: "AVX2+FMA", 1: "scalar"}


def register(subparsers, t) -> None:
    parser = subparsers.add_parser("doctor", help=t("doctor"), description=t("doctor.about"))
    # `make demo` runs this after installing: one warning line when the extension is missing, else nothing.
    parser.add_argument("--install-check", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--calibrate", action="store_true", help=t("doctor.calibrate"))
    add_lang_option(parser, t, "doctor")
    parser.set_defaults(func=handler)


def routes() -> dict:
    """What is live: ``{"extension": bool, "extension_error": str | None, "width": int | None,
    "sgemm": bool | None, "backward": bool, "torch": str | None, "numpy": str}`` (None: not applicable
    or not installed; ``backward``: the C backward for torch tensors can run — its extension, the
    forward's and NumPy's sgemm).

    ``extension`` is the module the kernel really uses (`qkv.kernels.native.fused`), so a build that
    exists but fails to load counts as missing; ``sgemm`` looks for NumPy's cblas_sgemm only when the
    extension is there (the only route that uses it)."""
    import numpy as np

    from ..kernels import blas, native

    info: dict = {"extension": native.fused is not None, "extension_error": None, "width": None, "sgemm": None,
                  "backward": False, "torch": None, "numpy": np.__version__}
    if native.fused is None:
        try:
            importlib.import_module("qkv.kernels._fused")
            info["extension_error"] = "built but not loaded by qkv.kernels"
        except ImportError as exc:
            info["extension_error"] = " ".join(str(exc).split()) or "not built"
    else:
        info["width"] = int(native.fused.vector_width())
        info["sgemm"] = bool(blas.sgemm_ready())
    info["backward"] = bool(info["sgemm"]) and hasattr(native.fused, "backward_many")
    if importlib.util.find_spec("torch") is not None:
        from importlib import metadata    # here, not at the top: every `qkv` command builds doctor's parser

        try:
            info["torch"] = metadata.version("torch")
        except metadata.PackageNotFoundError:
            info["torch"] = "installed"
    return info


def missing_kernel_line(info: dict) -> str:
    """The one warning line for a missing extension (the wording setup.py uses too)."""
    return (f"qkv: warning: the C kernel (qkv.kernels._fused) is not built ({info['extension_error']}); qkv works on "
            f"its slower NumPy path. To build it: {FIX}")


def summary(info: dict | None = None, lang: str = "en") -> str:
    """One line for ``qkv --version``: ``C kernel built (AVX2+FMA, BLAS sgemm, C backward); torch 2.13.0``
    (in ``lang``)."""
    from ..explain.texts import text

    info = routes() if info is None else info
    if info["extension"]:
        kernel = text(lang, "doctor.summary.built", width=_width_name(info["width"], lang),
                      sgemm=text(lang, "doctor.summary." + ("sgemm" if info["sgemm"] else "no_sgemm")),
                      backward=text(lang, "doctor.summary." + ("backward" if info["backward"] else "no_backward")))
    else:
        kernel = text(lang, "doctor.summary.not_built")
    torch = text(lang, "doctor.summary.torch", version=info["torch"]) if info["torch"] else \
        text(lang, "doctor.summary.no_torch")
    return f"{kernel}; {torch}"


def _width_name(width: int | None, lang: str) -> str:
    from ..explain.texts import text

    if width == 1:
        return text(lang, "doctor.width.scalar")
    return WIDTHS.get(width, text(lang, "doctor.lanes", n=width))


def _extension_error(info: dict, lang: str) -> str:
    """Why the extension is missing: qkv's own words in ``lang``; an ImportError's text as Python gave it."""
    from ..explain.texts import text

    import re

    error = info["extension_error"]
    own = {"built but not loaded by qkv.kernels": text(lang, "doctor.not_loaded"),
           "not built": text(lang, "doctor.not_built")}
    if error in own or lang == "en":
        return own.get(error, error)
    missing = re.fullmatch(r"No module named ('[^']+')", error)      # the usual ImportError, said in lang
    return text(lang, "cli.serve.no_module", name=missing[1]) if missing else text(lang, "error.python")


def report(info: dict, lang: str = "en") -> str:
    """The lines of ``qkv doctor`` in ``lang``."""
    from .. import __version__
    from ..explain.texts import text

    def t(key: str, **values) -> str:
        return text(lang, key, **values)

    lines = [t("doctor.head", version=__version__, python=platform.python_version(), numpy=info["numpy"])]
    if info["extension"]:
        width = info["width"]
        lines.append(t("doctor.fused"))
        lines.append(t("doctor.width", name=_width_name(width, lang), width=width))
        lines.append(t("doctor.sgemm" if info["sgemm"] else "doctor.no_sgemm"))
    else:
        lines.append(t("doctor.no_fused", error=_extension_error(info, lang)))
        lines.append(t("doctor.fix", fix=t("doctor.fix.steps", apt=APT, pip=PIP)))
    lines.append(t("doctor.backward" if info["backward"] else "doctor.no_backward"))
    lines.append(t("doctor.torch", version=info["torch"]) if info["torch"] else t("doctor.no_torch"))
    if info["torch"] and info["backward"]:
        lines.extend(speed_lines(lang))
    return "\n".join(lines) + "\n"


def speed_lines(lang: str = "en") -> list[str]:
    """Which route CPU torch calls take where the C kernel and SDPA both compute them (kernels/speed.py),
    by dtype and pass, at the sizes calibrated, and where that comes from."""
    from ..explain.texts import text
    from ..kernels import speed

    table, source = speed.load()
    if table is not None:
        where = text(lang, "doctor.speed.calibrated", path=source)
    elif source == "rules":
        where = text(lang, "doctor.speed.rules")
    else:
        where = text(lang, "doctor.speed.unreadable")
    lines = [text(lang, "doctor.speed", source=where)]
    names = {speed.SDPA: "SDPA", speed.C_KERNEL: text(lang, "doctor.speed.c_kernel")}
    for dtype in speed.DTYPES:
        for train in (False, True):
            for causal in (False, True):
                picks = _runs([(t, names[speed.faster(dtype, causal, train, t, t)]) for t in SPEED_SIZES])
                lines.append(text(lang, "doctor.speed.row", dtype=dtype,
                                  kind=text(lang, "doctor.speed." + ("causal" if causal else "full")),
                                  step=text(lang, "doctor.speed." + ("train" if train else "forward")), picks=picks))
    # below the C kernel's size floor (route._C_KERNEL_MIN_SCORES): SDPA, but in C where this CPU's rules say so
    # (speed.short_in_c: forward calls, on AVX-512 CPUs without AMX)
    short = {train: names[speed.C_KERNEL if speed.short_in_c(train) else speed.SDPA] for train in (False, True)}
    lines.append(text(lang, "doctor.speed.short", forward=short[False], train=short[True]))
    return lines


# The sizes the table is shown at: from the C kernel's floor (64·64 scores per head: shorter calls take SDPA or
# the plain path, kernels/route.py) to 4096, so the short calls the rules give to one route or the other show.
SPEED_SIZES = (64, 128, 256, 512, 1024, 2048, 4096)


def _runs(picks: list) -> str:
    """[(T, route), …] in order as "T=64–256: SDPA, T=512–4096: C kernel": sizes in a row that take the same
    route written as one range (a single size as "T=512: …")."""
    runs = []
    for t, name in picks:
        if runs and runs[-1][2] == name:
            runs[-1][1] = t
        else:
            runs.append([t, t, name])
    return ", ".join(f"T={lo}: {name}" if lo == hi else f"T={lo}–{hi}: {name}" for lo, hi, name in runs)


def calibrate(lang: str = "en") -> int:
    """`qkv doctor --calibrate`: time both routes here, save the table, print what was measured."""
    from ..explain.texts import text
    from ..kernels import speed

    if importlib.util.find_spec("torch") is None:
        print(text(lang, "doctor.calibrate.no_torch"), file=sys.stderr)
        return 2
    info = routes()
    if not info["backward"]:
        print(text(lang, "doctor.calibrate.no_backward"), file=sys.stderr)
        return 2
    speed.writable_cache()              # a cache directory that cannot take the file is said now, not after the timing
    print(text(lang, "doctor.calibrate.start"), file=sys.stderr, flush=True)

    def ratio(c, s):
        return f"{s / c:.2f}" if c > 0 else "—"

    def progress(case):
        winner = "SDPA" if case["winner"] == speed.SDPA else text(lang, "doctor.speed.c_kernel")
        if case.get("by") == "rules":
            winner += text(lang, "doctor.calibrate.by_rules", margin=round((speed.MARGIN - 1) * 100))
        print(text(lang, "doctor.calibrate.case", dtype=case["dtype"],
                   kind=text(lang, "doctor.speed." + ("causal" if case["causal"] else "full")),
                   step=text(lang, "doctor.speed." + ("train" if case["train"] else "forward")), t=case["t"],
                   c=f"{case['c_kernel_s']:.4f}", s=f"{case['sdpa_s']:.4f}",
                   ratio=ratio(case["c_kernel_s"], case["sdpa_s"]),
                   cpu_ratio=ratio(case.get("c_kernel_cpu_s", 0), case.get("sdpa_cpu_s", 0)), winner=winner),
              flush=True)

    from ..attention import _attention

    table = speed.calibrate(_attention, progress=progress)
    if table.get("provisional"):   # measured on a busy machine: not kept, the rules stay
        print(text(lang, "doctor.calibrate.busy", load=f"{table['others_load']:.1f}", cpus=table["cpus"]),
              file=sys.stderr)
        return 1
    path = speed.save(table)
    print(text(lang, "doctor.calibrate.saved", path=str(path)))
    return 0


def handler(args: argparse.Namespace) -> int:
    info = routes()
    if args.install_check:
        if not info["extension"]:
            print(missing_kernel_line(info), file=sys.stderr)
        return 0
    if args.calibrate:
        return calibrate(check_lang(args.lang))
    sys.stdout.write(report(info, check_lang(args.lang)))
    return 0
