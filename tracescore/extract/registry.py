"""The convention modules, in the order they are asked to claim a span.

Most specific first: framework conventions that also write GenAI attributes (Mastra, Pydantic
AI, ai@7) and OpenInference's optional GenAI mirror must be claimed before the generic OTel
GenAI module would read them as plain GenAI spans; so must the GenAI dialects claimed by their
scope (Google GenAI, Logfire, Strands, Semantic Kernel, OpenLIT) and MLflow's and Google ADK's own
attributes. The OpenInference instrumentors that need reading of their own (CrewAI, LlamaIndex,
smolagents, BeeAI, Haystack, DSPy: claimed by instrumentation scope, read with OpenInference's
reader first) come before OpenInference itself. LangSmith's OTel export writes GenAI-looking
attributes holding LangChain's values, so its module (claimed by scope) comes before
OpenLLMetry's and GenAI's; so does LiteLLM's callback, which writes OpenLLMetry's attributes.
A module's ``detect`` must be cheap: it runs for every span of every
trace. The generic fallback comes last: it only reads what no convention claimed. Conventions
declared in configuration come before all of these
(:func:`tracescore.extract.declared.claim_order`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from tracescore.extract import (
    beeai,
    crewai,
    dspy,
    fallback,
    genai,
    google_adk,
    google_genai,
    haystack,
    langfuse,
    langsmith,
    litellm,
    llamaindex,
    logfire,
    logfire_agents,
    mastra,
    mlflow,
    openinference,
    openlit,
    openllmetry,
    pydantic_ai,
    semantic_kernel,
    smolagents,
    strands,
    vercel,
)
from tracescore.extract.base import Convention
from tracescore.spans import Span

CONVENTIONS: list[Convention] = [
    vercel,
    mastra,
    pydantic_ai,
    langfuse,
    crewai,
    llamaindex,
    smolagents,
    beeai,
    haystack,
    dspy,
    openinference,
    langsmith,
    litellm,
    openllmetry,
    mlflow,
    google_adk,
    google_genai,
    logfire,
    logfire_agents,
    strands,
    semantic_kernel,
    openlit,
    genai,
    fallback,
]


def convention_for(
    span: Span, conventions: Sequence[Convention] = CONVENTIONS
) -> Convention | None:
    """The first convention claiming the span, or None (the span stays in the tree as 'other')."""
    return first_claimant(span, claimants(tuple(conventions), span.scope.name))


def first_claimant(span: Span, claimants: Sequence[Convention]) -> Convention | None:
    """The first of ``claimants`` (from :func:`claimants`) that detects the span."""
    for convention in claimants:
        if convention.detect(span):
            return convention
    return None


@functools.lru_cache(maxsize=1024)
def claimants(conventions: tuple[Convention, ...], scope: str) -> tuple[Convention, ...]:
    """The conventions, in order, that may claim a span of instrumentation scope ``scope``:
    all but those whose ``in_scope`` rules the scope out. Worked out once per scope name (a
    trace's spans share one or two), where asking every module's ``detect`` of every span was
    a tenth of extraction; bounded, since scope names come from clients."""
    return tuple(
        convention
        for convention in conventions
        if (in_scope := getattr(convention, "in_scope", None)) is None or in_scope(scope)
    )
