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
the metastore keeps locks, the commit also holds its table lock (``catalog.hive.table_lock``), as Iceberg's
Hive catalog does by default, so that a writer relying on that lock alone cannot overwrite it.

The new metadata is made by pyiceberg (``update_table_metadata``, ``new_table_metadata``) from updates in
Iceberg's REST form (``catalog.iceberg_updates``, shared with the Iceberg REST catalog's commits): a schema whose
columns keep the field ids of the live columns they come from, a partition spec and a sort order whose fields reuse the
ids of identical fields, properties set and removed, the stamp among them, so the change and its stamp land in one
commit. The metastore's entry
mirrors the columns (without field ids, as Iceberg's catalogs keep them) and the properties.

Local paths and ``file:`` locations need nothing more; other schemes go through pyiceberg's file IO. The next
metadata file goes where the metadata read says (its table's folder, or ``write.metadata.path``): only to a
location schemaflow would read it from (``metadata_files.check_location``), never one the file sends elsewhere.
pyiceberg is the optional extra ``schemaflow[iceberg]``.
"""
from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from schemaflow.catalog.backend import HiveClient
from schemaflow.catalog.iceberg_metadata import PREVIOUS_METADATA_LOCATION, TABLE_TYPE, Unreadable, current, iceberg_table, \
    is_iceberg, read_metadata
from schemaflow.catalog.metadata_files import check_location
from schemaflow.catalog.iceberg_updates import check_state, delete_metadata, evolved, first_metadata, layout_updates, \
    next_metadata_location, property_changes, pyiceberg_parts, write_metadata
from schemaflow.catalog.hive.jvm import java_chain, jvm_view
from schemaflow.catalog.hive.table_lock import table_lock
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import METADATA_LOCATION, IcebergState, Table, split_key
from schemaflow.sql.iceberg_types import spark_type
from schemaflow.sql.table_kinds import LAZY_SIMPLE_SERDE

# What Iceberg's catalogs register an Iceberg table's metastore entry with: its files are Iceberg's to read.
_INPUT_FORMAT, _OUTPUT_FORMAT = "org.apache.hadoop.mapred.FileInputFormat", "org.apache.hadoop.mapred.FileOutputFormat"
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
    check_state(found, requires, expected)
    updates = layout_updates(base, table, sources) if table is not None else []
    properties, removals, upgrade = property_changes(base, table, set, unset)
    metadata = evolved(base, base_location, updates, properties, removals, upgrade, key)
    location = next_metadata_location(metadata.location, metadata.properties, base_location)
    try:  # where the file read says: pyiceberg writes only where schemaflow would read
        check_location(location, storage)
    except Unreadable as refused:
        raise SchemaflowError(f"{key}: its next metadata file would go where its metadata says, and {refused}; "
                              "nothing was committed") from None
    write_metadata(metadata, location)
    _mirror(client, hms, metadata, removals)
    hms.getParameters().put(PREVIOUS_METADATA_LOCATION, base_location)
    hms.getParameters().put(METADATA_LOCATION, location)
    try:
        client.alter(hms, base_location, guarded_by=METADATA_LOCATION)
    except ConcurrentChange as change:
        delete_metadata(location)  # never named by the metastore: nobody reads it
        raise _LostSwap(change) from None
    except Exception:
        delete_metadata(location)
        raise


def create(client: HiveClient, table: Table, set: Mapping[str, str]) -> None:
    """Create the Iceberg table ``table`` with the properties ``set``: its first metadata file, then its
    metastore entry, which fails if the name was taken since the plan."""
    database, name = split_key(table.key)
    location = (table.location or f"{client.retrying(lambda: client.msc.getDatabase(database)).getLocationUri()}/"
                f"{name}").rstrip("/")
    register(client, table.key, first_metadata(table, location, set))


def register(client: HiveClient, key: str, metadata: Any) -> None:
    """Write ``metadata`` as the first metadata file of the Iceberg table ``key``, and create its metastore entry
    naming it, as Iceberg's catalogs register a table; fails (and deletes the file) if the name is taken."""
    metadata_location = next_metadata_location(metadata.location, metadata.properties, "")
    write_metadata(metadata, metadata_location)
    try:
        _create_entry(client, key, metadata, metadata_location)
    except Exception:
        delete_metadata(metadata_location)
        raise


def adopt(client: HiveClient, key: str, metadata_location: str) -> None:
    """Create the metastore entry of ``key`` naming ``metadata_location``, the current metadata file of an Iceberg
    table another catalog holds, as Iceberg's ``registerTable`` does: no file written or copied (the file is read,
    bounded, on its database's storage, for the columns and properties the entry mirrors). ``ConcurrentChange`` if the
    name is taken; a create whose outcome is not known is read back: it landed if ``key`` names that file."""
    database, name = split_key(key)
    storage = (client.retrying(lambda: client.msc.getDatabase(database)).getLocationUri(),)
    try:
        data = read_metadata(metadata_location, storage)
    except Unreadable as unread:
        raise SchemaflowError(f"{key}: {unread.line()}; nothing was registered") from None
    try:
        _create_entry(client, key, pyiceberg_parts().TableMetadataUtil.parse_obj(data), metadata_location)
    except ConcurrentChange:
        raise
    except Exception:
        try:
            held = client.retrying(lambda: client.msc.getTable(database, name)).getParameters()
            landed = held.get(METADATA_LOCATION) == metadata_location
        except Exception:  # noqa: BLE001 -- unread, the create is not known to have landed: its own error stands
            landed = False
        if not landed:
            raise


def _create_entry(client: HiveClient, key: str, metadata: Any, metadata_location: str) -> None:
    """Create the metastore entry of the Iceberg table ``key`` whose current metadata (``metadata``) is the file
    ``metadata_location``, as Iceberg's catalogs make it; ``ConcurrentChange`` if the name is taken."""
    database, name = split_key(key)
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
        if any(t.getClass().getSimpleName() == "AlreadyExistsException" for t in java_chain(error)):
            raise ConcurrentChange(key, None, "a table created by another writer", "metastore entry") from None
        raise


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
