"""`qkv serve`: a local web app to explore attention in the browser.

    qkv serve                              # MiniLM, at http://127.0.0.1:8000
    qkv serve --port 8080 --model ./my-bert --model ./tiny-gpt2

Loads each model once (MiniLM and every --model DIR), then serves the page and its JSON API
(docs/serve.md) on 127.0.0.1 only, unless --host names another address.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys

from ..errors import InputError
from ._options import add_lang_option, check_lang, words


def register(subparsers, t) -> None:
    parser = subparsers.add_parser("serve", help=t("serve"), description=t("serve.about"))
    parser.add_argument("--port", type=int, default=8000, metavar="N", help=t("serve.port"))
    parser.add_argument("--host", default="127.0.0.1", metavar="H", help=t("serve.host"))
    parser.add_argument("--model", action="append", default=[], metavar="DIR", help=t("serve.model"))
    parser.add_argument("--no-minilm", action="store_true", help=t("serve.no_minilm"))
    parser.add_argument("--no-translator", action="store_true", help=t("serve.no_translator"))
    add_lang_option(parser, t, "serve")
    parser.set_defaults(func=handler)


def _check(args: argparse.Namespace) -> None:
    check_lang(args.lang)
    if not 0 <= args.port <= 65535:
        raise InputError.keyed("cli.serve.port", value=args.port, field="--port")
    if args.host != "localhost":
        try:
            ipaddress.ip_address(args.host)
        except ValueError:
            raise InputError.keyed("cli.serve.host", value=repr(args.host), field="--host") from None
    if args.no_minilm and not args.model:
        raise InputError.keyed("cli.serve.no_model", field="--no-minilm")


def _allowed_hosts(host: str) -> list[str]:
    """Host headers accepted: the loopback names when bound to loopback (guards against DNS rebinding)."""
    if host in ("127.0.0.1", "localhost", "::1"):
        return ["127.0.0.1", "localhost", "[::1]"]
    return ["*"]


def handler(args: argparse.Namespace) -> int:
    _check(args)
    try:
        from .. import serve
    except ImportError as exc:
        raise InputError.keyed("cli.serve.needs", name=exc.name, field="serve") from None
    # bound before the models load and held until uvicorn serves on it: a port in use is one line at
    # once, and the port printed (a free one for --port 0) is the port served
    sock = serve.listen("localhost" if args.host == "localhost" else args.host, args.port)
    try:
        return _serve(args, serve, sock)
    finally:
        sock.close()


def _serve(args: argparse.Namespace, serve, sock) -> int:
    t = words(args.lang)
    models = serve.load_models(args.model, minilm=not args.no_minilm)
    translator, why = (None, "--no-translator") if args.no_translator else serve.load_translator()
    if translator is None and not args.no_translator:
        why = getattr(why, "by_lang", {}).get(args.lang, why)
        print(f"qkv serve: {t('cli.serve.no_translator', why=why)}", file=sys.stderr)
    app = serve.create_app(models, translator=translator, allowed_hosts=_allowed_hosts(args.host), lang=args.lang)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    port = sock.getsockname()[1]
    print(f"qkv serve: {t('cli.serve.at', models=', '.join(models), url=f'http://{shown}:{port}/', and_translator=t('cli.serve.and_translator') if translator else '')}",
          file=sys.stderr)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"qkv serve: {t('cli.serve.exposed', host=args.host)}", file=sys.stderr)
    serve.run(app, host=args.host, port=port, sock=sock)
    return 0
