"""Fixtures of the dashboard tests: a store of really scored captures, its app and its judge."""

from tests.support.scored_dashboard import client, judge, store  # noqa: F401 - fixtures served to this folder
