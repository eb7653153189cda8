"""Spark SQL DDL text for the changes schemaflow makes, with every name quoted and every string escaped.

Identifiers are back-quoted (a back-quote inside is doubled); string literals use Spark's default
backslash escapes, the only form Spark's parser accepts (it rejects SQL's doubled quote ``''``).
So a comment holding quotes, back-quotes, semicolons or newlines round-trips unchanged. View SQL is
embedded as declared: ``spec`` has already proved it is exactly one SELECT. A created object is
born claimed: its CREATE sets ``schemaflow.version`` to the ``CLAIM`` the executor fills in.
"""
from __future__ import annotations

from typing import Iterable

from schemaflow.claims import CLAIM
from schemaflow.model import VERSION_KEY, Column, Table, View, split_key

# ``format:`` in a table file → Spark's STORED AS keyword.
STORED_AS = {
    "parquet": "PARQUET", "orc": "ORC", "avro": "AVRO", "textfile": "TEXTFILE",
    "sequencefile": "SEQUENCEFILE", "rcfile": "RCFILE",
}


def ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def qualified(key: str) -> str:
    database, name = split_key(key)
    return f"{ident(database)}.{ident(name)}"


def string(text: str) -> str:
    escaped = (text.replace("\\", "\\\\").replace("'", "\\'")
               .replace("\n", "\\n").replace("\r", "\\r"))
    return f"'{escaped}'"


def _comment(text: str | None) -> str:
    return f" COMMENT {string(text)}" if text else ""


def column_def(column: Column) -> str:
    return f"{ident(column.name)} {column.type}{_comment(column.comment)}"


def _column_list(columns: Iterable[Column], render=column_def) -> str:
    return "(\n" + ",\n".join("  " + render(c) for c in columns) + "\n)"


def create_table(table: Table) -> str:
    lines = [f"CREATE {'EXTERNAL ' if table.external else ''}TABLE {qualified(table.key)} "
             + _column_list(table.columns)]
    if table.comment:
        lines.append(f"COMMENT {string(table.comment)}")
    if table.partition_columns:
        lines.append("PARTITIONED BY " + _column_list(table.partition_columns))
    lines.append(f"STORED AS {STORED_AS[table.format]}")
    if table.location:
        lines.append(f"LOCATION {string(table.location)}")
    lines.append(_claimed())
    return "\n".join(lines)


def add_columns(key: str, columns: Iterable[Column]) -> str:
    return f"ALTER TABLE {qualified(key)} ADD COLUMNS " + _column_list(columns)


def set_table_comment(key: str, comment: str | None) -> str:
    return f"COMMENT ON TABLE {qualified(key)} IS {string(comment) if comment else 'NULL'}"


def create_view(view: View, replace: bool) -> str:
    head = f"CREATE {'OR REPLACE ' if replace else ''}VIEW {qualified(view.key)} "
    lines = [head + _column_list(view.columns, lambda c: ident(c.name) + _comment(c.comment))]
    if view.comment:
        lines.append(f"COMMENT {string(view.comment)}")
    lines.append(_claimed())
    lines.append("AS " + view.sql)
    return "\n".join(lines)


def _claimed() -> str:
    return f"TBLPROPERTIES ({string(VERSION_KEY)} = {CLAIM})"


def fill_claim(sql: str, token: str) -> str:
    """A CREATE statement of this module with the run's claim ``token`` in place of ``CLAIM``.

    Only the TBLPROPERTIES clause ``_claimed`` wrote is filled, never the same characters in user
    text: it is the first occurrence of that clause, since everything a CREATE holds before it is an
    escaped string literal (whose quotes all follow a backslash) or a checked identifier, while a
    view's SQL, which is written as declared, comes after it.
    """
    clause = _claimed()
    if clause not in sql:
        raise ValueError("a statement that claims its object must carry schemaflow's TBLPROPERTIES clause")
    return sql.replace(clause, clause.replace(CLAIM, string(token)), 1)


def use_database(database: str) -> str:
    return f"USE {ident(database)}"


def drop(kind: str, key: str) -> str:
    return f"DROP {kind.upper()} {qualified(key)}"
