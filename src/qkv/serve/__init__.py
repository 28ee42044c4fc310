"""`qkv serve`: a local web explorer — type text, open every layer and head of a real model, the
worked examples and your own example files, with the derivation of any cell.

    >>> from qkv import models, serve
    >>> app = serve.create_app({"minilm": models.load("minilm")})     # a Starlette (ASGI) app
    >>> serve.run(app, port=8000)                                      # doctest: +SKIP

The page and its JSON API are described in docs/serve.md (``GET /api`` lists the routes).
Starlette and uvicorn are needed (``pip install starlette uvicorn``; in a checkout ``make demo`` installs them).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .app import CSP, ROUTES, Limits, create_app

__all__ = ["create_app", "run", "listen", "server", "protocol", "load_models", "load_translator", "Limits", "ROUTES",
           "CSP", "LOOPBACK", "REQUEST_SECONDS", "KEEP_ALIVE_SECONDS", "WRITE_SECONDS", "MAX_HEADER_BYTES"]

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


class Why(str):
    """Why the translator is not available: the English line, plus ``by_lang`` (language → the line in it)."""

    by_lang: dict


def load_translator():
    """The shipped `qkv.translator` model, or (None, why) when it cannot be loaded: (model, None).
    ``why`` is one English line (a `Why`: ``why.by_lang["ko"]`` says it in Korean, for `qkv serve --lang`)."""
    from ..errors import reason
    from ..explain.texts import LANGS, text

    try:
        from .. import translator
        return translator.load(), None
    except (ImportError, InputError, OSError) as exc:
        def said(lang: str) -> str:
            if isinstance(exc, InputError):
                return exc.say(lang).splitlines()[0]
            if isinstance(exc, ImportError) and exc.name:
                return text(lang, "cli.serve.no_module", name=repr(exc.name))
            return reason(exc, lang) if lang != "en" else (str(exc).splitlines() or [type(exc).__name__])[0]

        why = Why(said("en"))
        why.by_lang = {lang: said(lang) for lang in LANGS}
        return None, why


REQUEST_SECONDS = 10.0
"""How long a client may take to send one whole request (headers and body) from its first byte, or
to start one after connecting: then the connection is closed. A connection that trickles a header
line every few seconds (slowloris) would otherwise be held open forever: uvicorn times out only
idle keep-alive connections. Computing the answer is not counted."""
KEEP_ALIVE_SECONDS = 5          # an idle connection between requests (uvicorn's timeout_keep_alive)
WRITE_SECONDS = 30.0
"""How long an answer may wait for a client that has stopped reading it (the connection's send buffer full)
before the connection is closed and what was waiting to be sent is dropped."""
MAX_HEADER_BYTES = 16 * 1024    # headers still unfinished after this many bytes are refused (400, h11's limit)


def listen(host: str = LOOPBACK, port: int = 8000):
    """A listening TCP socket bound to ``host``:``port`` (0: a free port the system picks; read it from
    ``sock.getsockname()[1]``). Bound here, once, and handed to uvicorn, so the port printed is the
    port served and a port in use is one InputError (not uvicorn's two log lines and exit 3)."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)    # as uvicorn binds
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InputError.keyed("cli.serve.in_use", port=port, host=host, field="--port") from None
        raise InputError.keyed("cli.serve.listen", host=host, port=port, reason=exc, field="--port") from None
    sock.set_inheritable(True)
    return sock


def protocol():
    """uvicorn's h11 protocol with two changes (the class is passed as ``http=``):

    - a deadline per request (`REQUEST_SECONDS` from its first byte, or from the connection's start,
      until the whole request has arrived), so a partial-header connection is closed;
    - a deadline per stalled answer (`WRITE_SECONDS` while the send buffer stays full: the client has
      stopped reading), after which the connection is dropped with what it still held;
    - its own 400 (a malformed request, headers unfinished after `MAX_HEADER_BYTES`) answered as every other error:
      JSON ``{"error": …}`` with the security headers (uvicorn's is plain text without them).
    """
    import json
    import socket
    import struct

    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from .app import SECURITY_HEADERS

    class Protocol(H11Protocol):
        _deadline = None
        _stalled = None

        def pause_writing(self) -> None:
            super().pause_writing()
            if self._stalled is None:
                self._stalled = self.loop.call_later(WRITE_SECONDS, self._not_reading)

        def resume_writing(self) -> None:
            self._unstall()
            super().resume_writing()

        def _unstall(self) -> None:
            if self._stalled is not None:
                self._stalled.cancel()
                self._stalled = None

        def _not_reading(self) -> None:
            self._stalled = None
            if not self.transport.is_closing():
                # close now, dropping the unsent bytes (close() would send them): abort() drops the transport's
                # own buffer, and a zero linger makes the kernel drop its send buffer too (up to megabytes,
                # which a plain close of the socket would go on trickling to the client that stopped reading)
                # and answer with a reset
                sock = self.transport.get_extra_info("socket")
                if sock is not None:
                    try:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    except OSError:
                        pass
                self.transport.abort()

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.transport.is_closing() or self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED,
                                                                         h11.ERROR):
                self._disarm()              # the whole request is in (or the connection is over)
            elif self._deadline is None:
                self._arm()                 # the first byte of the next request on a kept-alive connection

        def connection_lost(self, exc) -> None:
            self._disarm()
            self._unstall()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(REQUEST_SECONDS, self._too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                self.transport.close()

        def send_400_response(self, msg: str) -> None:
            body = json.dumps({"error": "invalid HTTP request (malformed, or headers unfinished after "
                                        f"{MAX_HEADER_BYTES // 1024} KiB)"}).encode()
            headers = [(b"content-type", b"application/json"), (b"connection", b"close"),
                       (b"content-length", str(len(body)).encode())] + list(SECURITY_HEADERS)
            try:
                for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                              h11.Data(data=body), h11.EndOfMessage()):
                    self.transport.write(self.conn.send(event))
            except h11.LocalProtocolError:      # a response had already begun: just close
                pass
            self.transport.close()

    return Protocol


def run(app, *, host: str = LOOPBACK, port: int = 8000, log_level: str = "warning", blas_threads: int | None = 1,
        sock=None) -> None:
    """Serve ``app`` with uvicorn until interrupted (Ctrl-C).

    sock: a listening socket from `listen` (the command line binds it before loading models); None
    binds ``host``:``port`` here. blas_threads: the BLAS thread pool of this process while it serves
    (None: leave it). One thread each lets the app's workers (2) run side by side without
    oversubscribing the cores: measured 5× lower median latency than OpenBLAS's default on a busy
    2-core machine (docs/serve.md). Connections: see `protocol` (`REQUEST_SECONDS`, `MAX_HEADER_BYTES`)
    and `KEEP_ALIVE_SECONDS`.
    """
    import contextlib

    limit = contextlib.nullcontext()
    if blas_threads is not None:
        from threadpoolctl import threadpool_limits

        limit = threadpool_limits(limits=blas_threads, user_api="blas")
    if sock is None:
        sock = listen(host, port)
    with limit, sock:
        server(app, sock, log_level=log_level).run(sockets=[sock])


def server(app, sock, *, log_level: str = "warning"):
    """The uvicorn Server that `run` starts on ``sock`` (its protocol, timeouts and header limit)."""
    import uvicorn

    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False, server_header=False,
                            date_header=False, http=protocol(), ws="none", timeout_keep_alive=KEEP_ALIVE_SECONDS,
                            h11_max_incomplete_event_size=MAX_HEADER_BYTES)
    return uvicorn.Server(config)
