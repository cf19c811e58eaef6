"""A trace's spans as a timeline (the waterfall Langfuse and Phoenix users read a trace by),
drawn on the server as inline SVG like the charts: the page's Content-Security-Policy forbids
inline styles, so bar geometry cannot be HTML widths, and nothing needs a script.

One row per span in tree order (parents above their children, indented by depth), a bar from
its start to its end on the trace's time axis, its name and duration; failed spans are marked.
Each row links to the span's raw attributes further down the page.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

from tracescore.spans import STATUS_ERROR, Span

WIDTH = 900
LABEL_WIDTH = 300
"""The left column: the span names, indented by depth."""
RIGHT = 70
"""Room right of the longest bar for its duration."""
ROW, BAR, AXIS = 20, 12, 22
INDENT, MAX_INDENT = 12, 8
NAME_CHARS = 40
"""Longer span names are cut (with …) so they stay in their column; the full name is the
row's tooltip."""


def milliseconds(nanoseconds: int) -> str:
    """A duration as a person reads it on a timeline: 0.42 ms, 12.3 ms, 1,204 ms."""
    value = nanoseconds / 1e6
    return (
        f"{value:.2f} ms" if value < 1 else f"{value:.1f} ms" if value < 100 else f"{value:,.0f} ms"
    )


def waterfall(rows: Sequence[tuple[Span, int]]) -> Markup | None:
    """The timeline of ``(span, depth)`` rows in tree order, or None when there is nothing."""
    if not rows:
        return None
    start = min(span.start_time_ns for span, _ in rows)
    end = max(max(span.end_time_ns, span.start_time_ns) for span, _ in rows)
    total = max(1, end - start)
    plot = WIDTH - LABEL_WIDTH - RIGHT
    height = AXIS + ROW * len(rows) + 4

    def x(moment: int) -> float:
        return LABEL_WIDTH + plot * (moment - start) / total

    parts = [
        f'<svg class="waterfall" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="span timeline" xmlns="http://www.w3.org/2000/svg" data-spans="{len(rows)}">',
        "<title>span timeline</title>",
    ]
    for fraction, anchor in ((0.0, "start"), (0.5, "middle"), (1.0, "end")):
        tick_x = LABEL_WIDTH + plot * fraction
        parts.append(
            f'<line class="grid" x1="{tick_x:.1f}" x2="{tick_x:.1f}" y1="{AXIS - 6}" '
            f'y2="{height}"/><text class="tick" x="{tick_x:.1f}" y="{AXIS - 9}" '
            f'text-anchor="{anchor}">{escape(milliseconds(round(total * fraction)))}</text>'
        )
    for index, (span, depth) in enumerate(rows):
        top = AXIS + ROW * index
        failed = span.status_code == STATUS_ERROR
        left = x(span.start_time_ns)
        width = max(1.5, x(max(span.end_time_ns, span.start_time_ns)) - left)
        name = span.name if len(span.name) <= NAME_CHARS else span.name[: NAME_CHARS - 1] + "…"
        took = milliseconds(span.duration_ns)
        tip = (
            f"{span.name}: {took}, starts {milliseconds(span.start_time_ns - start)} in"
            f"{', failed' if failed else ''}"
        )
        parts.append(
            f'<a class="span-row" href="#span-{escape(span.span_id)}">'
            f'<g class="row{" failed" if failed else ""}" data-span="{escape(span.span_id)}" '
            f'data-offset-ns="{span.start_time_ns - start}" data-duration-ns="{span.duration_ns}">'
            f"<title>{escape(tip)}</title>"
            f'<rect class="hit" x="0" y="{top}" width="{WIDTH}" height="{ROW}"/>'
            f'<text class="name" x="{4 + INDENT * min(depth, MAX_INDENT)}" y="{top + 14}">'
            f"{escape(name)}</text>"
            f'<rect class="bar" x="{left:.1f}" y="{top + (ROW - BAR) / 2}" width="{width:.1f}" '
            f'height="{BAR}" rx="2"/>'
            f'<text class="took" x="{left + width + 4:.1f}" y="{top + 14}">{escape(took)}</text>'
            "</g></a>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))
