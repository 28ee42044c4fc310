"""`qkv bench --quick` runs, writes the expected JSON, and every number in it is finite and
positive. Nothing here asserts on a time or a ratio between times."""

from __future__ import annotations

import json
import math
import os
import time

import numpy as np
import pytest

from qkv.bench import Plan, attention_flops, naive_attention, plain_attention, run_benchmark, torch_attention
from qkv.cli import main

ROW_FIELDS = {"case", "impl", "batch", "heads", "t", "width", "causal", "seconds", "gflops", "vs_torch",
              "vs_gemm", "peak_mib", "memory_method", "skipped", "times", "qkv_speedup", "pair", "mask", "vs_flex",
              "vs_catalogue"}


def positive(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One `qkv bench --quick --json FILE` run for the module: (its JSON, what it printed on stdout).
    (A second quick run only for the printed table cost ~20 s of CPU.)"""
    import contextlib
    import io

    path = tmp_path_factory.mktemp("bench") / "bench.json"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["bench", "--quick", "--json", str(path)]) == 0
    return json.loads(path.read_text()), printed.getvalue()


@pytest.fixture(scope="module")
def quick_json(quick_run):
    return quick_run[0]


def test_quick_bench_json_fields(quick_json):
    assert set(quick_json) >= {"machine", "rows", "memory", "decode", "notes", "memory_inputs_mib", "masked", "timing",
                               "training", "training_timing", "half"}
    assert positive(quick_json["machine"]["gemm_gflops"])
    impls = {row["impl"] for row in quick_json["rows"]}
    assert impls == {"qkv blocked", "plain reference", "naive numpy", "torch sdpa"}
    assert {row["causal"] for row in quick_json["rows"]} == {False, True}
    for row in quick_json["rows"] + quick_json["memory"]:
        assert set(row) == ROW_FIELDS
        assert row["skipped"] is None            # torch is installed in the test environment
        for key in ("seconds", "gflops", "vs_gemm"):
            assert positive(row[key]), (row["impl"], key, row[key])
        assert all(positive(t) for t in row["times"])
        assert math.isfinite(row["peak_mib"]) and row["peak_mib"] >= 0
        assert row["memory_method"] in ("tracemalloc", "rss-hwm")
        # pairs: qkv is timed alternating with each peer alone; every peer row names qkv and its ratio
        if row["impl"] == "qkv blocked":
            assert row["pair"] == "torch sdpa" and positive(row["vs_torch"]) and row["qkv_speedup"] is None
        else:
            assert row["pair"] == "qkv blocked" and positive(row["qkv_speedup"])
            assert row["vs_torch"] == (1.0 if row["impl"] == "torch sdpa" else None)
    masked = {(row["mask"], row["impl"]): row for row in quick_json["masked"]}
    assert {mask for mask, _ in masked} == {"sliding window W=16", "4 documents"}
    for (mask, impl), row in masked.items():
        assert set(row) == ROW_FIELDS
        if impl.startswith("torch flex_attention"):
            assert "--quick" in row["skipped"]   # compiling is left to the full run
        elif impl == "qkv blocked (user lambda)":
            # the same window as a plain function, timed in a pair with the catalogue's sliding_window
            assert mask == "sliding window W=16" and row["pair"] == "qkv blocked (mask_mod)"
            assert positive(row["seconds"]) and positive(row["vs_catalogue"]) and positive(row["peak_mib"])
            assert row["vs_flex"] is None        # flex is not compiled with --quick
        elif impl.startswith("qkv"):
            assert positive(row["seconds"]) and positive(row["peak_mib"]) and positive(row["vs_torch"])
        else:
            assert positive(row["seconds"]) and positive(row["qkv_speedup"]) and row["pair"].startswith("qkv")
    assert ("sliding window W=16", "qkv blocked (user lambda)") in masked
    decode = quick_json["decode"]
    for key in ("ms_per_token_with_cache", "ms_per_token_without_cache", "speedup"):
        assert positive(decode[key])


def test_quick_bench_training_rows(quick_json):
    """Forward + backward on torch tensors: qkv, SDPA and qkv.torch.flex_attention per case, each in its own
    processes; compiled flex's row says why it was not run (--quick: not compiled)."""
    training = {(row["mask"], row["impl"]): row for row in quick_json["training"]}
    assert set(training) == {(mask, impl) for mask in ("causal", "sliding window W=16 (user lambda)")
                             for impl in ("qkv.attention (C forward + backward)",
                                          "torch sdpa (is_causal)" if mask == "causal" else "torch sdpa (dense mask)",
                                          "qkv.torch.flex_attention", "torch flex_attention (compiled)")}
    for (mask, impl), row in training.items():
        assert set(row) == ROW_FIELDS and row["case"] == "training"
        assert row["causal"] == (mask == "causal") and row["width"] == 64
        if impl.startswith("torch flex"):
            assert "--quick" in row["skipped"] and row["seconds"] is None
            continue
        assert row["skipped"] is None and positive(row["seconds"]) and all(positive(t) for t in row["times"])
        assert row["memory_method"] == "rss-hwm (own process)"
        assert math.isfinite(row["peak_mib"]) and row["peak_mib"] >= 0
        if impl == "qkv.torch.flex_attention":   # the flex drop-in: against SDPA and against qkv.attention
            assert positive(row["vs_torch"]) and positive(row["qkv_speedup"])
            assert row["pair"] == "qkv.attention (C forward + backward)"
        elif impl.startswith("qkv"):
            assert positive(row["vs_torch"]) and row["pair"] is None
        else:
            assert positive(row["qkv_speedup"]) and row["vs_torch"] == 1.0
            assert row["pair"] == "qkv.attention (C forward + backward)"


def test_quick_bench_half_precision_rows(quick_json):
    """torch bfloat16/float16 (issue 31 §3): qkv.attention and SDPA timed in a pair on the same tensors; the
    qkv row names the route it took, which is the route `choose_route` takes for that call now."""
    import torch

    from qkv.kernels import route as route_mod
    from qkv.kernels.call import check_call

    rows = quick_json["half"]
    assert [row["impl"] for row in rows] == ["qkv.attention (torch tensors)", "torch sdpa"] * 2
    for ours, sdpa in zip(rows[::2], rows[1::2]):
        assert set(ours) == ROW_FIELDS and ours["case"] == sdpa["case"] == "half"
        assert (ours["t"], ours["heads"], ours["causal"]) == (sdpa["t"], sdpa["heads"], sdpa["causal"])
        assert ours["pair"] == "torch sdpa" and sdpa["pair"] == "qkv.attention (torch tensors)"
        assert positive(ours["seconds"]) and positive(sdpa["seconds"]) and all(positive(t) for t in ours["times"])
        assert ours["vs_torch"] == pytest.approx(sdpa["seconds"] / ours["seconds"])
        assert sdpa["qkv_speedup"] == pytest.approx(ours["vs_torch"]) and sdpa["vs_torch"] == 1.0
        dtype = sdpa["mask"].split(",")[0]
        train = "backward" in sdpa["mask"]
        assert dtype in ("bfloat16", "float16") and ours["mask"].startswith(sdpa["mask"] + " (route ")
        q = torch.zeros(1, ours["heads"], ours["t"], 64, dtype=getattr(torch, dtype), requires_grad=train)
        with torch.set_grad_enabled(train):
            taken = route_mod.choose_call_route(check_call(q, q, q, causal=ours["causal"]))[1].name.value
        assert ours["mask"].endswith(f"(route {taken})")


def test_window_lambda_is_the_catalogue_window():
    """The user lambda and masks.sliding_window(W) allow the same keys: the W keys before each query
    and itself (built here from np.tri)."""
    from qkv import masks
    from qkv.bench import window_lambda

    t, w = 40, 7
    q_idx, kv_idx = np.arange(t)[:, None], np.arange(t)[None, :]
    expected = np.tri(t, dtype=bool) & ~np.tri(t, k=-w - 1, dtype=bool)
    np.testing.assert_array_equal(window_lambda(w)(0, 0, q_idx, kv_idx), expected)
    np.testing.assert_array_equal(masks.sliding_window(w)(0, 0, q_idx, kv_idx), expected)


def test_a_failing_training_worker_is_a_skipped_row():
    """A worker that raises (here: a negative length) marks its row skipped with the worker's last
    line; the other rows are still reported, nothing is raised."""
    from qkv.bench import TrainCase, measure_training

    rows = measure_training(TrainCase("causal", -1, 1, rounds=1, steps=1), 8, flex=False, timeout=120)
    for row in rows:
        assert row.skipped and row.seconds is None and row.times == []
    assert "status" in rows[0].skipped and "Error" in rows[0].skipped
    korean = rows[0].skipped.in_lang("ko")         # the worker's English line is not printed as Korean output
    assert "Error" not in korean and "건너뛰었다" in korean, korean


def test_quick_bench_prints_a_table(quick_run):
    out = quick_run[1]
    assert "qkv" in out and "GFLOP/s" in out and "GEMM" in out and "sdpa dense" in out and "alternate" in out


def test_bad_sizes_exit_with_status_2(capsys):
    assert main(["bench", "--sizes", "12,x"]) == 2
    assert "--sizes" in capsys.readouterr().err


def test_long_rows_skip_the_full_score_matrix():
    # only check the skip bookkeeping: run the real thing at a size where skipping applies (run_benchmark skips
    # the two full-matrix rows from memory_t = 16,384 on); no masked, training or half-precision cases (Plan's
    # default half_cases are the full run's twelve, up to T = 4,096: ~60 CPU-s this test never read)
    plan = Plan(sizes=(16,), heads=1, repeats=1, memory_t=16384, decode_t=32, decode_steps=1, gemm_n=64,
                mask_cases=(), compile_flex=False, train_cases=(), half_cases=())
    result = run_benchmark(plan, sizes=(16,))
    skipped = {row["impl"]: row["skipped"] for row in result["memory"]}
    assert skipped["qkv blocked"] is None and skipped["torch sdpa"] is None
    assert "1 GiB" in skipped["plain reference"] and "1 GiB" in skipped["naive numpy"]
    qkv_row = next(row for row in result["memory"] if row["impl"] == "qkv blocked")
    assert positive(qkv_row["peak_mib"]) and qkv_row["peak_mib"] < 300
    assert result["half"] == [] and result["training"] == [] and result["masked"] == []


def test_flop_count_and_implementations_agree():
    assert attention_flops(1, 8, 512, 64, False) == 4 * 8 * 512 * 512 * 64
    assert attention_flops(1, 8, 512, 64, True) == 2 * 8 * 512 * 512 * 64
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 2, 33, 8), dtype=np.float32) for _ in range(3))
    for causal in (False, True):
        expected = np.asarray(torch_attention(q, k, v, causal))
        for fn in (naive_attention, plain_attention):
            np.testing.assert_allclose(fn(q, k, v, causal), expected, rtol=0, atol=1e-5)


def test_markdown_from_a_saved_result(quick_json, tmp_path, capsys):
    saved, out = tmp_path / "results.json", tmp_path / "results.md"
    saved.write_text(json.dumps(quick_json))
    assert main(["bench", "--from-json", str(saved), "--markdown", str(out)]) == 0
    result = quick_json
    table = out.read_text(encoding="utf-8")
    rows = [line for line in table.splitlines() if line.startswith("| ") and "implementation" not in line]
    assert len(rows) == (len(result["rows"]) + len(result["memory"]) + len(result["masked"]) + len(result["training"])
                         + len(result["half"]))
    assert result["timing"] in table
    first = result["rows"][0]
    assert f"| {first['heads']} | {first['t']} |" in rows[0]
    assert f"{first['seconds'] * 1e3:.1f}" in rows[0] and f"{first['vs_torch']:.2f}" in rows[0]
    assert f"{result['decode']['speedup']:.0f}× faster" in table
    ours = next(row for row in result["training"] if row["mask"] == "causal" and row["impl"].startswith("qkv"))
    assert any(line.startswith("| causal |") and f"{ours['seconds'] * 1e3:.1f}" in line and f"{ours['vs_torch']:.2f}"
               in line for line in rows)
    lam = next(row for row in result["masked"] if row["impl"] == "qkv blocked (user lambda)")
    assert any("user lambda" in line and f"{lam['vs_catalogue']:.2f}" in line for line in rows)


def test_from_json_reads_results_saved_before_the_training_rows(quick_json, tmp_path):
    """An older result (no masked or training tables, no vs_flex / vs_catalogue fields) still prints
    and converts."""
    import copy

    old = copy.deepcopy(quick_json)
    for key in ("masked", "training", "training_timing", "half"):
        del old[key]
    for row in old["rows"] + old["memory"]:
        del row["vs_flex"], row["vs_catalogue"]
    saved, out = tmp_path / "old.json", tmp_path / "old.md"
    saved.write_text(json.dumps(old))
    assert main(["bench", "--from-json", str(saved), "--markdown", str(out)]) == 0
    table = out.read_text(encoding="utf-8")
    assert "Training steps" not in table and "| mask |" not in table
    assert len([line for line in table.splitlines() if line.startswith("| ") and "implementation" not in line]) \
        == len(old["rows"]) + len(old["memory"])


def test_from_json_refuses_other_files(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    assert main(["bench", "--from-json", str(bad)]) == 2
    assert "not a `qkv bench --json` result" in capsys.readouterr().err
    bad.write_text("{")
    assert main(["bench", "--from-json", str(bad)]) == 2
    assert "malformed JSON" in capsys.readouterr().err


def test_alternate_flips_the_order_and_warms_short_calls_before_timing_them():
    """Rounds alternate AB, BA, …; a callable whose last call was short gets two untimed calls right
    before its timed one (its own steady state, not the other's wake); a slow one does not."""
    from qkv import bench

    calls = []

    def fast():
        calls.append("a")

    def slow():
        calls.append("b")
        time.sleep(bench._BURST_BELOW_S + 0.01)

    saved = bench._BURST_MIN_S
    bench._BURST_MIN_S = 0
    try:
        first, second = bench._alternate(fast, slow, 2)
    finally:
        bench._BURST_MIN_S = saved
    assert len(first) == len(second) == 2
    # warm-up a, b; round 1: (a a a) b; round 2: b (a a a)
    assert calls == ["a", "b", "a", "a", "a", "b", "b", "a", "a", "a"]
    assert min(second) >= bench._BURST_BELOW_S


def test_alternate_warms_short_calls_for_a_minimum_time():
    from qkv import bench

    calls = []

    def fast():
        calls.append(time.perf_counter())
        time.sleep(0.004)

    saved = bench._BURST_MIN_S
    bench._BURST_MIN_S = 0.02
    try:
        bench._alternate(fast, lambda: None, 1)
    finally:
        bench._BURST_MIN_S = saved
    # warm-up, then untimed calls until 20 ms have passed (and at least _BURST_WARM of them), then the timed
    # one. How many 4 ms sleeps fit in 20 ms depends on the machine's load, so only the rule is checked.
    assert len(calls) >= 1 + bench._BURST_WARM + 1
    assert calls[-1] - calls[1] >= 0.02
    # the last untimed call began before 20 ms had passed, or it was one of the _BURST_WARM it always makes
    assert calls[-2] - calls[1] < 0.02 or len(calls) == 1 + bench._BURST_WARM + 1


# ---------------------------------------------------------------- issue 22 part 4: a saved result is data from a file
def _one_error_line(capsys, *argv) -> str:
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("qkv: error: ") and "Traceback" not in captured.err, captured.err
    assert captured.out == ""
    return lines[0]


def _mutations(result: dict):
    """(label, document) for every key that print_result and to_markdown read: removed, and set to a
    value of the wrong type (a string where a number goes, a number where a string goes, a list)."""
    import copy

    from qkv.commands import bench as command

    def places():
        yield ("machine",), {**command._MACHINE}
        for table in ("rows", "memory", "masked", "training"):
            # check_result reads each row of a table through the same checks: the first and the last row,
            # and the first row that was skipped and the first that ran (the printer's two branches),
            # stand for the rest (all 33 rows took 1,137 renders; these take about a third)
            rows = result[table]
            skipped = [n for n, row in enumerate(rows) if row["skipped"]]
            ran = [n for n, row in enumerate(rows) if not row["skipped"]]
            for n in sorted({0, len(rows) - 1, *skipped[:1], *ran[:1]}):
                yield (table, n), {**command._ROW}
        yield ("decode",), {**command._DECODE}

    for where, keys in places():
        for key, spec in keys.items():
            for label, value in (("missing", None), ("mistyped", "x" if spec[0] != "a string" else 7),
                                 ("a list", [1])):
                doc = copy.deepcopy(result)
                target = doc
                for part in where:
                    target = target[part]
                if label == "missing":
                    del target[key]
                else:
                    target[key] = value
                yield f"{'.'.join(map(str, where))}.{key} {label}", doc, key
    for top in ("machine", "rows", "memory", "decode", "notes", "memory_inputs_mib"):
        doc = copy.deepcopy(result)
        del doc[top]
        yield f"no {top}", doc, top
        doc = copy.deepcopy(result)
        doc[top] = "text" if top != "notes" else [1]
        yield f"{top} mistyped", doc, top


def test_from_json_every_missing_or_mistyped_key_is_one_line(quick_json, tmp_path, capsys):
    """Each key the printer reads, removed or of the wrong type: one line naming it (was a KeyError or
    a format error halfway through the table)."""
    count = 0
    for label, doc, key in _mutations(quick_json):
        path = tmp_path / "mutated.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        line = _one_error_line(capsys, "bench", "--from-json", str(path))
        assert key in line, (label, line)
        count += 1
    assert count > 100


@pytest.mark.parametrize("make, words", [
    (lambda d: "/dev/zero", "is a character device"),
    (lambda d: str(d), "is a directory"),
    (lambda d: (os.mkfifo(d / "p.json"), str(d / "p.json"))[1], "is a named pipe"),
    (lambda d: (_put(d / "bad.json", b'{"machine": "\xff\xfe"}')), "not UTF-8 text"),
    (lambda d: (_put(d / "deep.json", b"[" * 100_000 + b"]" * 100_000)), "nested more than 64 levels"),
    (lambda d: (_put(d / "int.json", b'{"machine": 1' + b"0" * 5000 + b"}")), "more than 4300 digits"),
    (lambda d: (_put(d / "list.json", b"[1, 2]")), "not a `qkv bench --json` result"),
    (lambda d: _sparse(d / "big.json", 17 * 2**20), "at most 16 MiB"),
])
def test_from_json_refuses_hostile_files_in_one_line(tmp_path, capsys, make, words):
    """`--from-json /dev/zero` read the device until the OOM killer came; the others were tracebacks."""
    assert words in _one_error_line(capsys, "bench", "--from-json", make(tmp_path))


def _put(path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def _sparse(path, size: int) -> str:
    with open(path, "wb") as handle:
        handle.truncate(size)
    return str(path)


def test_from_json_shows_control_characters_never_sends_them(quick_json, tmp_path, capsys):
    doc = json.loads(json.dumps(quick_json))
    doc["notes"].append("\x1b[31mred\x1b[0m [bold]not markup[/]")
    doc["machine"]["blas"] = "open[/]blas\x07"
    path = tmp_path / "escapes.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["bench", "--from-json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b[31mred\\x1b[0m [bold]not markup[/]" in out and "open[/]blas\\x07" in out


@pytest.mark.parametrize("sizes, words", [("99999999999", "from 1 to 65,536"), ("0", "from 1 to 65,536"),
                                          ("65537", "from 1 to 65,536"), ("1e3", "whole numbers"),
                                          (",".join(["8"] * 17), "at most 16")])
def test_sizes_are_bounded(capsys, sizes, words):
    line = _one_error_line(capsys, "bench", "--sizes", sizes)
    assert "--sizes" in line and words in line


def test_repeats_are_bounded(capsys):
    for value in ("0", "1001", "99999999999"):
        line = _one_error_line(capsys, "bench", "--repeats", value)
        assert "--repeats" in line and "from 1 to 1000" in line


def test_help_shows_the_defaults(capsys):
    from qkv.bench import FULL, QUICK

    assert main(["bench", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"default {','.join(map(str, FULL.sizes))}; --quick: {','.join(map(str, QUICK.sizes))}" in text
    assert f"default {FULL.repeats}; --quick: {QUICK.repeats}" in text


def test_progress_shows_when_piped(quick_json, monkeypatch, capsys):
    """Not a terminal (as under `make bench | tee`): every stage is a line on stderr, then "done"."""
    from qkv import bench

    def fake(plan, *, sizes=None, repeats=None, progress=None):
        for stage in ("measuring the float32 GEMM rate", "T=128 causal=False"):
            progress(stage)
        return quick_json

    monkeypatch.setattr(bench, "run_benchmark", fake)
    assert main(["bench", "--quick"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == ["qkv bench: measuring the float32 GEMM rate", "qkv bench: T=128 causal=False",
                                         "qkv bench: done"]
    assert "GFLOP/s" in captured.out and "qkv bench:" not in captured.out


def test_tables_are_never_cut_to_the_console_width(quick_json):
    """A Console 40 columns wide (piped output defaults to 80): every row's numbers are printed whole."""
    import io

    from rich.console import Console

    from qkv.commands.bench import print_result

    buffer = io.StringIO()
    print_result(quick_json, Console(file=buffer, width=40, no_color=True))
    lines = buffer.getvalue().splitlines()
    for row in quick_json["rows"] + quick_json["memory"]:
        cells = [str(row["t"]), f"{row['seconds'] * 1e3:.1f}", f"{row['gflops']:.1f}", f"{row['vs_gemm']:.2f}"]
        assert any(all(f" {cell} " in line for cell in cells) for line in lines), (cells, row["impl"])
    for row in quick_json["masked"]:
        if not row["skipped"]:
            assert any(row["mask"] in line and f"{row['seconds'] * 1e3:.1f}" in line for line in lines), row
