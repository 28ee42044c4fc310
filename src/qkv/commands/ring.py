"""`qkv ring`: ring (and Ulysses) attention across P local processes, measured rank by rank.

Without a launcher it spawns --procs processes joined with gloo on 127.0.0.1; started by torchrun
(RANK and WORLD_SIZE set) it runs as one rank of that group and rank 0 prints the table.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import math
import os
import signal
import sys

from .._io import int_option, write_atomic
from .. import frontdoor
from ..errors import InputError
from ..explain.model_text import pad
from ._options import add_lang_option, check_lang, words

STRATEGIES = ("ring:contiguous", "ring:zigzag", "ulysses")


def register(subparsers, t) -> None:
    parser = subparsers.add_parser("ring", help=t("ring"), description=t("ring.about"))
    parser.add_argument("--procs", type=int_option(low=1, high=64), default=2, metavar="P", help=t("ring.procs"))
    parser.add_argument("--seq", type=int_option(low=1, high=1 << 24), default=1024, metavar="T", help=t("ring.seq"))
    parser.add_argument("--batch", type=int_option(low=1, high=1 << 16), default=1, metavar="B", help=t("ring.batch"))
    parser.add_argument("--heads", type=int_option(low=1, high=1 << 12), default=8, metavar="H", help=t("ring.heads"))
    parser.add_argument("--kv-heads", type=int_option(low=1, high=1 << 12), metavar="G", help=t("ring.kv_heads"))
    parser.add_argument("--dim", type=int_option(low=1, high=1 << 14), default=64, metavar="D", help=t("ring.dim"))
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32", metavar="float32|float64",
                        help=t("ring.dtype"))
    parser.add_argument("--no-causal", action="store_true", help=t("ring.no_causal"))
    parser.add_argument("--strategies", metavar="LIST", help=t("ring.strategies", strategies=", ".join(STRATEGIES)))
    parser.add_argument("--repeats", type=int_option(low=1, high=1000), default=3, metavar="N", help=t("ring.repeats"))
    parser.add_argument("--check", action="store_true", help=t("ring.check"))
    parser.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help=t("ring.timeout"))
    parser.add_argument("--figure", metavar="FILE", help=t("ring.figure"))
    parser.add_argument("--json", metavar="FILE", help=t("ring.json"))
    # For tests only (rehearses a failure: rank R exits abruptly before its first step); not in --help.
    parser.add_argument("--fail-rank", type=int_option(low=0, high=63), metavar="R", help=argparse.SUPPRESS)
    add_lang_option(parser, t, "ring")
    parser.set_defaults(func=handler)


def _validate(args) -> list[str]:
    from ..distributed.layout import n_chunks

    t = words(check_lang(args.lang))
    if not (math.isfinite(args.timeout) and 0 < args.timeout <= 86400):
        raise InputError(t("cli.ring.timeout", value=args.timeout), field="--timeout")
    kv_heads = args.kv_heads or args.heads
    if kv_heads < 1 or args.heads % kv_heads:
        raise InputError(t("cli.ring.kv_heads", heads=args.heads, kv=kv_heads), field="--kv-heads")
    chosen = args.strategies is not None
    listed = args.strategies if chosen else ",".join(STRATEGIES)
    strategies = [s.strip() for s in listed.split(",") if s.strip()]
    for name in strategies or [listed.strip()]:
        frontdoor.check_choice(name, STRATEGIES, field="--strategies", lang=args.lang)
    world = _torchrun_world() or args.procs
    if "ulysses" in strategies and args.heads % world:
        if chosen:   # asked for by name: refused before any process starts (it would measure nothing)
            raise InputError(t("cli.ring.ulysses_heads", heads=args.heads, world=world,
                               fix=-(-args.heads // world) * world), field="--strategies")
        strategies.remove("ulysses")   # the default list: the strategies that apply, and a note saying so
        args.skipped_note = t("cli.ring.ulysses_skipped", heads=args.heads, world=world)
    need = max(n_chunks(world, s.partition(":")[2] or "contiguous") for s in strategies)
    if args.seq % need:
        raise InputError(t("cli.ring.seq", seq=args.seq, need=need, world=world, fix=-(-args.seq // need) * need),
                         field="--seq")
    if args.fail_rank is not None and not 0 <= args.fail_rank < world:
        raise InputError(t("cli.ring.fail_rank", last=world - 1, value=args.fail_rank), field="--fail-rank")
    return strategies


def _torchrun_world() -> int | None:
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return int(os.environ["WORLD_SIZE"])
    return None


def handler(args) -> int:
    if importlib.util.find_spec("torch") is None:      # checked before any rank is launched
        raise InputError(words(check_lang(args.lang))("cli.ring.torch"))
    from ..distributed import DistributedError, Interrupted, init_from_env, run_local
    from ..distributed.demo import measure

    strategies = _validate(args)
    job = functools.partial(measure, seq_len=args.seq, batch=args.batch, heads=args.heads, kv_heads=args.kv_heads,
                            dim=args.dim, dtype=args.dtype, causal=not args.no_causal, strategies=strategies,
                            repeats=args.repeats, check=args.check, fail_rank=args.fail_rank)
    try:
        if _torchrun_world():
            import torch.distributed as dist

            init_from_env(timeout=args.timeout)
            try:
                mine = job()
                every = [None] * dist.get_world_size()
                dist.all_gather_object(every, mine)
            except ValueError as exc:
                # the ranks were started alike by hand or by torchrun but disagree (qkv.distributed.agree's
                # refusal, the same on every rank): one line per rank, as a spawned rank's failure is said
                raise DistributedError(f"rank {dist.get_rank()} of {dist.get_world_size()}: "
                                       f"{' '.join(str(exc).split())}") from None
            finally:
                dist.destroy_process_group()
            if mine["rank"] != 0:
                return 0
        else:
            # glibc returns freed blocks above 64 KiB to the OS, so the resident-set peak is the live peak
            every = run_local(job, args.procs, timeout=args.timeout,
                              env={"MALLOC_MMAP_THRESHOLD_": "65536"})
    except DistributedError as exc:
        print(f"qkv: error: {exc}", file=sys.stderr)
        return 1
    except (Interrupted, KeyboardInterrupt) as exc:   # the ranks are stopped by now (run_local's finally)
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        said = words(args.lang)("cli.ring.stopped", signal=signal.Signals(signum).name,
                                procs=_torchrun_world() or args.procs)
        print(f"qkv: error: {said}", file=sys.stderr)
        return 128 + signum
    if getattr(args, "skipped_note", None):
        print(args.skipped_note)
    print(format_table(every, args))
    if args.figure:                                   # `qkv: wrote FILE` on stderr for each (qkv.cli)
        _write_figure(args.figure, every, args)
    if args.json:
        write_atomic(args.json, json.dumps(every, indent=2))
    return 0


def format_table(every: list[dict], args) -> str:
    """The per-rank table and, per strategy, the slowest ÷ fastest rank's compute."""
    from ..kernels import pool

    t = words(getattr(args, "lang", "en"))
    world = len(every)
    kv = args.kv_heads or args.heads
    header = [pad(t("cli.ring.col.strategy"), 16, "<")] + [
        pad(t(f"cli.ring.col.{name}"), width, ">") for name, width in
        (("rank", 4), ("time", 8), ("compute", 9), ("wait", 7), ("sent", 9), ("formula", 9), ("os", 9), ("peak", 9))
        + ((("error", 10),) if args.check else ())]
    lines = [t("cli.ring.header", world=world, seq=args.seq, per_rank=args.seq // world, batch=args.batch,
               heads=args.heads, kv=kv, dim=args.dim, dtype=args.dtype,
               causal=t("cli.ring.non_causal" if args.no_causal else "cli.ring.causal"), repeats=args.repeats,
               cpus=pool.available_cpus()),
             "", " ".join(header)]
    names = [name for name in every[0]["results"]]
    for name in names:
        for entry in every:
            row = entry["results"][name]
            mib = 1 << 20
            compute = f"{row['compute_s']:>9.3f}" if row["pairs"] else f"{'—':>9}"  # Ulysses: not counted
            lines.append(
                f"{name:<16} {entry['rank']:>4} {row['time_s']:>8.3f} {compute} {row['wait_s']:>7.3f} "
                f"{row['bytes_sent'] / mib:>9.2f} {row['bytes_formula'] / mib:>9.2f} "
                f"{row.get('os_bytes_written', float('nan')) / mib:>9.2f} {row.get('peak_mib', float('nan')):>9.1f}"
                + (f" {row['max_error']:>10.2e}" if args.check else ""))
    lines.append("")
    transfer = [entry.get("transfer_s") for entry in every]
    for name in names:
        if name.startswith("ring") and None not in transfer:
            per_step = max(entry["results"][name]["compute_per_step_s"] for entry in every)
            lines.append(t("cli.ring.overlap", name=name, compute=f"{per_step * 1e3:.2f}",
                           transfer=f"{max(transfer) * 1e3:.2f}",
                           verdict=t("cli.ring.hides" if max(transfer) <= per_step else "cli.ring.longer")))
    for name in names:
        compute = [entry["results"][name]["compute_s"] for entry in every]
        if name.startswith("ring") and min(compute) > 0:
            lines.append(t("cli.ring.balance", name=name, ratio=f"{max(compute) / min(compute):.2f}"))
    return "\n".join(lines)



def _write_figure(path: str, every: list[dict], args) -> None:
    import io

    from ..distributed.figure import ring_figure

    measured = {name.partition(":")[2]: [entry["results"][name]["compute_s"] for entry in every]
                for name in every[0]["results"] if name.startswith("ring:")}
    if args.no_causal:
        measured = None  # the figure is about causal work
    fig = ring_figure(len(every), args.seq, measured=measured)
    buffer = io.BytesIO()
    fig.savefig(buffer, format=os.path.splitext(path)[1][1:].lower() or "png", dpi=110)   # .png .svg .pdf
    write_atomic(path, buffer.getvalue())
