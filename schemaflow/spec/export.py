"""The model written back as schema files: how a team adopts schemaflow on a live warehouse.

Each table and view becomes ``schemas/<database>/<name>.yaml`` in the format ``spec`` reads, so
planning right after an import finds nothing to do. Columns are written one flow mapping a line,
view SQL as a literal block, and keys in the order the README documents them. What the format
cannot say (a Spark data-source table, a type schemaflow does not know) is reported, not written.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import yaml

from schemaflow.model import Column, Object, Table
from schemaflow.sql.ddl import STORED_AS
from schemaflow.sql.types import InvalidType, canonical_type


class _Flow(dict):
    """A mapping written on one line: ``{name: a, type: int}``."""


class _FlowList(list):
    """A list written on one line: ``[ds, hr]``."""


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        # List items indented under their key, as the README writes them.
        super().increase_indent(flow, False)


def _flow(dumper: yaml.SafeDumper, data: _Flow) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=True)


def _text(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(_Flow, _flow)
_Dumper.add_representer(_FlowList, lambda dumper, data: dumper.represent_sequence(
    "tag:yaml.org,2002:seq", data, flow_style=True))
_Dumper.add_representer(str, _text)


def unsupported(obj: Object) -> str | None:
    """Why ``obj`` cannot be written as a schema file, or None."""
    if isinstance(obj, Table):
        if obj.format not in STORED_AS:
            return f"its format {obj.format!r} is not one schemaflow creates ({', '.join(STORED_AS)})"
        for column in obj.all_columns:
            try:
                canonical_type(column.type or "")
            except InvalidType:
                return f"column {column.name} has the type {column.type!r}, which schemaflow does not know"
    return None


def schema_text(obj: Object) -> str:
    """The YAML text of one table or view."""
    data: dict[str, Any] = {obj.kind: obj.key}
    if obj.comment:
        data["comment"] = obj.comment
    if isinstance(obj, Table):
        data["format"] = obj.format
        if obj.external:
            data["external"] = True
            data["location"] = obj.location
        data["columns"] = _columns(obj.columns, types=True)
        if obj.partition_columns:
            data["partitioned_by"] = _columns(obj.partition_columns, types=True)
    else:
        data["columns"] = _columns(obj.columns, types=False)
        if obj.partitioned_on:
            data["partitioned_on"] = _FlowList(obj.partitioned_on)
        data["sql"] = obj.sql.strip() + "\n"
    if obj.properties:
        data["properties"] = _Flow(sorted(obj.properties.items()))
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


def _columns(columns: Iterable[Column], types: bool) -> list[_Flow]:
    rows = []
    for column in columns:
        row = _Flow(name=column.name)
        if types:
            row["type"] = column.type
        if column.comment:
            row["comment"] = column.comment
        rows.append(row)
    return rows


def write_schemas(objects: Iterable[Object], schemas_dir: Path, overwrite: bool = False) -> tuple[list[Path], list[str]]:
    """Write each object's file under ``schemas_dir``; the files written, and what was skipped and why."""
    written, skipped = [], []
    for obj in sorted(objects, key=lambda o: o.key):
        reason = unsupported(obj)
        path = schemas_dir / obj.database / f"{obj.name}.yaml"
        if reason is None and path.exists() and not overwrite:
            reason = f"{path} exists (pass --force to overwrite it)"
        if reason:
            skipped.append(f"{obj.key}: {reason}")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(schema_text(obj))
        written.append(path)
    return written, skipped
