"""What turns message content on, per instrumentation: the advice a source whose spans carry
no content is given (:mod:`tracescore.extract.sources`).

Each value is one the library accepts, read from its source: advice naming a value the library
ignores (``true`` where only ``SPAN_AND_EVENT`` captures) sends a user round in circles.
"""

from __future__ import annotations

GENAI_UTIL_SWITCH = (
    "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT with "
    "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental (instrumentations built on "
    "opentelemetry-util-genai accept NO_CONTENT, SPAN_ONLY, EVENT_ONLY or SPAN_AND_EVENT and "
    "capture nothing for true; releases older than it, e.g. opentelemetry-instrumentation-openai-v2 "
    "up to 2.3b0, take true)"
)
"""The OpenTelemetry contrib GenAI instrumentations' switch, in a form every release accepts."""
_CONTENT_SWITCHES = (
    (
        "autogen",
        "AutoGen's own spans carry names and ids only, whatever is set: instrument its model "
        "client too (e.g. opentelemetry-instrumentation-openai-v2; for it, "
        + GENAI_UTIL_SWITCH
        + ")",
    ),
    (
        "semantic_kernel",
        "set SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true and "
        "export its logs as well as its traces",
    ),
    (
        "com.anthropic.sdk",
        "the Anthropic SDK's own spans are metadata-only by default: set "
        "ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content (or the client option "
        'open_telemetry={"traces": {"content_mode": "content"}}). Where another instrumentation '
        "(OpenLLMetry's AnthropicInstrumentor, …) already traces these calls, the SDK's spans "
        "repeat each request as a trace of its own: turn them off with ANTHROPIC_OPEN_TELEMETRY=false",
    ),
    (
        "mistralai_sdk_tracer",
        "the Mistral SDK's own spans never carry message content, whatever is set: instrument "
        "the client too (OpenInference's openinference-instrumentation-mistralai for mistralai "
        "2.x and later; for 1.x, OpenLLMetry's opentelemetry-instrumentation-mistralai); where "
        "another instrumentation already traces these calls, the SDK's spans repeat each "
        "request as a trace of its own",
    ),
    (
        "opentelemetry.instrumentation.mistralai",
        "OpenLLMetry's Mistral instrumentation records a prompt only when its messages are the "
        "client's typed messages (UserMessage, SystemMessage, …), not plain dicts, and it sends "
        "content unless TRACELOOP_TRACE_CONTENT=false; in no mode does it record a reply's tool "
        "calls or a tool message's call id, so a loop's tool steps cannot be joined to their "
        "calls. OpenInference's openinference-instrumentation-mistralai (mistralai 2.x and "
        "later) records both the messages, typed or dicts, and the tool calls",
    ),
    ("opentelemetry.instrumentation.openai_v2", GENAI_UTIL_SWITCH),
    (
        "opentelemetry.instrumentation.google_genai",
        "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT (it accepts "
        "NO_CONTENT, SPAN_ONLY, EVENT_ONLY or SPAN_AND_EVENT, and captures nothing for any other "
        "value, true included)",
    ),
    (
        "gcp.vertex.agent",
        "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true and export ADK's logs as "
        "well as its traces (the content is on its log records)",
    ),
    (
        "litellm",
        "LiteLLM's otel callback sends content unless litellm.turn_off_message_logging is set; "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true puts it on events only: set it to "
        "SPAN_AND_EVENT, or leave it unset",
    ),
    (
        "opentelemetry.instrumentation.",
        "OpenLLMetry's instrumentations send content unless TRACELOOP_TRACE_CONTENT=false: set "
        "it to true (or unset it); for an OpenTelemetry contrib instrumentation, "
        + GENAI_UTIL_SWITCH,
    ),
    (
        "traceloop",
        "OpenLLMetry sends content unless TRACELOOP_TRACE_CONTENT=false: set it to true (or "
        "unset it)",
    ),
)
"""What turns content on, by scope prefix (the first that fits), each value one the library
accepts (read from its source)."""
_DEFAULT_CONTENT_SWITCH = (
    "turn on the library's content capture; for an OpenTelemetry GenAI instrumentation, "
    + GENAI_UTIL_SWITCH
)


def content_switch(scope: str) -> str:
    """What turns message content on for the library of ``scope``."""
    return next(
        (switch for prefix, switch in _CONTENT_SWITCHES if scope.startswith(prefix)),
        _DEFAULT_CONTENT_SWITCH,
    )
