"""The docs: the strict site build, generated reference pages against the code, and the README.

The reference checks read the built HTML, so they hold for what a reader sees; the sets they
compare against are taken from the code by other routes than the generators take (the config's
JSON schema, the app's routes, the metrics registry's collection), so a generator that skipped
something would be caught.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from docgen.config_reference import config_blocks
from docgen.pages import UnknownGenerator, fill, generated_pages
from docgen.scorer_reference import CODE_EXAMPLE_OPTIONS
from tests.support.paths import REPO
from tracescore.config import Config, parse_config
from tracescore.metrics import REGISTRY
from tracescore.scorers import registry
from tracescore.scorers.llm.shown_prompts import example_scorer
from tracescore.service import create_app
from tracescore.settings import Duration, Section
from tracescore.store import open_store

README = REPO / "README.md"
DOCS = REPO / "docs"
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The docs site, built as the test command builds it: strict, offline."""
    site_dir = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    assert built.returncode == 0, built.stderr[-4000:]
    return site_dir


def page(site: Path, name: str) -> str:
    return (site / name / "index.html").read_text(encoding="utf-8")


def codes(text: str) -> set[str]:
    """The unescaped text of every ``<code>`` element of a built page."""
    return {html.unescape(found) for found in re.findall(r"<code>(.*?)</code>", text, re.DOTALL)}


def schema_key_paths(schema: dict[str, Any]) -> set[str]:
    """Every key path of the config's JSON schema, in the reference's notation."""
    definitions = schema.get("$defs", {})
    found: set[str] = set()

    def walk(node: dict[str, Any], path: str, within: tuple[str, ...]) -> None:
        """``within``: the models above, so a model nested in itself (``when.any[]``) is
        walked once, where the reference lists it."""
        if "$ref" in node:
            model = node["$ref"].rsplit("/", 1)[-1]
            if model not in within:
                walk(definitions[model], path, (*within, model))
        for option in node.get("anyOf", []) + node.get("oneOf", []):
            walk(option, path, within)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]", within)
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], f"{path}.<name>", within)
        for name, child in node.get("properties", {}).items():
            child_path = f"{path}.{name}" if path else name
            if not _is_section(child, definitions):
                found.add(child_path)
            walk(child, child_path, within)

    walk(schema, "", ())
    return found


def _is_section(node: dict[str, Any], definitions: dict[str, Any]) -> bool:
    """A property holding exactly one nested model is a heading in the reference, not a key."""
    ref = node.get("$ref") or (node.get("allOf") or [{}])[0].get("$ref")
    return ref is not None and "properties" in definitions[ref.rsplit("/", 1)[-1]]


def test_every_config_key_is_in_the_built_reference(site: Path) -> None:
    listed = codes(page(site, "reference/configuration"))
    keys = schema_key_paths(Config.model_json_schema())
    assert {
        "server.host",
        "scorers[].filter.agent",
        "judges.<name>.model",
        "alerts.rules[].baseline",
    } <= keys
    assert sorted(keys - listed) == []


def test_every_registered_scorer_is_in_the_built_reference(site: Path) -> None:
    text = page(site, "reference/scorers")
    listed = codes(text)
    for entry in registry.entries():
        assert f'id="{entry.name}"' in text, entry.name
        options = CODE_EXAMPLE_OPTIONS.get(entry.name, {})
        built = example_scorer(entry.name) if entry.uses_judge else entry.factory(**options)
        assert built.id in listed, entry.name
        assert {option.name for option in entry.options()} <= listed, entry.name
    # The judge scorers' prompts as sent: faithfulness tells its judge to extract claims.
    assert "tracescore scorers --show-prompts faithfulness" in text
    assert "AnswerStatements" in listed


def test_every_route_is_in_the_built_rest_api_page(site: Path, tmp_path: Path) -> None:
    listed = codes(page(site, "rest-api"))
    store = open_store(f"sqlite:///{tmp_path / 'routes.db'}")
    try:
        paths = create_app(Config(), store).openapi()["paths"]
    finally:
        store.close()
    routes = {f"{method.upper()} {path}" for path, item in paths.items() for method in item}
    assert {"GET /api/scores", "POST /v1/traces"} <= routes
    assert sorted(routes - listed) == []


def test_every_metric_is_in_the_built_metrics_page(site: Path) -> None:
    listed = codes(page(site, "metrics"))
    series = {
        family.name + ("_total" if family.type == "counter" else "")
        for family in REGISTRY.collect()
        if family.name.startswith("tracescore_")
    }
    assert {"tracescore_scores_total", "tracescore_queue_depth", "tracescore_score"} <= series
    assert sorted(series - listed) == []


_EXTERNAL_ASSET = re.compile(
    r"<(?:script|img|iframe|source)\b[^>]*\bsrc=\"(?:https?:)?//|<link\b[^>]*\bhref=\"(?:https?:)?//"
    r"|url\(\s*['\"]?(?:https?:)?//|@import\s+['\"](?:https?:)?//"
)


def test_the_site_loads_nothing_from_elsewhere(site: Path) -> None:
    """Built offline and readable offline: no web fonts, scripts or styles from other hosts."""
    files = [path for path in site.rglob("*") if path.suffix in {".html", ".css", ".js"}]
    assert len(files) > 20
    offenders = [
        str(path.relative_to(site))
        for path in files
        if _EXTERNAL_ASSET.search(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert offenders == []


class _NewSection(Section):
    """A section someone adds tomorrow."""

    flush_every: Duration = 900.0
    """How often the new thing is flushed."""
    mode: str = Field("fast", pattern="^(fast|safe)$")


class _WithNewSection(BaseModel):
    later: _NewSection = Field(default_factory=_NewSection)
    items: list[_NewSection] = Field(default_factory=list)


def test_a_new_section_is_documented_from_its_model_and_docstrings() -> None:
    blocks = {block.path: block for block in config_blocks(_WithNewSection)}
    assert set(blocks) == {"top level", "later", "items[]"}
    (flush, mode) = blocks["later"].keys
    assert (flush.path, flush.type, flush.default) == (
        "later.flush_every",
        "duration (> 0)",
        "`900` (`15m`)",
    )
    assert flush.description == "How often the new thing is flushed."
    assert blocks["later"].description == "A section someone adds tomorrow."
    assert (mode.path, mode.type, mode.default) == (
        "later.mode",
        "string (matching `^(fast|safe)$`)",
        '`"fast"`',
    )
    assert [key.path for key in blocks["items[]"].keys] == ["items[].flush_every", "items[].mode"]


def test_an_unknown_generated_part_fails_instead_of_leaving_a_page_empty() -> None:
    with pytest.raises(UnknownGenerator, match="configuration-reference"):
        fill("# Keys\n\n<!-- tracescore:generate configuration-reference -->\n")


def test_committed_reference_parts_are_current() -> None:
    """The generated parts are committed (so the README's reference links read whole on a forge,
    unbuilt); a change to the code they come from must regenerate them: `python -m docgen`."""
    pages = generated_pages(DOCS)
    assert {p.relative_to(DOCS).as_posix() for p in pages} >= {
        "reference/configuration.md",
        "reference/scorers.md",
        "rest-api.md",
        "metrics.md",
    }
    stale = [p.name for p in pages if fill(text := p.read_text(encoding="utf-8")) != text]
    assert not stale, f"stale generated parts in {stale}: run `python -m docgen`"
    configuration = (DOCS / "reference" / "configuration.md").read_text(encoding="utf-8")
    assert "`server.http_port`" in configuration


def test_readme_is_short_and_keeps_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    assert "pip install . && tracescore serve" in text
    assert "./scripts/test " in text


def _links(source: Path) -> set[Path]:
    """Local Markdown pages ``source`` links to (anchors dropped, external links skipped)."""
    targets = set()
    for link in _LINK.findall(source.read_text(encoding="utf-8")):
        target = link.split("#", 1)[0]
        if target and "://" not in target and target.endswith(".md"):
            targets.add((source.parent / target).resolve())
    return targets


ISSUE_PAGES = (
    "getting-started.md",
    "configuration.md",
    "reference/configuration.md",
    "span-formats.md",
    "scorers.md",
    "reference/scorers.md",
    "custom-scorers.md",
    "judges.md",
    "monitoring.md",
    "rest-api.md",
    "metrics.md",
    "dashboard.md",
    "deployment.md",
    "reliability.md",
    "benchmarks.md",
    "mastra.md",
    "architecture.md",
)
"""The pages issue #27 asks for."""


def test_readme_links_resolve_and_reach_every_page_within_two_clicks() -> None:
    from_readme = _links(README)
    assert all(target.exists() for target in from_readme), sorted(map(str, from_readme))
    reachable = from_readme | {second for first in from_readme for second in _links(first)}
    assert {(DOCS / name).resolve() for name in ISSUE_PAGES} - reachable == set()


@pytest.mark.parametrize(
    ("topic", "page_name", "evidence"),
    [
        ("adding a custom scorer", "custom-scorers.md", "## Bind it"),
        ("configuring a local judge", "judges.md", "## A local judge"),
        (
            "the OpenInference attribute table",
            "span-formats.md",
            "| `openinference.span.kind` | every span |",
        ),
        ("the metric names", "metrics.md", "<!-- tracescore:generate metrics-reference -->"),
        ("the upgrade procedure", "upgrading.md", "## The short version"),
    ],
)
def test_topic_is_within_two_clicks_of_the_readme(
    topic: str, page_name: str, evidence: str
) -> None:
    first = _links(README)
    reachable = first | {second for page in first for second in _links(page)}
    target = (DOCS / page_name).resolve()
    assert target in reachable, topic
    assert evidence in target.read_text(encoding="utf-8"), topic


def _blocks(path: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(encoding="utf-8"), re.DOTALL)


@pytest.mark.parametrize(
    "path", [README, *(DOCS / name for name in ISSUE_PAGES)], ids=lambda path: path.name
)
def test_config_examples_validate(path: Path) -> None:
    """Every YAML block of these pages is a whole config file (other pages may show fragments)."""
    for index, block in enumerate(_blocks(path, "yaml")):
        parse_config(block, f"{path.name} example {index + 1}")


def test_custom_scorer_examples_run() -> None:
    namespace: dict[str, Any] = {}
    for block in _blocks(DOCS / "custom-scorers.md", "python"):
        exec(compile(block, "custom-scorers.md", "exec"), namespace)
    result = namespace["result"]
    assert (result.status, result.score) == ("ok", 0.2)  # "paris" of five input words
    for name in ("few_tool_calls", "short_answers"):
        assert namespace[name].run_sync(namespace["run"]).status == "ok"
