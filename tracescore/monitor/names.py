"""Which binding names the API takes, so an unknown one is a 404 on every route rather than
a 200 with zeros (issue 50).

A name is known when the configuration binds it (even before it has scored anything: a new
binding's empty answer is true) or when stored scores carry it (a binding since removed from
the configuration keeps its history readable). Anything else is a typo, and a 404 says so.
"""

from __future__ import annotations

from collections.abc import Collection

from fastapi import HTTPException

from tracescore.store import Database, connect
from tracescore.store.score_aggregates import binding_has_scores


class BindingNames:
    """The check of a ``binding`` parameter; ``configured`` None takes any name (a router
    built without a configuration, as the tests' bare routers are)."""

    def __init__(self, engine: Database, configured: Collection[str] | None) -> None:
        self.engine = engine
        self.configured = frozenset(configured) if configured is not None else None

    def known(self, binding: str) -> bool:
        if self.configured is None or binding in self.configured:
            return True
        with connect(self.engine) as connection:
            return binding_has_scores(connection, binding)

    def require(self, binding: str | None) -> None:
        """Raise the 404 problem for a ``binding`` neither configured nor stored."""
        if binding is not None and not self.known(binding):
            raise HTTPException(404, f"no binding named {binding!r} in scorers or stored scores")
