"""Applying a plan to a Glue Data Catalog: every table write a compare-and-swap on the table's ``VersionId``.

Glue versions each table: every change gives it a new ``VersionId``, and ``UpdateTable`` with a ``VersionId`` lands
only while that is still the table's, else ``ConcurrentModificationException``
(https://docs.aws.amazon.com/glue/latest/webapi/API_UpdateTable.html). So each write of a table is:

1. ``GetTable``: the table, and the ``VersionId`` it is at;
2. check its ``schemaflow.version`` against the one the plan expects (``expected``; None: unguarded, an adoption),
   else ``ConcurrentChange``;
3. ``UpdateTable`` of the whole entry as changed, with that ``VersionId`` and ``SkipArchive`` as
   ``metastore.options.skip_archive`` says (default false, as Glue: the previous version is archived; a table keeps
   at most 100,000 versions). A change by anyone between 1 and 3 moved the version: Glue refuses the update, which
   is ``ConcurrentChange`` with nothing changed.

A new table is ``CreateTable`` of the entry Spark's Hive catalog would write (``glue.spark_entry``), stamped with the
run's claim; a name already taken is ``ConcurrentChange``. ``DeleteTable`` and database writes take no version: they
run under the claim, as the Hive metastore's do, and Glue deletes no files of a dropped table (neither external nor
"managed": Glue manages none). A column change that cascades rewrites each partition whose column list differs,
after the table, in ``BatchUpdatePartition`` calls of at most 100 (Glue's limit); a run stopped part-way resumes on the
partitions still stale.

An Iceberg table is written by commits of its metadata (``glue.iceberg``): the next metadata file, then one
``UpdateTable`` naming it at the ``VersionId`` read with the metadata it was made on; its properties (the stamps among
them) are set by such a commit too, so a change and its stamp land together. A new one's metadata goes to its declared
location, else its database's folder, else ``<metastore.warehouse>/<database>.db/<name>`` (as pyiceberg's Glue catalog
places it). Views, renames and rewrites are not written to Glue by this backend: each is refused, saying so.
"""
from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, NoReturn
from collections.abc import Callable, Collection, Mapping, Sequence

from schemaflow.catalog.glue import iceberg
from schemaflow.catalog.glue.client import GlueCatalog, Missing, Stale, Taken
from schemaflow.catalog.glue.reader import GlueReader
from schemaflow.catalog.glue.shape import as_input, partition_input, table_input, thrift_table
from schemaflow.catalog.iceberg_updates import delete_metadata, write_metadata
from schemaflow.catalog.glue.spark_entry import fields, table_data
from schemaflow.catalog.hive.spark_schema import (NUM_BUCKETS, NUM_PARTITION_COLUMNS, PARTITION_COLUMN, SPARK_SCHEMA,
                                             SPARK_SCHEMA_PART, SPARK_SCHEMA_PARTS, schema_parameters, schema_text,
                                             spark_bucketing)
from schemaflow.catalog.hive.thrift_data import to_model
from schemaflow.errors import ConcurrentChange, SchemaflowError, Unreachable
from schemaflow.model import (COMMENT_KEY, METADATA_LOCATION, LIVE_STATE, SCHEMAFLOW_PREFIX, VERSION_KEY, Column, Database, IcebergState,
                              PartitionValues, Table, View, ViewSql, split_key, state_digest)
from schemaflow.sql.rewrite import Filled
from schemaflow.sql.storage import FIELD_DELIMITER, PATH_OPTION, SERIALIZATION_FORMAT
from schemaflow.sql.table_kinds import PROVIDER, data_source_provider

PARTITION_BATCH = 100  # BatchUpdatePartition's most entries a call


@dataclass
class GlueWriter:
    """Where a plan's actions run on a Glue catalog."""

    glue: GlueCatalog
    reader: GlueReader
    progress: Callable[[str], None] | None = None
    endpoint: str = field(init=False)  # the catalog it writes, as its reader names it

    def __post_init__(self) -> None:
        self.endpoint = self.reader.endpoint

    # Databases: no version to guard them by; they run under the run's claims, as the metastore's do.

    def add_database(self, database: Database) -> None:
        """Create ``database`` unless it exists (with no location declared, Glue keeps none)."""
        given = {"Description": database.comment, "LocationUri": database.location}
        entry = {"Name": database.name, **{k: v for k, v in given.items() if v},
                 "Parameters": dict(database.properties)}
        try:
            self.glue.call(f"creating database {database.name}",
                           lambda: self.glue.client.create_database(**self.glue.catalog, DatabaseInput=entry))
        except Taken:
            return

    def set_database_properties(self, name: str, properties: Mapping[str, str]) -> None:
        self.update_database_properties(name, (), lambda _: properties)

    def update_database_properties(self, name: str, keys: Collection[str],
                                   update: Callable[[Mapping[str, str]], Mapping[str, str]]) -> None:
        """``GetDatabase``, then ``UpdateDatabase`` with the properties ``update`` makes of the current values of
        ``keys``: unguarded (Glue versions no database)."""
        found = self.glue.call(f"reading database {name}",
                               lambda: self.glue.client.get_database(**self.glue.catalog, Name=name))["Database"]
        parameters = dict(found.get("Parameters") or {})
        parameters |= update({key: parameters[key] for key in keys if key in parameters})
        entry = {"Name": name, "Parameters": parameters,
                 **{key: found[key] for key in ("Description", "LocationUri") if found.get(key)}}
        self.glue.call(f"setting the properties of database {name}", lambda: self.glue.client.update_database(
            **self.glue.catalog, Name=name, DatabaseInput=entry))

    # Tables.

    def create_table(self, table: Table, claim: str) -> None:
        """``CreateTable`` of ``table`` as Spark enters it, stamped ``claim``; a managed table's files go in its
        database's folder where the database has one."""
        held = self.reader.database(table.database).location
        entry = table_data(table, {VERSION_KEY: claim}, f"{held.rstrip('/')}/{table.name}" if held else None)
        try:
            self.glue.call(f"creating {table.key}", lambda: self.glue.client.create_table(
                **self.glue.catalog, DatabaseName=table.database, TableInput=table_input(entry)))
        except Taken:
            raise ConcurrentChange(table.key, None, self._stamp(table.key),
                                   "schemaflow.version (its name is taken)") from None

    def add_columns(self, key: str, columns: Sequence[Column], expected: str | None) -> None:
        def add(data: dict[str, Any], live: Table) -> None:
            _set_columns(data, live, (*live.columns, *columns), live.partition_columns)
        self._update(key, expected, "adding columns to", add)

    def set_table_comment(self, key: str, comment: str | None, expected: str | None) -> None:
        def comment_on(data: dict[str, Any], _: Table) -> None:
            data["parameters"].pop(COMMENT_KEY, None)
            if comment:
                data["parameters"][COMMENT_KEY] = comment
        self._update(key, expected, "setting the comment of", comment_on)

    def set_column_comments(self, key: str, columns: Sequence[Column], expected: str | None) -> None:
        """Set the comment of each of ``columns`` (by name) as given."""
        comments = {c.name: c.comment for c in columns}
        def commented(data: dict[str, Any], live: Table) -> None:
            def of(found: Sequence[Column]) -> tuple[Column, ...]:
                return tuple(replace(c, comment=comments[c.name]) if c.name in comments else c for c in found)
            _set_columns(data, live, of(live.columns), of(live.partition_columns))
        self._update(key, expected, "setting column comments of", commented)

    def set_columns(self, key: str, columns: Sequence[Column], partition_columns: Sequence[Column],
                    cascade: bool, batched: bool, parameters: Mapping[str, str] = {},
                    expected: str | None = None) -> None:
        """Make ``columns`` and ``partition_columns`` the columns of ``key`` (a Hive-format table), with
        ``parameters`` set in the same guarded update; with ``cascade``, then those of its partitions, in batches
        (Glue has no cascade of its own: ``batched`` is always so)."""
        def changed(data: dict[str, Any], live: Table) -> None:
            provider = data["parameters"].get(PROVIDER)
            if data_source_provider(provider):
                raise SchemaflowError(f"{key} is a Spark data-source table (USING {provider}): schemaflow changes "
                                      "the columns of Hive-format tables only (re-create it STORED AS a format)")
            _set_columns(data, live, tuple(columns), tuple(partition_columns))
            data["parameters"] |= parameters
        self._update(key, expected, "changing the columns of", changed)
        if cascade:
            self.cascade_in_batches(key, columns)

    def cascade_in_batches(self, key: str, columns: Sequence[Column]) -> int:
        """Give every partition of ``key`` the column list ``columns``, at most ``PARTITION_BATCH`` a call; returns
        how many changed."""
        database, name = split_key(key)
        wanted = fields(columns)
        stale = [p for p in self.reader.partitions(key, columns=True)
                 if _listed(p.get("StorageDescriptor", {}).get("Columns", [])) != _listed(_glue_columns(wanted))]
        for start in range(0, len(stale), PARTITION_BATCH):
            entries = [{"PartitionValueList": p["Values"],
                        "PartitionInput": partition_input(p, {**p.get("StorageDescriptor", {}),
                                                              "Columns": _glue_columns(wanted)})}
                       for p in stale[start:start + PARTITION_BATCH]]
            answer = self.glue.call(f"updating partitions of {key}", partial(
                self.glue.client.batch_update_partition, **self.glue.catalog, DatabaseName=database, TableName=name,
                Entries=entries))
            if answer.get("Errors"):
                first = answer["Errors"][0]
                raise SchemaflowError(f"Glue refused updating {len(answer['Errors'])} partitions of {key}, the first "
                                      f"{first.get('PartitionValueList')}: {first.get('ErrorDetail')}; plan again to "
                                      "finish the rest")
            self._say(f"{key}: {min(start + PARTITION_BATCH, len(stale))} of {len(stale)} partitions rewritten")
        return len(stale)

    def set_parameters(self, key: str, set: Mapping[str, str], unset: Sequence[str],
                       expected: str | None = None) -> None:
        """Set and remove parameters of ``key`` in one guarded update; a ``schemaflow.`` value ``LIVE_STATE`` becomes
        the state digest of the table as this update leaves it. An Iceberg table's parameters are its metadata's
        properties: they are set by a commit of it."""
        found = self.reader.table(key)
        if iceberg.iceberg_entry(found):
            self._commit_iceberg(found, None, {}, None, set, unset, expected)
            return

        def parameters(data: dict[str, Any], _: Table) -> None:
            for parameter in unset:
                data["parameters"].pop(parameter, None)
            data["parameters"] |= set
            digested = [k for k, v in set.items() if v == LIVE_STATE and k.startswith(SCHEMAFLOW_PREFIX)]
            if digested:
                digest = state_digest(to_model(data))
                data["parameters"] |= dict.fromkeys(digested, digest)
        self._update(key, expected, "setting the parameters of", parameters, found)

    def set_storage(self, key: str, serde_properties: Mapping[str, str], buckets: int | None,
                    expected: str | None = None) -> None:
        """Make ``serde_properties`` the table's SERDEPROPERTIES (a data source's OPTIONS) and, unless None,
        ``buckets`` its bucket count, keeping what the catalog keeps there for itself, as the metastore's
        ``set_storage`` does."""
        def storage(data: dict[str, Any], _: Table) -> None:
            serde = data.setdefault("sd", {}).setdefault("serdeInfo", {})
            held = dict(serde.get("parameters") or {})
            derived = held.get(SERIALIZATION_FORMAT)
            kept = {k: v for k, v in held.items() if k in (SERIALIZATION_FORMAT, PATH_OPTION)}
            if derived not in (None, "1") and SERIALIZATION_FORMAT not in serde_properties:
                kept[SERIALIZATION_FORMAT] = serde_properties.get(FIELD_DELIMITER, "1")
            serde["parameters"] = {**kept, **serde_properties}
            if buckets is not None:
                if NUM_BUCKETS in data["parameters"]:
                    data["parameters"][NUM_BUCKETS] = str(buckets)
                if data["sd"].get("numBuckets", -1) > 0:
                    data["sd"]["numBuckets"] = buckets
        self._update(key, expected, "changing the storage of", storage)

    def drop_table(self, key: str, expected: str | None) -> None:
        """``DeleteTable`` of ``key`` once its stamp is ``expected`` (Glue takes no version on a delete); its files
        stay where they are: Glue deletes none (an Iceberg table's metadata and data files too)."""
        self._check(key, self.reader.table(key), expected)
        database, name = split_key(key)
        self.glue.call(f"dropping {key}", lambda: self.glue.client.delete_table(
            **self.glue.catalog, DatabaseName=database, Name=name))

    def check_guards(self, key: str) -> None:
        """Raise unless Glue refuses an ``UpdateTable`` of ``key`` at a ``VersionId`` other than the table's: the
        guard every write relies on (moto's Glue, for one, takes any). The update sent is the entry as read, so a
        catalog that takes it is left as it was."""
        found = self.reader.table(key)
        version = str(found["VersionId"])
        stale = str(int(version) + 1_000) if version.isdigit() else version + "0"
        try:
            self._put(key, as_input(found), stale, "checking the guard of")
        except Stale:
            return
        raise SchemaflowError(f"{self.endpoint} took an UpdateTable of {key} at VersionId {stale}, not the table's "
                              f"({version}): its writes are not guarded against a concurrent writer, so schemaflow "
                              "applies nothing to it")

    def after_apply(self, changed: Sequence[str]) -> list[str]:
        """Nothing: no engine caches a Glue table on schemaflow's behalf."""
        return []

    def beside(self) -> AbstractContextManager[GlueWriter | None]:
        return nullcontext(None)

    # Iceberg tables.

    def commit_iceberg(self, table: Table, sources: Mapping[str, str], requires: IcebergState | None, create: bool,
                       set: Mapping[str, str], unset: Sequence[str], expected: str | None = None,
                       backup: str | None = None, keep: bool = True) -> None:
        """Create the Iceberg table ``table`` (``create``), or commit it as ``table`` says with ``set`` and ``unset``
        among its properties, guarded as the module says."""
        if backup is not None:
            raise SchemaflowError(f"{table.key}: a Parquet table is not converted to Iceberg in place in Glue (its "
                                  "files would be registered under a rename Glue does not have): re-create it")
        if create:
            self._create_iceberg(table, set)
        else:
            self._commit_iceberg(self.reader.table(table.key), table, sources, requires, set, unset, expected)

    def register_table(self, key: str, metadata_location: str) -> None:
        """Register ``key`` as the Iceberg table whose current metadata file is ``metadata_location``: one
        ``CreateTable`` of the entry pyiceberg's Glue catalog writes for it, no file written; ``ConcurrentChange`` where
        the name is taken. A create whose outcome is not known is read back: it landed if ``key`` names that file."""
        database, name = split_key(key)
        entry = iceberg.registered(key, metadata_location, self._storage(database))
        try:
            self.glue.call(f"registering {key}", lambda: self.glue.client.create_table(
                **self.glue.catalog, DatabaseName=database, TableInput=entry))
        except Taken:
            raise ConcurrentChange(key, None, "a table registered or created by another writer",
                                   "catalog entry") from None
        except Unreachable:
            try:
                landed = self.reader.table(key)["Parameters"].get(METADATA_LOCATION) == metadata_location
            except SchemaflowError:
                landed = False
            if not landed:
                raise

    def _create_iceberg(self, table: Table, set: Mapping[str, str]) -> None:
        held = self.reader.database(table.database).location
        warehouse = self.reader.warehouse
        location = table.location or (f"{held.rstrip('/')}/{table.name}" if held else None) or (
            f"{warehouse.rstrip('/')}/{table.database}.db/{table.name}" if warehouse else None)
        if location is None:
            raise SchemaflowError(f"{table.key}: an Iceberg table needs a place for its files: declare its location, "
                                  "give its database a location, or set metastore.warehouse; nothing was created")
        prepared = iceberg.prepare_create(table, set, location, self._storage(table.database))
        write_metadata(prepared.metadata, prepared.location)
        try:
            self.glue.call(f"creating {table.key}", lambda: self.glue.client.create_table(
                **self.glue.catalog, DatabaseName=table.database, TableInput=prepared.entry))
        except Taken:
            delete_metadata(prepared.location)
            raise ConcurrentChange(table.key, None, self._stamp(table.key),
                                   "schemaflow.version (its name is taken)") from None
        except BaseException:
            delete_metadata(prepared.location)
            raise

    def _commit_iceberg(self, found: Mapping[str, Any], table: Table | None, sources: Mapping[str, str],
                        requires: IcebergState | None, set: Mapping[str, str], unset: Sequence[str],
                        expected: str | None) -> None:
        """Commit the Iceberg table ``found`` (as ``GetTable`` gave it) at its ``VersionId``."""
        key = f"{found['DatabaseName']}.{found['Name']}"
        if not iceberg.iceberg_entry(found):
            raise SchemaflowError(f"{key} is no longer an Iceberg table in Glue: plan again; nothing was committed")
        prepared = iceberg.prepare_commit(found, self._storage(found["DatabaseName"]), table, sources, requires, set,
                                          unset, expected)
        write_metadata(prepared.metadata, prepared.location)
        try:
            self._put(key, prepared.entry, str(found["VersionId"]), "committing the Iceberg table")
        except Stale:
            delete_metadata(prepared.location)  # never named by the catalog: nobody reads it
            raise ConcurrentChange(key, expected, self._stamp(key), "VersionId (another writer committed)") from None
        except BaseException:
            delete_metadata(prepared.location)
            raise

    def _storage(self, database: str) -> tuple[str | None, ...]:
        """Where an Iceberg table of ``database`` may keep its metadata: its database's storage, the warehouse's."""
        return (self.reader.database(database).location, self.reader.warehouse)

    # What Glue does not take from this backend.

    def create_view(self, view: View, replace: bool, claim: str) -> None:
        _refuse_view(view.key)

    def drop_view(self, key: str, expected: str | None = None, engine: bool = False) -> None:
        _refuse_view(key)

    def partition_view(self, key: str, columns: Sequence[str], expected: str | None = None) -> None:
        _refuse_view(key)

    def change_view_partitions(self, key: str, columns: Sequence[str], add: Sequence[PartitionValues],
                               drop: Sequence[PartitionValues], kept: Any = None) -> None:
        _refuse_view(key)

    def keep_view_partitions(self, key: str) -> Any:
        _refuse_view(key)

    def check_views(self, views: Mapping[str, ViewSql | None]) -> None:
        if views:
            _refuse_view(min(views))

    def rewrite_table(self, key: str, table: Table, create: str, columns: Sequence[Filled], staging: str, backup: str,
                      expected: str | None, version: str | None, claim: str, registrable: bool = False,
                      records: Mapping[str, str] = {}) -> None:
        _refuse_rename(key)

    def restore_table(self, key: str, backup: str, temporary: str, backup_version: str | None, expected: str | None,
                      version: str | None, claim: str) -> None:
        _refuse_rename(key)

    # The guarded update.

    def _update(self, key: str, expected: str | None, doing: str,
                change: Callable[[dict[str, Any], Table], None], found: Mapping[str, Any] | None = None) -> None:
        """``GetTable`` (unless given, as ``found``), check the stamp, ``change`` the table's Thrift data,
        ``UpdateTable`` at the version read."""
        found = self.reader.table(key) if found is None else found
        if iceberg.iceberg_entry(found):
            raise SchemaflowError(f"{key} is an Iceberg table in Glue: its columns, comment and storage change by "
                                  "commits of its metadata only; plan again, nothing was changed")
        self._check(key, found, expected)
        data = thrift_table(found)
        live = to_model(data)
        if not isinstance(live, Table):
            _refuse_view(key)
        change(data, live)
        try:
            self._put(key, table_input(data), str(found["VersionId"]), doing)
        except Stale:
            raise ConcurrentChange(key, expected, self._stamp(key), "VersionId (another writer changed it)") from None

    def _put(self, key: str, entry: Mapping[str, Any], version: str, doing: str) -> None:
        """``UpdateTable`` of ``key`` to the ``TableInput`` ``entry``, at ``version``."""
        database, _ = split_key(key)
        self.glue.call(f"{doing} {key}", lambda: self.glue.client.update_table(
            **self.glue.catalog, DatabaseName=database, TableInput=dict(entry), VersionId=version,
            SkipArchive=self.glue.options.skip_archive))

    def _check(self, key: str, found: Mapping[str, Any], expected: str | None) -> None:
        if expected is None:
            return
        held = iceberg.stamp(found, self._storage(found["DatabaseName"])) if iceberg.iceberg_entry(found) \
            else (found.get("Parameters") or {}).get(VERSION_KEY)
        if held != expected:
            raise ConcurrentChange(key, expected, held)

    def _stamp(self, key: str) -> str | None:
        """The ``schemaflow.version`` ``key`` holds now (None: none, or no such table)."""
        try:
            return (self.reader.table(key).get("Parameters") or {}).get(VERSION_KEY)
        except Missing:
            return None

    def _say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)


def _set_columns(data: dict[str, Any], live: Table, columns: Sequence[Column],
                 partition_columns: Sequence[Column]) -> None:
    """Make ``columns`` and ``partition_columns`` those of the table ``data`` (``live`` as read): in the storage
    descriptor where the catalog's column list is the table's (a Hive format, or a data source Spark stores in
    Hive's form), and in Spark's copy of the schema where the table has one, rewritten as Spark writes it."""
    parameters = data["parameters"]
    sd = data.setdefault("sd", {})
    placeholder = bool(data_source_provider(parameters.get(PROVIDER))) and [c.get("name") for c in sd.get("cols", [])] \
        != [c.name for c in live.columns]
    if not placeholder:
        sd["cols"] = fields(columns)
    data["partitionKeys"] = fields(partition_columns)
    if schema_text(parameters) is None:
        return  # not entered as Spark enters a table: readers read the catalog's columns
    bucketing = spark_bucketing(parameters)
    for parameter in [k for k in parameters if k in (SPARK_SCHEMA, SPARK_SCHEMA_PARTS, NUM_PARTITION_COLUMNS)
                      or k.startswith((SPARK_SCHEMA_PART, PARTITION_COLUMN))]:
        del parameters[parameter]
    parameters |= schema_parameters(columns, partition_columns, bucketing, live.spelt)


def _glue_columns(thrift: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"Name": c["name"], "Type": c["type"], **({"Comment": c["comment"]} if c.get("comment") else {})}
            for c in thrift]


def _listed(columns: Sequence[Mapping[str, Any]]) -> list[tuple[Any, Any, Any]]:
    return [(c.get("Name"), c.get("Type"), c.get("Comment") or None) for c in columns]


def _refuse_view(key: str) -> NoReturn:
    raise SchemaflowError(f"{key}: the glue backend does not write views (Glue's views are out of its scope for "
                          "now): keep views in a Hive metastore, or leave them out of this project")


def _refuse_rename(key: str) -> NoReturn:
    raise SchemaflowError(f"{key}: Glue has no rename, so a table is not rewritten nor restored there: re-create it "
                          "by hand, or keep it in a Hive metastore")
