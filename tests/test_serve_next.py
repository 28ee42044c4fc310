"""`qkv serve`'s /api/next: the library's next token (qkv.models.next_token), passed through as JSON — the numbers
are compared with the library's own result and with softmax(logits / T) written out here in float64."""

from __future__ import annotations

import numpy as np
import pytest
from starlette.testclient import TestClient

from qkv import models, serve

from test_serve import BASE, TEXT, error, tiny_bert


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from model_fixtures import built

    root = tmp_path_factory.mktemp("next")
    loaded = serve.load_models([built("gpt2"), built("llama-gqa"),
                                tiny_bert(root / "tiny-bert")], minilm=False)
    with TestClient(serve.create_app(loaded), base_url=BASE) as test_client:
        yield test_client, loaded


@pytest.mark.parametrize("name", ["gpt2", "llama-gqa"])
def test_next_is_the_librarys(client, name):
    test_client, loaded = client
    body = test_client.get("/api/next", params={"model": name, "text": TEXT, "k": 5, "temperature": 0.7}).json()
    found = models.next_token(loaded[name], TEXT, k=5)
    assert body == dict(found.to_dict(0.7), model=name)
    logits = np.array([item["logit"] for item in body["top"]])
    assert np.all(np.diff(logits) <= 0) and len(logits) == 5
    everything = found.logits / 0.7
    want = np.exp(everything - everything.max())
    want /= want.sum()
    np.testing.assert_allclose(body["at"]["probabilities"], want[found.top], rtol=1e-12, atol=0)
    np.testing.assert_allclose(body["at"]["rest"], 1 - want[found.top].sum(), atol=1e-12)
    for t, row, rest in zip(body["temperatures"], body["probabilities"], body["rest"], strict=True):  # the slider's rows
        at_t = np.exp(found.logits / t - (found.logits / t).max())
        at_t /= at_t.sum()
        np.testing.assert_allclose(row, at_t[found.top], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(rest, 1 - at_t[found.top].sum(), atol=1e-12)
    assert np.shape(body["head_norms"]) == (loaded[name].config.n_layers, loaded[name].config.n_heads)
    np.testing.assert_allclose(np.sum(body["head_shares"], axis=1), 1.0, rtol=1e-12)
    default = test_client.get("/api/next", params={"model": name, "text": TEXT}).json()
    assert len(default["top"]) == 10 and "at" not in default


def test_next_refuses_what_it_cannot_answer(client):
    test_client, _ = client
    for params, field in (({"temperature": "0"}, "temperature"), ({"temperature": "nan"}, "temperature"),
                          ({"temperature": "warm"}, "temperature"), ({"k": "0"}, "k"), ({"k": "51"}, "k"),
                          ({"k": "2.5"}, "k")):
        for lang in ("en", "ko"):
            response = test_client.get("/api/next", params={"model": "gpt2", "text": TEXT, "lang": lang, **params})
            assert response.status_code == 400, (params, response.text)
            assert response.json()["field"] == field, response.json()
            line = error(response)
            assert (any("\uac00" <= c <= "\ud7a3" for c in line)) == (lang == "ko"), line
    response = test_client.get("/api/next", params={"model": "tiny-bert", "text": TEXT, "lang": "ko"})
    assert response.status_code == 400 and response.json()["field"] == "model"
    assert "다음 토큰" in error(response)
    assert any(r["path"].startswith("/api/next") for r in test_client.get("/api").json()["routes"])


@pytest.mark.parametrize("name, layer, head", [("gpt2", 2, 3), ("llama-gqa", 1, 3)])
def test_neuron_is_the_heads_q_and_k_multiplied(client, name, layer, head):
    """/api/neuron: q_i·k_i of the pair, q and k as the head's Trace records them (after RoPE for Llama: what the
    score used); their sum is the recorded score up to float32 rounding."""
    test_client, loaded = client
    trace = loaded[name].trace(TEXT, layer=layer, head=head)
    turned = "q_rotated" in trace
    for query, key in ((5, 2), (3, 3), (0, 0)):
        body = test_client.get("/api/neuron", params={"model": name, "text": TEXT, "layer": layer, "head": head,
                                                      "query": query, "key": key}).json()
        q = trace["q_rotated" if turned else "q_heads"].value[0, query].astype(np.float64)
        k = trace["k_rotated" if turned else "k_heads"].value[0, key].astype(np.float64)
        assert body["rotated"] == turned and body["query_token"] == trace.meta["tokens"][query]
        np.testing.assert_array_equal(body["terms"], q * k)
        assert body["sum"] == pytest.approx(float(np.dot(q, k)), rel=1e-12, abs=1e-15)
        assert body["score"] == float(trace["scores"].value[0, query, key])
        assert body["sum"] == pytest.approx(body["score"], rel=1e-5, abs=1e-6)
        assert body["scaled"] == float(trace["scaled_scores"].value[0, query, key])
    response = test_client.get("/api/neuron", params={"model": name, "text": TEXT, "layer": layer, "head": head,
                                                      "query": 0, "key": 99, "lang": "ko"})
    assert response.status_code == 400 and response.json()["field"] == "key" and "범위" in error(response)


def test_head_inks_reach_aa_on_white(client):
    from browser_support import wcag_contrast

    inks = client[0].get("/api/style").json()["inks"]
    assert len(inks) == 6
    for ink in inks:
        rgb = [int(ink[k:k + 2], 16) for k in (1, 3, 5)]
        assert wcag_contrast(rgb, (255, 255, 255)) >= 4.5, ink
