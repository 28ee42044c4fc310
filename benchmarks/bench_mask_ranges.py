"""Key-padding masks as key ranges: torch forward + backward through qkv.attention with a (B, 1, 1, T)
boolean mask (now the C kernel once per batch, kernels/route.py choose_call_route) against torch SDPA
with the same mask, and against qkv's route before (the mask array to SDPA: route="torch_sdpa").

    python benchmarks/bench_mask_ranges.py SIDE T [REPS]    SIDE: qkv | sdpa | qkv_sdpa

One side per process (run the sides alternately from a shell: timing two in one process interferes,
see /work/shared/facts.md); prints the median seconds of one forward + backward, B = 4, H = 8, D = 64,
float32, 2 threads, lengths T, 3T/4, T/2, 7T/8 (causal: add "causal" as a 4th argument)."""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np
import torch


def main():
    side, t = sys.argv[1], int(sys.argv[2])
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    causal = len(sys.argv) > 4 and sys.argv[4] == "causal"
    torch.set_num_threads(2)
    import qkv
    from qkv.attention import _attention

    g = torch.Generator().manual_seed(0)
    b, h, d = 4, 8, 64
    q, k, v, dout = (torch.randn(b, h, t, d, generator=g) for _ in range(4))
    lengths = np.array([t, 3 * t // 4, t // 2, 7 * t // 8])
    mask = torch.from_numpy(np.arange(t)[None, :] < lengths[:, None])[:, None, None, :]   # (B, 1, 1, T)
    if causal:
        mask = mask & torch.ones(t, t, dtype=torch.bool).tril()

    def step():
        leaves = [x.clone().requires_grad_() for x in (q, k, v)]
        if side == "sdpa":
            out = torch.nn.functional.scaled_dot_product_attention(*leaves, attn_mask=mask)
        else:
            out = _attention(*leaves, mask, route="torch_sdpa" if side == "qkv_sdpa" else None)
        out.backward(dout)

    for _ in range(2):
        step()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    print(f"{side} T={t}{' causal' if causal else ''}: median {statistics.median(times) * 1e3:.1f} ms "
          f"(min {min(times) * 1e3:.1f}, {reps} reps)")


if __name__ == "__main__":
    main()
