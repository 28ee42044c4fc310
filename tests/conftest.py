"""Markers by file: the slow kinds of test (a browser, transformers as a reference or the installed MiniLM,
several processes or a benchmark run, torch.compile graphs, hundreds of full figure renders, property sweeps).

`make test` runs everything; `make check` (`pytest -m "not slow"` on two workers) runs the fast part alone,
a developer's check before each commit: the sets below are what it leaves to `make test`.
"""

from __future__ import annotations

import os

import pytest

# The tests expect English wherever they give no --lang: a run under a Korean locale (LANG=ko_KR.UTF-8) would
# otherwise answer in Korean (`qkv.frontdoor.locale_lang`). The message locale is pinned to C for the tests
# and the processes they start; tests/test_locale.py sets its own. LC_CTYPE (the encoding) is left alone.
for _name in ("LC_ALL", "LANGUAGE"):
    os.environ.pop(_name, None)
os.environ["LC_MESSAGES"] = "C.UTF-8"

# torch.compile's inductor caches compiled graphs and their C++ builds on disk, by default in
# /tmp/torchinductor_$USER, which outlives the run: a second run (or another checkout on the same machine)
# then skips the compilation a fresh machine does, and the suite looks faster than it is. A run gets its own
# empty directory instead (xdist's workers and the processes the tests start inherit it), removed when the
# process that made it exits; a directory given in TORCHINDUCTOR_CACHE_DIR is used as given and kept.
# Not covered: inductor's precompiled C++ header (~150 MB) goes to /tmp/torchinductor_$USER/precompiled_headers
# whatever TORCHINDUCTOR_CACHE_DIR says (torch 2.13's codecache._HEADER_DIR, from tempfile.gettempdir()) and is kept
# between runs: a machine's first run builds it once, ~9 CPU-s more (a first inductor compile's C++ builds took 15.6
# CPU-s with an empty header directory against 6.7 with the kept one; 7 December, load ~30).
if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    _inductor_cache = tempfile.mkdtemp(prefix="qkv-tests-inductor-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = _inductor_cache
    atexit.register(shutil.rmtree, _inductor_cache, ignore_errors=True)

# The tiny checkpoints of tests/model_fixtures.py, built once per run (model_fixtures.built): one folder made here,
# in the process that starts the run, so that xdist's workers share it (the first to need a model builds it under
# a file lock, the other reads it) and removed when that process exits, as the inductor cache above.
if "QKV_TEST_CHECKPOINTS" not in os.environ:
    import atexit
    import shutil
    import tempfile

    _checkpoints = tempfile.mkdtemp(prefix="qkv-tests-checkpoints-")
    os.environ["QKV_TEST_CHECKPOINTS"] = _checkpoints
    atexit.register(shutil.rmtree, _checkpoints, ignore_errors=True)

# Two workers on two cores (`make test`, `make check`: -n 2): torch's OpenMP pool starts one thread per core in
# each worker, so four threads share two cores, and an OpenMP thread that waits spins. Measured 7 December under
# load 15, test_magnitudes + test_adversary_today on two workers: 94 CPU-s with 2 torch threads per worker, 30
# with 1 (wall 10 min against 6); one torch case of test_magnitudes, T = 8 forward + backward, 40–46 CPU-ms
# against 2.5–4. Each xdist worker gets its share of the cores (here 1) in OMP_NUM_THREADS, which torch (and
# MKL under it) and the processes the tests start read at start-up; a value set by the caller is kept. NumPy's
# OpenBLAS gets the same share in OPENBLAS_NUM_THREADS: a float64 reference of test_kernels, (2, 4, 300, 16), took
# 162 CPU-ms with 2 BLAS threads and 31 with 1 at load 20. (One BLAS thread once made qkv's NumPy kernel print
# "invalid value encountered in matmul" on an infinite key under the mask: fixed in c423b07.) Tests of thread counts set
# their own (test_adversary_today's torch threads 1 → 2 → 1, test_backward's and
# test_serve's BLAS at 2, qkv's own pool by its `threads` argument: it sizes itself from the CPUs).
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
if _WORKERS and "OMP_NUM_THREADS" not in os.environ:
    _cpus = len(os.sched_getaffinity(0))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(max(1, _cpus // _WORKERS)))
    os.environ["OMP_NUM_THREADS"] = str(max(1, _cpus // _WORKERS))

BROWSER = {"test_browser.py", "test_serve_browser.py", "test_notebook.py", "test_page_access.py",
           "test_practice_browser.py", "test_lenses_browser.py",
           "test_example_lenses_browser.py"}       # Chromium (and a kernel)
REFERENCES = {"test_models_hf.py", "test_torch_mha.py", "test_models_corrupt.py", "test_models_families.py",
              "test_models_consistency.py", "test_models_parity.py",  # transformers, torch's own tests
              "test_nexttoken.py",          # the next token against transformers' logits and float64 head moves
              "test_torch_upstream.py",     # torch's own MHA / Transformer tests, ported (as test_torch_mha)
              "test_models.py",             # MiniLM against sentence-transformers and transformers' BertModel
              "test_cli_models.py",          # `qkv inspect` / `qkv embed` on the installed MiniLM
              "test_adversary_entry.py"}     # serve under hostile requests: a tiny GPT-2 built by transformers, ~25 s
PROCESSES = {"test_distributed.py",                                                # torch.distributed ranks
             "test_bench.py",               # `qkv bench --quick`, training rows in worker processes
             "test_stress_files.py",        # files cut short or swapped under fresh interpreters (SIGBUS, hangs)
             "test_stress_serve.py",        # uvicorn in a thread: stalled clients, bodies cut off
             "test_stress_cli.py",          # signals sent to qkv mid-write, in fresh interpreters
             "test_stress_ring.py",         # `qkv ring` ranks by hand and a launcher killed
             "test_ops_fresh.py",           # the torch ops as the first call of fresh interpreters
             "test_setup.py"}               # the Makefile's recipes in a scratch tree, a wheel built
COMPILES = {"test_attention_compile.py",      # 39 tests: aot_eager and eager graphs, one fresh interpreter
            "test_flex_compile.py"}           # every inductor compile of the suite (one worker pays its first use)
FIGURES = {"test_viz.py", "test_viz_learner.py", "test_viz_ko.py"}                   # matplotlib figures drawn in full, about 90 s of rendering
SWEEPS = {"test_magnitudes.py",                 # 690 cases by magnitude, dtype and route, long-double references, ~50 s
          "test_kernels.py",                    # 872 cases: the C routes by layout, shape, Dv and thread split
          "test_adversary_today.py",            # 141 adversarial cases: caches, views, threads, bad values between calls
          "test_adversary_kernels.py",          # adversarial mask and score functions
          "test_fuzz_files.py", "test_fuzz_cli.py"}   # random mutations of input files and command lines


# Single tests of the same slow kinds inside files that are otherwise fast (make check runs the rest of the file),
# with their seconds in one process under load (6 December; load 12, ~4× the CPU-seconds)
SLOW_TESTS = {
    "test_masks.py": {"test_catalogue_matches_flex_attention_and_dense_reference",   # torch's flex_attention as a
                      "test_score_functions_match_flex_attention_and_their_formulas",  # reference (63 s, 14 s)
                      "test_t5_bucket_matches_transformers",          # transformers' T5 as a reference (10 s)
                      "test_mask_lambdas_made_inside_torch_compile",  # torch.compile graphs (45 s)
                      "test_masks_command_figure_and_errors"},        # a full figure render (11 s)
    "test_translator.py": {"test_held_out_sentences_are_translated_exactly_by_an_independent_decode"},  # 400 float64 decodes (73 s)
    "test_cli_korean.py": {"test_notes_are_korean"},                  # MiniLM on 256 tokens, inspect and embed (13 s)
    "test_cli.py": {"test_documented_submodules_import_lazily"},      # a fresh interpreter importing every module (8 s)
    "test_heads_cli.py": {"test_json_scores_match_bert_model_attentions",   # transformers' BertModel as a reference (27 s)
                          "test_a_decoder_checkpoint_scores_like_its_transformers_attentions"},  # and its Llama (~4 CPU-s)
    "test_backward.py": {"test_compile_fullgraph_keeps_the_op"},      # a torch.compile graph (12 s)
    "test_speed_routes.py": {"test_a_traced_call_follows_the_same_table"},   # a torch.compile graph (14 s)
    "test_rulebook.py": {"test_eager_calls_take_the_routes_they_took_before",     # 1,946 calls routed (8 CPU-s)
                         "test_traced_calls_take_the_routes_they_took_before"},   # 36 torch.compile graphs (~2 min)
    "test_korean_learning.py": {"test_korean_typed_into_minilm_is_said_to_be_unread_on_the_command_line",  # MiniLM
                                "test_the_page_drops_the_self_gloss_as_the_cli_does"},          # (Chromium: marked anyway)
    "test_scale_said.py": {"test_minilm_says_its_scale_is_1_over_root_dk",    # the installed MiniLM
                           "test_a_scale_other_than_1_over_root_dk_says_what_it_is"},   # transformers builds two models
}

# Two groups of files run whole on one worker each in `make test` (pytest_xdist_make_scheduler below): every other
# file is a work unit of its own, as xdist's --dist loadfile makes them. The files that drive Chromium share one
# worker's Chromium and Playwright driver (~4-5 CPU-s to start, once per worker), and the files that load
# transformers' models as references (or MiniLM through sentence-transformers) share one worker's imports of
# transformers and its model classes (~3.3 CPU-s for transformers, ~4 for the first model class, then each family's
# modeling module), which both workers paid before. test_notebook and test_docs use both: they go with transformers
# (their Chromium is started on that worker, their transformers imports are not paid twice). The checkpoints of
# tests/model_fixtures.py are built once per run by the first process that asks (test_models_hf, first in its group,
# builds them all); the browser files read them with `built` and import transformers only if they come first.
# `make check` (-m "not slow") keeps plain loadfile: the tests these groups are for are all slow.
GROUPS = {
    "browser": {"test_browser.py", "test_practice_browser.py", "test_serve_browser.py", "test_page_access.py",
                "test_lenses_browser.py", "test_example_lenses_browser.py", "test_korean_learning.py",
                "test_serve_sureness.py", "test_page_legend_browser.py", "test_weights_page.py"},
    "transformers": {"test_models_hf.py", "test_nexttoken.py", "test_models.py", "test_models_parity.py",
                     "test_models_families.py", "test_models_consistency.py", "test_models_corrupt.py",
                     "test_heads_cli.py", "test_block.py", "test_scale_said.py", "test_adversary.py", "test_masks.py",
                     "test_notebook.py", "test_docs.py"},
}

# The order of the files (inside a file its own order is kept): the two groups first, one worker starting on each, then
# the other files, longest first, so that `make test`'s two workers (`-n 2 --dist loadfile --no-loadscope-reorder`)
# do not end with one long file running alone. Without --no-loadscope-reorder, xdist (>= 3.5) sorts the units by their
# number of tests and ignores this order. Measured 7 December 14:35-15:08, the whole suite of 1e642ca on two workers,
# load 5-12 from other sessions (wall 33 min: compare CPU-seconds), each file's CPU-seconds in its worker: its own,
# the processes it waited for, and Chromium and Playwright's driver read from /proc (which RUSAGE_CHILDREN misses: they
# are never waited for while the worker runs). The browser group 346 (test_browser 111, test_practice_browser 77 before
# c8a781e, test_serve_browser 60, test_page_access 29, test_lenses_browser 27 …), the transformers group 148
# (test_docs 43, test_notebook 30, test_masks 22, test_models 17, test_models_parity 14 …), then test_attention_compile
# 70, test_flex_compile 63, test_viz 59, test_distributed 51, test_bench 40, test_kernels 33, test_viz_learner 16,
# test_fuzz_files 16, test_setup 15, test_fuzz_cli 15, test_stress_ring 15, test_cli_models 14, test_magnitudes 13 …
# (1,144 CPU-s in all files, 25 more in each worker's collection: mostly torch, Dynamo with sympy, matplotlib). The two
# compile files still run on one worker at a time unless both fall to the same one: only test_flex_compile uses
# inductor (tests/test_suite_rules.py). Files not named here (under ~3.5 CPU-seconds, or new) come after them.
# With the groups, this order and the cuts in test_practice_browser and test_browser (557616c, 7 December 15:29-15:53,
# load 12 falling to 0.5): 6,910 tests, 1,016 CPU-s in all files (the browser group 284, the transformers group 134),
# the two workers done within 1 s of each other; pytest 1,424 s wall, user 805 + sys 103 CPU-s (was 878 + 137).
LONGEST_FIRST = [
    # the browser group
    "test_browser.py", "test_practice_browser.py", "test_serve_browser.py", "test_page_access.py",
    "test_lenses_browser.py", "test_example_lenses_browser.py", "test_korean_learning.py", "test_serve_sureness.py",
    "test_page_legend_browser.py", "test_weights_page.py",
    # the transformers group, test_models_hf first: its fixture builds every checkpoint of model_fixtures
    "test_models_hf.py", "test_docs.py", "test_notebook.py", "test_masks.py", "test_models.py", "test_models_parity.py",
    "test_models_families.py", "test_heads_cli.py", "test_scale_said.py", "test_nexttoken.py", "test_adversary.py",
    "test_models_consistency.py", "test_block.py", "test_models_corrupt.py",
    # the other files, longest first
    "test_attention_compile.py", "test_flex_compile.py", "test_viz.py", "test_distributed.py", "test_bench.py",
    "test_kernels.py", "test_viz_learner.py", "test_fuzz_files.py", "test_setup.py", "test_fuzz_cli.py",
    "test_stress_ring.py", "test_cli_models.py", "test_magnitudes.py", "test_stress_cli.py", "test_cli_korean.py",
    "test_stress_serve.py", "test_torch_upstream.py", "test_rulebook.py", "test_serve.py", "test_empty_text.py",
    "test_cli.py", "test_viz_ko.py", "test_translator.py", "test_explain.py", "test_stress_files.py", "test_why.py",
    "test_torch_mha.py", "test_attention.py", "test_practice_pages.py", "test_ops_fresh.py", "test_cli_lang_ko.py",
    "test_numbering.py", "test_flex.py", "test_adversary_today.py", "test_equations.py", "test_korean_everywhere.py",
    "test_layers.py", "test_spec.py", "test_backward.py", "test_exact_difference.py", "test_masks_ranges.py",
    "test_viz_contributions.py", "test_claims.py", "test_suite_rules.py"]


WHOLLY_SLOW = BROWSER | REFERENCES | PROCESSES | COMPILES | FIGURES | SWEEPS


def pytest_ignore_collect(collection_path, config):
    """`make check` (-m "not slow") does not import the files every test of which is slow: it would deselect all
    their tests after importing them, and every xdist worker collects every file (test_attention_compile alone
    imports torch's inductor and sympy: ~7.6 CPU-s in each worker). Any other mark expression collects them."""
    if (config.getoption("markexpr", "") or "").strip() == "not slow" and collection_path.name in WHOLLY_SLOW:
        return True
    return None


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))        # stable: each file keeps its order
    for item in items:
        name = item.path.name
        # a test that drives Chromium (browser_support's browser_context fixture) is a browser test wherever it is
        browser = name in BROWSER or "browser_context" in getattr(item, "fixturenames", ())
        if browser:
            item.add_marker(pytest.mark.browser)
        if (browser or name in REFERENCES | PROCESSES | COMPILES | FIGURES | SWEEPS
                or getattr(item, "originalname", item.name) in SLOW_TESTS.get(name, ())):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True, optionalhook=True)   # xdist's hook: -p no:xdist must still run
def pytest_xdist_make_scheduler(config, log):
    """xdist's --dist loadfile with GROUPS' files each group one work unit (a run of -m "not slow" keeps loadfile)."""
    if config.getvalue("dist") != "loadfile" or (config.getoption("markexpr", "") or "").strip() == "not slow":
        return None
    from xdist.scheduler import LoadFileScheduling

    unit = {name: group for group, names in GROUPS.items() for name in names}

    class GroupedFiles(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return unit.get(path.rsplit("/", 1)[-1], path)

    return GroupedFiles(config, log)


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """The speed table read from an empty cache directory of the test's own: the rules, never the developer's
    calibration (every test of test_speed_routes.py and test_speed_overhead.py; yields the directory)."""
    from qkv.kernels import speed

    monkeypatch.setenv("QKV_CACHE_DIR", str(tmp_path))
    speed.load(refresh=True)
    yield tmp_path
    monkeypatch.delenv("QKV_CACHE_DIR")
    speed.load(refresh=True)
