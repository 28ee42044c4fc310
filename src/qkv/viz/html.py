"""The interactive page lives in `qkv.explain.page` (the HTML format of an explanation); these names
stay importable from here."""

from ..explain.page import attention_page, pack, trace_html  # noqa: F401
from ..explain.page import _payload  # noqa: F401  (tests and notebooks inspect the payload)

__all__ = ["trace_html", "attention_page", "pack"]
