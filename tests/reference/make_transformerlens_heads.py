"""Writes transformerlens_heads.npz: TransformerLens's own head-detector scores, for tests/test_analysis.py.

Run where TransformerLens is installed (4.3.0 was used; it is not a qkv dependency):

    python tests/reference/make_transformerlens_heads.py

The attention weights come from a tiny random GPT-2 (transformers, 2 layers × 4 heads, weights
drawn wide so the heads attend sharply) reading BOS + a random sequence repeated twice, and a
sequence with repeats of its own. `transformer_lens.head_detector.detect_head` scores them through
a stand-in model whose `run_with_cache` returns those weights as its "pattern" cache (TransformerLens
4 opens models only through its bridge to named checkpoints; the scoring code is what is compared).
For each sequence the file keeps the ids, the weights (L, H, T, T) and detect_head's result for its
three head names × (mul; mul excluding BOS; mul excluding the current token; abs; abs excluding
both). Then `compute_head_attention_similarity_score` ("mul") on bidirectional random weights
(rows over all T keys, as BERT's are), where `qkv heads` runs too.
"""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
from transformer_lens.head_detector import (HEAD_NAMES, compute_head_attention_similarity_score, detect_head,
                                            get_duplicate_token_head_detection_pattern,
                                            get_induction_head_detection_pattern,
                                            get_previous_token_head_detection_pattern)
from transformers import GPT2Config, GPT2LMHeadModel

OPTIONS = {"mul": {}, "mul_bos": {"exclude_bos": True}, "mul_current": {"exclude_current_token": True},
           "abs": {"error_measure": "abs"},
           "abs_both": {"error_measure": "abs", "exclude_bos": True, "exclude_current_token": True}}

torch.manual_seed(0)
gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=4, n_embd=32, vocab_size=40, n_positions=64,
                                  initializer_range=0.6, attn_implementation="eager")).eval()


class StandIn:
    """What detect_head reads of a model: cfg, to_tokens, run_with_cache(...)[("pattern", l, "attn")]."""

    def __init__(self, ids):
        self.tokens = torch.as_tensor(ids)[None]
        with torch.no_grad():
            attentions = gpt2(self.tokens, output_attentions=True).attentions
        self.weights = torch.stack([a[0] for a in attentions]).double()           # (L, H, T, T)
        self.cfg = SimpleNamespace(n_layers=2, n_heads=4, n_ctx=64, device="cpu", dtype=torch.float64)

    def to_tokens(self, seq):
        return self.tokens

    def run_with_cache(self, tokens, remove_batch_dim=True):
        weights = self.weights.clone()                       # detect_head's exclusions write into the cache
        return None, {("pattern", l, "attn"): weights[l] for l in range(weights.shape[0])}


rng = np.random.default_rng(0)
first = rng.choice(np.arange(1, 40), size=9, replace=False)
sequences = {"repeated": np.concatenate([[0], first, first]),
             "mixed": np.concatenate([[0], rng.integers(1, 8, size=16)])}
out = {"head_names": np.array(HEAD_NAMES), "options": np.array(list(OPTIONS))}
for label, ids in sequences.items():
    model = StandIn(ids)
    out[f"{label}/ids"] = ids
    out[f"{label}/weights"] = model.weights.numpy()
    for name in HEAD_NAMES:
        for option, kwargs in OPTIONS.items():
            out[f"{label}/{name}/{option}"] = detect_head(model, "unused", name, **kwargs).double().numpy()

# bidirectional weights, TransformerLens's scoring function on them (mul, as `qkv heads` runs on BERT)
ids = sequences["repeated"]
logits = rng.standard_normal((2, 3, ids.size, ids.size)) * 3
weights = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
out["bidirectional/ids"] = ids
out["bidirectional/weights"] = weights
makers = {"previous_token_head": get_previous_token_head_detection_pattern,
          "duplicate_token_head": get_duplicate_token_head_detection_pattern,
          "induction_head": get_induction_head_detection_pattern}
for name, make in makers.items():
    pattern = make(torch.as_tensor(ids)[None]).double()
    out[f"bidirectional/{name}/mul"] = np.array(
        [[compute_head_attention_similarity_score(torch.as_tensor(weights[l, h]).clone(), pattern,
                                                  exclude_bos=False, exclude_current_token=False, error_measure="mul")
          for h in range(weights.shape[1])] for l in range(weights.shape[0])])
target = Path(__file__).with_name("transformerlens_heads.npz")
np.savez_compressed(target, **out)
print("wrote", target, len(out), "arrays")
