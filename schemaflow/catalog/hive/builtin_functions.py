"""Spark's built-in functions as a running Spark lists them: the registries its analyzer resolves a name in.

Spark keeps two: the functions a query calls in an expression (scalar, aggregate, window and generator
functions: ``FunctionRegistry.builtin``) and the table-valued functions a query reads FROM (``range``,
``explode``, ...: ``TableFunctionRegistry.builtin``). A name in neither is looked up in the metastore.
``sql.spark_functions`` keeps what these list for each Spark release schemaflow supports, as package data
that ``.ci/spark_functions.py`` writes; tests/test_view_functions_spark.py checks it against the installed
release's.
"""
from __future__ import annotations

from typing import Any


def registered(spark: Any) -> dict[str, list[str]]:
    """The names in ``spark``'s built-in registries, each sorted: ``functions`` and ``table_functions``."""
    analysis = spark.sparkContext._jvm.org.apache.spark.sql.catalyst.analysis
    return {"functions": _names(analysis.FunctionRegistry.builtin()),
            "table_functions": _names(analysis.TableFunctionRegistry.builtin())}


def _names(registry: Any) -> list[str]:
    listed = registry.listFunction().iterator()
    names = set()
    while listed.hasNext():
        names.add(str(listed.next().funcName()))
    return sorted(names)
