"""Prints the pip option that adds PyTorch's wheel index (`--extra-index-url URL`), or nothing where that
index does not answer within a few seconds; the Makefile puts what it prints on pip's command line.

Why: on PyPI, `torch` for Linux x86-64 is the CUDA build (nvidia-* packages, several GB). PyTorch's CPU
index (https://download.pytorch.org/whl/cpu, the Makefile's TORCH_INDEX) serves the same release as a CPU
build (2.13.0+cpu), which pip prefers when both are offered. A machine that cannot reach it (offline, with
a CPU wheel stocked through pip's find-links) must still set up: there the probe fails fast and pip runs
without the index, instead of retrying an unreachable host for minutes.

Usage: python tools/torch_index.py URL [SECONDS]   (an empty URL prints nothing: PyPI's own torch)
"""

from __future__ import annotations

import sys
import urllib.request


def main(argv: list[str]) -> int:
    url = argv[0].strip() if argv else ""
    if not url:
        return 0
    seconds = float(argv[1]) if len(argv) > 1 else 5.0
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/torch/", timeout=seconds) as answer:
            answer.read(1)
    except Exception as error:      # no DNS, refused, timed out, an HTTP error: set up without it
        reason = " ".join(str(getattr(error, "reason", "") or error).split()) or type(error).__name__
        print(f"qkv: PyTorch's wheel index {url} is not reachable ({reason}): pip looks for torch only in its "
              f"configured sources", file=sys.stderr)
        return 0
    print("--extra-index-url", url)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
