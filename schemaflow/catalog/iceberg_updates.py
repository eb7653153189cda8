"""The neutral half of committing an Iceberg table: its metadata as schemaflow's plan wants it, whichever catalog holds it.

A new table's first metadata (``first_metadata``: field ids from 1 in column order, partition fields from 1000), and
the updates, in Iceberg's REST form, that turn a table's current metadata into what the plan declares
(``layout_updates``: a schema whose columns keep the field ids of the live columns they come from, a partition spec and
a sort order whose fields reuse the ids of identical fields; ``property_changes``: the properties set and removed, the
comment among them, and a format upgrade). ``evolved`` applies them with pyiceberg as a catalog would, and
``with_live_state`` fills schemaflow's ``${live_state}`` stamps with the digest of the table as the commit leaves it.
The Hive metastore's commit (``catalog.hive.iceberg_commit``) and Glue's (``catalog.glue.iceberg``) write the result as the
next metadata file (``next_metadata_location``, ``write_metadata``) and swap it in, each under its catalog's guard;
the Iceberg REST catalog's (``catalog.rest.writer``) sends the same updates to the server with its requirements.
pyiceberg is the optional extra ``schemaflow[iceberg]``, imported at the first use (``pyiceberg_parts()``).
"""
from __future__ import annotations

import itertools
import json
import uuid
from functools import cache
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from schemaflow.catalog.iceberg_metadata import INSTALL, current, iceberg_table
from schemaflow.catalog.iceberg_specs import VOID, created_fields, next_fields, transform_text
from schemaflow.catalog.stamping import fill_live_state
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import (COMMENT_KEY, LIVE_STATE, Column, IcebergState, SortTerm, Table,
                              split_key)
from schemaflow.spec.iceberg import unwritten
from schemaflow.sql.iceberg_types import evolved_type, evolves, iceberg_type, spark_type

FORMAT_VERSION = "format-version"
METADATA_PATH = "write.metadata.path"  # where a table's metadata files go, when not <table>/metadata
PARTITION_IDS_FROM = 1000  # Iceberg numbers partition fields from 1000


def check_state(found: Table, requires: IcebergState | None, expected: str | None) -> None:
    """Refuse to commit the live table ``found`` (read from its metadata) unless it is as the plan requires and stamped
    ``expected``: ``ConcurrentChange``, or ``SchemaflowError`` for a table made what schemaflow does not write since."""
    assert found.iceberg is not None  # read from its metadata
    if (version := unwritten(found)) is not None:  # made so since the plan: the plan leaves it alone
        raise SchemaflowError(f"{found.key} is {version}: plan again; nothing was committed")
    if requires is not None and required(found.iceberg) != required(requires):
        raise ConcurrentChange(found.key, required(requires), required(found.iceberg), "Iceberg metadata")
    if expected is not None and found.version != expected:
        raise ConcurrentChange(found.key, expected, found.version)


def required(state: IcebergState) -> str:
    """What a plan requires of an Iceberg table's metadata, in words."""
    return f"table {state.table_uuid}, schema {state.schema_id}, spec {state.spec_id}, sort order {state.sort_order_id}"


def first_metadata(table: Table, location: str, set: Mapping[str, str]) -> Any:
    """The metadata of a new Iceberg table ``table`` at ``location``, with the properties ``set``: field ids
    from 1 in column order, partition fields from 1000, and the state digest where ``set`` asks for it."""
    pyiceberg = pyiceberg_parts()
    ids = itertools.count(1)
    fields = [new_field(c, ids) for c in table.columns]
    schema = {"type": "struct", "schema-id": 0, "fields": fields}
    by_name = {f["name"]: f["id"] for f in fields}
    spec = {"spec-id": 0, "fields": created_fields(table.partition_spec, by_name, itertools.count(PARTITION_IDS_FROM))}
    order = {"order-id": 1 if table.sort_order else 0, "fields": order_fields(table.sort_order, by_name)}
    properties = {**set, **({COMMENT_KEY: table.comment} if table.comment else {})}
    metadata = pyiceberg.new_table_metadata(
        pyiceberg.Schema.model_validate(schema), pyiceberg.PartitionSpec.model_validate(spec),
        pyiceberg.SortOrder.model_validate(order), location, {k: v for k, v in properties.items() if LIVE_STATE != v})
    return with_live_state(metadata, properties, table.key)


def new_field(column: Column, ids: Iterator[int]) -> dict[str, Any]:
    """A new column as an Iceberg field: its id, then its nested fields' ids, from ``ids``; optional."""
    number = next(ids)
    field = {"id": number, "name": column.name, "required": False, "type": iceberg_type(column.type or "", ids)}
    return field | ({"doc": column.comment} if column.comment else {})


def layout_updates(base: Mapping[str, Any], table: Table, sources: Mapping[str, str]) -> list[dict[str, Any]]:
    """The updates (Iceberg's REST form) that give the table ``table``'s schema, spec and sort order."""
    schema = current(base, "schemas", "current-schema-id", "schema-id", base.get("schema"))
    live = {f["name"]: f for f in schema["fields"]}
    ids = itertools.count(int(base["last-column-id"]) + 1)
    fields = []
    for column in table.columns:
        old = live.get(sources.get(column.name, ""))
        if old is None:
            fields.append(new_field(column, ids))
            continue
        type_ = old["type"]
        if spark_type(type_) != column.type:
            if not evolves(spark_type(type_), column.type or ""):
                raise SchemaflowError(f"{table.key}: Iceberg cannot change {column.name} from {spark_type(type_)} to "
                                      f"{column.type} in place; plan again")
            type_ = evolved_type(type_, column.type or "", ids)
        field = {k: v for k, v in old.items() if k != "doc"} | {"name": column.name, "type": type_}
        fields.append(field | ({"doc": column.comment} if column.comment else {}))
    updates: list[dict[str, Any]] = []
    by_name = {f["name"]: f["id"] for f in fields}
    if fields != schema["fields"]:
        kept = [i for i in schema.get("identifier-field-ids", []) if i in by_name.values()]
        schemas = base.get("schemas", [schema])
        updates += [{"action": "add-schema", "schema": {
            "type": "struct", "schema-id": max(s.get("schema-id", 0) for s in schemas) + 1, "fields": fields,
            "identifier-field-ids": kept}}, {"action": "set-current-schema", "schema-id": -1}]
    spec = current(base, "partition-specs", "default-spec-id", "spec-id", {"spec-id": 0, "fields": base.get("partition-spec", [])})
    specs = base.get("partition-specs", [spec])
    wanted = [(by_name[f.column], transform_text(f)) for f in table.partition_spec]
    if wanted != [(f["source-id"], f["transform"]) for f in spec["fields"] if f["transform"] != VOID]:
        last = max([int(base.get("last-partition-id", PARTITION_IDS_FROM - 1))]
                   + [f["field-id"] for s in specs for f in s["fields"]])
        version = max(int(base["format-version"]), int(table.properties.get(FORMAT_VERSION) or 0))
        new_spec = {"spec-id": max(s["spec-id"] for s in specs) + 1,
                    "fields": next_fields(table.key, version, specs, spec, table.partition_spec, by_name, last)}
        updates += [{"action": "add-spec", "spec": new_spec}, {"action": "set-default-spec", "spec-id": -1}]
    order = current(base, "sort-orders", "default-sort-order-id", "order-id", {"order-id": 0, "fields": []})
    wanted_order = order_fields(table.sort_order, by_name)
    if wanted_order != order["fields"]:
        orders = base.get("sort-orders", [order])
        same = next((o["order-id"] for o in orders if o["fields"] == wanted_order), None)
        if same is None:  # Iceberg keeps the id 0 for the unsorted order
            same = max(o["order-id"] for o in orders) + 1 if wanted_order else 0
            updates.append({"action": "add-sort-order", "sort-order": {"order-id": same, "fields": wanted_order}})
        updates.append({"action": "set-default-sort-order", "sort-order-id": same})
    return updates


def order_fields(terms: Sequence[SortTerm], ids_by_name: Mapping[str, int]) -> list[dict[str, Any]]:
    return [{"transform": transform_text(t.field), "source-id": ids_by_name[t.field.column],
             "direction": "desc" if t.descending else "asc", "null-order": "nulls-first" if t.nulls_first else "nulls-last"}
            for t in terms]


def property_changes(base: Mapping[str, Any], table: Table | None, set: Mapping[str, str],
                unset: Sequence[str]) -> tuple[dict[str, str], list[str], int | None]:
    """The properties to set and to remove, and the format version to upgrade to (None: kept)."""
    have = base.get("properties", {})
    properties = dict(set)
    removals = [k for k in unset if k in have]
    if table is not None and table.comment != have.get(COMMENT_KEY):
        if table.comment:
            properties[COMMENT_KEY] = table.comment
        elif COMMENT_KEY in have:
            removals.append(COMMENT_KEY)
    wanted = properties.pop(FORMAT_VERSION, None)
    upgrade = int(wanted) if wanted and int(wanted) > int(base["format-version"]) else None
    return properties, removals, upgrade


def evolved(base: Mapping[str, Any], base_location: str, updates: list[dict[str, Any]], properties: Mapping[str, str],
             removals: Sequence[str], upgrade: int | None, key: str) -> Any:
    """The table's next metadata: ``base`` with the updates applied by pyiceberg."""
    pyiceberg = pyiceberg_parts()
    all_updates = ([{"action": "upgrade-format-version", "format-version": upgrade}] if upgrade else []) + updates
    all_updates += [{"action": "set-properties", "updates": {k: v for k, v in properties.items() if v != LIVE_STATE}}]
    all_updates += [{"action": "remove-properties", "removals": list(removals)}] if removals else []
    parsed = tuple(pyiceberg.update_adapter.validate_python(u) for u in all_updates)
    metadata = pyiceberg.update_table_metadata(pyiceberg.TableMetadataUtil.parse_obj(dict(base)), parsed,
                                               enforce_validation=True, metadata_location=base_location)
    return with_live_state(metadata, properties, key)


def with_live_state(metadata: Any, properties: Mapping[str, str], key: str) -> Any:
    """``metadata`` with each of schemaflow's properties that ``properties`` set to ``LIVE_STATE`` holding the
    state digest of the table as this commit leaves it (schemaflow's own keys are no part of that digest:
    ``catalog.stamping``)."""
    database, name = split_key(key)
    filled = fill_live_state(properties, lambda: iceberg_table(database, name, json.loads(metadata.model_dump_json()),
                                                               ""))
    return metadata if filled == properties else metadata.model_copy(
        update={"properties": {**metadata.properties, **filled}})


def next_metadata_location(table_location: str, properties: Mapping[str, str], base_location: str) -> str:
    """Where the next metadata file after ``base_location`` goes (the first when it is empty):
    ``<metadata folder>/<version + 1>-<uuid>.metadata.json``, the folder being ``write.metadata.path`` when the
    table sets it, else ``<table>/metadata``."""
    file = base_location.rsplit("/", 1)[-1]
    version = int(file.split("-", 1)[0]) if file.split("-", 1)[0].isdigit() else -1
    folder = properties.get(METADATA_PATH) or f"{table_location.rstrip('/')}/metadata"
    return f"{folder.rstrip('/')}/{version + 1:05d}-{uuid.uuid4()}.metadata.json"


def write_metadata(metadata: Any, location: str) -> None:
    """Write ``metadata`` as the metadata file ``location`` (pyiceberg's file IO: local, object storage, HDFS)."""
    pyiceberg = pyiceberg_parts()
    pyiceberg.ToOutputFile.table_metadata(metadata, pyiceberg.load_file_io({}, location).new_output(location))


def delete_metadata(location: str) -> None:
    """Delete the metadata file ``location`` that a refused commit wrote, where it can."""
    try:
        pyiceberg_parts().load_file_io({}, location).delete(location)
    except OSError:
        pass  # an orphan metadata file is harmless: no catalog entry names it


class _Pyiceberg:
    """The parts of pyiceberg a commit uses, imported when the first commit is made."""

    def __init__(self) -> None:
        from pydantic import TypeAdapter
        from pyiceberg.io import load_file_io
        from pyiceberg.partitioning import PartitionSpec
        from pyiceberg.schema import Schema
        from pyiceberg.serializers import ToOutputFile
        from pyiceberg.table.metadata import TableMetadataUtil, new_table_metadata
        from pyiceberg.table.sorting import SortOrder
        from pyiceberg.table.update import TableUpdate, update_table_metadata
        self.load_file_io, self.PartitionSpec, self.Schema, self.SortOrder = load_file_io, PartitionSpec, Schema, SortOrder
        self.ToOutputFile, self.TableMetadataUtil, self.new_table_metadata = ToOutputFile, TableMetadataUtil, new_table_metadata
        self.update_table_metadata = update_table_metadata
        self.update_adapter: Any = TypeAdapter(TableUpdate)


@cache
def pyiceberg_parts() -> _Pyiceberg:
    try:
        return _Pyiceberg()
    except ImportError:
        raise SchemaflowError(f"creating and changing Iceberg tables needs pyiceberg: {INSTALL}") from None
