"""mkdocs hook: the site's home page is README.md, so the front door is written once.

README.md links the guide as `docs/NAME.md` (right on GitHub and in a clone); on the site the
pages sit at the top, so those links lose their `docs/` prefix. README.ko.md, the Korean front door, is
ko/index.md the same way (README.md's link to it points there). Nothing else is changed.
"""

from __future__ import annotations

import pathlib
import re

from mkdocs.structure.files import File

_LINK = re.compile(r"\]\(docs/")


def home_markdown(readme: str) -> str:
    """README.md's text as the site's index.md: `](docs/x)` links become `](x)`."""
    return _LINK.sub("](", readme)


def korean_home_markdown(readme_ko: str) -> str:
    """README.ko.md's text as the site's ko/index.md: `](docs/ko/x)` → `](x)`, `](docs/x)` → `](../x)`,
    `](README.md)` → `](../index.md)`."""
    text = readme_ko.replace("](docs/ko/", "](").replace("](README.md)", "](../index.md)")
    return _LINK.sub("](../", text)


def on_files(files, config):
    root = pathlib.Path(config["config_file_path"]).parent
    readme = (root / "README.md").read_text(encoding="utf-8").replace("](README.ko.md)", "](ko/index.md)")
    files.append(File.generated(config, "index.md", content=home_markdown(readme)))
    files.append(File.generated(config, "ko/index.md",
                                content=korean_home_markdown((root / "README.ko.md").read_text(encoding="utf-8"))))
    return files
