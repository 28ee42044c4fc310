"""`qkv.kernels.native.use_machine`: one handle on the C extension and the CPUs, passed in, not patched.

Inside `with native.use_machine(route.current_machine().without_c()):` every reader of the extension (the
rulebook, GELU, the softmax step, max |x|, the walks, sgemm, the C backward) must see "not built". The
extension is poisoned there (`native.fused` replaced by an object whose every attribute read fails: a spy
that refuses calls, the one module patch left here), so a route that still reads the module behind the
seam's back fails the test. Expected values: float64 NumPy / torch computations.
"""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
import torch

import qkv
from qkv.activations import add_bias_and_activate, gelu
from qkv.kernels import blocked_attention, magnitude, native, pool, route
from qkv.kernels.call import check_call


class _Poisoned:
    def __getattr__(self, name):
        raise AssertionError(f"qkv.kernels._fused.{name} read inside a use_machine block without the extension")


def _reference(q, k, v, causal=False, mask=None):
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool), s.shape[-1] - s.shape[-2]), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ v


@pytest.fixture
def without_c(monkeypatch):
    """(the live machine, the same without the C extension) with the live extension poisoned."""
    live = route.current_machine()
    monkeypatch.setattr(native, "fused", _Poisoned())   # a spy refusing every use: read only through the seam
    return live, live.without_c()


def test_the_poison_is_reached_outside_the_block(without_c):
    """The check can fail: outside the block, float32 GELU reads the (poisoned) extension."""
    if without_c[0].fused is None:
        pytest.skip("qkv.kernels._fused is not built (tests/test_fused.py fails for that)")
    with pytest.raises(AssertionError, match="_fused.gelu"):
        gelu(np.ones(4, np.float32))


def test_nothing_reads_the_extension_inside_the_block(without_c):
    """NumPy float32 and torch float32 calls on every route family, GELU, max |x|, a layer, threads."""
    _, bare = without_c
    rng = np.random.default_rng(3)
    with native.use_machine(bare) as chosen:
        assert chosen is bare and route.current_machine() is bare and native.extension() is None
        x = (rng.standard_normal((7, 33)) * 3).astype(np.float32)
        exact = np.array([0.5 * t * (1 + __import__("math").erf(t / np.sqrt(2))) for t in x.ravel().astype(float)])
        np.testing.assert_allclose(gelu(x).ravel(), exact, atol=1e-6, rtol=1e-6)
        bias = rng.standard_normal(33).astype(np.float32)
        y = x.copy()
        np.testing.assert_allclose(add_bias_and_activate(y, bias, "gelu").ravel(),
                                   np.asarray([0.5 * t * (1 + __import__("math").erf(t / np.sqrt(2)))
                                               for t in (x + bias).ravel().astype(float)]), atol=1e-6, rtol=1e-6)
        assert magnitude.value_top(x) == np.abs(x).max()
        assert magnitude.value_tops(torch.from_numpy(x)) == (float(np.abs(x).max()),)
        for shape, causal in (((2, 8, 16), False), ((2, 160, 32), True), ((1, 2, 300, 32), True)):
            q, k, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
            np.testing.assert_allclose(qkv.attention(q, k, v, causal=causal), _reference(q, k, v, causal),
                                       atol=2e-5, rtol=1e-4)
            assert route.choose_route(check_call(q, k, v, causal=causal)).name.value in ("plain", "numpy_walk")
        q, k, v = (rng.standard_normal((1, 2, 400, 32)).astype(np.float32) for _ in range(3))
        np.testing.assert_allclose(blocked_attention(q, k, v, causal=True, num_threads=2),   # the pool's threads
                                   _reference(q, k, v, True), atol=2e-5, rtol=1e-4)
        mask = rng.random((160, 160)) < 0.7
        mask[:, 0] = True
        q, k, v = (rng.standard_normal((2, 160, 32)).astype(np.float32) for _ in range(3))
        np.testing.assert_allclose(qkv.attention(q, k, v, mask), _reference(q, k, v, mask=mask), atol=2e-5, rtol=1e-4)
        # torch float32 under autograd (TORCH_FLASH on the live machine): forward and gradient
        q, k, v = (torch.randn(1, 2, 256, 32, dtype=torch.float64) for _ in range(3))
        leaves = [t.float().requires_grad_() for t in (q, k, v)]
        out = qkv.attention(*leaves, causal=True)
        out.square().sum().backward()
        ref_leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        ref = torch.nn.functional.scaled_dot_product_attention(*ref_leaves, is_causal=True)
        ref.square().sum().backward()
        torch.testing.assert_close(out.double(), ref, atol=2e-5, rtol=1e-4)
        for got, want in zip(leaves, ref_leaves):
            torch.testing.assert_close(got.grad.double(), want.grad, atol=1e-4, rtol=1e-3)
        layer = qkv.MultiHeadAttention.random(24, 4, seed=2)
        h = rng.standard_normal((3, 9, 24))
        f32 = {name: getattr(layer, name).astype(np.float32) for name in ("b_q", "b_k", "b_v", "b_o")}
        layer32 = qkv.MultiHeadAttention(*(w.astype(np.float32) for w in (layer.w_q, layer.w_k, layer.w_v,
                                                                            layer.w_o)), 4, **f32)
        np.testing.assert_allclose(layer32(h.astype(np.float32)), layer(h), atol=5e-5, rtol=1e-4)
    assert native.machine_in_use() is None


def test_the_machine_follows_the_work_into_qkvs_threads_only():
    live = route.current_machine()
    bare = live.without_c()
    seen, lock = [], threading.Lock()

    def job():
        with lock:
            seen.append((threading.get_ident(), route.current_machine()))
        threading.Event().wait(0.05)   # keep this thread busy so that the other pool thread takes a job

    with native.use_machine(bare):
        pool.run_all(job, [()] * 4, 2)                 # the caller and a pool thread
        outside = []
        thread = threading.Thread(target=lambda: outside.append(route.current_machine()))   # not qkv's: its own
        thread.start()
        thread.join()
    assert {machine for _, machine in seen} == {bare}
    assert len({ident for ident, _ in seen}) == 2
    assert outside == [live]
    assert route.current_machine() == live


def test_blocks_nest_restore_and_stay_in_their_task():
    live = route.current_machine()
    bare, two = live.without_c(), native.Machine(live.fused, live.sgemm, live.backward, 1)
    with native.use_machine(bare):
        with native.use_machine(two):
            assert route.current_machine() is two
        assert route.current_machine() is bare
        with pytest.raises(RuntimeError):
            with native.use_machine(two):
                raise RuntimeError("left by an exception")
        assert route.current_machine() is bare
    assert route.current_machine() == live

    async def main():
        started, seen = asyncio.Event(), {}

        async def inside():
            with native.use_machine(bare):
                started.set()
                await asyncio.sleep(0.01)
                seen["inside"] = route.current_machine()

        async def beside():
            await started.wait()
            seen["beside"] = route.current_machine()

        await asyncio.gather(inside(), beside())
        return seen

    assert asyncio.run(main()) == {"inside": bare, "beside": live}


@pytest.mark.parametrize("value", [None, "numpy", object()])
def test_use_machine_refuses_what_is_not_a_machine(value):
    with pytest.raises(TypeError, match="use_machine takes a qkv.kernels.native.Machine.*got"):
        with native.use_machine(value):
            pass


def test_sgemm_and_backward_answer_for_the_machine_in_use():
    """A machine with the extension but no sgemm (or no backward): the readers say so inside the block."""
    from qkv.kernels import autograd, blas

    live = route.current_machine()
    if live.fused is None:
        pytest.skip("qkv.kernels._fused is not built (tests/test_fused.py fails for that)")
    no_sgemm = native.Machine(live.fused, False, False, live.cpus)
    with native.use_machine(no_sgemm):
        assert not blas.sgemm_ready() and not autograd.available()
        rng = np.random.default_rng(0)
        q, k, v = (rng.standard_normal((2, 2, 600, 32)).astype(np.float32) for _ in range(3))
        assert route.choose_route(check_call(q, k, v, causal=True)).name.value not in ("flash_many", "flash_rows")
        np.testing.assert_allclose(qkv.attention(q, k, v, causal=True), _reference(q, k, v, True),
                                   atol=2e-5, rtol=1e-4)
    assert blas.sgemm_ready() == live.sgemm and autograd.available() == live.backward


# ------------------------------------------------------------------ the CPUs: Machine.cpus, never the OS
def _with_cpus(n):
    import dataclasses

    return dataclasses.replace(route.current_machine(), cpus=n)


def test_the_cpus_follow_the_machine_in_use_everywhere():
    """"This machine has N CPUs" (N = 5 here, not the OS's count) is what the pool, the kernel's plan, the C
    training route's threads and BERT's batch threads all read inside the block; outside it, the OS's."""
    from qkv.kernels import autograd
    from qkv.models import bert

    os_cpus = native.os_cpus()
    n = os_cpus + 3
    with native.use_machine(_with_cpus(n)):
        assert pool.available_cpus() == n and route.current_machine().cpus == n
        rng = np.random.default_rng(1)
        q, k, v = (rng.standard_normal((1, 8, 1024, 32)).astype(np.float32) for _ in range(3))
        planned = route.choose_route(check_call(q, k, v))
        if planned.name.value in ("flash_many", "flash_rows"):
            assert planned.threads == n, planned
        assert bert._workers(None) == (n if bert._threadpoolctl() is not None else 1)
        if route.current_machine().backward:
            leaves = [torch.from_numpy(a[:, :2, :512]).requires_grad_() for a in (q, k, v)]
            out = qkv.attention(*leaves)
            out.sum().backward()
            kept = [key for plan in list(autograd._PLANS.values()) for key in plan.kept if key[0] == "backward"]
            assert any(key[2] == n for key in kept), kept   # the backward's tasks were cut for n threads
    with native.use_machine(_with_cpus(1)):
        planned = route.choose_route(check_call(q, k, v))
        assert planned.threads == 1
        assert bert._workers(None) == 1
    assert pool.available_cpus() == os_cpus


def test_the_speed_table_is_this_cpu_counts(tmp_path, monkeypatch):
    """A calibration measured with the live CPUs is not read by a block of another count (the rules apply)."""
    import dataclasses

    from qkv.kernels import speed

    monkeypatch.setenv("QKV_CACHE_DIR", str(tmp_path))   # never the developer's calibration
    monkeypatch.setattr(speed, "has_avx512", lambda: False)   # AVX2's rules: SDPA here, unlike the file
    try:
        live_key = speed.machine_key()
        speed.save({"format": speed._FORMAT, "key": live_key, "cases": [
            {"dtype": "bfloat16", "causal": False, "train": True, "t": 256, "winner": speed.C_KERNEL}]})
        assert speed.faster("bfloat16", False, True, 256, 256) == speed.C_KERNEL   # the file
        with native.use_machine(dataclasses.replace(route.current_machine(), cpus=native.os_cpus() + 1)):
            assert speed.machine_key() != live_key
            assert speed.faster("bfloat16", False, True, 256, 256) == speed.SDPA   # the rules (AVX2's)
        assert speed.faster("bfloat16", False, True, 256, 256) == speed.C_KERNEL
    finally:
        monkeypatch.delenv("QKV_CACHE_DIR")
        speed.load(refresh=True)


@pytest.mark.parametrize("cpus", [0, -1, 2.0, True, "2", None])
def test_a_machine_refuses_a_cpu_count_that_is_not_one(cpus):
    live = route.current_machine()
    with pytest.raises(ValueError, match=r"Machine.cpus must be a positive integer .*got"):
        native.Machine(live.fused, live.sgemm, live.backward, cpus)
