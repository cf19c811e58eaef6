"""Typed configuration of a tracescore instance, loaded from YAML and validated at start.

Every stage reads its own section; nothing reads raw YAML. Validation errors name the bad key
(dotted path) and, when loaded from a file, its line, and never echo values (they may be
secrets).

It runs past 400 lines: besides the composition it holds the two sections no stage owns
(``store``, ``server``) and the error reporting that maps a validation error to its dotted key,
its line in the file and a "did you mean"; every other section lives beside the code it
configures.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, Field, IPvAnyNetwork, ValidationError, model_validator

from tracescore.assemble.config import AssemblyConfig
from tracescore.conversations.config import ConversationsConfig
from tracescore.emit.config import ExportConfig
from tracescore.extract.declared_config import ConventionConfig
from tracescore.feedback.config import FeedbackConfig
from tracescore.insights.config import InsightsConfig
from tracescore.judge.config import JudgeConfig, judges_missing
from tracescore.monitor.config import AlertsConfig, MonitorConfig
from tracescore.pipeline.cascade_config import cascade_problems
from tracescore.pipeline.config import ScorerBinding, ScoringConfig, WorkersConfig
from tracescore.retention.config import RetentionConfig
from tracescore.settings import Section

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

    def problems(self) -> list[tuple[tuple[str, ...], str]]:
        """Cross-field mistakes pydantic cannot see: unknown scorers and judges, duplicate names."""
        from tracescore.scorers import registry

        found: list[tuple[tuple[str, ...], str]] = []
        if self.insights.judge is not None and self.insights.judge not in self.judges:
            found.append(
                (("insights", "judge"), f"no judge named {self.insights.judge!r} in judges")
            )
        seen: set[str] = set()
        for index, binding in enumerate(self.scorers):
            where = ("scorers", str(index))
            if binding.name in seen:
                found.append(((*where, "name"), f"duplicate binding name {binding.name!r}"))
            seen.add(binding.name)
            if binding.judge is not None and binding.judge not in self.judges:
                found.append(((*where, "judge"), f"no judge named {binding.judge!r} in judges"))
            asks_judge = binding.judge is not None or (
                binding.scorer in registry.names() and registry.get(binding.scorer).uses_judge
            )
            if asks_judge and (missing := judges_missing(binding.scorer)):
                found.append(((*where, "scorer"), missing))
            if ":" in binding.scorer or binding.scorer not in registry.names():
                continue  # an unknown name is reported by scorer_problems, with the other errors
            if (
                registry.get(binding.scorer).uses_judge
                and (binding.judge or "default") not in self.judges
            ):
                found.append(
                    (
                        (*where, "judge"),
                        f"scorer {binding.scorer!r} needs a judge: name one of "
                        "judges, or define judges.default",
                    )
                )
            if (
                binding.scorer in registry.names()
                and registry.get(binding.scorer).conversation
                and binding.target != "conversation"
            ):
                found.append(
                    (
                        (*where, "target"),
                        f"scorer {binding.scorer!r} judges whole conversations: "
                        "set target: conversation",
                    )
                )
        names: set[str] = set()
        for index, convention in enumerate(self.conventions):
            if convention.name in names:
                found.append(
                    (
                        (("conventions", str(index), "name")),
                        f"duplicate convention name {convention.name!r}",
                    )
                )
            names.add(convention.name)
        rules = {rule.name for rule in self.alerts.rules}
        for index, binding in enumerate(self.scorers):
            boost = binding.sampling.boost
            if boost is None:
                continue
            boost_key = ("scorers", str(index), "sampling", "boost")
            if boost.while_ not in rules:
                found.append(
                    ((*boost_key, "while"), f"no alert rule named {boost.while_!r} in alerts.rules")
                )
            if binding.target == "conversation":
                found.append(
                    (boost_key, "a conversation binding samples whole conversations: no boost")
                )
        found += cascade_problems(self.scorers)
        for index, rule in enumerate(self.alerts.rules):
            if rule.binding is not None and rule.binding not in seen:
                found.append(
                    (
                        ("alerts", "rules", str(index), "binding"),
                        f"no binding named {rule.binding!r} in scorers",
                    )
                )
        return found


class ConfigError(ValueError):
    """A config file that does not validate; the message names every bad key."""


def _line_index(text: str) -> dict[tuple[str, ...], int]:
    """Map each key path of a YAML document to its 1-based line, for error messages."""
    lines: dict[tuple[str, ...], int] = {}

    def walk(node: yaml.Node, path: tuple[str, ...]) -> None:
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                child = (*path, str(key.value))
                lines[child] = key.start_mark.line + 1
                walk(value, child)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                walk(item, (*path, str(index)))

    root = yaml.compose(text)
    if root is not None:
        walk(root, ())
    return lines


def _line(path: tuple[str, ...], lines: dict[tuple[str, ...], int]) -> int | None:
    """The line of the deepest part of ``path`` the document has."""
    return next((lines[path[:n]] for n in range(len(path), -1, -1) if path[:n] in lines), None)


def _where(path: tuple[str, ...], lines: dict[tuple[str, ...], int]) -> str:
    line = _line(path, lines)
    return f" (line {line})" if line else ""


Problem = tuple[tuple[str, ...], str]
"""A mistake in a config document: the key path, and what is wrong there."""


def validation_problems(
    exc: ValidationError, model: type[BaseModel], prefix: tuple[str, ...] = ()
) -> list[Problem]:
    """pydantic's errors as problems at document paths (a tagged union's tag, which pydantic
    puts in the path, dropped), an unknown key with the nearest known ones as suggestions."""
    problems: list[Problem] = []
    for error in exc.errors(include_input=False, include_url=False):
        path, known = _document_path(model, error["loc"])
        message = error["msg"]
        if error["type"] == "extra_forbidden" and (close := _did_you_mean(path[-1], known)):
            message += f"; {close}"
        problems.append(((*prefix, *path), message))
    return problems


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    matches = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    return f"did you mean {' or '.join(repr(m) for m in matches)}?" if matches else ""


def _document_path(
    model: type[BaseModel], loc: tuple[int | str, ...]
) -> tuple[tuple[str, ...], set[str]]:
    """``loc`` as a path of the document, and the keys the mapping holding its last part may
    have (empty when that is no model)."""
    node: Any = model
    path: list[str] = []
    for position, part in enumerate(loc):
        node = _unwrap(node)
        if isinstance(node, list):  # a union: the member the tag names, else the one that fits
            tagged = [m for m in node if _is_model(m) and _has_tag(m, part)]
            if tagged:
                node = tagged[0]
                continue  # the tag is pydantic's, not a key of the document
            node = next((m for m in node if not _is_model(m)), node[0])
            node = _unwrap(node)
        path.append(str(part))
        if position == len(loc) - 1:
            break
        node = _child(node, part)
    keys: set[str] = set()
    if _is_model(node):
        # Suggested in the spelling the key was written in: camelCase aliases for camelCase.
        camel = str(loc[-1]) != str(loc[-1]).lower() if loc else False
        keys = {
            (field.alias or name) if camel else name for name, field in node.model_fields.items()
        }
    return tuple(path), keys


def _unwrap(annotation: Any) -> Any:
    """A model, a list of union members, or another annotation, without Annotated/Optional."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        return _unwrap(members[0]) if len(members) == 1 else [_unwrap(m) for m in members]
    return annotation


def _is_model(node: Any) -> bool:
    return isinstance(node, type) and issubclass(node, BaseModel)


def _has_tag(model: type[BaseModel], value: object) -> bool:
    return any(
        get_origin(field.annotation) is Literal and value in get_args(field.annotation)
        for field in model.model_fields.values()
    )


def _child(node: Any, part: int | str) -> Any:
    if _is_model(node):
        field = node.model_fields.get(str(part))
        return field.annotation if field is not None else None
    origin, args = get_origin(node), get_args(node)
    if origin in (list, tuple, set, frozenset) and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return None


def scorer_problems(scorers: object) -> list[Problem]:
    """Unknown scorer names and bad scorer options of a document's ``scorers:`` as written,
    found whether or not the rest of the file validates, so one pass reports them all."""
    from tracescore.scorers import registry

    found: list[Problem] = []
    for index, binding in enumerate(scorers if isinstance(scorers, list) else []):
        if not isinstance(binding, dict) or not isinstance(binding.get("scorer"), str):
            continue
        name, where = binding["scorer"], ("scorers", str(index))
        if ":" in name:
            continue
        if name not in registry.names():
            close = _did_you_mean(name, registry.names())
            found.append(
                (
                    (*where, "scorer"),
                    f"unknown scorer {name!r}; {close + ' ' if close else ''}"
                    "(`tracescore scorers` lists them; module:attr names a custom scorer)",
                )
            )
            continue
        schema, options = registry.get(name).schema, binding.get("options")
        if schema is None or not isinstance(options, dict):
            continue
        try:
            schema.model_validate(options)
        except ValidationError as exc:
            found += validation_problems(exc, schema, (*where, "options"))
    return found


def format_problems(problems: list[Problem], lines: dict[tuple[str, ...], int]) -> str:
    return "invalid configuration:\n  " + "\n  ".join(
        f"{'.'.join(path) or '(top level)'}{_where(path, lines)}: {message}"
        for path, message in problems
    )


def format_validation_error(exc: ValidationError, lines: dict[tuple[str, ...], int]) -> str:
    return format_problems(validation_problems(exc, Config), lines)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """What PyYAML found wrong and where, without its snippet of the offending line (which
    would print whatever secret sits on it)."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return "cannot be parsed"
    mark = exc.problem_mark
    return f"{exc.problem} (line {mark.line + 1}, column {mark.column + 1})"


def parse_config(text: str, source: str = "<config>") -> Config:
    try:
        data: Any = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {_yaml_problem(exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of sections")
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, Config)
    else:
        problems = config.problems()
    problems += scorer_problems(data.get("scorers"))
    if problems:
        lines = _line_index(text)
        problems.sort(key=lambda problem: _line(problem[0], lines) or 0)
        raise ConfigError(f"{source}: {format_problems(problems, lines)}")
    return config


def load_config(path: Path | None) -> Config:
    """The config of ``path``, or the embedded defaults when no file is given."""
    if path is None:
        return Config()
    return parse_config(path.read_text(encoding="utf-8"), str(path))
