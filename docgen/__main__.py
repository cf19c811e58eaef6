"""``python -m docgen``: write the generated reference parts into their pages under docs/."""

from __future__ import annotations

from pathlib import Path

from docgen.pages import write_pages

if __name__ == "__main__":
    for page in write_pages(Path(__file__).resolve().parent.parent / "docs"):
        print(f"regenerated {page}")
