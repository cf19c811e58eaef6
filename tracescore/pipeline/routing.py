"""Which runs a binding scores: target selection and filters on service, agent, model, attributes.

Filters are compiled once per binding; matching a run is then a few string comparisons, since it
happens for every run of every trace.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tracescore.extract.model import AgentRun
from tracescore.pipeline.config import FilterConfig
from tracescore.settings import Matcher, compile_pattern


def _any_of(patterns: Iterable[str]) -> Matcher | None:
    matchers = [compile_pattern(p) for p in patterns]
    if not matchers:
        return None
    return lambda value: any(m(value) for m in matchers)


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class RunFilter:
    """A compiled :class:`FilterConfig`."""

    def __init__(self, config: FilterConfig) -> None:
        self._service = _any_of(config.service)
        self._agent = _any_of(config.agent)
        self._model = _any_of(config.model)
        self._attributes = {
            key: _any_of(expected if isinstance(expected, list) else [_as_text(expected)])
            for key, expected in config.attributes.items()
        }

    def may_match(self, service: str | None, agent: str | None) -> bool:
        """Whether runs of this service and agent may pass (their model and attributes
        unknown): what a conversation's page knows when it says whether a binding covers it."""
        return all(
            matcher is None or (value is not None and matcher(value))
            for matcher, value in ((self._service, service), (self._agent, agent))
        )

    def matches(self, run: AgentRun) -> bool:
        for matcher, value in (
            (self._service, run.service_name),
            (self._agent, run.agent_name),
            (self._model, run.model),
        ):
            if matcher is not None and (value is None or not matcher(value)):
                return False
        for key, matcher in self._attributes.items():
            value = run.attributes.get(key, run.resource_attributes.get(key))
            if value is None or matcher is None or not matcher(_as_text(value)):
                return False
        return True
