"""The `qkv serve` web app: a Starlette application answering a JSON API and one page.

Every number the API returns comes from the library: a model's ``trace`` (a `qkv.Trace`, sent as
``Trace.to_json``), ``attention_weights``, the worked examples' ``qkv.examples.run`` and the
explanations of ``qkv.explain``. The server formats and limits; it computes nothing itself.

Routes (documented for people in docs/serve.md; ``GET /api`` lists them for scripts):

    GET  /                     the page (its state lives in the URL: a permalink per view)
    GET  /static/NAME          the page's script and styles (a fixed list, held in memory)
    GET  /api                  this route list, as JSON
    GET  /api/models           the models loaded at start-up: name, layers, heads, max_tokens
    GET  /api/examples         the worked examples: name and title (en, ko)
    GET  /api/tokens           ?model=&text=                      → tokens, reading (unread pieces)
    GET  /api/overview         ?model=&text=                      → every layer × head's weights (uint8)
    GET  /api/trace            ?model=&text=&layer=&head=[&query=][&steps=a,b] → Trace JSON
    GET  /api/explain          ?model=&text=&layer=&head=[&query=][&lang=][&digits=] → derivation HTML
    GET  /api/next             ?model=&text=[&k=][&temperature=]   → a decoder's next token and its heads' moves
    GET  /api/neuron           ?model=&text=&layer=&head=&query=&key= → q_i·k_i of one pair (the neuron view)
    GET  /api/example          ?name=[&query=][&lang=][&digits=]   → Trace JSON + derivation HTML
    POST /api/upload           ?filename=NAME.toml|.json[&lang=]  body: the file → as /api/example
    POST /api/whatif           [?lang=]  body: {name, factor, sqrt_dk, cells, scores} → as /api/example
    GET  /api/practice         ?name=[&seed=][&fresh=1][&lang=]    → a drill's questions (qkv.practice.shown)
    POST /api/practice/check   [?lang=]  body: {name, seed, fresh, question, answer} → qkv.practice.check's verdict

Errors answer ``{"error": "one line"}``: 400 bad input (the library's `InputError` message, the
CLI's line; about one parameter, ``field`` and ``problem`` give its name and the line after it apart), 404 unknown route, model or example, 405 wrong method, 413 upload too large,
422 text longer than the model takes, 429 too many requests at once (with Retry-After).

Security: the only files read are the model directories loaded at start-up (before the app is
built) and the package's own page assets (read once, when the app is built). No request path or
parameter reaches the file system: assets are looked up in an in-memory table, models and examples
by name in fixed lists, uploads are parsed from memory and may not name array files. Every answer
carries a Content-Security-Policy that allows requests to this origin only; the Host header must
name the address the server was bound to (DNS rebinding), and by default that is 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import random
import threading
from collections import OrderedDict
from dataclasses import dataclass
from importlib import resources
from typing import Any, Callable

import numpy as np
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .. import frontdoor
from .._io import as_number
from ..errors import InputError, python_reason
from ..trace import Trace

__all__ = ["Limits", "create_app", "ROUTES", "CSP", "LANGS"]

LANGS = frontdoor.LANGS

CSP = ("default-src 'none'; script-src 'self'; style-src-elem 'self'; style-src-attr 'unsafe-inline'; "
       "img-src 'self' data:; connect-src 'self'; font-src 'none'; object-src 'none'; form-action 'none'; "
       "base-uri 'none'; frame-ancestors 'none'")
"""Every answer's Content-Security-Policy: scripts, style sheets, images and fetches from this origin
only (style attributes are allowed: the explanations colour heads with them; they fetch nothing, as
img-src and font-src allow no outside address)."""

# The page's files: URL name → (package, file name, media type). Read once when the app is built.
# Paths are inside the qkv package (read through importlib.resources, without importing the renderers).
ASSETS = {
    "app.js": ("serve/app.js", "text/javascript; charset=utf-8"),
    "views.js": ("explain/views.js", "text/javascript; charset=utf-8"),   # the views shared with the static page
    "lenses.js": ("explain/lenses.js", "text/javascript; charset=utf-8"),   # next token, several heads (shared too)
    "serve.css": ("serve/serve.css", "text/css; charset=utf-8"),
    "lenses.css": ("explain/lenses.css", "text/css; charset=utf-8"),
    "page.css": ("explain/page.css", "text/css; charset=utf-8"),   # the static page's visual language
}

TRANSLATOR_LANGS = ("ko", "ja")

# Fields of an example file that hold arrays; in an upload they must be numbers, never file names.
_ARRAY_FIELDS = ("x", "memory", "w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o", "mask")

ROUTES = [
    ("GET", "/", "the page; its state (model, text, view, layer, head, cell, example, practice, lang) is in the URL"),
    ("GET", "/static/{name}", "the page's script and styles: " + ", ".join(ASSETS)),
    ("GET", "/api", "this list"),
    ("GET", "/api/models", "the models loaded at start-up: name, layers, heads, max_tokens, kind"),
    ("GET", "/api/examples", "the worked examples: name, title in en and ko, the post they come from (id, title)"),
    ("GET", "/api/words", "the page's words in en and ko (qkv.explain.texts, keys serve.ui.*)"),
    ("GET", "/api/style", "the one colour scale of weights (qkv.explain.style): gamma, Blues stops, legend ticks, masked colour"),
    ("GET", "/api/tokens?model=&text=", "the tokens the model sees, and how many of them it does not read "
     "(reading: unknown, split, pieces, hangul, examples, korean, unknown_token)"),
    ("GET", "/api/overview?model=&text=",
     "every layer × head: tokens, shape [L, H, T, T] and the weights as base64 uint8, round(weight·255), "
     "row-major (for thumbnails; exact numbers come from /api/trace)"),
    ("GET", "/api/trace?model=&text=&layer=&head=[&query=][&steps=a,b]",
     "the library's Trace of that head as Trace.to_json (steps=: keep only the named steps; a name ending "
     "in ? is kept when recorded, e.g. mask?); without "
     "layer and head, the whole model's weights (steps 'layer L/weights')"),
    ("GET", "/api/explain?model=&text=&layer=&head=[&query=][&lang=en|ko][&digits=N]",
     "the step-by-step derivation of that head for the query, as an HTML fragment: {\"html\": …}"),
    ("GET", "/api/neuron?model=&text=&layer=&head=&query=&key=",
     "the neuron view of one query/key pair of a head (qkv.analysis.score_terms): q and k (after RoPE where the "
     "model turns them), the products q_i·k_i ('terms'), their 'sum', and the recorded 'score' and 'scaled' score"),
    ("GET", "/api/next?model=&text=[&k=][&temperature=]",
     "a decoder's next token after the text (qkv.models.next_token): the k likeliest (default 10, at most 50) with "
     "their logits and softmax(logit / T) at each of 'temperatures' (and at temperature=, in 'at'), and each head's "
     "‖z^h·W_O^h‖ at the last position with its share of its layer ('head_norms', 'head_shares' [L][H])"),
    ("GET", "/api/example?name=[&query=][&lang=][&digits=]",
     "a worked example: {\"name\", \"title\", \"trace\": Trace JSON, \"html\": derivation}"),
    ("POST", "/api/whatif[?lang=][&digits=]",
     "a worked example recomputed with changes; body: {\"name\", \"factor\" (multiplies the scores), \"sqrt_dk\" "
     "(true/false), \"cells\": {\"x\": [[row, column, value], …], \"w_q\": …}, \"scores\" (group meeting: "
     "{\"question\": [[position, score], …]})}: as /api/example plus \"what_if\""),
    ("POST", "/api/upload?filename=NAME.toml|NAME.json[&lang=][&digits=]",
     "an example file of your own (the request body; held in memory, arrays given inline): as /api/example"),
    ("GET", "/api/practice?name=[&seed=N][&fresh=1][&lang=]",
     "a practice drill of a worked example (qkv.practice): {\"seed\", \"fresh\", \"header\", \"attempts\", "
     "\"lines\", \"questions\": [{\"title\", \"given\", \"ask\", \"digits\"}]}, without the answers; no seed: one is drawn"),
    ("POST", "/api/practice/check[?lang=]",
     "check a typed answer; body: {\"name\", \"seed\", \"fresh\", \"question\" (from 0), \"answer\" (the typed text)}: "
     "{\"status\": right|wrong|bad, \"lines\", \"reveal\"} (qkv.practice.check)"),
    ("GET", "/api/translate?text=&to=ko|ja",
     "the translator (when loaded): source and target words, cross-attention [L, H, T, S] as base64 uint8"),
    ("GET", "/api/translate/trace?text=&to=&layer=[&word=N][&steps=]",
     "Trace JSON of decoder layer L's cross-attention (every head; word N, from 1, is the followed query)"),
    ("GET", "/api/translate/explain?text=&to=&layer=&word=N[&lang=][&digits=]",
     "the derivation of word N's cross-attention in that layer, as HTML: {\"html\": …}"),
]


@dataclass(frozen=True)
class Limits:
    """What one server accepts.

    workers: computations running at once (threads); queue: requests waiting beyond those before
    the server answers 429; upload_bytes: the largest example file (413 beyond); text_chars: the
    longest text accepted before tokenising (422 beyond; the model's own token limit applies too);
    cache_bytes: memory for the weights and traces of recent requests.
    """

    workers: int = 2
    queue: int = 8
    upload_bytes: int = 256 * 1024
    text_chars: int = 10_000
    cache_bytes: int = 64 * 1024 * 1024


class ApiError(Exception):
    """An answer other than 200: the status and one line for the user."""

    def __init__(self, status: int, message: str, headers: dict | None = None, *, field: str | None = None):
        """field: the parameter the message is about; the line is then "field: message" and the answer
        also gives ``field`` and ``problem`` (message) apart."""
        line = f"{field}: {message}" if field else message
        super().__init__(line)
        self.status, self.message, self.headers = status, line, headers or {}
        self.field, self.problem = field, message


# ---------------------------------------------------------------------------------------------- models
class ModelEntry:
    """A loaded model plus what the server needs to limit its inputs (a tokenizer that never truncates)."""

    def __init__(self, name: str, model: Any):
        self.name, self.model = name, model
        self.config = model.config
        self.max_tokens = _max_tokens(model)
        self._counter = _untruncated(getattr(model, "tokenizer", None))

    def describe(self) -> dict:
        return {"name": self.name, "layers": int(self.config.n_layers), "heads": int(self.config.n_heads),
                "max_tokens": self.max_tokens, "kind": type(self.model).__name__}

    def _tokenizer(self):
        tokenizer = self._counter if self._counter is not None else getattr(self.model, "tokenizer", None)
        return tokenizer if tokenizer is not None and hasattr(tokenizer, "encode") else None

    def reading(self, text: str, encoding=None) -> dict | None:
        """How many of the text's pieces the tokenizer does not read ([UNK], letters taken apart), counted from
        its own output (`qkv.models.reading`); None for a model without a `tokenizers.Tokenizer`. encoding: what
        `check_text` returned for the text (the text is then not encoded again)."""
        from ..models.reading import READS_KOREAN, reading

        tokenizer = self._tokenizer()
        if tokenizer is None:
            return None
        # unknown_token: the page gives examples of the pieces taken apart only ([UNK] is its own example)
        return dict(reading(text, tokenizer, encoding=encoding).describe(), korean=READS_KOREAN,
                    unknown_token=getattr(getattr(tokenizer, "model", None), "unk_token", None))

    def check_text(self, text: str, limits: Limits, lang: str = "en"):
        """400 for an empty text or one the tokenizer makes nothing of, 422 when it is longer than the model takes
        (the tokenizer would silently cut it). Returns the tokenizer's encoding of the text (None without one):
        the one encoding that is checked, counted and read again by `reading`."""
        _check_chars(text, limits, lang)
        if not text.strip():
            raise ApiError(400, _say(lang, 'error.empty_text'), field="text")
        tokenizer = self._tokenizer()
        encoding = tokenizer.encode(text) if tokenizer is not None else None
        if encoding is not None:
            from ..models.reading import unseen

            chars = unseen(text, tokenizer, encoding=encoding)   # only characters it drops (U+200B …): specials alone
            if chars is not None:
                raise ApiError(400, _say(lang, 'error.unseen_text', chars=" ".join(chars)), field="text")
        if self.max_tokens is None:
            return encoding
        # the untruncated copy's encoding counts every token; a model without one counts its own tokens
        count = len(encoding.ids) if self._counter is not None else len(self.model.tokens(text))
        if count > self.max_tokens:
            raise ApiError(422, _say(lang, 'error.tokens', count=count, model=self.name, limit=self.max_tokens), field="text")
        return encoding


def _check_chars(text: str, limits: Limits, lang: str) -> None:
    if len(text) > limits.text_chars:
        raise ApiError(422, _say(lang, 'error.chars', count=f'{len(text):,}', limit=f'{limits.text_chars:,}'), field="text")


def _named(entry: ModelEntry, trace: Trace) -> Trace:
    """The trace with the model called by its name in this server, not by the directory it was loaded from
    (a title or meta holding /home/…/my-model would show the server's file system to the page)."""
    own = str(getattr(entry.model, "name", "") or "")
    if own and own != entry.name:
        if trace.title.startswith(own):
            trace.title = entry.name + trace.title[len(own):]
        if trace.meta.get("model") == own:
            trace.meta["model"] = entry.name
    return trace


def _max_tokens(model: Any) -> int | None:
    for owner, name in ((model, "max_tokens"), (getattr(model, "pooling", None), "max_seq_length"),
                        (model.config, "max_positions")):
        value = getattr(owner, name, None) if owner is not None else None
        if isinstance(value, int) and value > 0:
            return value
    return None


def _untruncated(tokenizer: Any):
    """A copy of a `tokenizers.Tokenizer` with truncation switched off (to count a text's tokens), or None."""
    from tokenizers import Tokenizer

    if not isinstance(tokenizer, Tokenizer):
        return None
    counter = Tokenizer.from_str(tokenizer.to_str())
    counter.no_truncation()
    return counter


class Cache:
    """Recent results (a model's weights (L, H, T, T), Traces), least recently used dropped first, bounded in bytes.

    Two requests for the same key at once may both compute it (the second result is dropped): simpler
    than a lock per key, and the gate bounds how many run.
    """

    def __init__(self, max_bytes: int):
        self.max_bytes, self.bytes = max_bytes, 0
        self._items: OrderedDict[tuple, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple, compute: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][0]
        value = compute()
        size = _nbytes(value)
        with self._lock:
            if key not in self._items and size <= self.max_bytes:
                self._items[key] = (value, size)
                self.bytes += size
                while self.bytes > self.max_bytes:
                    _, (_, dropped) = self._items.popitem(last=False)
                    self.bytes -= dropped
        return value


def _nbytes(value: Any) -> int:
    if isinstance(value, Trace):
        return sum(step.value.nbytes for step in value.steps) + 1024
    if hasattr(value, "head_norms"):                 # a next token (qkv.models.NextToken)
        return int(value.logits.nbytes + 2 * value.head_norms.nbytes) + 1024
    if hasattr(value, "cross_weights"):              # a translation
        return int(value.cross_weights.nbytes) + 1024
    return int(getattr(value, "nbytes", 1024))


# ---------------------------------------------------------------------------------------------- the gate
class Gate:
    """At most ``workers`` computations at once and ``queue`` more waiting; beyond that, 429 at once."""

    def __init__(self, workers: int, queue: int):
        self.capacity = workers + queue
        self.inside = 0
        self._running = asyncio.Semaphore(workers)

    async def run(self, function: Callable[..., Any], *args: Any, lang: str = "en") -> Any:
        if self.inside >= self.capacity:
            raise ApiError(429, _say(lang, "error.busy", count=self.capacity), {"Retry-After": "1"})
        self.inside += 1
        try:
            async with self._running:
                return await run_in_threadpool(function, *args)
        finally:
            self.inside -= 1


# ---------------------------------------------------------------------------------------------- helpers
def _int_param(request: Request, name: str, *, required: bool = True) -> int | None:
    value = request.query_params.get(name)
    if value is None or value == "":
        if required:
            raise ApiError(400, _say(_lang_said(request), 'error.missing_number'), field=name)
        return None
    from .._io import as_int

    number = as_int(value.strip())
    if number is None or len(value.strip().lstrip("+-")) > 18:
        raise ApiError(400, _say(_lang_said(request), 'error.whole', value=repr(value[:20])), field=name)
    return number


def _missing_layer_or_head(request: Request) -> str:
    return "layer" if request.query_params.get("layer") in (None, "") else "head"


def _lang(request: Request) -> str:
    try:
        return frontdoor.check_lang(request.query_params.get("lang", "en"), field="lang")
    except InputError as exc:
        raise exc from None             # `_input_error`: "lang: …", field and problem apart


def _lang_said(request: Request) -> str:
    """The language of the answer's error lines: lang=ko gives Korean, anything else English."""
    return "ko" if request.query_params.get("lang") == "ko" else "en"


def _digits(request: Request) -> int | None:
    digits = _int_param(request, "digits", required=False)
    try:
        return frontdoor.check_digits(digits, field="digits")
    except InputError as exc:
        raise exc from None


def _query(request: Request) -> int | str | None:
    """query= is a token (its first occurrence) or a row index, as `qkv inspect --query` takes it."""
    value = request.query_params.get("query")
    if value is not None and len(value) > 200:
        raise ApiError(400, _say(_lang_said(request), 'error.query_long', n=len(value)), field="query")
    return None if value in (None, "") else value


def _text(request: Request) -> str:
    text = request.query_params.get("text")
    if text is None:
        raise ApiError(400, _say(_lang_said(request), 'error.no_text'), field="text")
    return text


def _json(data: Any, status: int = 200, headers: dict | None = None) -> Response:
    return Response(json.dumps(data, ensure_ascii=False, allow_nan=False), status_code=status,
                    media_type="application/json", headers=headers)


def _scope_lang(scope) -> str:
    """The language of a middleware's answer, read from the raw query (lang=ko: Korean), as `_lang_said`."""
    from urllib.parse import parse_qs

    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return "ko" if query.get("lang", [""])[0] == "ko" else "en"


def _query_problem(scope) -> dict | None:
    """A query string whose percent-encoded bytes are not UTF-8 (a lone surrogate "%ED%A0%80", a stray "%FF"):
    starlette would read each such byte as U+FFFD and the request would run on text nobody sent. The answer
    names the parameter and the bytes; None when every name and value is UTF-8."""
    from urllib.parse import unquote_to_bytes

    seen: set[bytes] = set()
    for part in scope.get("query_string", b"").split(b"&"):
        name, _, value = part.partition(b"=")
        plain = unquote_to_bytes(name.replace(b"+", b" "))
        if plain and plain in seen:       # k=3&k=50: one would silently win (starlette keeps the last)
            field = plain.decode("utf-8", "replace")[:40]
            problem = _say(_scope_lang(scope), "error.repeated")
            return {"error": f"{field}: {problem}", "field": field, "problem": problem}
        seen.add(plain)
        for piece in (name, value):
            raw = unquote_to_bytes(piece.replace(b"+", b" "))
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                field = unquote_to_bytes(name.replace(b"+", b" ")).decode("utf-8", "replace")[:40]
                bad = "".join(f"%{b:02X}" for b in raw[exc.start:exc.end][:8])
                problem = _say(_scope_lang(scope), "error.query_utf8", bytes=bad)
                return {"error": f"{field}: {problem}", "field": field, "problem": problem}
    return None


STREAM_CHUNK = 256 * 1024         # the bytes of a streamed trace sent at a time


def _trace_response(trace: Trace) -> Response:
    """A trace's JSON (exactly `Trace.to_json()`), made and sent a piece at a time (`Trace.iter_json`), never
    held whole: a whole model's trace is about 100 MB of JSON (MiniLM, 256 tokens), and a client that asks
    for it and reads slowly, or never, holds only the pieces in flight (uvicorn waits for the client before
    it takes the next; `qkv.serve.WRITE_SECONDS` closes a connection that stops reading)."""
    from starlette.responses import StreamingResponse

    def pieces():
        held: list[bytes] = []
        size = 0
        for text in trace.iter_json():
            data = text.encode("utf-8")
            held.append(data)
            size += len(data)
            if size >= STREAM_CHUNK:
                yield b"".join(held)
                held, size = [], 0
        if held:
            yield b"".join(held)

    return StreamingResponse(pieces(), media_type="application/json")


async def _body(request: Request, limit: int, too_large: Callable[[], ApiError]) -> bytes | None:
    """A request's body, at most ``limit`` bytes (else ``too_large()`` is raised), or None when the client went
    away before sending all of it (a body cut off: there is nobody to answer, and nothing to log)."""
    from starlette.requests import ClientDisconnect

    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise too_large()
    except ClientDisconnect:
        return None
    return bytes(body)


def _gone() -> Response:
    """The answer to a request whose client went away mid-body: never sent (uvicorn drops it), never logged."""
    return Response(status_code=400)


class _RepeatedKey(ValueError):
    pass


def _no_repeated_keys(pairs: list) -> dict:
    found: dict = {}
    for key, value in pairs:
        if key in found:
            raise _RepeatedKey(key)
        found[key] = value
    return found


def _body_json(body: bytes, lang: str) -> Any:
    """A JSON request body parsed, or a 400 naming what is wrong: not UTF-8, not JSON, nested too deep, or a
    string holding a lone surrogate ("\\ud800": JSON may write it, but it is no character; `qkv._io.check_strings`)."""
    from .._io import check_strings

    try:
        payload = json.loads(body.decode("utf-8"), object_pairs_hook=_no_repeated_keys)
    except _RepeatedKey as exc:          # {"seed": 0, "seed": 5}: Python's json keeps the last without a word
        problem = _say(lang, "json.repeated", name=json.dumps(exc.args[0][:40], ensure_ascii=False))
    except UnicodeDecodeError as exc:
        problem = _say(lang, "json.utf8", at=exc.start + 1)
    except json.JSONDecodeError as exc:
        problem = _say(lang, "json.syntax", line=exc.lineno, column=exc.colno)
    except (ValueError, RecursionError):      # RecursionError: nested too deep (ValueError: the same, as json says it)
        problem = _say(lang, "json.deep")
    else:
        return check_strings(payload, source="request")
    # the problem in the request's language (Python's own words, "Expecting value: …", are English)
    raise ApiError(400, _say(lang, "whatif.json", problem=problem))


def _steps_filter(trace: Trace, request: Request) -> Trace:
    wanted = request.query_params.get("steps")
    if not wanted:
        return trace
    names = [n.strip() for n in wanted.split(",") if n.strip()]
    unknown = [n for n in names if n not in trace and not n.endswith("?")]      # "name?": only if recorded
    names = [n.removesuffix("?") for n in names]
    if unknown:
        raise ApiError(400, _say(_lang_said(request), 'error.no_step', name=repr(unknown[0]), steps=', '.join(trace.names())), field="steps")
    return Trace(trace.title, trace.meta, [s for s in trace.steps if s.name in names])


def _example_title(name: str, lang: str) -> str:
    from ..explain import texts

    return texts.text(lang, f"title.{name}")


def _parse_upload(data: bytes, filename: str) -> dict:
    """The document of an uploaded example file, parsed by `qkv.spec.parse_document` as `qkv explain FILE`
    parses a file (the same bounds and one-line messages; the source is the file's name)."""
    from .._io import decode_utf8
    from ..spec import parse_document

    suffix = "." + filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    doc = parse_document(decode_utf8(data, source=filename), source=filename, suffix=suffix)
    for field in _ARRAY_FIELDS:   # a file name here would make the parser read that file: refuse it
        value = doc.get(field)
        if isinstance(value, dict) or (isinstance(value, str) and not (field == "mask" and value == "causal")):
            raise InputError.keyed("error.upload.array_file", source=filename, field=field)
    return doc


def _upload_trace(doc: dict, filename: str, query: Any) -> Trace:
    """As `qkv explain FILE` does (`qkv.frontdoor.trace_from_document`): a saved trace is read back, an
    example file is computed."""
    return frontdoor.trace_from_document(doc, source=filename, base=None, query=query, field="query")


# ---------------------------------------------------------------------------------------------- what-if
WHATIF_BYTES = 16 * 1024          # the largest what-if request body
WHATIF_EDITS = 256                # cells changed in one request, at most
WHATIF_CELL = 1e4                 # |a cell| or |a score| at most (the group meeting's 1000 fits)
WHATIF_FACTOR = (0.0, 100.0)      # the factor multiplying the scores (1: as the example has it)
WHATIF_FIELDS = ("name", "query", "factor", "sqrt_dk", "cells", "scores")
PRACTICE_BYTES = 4 * 1024         # the largest practice answer body (a typed answer and where it belongs)


def _say(lang: str, key: str, **values) -> str:
    """A serve message in the page's language (texts.py "serve.*" keys)."""
    from ..explain import texts

    return texts.text(lang, f"serve.{key}", **values)


def _bad(lang: str, field: str, key: str, **values) -> ApiError:
    return ApiError(400, _say(lang, key, **values), field=field)


def _finite(value: Any, field: str, lang: str, low: float, high: float) -> float:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 1e300:
        value = float("inf")                       # a huge whole number: refused below as not finite
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise _bad(lang, field, "whatif.number", value=json.dumps(value, ensure_ascii=False)[:40])
    if not low <= value <= high:
        raise _bad(lang, field, "whatif.range", value=_g(value), low=_g(low), high=_g(high))
    return float(value)


def _g(value: float) -> str:
    return f"{value:g}".replace("-", "−")


def _index(value: Any, field: str, lang: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(lang, field, "whatif.whole", value=json.dumps(value, ensure_ascii=False)[:40])
    return value


class WhatIf:
    """A checked what-if request: which example, the factor on its scores, √d_k on or off, edited cells.

    factor multiplies the scores before the softmax (a temperature of 1/factor); with sqrt_dk off the
    scores are not divided by √d_k. cells: matrix → [[row, column, value], …] of the example's inputs;
    scores: the group meeting's meeting → [[position, score], …].
    """

    def __init__(self, body: Any, lang: str, names: list[str]):
        if not isinstance(body, dict):
            raise ApiError(400, _say(lang, "whatif.body"))
        unknown = [k for k in body if k not in WHATIF_FIELDS]
        if unknown:
            raise _bad(lang, str(unknown[0])[:40], "whatif.unknown_field", fields=", ".join(WHATIF_FIELDS))
        name = body.get("name")
        if name not in names:
            raise ApiError(404, _say(lang, 'whatif.name', name=json.dumps(name, ensure_ascii=False)[:60], names=', '.join(names)), field="name")
        self.name, self.lang = name, lang
        self.query = body.get("query")
        if isinstance(self.query, bool) or not isinstance(self.query, (str, int, type(None))):
            raise _bad(lang, "query", "whatif.query")
        self.factor = _finite(body.get("factor", 1.0), "factor", lang, *WHATIF_FACTOR)
        sqrt_dk = body.get("sqrt_dk", True)
        if not isinstance(sqrt_dk, bool):
            raise _bad(lang, "sqrt_dk", "whatif.bool", value=json.dumps(sqrt_dk, ensure_ascii=False)[:40])
        self.sqrt_dk = sqrt_dk
        self.cells = self._cells(body.get("cells", {}))
        self.scores = self._scores(body.get("scores", {}))
        if sum(len(v) for v in self.cells.values()) + sum(len(v) for v in self.scores.values()) > WHATIF_EDITS:
            raise _bad(lang, "cells", "whatif.too_many", limit=WHATIF_EDITS)

    def _cells(self, cells: Any) -> dict[str, list[tuple[int, int, float]]]:
        lang = self.lang          # which matrices an example may edit: the library's what-if says
        return {matrix: [(_index(edit[0], field, lang), _index(edit[1], field, lang),
                          _finite(edit[2], field, lang, -WHATIF_CELL, WHATIF_CELL)) for field, edit in edits]
                for matrix, edits in self._edits(cells, "cells", 3, "whatif.cell")}

    def _scores(self, scores: Any) -> dict[str, list[tuple[int, float]]]:
        lang = self.lang
        return {scene: [(_index(edit[0], field, lang), _finite(edit[1], field, lang, -WHATIF_CELL, WHATIF_CELL))
                        for field, edit in edits]
                for scene, edits in self._edits(scores, "scores", 2, "whatif.score_cell")}

    def _edits(self, value: Any, name: str, arity: int, item_key: str):
        """(key, [(field, edit), …]) for each key of a what-if's {key: [[…], …]} object (name: "cells" or
        "scores"), each edit a list of `arity` items; a 400 naming the field otherwise, or past WHATIF_EDITS."""
        lang = self.lang
        if not isinstance(value, dict):
            raise _bad(lang, name, f"whatif.{name}")
        for key, edits in value.items():
            label = f"{name}.{str(key)[:20]}"
            if not isinstance(edits, list):
                raise _bad(lang, label, f"whatif.{name}")
            if len(edits) > WHATIF_EDITS:
                raise _bad(lang, label, "whatif.too_many", limit=WHATIF_EDITS)
            fields = [f"{label}[{n}]" for n in range(len(edits))]
            for field, edit in zip(fields, edits):
                if not isinstance(edit, list) or len(edit) != arity:
                    raise _bad(lang, field, item_key, value=json.dumps(edit, ensure_ascii=False)[:60])
            yield key, list(zip(fields, edits))

    def describe(self) -> dict:
        return {"name": self.name, "factor": self.factor, "sqrt_dk": self.sqrt_dk,
                "cells": {m: [list(e) for e in edits] for m, edits in self.cells.items()},
                "scores": {s: [list(e) for e in edits] for s, edits in self.scores.items()}}

    # ------------------------------------------------------------------ the run
    def check(self) -> None:
        """What only serve words its own way: the group meeting has no query to choose (the library's line
        names the CLI's --query). Indices are checked by the library's what-if, said in the page's language."""
        if self.name == "group-meeting" and self.query is not None:
            raise _bad(self.lang, "query", "whatif.meeting_query")

    def trace(self) -> Trace:
        """The example run again with the changes, by the library's own what-if (`qkv.examples.run(name,
        changes=Changes(...))`: the same runner and core as the unchanged example)."""
        from .. import examples

        self.check()
        changes = examples.Changes(self.factor, self.sqrt_dk,
                                   {m: tuple(edits) for m, edits in self.cells.items()},
                                   {s: tuple(edits) for s, edits in self.scores.items()})
        try:
            return examples.run(self.name, query=self.query, changes=changes)
        except InputError as exc:
            if exc.field == "--query" and self.name == "multi-head":       # it follows one token only
                meta = examples.run(self.name).meta
                raise _bad(self.lang, "query", "whatif.multi_head_query", token=meta["tokens"][meta["query"]]) from None
            raise


@functools.lru_cache(maxsize=None)
def _editable_json(name: str) -> str:
    from .. import examples

    doc = examples.load(name)
    editable = examples.EDITABLE.get(name, ())
    inputs, width, heads = {}, 0, 1
    if name == "multi-head":               # head 1 is the self-attention example; W_O is the multi-head's own
        first = examples.load(doc["first_head"])
        inputs = {m: first[m] for m in editable if m != "w_o"}
        inputs["w_o"] = doc["w_o"]
        width = len(first["w_q"][0])
    elif editable:
        inputs = {m: doc[m] for m in editable if m in doc}
        width, heads = len(doc["w_q"][0]), int(doc.get("heads", 1))
    return json.dumps({"inputs": inputs, "d_k": width // heads if inputs else None})


def _editable(name: str) -> dict:
    """The inputs a what-if may edit (as the example's TOML gives them) and d_k, for the page's editor."""
    return json.loads(_editable_json(name))


# ---------------------------------------------------------------------------------------------- the app
def create_app(models: dict[str, Any], *, translator: Any = None, limits: Limits = Limits(),
               allowed_hosts: list[str] | None = None, lang: str = "en") -> Starlette:
    """The web app serving ``models`` (name → a loaded model, e.g. ``{"minilm": qkv.models.load("minilm")}``).

    translator: a loaded `qkv.translator` model (its cross-attention gets a tab and /api/translate…), or None.
    allowed_hosts: Host header values accepted (default: the loopback names 127.0.0.1, localhost, [::1]);
    ["*"] accepts any (use with a --host other than loopback).
    lang: the page's language when a link names none (``?lang=`` still chooses; `qkv serve --lang`).
    """
    if not models:
        raise ValueError("models is empty: give at least one loaded model")
    entries = {name: ModelEntry(name, model) for name, model in models.items()}
    package = resources.files("qkv")
    assets = {name: (package.joinpath(file).read_bytes(), media) for name, (file, media) in ASSETS.items()}
    index_html = package.joinpath("serve/index.html").read_bytes()
    if lang != "en":                       # app.js opens in <html lang> when the link has no ?lang=
        from ..frontdoor import check_lang

        index_html = index_html.replace(b'<html lang="en">', f'<html lang="{check_lang(lang)}">'.encode(), 1)
    cache = Cache(limits.cache_bytes)
    from .. import examples

    worked = {name: examples.run(name) for name in examples.names()}   # read once, from the package
    gates: dict[int, Gate] = {}   # one per event loop (asyncio objects belong to the loop that made them)

    def gate() -> Gate:
        loop = id(asyncio.get_running_loop())
        if loop not in gates:
            gates.clear()
            gates[loop] = Gate(limits.workers, limits.queue)
        return gates[loop]

    def entry(request: Request) -> ModelEntry:
        name = request.query_params.get("model") or next(iter(entries))
        if name not in entries:
            raise ApiError(404, _say(_lang_said(request), 'error.model', name=repr(name[:60]), loaded=', '.join(entries)), field="model")
        return entries[name]

    def weights_of(model: ModelEntry, text: str) -> np.ndarray:
        return cache.get(("weights", model.name, text), lambda: np.asarray(model.model.attention_weights(text)))

    # ------------------------------------------------------------------ page
    async def page(request: Request) -> Response:
        return Response(index_html, media_type="text/html; charset=utf-8")

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in assets:      # a table lookup: no request path ever reaches the file system
            raise ApiError(404, _say(_lang_said(request), "error.no_file", name=repr(name[:60])))
        body, media = assets[name]
        return Response(body, media_type=media, headers={"Cache-Control": "no-cache"})

    # ------------------------------------------------------------------ api
    async def api_index(request: Request) -> Response:
        return _json({"routes": [{"method": m, "path": p, "description": d} for m, p, d in ROUTES],
                      "docs": "docs/serve.md"})

    async def api_models(request: Request) -> Response:
        about = None
        if translator is not None:
            about = {"langs": list(TRANSLATOR_LANGS), "layers": len(translator.decoder),
                     "heads": int(translator.config.n_heads)}
        return _json({"models": [e.describe() for e in entries.values()], "translator": about})

    # ------------------------------------------------------------------ the translator's cross-attention
    def translation(request: Request):
        if translator is None:
            raise ApiError(404, _say(_lang_said(request), "error.no_translator"))
        text, lang = _text(request), _lang_said(request)
        _check_chars(text, limits, lang)
        translator.source_ids(text)      # the translator's own checks (InputError, said in the page's language)
        to = request.query_params.get("to", "ko")
        if to not in TRANSLATOR_LANGS:
            raise frontdoor.not_one_of(to, TRANSLATOR_LANGS, field="to", lang=lang)
        return text, to, lambda: cache.get(("translation", text, to), lambda: translator.translate(text, to))

    async def api_translate(request: Request) -> Response:
        _, to, make = translation(request)

        def compute() -> dict:
            from ..translator.model import UNSURE

            result = make()
            levels = np.rint(np.clip(result.cross_weights, 0.0, 1.0) * 255).astype(np.uint8)   # (L, H, T, S)
            least, lowest = result.least_likely
            return {"source": list(result.source), "target": list(result.target), "to": to,
                    "shape": list(levels.shape), "weights": base64.b64encode(levels.tobytes()).decode("ascii"),
                    "scale": 255,
                    # how sure the model was (as `qkv translate` prints it): each chosen token's probability,
                    # the end's (None: no </s> within max_len words), the sentence's; below UNSURE the least
                    # likely choice is named (index len(target): the end)
                    "probabilities": [float(p) for p in result.probabilities],
                    "end_probability": None if result.end_probability is None else float(result.end_probability),
                    "sequence_probability": float(result.sequence_probability), "unsure_below": UNSURE,
                    "least_likely": {"index": least, "probability": lowest,
                                     "token": result.target[least] if least < len(result.target) else None}}

        return _json(await gate().run(compute, lang=_lang_said(request)))

    def cross_trace(request: Request):
        from ..translator.explain import cross_attention_trace

        text, to, make = translation(request)
        lang = _lang_said(request)
        layer = _int_param(request, "layer")
        word = _int_param(request, "word", required=False)
        word = 1 if word is None else word
        layers = len(translator.decoder)
        if not 0 <= layer < layers:
            raise ApiError(400, _say(lang, 'error.layer', layer=layer, last=layers - 1), field="layer")
        key = ("cross trace", text, to, layer, word)

        def compute() -> Trace:
            translated = make()
            if not 1 <= word <= len(translated.target):      # word counts from 1: 0 is refused, never read as 1
                raise ApiError(400, _say(lang, 'error.word', word=word, last=len(translated.target)), field="word")
            return cache.get(key, lambda: cross_attention_trace(translator, translated, word=word, layer=layer))

        return compute

    async def api_translate_trace(request: Request) -> Response:
        make = cross_trace(request)

        def compute() -> Trace:
            return _steps_filter(make(), request)

        return _trace_response(await gate().run(compute, lang=_lang_said(request)))

    async def api_translate_explain(request: Request) -> Response:
        lang, digits = _lang(request), _digits(request)
        make = cross_trace(request)

        def compute() -> dict:
            from ..explain import derivation_html

            trace = make()
            return {"html": derivation_html(trace, lang=lang, digits=digits), "query": trace.meta.get("query")}

        return _json(await gate().run(compute, lang=_lang_said(request)))

    async def api_style(request: Request) -> Response:
        from ..explain import style

        return _json({"gamma": style.WEIGHT_GAMMA, "stops": [list(c) for c in style.BLUES_STOPS],
                      "ticks": list(style.LEGEND_TICKS), "masked": style.MASKED_COLOUR,
                      "inks": [style.head_colour(h, "text") for h in range(len(style.HEAD_COLOURS))]})

    async def api_examples(request: Request) -> Response:
        from .. import examples

        from ..explain import texts

        def post(name: str) -> dict:
            post = worked[name].info.post
            return {"id": post, "title": {lang: texts.text(lang, f"post.{post}") for lang in LANGS}}

        return _json({"examples": [{"name": n, "title": {lang: _example_title(n, lang) for lang in LANGS},
                                    "post": post(n)} for n in examples.names()]})

    async def api_words(request: Request) -> Response:
        from ..explain import texts

        def words(prefix: str) -> dict:
            return {lang: {k[len(prefix):]: v for k, v in texts.LANGS[lang].items() if k.startswith(prefix)}
                    for lang in LANGS}

        # the page's own words, and the shared views' (qkv/explain/views.js reads the page.* words)
        return _json({"page": words("serve.ui."), "views": words("page."), "translate": words("cli.translate.")})

    async def api_tokens(request: Request) -> Response:
        model, text = entry(request), _text(request)
        encoding = model.check_text(text, limits, _lang_said(request))   # tokenising is quick: no queue
        return _json({"model": model.name, "tokens": list(model.model.tokens(text)),
                      "reading": model.reading(text, encoding)})

    async def api_overview(request: Request) -> Response:
        model, text = entry(request), _text(request)
        encoding = model.check_text(text, limits, _lang_said(request))

        def compute() -> dict:
            weights = weights_of(model, text)                           # (L, H, T, T)
            tokens = list(model.model.tokens(text))
            levels = np.rint(np.clip(weights, 0.0, 1.0) * 255).astype(np.uint8)
            return {"model": model.name, "tokens": tokens, "shape": list(weights.shape),
                    "weights": base64.b64encode(levels.tobytes()).decode("ascii"), "scale": 255,
                    "reading": model.reading(text, encoding)}

        return _json(await gate().run(compute, lang=_lang_said(request)))

    def head_trace(request: Request) -> tuple[ModelEntry, Callable[[], Trace]]:
        model, text = entry(request), _text(request)
        layer = _int_param(request, "layer", required=False)
        head = _int_param(request, "head", required=False)
        query = _query(request)
        if head is not None and layer is None:
            raise ApiError(400, _say(_lang_said(request), "error.head_needs_layer"), field="head")
        model.check_text(text, limits, _lang_said(request))
        key = ("trace", model.name, text, layer, head, query)
        return model, lambda: cache.get(key, lambda: _named(model, model.model.trace(text, layer=layer, head=head,
                                                                                     query=query)))

    async def api_trace(request: Request) -> Response:
        _, make = head_trace(request)

        def compute() -> Trace:
            return _steps_filter(make(), request)

        return _trace_response(await gate().run(compute, lang=_lang_said(request)))

    async def api_explain(request: Request) -> Response:
        lang, digits = _lang(request), _digits(request)
        _, make = head_trace(request)
        if request.query_params.get("layer") in (None, "") or request.query_params.get("head") in (None, ""):
            raise ApiError(400, _say(_lang_said(request), "error.layer_and_head.derivation"), field=_missing_layer_or_head(request))

        def compute() -> dict:
            from ..explain import derivation_html

            trace = make()
            return {"html": derivation_html(trace, lang=lang, digits=digits), "query": trace.meta.get("query")}

        return _json(await gate().run(compute, lang=_lang_said(request)))

    async def api_neuron(request: Request) -> Response:
        model, make = head_trace(request)
        lang = _lang_said(request)
        if request.query_params.get("layer") in (None, "") or request.query_params.get("head") in (None, ""):
            raise ApiError(400, _say(lang, "error.layer_and_head.neuron"), field=_missing_layer_or_head(request))
        query, key = _int_param(request, "query"), _int_param(request, "key")

        def compute() -> dict:
            return _neuron(make(), query, key, lang)

        return _json(await gate().run(compute, lang=lang))

    async def api_next(request: Request) -> Response:
        model, text = entry(request), _text(request)
        model.check_text(text, limits, _lang_said(request))
        k = _int_param(request, "k", required=False)
        temperature = _float_param(request, "temperature")
        return _json(await gate().run(lambda: _next_token(model, text, 10 if k is None else k, temperature, cache),
                                      lang=_lang_said(request)))

    async def api_example(request: Request) -> Response:
        from .. import examples

        name = request.query_params.get("name", "")
        if name not in examples.names():
            raise ApiError(404, _say(_lang_said(request), 'whatif.name', name=repr(name[:60]), names=', '.join(examples.names())), field="name")
        lang, digits, query = _lang(request), _digits(request), _query(request)

        def compute() -> dict:
            # the post's own query: computed when the app was built; another query reads the example's
            # TOML from the package again (a fixed file: the request names no path)
            trace = worked[name] if query is None else examples.run(name, query=query)
            return {**_explained(trace, name, _example_title(name, lang), lang, digits), **_editable(name)}

        return _json(await gate().run(compute, lang=_lang_said(request)))

    async def api_whatif(request: Request) -> Response:
        from .. import examples

        lang, digits = _lang(request), _digits(request)
        body = await _body(request, WHATIF_BYTES, lambda: ApiError(413, _say(lang, "whatif.too_large",
                                                                              limit=f"{WHATIF_BYTES:,}")))
        if body is None:
            return _gone()
        payload = _body_json(body, lang)
        what = WhatIf(payload, lang, examples.names())

        def compute() -> dict:
            trace = what.trace()
            try:
                result = _explained(trace, what.name, _example_title(what.name, lang), lang, digits)
            except (ArithmeticError, ValueError, KeyError, IndexError) as exc:
                # the numbers are recomputed; only the written explanation failed: show them, say so
                import html as _html

                note = _say(lang, "error.no_explanation", problem=type(exc).__name__)
                result = {"name": what.name, "title": _example_title(what.name, lang), "trace": trace.to_dict(),
                          "html": f'<p class="qkv-note qkv-no-explanation">{_html.escape(note)}</p>'}
            result["what_if"] = what.describe()
            return result

        return _json(await gate().run(compute, lang=lang))

    async def api_upload(request: Request) -> Response:
        lang, digits, query = _lang(request), _digits(request), _query(request)
        filename = request.query_params.get("filename", "upload.toml").replace("/", "_").replace("\\", "_")[:200]
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limits.upload_bytes:
            raise ApiError(413, f"{filename}: {_say(lang, 'error.upload_size', size=f'{int(declared):,}', limit=f'{limits.upload_bytes:,}')}")
        body = await _body(request, limits.upload_bytes, lambda: ApiError(413, f"{filename}: {_say(lang, 'error.upload_size', size='> ' + f'{limits.upload_bytes:,}', limit=f'{limits.upload_bytes:,}')}"))
        if body is None:
            return _gone()

        def compute() -> dict:
            from ..spec import is_saved_trace

            doc = _parse_upload(bytes(body), filename)
            trace = _upload_trace(doc, filename, query)
            try:
                return _explained(trace, None, trace.title or filename, lang, digits)
            except InputError:
                raise
            except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:
                if not is_saved_trace(doc):
                    raise
                # as `qkv explain` says it: a saved trace is data from a file, so this is bad input
                raise InputError.keyed("error.trace.misfit", source=filename, field="trace",
                                       **python_reason(f"{type(exc).__name__}: {' '.join(str(exc).split())[:80]}")) from None

        return _json(await gate().run(compute, lang=_lang_said(request)))

    # ------------------------------------------------------------------ practice (qkv.practice computes, checks, says)
    @functools.lru_cache(maxsize=64)
    def drill_of(name: str, lang: str, seed: int, fresh: bool):
        from .. import practice

        return practice.drill(name, lang=lang, seed=seed, fresh=fresh)

    def practice_name(name: Any, lang: str) -> str:
        from .. import practice

        if not isinstance(name, str) or name not in practice.NAMES:
            shown = json.dumps(name, ensure_ascii=False)[:60] if not isinstance(name, str) else repr(name[:60])
            raise ApiError(404, _say(lang, "whatif.name", name=shown, names=", ".join(practice.NAMES)), field="name")
        return name

    def fresh_of(value: Any, lang: str) -> bool:
        if isinstance(value, bool):
            return value
        if value in (None, "", "0", "false"):
            return False
        if value in ("1", "true"):
            return True
        raise _bad(lang, "fresh", "practice.fresh", value=json.dumps(value, ensure_ascii=False)[:40])

    async def api_practice(request: Request) -> Response:
        from .. import practice

        lang = _lang(request)
        name = practice_name(request.query_params.get("name", ""), lang)
        seed = _int_param(request, "seed", required=False)
        fresh = fresh_of(request.query_params.get("fresh"), lang)

        def compute() -> dict:
            chosen = seed if seed is not None else random.SystemRandom().randrange(1_000_000)
            return practice.shown(drill_of(name, lang, chosen, fresh))

        return _json(await gate().run(compute, lang=lang))

    async def api_practice_check(request: Request) -> Response:
        from .. import practice

        lang = _lang(request)
        body = await _body(request, PRACTICE_BYTES, lambda: ApiError(413, _say(lang, "whatif.too_large",
                                                                                limit=f"{PRACTICE_BYTES:,}")))
        if body is None:
            return _gone()
        asked = _body_json(body, lang)
        if not isinstance(asked, dict):
            raise ApiError(400, _say(lang, "practice.body"))
        name = practice_name(asked.get("name"), lang)
        seed, fresh = asked.get("seed"), fresh_of(asked.get("fresh", False), lang)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= practice.SEED_MAX:
            raise InputError.keyed("practice.error.seed", field="seed", value=json.dumps(seed, ensure_ascii=False)[:40],
                                   high=practice.SEED_MAX)
        answer = asked.get("answer")
        if not isinstance(answer, str):
            raise _bad(lang, "answer", "practice.answer", value=json.dumps(answer, ensure_ascii=False)[:40])
        number = _index(asked.get("question"), "question", lang)

        def compute() -> dict:
            session = drill_of(name, lang, seed, fresh)
            if not 0 <= number < len(session.questions):
                raise _bad(lang, "question", "practice.question", value=number, last=len(session.questions) - 1)
            question = session.questions[number]
            verdict = practice.check(question, answer, lang)
            return {"status": verdict.status, "lines": list(verdict.lines), "reveal": practice.reveal(question, lang)}

        return _json(await gate().run(compute, lang=lang))

    routes = [
        Route("/", page, methods=["GET"]),
        Route("/static/{name}", static, methods=["GET"]),
        Route("/api", api_index, methods=["GET"]),
        Route("/api/models", api_models, methods=["GET"]),
        Route("/api/examples", api_examples, methods=["GET"]),
        Route("/api/words", api_words, methods=["GET"]),
        Route("/api/style", api_style, methods=["GET"]),
        Route("/api/tokens", api_tokens, methods=["GET"]),
        Route("/api/overview", api_overview, methods=["GET"]),
        Route("/api/trace", api_trace, methods=["GET"]),
        Route("/api/explain", api_explain, methods=["GET"]),
        Route("/api/next", api_next, methods=["GET"]),
        Route("/api/neuron", api_neuron, methods=["GET"]),
        Route("/api/example", api_example, methods=["GET"]),
        Route("/api/upload", api_upload, methods=["POST"]),
        Route("/api/whatif", api_whatif, methods=["POST"]),
        Route("/api/practice", api_practice, methods=["GET"]),
        Route("/api/practice/check", api_practice_check, methods=["POST"]),
        Route("/api/translate", api_translate, methods=["GET"]),
        Route("/api/translate/trace", api_translate_trace, methods=["GET"]),
        Route("/api/translate/explain", api_translate_explain, methods=["GET"]),
    ]
    hosts = allowed_hosts if allowed_hosts is not None else ["127.0.0.1", "localhost", "[::1]"]
    app = Starlette(routes=routes, middleware=[Middleware(_HostCheck, allowed_hosts=hosts), Middleware(_SameOrigin)],
                    exception_handlers={ApiError: _api_error, InputError: _input_error,
                                        HTTPException: _http_error, Exception: _server_error})
    app.state.models = entries
    app.state.limits = limits
    app.state.gate_inside = lambda: sum(g.inside for g in gates.values())   # requests inside the gate now
    return _SecurityHeaders(app)


def _float_param(request: Request, name: str) -> float | None:
    """A decimal query parameter (None when absent); the library checks its range. Read by `qkv._io.as_number`,
    the one rule for a number typed as text (digits 0–9, as `_int_param` reads them; Python's float() also reads
    "٣", "１", "1_0" and "inf"; the page's editors do not)."""
    value = request.query_params.get(name)
    if value is None or value == "":
        return None
    number = as_number(value)
    if number is None:
        typed = value.strip()
        raise ApiError(400, _say(_lang_said(request), "error.ascii_number" if not typed.isascii() else "whatif.number",
                                 value=json.dumps(typed[:40], ensure_ascii=False)), field=name)
    return number


def _neuron(trace: Trace, query: int, key: int, lang: str) -> dict:
    """/api/neuron: `qkv.analysis.score_terms` of one pair of the head's Trace (row ``query``, column ``key``)."""
    from ..analysis import score_terms

    tokens = list(trace.meta.get("tokens") or [])
    for name, value in (("query", query), ("key", key)):
        if not 0 <= value < len(tokens):
            raise InputError.keyed("error.query.row", field=name, value=repr(value), n=len(tokens), last=len(tokens) - 1)
    found = score_terms(trace, query=query, key=key)
    return {"query": query, "key": key, "query_token": tokens[query], "key_token": tokens[key],
            "q": found["q"].tolist(), "k": found["k"].tolist(), "terms": found["terms"].tolist(),
            "sum": found["sum"], "score": found["score"], "scaled": found["scaled"], "rotated": found["rotated"],
            "kv_head": found["kv_head"]}


def _next_token(model: ModelEntry, text: str, k: int, temperature: float | None, cache: Cache) -> dict:
    """/api/next: `qkv.models.next_token` on the text (kept in the cache per model, text and k), as JSON, the
    model named as this server names it."""
    from ..models.nexttoken import check_temperature, next_token

    if temperature is not None:
        check_temperature(temperature)
    found = cache.get(("next", model.name, text, k), lambda: next_token(model.model, text, k=k))
    return dict(found.to_dict(temperature), model=model.name)


def _explained(trace: Trace, name: str | None, title: str, lang: str, digits: int | None) -> dict:
    from ..explain import derivation_html

    return {"name": name, "title": title, "trace": trace.to_dict(),
            "html": derivation_html(trace, lang=lang, digits=digits)}


async def _api_error(request: Request, exc: ApiError) -> Response:
    answer = {"error": exc.message}
    if exc.field:
        answer.update(field=exc.field, problem=exc.problem)
    response = _json(answer, exc.status)
    response.headers.update(exc.headers)
    return response


# The library's messages name the command line's options where a user of the CLI gave the value;
# through the API the same value came as a parameter, so the answer names the parameter.
_API_FIELDS = {"--query": "query", "--layer": "layer", "--head": "head", "--derive": "word", "--digits": "digits",
               "--lang": "lang", "TEXT": "text"}


def api_field(field: str | None) -> str | None:
    """The API's name for a field a library message names as the command line does: `_API_FIELDS`,
    else any other option without its dashes (``--max-tokens`` → ``max_tokens``), so an option added
    later is never named in an API answer."""
    if field is None:
        return None
    if field in _API_FIELDS:
        return _API_FIELDS[field]
    return field.lstrip("-").replace("-", "_") if field.startswith("-") else field


async def _input_error(request: Request, exc: InputError) -> Response:
    """``{"error": "field: problem"}``; a message about one parameter (no file named) also gives ``field`` and
    ``problem`` apart, so the page can name the box the reader typed in, in the reader's words, instead of
    the API's parameter ("text")."""
    field = api_field(exc.field)
    if field != exc.field:
        exc = InputError(exc.problem, source=exc.source, field=field, key=exc.key, values=exc.values)
    lang = _lang_said(request)
    answer = {"error": exc.say(lang)}
    if field and not exc.source:
        answer.update(field=field, problem=exc.problem_in(lang))
    return _json(answer, 400)


async def _http_error(request: Request, exc: HTTPException) -> Response:
    """404 and 405 in the request's language (lang=ko: Korean), naming the path or the methods taken."""
    lang = _lang_said(request)
    if exc.status_code == 404:
        line = _say(lang, "error.not_found", path=json.dumps(request.url.path[:80], ensure_ascii=False))
    elif exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "GET")
        line = _say(lang, "error.method", method=request.method[:10], allowed=allowed)
    else:
        line = " ".join(str(exc.detail).split())[:200]
    return _json({"error": line}, exc.status_code, headers=exc.headers)


async def _server_error(request: Request, exc: Exception) -> Response:
    return _json({"error": f"internal error: {type(exc).__name__}: {exc}".splitlines()[0]}, 500)


class _HostCheck:
    """Refuses a request whose Host header names another address (DNS rebinding) with a JSON 400, as
    every other error answers (starlette's TrustedHostMiddleware answers plain text)."""

    def __init__(self, app, allowed_hosts: list[str]):
        self.app, self.hosts = app, list(allowed_hosts)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] in ("http", "websocket") and "*" not in self.hosts:
            host = Headers(scope=scope).get("host", "")
            name = host if host.endswith("]") else host.rsplit(":", 1)[0]   # "[::1]:8000" → "[::1]"
            # host names are case-blind and "localhost." (fully qualified) is "localhost"
            name = name.lower().removesuffix(".")
            if name not in self.hosts:
                shown = json.dumps(host[:60], ensure_ascii=False)
                response = _json({"error": _say(_scope_lang(scope), "error.host", host=shown,
                                                hosts=", ".join(self.hosts))}, 400)
                await response(scope, receive, send)
                return
        if scope["type"] == "http" and scope.get("path", "").startswith("/api"):
            problem = _query_problem(scope)       # every API route reads its query: checked once, here (the page's
            # own address is read by its script, which says what it cannot use)
            if problem is not None:
                await _json(problem, 400)(scope, receive, send)
                return
        await self.app(scope, receive, send)


SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
JSON_ROUTES = ("/api/whatif", "/api/practice/check")
"""Routes whose body is JSON: they take Content-Type application/json only (a type a cross-site page
cannot send without the browser asking this server first, which it never allows)."""
SIMPLE_TYPES = ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data")
"""The Content-Types a page of another site may send without asking (CORS "simple" requests, HTML
forms): refused on every state-changing route (an upload is sent as application/octet-stream)."""


class _SameOrigin:
    """Refuses every state-changing request (any method but GET, HEAD, OPTIONS: today /api/upload and
    /api/whatif, and any route added later) that a page of another site could have sent, with a JSON
    403 naming why:

    - an Origin header that is not this server's own origin: the scheme and the Host (name and port)
      the request came to, which `_HostCheck` has checked against the server's addresses (so a port
      forwarded to the server still works; another port of this machine is another origin); "null"
      included;
    - Sec-Fetch-Site other than "same-origin" (browsers send it with every request; "same-site" is
      another port of this machine, "cross-site" any other page);
    - a Content-Type a cross-site form or fetch can send without a CORS preflight (`SIMPLE_TYPES`),
      and on `JSON_ROUTES` anything but application/json.

    A request with neither Origin nor Sec-Fetch-Site (curl, a script) passes: no browser sends a
    cross-origin POST without Origin. Nothing is read from the body before the check.
    """

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope.get("method", "GET").upper() not in SAFE_METHODS:
            problem = self.problem(scope)
            if problem is not None:
                await _json({"error": problem}, 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    @staticmethod
    def problem(scope) -> str | None:
        from urllib.parse import parse_qs

        headers = Headers(scope=scope)
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        lang = "ko" if query.get("lang", [""])[0] == "ko" else "en"
        scheme = scope.get("scheme", "http")
        own = f"{scheme}://{headers.get('host', '')}".lower()
        origin = headers.get("origin")
        if origin is not None and (_origin_key(origin) is None or _origin_key(origin) != _origin_key(own)):
            return _say(lang, "error.cross_origin", origin=json.dumps(origin[:80], ensure_ascii=False), own=own)
        site = headers.get("sec-fetch-site")
        if site is not None and site.strip().lower() != "same-origin":
            return _say(lang, "error.fetch_site", site=json.dumps(site[:40], ensure_ascii=False))
        media = headers.get("content-type", "").split(";")[0].strip().lower()
        path = scope.get("path", "")
        if path in JSON_ROUTES and media != "application/json":
            if not media:
                return _say(lang, "error.content_type.none", wanted="application/json")
            return _say(lang, "error.content_type", got=json.dumps(media), wanted="application/json")
        if media in SIMPLE_TYPES:
            return _say(lang, "error.content_type", got=json.dumps(media),
                        wanted="application/octet-stream" if path == "/api/upload" else "application/json")
        return None


def _origin_key(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of ``scheme://host[:port]`` as a browser's Origin header or the Host a
    request came to spells it — scheme and host lower case, one trailing dot dropped ("localhost." is
    "localhost"), the port given or the scheme's default (Host "x:80" is Origin "http://x"); None for
    anything else ("null", a path, user info, a query or fragment, a scheme other than http or https, an
    empty host, a bad port), which is never this server's origin."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc or parts.path \
            or parts.query or parts.fragment or url.strip().endswith(("?", "#")):
        return None
    return scheme, parts.hostname.lower().removesuffix("."), port if port is not None else (443 if scheme == "https" else 80)


SECURITY_HEADERS = ((b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"), (b"x-frame-options", b"DENY"),
                    (b"cross-origin-resource-policy", b"same-origin"))
"""The headers of every answer: the app's (`_SecurityHeaders`) and the server's own 400 (`qkv.serve.protocol`)."""


class _SecurityHeaders:
    """ASGI wrapper adding the CSP and friends to every answer (errors and 404s included)."""

    HEADERS = list(SECURITY_HEADERS)

    def __init__(self, app: Starlette):
        self.app = app
        self.state = app.state

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + self.HEADERS
            await send(message)

        await self.app(scope, receive, send_with_headers)
