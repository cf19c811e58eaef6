"""Every table of the store: the modules that declare them, and the metadata they add up to.

A module of its own so that both the migration runner and Alembic's ``env.py`` read the same
list without importing each other.
"""

from __future__ import annotations

import importlib

from sqlalchemy import MetaData
from sqlmodel import SQLModel

TABLE_MODULES: list[str] = [
    "tracescore.store.tables",
    "tracescore.store.judge_cache",
    "tracescore.store.score_series",
    "tracescore.store.scores",
    "tracescore.store.alerts",
    "tracescore.store.leases",
    "tracescore.store.feedback",
    "tracescore.store.feedback_triggers",
    "tracescore.store.conversations",
    "tracescore.store.sessions",
    "tracescore.store.sources",
    "tracescore.store.insights",
    "tracescore.store.rescores",
    "tracescore.store.reservations",
    "tracescore.store.call_links",
]
"""Modules whose SQLModel table classes the store creates: the single list to extend."""


def store_metadata() -> MetaData:
    """Every table the store's modules declare: what the revisions must add up to."""
    for module in TABLE_MODULES:
        importlib.import_module(module)
    return SQLModel.metadata
