"""Spark's built-in functions, per release: the names a view's SQL may call without the operator's approval.

Spark resolves a function a query calls by the name written: an unqualified name it knows as built in is
its own code, and any other name (``db.f``, or ``f`` not built in, which Spark looks for in the view's
database) is looked up in the metastore, whose function names a class and the jars to fetch for it: code
of whoever registered it, loaded in whichever engine reads the view. So the names a view may call freely
are the built-in ones of the Spark release the project runs, kept here per release as Spark's registries
list them (``catalog.hive.builtin_functions``; written by ``.ci/spark_functions.py`` into
``spark_functions.json``, checked against the installed release by tests/test_view_functions_spark.py),
less those that are code although built in (``CODE_FUNCTIONS``).

Spark keeps the table-valued functions a query reads FROM (``range``, ``explode``, ...) in a registry of
their own: a name in a FROM clause is built in only if it is there (``FROM upper('x')`` looks for a table
function ``upper`` in the metastore).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from collections.abc import Mapping, Sequence

from schemaflow.errors import SchemaflowError
from schemaflow.spark_version import SparkVersion, release_text, spark_name

DATA = "spark_functions.json"
# Built in, and code all the same: they call any static Java method by name, in whichever engine reads the view
# (reflect('java.lang.System', 'getenv', 'AWS_SECRET_ACCESS_KEY') returns that engine's secret).
JAVA_FUNCTIONS = frozenset({"java_method", "reflect", "try_reflect"})
# Built in from Spark 4.0, and loading what an argument names where the engine has their connector: Protobuf's load
# the message class named (Class.forName runs its static initializer) or read the descriptor file at a path; Avro's
# parse a schema whose options name a file to read (avroSchemaUrl).
NAMING_FUNCTIONS = frozenset({"from_protobuf", "to_protobuf", "from_avro", "to_avro", "schema_of_avro"})
CODE_FUNCTIONS = JAVA_FUNCTIONS | NAMING_FUNCTIONS
# Names Spark's grammar reads as syntax of its own before a parenthesis, in every release (TIMESTAMPADD(HOUR, 1, t)):
# never looked up as functions.
GRAMMAR_FUNCTIONS = frozenset({"timestampadd", "timestampdiff", "timediff"})


@dataclass(frozen=True)
class Builtins:
    """The functions one Spark release has built in (lower case), less ``CODE_FUNCTIONS``."""

    release: SparkVersion
    functions: frozenset[str]
    table_functions: frozenset[str]


def allowed(registered: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """What the package data keeps of a release's registries (``catalog.hive.builtin_functions.registered``)."""
    return {kind: sorted(name.lower() for name in names if name.lower() not in CODE_FUNCTIONS)
            for kind, names in sorted(registered.items())}


@cache
def _data() -> dict[str, dict[str, list[str]]]:
    data: dict[str, dict[str, list[str]]] = json.loads(files("schemaflow.sql").joinpath(DATA).read_text())
    return data


def releases() -> tuple[SparkVersion, ...]:
    """The releases whose built-in functions are known."""
    return tuple(sorted(tuple(int(part) for part in text.split(".")) for text in _data()))  # type: ignore[misc]


@cache
def builtins(release: SparkVersion) -> Builtins:
    """The built-in functions of ``release``; raises ``SchemaflowError`` for a release schemaflow does not know."""
    data = _data().get(release_text(release))
    if data is None:
        known = ", ".join(release_text(r) for r in releases())
        raise SchemaflowError(f"{spark_name(release)}: schemaflow knows the built-in functions of Spark {known}, "
                              "which it needs to tell a view's calls of them from code it must not run unapproved: "
                              "declare one of those in schemaflow.yaml (spark.release), or install its pyspark")
    return Builtins(release, frozenset(data["functions"]), frozenset(data["table_functions"]))
