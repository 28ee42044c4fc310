"""A bounded load test of `qkv serve`, against 127.0.0.1 only.

    python benchmarks/load_serve.py                      # 500 requests, 16 at a time
    python benchmarks/load_serve.py --requests 100 --concurrency 8 --json out.json

Starts `qkv serve` (MiniLM) as a child process on a free port of 127.0.0.1, sends a fixed mix
of requests (traces of one head, overviews of every head, derivations, worked examples, tokens;
texts of 3 to ~200 tokens, fixed seed), stops the server and reports: answers by status (the
only error allowed is the documented 429 "too many requests at once"), latency p50/p95/max of
the 200 answers (each answer's own time, and with the client's waits after 429s: a client here
honours Retry-After and tries again, at most --retries times), throughput and the server's resident memory (RSS, sampled every 0.2 s) at
start, end and peak. Everything is bounded: a fixed number of requests, a per-request timeout
and an overall deadline; the server is stopped in every case. Exit status 1 when any answer
other than 200/429 (or a transport error) occurred.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HOST = "127.0.0.1"     # never anything else: this script talks to the server it started itself

TEXTS = [
    "The cat sat on the mat.",
    "Attention is all you need.",
    "I love machine learning.",
    "A quick brown fox jumps over the lazy dog while the farmer watches from the porch.",
    "Transformers compute attention weights with a softmax over scaled dot products of queries and keys.",
    "서울은 한국의 수도이다.",
    "Paris is the capital of France, and Berlin is the capital of Germany.",
    " ".join(["The committee met on Tuesday to discuss the budget for next year's projects."] * 4),
    " ".join(["Long documents make the attention matrix grow with the square of their length."] * 8),
    " ".join(["Every head of every layer looks at the same tokens in its own way."] * 12),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def _rss_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _plan(requests: int, seed: int) -> list[tuple[str, dict]]:
    """The fixed mix: mostly one head's trace (what a page asks for most), then overviews and derivations."""
    rng = random.Random(seed)
    plan = []
    for _ in range(requests):
        text = rng.choice(TEXTS)
        kind = rng.choices(["trace", "overview", "explain", "example", "tokens"], weights=[45, 20, 15, 10, 10])[0]
        if kind == "trace":
            plan.append(("/api/trace", {"model": "minilm", "text": text, "layer": rng.randrange(6),
                                        "head": rng.randrange(12),
                                        "steps": "q_heads,k_heads,v_heads,scores,scaled_scores,weights,out"}))
        elif kind == "overview":
            plan.append(("/api/overview", {"model": "minilm", "text": text}))
        elif kind == "explain":
            plan.append(("/api/explain", {"model": "minilm", "text": text, "layer": rng.randrange(6),
                                          "head": rng.randrange(12), "query": 1, "lang": rng.choice(["en", "ko"])}))
        elif kind == "example":
            plan.append(("/api/example", {"name": rng.choice(["self-attention", "projection", "cross-attention"]),
                                          "lang": rng.choice(["en", "ko"])}))
        else:
            plan.append(("/api/tokens", {"model": "minilm", "text": text}))
    return plan


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


async def _drive(base: str, plan: list[tuple[str, dict]], concurrency: int, pid: int, timeout: float,
                 retries: int) -> dict:
    import httpx

    results: list[tuple[int | str, float, str, float]] = []    # final status, its latency, route, with waits
    attempts: list[int | str] = []
    rss: list[float] = []
    queue: asyncio.Queue = asyncio.Queue()
    for item in plan:
        queue.put_nowait(item)

    async def sample() -> None:
        while True:
            value = _rss_mib(pid)
            if value is not None:
                rss.append(value)
            await asyncio.sleep(0.2)

    async def worker(client: "httpx.AsyncClient") -> None:
        while True:
            try:
                path, params = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            start = time.perf_counter()
            for attempt in range(retries + 1):
                sent = time.perf_counter()
                try:
                    response = await client.get(path, params=params)
                    await response.aread()
                    code: int | str = response.status_code
                except Exception as exc:  # a transport error is an error to report, not a crash
                    code = type(exc).__name__
                attempts.append(code)
                if code != 429 or attempt == retries:
                    break
                await asyncio.sleep(float(response.headers.get("retry-after", "1")))   # as a polite client does
            now = time.perf_counter()
            results.append((code, now - sent, path, now - start))

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    sampler = asyncio.create_task(sample())
    began = time.perf_counter()
    async with httpx.AsyncClient(base_url=base, timeout=timeout, limits=limits, trust_env=False) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
    elapsed = time.perf_counter() - began
    sampler.cancel()
    return {"results": results, "attempts": attempts, "rss": rss, "elapsed": elapsed}


def run(*, requests: int = 500, concurrency: int = 16, seed: int = 0, deadline: float = 600.0,
        request_timeout: float = 120.0, retries: int = 20) -> dict:
    """Start the server, send the plan, stop the server; returns the report (see the module docstring)."""
    port = _free_port()
    base = f"http://{HOST}:{port}"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    server = subprocess.Popen([sys.executable, "-m", "qkv.cli", "serve", "--host", HOST, "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        import httpx

        started = time.monotonic()
        while True:                                     # wait until the models are loaded and it answers
            if server.poll() is not None:
                raise RuntimeError(f"qkv serve exited with {server.returncode}: {server.stderr.read().decode()[-500:]}")
            try:
                if httpx.get(base + "/api/models", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() - started > 120:
                raise RuntimeError("qkv serve did not answer within 120 s")
            time.sleep(0.2)
        rss_start = _rss_mib(server.pid)
        plan = _plan(requests, seed)
        outcome = asyncio.run(asyncio.wait_for(_drive(base, plan, concurrency, server.pid, request_timeout, retries),
                                               timeout=deadline))
        rss_end = _rss_mib(server.pid)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)
    results = outcome["results"]
    status: dict[str, int] = {}
    for code, *_ in results:
        status[str(code)] = status.get(str(code), 0) + 1
    answers: dict[str, int] = {}
    for code in outcome["attempts"]:
        answers[str(code)] = answers.get(str(code), 0) + 1
    ok = [t for code, t, _, _ in results if code == 200]
    waited = [t for code, _, _, t in results if code == 200]
    by_route: dict[str, list[float]] = {}
    for code, t, path, _ in results:
        if code == 200:
            by_route.setdefault(path, []).append(t)
    rss = outcome["rss"]
    ms = lambda v: None if v is None else round(v * 1000, 1)  # noqa: E731
    return {
        "requests": len(results), "concurrency": concurrency, "seconds": round(outcome["elapsed"], 2),
        "throughput_per_s": round(len(results) / outcome["elapsed"], 1),
        "status": status, "answers": answers, "retries_allowed": retries,
        "errors": sorted({f"{code} {path}" for code, _, path, _ in results if code not in (200, 429)}),
        "latency_ms_200": {"p50": ms(_percentile(ok, 50)), "p95": ms(_percentile(ok, 95)), "max": ms(max(ok, default=None))},
        "latency_ms_200_with_retries": {"p50": ms(_percentile(waited, 50)), "p95": ms(_percentile(waited, 95))},
        "latency_ms_by_route": {p: {"n": len(v), "p50": ms(_percentile(v, 50)), "p95": ms(_percentile(v, 95))}
                                for p, v in sorted(by_route.items())},
        "rss_mib": {"start": round(rss_start or 0, 1), "end": round(rss_end or 0, 1),
                    "peak": round(max(rss, default=0), 1), "samples": len(rss),
                    "quarter_peaks": [round(max(rss[q * len(rss) // 4:(q + 1) * len(rss) // 4], default=0), 1)
                                      for q in range(4)]},
        "cpus": os.cpu_count(), "load_average_at_end": [round(v, 1) for v in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--retries", type=int, default=20,
                        help="after a 429, wait Retry-After and try again, at most this often (default 20; 0: never)")
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds for the whole run (default 600)")
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    args = parser.parse_args(argv)
    if not 1 <= args.requests <= 100_000 or not 1 <= args.concurrency <= 256:
        parser.error("--requests must be 1 … 100000 and --concurrency 1 … 256")
    report = run(requests=args.requests, concurrency=args.concurrency, seed=args.seed, deadline=args.deadline,
                 retries=max(0, args.retries))
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if args.json:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
        from qkv._io import write_atomic

        write_atomic(args.json, text + "\n")
    return 1 if report["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
