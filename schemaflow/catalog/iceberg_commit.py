"""Commits to an Iceberg table's metadata, made through the Hive metastore as Iceberg's own catalogs make them.

A commit reads the table's current metadata file (the metastore's ``metadata_location``), checks what the
plan requires of it (Iceberg's requirements: the same table uuid, current schema, default spec and sort
order) and the stamp it expects (``schemaflow.version``, as every guarded write of schemaflow does),
writes the next metadata file beside it, and swaps the metastore's ``metadata_location`` from the file it
read to the new one with the metastore's compare-and-swap (HIVE-26882, the guard Iceberg's own Hive
catalog uses without a lock). A writer that committed in between moved ``metadata_location`` on: the
swap is refused and the file written is deleted; the commit is made again on that writer's metadata, as
Iceberg retries its own, as long as it still meets what the plan requires (a writer that only appended
rows); otherwise ``ConcurrentChange`` is raised and nothing changed. Where
the metastore keeps locks, the commit also holds its table lock (``catalog.table_lock``), as Iceberg's
Hive catalog does by default, so that a writer relying on that lock alone cannot overwrite it.

The new metadata is made by pyiceberg (``update_table_metadata``, ``new_table_metadata``) from updates in
Iceberg's REST form: a schema whose columns keep the field ids of the live columns they come from, a
partition spec and a sort order whose fields reuse the ids of identical fields, properties set and
removed, the stamp among them, so the change and its stamp land in one commit. The metastore's entry
mirrors the columns (without field ids, as Iceberg's catalogs keep them) and the properties.

Local paths and ``file:`` locations need nothing more; other schemes go through pyiceberg's file IO. The next
metadata file goes where the metadata read says (its table's folder, or ``write.metadata.path``): only to a
location schemaflow would read it from (``iceberg_metadata.check_location``), never one the file sends elsewhere.
pyiceberg is the optional extra ``schemaflow[iceberg]``.
"""
from __future__ import annotations

import itertools
import json
import time
import uuid
from functools import cache
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from schemaflow.catalog.backend import HiveClient
from schemaflow.catalog.iceberg_metadata import INSTALL, PREVIOUS_METADATA_LOCATION, TABLE_TYPE, Unreadable, \
    check_location, current, iceberg_table, is_iceberg, read_metadata
from schemaflow.catalog.iceberg_specs import VOID, created_fields, next_fields, transform_text
from schemaflow.catalog.jvm import java_message, jvm_view
from schemaflow.catalog.stamping import fill_live_state
from schemaflow.catalog.table_lock import table_lock
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import COMMENT_KEY, LIVE_STATE, METADATA_LOCATION, Column, IcebergState, SortTerm, Table, split_key
from schemaflow.spec.iceberg import unwritten
from schemaflow.sql.iceberg_types import evolved_type, evolves, iceberg_type, spark_type
from schemaflow.sql.table_kinds import LAZY_SIMPLE_SERDE

FORMAT_VERSION = "format-version"
METADATA_PATH = "write.metadata.path"  # where a table's metadata files go, when not <table>/metadata
# What Iceberg's catalogs register an Iceberg table's metastore entry with: its files are Iceberg's to read.
_INPUT_FORMAT, _OUTPUT_FORMAT = "org.apache.hadoop.mapred.FileInputFormat", "org.apache.hadoop.mapred.FileOutputFormat"
_PARTITION_IDS_FROM = 1000  # Iceberg numbers partition fields from 1000
# A commit that lost the swap to another writer is made again this many times, waiting 0.1 s, then twice as long
# each time: Iceberg's own defaults (commit.retry.num-retries, commit.retry.min-wait-ms).
RETRIES = 4
_BACKOFF_SECONDS = 0.1


def commit(client: HiveClient, key: str, table: Table | None, sources: Mapping[str, str], requires: IcebergState | None,
           set: Mapping[str, str], unset: Sequence[str], expected: str | None, hms: Any = None) -> None:
    """Commit the Iceberg table ``key`` as ``table`` says (None: its properties alone), each column named in
    ``sources`` keeping that live column's field id, with ``set`` and ``unset`` among its properties. ``hms``:
    its metastore entry, when the caller has just read it (the compare-and-swap still checks it is current).

    A commit that loses the swap to another writer's (a Spark job appending rows) is made again on the metadata
    that writer committed, up to ``RETRIES`` times, as Iceberg's own commits are: what the plan requires and the
    stamp are checked again each time, so a writer that changed the schema, the spec or the sort order, or another
    apply, still stops it with ``ConcurrentChange``."""
    with table_lock(client, key):
        for attempt in range(RETRIES + 1):
            try:
                _commit_once(client, key, table, sources, requires, set, unset, expected, hms)
                return
            except _LostSwap as lost:
                if attempt == RETRIES:
                    raise lost.change from None
                hms = None  # read the entry the winner left
                time.sleep(_BACKOFF_SECONDS * 2 ** attempt)


class _LostSwap(Exception):
    """Another writer moved ``metadata_location`` between this commit's read and its swap."""

    def __init__(self, change: ConcurrentChange) -> None:
        self.change = change


def _commit_once(client: HiveClient, key: str, table: Table | None, sources: Mapping[str, str],
                 requires: IcebergState | None, set: Mapping[str, str], unset: Sequence[str], expected: str | None,
                 hms: Any) -> None:
    database, name = split_key(key)
    if hms is None:
        hms = client.retrying(lambda: client.msc.getTable(database, name))
    parameters = hms.getParameters()
    if not is_iceberg(parameters):
        raise SchemaflowError(f"{key} is no longer an Iceberg table in the metastore: plan again")
    base_location = parameters.get(METADATA_LOCATION)
    storage = (client.msc.getDatabase(database).getLocationUri(),)
    try:
        base = read_metadata(base_location, storage)
        found = iceberg_table(database, name, base, base_location)
    except Unreadable as unread:
        raise SchemaflowError(f"{key}: {unread.line()}; nothing was committed") from None
    assert found.iceberg is not None  # read from its metadata
    if (version := unwritten(found)) is not None:  # made so since the plan: the plan leaves it alone
        raise SchemaflowError(f"{key} is {version}: plan again; nothing was committed")
    if requires is not None and _required(found.iceberg) != _required(requires):
        raise ConcurrentChange(key, _required(requires), _required(found.iceberg), "Iceberg metadata")
    if expected is not None and found.version != expected:
        raise ConcurrentChange(key, expected, found.version)
    updates = _layout_updates(base, table, sources) if table is not None else []
    properties, removals, upgrade = _properties(base, table, set, unset)
    metadata = _evolved(base, base_location, updates, properties, removals, upgrade, key)
    location = _next_location(metadata.location, metadata.properties, base_location)
    try:  # where the file read says: pyiceberg writes only where schemaflow would read
        check_location(location, storage)
    except Unreadable as refused:
        raise SchemaflowError(f"{key}: its next metadata file would go where its metadata says, and {refused}; "
                              "nothing was committed") from None
    _write(metadata, location)
    _mirror(client, hms, metadata, removals)
    hms.getParameters().put(PREVIOUS_METADATA_LOCATION, base_location)
    hms.getParameters().put(METADATA_LOCATION, location)
    try:
        client.alter(hms, base_location, guarded_by=METADATA_LOCATION)
    except ConcurrentChange as change:
        _delete(location)  # never named by the metastore: nobody reads it
        raise _LostSwap(change) from None
    except Exception:
        _delete(location)
        raise


def create(client: HiveClient, table: Table, set: Mapping[str, str]) -> None:
    """Create the Iceberg table ``table`` with the properties ``set``: its first metadata file, then its
    metastore entry, which fails if the name was taken since the plan."""
    database, name = split_key(table.key)
    location = (table.location or f"{client.retrying(lambda: client.msc.getDatabase(database)).getLocationUri()}/"
                f"{name}").rstrip("/")
    register(client, table.key, first_metadata(table, location, set))


def first_metadata(table: Table, location: str, set: Mapping[str, str]) -> Any:
    """The metadata of a new Iceberg table ``table`` at ``location``, with the properties ``set``: field ids
    from 1 in column order, partition fields from 1000, and the state digest where ``set`` asks for it."""
    pyiceberg = _pyiceberg()
    ids = itertools.count(1)
    fields = [_new_field(c, ids) for c in table.columns]
    schema = {"type": "struct", "schema-id": 0, "fields": fields}
    by_name = {f["name"]: f["id"] for f in fields}
    spec = {"spec-id": 0, "fields": created_fields(table.partition_spec, by_name, itertools.count(_PARTITION_IDS_FROM))}
    order = {"order-id": 1 if table.sort_order else 0, "fields": _order_fields(table.sort_order, by_name)}
    properties = {**set, **({COMMENT_KEY: table.comment} if table.comment else {})}
    metadata = pyiceberg.new_table_metadata(
        pyiceberg.Schema.model_validate(schema), pyiceberg.PartitionSpec.model_validate(spec),
        pyiceberg.SortOrder.model_validate(order), location, {k: v for k, v in properties.items() if LIVE_STATE != v})
    return _with_live_state(metadata, properties, table.key)


def register(client: HiveClient, key: str, metadata: Any) -> None:
    """Write ``metadata`` as the first metadata file of the Iceberg table ``key``, and create its metastore entry
    naming it, as Iceberg's catalogs register a table; fails (and deletes the file) if the name is taken."""
    database, name = split_key(key)
    metadata_location = _next_location(metadata.location, metadata.properties, "")
    _write(metadata, metadata_location)
    api = client.api
    hms = api.Table()
    hms.setDbName(database)
    hms.setTableName(name)
    hms.setOwner(client.spark.sparkContext.sparkUser())
    hms.setTableType("EXTERNAL_TABLE")
    hms.setCreateTime(int(time.time()))
    hms.setPartitionKeys(jvm_view(client.spark).java.util.ArrayList())
    storage = api.StorageDescriptor()
    storage.setLocation(metadata.location)
    storage.setInputFormat(_INPUT_FORMAT)
    storage.setOutputFormat(_OUTPUT_FORMAT)
    serde = api.SerDeInfo()
    serde.setSerializationLib(LAZY_SIMPLE_SERDE)
    serde.setParameters(jvm_view(client.spark).java.util.HashMap())
    storage.setSerdeInfo(serde)
    hms.setSd(storage)
    parameters = jvm_view(client.spark).java.util.HashMap()
    for parameter, value in (("EXTERNAL", "TRUE"), (TABLE_TYPE, "ICEBERG"), (METADATA_LOCATION, metadata_location)):
        parameters.put(parameter, value)
    hms.setParameters(parameters)
    _mirror(client, hms, metadata, ())
    try:
        client.msc.createTable(hms)
    except Exception as error:
        _delete(metadata_location)
        if "AlreadyExists" in type(error).__name__ + java_message(error):
            raise ConcurrentChange(key, None, "a table created by another writer", "metastore entry") from None
        raise


def _required(state: IcebergState) -> str:
    return f"table {state.table_uuid}, schema {state.schema_id}, spec {state.spec_id}, sort order {state.sort_order_id}"


def _new_field(column: Column, ids: Iterator[int]) -> dict[str, Any]:
    """A new column as an Iceberg field: its id, then its nested fields' ids, from ``ids``; optional."""
    number = next(ids)
    field = {"id": number, "name": column.name, "required": False, "type": iceberg_type(column.type or "", ids)}
    return field | ({"doc": column.comment} if column.comment else {})


def _layout_updates(base: Mapping[str, Any], table: Table, sources: Mapping[str, str]) -> list[dict[str, Any]]:
    """The updates (Iceberg's REST form) that give the table ``table``'s schema, spec and sort order."""
    schema = current(base, "schemas", "current-schema-id", "schema-id", base.get("schema"))
    live = {f["name"]: f for f in schema["fields"]}
    ids = itertools.count(int(base["last-column-id"]) + 1)
    fields = []
    for column in table.columns:
        old = live.get(sources.get(column.name, ""))
        if old is None:
            fields.append(_new_field(column, ids))
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
        last = max([int(base.get("last-partition-id", _PARTITION_IDS_FROM - 1))]
                   + [f["field-id"] for s in specs for f in s["fields"]])
        version = max(int(base["format-version"]), int(table.properties.get(FORMAT_VERSION) or 0))
        new_spec = {"spec-id": max(s["spec-id"] for s in specs) + 1,
                    "fields": next_fields(table.key, version, specs, spec, table.partition_spec, by_name, last)}
        updates += [{"action": "add-spec", "spec": new_spec}, {"action": "set-default-spec", "spec-id": -1}]
    order = current(base, "sort-orders", "default-sort-order-id", "order-id", {"order-id": 0, "fields": []})
    wanted_order = _order_fields(table.sort_order, by_name)
    if wanted_order != order["fields"]:
        orders = base.get("sort-orders", [order])
        same = next((o["order-id"] for o in orders if o["fields"] == wanted_order), None)
        if same is None:  # Iceberg keeps the id 0 for the unsorted order
            same = max(o["order-id"] for o in orders) + 1 if wanted_order else 0
            updates.append({"action": "add-sort-order", "sort-order": {"order-id": same, "fields": wanted_order}})
        updates.append({"action": "set-default-sort-order", "sort-order-id": same})
    return updates


def _order_fields(terms: Sequence[SortTerm], ids_by_name: Mapping[str, int]) -> list[dict[str, Any]]:
    return [{"transform": transform_text(t.field), "source-id": ids_by_name[t.field.column],
             "direction": "desc" if t.descending else "asc", "null-order": "nulls-first" if t.nulls_first else "nulls-last"}
            for t in terms]


def _properties(base: Mapping[str, Any], table: Table | None, set: Mapping[str, str],
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


def _evolved(base: Mapping[str, Any], base_location: str, updates: list[dict[str, Any]], properties: Mapping[str, str],
             removals: Sequence[str], upgrade: int | None, key: str) -> Any:
    """The table's next metadata: ``base`` with the updates applied by pyiceberg."""
    pyiceberg = _pyiceberg()
    all_updates = ([{"action": "upgrade-format-version", "format-version": upgrade}] if upgrade else []) + updates
    all_updates += [{"action": "set-properties", "updates": {k: v for k, v in properties.items() if v != LIVE_STATE}}]
    all_updates += [{"action": "remove-properties", "removals": list(removals)}] if removals else []
    parsed = tuple(pyiceberg.update_adapter.validate_python(u) for u in all_updates)
    metadata = pyiceberg.update_table_metadata(pyiceberg.TableMetadataUtil.parse_obj(dict(base)), parsed,
                                               enforce_validation=True, metadata_location=base_location)
    return _with_live_state(metadata, properties, key)


def _with_live_state(metadata: Any, properties: Mapping[str, str], key: str) -> Any:
    """``metadata`` with each of schemaflow's properties that ``properties`` set to ``LIVE_STATE`` holding the
    state digest of the table as this commit leaves it (schemaflow's own keys are no part of that digest:
    ``catalog.stamping``)."""
    database, name = split_key(key)
    filled = fill_live_state(properties, lambda: iceberg_table(database, name, json.loads(metadata.model_dump_json()),
                                                               ""))
    return metadata if filled == properties else metadata.model_copy(
        update={"properties": {**metadata.properties, **filled}})


def _next_location(table_location: str, properties: Mapping[str, str], base_location: str) -> str:
    """Where the next metadata file after ``base_location`` goes (the first when it is empty):
    ``<metadata folder>/<version + 1>-<uuid>.metadata.json``, the folder being ``write.metadata.path`` when the
    table sets it, else ``<table>/metadata``."""
    file = base_location.rsplit("/", 1)[-1]
    version = int(file.split("-", 1)[0]) if file.split("-", 1)[0].isdigit() else -1
    folder = properties.get(METADATA_PATH) or f"{table_location.rstrip('/')}/metadata"
    return f"{folder.rstrip('/')}/{version + 1:05d}-{uuid.uuid4()}.metadata.json"


def _mirror(client: HiveClient, hms: Any, metadata: Any, removals: Sequence[str]) -> None:
    """The metastore entry as Iceberg's catalogs keep it: the columns mirrored, the properties copied."""
    fields = jvm_view(client.spark).java.util.ArrayList()
    data = json.loads(metadata.model_dump_json())
    schema = current(data, "schemas", "current-schema-id", "schema-id", data.get("schema"))
    for field in schema["fields"]:
        hive_type = spark_type(field["type"]).replace("timestamp_ntz", "timestamp")
        fields.add(client.api.FieldSchema(field["name"], hive_type, field.get("doc")))
    hms.getSd().setCols(fields)
    parameters = hms.getParameters()
    for removed in removals:
        parameters.remove(removed)
    for property_, value in sorted(metadata.properties.items()):
        parameters.put(property_, str(value))


def _write(metadata: Any, location: str) -> None:
    pyiceberg = _pyiceberg()
    pyiceberg.ToOutputFile.table_metadata(metadata, pyiceberg.load_file_io({}, location).new_output(location))


def _delete(location: str) -> None:
    try:
        _pyiceberg().load_file_io({}, location).delete(location)
    except OSError:
        pass  # an orphan metadata file is harmless: no metastore entry names it


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
def _pyiceberg() -> _Pyiceberg:
    try:
        return _Pyiceberg()
    except ImportError:
        raise SchemaflowError(f"creating and changing Iceberg tables needs pyiceberg: {INSTALL}") from None
