"""`qkv bench --quick` runs, writes the expected JSON, and every number in it is finite and
positive. Nothing here asserts on a time or a ratio between times."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

from qkv.bench import Plan, attention_flops, naive_attention, plain_attention, run_benchmark, torch_attention
from qkv.cli import main

ROW_FIELDS = {"case", "impl", "batch", "heads", "t", "width", "causal", "seconds", "gflops", "vs_torch",
              "vs_gemm", "peak_mib", "memory_method", "skipped", "times", "qkv_speedup", "pair", "mask"}


def positive(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


@pytest.fixture(scope="module")
def quick_json(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "bench.json"
    assert main(["bench", "--quick", "--json", str(path)]) == 0
    return json.loads(path.read_text())


def test_quick_bench_json_fields(quick_json):
    assert set(quick_json) >= {"machine", "rows", "memory", "decode", "notes", "memory_inputs_mib", "masked", "timing"}
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
        elif impl.startswith("qkv"):
            assert positive(row["seconds"]) and positive(row["peak_mib"]) and positive(row["vs_torch"])
        else:
            assert positive(row["seconds"]) and positive(row["qkv_speedup"]) and row["pair"].startswith("qkv")
    decode = quick_json["decode"]
    for key in ("ms_per_token_with_cache", "ms_per_token_without_cache", "speedup"):
        assert positive(decode[key])


def test_quick_bench_prints_a_table(capsys, tmp_path):
    assert main(["bench", "--quick", "--sizes", "32", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "qkv" in out and "GFLOP/s" in out and "GEMM" in out and "sdpa dense" in out and "alternate" in out


def test_bad_sizes_exit_with_status_2(capsys):
    assert main(["bench", "--sizes", "12,x"]) == 2
    assert "--sizes" in capsys.readouterr().err


def test_long_rows_skip_the_full_score_matrix():
    plan = Plan(sizes=(16,), heads=1, repeats=1, memory_t=16384, decode_t=32, decode_steps=1, gemm_n=64,
                mask_cases=(), compile_flex=False)
    # only check the skip bookkeeping: run the real thing at a size where skipping applies
    result = run_benchmark(plan, sizes=(16,))
    skipped = {row["impl"]: row["skipped"] for row in result["memory"]}
    assert skipped["qkv blocked"] is None and skipped["torch sdpa"] is None
    assert "1 GiB" in skipped["plain reference"] and "1 GiB" in skipped["naive numpy"]
    qkv_row = next(row for row in result["memory"] if row["impl"] == "qkv blocked")
    assert positive(qkv_row["peak_mib"]) and qkv_row["peak_mib"] < 300


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
    assert len(rows) == len(result["rows"]) + len(result["memory"]) + len(result["masked"])
    assert result["timing"] in table
    first = result["rows"][0]
    assert f"| {first['heads']} | {first['t']} |" in rows[0]
    assert f"{first['seconds'] * 1e3:.1f}" in rows[0] and f"{first['vs_torch']:.2f}" in rows[0]
    assert f"{result['decode']['speedup']:.0f}× faster" in table


def test_from_json_refuses_other_files(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    assert main(["bench", "--from-json", str(bad)]) == 2
    assert "not a `qkv bench --json` result" in capsys.readouterr().err
    bad.write_text("{")
    assert main(["bench", "--from-json", str(bad)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


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
