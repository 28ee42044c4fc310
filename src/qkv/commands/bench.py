"""`qkv bench`: the side-by-side attention benchmark (qkv.bench), printed as a table."""

from __future__ import annotations

import json
import math

from .._io import write_atomic, int_option
from ..errors import InputError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench", help="time qkv's blocked kernel against the plain path, naive NumPy and torch",
        description="Side-by-side attention benchmark on float32 inputs (B=1, H=8, D=64): qkv's blocked "
        "kernel, the plain reference, naive NumPy and torch's scaled_dot_product_attention, each timed in a "
        "pair with qkv alone (alternating, medians); masked attention (sliding window, documents) against "
        "torch SDPA with a dense mask and torch.compile(flex_attention); plus the machine's GEMM rate, a "
        "long-sequence memory run and a KV-cache decode step.")
    parser.add_argument("--quick", action="store_true", help="small sizes (a few seconds), for smoke tests")
    parser.add_argument("--sizes", help="comma-separated sequence lengths T, e.g. 512,1024,4096")
    parser.add_argument("--repeats", type=int_option(), help="timed runs per implementation (the median is reported)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    parser.add_argument("--markdown", metavar="FILE", help="also write the results as a Markdown table to FILE")
    parser.add_argument("--from-json", metavar="FILE", help="do not measure: print (and convert) a saved --json result")
    parser.set_defaults(func=handler)


def _sizes(text):
    if text is None:
        return None
    from .._io import as_int

    sizes = tuple(as_int(part) for part in text.split(",") if part.strip())
    if not sizes or None in sizes or min(sizes) < 1:
        raise InputError(f"expected positive integers separated by commas, got {text!r}", field="--sizes")
    return sizes


def handler(args) -> int:
    from rich.console import Console

    from ..bench import FULL, QUICK, run_benchmark

    sizes = _sizes(args.sizes)
    if args.repeats is not None and args.repeats < 1:
        raise InputError(f"must be at least 1, got {args.repeats}", field="--repeats")
    console = Console()
    if args.from_json:
        result = _load(args.from_json)
    else:
        with console.status("benchmarking") as status:
            result = run_benchmark(QUICK if args.quick else FULL, sizes=sizes, repeats=args.repeats,
                                   progress=lambda message: status.update(f"benchmarking: {message}"))
    print_result(result, console)
    for path, text in ((args.json, lambda: json.dumps(result, indent=2)), (args.markdown, lambda: to_markdown(result))):
        if path:
            write_atomic(path, text())        # `qkv: wrote FILE` on stderr (qkv.cli)
    return 0


def _load(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
    except OSError as exc:
        raise InputError(str(exc.strerror or exc), source=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg}, line {exc.lineno})", source=path) from None
    if not isinstance(result, dict) or not {"machine", "rows", "memory", "decode"} <= set(result):
        raise InputError("not a `qkv bench --json` result (needs machine, rows, memory, decode)", source=path)
    return result


def to_markdown(result: dict) -> str:
    """The measured tables as Markdown (what the README shows), from a run_benchmark result."""
    m = result["machine"]
    lines = [f"Machine: {m['cpus']} CPUs{' (' + m['cpu'] + ')' if m.get('cpu') else ''}, float32 GEMM ({m['gemm_n']}²) "
             f"{m['gemm_gflops']:.1f} GFLOP/s, BLAS {m['blas']}, numpy {m['numpy']}, torch {m.get('torch') or '—'}, "
             f"load average before the run {_num(m.get('load_average_before'), '.2f')}"
             f", after {_num(m.get('load_average_after'), '.2f')}.", "",
             f"Timing: {result.get('timing', 'round-robin')}.", "",
             "| H | T | causal | implementation | ms | GFLOP/s | ×torch | qkv × faster | ×GEMM | peak MiB |",
             "|--:|--:|:--:|:--|--:|--:|--:|--:|--:|--:|"]
    for row in result["rows"] + result["memory"]:
        if row["skipped"]:
            cells = ["—"] * 6
        else:
            cells = [_num(row["seconds"] * 1e3 if row["seconds"] is not None else None, ".1f"),
                     _num(row["gflops"], ".1f"), _num(row["vs_torch"], ".2f"), _num(row.get("qkv_speedup"), ".2f"),
                     _num(row["vs_gemm"], ".2f"),
                     _num(row["peak_mib"], ".1f") + (" †" if row["memory_method"] == "rss-hwm" else "")]
        impl = f"**{row['impl']}**" if row["impl"].startswith("qkv") else row["impl"]
        impl += " (skipped)" if row["skipped"] else ""
        lines.append(f"| {row['heads']} | {row['t']} | {'yes' if row['causal'] else 'no'} | {impl} | " + " | ".join(cells) + " |")
    if result.get("masked"):
        lines += ["", "| mask | H | T | implementation | ms | qkv × faster | qkv peak MiB |", "|:--|--:|--:|:--|--:|--:|--:|"]
        for row in result["masked"]:
            impl = f"**{row['impl']}**" if row["impl"].startswith("qkv") else row["impl"]
            if row["skipped"]:
                lines.append(f"| {row['mask']} | {row['heads']} | {row['t']} | {impl} (skipped: {row['skipped']}) | — | — | — |")
                continue
            lines.append(f"| {row['mask']} | {row['heads']} | {row['t']} | {impl} | {_num(row['seconds'] * 1e3, '.1f')} | "
                         f"{_num(row.get('qkv_speedup'), '.2f')} | {_num(row['peak_mib'], '.1f')} |")
    d = result["decode"]
    lines += ["", f"Decode at T={d['t']} (D={d['d_model']}, H={d['heads']}): {d['ms_per_token_with_cache']:.2f} ms/token "
              f"with the KV cache, {d['ms_per_token_without_cache']:.1f} ms/token recomputing "
              f"({d['speedup']:.0f}× faster).", ""]
    lines += [f"- {note}" for note in result.get("notes", [])]
    lines.append("- † torch: resident-set high-water growth (its allocations are invisible to tracemalloc).")
    return "\n".join(lines) + "\n"


def _num(x, fmt):
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def print_result(result: dict, console) -> None:
    from rich.table import Table

    machine = result["machine"]
    console.print(f"float32 GEMM ({machine['gemm_n']}²): [bold]{machine['gemm_gflops']:.1f} GFLOP/s[/]   "
                  f"BLAS: {machine['blas']}   numpy {machine['numpy']}   torch {machine['torch'] or 'not installed'}   "
                  f"load average before {_num(machine.get('load_average_before'), '.2f')} on {machine['cpus']} CPUs")
    short = {"qkv blocked": "qkv", "plain reference": "plain", "naive numpy": "naive", "torch sdpa": "torch",
             "qkv blocked (mask_mod)": "qkv", "torch sdpa (dense mask)": "sdpa dense", "torch flex_attention (compiled)": "flex compiled"}
    skipped = []
    console.print(f"timing: {result.get('timing', 'round-robin')}")
    for title, rows in ((f"attention, B=1, H={result['rows'][0]['heads'] if result['rows'] else '?'}, D=64, float32",
                         result["rows"]), ("long sequence (memory), B=1, non-causal", result["memory"]),
                        ("masked attention, B=1, D=64, float32", result.get("masked", []))):
        if not rows:
            continue
        table = Table(title=title)
        columns = ("mask", "H", "T", "impl", "ms", "×torch", "qkv×", "MiB") if rows[0].get("mask") \
            else ("H", "T", "causal", "impl", "ms", "GFLOP/s", "×torch", "qkv×", "×GEMM", "MiB")
        for column in columns:
            table.add_column(column, justify="left" if column in ("impl", "mask") else "right",
                             no_wrap=column == "impl")
        for row in rows:
            name = short.get(row["impl"], row["impl"])
            if row["skipped"]:
                skipped.append(f"T={row['t']} {row['impl']}: {row['skipped']}")
                name += " *"
            peak = _num(row["peak_mib"], ".1f") + (" †" if row["memory_method"] == "rss-hwm" else "")
            cells = {"mask": row.get("mask") or "", "H": str(row["heads"]), "T": str(row["t"]),
                     "causal": "yes" if row["causal"] else "no", "impl": name,
                     "ms": _num(row["seconds"] and row["seconds"] * 1e3, ".1f"), "GFLOP/s": _num(row["gflops"], ".1f"),
                     "×torch": _num(row["vs_torch"], ".2f"), "qkv×": _num(row.get("qkv_speedup"), ".2f"),
                     "×GEMM": _num(row["vs_gemm"], ".2f"), "MiB": peak}
            table.add_row(*(cells[column] for column in columns))
        console.print(table)
    for line in skipped:
        console.print(f"* {line}")
    console.print("qkv× = this row's time / qkv's time in the same pair (above 1: qkv is faster); "
                  "MiB: peak memory (tracemalloc for NumPy rows)")
    console.print("† resident-set high-water growth (torch allocations are not visible to tracemalloc)")
    console.print(f"memory run inputs (q, k, v): {result['memory_inputs_mib']:.1f} MiB")
    decode = result["decode"]
    if "skipped" in decode:
        console.print(f"decode: {decode['skipped']}")
    else:
        console.print(f"decode at T={decode['t']} (D={decode['d_model']}, H={decode['heads']}): "
                      f"{decode['ms_per_token_with_cache']:.2f} ms/token with the KV cache, "
                      f"{decode['ms_per_token_without_cache']:.1f} ms/token recomputing — "
                      f"{decode['speedup']:.0f}× faster")
    for note in result["notes"]:
        console.print(f"[dim]{note}[/]")
