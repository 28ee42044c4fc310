"""The one handle on the C extension `qkv.kernels._fused` (None when it did not build).

Every module of the core reads the extension as `native.fused` at the time it uses it (never a copy
taken at import): the routes it allows, the C passes of the kernel, the training route, the max |x|
pass and the in-place GELU. `import_error` is why it is missing (None when built), as `qkv doctor`
says it.
"""

from __future__ import annotations

try:
    from . import _fused as fused
    import_error: ImportError | None = None
except ImportError as exc:   # not built (setup.py builds it as optional): the NumPy paths are used
    fused = None
    import_error = exc

__all__ = ["fused", "import_error"]
