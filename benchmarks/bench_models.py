"""qkv's decoders against transformers (torch CPU, eager and sdpa attention) on the same random weights.

    .venv/bin/python benchmarks/bench_models.py              # the full run (a few minutes on 2 cores)
    .venv/bin/python benchmarks/bench_models.py --quick      # a short check: small models, few rounds

Two models, made here with transformers from configs (random weights, saved with save_pretrained
to a temporary directory; nothing is downloaded):
- "gpt2-small": GPT-2 small's shape (12 layers, D = 768, 12 heads, vocab 50257);
- "llama-gqa": a Llama-style model with grouped-query attention 4:1 (12 layers, D = 1024, 16 query
  heads, 4 key/value heads of width 64, SwiGLU F = 2816, vocab 32000).
For each: one forward pass over T = 256 tokens (logits for every position), and cached greedy
generation (a 16-token prompt, 32 new tokens, no early stop) in tokens per second, prefill included.
qkv and each transformers variant take turns (the order rotates every round, nothing in between),
medians of the rounds; ratio = peer's time / qkv's time (> 1: qkv is faster). Also: resident memory
after `qkv.models.load`, against the size of the weights, in a fresh process.
Results go to standard output (Markdown) and, with --json FILE, to a file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

SIZES = {
    "full": {
        "gpt2-small": ("gpt2", dict(n_embd=768, n_layer=12, n_head=12, n_positions=1024, vocab_size=50257)),
        "llama-gqa": ("llama", dict(hidden_size=1024, num_hidden_layers=12, num_attention_heads=16,
                                    num_key_value_heads=4, intermediate_size=2816, vocab_size=32000,
                                    max_position_embeddings=2048, tie_word_embeddings=False)),
    },
    "quick": {
        "gpt2-small": ("gpt2", dict(n_embd=256, n_layer=4, n_head=4, n_positions=512, vocab_size=8000)),
        "llama-gqa": ("llama", dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=8,
                                    num_key_value_heads=2, intermediate_size=704, vocab_size=8000,
                                    max_position_embeddings=512, tie_word_embeddings=False)),
    },
}


def build(directory: Path, family: str, kwargs: dict) -> Path:
    """A random model saved with save_pretrained, with a byte-level BPE tokenizer.json beside it."""
    import torch
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    config = (transformers.GPT2Config if family == "gpt2" else transformers.LlamaConfig)(
        bos_token_id=1, eos_token_id=2, pad_token_id=0, **kwargs)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    model.save_pretrained(directory)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.train_from_iterator(["the cat sat on the mat"] * 4,
                                  trainers.BpeTrainer(vocab_size=300, show_progress=False,
                                                      special_tokens=["<pad>", "<s>", "</s>"],
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer.save(str(directory / "tokenizer.json"))
    return directory


def resident_memory(directory: Path) -> dict:
    """In a fresh process: RSS growth (final and peak) of qkv.models.load, and the weights' size."""
    code = f"""
import json, re
def status(key):
    return int(re.search(key + r":\\s+(\\d+)", open("/proc/self/status").read()).group(1)) * 1024
import numpy as np, qkv.models, safetensors, tokenizers
import gc
warm = qkv.models.load({str(directory)!r})   # a first load and forward: code, caches and pools, not weights
warm.forward(np.arange(3, 11))
del warm
gc.collect()
before = status("VmRSS")
model = qkv.models.load({str(directory)!r})
after, peak = status("VmRSS"), status("VmHWM")
model.forward(np.arange(3, 11))           # touches every weight: memory-mapped pages become resident
after_forward, peak_forward = status("VmRSS"), status("VmHWM")
arrays = model.arrays
seen, total = set(), 0
def count(a):
    global total
    if a is None: return
    base = a
    while base.base is not None and isinstance(base.base, np.ndarray): base = base.base
    if id(base) not in seen:
        seen.add(id(base)); total += base.nbytes
for a in (arrays.token_embeddings, arrays.position_embeddings, arrays.unembedding, *arrays.final_norm):
    count(a)
for layer in arrays.layers:
    for name in ("w_q","w_k","w_v","w_o","b_q","b_k","b_v","b_o","w_in","b_in","w_gate","b_gate","w_out","b_out"):
        count(getattr(layer, name))
    for a in (*layer.norm1, *layer.norm2): count(a)
print(json.dumps({{"weights_bytes": total, "rss_growth": after - before, "peak_rss_minus_before": peak - before,
                  "rss_growth_after_forward": after_forward - before, "peak_after_forward": peak_forward - before}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def time_once(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def alternate(runners: dict, rounds: int) -> dict[str, list[float]]:
    """Each runner once per round, the order rotated every round; one warm-up round first."""
    names = list(runners)
    for name in names:
        runners[name]()
    times = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            times[name].append(time_once(runners[name]))
    return times


def bench_model(label: str, family: str, kwargs: dict, args, root: Path) -> dict:
    import torch
    import transformers

    from qkv import models

    directory = build(root / label, family, kwargs)
    qkv_model = models.load(directory)
    peers = {impl: transformers.AutoModelForCausalLM.from_pretrained(directory, attn_implementation=impl).eval()
             for impl in ("eager", "sdpa")}
    rng = np.random.default_rng(0)
    ids = rng.integers(3, qkv_model.config.vocab_size, size=args.tokens)
    prompt = ids[:16]
    torch_ids, torch_prompt = torch.as_tensor(ids)[None], torch.as_tensor(prompt)[None]

    # sanity: the same logits, the same greedy tokens
    with torch.no_grad():
        reference = peers["sdpa"](torch_ids).logits[0].numpy()
    logits_gap = float(np.abs(qkv_model.forward(ids).logits - reference).max())

    def peer_forward(model):
        def run():
            with torch.no_grad():
                model(torch_ids)
        return run

    def peer_generate(model):
        def run():
            with torch.no_grad():
                return model.generate(torch_prompt, max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens,
                                      do_sample=False, pad_token_id=0)
        return run

    forward = alternate({"qkv": lambda: qkv_model.forward(ids),
                         **{f"transformers-{k}": peer_forward(m) for k, m in peers.items()}}, args.rounds)
    generated = qkv_model.generate(prompt, args.new_tokens, stop_at_eos=False).ids
    same_tokens = generated.tolist() == peer_generate(peers["sdpa"])()[0, len(prompt):].tolist()
    generation = alternate({"qkv": lambda: qkv_model.generate(prompt, args.new_tokens, stop_at_eos=False),
                            **{f"transformers-{k}": peer_generate(m) for k, m in peers.items()}}, args.rounds)
    result = {"model": label, "config": kwargs, "tokens": args.tokens, "new_tokens": args.new_tokens,
              "rounds": args.rounds, "max_abs_logit_gap_vs_sdpa": logits_gap, "same_greedy_tokens": same_tokens,
              "forward_s": {k: statistics.median(v) for k, v in forward.items()},
              "generate_tokens_per_s": {k: args.new_tokens / statistics.median(v) for k, v in generation.items()},
              "forward_raw": forward, "generate_raw": generation}
    if not args.no_memory:
        result["memory"] = resident_memory(directory)
    return result


def report(results: list[dict], threads: dict) -> str:
    lines = [f"threads: torch {threads['torch']}, BLAS {threads['blas']}; medians; ratio = peer time / qkv time", "",
             "| model | measure | qkv | transformers eager | transformers sdpa | ratio vs eager | ratio vs sdpa |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        f, g = r["forward_s"], r["generate_tokens_per_s"]
        lines.append(f"| {r['model']} | forward, T = {r['tokens']} (s) | {f['qkv']:.3f} | {f['transformers-eager']:.3f} | "
                     f"{f['transformers-sdpa']:.3f} | {f['transformers-eager'] / f['qkv']:.2f}× | "
                     f"{f['transformers-sdpa'] / f['qkv']:.2f}× |")
        lines.append(f"| {r['model']} | cached generation (tokens/s) | {g['qkv']:.1f} | {g['transformers-eager']:.1f} | "
                     f"{g['transformers-sdpa']:.1f} | {g['qkv'] / g['transformers-eager']:.2f}× | "
                     f"{g['qkv'] / g['transformers-sdpa']:.2f}× |")
    lines.append("")
    for r in results:
        note = f"{r['model']}: max |Δlogit| vs sdpa {r['max_abs_logit_gap_vs_sdpa']:.1e}; same greedy tokens: " \
               f"{r['same_greedy_tokens']}"
        if "memory" in r:
            m = r["memory"]
            w = m["weights_bytes"]
            note += (f"; memory: weights {w / 2**20:.0f} MiB; RSS growth after load {m['rss_growth'] / 2**20:.0f} MiB "
                     f"(memory-mapped, not yet read), after a first forward {m['rss_growth_after_forward'] / 2**20:.0f} "
                     f"MiB ({m['rss_growth_after_forward'] / w:.2f}×), peak {m['peak_after_forward'] / w:.2f}×")
        lines.append(note)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small models and 3 rounds: a short check")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds per side (default 7; --quick 3)")
    parser.add_argument("--tokens", type=int, default=256, help="forward length T (default 256)")
    parser.add_argument("--new-tokens", type=int, default=32, help="generated tokens (default 32)")
    parser.add_argument("--no-memory", action="store_true", help="skip the resident-memory measurement")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args()
    args.rounds = args.rounds or (3 if args.quick else 7)
    import threadpoolctl
    import torch

    blas = [p.get("num_threads") for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]
    threads = {"torch": torch.get_num_threads(), "blas": blas[0] if blas else None}
    with tempfile.TemporaryDirectory() as root:
        results = [bench_model(label, family, kwargs, args, Path(root))
                   for label, (family, kwargs) in SIZES["quick" if args.quick else "full"].items()]
    print(report(results, threads))
    if args.json:
        Path(args.json).write_text(json.dumps({"threads": threads, "results": results}, indent=1))


if __name__ == "__main__":
    main()
