"""An Iceberg table's live state, read from its own metadata file, never from the metastore's copy.

The metastore holds an Iceberg table as an external table whose ``metadata_location`` parameter names
its current metadata file (JSON, Iceberg's table spec); the columns in its storage descriptor are a
mirror that Iceberg's catalogs rewrite on each commit, without field ids, and that other writers may
leave behind. So the columns (with their field ids' order), the partition spec, the sort order and
the properties come from that file, as do schemaflow's own stamp keys, which a commit writes into
both. The metastore's parameters only say where the file is.

A local file (``/path``, ``file:/path``, ``file:///path``) is read directly; a location in another scheme
(``s3://``, ``hdfs://``) through pyiceberg's file IO, the optional extra ``schemaflow[iceberg]``.

Whoever can register a table in a database (any Spark job of another team) writes its
``metadata_location``, so the file it names is read as hostile input (``catalog.metadata_files``: an absolute local
path of a regular file, opened without blocking, or a location on its database's own object storage or HDFS), and
every failure is ``Unreadable``: one line naming the table's location and the kind of failure, quoting nothing of the
file, never a traceback. At most ``MAX_METADATA_BYTES`` of it, as JSON nested no deeper than Python parses, shaped as
Iceberg's metadata; pyiceberg's file IO is handed no location that was not checked. The reads of one command are
bounded together too (``catalog.metadata_bounds``). Anything else makes the table unreadable: it is read as the
metastore mirrors it, and the plan refuses to change it, saying why.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from schemaflow.catalog.metadata_bounds import Allowance
from schemaflow.catalog.metadata_files import bounded, check_location, json_int, json_text, limit, local_bytes, parsed_json
from schemaflow.catalog.metadata_readers import OWN_METADATA, TABLE_TYPE, Unreadable
from schemaflow.model import COMMENT_KEY, METADATA_LOCATION, SCHEMAFLOW_PREFIX, Column, IcebergState, PartitionField, SortTerm, Table, recorded
from schemaflow.sql.iceberg_types import UnknownIcebergType, spark_type
from schemaflow.sql.table_kinds import ICEBERG

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
# What to do about a metadata file that is there but could not be read here.
REACH = ("plan where the table's storage is reachable (for s3:// or hdfs://, with pyiceberg's file IO: schemaflow's "
         f"extra iceberg), and {OWN_METADATA}")
# A metadata file larger than this is not read (a table's with thousands of snapshots is a few MiB).
MAX_METADATA_BYTES = 64 * 2**20
# How long a read from object storage may wait to connect and for each request, in seconds (pyiceberg's
# S3 file IO; by default it waits as long as the connection stays open).
_TIMEOUTS = {"s3.connect-timeout": "10", "s3.request-timeout": "60"}
# The fields of Iceberg's metadata that schemaflow reads: a missing one is named (a name of the spec's, not the file's).
_FIELDS = frozenset({"format-version", "table-uuid", "schemas", "schema", "fields", "id", "name", "type", "transform",
                     "source-id", "direction", "null-order", "partition-specs", "sort-orders", "last-column-id"})


def is_iceberg(parameters: Mapping[str, str]) -> bool:
    """Whether the metastore's parameters of a table say it is an Iceberg table (as Iceberg's catalogs register one)."""
    return (parameters.get(TABLE_TYPE) or "").upper() == "ICEBERG" and METADATA_LOCATION in parameters


def read_metadata(location: str, storage: Sequence[str | None] = (), allowance: Allowance | None = None) -> dict[str, Any]:
    """The metadata file at ``location``, as JSON data, read within the bounds above; ``storage``: the
    locations (its database's) whose ``scheme://authority`` a location in another scheme must share;
    ``allowance``: what is left of the command's budget, which the read spends (None: the file's bounds alone).
    Raises ``Unreadable``."""
    local = check_location(location, storage)
    content = (local_bytes(local, location, allowance, MAX_METADATA_BYTES, REACH) if local is not None
               else _remote_bytes(location, allowance))
    return _parsed(content, location)


def _remote_bytes(location: str, allowance: Allowance | None) -> bytes:
    """The bytes of a checked location on object storage or HDFS, through pyiceberg's file IO, within the bounds."""
    try:
        from pyiceberg.io import load_file_io
    except ImportError:
        raise Unreadable(f"reading the Iceberg metadata file {location!r} needs pyiceberg's file IO: {INSTALL}",
                         REACH) from None
    most = limit(allowance, MAX_METADATA_BYTES)
    try:
        with load_file_io(_TIMEOUTS, location).new_input(location).open() as stream:
            content = stream.read(most + 1)
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
        raise Unreadable(f"the metadata file {location!r} cannot be read ({type(error).__name__})", REACH) from None
    if allowance is not None:
        allowance.took(len(content))
    return bounded(content, location, most, allowance, MAX_METADATA_BYTES)


def _parsed(content: bytes, location: str) -> dict[str, Any]:
    """The JSON object ``content`` holds; what is wrong with it said without quoting it."""
    data = parsed_json(content, location)
    if not isinstance(data, dict):
        raise Unreadable(f"the metadata file {location!r} is not a JSON object")
    return data


def iceberg_table(database: str, name: str, metadata: Mapping[str, Any], metadata_location: str) -> Table:
    """The live table an Iceberg metadata file describes (its current schema, default spec and sort order).
    Raises ``Unreadable`` when the file is not shaped as Iceberg's metadata, saying how in words of its own: a
    file's field names and values are never quoted."""
    try:
        return _iceberg_table(database, name, metadata, metadata_location)
    except (KeyError, IndexError, StopIteration) as error:
        how = (f"it has no {error.args[0]!r} field" if isinstance(error, KeyError) and error.args
               and error.args[0] in _FIELDS else "an id or a field it names is not in it")
        failure: Exception = error
    except (TypeError, AttributeError) as error:
        how, failure = "a field holds another kind of value than Iceberg's spec gives it", error
    except UnknownIcebergType as error:
        how, failure = "a column's type is not one Spark has", error
    except (ValueError, ArithmeticError) as error:
        how, failure = "a value is not one Iceberg's spec allows there", error
    except RecursionError as error:
        how, failure = "a column's type nests deeper than schemaflow reads", error
    raise Unreadable(f"the metadata file {metadata_location!r} is not an Iceberg table's metadata "
                     f"({type(failure).__name__}: {how})")


def _iceberg_table(database: str, name: str, metadata: Mapping[str, Any], metadata_location: str) -> Table:
    schema = current(metadata, "schemas", "current-schema-id", "schema-id", metadata.get("schema"))
    spec = current(metadata, "partition-specs", "default-spec-id", "spec-id",
                   {"spec-id": 0, "fields": metadata.get("partition-spec", [])})
    order = current(metadata, "sort-orders", "default-sort-order-id", "order-id", {"order-id": 0, "fields": []})
    by_id = {field["id"]: json_text(field["name"]) for field in schema["fields"]}
    properties = {json_text(k): json_text(v) for k, v in dict(metadata.get("properties", {})).items()}
    version = json_int(metadata["format-version"])
    return Table(
        database=database, name=name, format=ICEBERG, data_source=True,
        columns=tuple(Column(json_text(f["name"]), spark_type(f["type"]), json_text(f.get("doc") or None))
                      for f in schema["fields"]),
        comment=properties.get(COMMENT_KEY) or None,
        properties={"format-version": str(version)} | {k: v for k, v in sorted(properties.items())
                                                       if k not in _OWN_PROPERTIES and not k.startswith(SCHEMAFLOW_PREFIX)},
        partition_spec=tuple(_field(f["transform"], by_id[f["source-id"]]) for f in spec["fields"]
                             if f["transform"] != "void"),
        sort_order=tuple(SortTerm(_field(f["transform"], by_id[f["source-id"]]), f["direction"] == "desc",
                                  f["null-order"] == "nulls-first") for f in order["fields"]),
        iceberg=IcebergState(json_text(metadata["table-uuid"]), json_int(schema.get("schema-id", 0)),
                             json_int(spec.get("spec-id", 0)), json_int(order.get("order-id", 0)), version,
                             metadata_location, _former_names(metadata, schema)),
        **recorded(properties),
    )


def _former_names(metadata: Mapping[str, Any], schema: Mapping[str, Any]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each field of the current ``schema`` that had other names in the file's earlier schemas: those, latest first."""
    earlier: dict[int, list[str]] = {}
    for older in sorted(metadata.get("schemas", ()), key=lambda s: s.get("schema-id", 0), reverse=True):
        for field in older["fields"]:
            names = earlier.setdefault(field["id"], [])
            if field["name"] not in names:
                names.append(json_text(field["name"]))
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
