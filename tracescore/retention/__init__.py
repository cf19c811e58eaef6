"""Retention: expired spans, logs, scores, sampling decisions, judge verdicts and alert history
removed in small batches, by one replica at a time, so a collector running for months keeps a
bounded database (see ``docs/retention.md``)."""
