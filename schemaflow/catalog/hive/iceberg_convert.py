"""A Parquet table converted in place into an Iceberg table, its files registered, none rewritten.

As Iceberg's own ``migrate`` procedure does: the Parquet table's files become the data files of a new
Iceberg table of the same name, found by name through Iceberg's name mapping (Hive's and Spark's
Parquet files carry no field ids), each file of a Hive partition carrying that partition's values, so
that the partition columns, which the files do not hold, read back from them. The Parquet table is
kept, renamed to its backup name, until a later destructive step drops its entry.

The order makes every stop recoverable, and nothing is changed before the last file was read:

1. read the table's entry, partitions and files, and make the Iceberg metadata of them (its manifests
   are written under the table's folder, unnamed by any table yet);
2. make the Parquet table external (if it was managed), so that no later drop of it deletes the files
   the Iceberg table now reads, and a rename cannot move them (the metastore moves a managed
   table's folder on rename);
3. rename it to its backup name, marked ``schemaflow.backup_of``, with the run's version;
4. register the Iceberg table under the name (``iceberg_commit.register``), with the step's stamp.

Each write is guarded by the run's claim. A run stopped after step 3 left the name free and the backup
marked: the next plan finds the backup and converts from it again (``plan.iceberg``). Iceberg's metadata
and new data files go to ``_iceberg/`` under the table's folder (``write.metadata.path``,
``write.data.path``), a folder Hive and Spark skip when they read the backup's files.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from typing import Any

from schemaflow.catalog.backend import HiveClient
from schemaflow.catalog.hive.iceberg_commit import register
from schemaflow.catalog.iceberg_updates import METADATA_PATH, first_metadata
from schemaflow.catalog.hive.registrable import data_files, int96_writers
from schemaflow.catalog.hive.thrift_data import TRANSLATED, to_model, translated
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import (APPLIED_STATE_KEY, BACKUP_OF, CONVERTED_FOLDER, HIVE_DEFAULT_PARTITION, REWRITE_OF,
                              VERSION_KEY, Table, split_key, state_digest)
from schemaflow.sql.table_kinds import PROVIDER, data_source_provider

DATA_PATH = "write.data.path"
NAME_MAPPING = "schema.name-mapping.default"  # Iceberg's: how a file without field ids is read, by column name


def convert(client: HiveClient, table: Table, backup: str, set: Mapping[str, str], expected: str | None,
            keep: bool = True) -> None:
    """Make ``table`` (an Iceberg table) of the Parquet table of the same name, whose stamp is ``expected``,
    keeping that one as ``backup``; ``set`` (the step's stamp) is written in the Iceberg table's first commit.
    A Parquet table a stopped run already renamed to ``backup`` is converted from there.

    Not to ``keep`` (a conversion by copying, whose rewrite kept the table as it was): ``backup`` is where the Parquet
    table's entry waits, marked as the copy of ``table`` a rewrite made (a stopped run's next plan finishes it as
    such), until the Iceberg table is registered; then the entry is dropped, its files left to the Iceberg table."""
    database, name = split_key(table.key)
    backup_name = split_key(backup)[1]
    mark = BACKUP_OF if keep else REWRITE_OF
    if client.retrying(lambda: client.msc.tableExists(database, name)):
        source = client.retrying(lambda: client.msc.getTable(database, name))
        found = source.getParameters().get(VERSION_KEY)
        if found != expected:
            raise ConcurrentChange(table.key, expected, found)
    else:
        source = client.retrying(lambda: client.msc.getTable(database, backup_name))
        if source.getParameters().get(mark) != table.key:
            raise SchemaflowError(f"{backup} is not the Parquet table {table.key} was converted from: plan again")
    location = source.getSd().getLocation().rstrip("/")
    metadata = _metadata(client, table, source, location, set)
    if source.getTableName() == name:
        _keep_as_backup(client, source, backup_name, table.key, set.get(VERSION_KEY), expected, mark)
    register(client, table.key, metadata)
    if not keep:  # external: the metastore deletes no file of it
        client.retrying(lambda: client.msc.dropTable(database, backup_name, False, True))


def _metadata(client: HiveClient, table: Table, source: Any, location: str, set: Mapping[str, str]) -> Any:
    """The Iceberg table's first metadata: its schema, spec and order, the name mapping, and one snapshot
    appending every file of the Parquet table (``source``)."""
    pyiceberg = _pyiceberg()
    folder = f"{location}/{CONVERTED_FOLDER}"  # hidden from Hive's and Spark's listing of the backup's files
    properties = {**set, DATA_PATH: f"{folder}/data", METADATA_PATH: f"{folder}/metadata"}
    empty = first_metadata(table, location, properties)
    empty = empty.model_copy(update={"properties": {**empty.properties,
                                                    NAME_MAPPING: empty.schema().name_mapping.model_dump_json()}})
    io = pyiceberg.load_file_io({}, location)
    iceberg = pyiceberg.Table((table.database, table.name), empty, "", io, None)  # type: ignore[arg-type]  # never committed through a catalog: its metadata is read off the transaction
    transaction = iceberg.transaction()
    with transaction.update_snapshot().fast_append() as append:
        for data_file in _data_files(client, source, empty, io, location):
            append.append_data_file(data_file)
    return transaction.table_metadata


def _data_files(client: HiveClient, source: Any, metadata: Any, io: Any, location: str) -> Iterator[Any]:
    """Each Parquet file of the table, as an Iceberg data file with its statistics (read from its footer) and,
    in a partitioned table, the values of the partition it is in."""
    pyiceberg = _pyiceberg()
    keys = [k.getName() for k in source.getPartitionKeys()]
    # Statistics come from the file; the partition from the metastore (the files do not hold its columns).
    unpartitioned = metadata.model_copy(update={"partition_specs": [pyiceberg.UNPARTITIONED], "default_spec_id": 0})
    spec, schema = metadata.spec(), metadata.schema()
    data_source = data_source_provider(source.getParameters().get(PROVIDER)) is not None
    if not keys:
        folders: list[tuple[str, Sequence[str | None]]] = [(location, ())]
    else:
        partitions = client.retrying(lambda: client.msc.listPartitions(source.getDbName(), source.getTableName(), -1))
        folders = sorted((p.getSd().getLocation().rstrip("/"), [None if v == HIVE_DEFAULT_PARTITION else v
                                                                for v in p.getValues()]) for p in partitions)
    for folder, values in folders:
        record = pyiceberg.Record(*(_partition_value(schema, field, value)
                                    for field, value in zip(spec.fields, values, strict=True)))
        try:
            paths = data_files(folder)
        except SchemaflowError as error:
            raise SchemaflowError(f"{error}. Nothing was changed") from None
        for path in paths:
            try:
                data_file = pyiceberg.parquet_file_to_data_file(io, unpartitioned, path)
            except (TypeError, ValueError, pyiceberg.UnsupportedType) as error:
                raise SchemaflowError(_unregistrable(path, error, data_source)) from None
            data_file[pyiceberg.partition_position] = record  # a Record: its fields are set by position
            data_file.spec_id = spec.spec_id
            yield data_file


def _unregistrable(path: str, error: Exception, data_source: bool) -> str:
    """Why the Parquet file at ``path`` (of a data-source table's, with ``data_source``) cannot be registered, and the
    way out; nothing was changed yet."""
    why = f"Iceberg cannot register the Parquet file {path}: {error}. Nothing was changed"
    if "timestamp[ns]" in str(error):
        why += (f": its timestamps are INT96, {int96_writers(data_source)}, which Iceberg's Python implementation "
                "cannot read")
    return why + (". Plan again against the metastore: a plan that reads the files' footers converts such a table by "
                  "copying its rows")


def _partition_value(schema: Any, field: Any, value: str | None) -> Any:
    """A Hive partition value (text) as Iceberg keeps it in a partition record (a date as days, ...)."""
    if value is None:
        return None
    field_type = schema.find_field(field.source_id).field_type
    return _pyiceberg().literal(value).to(field_type).value


def _keep_as_backup(client: HiveClient, source: Any, backup_name: str, key: str, version: str | None,
                    expected: str | None, mark: str) -> None:
    """Rename the Parquet table to ``backup_name``, marked by ``mark`` as ``key``'s, external first so that the
    metastore moves no file, and dropping it deletes none: the Iceberg table reads them now. A table Hive 4 made
    external in place of managed (``thrift_data.translated``) would delete them, and says so: it no longer does."""
    name, parameters = source.getTableName(), source.getParameters()
    if source.getTableType() != "EXTERNAL_TABLE" or translated(dict(parameters)):
        source.setTableType("EXTERNAL_TABLE")
        parameters.put("EXTERNAL", "TRUE")
        for parameter in TRANSLATED:
            parameters.remove(parameter)
        client.alter(source, expected)
    source.setTableName(backup_name)
    parameters.put(mark, key)
    if version is not None:
        parameters.put(VERSION_KEY, version)
    parameters.put(APPLIED_STATE_KEY, state_digest(to_model(client.to_data(source))))
    client.alter(source, expected, renames=name)


class _Pyiceberg:
    """The parts of pyiceberg a conversion uses, imported at its first use."""

    def __init__(self) -> None:
        from pyiceberg.expressions.literals import literal
        from pyiceberg.io import load_file_io
        from pyiceberg.io.pyarrow import UnsupportedPyArrowTypeException, parquet_file_to_data_file
        from pyiceberg.manifest import DATA_FILE_TYPE
        from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
        from pyiceberg.table import Table as IcebergTable
        from pyiceberg.typedef import Record
        self.literal, self.load_file_io, self.parquet_file_to_data_file = literal, load_file_io, parquet_file_to_data_file
        self.UNPARTITIONED, self.Table, self.Record = UNPARTITIONED_PARTITION_SPEC, IcebergTable, Record
        self.UnsupportedType = UnsupportedPyArrowTypeException
        self.partition_position = [f.name for f in DATA_FILE_TYPE[2].fields].index("partition")


@cache
def _pyiceberg() -> _Pyiceberg:
    return _Pyiceberg()  # pyiceberg is there: iceberg_commit made the first metadata
