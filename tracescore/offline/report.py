"""Per-binding summaries of score rows, printed as a table, JSON or CSV, and the CI gate.

A summary counts what a CI job needs to decide: how many runs were scored, the mean and range of
their scores, and how many runs the scorer could not score (errors) or declared not scorable.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import orjson

Format = Literal["table", "json", "csv"]


@dataclass(frozen=True)
class BindingSummary:
    binding: str
    scorer: str
    n: int
    """Runs scored (status ``ok``)."""
    mean: float | None
    min: float | None
    max: float | None
    errors: int
    not_scorable: int
    failed: int
    """Runs labelled ``fail`` against the binding's threshold (0 without a threshold)."""
    cost_usd: float


def summarize(
    rows: Iterable[Mapping[str, Any]], bindings: Mapping[str, str] | None = None
) -> list[BindingSummary]:
    """One summary per binding: those of ``bindings`` (name → scorer id) first, in order, even
    without rows, then any other binding in order of first appearance."""
    scorer_ids = dict(bindings or {})
    grouped: dict[str, list[Mapping[str, Any]]] = {name: [] for name in scorer_ids}
    for row in rows:
        grouped.setdefault(row["binding"], []).append(row)
    summaries = []
    for name, group in grouped.items():
        scores = [
            row["score"] for row in group if row["status"] == "ok" and row["score"] is not None
        ]
        summaries.append(
            BindingSummary(
                binding=name,
                scorer=group[0]["scorer_id"] if group else scorer_ids.get(name, ""),
                n=len(scores),
                mean=sum(scores) / len(scores) if scores else None,
                min=min(scores, default=None),
                max=max(scores, default=None),
                errors=sum(row["status"] == "error" for row in group),
                not_scorable=sum(row["status"] == "not_scorable" for row in group),
                failed=sum(row.get("label") == "fail" for row in group),
                cost_usd=sum(row.get("cost_usd") or 0.0 for row in group),
            )
        )
    return summaries


def gate(
    summaries: Sequence[BindingSummary],
    minimums: Mapping[str, float],
    maximums: Mapping[str, float] | None = None,
) -> list[str]:
    """One message per threshold a binding's mean score misses: below its ``--fail-under``
    minimum, or above its ``--fail-over`` maximum (for scorers where lower is better). Keys name
    a binding or a scorer id; a binding with no scored run misses every threshold."""
    failures = []
    bounds = [(key, value, "below") for key, value in minimums.items()]
    bounds += [(key, value, "above") for key, value in (maximums or {}).items()]
    for key, bound, side in bounds:
        for summary in (s for s in summaries if key in (s.binding, s.scorer)):
            if summary.mean is None:
                failures.append(f"{summary.binding}: no run was scored (threshold {bound:g})")
            elif summary.mean < bound if side == "below" else summary.mean > bound:
                failures.append(
                    f"{summary.binding}: mean score {summary.mean:.4f} is {side} {bound:g} "
                    f"({summary.n} runs)"
                )
    return failures


def unknown_thresholds(
    summaries: Sequence[BindingSummary], thresholds: Mapping[str, float]
) -> list[str]:
    names = {s.binding for s in summaries} | {s.scorer for s in summaries}
    return [key for key in thresholds if key not in names]


def render(summaries: Sequence[BindingSummary], fmt: Format, *, title: str = "Scores") -> str:
    """The summaries as a rich table (plain text), a JSON list, or CSV with a header row."""
    if fmt == "json":
        return orjson.dumps([asdict(s) for s in summaries], option=orjson.OPT_INDENT_2).decode()
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(BindingSummary.__dataclass_fields__))
        writer.writeheader()
        writer.writerows(asdict(s) for s in summaries)
        return out.getvalue()
    return _table(summaries, title)


def _table(summaries: Sequence[BindingSummary], title: str) -> str:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in (
        "binding",
        "scorer",
        "n",
        "mean",
        "min",
        "max",
        "errors",
        "not scorable",
        "failed",
    ):
        table.add_column(column, justify="left" if column in ("binding", "scorer") else "right")
    show_cost = any(s.cost_usd for s in summaries)
    if show_cost:
        table.add_column("cost USD", justify="right")
    for s in summaries:
        cells = [
            s.binding,
            s.scorer,
            str(s.n),
            _number(s.mean),
            _number(s.min),
            _number(s.max),
            str(s.errors),
            str(s.not_scorable),
            str(s.failed),
        ]
        if show_cost:
            cells.append(f"{s.cost_usd:.6f}")
        table.add_row(*cells)
    text = io.StringIO()
    Console(file=text, width=120, force_terminal=False, color_system=None).print(table)
    return text.getvalue()


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
