"""How the `qkv` command imports matplotlib: without writing the property lists of its artists' ``set`` docstrings.

When matplotlib makes an Artist class (about 60 of them on ``import matplotlib.figure``) it writes that class's
``set`` docstring from every setter's docstring (`matplotlib.artist.kwdoc`, through
``Artist.__init_subclass__``). That is 0.7 G instructions of the 2.0 G that importing matplotlib.figure and its
Agg backend costs (valgrind callgrind on the machine of issue 29, matplotlib 3.11.2): a fifth of a second of
every figure a learner asks the command for. No one reads a docstring in the command's process, so there — and
only there: `qkv.cli.main` called with no arguments, i.e. as the ``qkv`` program or ``python -m qkv`` — the
``set`` docstrings say where the list is (matplotlib's documentation; ``help()`` in a Python of one's own)
instead. Everything else matplotlib makes is unchanged: the ``set`` methods' signatures (one keyword per
property), what they accept, every other docstring. A Python that imports qkv as a library (a notebook, a
script, the test suite's in-process calls of `qkv.cli.main`) imports matplotlib as it is.

`install` puts a finder first on `sys.meta_path` that, on the import of ``matplotlib.artist``, runs that module
as matplotlib's own loader would and then replaces its ``kwdoc`` (the finder then steps aside). If matplotlib is
already imported, or has no ``kwdoc`` (another version), nothing is changed.
"""

from __future__ import annotations

import importlib.machinery
import sys

__all__ = ["install", "SHORT"]

_MODULE = "matplotlib.artist"

SHORT = ("the properties this method sets are listed in matplotlib's documentation of the class (not written "
         "in the qkv command's process)")


def _short_kwdoc(artist) -> str:
    return SHORT


# Plain classes with the import protocol's methods (importlib.abc's base classes add nothing here, and
# importing importlib.abc costs the command more than this module does).
class _Loader:
    """matplotlib.artist's own loader, with ``kwdoc`` replaced once the module has run."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        if callable(getattr(module, "kwdoc", None)):
            module.kwdoc = _short_kwdoc


class _Finder:
    def find_spec(self, name, path, target=None):
        if name != _MODULE:
            return None
        _remove()
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader)
        return spec


_FINDER = _Finder()


def _remove() -> None:
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)


def install() -> None:
    """From now on in this process, matplotlib's artists get the short ``set`` docstring (see the module's
    docstring) — if matplotlib.artist is not imported yet; otherwise nothing changes."""
    if _MODULE not in sys.modules and _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
