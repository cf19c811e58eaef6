"""MkDocs hook: fills the generated reference parts into their pages at every build.

``mkdocs.yml`` loads this file by path, with only its own folder on ``sys.path``; the ``docgen``
package it belongs to is imported from the repository root, put there first.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from docgen.pages import UnknownGenerator, fill


def on_page_markdown(markdown: str, /, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    """The page's Markdown with its ``<!-- tracescore:generate NAME -->`` markers filled; an
    unknown name fails the build rather than leaving a page without its reference."""
    try:
        return fill(markdown)
    except UnknownGenerator as exc:
        raise PluginError(f"{page.file.src_uri}: {exc.args[0]}") from None
