"""Spark SQL DDL text for the changes schemaflow makes, with every name quoted and every string escaped.

Names and strings are quoted by ``sql.quoting``. The statements that change one thing (USE, DROP,
COMMENT ON, ALTER COLUMN) are built as sqlglot trees and written in Spark's dialect; CREATE and
ADD COLUMNS are laid out a column a line, with each type as the model holds it, which sqlglot's
generator would reflow and re-spell (``DECIMAL(12, 2)``), so they are written as text. View SQL is
embedded as declared, made readable to Hive too (see ``view_text``): ``spec`` has already proved it
is exactly one SELECT. A created object is born claimed: its CREATE sets ``schemaflow.version`` to
``CLAIM``, which the executor fills with the run's claim (``fill_claim``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from sqlglot import exp

from schemaflow.model import VERSION_KEY, Column, Table, View
from schemaflow.sql.dialect import DIALECT
from schemaflow.sql.quoting import ident, identifier_node, qualified, string, string_node, table_node
from schemaflow.sql.table_kinds import default_serde, kind_of
from schemaflow.sql.views import ViewSqlError, hive_readable

# Stands for the claim in the statements that create an object (Spark's ``${name}`` form, but filled
# by schemaflow, never by Spark): plans show it, and the executor puts the run's claim in its place.
CLAIM = "${claim}"


def _comment(text: str | None) -> str:
    return f" COMMENT {string(text)}" if text else ""


def column_def(column: Column) -> str:
    return f"{ident(column.name)} {column.type}{_comment(column.comment)}"


def _column_list(columns: Iterable[Column], render: Callable[[Column], str] = column_def) -> str:
    return "(\n" + ",\n".join("  " + render(c) for c in columns) + "\n)"


def create_table(table: Table, properties: Mapping[str, str] | None = None) -> str:
    """A Hive-format table (``STORED AS``) or a Spark data-source table (``USING``), storage as declared.

    SERDEPROPERTIES always go in a ``ROW FORMAT SERDE`` clause, never ``ROW FORMAT DELIMITED``,
    whose ``NULL DEFINED AS`` Spark 4 drops; a format Spark does not allow that clause with is
    spelt as its classes (``sql.table_kinds``). A data-source table lists its partition columns
    among its columns, as Spark's grammar has it.
    """
    head = f"CREATE {'EXTERNAL ' if table.external and not table.data_source else ''}TABLE {qualified(table.key)} "
    comment = [f"COMMENT {string(table.comment)}"] if table.comment else []
    bucketing = [_bucketing(table)] if table.bucketing else []
    if table.data_source:
        # USING comes straight after the columns, then clauses in any order.
        lines = [head + _column_list(table.all_columns), kind_of(table).ddl_clause] + comment
        if table.serde_properties:
            lines.append("OPTIONS " + _properties(table.serde_properties))
        if table.partition_columns:
            lines.append("PARTITIONED BY (" + ", ".join(ident(c.name) for c in table.partition_columns) + ")")
        lines += bucketing
    else:
        lines = [head + _column_list(table.columns)] + comment
        if table.partition_columns:
            lines.append("PARTITIONED BY " + _column_list(table.partition_columns))
        lines += bucketing + _hive_storage(table)
    if table.location:
        lines.append(f"LOCATION {string(table.location)}")
    lines.append(_claimed(properties))
    return "\n".join(lines)


def _bucketing(table: Table) -> str:
    bucketing = table.bucketing
    assert bucketing is not None
    clause = "CLUSTERED BY (" + ", ".join(ident(c) for c in bucketing.columns) + ")"
    if bucketing.sorted_by:
        clause += " SORTED BY (" + ", ".join(ident(c) for c in bucketing.sorted_by) + ")"
    return clause + f" INTO {bucketing.count} BUCKETS"


def _hive_storage(table: Table) -> list[str]:
    kind = kind_of(table)
    lines = []
    if table.serde or table.serde_properties:
        serde = table.serde or default_serde(table.format)
        clause = f"ROW FORMAT SERDE {string(serde)}"
        if table.serde_properties:
            clause += " WITH SERDEPROPERTIES " + _properties(table.serde_properties)
        lines.append(clause)
    if kind.row_format_serde or (kind.classes and not lines):
        lines.append(kind.ddl_clause)
    else:
        read, write = kind.classes or (table.input_format, table.output_format)
        lines.append(f"STORED AS INPUTFORMAT {string(read or '')} OUTPUTFORMAT {string(write or '')}")
    return lines


def _properties(values: Mapping[str, str]) -> str:
    return "(" + ", ".join(f"{string(k)} = {string(v)}" for k, v in sorted(values.items())) + ")"


def add_columns(key: str, columns: Iterable[Column]) -> str:
    return f"ALTER TABLE {qualified(key)} ADD COLUMNS " + _column_list(columns)


def set_table_properties(key: str, properties: Mapping[str, str]) -> str:
    return f"ALTER TABLE {qualified(key)} SET TBLPROPERTIES " + _properties(properties)


def unset_table_properties(key: str, keys: Iterable[str]) -> str:
    return f"ALTER TABLE {qualified(key)} UNSET TBLPROPERTIES (" + ", ".join(string(k) for k in sorted(keys)) + ")"


def rename_column(key: str, old: str, new: str) -> str:
    return f"ALTER TABLE {qualified(key)} RENAME COLUMN {ident(old)} TO {ident(new)}"


def drop_columns(key: str, names: Iterable[str]) -> str:
    return f"ALTER TABLE {qualified(key)} DROP COLUMNS (" + ", ".join(ident(n) for n in names) + ")"


def change_column_type(key: str, column: Column) -> str:
    return f"ALTER TABLE {qualified(key)} ALTER COLUMN {ident(column.name)} TYPE {column.type}"


def move_column(key: str, name: str, after: str | None) -> str:
    """A column moved first (``after`` None) or after another, as Delta takes it."""
    return f"ALTER TABLE {qualified(key)} ALTER COLUMN {ident(name)} " + (f"AFTER {ident(after)}" if after else "FIRST")


def set_column_comment(key: str, column: Column) -> str:
    """A data column's comment; on a data-source table Spark rewrites its own schema copy with it."""
    change = exp.AlterColumn(this=identifier_node(column.name), comment=string_node(column.comment or ""))
    return exp.Alter(this=table_node(key), kind="TABLE", actions=[change]).sql(dialect=DIALECT)


def set_table_comment(key: str, comment: str | None) -> str:
    text = string_node(comment) if comment else exp.null()
    return exp.Comment(this=table_node(key), kind="TABLE", expression=text).sql(dialect=DIALECT)


def create_view(view: View, replace: bool) -> str:
    head = f"CREATE {'OR REPLACE ' if replace else ''}VIEW {qualified(view.key)} "
    lines = [head + _column_list(view.columns, lambda c: ident(c.name) + _comment(c.comment))]
    if view.comment:
        lines.append(f"COMMENT {string(view.comment)}")
    lines.append(_claimed())
    lines.append("AS " + view_text(view))
    return "\n".join(lines)


def view_text(view: View, stars: Sequence[tuple[int, int, str]] | None = None) -> str:
    """The text schemaflow stores for a declared view, which Hive and Spark both read.

    Spark stores a view's text as written, and Hive expands that text itself: from its own current
    database, with its own parser, expanding each ``*`` anew, and naming the output as the text does.
    So every table the SQL reads is named with its database, each of Hive's reserved words used as a
    name is back-quoted, each ``*`` is the columns it selects now (a view is frozen when it is made,
    in Hive's design and in Spark's), and when the view's columns rename the SQL's output, the SQL is
    wrapped in a SELECT that renames it (as Hive's own expanded text does). The rest of the SQL stays
    as declared. ``stars`` stands for what each ``*`` is replaced by (``view.stars`` when None).
    """
    try:
        sql = hive_readable(view.sql, view.database, view.stars if stars is None else stars)
    except ViewSqlError:  # never a declared view's (spec parsed it): text made elsewhere goes as it is
        return view.sql
    names = [c.name for c in view.columns]
    if not view.output or list(view.output) == names:
        return sql
    renamed = ", ".join(ident(old) if old == new else f"{ident(old)} AS {ident(new)}"
                        for old, new in zip(view.output, names, strict=False))
    return f"SELECT {renamed}\nFROM (\n{sql}\n) {ident(view.name)}"


def stores_view(stored: str, view: View) -> bool:
    """Whether ``stored`` is the text ``view_text`` stores for ``view``, but that each ``*`` may stand for
    other columns (those it selected when it was stored), or be stored as ``*`` (before expansion)."""
    marker = "\0"
    first, *rest = view_text(view, [(start, end, marker) for start, end, _ in view.stars]).split(marker)
    if not rest:
        return stored == first
    if not stored.startswith(first) or not stored.endswith(rest[-1]):
        return False
    # Each piece after a star is found after the one before (a column list holds no piece of SQL):
    # linear, where a pattern of one lazy group a star would backtrack across a UNION of many.
    at, end = len(first), len(stored) - len(rest[-1])
    for piece in rest[:-1]:
        at = stored.find(piece, at, end)
        if at < 0:
            return False
        at += len(piece)
    return at <= end


def _claim_clause() -> str:
    """The start of the TBLPROPERTIES clause that claims a created object, up to the claim."""
    return f"TBLPROPERTIES ({string(VERSION_KEY)} = {CLAIM}"


def _claimed(properties: Mapping[str, str] | None = None) -> str:
    others = "".join(f", {string(k)} = {string(v)}" for k, v in sorted((properties or {}).items()))
    return f"{_claim_clause()}{others})"


def fill_claim(sql: str, token: str) -> str:
    """A CREATE statement of this module with the run's claim ``token`` in place of ``CLAIM``.

    Only the TBLPROPERTIES clause ``_claimed`` wrote is filled, never the same characters in user
    text: it is the first occurrence of that clause, since everything a CREATE holds before it is an
    escaped string literal (whose quotes all follow a backslash) or a checked identifier, while a
    view's SQL, which is written as declared, comes after it.
    """
    clause = _claim_clause()
    if clause not in sql:
        raise ValueError("a statement that claims its object must carry schemaflow's TBLPROPERTIES clause")
    return sql.replace(clause, clause.replace(CLAIM, string(token)), 1)


def use_database(database: str) -> str:
    return exp.Use(this=exp.Table(this=identifier_node(database))).sql(dialect=DIALECT)


def drop(kind: str, key: str) -> str:
    # sqlglot 30.8 to 30.17 name DROP's object ``this``; later releases hold a list of them, ``tables``.
    target = {"tables": [table_node(key)]} if "tables" in exp.Drop.arg_types else {"this": table_node(key)}
    return exp.Drop(kind=kind.upper(), **target).sql(dialect=DIALECT)
