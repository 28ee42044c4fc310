"""qkv's NumPy MiniLM vs sentence-transformers (torch, CPU): sentence embeddings per second.

    .venv/bin/python benchmarks/bench_minilm.py [--sentences 256] [--tokens 64] [--repeats 7] [--threads 2]

Both run in this one process on the same sentences, in alternating rounds (so a busy
neighbour slows both alike); the table reports the median of the rounds and the ratio
qkv / sentence-transformers (> 1 means qkv is faster). Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import os
import sys


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--tokens", type=int, default=64, help="about this many tokens per sentence")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2, help="threads for torch and for NumPy's BLAS")
    parser.add_argument("--model", default="minilm")
    return parser.parse_args()


ARGS = _parse()
# BLAS reads its thread count when NumPy is first imported: set it before that.
for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = str(ARGS.threads)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from qkv import models  # noqa: E402
from qkv.attention import _blocked_kernel  # noqa: E402

WORDS = ("the model reads every token and asks which other tokens answer its question attention weights "
         "turn scores into shares that sum to one a head looks at grammar another at meaning small "
         "networks learn surprising things from plain text when they see enough examples during training "
         "researchers measure speed memory and accuracy on long documents short queries and noisy web pages "
         "cats sleep on warm windows while dogs wait by the door for someone to come home").split()


def sentences(n: int, tokens: int, model) -> list[str]:
    """n seeded word sequences whose token counts ([CLS]/[SEP] included) lie within ±8 of ``tokens``."""
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


def timed(function, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(ARGS.threads)
    model = models.load(ARGS.model)
    reference = SentenceTransformer(str(model.directory), device="cpu")
    texts = sentences(ARGS.sentences, ARGS.tokens, model)
    mean_tokens = float(np.mean([len(model.tokens(t)) for t in texts]))

    def run_qkv():
        return model.encode(texts, batch_size=ARGS.batch_size)

    def run_st():
        return reference.encode(texts, batch_size=ARGS.batch_size, convert_to_numpy=True, show_progress_bar=False)

    ours, theirs = run_qkv(), run_st()  # warm-up, and the agreement check
    cosine = np.sum(ours * theirs, axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
    qkv_times, st_times = [], []
    for _ in range(ARGS.repeats):  # alternate, so background load hits both alike
        qkv_times += timed(run_qkv, 1)
        st_times += timed(run_st, 1)
    kernel = _blocked_kernel()
    results = {
        "sentences": ARGS.sentences, "mean_tokens": round(mean_tokens, 1), "batch_size": ARGS.batch_size,
        "repeats": ARGS.repeats, "threads": ARGS.threads, "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(), "numpy": np.__version__, "torch": torch.__version__,
        "python": platform.python_version(),
        "attention_path": "blocked kernel" if kernel is not None else "plain reference",
        "qkv_s": statistics.median(qkv_times), "st_s": statistics.median(st_times),
        "max_abs_diff": float(np.abs(ours - theirs).max()), "min_cosine": float(cosine.min()),
    }
    results["qkv_per_s"] = ARGS.sentences / results["qkv_s"]
    results["st_per_s"] = ARGS.sentences / results["st_s"]
    results["ratio"] = results["qkv_per_s"] / results["st_per_s"]
    print(f"MiniLM-L6 sentence embeddings: {ARGS.sentences} sentences × {mean_tokens:.1f} tokens, batch "
          f"{ARGS.batch_size}, {ARGS.threads} threads (torch.get_num_threads() = {results['torch_threads']}), "
          f"median of {ARGS.repeats}")
    print(f"{'implementation':<34}{'seconds':>10}{'sentences/s':>14}")
    print(f"{'qkv (NumPy float32)':<34}{results['qkv_s']:>10.3f}{results['qkv_per_s']:>14.1f}")
    print(f"{'sentence-transformers (torch CPU)':<34}{results['st_s']:>10.3f}{results['st_per_s']:>14.1f}")
    print(f"ratio qkv/sentence-transformers: {results['ratio']:.2f}×   (max |Δ| {results['max_abs_diff']:.2e}, "
          f"min cosine {results['min_cosine']:.8f}, attention: {results['attention_path']})")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
