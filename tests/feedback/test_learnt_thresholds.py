"""Pass thresholds learnt from people's verdicts (issue 50): ``threshold: learn`` replaces the
scorer's cut with the one that agrees most with the verdicts once there are enough of both
kinds; every answer that shows a threshold says where it came from; the scoring processes
label with it; it is learnt again only every ``refresh``. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import yaml
from fastapi.testclient import TestClient

from tests.support.score_streams import score_row
from tracescore.config import ConfigError, parse_config
from tracescore.pipeline.bindings import compile_bindings
from tracescore.pipeline.config import LearntThreshold, ScorerBinding
from tracescore.pipeline.learnt_thresholds import (
    LearntThresholds,
    label_with_learnt,
    learn_threshold,
)
from tracescore.pipeline.scoring_task import relearn
from tracescore.service import create_app
from tracescore.store import SpanStore, open_store
from tracescore.store.feedback import Feedback, FeedbackStore
from tracescore.store.scores import upsert_scores

CONFIG = (
    "scorers:\n"
    "  - {name: tone, scorer: tone, threshold: learn}\n"
    "  - {name: fixed, scorer: tone, threshold: 0.3}\n"
    "  - {name: stated, scorer: tone}\n"
)


def test_the_cut_that_agrees_most_with_people_is_learnt() -> None:
    # people pass from 0.8 up: the scorer's 0.5 passes the 0.6s they failed
    pairs = [(0.9, True)] * 5 + [(0.8, True)] * 5 + [(0.6, False)] * 5 + [(0.2, False)] * 5
    assert learn_threshold(pairs, 0.5, True, min_verdicts=5) == (0.8, 20)
    # a score where lower is better (toxicity): passes at or below the cut
    lower = [(0.1, True)] * 5 + [(0.4, False)] * 5
    assert learn_threshold(lower, 0.0, False, min_verdicts=5) == (0.1, 10)


def test_too_few_verdicts_of_either_kind_learn_nothing() -> None:
    assert learn_threshold([(0.9, True)] * 50 + [(0.1, False)] * 4, 0.5, True, 5) is None
    assert learn_threshold([(0.9, True)] * 4 + [(0.1, False)] * 50, 0.5, True, 5) is None


def test_equally_good_cuts_go_to_the_one_nearest_the_scorers() -> None:
    # every cut in (0.2, 0.9] separates these perfectly: the scorer's own 0.5 stays
    pairs = [(0.9, True)] * 3 + [(0.2, False)] * 3
    assert learn_threshold(pairs, 0.5, True, 3) == (0.5, 6)
    # a stated cut outside the perfect ones: the nearest perfect one, the same every time
    assert learn_threshold(pairs, 0.95, True, 3) == (0.9, 6)
    assert learn_threshold(list(reversed(pairs)), 0.95, True, 3) == (0.9, 6)


def test_learn_is_typed_config_and_a_wrong_word_names_its_key() -> None:
    binding = ScorerBinding.model_validate(
        yaml.safe_load("{name: t, scorer: tone, threshold: learn}")
    )
    assert binding.threshold == LearntThreshold()
    custom = yaml.safe_load("{name: t, scorer: tone, threshold: {learn: true, min_verdicts: 3}}")
    assert ScorerBinding.model_validate(custom).threshold == LearntThreshold(min_verdicts=3)
    with pytest.raises(
        ConfigError, match=r"scorers\.0\.threshold.*a number or 'learn', not 'lern'"
    ):
        parse_config("scorers:\n  - {name: t, scorer: tone, threshold: lern}\n")
    with pytest.raises(
        ConfigError,
        match=r"scorers\.0\.threshold .*min_verdicts: Input should be greater than or equal to 1$",
    ):
        parse_config(
            "scorers:\n  - {name: t, scorer: tone, threshold: {learn: true, min_verdicts: 0}}\n"
        )


def _verdicts(store: SpanStore, binding: str, scores: list[tuple[float, str]]) -> None:
    """Scores of ``binding`` and a person's label on each run."""
    now = datetime.now(UTC)
    rows = [
        score_row(now, score, binding=binding, scorer_id="tone-scorer", trace_id=uuid.uuid4().hex)
        for score, _ in scores
    ]
    with store.write_transaction() as connection:
        upsert_scores(connection, rows)  # type: ignore[arg-type]
    FeedbackStore(store).record(
        [
            Feedback(
                trace_id=row["trace_id"],
                span_id=row["span_id"],
                name=binding,
                source="api",
                created_at=now,
                label=label,
                author="ana",
            )
            for row, (_, label) in zip(rows, scores, strict=True)
        ]
    )


PEOPLE_PASS_FROM_08 = (
    [(0.9, "pass")] * 6 + [(0.8, "good")] * 6 + [(0.6, "fail")] * 6 + [(0.2, "bad")] * 6
)


@pytest.fixture
def store(db_url: str) -> Iterator[SpanStore]:
    store = open_store(db_url)
    yield store
    store.close()


@pytest.fixture
def client(store: SpanStore) -> Iterator[TestClient]:
    with TestClient(create_app(parse_config(CONFIG), store)) as client:
        yield client


def test_calibration_says_where_its_threshold_came_from(
    client: TestClient, store: SpanStore
) -> None:
    def calibration(binding: str, **params: str) -> tuple[float, str]:
        body = client.get("/api/v1/calibration", params={"binding": binding, **params}).json()
        return body["threshold"], body["threshold_source"]

    # fewer than 10 verdicts of each kind: the scorer's still
    _verdicts(store, "tone", PEOPLE_PASS_FROM_08[:12] + PEOPLE_PASS_FROM_08[-3:])
    assert calibration("tone") == (0.5, "scorer default")
    assert calibration("fixed") == (0.3, "binding")
    assert calibration("stated") == (0.5, "scorer default")
    assert calibration("tone", threshold="0.4") == (0.4, "asked")


def test_enough_verdicts_learn_the_threshold(client: TestClient, store: SpanStore) -> None:
    _verdicts(store, "tone", PEOPLE_PASS_FROM_08)
    _verdicts(store, "fixed", PEOPLE_PASS_FROM_08)  # a number given outright is never relearnt
    body = client.get("/api/v1/calibration", params={"binding": "tone"}).json()
    assert (body["threshold"], body["threshold_source"]) == (0.8, "learnt from 24 verdicts")
    assert body["overall"]["accuracy"] == 1.0
    fixed = client.get("/api/v1/calibration", params={"binding": "fixed"}).json()
    assert (fixed["threshold"], fixed["threshold_source"]) == (0.3, "binding")


def test_a_learnt_threshold_is_kept_for_its_refresh(store: SpanStore) -> None:
    now = [0.0]
    learnt = LearntThresholds(store.engine, parse_config(CONFIG).scorers, clock=lambda: now[0])
    assert learnt.get("tone").origin == "scorer default"
    _verdicts(store, "tone", PEOPLE_PASS_FROM_08)
    assert learnt.get("tone").origin == "scorer default"  # within refresh: not read again
    now[0] = 600.0
    found = learnt.get("tone")
    assert (found.value, found.origin) == (0.8, "learnt from 24 verdicts")
    assert learnt.get("stated").origin == "scorer default" and learnt.get("nope").value is None


def test_the_scoring_processes_label_with_the_learnt_threshold(store: SpanStore) -> None:
    config = parse_config(CONFIG)
    bindings = compile_bindings(config.scorers, {}, engine=None)
    tone = bindings[0]
    assert tone.threshold == 0.5 and tone.label(0.6) == "pass"
    _verdicts(store, "tone", PEOPLE_PASS_FROM_08)

    async def learn_once() -> None:
        task = asyncio.create_task(
            relearn(LearntThresholds(store.engine, config.scorers), bindings)
        )
        while tone.threshold == 0.5:
            await asyncio.sleep(0.01)
        task.cancel()

    asyncio.run(asyncio.wait_for(learn_once(), 30))
    assert tone.threshold == 0.8 and tone.label(0.6) == "fail" and tone.label(0.8) == "pass"
    assert bindings[1].threshold == 0.3  # the others are left as configured


def test_a_one_off_rescore_labels_with_the_learnt_threshold(store: SpanStore) -> None:
    config = parse_config(CONFIG)
    bindings = compile_bindings(config.scorers, {}, engine=None)
    label_with_learnt(store.engine, bindings)
    assert bindings[0].threshold == 0.5  # no verdicts yet: the scorer's
    _verdicts(store, "tone", PEOPLE_PASS_FROM_08)
    label_with_learnt(store.engine, bindings)
    assert bindings[0].threshold == 0.8 and bindings[0].label(0.6) == "fail"
    assert bindings[1].threshold == 0.3 and bindings[2].threshold == 0.5
