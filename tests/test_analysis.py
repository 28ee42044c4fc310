"""qkv.analysis: rollout and head summaries against explicit loops, hand-made heads and scores
TransformerLens 4.3.0 computed (tests/reference/transformerlens_heads.npz, written by the script
beside it)."""

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from qkv.analysis import HEAD_NAMES, detect_head, detection_pattern, head_scores, repeated_random_ids, rollout

REFERENCE = Path(__file__).with_name("reference") / "transformerlens_heads.npz"


def random_weights(layers, heads, size, seed=0, causal=False):
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((layers, heads, size, size)) * 2
    if causal:
        scores = np.where(np.tril(np.ones((size, size), bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True)


def test_rollout_matches_an_explicit_loop():
    weights = random_weights(3, 4, 7, seed=1)
    got = rollout(weights)
    size = 7
    joint = np.eye(size)
    for layer in range(3):
        fused = np.zeros((size, size))
        for head in range(4):
            fused += weights[layer, head] / 4
        aug = [[(fused[i][j] + (i == j)) / 2 for j in range(size)] for i in range(size)]   # rows already sum to 1
        joint = np.array([[sum(aug[i][m] * joint[m][j] for m in range(size)) for j in range(size)]
                          for i in range(size)])
        np.testing.assert_allclose(got[layer], joint, rtol=0, atol=1e-14)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-14)


def test_rollout_without_residual_is_the_plain_product_and_identity_attention_stays_identity():
    weights = random_weights(2, 2, 5, seed=2)
    plain = rollout(weights, residual=False)
    np.testing.assert_allclose(plain[1], weights[1].mean(0) @ weights[0].mean(0), atol=1e-15)
    eye = np.broadcast_to(np.eye(4), (3, 2, 4, 4))
    np.testing.assert_array_equal(rollout(eye)[-1], np.eye(4))
    np.testing.assert_allclose(rollout(weights, heads="max")[0].sum(-1), 1.0, atol=1e-14)


def test_entropy_first_previous_and_self_on_hand_made_heads():
    size = 6
    previous = np.eye(size, k=-1)
    previous[0, 0] = 1.0                                             # the first row has only itself
    uniform = np.full((size, size), 1 / size)
    sink = np.zeros((size, size))
    sink[:, 0] = 1.0
    weights = np.stack([previous, uniform, sink, np.eye(size)])[None]   # (1, 4, T, T)
    scores = head_scores(weights)
    np.testing.assert_allclose(scores["entropy"][0], [0.0, math.log(size), 0.0, 0.0], atol=1e-15)
    # TransformerLens's: weight on key i − 1 ÷ the head's whole attention (T rows); qkv's: ÷ the T − 1 rows i ≥ 1
    np.testing.assert_allclose(scores["previous_token"][0], [(size - 1) / size, (size - 1) / size**2, 1 / size, 0.0],
                               atol=1e-15)
    np.testing.assert_allclose(scores["previous_token_rows"][0], [1.0, 1 / size, 1 / (size - 1), 0.0], atol=1e-15)
    np.testing.assert_allclose(scores["first_token"][0], [2 / size, 1 / size, 1.0, 1 / size], atol=1e-15)
    np.testing.assert_allclose(scores["self"][0], [1 / size, 1 / size, 1 / size, 1.0], atol=1e-15)


def test_fully_masked_rows_are_left_out_not_counted_as_zero():
    weights = np.eye(4)[None, None].copy()
    weights[0, 0, 3] = 0.0                                           # row 3 saw no key
    scores = head_scores(weights)
    assert scores["self"][0, 0] == 1.0
    assert scores["entropy"][0, 0] == 0.0


def tl_patterns(ids):
    """TransformerLens's construction (torch ops: repeat/equal, fill_diagonal, roll, tril), written independently."""
    tokens = torch.as_tensor(ids)[None]
    grid = tokens.repeat(tokens.shape[-1], 1).numpy()
    eq = np.equal(grid, grid.T).astype(int)
    np.fill_diagonal(eq, 0)
    duplicate = torch.tril(torch.as_tensor(eq).float())
    shifted = torch.roll(duplicate, shifts=1, dims=1)
    induction = torch.tril(torch.cat((torch.zeros(duplicate.shape[0], 1), shifted[:, 1:]), dim=1))
    previous = torch.zeros(len(ids), len(ids))
    previous[1:, :-1] = torch.eye(len(ids) - 1)
    return {"previous_token": previous.numpy(), "duplicate_token": duplicate.numpy(), "induction": induction.numpy()}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_detection_patterns_equal_transformerlens_construction(seed):
    ids = np.random.default_rng(seed).integers(0, 5, size=11)
    reference = tl_patterns(ids)
    for name, expected in reference.items():
        np.testing.assert_array_equal(detection_pattern(name, ids), expected)


def test_duplicate_and_induction_scores_of_ideal_heads_on_a_repeated_sequence():
    ids = repeated_random_ids(5, 50, seed=3, prefix=[0], avoid=[0])
    assert ids.shape == (11,) and ids[0] == 0 and (ids[1:6] == ids[6:]).all() and len(set(ids[1:6])) == 5
    size = ids.shape[0]
    induction = np.zeros((size, size))
    duplicate = np.zeros((size, size))
    for i in range(size):
        earlier = [j for j in range(1, i + 1) if ids[j - 1] == ids[i]]
        if earlier:
            induction[i, earlier[0]] = 1.0
        else:
            induction[i, 0] = 1.0                                    # nothing to copy: rest on BOS
        same = [j for j in range(i) if ids[j] == ids[i]]
        duplicate[i, same[0] if same else 0] = 1.0
    scores = head_scores(np.stack([induction, duplicate])[None], ids)
    # 5 of 11 rows (the second copy) have a target: the rest rest on BOS, outside the pattern.
    np.testing.assert_allclose(scores["induction"][0], [5 / 11, 0.0], atol=1e-15)
    np.testing.assert_allclose(scores["duplicate_token"][0], [0.0, 5 / 11], atol=1e-15)


def test_bad_inputs_name_the_problem():
    with pytest.raises(ValueError, match=r"\(L, H, T, T\)"):
        head_scores(np.ones((2, 3, 3)))
    with pytest.raises(ValueError, match="finite"):
        rollout(np.full((1, 1, 2, 2), np.nan))
    with pytest.raises(ValueError, match="heads must be"):
        rollout(random_weights(1, 1, 2), heads="median")
    with pytest.raises(ValueError, match="ids must be"):
        head_scores(random_weights(1, 1, 3), ids=[1, 2])
    with pytest.raises(ValueError, match="distinct ids"):
        repeated_random_ids(10, 5)
    with pytest.raises(ValueError, match="unknown pattern"):
        detection_pattern("copy", [1, 2])


# --------------------------------------------------------------------------- TransformerLens's detect_head
OPTIONS = {"mul": {}, "mul_bos": {"exclude_bos": True}, "mul_current": {"exclude_current_token": True},
           "abs": {"error_measure": "abs"},
           "abs_both": {"error_measure": "abs", "exclude_bos": True, "exclude_current_token": True}}


@pytest.mark.parametrize("label", ["repeated", "mixed"])
def test_detect_head_equals_transformerlens(label):
    """detect_head gives TransformerLens 4.3.0's detect_head numbers on the same causal weights, for its
    three head names and every option (abs is rounded to 3 decimals by both); head_scores' previous_token,
    duplicate_token and induction are its default ("mul") scores."""
    reference = np.load(REFERENCE)
    assert list(reference["head_names"]) == list(HEAD_NAMES)
    weights, ids = reference[f"{label}/weights"], reference[f"{label}/ids"]
    for name in HEAD_NAMES:
        for option, kwargs in OPTIONS.items():
            expected = reference[f"{label}/{name}/{option}"]
            np.testing.assert_allclose(detect_head(weights, name, ids, **kwargs), expected, atol=1e-9,
                                       err_msg=f"{name} {option}")
    scores = head_scores(weights, ids)
    for key, name in zip(("previous_token", "duplicate_token", "induction"), HEAD_NAMES):
        np.testing.assert_allclose(scores[key], reference[f"{label}/{name}/mul"], atol=1e-9)
    # qkv's own previous-token score is TransformerLens's × T / (T − 1) on softmax rows (every row sums to 1)
    size = ids.size
    np.testing.assert_allclose(scores["previous_token_rows"], scores["previous_token"] * size / (size - 1), atol=1e-12)


def test_bidirectional_heads_score_as_transformerlens_scores_them():
    """Rows over all T keys (BERT, the default `qkv heads` model): the "mul" scores TransformerLens's
    compute_head_attention_similarity_score gives on the same weights."""
    reference = np.load(REFERENCE)
    weights, ids = reference["bidirectional/weights"], reference["bidirectional/ids"]
    scores = head_scores(weights, ids)
    for key, name in zip(("previous_token", "duplicate_token", "induction"), HEAD_NAMES):
        np.testing.assert_allclose(scores[key], reference[f"bidirectional/{name}/mul"], atol=1e-9)


def test_detect_head_takes_a_pattern_array_and_refuses_what_transformerlens_refuses():
    weights = random_weights(1, 2, 5, causal=True)
    ids = np.array([3, 1, 3, 1, 2])
    custom = np.tril(np.ones((5, 5)))                         # every causal key: the whole attention
    np.testing.assert_allclose(detect_head(weights, custom), 1.0, atol=1e-12)
    np.testing.assert_allclose(detect_head(weights, detection_pattern("induction", ids)),
                               detect_head(weights, "induction_head", ids), atol=0)
    with pytest.raises(ValueError, match="needs causal heads"):
        detect_head(random_weights(1, 1, 5), "previous_token_head", error_measure="abs")
    with pytest.raises(ValueError, match="lower triangular"):
        detect_head(weights, np.ones((5, 5)))
    with pytest.raises(ValueError, match="error_measure"):
        detect_head(weights, "previous_token_head", error_measure="max")
    with pytest.raises(ValueError, match="unknown pattern"):
        detect_head(weights, "copy_head", ids)
    with pytest.raises(ValueError, match="needs the token ids"):
        detect_head(weights, "induction_head")


def test_score_terms_and_products_pair_each_query_head_with_its_shared_key_head():
    """score_terms / score_products (the neuron view) on a grouped-query layer, 4 query heads over 2 key/value
    heads: each pair's products are q of head h times k of key/value head h // 2 — written out here from the
    recorded q_heads (H, T, Dk) and k_heads (G, T, Dk) — and their sum is the layer's recorded score (float64)."""
    import qkv
    from qkv.analysis import score_products, score_terms

    mha = qkv.MultiHeadAttention.random(12, n_heads=4, n_kv_heads=2, seed=3)
    trace = qkv.Trace("gqa", {"tokens": list("abcde"), "query": 1})
    mha(np.random.default_rng(5).standard_normal((5, 12)), record=trace)
    q, k, scores = (np.asarray(trace[name].value, dtype=np.float64) for name in ("q_heads", "k_heads", "scores"))
    assert q.shape[0] == 4 and k.shape[0] == 2
    products = score_products(trace)
    for h in range(4):
        for i in range(5):
            for j in range(5):
                found = score_terms(trace, query=i, key=j, head=h)
                want = q[h, i] * k[h // 2, j]
                np.testing.assert_array_equal(found["terms"], want)
                np.testing.assert_array_equal(products["terms"][h, i, j], want)
                assert found["kv_head"] == h // 2
                assert found["sum"] == pytest.approx(scores[h, i, j], rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(products["sums"], scores, rtol=1e-12, atol=1e-12)
    with pytest.raises(IndexError, match="head=4 is out of range"):
        score_terms(trace, query=0, key=0, head=4)
