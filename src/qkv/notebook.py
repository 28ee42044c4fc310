"""`qkv.show`: the interactive attention view inline in a notebook — Jupyter, VS Code, Colab — offline.

    >>> import qkv
    >>> qkv.show("self-attention")                          # a worked example
    >>> qkv.show(trace, head=2, lang="ko")                  # any recorded Trace
    >>> qkv.show(qkv.models.load("minilm"), text="The cat sat")   # a model on a text

How it is shown: an IPython display of one HTML fragment (`qkv.explain.page.trace_html(...,
inline=True)`): styles, numbers and script all inline, nothing fetched. Each front end runs the
scripts of HTML output its own way, and all three run them:

- JupyterLab / Notebook 7 put the HTML in the output node and re-create its <script> elements when
  the output is trusted — every output made by running a cell is; a notebook saved by someone else
  is not until the user trusts it (then the scripts are left out: see the note below).
- VS Code's built-in text/html renderer puts the HTML into its notebook webview and re-creates each
  <script> the same way (a workspace the user has not trusted shows the text/plain form instead).
- Colab draws each output in its own iframe and runs its scripts there.

An anywidget was the other candidate; it was not chosen: a widget's front-end module is loaded by
the notebook's widget manager, which in VS Code fetches third-party widget code from a CDN (jsdelivr
or unpkg; local files only for some kernels) and in Colab needs `enable_custom_widget_manager()`,
which loads it from a CDN outside Colab — not offline. The view needs no kernel round trips (every
number is recorded in the trace), so a plain HTML output loses nothing, and it stays in the saved
.ipynb, where it shows again without a running kernel.

Where the scripts do not run (an untrusted notebook, a static renderer), the output still shows the
title, a note saying how to get the interactive view (run the cell again, or trust the notebook),
and the step-by-step derivation, which is plain HTML.

Outside a notebook (a script, a terminal) `show` displays nothing and opens nothing: it warns once
with how to view it and returns the `View`, whose ``save(path)`` writes the same view as a
standalone page (`trace_html`) to open in a browser.
"""

from __future__ import annotations

import html as _html
import secrets
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .trace import WEIGHTS, Trace

__all__ = ["show", "view", "View", "page_lenses", "NEURON_NUMBERS"]

_LANGS = ("en", "ko")


@dataclass(frozen=True)
class View:
    """A trace ready to show: the interactive view in ``lang`` with ``digits`` decimals.

    In a notebook it displays itself (``_repr_mimebundle_``: text/html and a text/plain summary).
    ``html()`` is the standalone page, ``save(path)`` writes it, ``fragment()`` is the notebook HTML.
    """

    trace: Trace
    lang: str = "en"
    digits: int | None = None            # None: the views at DIGITS, the derivation at each step's own (`trace_html`)
    lenses: dict | None = None           # several heads, text colour, the neuron view's products (`page_lenses`)

    def html(self) -> str:
        """The standalone page (a full HTML document with its Content-Security-Policy)."""
        from .explain.page import trace_html

        return trace_html(self.trace, lang=self.lang, digits=self.digits, lenses=self.lenses)

    def save(self, path: str | Path) -> Path:
        """Write the standalone page to ``path`` (atomically) and return the path."""
        from ._io import write_atomic

        return write_atomic(path, self.html())

    def fragment(self) -> str:
        """The notebook output: the view's fragment, after a note that only shows when scripts do not run.

        The note is removed by a script placed after the view's own; a front end that leaves the
        scripts out (an untrusted notebook) shows it above the static derivation."""
        from .explain import texts
        from .explain.page import trace_html

        note_id = "qkv-show-" + secrets.token_hex(4)
        note = _html.escape(texts.text(self.lang, "show.no_script"))
        return (f'<div class="qkv-show" lang="{self.lang}">'
                f'<p class="qkv-show-note" id="{note_id}" style="border:1px solid #d1495b;border-radius:4px;'
                f'padding:6px 8px;margin:4px 0;background:#fff5f5;color:#1a1a1a;font:13px/1.4 system-ui,sans-serif;'
                f'{"word-break:keep-all;" if self.lang == "ko" else ""}">{note}</p>\n'
                f"{trace_html(self.trace, lang=self.lang, digits=self.digits, inline=True, lenses=self.lenses)}"
                f'<script>(function () {{ var n = document.getElementById("{note_id}"); '
                f"if (n) n.parentNode.removeChild(n); }})();</script></div>\n")

    def summary(self) -> str:
        """One plain line: what the view holds, and how to see it outside a notebook."""
        from .explain import texts
        from .explain.parts import as_heads, attention_parts

        parts = attention_parts(self.trace)
        shape = ""
        if parts:
            heads, tq, tk = as_heads(self.trace[parts[0].prefix + WEIGHTS].value).shape
            if len(parts) > 1 and parts[0].prefix.startswith("layer "):
                shape = texts.text(self.lang, "show.shape_layers", layers=len(parts), heads=heads, tq=tq)
            else:
                shape = texts.text(self.lang, "show.shape", heads=heads, tq=tq, tk=tk)
        return texts.text(self.lang, "show.plain", title=self.trace.title or "attention", shape=shape)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/html": self.fragment(), "text/plain": self.summary()}

    def __repr__(self) -> str:
        return self.summary()


def view(obj: Any, *, text: str | None = None, lang: str = "en", head: int | None = None,
         layer: int | None = None, query: int | str | None = None, digits: int | None = None) -> View:
    """The `View` that `show` displays, without displaying it (arguments as `show`)."""
    _check_options(lang, digits)
    if isinstance(obj, Trace):
        if text is not None:
            raise TypeError("text= is for a model (qkv.show(model, text=...)); a Trace already holds its tokens")
        trace = obj
    elif isinstance(obj, str) and text is None:
        trace = _example(obj, query, lang)
        query = None                                   # the example runner followed it already
    elif isinstance(obj, str) or _is_model(obj):
        trace = _model_trace(obj, text, query)
        query = None
    else:
        raise TypeError(f"qkv.show takes a Trace, a worked example's name or a loaded model (with text=), "
                        f"got {type(obj).__name__}")
    trace = _focus(trace, head=head, layer=layer, query=query, lang=lang)
    return View(trace, lang, digits, page_lenses(trace))


def show(obj: Any, *, text: str | None = None, lang: str = "en", head: int | None = None,
         layer: int | None = None, query: int | str | None = None, digits: int | None = None) -> View | None:
    """Show the interactive attention view of ``obj`` inline in a notebook (Jupyter, VS Code, Colab).

    Args:
      obj: a `qkv.Trace`; a worked example's name ("self-attention", "cross-attention", "multi-head",
        "projection", "group-meeting"); or a loaded model (`qkv.models.load(...)`) or a model's name or
        directory, with ``text``: the model is run on it with every layer's steps recorded
        (``model.trace(text, derivation=True)``; texts over 64 tokens record the weights only). A decoder's
        view also shows its next token and the heads that moved the last token (`qkv.models.next_token`).
      text: the text for a model (required with a model, refused otherwise).
      lang: "en" or "ko", the view's words.
      head: the head (0-based index, as everywhere in the API) the view opens on; default the trace's.
      layer: a whole model's layer to show (only that layer's steps are kept); default every layer.
      query: the query row followed on open: an index or a token string; default the trace's.
      digits: decimals shown for every number, 0 … 12 (default: 4 in the views, each step's own in the derivation,
        as `qkv.explain.page.trace_html`).
    Returns None in a notebook (the view is displayed). Outside one (no IPython kernel) nothing is
    displayed: a warning says how to view it and the `View` is returned (``.save("page.html")``).
    Raises TypeError for an object it cannot show or text= where it does not belong, ValueError
    (qkv.InputError for user data such as an unknown token) naming the argument that is out of range.
    """
    shown = view(obj, text=text, lang=lang, head=head, layer=layer, query=query, digits=digits)
    if _in_notebook():
        from IPython.display import display

        display(shown)
        return None
    from .explain import texts

    warnings.warn(texts.text(lang, "show.outside"), stacklevel=2)
    return shown


NEURON_NUMBERS = 400_000
"""The most products q_i·k_i a view embeds for its neuron view (every pair of every head of every part shown);
beyond, the neuron view is left out and the view says so (`qkv serve` computes any pair on request)."""


def page_lenses(trace: Trace) -> dict:
    """What the view adds to the page's own (`View.lenses`, for `trace_html(lenses=)`): several heads at once and
    text coloured by attention (from the weights), and the neuron view's products, computed here by
    `qkv.analysis.score_products` for every part that records q, k and the scores — unless there are more than
    NEURON_NUMBERS of them ("neuron_left_out": how many)."""
    from .analysis import score_products
    from .explain.parts import attention_parts

    parts = [p.prefix for p in attention_parts(trace)
             if all(p.prefix + name in trace for name in ("q_heads", "k_heads", "scores", "scaled_scores"))]
    count = 0
    for prefix in parts:
        q, k = trace[prefix + "q_heads"].value, trace[prefix + "k_heads"].value
        heads = q.shape[0] if q.ndim == 3 else 1
        count += heads * q.shape[-2] * k.shape[-2] * q.shape[-1]
    lenses: dict = {"neuron": {}, "neuron_limit": NEURON_NUMBERS}
    if count > NEURON_NUMBERS:
        lenses["neuron_left_out"] = count
    else:
        for prefix in parts:
            found = score_products(trace, prefix)
            lenses["neuron"][prefix] = {"terms": found["terms"], "sums": found["sums"],
                                        "rotated": found["rotated"]}
    return lenses


# --------------------------------------------------------------------------------------------- helpers
def _in_notebook() -> bool:
    """True inside an IPython kernel (Jupyter, VS Code, Colab). IPython is looked up, never imported."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _check_options(lang: Any, digits: Any) -> None:
    if lang not in _LANGS:
        raise ValueError(f"lang must be 'en' or 'ko', got {lang!r}")
    if digits is not None and (isinstance(digits, bool) or not isinstance(digits, (int, np.integer))
                               or not 0 <= digits <= 12):
        raise ValueError(f"digits must be an integer from 0 to 12 (or None), got {digits!r}")


def _is_model(obj: Any) -> bool:
    module = type(obj).__module__ or ""
    if not module.startswith("qkv.models"):
        return False
    from .models.bert import BertEncoder
    from .models.decoder import CausalLM

    return isinstance(obj, (BertEncoder, CausalLM))


def _example(name: str, query: Any, lang: str = "en") -> Trace:
    from . import examples, practice

    if name not in examples.names():
        raise ValueError(f"obj: {name!r} is no worked example (they are: {', '.join(examples.names())}); "
                         "for a model pass text= as well")
    trace = examples.run(name, query=query)
    trace.meta["variants"] = examples.variants(name, trace)     # the offline what-ifs (see qkv.examples.variants)
    if name in practice.NAMES:       # the practice drills, checked in the view as on the offline page
        trace.meta["practice"] = practice.offline(name, lang=lang)
    return trace


def _model_trace(model: Any, text: Any, query: Any) -> Trace:
    if text is None:
        raise TypeError("qkv.show(model) needs text=: the text the model reads, e.g. text=\"The cat sat\"")
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("text is empty: give the model something to read")
    if isinstance(model, str):
        from . import models

        model = models.load(model)
    trace = model.trace(text, query=query, derivation=True)
    from .models.decoder import CausalLM

    if isinstance(model, CausalLM):        # a decoder: its next token and the heads that moved the last token
        from .models.nexttoken import next_token

        trace.meta["next_token"] = next_token(model, text).to_dict()
    return trace


def _focus(trace: Trace, *, head: Any, layer: Any, query: Any, lang: str = "en") -> Trace:
    """A copy of ``trace`` narrowed to ``layer`` and opening on ``head`` and ``query`` (the user's is untouched)."""
    from .explain.parts import as_heads, attention_parts

    if head is None and layer is None and query is None:
        return trace
    meta, steps, title = dict(trace.meta), list(trace.steps), trace.title
    parts = attention_parts(trace)
    if layer is not None:
        layers = [int(p.prefix.split()[1].rstrip("/")) for p in parts if p.prefix.startswith("layer ")]
        if not layers:
            found = ", ".join(repr(p.prefix.rstrip("/") or "weights") for p in parts) or "no weights"
            raise ValueError("layer= needs a trace of a whole model (steps 'layer 0/weights', …); "
                             f"this one has {found}")
        if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)):
            raise TypeError(f"layer must be an integer index, got {type(layer).__name__}")
        if layer not in layers:       # a trace may hold some layers only
            contiguous = len(layers) > 1 and layers == list(range(layers[0], layers[-1] + 1))
            held = f"{layers[0]} … {layers[-1]}" if contiguous else ", ".join(map(str, layers))
            raise ValueError(f"layer={layer} is out of range: the trace has layers {held}")
        prefix = f"layer {int(layer)}/"
        steps = [step for step in steps if step.name.startswith(prefix)]
        parts = [p for p in parts if p.prefix == prefix]
        from .explain import texts         # the title said "every layer"; now it names the one shown

        title = texts.text(lang, "show.layer_title", name=meta.get("model") or title or "attention", layer=int(layer))
    if head is not None:
        heads = as_heads(trace[parts[0].prefix + WEIGHTS].value).shape[0] if parts else 0
        _index("head", head, heads, "heads")
        if heads > 1:      # a one-head trace's meta "head" names the model's head; nothing to pick
            meta["head"] = int(head)
    if query is not None:
        tokens = parts[0].q_tokens if parts else []
        if isinstance(query, str):
            if query not in tokens:
                raise ValueError(f"query {query!r} is not one of the query tokens: {' '.join(tokens)}")
            query = tokens.index(query)
        meta["query"] = _index("query", query, len(tokens), "query tokens")
    return Trace(title, meta, steps)


def _index(name: str, value: Any, count: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer index, got {type(value).__name__}")
    if count == 0:
        raise ValueError(f"{name}={value}: the trace records no attention weights to pick from")
    if not 0 <= value < count:
        raise ValueError(f"{name}={value} is out of range: the trace has {count} {what} (0 … {count - 1})")
    return int(value)
