"""`import qkv` stays light (issue 29, "Speed a learner feels"): array-api-compat (whose NumPy
namespace pulls in numpy.f2py, numpy.testing, numpy.ma, …), torch and matplotlib are imported on
first use, never by a bare `import qkv`. Checked in a fresh interpreter through sys.modules, not by
timing (benchmarks/bench_figures.py measures the time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).parents[1]
HEAVY = ("array_api_compat", "torch", "matplotlib", "scipy")


def _loaded_after(code: str) -> set[str]:
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_bare_import_qkv_loads_no_array_api_compat_torch_or_matplotlib():
    loaded = _loaded_after("import qkv")
    assert "qkv" in loaded and "numpy" in loaded
    assert not loaded & set(HEAVY), f"import qkv loaded {sorted(loaded & set(HEAVY))}"


def test_array_api_compat_is_loaded_on_first_use_and_attention_still_right():
    # the lazy import must still happen where the namespace is needed: one call of qkv.attention
    loaded = _loaded_after("import numpy as np, qkv\n"
                           "q = np.ones((1, 2, 3)); qkv.attention(q, q, q)")
    assert "array_api_compat" in loaded and "torch" not in loaded


def test_lazy_namespace_helpers_agree_with_array_api_compat():
    import array_api_compat

    from qkv import _backend

    x = np.zeros(3)
    assert _backend.is_numpy_array(x) and not _backend.is_torch_array(x)
    assert _backend.array_namespace(x) is array_api_compat.array_namespace(x)
    assert _backend.is_numpy_namespace(_backend.array_namespace(x))
    assert _backend.device(x) == array_api_compat.device(x)
