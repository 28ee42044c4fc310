"""The core's layers (docs/internals.md, "Core"): read from the source with ast, and checked in a fresh
interpreter. Every import of a core module — at the top or inside a function — names a module below it
in `CORE` (bottom first) or one of `BASE` (below the core); so there is no import loop among attention,
masks and kernels/*, and nothing in the core reaches up into blocks, models, renderers or commands."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
SRC = ROOT / "src"

# Below the core: what every layer may use (the array backend, caches, files, errors, the recording protocol).
BASE = {"qkv._backend", "qkv._keep", "qkv._io", "qkv.errors", "qkv.trace", "qkv._version", "qkv.kernels._fused"}
# The core, bottom first: a module imports only modules before it (and BASE).
CORE = [
    "qkv.kernels.native",      # the one handle on the C extension
    "qkv.kernels.pool",
    "qkv.kernels.blas",
    "qkv.kernels.merge",
    "qkv.kernels.functions",   # calling mask and score functions
    "qkv.masks",               # the catalogue and its analysis
    "qkv.kernels.call",        # the validator (analyses mask functions with qkv.masks)
    "qkv.kernels.magnitude",   # max |x| and the overflow / lse rules
    "qkv.kernels.plain",       # the plain path: nothing of the kernel
    "qkv.kernels.plan",        # RouteName, Route
    "qkv.kernels.blocked",     # the blocked kernel's executor
    "qkv.kernels.autograd",    # the C training route on torch tensors
    "qkv.kernels.speed",       # C kernel or SDPA, by CPU
    "qkv.kernels.route",       # the rulebook
    "qkv.kernels.execute",     # the executor table and the kernel's entry points
    "qkv.kernels",
    "qkv.attention",           # the API
    "qkv.heads",
    "qkv.activations",
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    base = SRC.joinpath(*name.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists() or any(
        base.parent.glob(base.name + ".*.so"))


def imports_of(path: Path, name: str | None = None) -> dict[str, int]:
    """The qkv modules `path` (module `name`) imports, anywhere in it (top level and inside functions),
    with a line each."""
    name = name or _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(anchor + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target != "qkv" and not target.startswith("qkv."):
                continue
            for alias in node.names:   # `from . import native` names a module; `from .call import Call` does not
                sub = f"{target}.{alias.name}"
                found.setdefault(sub if _is_module(sub) else target, node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "qkv" or alias.name.startswith("qkv."):
                    found.setdefault(alias.name, node.lineno)
    found.pop(name, None)
    return found


def _path(module: str) -> Path:
    base = SRC.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def test_every_core_module_is_listed():
    """A new module in kernels/ gets its place in CORE (and in docs/internals.md)."""
    listed = set(CORE)
    for path in (SRC / "qkv" / "kernels").glob("*.py"):
        assert _module_name(path) in listed, f"{_module_name(path)} has no place in the core's layers"


@pytest.mark.parametrize("module", CORE)
def test_a_core_module_imports_only_below_it(module):
    below = set(CORE[: CORE.index(module)]) | BASE
    wrong = {target: line for target, line in imports_of(_path(module)).items() if target not in below}
    assert not wrong, (f"{module} imports {', '.join(f'{t} (line {n})' for t, n in sorted(wrong.items()))}, "
                       "which is not below it in the core's layers")


def test_the_graph_reader_sees_imports_inside_functions(tmp_path):
    """The reader itself: an import inside a function counts (the old loops were all there)."""
    probe = SRC / "qkv" / "kernels" / "execute.py"
    graph = imports_of(probe)
    assert "qkv.kernels.route" in graph and "qkv.kernels.native" in graph and "qkv.kernels.call" in graph
    fake = tmp_path / "probe.py"
    fake.write_text("def f():\n    from ..attention import attention\n    from . import blocked\n", encoding="utf-8")
    assert set(imports_of(fake, "qkv.kernels.probe")) == {"qkv.attention", "qkv.kernels.blocked"}


# A fresh interpreter with the packages qkv and qkv.kernels made empty (their __init__ not run), so that
# importing one module loads exactly what it needs: nothing above it in CORE may come along.
_FRESH = """
import importlib, importlib.util, json, sys, types
for name in ("qkv", "qkv.kernels"):
    spec = importlib.util.find_spec(name)
    package = types.ModuleType(name)
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules[name] = package
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if m.startswith("qkv."))))
"""


@pytest.mark.parametrize("module", [m for m in CORE if m != "qkv.kernels"])
def test_a_core_module_imports_alone_in_a_fresh_interpreter(module):
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-c", _FRESH, module], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    above = set(CORE[CORE.index(module) + 1:]) - {"qkv.kernels"}
    assert not loaded & above, f"importing {module} loaded {sorted(loaded & above)}, above it in the core"
