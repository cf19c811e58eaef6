"""Conventions are offered only the spans of scopes they may claim: every span of every capture
is claimed by the same convention as when every module's ``detect`` is asked in order."""

from __future__ import annotations

from tests.support.paths import CAPTURES
from tracescore.extract.base import Convention
from tracescore.extract.registry import CONVENTIONS, claimants, convention_for
from tracescore.ingest.files import load_traces
from tracescore.spans import Span


def _asking_every_module(span: Span) -> Convention | None:
    return next((c for c in CONVENTIONS if c.detect(span)), None)


def test_claimants_by_scope_claim_as_every_detect_does() -> None:
    spans = [span for trace in load_traces([CAPTURES]) for span in trace.spans]
    scopes = {span.scope.name for span in spans}
    assert len(scopes) > 10  # the captures cover many instrumentations
    for span in spans:
        assert convention_for(span) is _asking_every_module(span), span.scope.name


def test_a_scope_rules_out_only_modules_that_require_another_scope() -> None:
    offered = claimants(tuple(CONVENTIONS), "")
    ruled_out = {c.NAME for c in CONVENTIONS} - {c.NAME for c in offered}
    assert ruled_out == {
        "openinference-crewai",
        "openinference-llamaindex",
        "openinference-smolagents",
        "openinference-beeai",
        "openinference-haystack",
        "openinference-dspy",
        "langsmith",
        "google-adk",
        "google-genai",
        "litellm",
        "logfire",
        "logfire-openai-agents",
        "strands",
        "semantic-kernel",
        "openlit",
    }
    strands = {c.NAME for c in claimants(tuple(CONVENTIONS), "strands.telemetry.tracer")}
    assert "strands" in strands and "google-adk" not in strands
