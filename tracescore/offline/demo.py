"""``tracescore demo``: realistic agent traces sent to a collector, for a first look at tracescore.

Three agents in three services answer questions through tool calls, in the current OpenTelemetry
GenAI conventions (``invoke_agent`` → ``chat`` → ``execute_tool`` → ``chat``, messages as JSON
parts with reasoning, tool calls and the final text), as the OTel SDK exports them. Answers vary in
quality: most are good, some partial, a few unhelpful, so score distributions have a shape. After
``drop_after`` seconds one agent (weather-bot) starts answering badly, which is what a
regression alert is for. With ``chat_share``, that share of the traces are turns of a fourth,
multi-turn agent (:mod:`.demo_chat`) whose memory fails after the same drop: a regression only
its conversations show. Span timings are synthetic (set explicitly), so traces are sent at the
requested rate without sleeping through model latencies.

One job, the demo's traffic, in one module past 400 lines: the three agents' scripts, their
answers of graded quality and the drop are read together when the demo's story is changed.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer, set_span_in_context

from tracescore.offline.demo_chat import CHAT_AGENT, CHAT_INSTRUCTIONS, CHAT_SERVICE, ChatScript

DEGRADING_AGENT = "weather-bot"
CHAT_SHARE = 0.25
"""The share of ``tracescore demo``'s traces that are turns of the multi-turn agent."""
CHAT_MODEL, CHAT_PROVIDER = "gpt-4o-mini", "openai"
FORGETTING = (0.05, 0.8)
"""How often the multi-turn agent's memory fails on a turn, before and after the drop."""


@dataclass(frozen=True)
class ToolFailure:
    """A tool call that failed: its span ends in error with this message."""

    kind: str
    message: str


@dataclass(frozen=True)
class Turn:
    """One question, the tool calls answering it, and answers of three qualities."""

    question: str
    tools: list[tuple[str, dict[str, Any], Any]]
    """``(tool name, arguments, result)`` in call order; a :class:`ToolFailure` result failed."""
    reasoning: str
    good: str
    partial: str
    bad: str


@dataclass(frozen=True)
class Agent:
    name: str
    service: str
    model: str
    provider: str
    instructions: str
    turns: Callable[[random.Random], Turn]


def _weather(rng: random.Random) -> Turn:
    city = rng.choice(["Paris", "Tokyo", "Lisbon", "Toronto", "Nairobi", "Oslo", "Sydney"])
    temp = round(rng.uniform(-5, 34), 1)
    conditions = rng.choice(["sunny", "light rain", "overcast", "snow showers", "clear skies"])
    wind = rng.randint(3, 40)
    result = {"city": city, "temperature_c": temp, "conditions": conditions, "wind_kmh": wind}
    return Turn(
        question=f"What's the weather in {city} right now, and do I need a jacket?",
        tools=[("get_weather", {"city": city}, result)],
        reasoning=f"The user wants the weather in {city}: call get_weather, then advise on a jacket.",
        good=(
            f"Right now in {city} it's {temp}°C with {conditions} and wind at {wind} km/h. "
            + (
                "Yes, you need a jacket."
                if temp < 17
                else "No jacket needed, a light layer is enough."
            )
        ),
        partial=f"It's {conditions} in {city} at the moment.",
        bad="I'm not able to help with that. Is there anything else?",
    )


SUPPORT_TOPICS = (
    # (what the user wants to do, the help center snippet, a good answer)
    (
        "reset my password",
        "Passwords: Settings > Security > Reset password sends a reset link valid for 30 minutes.",
        "To reset your password, open Settings > Security and click Reset password; the reset link "
        "in your email is valid for 30 minutes.",
    ),
    (
        "get a refund for a double charge",
        "Billing: duplicate charges are refunded automatically within 5 business days after a ticket.",
        "Sorry about the double charge! I've opened a billing ticket: the duplicate charge will be "
        "refunded within 5 business days.",
    ),
    (
        "rotate a leaked API key",
        "API keys: Settings > API keys > Rotate; the old key keeps working for 24 hours.",
        "To rotate a leaked API key, go to Settings > API keys and click Rotate; the old key stops "
        "working after 24 hours.",
    ),
    (
        "export my invoices",
        "Invoices: Billing > History > Export CSV downloads every invoice of the account.",
        "You can export your invoices from Billing > History with Export CSV, which downloads all "
        "invoices of your account.",
    ),
)


def _support(rng: random.Random) -> Turn:
    topic, doc, answer = rng.choice(SUPPORT_TOPICS)
    return Turn(
        question=f"Hi, how do I {topic}?",
        tools=[("search_docs", {"query": topic}, [{"title": topic.capitalize(), "snippet": doc}])],
        reasoning=f"Look up the help center article on how to {topic}, then answer in two sentences.",
        good=answer,
        partial="Please check the settings page of your account, it should be there.",
        bad="Thanks for contacting us! Have a wonderful day.",
    )


def _research(rng: random.Random) -> Turn:
    subject = rng.choice(
        [
            "retrieval augmented generation",
            "mixture of experts models",
            "speculative decoding",
            "chain of thought prompting",
        ]
    )
    papers = [
        {
            "title": f"A study of {subject}",
            "year": rng.randint(2019, 2025),
            "citations": rng.randint(10, 900),
        },
        {
            "title": f"Scaling {subject} in practice",
            "year": rng.randint(2020, 2025),
            "citations": rng.randint(5, 300),
        },
    ]
    abstract = f"We show that {subject} improves accuracy on knowledge-intensive benchmarks by 4 to 9 points."
    return Turn(
        question=f"Summarize the recent evidence on {subject} with two papers.",
        tools=[
            ("search_papers", {"query": subject, "limit": 2}, papers),
            ("fetch_abstract", {"title": papers[0]["title"]}, {"abstract": abstract}),
        ],
        reasoning=f"Search papers on {subject}, read the most cited abstract, summarize with sources.",
        good=(
            f"Recent evidence on {subject} is positive: '{papers[0]['title']}' "
            f"({papers[0]['year']}) "
            f"reports gains of 4 to 9 points on knowledge-intensive benchmarks, and "
            f"'{papers[1]['title']}' ({papers[1]['year']}) shows how it scales in practice."
        ),
        partial=f"There are a couple of papers on {subject}; results look promising.",
        bad="Research is an ongoing process and many things are possible.",
    )


AGENTS = (
    Agent(
        "support-bot",
        "helpdesk-api",
        "gpt-4o-mini",
        "openai",
        "You are the support assistant of Acme Cloud. Answer briefly and cite the help center.",
        _support,
    ),
    Agent(
        DEGRADING_AGENT,
        "weather-app",
        "claude-3-5-haiku-20241022",
        "anthropic",
        "You are WeatherBot. Always call get_weather before answering.",
        _weather,
    ),
    Agent(
        "research-agent",
        "research-svc",
        "gpt-4o",
        "openai",
        "You are a research assistant. Cite the papers you rely on.",
        _research,
    ),
)


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


class DemoSender:
    """Builds and exports demo traces; one tracer provider per service, as real apps have."""

    def __init__(
        self,
        endpoint: str,
        seed: int | None = None,
        drop_after: float = 30.0,
        exporter: SpanExporter | None = None,
        chat_share: float = 0.0,
    ) -> None:
        """Export to ``endpoint`` over OTLP/HTTP, or to ``exporter`` when given (benchmarks);
        ``chat_share`` of the traces are turns of the multi-turn agent."""
        self.rng = random.Random(seed)
        self.chat_share = chat_share
        self.chat = ChatScript(random.Random(None if seed is None else f"{seed}-chat"))
        self.drop_after = drop_after
        self.started = time.monotonic()
        self.sent = 0
        self.exporter = exporter
        self.endpoint = endpoint
        self.providers: dict[str, TracerProvider] = {}
        self.tracers: dict[str, Tracer] = {}
        for service in [agent.service for agent in AGENTS] + [CHAT_SERVICE]:
            self.tracer(service)

    def tracer(self, service: str) -> Tracer:
        """The tracer of ``service``'s own provider (made on first use)."""
        if service in self.tracers:
            return self.tracers[service]
        provider = TracerProvider(
            resource=Resource.create(
                {
                    "service.name": service,
                    "service.version": "1.4.2",
                    "deployment.environment": "demo",
                }
            )
        )
        if self.exporter is not None:
            provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        else:
            otlp = OTLPSpanExporter(endpoint=f"{self.endpoint.rstrip('/')}/v1/traces", timeout=10)
            provider.add_span_processor(BatchSpanProcessor(otlp, schedule_delay_millis=500))
        self.providers[service] = provider
        self.tracers[service] = tracer = provider.get_tracer("tracescore.demo", "0.1.0")
        return tracer

    @property
    def dropped(self) -> bool:
        return time.monotonic() - self.started >= self.drop_after

    def quality(self, agent: Agent) -> str:
        degraded = agent.name == DEGRADING_AGENT and self.dropped
        weights = (0.05, 0.15, 0.8) if degraded else (0.85, 0.12, 0.03)
        return self.rng.choices(("good", "partial", "bad"), weights)[0]

    def send_one(self) -> str:
        """Build one agent trace and hand it to the exporter; returns the agent's name."""
        if self.chat_share and self.chat.rng.random() < self.chat_share:
            return self._send_chat_turn()
        agent = self.rng.choice(AGENTS)
        turn = agent.turns(self.rng)
        self.send_turn(agent, turn, getattr(turn, self.quality(agent)))
        return agent.name

    def send_turn(self, agent: Agent, turn: Turn, answer: str, finish_reason: str = "stop") -> str:
        """Send one trace of ``agent`` answering ``turn`` with ``answer``; a tool whose result is
        a :class:`ToolFailure` ends in error. Returns the trace's id (hex)."""
        tracer = self.tracer(agent.service)
        model_attrs = {
            "gen_ai.provider.name": agent.provider,
            "gen_ai.request.model": agent.model,
            "gen_ai.response.model": agent.model,
        }
        system = json.dumps([{"type": "text", "content": agent.instructions}])
        user = _text("user", turn.question)
        clock = time.time_ns()
        root = tracer.start_span(
            f"invoke_agent {agent.name}",
            kind=SpanKind.INTERNAL,
            start_time=clock,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent.name,
                "gen_ai.agent.id": f"{agent.name}-v1",
                "gen_ai.system_instructions": system,
                "gen_ai.input.messages": json.dumps([user]),
                "gen_ai.conversation.id": f"conv-{self.rng.randrange(16**8):08x}",
                **model_attrs,
            },
        )
        context = set_span_in_context(root)
        history: list[dict[str, Any]] = [user]
        calls: list[dict[str, Any]] = [
            {
                "type": "tool_call",
                "id": f"call_{self.rng.randrange(16**10):010x}",
                "name": name,
                "arguments": args,
            }
            for name, args, _ in turn.tools
        ]
        if calls:  # a turn without tools is answered by one chat
            first = {
                "role": "assistant",
                "parts": [{"type": "reasoning", "content": turn.reasoning}, *calls],
                "finish_reason": "tool_call",
            }
            clock = self._chat(
                tracer, context, agent.model, agent.provider, system, list(history), first, clock
            )
            history.append(first)
        for call, (_, _, result) in zip(calls, turn.tools, strict=True):
            duration = self.rng.randint(40, 400) * 1_000_000
            span = tracer.start_span(
                f"execute_tool {call['name']}",
                context=context,
                kind=SpanKind.INTERNAL,
                start_time=clock,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": call["name"],
                    "gen_ai.tool.type": "function",
                    "gen_ai.tool.call.id": call["id"],
                    "gen_ai.tool.call.arguments": json.dumps(call["arguments"]),
                    "gen_ai.tool.call.result": json.dumps(
                        result.message if isinstance(result, ToolFailure) else result
                    ),
                },
            )
            if isinstance(result, ToolFailure):
                span.set_attribute("error.type", result.kind)
                span.set_status(Status(StatusCode.ERROR, result.message))
            clock += duration
            span.end(end_time=clock)
            history.append(
                {
                    "role": "tool",
                    "parts": [
                        {
                            "type": "tool_call_response",
                            "id": call["id"],
                            "response": result.message
                            if isinstance(result, ToolFailure)
                            else result,
                        }
                    ],
                }
            )
        final = {**_text("assistant", answer), "finish_reason": finish_reason}
        clock = self._chat(
            tracer, context, agent.model, agent.provider, system, history, final, clock
        )
        root.set_attribute("gen_ai.output.messages", json.dumps([final]))
        root.end(end_time=clock + 2_000_000)
        self.sent += 1
        return f"{root.get_span_context().trace_id:032x}"

    def _send_chat_turn(self) -> str:
        """One turn of the multi-turn agent: an ``invoke_agent`` span sent the conversation so
        far (``gen_ai.conversation.id`` shared by the conversation's traces) and one ``chat``."""
        forgets = self.chat.rng.random() < FORGETTING[self.dropped]
        conversation, _user, answer = self.chat.next_turn(forgets)
        tracer = self.tracers[CHAT_SERVICE]
        system = json.dumps([{"type": "text", "content": CHAT_INSTRUCTIONS}])
        sent = [_text(role, text) for role, text in conversation.messages[:-1]]
        final = {**_text("assistant", answer), "finish_reason": "stop"}
        clock = time.time_ns()
        root = tracer.start_span(
            f"invoke_agent {CHAT_AGENT}",
            kind=SpanKind.INTERNAL,
            start_time=clock,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": CHAT_AGENT,
                "gen_ai.system_instructions": system,
                "gen_ai.input.messages": json.dumps(sent),
                "gen_ai.conversation.id": conversation.id,
                "gen_ai.provider.name": CHAT_PROVIDER,
                "gen_ai.request.model": CHAT_MODEL,
                "gen_ai.response.model": CHAT_MODEL,
            },
        )
        context = set_span_in_context(root)
        clock = self._chat(
            tracer, context, CHAT_MODEL, CHAT_PROVIDER, system, sent, final, clock, self.chat.rng
        )
        root.set_attribute("gen_ai.output.messages", json.dumps([final]))
        root.end(end_time=clock + 2_000_000)
        self.sent += 1
        return CHAT_AGENT

    def _chat(
        self,
        tracer: Tracer,
        context: Any,
        model: str,
        provider: str,
        system: str,
        inputs: list[dict[str, Any]],
        output: dict[str, Any],
        clock: int,
        rng: random.Random | None = None,
    ) -> int:
        """One ``chat`` span starting at ``clock``, its duration drawn from ``rng`` (default the
        single-turn agents'); returns when it ended."""
        tokens_in = sum(len(json.dumps(m)) for m in inputs) // 4 + 40
        tokens_out = len(json.dumps(output)) // 4
        span = tracer.start_span(
            f"chat {model}",
            context=context,
            kind=SpanKind.CLIENT,
            start_time=clock,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": provider,
                "gen_ai.request.model": model,
                "gen_ai.response.model": model,
                "gen_ai.system_instructions": system,
                "gen_ai.input.messages": json.dumps(inputs),
                "gen_ai.output.messages": json.dumps([output]),
                "gen_ai.response.finish_reasons": [output["finish_reason"]],
                "gen_ai.usage.input_tokens": tokens_in,
                "gen_ai.usage.output_tokens": tokens_out,
            },
        )
        end = clock + (rng or self.rng).randint(300, 1800) * 1_000_000
        span.end(end_time=end)
        return end

    def shutdown(self) -> None:
        for provider in self.providers.values():
            provider.shutdown()


def parse_rate(text: str) -> float:
    """Traces per second from ``2``, ``2/s``, ``90/min`` or ``600/h``."""
    number, _, unit = text.strip().partition("/")
    seconds = {"": 1.0, "s": 1.0, "min": 60.0, "m": 60.0, "h": 3600.0}.get(unit.strip())
    try:
        rate = float(number) / seconds if seconds else 0.0
    except ValueError:
        rate = 0.0
    if rate <= 0:
        raise ValueError(f"--rate {text!r}: expected a positive rate such as 2, 2/s or 90/min")
    return rate


class DemoRun(NamedTuple):
    """What :func:`run_demo` did: traces sent, and whether Ctrl-C ended it (then ``demo
    --serve`` stops its collector too, rather than wait for a second one)."""

    sent: int
    interrupted: bool


def run_demo(
    endpoint: str,
    rate: float,
    duration: float,
    *,
    drop_after: float = 30.0,
    seed: int | None = None,
    report: Callable[[int], None] | None = None,
) -> DemoRun:
    """Send ``rate`` traces per second for ``duration`` seconds (0: until interrupted).

    Returns how many traces were sent and whether Ctrl-C (SIGINT) ended it; every exporter is
    flushed before returning.
    """
    sender = DemoSender(endpoint, seed=seed, drop_after=drop_after, chat_share=CHAT_SHARE)
    interval = 1.0 / rate
    deadline = time.monotonic() + duration if duration > 0 else float("inf")
    next_at = time.monotonic()
    interrupted = False
    try:
        while time.monotonic() < deadline:
            sender.send_one()
            if report is not None:
                report(sender.sent)
            next_at += interval
            time.sleep(max(0.0, next_at - time.monotonic()))
    except KeyboardInterrupt:
        interrupted = True
    finally:
        sender.shutdown()
    return DemoRun(sender.sent, interrupted)
