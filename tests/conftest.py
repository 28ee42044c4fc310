"""Markers by file: the slow kinds of test (a browser, transformers as a reference, several processes).

`make test` runs everything; `pytest -m "not slow"` runs the fast part alone (a developer's loop).
"""

from __future__ import annotations

import pytest

BROWSER = {"test_browser.py", "test_serve_browser.py", "test_notebook.py"}       # Chromium (and a kernel)
REFERENCES = {"test_models_hf.py", "test_torch_mha.py", "test_models_corrupt.py", "test_models_families.py",
              "test_models_consistency.py"}  # transformers, torch's own tests
PROCESSES = {"test_distributed.py"}                                                # torch.distributed ranks


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        if name in BROWSER:
            item.add_marker(pytest.mark.browser)
        if name in BROWSER | REFERENCES | PROCESSES:
            item.add_marker(pytest.mark.slow)
