"""`qkv serve`: a local web explorer — type text, open every layer and head of a real model, the
worked examples and your own example files, with the derivation of any cell.

    >>> from qkv import models, serve
    >>> app = serve.create_app({"minilm": models.load("minilm")})     # a Starlette (ASGI) app
    >>> serve.run(app, port=8000)                                      # doctest: +SKIP

The page and its JSON API are described in docs/serve.md (``GET /api`` lists the routes).
Starlette and uvicorn are needed (``pip install 'qkv[serve]'``).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .app import CSP, ROUTES, Limits, create_app

__all__ = ["create_app", "run", "load_models", "load_translator", "Limits", "ROUTES", "CSP", "LOOPBACK"]

LOOPBACK = "127.0.0.1"


def load_models(directories=(), *, minilm: bool = True) -> dict:
    """name → loaded model: "minilm" (unless ``minilm=False``) and each directory, once, in order.

    A directory is named by its folder; a repeated name gets "-2", "-3".
    Problems raise the loader's one-line `qkv.InputError`.
    """
    from ..models import load

    loaded: dict = {}
    for source in (["minilm"] if minilm else []) + [str(d) for d in directories]:
        model = load(source)
        name = "minilm" if source == "minilm" else (Path(source).resolve().name or str(source))
        base, n = name, 2
        while name in loaded:
            name, n = f"{base}-{n}", n + 1
        loaded[name] = model
    return loaded


def load_translator():
    """The shipped `qkv.translator` model, or (None, why) when it cannot be loaded: (model, None)."""
    try:
        from .. import translator
        return translator.load(), None
    except (ImportError, InputError, OSError) as exc:
        return None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def run(app, *, host: str = LOOPBACK, port: int = 8000, log_level: str = "warning", blas_threads: int | None = 1) -> None:
    """Serve ``app`` with uvicorn until interrupted (Ctrl-C).

    blas_threads: the BLAS thread pool of this process while it serves (None: leave it). One thread
    each lets the app's workers (2) run side by side without oversubscribing the cores: measured 5×
    lower median latency than OpenBLAS's default on a busy 2-core machine (docs/serve.md).
    """
    import contextlib

    import uvicorn

    limit = contextlib.nullcontext()
    if blas_threads is not None:
        from threadpoolctl import threadpool_limits

        limit = threadpool_limits(limits=blas_threads, user_api="blas")
    with limit:
        uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False, server_header=False,
                    date_header=False)
