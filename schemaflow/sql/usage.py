"""Which columns of which tables and views a qualified query uses, and where each output column comes from.

A view depends on more than its output: a column used only in WHERE, JOIN, GROUP BY, HAVING, a
window or a subquery breaks the view just as well when it goes. So every scope of the query is
walked (``traverse_scope``: CTEs, derived tables, subqueries, each branch of a UNION) and each of
its columns is traced to the source its table alias names in that scope; CTE and subquery names
are scopes, not tables, so only real tables and views are counted. What an EXISTS subquery
selects is not used: only its conditions are. The query must be qualified
first (``sqlglot.optimizer.qualify``): every column then names its source and ``*`` is expanded,
as Spark expands it when it creates a view.

Lineage is narrower: for each output column, the source columns whose type its type follows,
through CTEs and derived tables (and position by position through UNION branches). A column read
only by a count, a condition, a cast or a window's partitioning does not change the output's type,
so a change of its type is no change of the view's.
"""
from __future__ import annotations

from typing import TypeGuard
from collections.abc import Collection, Mapping

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope


def column_usage(qualified: exp.Expr, default_database: str,
                 starred: Collection[int] = ()) -> dict[str, tuple[str, ...]]:
    """``db.name`` of every table or view read -> the columns of it used anywhere, lower-case and sorted.

    ``starred``: the positions, in ``traverse_scope``'s order, of the inner SELECTs (a derived table, a
    CTE) written as ``SELECT *`` alone. Spark expands such a star anew at every read, so a column it
    selects that nothing outside reads is not used: dropping it breaks nothing (the outermost SELECT's
    star is another matter: the stored text names its columns, see ``views.hive_readable``).
    """
    scopes = list(traverse_scope(qualified))
    # Outer scopes first (traverse_scope lists a scope after those it reads): what a scope's columns read of an
    # inner one is known before that inner one's own projection is judged.
    referenced: dict[int, set[str]] = {}  # an inner scope's expression -> the names outer scopes read of it
    unread: dict[int, set[int]] = {}      # a scope's position -> the column nodes that read nothing
    for position in reversed(range(len(scopes))):
        scope = scopes[position]
        # What an EXISTS subquery selects is never read: only whether it finds a row (``SELECT *`` there
        # would otherwise count every column of the table as used).
        skipped = ({id(column) for select in _selects(scope.expression) for column in select.find_all(exp.Column)}
                   if isinstance(scope.expression.parent, exp.Exists) else set())
        # Not a branch of a UNION: what reads it reads the UNION, and the outermost one's stars are frozen.
        if position in starred and position < len(scopes) - 1 and not isinstance(scope.expression.parent,
                                                                                  exp.SetOperation):
            wanted = referenced.get(id(scope.expression), set())
            projected = [(item.alias_or_name.lower(), item.this if isinstance(item, exp.Alias) else item)
                         for item in _selects(scope.expression)]
            skipped |= {id(column) for name, column in projected if isinstance(column, exp.Column) and name not in wanted}
        unread[position] = skipped
        for column in scope.columns:
            origin = scope.sources.get(column.table)
            if isinstance(origin, Scope) and id(column) not in skipped:
                referenced.setdefault(id(origin.expression), set()).add(column.name.lower())
    used: dict[str, set[str]] = {}
    for position, scope in enumerate(scopes):
        for source in scope.sources.values():
            if is_table(source):
                used.setdefault(table_key(source, default_database), set())
        for column in scope.columns:
            origin = scope.sources.get(column.table)
            if is_table(origin) and id(column) not in unread[position]:
                used[table_key(origin, default_database)].add(column.name.lower())
    return {key: tuple(sorted(columns)) for key, columns in sorted(used.items())}


def output_lineage(qualified: exp.Query, default_database: str) -> dict[str, tuple[str, ...]]:
    """Each output column -> the ``db.name.column`` its type follows, sorted."""
    scopes = {id(scope.expression): scope for scope in traverse_scope(qualified)}
    names = [select.alias_or_name.lower() for select in qualified.selects]
    return {name: tuple(sorted(_sources(qualified, i, scopes, default_database))) for i, name in enumerate(names)}


def _sources(query: exp.Expr, position: int, scopes: Mapping[int, Scope], default_database: str) -> set[str]:
    """The source columns of the output column at ``position`` of ``query``."""
    if isinstance(query, exp.SetOperation):
        return (_sources(query.left, position, scopes, default_database)
                | _sources(query.right, position, scopes, default_database))
    scope = scopes.get(id(query))
    if scope is None or position >= len(_selects(query)):
        return set()
    found: set[str] = set()
    for column in _typed_by(_selects(query)[position]):
        source = scope.sources.get(column.table)
        if is_table(source):
            found.add(f"{table_key(source, default_database)}.{column.name.lower()}")
        elif isinstance(source, Scope):
            inner = [s.alias_or_name.lower() for s in _selects(source.expression)]
            if column.name.lower() in inner:
                found |= _sources(source.expression, inner.index(column.name.lower()), scopes, default_database)
    return found


# Expressions whose type is their own whatever the types of what they read: a count, a comparison or
# any other condition, a cast, a length, a rank.
_OWN_TYPE = (exp.Count, exp.CountIf, exp.ApproxDistinct, exp.Predicate, exp.Connector, exp.Not, exp.Cast,
             exp.Length, exp.ArraySize, exp.RowNumber, exp.Rank, exp.DenseRank, exp.Ntile, exp.PercentRank,
             exp.CumeDist)


def _typed_by(expression: exp.Expr) -> list[exp.Column]:
    """The columns whose type reaches the type of ``expression``: not those read only by an expression of
    a type of its own, nor a window's partitioning and order."""
    found, todo = [], [expression]
    while todo:
        node = todo.pop()
        if isinstance(node, exp.Column):
            found.append(node)
        elif isinstance(node, exp.Window):
            todo.append(node.this)
        elif not isinstance(node, _OWN_TYPE):
            todo.extend(node.iter_expressions())
    return found


def _selects(expression: exp.Expr) -> list[exp.Expr]:
    """The output expressions of a scope's query (a SELECT, a UNION, a derived table or a table function)."""
    # sqlglot types a scope's expression as any expression; each one this module reaches has outputs.
    assert isinstance(expression, exp.Selectable), f"{expression.key} has no output columns"
    return expression.selects


def is_table(source: object) -> TypeGuard[exp.Table]:
    """A real table or view (not a CTE, a derived table or a table function)."""
    return isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier)


def table_key(table: exp.Table, default_database: str) -> str:
    return f"{table.db or default_database}.{table.name}".lower()
