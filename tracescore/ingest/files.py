"""Read OTLP export files (as saved by exporters or by ``tracescore``) into traces.

The offline commands (``tracescore extract``, ``tracescore score``) and the tests read the same
files the collector receives over the wire: protobuf or OTLP/JSON, traces or logs. One trace may
be spread over several files, so files are decoded first and grouped by trace id afterwards.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import orjson

from tracescore.ingest.decode import Decoded, DecodeError, decode_logs, decode_traces
from tracescore.spans import Trace


def decode_file(path: Path) -> Decoded:
    """Decode one export file, telling JSON from protobuf and logs from traces by content."""
    body = path.read_bytes()
    is_json = path.suffix == ".json" or body[:1] in (b"{", b"[")
    if is_json:
        try:
            head = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise DecodeError(f"{path}: invalid JSON: {exc}") from exc
        is_logs = isinstance(head, dict) and ("resourceLogs" in head or "resource_logs" in head)
        is_metrics = isinstance(head, dict) and (
            "resourceMetrics" in head or "resource_metrics" in head
        )
        if is_metrics:
            return Decoded()
        return decode_logs(body, json=True) if is_logs else decode_traces(body, json=True)
    if ".metrics." in path.name:
        return Decoded()
    if ".logs." in path.name:
        return decode_logs(body, json=False)
    return decode_traces(body, json=False)


def export_files(paths: Iterable[Path]) -> list[Path]:
    """Expand directories into the export files they hold, skipping ``.raw.json`` duplicates."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.suffix in (".json", ".pb")
                and not p.name.endswith(".raw.json")
                and not (p.suffix == ".pb" and p.with_suffix(".json").exists())
            )
        else:
            found.append(path)
    return found


def load_traces(paths: Iterable[Path]) -> list[Trace]:
    """Decode every file and group spans and log records by trace id, in first-seen order."""
    traces: dict[str, Trace] = {}
    for path in export_files(paths):
        decoded = decode_file(path)
        for span in decoded.spans:
            traces.setdefault(span.trace_id, Trace(span.trace_id)).spans.append(span)
        for record in decoded.logs:
            if record.trace_id:
                traces.setdefault(record.trace_id, Trace(record.trace_id)).logs.append(record)
    return list(traces.values())
