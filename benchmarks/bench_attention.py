"""Run the side-by-side attention benchmark and print the table (same as `qkv bench`).

    python benchmarks/bench_attention.py                  # T = 512, 1024, 4096; 65,536 memory run; decode
    python benchmarks/bench_attention.py --quick          # seconds, small sizes
    python benchmarks/bench_attention.py --json out.json  # also keep the numbers

OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, when set in the environment, slow NumPy's BLAS; unset
them for this command alone to measure the machine rather than the setting.
"""

from __future__ import annotations

import argparse
import sys

from qkv.commands import bench


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench_attention")
    subparsers = parser.add_subparsers(dest="command")
    bench.register(subparsers)
    args = parser.parse_args(["bench", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
