"""tile_block (_tile.h, AVX-512 or AVX2+FMA register tiles) against flash_block_blas (OpenBLAS sgemm + the
softmax step) on one core: a whole head through _fused.flash_rows, query blocks of 256 rows, key
blocks of 512 keys, as blocked.py hands them over; tile=True and tile=False (flash_rows' argument) alternate
within each round, medians over the rounds. GFLOP/s = 4·T²·D / s (causal: the same count halved,
the work the kernel must do).

    .venv/bin/python benchmarks/bench_tile.py [--rounds 7] [--sizes 4096,512] [--spread 8] [--clock cpu]

Timings are only comparable within one run (the machine is shared): read the ratio. --clock cpu
times the thread's CPU time instead of the wall clock (everything here runs on one thread), which
other processes on a busy machine disturb far less (caches and memory bandwidth still shared).
The tile is tile_block_avx512 on AVX-512 CPUs, tile_block_avx2 on AVX2 ones (vector_width 16 / 8).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from qkv.kernels import blas, blocked
from qkv.kernels import native

_fused = native.fused


def plan(t, bq, bk, causal):
    """Per query block (i0, i1): the blocks array (j0, j1, flags, limit, start) blocked.py builds."""
    tasks = []
    for i0 in range(0, t, bq):
        i1 = min(i0 + bq, t)
        rows = []
        for j0 in range(0, t, bk):
            j1 = min(j0 + bk, t)
            if causal and j0 > i1 - 1:
                break                                   # wholly above the diagonal: skipped
            if causal and j1 - 1 > i0:                  # crosses the diagonal: row r keeps c < limit + r
                rows.append((j0, j1, 1, i0 - j0 + 1, 0))
            else:
                rows.append((j0, j1, 0, 0, 0))
        tasks.append((i0, i1, np.array(rows, np.int64)))
    return tasks


def head(q, k, v, tasks, bk, tile=True):
    """One head through flash_rows (tile: the register tiles where they apply, else the BLAS step);
    returns the output (T, D)."""
    t, d = q.shape
    out = np.zeros((t, v.shape[1]), np.float32)
    scores = np.empty((max(i1 - i0 for i0, i1, _ in tasks), bk), np.float32)
    for i0, i1, blocks in tasks:
        rows = i1 - i0
        ref, l, alpha = (np.zeros(rows, np.float32) for _ in range(3))
        _fused.flash_rows(q[i0:i1], k, v, out[i0:i1], ref, l, alpha, None, scores, blocks, None,
                          blocked._HEADROOM, scale=1 / np.sqrt(d), finalize=True, tile=tile)
    return out


def _torch_sdpa(q, k, v, causal):
    """torch's scaled_dot_product_attention on one thread, the same head (float32)."""
    import torch

    torch.set_num_threads(1)
    tq, tk, tv = (torch.from_numpy(x)[None, None] for x in (q, k, v))
    return lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)


def measure(t, d, causal, rounds, bq=256, bk=512, spread=1.0, with_torch=False, clock=time.perf_counter):
    """spread: the scores' standard deviation (q·kᵀ/√D); above ~4 references move in first blocks."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((t, d)).astype(np.float32) for _ in range(3))
    q *= np.float32(spread)
    tasks = plan(t, bq, bk, causal)
    flops = 4.0 * t * t * d * (0.5 if causal else 1.0)
    times = {True: [], False: [], "torch": []}
    outs = {}
    sdpa = _torch_sdpa(q, k, v, causal) if with_torch else None
    for _ in range(rounds):
        for tile in (True, False):
            start = clock()
            outs[tile] = head(q, k, v, tasks, bk, tile)
            times[tile].append(clock() - start)
        if sdpa is not None:
            start = clock()
            sdpa()
            times["torch"].append(clock() - start)
    diff = float(np.abs(outs[True] - outs[False]).max())
    tile, blas = (float(np.median(times[x])) for x in (True, False))
    return {"T": t, "D": d, "causal": causal, "tile_gflops": flops / tile / 1e9, "blas_gflops": flops / blas / 1e9,
            "ratio": blas / tile, "max_abs_diff": diff,
            "torch_gflops": flops / float(np.median(times["torch"])) / 1e9 if times["torch"] else None,
            "spread_tile": (min(times[True]) / tile, max(times[True]) / tile),
            "spread_blas": (min(times[False]) / blas, max(times[False]) / blas)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sizes", default="4096,512")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--spread", type=float, default=1.0, help="scores' standard deviation (default 1)")
    parser.add_argument("--no-causal", action="store_true")
    parser.add_argument("--torch", action="store_true", help="also time torch's SDPA (one thread) in the rounds")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall clock (default) or this thread's CPU time (steadier on a busy machine)")
    args = parser.parse_args()
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    print(f"vector width {_fused.vector_width()} ({'AVX-512' if _fused.vector_width() >= 16 else 'AVX2+FMA' if _fused.vector_width() >= 8 else 'scalar: no tile'}), "
          f"{args.clock} clock")
    assert _fused is not None and blas.sgemm_ready(), "needs qkv.kernels._fused with a BLAS sgemm"
    with threadpool_limits(limits=1, user_api="blas"):
        for t in (int(x) for x in args.sizes.split(",")):
            for causal in (False,) if args.no_causal else (False, True):
                r = measure(t, args.dim, causal, args.rounds if t > 1024 else args.rounds * 8, spread=args.spread,
                            with_torch=args.torch, clock=clock)
                print(f"T={r['T']:5d} D={r['D']} causal={str(r['causal']):5s}  tile {r['tile_gflops']:6.1f}  "
                      f"BLAS {r['blas_gflops']:6.1f} GFLOP/s  tile/BLAS speed {r['ratio']:.3f}  "
                      f"max|diff| {r['max_abs_diff']:.1e}  spread tile {r['spread_tile'][0]:.2f}-"
                      f"{r['spread_tile'][1]:.2f} BLAS {r['spread_blas'][0]:.2f}-{r['spread_blas'][1]:.2f}"
                      + (f"  torch SDPA {r['torch_gflops']:6.1f} (tile/torch {r['tile_gflops'] / r['torch_gflops']:.3f})"
                         if r["torch_gflops"] else ""))


if __name__ == "__main__":
    main()
