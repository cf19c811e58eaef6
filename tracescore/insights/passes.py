"""One insights pass: the window's failed runs read, grouped, named, matched to the groups of
earlier passes and stored (or only returned, offline)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tracescore.batch_gc import bulk_scoring
from tracescore.extract.base import Convention
from tracescore.insights.config import InsightsConfig
from tracescore.insights.describe import signature_description, signature_name
from tracescore.insights.grouping import SILHOUETTE_SAMPLE, Embed, Group, group_documents
from tracescore.insights.naming import judge_names
from tracescore.insights.runs import BY_KEY, FailedRun, read_runs, sample_failed_runs
from tracescore.insights.tracking import match_groups
from tracescore.judge.client import api_key, litellm
from tracescore.judge.config import JudgeConfig
from tracescore.judge.protocol import Judge
from tracescore.language import release_model
from tracescore.store import SpanStore, connect
from tracescore.store.insights import (
    FailureGroup,
    Membership,
    known_groups,
    runs_by_group,
    save_pass,
)

KNOWN_GROUPS = 500
"""Stored groups a pass's groups are matched against: the ones seen last."""
ANSWER_SHOWN = 1_000
"""Characters of a run's failing answer kept for its group's page."""
REASON_SHOWN = 500
"""Characters of each scorer's reason kept for the page."""


@dataclass(frozen=True, slots=True)
class PassResult:
    """What a pass found: its groups (largest first) and the runs it read."""

    at: float
    failed: int
    """Failed runs in the window, exact up to ``max_runs`` and a lower bound above it
    (:attr:`Sample.seen`); the pass read at most ``max_runs`` of them."""
    read: int
    groups: list[FailureGroup]
    memberships: list[Membership]


def embedder(connection: JudgeConfig, batch: int) -> Embed:
    """Texts to vectors through litellm's ``embedding`` with the configured model."""

    def embed(texts: Sequence[str]) -> NDArray[np.float32]:
        rows: list[list[float]] = []
        for start in range(0, len(texts), batch):
            response = litellm().embedding(
                model=connection.model,
                input=[text or " " for text in texts[start : start + batch]],
                api_base=connection.api_base,
                api_key=api_key(connection),
            )
            rows.extend(item["embedding"] for item in response.data)
        return np.asarray(rows, dtype=np.float32)

    return embed


def _trend(runs: Sequence[FailedRun], since: float, until: float, buckets: int) -> list[int]:
    width = (until - since) / buckets or 1.0  # runs read from files have no time: one bucket
    counts = [0] * buckets
    for run in runs:
        counts[min(buckets - 1, max(0, int((run.failed_at - since) / width)))] += 1
    return counts


def _details(
    runs: Sequence[FailedRun],
    signature: dict[str, float],
    config: InsightsConfig,
    since: float,
    until: float,
) -> dict[str, Any]:
    latest = sorted(runs, key=lambda run: (-run.failed_at, run.trace_id, run.span_id))
    return {
        "agents": dict(Counter(run.agent or "(none)" for run in runs).most_common(10)),
        "models": dict(Counter(run.model or "(none)" for run in runs).most_common(10)),
        "flagged_by": dict(
            Counter(name for run in runs for name in sorted(run.flagged_by)).most_common(10)
        ),
        "trend": _trend(runs, since, until, config.trend_buckets),
        "signature": signature,
        "window": [since, until],
        "examples": [
            {"trace_id": run.trace_id, "span_id": run.span_id, "summary": run.summary()}
            for run in latest[: config.examples]
        ],
    }


def group_runs(
    runs: Sequence[FailedRun],
    config: InsightsConfig,
    window: tuple[float, float],
    *,
    embed: Embed | None = None,
    judge: Judge | None = None,
) -> list[tuple[Group, FailureGroup]]:
    """The groups of ``runs`` with their stored shape (not yet matched: ids are empty)."""
    groups = group_documents(
        [run.request for run in runs],
        [run.failure() for run in runs],
        [run.signature() for run in runs],
        config,
        embed,
    )
    examples = [
        sorted((runs[i] for i in group.members), key=BY_KEY)[: config.examples] for group in groups
    ]
    signed = [
        signature_name(
            group.signature, [runs[i].answer for i in group.members[:50]], group.distinctive
        )
        for group in groups
    ]
    names = (
        judge_names(
            judge,
            [
                (
                    f"{name} ({signature_description(g.signature, len(g.members))})",
                    g.distinctive,
                    ex,
                )
                for name, g, ex in zip(signed, groups, examples, strict=True)
            ],
        )
        if judge is not None
        else [None] * len(groups)
    )
    total = max(1, len(runs))
    shaped = []
    for group, signed_name, named in zip(groups, signed, names, strict=True):
        members = [runs[i] for i in group.members]
        shaped.append(
            (
                group,
                FailureGroup(
                    id="",
                    name=named.name if named else signed_name,
                    description=named.description
                    if named
                    else signature_description(group.signature, len(members)),
                    named_by="judge" if named else "signature",
                    terms=group.terms,
                    first_seen=window[1],
                    last_seen=window[1],
                    size=len(members),
                    previous_size=0,
                    share=round(len(members) / total, 4),
                    details=_details(members, group.signature, config, *window),
                ),
            )
        )
    return shaped


def _membership(group_id: str, run: FailedRun) -> Membership:
    """A grouped run as its group's page shows it."""
    return Membership(
        group_id=group_id,
        trace_id=run.trace_id,
        span_id=run.span_id,
        failed_at=run.failed_at,
        agent=run.agent,
        model=run.model,
        flagged_by=sorted(run.flagged_by),
        summary=run.summary(),
        started_at=run.started_at,
        answer=run.answer[:ANSWER_SHOWN],
        reasons=[reason[:REASON_SHOWN] for reason in run.reasons],
    )


def sampling(config: InsightsConfig, failed: int, read: int, *, capped: bool) -> dict[str, Any]:
    """How much of the window a pass saw, kept in each group's details for the page to say
    (issue 48): the failed runs (a lower bound when ``capped``: the pass read at most
    ``max_runs``), the runs read, those the clustering saw (``cluster_sample``, the others
    joined to the nearest group) and those whose silhouette chose the cut (0: the cut is
    ``distance_threshold``)."""
    clustered = min(read, config.cluster_sample)
    return {
        "failed": failed,
        "read": read,
        "capped": capped,
        "clustered": clustered,
        "silhouette": min(clustered, SILHOUETTE_SAMPLE) if config.distance_threshold is None else 0,
    }


def run_pass(
    store: SpanStore,
    config: InsightsConfig,
    conventions: Sequence[Convention],
    *,
    now: datetime | None = None,
    judge: Judge | None = None,
    save: bool = True,
) -> PassResult:
    """Group the failed runs of the window ending at ``now`` and, with ``save``, store the
    groups under the ids of the earlier passes' groups they match. The cyclic collector is set
    as for scoring in bulk (:func:`~tracescore.batch_gc.bulk_scoring`) meanwhile: a pass
    rebuilds runs as scoring does and holds tens of thousands of runs' fields, which CPython's
    default thresholds traverse again and again (a fifth of a pass over stored texts)."""
    with bulk_scoring():
        return _run_pass(store, config, conventions, now, judge, save)


def _run_pass(
    store: SpanStore,
    config: InsightsConfig,
    conventions: Sequence[Convention],
    now: datetime | None,
    judge: Judge | None,
    save: bool,
) -> PassResult:
    until = now or datetime.now(UTC)
    since = until - timedelta(seconds=config.window)
    sample = sample_failed_runs(store, since, until, config.failed, config.max_runs)
    runs = read_runs(
        store, sample.runs.values(), conventions, keep_since=since.timestamp() if save else None
    )
    release_model()  # languages are identified while reading: its memory goes to grouping
    embedding = config.embedding()
    embed = embedder(embedding, config.embedding_batch) if embedding is not None else None
    window = (since.timestamp(), until.timestamp())
    shaped = group_runs(runs, config, window, embed=embed, judge=judge)
    sampled = sampling(config, sample.seen, len(runs), capped=sample.capped)
    for _, stored in shaped:
        stored["details"]["pass"] = sampled
    with connect(store.engine) as connection:
        known = known_groups(connection, KNOWN_GROUPS)
        members = runs_by_group(connection)
    ids = match_groups(
        [(stored["terms"], {BY_KEY(runs[i]) for i in group.members}) for group, stored in shaped],
        [(g["id"], g["terms"], members.get(g["id"], set())) for g in known],
        config.match_similarity,
    )
    first_seen = {g["id"]: g["first_seen"] for g in known}
    groups: list[FailureGroup] = []
    memberships: list[Membership] = []
    for group_id, (group, stored) in zip(ids, shaped, strict=True):
        stored["id"] = group_id
        stored["first_seen"] = first_seen.get(group_id, window[1])
        groups.append(stored)
        memberships.extend(_membership(group_id, runs[i]) for i in group.members)
    if save:
        with store.write_transaction() as connection:
            save_pass(connection, groups, memberships)
    return PassResult(window[1], sample.seen, len(runs), groups, memberships)
