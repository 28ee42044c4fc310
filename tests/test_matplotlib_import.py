"""The `qkv` command imports matplotlib without writing its artists' `set` docstrings (qkv._matplotlib, issue 29);
a Python that imports qkv as a library gets matplotlib as it is, and the figures are the same pixels either way."""

import json
import subprocess
import sys

import numpy as np
import pytest

from qkv import _matplotlib

# What a child reports: Line2D.set's docstring and signature, whether kwdoc is matplotlib's, and a set() call.
_REPORT = """
import inspect, json, sys
import matplotlib.artist, matplotlib.lines
line = matplotlib.lines.Line2D([0, 1], [0, 1])
line.set(linewidth=3, color="red")
print(json.dumps({"doc": matplotlib.lines.Line2D.set.__doc__,
                  "signature": list(inspect.signature(matplotlib.lines.Line2D.set).parameters),
                  "kwdoc": matplotlib.artist.kwdoc.__module__, "width": line.get_linewidth(),
                  "finder": any(type(f).__module__ == "qkv._matplotlib" for f in sys.meta_path)}))
"""

# The command as its own process: `qkv.cli.main()` with the process's arguments, then the report.
_COMMAND = """
import sys
from qkv.cli import main
sys.argv = ["qkv", "example", "multi-head", "--figure", sys.argv[1]]
code = main()
assert code == 0, code
""" + _REPORT

# A library user: import qkv.viz and draw the same figure, then the report.
_LIBRARY = """
import sys
import qkv.examples, qkv.viz
qkv.viz.save_figure(qkv.examples.run("multi-head"), sys.argv[1])
""" + _REPORT


def _child(code: str, path) -> dict:
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("figures")
    return {"command": (_child(_COMMAND, folder / "command.png"), folder / "command.png"),
            "library": (_child(_LIBRARY, folder / "library.png"), folder / "library.png")}


def test_the_command_writes_no_property_list(reports):
    report, _ = reports["command"]
    assert report["doc"].endswith(_matplotlib.SHORT)
    assert "zorder: float" not in report["doc"] and "xdata:" not in report["doc"]
    assert report["kwdoc"] == "qkv._matplotlib"
    assert report["finder"] is False                     # it stepped aside once matplotlib.artist was imported


def test_the_command_keeps_what_set_does_and_its_signature(reports):
    command, _ = reports["command"]
    library, _ = reports["library"]
    assert command["width"] == library["width"] == 3
    assert command["signature"] == library["signature"]
    assert {"linewidth", "color", "alpha"} <= set(command["signature"])


def test_a_library_user_gets_matplotlib_as_it_is(reports):
    report, _ = reports["library"]
    assert report["kwdoc"] == "matplotlib.artist"
    assert _matplotlib.SHORT not in report["doc"]
    # matplotlib's own property list: each property with what it accepts
    assert "zorder: float" in report["doc"] and "xdata: 1D array" in report["doc"]
    assert report["finder"] is False


def test_the_figure_is_the_same_pixels_either_way(reports):
    from PIL import Image

    command = np.asarray(Image.open(reports["command"][1]))
    library = np.asarray(Image.open(reports["library"][1]))
    assert command.shape == library.shape and command.shape[0] > 100
    assert np.array_equal(command, library)


def test_a_call_with_arguments_changes_nothing(capsys):
    from qkv.cli import main

    before = list(sys.meta_path)
    assert main(["example", "multi-head", "--digits", "2"]) == 0
    assert sys.meta_path == before


def test_install_after_matplotlib_is_imported_changes_nothing():
    import matplotlib.artist

    kwdoc = matplotlib.artist.kwdoc
    before = list(sys.meta_path)
    _matplotlib.install()
    assert sys.meta_path == before
    assert matplotlib.artist.kwdoc is kwdoc
