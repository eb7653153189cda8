"""The model written back as schema files: how a team adopts schemaflow on a live warehouse.

Each table and view becomes ``schemas/<database>/<name>.yaml`` in the format ``spec`` reads, so
planning right after an import finds nothing to do. Columns are written one flow mapping a line,
view SQL as a literal block, and keys in the order docs/concepts/objects.md documents them. What the format
cannot say (a type schemaflow does not know, buckets sorted descending) is reported, not written.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from collections.abc import Iterable

import yaml

from schemaflow.errors import SpecError
from schemaflow.model import Column, Object, Table
from schemaflow.spec.declaration import read_object
from schemaflow.spec.source import ReadFile
from schemaflow.spec.yamlpos import load_yaml
from schemaflow.sql.storage import ROW_FORMAT
from schemaflow.sql.table_kinds import CUSTOM, LAZY_SIMPLE_SERDE, default_serde, names, table_kind
from schemaflow.sql.types import InvalidType, canonical_type


class _Flow(dict):
    """A mapping written on one line: ``{name: a, type: int}``."""


class _FlowList(list):
    """A list written on one line: ``[ds, hr]``."""


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        # List items indented under their key, as the docs write them.
        super().increase_indent(flow, False)


def _flow(dumper: yaml.SafeDumper, data: _Flow) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=True)


def _text(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    if style and not data.strip():
        style = '"'  # a delimiter such as a bare newline reads best as "\n"
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(_Flow, _flow)
_Dumper.add_representer(_FlowList, lambda dumper, data: dumper.represent_sequence(
    "tag:yaml.org,2002:seq", data, flow_style=True))
_Dumper.add_representer(str, _text)


# The way out for a live object no file can declare as it is.
_LEAVE_ALONE = "leave it alone with exclude: in schemaflow.yaml"
# A column name a file can declare (common.json's identifier).
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def unsupported(obj: Object) -> str | None:
    """Why ``obj`` cannot be written as a schema file, or None."""
    named = [c.name for c in (obj.all_columns if isinstance(obj, Table) else obj.columns)]
    odd = next((name for name in named if not _IDENTIFIER.fullmatch(name)), None)
    if odd is not None:
        return (f"its column {odd!r} has a name a file cannot declare (Spark before 3.2 named an expression without "
                "an alias so): re-create it with an alias (... AS name), or leave it alone with exclude: in "
                "schemaflow.yaml")
    if isinstance(obj, Table):
        if obj.data_source and table_kind(obj.format, data_source=True) is None:
            return (f"it is a table of the Spark data source {obj.format!r}, not one schemaflow creates "
                    f"({', '.join(names(data_source=True))}): {_LEAVE_ALONE}")
        if obj.bucketing and any(" " in column for column in obj.bucketing.sorted_by):
            return f"its buckets are sorted descending, which Spark cannot create: {_LEAVE_ALONE}"
        for column in obj.all_columns:
            try:
                canonical_type(column.type or "")
            except InvalidType:
                return f"column {column.name} has the type {column.type!r}, which schemaflow does not model: {_LEAVE_ALONE}"
    return None


def schema_text(obj: Object) -> str:
    """The YAML text of one table or view."""
    data: dict[str, Any] = {obj.kind: obj.key}
    if obj.comment:
        data["comment"] = obj.comment
    if isinstance(obj, Table):
        data.update(_storage(obj))
        if obj.external:
            data["external"] = True
            data["location"] = obj.location
        data["columns"] = _columns(obj.columns, types=True)
        if obj.partition_columns:
            data["partitioned_by"] = _columns(obj.partition_columns, types=True)
        if obj.partition_spec:  # an Iceberg table's transforms, as Spark writes them
            data["partitioned_by"] = _FlowList(map(str, obj.partition_spec))
        if obj.sort_order:
            data["sorted_by"] = _FlowList(map(str, obj.sort_order))
        if obj.bucketing:
            buckets = _Flow(clustered_by=_FlowList(obj.bucketing.columns))
            if obj.bucketing.sorted_by:
                buckets["sorted_by"] = _FlowList(obj.bucketing.sorted_by)
            buckets["count"] = obj.bucketing.count
            data["buckets"] = buckets
    else:
        data["columns"] = _columns(obj.columns, types=False)
        if obj.partitioned_on:
            data["partitioned_on"] = _FlowList(obj.partitioned_on)
        data["sql"] = obj.sql.strip() + "\n"
    if obj.properties:
        data["properties"] = _Flow(sorted(obj.properties.items()))
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


def _storage(table: Table) -> dict[str, Any]:
    """``using:`` and ``options:``, or ``format:`` (or its classes), ``serde:``, ``row_format:`` and ``serde_properties:``.

    LazySimpleSerDe's delimiters are written as ``row_format:`` where ``spec`` reads them back
    the same (one character each, lines ended by a newline); the rest as ``serde_properties:``.
    """
    kind = table_kind(table.format, table.data_source)
    if kind is not None and kind.own_metadata:  # its storage is its own metadata's: the format says it all
        return {"format": table.format}
    if table.data_source:
        return {"using": table.format, **({"options": _Flow(table.serde_properties)} if table.serde_properties else {})}
    data: dict[str, Any] = {}
    if table.format == CUSTOM:
        data |= {"input_format": table.input_format, "output_format": table.output_format}
    else:
        data["format"] = table.format
    if table.serde:
        data["serde"] = table.serde
    properties = dict(table.serde_properties)
    row_format: dict[str, str] = {}
    if (table.serde or default_serde(table.format)) == LAZY_SIMPLE_SERDE:
        for field, key in ROW_FORMAT.items():
            value = properties.get(key)
            fits = value is not None and (field == "null_defined_as" or len(value) == 1)
            if fits and (field != "lines_terminated_by" or value == "\n"):
                row_format[field] = properties.pop(key)
    if row_format:
        data["row_format"] = row_format
    if properties:
        data["serde_properties"] = _Flow(properties)
    return data


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


def refusal(text: str, display_path: str) -> str | None:
    """What validate would say first of a file of ``text``, on its own; None if it accepts it.

    An import writes only files validate accepts: a live object Spark made but the format cannot
    declare as it is (a text data source of two columns, a type schemaflow refuses) is skipped, named.
    """
    try:
        problems = read_object(load_yaml(ReadFile(display_path, text.encode("utf-8")), display_path)).problems
    except SpecError as error:
        problems = tuple(error.problems)
    return problems[0].message if problems else None


def source_text(obj: Object) -> str:
    """The YAML text of a ``source:`` file for a live table or view: its name, comment and columns."""
    data: dict[str, Any] = {"source": obj.key}
    if obj.comment:
        data["comment"] = obj.comment
    data["columns"] = _columns(obj.columns, types=True)
    if isinstance(obj, Table) and obj.partition_columns:
        data["partitioned_by"] = _columns(obj.partition_columns, types=True)
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


def write_schemas(objects: Iterable[Object], schemas_dir: Path, overwrite: bool = False) -> tuple[list[Path], list[str]]:
    """Write each object's file under ``schemas_dir``; the files written, and what was skipped and why."""
    written, skipped = [], []
    for obj in sorted(objects, key=lambda o: o.key):
        reason = unsupported(obj)
        path = schemas_dir / obj.database / f"{obj.name}.yaml"
        text = schema_text(obj) if reason is None else ""
        if reason is None and (refused := refusal(text, f"{obj.database}/{obj.name}.yaml")):
            reason = f"validate would refuse its file ({refused}): re-create it in a form validate accepts, or {_LEAVE_ALONE}"
        if reason is None and path.exists() and not overwrite:
            reason = f"{path} exists (pass --force to overwrite it)"
        if reason:
            skipped.append(f"{obj.key}: {reason}")
            continue
        written.append(_written(path, text))
    return written, skipped


def write_sources(sources: Iterable[Object], schemas_dir: Path) -> tuple[list[Path], list[str]]:
    """Write a ``source:`` file for each of ``sources`` that has no file yet; the files written, and what
    was skipped and why."""
    written, skipped = [], []
    for source in sorted(sources, key=lambda o: o.key):
        path = schemas_dir / source.database / f"{source.name}.yaml"
        if path.exists():
            continue  # declared already: as a source, or as the table it is
        text = source_text(source)
        if refused := refusal(text, f"{source.database}/{source.name}.yaml"):
            skipped.append(f"{source.key}: validate would refuse its source file ({refused}): declare it by hand")
            continue
        written.append(_written(path, text))
    return written, skipped


def _written(path: Path, text: str) -> Path:
    """``path``, written with ``text`` (its database's folder made if need be)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
