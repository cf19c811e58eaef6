"""Typed configuration of a tracescore instance, loaded from YAML and validated at start.

Every stage reads its own section; nothing reads raw YAML. Validation errors name the bad key
(dotted path) and, when loaded from a file, its line, and never echo values (they may be
secrets). Here: the composition, the two sections no stage owns (``store``, ``server``), and
:func:`parse_config`. Every other section lives beside the code it configures, with the checks
of its references to other sections (:meth:`Config.problems` only collects them); the error
reporting is :mod:`tracescore.config_report`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, IPvAnyNetwork, ValidationError, model_validator

from tracescore.assemble.config import AssemblyConfig
from tracescore.config_report import (
    format_problems,
    line_index,
    line_of,
    validation_problems,
    yaml_problem,
)
from tracescore.conversations.config import ConversationsConfig
from tracescore.emit.config import ExportConfig
from tracescore.extract.declared_config import ConventionConfig, convention_problems
from tracescore.feedback.config import FeedbackConfig
from tracescore.insights.config import InsightsConfig
from tracescore.judge.config import JudgeConfig
from tracescore.monitor.config import AlertsConfig, MonitorConfig
from tracescore.pipeline.bindings import has_pass_threshold
from tracescore.pipeline.cascade_config import cascade_problems
from tracescore.pipeline.config import (
    ScorerBinding,
    ScoringConfig,
    WorkersConfig,
    binding_problems,
    boost_problems,
    written_scorer_problems,
)
from tracescore.retention.config import RetentionConfig
from tracescore.settings import Problem, Section

DEFAULT_DB_URL = "sqlite:///tracescore.db"


class StoreConfig(Section):
    """The database, and whether starting the service may change its schema.

    ``store: sqlite:///file.db`` (a bare URL) is short for ``store: {url: sqlite:///file.db}``.
    """

    url: str = DEFAULT_DB_URL
    """``sqlite:///file.db`` or ``postgresql://user@host/db`` (``--db`` overrides it)."""
    migrate: bool = True
    """Upgrade the schema at start (under a lock, so replicas starting together upgrade once).
    False: refuse to start on an outdated schema; an operator runs ``tracescore db upgrade``."""

    @model_validator(mode="before")
    @classmethod
    def _bare_url(cls, data: object) -> object:
        return {"url": data} if isinstance(data, str) else data


_KEY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def split_key(key: str) -> tuple[str, str] | None:
    """The public id and the secret of a key written ``id:secret``; None for a key without
    an id (any other string, as keys were before ids)."""
    key_id, colon, secret = key.partition(":")
    return (key_id, secret) if colon and secret and _KEY_ID.fullmatch(key_id) else None


class ServerConfig(Section):
    """Where the collector listens and how much it accepts before pushing back."""

    host: str = "127.0.0.1"
    """Interface both ports listen on. Loopback by default, so a fresh ``tracescore serve``
    (open, with no ``api_keys``) is not reachable from the network; ``0.0.0.0`` (or ``::``)
    listens on every interface: set ``api_keys`` first. The container image sets ``0.0.0.0``,
    as a container's published ports decide what is reachable."""
    http_port: int = Field(4318, ge=0, le=65535)
    grpc_port: int = Field(4317, ge=0, le=65535)
    processes: int = Field(1, ge=1, le=64)
    """Service processes sharing the two ports (SO_REUSEPORT). One process decodes on one core
    (the GIL); more use more cores. Each runs ingest, scoring workers and the alert task; leases
    in the database keep their work apart. ``/metrics`` shows the answering process's counters."""
    read_processes: int = Field(1, ge=0, le=16)
    """Processes that build the trace pages and ``/api/v1/traces/{id}`` (and ``…/runs``)
    documents of traces of 1,000 spans or more (smaller ones are read in a thread), spawned at
    the first such read: a huge trace is read, rebuilt and rendered there, never in the process
    that acknowledges ingest (whose event loop it would stall). With 1 or more, one more
    process renders the overview (started after its 20th render). 0: in a thread of the service
    (acknowledgements then wait while a huge trace or the overview is rendered)."""
    unpackers: int = Field(1, ge=1, le=16)
    """Unpacker processes per service process: they decode its acknowledged requests into
    rows, each taking every n-th request. One stores ~20,000 spans/s on one core of the
    development machine (~10,000 on a slow day); a second one lets a single service store more,
    at ~70 MB each instead of ~200 MB for a whole second service process."""
    shutdown_timeout: float = Field(10.0, gt=0)
    """Seconds a stopping service gives its unpackers to store the requests it acknowledged
    (and its scoring workers to hand back their claims). Whatever is not stored by then (the
    database is down, say) stays in the ingest journal, durable, and is stored after the next
    start; no helper process outlives the service, which itself ends at most 5 s later,
    whatever the database does."""
    max_body_bytes: int = Field(16 * 1024 * 1024, gt=0)
    """Largest accepted request body, after gzip decompression (413 beyond)."""
    max_pending_requests: int = Field(64, gt=0)
    """Export requests decoded or being written at once; beyond it ingest answers 503. A request
    takes its slot only once its whole body has arrived, so slow uploads never hold one."""
    body_timeout: float = Field(60.0, gt=0)
    """Seconds an OTLP/HTTP request body may take to arrive in full, from the end of its headers;
    beyond it the request is answered 408 and its connection closed. (A 16 MiB body must then
    come at ≥ 280 KB/s: exporters send from the same network, not over a modem.)"""
    min_body_rate: int = Field(16 * 1024, ge=0)
    """Bytes per second an OTLP/HTTP request body must average, counted from the end of its
    headers and enforced from the 5th second on (so a lost first packet is no failure); a body
    that falls behind is answered 408 at once instead of at ``body_timeout``. 0: no rate rule."""
    max_body_readers: int | None = Field(None, gt=0)
    """OTLP/HTTP requests whose body is being received (or, once received, processed) at once;
    beyond it ingest answers 503. Default: 4 × ``max_pending_requests``, so stalled uploads,
    which the two rules above cut, cannot take the room valid ones need meanwhile."""
    max_api_body_bytes: int = Field(1024 * 1024, gt=0)
    """Largest body of any other request (the REST API's, the login and review forms): 413
    beyond, answered from the headers or as soon as the running count passes it. Such a body
    is read only once its request's key (or login session) is checked, login excepted, and
    must arrive within ``body_timeout``."""
    keep_alive_timeout: int = Field(5, ge=1)
    """Seconds an HTTP/1.1 connection may stay idle between requests before it is closed."""
    header_timeout: float = Field(10.0, gt=0)
    """Seconds a request's headers may take to arrive in full, counted from the connection's
    opening or the previous response's end; beyond it the connection is closed. An OTLP/gRPC
    connection must finish its HTTP/2 handshake within it too."""
    grpc_idle_timeout: float = Field(300.0, gt=0)
    """Seconds an OTLP/gRPC connection may go without a call before the server ends it
    (GOAWAY); exporters open a new one on their next export."""
    max_body_readers_per_client: int | None = Field(None, gt=0)
    """Of ``max_body_readers``, the requests from one client address, or with one
    ``id:secret`` key, at once (503 beyond). Default: half of ``max_body_readers`` (128), so
    one address or key can fill the slots twice over but never take the readers others need.
    Behind a proxy, list it in ``forwarded_allow_ips``: otherwise every client has the proxy's
    address."""
    max_journal_bytes: int = Field(256 * 1024 * 1024, gt=0)
    """Acknowledged request bodies waiting to be unpacked into rows (in the ingest journal);
    beyond it ingest answers 503, which bounds how far storage lags behind."""
    max_attribute_chars: int = Field(1_000_000, gt=0)
    """Longest stored attribute value (string characters, or bytes); longer ones are cut and
    end with a ``…[tracescore: truncated N of M characters]`` marker."""
    forwarded_allow_ips: list[IPvAnyNetwork] = Field(default_factory=list)
    """Addresses (``10.0.0.5``) or networks (``10.0.0.0/8``) of the reverse proxies in front
    of the service. Only a request whose peer is one of them has its client address taken
    from ``X-Forwarded-For`` (the right-most entry that is not itself a listed proxy); from
    any other peer the header is ignored, so a client cannot pick the address its failed keys,
    upload slots and log lines are counted under. Empty (the default): no peer is a proxy.
    ``Forwarded`` (RFC 7239) is never read: have the proxy set ``X-Forwarded-For``."""
    api_keys: list[str] = Field(default_factory=list)
    """Keys accepted as ``Authorization: Bearer <key>`` (plus ``TRACESCORE_API_KEYS``); with
    none, ingest, the API, its docs, ``/metrics`` and the dashboard are open. ``/healthz``
    always is. A key written ``id:secret`` has a public id: its wrong secrets are counted per
    id, not per address, and its uploads take the key's own share of the body readers, so it
    keeps working while others guess from its address (``pk-lf-…:sk-lf-…`` is a Langfuse
    SDK's key pair)."""
    auth_failures: int = Field(20, gt=0)
    """Wrong API keys (bearer, Basic, login form or session cookie) one client address may
    present within ``auth_failure_window``; past it, every request from that address is
    refused unchecked (429) until the window ends, but those with an ``id:secret`` key, whose
    wrong secrets are counted (and refused) per key id instead. Counted per service process."""
    auth_failure_window: float = Field(60.0, gt=0)
    """Seconds of the window ``auth_failures`` are counted in."""
    session_lifetime: float = Field(12 * 3600.0, gt=0)
    """Seconds a dashboard login lasts; a logout ends it sooner, on every replica."""
    docs: bool = True
    """Serve the API's schema and docs pages (``/api/openapi.json``, ``/api/docs``, ``/redoc``),
    behind the API keys like the API, with their scripts served locally; false: 404."""

    @model_validator(mode="after")
    def _key_ids_are_unique(self) -> ServerConfig:
        ids = [parts[0] for key in self.api_keys if (parts := split_key(key))]
        if repeated := sorted({key_id for key_id in ids if ids.count(key_id) > 1}):
            raise ValueError(
                f"server.api_keys: the key id {repeated[0]!r} names more than one key (a key "
                "written id:secret has a public id, which must name one key)"
            )
        return self

    @model_validator(mode="after")
    def _readers_cover_the_slots(self) -> ServerConfig:
        if self.max_body_readers is not None and self.max_body_readers < self.max_pending_requests:
            raise ValueError(
                "server.max_body_readers must be at least server.max_pending_requests: every "
                "admitted request was first a body being read"
            )
        return self

    @property
    def body_readers(self) -> int:
        """``max_body_readers``, or its default of 4 × ``max_pending_requests``."""
        return self.max_body_readers or 4 * self.max_pending_requests

    @property
    def body_readers_per_client(self) -> int:
        """``max_body_readers_per_client``, or its default of half the pool (at most the
        whole pool)."""
        return min(
            self.max_body_readers_per_client or max(1, self.body_readers // 2), self.body_readers
        )


# With no ``scorers:`` section, these run on every agent run: the code scorers that need no
# options and mean something without ground truth (tool-call accuracy needs an expected tool,
# the LLM scorers a judge). consistency and tone state what a good run scores, so their badges
# are green or red (scorers.registry: passes_at); keyword-coverage's trend shows answers that
# stopped addressing the question. completeness, content-similarity and textual-difference
# measure how much of the question the answer repeats: a right answer scores 0.3 on them, so
# they are not bound unless asked for.
DEFAULT_SCORERS = ("consistency", "keyword-coverage", "tone")


class Config(Section):
    store: StoreConfig = Field(default_factory=StoreConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)
    assembly: AssemblyConfig = Field(default_factory=AssemblyConfig)
    judges: dict[str, JudgeConfig] = Field(default_factory=dict)
    scorers: list[ScorerBinding] = Field(
        default_factory=lambda: [ScorerBinding(name=name, scorer=name) for name in DEFAULT_SCORERS]
    )
    export: ExportConfig = Field(default_factory=ExportConfig)
    workers: WorkersConfig = Field(default_factory=WorkersConfig)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    monitor: MonitorConfig = Field(default_factory=MonitorConfig)
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    feedback: FeedbackConfig = Field(default_factory=FeedbackConfig)
    conversations: ConversationsConfig = Field(default_factory=ConversationsConfig)
    insights: InsightsConfig = Field(default_factory=InsightsConfig)
    """Failure modes: the failed runs grouped, named and tracked (see Insights)."""
    conventions: list[ConventionConfig] = Field(default_factory=list)
    """Span conventions taught without code (see Span formats, "Teaching tracescore a new
    library"): asked before the built-in ones, in the order written."""

    def scoring(self) -> ScoringConfig:
        """The sections the scoring pipeline reads, handed to it (and to scoring processes)."""
        return ScoringConfig(
            store=self.store.url,
            assembly=self.assembly,
            judges=self.judges,
            scorers=self.scorers,
            export=self.export,
            workers=self.workers,
            conversations=self.conversations,
            conventions=self.conventions,
            shutdown_timeout=self.server.shutdown_timeout,
        )

    def problems(self) -> list[Problem]:
        """Mistakes across sections pydantic cannot see (unknown judges, rules and bindings named,
        duplicate names), each section checking its own references."""
        judges = set(self.judges)
        return [
            *self.insights.problems(judges),
            *binding_problems(self.scorers, judges),
            *convention_problems(self.conventions),
            *boost_problems(self.scorers, {rule.name for rule in self.alerts.rules}),
            *cascade_problems(self.scorers),
            *self.alerts.problems(
                {binding.name for binding in self.scorers},
                {binding.name for binding in self.scorers if has_pass_threshold(binding)},
            ),
        ]


class ConfigError(ValueError):
    """A config file that does not validate; the message names every bad key."""


def parse_config(text: str, source: str = "<config>") -> Config:
    try:
        data: Any = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {yaml_problem(exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of sections")
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, Config)
    else:
        problems = config.problems()
    problems += written_scorer_problems(data.get("scorers"))
    if problems:
        lines = line_index(text)
        problems.sort(key=lambda problem: line_of(problem[0], lines) or 0)
        raise ConfigError(f"{source}: {format_problems(problems, lines)}")
    return config


def load_config(path: Path | None) -> Config:
    """The config of ``path``, or the embedded defaults when no file is given."""
    if path is None:
        return Config()
    return parse_config(path.read_text(encoding="utf-8"), str(path))
