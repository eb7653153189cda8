"""Every statement builder of ``sql`` with hostile names and texts, read back by schemaflow's Spark dialect.

Each case builds one statement from names and strings that hold back-quotes, quotes, backslashes,
spaces, unicode, semicolons, ``--`` and ``${``, parses it, and checks that it is one statement of the
expected kind whose every identifier and string literal is one that went in, unchanged. A public
function added to a builder module fails ``test_every_builder_has_a_case`` until it has a case here
(or is listed as no statement builder, with why).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial
from types import ModuleType
from typing import NamedTuple

import pytest
import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from schemaflow.model import Bucketing, Column, Table, View
from schemaflow.sql import ddl, session
from schemaflow.sql.dialect import DIALECT

NAMES = ("a`b", "it's", 'say "x"', "back\\slash", "two words", "é✓名", "semi;colon", "dash--dash", "${claim}", "``")
TEXT = "it's `x`; \\ \\n \n\r\t -- ${claim} /* é✓名 */ \"q\""
TOKEN = 'claim:{"run":"r\'1"}'  # a run's claim, as the executor fills it in
MODULES = (ddl, session)
# Public functions of the builder modules that build no statement: each is covered by a builder's case.
NOT_BUILDERS = {
    ddl.column_def: "a column of CREATE TABLE and ADD COLUMNS",
    ddl.stores_view: "a comparison with view_text",
    ddl.fill_claim: "fills CREATE's claim: parsed filled in the CREATE cases",
}


class Case(NamedTuple):
    sql: str
    kind: type[exp.Expression]
    names: set[str]     # every identifier in the statement
    strings: set[str]   # every string literal in it


def _table(format_: str, **kw: object) -> Table:
    data = (Column(NAMES[2], "int", TEXT), Column(NAMES[3], "string"))
    return Table(NAMES[0], NAMES[1], data, (Column(NAMES[4], "string", TEXT),), comment=TEXT, format=format_,
                 location=TEXT, serde_properties={NAMES[5]: TEXT}, bucketing=Bucketing((NAMES[2],), 4, (NAMES[3],)),
                 **kw)  # type: ignore[arg-type]


def _hive_table() -> Case:
    sql = ddl.fill_claim(ddl.create_table(_table("textfile", external=True)), TOKEN)
    serde = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"
    return Case(sql, exp.Create, set(NAMES[:5]), {TEXT, NAMES[5], serde, "schemaflow.version", TOKEN})


def _data_source_table() -> Case:
    sql = ddl.fill_claim(ddl.create_table(_table("csv", data_source=True)), TOKEN)
    return Case(sql, exp.Create, set(NAMES[:5]), {TEXT, NAMES[5], "schemaflow.version", TOKEN})


def _delta_table() -> Case:
    """A Delta table's CREATE: its properties written beside the claim."""
    table = Table(NAMES[0], NAMES[1], (Column(NAMES[2], "int", TEXT),), (Column(NAMES[4], "string"),), comment=TEXT,
                  format="delta", data_source=True, properties={NAMES[5]: TEXT})
    sql = ddl.fill_claim(ddl.create_table(table, table.properties), TOKEN)
    return Case(sql, exp.Create, {NAMES[0], NAMES[1], NAMES[2], NAMES[4]}, {TEXT, NAMES[5], "schemaflow.version", TOKEN})


def _view() -> View:
    # Its columns rename its output, so the stored text wraps the SQL in a SELECT that renames it.
    sql = f"SELECT {ddl.ident(NAMES[6])}, {ddl.ident(NAMES[1])} FROM {ddl.ident(NAMES[7])}"
    return View(NAMES[0], NAMES[8], sql, (Column(NAMES[9], comment=TEXT), Column(NAMES[1])), comment=TEXT,
                output=(NAMES[6], NAMES[1]))


def _created_view() -> Case:
    sql = ddl.fill_claim(ddl.create_view(_view(), replace=True), TOKEN)
    return Case(sql, exp.Create, {NAMES[i] for i in (0, 1, 6, 7, 8, 9)}, {TEXT, "schemaflow.version", TOKEN})


def _dropped(kind: str) -> Case:
    return Case(ddl.drop(kind, f"{NAMES[5]}.{NAMES[3]}"), exp.Drop, {NAMES[5], NAMES[3]}, set())


CASES: dict[Callable[..., str], list[Callable[[], Case]]] = {
    ddl.create_table: [_hive_table, _data_source_table, _delta_table],
    ddl.create_view: [_created_view],
    ddl.view_text: [lambda: Case(ddl.view_text(_view()), exp.Select, {NAMES[i] for i in (0, 1, 6, 7, 8, 9)}, set())],
    ddl.add_columns: [lambda: Case(ddl.add_columns(f"{NAMES[0]}.{NAMES[1]}", [Column(NAMES[2], "int", TEXT),
                                                                             Column(NAMES[3], "string")]),
                                   exp.Alter, set(NAMES[:4]), {TEXT})],
    ddl.set_column_comment: [
        lambda: Case(ddl.set_column_comment(f"{NAMES[0]}.{NAMES[6]}", Column(NAMES[7], "int", TEXT)),
                     exp.Alter, {NAMES[0], NAMES[6], NAMES[7]}, {TEXT}),
        lambda: Case(ddl.set_column_comment(f"{NAMES[0]}.{NAMES[6]}", Column(NAMES[7], "int")),
                     exp.Alter, {NAMES[0], NAMES[6], NAMES[7]}, {""}),
    ],
    # COMMENT ON TABLE ... IS NULL is not read back: sqlglot's parser refuses it (measured, sqlglot 30.30).
    ddl.set_table_comment: [lambda: Case(ddl.set_table_comment(f"{NAMES[8]}.{NAMES[9]}", TEXT), exp.Comment,
                                         {NAMES[8], NAMES[9]}, {TEXT})],
    ddl.use_database: [lambda: Case(ddl.use_database(NAMES[6]), exp.Use, {NAMES[6]}, set())],
    ddl.set_table_properties: [lambda: Case(ddl.set_table_properties(f"{NAMES[0]}.{NAMES[1]}", {NAMES[5]: TEXT}),
                                            exp.Alter, {NAMES[0], NAMES[1]}, {NAMES[5], TEXT})],
    ddl.rename_column: [lambda: Case(ddl.rename_column(f"{NAMES[0]}.{NAMES[1]}", NAMES[2], NAMES[3]), exp.Alter,
                                     set(NAMES[:4]), set())],
    ddl.drop_columns: [lambda: Case(ddl.drop_columns(f"{NAMES[0]}.{NAMES[1]}", [NAMES[2], NAMES[8]]), exp.Alter,
                                    {*NAMES[:3], NAMES[8]}, set())],
    ddl.change_column_type: [lambda: Case(ddl.change_column_type(f"{NAMES[0]}.{NAMES[1]}", Column(NAMES[9], "bigint")),
                                          exp.Alter, {NAMES[0], NAMES[1], NAMES[9]}, set())],
    ddl.drop: [partial(_dropped, kind) for kind in ("table", "view")],
    session.refresh_table: [lambda: Case(session.refresh_table(f"{NAMES[0]}.{NAMES[7]}"), exp.Refresh,
                                         {NAMES[0], NAMES[7]}, set())],
    session.temporary_view: [
        lambda: Case(session.temporary_view(NAMES[8], f"SELECT 1 AS {ddl.ident(NAMES[4])}", [NAMES[6]]), exp.Create,
                     {NAMES[8], NAMES[4], NAMES[6]}, set()),
        lambda: Case(session.temporary_view(NAMES[8], "SELECT 1"), exp.Create, {NAMES[8]}, set()),
    ],
    session.typed_nulls: [lambda: Case(session.typed_nulls([Column(NAMES[0], "int"), Column(NAMES[5], "decimal(12,2)")]),
                                       exp.Select, {NAMES[0], NAMES[5]}, set())],
}


# Builders of statements sqlglot does not parse (it reads them as a Command): each is read back token by token, every
# identifier and string as it went in, and no separator between statements.
TOKENIZED: dict[Callable[..., str], list[Callable[[], Case]]] = {
    ddl.unset_table_properties: [lambda: Case(ddl.unset_table_properties(f"{NAMES[0]}.{NAMES[1]}", [NAMES[5], TEXT]),
                                              exp.Command, {NAMES[0], NAMES[1]}, {NAMES[5], TEXT})],
    ddl.move_column: [
        lambda: Case(ddl.move_column(f"{NAMES[0]}.{NAMES[1]}", NAMES[2], NAMES[3]), exp.Command, set(NAMES[:4]), set()),
        lambda: Case(ddl.move_column(f"{NAMES[8]}.{NAMES[9]}", NAMES[6], None), exp.Command,
                     {NAMES[8], NAMES[9], NAMES[6]}, set()),
    ],
}


def _public_functions(module: ModuleType) -> set[Callable[..., object]]:
    return {f for name, f in inspect.getmembers(module, inspect.isfunction)
            if not name.startswith("_") and f.__module__ == module.__name__}


def test_every_builder_has_a_case() -> None:
    public = set().union(*map(_public_functions, MODULES))
    assert public - NOT_BUILDERS.keys() == CASES.keys() | TOKENIZED.keys()


@pytest.mark.parametrize("make", [make for cases in CASES.values() for make in cases],
                         ids=[f"{builder.__name__}-{i}" for builder, cases in CASES.items() for i in range(len(cases))])
def test_a_statement_reads_back_with_every_name_and_string_as_it_went_in(make: Callable[[], Case]) -> None:
    case = make()
    # schemaflow's dialect, not sqlglot's "spark": sqlglot 30.8 to 30.29 read a data-source CREATE's OPTIONS only so.
    statements = sqlglot.parse(case.sql, read=DIALECT)
    assert len(statements) == 1
    tree = statements[0]
    assert isinstance(tree, case.kind), tree
    assert {node.name for node in tree.find_all(exp.Identifier)} == case.names
    assert {node.this for node in tree.find_all(exp.Literal) if node.is_string} == case.strings


@pytest.mark.parametrize("make", [make for cases in TOKENIZED.values() for make in cases],
                         ids=[f"{builder.__name__}-{i}" for builder, cases in TOKENIZED.items() for i in range(len(cases))])
def test_a_statement_sqlglot_does_not_parse_reads_back_token_by_token(make: Callable[[], Case]) -> None:
    case = make()
    tokens = Dialect.get_or_raise(DIALECT).tokenize(case.sql)
    assert not [t for t in tokens if t.token_type is TokenType.SEMICOLON]
    assert {t.text for t in tokens if t.token_type is TokenType.IDENTIFIER} == case.names
    assert {t.text for t in tokens if t.token_type is TokenType.STRING} == case.strings
