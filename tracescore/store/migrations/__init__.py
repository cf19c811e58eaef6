"""The store's schema history as Alembic revisions, shipped inside the package.

``env.py`` is driven by :mod:`tracescore.store.migrate`, which hands it an open connection;
there is no ``alembic.ini``. How to add a revision: ``docs/upgrading.md``.
"""


class SchemaError(RuntimeError):
    """A database whose schema this tracescore cannot serve as it is; the message says why and
    what to run."""
