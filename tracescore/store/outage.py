"""Telling a database outage from a write the database refuses.

Both end a write with an exception, and each loop that writes must tell them apart: an outage
is waited out (the same write succeeds later), whereas a refused write (a value a column cannot
hold, a constraint) fails the same way on every retry, so retrying it for ever stalls whatever
waits behind it. The first is retried with backoff, the second set aside with its reason.
"""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

DatabaseError = DBAPIError
"""What a statement that failed in the database (or its driver) raises, whichever the backend:
the service answers a read that hit one as an outage."""


def database_unavailable(error: BaseException) -> bool:
    """Whether a failed write is the database's fault (down, restarting, out of disk, locked),
    to wait out, rather than the written data's, which no retry can fix."""
    if isinstance(error, OSError):  # the SQLite spool's file system
        return True
    if not isinstance(error, DBAPIError):
        return False
    if error.connection_invalidated:
        return True
    if not isinstance(error, OperationalError | InterfaceError):
        return False  # DataError, IntegrityError, ProgrammingError: the rows' fault
    # PostgreSQL files "program limit exceeded" (an index row too large, say) and data
    # exceptions under OperationalError too, although they are the rows' fault.
    sqlstate = getattr(error.orig, "sqlstate", None) or ""
    return not sqlstate.startswith(("22", "54"))
