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
from typing import TYPE_CHECKING, Any

import grpc
from fastapi import HTTPException
from starlette.requests import HTTPConnection

from tracescore import metrics

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


def basic_password(authorization: str) -> str | None:
    """The password of an ``Authorization: Basic <base64(user:password)>`` header value
    (RFC 7617), if it is one with a password."""
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(credentials.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    _, colon, password = decoded.partition(":")
    return password if colon and password else None


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


class ApiKeys:
    """The configured keys; with none configured, everything is allowed. With ``attempts``,
    wrong keys are counted per client address and a client past the limit is refused."""

    challenge = "Bearer"
    """The ``WWW-Authenticate`` value of a refusal: the scheme the client should use."""

    def __init__(self, keys: Sequence[str], attempts: FailedAttempts | None = None) -> None:
        self.keys = [key for key in keys if key]
        self.attempts = attempts

    @property
    def enabled(self) -> bool:
        return bool(self.keys)

    def valid_key(self, key: str) -> bool:
        return matches(key, self.keys)

    def valid_authorization(self, authorization: str) -> bool:
        """Whether an ``Authorization`` header value carries a configured key (or none is needed)."""
        if not self.enabled:
            return True
        token = bearer_token(authorization)
        return token is not None and self.valid_key(token)

    def allows(self, connection: HTTPConnection) -> bool:
        return self.valid_authorization(connection.headers.get("authorization", ""))

    def presents_credentials(self, connection: HTTPConnection) -> bool:
        """Whether the request offers a key at all (only a wrong one counts as a failure: a
        browser's first visit, with nothing, does not)."""
        return bool(connection.headers.get("authorization", "").strip())

    def throttled(self, client: str, surface: str) -> float:
        """Seconds ``client`` is still refused unchecked (0: it is not), counted as such."""
        left = self.attempts.refused_for(client) if self.attempts and self.enabled else 0.0
        if left:
            metrics.auth_throttled.labels(surface).inc()
        return left

    def failed(self, client: str, surface: str) -> None:
        if self.attempts is not None:
            self.attempts.failed(client, surface)

    def refusal(self, connection: HTTPConnection, surface: str = "http") -> HTTPException | None:
        """Why the request is refused (429 for a client past its failures, 401 without a valid
        key), or None when it is allowed. Headers (and cookies) only: no body is read."""
        if not self.enabled:
            return None
        client = client_address(connection)
        if left := self.throttled(client, surface):
            return HTTPException(
                429,
                "too many failed key checks from this address; retry later",
                headers={"Retry-After": str(math.ceil(left))},
            )
        if self.allows(connection):
            return None
        if self.presents_credentials(connection):
            self.failed(client, surface)
        return HTTPException(
            401, "a valid API key is required", headers={"WWW-Authenticate": self.challenge}
        )

    def require(self, request: HTTPConnection) -> None:
        """FastAPI dependency: raises :meth:`refusal` if there is one."""
        refusal = self.refusal(request)
        if refusal is not None:
            raise refusal

    def grpc_interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        return [_BearerInterceptor(self)] if self.enabled else []


class PasswordKeys(ApiKeys):
    """:class:`ApiKeys` that also take a key as the password of HTTP Basic auth.

    The Langfuse SDKs send ``Basic base64(public key:secret key)`` and nothing else, so on their
    OTLP path the secret key must be a tracescore API key; the public key (the user name) names
    a Langfuse project and is not checked. A bearer key works there too.
    """

    challenge = 'Basic realm="tracescore"'

    def valid_authorization(self, authorization: str) -> bool:
        if super().valid_authorization(authorization):
            return True
        password = basic_password(authorization)
        return password is not None and self.valid_key(password)


def _grpc_client(peer: str) -> str:
    """The address of a gRPC peer (``ipv4:127.0.0.1:5000``, ``ipv6:[::1]:5000``)."""
    _, _, address = peer.partition(":")
    return address.rsplit(":", 1)[0].strip("[]")


# grpc ships no type information (pyproject's ignore list), so its base class is Any to mypy.
class _BearerInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Checks the ``authorization`` metadata of every call before the handler sees the request,
    and refuses a client past its failed attempts whatever it sends.

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
        valid = keys.valid_authorization(authorization)
        inner = await continuation(handler_call_details) if valid else None

        async def checked(request: Any, context: grpc.aio.ServicerContext) -> Any:
            client = _grpc_client(context.peer())
            if keys.throttled(client, "grpc"):
                await context.abort(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    "too many failed key checks from this address; retry later",
                )
            if inner is not None:
                return await inner.unary_unary(request, context)
            if authorization.strip():
                keys.failed(client, "grpc")
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "a valid API key is required")

        if inner is None:
            return grpc.unary_unary_rpc_method_handler(checked)
        return grpc.unary_unary_rpc_method_handler(
            checked,
            request_deserializer=inner.request_deserializer,
            response_serializer=inner.response_serializer,
        )
