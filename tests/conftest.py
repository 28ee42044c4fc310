"""Markers by file: the slow kinds of test (a browser, transformers as a reference, several processes).

`make test` runs everything; `pytest -m "not slow"` runs the fast part alone (a developer's loop).
"""

from __future__ import annotations

import pytest

BROWSER = {"test_browser.py", "test_serve_browser.py", "test_notebook.py"}       # Chromium (and a kernel)
REFERENCES = {"test_models_hf.py", "test_torch_mha.py", "test_models_corrupt.py", "test_models_families.py",
              "test_models_consistency.py"}  # transformers, torch's own tests
PROCESSES = {"test_distributed.py"}                                                # torch.distributed ranks


# The longest files first (seconds of one worker, measured December; test_docs moved down once its commands
# ran in-process, about a third less), so that `make test`'s two workers (`-n 2 --dist loadfile`) do not
# end with one long file running alone; the order inside a file is kept.
LONGEST_FIRST = ["test_viz.py", "test_browser.py", "test_distributed.py", "test_kernels.py", "test_docs.py",
                 "test_serve_browser.py", "test_torch_upstream.py", "test_models_families.py", "test_attention.py",
                 "test_attention_compile.py", "test_cli_lang_ko.py", "test_adversary_kernels.py",
                 "test_cli_models.py", "test_fuzz_files.py", "test_fuzz_cli.py", "test_bench.py", "test_serve.py",
                 "test_notebook.py", "test_cli.py", "test_torch_mha.py", "test_models.py", "test_cli_korean.py",
                 "test_masks.py"]


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))        # stable: each file keeps its order
    for item in items:
        name = item.path.name
        if name in BROWSER:
            item.add_marker(pytest.mark.browser)
        if name in BROWSER | REFERENCES | PROCESSES:
            item.add_marker(pytest.mark.slow)
