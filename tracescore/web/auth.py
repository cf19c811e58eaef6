"""The dashboard's API-key check: the shared one (``Authorization: Bearer``) plus a login cookie.

Browsers cannot send a bearer header on a page load, so the login form (a POST: the key never
appears in a URL that access logs or history record) sets a cookie instead. The cookie holds an
HMAC of the key, not the key: it proves knowledge of a configured key, is the same on every
instance sharing the configuration, and stops working when that key is removed.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from starlette.requests import HTTPConnection

from tracescore.auth import ApiKeys, matches

COOKIE_NAME = "tracescore_session"
_COOKIE_CONTEXT = b"tracescore dashboard session v1"


def session_token(key: str) -> str:
    return hmac.new(key.encode(), _COOKIE_CONTEXT, hashlib.sha256).hexdigest()


class DashboardKeys(ApiKeys):
    """:class:`~tracescore.auth.ApiKeys` that also accept the login cookie."""

    def __init__(self, keys: Sequence[str]) -> None:
        super().__init__(keys)
        self._tokens = [session_token(key) for key in self.keys]

    def allows(self, connection: HTTPConnection) -> bool:
        if super().allows(connection):
            return True
        cookie = connection.cookies.get(COOKIE_NAME)
        return cookie is not None and cookie != "" and matches(cookie, self._tokens)
