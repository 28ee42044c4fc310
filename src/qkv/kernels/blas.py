"""NumPy's BLAS as the kernel uses it: the cblas_sgemm handed to the C walk, and BLAS held to one
thread while a kernel call runs (the kernel's own threads do the parallel work).

`sgemm_ready()`: whether `_fused.flash_rows`/`flash_many` have NumPy's cblas_sgemm (looked for once).
`single_thread()`: a context manager holding BLAS to one thread (counted across concurrent calls).
"""

from __future__ import annotations

import contextlib
import os
import threading

import numpy as np

from . import native   # the C extension (None when not built: no C walk, nothing to hand a BLAS to)

__all__ = ["sgemm_ready", "single_thread"]

_sgemm_lock = threading.Lock()
_sgemm_state = None   # None: not looked for yet; False: not found; True: handed to _fused
sgemm_found = None    # (address, ilp64) of the checked cblas_sgemm, also handed to the backward (autograd.py)
sgemm_path = None     # the file of the BLAS library it came from (NumPy's OpenBLAS)


def sgemm_ready() -> bool:
    """Whether _fused.flash_rows has a BLAS sgemm. The first call looks for cblas_sgemm in the BLAS
    libraries loaded in this process (threadpoolctl lists them; NumPy's comes first), checks it
    on a small product against NumPy, and hands its address to _fused."""
    global _sgemm_state
    chosen = native.machine_in_use()   # a `native.use_machine` block: its answer (False: the NumPy walks)
    fused = native.extension()
    if fused is None or (chosen is not None and not chosen.sgemm):
        return False
    if _sgemm_state is None:
        with _sgemm_lock:
            if _sgemm_state is None:
                _sgemm_state = _find_sgemm(fused)
    return _sgemm_state


def _find_sgemm(fused) -> bool:
    """Hands _fused the cblas_sgemm of the OpenBLAS that NumPy uses (other BLAS libraries: not
    used; the kernel then walks in Python). Its integer width comes from the library itself
    (openblas_get_config names USE64BITINT), never from a guess; the function is then checked on
    a small product against float64 NumPy."""
    import ctypes

    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return False
    numpy_dir = os.path.dirname(os.path.dirname(np.__file__))
    libraries = [info["filepath"] for info in threadpool_info()
                 if info.get("user_api") == "blas" and info.get("internal_api") == "openblas"]
    libraries.sort(key=lambda path: not path.startswith(numpy_dir))   # NumPy's own BLAS first
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for shape in ((3, 5), (7, 5), (7, 4)))
    expected = np.exp(q.astype(np.float64) @ k.T.astype(np.float64)) @ v.astype(np.float64)
    for path in libraries:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        # NumPy's wheels: scipy-openblas, symbols "scipy_…64_"; a plain OpenBLAS: no prefix or suffix.
        for prefix, suffix in (("scipy_", "64_"), ("scipy_", ""), ("", "64_"), ("", "")):
            sgemm = getattr(library, f"{prefix}cblas_sgemm{suffix}", None)
            config = getattr(library, f"{prefix}openblas_get_config{suffix}", None)
            if sgemm is None or config is None:
                continue
            config.restype = ctypes.c_char_p
            ilp64 = b"USE64BITINT" in (config() or b"")
            fused.set_sgemm(ctypes.cast(sgemm, ctypes.c_void_p).value, ilp64)
            acc, ref, l, alpha = np.zeros((3, 4), np.float32), *(np.zeros(3, np.float32) for _ in range(3))
            try:
                fused.flash_rows(q, k, v, acc, ref, l, alpha, None, np.empty((3, 7), np.float32),
                                 np.array([[0, 7, 0, 0, 0]], np.int64), None, 16.0)
            except Exception:   # pragma: no cover - a BLAS that refuses the call
                acc[:] = np.nan
            if np.allclose(acc, expected, rtol=1e-4, atol=1e-4):
                global sgemm_found, sgemm_path
                sgemm_found = (ctypes.cast(sgemm, ctypes.c_void_p).value, ilp64)
                sgemm_path = path
                return True
    fused.set_sgemm(0, False)
    return False


_blas_lock = threading.Lock()
_blas_users = 0
_blas_limiter = None   # threadpoolctl's limiter while any kernel call runs
_blas_controller = None
_inherited_limiter = None   # a forked child's copy of the parent's limiter (see _after_fork_in_child)


@contextlib.contextmanager
def single_thread():
    """Hold NumPy's BLAS to one thread while the kernel runs.

    Without it each of our threads would start BLAS's own threads: 2 workers × 2 BLAS threads
    on 2 cores. Uses threadpoolctl when installed; otherwise BLAS is left as it is. BLAS has one
    process-wide setting, so concurrent kernel calls share the limit (counted): the first sets
    it and the last one out restores what was there before.
    """
    global _blas_users, _blas_limiter, _blas_controller, _inherited_limiter
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        yield
        return
    with _blas_lock:
        if _blas_users == 0:
            if _blas_controller is None:   # finding the libraries takes ~0.3 ms: once
                _blas_controller = ThreadpoolController().select(user_api="blas").lib_controllers
            _blas_limiter = _OneThread(_blas_controller)
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                _blas_limiter.restore_original_limits()
                _blas_limiter = None
                if _inherited_limiter is not None:   # forked while the parent held the limit
                    _inherited_limiter.restore_original_limits()
                    _inherited_limiter = None


class _OneThread:
    """BLAS libraries (threadpoolctl's controllers, found once) held to one thread, each through its own
    setter, and put back by restore_original_limits: what threadpoolctl's limit() does, without listing
    every library's state anew on each kernel call (~60 µs a call measured, against ~2 µs)."""

    def __init__(self, controllers):
        self.saved = [(c, c.get_num_threads()) for c in controllers]
        for c, n in self.saved:
            if n is not None and n != 1:
                c.set_num_threads(1)

    def restore_original_limits(self) -> None:
        for c, n in self.saved:
            if n != 1 and n is not None:
                c.set_num_threads(n)


def _after_fork_in_child() -> None:
    """The child of os.fork() has no kernel call running: no BLAS-limit users. (The pool's fork gate
    lets no kernel call run across a fork; should one have held the BLAS limit, the saved limiter
    restores the original setting after the child's next kernel call.)"""
    global _blas_lock, _blas_users, _blas_limiter, _inherited_limiter
    _blas_lock = threading.Lock()
    if _blas_users and _blas_limiter is not None:
        _inherited_limiter = _blas_limiter
    _blas_users, _blas_limiter = 0, None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
