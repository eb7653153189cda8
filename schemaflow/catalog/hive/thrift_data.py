"""Tables, views and databases as the metastore holds them, in the model.

Both ways of reading a metastore (``catalog.hive.metastore`` through Spark's own client, and
``catalog.hive.thrift_reader`` without a JVM) get the metastore's Thrift structs as the same data: a dict
per struct, keyed by field name, as Thrift's simple JSON protocol writes it. This module turns that
data into ``Table``, ``View`` and ``Database`` (and the ``LiveEntry`` drift and history read: the model with the
raw parameters), so the two readers cannot disagree on what they read, and drift and history see no Thrift shape.
A table's columns are read where its kind keeps its live schema (``LiveSchema``): the metastore's column
lists, Spark's copy of the schema, or the kind's own metadata, read by the reader registered for the kind
(``catalog.metadata_readers``; Iceberg's is registered here).

Table parameters that are bookkeeping (statistics, DDL times, Spark's copy of the schema,
schemaflow's own keys) are not properties; ``managed_keys`` and ``version`` come from
schemaflow's keys.
"""
from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from typing import Any, assert_never
from collections.abc import Collection, Iterator, Mapping, Sequence

from schemaflow.catalog.backend import LiveEntry, LiveSource, NamedTables
from schemaflow.catalog.delta_log import delta_table, is_delta, read_delta_log
from schemaflow.catalog.iceberg_metadata import iceberg_table, is_iceberg, read_metadata
from schemaflow.catalog.metadata_bounds import held_budget, metadata_bounds
from schemaflow.catalog.metadata_readers import (MetadataReader, Unreadable, metadata_reader, recognised_kind,
                                                 register_metadata_reader)
from schemaflow.catalog.hive.spark_schema import spark_bucketing, spark_columns, spelt_names
from schemaflow.model import (
    BACKUP_OF,
    COMMENT_KEY,
    CURRENT_DATABASE,
    METADATA_LOCATION,
    REWRITE_OF,
    SWAPPED_OUT_BY,
    VERSION_KEY,
    Bucketing,
    Catalog,
    Column,
    Database,
    Object,
    PartitionValues,
    Stored,
    Table,
    View,
    recorded,
)
from schemaflow.claims import parse_claim
from schemaflow.errors import SchemaflowError, Unreachable
from schemaflow.sql.code_calls import SESSION_CATALOG
from schemaflow.sql.storage import PATH_OPTION, serde_properties
from schemaflow.sql.table_kinds import (CUSTOM, DELTA, ICEBERG, PROVIDER, LiveSchema, TableKind, data_source_provider,
                                        default_serde, hive_kind, table_kind)
from schemaflow.sql.table_parameters import written_by_others
from schemaflow.sql.types import InvalidType, canonical_type

# Hive 4's default metadata transformer makes a managed table that a client without Hive's capabilities creates
# (Spark's, schemaflow's) an external one whose files are deleted with it, and says so in these parameters: such a
# table is the managed table its client asked for.
TRANSLATED = {"TRANSLATED_TO_EXTERNAL": "TRUE", "external.table.purge": "TRUE"}

VIRTUAL_VIEW = "VIRTUAL_VIEW"  # the metastore's type of a view
VIEW_SCHEMA_MODE = "view.schemaMode"  # Spark 4: what a view does when the types of what it reads change
# Where Spark resolves a view's unqualified names: the catalog and namespace it stored, part by part (and the one
# database views of Spark before 3.0 stored).
VIEW_NAMESPACE = "view.catalogAndNamespace."
VIEW_DEFAULT_DATABASE = "view.default.database"
FROM_DESERIALIZER = "from deserializer"
# Reads are tried this many times when the connection breaks, after 1 s, then 2 s, ...
READ_ATTEMPTS = 4
READ_BACKOFF_SECONDS = 1.0


def read_catalog(source: LiveSource, databases: tuple[str, ...], storage: Sequence[str | None] = ()) -> Catalog:
    """Every table and view in ``databases``; databases that do not exist have none. Tables' own metadata is read
    within the command's budget (``catalog.metadata_bounds``), from its database's storage or ``storage`` (what else
    the backend's settings name: a warehouse)."""
    existing = set(source.databases())
    present = tuple(sorted({d for d in databases if d in existing}))
    objects: dict[str, Object] = {}
    details = {}
    with metadata_bounds():
        for database in present:
            details[database] = source.database(database)
            for entry in _entries(source, database, (details[database].location, *storage)):
                objects[entry.object.key] = entry.object
    return Catalog(databases=present, objects=dict(sorted(objects.items())), database_details=details)


def table_entries(source: LiveSource, database: str, storage: Sequence[str | None] = ()) -> Iterator[LiveEntry]:
    """Every table and view of ``database`` as the model, with its parameters as the metastore holds them (an Iceberg
    table's parameters mirror its metadata's properties): what a Hive metastore reader's ``entries`` gives.
    ``storage``: as ``read_catalog``'s."""
    return _entries(source, database, (source.database(database).location, *storage))


def _entries(source: LiveSource, database: str, storage: Sequence[str | None]) -> Iterator[LiveEntry]:
    """``table_entries`` of a database whose storage (its location among it) is known already."""
    for data in source.table_data(database):
        yield LiveEntry(to_model(data, storage), data.get("parameters", {}))


def read_views(source: NamedTables, keys: Collection[str]) -> dict[str, View | None]:
    """The views ``keys`` (``db.name``) name, as ``source`` holds them, read by name (a database's other tables are
    not read, nor is a table's own metadata): None for a key that names no view (a table, or nothing); a key of a
    database whose read failed is left out (not known)."""
    existing = set(source.databases())
    wanted: dict[str, list[str]] = {}
    for key in sorted(set(keys)):
        database, _, name = key.partition(".")
        wanted.setdefault(database, []).append(name)
    found: dict[str, View | None] = {}
    for database, names in wanted.items():
        if database not in existing:
            found |= {f"{database}.{name}": None for name in names}
            continue
        try:
            held = {f"{database}.{data['tableName']}".lower(): data
                    for data in source.named_table_data(database, names)}
        except SchemaflowError as error:
            if isinstance(error, Unreachable):
                raise
            continue
        for name in names:
            data = held.get(f"{database}.{name}")
            view = to_model(data) if data is not None and data.get("tableType") == VIRTUAL_VIEW else None
            found[f"{database}.{name}"] = view if isinstance(view, View) else None
    return found


def database_of(name: str, data: Mapping[str, Any]) -> Database:
    """A database's comment, location and properties, from the data of its Thrift ``Database``."""
    return Database(name, data.get("description") or None, data.get("locationUri"),
                    dict(sorted(data.get("parameters", {}).items())))


def to_model(data: Mapping[str, Any], storage: Sequence[str | None] = ()) -> Object:
    """A table or view from the JSON form of a Thrift ``Table``; ``storage``: where its database is, the only
    storage other than local files an Iceberg table's metadata is read from (``catalog.iceberg_metadata``)."""
    parameters: dict[str, str] = data.get("parameters", {})
    sd = data.get("sd", {})
    columns = tuple(_column(c) for c in sd.get("cols", []))
    partition_keys = tuple(_column(c) for c in data.get("partitionKeys", []))
    common = dict(
        database=data["dbName"],
        name=data["tableName"],
        comment=parameters.get(COMMENT_KEY) or None,
        properties=user_properties(parameters),
    )
    stamped = recorded(parameters)
    migrations = stamped.pop("migrations")
    common |= stamped
    if data.get("tableType") == VIRTUAL_VIEW:
        original, expanded = data.get("viewOriginalText", ""), data.get("viewExpandedText")
        return View(
            sql=original,
            columns=columns + partition_keys,
            partitioned_on=tuple(c.name for c in partition_keys),
            schema_mode=parameters.get(VIEW_SCHEMA_MODE),
            expanded_sql=expanded if expanded is not None and expanded != original else None,
            resolves_in=_resolves_in(data["dbName"], parameters),
            **common,
        )
    provider = data_source_provider(parameters.get(PROVIDER))
    kind = live_kind(parameters, provider, sd)
    # A data source of no kind schemaflow knows is read as Spark reads it.
    match LiveSchema.SPARK_COPY if kind is None else kind.live_schema:
        case LiveSchema.OWN_METADATA:
            assert kind is not None  # no kind: Spark's copy
            # A rewrite's marks are the entry's, whatever keeps the table's schema (a Delta table's rewrite: plan.delta).
            return replace(metadata_reader(kind).read(data, storage), backup_of=parameters.get(BACKUP_OF),
                           rewrite_of=parameters.get(REWRITE_OF), swapped_out_by=parameters.get(SWAPPED_OUT_BY))
        case LiveSchema.SPARK_COPY:
            assert provider is not None  # a data source, of a kind or of none
            stored = data_source_storage(provider, sd, parameters)
        case LiveSchema.METASTORE:
            stored = {**hive_storage(sd), "partition_columns": partition_keys}
        case _ as unreachable:
            assert_never(unreachable)
    external = data.get("tableType") == "EXTERNAL_TABLE" and not translated(parameters)
    location = stored.pop("location", None) or sd.get("location")
    return Table(external=external, location=location if external else None, migrations=migrations,
                 backup_of=parameters.get(BACKUP_OF), rewrite_of=parameters.get(REWRITE_OF),
                 spelt=spelt_names(parameters), swapped_out_by=parameters.get(SWAPPED_OUT_BY), **common, **stored)


def _resolves_in(database: str, parameters: Mapping[str, str]) -> str | None:
    """Where Spark resolves the unqualified names of a view of ``database`` with these ``parameters``: None in its own
    database, else the one Spark stored with it (``view.catalogAndNamespace``, or before Spark 3.0
    ``view.default.database``), or ``CURRENT_DATABASE`` where it stored none of Spark's own catalog (the session's
    current database then, as measured on Spark 3.5 and 4.3)."""
    count = parameters.get(VIEW_NAMESPACE + "numParts")
    if count is not None:  # Spark's catalog and a database: two parts (a count is read as no more than that)
        parts = [parameters.get(f"{VIEW_NAMESPACE}part.{index}") for index in range(2)] if count == "2" else []
        stored = parts[1] if parts and parts[0] == SESSION_CATALOG and parts[1] else None
    else:
        stored = parameters.get(VIEW_DEFAULT_DATABASE)
    if stored is None:
        return CURRENT_DATABASE
    return None if stored.lower() == database.lower() else stored.lower()


def live_kind(parameters: Mapping[str, str], provider: str | None, sd: Mapping[str, Any]) -> TableKind | None:
    """The kind of a live table, from the metastore's ``parameters`` of it, the data source its provider names
    (``data_source_provider``) and its storage descriptor ``sd``: a kind with metadata of its own as its reader
    recognises it (``catalog.metadata_readers``), a data source by its provider, a Hive table by its format
    classes. None: a data source of no kind schemaflow knows, or of a kind with metadata of its own whose reader
    does not recognise it as one (an Iceberg table without the parameters Iceberg's catalogs register it with)."""
    own = recognised_kind(parameters)
    if own is not None:
        return own
    if provider is None:
        return hive_kind(sd.get("inputFormat"), sd.get("outputFormat"))
    kind = table_kind(provider, data_source=True)
    return None if kind is None or kind.own_metadata else kind


def _iceberg(data: Mapping[str, Any], storage: Sequence[str | None]) -> Table:
    """An Iceberg table, from its metadata file (``catalog.iceberg_metadata``), read within what is left of the
    command's budget. One whose file is not read keeps the metastore's mirror of its columns and parameters, no
    metadata state, and the reason and what to do: a plan refuses to change it, saying why (``plan.iceberg``)."""
    location = data["parameters"][METADATA_LOCATION]
    database, name = data["dbName"], data["tableName"]
    try:
        with held_budget().reading(f"{database}.{name}") as allowance:
            metadata = read_metadata(location, storage, allowance)
        return iceberg_table(database, name, metadata, location)
    except Unreadable as unread:
        mirrored = tuple(_column(c) for c in data.get("sd", {}).get("cols", []))
        return Table(database, name, mirrored, format=ICEBERG, data_source=True,
                     properties=user_properties(data["parameters"]), unreadable=unread.line())


register_metadata_reader(ICEBERG, MetadataReader(is_iceberg, _iceberg))


def delta_location(data: Mapping[str, Any]) -> str | None:
    """Where the Delta table of the entry ``data`` (Thrift table data) is. Spark keeps a data-source table's location
    among its options; the entry's own is a placeholder for an external one (``<table>-__PLACEHOLDER__`` in its
    database's folder). Athena registers the log's folder as the entry's."""
    sd = data.get("sd", {})
    location: str | None = sd.get("serdeInfo", {}).get("parameters", {}).get(PATH_OPTION) or sd.get("location")
    return location


def _delta(data: Mapping[str, Any], storage: Sequence[str | None]) -> Table:
    """A Delta table, from its log (``catalog.delta_log``), read within what is left of the command's budget: the
    metastore's columns are a placeholder Spark writes, never its schema. One whose log is not read keeps no columns,
    its entry's parameters, and the reason and what to do: a plan refuses to change it, saying why. Its version, claims
    among them, is the entry's (``catalog.hive.delta_commit`` says why); the rest of its stamp is the log's. An entry
    that holds no version, where the log holds a claim, is one a run stopped between its CREATE (which carried the claim
    into the log) and its first write of the entry: the claim is the table's version, for the next run to take over."""
    database, name = data["dbName"], data["tableName"]
    version = data.get("parameters", {}).get(VERSION_KEY) or None
    location = delta_location(data)
    try:
        if not location:
            raise Unreadable("its metastore entry names no location", "see that Spark registered the Delta table")
        with held_budget().reading(f"{database}.{name}") as allowance:
            snapshot = read_delta_log(location, storage, allowance)
        # Its version is its entry's, where apply keeps its claim (``catalog.hive.delta_commit`` says why).
        table = delta_table(database, name, snapshot)
        return replace(table, version=version or (table.version if parse_claim(table.version) else None))
    except Unreadable as unread:
        return Table(database, name, (), format=DELTA, data_source=True, version=version,
                     properties=user_properties(data.get("parameters", {})), unreadable=unread.line())


register_metadata_reader(DELTA, MetadataReader(is_delta, _delta))


def hive_storage(sd: Mapping[str, Any]) -> dict[str, Any]:
    """A Hive-format table's columns and storage, from its storage descriptor (``sql.table_kinds``, ``sql.storage``)."""
    serde_info = sd.get("serdeInfo", {})
    input_format, output_format = sd.get("inputFormat"), sd.get("outputFormat")
    format_ = hive_kind(input_format, output_format).name
    serde = serde_info.get("serializationLib") or None
    bucketing = None
    if sd.get("numBuckets", -1) > 0:
        sorted_by = tuple(c["col"].lower() + ("" if c.get("order", 1) == 1 else " desc") for c in sd.get("sortCols", []))
        bucketing = Bucketing(tuple(c.lower() for c in sd.get("bucketCols", [])), sd["numBuckets"], sorted_by)
    return dict(
        columns=tuple(_column(c) for c in sd.get("cols", [])),
        format=format_,
        serde=None if serde == default_serde(format_) else serde,
        input_format=input_format if format_ == CUSTOM else None,
        output_format=output_format if format_ == CUSTOM else None,
        serde_properties=serde_properties(serde_info.get("parameters", {})),
        bucketing=bucketing,
    )


def data_source_storage(provider: str, sd: Mapping[str, Any], parameters: Mapping[str, str]) -> dict[str, Any]:
    """The columns and storage of a Spark data-source table of ``provider``.

    Its columns are Spark's copy of the schema (the metastore's may be a placeholder), its options
    are kept as SERDEPROPERTIES, its location is the ``path`` option, its bucketing in parameters.
    """
    columns, partition_columns = spark_columns(parameters) or ((), ())
    options = sd.get("serdeInfo", {}).get("parameters", {})
    return dict(
        columns=columns,
        partition_columns=partition_columns,
        format=provider,
        data_source=True,
        location=options.get(PATH_OPTION),
        serde_properties=serde_properties(options, data_source=True),
        bucketing=spark_bucketing(parameters),
    )


def user_properties(parameters: Mapping[str, str]) -> dict[str, str]:
    """The table parameters that are the user's, not bookkeeping."""
    kept = set(TRANSLATED) if translated(parameters) else set()
    return {
        key: value for key, value in sorted(parameters.items())
        if not written_by_others(key) and key not in kept
    }


def translated(parameters: Mapping[str, str]) -> bool:
    """Whether Hive 4 made the managed table a client created external (``TRANSLATED``)."""
    return all(parameters.get(key, "").upper() == value for key, value in TRANSLATED.items())


def _column(data: Mapping[str, Any]) -> Column:
    comment = data.get("comment")
    # Hive's placeholder for a column a SerDe reports (OpenCSVSerde, RegexSerDe): it stores that
    # when any ALTER of such a table goes through Hive's client, Spark's included. It says nothing.
    if comment == FROM_DESERIALIZER:
        comment = None
    return Column(name=data["name"], type=_live_type(data["type"]), comment=comment or None)


@lru_cache(maxsize=4096)
def _live_type(text: str) -> str:
    """The canonical form of a stored type; a type schemaflow does not know stays as stored."""
    try:
        return canonical_type(text)
    except InvalidType:
        return text


_ESCAPED = re.compile(r"%([0-9A-Fa-f]{2})")


def parse_name(name: str) -> PartitionValues:
    """The values of a partition name as the metastore writes it: ``ds=2024-01-01/hr=00``, each
    value escaped as Hive escapes path names (``%2F`` for ``/``, ``%3D`` for ``=``, ...)."""
    return tuple(_ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), part.split("=", 1)[1]) for part in name.split("/"))


# What the metastore keeps of a table's (or a partition's) files, updated as Hive writes rows (its fast statistics),
# and Spark's own byte count of a table (``ANALYZE TABLE ... COMPUTE STATISTICS NOSCAN``, or kept up to date with
# ``spark.sql.statistics.size.autoUpdate.enabled``).
STATISTICS = ("totalSize", "numFiles")
SPARK_SIZE = "spark.sql.statistics.totalSize"


def statistics(table: Mapping[str, Any], partitions: Sequence[Mapping[str, Any]] | None) -> tuple[Stored, list[str]]:
    """What the statistics of ``table`` (a Thrift Table as data) and of its ``partitions`` (None: unpartitioned) say
    its files hold, and the folders of the units that keep none, for a listing to measure (``unknown`` counts them).
    No files is no statistic: a metastore server records 0 files for a table it creates, and Spark writes a
    data-source table's files without updating the count."""
    total, files, missing, only_bytes = 0, 0, [], False
    for unit in [table] if partitions is None else partitions:
        parameters = unit.get("parameters") or {}
        size, count = (_number(parameters.get(k)) for k in STATISTICS)
        spark = _number(parameters.get(SPARK_SIZE)) if partitions is None else None
        if size is not None and count:
            total, files = total + size, files + count
        elif spark:
            total, only_bytes = total + spark, True
        else:
            missing.append(str((unit.get("sd") or {}).get("location") or ""))
    return Stored(total, None if only_bytes else files, None if partitions is None else len(partitions),
                  unknown=len(missing)), missing


def folders(table: Mapping[str, Any], partitions: Sequence[Mapping[str, Any]] | None) -> tuple[str, ...]:
    """Where the files of ``table`` (a Thrift Table as data) are: its folder, or each of its ``partitions``'
    (None: unpartitioned), sorted."""
    units = [table] if partitions is None else partitions
    return tuple(sorted(str((u.get("sd") or {}).get("location") or "").rstrip("/") for u in units))


def _number(value: Any) -> int | None:
    """A statistic's value, None where it is missing or no count."""
    try:
        return int(value) if value is not None and int(value) >= 0 else None
    except ValueError:
        return None
