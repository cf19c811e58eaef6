"""The dashboard's API-key check: the shared one (``Authorization: Bearer``) plus a login session.

Browsers cannot send a bearer header on a page load, so the login form (a POST: the key never
appears in a URL that access logs or history record) opens a session instead: a random id in
an HttpOnly, SameSite=Strict cookie, valid for ``server.session_lifetime``, kept in the
database (:mod:`tracescore.store.sessions`) so that it works on every process and replica of
the deployment and a logout ends it on all of them at once. The session remembers which key
opened it (a fingerprint, never the key): removing that key from the configuration ends it.

Why the database rather than a signed token with a revocation list: a revocation list is
shared state all the same (it would need the database too), and a row per session makes
expiry, logout and key removal one lookup by primary key, with nothing to sign or rotate.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from datetime import timedelta

from starlette.requests import HTTPConnection

from tracescore.auth import ApiKeys, FailedAttempts, matches
from tracescore.store.sessions import Sessions

COOKIE_NAME = "tracescore_session"
_FINGERPRINT_CONTEXT = b"tracescore dashboard session key v2"
_LONGEST_COOKIE = 128
"""Longer cookies are refused unread: a session id is 43 characters."""


def key_fingerprint(key: str) -> str:
    return hmac.new(key.encode(), _FINGERPRINT_CONTEXT, hashlib.sha256).hexdigest()


class DashboardKeys(ApiKeys):
    """:class:`~tracescore.auth.ApiKeys` that also accept a live login session's cookie."""

    def __init__(
        self,
        keys: Sequence[str],
        sessions: Sessions,
        lifetime: timedelta,
        attempts: FailedAttempts | None = None,
    ) -> None:
        super().__init__(keys, attempts)
        self.sessions = sessions
        self.lifetime = lifetime
        self._fingerprints = [key_fingerprint(key) for key in self.keys]

    def session_allows(self, connection: HTTPConnection) -> bool:
        cookie = connection.cookies.get(COOKIE_NAME, "")
        if not cookie or len(cookie) > _LONGEST_COOKIE:
            return False
        opened_with = self.sessions.fingerprint(cookie)
        return opened_with is not None and matches(opened_with, self._fingerprints)

    def presents_credentials(self, connection: HTTPConnection) -> bool:
        return super().presents_credentials(connection) or bool(connection.cookies.get(COOKIE_NAME))

    def open_session(self, key: str) -> str:
        """A new session's id for the cookie, for a valid ``key``."""
        return self.sessions.open(key_fingerprint(key), self.lifetime)

    def end_session(self, connection: HTTPConnection) -> None:
        cookie = connection.cookies.get(COOKIE_NAME, "")
        if cookie and len(cookie) <= _LONGEST_COOKIE:
            self.sessions.end(cookie)
