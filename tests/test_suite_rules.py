"""Rules the test suite keeps about itself (tests/conftest.py says why each exists)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent
INDUCTOR_FILE = "test_flex_compile.py"


def _inductor_compiles(tree: ast.AST) -> list[int]:
    """Lines of `torch.compile(...)` calls with no backend or backend="inductor", and of bare `@torch.compile`."""
    def is_torch_compile(node):
        return (isinstance(node, ast.Attribute) and node.attr == "compile" and isinstance(node.value, ast.Name)
                and node.value.id == "torch")

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and is_torch_compile(node.func):
            backend = next((kw.value for kw in node.keywords if kw.arg == "backend"), None)
            if backend is None or (isinstance(backend, ast.Constant) and backend.value == "inductor"):
                lines.append(node.lineno)
        decorators = getattr(node, "decorator_list", [])
        lines += [d.lineno for d in decorators if is_torch_compile(d)]
    return sorted(lines)


def test_every_inductor_compile_is_in_one_file():
    """Inductor's first use in a process costs ~6–10 CPU-s beyond Dynamo's (its modules, the precompiled header's
    preprocessing, the first C++ builds); `make test` runs each file in one xdist worker (--dist loadfile), so
    the tests that compile with inductor share one file and only that worker pays it."""
    found = {}
    for path in sorted(TESTS.glob("*.py")):
        lines = _inductor_compiles(ast.parse(path.read_text(encoding="utf-8")))
        if lines and path.name != INDUCTOR_FILE:
            found[path.name] = lines
    assert not found, (f"torch.compile with inductor (no backend=, or backend='inductor') outside "
                       f"tests/{INDUCTOR_FILE}: {found}; move the test there, or give it backend='aot_eager' "
                       f"if inductor is not what it tests")
    assert _inductor_compiles(ast.parse((TESTS / INDUCTOR_FILE).read_text(encoding="utf-8")))


def test_the_rule_sees_each_way_of_asking_for_inductor():
    source = ("torch.compile(f)\ntorch.compile(f, fullgraph=True, backend='inductor')\n"
              "torch.compile(f, backend='aot_eager')\ntorch.compile(f, backend=backend)\n"
              "@torch.compile\ndef g(x):\n    return x\n")
    assert _inductor_compiles(ast.parse(source)) == [1, 2, 5]
