"""SQL is built only with bound parameters: a standing audit of the package's source.

Values always travel as bound parameters (``:name`` with SQLAlchemy, ``?``/``%s`` with the
driver). A few statements are assembled from pieces known when the code is written — table
and column names, trace-state constants, a whitelisted PRAGMA value — and each such piece is
listed below after review. Any other interpolation into SQL text (an f-string, ``%`` or a
``.format`` with non-constant arguments) fails this test until it is rewritten with a bound
parameter or reviewed and added here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tracescore"
SQL = re.compile(
    r"\b(SELECT|INSERT|UPDATE|DELETE|PRAGMA|CREATE|DROP|ALTER|COPY)\b[\s\S]*"
    r"\b(FROM|INTO|SET|WHERE|TABLE|VALUES|synchronous|STDIN)\b"
)
# Interpolated expressions reviewed as code-known identifiers or constants, never request data.
REVIEWED = {
    "TraceState.PENDING",
    "TraceState.READY",
    "TraceState.CLAIMED",
    "TraceState.SCORED",
    "TraceState.FAILED",
    "TraceState.PRUNED",  # StrEnum members
    "_STORED_SPANS",
    "_STORED_LOGS",  # store/trace_queue.py: constant count subqueries
    "EVALUATION_EVENT",  # store/trace_queue.py: the GenAI conventions' event name, a constant
    "_NEW",  # store/trace_queue.py: a constant condition on the upserted row's columns
    "returning",  # store/leased_queue.py LeasedQueueSql: column names given by the code
    # store/leased_queue.py: the lease table's name given by the code, and constant conditions
    # over it; migration 0025_queue_leases: the names of its constant _QUEUES
    "leases",
    "lapsed",
    "held",
    # store/conversations.py: the latest turn's value of a column named by the code
    "_LATEST.format(column='service_name')",
    "_LATEST.format(column='agent_name')",
    "table",
    "names",
    "staging",
    "', '.join([mark] * len(columns))",
    "conflict",
    "key",  # store/bulk.py: ORM table and column names
    "synchronous.upper()",  # store/engine.py: checked against normal/full before use
    # store/sources.py: the ORM table's column names and a constant list of SET clauses over them
    "', '.join(_COLUMNS)",
    "', '.join([mark] * len(_COLUMNS))",
    "', '.join(updates)",
    "column",  # migrations/versions/0015_sqlite_time_text.py: the time columns its REWRITTEN names
    # migrations 0019_packed_spans and 0020_compact_scores: table, column and index names and
    # ALTER clauses built from the revisions' own constant lists (_IDS, TIMES, INDEXES)
    "copy",
    "new",
    "name",
    "values",
    "', '.join(kept)",
    "', '.join(converted)",
    "', '.join(changes)",
    "', '.join(names)",
    # migration 0024_score_series: the revision's own constant column lists (_KEPT, NAMES), the
    # conversions of its reason column and the join on those names
    "kept",
    "source",
    "same",
    "', '.join((f's.{name}' for name in NAMES))",
    "_COLUMNS",  # migration 0026_aligned_spans: the revision's own constant list of span columns
    # migration 0023_compact_spans_traces: column lists read from the table being copied, the
    # conversions from its constant lists, and a constant ALTER clause
    "', '.join(columns)",
    "', '.join(selected)",
    "duration",
    "state",  # migration 0028_trace_indexes: the states of its own constant list (_INDEXES)
}


def _literal(node: ast.AST) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_literal(value) for value in node.values)
    return ""


def _string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "..."`` strings, so ``NAME.format(...)`` can be recognised as SQL."""
    found = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            found[node.targets[0].id] = _literal(node.value)
    return found


def _interpolations(path: Path) -> list[tuple[int, str]]:
    """(line, expression) of everything interpolated into SQL text in one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = _string_constants(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and SQL.search(_literal(node)):
            found += [
                (node.lineno, ast.unparse(v.value))
                for v in node.values
                if isinstance(v, ast.FormattedValue)
            ]
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and SQL.search(_literal(node.left))
        ):
            found.append((node.lineno, ast.unparse(node.right)))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
        ):
            target = node.func.value
            text = _literal(target) or (
                constants.get(target.id, "") if isinstance(target, ast.Name) else ""
            )
            arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
            if SQL.search(text) and not all(isinstance(a, ast.Constant) for a in arguments):
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_sql_text_interpolates_only_reviewed_identifiers() -> None:
    unreviewed = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {expression}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, expression in _interpolations(path)
        if expression not in REVIEWED
    ]
    assert not unreviewed, "values interpolated into SQL (use bound parameters):\n" + "\n".join(
        unreviewed
    )


def test_the_audit_catches_an_interpolated_value(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text(
        "trace_id = input()\n"
        "a = f\"SELECT * FROM spans WHERE trace_id = '{trace_id}'\"\n"
        "b = \"DELETE FROM scores WHERE id = '%s'\" % trace_id\n"
        "Q = \"UPDATE traces SET state = '{state}' WHERE trace_id = :t\"\n"
        "c = Q.format(state=trace_id)\n"
        "d = Q.format(state='ready')\n"  # constants are fine
    )
    assert [expression for _, expression in _interpolations(module)] == [
        "trace_id",
        "trace_id",
        "Q.format(state=trace_id)",
    ]
