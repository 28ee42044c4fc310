"""qkv's ring attention beside ring-attention-pytorch (PyPI) on the same inputs, P gloo processes.

    .venv/bin/pip install 'ring-attention-pytorch>=0.5.20'      # optional; not a qkv dependency
    .venv/bin/python benchmarks/bench_ring.py [--procs 2] [--seq 2048] [--rounds 5] [--markdown FILE]

Every rank builds the same random float32 inputs (B=1, H=8, D=64, causal), takes its contiguous
shard and runs one training step (forward + backward) of each implementation, alternating
qkv-contiguous, qkv-zigzag, ring-attention-pytorch, for --rounds rounds after a warm-up; a barrier
starts every step. Reported per implementation: the median wall time of a step (slowest rank) and
its ratio to qkv's, and the largest error of the output and of the q/k/v gradients against a
float64 single-process reference (qkv.attention on float64 copies, torch autograd).

ring-attention-pytorch is called as `ring_flash_attn(q, k, v, causal=True, ring_reduce_col=True,
bucket_size=T/P)`, its (B, T/P, H, D) layout; its ring passes are blocking (send, receive, barrier)
and its layout is contiguous (its striped option is a different layout from zigzag).

Found while writing this: in ring-attention-pytorch 0.5.20 (ring_flash_attention.py, backward) the
last step is `dkv = ring_pass(...); dk, dv = dkv`, but ring_pass returns (received, sent), so dk
is the received (2, …) stack of dK and dV and dv the sent one; autograd then sums each stack down
to the input's shape. Its output and dq are exact, its dk comes back as dK + dV and its dv as a
sum of the sent dK/dV. The script prints how close its dk is to the true dK + dV.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time


def _rank(seq_len: int, rounds: int, heads: int = 8, dim: int = 64) -> dict:
    import torch
    import torch.distributed as dist

    import qkv
    from qkv.distributed import ring_attention, shard

    rank, world = dist.get_rank(), dist.get_world_size()
    generator = torch.Generator().manual_seed(0)
    q, k, v, d_out = (torch.randn(1, heads, seq_len, dim, generator=generator) for _ in range(4))
    exact = [t.double().requires_grad_() for t in (q, k, v)]
    reference = qkv.attention(*exact, causal=True)
    reference.backward(d_out.double())
    expected = {layout: [shard(t.detach(), rank, world, layout=layout).float() for t in
                         [reference] + [t.grad for t in exact]] for layout in ("contiguous", "zigzag")}
    # what ring-attention-pytorch 0.5.20 returns as dk (see the module docstring)
    dk_plus_dv = shard(exact[1].grad + exact[2].grad, rank, world, layout="contiguous").float()

    def qkv_step(layout):
        mine = [shard(t, rank, world, layout=layout).clone().requires_grad_() for t in (q, k, v)]
        out = ring_attention(*mine, causal=True, layout=layout)
        out.backward(shard(d_out, rank, world, layout=layout))
        return [out.detach()] + [t.grad for t in mine], layout

    def peer_step():
        from ring_attention_pytorch import ring_flash_attn

        # (B, H, T/P, D) → their (B, T/P, H, D)
        mine = [shard(t, rank, world, layout="contiguous").transpose(1, 2).contiguous().requires_grad_()
                for t in (q, k, v)]
        out = ring_flash_attn(*mine, causal=True, ring_reduce_col=True, bucket_size=seq_len // world)
        out.backward(shard(d_out, rank, world, layout="contiguous").transpose(1, 2))
        return [t.transpose(1, 2) for t in [out.detach()] + [t.grad for t in mine]], "contiguous"

    steps = {"qkv ring contiguous": functools.partial(qkv_step, "contiguous"),
             "qkv ring zigzag": functools.partial(qkv_step, "zigzag"),
             "ring-attention-pytorch": peer_step}
    times = {name: [] for name in steps}
    errors = {}
    for round_ in range(rounds + 1):  # round 0 warms up
        for name, step in steps.items():
            dist.barrier()
            started = time.perf_counter()
            got, layout = step()
            elapsed = time.perf_counter() - started
            if round_:
                times[name].append(elapsed)
            else:
                errors[name] = [float((a - b).abs().max()) for a, b in zip(got, expected[layout])]
                if name == "ring-attention-pytorch":
                    errors["peer dk vs dK+dV"] = float((got[2] - dk_plus_dv).abs().max())
    return {"rank": rank, "times": times, "errors": errors}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args(argv)
    try:
        import ring_attention_pytorch  # noqa: F401
    except ImportError:
        print("ring-attention-pytorch is not installed: .venv/bin/pip install 'ring-attention-pytorch>=0.5.20'")
        return 1
    from qkv.distributed import run_local

    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    by_rank = run_local(functools.partial(_rank, args.seq, args.rounds), args.procs, timeout=300)
    names = list(by_rank[0]["times"])
    # a step takes as long as its slowest rank
    step = {name: statistics.median(max(r["times"][name][i] for r in by_rank) for i in range(args.rounds))
            for name in names}
    lines = [f"P={args.procs} gloo processes on 127.0.0.1, T={args.seq}, B=1, H=8, D=64, float32, causal; "
             f"training step (forward + backward), median of {args.rounds} alternating rounds; "
             f"load average {load} before the run (cores shared with other work).", "",
             "| implementation | step (s) | ÷ qkv contiguous | max error out | dq | dk | dv |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name in names:
        worst = [max(r["errors"][name][i] for r in by_rank) for i in range(4)]
        lines.append(f"| {name} | {step[name]:.3f} | {step[name] / step['qkv ring contiguous']:.2f} | "
                     + " | ".join(f"{e:.1e}" for e in worst) + " |")
    mixed = max(r["errors"]["peer dk vs dK+dV"] for r in by_rank)
    lines += ["", f"ring-attention-pytorch's dk differs from the true dK + dV by at most {mixed:.1e}: its backward "
              "returns the sum of the two (see this script's docstring)."]
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        from qkv._io import write_atomic

        write_atomic(args.markdown, text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
