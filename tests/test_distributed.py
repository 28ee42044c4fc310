"""Ring and Ulysses attention across real processes (gloo on 127.0.0.1), against single-process attention.

Each spawned group runs many checks in one go (spawning is the slow part); every rank compares its
shard of the output and of the gradients with `qkv.attention` run by itself on the whole sequence
(torch's scaled_dot_product_attention underneath, differentiated by torch autograd). Every run is
bounded: run_local's timeout makes a hung rank fail, not the test suite hang.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import qkv  # noqa: E402
from qkv.distributed import (DistributedError, causal_work, positions, ring_attention, run_local, shard,  # noqa: E402
                             ulysses_attention, unshard)
from qkv.distributed.demo import bytes_formula  # noqa: E402
from qkv.distributed.layout import block_plan  # noqa: E402

TOLERANCE = {"float64": 1e-12, "float32": 2e-5}
TIMEOUT = 30.0  # seconds a rank may wait for another
FAST = "forkserver"  # ranks forked from one server that imported torch once: groups start quickly

# (name, strategy, layout, causal, dtype, B, H, G, T, Dk, Dv); T is a multiple of 2·4
CASES = [
    ("ring zigzag causal f64", "ring", "zigzag", True, "float64", 2, 4, 4, 24, 5, 5),
    ("ring zigzag full f64", "ring", "zigzag", False, "float64", 1, 2, 2, 16, 3, 4),
    ("ring contiguous causal f64", "ring", "contiguous", True, "float64", 2, 4, 4, 24, 5, 5),
    ("ring contiguous full f64", "ring", "contiguous", False, "float64", 1, 2, 2, 16, 3, 4),
    ("ring zigzag causal GQA f64", "ring", "zigzag", True, "float64", 1, 6, 2, 32, 4, 3),
    ("ring contiguous causal MQA f64", "ring", "contiguous", True, "float64", 1, 4, 1, 16, 4, 4),
    ("ring zigzag causal f32", "ring", "zigzag", True, "float32", 1, 4, 2, 64, 8, 8),
    ("ring contiguous full f32", "ring", "contiguous", False, "float32", 1, 4, 4, 64, 8, 8),
    ("ring zigzag causal tiled f64", "ring:tiled", "zigzag", True, "float64", 1, 2, 1, 48, 4, 4),
    ("ulysses zigzag causal f64", "ulysses", "zigzag", True, "float64", 2, 4, 4, 24, 5, 5),
    ("ulysses contiguous full f64", "ulysses", "contiguous", False, "float64", 1, 4, 4, 16, 3, 4),
    ("ulysses contiguous causal GQA f64", "ulysses", "contiguous", True, "float64", 1, 8, 4, 16, 4, 4),
    ("ulysses zigzag causal MQA f64", "ulysses", "zigzag", True, "float64", 1, 4, 1, 16, 4, 4),
    ("ulysses contiguous causal f32", "ulysses", "contiguous", True, "float32", 1, 4, 2, 64, 8, 8),
]


def _compare(strategy, layout, causal, dtype, batch, heads, kv_heads, seq_len, dim_k, dim_v, group=None):
    """Largest |distributed − single-process| over this rank's output and q/k/v gradient shards."""
    import torch.distributed as dist

    import qkv.distributed.ring as ring_module

    rank, world = dist.get_rank(group), dist.get_world_size(group)
    torch_dtype = getattr(torch, dtype)
    generator = torch.Generator().manual_seed(1000 + seq_len + heads)
    q = torch.randn(batch, heads, seq_len, dim_k, dtype=torch_dtype, generator=generator)
    k = torch.randn(batch, kv_heads, seq_len, dim_k, dtype=torch_dtype, generator=generator)
    v = torch.randn(batch, kv_heads, seq_len, dim_v, dtype=torch_dtype, generator=generator)
    d_out = torch.randn(batch, heads, seq_len, dim_v, dtype=torch_dtype, generator=generator)
    whole = [t.clone().requires_grad_() for t in (q, k, v)]
    reference = qkv.attention(*whole, causal=causal)
    reference.backward(d_out)
    mine = [shard(t, rank, world, layout=layout).clone().requires_grad_() for t in (q, k, v)]
    saved_tile = ring_module._TILE_SCORES, ring_module._MIN_SIDE
    if strategy == "ring:tiled":  # tiny tiles: many row tiles per block, causal ones cut bottom-right
        ring_module._TILE_SCORES, ring_module._MIN_SIDE = 8, 2
    try:
        if strategy.startswith("ring"):
            out = ring_attention(*mine, group=group, causal=causal, layout=layout)
        else:
            out = ulysses_attention(*mine, group=group, causal=causal, layout=layout)
    finally:
        ring_module._TILE_SCORES, ring_module._MIN_SIDE = saved_tile
    out.backward(shard(d_out, rank, world, layout=layout))
    pairs = [(out, reference)] + [(a.grad, b.grad) for a, b in zip(mine, whole)]
    return max(float((got - shard(want.detach(), rank, world, layout=layout)).abs().max()) for got, want in pairs)


def _error_of(call) -> str:
    try:
        call()
    except (ValueError, DistributedError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return "no error"


def _refusals() -> dict:
    """Misuse that every rank refuses with a message (all ranks take the same branch, so no hang)."""
    import torch.distributed as dist

    rank, world = dist.get_rank(), dist.get_world_size()
    tokens = 4 + 2 * rank  # rank 0 holds 4 tokens, rank 1 holds 6: unequal shards
    uneven = [torch.randn(1, 2, tokens, 3, dtype=torch.float64) for _ in range(3)]
    odd = [torch.randn(1, 2, 3, 3, dtype=torch.float64) for _ in range(3)]
    heads = [torch.randn(1, world + 1, 4, 3, dtype=torch.float64) for _ in range(3)]
    # Inputs that differ between ranks although each is fine alone (these used to abort a rank with
    # gloo's SIGABRT, or pass unnoticed): every rank must raise the same ValueError.
    dtype = torch.float64 if rank == 0 else torch.float32
    by_dtype = [torch.randn(1, world, 4, 3, dtype=dtype) for _ in range(3)]
    n_heads = world * (2 if rank == 0 else 1)
    by_heads = [torch.randn(1, n_heads, 4, 3, dtype=torch.float64) for _ in range(3)]
    alike = [torch.randn(1, world, 4, 3, dtype=torch.float64) for _ in range(3)]
    one_odd = [torch.randn(1, 2, 3 if rank == 1 else 4, 3, dtype=torch.float64) for _ in range(3)]
    return {
        "uneven": _error_of(lambda: ring_attention(*uneven, causal=True, layout="contiguous")),
        "odd zigzag": _error_of(lambda: ring_attention(*odd, causal=True, layout="zigzag")),
        "ulysses heads": _error_of(lambda: ulysses_attention(*heads, causal=True)),
        "ring dtype": _error_of(lambda: ring_attention(*by_dtype, causal=True)),
        "ulysses dtype": _error_of(lambda: ulysses_attention(*by_dtype, causal=True)),
        "ring heads": _error_of(lambda: ring_attention(*by_heads, causal=True)),
        "ulysses heads differ": _error_of(lambda: ulysses_attention(*by_heads, causal=True)),
        "ring causal": _error_of(lambda: ring_attention(*alike, causal=rank == 0)),
        "ulysses layout": _error_of(lambda: ulysses_attention(*alike, causal=True,
                                                              layout="zigzag" if rank == 0 else "contiguous")),
        "ring scale": _error_of(lambda: ring_attention(*alike, causal=True, scale=0.5 if rank == 0 else None)),
        "one rank refuses": _error_of(lambda: ring_attention(*one_odd, causal=True, layout="zigzag")),
    }


def _bytes_written() -> int:
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("wchar:"))


def _bytes_check(strategy) -> dict:
    """One training step's bytes: counted by RingStats, and as the OS saw this process write them."""
    import torch.distributed as dist

    from qkv.distributed import RingStats

    world = dist.get_world_size()
    batch, heads, kv_heads, length, dim = 1, 4, 2, 512, 32
    q, k, v, d_out = (torch.randn(batch, n, length, dim).requires_grad_(i < 3)
                      for i, n in enumerate((heads, kv_heads, kv_heads, heads)))
    stats = RingStats()
    before = _bytes_written()
    call = ring_attention if strategy == "ring" else ulysses_attention
    call(q, k, v, causal=True, layout="zigzag", stats=stats).backward(d_out)
    written = _bytes_written() - before
    formula = bytes_formula(strategy, world=world, seq_len=length * world, batch=batch, heads=heads,
                            kv_heads=kv_heads, dim_k=dim, dim_v=dim, itemsize=4)
    return {"counted": stats.bytes_sent, "written": written, "formula": formula}


def _subgroups() -> float:
    """Two rings, one in each half of the world (of one rank each when P = 2: no exchange at all).

    Every rank creates both groups, in the same order, as torch.distributed requires."""
    import torch.distributed as dist

    half = dist.get_world_size() // 2
    halves = [dist.new_group(list(range(half))), dist.new_group(list(range(half, 2 * half)))]
    mine = halves[dist.get_rank() // half]
    return max(_compare(strategy, "zigzag", True, "float64", 1, 4, 2, 16, 3, 3, group=mine)
               for strategy in ("ring", "ulysses"))


def _group_checks() -> dict:
    results = {name: _compare(*case) for name, *case in CASES}
    results["subgroups"] = _subgroups()
    results["refusals"] = _refusals()
    if os.path.exists("/proc/self/io"):
        results["bytes"] = {strategy: _bytes_check(strategy) for strategy in ("ring", "ulysses")}
    return results


@pytest.fixture(scope="module", params=[2, 4], ids=["P=2", "P=4"])
def group(request):
    procs = request.param
    return procs, run_local(_group_checks, procs, timeout=TIMEOUT, start_method=FAST)


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_equals_single_process_attention(group, case):
    procs, by_rank = group
    name, dtype = case[0], case[4]
    errors = [results[name] for results in by_rank]
    assert len(errors) == procs
    assert max(errors) <= TOLERANCE[dtype], f"{name}, P={procs}: errors by rank {errors}"


def test_rings_inside_subgroups_of_the_world(group):
    procs, by_rank = group
    assert max(results["subgroups"] for results in by_rank) <= TOLERANCE["float64"]


def test_misuse_is_refused_on_every_rank(group):
    procs, by_rank = group
    for rank, results in enumerate(by_rank):
        refusals = results["refusals"]
        assert "every rank must be called alike" in refusals["uneven"]
        assert "T/P (tokens) (rank 0: 4, rank 1: 6" in refusals["uneven"], refusals["uneven"]
        assert "T/P must be even" in refusals["odd zigzag"]
        assert f"H={procs + 1}, P={procs}" in refusals["ulysses heads"], refusals["ulysses heads"]
        others = ", ".join(f"rank {r}: float32" for r in range(1, procs))
        for name in ("ring dtype", "ulysses dtype"):
            assert refusals[name] == ("ValueError: " + name.split()[0] + "_attention: every rank must be called alike "
                                      "(shards of one shape and dtype, the same causal, layout and scale); the ranks "
                                      f"differ in dtype (rank 0: float64, {others})"), refusals[name]
        heads = ", ".join(f"rank {r}: {procs}" for r in range(1, procs))
        for name in ("ring heads", "ulysses heads differ"):
            assert refusals[name].startswith("ValueError:"), refusals[name]
            assert f"H (query heads) (rank 0: {2 * procs}, {heads})" in refusals[name], refusals[name]
        assert "causal (rank 0: True, rank 1: False" in refusals["ring causal"], refusals["ring causal"]
        assert "layout (rank 0: 'zigzag', rank 1: 'contiguous'" in refusals["ulysses layout"]
        assert "scale (rank 0: 0.5, rank 1: 0.57735" in refusals["ring scale"], refusals["ring scale"]
        if rank == 1:   # the rank whose input is wrong says what; the others, which rank
            assert "T/P must be even" in refusals["one rank refuses"], refusals["one rank refuses"]
        else:
            assert refusals["one rank refuses"] == ("ValueError: ring_attention: rank 1 refused its inputs (the error "
                                                    "is raised there); every rank stops"), refusals["one rank refuses"]


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux /proc/self/io")
def test_bytes_sent_per_rank_match_the_formula(group):
    procs, by_rank = group
    for results in by_rank:
        for strategy, seen in results["bytes"].items():
            assert seen["counted"] == seen["formula"], (strategy, seen)
            # what gloo actually wrote to its sockets (headers, the shape check's all_gather included)
            assert abs(seen["written"] - seen["formula"]) <= 0.05 * seen["formula"], (strategy, seen)


# --------------------------------------------------------------------------- layouts (no processes)
def test_shard_and_unshard_are_inverse_and_refuse_uneven_lengths():
    x = np.arange(2 * 3 * 16 * 2).reshape(2, 3, 16, 2)
    for layout in ("zigzag", "contiguous"):
        parts = [shard(x, rank, 4, layout=layout) for rank in range(4)]
        assert np.array_equal(unshard(parts, layout=layout), x)
        for rank, part in enumerate(parts):
            assert np.array_equal(part[0, 0, :, 0] // 2, positions(rank, 4, 16, layout))
    assert list(positions(1, 4, 16, "zigzag")) == [2, 3, 12, 13]
    with pytest.raises(ValueError, match=r"T=10 is not a multiple of 2·P = 8.*pad it to 16"):
        shard(np.zeros((10, 2)), 0, 4, layout="zigzag")
    with pytest.raises(ValueError, match=r"T=10 is not a multiple of P = 4"):
        shard(np.zeros((10, 2)), 0, 4, layout="contiguous")
    with pytest.raises(ValueError, match="layout must be one of"):
        shard(np.zeros((8, 2)), 0, 4, layout="striped")


@pytest.mark.parametrize("layout", ["zigzag", "contiguous"])
@pytest.mark.parametrize("world", [1, 2, 3, 4])
@pytest.mark.parametrize("side", [None, 2, 5])
def test_block_plan_and_its_tiles_cover_the_causal_mask_exactly_once(layout, world, side, monkeypatch):
    import qkv.distributed.ring as ring_module

    seq_len = 2 * world * 7
    local = seq_len // world
    if side:  # square tiles of this side (one head)
        monkeypatch.setattr(ring_module, "_TILE_SCORES", side * side)
        monkeypatch.setattr(ring_module, "_MIN_SIDE", 1)
    for rank in range(world):
        q_pos = positions(rank, world, seq_len, layout)
        for src in range(world):
            k_pos = positions(src, world, seq_len, layout)
            covered = np.zeros((local, local), dtype=int)
            blocks = block_plan(rank, src, world, local, layout=layout, causal=True)
            if side:
                blocks = ring_module._tiles(blocks, np.zeros((1, 1, local, 1)))
                assert all(b.q_stop - b.q_start <= side and b.k_stop - b.k_start <= side for b in blocks)
            for block in blocks:
                rows, cols = block.q_stop - block.q_start, block.k_stop - block.k_start
                allowed = np.ones((rows, cols), dtype=int)
                if block.causal:  # bottom-right aligned, qkv.attention's convention
                    allowed = np.tril(allowed, cols - rows)
                covered[block.q_start:block.q_stop, block.k_start:block.k_stop] += allowed
            assert np.array_equal(covered, (k_pos[None, :] <= q_pos[:, None]).astype(int))


def test_zigzag_balances_causal_work_and_contiguous_does_not():
    for world in (2, 4, 8):
        length = 64  # tokens per rank
        zigzag = causal_work(world, length * world, layout="zigzag")
        contiguous = causal_work(world, length * world, layout="contiguous")
        total = length * world * (length * world + 1) / 2  # query·key pairs of the causal triangle
        assert zigzag.sum() == contiguous.sum() == total
        assert np.all(zigzag == total / world)
        # rank r: r whole blocks in its past plus its own triangle
        assert list(contiguous) == [r * length * length + length * (length + 1) / 2 for r in range(world)]


# --------------------------------------------------------------------------- failures
def _ring_after_init(dead_rank) -> str:
    import torch.distributed as dist

    if dist.get_rank() == dead_rank:
        os._exit(3)  # dies without a word, as a killed process would
    x = torch.randn(1, 2, 8, 4)
    ring_attention(x, x, x, causal=True)
    return "finished"


def test_a_rank_that_dies_makes_the_others_fail_with_one_clear_error():
    with pytest.raises(DistributedError) as caught:
        run_local(_ring_after_init, 3, 1, timeout=10, start_method=FAST)
    message = str(caught.value)
    assert message.startswith("rank 1: died (exit code 3)"), message
    assert "rank 1 died" not in message and "killed" not in message  # the survivors stopped by themselves
    assert "a rank died, hung or" in message and "\n" not in message


def _never_called() -> str:
    return "unreachable"


def test_a_rank_that_never_joins_makes_the_others_fail_within_the_timeout():
    with pytest.raises(DistributedError, match=r"the group did not form within 2 s"):
        run_local(_never_called, 3, ranks=[0, 1], timeout=2, start_method=FAST)


def test_ring_attention_without_a_group_says_how_to_start_one():
    x = torch.zeros(1, 1, 2, 2)
    with pytest.raises(DistributedError, match="needs an initialised torch.distributed process group"):
        ring_attention(x, x, x)


# --------------------------------------------------------------------------- the command
def test_qkv_ring_refuses_a_length_the_layout_cannot_split(capsys):
    from qkv.cli import main

    assert main(["ring", "--procs", "4", "--seq", "100"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "qkv: error: --seq: T=100 is not a multiple of 8 (the zigzag layout cuts the sequence into 2·P " \
                  "equal chunks, P=4); try --seq 104"


@pytest.mark.slow
def test_qkv_ring_under_torchrun_and_local(tmp_path):
    """The command as a user runs it: torchrun's env:// rendezvous, then the local spawner: a rank that
    dies, and a run with a figure, --check and --json in Korean (test_cli_korean's run, merged here)."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port",
                str(__import__("qkv.distributed.launch", fromlist=["free_port"]).free_port()),
                "-m", "qkv.cli", "ring", "--seq", "64", "--heads", "2", "--dim", "8", "--repeats", "1", "--check",
                "--timeout", "20"]
    done = subprocess.run(torchrun, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith(("ring:", "ulysses "))]
    rows = [row for row in rows if row[1].isdigit()]  # table rows (strategy, rank, …), not the summary
    assert len(rows) == 6 and all(float(row[-1]) <= 2e-5 for row in rows), done.stdout

    figure = tmp_path / "ring.png"
    local = [sys.executable, "-m", "qkv.cli", "ring", "--procs", "2", "--seq", "64", "--heads", "2", "--dim", "8",
             "--repeats", "1", "--strategies", "ring:zigzag,ring:contiguous", "--figure", str(figure), "--timeout", "10"]
    done = subprocess.run(local + ["--fail-rank", "1"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1 and not figure.exists()
    errors = [line for line in done.stderr.splitlines() if line.startswith("qkv: error:")]
    assert len(errors) == 1 and errors[0].startswith("qkv: error: rank 1: died (exit code 1)"), done.stderr
    # The run that succeeds is also test_cli_korean's (it was a launch of its own, 3 processes importing
    # torch): --check, --json and --lang ko, the table, its notes and the 'wrote' lines in Korean.
    from test_cli_korean import assert_korean, words_of

    out_json = tmp_path / "ring.json"
    done = subprocess.run(local + ["--check", "--lang", "ko", "--json", str(out_json)], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(out_json.read_text(encoding="utf-8"))
    assert "랭크" in done.stdout and "가장 느린 랭크 ÷ 가장 빠른 랭크" in done.stdout
    assert done.stderr == f"qkv: 저장했다: {figure}\nqkv: 저장했다: {out_json}\n"
    assert_korean(done.stdout + done.stderr, words_of(figure, out_json))


def test_qkv_ring_refuses_ulysses_when_the_heads_do_not_split(capsys):
    """Asked for by name, ulysses with H % P != 0 is refused before any process starts (it used to
    print an empty table and exit 0)."""
    from qkv.cli import main

    assert main(["ring", "--procs", "3", "--seq", "96", "--heads", "8", "--strategies", "ulysses"]) == 2
    assert capsys.readouterr().err.strip() == (
        "qkv: error: --strategies: ulysses splits the H=8 query heads across P=3 ranks, so H must be a multiple of P; "
        "try --heads 9, or leave ulysses out (ring has no such limit)")


def _children(pid: int) -> set[int]:
    """Every live descendant of pid (from /proc), zombies excluded."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _sigint_as_at_a_terminal():
    """In the child before exec: SIGINT back to its default, as in a program started at a terminal.
    A shell runs background commands with SIGINT ignored (`make test &`), children inherit that, and
    Python then installs no KeyboardInterrupt handler: the Ctrl-C cases would test nothing real."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_long_ring(tmp_path):
    """`qkv ring` with 2 ranks and enough work to still be running seconds later, in its own session
    (so that a signal to its process group is what a terminal's Ctrl-C is); returns (process, rank pids)."""
    import time

    env = dict(os.environ, OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "qkv.cli", "ring", "--procs", "2", "--seq", "2048", "--heads", "2", "--dim", "16",
               "--repeats", "1000", "--strategies", "ring:zigzag", "--timeout", "20"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               start_new_session=True, cwd=tmp_path, preexec_fn=_sigint_as_at_a_terminal)
    deadline = time.monotonic() + 60
    ranks = set()
    while time.monotonic() < deadline and len(ranks) < 2:
        time.sleep(0.2)
        ranks = {p for p in _children(process.pid) if "qkv-rank" in _cmdline(p) or "spawn_main" in _cmdline(p)}
    assert len(ranks) >= 2, f"the ranks did not start: {process.poll()}"
    while time.monotonic() < deadline and not all(_threads(p) > 2 for p in ranks):
        time.sleep(0.2)   # until each rank runs (torch's and gloo's threads started), past its start-up
    time.sleep(1)
    return process, _children(process.pid)


def _threads(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _gone_within(pids: set[int], seconds: float) -> set[int]:
    import time

    deadline = time.monotonic() + seconds
    alive = set(pids)
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = {p for p in alive if os.path.exists(f"/proc/{p}") and _state(p) != "Z"}
    return alive


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")
@pytest.mark.parametrize("how", ["SIGTERM", "Ctrl-C", "SIGKILL"])
def test_stopping_qkv_ring_stops_its_ranks(tmp_path, how):
    """SIGTERM to `qkv ring`, or SIGINT to its whole process group (a terminal's Ctrl-C): the ranks are
    stopped, one line on stderr, exit 128 + signal. SIGKILL (which the launcher cannot answer): the ranks
    notice their launcher is gone and exit by themselves. Never a rank left running (they used to run
    on for minutes), never a rank's traceback."""
    import signal as signals

    process, descendants = _start_long_ring(tmp_path)
    try:
        if how == "SIGTERM":
            process.send_signal(signals.SIGTERM)
        elif how == "Ctrl-C":
            os.killpg(process.pid, signals.SIGINT)
        else:
            process.kill()
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert not _gone_within(descendants, 10), f"still running after {how}: {descendants}"
    if how == "SIGKILL":
        return
    name, code = {"SIGTERM": ("SIGTERM", 143), "Ctrl-C": ("SIGINT", 130)}[how]
    assert err.strip() == f"qkv: error: stopped by {name}; its 2 ranks were stopped too", err[-3000:]
    assert process.returncode == code
