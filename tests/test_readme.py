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
    for block in blocks:  # one session, as a reader would type them in order
        exec(compile(block, "README.md", "exec"), namespace)
    printed = capsys.readouterr().out
    # the quickstart prints shapes and the weights' row sums; check them against what it computed
    assert "(4, 8)" in printed
    weights = namespace["weights"]
    np.testing.assert_allclose(weights.sum(-1), 1, rtol=1e-12)
    # the worked example: love's weights, checked against seed 001's printed values (4 decimals;
    # the seed prints learning's as 0.3383, one unit above the exact 0.338238)
    love = namespace["trace"]["weights"].value[0, 1]
    np.testing.assert_allclose(love, [0.1688, 0.2472, 0.2457, 0.3383], atol=1.5e-4)
    assert "[0.1688 0.2472 0.2457 0.3382]" in printed


def test_readme_names_the_two_setup_commands():
    assert "make demo" in README and "make test" in README
