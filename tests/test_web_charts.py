"""Server-side SVG charts: geometry follows the data, text is escaped, buckets stay bounded."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from tracescore.web.charts import Bucket, bar_chart, score_chart, usd
from tracescore.web.pages import MAX_POINTS, Window, pick_bucket

T0 = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def _bucket(minute: int, mean: float, *, errors: int = 0) -> Bucket:
    return Bucket(start=T0 + minute * MINUTE, count=4, mean=mean, p10=mean - 0.1, p90=mean + 0.1,
                  errors=errors, attempted=4 + errors)  # fmt: skip


def test_points_lines_and_band_follow_the_buckets() -> None:
    buckets = [_bucket(0, 0.8), _bucket(1, 0.6), _bucket(5, 0.4, errors=2)]
    svg = score_chart("tone", buckets, T0, T0 + 10 * MINUTE, MINUTE)
    points = re.findall(r'<circle class="point" cx="([\d.]+)" cy="([\d.]+)"', svg)
    assert len(points) == 3
    xs, ys = [float(x) for x, _ in points], [float(y) for _, y in points]
    assert xs == sorted(xs) and ys == sorted(ys)  # later and lower scores: right and further down
    # Minutes 0 and 1 are adjacent and joined; minute 5 stands alone after a gap.
    assert svg.count('<polyline class="mean"') == 1 and svg.count('class="band"') == 3
    assert svg.count('class="errors"') == 1
    assert "mean 0.400, p10 0.300, p90 0.500, n=4" in svg


def test_an_empty_range_says_so_and_custom_ranges_widen_the_axis() -> None:
    assert "no scores in this range" in score_chart("x", [], T0, T0 + MINUTE, MINUTE)
    wide = score_chart("x", [_bucket(0, 4.5)], T0, T0 + 2 * MINUTE, MINUTE)
    assert ">4.6<" in wide  # the axis reaches the p90 of a 0–5 scorer


def test_text_in_charts_is_escaped() -> None:
    svg = score_chart('<script>alert("x")</script>', [_bucket(0, 0.5)], T0, T0 + MINUTE, MINUTE)
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    bars = bar_chart("cost", [("<b>", 0.5, "<i>tip</i>"), ("05-05", 0.0, "none")])
    assert "<b>" not in bars and "<i>" not in bars and bars.count('class="bar"') == 1


def test_buckets_are_round_and_bounded() -> None:
    assert pick_bucket(timedelta(hours=24)) == timedelta(minutes=30)
    assert pick_bucket(timedelta(minutes=15)) == timedelta(seconds=15)
    window = Window.ending_now(timedelta(hours=1), timedelta(minutes=1))
    assert window.until - window.since == timedelta(hours=1) and window.until.timestamp() % 60 == 0
    with pytest.raises(ValueError):
        Window.ending_now(timedelta(seconds=MAX_POINTS + 1), timedelta(seconds=1))


def test_dollars_show_small_judge_costs() -> None:
    assert [usd(v) for v in (0, 0.00028, 0.0123, 2.3)] == ["$0.00", "$0.00028", "$0.012", "$2.30"]
