"""API-key access to the dashboard: ``Authorization: Bearer <key>`` or a login cookie.

The key check itself is :class:`tracescore.auth.ApiKeys`, shared with the OTLP receivers,
the REST API and ``/metrics``; the dashboard adds the login cookie. The browser never keeps
the key: the login form (a POST, so the key is never in a URL that access logs or history
record) sets a cookie holding an HMAC of the key, which proves knowledge of a configured key,
is the same on every instance sharing the config, and stops working when the key is removed
from the config.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from starlette.requests import HTTPConnection

from tracescore.auth import ApiKeys as CoreApiKeys
from tracescore.auth import matches

COOKIE_NAME = "tracescore_session"
_COOKIE_CONTEXT = b"tracescore dashboard session v1"


def session_token(key: str) -> str:
    return hmac.new(key.encode(), _COOKIE_CONTEXT, hashlib.sha256).hexdigest()


class ApiKeys(CoreApiKeys):
    """The configured keys, accepted as a bearer token or as the login cookie's HMAC."""

    def __init__(self, keys: Sequence[str]) -> None:
        super().__init__(keys)
        self._tokens = [session_token(key) for key in self.keys]

    def allows(self, connection: HTTPConnection) -> bool:
        if super().allows(connection):
            return True
        cookie = connection.cookies.get(COOKIE_NAME)
        return bool(cookie) and matches(cookie, self._tokens)
