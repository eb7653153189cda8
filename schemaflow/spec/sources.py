"""Sources: the tables views read that schemaflow does not manage, like dbt's sources.

A table that another team or a pipeline owns is declared in ``schemas/<db>/<name>.yaml`` like any
object, starting with ``source: db.name`` and giving its columns (and partition columns) as a table
file does. Its database need not be one the project manages. A source is a ``Table`` of the model,
kept in ``Catalog.sources`` and never in ``Catalog.objects``: views resolve against its columns
(``validate``, and Spark's check of view SQL in a plan), and nothing else happens to it. No plan
creates, changes or drops it, a live object of its name is left alone (``scope``), and no migration
may name it.
"""
from __future__ import annotations

from typing import Any

from schemaflow.errors import Problem
from schemaflow.model import Table
from schemaflow.spec.objects import _COMMENT, _comment, _object_name, table_columns
from schemaflow.spec.yamlpos import Document


def read_source(doc: Document, data: dict[str, Any], problems: list[Problem]) -> Table:
    """The table a ``source:`` file declares (its shape already checked); its problems are added to ``problems``.

    Its columns follow a table's rules (canonical types, primitive partition columns, unique
    names): they describe a table the metastore holds.
    """
    database, name = _object_name(doc, "source", data["source"], problems)
    columns, partition_columns = table_columns(doc, data, problems,
                                               "a source needs its data columns: list those the table has")
    return Table(database=database, name=name, columns=columns, partition_columns=partition_columns,
                 comment=_comment(doc, data, (), _COMMENT, problems), source=doc.key("source"))
