"""The README's promises: its Python quickstart runs as written and prints what it says."""

from __future__ import annotations

import pathlib
import re

import numpy as np

README = (pathlib.Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")


def test_quickstart_runs_as_written(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks, "README has no ```python quickstart block"
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    printed = capsys.readouterr().out
    # the quickstart prints shapes and the weights' row sums; check them against what it computed
    assert "(4, 8)" in printed
    weights = namespace["weights"]
    np.testing.assert_allclose(weights.sum(-1), 1, rtol=1e-12)


def test_readme_names_the_two_setup_commands():
    assert "make demo" in README and "make test" in README
