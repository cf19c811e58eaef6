"""Fixtures of the service's API tests that read a real store on both databases."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tracescore.store import SpanStore, open_store


@pytest.fixture
def store(db_url: str) -> Iterator[SpanStore]:
    """A store on SQLite and on PostgreSQL, closed after the test."""
    store = open_store(db_url)
    yield store
    store.close()
