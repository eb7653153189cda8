"""One schema file read into a table or view: what can be checked without looking at other files.

The file's shape is checked against its JSON Schema first; a file with a wrong shape goes no
further. Then the rules that a schema cannot express: canonical column types, unique column
names, an external table's location, reserved property keys, the partitions a view lists. A
view's SQL is kept as written; what it reads and outputs is worked out once every file is known
(see ``spec.analysis``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from schemaflow.errors import Problem
from schemaflow.model import SCHEMAFLOW_PREFIX, Column, Source, Table, View, ViewPartitions, partition_name
from schemaflow.spec.schema import check_shape
from schemaflow.spec.yamlpos import Document, NodePath
from schemaflow.sql.types import InvalidType, canonical_type


@dataclass(frozen=True)
class Declaration:
    """A schema file's object, the document it came from, and the problems found in it."""

    doc: Document
    kind: str | None               # "table" or "view"; None when the file names no object
    key: str | None                # "db.name", lower-case; None when the file names no object
    obj: Table | View | None       # None when the file has problems
    problems: tuple[Problem, ...]

    @property
    def name_source(self) -> Source:
        """Where the file names its object."""
        return self.doc.at(self.kind) if self.kind else self.doc.at()


def read_object(doc: Document) -> Declaration:
    """The table or view a schema file declares, or the problems that keep it from being read."""
    data = doc.data
    if not isinstance(data, dict) or ("table" in data) == ("view" in data):
        where = doc.key("view") if isinstance(data, dict) and "view" in data else doc.at()
        message = "a schema file declares one object: start it with 'table: db.name' or 'view: db.name'"
        return Declaration(doc, None, None, None, (Problem(where, message),))
    kind = "table" if "table" in data else "view"
    name = data[kind]
    key = name.lower() if isinstance(name, str) else None
    problems = check_shape(doc, data, kind)
    if problems:
        return Declaration(doc, kind, key, None, tuple(problems))
    obj = _table(doc, data, problems) if kind == "table" else _view(doc, data, problems)
    return Declaration(doc, kind, key, None if problems else obj, tuple(problems))


def _table(doc: Document, data: dict[str, Any], problems: list[Problem]) -> Table:
    database, _, name = data["table"].lower().partition(".")
    columns = _columns(doc, data, "columns", problems)
    partition_columns = _columns(doc, data, "partitioned_by", problems)
    _check_unique(columns + partition_columns, problems)
    if not columns:
        problems.append(Problem(doc.at("columns"), "a table needs at least one data column"))
    external = data.get("external", False)
    if external and "location" not in data:
        problems.append(Problem(doc.key("external"), "an external table needs a location: add 'location:'"))
    if not external and "location" in data:
        message = "only an external table takes a location: add 'external: true' or remove 'location'"
        problems.append(Problem(doc.key("location"), message))
    return Table(
        database=database,
        name=name,
        columns=columns,
        partition_columns=partition_columns,
        comment=data.get("comment"),
        format=data.get("format", "parquet"),
        external=external,
        location=data.get("location"),
        properties=_properties(doc, data, problems),
        source=doc.key("table"),
    )


def _view(doc: Document, data: dict[str, Any], problems: list[Problem]) -> View:
    database, _, name = data["view"].lower().partition(".")
    columns = tuple(
        Column(name=c["name"].lower(), comment=c.get("comment"), source=doc.at("columns", i))
        for i, c in enumerate(data.get("columns", ()))
    )
    _check_unique(columns, problems)
    partitioned_on = tuple(p.lower() for p in data.get("partitioned_on", ()))
    return View(
        database=database,
        name=name,
        sql=re.sub(r"[\s;]+$", "", data["sql"]),
        columns=columns,
        comment=data.get("comment"),
        partitioned_on=partitioned_on,
        partitions=_view_partitions(doc, data.get("partitions"), partitioned_on, problems),
        properties=_properties(doc, data, problems),
        source=doc.key("view"),
    )


def _view_partitions(doc: Document, declared: list | dict | None, partitioned_on: tuple[str, ...],
                     problems: list[Problem]) -> ViewPartitions | None:
    """The ``partitions:`` of a view file: a list of partitions, or a rule to derive them from a base table.

    Each listed partition names a value for every ``partitioned_on`` column, and no other column;
    whether a base table fits a rule is checked with the other files (``spec.analysis``).
    """
    if declared is None:
        return None
    if not partitioned_on:
        message = "partitions need partitioned_on: name the view's partition columns first"
        problems.append(Problem(doc.key("partitions"), message))
        return None
    if isinstance(declared, dict):
        complete_when = {}
        for column, wanted in declared.get("complete_when", {}).items():
            if column.lower() in partitioned_on:
                message = (f"complete_when names '{column}', a partition column of the view itself: "
                           "list only the base table's other partition columns")
                problems.append(Problem(doc.key("partitions", "complete_when", column), message))
            complete_when[column.lower()] = wanted if isinstance(wanted, int) else tuple(sorted(set(wanted)))
        return ViewPartitions(derive_from=declared["derive_from"].lower(), complete_when=complete_when)
    names = ", ".join(partitioned_on)
    first: dict[tuple[str, ...], int] = {}
    for i, spec in enumerate(declared):
        for written in spec:
            if written.lower() not in partitioned_on:
                message = f"'{written}' is not a partition column of the view (partitioned_on: {names})"
                problems.append(Problem(doc.key("partitions", i, written), message))
        spec = {column.lower(): value for column, value in spec.items()}
        missing = [column for column in partitioned_on if column not in spec]
        if missing:
            message = f"partition misses {', '.join(missing)}: each names a value for every column of: {names}"
            problems.append(Problem(doc.at("partitions", i), message))
            continue
        values = tuple(spec[column] for column in partitioned_on)
        if "" in values:
            problems.append(Problem(doc.at("partitions", i), "a partition value must not be empty"))
        elif values in first:
            name = partition_name(partitioned_on, values)
            message = f"partition {name} is listed twice (first on line {first[values]})"
            problems.append(Problem(doc.at("partitions", i), message))
        first.setdefault(values, doc.at("partitions", i).line)
    return ViewPartitions(values=tuple(sorted(first)))


def _columns(doc: Document, data: dict[str, Any], field: str, problems: list[Problem]) -> tuple[Column, ...]:
    columns = []
    for i, column in enumerate(data.get(field, ())):
        path: NodePath = (field, i)
        try:
            type_ = canonical_type(column["type"])
        except InvalidType as error:
            problems.append(Problem(doc.at(*path, "type"), str(error)))
            type_ = column["type"]
        columns.append(Column(column["name"].lower(), type_, column.get("comment"), source=doc.at(*path)))
    return tuple(columns)


def _check_unique(columns: tuple[Column, ...], problems: list[Problem]) -> None:
    """Column names are case-insensitive: each may appear once among data and partition columns."""
    first: dict[str, Column] = {}
    for column in columns:
        if column.name in first:
            message = f"column '{column.name}' is declared twice (first on line {first[column.name].source.line})"
            problems.append(Problem(column.source, message))
        first.setdefault(column.name, column)


def _properties(doc: Document, data: dict[str, Any], problems: list[Problem]) -> dict[str, str]:
    """TBLPROPERTIES as strings (``true``, ``4``); keys under ``schemaflow.`` belong to schemaflow."""
    properties = data.get("properties", {})
    for key in sorted(properties):
        if key.lower().startswith(SCHEMAFLOW_PREFIX):
            message = f"property '{key}' is reserved: schemaflow writes the '{SCHEMAFLOW_PREFIX}' properties itself"
            problems.append(Problem(doc.key("properties", key), message))
    return {key: _text(value) for key, value in sorted(properties.items())}


def _text(value: str | int | float | bool) -> str:
    """A property value as the metastore stores it: YAML booleans in lower case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
