"""The review queue: scored runs worth a person's look, none of them reviewed yet.

Four reasons to propose a run, in this order of priority after the random share:

* ``random``: a uniform draw among the unreviewed runs, a fixed share of every queue. The other
  rules pick hard cases; calibration measured only on hard cases would say the judge is worse
  than it is on the traffic it scores;
* ``near_threshold``: the score is close to the binding's pass/fail threshold;
* ``disagreement``: another binding scored the same run very differently;
* ``new_version``: the scorer version has too few reviewed runs to be calibrated.

The rules look at the most recent ``candidates`` scored runs of each binding in the window (one
index range each, then plain Python), not at the whole window: a page of the queue then costs
the same on a store holding millions of scores as on a small one. Scanning a week of 200,000
scores per rule took 1-2 s each on SQLite.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tracescore.feedback.config import FeedbackSettings, ReviewConfig
from tracescore.feedback.report import Thresholds
from tracescore.store import Database, connect
from tracescore.store.feedback import reviewed
from tracescore.store.scores import RecentScore, recent_scores
from tracescore.times import utc_text


@dataclass
class Proposal:
    row: RecentScore
    why: str
    detail: str

    @property
    def key(self) -> tuple[str, str, str]:
        return self.row["trace_id"], self.row["span_id"], self.row["binding"]

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.row,
            "created_at": utc_text(self.row["created_at"]),
            "why": self.why,
            "detail": self.detail,
            "review_url": f"/ui/review/{self.row['trace_id']}?span={self.row['span_id']}"
            f"&binding={self.row['binding']}",
        }


class ReviewQueue:
    """Proposals among the recent scored runs of the configured bindings."""

    def __init__(
        self,
        engine: Database,
        config: ReviewConfig,
        thresholds: Thresholds,
        bindings: Sequence[str],
        rng: random.Random | None = None,
    ) -> None:
        self.engine = engine
        self.config = config
        self.thresholds = thresholds
        self.bindings = list(bindings)
        self.rng = rng or random.Random()

    @classmethod
    def of(cls, settings: FeedbackSettings, engine: Database) -> ReviewQueue:
        """The queue a service's configuration describes."""
        return cls(
            engine,
            settings.feedback.review,
            Thresholds.of(settings, engine),
            [binding.name for binding in settings.scorers],
        )

    def propose(
        self,
        now: datetime,
        *,
        binding: str | None = None,
        limit: int = 20,
        rng: random.Random | None = None,
        skip: Collection[tuple[str, str, str]] = (),
    ) -> list[Proposal]:
        """Up to ``limit`` unreviewed runs (of ``binding``, else of every binding), the random
        share first, then each rule's in its order, then more random ones if room is left.
        ``rng`` draws the random share (the queue's own by default); runs in ``skip`` (an
        earlier page's) are left out."""
        since = now - timedelta(seconds=self.config.window)
        names = list(dict.fromkeys([*self.bindings, *([binding] if binding else [])]))
        with connect(self.engine) as connection:
            recent = [
                row
                for name in names
                for row in recent_scores(connection, name, since, self.config.candidates)
            ]
            done = reviewed(connection, [row["trace_id"] for row in recent])
        is_reviewed = [
            (row["trace_id"], row["span_id"], row["binding"]) in done
            or (row["trace_id"], None, row["binding"]) in done
            for row in recent
        ]
        candidates = [
            row
            for row, done in zip(recent, is_reviewed, strict=True)
            if not done
            and (binding is None or row["binding"] == binding)
            and (row["trace_id"], row["span_id"], row["binding"]) not in skip
        ]
        chosen: dict[tuple[str, str, str], Proposal] = {}

        def take(found: list[Proposal], room: int) -> None:
            for proposal in found:
                if len(chosen) >= room:
                    return
                chosen.setdefault(proposal.key, proposal)

        draw = (rng or self.rng).sample(candidates, len(candidates))
        share = math.ceil(limit * self.config.random_share)
        take([Proposal(row, "random", "drawn at random") for row in draw[:share]], share)
        take(self._near_threshold(candidates), limit)
        take(self._disagreements(candidates, recent), limit)
        take(self._new_versions(candidates, recent, is_reviewed), limit)
        take([Proposal(row, "random", "drawn at random") for row in draw[share:]], limit)
        return list(chosen.values())

    def pages(
        self, now: datetime, *, binding: str | None, limit: int, seed: int, page: int
    ) -> list[Proposal]:
        """Page ``page`` (from 0) of the queue: each page a queue of its own (its random share,
        then the rules) among the runs no earlier page proposed, drawn with ``seed`` + its
        number, so the pages a cursor leads through are the same pages whichever is asked."""
        seen: set[tuple[str, str, str]] = set()
        found: list[Proposal] = []
        for number in range(page + 1):
            found = self.propose(
                now, binding=binding, limit=limit, rng=random.Random(seed + number), skip=seen
            )
            seen.update(proposal.key for proposal in found)
        return found

    def _near_threshold(self, candidates: list[RecentScore]) -> list[Proposal]:
        margin = self.config.near_threshold
        near = []
        for row in candidates:
            cut = self.thresholds.cut(row["binding"])
            if abs(row["score"] - cut) <= margin:
                near.append(
                    (
                        abs(row["score"] - cut),
                        Proposal(
                            row,
                            "near_threshold",
                            f"{row['score']:.3f} is within {margin:g} of {cut:g}",
                        ),
                    )
                )
        near.sort(key=lambda item: item[0])
        return [proposal for _, proposal in near]

    def _disagreements(
        self, candidates: list[RecentScore], recent: list[RecentScore]
    ) -> list[Proposal]:
        """Runs another binding scored at least ``disagreement`` apart, widest gaps first."""
        by_run: dict[tuple[str, str], list[RecentScore]] = defaultdict(list)
        for row in recent:
            by_run[(row["trace_id"], row["span_id"])].append(row)
        found = []
        for row in candidates:
            others = [
                other
                for other in by_run[(row["trace_id"], row["span_id"])]
                if other["binding"] != row["binding"]
            ]
            if not others:
                continue
            widest = max(others, key=lambda other: abs(other["score"] - row["score"]))
            gap = abs(widest["score"] - row["score"])
            if gap >= self.config.disagreement:
                found.append(
                    (
                        gap,
                        Proposal(
                            row,
                            "disagreement",
                            f"{widest['binding']} scored it {widest['score']:.3f}",
                        ),
                    )
                )
        found.sort(key=lambda item: -item[0])
        return [proposal for _, proposal in found]

    def _new_versions(
        self, candidates: list[RecentScore], recent: list[RecentScore], is_reviewed: list[bool]
    ) -> list[Proposal]:
        """Runs of versions with fewer than ``new_version_reviews`` reviewed runs among the
        recent ones, newest first."""
        reviewed: dict[tuple[str, str], int] = defaultdict(int)
        for row, done in zip(recent, is_reviewed, strict=True):
            reviewed[(row["binding"], row["scorer_version"])] += done
        wanted = self.config.new_version_reviews
        return [
            Proposal(
                row,
                "new_version",
                f"version {row['scorer_version']} has {count} reviewed runs (fewer than {wanted})",
            )
            for row in candidates
            if (count := reviewed[(row["binding"], row["scorer_version"])]) < wanted
        ]
