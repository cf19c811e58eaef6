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
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import grpc
from fastapi import HTTPException
from starlette.requests import HTTPConnection

if TYPE_CHECKING:
    from tracescore.config import Config

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


class ApiKeys:
    """The configured keys; with none configured, everything is allowed."""

    challenge = "Bearer"
    """The ``WWW-Authenticate`` value of a refusal: the scheme the client should use."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = [key for key in keys if key]

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

    def require(self, request: HTTPConnection) -> None:
        """FastAPI dependency: 401 with ``WWW-Authenticate`` (:attr:`challenge`) unless the
        request is allowed. It reads headers only: a refused request's body is never read."""
        if not self.allows(request):
            raise HTTPException(401, "a valid API key is required",
                                headers={"WWW-Authenticate": self.challenge})

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


async def _unauthenticated(_request: bytes, context: grpc.aio.ServicerContext) -> None:
    await context.abort(grpc.StatusCode.UNAUTHENTICATED, "a valid API key is required")


class _BearerInterceptor(grpc.aio.ServerInterceptor):
    """Checks the ``authorization`` metadata of every call before the handler sees the request.

    Every tracescore gRPC method is unary-unary, so one refusing handler serves them all.
    """

    _refuse = grpc.unary_unary_rpc_method_handler(_unauthenticated)

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
        if self._keys.valid_authorization(authorization):
            return await continuation(handler_call_details)
        return self._refuse
