"""mkdocs hook: the site's home page is README.md, so the front door is written once.

README.md links the guide as `docs/NAME.md` (right on GitHub and in a clone); on the site the
pages sit at the top, so those links lose their `docs/` prefix. README.ko.md, the Korean front door, is
ko/index.md the same way (README.md's link to it points there). The pages under ko/ are rendered with the
theme in Korean (`<html lang="ko">`, the theme's own words in Korean); nothing else is changed.
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


def page_language(src_uri: str) -> str:
    """The language a page is written in: the pages under ko/ (README.ko.md among them) are Korean."""
    return "ko" if src_uri.startswith("ko/") else "en"


def on_page_context(context, page, config, nav):
    """Render each page in its own language: the theme's words (search, contents, "copy"), `<html lang>` and
    the search's language follow the page. Pages are rendered one at a time, so the theme's language is set
    just before each render and read by the theme's templates during it."""
    config.theme["language"] = page_language(page.file.src_uri)
    return context


def on_post_page(output, page, config):
    config.theme["language"] = "en"         # the site's own language for whatever renders next (404, sitemap)
    return output


def on_files(files, config):
    root = pathlib.Path(config["config_file_path"]).parent
    readme = (root / "README.md").read_text(encoding="utf-8").replace("](README.ko.md)", "](ko/index.md)")
    files.append(File.generated(config, "index.md", content=home_markdown(readme)))
    files.append(File.generated(config, "ko/index.md",
                                content=korean_home_markdown((root / "README.ko.md").read_text(encoding="utf-8"))))
    return files
