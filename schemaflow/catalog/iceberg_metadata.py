"""An Iceberg table's live state, read from its own metadata file, never from the metastore's copy.

The metastore holds an Iceberg table as an external table whose ``metadata_location`` parameter names
its current metadata file (JSON, Iceberg's table spec); the columns in its storage descriptor are a
mirror that Iceberg's catalogs rewrite on each commit, without field ids, and that other writers may
leave behind. So the columns (with their field ids' order), the partition spec, the sort order and
the properties come from that file, as do schemaflow's own stamp keys, which a commit writes into
both. The metastore's parameters only say where the file is.

A local file (``file:`` or a path) is read directly; any other scheme (``s3://``, ``hdfs://``) through
pyiceberg's file IO, the optional extra ``schemaflow[iceberg]``.

Whoever can register a table in a database (any Spark job of another team) writes its
``metadata_location``, so the file it names is read as hostile input: a regular file only (not a
device, a pipe or a folder), at most ``MAX_METADATA_BYTES``, as JSON nested no deeper than Python
parses, shaped as Iceberg's metadata; and in another scheme than a local file only on the storage
its database is on (the same ``scheme://bucket``), so that no request, signed with the job's keys,
goes to a place nobody configured. Anything else makes the table ``Unreadable`` with a one-line
reason: it is read as the metastore mirrors it, and the plan refuses to change it, saying why.
"""
from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from schemaflow.model import COMMENT_KEY, METADATA_LOCATION, SCHEMAFLOW_PREFIX, Column, IcebergState, PartitionField, SortTerm, Table, recorded
from schemaflow.sql.iceberg_types import UnknownIcebergType, spark_type
from schemaflow.sql.table_kinds import ICEBERG

TABLE_TYPE = "table_type"
PREVIOUS_METADATA_LOCATION = "previous_metadata_location"
# Properties Iceberg keeps of its own in a table's properties, not the user's; ``owner`` is the metastore entry's
# owner, which Iceberg's Hive catalog writes at create (the user Spark ran as) and schemaflow does not manage.
OWNER = "owner"
_OWN_PROPERTIES = frozenset({COMMENT_KEY, OWNER, "uuid", "snapshot-count", "current-snapshot-id",
                             "current-snapshot-summary", "current-snapshot-timestamp-ms", "current-schema",
                             "default-partition-spec", "default-sort-order", "format-version"})
# Until a release is on the package index, schemaflow is installed from a clone, a wheel or a git pin: the extra
# is named on whatever that was.
INSTALL = "install schemaflow with its extra iceberg (pip install '<where schemaflow comes from>[iceberg]')"
# A metadata file larger than this is not read (a table's with thousands of snapshots is a few MiB).
MAX_METADATA_BYTES = 64 * 2**20
# How long a read from object storage may wait to connect and for each request, in seconds (pyiceberg's
# S3 file IO; by default it waits as long as the connection stays open).
_TIMEOUTS = {"s3.connect-timeout": "10", "s3.request-timeout": "60"}


class Unreadable(Exception):
    """Why an Iceberg table's metadata file was not read, in one line."""


def is_iceberg(parameters: Mapping[str, str]) -> bool:
    """Whether the metastore's parameters of a table say it is an Iceberg table (as Iceberg's catalogs register one)."""
    return (parameters.get(TABLE_TYPE) or "").upper() == "ICEBERG" and METADATA_LOCATION in parameters


def read_metadata(location: str, storage: Sequence[str | None] = ()) -> dict[str, Any]:
    """The metadata file at ``location``, as JSON data, read within the bounds above; ``storage``: the
    locations (its database's) whose ``scheme://authority`` a location in another scheme must share.
    Raises ``Unreadable``."""
    local = _local_path(location)
    content = _local_bytes(local) if local is not None else _remote_bytes(location, storage)
    try:
        data = json.loads(content)
    except RecursionError:
        raise Unreadable(f"the metadata file {location!r} is nested too deep to be Iceberg's") from None
    except ValueError as error:
        raise Unreadable(f"the metadata file {location!r} is not JSON ({error})") from None
    if not isinstance(data, dict):
        raise Unreadable(f"the metadata file {location!r} is not a JSON object")
    return data


def _local_path(location: str) -> str | None:
    """The path of a local file (``/x``, ``file:/x``, ``file:///x``), or None for another scheme."""
    path = location[len("file:"):] if location.startswith("file:") else location
    if not path.startswith("/"):
        return None
    return "/" + path.lstrip("/") if path.startswith("//") else path


def _local_bytes(path: str) -> bytes:
    """A regular file's bytes, at most ``MAX_METADATA_BYTES``: opened without waiting (a pipe would block)."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise Unreadable(f"the metadata file {path!r} cannot be opened ({error.strerror})") from None
    try:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode):
            raise Unreadable(f"the metadata location {path!r} is not a regular file")
        if status.st_size > MAX_METADATA_BYTES:
            raise Unreadable(f"the metadata file {path!r} has {status.st_size:,} bytes, more than the "
                             f"{MAX_METADATA_BYTES:,} schemaflow reads")
        with os.fdopen(os.dup(handle), "rb") as file:
            return _bounded(file.read(MAX_METADATA_BYTES + 1), path)
    finally:
        os.close(handle)


def _remote_bytes(location: str, storage: Sequence[str | None]) -> bytes:
    where = _authority(location)
    allowed = {_authority(root) for root in storage if root}
    if where not in allowed:
        raise Unreadable(f"the metadata file {location!r} is not on the storage its database is on "
                         f"({', '.join(sorted(allowed)) or 'none known'}): schemaflow does not read it")
    try:
        from pyiceberg.io import load_file_io
    except ImportError:
        raise Unreadable(f"reading the Iceberg metadata file {location!r} needs pyiceberg's file IO: {INSTALL}") from None
    try:
        with load_file_io(_TIMEOUTS, location).new_input(location).open() as stream:
            return _bounded(stream.read(MAX_METADATA_BYTES + 1), location)
    except OSError as error:
        raise Unreadable(f"the metadata file {location!r} cannot be read ({error})") from None


def _authority(location: str) -> str:
    parts = urlsplit(location)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def _bounded(content: bytes, location: str) -> bytes:
    if len(content) > MAX_METADATA_BYTES:
        raise Unreadable(f"the metadata file {location!r} has more than the {MAX_METADATA_BYTES:,} bytes schemaflow reads")
    return content


def iceberg_table(database: str, name: str, metadata: Mapping[str, Any], metadata_location: str) -> Table:
    """The live table an Iceberg metadata file describes (its current schema, default spec and sort order).
    Raises ``Unreadable`` when the file is not shaped as Iceberg's metadata."""
    try:
        return _iceberg_table(database, name, metadata, metadata_location)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError, StopIteration, RecursionError,
            UnknownIcebergType) as error:
        raise Unreadable(f"the metadata file {metadata_location!r} is not an Iceberg table's metadata "
                         f"({type(error).__name__}: {str(error)[:200]})") from None


def _iceberg_table(database: str, name: str, metadata: Mapping[str, Any], metadata_location: str) -> Table:
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
                             order.get("order-id", 0), version, metadata_location, _former_names(metadata, schema)),
        **recorded(properties),
    )


def _former_names(metadata: Mapping[str, Any], schema: Mapping[str, Any]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each field of the current ``schema`` that had other names in the file's earlier schemas: those, latest first."""
    earlier: dict[int, list[str]] = {}
    for older in sorted(metadata.get("schemas", ()), key=lambda s: s.get("schema-id", 0), reverse=True):
        for field in older["fields"]:
            names = earlier.setdefault(field["id"], [])
            if field["name"] not in names:
                names.append(field["name"])
    return tuple((field["name"], tuple(n for n in earlier.get(field["id"], ()) if n != field["name"]))
                 for field in schema["fields"] if any(n != field["name"] for n in earlier.get(field["id"], ())))


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
