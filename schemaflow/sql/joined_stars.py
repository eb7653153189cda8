"""The columns a ``*`` or ``t.*`` selects over a ``JOIN ... USING`` or a ``NATURAL JOIN``, as Spark selects them.

Spark folds the columns a join matches on into one each: ``*`` selects those first (the last
join's first, then the earlier ones'), then the rest of each source's columns in order, while
``t.*`` selects ``t``'s own columns, its copy of the matched ones included. sqlglot's ``qualify``
has said otherwise in some of the releases schemaflow supports (measured with its fast tests):
through 30.29 it expands ``t.*`` to a COALESCE of every table's copy of a matched column, so lineage
names tables the column does not come from; through 30.21 ``*`` keeps the matched columns where the
first source has them; through 30.12 a NATURAL JOIN is not folded at all. So the stars of such a
SELECT are written out here, before qualifying, as explicit columns (a matched column that ``*``
selects as the COALESCE of every copy, as sqlglot 30.30 writes it: its type follows them all), and
every release qualifies the same query. A SELECT whose sources are not all plain tables and aliased
subqueries (LATERAL VIEW, PIVOT, a parenthesized join) is left to sqlglot.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from schemaflow.sql.usage import is_table, table_key

# The columns a SELECT's sources give, in order, each with the source columns it is made of (several for a
# matched column). A list, as two sources joined ON a condition may both give a name.
_Output = list[tuple[str, list[exp.Column]]]


def expand_joined_stars(query: exp.Query, schema: Mapping[str, Sequence[tuple[str, str]]], default_database: str,
                        qualified: Callable[[], exp.Query]) -> None:
    """Write out, in ``query`` (before qualifying), each star of a SELECT that joins USING or NATURAL.

    A derived table or CTE whose output is a star has its columns from ``qualified()``: ``query``
    qualified by sqlglot as it is, called at most once, and only then.
    """
    counterparts: dict[int, exp.Select] = {}

    def columns_of(scope: Scope) -> list[str] | None:
        if not isinstance(scope.expression, exp.Query):  # VALUES, a table function: left to sqlglot
            return None
        if "*" not in scope.expression.named_selects:
            return scope.expression.named_selects
        if not counterparts:
            pairs = zip(query.find_all(exp.Select), qualified().find_all(exp.Select), strict=False)
            counterparts.update((id(mine), theirs) for mine, theirs in pairs)
        first = scope.expression
        while isinstance(first, (exp.SetOperation, exp.Subquery)):  # a UNION is named by its first SELECT
            first = first.this
        counterpart = counterparts.get(id(first))
        return None if counterpart is None else counterpart.named_selects

    for scope in traverse_scope(query):
        select = scope.expression
        if isinstance(select, exp.Select) and _folds_columns(select) and any(item.is_star for item in select.selects):
            _expand(select, scope, schema, default_database, columns_of)


def _folds_columns(select: exp.Select) -> bool:
    return any(join.args.get("using") or join.method == "NATURAL" for join in select.args.get("joins") or ())


def _expand(select: exp.Select, scope: Scope, schema: Mapping[str, Sequence[tuple[str, str]]],
            default_database: str, columns_of: Callable[[Scope], list[str] | None]) -> None:
    if select.args.get("laterals") or select.args.get("pivots"):
        return
    joins = select.args.get("joins") or []
    sources = [select.args["from_"].this, *(join.this for join in joins)]
    if not all(isinstance(source, (exp.Table, exp.Subquery)) for source in sources):
        return
    own: dict[str, _Output] = {}  # by lower-case alias, as Spark matches names
    for source in sources:
        found = scope.sources.get(source.alias_or_name)
        if is_table(found):
            names = [name for name, _ in schema.get(table_key(found, default_database), ())]
        elif isinstance(found, Scope) and (known := columns_of(found)) is not None and "*" not in known:
            names = known
        else:
            return
        if source.alias_or_name.lower() in own:  # the same name twice: Spark refuses the query
            return
        own[source.alias_or_name.lower()] = [(name, [exp.column(name, table=source.alias_or_name)]) for name in names]
    first, *others = own.values()
    output = first
    for columns, join in zip(others, joins, strict=True):
        output = _joined(output, columns, join)
    items: list[exp.Expr] = []
    for item in select.selects:
        if isinstance(item, exp.Star):
            items += [_selected(name, columns) for name, columns in output]
        elif isinstance(item, exp.Column) and isinstance(item.this, exp.Star) and item.table.lower() in own:
            items += [_selected(name, columns) for name, columns in own[item.table.lower()]]
        else:
            items.append(item)
    select.set("expressions", items)


def _joined(left: _Output, right: _Output, join: exp.Join) -> _Output:
    """The columns of ``left JOIN right``: matched ones first, each made of both sides' copies."""
    using = join.args.get("using")
    if using:
        matched = [identifier.name.lower() for identifier in using]
    elif join.method == "NATURAL":
        theirs = {name.lower() for name, _ in right}
        matched = [name.lower() for name, _ in left if name.lower() in theirs]
    else:
        return left + right
    both = left + right
    folded = [(name, [column for other, columns in both if other.lower() == name for column in columns])
              for name in matched]
    return folded + [(name, columns) for name, columns in both if name.lower() not in matched]


def _selected(name: str, columns: list[exp.Column]) -> exp.Expr:
    if len(columns) == 1:
        return columns[0].copy()
    return exp.alias_(exp.func("COALESCE", *(column.copy() for column in columns)), name)
