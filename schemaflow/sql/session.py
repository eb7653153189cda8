"""Statements schemaflow runs on its own Spark session, never part of a plan.

After an apply, ``REFRESH TABLE`` drops the session's cached metadata of an object the apply
changed. Before one, the view check (``catalog.hive.view_check``) has Spark analyse a view's SQL against
session-local temporary views of the declared shapes: a table stands in as one row of typed NULLs.
"""
from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from schemaflow.model import Column
from schemaflow.sql.quoting import ident, table_node
from schemaflow.sql.dialect import DIALECT


def refresh_table(key: str) -> str:
    """Refresh the session's cache of a table or a view (``REFRESH TABLE`` takes views too)."""
    return exp.Refresh(this=table_node(key), kind="TABLE").sql(dialect=DIALECT)


def temporary_view(name: str, query: str, columns: Sequence[str] = ()) -> str:
    """Make (or replace) the temporary view ``name`` of ``query``, naming its output ``columns`` when given.

    Text, as ``query`` is SQL already written (a view's own, or ``typed_nulls``), to be run as it is.
    """
    names = f" ({', '.join(ident(column) for column in columns)})" if columns else ""
    return f"CREATE OR REPLACE TEMPORARY VIEW {ident(name)}{names} AS {query}"


def typed_nulls(columns: Sequence[Column]) -> str:
    """A SELECT of one row: a NULL of each column's type, named as the column.

    Text, as each type goes as the model holds it, which Spark parses (sqlglot would re-spell it).
    """
    return "SELECT " + ", ".join(f"CAST(NULL AS {c.type}) AS {ident(c.name)}" for c in columns)
