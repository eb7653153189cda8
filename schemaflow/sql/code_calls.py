"""Which calls of a view's SQL are code: what Spark would run that is neither its own nor declared by the project.

A view may call, without the operator's approval, what Spark resolves to its own code: a built-in
function of the release the project runs (``sql.spark_functions``; a table function where the query
reads FROM one), and the functions the project declares (``functions:`` in schemaflow.yaml, whose
declaration, class and resources, the operator approved once). Everything else is code
(``Reach``): a script transformation (``TRANSFORM(...) USING 'command'``) runs a command; a Java call by
name (``reflect``) runs any static method; a few built-ins load the class or read the file an argument
names (``from_protobuf``); and any other name is a function Spark looks up in the metastore, a qualified one as written (``db.f``), an unqualified one in the view's database, whose
entry names the class to load and the jars to fetch for it. The list is an allow-list: a name nobody
listed is code, and a misspelt built-in is no exception.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from collections.abc import Collection

from schemaflow.sql.function_calls import Call, Place, function_calls
from schemaflow.spark_version import SparkVersion
from schemaflow.sql.spark_functions import GRAMMAR_FUNCTIONS, JAVA_FUNCTIONS, NAMING_FUNCTIONS, builtins

SESSION_CATALOG = "spark_catalog"  # the catalog Spark's own metastore functions are in (spark_catalog.db.f)
# Said of SQL sqlglot cannot read: nothing tells what it calls, so it is code.
UNREADABLE = "holds SQL schemaflow cannot read (what it calls is not known)"


class Reach(StrEnum):
    """What a call runs."""

    BUILTIN = "built in"
    DECLARED = "declared"         # a function schemaflow.yaml declares
    JAVA = "Java by name"         # reflect, java_method, try_reflect
    NAMING = "loads what it names"  # from_protobuf, from_avro, ...: a class or file an argument names
    METASTORE = "metastore"       # a function Spark looks up in the metastore
    SCRIPT = "script"             # TRANSFORM(...) USING 'command'


@dataclass(frozen=True)
class Resolved:
    """A call and what it reaches: ``function`` is the name Spark resolves (``upper``, ``retail.f``)."""

    call: Call
    reach: Reach
    function: str

    @property
    def code(self) -> bool:
        return self.reach not in (Reach.BUILTIN, Reach.DECLARED)


@dataclass(frozen=True)
class Allowed:
    """What a project's views call freely: the built-ins of its Spark ``release`` (read when a call needs them), and
    the functions it declares (``db.name``, lower case)."""

    release: SparkVersion
    declared: frozenset[str] = field(default_factory=frozenset)

    def resolve(self, call: Call, database: str) -> Resolved:
        """What ``call``, in a view of ``database``, reaches."""
        parts = tuple(part.lower() for part in call.parts)
        if call.place == Place.SCRIPT:
            return Resolved(call, Reach.SCRIPT, "TRANSFORM ... USING")
        if len(parts) == 1:
            name = parts[0]
            if name in JAVA_FUNCTIONS:
                return Resolved(call, Reach.JAVA, name)
            if name in NAMING_FUNCTIONS:
                return Resolved(call, Reach.NAMING, name)
            if name in GRAMMAR_FUNCTIONS or self._built_in(name, call.place):
                return Resolved(call, Reach.BUILTIN, name)
            function = f"{database.lower()}.{name}"
        elif len(parts) == 3 and parts[0] == SESSION_CATALOG:
            function = ".".join(parts[1:])
        else:
            function = ".".join(parts)
        return Resolved(call, Reach.DECLARED if function in self.declared else Reach.METASTORE, function)

    def _built_in(self, name: str, place: Place) -> bool:
        known = builtins(self.release)
        expression, table = name in known.functions, name in known.table_functions
        return {Place.EXPRESSION: expression, Place.TABLE: table, Place.EITHER: expression and table}.get(place, False)


def resolved_calls(sql: str, database: str, allowed: Allowed) -> tuple[Resolved, ...]:
    """Each call of the query in ``sql`` (a view's, or a CREATE VIEW's) in a view of ``database``, with what it
    reaches; raises ``ViewSqlError`` where sqlglot cannot read the statement."""
    return tuple(allowed.resolve(call, database) for call in function_calls(sql))


def code_calls(sql: str, database: str, allowed: Allowed) -> tuple[Resolved, ...]:
    """The calls among ``resolved_calls`` that are code."""
    return tuple(found for found in resolved_calls(sql, database, allowed) if found.code)


def declared_calls(sql: str, database: str, allowed: Allowed) -> frozenset[str]:
    """The declared functions the query in ``sql`` calls."""
    return frozenset(found.function for found in resolved_calls(sql, database, allowed)
                     if found.reach == Reach.DECLARED)


def described(found: Collection[Resolved]) -> str:
    """What code calls run, in words: ``calls Java by name (reflect)``, and the others joined by ``and``."""
    def names(reach: Reach) -> str:
        return ", ".join(sorted({f.function for f in found if f.reach == reach}))
    parts = [what for reach, what in [
        (Reach.JAVA, f"calls Java by name ({names(Reach.JAVA)})"),
        (Reach.NAMING, f"calls built-ins that load the class or read the file an argument names ({names(Reach.NAMING)})"),
        (Reach.METASTORE, f"calls metastore functions ({names(Reach.METASTORE)}: the class and jars their entries name)"),
        (Reach.SCRIPT, "runs a command (TRANSFORM ... USING)")] if any(f.reach == reach for f in found)]
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
