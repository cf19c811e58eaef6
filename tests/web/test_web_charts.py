"""Server-side SVG charts: geometry follows the data, text is escaped, buckets stay bounded."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from tracescore.web.charts import TOP, Band, Bucket, Series, bar_chart, score_chart, usd
from tracescore.web.timerange import (
    MAX_POINTS,
    PRESETS,
    ViewState,
    Window,
    default_window,
    parse_moment,
    pick_bucket,
)

T0 = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def _bucket(minute: int, mean: float, *, errors: int = 0) -> Bucket:
    return Bucket(
        start=T0 + minute * MINUTE,
        count=4,
        mean=mean,
        p10=mean - 0.1,
        p90=mean + 0.1,
        errors=errors,
        attempted=4 + errors,
    )


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


def test_buckets_are_round_and_give_30_to_120_points() -> None:
    assert pick_bucket(timedelta(hours=24)) == timedelta(minutes=15)
    assert pick_bucket(timedelta(minutes=15)) == timedelta(seconds=10)
    for name, length in PRESETS.items():
        window = Window.ending_now(length, None)
        assert 30 <= window.points <= 120, name
        assert window.until - window.since == length
    for seconds in range(120, 8 * 86400, 997):  # any custom range of two minutes or more
        window = Window.between(T0, T0 + timedelta(seconds=seconds), None)
        assert 30 <= window.points <= 121, seconds  # widened to whole buckets: one more at most
        assert window.since <= T0 and window.since.timestamp() % window.bucket.total_seconds() == 0
    window = Window.ending_now(timedelta(hours=1), timedelta(minutes=1))
    assert window.until - window.since == timedelta(hours=1) and window.until.timestamp() % 60 == 0
    with pytest.raises(ValueError):
        Window.ending_now(timedelta(seconds=MAX_POINTS + 1), timedelta(seconds=1))
    with pytest.raises(ValueError):
        Window.between(T0, T0, None)


def test_the_default_range_is_the_shortest_preset_holding_the_last_days_scores() -> None:
    assert default_window(T0, T0 - timedelta(minutes=2), False) == "5m"
    assert default_window(T0, T0 - timedelta(minutes=40), False) == "1h"
    assert default_window(T0, T0 - timedelta(hours=20), False) == "24h"
    assert default_window(T0, T0 - timedelta(minutes=2), True) == "24h"  # not all data is recent
    assert default_window(T0, None, True) == "7d"  # nothing in a day: the last week
    assert default_window(T0, None, False) == "24h"


def test_the_view_is_in_the_url_and_custom_times_are_utc() -> None:
    view = ViewState(window="1h", split="agent", agent="<a&b>")
    assert view.url() == "/?window=1h&split=agent&agent=%3Ca%26b%3E"
    assert view.preset("5m") == "/?window=5m&split=agent&agent=%3Ca%26b%3E"
    assert ViewState(since="x", until="y", bucket="1s").preset("1h") == "/?window=1h"
    assert parse_moment("2026-05-04T12:00") == T0
    assert parse_moment("2026-05-04T14:00+02:00") == T0 == parse_moment("2026-05-04T12:00:00Z")


def test_split_lines_bands_and_drill_down_links() -> None:
    total = [_bucket(0, 0.7), _bucket(1, 0.5)]
    lines = [
        Series(
            "weather-bot",
            1,
            [_bucket(0, 0.9), _bucket(1, 0.2)],
            lambda s: f"/w?{s:%M}&x",
            [(T0 + MINUTE + MINUTE / 2, T0 + 20 * MINUTE)],
        ),
        Series("other (2)", None, [_bucket(0, 0.6)]),
    ]
    band = Band(
        T0 + MINUTE, T0 + 20 * MINUTE, "drop<", "agent=weather-bot", "<b>fired</b>", 1, "/r"
    )
    svg = score_chart(
        "kc",
        total,
        T0,
        T0 + 10 * MINUTE,
        MINUTE,
        series=lines,
        bands=[band],
        href=lambda s: f"/b?{s:%M}",
    )
    assert svg.count('<g class="series s1" data-segment="weather-bot">') == 1
    assert svg.count('<g class="series other"') == 1
    assert 'class="band"' not in svg and 'class="p10"' not in svg  # percentiles only unsplit
    assert svg.count('<a class="point-link" href="/w?00&amp;x">') == 1
    assert svg.count('class="bucket-link"') == 2 and 'href="/b?01"' in svg
    # The band runs from its start to the end of the range, over the plot only, escaped.
    area = re.search(rf'<rect class="alert-area" x="([\d.]+)" y="{TOP}" width="([\d.]+)"', svg)
    assert area and float(area.group(1)) == pytest.approx(36 + 554 / 10)
    assert float(area.group(1)) + float(area.group(2)) == pytest.approx(590)
    assert 'data-rule="drop&lt;"' in svg and "&lt;b&gt;fired&lt;/b&gt;" in svg
    # The firing segment's points in the band are filled: only weather-bot's second one.
    assert svg.count('class="point alerting"') == 1 and "n=4, alert firing" in svg
    assert 'class="alert-edge s1"' in svg and '<a class="band-link" href="/r">' in svg
    # The strip sits in a lane above the plot: it is not read as a line of scores at the top
    # value, and the points there stay visible and clickable.
    full = Bucket(start=T0 + MINUTE, count=4, mean=1.0, p10=None, p90=None)
    flagged = score_chart(
        "kc",
        [full],
        T0,
        T0 + 10 * MINUTE,
        MINUTE,
        series=[Series("weather-bot", 1, [full])],
        bands=[band],
    )
    edge = re.search(
        r'class="alert-edge s1" x="[\d.]+" y="([\d.]+)" width="[\d.]+" '
        r'height="([\d.]+)"',
        flagged,
    )
    point = re.search(r'<circle class="point[^"]*" cx="[\d.]+" cy="([\d.]+)" r="([\d.]+)"', flagged)
    assert edge and point and float(point[1]) == TOP
    assert float(edge[1]) + float(edge[2]) < float(point[1]) - float(point[2])
    # A band outside the range is not drawn.
    late = Band(T0 + 11 * MINUTE, T0 + 12 * MINUTE, "r", "all", "x")
    assert "alert-band" not in score_chart("kc", total, T0, T0 + 10 * MINUTE, MINUTE, bands=[late])


def test_dollars_show_small_judge_costs() -> None:
    assert [usd(v) for v in (0, 0.00028, 0.0123, 2.3)] == ["$0.00", "$0.00028", "$0.012", "$2.30"]


def test_a_segments_colour_comes_from_its_name_not_its_rank() -> None:
    """weather-bot is the same colour whether it has the most runs or the fewest (its colour
    followed its rank, so it changed with the range), and two lines of one chart never share a
    colour: a clash goes to the name sorting first, the other takes the next free one."""
    from tracescore.web.overview import PALETTE_SIZE, _colours, segment_colour
    from tracescore.web.trends import Line

    names = ["weather-bot", "travel-bot", "support-bot", "math-bot", "recipe-bot"]
    lines = [Line(name, name, False, [], 1, 0.5) for name in names]
    lines.append(Line("other (4)", None, True, [], 4, 0.5))
    by_volume = _colours(lines)
    assert _colours(list(reversed(lines))) == by_volume
    assert _colours(lines[:1]) == {"weather-bot": segment_colour("weather-bot")}
    assert by_volume["other (4)"] is None
    drawn = [colour for name, colour in by_volume.items() if name != "other (4)"]
    assert len(set(drawn)) == len(drawn) and all(0 <= c < PALETTE_SIZE for c in drawn)
    # math-bot and weather-bot hash to the same colour: math-bot sorts first and keeps it
    assert segment_colour("math-bot") == segment_colour("weather-bot")
    assert by_volume["math-bot"] == segment_colour("math-bot")
    assert by_volume["weather-bot"] != segment_colour("weather-bot")


def test_alert_periods_go_on_the_chart_and_the_line_they_are_about() -> None:
    """A rule on a scorer segmented by binding fires per binding: drawn on that binding's chart
    only. A firing for runs without an agent name is tied to the "(none)" line like any other
    agent's: band edge in its colour, its points filled, "firing" in its legend entry."""
    from tracescore.monitor.config import ThresholdRule
    from tracescore.web.alerting import Period, chart_url, periods_of
    from tracescore.web.overview import _panel, segment_colour
    from tracescore.web.trends import NO_VALUE, Aggregates, Line, Trend

    per_binding = Period("low", {"binding": "tone-a"}, T0, None, "low", None, "tone")
    nameless = Period("drop", {"agent": None}, T0 + MINUTE, None, "drop", "tone-a", None)
    assert periods_of([per_binding, nameless], "tone-a", {"tone"}) == [per_binding, nameless]
    assert periods_of([per_binding, nameless], "tone-b", {"tone"}) == []
    rule = ThresholdRule(
        name="low", type="threshold", scorer="tone", below=0.5, segment_by=["binding"]
    )
    focused = "/?since=2026-05-04T12%3A00%3A00Z&binding=tone-a"
    assert chart_url(rule, {"binding": "tone-a"}, T0) == focused

    buckets = [_bucket(0, 0.8), _bucket(2, 0.1)]
    lines = [
        Line("bot", "bot", False, buckets, 8, 0.45),
        Line(NO_VALUE, None, False, buckets, 8, 0.45),
    ]
    summary = Aggregates(
        trends={"tone-a": Trend(buckets, lines, 16, 0.45, 16, 0)},
        scorers={"tone-a": {"tone"}},
        coverage={},
        cost_chart=None,
        cost_total=0.0,
        choices={},
    )
    window = Window(T0, T0 + 10 * MINUTE, MINUTE)
    panel = _panel("tone-a", summary, window, ViewState(split="agent"), [nameless], window.until)
    assert f'class="alert-edge s{segment_colour(NO_VALUE)}"' in panel.chart
    assert [entry.firing for entry in panel.legend] == [False, True]
    series = r'<g class="series s\d" data-segment="([^"]*)">(.*?)</g>'
    groups = dict(re.findall(series, panel.chart))
    assert "point alerting" in groups[NO_VALUE] and "point alerting" not in groups["bot"]
