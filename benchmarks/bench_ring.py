"""qkv's ring attention, training step on P gloo processes; optionally beside ring-attention-pytorch.

    .venv/bin/python benchmarks/bench_ring.py [--procs 2] [--seq 4096] [--rounds 5] [--markdown FILE]
    /work/ringvenv/bin/python benchmarks/bench_ring.py --peer ring-attention-pytorch     # see below

Every rank builds the same random float32 inputs (B=1, H=8, D=64, causal), takes its shard and runs
one training step (forward + backward: loss = Σ out·dout, backward to its q, k, v shards) of each
implementation in turn — qkv contiguous, qkv zigzag, then the peer's — for --rounds rounds after a
warm-up round; a barrier starts every step, so all implementations see the same machine load
(strictly alternating, in the same processes). Reported per implementation: the median wall time of
a step (slowest rank), its ratio to qkv's, and the largest error of the output and of the q/k/v
gradients against a float64 single-process reference (qkv.attention on float64 copies, torch autograd).

--peer ring-attention-pytorch (PyPI 0.5.20; not a qkv dependency) adds two rows:
  ring_flash_attn  its ring: `ring_flash_attn(q, k, v, causal=True, ring_reduce_col=True,
                   bucket_size=T/P)`, its (B, T/P, H, D) layout, contiguous shards (its striped option
                   is another layout than zigzag); ring passes are blocking (send, receive, barrier).
  zig_zag_attn     its zigzag: the same zigzag shards as qkv's (chunks r and 2P−1−r), but keys and
                   values are all-gathered (not passed round a ring) and attended with torch SDPA and
                   a boolean causal mask built from the shards' positions.
It is installed in a separate venv so the project's stays clean (torch is shared through a .pth):
    /work/main/.venv/bin/python -m venv /work/ringvenv
    echo /work/main/.venv/lib/python3.11/site-packages > /work/ringvenv/lib/python3.11/site-packages/main.pth
    /work/ringvenv/bin/pip install --no-deps ring-attention-pytorch==0.5.20
    /work/ringvenv/bin/pip install einops beartype jaxtyping
Without it, --peer prints why and the qkv rows are still measured.

Found while writing this: (1) ring-attention-pytorch 0.5.20's AllGather (distributed.py) has a
backward that returns this rank's slice of its own gradient, without summing the other ranks'
contributions: zig_zag_attn's dk and dv hold only the local queries' share. (2) In its
ring_flash_attention.py (backward) the last step is `dkv = ring_pass(...); dk, dv = dkv`, but ring_pass returns (received, sent), so dk
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

PEER = "ring-attention-pytorch"


def _rank(seq_len: int, rounds: int, peer: bool, heads: int = 8, dim: int = 64) -> dict:
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
    # what its zig_zag_attn returns as dk, dv: only this rank's queries' share (see the module docstring)
    own_rows = shard(torch.arange(seq_len)[:, None], rank, world, layout="zigzag")[:, 0]
    d_own = torch.zeros_like(d_out, dtype=torch.float64)
    d_own[..., own_rows, :] = d_out[..., own_rows, :].double()
    own = [t.detach().double().requires_grad_() for t in (q, k, v)]
    qkv.attention(*own, causal=True).backward(d_own)
    own_share = [shard(t.grad, rank, world, layout="zigzag").float() for t in own[1:]]

    def qkv_step(layout):
        mine = [shard(t, rank, world, layout=layout).clone().requires_grad_() for t in (q, k, v)]
        out = ring_attention(*mine, causal=True, layout=layout)
        out.backward(shard(d_out, rank, world, layout=layout))
        return [out.detach()] + [t.grad for t in mine], layout

    def ring_flash_step():
        from ring_attention_pytorch import ring_flash_attn

        # (B, H, T/P, D) → their (B, T/P, H, D)
        mine = [shard(t, rank, world, layout="contiguous").transpose(1, 2).contiguous().requires_grad_()
                for t in (q, k, v)]
        out = ring_flash_attn(*mine, causal=True, ring_reduce_col=True, bucket_size=seq_len // world)
        out.backward(shard(d_out, rank, world, layout="contiguous").transpose(1, 2))
        return [t.transpose(1, 2) for t in [out.detach()] + [t.grad for t in mine]], "contiguous"

    def zig_zag_step():
        from ring_attention_pytorch.zig_zag_attention import zig_zag_attn, zig_zag_shard

        mine = []
        for t in (q, k, v):
            (local, q_pos, kv_pos), _ = zig_zag_shard(t)
            mine.append(local.clone().requires_grad_())
        mask = q_pos[:, None] >= kv_pos[None, :]          # (T/P, T) over the all-gathered keys' order
        out = zig_zag_attn(*mine, attn_mask=mask)
        out.backward(shard(d_out, rank, world, layout="zigzag"))
        return [out.detach()] + [t.grad for t in mine], "zigzag"

    steps = {"qkv ring contiguous": functools.partial(qkv_step, "contiguous"),
             "qkv ring zigzag": functools.partial(qkv_step, "zigzag")}
    if peer:
        steps[f"{PEER} ring_flash_attn"] = ring_flash_step
        steps[f"{PEER} zig_zag_attn (all-gather + SDPA)"] = zig_zag_step
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
                if name.endswith("ring_flash_attn"):
                    errors["peer dk vs dK+dV"] = float((got[2] - dk_plus_dv).abs().max())
                if name.startswith(PEER) and layout == "zigzag":
                    errors["peer dk, dv vs own share"] = max(float((a - b).abs().max())
                                                             for a, b in zip(got[2:], own_share))
    return {"rank": rank, "times": times, "errors": errors}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--peer", choices=[PEER], help="also time ring-attention-pytorch (installed separately)")
    parser.add_argument("--markdown", help="also write the table to this file")
    parser.add_argument("--timeout", type=float, default=600, help="seconds any rank may wait (default 600)")
    args = parser.parse_args(argv)
    peer = False
    if args.peer:
        try:
            import ring_attention_pytorch  # noqa: F401
            peer = True
        except ImportError as exc:
            print(f"{PEER} is not importable here ({exc}); timing qkv only. Install it in its own venv: "
                  "see this script's docstring.", file=sys.stderr)
    from qkv.distributed import run_local

    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    by_rank = run_local(functools.partial(_rank, args.seq, args.rounds, peer), args.procs, timeout=args.timeout)
    names = list(by_rank[0]["times"])
    # a step takes as long as its slowest rank
    step = {name: statistics.median(max(r["times"][name][i] for r in by_rank) for i in range(args.rounds))
            for name in names}
    lines = [f"P={args.procs} gloo processes on 127.0.0.1, T={args.seq}, B=1, H=8, D=64, float32, causal; "
             f"training step (forward + backward), median of {args.rounds} rounds, implementations taking turns "
             f"in the same processes; load average {load} before the run (cores shared with other work).", "",
             "| implementation | step (s) | ÷ qkv contiguous | ÷ qkv zigzag | max error out | dq | dk | dv |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name in names:
        worst = [max(r["errors"][name][i] for r in by_rank) for i in range(4)]
        lines.append(f"| {name} | {step[name]:.3f} | {step[name] / step['qkv ring contiguous']:.2f} | "
                     f"{step[name] / step['qkv ring zigzag']:.2f} | " + " | ".join(f"{e:.1e}" for e in worst) + " |")
    if peer:
        mixed = max(r["errors"]["peer dk vs dK+dV"] for r in by_rank)
        lines += ["", f"{PEER}'s ring_flash_attn dk differs from the true dK + dV by at most {mixed:.1e}: its "
                  "backward returns the sum of the two (see this script's docstring).",
                  f"{PEER}'s zig_zag_attn dk, dv differ from only this rank's queries' share of dK, dV by at most "
                  f"{max(r['errors']['peer dk, dv vs own share'] for r in by_rank):.1e}: its all-gather's backward "
                  "keeps the local slice of each rank's gradient and never sums the other ranks' (no reduce-scatter)."]
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        from qkv._io import write_atomic

        write_atomic(args.markdown, text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
