"""The functions a view's SQL calls, by the names Spark resolves, and the commands it runs.

Spark resolves a function by the name as written: ``upper(x)`` is built in, ``db.f(x)`` and an
unqualified name it does not know as built in are looked up in the metastore. So each call is read
with its name as the text writes it, part by part (back-quoted parts unquoted, case kept), from the
tokens: every name, or chain of names joined by dots, followed by an opening parenthesis. That finds
a call wherever it is and whatever sqlglot makes of it (sqlglot parses ``json_extract(...)`` as a
function of its own, ``string_agg(...)`` as another name's, ``transform(a, x -> ...)`` without a
position): none is missed for being parsed as another function. A string or a column named like a
function is no call: it is not a name followed by a parenthesis.

The parsed tree says what else a name before a parenthesis is: a table function read FROM (Spark keeps
those apart: ``Place.TABLE``), or the name of a CTE or an alias given column names (``WITH c (a, b)``,
``AS t(a, b)``, the view's own ``v (a, b)``). A keyword sqlglot parses as a call is a call. One it
parses otherwise is read as Spark's grammar reads it there: syntax after an operand, where it goes on
with a clause (``a IN (``, ``) OVER (``, ``t USING (``), a type after ``AS`` or ``::``
(``DECIMAL(10, 2)``), or one of the few keywords Spark reads as syntax at the start of an expression
too (``SELECT DISTINCT (a)``, ``GROUP BY ROLLUP (a)``); and a call anywhere else, as Spark reads it
(``SELECT interval(x)`` calls a function ``interval``, which Spark looks up in the metastore).
``TRANSFORM(...) USING 'command'``, Spark's script transformation, runs the command for every row
read: it is a ``SCRIPT`` of its own (its MAP and REDUCE forms do not parse: ``sql.views`` refuses them).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from itertools import pairwise

from sqlglot import exp
from sqlglot.parser import Parser
from sqlglot.tokens import Token, TokenType

from schemaflow.sql.views import PARSED_KEPT, line_col, parse_statement

# Names sqlglot tokenizes as names and Spark's grammar reads as syntax before a parenthesis: TRY_CAST(x AS t), and
# the GROUP of an aggregate's WITHIN GROUP (ORDER BY ...). (CAST is one too, and a built-in function besides.)
_SYNTAX_NAMES = frozenset({"try_cast", "group"})
_NAMES = (TokenType.VAR, TokenType.IDENTIFIER)
# What ends an operand: a keyword after one, before a parenthesis, continues a clause (a IN (, t USING (, ) OVER (,
# c AS (, 'cmd' AS (, * FROM (), where at the start of an expression Spark reads most keywords as a function's name
# (SELECT interval(x) calls a function interval; so do as(x), into(x), merge(x)).
_OPERAND_ENDS = frozenset({*_NAMES, TokenType.NUMBER, TokenType.STRING, TokenType.R_PAREN, TokenType.R_BRACKET,
                           TokenType.R_BRACE, TokenType.STAR, TokenType.NULL, TokenType.TRUE, TokenType.FALSE})
# Keywords Spark's grammar reads as syntax before a parenthesis at the start of an expression too, after what comes
# before them there: SELECT ALL (x), SELECT DISTINCT (x), GROUP BY ROLLUP (a), CUBE (a), LEFT JOIN (subquery),
# FROM VALUES (1), FROM t, LATERAL (subquery), (SELECT ...), a LIKE ALL (...); but IN (VALUES (1)) calls a function
# values. FROM is syntax wherever (IS DISTINCT FROM (x), EXTRACT(YEAR FROM (d))).
# (tests/test_view_functions_spark.py asks Spark's parser.)
_SYNTAX_AFTER = {
    TokenType.ALL: frozenset({TokenType.SELECT, TokenType.UNION, TokenType.EXCEPT, TokenType.INTERSECT,
                              TokenType.LIKE, TokenType.ILIKE}),
    TokenType.DISTINCT: frozenset({TokenType.SELECT, TokenType.UNION, TokenType.EXCEPT, TokenType.INTERSECT,
                                   TokenType.L_PAREN}),
    TokenType.ROLLUP: frozenset({TokenType.GROUP_BY, TokenType.COMMA}),
    TokenType.CUBE: frozenset({TokenType.GROUP_BY, TokenType.COMMA}),
    TokenType.JOIN: frozenset({TokenType.LEFT, TokenType.RIGHT, TokenType.INNER, TokenType.OUTER, TokenType.CROSS,
                               TokenType.FULL, TokenType.SEMI, TokenType.ANTI, TokenType.NATURAL}),
    TokenType.VALUES: frozenset({TokenType.FROM, TokenType.COMMA, TokenType.JOIN}),
    TokenType.LATERAL: frozenset({TokenType.COMMA, TokenType.JOIN}),
    TokenType.SELECT: frozenset({TokenType.L_PAREN, TokenType.UNION, TokenType.EXCEPT, TokenType.INTERSECT}),
}
_NOT_NAMES = frozenset({TokenType.STRING, TokenType.NUMBER, TokenType.NATIONAL_STRING, TokenType.RAW_STRING,
                        TokenType.BIT_STRING, TokenType.HEX_STRING, TokenType.BYTE_STRING})


class Place(StrEnum):
    """Where a call is, which decides the registry Spark resolves it in."""

    EXPRESSION = "expression"  # a function of an expression (and a LATERAL VIEW's generator)
    TABLE = "table"            # a table-valued function read FROM
    EITHER = "either"          # one of the two: sqlglot left the position of a function read FROM unknown
    SCRIPT = "script"          # TRANSFORM(...) USING 'command'


@dataclass(frozen=True)
class Call:
    """A function called by name (``parts``, as written, unquoted), or a script run, at a 1-based line and column."""

    parts: tuple[str, ...]
    place: Place
    line: int
    col: int

    @property
    def name(self) -> str:
        """The name as Spark reads it, lower case: ``db.f``, ``upper``."""
        return ".".join(self.parts).lower()


@lru_cache(maxsize=PARSED_KEPT)
def function_calls(sql: str) -> tuple[Call, ...]:
    """Every call and script of the query of the one statement in ``sql`` (a view's query, or the query of a CREATE
    VIEW), in the order written; none for a statement without a query. Raises ``ViewSqlError`` where sqlglot
    cannot read the statement."""
    if "(" not in sql:
        return ()
    tree, every = parse_statement(sql)
    query = tree if isinstance(tree, exp.Query) else tree.expression if isinstance(tree, exp.Create) else None
    if not isinstance(query, exp.Query):
        return ()
    tokens = list(every[_query_start(every) if query is not tree else 0:])
    called: dict[int, exp.Expr] = {}
    named: set[int] = set()
    unplaced = False
    scripts = []
    for node in tree.walk():
        if isinstance(node, exp.Func) and "start" in node.meta:
            called[node.meta["start"]] = node
        elif isinstance(node, exp.QueryTransform):
            scripts.append(Call(("transform",), Place.SCRIPT, *line_col(sql, _keyword_before(tokens, node, "TRANSFORM"))))
        elif (name := _given_columns(node)) is not None and "start" in name.meta:
            named.add(name.meta["start"])
        elif _reads_from(node) and isinstance(node.this, exp.Func) and "start" not in node.this.meta:
            unplaced = True
    found = []
    for index, (token, after) in enumerate(pairwise(tokens)):
        if after.token_type != TokenType.L_PAREN or not _is_name(token):
            continue
        first = _chain_start(tokens, index)
        parts = tuple(t.text for t in tokens[first:index + 1:2])
        function = called.get(token.start)
        if function is not None:
            place = Place.TABLE if _read_from(function) else Place.EXPRESSION
        elif token.start in named or (len(parts) == 1 and _syntax(token, tokens[index - 1] if index else None)):
            continue  # syntax, or the name of a CTE, an alias or the view given column names
        else:
            place = Place.EITHER if unplaced else Place.EXPRESSION
        call = Call(parts, place, *line_col(sql, tokens[first].start))
        if not any((script.line, script.col) == (call.line, call.col) for script in scripts):  # TRANSFORM(...) USING
            found.append(call)
    return tuple(sorted(found + scripts, key=lambda call: (call.line, call.col)))


def _query_start(tokens: tuple[Token, ...]) -> int:
    """The index of a CREATE's query: the first token after its AS (the first outside parentheses)."""
    depth = 0
    for index, token in enumerate(tokens):
        depth += (token.token_type == TokenType.L_PAREN) - (token.token_type == TokenType.R_PAREN)
        if depth == 0 and token.token_type == TokenType.ALIAS:
            return index + 1
    return len(tokens)


def _syntax(token: Token, before: Token | None) -> bool:
    """Whether ``token``, before a parenthesis that sqlglot does not parse as its call, is syntax in Spark's grammar
    too, after ``before``."""
    if token.token_type in _NAMES:
        return token.text.lower() in _SYNTAX_NAMES
    if before is None:
        return True  # the statement's first word: no call starts a statement
    return (token.token_type == TokenType.FROM or before.token_type in _OPERAND_ENDS
            or (token.token_type in Parser.TYPE_TOKENS and before.token_type in (TokenType.ALIAS, TokenType.DCOLON))
            or before.token_type in _SYNTAX_AFTER.get(token.token_type, ()))


def _is_name(token: Token) -> bool:
    """A token that can name a function: a name, a back-quoted name, or a keyword Spark takes as one."""
    return token.token_type in _NAMES or (token.token_type not in _NOT_NAMES and token.text.isidentifier())


def _chain_start(tokens: list[Token], last: int) -> int:
    """The index of the first name of the dotted chain that ends at ``tokens[last]``."""
    first = last
    while first >= 2 and tokens[first - 1].token_type == TokenType.DOT and _is_name(tokens[first - 2]):
        first -= 2
    return first


def _reads_from(node: exp.Expr) -> bool:
    """A table read FROM (or joined), or a LATERAL of a function (not a LATERAL VIEW): where a function is a table's."""
    return isinstance(node, exp.Table) or (isinstance(node, exp.Lateral) and not node.args.get("view"))


def _read_from(node: exp.Expr) -> bool:
    """Whether the function ``node`` is what a FROM clause reads (``FROM range(10)``, ``FROM db.f(1)``)."""
    parent = node.parent
    while isinstance(parent, exp.Dot):
        node, parent = parent, parent.parent
    return parent is not None and _reads_from(parent) and parent.this is node


def _given_columns(node: exp.Expr) -> exp.Identifier | None:
    """The name ``node`` gives column names after, as ``name (a, b)``: a CTE's or an alias's (``exp.TableAlias``), or
    the view's in its CREATE (``exp.Schema``); None for another node."""
    named = node.this if isinstance(node, exp.Schema) else node if isinstance(node, exp.TableAlias) else None
    name = named.this if named is not None else None
    return name if isinstance(name, exp.Identifier) else None


def _keyword_before(tokens: list[Token], node: exp.Expr, keyword: str) -> int:
    """The offset of the last ``keyword`` token before the first position ``node``'s tree holds (0: none)."""
    end = min((n.meta["start"] for n in node.walk() if "start" in n.meta), default=tokens[-1].end + 1)
    return max((t.start for t in tokens if t.text.upper() == keyword and t.start < end), default=0)
