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


def _loaded_after(code: str, *, whole_names: bool = False) -> set[str]:
    name = "m" if whole_names else "m.split('.')[0]"
    probe = code + f"\nimport json, sys\nprint(json.dumps(sorted({{{name} for m in sys.modules}})))"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_bare_import_qkv_loads_no_array_api_compat_torch_or_matplotlib():
    loaded = _loaded_after("import qkv")
    assert "qkv" in loaded and "numpy" in loaded
    assert not loaded & set(HEAVY), f"import qkv loaded {sorted(loaded & set(HEAVY))}"


def test_numpy_attention_and_a_worked_example_never_load_array_api_compats_numpy_namespace():
    # NumPy ≥ 2.1 is its own array-API namespace (qkv._backend.NUMPY_IS_STANDARD); array-api-compat's wrapper
    # of it cost more to import than NumPy itself (numpy.f2py, numpy.testing, … cloned name by name)
    from qkv import _backend

    loaded = _loaded_after("import numpy as np, qkv, qkv.examples\n"
                           "q = np.ones((1, 2, 3)); out = qkv.attention(q, q, q)\n"
                           "assert np.allclose(out, 1.0)\n"
                           "qkv.examples.run('self-attention')", whole_names=True)
    assert "torch" not in loaded
    assert ("array_api_compat.numpy" in loaded) is (not _backend.NUMPY_IS_STANDARD), sorted(
        m for m in loaded if m.startswith("array_api_compat"))
    assert not {"numpy.f2py", "numpy.testing"} & loaded


def test_lazy_namespace_helpers_agree_with_array_api_compat():
    import array_api_compat

    from qkv import _backend

    x = np.zeros(3)
    assert _backend.is_numpy_array(x) and not _backend.is_torch_array(x)
    # NumPy's own namespace where NumPy implements the standard (tests/test_numpy_namespace.py), else the wrapper
    assert _backend.array_namespace(x) is (np if _backend.NUMPY_IS_STANDARD else array_api_compat.array_namespace(x))
    assert _backend.is_numpy_namespace(_backend.array_namespace(x))
    assert _backend.device(x) == array_api_compat.device(x)


def test_a_worked_example_on_the_command_line_loads_no_model_code_and_no_package_metadata():
    # every `qkv` command builds every sub-command's parser; `inspect`'s help names the model families and
    # `doctor` reads torch's version: neither may load the BERT encoder, safetensors, tokenizers or
    # importlib.metadata for a command that needs none of them (issue 29, speed a learner feels)
    loaded = _loaded_after("import contextlib, io\nfrom qkv.cli import main\n"
                           "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
                           "    code = main(['example', 'self-attention'])\n"
                           "assert code == 0 and 'love' in out.getvalue()", whole_names=True)
    heavy = {"qkv.models.bert", "qkv.models.files", "safetensors", "tokenizers", "importlib.metadata", "torch"}
    assert not heavy & loaded, sorted(heavy & loaded)
    assert "qkv.models" in loaded          # the package itself: the families' names for the help


def test_the_models_package_still_answers_every_name_it_lists():
    import qkv.models as models

    for name in models.__all__:
        assert getattr(models, name) is not None, name
    assert set(models.__all__) <= set(dir(models))


def test_the_models_package_answers_its_submodules_as_attributes():
    # Before e0c2b64 the package imported its submodules itself, so ``qkv.models.files`` was an attribute after a
    # bare ``import qkv.models``; a program (and a test fixture) that used it so failed once they became lazy.
    # A fresh interpreter: this process has imported most of them already.
    code = ("import qkv.models as m\n"
            "assert m.files.PACKAGED and m.bert.BertEncoder is m.BertEncoder and m.checkpoint.read_config\n"
            "try:\n    m.no_such_module\nexcept AttributeError as e:\n    assert 'no_such_module' in str(e)\n"
            "else:\n    raise SystemExit('no AttributeError')\n"
            "try:\n    m._private\nexcept AttributeError:\n    pass\n")
    loaded = _loaded_after(code, whole_names=True)
    assert {"qkv.models.files", "qkv.models.bert", "qkv.models.checkpoint"} <= loaded
