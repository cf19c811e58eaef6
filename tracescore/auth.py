"""Optional API keys, checked the same way by every surface: OTLP/HTTP, OTLP/gRPC, the REST
API, ``/metrics`` and the dashboard (which adds its login cookie on top, in ``web/auth.py``).

Keys come from ``server.api_keys`` and from ``TRACESCORE_API_KEYS`` (comma-separated), so a
deployment can keep them out of the config file. Clients send ``Authorization: Bearer <key>``,
the header OTLP exporters set through ``OTEL_EXPORTER_OTLP_HEADERS``. The Langfuse SDKs' OTLP
path also takes HTTP Basic auth, the SDKs' own scheme (public key : secret key), with a key as
the password (:class:`PasswordKeys`). With no key configured everything is open. ``/healthz``
is never guarded: load balancers probe it without secrets.

Comparison is constant-time against every key (no early exit that would tell which key was
close), and no key, good or bad, is ever put in a log line or an error message.

Guessing is slowed per client address (:class:`FailedAttempts`): past ``server.auth_failures``
wrong keys within ``server.auth_failure_window`` seconds, every request from that address, on
every surface, is refused unchecked (429, or ``RESOURCE_EXHAUSTED`` over gRPC) until the window
ends, so a guess, even a right one, tells nothing. Counted per service process: with
``processes: N`` an address gets N times the attempts, still thousands of times fewer than the
hundreds per second it had.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import math
import os
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc
from fastapi import HTTPException
from starlette.requests import HTTPConnection

from tracescore import metrics
from tracescore.config import split_key
from tracescore.ingest.http_bodies import UPLOADER

if TYPE_CHECKING:
    from tracescore.config import Config

log = logging.getLogger(__name__)

API_KEYS_ENV = "TRACESCORE_API_KEYS"


def with_environment_keys(config: Config, environ: Mapping[str, str] = os.environ) -> Config:
    """``config`` with the keys of ``TRACESCORE_API_KEYS`` added to ``server.api_keys``."""
    extra = [key.strip() for key in environ.get(API_KEYS_ENV, "").split(",") if key.strip()]
    if not extra:
        return config
    keys = list(dict.fromkeys([*config.server.api_keys, *extra]))
    return config.model_copy(update={"server": config.server.model_copy(update={"api_keys": keys})})


def matches(candidate: str, secrets: Sequence[str]) -> bool:
    """Whether ``candidate`` is one of ``secrets``, in time independent of which one is close."""
    found = False
    for secret in secrets:
        found |= hmac.compare_digest(candidate.encode(), secret.encode())
    return found


def bearer_token(authorization: str) -> str | None:
    """The credentials of an ``Authorization: Bearer <token>`` header value, if it is one."""
    scheme, _, credentials = authorization.partition(" ")
    credentials = credentials.strip()
    return credentials if scheme.lower() == "bearer" and credentials else None


def basic_credentials(authorization: str) -> tuple[str, str] | None:
    """The user name and password of an ``Authorization: Basic <base64(user:password)>``
    header value (RFC 7617), if it is one with a password."""
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(credentials.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, colon, password = decoded.partition(":")
    return (user, password) if colon and password else None


@dataclass(frozen=True, slots=True)
class Credential:
    """A presented key: the configured key id it names (None: none, or a key without id) and
    whether its secret is right."""

    key_id: str | None
    valid: bool

    def subject(self, client: str) -> str:
        """What its failures are counted against: the key id it names (a guesser elsewhere
        cannot lock out the other keys, nor the keys from its own address), else the address."""
        return f"key {self.key_id}" if self.key_id is not None else client


class FailedAttempts:
    """Failed key checks per client address, in fixed windows of ``window`` seconds: a client
    with ``limit`` failures in its window is refused unchecked for the rest of it.

    Thread-safe (sync FastAPI dependencies run in a thread pool). Its memory is bounded: past
    ``_MAX_CLIENTS`` addresses, those whose window is over are forgotten, then those not
    refused."""

    _MAX_CLIENTS = 100_000

    def __init__(
        self, limit: int, window: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.window = window
        self._clock = clock
        self._clients: dict[str, tuple[float, int]] = {}
        """Address -> (start of its window, failures in it)."""
        self._lock = threading.Lock()

    def refused_for(self, client: str) -> float:
        """Seconds ``client`` stays refused; 0 when it is not."""
        with self._lock:
            start, failures = self._clients.get(client, (0.0, 0))
        left = start + self.window - self._clock()
        return left if failures >= self.limit and left > 0 else 0.0

    def failed(self, client: str, surface: str) -> None:
        """Count a wrong key from ``client``; the failure that reaches the limit is logged (one
        line per client per window, however many attempts follow)."""
        metrics.auth_failures.labels(surface).inc()
        now = self._clock()
        with self._lock:
            start, failures = self._clients.get(client, (now, 0))
            if now - start >= self.window:
                start, failures = now, 0
            self._clients[client] = (start, failures + 1)
            if len(self._clients) > self._MAX_CLIENTS:
                self._forget(now)
        if failures + 1 == self.limit:
            log.warning(
                "%s: %d failed key checks within %g s (last on %s); its requests are refused "
                "unchecked for the rest of that window",
                client,
                self.limit,
                self.window,
                surface,
            )

    def _forget(self, now: float) -> None:
        live = {
            client: entry for client, entry in self._clients.items() if now - entry[0] < self.window
        }
        if len(live) > self._MAX_CLIENTS:
            live = {client: entry for client, entry in live.items() if entry[1] >= self.limit}
        self._clients = live


def client_address(connection: HTTPConnection) -> str:
    return connection.client.host if connection.client else ""


def note_uploader(connection: HTTPConnection, credential: Credential | None) -> None:
    """Let the body readers count a request with a key id against that key's share, not its
    address's: exporters behind one address (a NAT, a host) keep their own slots."""
    if credential is not None and credential.key_id is not None:
        connection.scope.setdefault("state", {})[UPLOADER] = credential.subject("")


class ApiKeys:
    """The configured keys; with none configured, everything is allowed. With ``attempts``,
    wrong keys are counted, per key id for a key that names a configured id, per client
    address otherwise, and a key id or address past the limit is refused."""

    challenge = "Bearer"
    """The ``WWW-Authenticate`` value of a refusal: the scheme the client should use."""

    def __init__(self, keys: Sequence[str], attempts: FailedAttempts | None = None) -> None:
        self.keys = [key for key in keys if key]
        self.attempts = attempts
        self._secrets = dict(parts for key in self.keys if (parts := split_key(key)))
        """Key id -> its secret."""
        self._plain = [key for key in self.keys if split_key(key) is None]

    @property
    def enabled(self) -> bool:
        return bool(self.keys)

    def credential(self, key: str) -> Credential:
        """What ``key`` claims and whether it is right: against its id's secret alone when it
        names a configured id, else against every key without an id."""
        parts = split_key(key)
        if parts is not None and parts[0] in self._secrets:
            key_id, secret = parts
            return Credential(key_id, matches(secret, [self._secrets[key_id]]))
        return Credential(None, matches(key, self._plain))

    def presented(self, authorization: str) -> Credential | None:
        """The credential of an ``Authorization`` header value; None without one."""
        token = bearer_token(authorization)
        return self.credential(token) if token is not None else None

    def valid_authorization(self, authorization: str) -> bool:
        """Whether an ``Authorization`` header value carries a configured key (or none is needed)."""
        credential = self.presented(authorization)
        return not self.enabled or (credential is not None and credential.valid)

    def session_allows(self, connection: HTTPConnection) -> bool:
        """Whether the request is allowed without a key (a dashboard session: see
        ``web/auth.py``)."""
        return False

    def presents_credentials(self, connection: HTTPConnection) -> bool:
        """Whether the request offers a key at all (only a wrong one counts as a failure: a
        browser's first visit, with nothing, does not)."""
        return bool(connection.headers.get("authorization", "").strip())

    def throttled(self, subject: str, surface: str) -> float:
        """Seconds ``subject`` (an address or a key id) is still refused unchecked (0: it is
        not), counted as such."""
        left = self.attempts.refused_for(subject) if self.attempts and self.enabled else 0.0
        if left:
            metrics.auth_throttled.labels(surface).inc()
        return left

    def failed(self, subject: str, surface: str) -> None:
        if self.attempts is not None:
            self.attempts.failed(subject, surface)

    def refusal(self, connection: HTTPConnection, surface: str = "http") -> HTTPException | None:
        """Why the request is refused (429 for a key id or address past its failures, 401
        without a valid key), or None when it is allowed. Headers (and cookies) only: no body
        is read. A key naming a configured id is judged by that id's count alone, so a valid
        one keeps working while others guess from its address."""
        if not self.enabled:
            return None
        credential = self.presented(connection.headers.get("authorization", ""))
        client = client_address(connection)
        subject = credential.subject(client) if credential is not None else client
        if left := self.throttled(subject, surface):
            return HTTPException(
                429,
                "too many failed key checks from this address or for this key; retry later",
                headers={"Retry-After": str(math.ceil(left))},
            )
        if (credential is not None and credential.valid) or self.session_allows(connection):
            note_uploader(connection, credential)
            return None
        if self.presents_credentials(connection):
            self.failed(subject, surface)
        return HTTPException(
            401, "a valid API key is required", headers={"WWW-Authenticate": self.challenge}
        )

    def require(self, request: HTTPConnection) -> None:
        """FastAPI dependency: raises :meth:`refusal` if there is one."""
        refusal = self.refusal(request)
        if refusal is not None:
            raise refusal

    def grpc_interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        return [_KeyInterceptor(self)] if self.enabled else []


class PasswordKeys(ApiKeys):
    """:class:`ApiKeys` that also take a key as the password of HTTP Basic auth.

    The Langfuse SDKs send ``Basic base64(public key:secret key)`` and nothing else. A key
    ``pk-lf-…:sk-lf-…`` is then exactly such a pair, its public key the key id; with a key
    without id, the secret key must be that key, and the public key (naming a Langfuse
    project) is not checked. A bearer key works there too.
    """

    challenge = 'Basic realm="tracescore"'

    def presented(self, authorization: str) -> Credential | None:
        if (bearer := super().presented(authorization)) is not None:
            return bearer
        basic = basic_credentials(authorization)
        if basic is None:
            return None
        user, password = basic
        return self.credential(f"{user}:{password}" if user in self._secrets else password)


def _grpc_client(peer: str) -> str:
    """The address of a gRPC peer (``ipv4:127.0.0.1:5000``, ``ipv6:[::1]:5000``)."""
    _, _, address = peer.partition(":")
    return address.rsplit(":", 1)[0].strip("[]")


# grpc ships no type information (pyproject's ignore list), so its base class is Any to mypy.
class _KeyInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Checks the ``authorization`` metadata of every call before the handler sees the request,
    and refuses a key id or client past its failed attempts whatever it sends.

    Every tracescore gRPC method is unary-unary, so one wrapping handler serves them all; it
    runs with the call's context, which alone tells the client's address.
    """

    def __init__(self, keys: ApiKeys) -> None:
        self._keys = keys

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        metadata = dict(handler_call_details.invocation_metadata or ())
        authorization = metadata.get("authorization", "")
        if isinstance(authorization, bytes):
            authorization = authorization.decode("latin-1")
        keys = self._keys
        credential = keys.presented(authorization)
        valid = credential is not None and credential.valid
        inner = await continuation(handler_call_details) if valid else None

        async def checked(request: Any, context: grpc.aio.ServicerContext) -> Any:
            client = _grpc_client(context.peer())
            subject = credential.subject(client) if credential is not None else client
            if keys.throttled(subject, "grpc"):
                await context.abort(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    "too many failed key checks from this address or for this key; retry later",
                )
            if inner is not None:
                return await inner.unary_unary(request, context)
            if authorization.strip():
                keys.failed(subject, "grpc")
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "a valid API key is required")

        if inner is None:
            return grpc.unary_unary_rpc_method_handler(checked)
        return grpc.unary_unary_rpc_method_handler(
            checked,
            request_deserializer=inner.request_deserializer,
            response_serializer=inner.response_serializer,
        )
