"""The runs of every capture, as one JSON document: what ``tests/extract/test_extract_golden.py``
compares with the copy stored in ``tests/fixtures/extract_golden.json.gz``.

The stored copy was written by the code before extraction stopped validating its models on the
hot path (issue 36); any change in what is extracted from a capture (a field, its type, its
order, a warning) fails the test. After a change that is meant to alter the runs, write it again
and review the diff:

    python -m tests.support.extract_golden
"""

from __future__ import annotations

import gzip
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from tests.support.extract_support import linked_traces
from tests.support.paths import CAPTURES, FIXTURES
from tracescore.extract import extract_runs, runs_from_mastra_json
from tracescore.extract.model import AgentRun
from tracescore.ingest.files import load_traces
from tracescore.scorers.scorer_run import ScorerRun

GOLDEN = FIXTURES / "extract_golden.json.gz"
NOW = "<now>"
"""A message time taken from the clock (a message built without one): the same in no two runs."""


def _dumped(run: AgentRun, since: datetime) -> dict[str, Any]:
    """Every way a run leaves extraction: its whole JSON (with the nulls), the JSON exports
    print, and the dicts scorers read (Mastra's shape)."""
    scorer_run = ScorerRun.of(run)
    return _clock_free(
        {
            "run": run.model_dump(mode="json", by_alias=True),
            "exported": run.model_dump(mode="json", by_alias=True, exclude_none=True),
            "mastra_input": scorer_run.input,
            "mastra_output": scorer_run.output,
        },
        since.isoformat().replace("+00:00", "Z"),
    )


def _clock_free(value: Any, since: str) -> Any:
    """``value`` with every message time read from the clock during this run replaced."""
    if isinstance(value, dict):
        return {
            key: NOW
            if key == "createdAt" and isinstance(item, str) and item >= since
            else _clock_free(item, since)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_clock_free(item, since) for item in value]
    return value


def golden() -> dict[str, Any]:
    """Per capture folder, every run of its traces, then the primary runs alone, then (where
    some of its traces link to others) the primary runs linked across its traces; per line of
    the Mastra-shaped runs file, its run."""
    since = datetime.now(UTC) - timedelta(seconds=1)
    document: dict[str, Any] = {}
    folders = {path.parent for path in CAPTURES.rglob("*") if path.is_file()} - {CAPTURES}
    for folder in sorted(f for f in folders if f.relative_to(CAPTURES).parts[0][0] != "_"):
        key = str(folder.relative_to(CAPTURES))
        traces = load_traces([folder])
        document[key] = {
            "all": [_dumped(run, since) for trace in traces for run in extract_runs(trace)],
            "primary": [
                _dumped(run, since)
                for trace in traces
                for run in extract_runs(trace, only_primary=True)
            ],
        }
        linked = linked_traces(traces)
        if any(found.twins or found.steps_from for found in linked.values()):
            document[key]["linked"] = [
                _dumped(run, since) for found in linked.values() for run in found.runs
            ]
    runs_file = FIXTURES / "runs" / "mastra_runs.jsonl"
    document["mastra-json"] = [
        _dumped(run, since) for run in runs_from_mastra_json(runs_file.read_text())
    ]
    return document


def write() -> None:
    GOLDEN.write_bytes(gzip.compress(orjson.dumps(golden(), option=orjson.OPT_INDENT_2), mtime=0))


if __name__ == "__main__":
    write()
