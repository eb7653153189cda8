"""What a view's SQL means: the tables it reads and the columns it outputs, checked with sqlglot.

A view is one query in Spark SQL: one SELECT (WITH ... SELECT and unions included) and nothing
that writes or defines, not even where sqlglot would accept it (DML in a CTE, SELECT ... INTO),
since schemaflow embeds the text in the DDL it runs. It is parsed once, its sources are found
scope by scope (so CTE names are not mistaken for tables), and it is qualified against the
declared columns of what it reads, which expands ``*`` and finds unknown columns. Spark refuses a
permanent view whose output has a generated name (a computed expression without an alias), so
that is checked here too.
Errors carry a 1-based line and column within the SQL text, for the caller to place in its file.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import OptimizeError, ParseError, TokenError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import traverse_scope
from sqlglot.schema import MappingSchema
from sqlglot.tokens import TokenType

from schemaflow.sql.usage import column_usage, is_table, output_lineage, table_key

DIALECT = "spark"
# What a query must not contain: writes and definitions, which sqlglot can nest inside a SELECT.
_WRITES = (exp.DML, exp.DDL, exp.Into, exp.Command, exp.Drop, exp.Alter, exp.TruncateTable)
_WRITE_KEYWORDS = frozenset({
    TokenType.INSERT, TokenType.DELETE, TokenType.UPDATE, TokenType.MERGE, TokenType.INTO, TokenType.CREATE,
    TokenType.DROP, TokenType.ALTER, TokenType.COPY, TokenType.COMMAND,
})
# The alias given to an expression the user left unnamed, so that its reaching the output shows.
_UNNAMED = "__schemaflow_unnamed_"


class ViewSqlError(Exception):
    """A problem in a view's SQL, at a 1-based line and column of the SQL text (1, 1 when unknown)."""

    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        self.message = message
        self.line = line
        self.col = col
        super().__init__(f"{message} (line {line}, column {col})")


@dataclass(frozen=True)
class ViewAnalysis:
    output: tuple[str, ...]  # output column names, lower-case, in order
    reads: tuple[str, ...]   # "db.name" of the tables and views read, sorted
    uses: Mapping[str, tuple[str, ...]] = field(default_factory=dict)     # "db.name" -> columns used anywhere
    lineage: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # output column -> "db.name.column"


def parse_select(sql: str) -> exp.Expression:
    """The single query in ``sql``; raises ``ViewSqlError`` for anything else."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None]
    except ParseError as error:
        raise _syntax_error(error) from error
    except TokenError as error:
        raise ViewSqlError(f"SQL syntax error: {error}") from error
    if not statements:
        raise ViewSqlError("a view must be one SELECT statement; the SQL is empty")
    if len(statements) > 1:
        position = _line_col(sql, _statement_starts(sql)[1])
        raise ViewSqlError(f"a view must be one SELECT statement; found {len(statements)} statements", *position)
    query = statements[0]
    if not isinstance(query, exp.Query):
        position = _line_col(sql, _statement_starts(sql)[0])
        kinds = "SELECT, WITH ... SELECT or a UNION of them"
        raise ViewSqlError(f"a view must be one SELECT statement ({kinds}), not {query.key.upper()}", *position)
    hidden = next(query.find_all(*_WRITES), None)
    if hidden is not None:
        # sqlglot accepts some in a CTE (WITH a AS (INSERT ...)) or as SELECT ... INTO; Spark runs none in a view.
        what = "SELECT ... INTO" if isinstance(hidden, exp.Into) else hidden.key.upper()
        message = f"a view must be one SELECT statement; it must not contain {what}"
        raise ViewSqlError(message, *_line_col(sql, _first_write_keyword(sql)))
    return query


def tables_read(sql: str, default_database: str) -> tuple[str, ...]:
    """The ``db.name`` of every table or view the query reads: lower-case, sorted, unique."""
    return tuple(sorted({key for key, _ in _table_references(parse_select(sql), default_database)}))


def analyze_view(sql: str, default_database: str, schema: Mapping[str, Sequence[tuple[str, str]]]) -> ViewAnalysis:
    """Check the query against ``schema`` ({"db.name": [(column, type), ...]}), name its output, find what it uses.

    Raises ``ViewSqlError`` for an unknown table or column, an unnamed computed output column or
    a duplicate output name.
    """
    query = parse_select(sql)
    references = _table_references(query, default_database)
    for key, table in sorted(references, key=lambda ref: _position(sql, ref[1])):
        if key not in schema:
            raise ViewSqlError(f"unknown table or view '{key}'", *_position(sql, table))
    reads = tuple(sorted({key for key, _ in references}))
    named = query.copy()
    unnamed = _name_unnamed(named)
    try:
        qualified = qualify(named, schema=_mapping_schema(schema, reads), dialect=DIALECT, db=default_database)
    except OptimizeError as error:
        known = {column for key in reads for column, _ in schema[key]}
        raise _resolution_error(str(error), sql, query, known) from error
    output = tuple(select.alias_or_name.lower() for select in qualified.selects)
    seen: set[str] = set()
    for name, select in zip(output, qualified.selects):
        if name.startswith(_UNNAMED):
            expression = unnamed[name]
            raise ViewSqlError(
                f"output column {expression.sql(DIALECT)} has no name: add an alias (Spark permanent views need one)",
                *_position(sql, expression),
            )
        if name in seen:
            message = f"duplicate output column '{name}': give each output column its own name"
            raise ViewSqlError(message, *_position(sql, select))
        seen.add(name)
    return ViewAnalysis(output=output, reads=reads, uses=column_usage(qualified, default_database),
                        lineage=output_lineage(qualified, default_database))


def normalize_sql(sql: str) -> str:
    """Canonical text of a query, to compare a declared view with the live one.

    sqlglot writes the parsed query back, so layout, keyword case and a trailing semicolon do not
    count as a change; nor do SQL comments: Spark stores a view's text without the comments before
    and after the query, and sqlglot moves the others about. Text it cannot parse (a view made by
    another tool) has its whitespace collapsed instead.
    """
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None]
    except (ParseError, TokenError):
        return " ".join(sql.split()).rstrip("; ")
    return "; ".join(filter(None, (s.sql(dialect=DIALECT, comments=False) for s in statements)))


def _table_references(query: exp.Expression, default_database: str) -> list[tuple[str, exp.Table]]:
    """Each table the query reads (not CTEs, not table functions), with its ``db.name``."""
    return [(table_key(source, default_database), source)
            for scope in traverse_scope(query) for source in scope.sources.values() if is_table(source)]


def _mapping_schema(schema: Mapping[str, Sequence[tuple[str, str]]], keys: Sequence[str]) -> MappingSchema:
    """A sqlglot schema of the given objects, nested {db: {table: {column: type}}}."""
    nested: dict[str, dict[str, dict[str, str]]] = {}
    for key in keys:
        database, _, name = key.partition(".")
        nested.setdefault(database, {})[name] = dict(schema[key])
    return MappingSchema(nested, dialect=DIALECT)


def _name_unnamed(query: exp.Expression) -> dict[str, exp.Expression]:
    """Alias every projection that Spark would give a generated name; returns alias -> expression."""
    unnamed: dict[str, exp.Expression] = {}
    for select in list(query.find_all(exp.Select)):
        for projection in list(select.expressions):
            if not _has_name(projection):
                alias = f"{_UNNAMED}{len(unnamed)}"
                unnamed[alias] = projection.copy()
                projection.replace(exp.alias_(projection.copy(), alias))
    return unnamed


def _has_name(projection: exp.Expression) -> bool:
    """An alias, a column (``t.*`` included), ``*``, a struct field, or a cast of a column."""
    if isinstance(projection, exp.Cast):
        projection = projection.this
    return isinstance(projection, (exp.Alias, exp.Column, exp.Star, exp.Dot))


# sqlglot's messages when it cannot resolve a name (qualify_columns.py in sqlglot 30.30).
_UNRESOLVED = re.compile(r"Column '(?P<column>[^']*)' could not be resolved(?: for table: '(?P<table>[^']*)')?")
_UNKNOWN_COLUMN = re.compile(r"Unknown column: (?P<column>\S+)")
_UNKNOWN_TABLE = re.compile(r"Unknown table: (?P<table>\S+)")
_AMBIGUOUS = re.compile(r"Ambiguous column '(?P<column>[^']*)'")


def _resolution_error(message: str, sql: str, query: exp.Expression, known: set[str]) -> ViewSqlError:
    """A user-facing error for sqlglot's failure to resolve a name, placed at the name's first use."""
    if match := _UNKNOWN_TABLE.match(message):
        table = match["table"]
        return ViewSqlError(f"unknown table or alias '{table}'", *_first_column(sql, query, None, table))
    if match := _AMBIGUOUS.match(message):
        column = match["column"]
        position = _first_column(sql, query, column, None)
        return ViewSqlError(f"ambiguous column '{column}': qualify it with its table's alias", *position)
    match = _UNRESOLVED.match(message) or _UNKNOWN_COLUMN.match(message)
    if match is None:
        return ViewSqlError(f"cannot resolve the query: {message}")
    column = match["column"].lower()
    table = match.groupdict().get("table")
    position = _first_column(sql, query, column, table)
    if table:
        return ViewSqlError(f"unknown column '{table}.{column}'", *position)
    if column in known:
        message = f"column '{column}' is ambiguous or out of scope here: qualify it with its table's alias"
        return ViewSqlError(message, *position)
    return ViewSqlError(f"unknown column '{column}'", *position)


def _first_column(sql: str, query: exp.Expression, column: str | None, table: str | None) -> tuple[int, int]:
    """The position of the first column reference with this name and/or table qualifier."""
    positions = [
        _position(sql, node)
        for node in query.find_all(exp.Column)
        if (column is None or node.name.lower() == column) and (table is None or node.table.lower() == table.lower())
    ]
    return min(positions, default=(1, 1))


def _position(sql: str, node: exp.Expression) -> tuple[int, int]:
    """The 1-based line and column where the node's text starts (1, 1 when sqlglot kept none)."""
    starts = [n.meta["start"] for n in node.walk() if "start" in n.meta]
    return _line_col(sql, min(starts)) if starts else (1, 1)


def _line_col(sql: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of a character offset."""
    line_start = sql.rfind("\n", 0, offset) + 1
    return sql.count("\n", 0, offset) + 1, offset - line_start + 1


def _first_write_keyword(sql: str) -> int:
    """The offset of the first keyword that writes or defines something (0 when none is found)."""
    tokens = Dialect.get_or_raise(DIALECT).tokenize(sql)
    return next((t.start for t in tokens if t.token_type in _WRITE_KEYWORDS), 0)


def _statement_starts(sql: str) -> list[int]:
    """The offset of the first token of each non-empty statement."""
    starts: list[int] = []
    statement_open = False
    for token in Dialect.get_or_raise(DIALECT).tokenize(sql):
        if token.token_type == TokenType.SEMICOLON:
            statement_open = False
        elif not statement_open:
            starts.append(token.start)
            statement_open = True
    return starts


_CLASS = re.compile(r"<class '(?:\w+\.)*(\w+)'>")  # sqlglot names node classes in some messages


def _syntax_error(error: ParseError) -> ViewSqlError:
    """sqlglot's first parse error; its column marks the end of the offending token, moved to its start."""
    first = error.errors[0] if error.errors else {}
    description = _CLASS.sub(r"\1", first.get("description") or str(error))
    highlight = first.get("highlight") or ""
    line, col = first.get("line") or 1, first.get("col") or 1
    if highlight and "\n" not in highlight:
        col = max(1, col - len(highlight) + 1)
    near = f" near '{highlight}'" if highlight else ""
    return ViewSqlError(f"SQL syntax error{near}: {description}", line, col)


def with_tables_renamed(sql: str, default_database: str, names: Mapping[str, str]) -> str | None:
    """``sql`` reading ``names[key]`` (an unqualified name) wherever it reads the table or view ``key``.

    CTE names and table functions are left alone, as is anything not in ``names``; the result is
    written back by sqlglot in Spark's dialect. A renamed table keeps its alias or its own name, so
    columns qualified with either still resolve; ``None`` when the query qualifies a column with a
    database as well (``db.t.c``), which no renaming can keep.
    """
    query = parse_select(sql)
    if any(column.args.get("db") for column in query.find_all(exp.Column)):
        return None
    for key, source in _table_references(query, default_database):
        if key in names:
            renamed = exp.Table(this=exp.to_identifier(names[key], quoted=True))
            source.replace(exp.alias_(renamed, source.alias_or_name, table=True))
    return query.sql(dialect=DIALECT, normalize_functions=False)
