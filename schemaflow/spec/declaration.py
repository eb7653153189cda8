"""Which object a schema file declares, read by the reader of its kind.

A schema file declares one table or view (``spec.objects``) or source (``spec.sources``), named
by its first key. Its shape is checked against that kind's JSON Schema (``spec.schema``) before its
reader sees it. Where a file holds text, a plain YAML scalar is put back as written (``owner: NO``
is "NO", not false; ``ds: 2024-01-01`` is that text, not a date). This module sits above the
readers, so none of them imports another to dispatch.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from collections.abc import Callable

from schemaflow.errors import Problem
from schemaflow.model import Source, Table, View
from schemaflow.spec.objects import read_table, read_view
from schemaflow.spec.schema import check_shape
from schemaflow.spec.sources import read_source
from schemaflow.spec.yamlpos import Document, NodePath



class DeclarationKind(StrEnum):
    """What a schema file declares: the key it starts with, and the name of its JSON Schema."""
    TABLE = "table"
    VIEW = "view"
    SOURCE = "source"


# Each kind of schema file, and what reads it once its shape is checked.
_READERS: dict[DeclarationKind, Callable[[Document, dict[str, Any], list[Problem]], Table | View]] = {
    DeclarationKind.TABLE: read_table, DeclarationKind.VIEW: read_view, DeclarationKind.SOURCE: read_source,
}


@dataclass(frozen=True)
class Declaration:
    """A schema file's object, the document it came from, and the problems found in it."""

    doc: Document
    kind: DeclarationKind | None   # None when the file names no object
    key: str | None                # "db.name", lower-case; None when the file names no object
    obj: Table | View | None       # None when the file has problems
    problems: tuple[Problem, ...]

    @property
    def name_source(self) -> Source:
        """Where the file names its object."""
        return self.doc.at(self.kind) if self.kind else self.doc.at()


def read_object(doc: Document) -> Declaration:
    """The table, view or source (``spec.sources``) a schema file declares, or what keeps it from being read."""
    data = doc.data
    kinds = [kind for kind in DeclarationKind if isinstance(data, dict) and kind in data]
    if len(kinds) != 1:
        where = doc.key(kinds[1]) if len(kinds) > 1 else doc.at()
        message = ("a schema file declares one object: start it with 'table: db.name', 'view: db.name' or "
                   "'source: db.name'")
        return Declaration(doc, None, None, None, (Problem(where, message),))
    kind = kinds[0]
    data = _as_written(doc, data)
    name = data[kind]
    key = name.lower() if isinstance(name, str) else None
    problems = check_shape(doc, data, kind)
    if problems:
        return Declaration(doc, kind, key, None, tuple(problems))
    obj: Table | View = _READERS[kind](doc, data, problems)
    return Declaration(doc, kind, key, None if problems else obj, tuple(problems))


def _as_written(doc: Document, data: Any) -> Any:
    """``data`` with each plain scalar YAML read as other than text, where a schema file holds text, put
    back as written; a copy only where one is."""
    for path, written in doc.plain.items():
        if _holds_text(path) and _value_at(data, path) is not None:
            data = _replaced(data, path, written)
    return data


def _value_at(data: Any, path: NodePath) -> Any:
    for step in path:
        data = data[step]
    return data


def _replaced(data: Any, path: NodePath, value: Any) -> Any:
    """``data`` with ``value`` at ``path``: the containers along the path copied, the rest shared."""
    if not path:
        return value
    step, rest = path[0], path[1:]
    if isinstance(data, dict):
        return {**data, step: _replaced(data[step], rest, value)}
    assert isinstance(step, int)  # a list's items are numbered
    return [*data[:step], _replaced(data[step], rest, value), *data[step + 1:]]


def _holds_text(path: NodePath) -> bool:
    """Whether a schema file holds text at ``path``: names, types, comments, properties, partition values.

    A null stays missing: it says nothing. Object names are left to the shape check: a dotted
    name YAML reads as a number (``1.5``) is no valid name either way.
    """
    match path:
        case ("comment",) | ("properties" | "options" | "serde_properties" | "row_format", str()) | ("partitioned_on", int()):
            return True
        case ("buckets", "clustered_by" | "sorted_by", int()):
            return True
        case ("columns" | "partitioned_by", int(), "name" | "type" | "comment"):
            return True
        case ("partitions", int(), str()) | ("partitions", "complete_when", str(), int()):
            return True
    return False
