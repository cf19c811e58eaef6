"""API-key access to the dashboard: ``Authorization: Bearer <key>`` or a login cookie.

There is no shared auth middleware yet, so the dashboard checks ``server.api_keys`` itself.
Keys are compared in constant time. The browser never keeps the key: the login form (a POST,
so the key is never in a URL that access logs or history record) sets a cookie holding an HMAC
of the key, which proves knowledge of a configured key, is the same on every instance sharing
the config, and stops working when the key is removed from the config.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from starlette.requests import HTTPConnection

COOKIE_NAME = "tracescore_session"
_COOKIE_CONTEXT = b"tracescore dashboard session v1"


def session_token(key: str) -> str:
    return hmac.new(key.encode(), _COOKIE_CONTEXT, hashlib.sha256).hexdigest()


def _matches(candidate: str, secrets: Sequence[str]) -> bool:
    """Constant-time against every secret (no early exit that would tell which one was close)."""
    found = False
    for secret in secrets:
        found |= hmac.compare_digest(candidate.encode(), secret.encode())
    return found


class ApiKeys:
    """The configured keys; with none configured, everything is allowed."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = [key for key in keys if key]
        self._tokens = [session_token(key) for key in self.keys]

    @property
    def enabled(self) -> bool:
        return bool(self.keys)

    def valid_key(self, key: str) -> bool:
        return _matches(key, self.keys)

    def allows(self, connection: HTTPConnection) -> bool:
        if not self.enabled:
            return True
        scheme, _, credentials = connection.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and credentials and self.valid_key(credentials.strip()):
            return True
        cookie = connection.cookies.get(COOKIE_NAME)
        return bool(cookie) and _matches(cookie, self._tokens)
