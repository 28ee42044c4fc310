"""mkdocs hook: the site's home page is README.md, so the front door is written once.

README.md links the guide as `docs/NAME.md` (right on GitHub and in a clone); on the site the
pages sit at the top, so those links lose their `docs/` prefix. Nothing else is changed.
"""

from __future__ import annotations

import pathlib
import re

from mkdocs.structure.files import File

_LINK = re.compile(r"\]\(docs/")


def home_markdown(readme: str) -> str:
    """README.md's text as the site's index.md: `](docs/x)` links become `](x)`."""
    return _LINK.sub("](", readme)


def on_files(files, config):
    readme = pathlib.Path(config["config_file_path"]).parent / "README.md"
    files.append(File.generated(config, "index.md", content=home_markdown(readme.read_text(encoding="utf-8"))))
    return files
