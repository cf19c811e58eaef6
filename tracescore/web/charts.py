"""Charts as inline SVG, drawn on the server: no chart library, nothing to fetch, works offline.

Colours and fonts come from the stylesheet through class names (the page's Content-Security-
Policy forbids inline styles), so the SVG only carries geometry and escaped text. Every text
node goes through :func:`markupsafe.escape`: binding names come from config, but nothing
reaching a page is trusted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from markupsafe import Markup, escape

WIDTH, HEIGHT = 600, 210
LEFT, RIGHT, TOP = 36, 10, 18
PLOT_BOTTOM = 140
"""The score plot spans TOP..PLOT_BOTTOM; the sample-count strip sits below it."""
COUNT_TOP, COUNT_BOTTOM = 156, 186
AXIS_LABEL_Y = 202
EDGE_TOP, EDGE_HEIGHT = 4, 6
"""The coloured strip over an alert band, which links to the runs of the firing. It sits in a
lane above the plot: drawn at the top of the plot it read as a line of scores at the highest
value, in the segment's colour, and hid the points there."""


@dataclass(frozen=True, slots=True)
class Bucket:
    """One time bucket of one binding: what the summary query returns for it."""

    start: datetime
    count: int
    mean: float | None
    p10: float | None
    p90: float | None
    errors: int = 0
    attempted: int = 0


def _num(value: float) -> str:
    return f"{value:.1f}"


def _time_label(moment: datetime, span: timedelta) -> str:
    if span <= timedelta(days=1):
        return moment.strftime("%H:%M:%S" if span <= timedelta(minutes=30) else "%H:%M")
    return moment.strftime("%m-%d %H:%M")


def _value_domain(buckets: Sequence[Bucket]) -> tuple[float, float]:
    """0..1 (every built-in scorer's range), widened for custom scorers that go beyond it."""
    values = [v for b in buckets for v in (b.mean, b.p10, b.p90) if v is not None]
    low, high = min([0.0, *values]), max([1.0, *values])
    return low, high if high > low else low + 1.0


@dataclass(frozen=True, slots=True)
class Series:
    """One segment's line when a chart is split (``?split=agent``): its buckets, colour and link.

    ``colour`` indexes the stylesheet's palette (``s0``…); the "other" line is ``None`` (grey).
    ``href(start)`` is the drill-down URL of one of its buckets. ``firing`` are the periods an
    alert about this segment fired: its points in them are drawn filled, so the band is tied
    to the line it is about even where lines cross.
    """

    name: str
    colour: int | None
    buckets: Sequence[Bucket]
    href: Callable[[datetime], str] | None = None
    firing: Sequence[tuple[datetime, datetime]] = ()


@dataclass(frozen=True, slots=True)
class Band:
    """A period an alert was firing for this chart, drawn over the plot (Grafana's annotations).

    ``colour`` is the palette index of the segment line it concerns, when the chart has one.
    """

    start: datetime
    end: datetime
    rule: str
    segment: str
    label: str
    colour: int | None = None
    href: str | None = None


def _colour_class(colour: int | None) -> str:
    return "other" if colour is None else f"s{colour}"


def score_chart(
    title: str,
    buckets: Sequence[Bucket],
    since: datetime,
    until: datetime,
    bucket: timedelta,
    *,
    series: Sequence[Series] = (),
    bands: Sequence[Band] = (),
    href: Callable[[datetime], str] | None = None,
    highlights: Sequence[Series] = (),
) -> Markup:
    """Mean score per bucket (line and points), its p10–p90 band, the p10 line, sample counts.

    ``highlights`` are segment lines drawn over the unsplit chart (the segment an alert is
    firing for), in their colours, beside the overall line rather than instead of it.

    With ``series`` (a split) a mean line per segment replaces the overall line and percentiles,
    which cannot be told apart per segment. ``bands`` shade the periods alerts fired. With
    ``href`` every bucket is a link to its runs (the whole column is the target, so a bucket
    is easy to hit); points of a series link to that segment's runs of the bucket. Each point
    and column carries a ``<title>`` (the browser's tooltip) with its figures.
    """
    span = until - since
    plot_width = WIDTH - LEFT - RIGHT
    low, high = _value_domain(
        [*buckets, *(b for line in (*series, *highlights) for b in line.buckets)]
    )

    def x(moment: datetime) -> float:
        return LEFT + plot_width * ((moment - since) / span)

    def y(value: float) -> float:
        return PLOT_BOTTOM - (PLOT_BOTTOM - TOP) * (value - low) / (high - low)

    band_width = max(3.0, plot_width * (bucket / span))
    most = max((max(b.attempted, b.count) for b in buckets), default=0) or 1
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg" '
        f'data-points="{round(span / bucket)}">',
        f"<title>{escape(title)}</title>",
    ]
    for tick in (low, (low + high) / 2, high):
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_num(y(tick))}" '
            f'y2="{_num(y(tick))}"/><text class="tick" x="{LEFT - 4}" y="{_num(y(tick) + 4)}" '
            f'text-anchor="end">{tick:g}</text>'
        )
    for fraction, anchor in ((0.0, "start"), (0.5, "middle"), (1.0, "end")):
        moment = since + span * fraction
        parts.append(
            f'<text class="tick" x="{_num(LEFT + plot_width * fraction)}" y="{AXIS_LABEL_Y}" '
            f'text-anchor="{anchor}">{escape(_time_label(moment, span))}</text>'
        )
    parts.append(
        f'<text class="tick" x="{LEFT - 4}" y="{COUNT_TOP + 8}" text-anchor="end">n</text>'
    )
    edges = []  # drawn over the bucket columns: the strip on top of a band is its link
    for band in bands:  # under the data, over the plot area only
        left, right = max(since, band.start), min(until, band.end)
        if right <= left:
            continue
        start_x, width = _num(x(left)), _num(max(2.0, x(right) - x(left)))
        tip = f"<title>{escape(band.label)}{', click for its runs' if band.href else ''}</title>"
        parts.append(
            f'<g class="alert-band" data-rule="{escape(band.rule)}" '
            f'data-segment="{escape(band.segment)}" data-start="{band.start.isoformat()}">'
            f'<rect class="alert-area" x="{start_x}" y="{TOP}" width="{width}" '
            f'height="{PLOT_BOTTOM - TOP}">{tip}</rect></g>'
        )
        edge = (
            f'<rect class="alert-edge {_colour_class(band.colour)}" x="{start_x}" y="{EDGE_TOP}" '
            f'width="{width}" height="{EDGE_HEIGHT}" data-rule="{escape(band.rule)}">{tip}</rect>'
        )
        edges.append(_linked(edge, band.href, "band"))

    centre = bucket / 2
    for b in buckets:  # band and count strip
        left_x = _num(x(b.start + centre) - band_width / 2)
        if b.p10 is not None and b.p90 is not None and not series:
            top = y(b.p90)
            parts.append(
                f'<rect class="band" x="{left_x}" y="{_num(top)}" width="{_num(band_width)}" '
                f'height="{_num(max(1.0, y(b.p10) - top))}"/>'
            )
        runs = max(b.attempted, b.count)
        height = (COUNT_BOTTOM - COUNT_TOP) * runs / most
        failed = (COUNT_BOTTOM - COUNT_TOP) * b.errors / most
        parts.append(
            f'<rect class="count" x="{left_x}" y="{_num(COUNT_BOTTOM - height)}" '
            f'width="{_num(band_width)}" height="{_num(height)}"/>'
        )
        if b.errors:
            parts.append(
                f'<rect class="errors" x="{left_x}" y="{_num(COUNT_BOTTOM - failed)}" '
                f'width="{_num(band_width)}" height="{_num(failed)}"/>'
            )
        column = (
            f'<rect class="hit" x="{left_x}" y="{TOP}" width="{_num(band_width)}" '
            f'height="{COUNT_BOTTOM - TOP}" data-start="{b.start.isoformat()}"><title>'
            f"{escape(_stamp(b.start))} UTC: {b.count} scores, {b.errors} errors"
            f"{', click for its runs' if href else ''}</title></rect>"
        )
        parts.append(_linked(column, href(b.start) if href else None, "bucket"))
    parts.extend(edges)
    lines = series or [Series("all", None, buckets, href)]
    for line in lines:
        parts.append(_series(line, x, y, bucket, overall=not series))
    for line in highlights:
        parts.append(_series(line, x, y, bucket, overall=False))
    if not any(b.mean is not None for line in lines for b in line.buckets):
        parts.append(
            f'<text class="empty" x="{WIDTH / 2}" y="{(TOP + PLOT_BOTTOM) / 2}" '
            'text-anchor="middle">'
            "no scores in this range</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _linked(element: str, href: str | None, kind: str) -> str:
    """``element`` inside an SVG link when there is somewhere to go."""
    if href is None:
        return element
    return f'<a class="{kind}-link" href="{escape(href)}">{element}</a>'


def _series(
    line: Series,
    x: Callable[[datetime], float],
    y: Callable[[float], float],
    bucket: timedelta,
    *,
    overall: bool,
) -> str:
    """One mean line with its points (and, for the unsplit chart, its p10 line)."""
    centre = bucket / 2
    scored = [(b, b.mean) for b in line.buckets if b.mean is not None]
    colour = "" if overall else f" {_colour_class(line.colour)}"
    parts = [f'<g class="series{colour}" data-segment="{escape(line.name)}">']
    for segment in _contiguous(scored, bucket):
        if len(segment) > 1:
            mean_line = " ".join(
                f"{_num(x(b.start + centre))},{_num(y(mean))}" for b, mean in segment
            )
            parts.append(f'<polyline class="mean" points="{mean_line}"/>')
            if overall:
                p10_line = " ".join(
                    f"{_num(x(b.start + centre))},{_num(y(b.p10))}"
                    for b, _ in segment
                    if b.p10 is not None
                )
                parts.append(f'<polyline class="p10" points="{p10_line}"/>')
    for b, mean in scored:
        who = "" if overall else f"{line.name}: "
        figures = (
            f"mean {mean:.3f}, p10 {_fmt(b.p10)}, p90 {_fmt(b.p90)}, n={b.count}"
            if overall
            else f"mean {mean:.3f}, n={b.count}"
        )
        alerting = any(start < b.start + bucket and b.start < end for start, end in line.firing)
        tip = f"{who}{_stamp(b.start)} UTC: {figures}{', alert firing' if alerting else ''}"
        point = (
            f'<circle class="point{" alerting" if alerting else ""}" '
            f'cx="{_num(x(b.start + centre))}" '
            f'cy="{_num(y(mean))}" r="3.5" data-start="{b.start.isoformat()}" '
            f'data-mean="{mean:.6f}"><title>{escape(tip)}</title></circle>'
        )
        parts.append(_linked(point, line.href(b.start) if line.href else None, "point"))
    parts.append("</g>")
    return "".join(parts)


def usd(value: float) -> str:
    """Dollars with cents, or with enough decimals to show what a few judge calls cost."""
    return (
        f"${value:.2f}"
        if value >= 1 or value == 0
        else f"${value:.2g}"
        if value < 0.01
        else f"${value:.3f}"
    )


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _contiguous(
    scored: Sequence[tuple[Bucket, float]], size: timedelta
) -> list[list[tuple[Bucket, float]]]:
    """Runs of adjacent scored buckets (with their means): the mean line breaks where buckets
    had no scores."""
    segments: list[list[tuple[Bucket, float]]] = []
    for point in scored:
        if segments and point[0].start - segments[-1][-1][0].start <= size:
            segments[-1].append(point)
        else:
            segments.append([point])
    return segments


def bar_chart(title: str, bars: Sequence[tuple[str, float, str]]) -> Markup:
    """Vertical bars, one per ``(label, value, tooltip)``: judge spend per day."""
    plot_width = WIDTH - LEFT - RIGHT
    most = max((value for _, value, _ in bars), default=0.0) or 1.0
    slot = plot_width / max(1, len(bars))
    parts = [
        f'<svg class="chart bars" viewBox="0 0 {WIDTH} 170" role="img" '
        f'aria-label="{escape(title)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="140" y2="140"/>',
    ]
    for index, (label, value, tip) in enumerate(bars):
        centre = LEFT + slot * (index + 0.5)
        parts.append(
            f'<text class="tick" x="{_num(centre)}" y="158" text-anchor="middle">'
            f"{escape(label)}</text>"
        )
        if value <= 0:
            continue
        height = 120 * value / most
        parts.append(
            f'<rect class="bar" x="{_num(centre - slot * 0.35)}" y="{_num(140 - height)}" '
            f'width="{_num(slot * 0.7)}" height="{_num(height)}">'
            f"<title>{escape(tip)}</title></rect>"
            f'<text class="tick" x="{_num(centre)}" y="{_num(136 - height)}" text-anchor="middle">'
            f"{escape(usd(value))}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))
