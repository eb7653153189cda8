"""An Iceberg table's live state, read from its own metadata file, never from the metastore's copy.

The metastore holds an Iceberg table as an external table whose ``metadata_location`` parameter names
its current metadata file (JSON, Iceberg's table spec); the columns in its storage descriptor are a
mirror that Iceberg's catalogs rewrite on each commit, without field ids, and that other writers may
leave behind. So the columns (with their field ids' order), the partition spec, the sort order and
the properties come from that file, as do schemaflow's own stamp keys, which a commit writes into
both. The metastore's parameters only say where the file is.

A local file (``file:`` or a path) is read directly; any other scheme (``s3://``, ``hdfs://``) through
pyiceberg's file IO, the optional extra ``schemaflow[iceberg]``.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from schemaflow.errors import SchemaflowError
from schemaflow.model import COMMENT_KEY, METADATA_LOCATION, SCHEMAFLOW_PREFIX, Column, IcebergState, PartitionField, SortTerm, Table, recorded
from schemaflow.sql.iceberg_types import spark_type
from schemaflow.sql.table_kinds import ICEBERG

TABLE_TYPE = "table_type"
PREVIOUS_METADATA_LOCATION = "previous_metadata_location"
# Properties Iceberg keeps of its own in a table's properties, not the user's.
_OWN_PROPERTIES = frozenset({COMMENT_KEY, "uuid", "snapshot-count", "current-snapshot-id", "current-snapshot-summary",
                             "current-snapshot-timestamp-ms", "current-schema", "default-partition-spec",
                             "default-sort-order", "format-version"})
INSTALL = "pip install 'schemaflow-hive[iceberg]'"


def is_iceberg(parameters: Mapping[str, str]) -> bool:
    """Whether the metastore's parameters of a table say it is an Iceberg table (as Iceberg's catalogs register one)."""
    return (parameters.get(TABLE_TYPE) or "").upper() == "ICEBERG" and METADATA_LOCATION in parameters


def read_metadata(location: str) -> dict[str, Any]:
    """The metadata file at ``location``, as JSON data."""
    path = location[len("file:"):] if location.startswith("file:") else location
    if path.startswith("/"):
        with open(path.replace("///", "/", 1) if path.startswith("///") else path, "rb") as file:
            data: dict[str, Any] = json.loads(file.read())
            return data
    try:
        from pyiceberg.io import load_file_io
    except ImportError:
        raise SchemaflowError(f"reading the Iceberg metadata file {location} needs pyiceberg's file IO: "
                              f"{INSTALL}") from None
    with load_file_io({}, location).new_input(location).open() as stream:
        read: dict[str, Any] = json.loads(stream.read())
        return read


def iceberg_table(database: str, name: str, metadata: Mapping[str, Any], metadata_location: str) -> Table:
    """The live table an Iceberg metadata file describes (its current schema, default spec and sort order)."""
    schema = current(metadata, "schemas", "current-schema-id", "schema-id", metadata.get("schema"))
    spec = current(metadata, "partition-specs", "default-spec-id", "spec-id",
                   {"spec-id": 0, "fields": metadata.get("partition-spec", [])})
    order = current(metadata, "sort-orders", "default-sort-order-id", "order-id", {"order-id": 0, "fields": []})
    by_id = {field["id"]: field["name"] for field in schema["fields"]}
    properties = dict(metadata.get("properties", {}))
    version = int(metadata["format-version"])
    return Table(
        database=database, name=name, format=ICEBERG, data_source=True,
        columns=tuple(Column(f["name"], spark_type(f["type"]), f.get("doc") or None) for f in schema["fields"]),
        comment=properties.get(COMMENT_KEY) or None,
        properties={"format-version": str(version)} | {k: v for k, v in sorted(properties.items())
                                                       if k not in _OWN_PROPERTIES and not k.startswith(SCHEMAFLOW_PREFIX)},
        partition_spec=tuple(_field(f["transform"], by_id[f["source-id"]]) for f in spec["fields"]
                             if f["transform"] != "void"),
        sort_order=tuple(SortTerm(_field(f["transform"], by_id[f["source-id"]]), f["direction"] == "desc",
                                  f["null-order"] == "nulls-first") for f in order["fields"]),
        iceberg=IcebergState(metadata["table-uuid"], schema.get("schema-id", 0), spec.get("spec-id", 0),
                             order.get("order-id", 0), version, metadata_location),
        **recorded(properties),
    )


def current(metadata: Mapping[str, Any], listed: str, current_id: str, own_id: str, v1: Any) -> dict[str, Any]:
    """The current one of a metadata file's schemas, specs or sort orders (format version 1 may hold one alone)."""
    if listed not in metadata:
        return dict(v1)
    wanted = metadata.get(current_id, 0)
    return next(item for item in metadata[listed] if item.get(own_id, 0) == wanted)


def _field(transform: str, column: str) -> PartitionField:
    """A partition field or sort term's transform as Iceberg writes it (``bucket[16]``, ``day``) in the model."""
    name, _, argument = transform.partition("[")
    return PartitionField(name, column, int(argument.rstrip("]")) if argument else None)
