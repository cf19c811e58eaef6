"""The review queue: scored runs worth a person's look, none of them reviewed yet.

Four reasons to propose a run, in this order of priority after the random share:

* ``random``: a uniform draw among recent unreviewed runs, a fixed share of every queue. The
  other rules pick hard cases; calibration measured only on hard cases would say the judge is
  worse than it is on the traffic it scores;
* ``near_threshold``: the score is close to the binding's pass/fail threshold;
* ``disagreement``: another binding scored the same run very differently;
* ``new_version``: the scorer version has too few reviewed runs to be calibrated.

The random draw costs an index lookup, not a sort of the window: score ids are hashes, so the
rows from a random id on, in id order, are a random sample.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, and_, func, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql import ColumnElement

from tracescore.feedback.config import ReviewConfig
from tracescore.store.feedback import SCORES, as_utc, reviewed_condition

_COLUMNS = (
    SCORES.c.trace_id, SCORES.c.span_id, SCORES.c.binding, SCORES.c.score, SCORES.c.label,
    SCORES.c.reason, SCORES.c.scorer_version, SCORES.c.judge_model, SCORES.c.agent,
    SCORES.c.created_at,
)  # fmt: skip


@dataclass
class Proposal:
    row: dict[str, Any]
    why: str
    detail: str

    @property
    def key(self) -> tuple[str, str, str]:
        return self.row["trace_id"], self.row["span_id"], self.row["binding"]

    def to_dict(self) -> dict[str, Any]:
        created = self.row["created_at"]
        return {
            **self.row, "created_at": as_utc(created).isoformat(), "why": self.why, "detail": self.detail,
            "review_url": f"/ui/review/{self.row['trace_id']}?span={self.row['span_id']}"
                          f"&binding={self.row['binding']}",
        }  # fmt: skip


class ReviewQueue:
    """Proposals over the scores of the last ``config.window``; ``thresholds`` by binding."""

    def __init__(
        self, engine: Engine, config: ReviewConfig, thresholds: dict[str, float], default_threshold: float,
        rng: random.Random | None = None,
    ) -> None:  # fmt: skip
        self.engine = engine
        self.config = config
        self.thresholds = thresholds
        self.default_threshold = default_threshold
        self.rng = rng or random.Random()

    def threshold(self, binding: str) -> float:
        return self.thresholds.get(binding, self.default_threshold)

    def propose(self, now: datetime, *, binding: str | None = None, limit: int = 20) -> list[Proposal]:
        since = now - timedelta(seconds=self.config.window)
        where = [
            SCORES.c.status == "ok", SCORES.c.score.is_not(None), SCORES.c.created_at >= since,
            ~reviewed_condition(SCORES),
        ]  # fmt: skip
        if binding is not None:
            where.append(SCORES.c.binding == binding)
        chosen: dict[tuple[str, str, str], Proposal] = {}

        def take(found: list[Proposal], room: int) -> None:
            for proposal in found:
                if len(chosen) >= room:
                    return
                chosen.setdefault(proposal.key, proposal)

        with self.engine.connect() as connection:
            share = math.ceil(limit * self.config.random_share)
            take(self._random(connection, where, share), share)
            take(self._near_threshold(connection, where, binding, limit), limit)
            take(self._disagreements(connection, since, binding, limit), limit)
            take(self._new_versions(connection, where, since, binding, limit), limit)
            take(self._random(connection, where, limit), limit)  # the rest, when rules found few
        return list(chosen.values())

    def _random(self, connection: Connection, where: list[ColumnElement[bool]], count: int) -> list[Proposal]:
        if count <= 0:
            return []
        start = f"{self.rng.getrandbits(128):032x}"
        found: list[Proposal] = []
        for part in (SCORES.c.id >= start, SCORES.c.id < start):  # from the draw on, wrapping
            query = select(*_COLUMNS).where(*where, part).order_by(SCORES.c.id).limit(count - len(found))
            found += [Proposal(dict(row._mapping), "random", "drawn at random") for row in connection.execute(query)]
            if len(found) >= count:
                break
        return found

    def _bindings(self, connection: Connection, where: list[ColumnElement[bool]], binding: str | None) -> list[str]:
        if binding is not None:
            return [binding]
        return list(connection.execute(select(SCORES.c.binding).where(*where).distinct()).scalars())

    def _near_threshold(
        self, connection: Connection, where: list[ColumnElement[bool]], binding: str | None, limit: int
    ) -> list[Proposal]:
        found = []
        margin = self.config.near_threshold
        for name in self._bindings(connection, where, binding):
            cut = self.threshold(name)
            query = (
                select(*_COLUMNS)
                .where(*where, SCORES.c.binding == name, SCORES.c.score.between(cut - margin, cut + margin))
                .order_by(func.abs(SCORES.c.score - cut), SCORES.c.id)
                .limit(limit)
            )
            found += [
                Proposal(dict(row._mapping), "near_threshold", f"{row.score:.3f} is within {margin:g} of {cut:g}")
                for row in connection.execute(query)
            ]
        found.sort(key=lambda p: abs(p.row["score"] - self.threshold(p.row["binding"])))
        return found

    def _disagreements(
        self, connection: Connection, since: datetime, binding: str | None, limit: int
    ) -> list[Proposal]:
        other = SCORES.alias("other")
        query = (
            select(*_COLUMNS, other.c.binding.label("other_binding"), other.c.score.label("other_score"))
            .join(
                other,
                and_(
                    other.c.trace_id == SCORES.c.trace_id, other.c.span_id == SCORES.c.span_id,
                    other.c.binding != SCORES.c.binding, other.c.status == "ok",
                    other.c.score.is_not(None),
                ),
            )
            .where(
                SCORES.c.status == "ok", SCORES.c.score.is_not(None), SCORES.c.created_at >= since,
                ~reviewed_condition(SCORES),
                func.abs(SCORES.c.score - other.c.score) >= self.config.disagreement,
            )
            .order_by(func.abs(SCORES.c.score - other.c.score).desc(), SCORES.c.id)
            .limit(limit)
        )
        if binding is not None:
            query = query.where(SCORES.c.binding == binding)
        found = []
        for row in connection.execute(query):
            fields = dict(row._mapping)
            name, score = fields.pop("other_binding"), fields.pop("other_score")
            found.append(Proposal(fields, "disagreement", f"{name} scored it {score:.3f}"))
        return found

    def _new_versions(
        self, connection: Connection, where: list[ColumnElement[bool]], since: datetime,
        binding: str | None, limit: int,
    ) -> list[Proposal]:  # fmt: skip
        """Runs of versions with fewer than ``new_version_reviews`` reviewed runs in the window."""
        versions = select(SCORES.c.binding, SCORES.c.scorer_version).where(
            SCORES.c.status == "ok", SCORES.c.created_at >= since
        )
        if binding is not None:
            versions = versions.where(SCORES.c.binding == binding)
        reviewed = {
            (row.binding, row.scorer_version): row.reviewed
            for row in connection.execute(
                select(SCORES.c.binding, SCORES.c.scorer_version, func.count().label("reviewed"))
                .where(SCORES.c.status == "ok", SCORES.c.created_at >= since, reviewed_condition(SCORES))
                .group_by(SCORES.c.binding, SCORES.c.scorer_version)
            )
        }
        found = []
        for name, version in connection.execute(versions.distinct()).all():
            count = reviewed.get((name, version), 0)
            if count >= self.config.new_version_reviews:
                continue
            query = (
                select(*_COLUMNS)
                .where(*where, SCORES.c.binding == name, SCORES.c.scorer_version == version)
                .order_by(SCORES.c.created_at.desc(), SCORES.c.id)
                .limit(limit)
            )
            detail = f"version {version} has {count} reviewed runs (fewer than {self.config.new_version_reviews})"
            found += [Proposal(dict(row._mapping), "new_version", detail) for row in connection.execute(query)]
        return found
