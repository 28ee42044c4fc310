"""The calls tests/test_rulebook.py routes, and what it reads of each route — shared with the script that wrote
tests/reference/routes_before_rulebook.json from the commit before the one rulebook (56297f1, where eager calls
were routed by `choose_route` and traced ones by `_static_torch_plan`):

    git worktree add /tmp/old 56297f1 && (cd /tmp/old && python setup.py build_ext --inplace -q)
    QKV_CACHE_DIR=$(mktemp -d) PYTHONPATH=/tmp/old/src:tests python -m route_cases tests/reference/routes_before_rulebook.json

Only public entry points both commits have are used: `check_call`, `route.choose_call_route(…, machine=)`,
`route.current_machine`, and for traced calls `torch.compile` of `qkv.attention._attention` with a backend that
lists the qkv ops in the graph (TORCH_FLASH: `qkv::flash_attention` once per key range; its masked form for a
mask array; TORCH_SDPA: `qkv::checked_sdpa`; PLAIN: no qkv op). The machine is fixed to 2 CPUs (threads
and splits are planned from it); the vector width, which differs between CPUs, is not read."""

from __future__ import annotations

import dataclasses
import itertools
import json
import sys

import numpy as np

B, H, D = 2, 2, 8
WINDOW = 16


def _window_lambda(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx <= WINDOW)


def _window_literal(b, h, q_idx, kv_idx):   # reads nothing but its arguments: analysed, traced too
    return (q_idx >= kv_idx) & (q_idx - kv_idx <= 16)


def _reads_global(b, h, q_idx, kv_idx):   # reads WINDOW, a module global, each call
    return (q_idx >= kv_idx) & (q_idx - kv_idx <= WINDOW)


def _masks():
    from qkv import masks

    return masks


# name -> f(tq, tk, xp) -> keyword arguments of the call (xp: numpy or torch; arrays made deterministically)
def _mask_array(kind, tq, tk, lib):
    rng = np.random.default_rng(tq * 1000 + tk)
    if kind == "ranges":
        array = np.arange(tk)[None, :] <= np.arange(tq)[:, None] + (tk - tq)        # causal as an array
    elif kind == "padding":
        array = np.broadcast_to(np.arange(tk)[None, None, None, :] < np.array([tk, tk // 2])[:, None, None, None],
                                (B, 1, tq, tk))
    else:
        array = rng.random((tq, tk)) < 0.7
    return _as(np.ascontiguousarray(array), lib)


def _as(array, lib):
    if lib == "numpy":
        return array
    import torch

    return torch.from_numpy(np.array(array))


MASKS = {
    "none": lambda tq, tk, lib: {},
    "causal": lambda tq, tk, lib: dict(causal=True),
    "window": lambda tq, tk, lib: dict(mask_mod=_masks().sliding_window(WINDOW)),
    "window causal": lambda tq, tk, lib: dict(mask_mod=_masks().sliding_window(WINDOW), causal=True),
    "window lambda": lambda tq, tk, lib: dict(mask_mod=_window_lambda),
    "window literal": lambda tq, tk, lib: dict(mask_mod=_window_literal),
    "global lambda": lambda tq, tk, lib: dict(mask_mod=_reads_global),
    "documents": lambda tq, tk, lib: dict(mask_mod=_masks().document(np.repeat(np.arange(4), -(-tk // 4))[:tk])),
    "batch documents": lambda tq, tk, lib: dict(mask_mod=_masks().document(np.stack(
        [np.repeat(np.arange(4), -(-tk // 4))[:tk], np.repeat(np.arange(2), -(-tk // 2))[:tk]]))),
    "sinks | window": lambda tq, tk, lib: dict(mask_mod=_masks().sinks(2) | _masks().sliding_window(WINDOW)),
    "prefix": lambda tq, tk, lib: dict(mask_mod=_masks().prefix_lm(5)),
    "mask ranges": lambda tq, tk, lib: dict(mask=_mask_array("ranges", tq, tk, lib)),
    "mask padding": lambda tq, tk, lib: dict(mask=_mask_array("padding", tq, tk, lib)),
    "mask random": lambda tq, tk, lib: dict(mask=_mask_array("random", tq, tk, lib)),
    "mask + window": lambda tq, tk, lib: dict(mask=_mask_array("padding", tq, tk, lib),
                                              mask_mod=_masks().sliding_window(WINDOW)),
    "bias": lambda tq, tk, lib: dict(bias=_as(np.random.default_rng(3).standard_normal((tq, tk)), lib)),
    "soft-cap": lambda tq, tk, lib: dict(score_mod=_masks().soft_cap(20.0)),
    "alibi causal": lambda tq, tk, lib: dict(score_mod=_masks().alibi(_masks().alibi_slopes(H)), causal=True),
    "own score": lambda tq, tk, lib: dict(score_mod=lambda s, b, h, q_idx, kv_idx: s * 0.5),
}
SIZES = [(8, 8), (100, 100), (200, 200), (1, 300), (300, 600), (256, 256)]
VALUES = ["normal", "inf value", "nan key", "huge", "large"]


def arrays(lib, dtype, tq, tk, values, grad=False, wide=False):
    """q, k, v (B, H, T, D) — (1, 8, T, 64) when wide — of one kind of values."""
    lead, d = ((1, 8), 64) if wide else ((B, H), D)
    rng = np.random.default_rng(tq + 7 * tk)
    q, k, v = (rng.standard_normal(lead + (t, d)) for t in (tq, tk, tk))
    if values == "inf value":
        v[..., tk - 1, 0] = np.inf
    elif values == "nan key":
        k[..., tk - 1, 0] = np.nan
    elif values == "huge":      # |q|·|k|·Dk past a quarter of float32's range
        q, k = q * 1e19, k * 1e19
    elif values == "large":     # scores whose stored lse loses float32's gradients (|s|·eps > 2^-13)
        q, k = q * 40, k * 40
    if lib == "numpy":
        return tuple(x.astype(dtype) for x in (q, k, v))
    import torch

    return tuple(torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=grad) for x in (q, k, v))


def eager_cases():
    """(library, dtype, size, mask, values, want, route, grad, wide), for eager calls."""
    cases = []
    for mask, (tq, tk), dtype, want in itertools.product(MASKS, SIZES, ("float32", "float64"), ("out", "lse", "weights")):
        cases.append(("numpy", dtype, (tq, tk), mask, "normal", want, None, False, False))
    for mask, dtype, want, grad in itertools.product(MASKS, ("float32", "float64", "bfloat16"), ("out", "lse"),
                                                     (False, True)):
        for tq, tk in SIZES:
            if dtype == "bfloat16" and (tq, tk) != (256, 256):
                continue
            cases.append(("torch", dtype, (tq, tk), mask, "normal", want, None, grad, False))
    for mask, values in itertools.product(("none", "causal", "window", "mask ranges", "mask padding", "sinks | window",
                                           "bias"), VALUES[1:]):
        for size in ((100, 100), (200, 200)):
            cases.append(("numpy", "float32", size, mask, values, "out", None, False, False))
            cases.append(("torch", "float32", size, mask, values, "out", None, True, False))
    for mask, route in itertools.product(("none", "causal", "window", "sinks | window", "mask ranges", "bias",
                                          "soft-cap", "own score"),
                                         ("plain", "plain_c_softmax", "flash_many", "flash_rows", "py_walk",
                                          "numpy_walk", "torch_flash", "torch_sdpa")):
        for lib in ("numpy", "torch"):
            cases.append((lib, "float32", (200, 200), mask, "normal", "out", route, False, False))
    for mask, dtype, want in itertools.product(("none", "causal", "window", "sinks | window"), ("float32", "float64"),
                                               ("out", "partial")):
        cases.append(("numpy", dtype, (256, 256), mask, "normal", want, None, False, True))
        cases.append(("numpy", dtype, (256, 256), mask, "normal", want, "flash_rows", False, True))
    for mask in ("none", "causal"):   # a mid-sized call the kernel takes wholly in C (_whole_in_c)
        cases.append(("numpy", "float32", (100, 100), mask, "normal", "out", None, False, True))
    return cases


def traced_cases():
    """(dtype, mask, want, route, grad, values) for calls traced by torch.compile."""
    cases = [("float32", mask, "out", None, False, "normal") for mask in MASKS]
    cases += [("float32", mask, "out", None, True, "normal") for mask in ("none", "sinks | window", "mask ranges")]
    cases += [("bfloat16", "none", "out", None, grad, "normal") for grad in (False, True)]
    cases += [("float32", mask, "lse", None, False, "normal") for mask in ("none", "sinks | window")]
    cases += [("float32", mask, "out", route, False, "normal") for mask, route in
              (("none", "plain"), ("window", "torch_flash"), ("none", "torch_sdpa"), ("mask random", "torch_flash"))]
    cases += [("float64", "none", "out", None, False, "normal"), ("float16", "causal", "out", None, False, "normal"),
              ("float16", "none", "out", None, True, "normal"), ("float32", "window literal", "out", None, True, "normal"),
              ("float32", "mask padding", "out", None, True, "normal"), ("float32", "bias", "out", "torch_sdpa", False,
                                                                         "normal")]
    return cases


def machine():
    from qkv.kernels import route

    return dataclasses.replace(route.current_machine(), cpus=2)


def _tolist(rows):
    return [[np.asarray(r).tolist() for r in per_batch] for per_batch in rows]


def describe_eager(case) -> dict:
    """What the rulebook chose for one eager call: the route's name and plan (or the error it raised)."""
    from qkv.kernels import route
    from qkv.kernels.call import check_call

    lib, dtype, (tq, tk), mask, values, want, pinned, grad, wide = case
    q, k, v = arrays(lib, dtype, tq, tk, values, grad, wide)
    options = MASKS[mask](tq, tk, lib)
    try:
        call = check_call(q, k, v, options.pop("mask", None), **options)
        taken, chosen = route.choose_call_route(call, want=want, route=pinned, machine=machine())
    except (ValueError, TypeError) as exc:
        return {"error": type(exc).__name__}
    found = {"name": chosen.name.value, "ranges_call": taken.mask is None and call.mask is not None,
             "key_rows": _tolist(chosen.key_rows)}
    if chosen.tasks:
        found.update(block_q=chosen.block_q, block_k=chosen.block_k, threads=chosen.threads, ranges=chosen.ranges,
                     big=bool(chosen.big), band=None if chosen.band is None else list(chosen.band),
                     tasks=[[list(t[0]), t[1], t[2], np.asarray(t[3]).tolist(), int(t[4])] for t in chosen.tasks],
                     score=chosen.score is not None, v_top_finite=bool(np.isfinite(chosen.v_top)))
    return found


def describe_traced(case) -> dict:
    """The qkv ops torch.compile's graph of one call holds (the traced route), or the error it raised."""
    import torch

    from qkv.attention import _attention

    dtype, mask, want, pinned, grad, values = case
    tq = tk = 256
    q, k, v = arrays("torch", dtype, tq, tk, values, grad)
    ops = []

    def backend(gm, example_inputs):
        ops.extend(str(node.target) for node in gm.graph.nodes
                   if node.op == "call_function" and str(node.target).startswith("qkv."))
        return gm.forward

    options = MASKS[mask](tq, tk, "torch")   # (made outside the trace: arrays are the graph's inputs)
    given, bias = options.pop("mask", None), options.pop("bias", None)

    def fn(q, k, v, given, bias):
        return _attention(q, k, v, given, bias=bias, route=pinned, return_lse=want == "lse", **options)

    torch._dynamo.reset()
    try:
        torch.compile(fn, fullgraph=True, backend=backend)(q, k, v, given, bias)
    except Exception as exc:   # noqa: BLE001 (what a trace refuses is part of what is compared)
        return {"error": type(exc).__name__}
    return {"ops": sorted(ops)}


def traced_plan(case):
    """The rulebook asked directly what one traced call takes, without a trace: `check_call` and
    `route.traced_torch_route` as `qkv.attention` runs them when torch.compile traces it, with
    torch.compiler.is_compiling() answering True as it does while Dynamo compiles (Dynamo holds
    `torch.compiler._compile_session_context` for the whole compilation). A `Route`, or the error raised."""
    import torch

    from qkv.kernels import route
    from qkv.kernels.call import check_call

    dtype, mask, want, pinned, grad, values = case
    q, k, v = arrays("torch", dtype, 256, 256, values, grad)
    options = MASKS[mask](256, 256, "torch")
    given, bias = options.pop("mask", None), options.pop("bias", None)
    with torch.compiler._compile_session_context():
        try:
            call = check_call(q, k, v, given, bias=bias, **options)
            return route.traced_torch_route(call, want=want, route=pinned), given is not None
        except (ValueError, TypeError) as exc:
            return exc, given is not None


def describe_traced_plan(case) -> dict:
    """`describe_traced`'s answer for one call read off the rulebook's traced route (`traced_plan`) instead of a
    graph: the qkv ops that route puts in the graph (kernels/execute.py): TORCH_FLASH one `qkv::flash_attention`
    per key range of each batch (Route.key_rows), or `qkv::flash_attention_mask` for a mask array; TORCH_SDPA
    `qkv::checked_sdpa`; PLAIN none. tests/test_rulebook.py traces one call of each answer to check this reading."""
    from qkv.kernels import route

    chosen, masked = traced_plan(case)
    if isinstance(chosen, Exception):
        return {"error": type(chosen).__name__}
    if chosen.name == route.TORCH_FLASH:
        if masked:
            return {"ops": ["qkv.flash_attention_mask"]}
        return {"ops": ["qkv.flash_attention"] * sum(len(per_batch) for per_batch in chosen.key_rows)}
    if chosen.name == route.TORCH_SDPA:
        return {"ops": ["qkv.checked_sdpa"]}
    if chosen.name == route.PLAIN:
        return {"ops": []}
    return {"route": chosen.name.value}   # no traced torch call takes another route


def describe_all() -> dict:
    return {"eager": [describe_eager(case) for case in eager_cases()],
            "traced": [describe_traced(case) for case in traced_cases()]}


if __name__ == "__main__":
    with open(sys.argv[1], "w") as f:
        json.dump(describe_all(), f, separators=(",", ":"))
        f.write("\n")
