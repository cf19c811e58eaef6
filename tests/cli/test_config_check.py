"""``tracescore config check`` as a newcomer meets it: every mistake of a file in one pass, each
with its key path and line, an unknown key or scorer with the nearest known spelling, a bad
scorer option like any other key (not a raw pydantic error)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tracescore.cli import app

CONFIG = """\
server:
  http_prot: 4318
scorers:
  - {name: a, scorer: keyword-coverag}
  - {name: b, scorer: tool-call-accuracy-code, options: {expected_tol: get_weather}}
  - {name: c, scorer: tool-call-accuracy-code, options: {expected_tool: 3}}
  - {name: d, scorer: tone, treshold: 0.5}
alerts:
  rules:
    - name: r
      type: regression
      binding: d
      windw: 30s
"""


def test_every_mistake_in_one_pass_with_line_and_suggestion(tmp_path: Path) -> None:
    path = tmp_path / "tracescore.yaml"
    path.write_text(CONFIG)
    result = CliRunner().invoke(app, ["config", "check", str(path)])
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"{path}: invalid configuration:",
        "  server.http_prot (line 2): Extra inputs are not permitted; did you mean 'http_port'?",
        "  scorers.0.scorer (line 4): unknown scorer 'keyword-coverag'; did you mean "
        "'keyword-coverage'? (`tracescore scorers` lists them; module:attr names a custom scorer)",
        "  scorers.1.options.expected_tol (line 5): Extra inputs are not permitted; did you mean "
        "'expected_tool' or 'expected_tool_order'?",
        "  scorers.2.options.expected_tool (line 6): Input should be a valid string",
        "  scorers.3.treshold (line 7): Extra inputs are not permitted; did you mean 'threshold'?",
        "  alerts.rules.0.windw (line 13): Extra inputs are not permitted; did you mean 'window'?",
    ]


def test_a_bad_option_alone_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "tracescore.yaml"
    path.write_text(
        "scorers:\n  - {name: t, scorer: tool-call-accuracy-code,\n"
        "     options: {expectedTool: x, strictMode: maybe}}\n"
    )
    result = CliRunner().invoke(app, ["config", "check", str(path)])
    assert result.exit_code == 2
    assert "validation error" not in result.output and "pydantic" not in result.output
    assert "scorers.0.options.strictMode (line 3): Input should be a valid boolean" in result.output
