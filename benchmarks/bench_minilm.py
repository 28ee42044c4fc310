"""qkv's NumPy MiniLM vs sentence-transformers (torch, CPU): sentence embeddings per second.

    .venv/bin/python benchmarks/bench_minilm.py [--sentences 256] [--tokens 64] [--rounds 5] [--threads 2]
                                                [--baseline OLD/src]

Each side runs in its own process (thread pools, allocators and caches of one never slow the other),
and the processes alternate: round r starts qkv then sentence-transformers, round r + 1 the other way
round, so a busy neighbour hits both alike. Each process loads its model, encodes once (warm-up),
then times ``--runs`` encodes, each in wall time and in the process's CPU time (every thread's: a busy
neighbour adds waiting, not CPU time); a round's figure is that process's median. The table reports the
median over rounds, the spread of the rounds and the ratio qkv / sentence-transformers (> 1 means qkv is
faster) in both.
``--baseline DIR`` adds a third side: qkv imported from DIR (e.g. an older checkout's src/), to
measure a change against what it replaces. Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("the model reads every token and asks which other tokens answer its question attention weights "
         "turn scores into shares that sum to one a head looks at grammar another at meaning small "
         "networks learn surprising things from plain text when they see enough examples during training "
         "researchers measure speed memory and accuracy on long documents short queries and noisy web pages "
         "cats sleep on warm windows while dogs wait by the door for someone to come home").split()


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--tokens", type=int, default=64, help="about this many tokens per sentence")
    parser.add_argument("--rounds", type=int, default=5, help="alternations; each side runs once per round")
    parser.add_argument("--runs", type=int, default=3, help="timed encodes per process (after one warm-up)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2, help="threads for torch, for qkv's batches and BLAS")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--baseline", default=None, help="a directory to import another qkv from (its src/)")
    parser.add_argument("--side", default=None, help=argparse.SUPPRESS)      # internal: run one side
    parser.add_argument("--texts", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--save", default=None, help=argparse.SUPPRESS)
    return parser.parse_args()


def sentences(n: int, tokens: int, model) -> list[str]:
    """n seeded word sequences whose token counts ([CLS]/[SEP] included) lie within ±8 of ``tokens``."""
    import numpy as np

    rng = np.random.default_rng(0)
    out = []
    while len(out) < n:
        target = int(rng.integers(tokens - 8, tokens + 9))
        words = list(rng.choice(WORDS, size=target))
        text = " ".join(words).capitalize() + "."
        while len(model.tokens(text)) > target:
            words.pop()
            text = " ".join(words).capitalize() + "."
        out.append(text)
    return out


def run_side(args: argparse.Namespace) -> int:
    """In a child process: load one side, warm up, time ``runs`` encodes; print a JSON line."""
    import numpy as np

    texts = json.loads(Path(args.texts).read_text(encoding="utf-8"))
    if args.side == "sentence-transformers":
        import torch
        from sentence_transformers import SentenceTransformer

        from qkv import models

        torch.set_num_threads(args.threads)
        model = SentenceTransformer(str(models.load(args.model).directory), device="cpu")

        def encode():
            return model.encode(texts, batch_size=args.batch_size, convert_to_numpy=True, show_progress_bar=False)
    else:
        from qkv import models

        model = models.load(args.model)

        def encode():
            return model.encode(texts, batch_size=args.batch_size, threads=args.threads)

    embeddings = encode()
    times, cpu_times = [], []
    for _ in range(args.runs):
        start, cpu = time.perf_counter(), time.process_time()
        encode()
        cpu_times.append(time.process_time() - cpu)
        times.append(time.perf_counter() - start)
    if args.save:
        np.save(args.save, embeddings)
    import qkv

    print(json.dumps({"side": args.side, "seconds": statistics.median(times),
                      "cpu_seconds": statistics.median(cpu_times), "qkv": qkv.__file__}))
    return 0


def main() -> int:
    args = _parse()
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(args.threads)   # read when NumPy/torch start: the children inherit it
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.side:
        return run_side(args)
    import numpy as np

    from qkv import models

    model = models.load(args.model)
    texts = sentences(args.sentences, args.tokens, model)
    mean_tokens = float(np.mean([len(model.tokens(t)) for t in texts]))
    sides = {"qkv": None, "sentence-transformers": None}
    if args.baseline:
        sides["qkv baseline"] = str(Path(args.baseline).resolve())
    times: dict[str, list[float]] = {side: [] for side in sides}
    cpu_times: dict[str, list[float]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory() as tmp:
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(texts), encoding="utf-8")
        order = list(sides)
        for round_index in range(args.rounds):
            for side in (order if round_index % 2 == 0 else order[::-1]):
                command = [sys.executable, __file__, "--side", side, "--texts", str(texts_file),
                           "--threads", str(args.threads), "--batch-size", str(args.batch_size),
                           "--runs", str(args.runs), "--model", args.model,
                           "--save", str(Path(tmp) / f"{side.replace(' ', '_')}.npy")]
                env = dict(os.environ)
                if sides[side]:
                    env["PYTHONPATH"] = sides[side]
                done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
                if done.returncode:
                    print(done.stderr, file=sys.stderr)
                    return 1
                reported = json.loads(done.stdout.strip().splitlines()[-1])
                times[side].append(reported["seconds"])
                cpu_times[side].append(reported["cpu_seconds"])
        ours = np.load(Path(tmp) / "qkv.npy")
        theirs = np.load(Path(tmp) / "sentence-transformers.npy")
    cosine = np.sum(ours * theirs, axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
    medians = {side: statistics.median(values) for side, values in times.items()}
    cpu_medians = {side: statistics.median(values) for side, values in cpu_times.items()}
    results = {
        "sentences": args.sentences, "mean_tokens": round(mean_tokens, 1), "batch_size": args.batch_size,
        "rounds": args.rounds, "runs_per_process": args.runs, "threads": args.threads,
        "cpu_count": os.cpu_count(), "load_average": os.getloadavg()[0], "python": platform.python_version(),
        "seconds": medians, "per_round": times, "cpu_seconds": cpu_medians, "cpu_per_round": cpu_times,
        "ratio": medians["sentence-transformers"] / medians["qkv"],
        "cpu_ratio": cpu_medians["sentence-transformers"] / cpu_medians["qkv"],
        "max_abs_diff": float(np.abs(ours - theirs).max()), "min_cosine": float(cosine.min()),
    }
    if args.baseline:
        results["ratio_vs_baseline"] = medians["qkv baseline"] / medians["qkv"]
    print(f"MiniLM-L6 sentence embeddings: {args.sentences} sentences × {mean_tokens:.1f} tokens, batch "
          f"{args.batch_size}, {args.threads} threads; each side in its own process, alternating, "
          f"median of {args.rounds} rounds × median of {args.runs} runs")
    print(f"{'implementation':<34}{'seconds':>10}{'(rounds)':>18}{'CPU s':>10}{'(rounds)':>18}{'sentences/s':>14}")
    for side, seconds in medians.items():
        wall, cpu = times[side], cpu_times[side]
        print(f"{side:<34}{seconds:>10.3f}{f'{min(wall):.3f}–{max(wall):.3f}':>18}{cpu_medians[side]:>10.3f}"
              f"{f'{min(cpu):.3f}–{max(cpu):.3f}':>18}{args.sentences / seconds:>14.1f}")
    print(f"ratio qkv/sentence-transformers: {results['ratio']:.2f}× wall, {results['cpu_ratio']:.2f}× CPU time   "
          f"(max |Δ| {results['max_abs_diff']:.2e}, min cosine {results['min_cosine']:.8f})")
    if args.baseline:
        print(f"ratio qkv/baseline: {results['ratio_vs_baseline']:.2f}×")
    print(f"load average at the end: {results['load_average']:.1f} on {os.cpu_count()} CPUs")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
