"""What a view's SQL means: the tables it reads and the columns it outputs, checked with sqlglot.

A view is one query in Spark SQL: one SELECT (WITH ... SELECT and unions included) and nothing
that writes or defines, not even where sqlglot would accept it (DML in a CTE, SELECT ... INTO),
since schemaflow embeds the text in the DDL it runs. It is parsed once, its sources are found
scope by scope (so CTE names are not mistaken for tables), and it is qualified against the
declared columns of what it reads, which expands ``*`` (over a USING or NATURAL join, as
``sql.joined_stars`` writes it out) and finds unknown columns. Spark refuses a
permanent view whose output has a generated name (a computed expression without an alias), so
that is checked here too.
Errors carry a 1-based line and column within the SQL text, for the caller to place in its file.

sqlglot's parser and much of its optimizer recurse once per level of nesting, and qualifying
takes time that grows with the square of an expression's depth; so before parsing, the nesting of
parentheses, brackets and CASE is counted (at most ``MAX_NESTING``), and before qualifying, the
depth of the parsed expression (at most ``MAX_DEPTH``: a chain ``a + b + ...`` nests one level per
operator). What still runs out of Python's stack is an error at the start of the SQL.
"""
from __future__ import annotations

import difflib
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise
from typing import NamedTuple, cast
from collections.abc import Iterator, Mapping, Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, TokenError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, build_scope, traverse_scope
from sqlglot.schema import MappingSchema
from sqlglot.tokens import Token, TokenType

from schemaflow.sql.dialect import DIALECT
from schemaflow.sql.joined_stars import expand_joined_stars
from schemaflow.sql.quoting import ident
from schemaflow.sql.usage import column_usage, is_table, output_lineage, table_key

# What a query must not contain: writes and definitions, which sqlglot can nest inside a SELECT.
_WRITES = (exp.DML, exp.DDL, exp.Into, exp.Command, exp.Drop, exp.Alter, exp.TruncateTable)
_WRITE_KEYWORDS = frozenset({
    TokenType.INSERT, TokenType.DELETE, TokenType.UPDATE, TokenType.MERGE, TokenType.INTO, TokenType.CREATE,
    TokenType.DROP, TokenType.ALTER, TokenType.COPY, TokenType.COMMAND,
})
# The alias given to an expression the user left unnamed, so that its reaching the output shows.
_UNNAMED = "__schemaflow_unnamed_"
# sqlglot's parser takes some 25 Python frames per level of parentheses (CASE, a function call, a
# subquery): 32 levels fit Python's default limit of 1000 frames with room for the caller's.
MAX_NESTING = 32
_OPENING = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE, TokenType.CASE})
_CLOSING = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE, TokenType.END})
# Qualifying walks from each column up to its query: a chain of 1000 operators takes under a second.
MAX_DEPTH = 1000
# What sqlglot's parser raises, besides its own errors, on some text it does not expect (an odd number of arguments
# to map(): IndexError in build_var_map).
_PARSER_FAILURES = (IndexError, KeyError, TypeError, ValueError, AttributeError)
# View texts kept parsed and analysed in a process: every view of two trees of a large warehouse.
PARSED_KEPT = 4096
# IDENTIFIER('db.t') names a table (or a column) by a value: what the view reads would be known only when read.
DYNAMIC_NAME = "identifier"


class ViewSqlError(Exception):
    """A problem in a view's SQL, at a 1-based line and column of the SQL text (1, 1 when unknown)."""

    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        self.message = message
        self.line = line
        self.col = col
        super().__init__(f"{message} (line {line}, column {col})")


# A ``*`` (or ``t.*``) a query selects: its span in the SQL text, and the columns it selects, as text.
StarColumns = tuple[int, int, str]


@dataclass(frozen=True)
class ViewAnalysis:
    output: tuple[str, ...]  # output column names, lower-case, in order
    reads: tuple[str, ...]   # "db.name" of the tables and views read, sorted
    uses: Mapping[str, tuple[str, ...]] = field(default_factory=dict)     # "db.name" -> columns used anywhere
    lineage: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # output column -> "db.name.column"
    # Each * the query selects, with the columns it selects now: what the stored text names (not compared,
    # as the stored text is no part of what the analysis finds).
    stars: tuple[StarColumns, ...] = field(default=(), compare=False)


@contextmanager
def _within_python_stack() -> Iterator[None]:
    """Running out of Python's stack in sqlglot, on nesting the checks do not count (``NOT NOT ...``, ``- - a``),
    as a ``ViewSqlError``."""
    try:
        yield
    except RecursionError:
        raise ViewSqlError("the SQL nests too deep for sqlglot to analyse (it ran out of Python's stack): flatten "
                           "the query, e.g. move nested expressions and subqueries into WITH clauses") from None


def parse_select(sql: str) -> exp.Query:
    """The single query in ``sql``; raises ``ViewSqlError`` for anything else, or nested too deep to analyse.

    Parsed once per text in a process (``plan --base`` reads each view in two trees, and the plan
    reads it again): the tree is shared, so a caller that changes it changes a copy (``.copy()``).
    """
    return _parsed(sql)


@lru_cache(maxsize=PARSED_KEPT)
@_within_python_stack()
def _parsed(sql: str) -> exp.Query:
    statements = _statements(sql)
    if len(statements) > 1:
        position = line_col(sql, _statement_starts(sql)[1])
        raise ViewSqlError(f"a view must be one SELECT statement; found {len(statements)} statements", *position)
    query = statements[0]
    if not isinstance(query, exp.Query):
        position = line_col(sql, _statement_starts(sql)[0])
        kinds = "SELECT, WITH ... SELECT or a UNION of them"
        raise ViewSqlError(f"a view must be one SELECT statement ({kinds}), not {query.key.upper()}", *position)
    hidden = next(query.find_all(*_WRITES), None)
    if hidden is not None:
        # sqlglot accepts some in a CTE (WITH a AS (INSERT ...)) or as SELECT ... INTO; Spark runs none in a view.
        what = "SELECT ... INTO" if isinstance(hidden, exp.Into) else hidden.key.upper()
        message = f"a view must be one SELECT statement; it must not contain {what}"
        raise ViewSqlError(message, *line_col(sql, _first_write_keyword(sql)))
    parse_statement(sql)  # its depth checked, once
    return query


@lru_cache(maxsize=PARSED_KEPT)
@_within_python_stack()
def parse_statement(sql: str) -> tuple[exp.Expr, tuple[Token, ...]]:
    """The one statement of any kind in ``sql`` (a query, or a CREATE VIEW a plan runs), checked for nesting as
    ``parse_select`` checks a query, and its tokens (shared: read them, do not change them); raises ``ViewSqlError``
    where there is not one that sqlglot reads."""
    statements = _statements(sql)
    if len(statements) > 1:
        raise ViewSqlError(f"found {len(statements)} statements, not one", *line_col(sql, _statement_starts(sql)[1]))
    _check_depth(sql, statements[0])
    return statements[0], _tokens(sql)


@lru_cache(maxsize=PARSED_KEPT)
def _tokens(sql: str) -> tuple[Token, ...]:
    return tuple(DIALECT.tokenize(sql))


@lru_cache(maxsize=PARSED_KEPT)
@_within_python_stack()
def _statements(sql: str) -> tuple[exp.Expr, ...]:
    """The statements in ``sql`` (at least one), parsed after their nesting is checked (once per text)."""
    try:
        tokens = list(_tokens(sql))
        _check_nesting(sql, tokens)
        statements = tuple(s for s in DIALECT.parser().parse(tokens, sql) if s is not None)
    except ParseError as error:
        raise _script_error(sql) or _syntax_error(error) from error
    except TokenError as error:
        raise _token_error(sql) from error
    except _PARSER_FAILURES as error:  # sqlglot's own failure on text it does not expect (map(x): IndexError)
        raise ViewSqlError(f"SQL syntax error: sqlglot cannot parse this SQL ({type(error).__name__}); check the "
                           "arguments of each function call") from error
    if not statements:
        raise ViewSqlError("a view must be one SELECT statement; the SQL is empty")
    return statements


def _script_error(sql: str) -> ViewSqlError | None:
    """Spark's script transformation in its MAP or REDUCE form (``MAP a USING 'command'``), which sqlglot does not
    parse: what it is, where it starts; None when the SQL has none."""
    tokens = DIALECT.tokenize(sql)
    for i, token in enumerate(tokens):
        if token.text.upper() in ("MAP", "REDUCE") and any(
                using.token_type == TokenType.USING and script.token_type == TokenType.STRING
                for using, script in pairwise(tokens[i + 1:])):
            return ViewSqlError(f"{token.text.upper()} ... USING is Spark's script transformation: every read of the "
                                "view runs the command it names, with the reader's environment; schemaflow does not "
                                "take it in this form: write SELECT TRANSFORM(...) USING '...', which a plan shows as "
                                "code that apply runs only once the operator approves it", *line_col(sql, token.start))
    return None


def _check_nesting(sql: str, tokens: list[Token]) -> None:
    """Refuse parentheses, brackets and CASE nested deeper than ``MAX_NESTING``, at the one that goes too deep."""
    depth = 0
    for token in tokens:
        if token.token_type in _OPENING:
            depth += 1
            if depth > MAX_NESTING:
                raise ViewSqlError(f"parentheses, brackets and CASE nested more than {MAX_NESTING} levels deep here: "
                                   f"schemaflow analyses at most {MAX_NESTING}; flatten the query, e.g. move nested "
                                   "subqueries into WITH clauses", *line_col(sql, token.start))
        elif token.token_type in _CLOSING:
            depth -= 1


def _check_depth(sql: str, query: exp.Expr) -> None:
    """Refuse an expression deeper than ``MAX_DEPTH``, at the node that goes too deep (walked without recursing)."""
    pending = [(query, 1)]
    while pending:
        node, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise ViewSqlError(f"an expression nested more than {MAX_DEPTH} levels deep here (each operator of a chain "
                               f"such as a + b + ... or x AND y AND ... is a level): schemaflow analyses at most "
                               f"{MAX_DEPTH}; split it, e.g. into columns of a subquery", *_position(sql, node))
        pending.extend((child, depth + 1) for child in node.iter_expressions())


@lru_cache(maxsize=PARSED_KEPT)
@_within_python_stack()
def tables_read(sql: str, default_database: str) -> tuple[str, ...]:
    """The ``db.name`` of every table or view the query reads: lower-case, sorted, unique (found once per text)."""
    return tuple(sorted({key for key, _ in _table_references(parse_select(sql), default_database)}))


def analyze_view(sql: str, default_database: str, schema: Mapping[str, Sequence[tuple[str, str]]]) -> ViewAnalysis:
    """Check the query against ``schema`` ({"db.name": [(column, type), ...]}), name its output, find what it uses.

    Raises ``ViewSqlError`` for an unknown table or column, an unnamed computed output column or
    a duplicate output name. Only the columns of what the query reads count, so the same text over
    the same columns is analysed once in a process (the result is shared: read it, do not change it).
    """
    return _analyzed(analysis_key(sql, default_database, schema))


# What an analysis depends on: the text, its default database and the columns of each object it reads.
AnalysisKey = tuple[str, str, tuple[tuple[str, tuple[tuple[str, str], ...]], ...]]


def analysis_key(sql: str, default_database: str, schema: Mapping[str, Sequence[tuple[str, str]]]) -> AnalysisKey:
    """What ``analyze_view`` of these arguments depends on alone; raises ``ViewSqlError`` where the SQL does not parse."""
    read = tables_read(sql, default_database)
    return sql, default_database, tuple((key, tuple(schema[key])) for key in read if key in schema)


class _Analyses:
    """Each text's analysis over the columns it reads, made once in a process (the last ``kept``), or in the fork that
    analysed it (``learn``): ``plan --base`` analyses the views of two trees, and the plan the base's again."""

    def __init__(self, kept: int) -> None:
        self.kept = kept
        self.known: dict[AnalysisKey, ViewAnalysis] = {}
        self.hits = self.misses = 0

    def __call__(self, key: AnalysisKey) -> ViewAnalysis:
        known = self.known.get(key)
        if known is not None:
            self.hits += 1
            return known
        self.misses += 1
        analysis = _analysis(*key)  # a ViewSqlError is raised each time, as lru_cache does
        self.learn(key, analysis)
        return analysis

    def learn(self, key: AnalysisKey, analysis: ViewAnalysis) -> None:
        if len(self.known) >= self.kept:
            self.known.clear()
        self.known[key] = analysis

    def cache_info(self) -> CacheInfo:
        return CacheInfo(self.hits, self.misses, self.kept, len(self.known))

    def cache_clear(self) -> None:
        self.known.clear()
        self.hits = self.misses = 0


class CacheInfo(NamedTuple):
    """How a cache has served, counted as ``functools.lru_cache`` counts."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


_analyzed = _Analyses(PARSED_KEPT)


def known_analysis(key: AnalysisKey) -> ViewAnalysis | None:
    """The analysis of ``key`` made in this process already (or learnt), None when none was."""
    return _analyzed.known.get(key)


def learn_analysis(key: AnalysisKey, analysis: ViewAnalysis) -> None:
    """Keep ``analysis`` as that of ``key``, made in a fork of this process."""
    _analyzed.learn(key, analysis)


@_within_python_stack()
def _analysis(sql: str, default_database: str, known: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
              ) -> ViewAnalysis:
    schema = dict(known)
    query = parse_select(sql)
    references = _table_references(query, default_database)
    for key, table in sorted(references, key=lambda ref: _position(sql, ref[1])):
        if key not in schema:
            raise ViewSqlError(f"unknown table or view '{key}'", *_position(sql, table))
    reads = tuple(sorted({key for key, _ in references}))
    named = query.copy()
    unnamed = _name_unnamed(named)
    mapping = _mapping_schema(schema, reads)
    try:
        expand_joined_stars(named, schema, default_database,
                            lambda: qualify(named.copy(), schema=mapping, dialect=DIALECT, db=default_database))
        qualified = qualify(named, schema=mapping, dialect=DIALECT, db=default_database)
    except OptimizeError as error:
        raise _resolution_error(str(error), sql, query, schema, default_database) from error
    _expand_struct_stars(qualified, schema, default_database, sql)
    output = tuple(select.alias_or_name.lower() for select in qualified.selects)
    seen: set[str] = set()
    for name, select in zip(output, qualified.selects, strict=True):
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
    return ViewAnalysis(output=output, reads=reads,
                        uses=column_usage(qualified, default_database, _starred(query, qualified)),
                        lineage=output_lineage(qualified, default_database), stars=_star_columns(query, qualified))


def _expand_struct_stars(qualified: exp.Expr, schema: Mapping[str, Sequence[tuple[str, str]]], default_database: str,
                         sql: str) -> None:
    """Write each ``st.*`` of the outermost SELECTs (a star after a struct column) out as its fields, in place:
    ``t.st.a, t.st.b``, the columns Spark's own expansion names ``a`` and ``b``. sqlglot leaves it as one item;
    the view's stored text then names the fields it had when it was made, as for any other star. Raises
    ``ViewSqlError`` where the column's type is not known to be a struct (a view's column, whose type the
    analysis does not know)."""
    for select in _outer_selects(qualified):
        scope = build_scope(select)
        for item in list(select.expressions):
            if not (isinstance(item, exp.Dot) and isinstance(item.expression, exp.Star)
                    and isinstance(item.this, exp.Column)):
                continue
            column, source = item.this, scope.sources.get(item.this.table) if scope else None
            types = dict(schema.get(table_key(source, default_database), ())) if is_table(source) else {}
            declared = exp.DataType.build(types[column.name], dialect=DIALECT) if column.name in types else None
            if declared is None or declared.this != exp.DataType.Type.STRUCT:
                raise ViewSqlError(f"{column.name}.* selects the fields of a column schemaflow does not know to be a "
                                   "struct here: list the fields you select (st.a, st.b)", *_position(sql, item))
            fields = [exp.Dot(this=column.copy(), expression=exp.to_identifier(field.name, quoted=True))
                      for field in declared.expressions]
            position = select.expressions.index(item)
            select.set("expressions", select.expressions[:position] + fields + select.expressions[position + 1:])


def _starred(query: exp.Expr, qualified: exp.Expr) -> list[int]:
    """The positions (``traverse_scope``'s order) of the SELECTs written as stars alone (``sql.usage.column_usage``);
    none where qualifying made the scopes differ from the query's, or the query has no star."""
    if query.find(exp.Star) is None:
        return []
    written, made = list(traverse_scope(query)), list(traverse_scope(qualified))
    if len(written) != len(made):
        return []
    return [i for i, scope in enumerate(written) if isinstance(scope.expression, exp.Select)
            and scope.expression.expressions and all(_is_star(item) for item in scope.expression.expressions)]


def _star_columns(query: exp.Expr, qualified: exp.Expr) -> tuple[StarColumns, ...]:
    """Each ``*`` and ``t.*`` that makes the view's output, with the columns ``qualified`` expands it to.

    Only the outermost SELECTs (each branch of a UNION) make the output: a star there fixes which
    columns the view has, and Hive would expand it anew at every read. A star inside (a CTE, a
    subquery, EXISTS) is left as written: what it selects is named outside it, so the output stays
    as it is, and a column dropped that the view does not use still breaks nothing. A SELECT with
    one star expands it to what its other items leave of the expanded list; one with several is
    left as written (which star selects which columns is Spark's to say).
    """
    originals, expanded = _outer_selects(query), _outer_selects(qualified)
    if len(originals) != len(expanded):
        return ()
    found = []
    for original, select in zip(originals, expanded, strict=True):
        stars = [i for i, item in enumerate(original.expressions) if _star_span(item)]
        if len(stars) != 1:
            continue
        # A subquery in FROM without an alias (Spark takes one) is known to sqlglot by a name it made up, which no
        # stored text may use: its columns are named alone where they can be (the only source), else left to the star.
        sources = [source.this if isinstance(source, exp.Join) else source
                   for source in [original.args.get("from_"), *(original.args.get("joins") or ())] if source is not None]
        sources = [source.this if isinstance(source, exp.From) else source for source in sources]
        unaliased = any(isinstance(source, exp.Subquery) and not source.alias for source in sources)
        if unaliased and len(sources) > 1:
            continue
        first = stars[0]
        count = len(select.expressions) - (len(original.expressions) - 1)
        items = select.expressions[first:first + count]
        start, end = cast(tuple[int, int], _star_span(original.expressions[first]))
        found.append((start, end, ", ".join(_selected(item, qualified=not unaliased) for item in items)))
    return tuple(sorted(found))


def _outer_selects(query: exp.Expr) -> list[exp.Select]:
    """The SELECTs whose rows are the query's: the query, or each branch of its UNION, INTERSECT or EXCEPT."""
    if isinstance(query, exp.Select):
        return [query]
    if isinstance(query, exp.SetOperation):
        return _outer_selects(query.left) + _outer_selects(query.right)
    if isinstance(query, exp.Subquery):
        return _outer_selects(query.this)
    return []


def _is_star(item: exp.Expression) -> bool:
    """``*`` or ``t.*``."""
    return isinstance(item.this if isinstance(item, exp.Column) else item, exp.Star)


def _star_span(item: exp.Expression) -> tuple[int, int] | None:
    """Where ``*`` or ``t.*`` is written in the SQL text (start, end exclusive); None for another item."""
    star = item.this if isinstance(item, exp.Column) else item
    if not isinstance(star, exp.Star) or "start" not in star.meta:
        return None
    first = next((part for part in (item.args.get("db"), item.args.get("table")) if part is not None), star)
    return first.meta.get("start", star.meta["start"]), star.meta["end"] + 1


def _selected(item: exp.Expression, qualified: bool = True) -> str:
    """An expanded column as the stored text names it: ``t`.`a``, back-quoted as Hive's own expanded text
    (`` `a` `` alone, not ``qualified``)."""
    column = item.this if isinstance(item, exp.Alias) else item
    if isinstance(column, exp.Column) and column.name == item.alias_or_name:
        return (column if qualified else exp.column(column.name)).sql(dialect=DIALECT, identify=True)
    return item.sql(dialect=DIALECT, identify=True)


@lru_cache(maxsize=PARSED_KEPT)
def normalize_sql(sql: str) -> str:
    """Canonical text of a query, to compare a declared view with the live one.

    sqlglot writes the parsed query back, so layout, keyword case and a trailing semicolon do not
    count as a change; nor do SQL comments: Spark stores a view's text without the comments before
    and after the query, and sqlglot moves the others about. Text it cannot parse (a view made by
    another tool) has its whitespace collapsed instead.
    """
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None]
        return "; ".join(filter(None, (s.sql(dialect=DIALECT, comments=False) for s in statements)))
    except (ParseError, TokenError, RecursionError):
        return " ".join(sql.split()).rstrip("; ")


def _table_references(query: exp.Expr, default_database: str) -> list[tuple[str, exp.Table]]:
    """Each table the query reads (not CTEs, not table functions), with its ``db.name``."""
    return [(table_key(source, default_database), source)
            for scope in traverse_scope(query) for source in scope.sources.values() if is_table(source)]


def _mapping_schema(schema: Mapping[str, Sequence[tuple[str, str]]], keys: Sequence[str]) -> MappingSchema:
    """A sqlglot schema of the given objects, nested {db: {table: {column: type}}}."""
    nested: dict[str, dict[str, dict[str, str]]] = {}
    for key in keys:
        database, _, name = key.partition(".")
        nested.setdefault(database, {})[name] = dict(schema[key])
    # sqlglot annotates the schema as dict[str, object], and a dict is invariant in its values.
    return MappingSchema(cast(dict[str, object], nested), dialect=DIALECT)


def _name_unnamed(query: exp.Expr) -> dict[str, exp.Expression]:
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


# sqlglot's messages when it cannot resolve a name (optimizer/qualify_columns.py and resolver.py): read from the
# text, as an OptimizeError carries nothing else (a ParseError's ``errors`` are read as data, in ``_syntax_error``).
# The same text in every release from 30.8 to 30.30 (read in 30.8, 30.12, 30.20, 30.29 and 30.30; the tests of
# ``_resolution_error``'s messages pass on each release tried).
_UNRESOLVED = re.compile(r"Column '(?P<column>[^']*)' could not be resolved(?: for table: '(?P<table>[^']*)')?")
_UNKNOWN_COLUMN = re.compile(r"Unknown column: (?P<column>\S+)")
_UNKNOWN_TABLE = re.compile(r"Unknown table: (?P<table>\S+)")
_AMBIGUOUS = re.compile(r"Ambiguous column '(?P<column>[^']*)'")


def _resolution_error(message: str, sql: str, query: exp.Expr,
                      schema: Mapping[str, Sequence[tuple[str, str]]], default_database: str) -> ViewSqlError:
    """A user-facing error for sqlglot's failure to resolve a name, placed at the name's first use.

    sqlglot names the column; what is wrong with it is worked out here from the scope of each use,
    so that the message says whether the table it names lacks it, no table has it, or several do.
    """
    if match := _UNKNOWN_TABLE.match(message):
        table = match["table"]
        return ViewSqlError(f"unknown table or alias '{table}'", *_first_column(sql, query, None, table))
    match = _UNRESOLVED.match(message) or _UNKNOWN_COLUMN.match(message) or _AMBIGUOUS.match(message)
    if match is None:
        return ViewSqlError(f"cannot resolve the query: {message}")
    column = match["column"].lower()
    table = match.groupdict().get("table")
    uses = sorted(((_position(sql, node), scope, node) for scope in traverse_scope(query) for node in scope.columns
                   if node.name.lower() == column and (table is None or node.table.lower() == table.lower())),
                  key=lambda use: use[0])
    for position, scope, node in uses:
        try:
            problem = _column_problem(scope, node, schema, default_database)
        except OptimizeError:  # a scope sqlglot cannot list the sources of: say what it said
            problem = None
        if problem:
            return ViewSqlError(problem, *position)
    return ViewSqlError(f"cannot resolve column '{column}' here: {message}", *(uses[0][0] if uses else (1, 1)))


_Named = tuple[str, "exp.Table | Scope"]  # a source a query reads: its alias, and the table or query


def _column_problem(scope: Scope, node: exp.Column, schema: Mapping[str, Sequence[tuple[str, str]]],
                    default_database: str) -> str | None:
    """What is wrong with the column ``node`` in ``scope``: None when nothing shows."""
    name = node.name.lower()
    levels = list(_visible_sources(scope))
    if node.table:
        named = next((level[node.table.lower()] for level in levels if node.table.lower() in level), None)
        if named is None:
            aliases = ", ".join(alias for level in levels for alias, _ in level.values()) or "no table"
            return f"unknown table or alias '{node.table}' (this query reads: {aliases})"
        columns = _columns_of(named[1], schema, default_database)
        if columns is None or name in columns:
            return None
        return f"{_describe(named, default_database)} has no column '{name}'{_nearest(name, columns, 'its columns')}"
    for level in levels:
        having = [_describe(source, default_database) for source in level.values()
                  if name in (_columns_of(source[1], schema, default_database) or ())]
        if len(having) > 1:
            return (f"ambiguous column '{name}': {' and '.join(having)} {'both' if len(having) == 2 else 'all'} have "
                    "it; qualify it with the alias of the one you mean")
        if having:
            return None
    everything = [column for level in levels for _, source in level.values()
                  for column in _columns_of(source, schema, default_database) or ()]
    read = ", ".join(_describe(source, default_database) for level in levels for source in level.values())
    hint = _nearest(name, everything, f"columns of {read}")
    return f"unknown column '{name}': no table or subquery this query reads has it{hint}"


def _visible_sources(scope: Scope | None) -> Iterator[dict[str, _Named]]:
    """The sources a column in ``scope`` can name, by lower-case alias: its own (a LATERAL subquery's
    include those before it), then, for a subquery in an expression, which may read the columns of
    the query around it, those of the scopes around it."""
    while scope is not None:
        sources = {alias: source for alias, (_, source) in scope.selected_sources.items()} | scope.lateral_sources
        yield {alias.lower(): (alias, source) for alias, source in sources.items()}
        scope = scope.parent if scope.is_subquery else None


def _columns_of(source: exp.Table | Scope, schema: Mapping[str, Sequence[tuple[str, str]]],
                default_database: str) -> list[str] | None:
    """The column names a source has, lower-case; None when they are not known here (``SELECT *``)."""
    if is_table(source):
        return [column.lower() for column, _ in schema.get(table_key(source, default_database), ())]
    if isinstance(source, Scope) and isinstance(source.expression, exp.Query):
        names = [name.lower() for name in source.expression.named_selects]
        return None if "*" in names else names
    return None


def _describe(source: _Named, default_database: str) -> str:
    alias, found = source
    if is_table(found):
        key = table_key(found, default_database)
        return key if alias.lower() == found.name.lower() else f"{key} as {alias}"
    if isinstance(found, Scope):
        return f"the {'CTE' if found.is_cte else 'subquery'} {alias}"
    return alias


def _nearest(name: str, names: list[str], otherwise: str) -> str:
    """A hint after an unknown name: the nearest known name, else ``otherwise`` and up to 20 names."""
    close = difflib.get_close_matches(name, names, n=1)
    if close:
        return f"; did you mean '{close[0]}'?"
    shown = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "")
    return f" ({otherwise}: {shown})" if names else ""


def _first_column(sql: str, query: exp.Expr, column: str | None, table: str | None) -> tuple[int, int]:
    """The position of the first column reference with this name and/or table qualifier."""
    positions = [
        _position(sql, node)
        for node in query.find_all(exp.Column)
        if (column is None or node.name.lower() == column) and (table is None or node.table.lower() == table.lower())
    ]
    return min(positions, default=(1, 1))


def _position(sql: str, node: exp.Expr) -> tuple[int, int]:
    """The 1-based line and column where the node's text starts (1, 1 when sqlglot kept none)."""
    starts = [n.meta["start"] for n in node.walk() if "start" in n.meta]
    return line_col(sql, min(starts)) if starts else (1, 1)


def _token_error(sql: str) -> ViewSqlError:
    """Why the SQL cannot be split into tokens, at the comment, string or quoted name left open.

    sqlglot's message quotes the SQL up to where it gave up, which is the end of the text, not the
    opening the reader must close (and would echo the user's text unescaped).
    """
    opened = _unclosed(sql)
    if opened is None:
        return ViewSqlError("SQL syntax error: the SQL cannot be split into tokens")
    offset, what, closing = opened
    return ViewSqlError(f"SQL syntax error: {what} opened here is never closed: end it with {closing}",
                        *line_col(sql, offset))


def _unclosed(sql: str) -> tuple[int, str, str] | None:
    """The offset of the first comment, string or back-quoted name that runs to the end of ``sql``.

    Spark's lexical rules: ``--`` comments end at a newline, ``/* */`` comments nest, strings in ``'``
    or ``"`` escape with a backslash, and a back-quoted name doubles its back-quote.
    """
    i, end = 0, len(sql)
    while i < end:
        if sql.startswith("--", i):
            newline = sql.find("\n", i)
            i = end if newline < 0 else newline + 1
        elif sql.startswith("/*", i):
            start, depth, i = i, 1, i + 2
            while i < end and depth:
                if sql.startswith(("/*", "*/"), i):
                    depth += 1 if sql[i] == "/" else -1
                    i += 2
                else:
                    i += 1
            if depth:
                return start, "a comment (/*)", "*/"
        elif sql[i] in "'\"`":
            start, quote, i = i, sql[i], i + 1
            while i < end:
                if sql.startswith("``", i) if quote == "`" else sql[i] == "\\":
                    i += 2  # a doubled back-quote, or a backslash and the character it escapes
                elif sql[i] == quote:
                    break
                else:
                    i += 1
            if i >= end:
                return start, f"a {'quoted name' if quote == '`' else 'string'} ({quote})", quote
            i += 1
        else:
            i += 1
    return None


def line_col(sql: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of a character offset."""
    line_start = sql.rfind("\n", 0, offset) + 1
    return sql.count("\n", 0, offset) + 1, offset - line_start + 1


def _first_write_keyword(sql: str) -> int:
    """The offset of the first keyword that writes or defines something (0 when none is found)."""
    tokens = DIALECT.tokenize(sql)
    return next((t.start for t in tokens if t.token_type in _WRITE_KEYWORDS), 0)


def _statement_starts(sql: str) -> list[int]:
    """The offset of the first token of each non-empty statement."""
    starts: list[int] = []
    statement_open = False
    for token in DIALECT.tokenize(sql):
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


@_within_python_stack()
def with_tables_renamed(sql: str, default_database: str, names: Mapping[str, str]) -> str | None:
    """``sql`` reading ``names[key]`` (an unqualified name) wherever it reads the table or view ``key``.

    CTE names and table functions are left alone, as is anything not in ``names``; the result is
    written back by sqlglot in Spark's dialect. A renamed table keeps its alias or its own name, so
    columns qualified with either still resolve; ``None`` when the query qualifies a column with a
    database as well (``db.t.c``), which no renaming can keep.
    """
    query = parse_select(sql).copy()  # changed below
    if any(column.args.get("db") for column in query.find_all(exp.Column)):
        return None
    for key, source in _table_references(query, default_database):
        if key in names:
            renamed = exp.Table(this=exp.to_identifier(names[key], quoted=True))
            source.replace(exp.alias_(renamed, source.alias_or_name, table=True))
    return query.sql(dialect=DIALECT, normalize_functions=False)


def with_databases_renamed(sql: str, names: Mapping[str, str]) -> str:
    """``sql`` with each database it names (``db.t``, ``db.t.c``) that ``names`` maps renamed, in place.

    Only the database names change: the rest of the text stays as written (the positions sqlglot
    keeps for each identifier say where), and a quoted name stays quoted. Unqualified names are
    left alone, as they resolve against the view's own database, which the caller renames.
    """
    query = parse_select(sql)
    spans = []
    for node in (*query.find_all(exp.Table), *query.find_all(exp.Column)):
        database = node.args.get("db")
        if isinstance(database, exp.Identifier) and database.name.lower() in names:
            renamed = names[database.name.lower()]
            spans.append((database.meta["start"], database.meta["end"] + 1,
                          ident(renamed) if database.quoted else renamed))
    for start, end, text in sorted(spans, reverse=True):
        sql = sql[:start] + text + sql[end:]
    return sql


# Words Hive's parser refuses as a bare identifier (``SELECT id, date FROM t``): every keyword of the
# HiveLexer of the Hive 2.3.10 in the pyspark jars that its ParseDriver refuses as a column name
# (tests/test_apply_spark.py derives them from the lexer and checks this holds them all), with those
# Hive 3 and 4 reserve besides. Hive reads a view's stored text with that parser, so schemaflow
# stores them back-quoted. (true, false, null, current_date and current_timestamp are refused too,
# but as a bare word each is a literal or a function, never a name.)
HIVE_RESERVED = frozenset("""
    all alter and array as authorization between bigint binary boolean both by cache case cast char column
    commit conf constraint create cross cube current cursor database date dayofweek decimal delete describe
    distinct double drop else end except exchange exists extended external extract fetch float floor following
    for foreign from full function grant group grouping having if import in inner insert int integer intersect
    interval into is join lateral left less like local macro map merge minus more none not numeric of on only or
    order out outer over partialscan partition percent preceding precision preserve primary procedure range
    reads reduce references regexp revoke right rlike rollback rollup row rows select set smallint start sync
    table tablesample then time timestamp to transform trigger truncate unbounded union uniquejoin update user
    using values varchar views when where window with
    """.split())


def hive_readable(sql: str, default_database: str, stars: Sequence[StarColumns] = ()) -> str:
    """``sql`` as Hive can read it back from a view's stored text, otherwise as written (made once per text in a
    process: ``plan --base`` stores the base's views and compares the head's with them).

    Hive expands a view's stored text itself, from whatever database is current: each table or view
    read by an unqualified name gets ``default_database`` (back-quoted) before its name, and an
    unaliased table keeps its name as alias. Hive's parser refuses its reserved words as bare names
    where Spark's accepts them: each such identifier is back-quoted. And Hive expands each ``*`` again
    at every read, so a column added to a table later shows in Hive and not in Spark: each of
    ``stars`` (``ViewAnalysis.stars``) is replaced by the columns it selected when the view was made.
    """
    return _hive_readable(sql, default_database, tuple(stars))


@lru_cache(maxsize=PARSED_KEPT)
def _hive_readable(sql: str, default_database: str, stars: tuple[StarColumns, ...]) -> str:
    query = parse_select(sql)
    # (start, end, text): replace sql[start:end] by text; an insertion has end == start.
    edits = [(table.this.meta["start"], table.this.meta["start"], ident(default_database) + ".")
             for _, table in _table_references(query, default_database) if not table.args.get("db")]
    edits += [(start, end, text) for start, end, text in stars]
    edits += [(node.meta["start"], node.meta["end"] + 1, ident(node.name)) for node in query.find_all(exp.Identifier)
              if not node.quoted and node.name.lower() in HIVE_RESERVED and "start" in node.meta
              and not any(start <= node.meta["start"] < end for start, end, _ in stars)]
    # From the end, so earlier offsets hold; at one offset, the name is quoted before the database goes before it.
    for start, end, text in sorted(set(edits), reverse=True):
        sql = sql[:start] + text + sql[end:]
    return sql
