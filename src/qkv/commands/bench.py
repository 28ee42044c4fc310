"""`qkv bench`: the side-by-side attention benchmark (qkv.bench), printed as a table."""

from __future__ import annotations

import json
import math

from .._io import write_atomic, int_option
from ..errors import InputError
from ..explain.texts import LANGS, has, text
from ._options import add_lang_option, words


MAX_T = 65_536          # the longest --sizes entry: the long-sequence memory run's length
MAX_REPEATS = 1_000     # --repeats at most (each round times every implementation)
FROM_JSON_BYTES = 16 * 2**20   # the largest --from-json file read (a full run's JSON is about 40 KiB)


def register(subparsers, t) -> None:
    from ..bench import FULL, QUICK

    parser = subparsers.add_parser("bench", help=t("bench"), description=t("bench.about"))
    parser.add_argument("--quick", action="store_true", help=t("bench.quick"))
    parser.add_argument("--sizes", metavar="T,T,…",
                        help=t("bench.sizes", max_t=f"{MAX_T:,}", sizes=",".join(map(str, FULL.sizes)),
                               quick=",".join(map(str, QUICK.sizes))))
    parser.add_argument("--repeats", type=int_option(1, MAX_REPEATS), metavar="N",
                        help=t("bench.repeats", repeats=FULL.repeats, quick=QUICK.repeats))
    parser.add_argument("--json", metavar="FILE", help=t("bench.json"))
    parser.add_argument("--markdown", metavar="FILE", help=t("bench.markdown"))
    parser.add_argument("--from-json", metavar="FILE", help=t("bench.from_json", mib=FROM_JSON_BYTES // 2**20))
    add_lang_option(parser, t, "bench")
    parser.set_defaults(func=handler)


def _sizes(option: str | None):
    if option is None:
        return None
    from .._io import as_int, short_repr

    parts = [part for part in option.split(",") if part.strip()]
    sizes = tuple(as_int(part) for part in parts)
    if not sizes or None in sizes:
        raise InputError.keyed("cli.bench.sizes.format", value=short_repr(option), field="--sizes")
    for part, size in zip(parts, sizes):
        if not 1 <= size <= MAX_T:
            raise InputError.keyed("cli.bench.sizes.range", value=part.strip(), max=f"{MAX_T:,}", field="--sizes")
    if len(sizes) > 16:
        raise InputError.keyed("cli.bench.sizes.many", n=len(sizes), field="--sizes")
    return sizes


def handler(args) -> int:
    import sys

    from rich.console import Console

    from ..bench import FULL, QUICK, Said, run_benchmark

    t = words(args.lang)
    sizes = _sizes(args.sizes)
    console = Console()

    def said(message) -> str:
        return message.in_lang(args.lang) if isinstance(message, Said) else str(message)

    if args.from_json:
        result = load_result(args.from_json)
    else:
        err = Console(stderr=True)
        if err.is_terminal:
            with err.status(t("cli.bench.status")) as status:
                result = run_benchmark(QUICK if args.quick else FULL, sizes=sizes, repeats=args.repeats,
                                       progress=lambda message: status.update(f"{t('cli.bench.status')}: {said(message)}"))
        else:         # piped (make bench | tee): one line per stage, so a long run is not silent
            def say(message) -> None:
                print(f"qkv bench: {said(message)}", file=sys.stderr, flush=True)

            result = run_benchmark(QUICK if args.quick else FULL, sizes=sizes, repeats=args.repeats, progress=say)
            say(t("cli.bench.done"))
    print_result(result, console, lang=args.lang)
    for path, write in ((args.json, lambda: json.dumps(result, indent=2)), (args.markdown, lambda: to_markdown(result, args.lang))):
        if path:
            write_atomic(path, write())        # `qkv: wrote FILE` on stderr (qkv.cli)
    return 0


# --------------------------------------------------------------------------- reading a saved result
# What print_result and to_markdown read, with the JSON types each must have: one table, so a saved
# result is checked completely before anything is printed (a missing or mistyped key is one line,
# never a KeyError or a format error halfway through the table).
_NUM, _INT, _STR, _BOOL = "a number", "a whole number", "a string", "true or false"
_OPTIONAL = "or null"
_MACHINE = {"gemm_n": (_INT,), "gemm_gflops": (_NUM,), "blas": (_STR, _OPTIONAL), "numpy": (_STR,),
            "torch": (_STR, _OPTIONAL), "cpus": (_INT, _OPTIONAL)}
_MACHINE_MAYBE = {"cpu": (_STR, _OPTIONAL), "load_average_before": (_NUM, _OPTIONAL),
                  "load_average_after": (_NUM, _OPTIONAL)}
_ROW = {"impl": (_STR,), "heads": (_INT,), "t": (_INT,), "causal": (_BOOL,), "skipped": (_STR, _OPTIONAL),
        "seconds": (_NUM, _OPTIONAL), "gflops": (_NUM, _OPTIONAL), "vs_torch": (_NUM, _OPTIONAL),
        "vs_gemm": (_NUM, _OPTIONAL), "peak_mib": (_NUM, _OPTIONAL), "memory_method": (_STR, _OPTIONAL)}
_ROW_MAYBE = {"qkv_speedup": (_NUM, _OPTIONAL), "mask": (_STR, _OPTIONAL), "vs_flex": (_NUM, _OPTIONAL),
              "vs_catalogue": (_NUM, _OPTIONAL)}
_DECODE = {"t": (_INT,), "d_model": (_INT,), "heads": (_INT,), "ms_per_token_with_cache": (_NUM,),
           "ms_per_token_without_cache": (_NUM,), "speedup": (_NUM,)}


def _is(value, kind: str) -> bool:
    if kind == _BOOL:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind == _INT:
        return isinstance(value, int)
    if kind == _NUM:
        return isinstance(value, (int, float)) and abs(value) < 1e300
    return isinstance(value, str)


def _expected(spec: tuple, lang: str) -> str:
    """What a field must be (``a number or null``), in ``lang``."""
    kind = text(lang, _KIND_KEYS[spec[0]])
    return text(lang, "cli.bench.kind.or_null", kind=kind) if _OPTIONAL in spec else kind


# The text key of each kind a field may be (`_NUM`, …) and of the kinds `_json_kind` names.
_KIND_KEYS = {_NUM: "cli.bench.kind.number", _INT: "cli.bench.kind.int", _STR: "cli.bench.kind.string",
              _BOOL: "cli.bench.kind.bool", "an object": "cli.bench.kind.object", "a list": "cli.bench.kind.list"}
_NOTHING = object()


def _fail(key: str, source: str, /, *, kind=_NOTHING, expected: tuple | None = None, **values) -> InputError:
    """The InputError ``key`` about a saved result; ``kind`` (the value found) and ``expected`` (a field's
    spec) are words of their own, given in each language (`InputError.problem_in`'s ``by_lang``)."""
    def parts(lang: str) -> dict:
        said = {} if kind is _NOTHING else {"kind": _json_kind(kind, lang)}
        return said if expected is None else {**said, "expected": _expected(expected, lang)}

    error = InputError.keyed(key, source=source, **values, **parts("en"))
    error.values["by_lang"] = {lang: parts(lang) for lang in LANGS}
    return error


def _check_fields(obj, required: dict, maybe: dict, where: str, source: str) -> None:
    if not isinstance(obj, dict):
        raise _fail("cli.bench.json.object", source, where=where, kind=obj)
    for key, spec in list(required.items()) + [(k, v) for k, v in maybe.items() if k in obj]:
        if key not in obj:
            raise _fail("cli.bench.json.missing", source, where=where, key=key)
        value = obj[key]
        if not (value is None and _OPTIONAL in spec) and not _is(value, spec[0]):
            raise _fail("cli.bench.json.type", source, where=where, key=key, expected=spec, kind=value)


def _json_kind(value, lang: str = "en") -> str:
    from .._io import short_repr

    kind = {dict: "an object", list: "a list"}.get(type(value))
    return text(lang, _KIND_KEYS[kind]) if kind else short_repr(value, 40)


def check_result(result, source: str) -> dict:
    """A saved `qkv bench --json` result, checked against everything `print_result` and `to_markdown`
    read (types included); otherwise one InputError naming the key, e.g. "rows[2].t must be a whole number"."""
    if not isinstance(result, dict):
        raise _fail("cli.bench.json.not_result", source, kind=result)
    missing = [key for key in ("machine", "rows", "memory", "decode", "notes", "memory_inputs_mib") if key not in result]
    if missing:
        raise _fail("cli.bench.json.incomplete", source, missing=", ".join(missing))
    _check_fields(result["machine"], _MACHINE, _MACHINE_MAYBE, "machine", source)
    for table in ("rows", "memory", "masked", "training", "half"):   # masked, training, half: absent from older results
        rows = result.get(table, [])
        if not isinstance(rows, list):
            raise _fail("cli.bench.json.list", source, where=table, kind=rows)
        for n, row in enumerate(rows):
            _check_fields(row, _ROW, _ROW_MAYBE, f"{table}[{n}]", source)
    if not _is(result["memory_inputs_mib"], _NUM):
        raise _fail("cli.bench.json.number", source, where="memory_inputs_mib", kind=result["memory_inputs_mib"])
    decode = result["decode"]
    if isinstance(decode, dict) and "skipped" in decode:
        _check_fields(decode, {"skipped": (_STR,)}, {}, "decode", source)
    else:
        _check_fields(decode, _DECODE, {}, "decode", source)
    notes = result["notes"]
    if not isinstance(notes, list) or not all(isinstance(note, str) for note in notes):
        raise _fail("cli.bench.json.notes", source)
    for key in ("timing", "training_timing"):
        if not isinstance(result.get(key, ""), str):
            raise _fail("cli.bench.json.string", source, where=key, kind=result[key])
    return _printable(result)


def _printable(value):
    """The result with control characters in its strings made visible (a saved file's text is printed)."""
    from .._io import printable

    if isinstance(value, dict):
        return {key: _printable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_printable(item) for item in value]
    return printable(value) if isinstance(value, str) else value


def load_result(path: str) -> dict:
    """A saved result, read by `qkv._io.read_text` (a regular file of at most FROM_JSON_BYTES, UTF-8),
    parsed by `load_json` (nesting and integer bounds) and checked by `check_result`."""
    from .._io import load_json, read_text

    return check_result(load_json(read_text(path, limit=FROM_JSON_BYTES), source=path), path)


def to_markdown(result: dict, lang: str = "en") -> str:
    """The measured tables as Markdown (what the README shows), from a run_benchmark result, worded in
    ``lang`` (headings, column names, notes; the numbers are the same in every language). A saved result's
    sentences are read back (`qkv.bench.heard`) so that they are said in ``lang`` too."""
    from ..bench import heard

    t = words(lang)

    def said(message) -> str:
        message = heard(message)
        return message.in_lang(lang) if hasattr(message, "in_lang") else str(message)

    def impl_of(row) -> str:      # English: the full name, as the README shows it; else the short name's words
        name = row["impl"] if lang == "en" else _word(lang, "impl", _SHORT.get(row["impl"], row["impl"]))
        return f"**{name}**" if row["impl"].startswith("qkv") else name

    def mask_of(row) -> str:
        return said(row["mask"])

    m = result["machine"]
    lines = [t("cli.bench.md.machine", cpus=m["cpus"], cpu=f" ({m['cpu']})" if m.get("cpu") else "", n=m["gemm_n"],
               gflops=f"{m['gemm_gflops']:.1f}", blas=m["blas"], numpy=m["numpy"], torch=m.get("torch") or "—",
               before=_num(m.get("load_average_before"), ".2f"), after=_num(m.get("load_average_after"), ".2f")), "",
             t("cli.bench.md.timing", timing=said(result.get("timing", "round-robin"))), "",
             t("cli.bench.md.head.rows"), "|--:|--:|:--:|:--|--:|--:|--:|--:|--:|--:|"]
    for row in result["rows"] + result["memory"]:
        if row["skipped"]:
            cells = ["—"] * 6
        else:
            cells = [_num(row["seconds"] * 1e3 if row["seconds"] is not None else None, ".1f"),
                     _num(row["gflops"], ".1f"), _num(row["vs_torch"], ".2f"), _num(row.get("qkv_speedup"), ".2f"),
                     _num(row["vs_gemm"], ".2f"),
                     _num(row["peak_mib"], ".1f") + (" †" if row["memory_method"] == "rss-hwm" else "")]
        impl = impl_of(row) + (t("cli.bench.md.skipped") if row["skipped"] else "")
        causal = t("cli.bench.yes") if row["causal"] else t("cli.bench.no")
        lines.append(f"| {row['heads']} | {row['t']} | {causal} | {impl} | " + " | ".join(cells) + " |")
    def mask_row(row, width: int, cells) -> str:
        """A row of the masked, training and half-precision tables: mask, H, T, implementation, then cells(row)
        (a skipped row: the reason, and a dash for each of the `width` cells)."""
        lead = f"| {mask_of(row)} | {row['heads']} | {row['t']} | {impl_of(row)}"
        if row.get("skipped"):
            return lead + t("cli.bench.md.skipped_why", reason=said(row["skipped"])) + " |" + " — |" * width
        return lead + " | " + " | ".join(cells(row)) + " |"

    if result.get("masked"):
        lines += ["", t("cli.bench.md.head.masked"), "|:--|--:|--:|:--|--:|--:|--:|--:|--:|"]
        lines += [mask_row(row, 5, lambda r: [_ms(r["seconds"]), _num(r.get("qkv_speedup"), ".2f"),
                                              _num(r.get("vs_flex"), ".2f"), _num(r.get("vs_catalogue"), ".2f"),
                                              _num(r["peak_mib"], ".1f")]) for row in result["masked"]]
    if result.get("training"):
        lines += ["", t("cli.bench.md.training", timing=said(result.get("training_timing", "each side in its own process"))),
                  "", t("cli.bench.md.head.training"), "|:--|--:|--:|:--|--:|--:|--:|--:|"]
        lines += [mask_row(row, 4, lambda r: [_ms(r["seconds"]), _num(r["vs_torch"], ".2f"),
                                              _num(r.get("qkv_speedup"), ".2f"), _num(r["peak_mib"], ".0f")])
                  for row in result["training"]]
    if result.get("half"):
        lines += ["", t("cli.bench.md.half"), "", t("cli.bench.md.head.half"), "|:--|--:|--:|:--|--:|--:|--:|"]
        lines += [mask_row(row, 3, lambda r: [_ms(r["seconds"]), _num(r["vs_torch"], ".2f"),
                                              _num(r.get("qkv_speedup"), ".2f")]) for row in result["half"]]
    d = result["decode"]
    if "skipped" in d:
        lines += ["", t("cli.bench.md.decode.skipped", reason=said(d["skipped"])), ""]
    else:
        lines += ["", t("cli.bench.md.decode", t=d["t"], d=d["d_model"], h=d["heads"],
                        cached=f"{d['ms_per_token_with_cache']:.2f}", recomputed=f"{d['ms_per_token_without_cache']:.1f}",
                        speedup=f"{d['speedup']:.0f}"), ""]
    lines += [f"- {said(note)}" for note in result.get("notes", [])]
    lines.append(t("cli.bench.md.rss"))
    return "\n".join(lines) + "\n"


# the implementations' short names (`cli.bench.impl.*` words them in each language)
_SHORT = {"qkv blocked": "qkv", "plain reference": "plain", "naive numpy": "naive", "torch sdpa": "torch",
          "qkv blocked (mask_mod)": "qkv", "torch sdpa (dense mask)": "sdpa dense",
          "torch flex_attention (compiled)": "flex compiled", "qkv blocked (user lambda)": "qkv lambda",
          "qkv.attention (C forward + backward)": "qkv", "torch sdpa (is_causal)": "sdpa causal",
          "qkv.torch.flex_attention": "qkv flex", "qkv.attention (torch tensors)": "qkv"}


def _word(lang: str, kind: str, name: str) -> str:
    """A short implementation or mask name, in ``lang`` (as it is where the table has no words for it)."""
    key = f"cli.bench.{kind}.{name.replace(' ', '_')}"
    return text(lang, key) if has(lang, key) else name


def _ms(seconds):
    return _num(seconds * 1e3 if seconds is not None else None, ".1f")


def _num(x, fmt):
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def _print_table(console, table) -> None:
    """Print a rich Table at its natural width, never narrower: a Console defaults to 80 columns when
    piped (and to the terminal's width), and squeezing a table there cut its numbers."""
    from rich.console import Console
    from rich.measure import Measurement

    needed = Measurement.get(console, console.options.update_width(10_000), table).maximum
    if needed <= console.width:
        console.print(table)
    else:
        Console(file=console.file, width=needed, force_terminal=console.is_terminal,
                no_color=console.no_color).print(table)


def print_result(result: dict, console, lang: str = "en") -> None:
    """The tables and notes of a result, worded in ``lang``. A fresh run's notes, skip reasons and timing
    method are `qkv.bench.Said` sentences, said in ``lang``; a saved result's (--from-json) English is read
    back into those sentences (`qkv.bench.heard`), and any text it does not know is printed as saved."""
    from rich.markup import escape
    from rich.table import Table

    from ..bench import Said, heard

    t = words(lang)

    def said(message) -> str:            # a saved result's sentences are read back to be said in ``lang``
        message = heard(message)
        return message.in_lang(lang) if isinstance(message, Said) else str(message)

    def word(kind: str, name: str) -> str:        # a short implementation or mask name, in ``lang``
        return _word(lang, kind, name)

    machine = {key: escape(value) if isinstance(value, str) else value for key, value in result["machine"].items()}
    console.print(t("cli.bench.machine", n=machine["gemm_n"], gflops=f"[bold]{machine['gemm_gflops']:.1f} GFLOP/s[/]", blas=machine["blas"],
                    numpy=machine["numpy"], torch=machine["torch"] or t("cli.bench.not_installed"),
                    load=_num(machine.get("load_average_before"), ".2f"), cpus=machine["cpus"]))
    skipped = []
    console.print(t("cli.bench.timing", timing=said(result.get("timing", "round-robin"))), markup=False)
    heads = result["rows"][0]["heads"] if result["rows"] else "?"
    headings = {"step": t("cli.bench.col.step"), "mask": t("cli.bench.col.mask"), "causal": t("cli.bench.col.causal"),
                "impl": t("cli.bench.col.impl"), "×catalogue": t("cli.bench.col.catalogue")}
    for title, rows in ((t("cli.bench.title.rows", h=heads), result["rows"]), (t("cli.bench.title.memory"), result["memory"]),
                        (t("cli.bench.title.masked"), result.get("masked", [])),
                        (t("cli.bench.title.training"), result.get("training", [])),
                        (t("cli.bench.title.half"), result.get("half", []))):
        if not rows:
            continue
        table = Table(title=escape(title))
        if rows[0].get("case") == "training":
            columns = ("step", "H", "T", "impl", "ms", "×torch", "qkv×", "MiB")
        elif rows[0].get("case") == "half":
            columns = ("step", "H", "T", "impl", "ms", "×torch", "qkv×")
        elif rows[0].get("mask"):
            columns = ("mask", "H", "T", "impl", "ms", "×torch", "qkv×", "×flex", "×catalogue", "MiB")
        else:
            columns = ("H", "T", "causal", "impl", "ms", "GFLOP/s", "×torch", "qkv×", "×GEMM", "MiB")
        for column in columns:
            table.add_column(headings.get(column, column), justify="left" if column in ("impl", "mask") else "right",
                             no_wrap=column == "impl")
        for row in rows:
            name = word("impl", _SHORT.get(row["impl"], row["impl"]))
            if row["skipped"]:
                skipped.append(f"T={row['t']} {row['impl'] if lang == 'en' else name}: {said(row['skipped'])}")
                name += " *"
            peak = _num(row["peak_mib"], ".1f") + (" †" if row["memory_method"] == "rss-hwm" else "")
            mask = said(row.get("mask") or "")
            cells = {"mask": mask, "step": mask,
                     "×flex": _num(row.get("vs_flex"), ".2f"), "×catalogue": _num(row.get("vs_catalogue"), ".2f"), "H": str(row["heads"]), "T": str(row["t"]),
                     "causal": t("cli.bench.yes") if row["causal"] else t("cli.bench.no"), "impl": name,
                     "ms": _num(row["seconds"] and row["seconds"] * 1e3, ".1f"), "GFLOP/s": _num(row["gflops"], ".1f"),
                     "×torch": _num(row["vs_torch"], ".2f"), "qkv×": _num(row.get("qkv_speedup"), ".2f"),
                     "×GEMM": _num(row["vs_gemm"], ".2f"), "MiB": peak}
            table.add_row(*(escape(cells[column]) for column in columns))
        _print_table(console, table)
    for line in skipped:
        console.print(f"* {line}", markup=False)
    console.print(t("cli.bench.legend"), markup=False)
    console.print(t("cli.bench.rss"), markup=False)
    console.print(t("cli.bench.inputs", mib=f"{result['memory_inputs_mib']:.1f}"), markup=False)
    decode = result["decode"]
    if "skipped" in decode:
        console.print(t("cli.bench.decode.skipped", reason=said(decode["skipped"])), markup=False)
    else:
        console.print(t("cli.bench.decode", t=decode["t"], d=decode["d_model"], h=decode["heads"],
                        cached=f"{decode['ms_per_token_with_cache']:.2f}",
                        recomputed=f"{decode['ms_per_token_without_cache']:.1f}", speedup=f"{decode['speedup']:.0f}"))
    for note in result["notes"]:
        console.print(f"[dim]{escape(said(note))}[/]")
