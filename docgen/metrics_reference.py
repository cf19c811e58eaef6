"""The Prometheus metrics reference, read from the metric objects of ``tracescore.metrics``.

Every series tracescore exports is defined there, so listing that module's metric objects
(name, type, help text, labels, buckets) covers each one a scrape can show.
"""

from __future__ import annotations

from prometheus_client.metrics import Histogram, MetricWrapperBase

from docgen.markdown import code, table
from tracescore import metrics


def defined_metrics() -> list[MetricWrapperBase]:
    """The module's metric objects, in the order they are defined."""
    return [value for value in vars(metrics).values() if isinstance(value, MetricWrapperBase)]


def exposed_name(metric: MetricWrapperBase) -> str:
    """The series name a scrape shows: counters carry ``_total``."""
    (family,) = metric.describe()
    return family.name + ("_total" if family.type == "counter" else "")


def render() -> str:
    """One table row per metric."""
    rows = []
    for metric in defined_metrics():
        (family,) = metric.describe()
        kind = family.type
        if isinstance(metric, Histogram):
            bounds = [bound for bound in metric._upper_bounds if bound != float("inf")]
            kind += f" (buckets {', '.join(f'{bound:g}' for bound in bounds)})"
        labels = ", ".join(code(label) for label in metric._labelnames) or "—"
        rows.append((code(exposed_name(metric)), kind, labels, family.documentation))
    return table(("metric", "type", "labels", "what it counts"), rows) + "\n"
