"""The docs site builds in strict mode, and every code block of every page runs as written.

Pages: README.md (the site's home page) and docs/*.md. Per page, in a fresh temporary directory
(holding a copy of the repository's examples/, as a reader's clone would) and a fresh namespace:

- ```python blocks run in order, sharing one namespace (a reader typing them into one session);
- a block with a title (```toml title="my-example.toml"```) is a file the page asks the reader to
  write: it is written there under that name, for the blocks after it to read (a TOML or JSON sample
  must have one, so that a sample naming files that do not exist fails when a command reads it);
- ```sh blocks are commands, ```console blocks `$ `-prompted commands followed by the output they
  print (each printed line must appear in what the command printed); every command must be a `qkv`
  command and must exit 0 — or 2 where the page shows its `qkv: error:` line (`qkv: 오류:` under `--lang ko`); `qkv ring` runs as a
  `python -m qkv …` process with a time limit (SUBPROCESS), the rest through qkv.cli.main in this
  process (the same function, no interpreter start; test_cli.py runs the installed script);
- ```python {.no-run reason="…"}``` (likewise sh, console) is not run; the reason is required and
  shows in the page's source. Kept rare: a server that must be running, a torchrun script, set-up
  that installs packages, training for minutes;
- a block without a language, or ```text, is output or a sketch and is not run — unless it consists
  of `qkv` commands, which must then be labelled sh or console (so commands cannot hide from this).

The built site is also opened in Chromium (from disk, 1280 and 390 px wide): no outside request, no
script error, no sideways scrolling.

docs/models.md writes DIR and path/to/llama for a checkpoint directory of the reader's own: the test
puts a tiny random Llama-style checkpoint there (4 layers, 8 query heads over 2 key/value heads, made
by transformers from a config; nothing is downloaded).
"""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass, field

import pytest

from browser_support import browser_context  # noqa: F401  (fixture)

SLOW = pytest.mark.slow     # the site build and the pages: 7 minutes here, measured with the 2 cores shared (load ~13)

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = (["README.md", "README.ko.md"] + sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))
         + sorted(f"docs/ko/{p.name}" for p in (ROOT / "docs" / "ko").glob("*.md")))
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)
ATTRS = re.compile(r"\{([^}]*)\}")
KEY_VALUE = re.compile(r'([\w-]+)="([^"]*)"')
COMMAND_TIMEOUT = 240
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MPLBACKEND": "Agg", "NO_COLOR": "1",
       "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "NO_MKDOCS_2_WARNING": "1"}


@dataclass
class Block:
    page: str
    line: int
    lang: str
    body: str
    classes: set[str] = field(default_factory=set)
    options: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def parse_info(info: str) -> tuple[str, set[str], dict[str, str]]:
    """```python {.no-run reason="…"} → ("python", {"no-run"}, {"reason": "…"}); title="x" likewise."""
    classes: set[str] = set()
    options = dict(KEY_VALUE.findall(info))
    braces = ATTRS.search(info)
    if braces:
        classes = {word[1:] for word in braces.group(1).split() if word.startswith(".")}
        info = info[:braces.start()]
    words = KEY_VALUE.sub("", info).split()
    return (words[0] if words else ""), classes, options


def blocks(page: str) -> list[Block]:
    text = (ROOT / page).read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        lang, classes, options = parse_info(match.group(1))
        found.append(Block(page, text.count("\n", 0, match.start()) + 1, lang, match.group(2), classes, options))
    return found


def commands(block: Block) -> list[tuple[str, list[str]]]:
    """The commands of a sh/console block, each with the output lines a console block shows after it."""
    out: list[tuple[str, list[str]]] = []
    lines = block.body.replace("\\\n", " ").splitlines()
    for line in lines:
        stripped = line.strip()
        if block.lang == "console":
            if stripped.startswith("$ "):
                out.append((stripped[2:], []))
            elif stripped and out:
                out[-1][1].append(stripped)
        elif stripped and not stripped.startswith("#"):
            out.append((stripped, []))
    return out


def looks_like_commands(body: str) -> bool:
    return any(re.match(r"(\$ )?qkv\s", line.strip()) for line in body.splitlines())


# The commands that run as real processes (`python -m qkv …`): `qkv ring`, which starts processes of its
# own. Every other command runs in this process through qkv.cli.main (the function `python -m qkv` and the
# installed `qkv` script call), which spares ~30 interpreter start-ups (NumPy, torch, transformers imported
# again each time) and checks the same things: the exit status and each printed line. The installed script
# itself runs the front door's first command, `qkv example cross-attention --lang ko`, in
# tests/test_cli.py::test_installed_script.
SUBPROCESS = {("docs/distributed.md", "qkv ring")}


def in_subprocess(block: Block, argv: list[str]) -> bool:
    return any(block.page == page and argv[:len(shlex.split(start))] == shlex.split(start)
               for page, start in SUBPROCESS)


def run_command(block: Block, command: str, expected: list[str], cwd: pathlib.Path) -> None:
    argv = shlex.split(command, comments=True)
    assert argv and argv[0] == "qkv", (
        f"{block.where}: `{command}` is not a qkv command; run it here or mark the block "
        f'{{.no-run reason="…"}}')
    assert not {"|", ">", "<", "&&", ";"} & set(argv), f"{block.where}: `{command}`: no shell syntax in a run block"
    if in_subprocess(block, argv):
        done = subprocess.run([sys.executable, "-m", "qkv", *argv[1:]], cwd=cwd, env=ENV, capture_output=True,
                              text=True, timeout=COMMAND_TIMEOUT, stdin=subprocess.DEVNULL)
        code, stdout, stderr = done.returncode, done.stdout, done.stderr
    else:
        code, stdout, stderr = run_in_process(argv[1:], cwd)
    status = 2 if any(line.startswith(("qkv: error:", "qkv: 오류:")) for line in expected) else 0   # a refusal shown on purpose
    assert code == status, f"{block.where}: `{command}` exited {code}, expected {status}:\n{stderr[-2000:]}"
    printed = " ".join((stdout + stderr).split())
    for line in expected:
        assert " ".join(line.split()) in printed, f"{block.where}: `{command}` did not print {line!r}"


def run_in_process(args: list[str], cwd: pathlib.Path) -> tuple[int, str, str]:
    """``qkv ARGS`` through qkv.cli.main in this process, in cwd, with the environment a subprocess
    would get (ENV) and nothing on standard input: (exit status, standard output, standard error)."""
    from qkv.cli import main

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        for name in ("MPLBACKEND", "NO_COLOR", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
            patch.setenv(name, ENV[name])
        patch.chdir(cwd)
        patch.setattr(sys, "stdin", io.StringIO(""))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    return code, out.getvalue(), err.getvalue()


def make_llama(directory: pathlib.Path) -> None:
    """A tiny random Llama-style checkpoint: 4 layers, 8 query heads over 2 key/value heads (GQA 4:1)."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from model_fixtures import train_tokenizer
    finally:
        sys.path.remove(str(ROOT / "tests"))
    import torch
    import transformers

    tokenizer = train_tokenizer(bos=True)
    config = transformers.LlamaConfig(vocab_size=tokenizer.get_vocab_size(), pad_token_id=0, bos_token_id=1,
                                      eos_token_id=2, hidden_size=64, num_hidden_layers=4, num_attention_heads=8,
                                      num_key_value_heads=2, intermediate_size=96, max_position_embeddings=128)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(directory, safe_serialization=True)
    tokenizer.save(str(directory / "tokenizer.json"))


def prepare(page: str, cwd: pathlib.Path) -> None:
    shutil.copytree(ROOT / "examples", cwd / "examples")
    if page == "docs/models.md":
        make_llama(cwd / "DIR")
        (cwd / "path" / "to").mkdir(parents=True)
        shutil.copytree(cwd / "DIR", cwd / "path" / "to" / "llama")


# ---------------------------------------------------------------------------------------------- the site

@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built once with --strict (a warning — a broken link, an unreadable docstring — fails)."""
    site = tmp_path_factory.mktemp("docs") / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return site


@SLOW
def test_site_builds_strict_and_offline(site):
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "python3-venv" in home and 'href="examples.html"' in home      # the README, its docs/ links made relative
    api = (site / "api" / "qkv.html").read_text(encoding="utf-8")
    assert 'id="qkv.attention.attention"' in api and "Tq" in api   # attention itself (not only its module), with shapes
    for module in ("masks", "models", "torch", "distributed", "examples", "explain", "trace", "analysis", "notebook"):
        assert (site / "api" / f"{module}.html").is_file(), module
    for page in (site / "api").glob("*.html"):    # a docstring's >>> lines read as code, not as quotes
        assert "<blockquote>" not in page.read_text(encoding="utf-8"), page
    # offline: nothing fetched from elsewhere (no web fonts, no CDN scripts or styles)
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        remote = re.findall(r'<(?:script|link|img)\b[^>]*(?:src|href)="(https?:)?//[^"]*"', html)
        assert not remote, (page, remote)
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html, page
    # the posts are named by their titles (or "post 001"), never as the project's "seeds"
    seeds = re.compile(r"\bseed[- ]0\d\d|\bseed examples|\bthe seeds\b|\btheir seed\b|\bin the seeds\b", re.I)
    for page in site.rglob("*.html"):
        text = re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8"))
        assert not seeds.search(text), (page, seeds.search(text).group(0))
    for sheet in site.rglob("*.css"):
        assert "@import url(http" not in sheet.read_text(encoding="utf-8"), sheet


# The learning pages, each with a Korean page under docs/ko/ (README.ko.md is the Korean front door, ko/index.md)
LEARNING = ("posts", "examples", "practice", "pictures", "serve", "translator")


def test_every_learning_page_has_a_korean_page_in_the_nav():
    """The guide's learning pages are in Korean as well as English: docs/ko/NAME.md for each, in the site's
    nav, opening with a link to its English page (and the English page's nav entry stays). Fast."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for name in LEARNING:
        page = ROOT / "docs" / "ko" / f"{name}.md"
        assert page.is_file(), page
        first = page.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# ") and f"[English](../{name}.md)" in first, first
        assert re.search(r"[가-힣]", first), first
        assert f": ko/{name}.md" in nav and f": {name}.md" in nav, name


@SLOW
def test_korean_pages_are_rendered_in_korean(site):
    """<html lang> and the theme's own words follow the page's language: ko/ pages Korean, the rest English
    (the theme's language was `en` for every page)."""
    for page in site.rglob("*.html"):
        relative = page.relative_to(site).as_posix()
        html = page.read_text(encoding="utf-8")
        found = re.search(r'<html lang="([\w-]+)"', html)
        if found is None:                       # a fragment mkdocstrings or the theme writes without <html>
            continue
        korean = relative.startswith("ko/")
        assert found.group(1) == ("ko" if korean else "en"), relative
        if 'class="md-search__input"' in html:
            assert ('placeholder="검색"' if korean else 'placeholder="Search"') in html, relative
    for name in ("index",) + LEARNING:
        assert (site / "ko" / f"{name}.html").is_file(), name


@SLOW
@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390])
def test_site_in_chromium(site, browser_context, width):
    """Opened from disk at desktop and phone widths: nothing fetched from elsewhere, no script error,
    no sideways scrolling; the figures and the API signatures are there."""
    for path, selector in (("index.html", "#quickstart"), ("pictures.html", 'img[alt="self-attention, Korean"]'),
                           ("ko/practice.html", 'img[src="../why-dot-product-ko.png"]'),
                           ("api/qkv.html", '[id="qkv.attention.attention"]')):
        page = browser_context.new_page()
        requests, errors = [], []
        page.on("request", lambda request: requests.append(request.url))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        try:
            page.set_viewport_size({"width": width, "height": 844})
            page.goto((site / path).as_uri())
            page.wait_for_selector(selector, state="attached", timeout=30_000)
            page.wait_for_load_state("load")
            overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, f"{path} at {width} px scrolls sideways by {overflow} px"
            assert not [u for u in requests if not u.startswith(("file:", "data:", "blob:"))], (path, requests)
            assert not errors, (path, errors)
            if path.endswith("practice.html") or path == "pictures.html":   # the figure loaded (a broken image has no natural width)
                assert page.eval_on_selector(selector, "img => img.naturalWidth") > 0
        finally:
            page.close()


# ---------------------------------------------------------------------------------------------- the pages

def test_every_block_is_run_or_says_why():
    """Every fenced block either runs here or says why not; qkv commands never hide in unlabelled blocks.
    (Fast: not marked slow, so `pytest -m "not slow"` checks it.)"""
    unrun = []
    for page in PAGES:
        for block in blocks(page):
            if "no-run" in block.classes:
                assert block.options.get("reason", "").strip(), f"{block.where}: {{.no-run}} needs reason=\"…\""
                unrun.append(block.where)
            elif block.lang in ("toml", "json") and "title" not in block.options:
                raise AssertionError(f'{block.where}: a sample file needs title="NAME" (written, then read by '
                                     f"the page's commands) or {{.no-run reason=\"…\"}}")
            elif block.lang in ("", "text"):
                assert not looks_like_commands(block.body), (
                    f"{block.where}: a block of qkv commands must be labelled ```sh or ```console")
    assert len(unrun) <= 12, f"no-run blocks should stay rare: {unrun}"
    # the commands picked to run as real processes are still on their pages (else none would)
    for page, start in SUBPROCESS:
        assert any(in_subprocess(block, shlex.split(command, comments=True))
                   for block in blocks(page) if block.lang in ("sh", "console") and "no-run" not in block.classes
                   for command, _ in commands(block)), (page, start)


@SLOW
@pytest.mark.parametrize("page", PAGES)
def test_page_code_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    prepare(page, tmp_path)
    namespace: dict = {"__name__": "__main__"}
    with warnings.catch_warnings(record=True) as caught:     # (the run's filters stay: pyproject's ignores)
        ran = run_blocks(page, tmp_path, namespace)          # blocks run, checked against the runnable ones below
    # a reader running the page sees only the warnings the page tells them about: each warning's opening
    # (up to its first ", " or ". ") is quoted on the page (docs/notebook.md: qkv.show outside a notebook)
    text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
    for warning in caught:
        opening = re.split(r"[,.] ", " ".join(str(warning.message).split()))[0]
        assert opening in text, (f"{page}: running its code warns {warning.category.__name__}: {warning.message} "
                                 f"({warning.filename}:{warning.lineno}), which the page does not say")
    runnable = [b for b in blocks(page) if b.lang in ("python", "sh", "console", "bash", "shell")
                and "no-run" not in b.classes and not (b.lang != "python" and "title" in b.options)]
    assert ran == len(runnable), f"{page}: {ran} of {len(runnable)} blocks ran"


def run_blocks(page: str, tmp_path: pathlib.Path, namespace: dict) -> int:
    """Run the page's blocks in order in tmp_path: the number of blocks run."""
    ran = 0
    for block in blocks(page):
        if "no-run" in block.classes:
            continue
        if "title" in block.options:          # a file the page asks the reader to write
            (tmp_path / block.options["title"]).write_text(block.body, encoding="utf-8")
            if block.lang != "python":
                continue
        if block.lang == "python":
            try:
                exec(compile(block.body, block.where, "exec"), namespace)
            except Exception as error:
                raise AssertionError(f"{block.where}: the block raised {type(error).__name__}: {error}") from error
            ran += 1
        elif block.lang in ("sh", "console", "bash", "shell"):
            for command, expected in commands(block):
                run_command(block, command, expected, tmp_path)
            ran += 1
    return ran
