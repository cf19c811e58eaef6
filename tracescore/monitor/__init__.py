"""Monitoring: the score API, the ``/metrics`` endpoint and alerting on score regressions.

- :mod:`~tracescore.monitor.api`: ``/api/scores``, ``/api/scores/summary``, ``/api/coverage``,
  ``/api/alerts`` and ``/metrics`` as one router;
- :mod:`~tracescore.monitor.rules`: rule verdicts, from the aggregates the API shares
  (:mod:`~tracescore.store.score_aggregates`); :mod:`~tracescore.monitor.stats`: Welch's t-test;
- :mod:`~tracescore.monitor.alerts`: state, notifications and the evaluator;
  its lease (:mod:`~tracescore.store.leases`) keeps one evaluator among instances;
  :mod:`~tracescore.monitor.channels`: webhook, Slack-compatible and log channels;
- :mod:`~tracescore.monitor.tasks`: the service's background task.
"""
