"""The first steps the docs give work as written (issue 50): the getting-started judge example
says it needs the ``judges`` extra, which ``config check`` asks for without it; the README
says the docs site needs the project installed (its hooks import it)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO


def _section(page: str, heading: str) -> str:
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


def test_the_judge_example_says_it_needs_the_extra_and_config_check_asks_for_it(
    tmp_path: Path,
) -> None:
    section = _section("getting-started.md", "## Add an LLM judge")
    (config,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
    (commands,) = re.findall(r"```bash\n(.*?)```", section, re.S)
    assert commands.index("pip install '.[judges]'") < commands.index("tracescore config check")
    path = tmp_path / "tracescore.yaml"
    path.write_text(config, encoding="utf-8")
    without_litellm = (
        "import sys; sys.modules['litellm'] = None; "  # find_spec then answers None
        "from tracescore.cli import app; sys.argv = ['tracescore', 'config', 'check', sys.argv[1]]; "
        "app()"
    )
    result = subprocess.run(
        [sys.executable, "-c", without_litellm, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert "pip install 'tracescore[judges]'" in result.stderr
    assert "pip install 'tracescore[judges]'" in section  # the page names what it will say


def test_the_readme_says_the_docs_site_needs_the_project_installed() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (paragraph,) = [p for p in readme.split("\n\n") if "mkdocs serve" in p]
    assert "pip install -e '.[dev]'" in paragraph
    hook = (REPO / "docgen" / "hook.py").read_text(encoding="utf-8")
    assert "from docgen" in hook  # the hook builds the reference pages from the project's code
