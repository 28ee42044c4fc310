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

import contextlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from qkv import models  # noqa: E402
import qkv  # noqa: E402

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


def compare_attention_paths(t: int, b: int, h: int, dh: int, repeats: int) -> dict:
    """Milliseconds for one layer's attention: what qkv.attention dispatches to vs the plain path."""
    from qkv.models.bert import _attend, _single_threaded_blas, _threadpoolctl

    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((b, h, t, dh)).astype(np.float32) for _ in range(3))
    lengths = np.sort(rng.integers(t - 6, t + 1, b))[::-1].copy()
    lengths[0] = t
    mask = qkv.padding_mask(lengths, t)
    cases = {
        "qkv.attention, one masked call": lambda: qkv.attention(q, k, v, mask),
        "qkv.attention_reference (plain), masked": lambda: qkv.attention_reference(q, k, v, mask),
        "qkv.attention per run of equal lengths, no mask (qkv.models)": lambda: _attend(q, k, v, lengths, weights=False),
    }
    limit = _single_threaded_blas() if _threadpoolctl() is not None else contextlib.nullcontext()
    with limit:
        return {name: 1e3 * statistics.median(timed(case, repeats + 2)) for name, case in cases.items()}


def main() -> int:
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(ARGS.threads)
    model = models.load(ARGS.model)
    reference = SentenceTransformer(str(model.directory), device="cpu")
    texts = sentences(ARGS.sentences, ARGS.tokens, model)
    mean_tokens = float(np.mean([len(model.tokens(t)) for t in texts]))

    def run_qkv():
        return model.encode(texts, batch_size=ARGS.batch_size, threads=ARGS.threads)

    def run_st():
        return reference.encode(texts, batch_size=ARGS.batch_size, convert_to_numpy=True, show_progress_bar=False)

    ours, theirs = run_qkv(), run_st()  # warm-up, and the agreement check
    cosine = np.sum(ours * theirs, axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
    qkv_times, st_times = [], []
    for _ in range(ARGS.repeats):  # alternate, so background load hits both alike
        qkv_times += timed(run_qkv, 1)
        st_times += timed(run_st, 1)
    attention_paths = compare_attention_paths(ARGS.tokens, ARGS.batch_size, model.config.n_heads,
                                              model.config.head_size, ARGS.repeats)
    results = {
        "sentences": ARGS.sentences, "mean_tokens": round(mean_tokens, 1), "batch_size": ARGS.batch_size,
        "repeats": ARGS.repeats, "threads": ARGS.threads, "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(), "numpy": np.__version__, "torch": torch.__version__,
        "python": platform.python_version(),
        "attention_ms": attention_paths,
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
          f"min cosine {results['min_cosine']:.8f})")
    print(f"attention of {ARGS.batch_size} sequences × {model.config.n_heads} heads at T={ARGS.tokens}, one thread, "
          "median ms (qkv.models calls qkv.attention per run of equal lengths, unmasked):")
    for name, ms in attention_paths.items():
        print(f"  {name:<44}{ms:>8.2f}")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
