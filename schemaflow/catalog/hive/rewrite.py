"""A table made anew from its own rows through Spark, verified, then swapped in under its name.

What ``plan.rewrite`` plans, in an order that leaves every stop recoverable and readers on the old table until
the new one is proved:

1. fill the staging table (``<name>_rewrite_``, the new definition, born with the run's claim and marked
   ``schemaflow.rewrite_of``) by the planned ``INSERT ... SELECT``, in verified chunks journaled on it, and again
   what writers changed meanwhile (``catalog.hive.rewrite_copy``): a run stopped during the copy is resumed by the next
   from its first unfinished chunk;
2. cut-over, as soon as a last look at the table's files finds nothing left to copy: rename the table to its
   backup name (guarded by its stamp, marked ``schemaflow.backup_of``, keeping the version it had when planned, or
   ``NO_VERSION`` for a table that had none: adopted, or its version replaced by a stopped run's claim), then the staging table to the table's name
   (guarded by the claim), each one ``alter_table``, back to back. A managed table's folder moves with its name, so
   the new table's files end in the table's folder and the backup's in its own.

A Delta table is rewritten the same way (``plan.delta``): its staging table is created through delta-spark (its
definition and properties in its log's first commit; the entry takes the claim and the marks, which delta-spark never
writes there), the copy starts only on the log version the plan read (``Metastore.rewrite_delta``), each round's look
at the table reads its log's version too (a commit that wrote no file is in the log alone), and the renames move each
table's folder, log and all: its files are found relative to its log, so each table reads as before under its new
name. After them, delta-spark's logs kept by folder are dropped (both folders hold another table's log now).

A run stopped after the first rename left the name free, the backup marked and the staging table verified: the
next plan finds them and finishes the cut-over (``plan.diff``).

The backup is swapped back in (``restore``, the ``schemaflow restore`` command) by three renames, which a stopped
run's next one finishes from the names and marks it finds.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from schemaflow.catalog.hive import rewrite_copy
from schemaflow.catalog.backend import HiveClient
from schemaflow.catalog.delta_log import is_delta
from schemaflow.catalog.hive.jvm import jvm_view
from schemaflow.claims import parse_claim, settled
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import (BACKUP_OF, NO_VERSION, RESTORE_VERSION, REWRITE_OF, SWAPPED_OUT_BY, VERSION_KEY, Table,
                              split_key)
from schemaflow.sql.rewrite import MICROS, TIMESTAMP_TYPE, Filled
from schemaflow.sql.storage import PATH_OPTION
from schemaflow.sql.table_kinds import PROVIDER, data_source_provider


def rewrite(client: HiveClient, key: str, table: Table, create: str, columns: Sequence[Filled], staging: str,
            backup: str, expected: str | None, version: str | None, claim: str, registrable: bool = False,
            records: Mapping[str, str] = {}) -> None:
    """Make ``key`` anew as ``table`` (see the module docstring); ``create`` is the staging table's claimed CREATE,
    ``columns`` what fills each of its columns, ``expected`` the table's stamp (this run's claim), ``version`` the one
    it had when planned, which it keeps as the backup, and ``claim`` the staging table's; ``registrable``: its files
    written as Iceberg can register them (timestamps in microseconds); ``records``: the records of the migrations the
    rewrite applies, set in the rename that makes the copy the table, so that its columns and they land together."""
    database, name = split_key(key)
    if _exists(client, database, name):
        source = _table(client, database, name)
        found = source.getParameters().get(VERSION_KEY)
        if found != expected:
            raise ConcurrentChange(key, expected, found)
        copying = rewrite_copy.copying(source, key, staging, table, columns, {TIMESTAMP_TYPE: MICROS} if registrable else {})
        rewrite_copy.copy(client, source, copying, create, claim)
        # Read again: what else changed in its entry meanwhile is kept (its version is the guard's to check).
        _rename(client, _table(client, database, name), split_key(backup)[1], expected,
                {BACKUP_OF: key, VERSION_KEY: settled(version) or NO_VERSION}, ())
        client.report(f"renamed {key} to {backup}; renaming {staging} to {key}")
    else:
        kept = _table(client, database, split_key(backup)[1])
        if kept.getParameters().get(BACKUP_OF) != key:
            raise SchemaflowError(f"{backup} is not the table {key} was before its rewrite: plan again")
    staged = _table(client, database, split_key(staging)[1])
    if staged.getParameters().get(REWRITE_OF) != key:
        raise SchemaflowError(f"{staging} is not the copy of {key} a rewrite made: plan again")
    # Made by this run, or by a stopped one, whose claim it holds: it takes this run's as it takes the name.
    _rename(client, staged, name, staged.getParameters().get(VERSION_KEY), {VERSION_KEY: claim, **records},
            (REWRITE_OF, *rewrite_copy.journal_keys(staged.getParameters())))
    _forget(client, is_delta(staged.getParameters()))


def restore(client: HiveClient, key: str, backup: str, temporary: str, backup_version: str | None,
            expected: str | None, version: str | None, claim: str) -> None:
    """Swap the backup a rewrite kept in as ``key``, no row copied (``plan.restore``), from wherever a stopped run
    left it: rename ``backup`` to ``temporary`` (guarded by ``backup_version``; marked as becoming ``key``, with the
    ``version`` the table had), ``key`` to ``backup`` (guarded by ``expected``; it gets that version back and is marked
    as the backup, and ``schemaflow.swapped_out_by`` this run: rows written to it under the name are in no other table),
    then ``temporary`` to ``key`` (taking ``claim``). The name is missing only between the last two."""
    database, name = split_key(key)
    temporary_name = split_key(temporary)[1]
    if not _exists(client, database, temporary_name):
        kept = _table(client, database, split_key(backup)[1])
        if kept.getParameters().get(BACKUP_OF) != key:
            raise SchemaflowError(f"{backup} is not the table {key} was before its rewrite: nothing was restored")
        _rename(client, kept, temporary_name, backup_version,
                {REWRITE_OF: key, RESTORE_VERSION: settled(version) or NO_VERSION,
                 VERSION_KEY: kept.getParameters().get(VERSION_KEY) or NO_VERSION}, (BACKUP_OF,))
    restoring = _table(client, database, temporary_name)
    if restoring.getParameters().get(REWRITE_OF) != key:
        raise SchemaflowError(f"{temporary} is not the backup of {key} a restore began: rename or drop it, then "
                              "restore again")
    if _exists(client, database, name):
        client.report(f"renaming {key} to {backup}, then {temporary} to {key}")
        previous = settled(restoring.getParameters().get(RESTORE_VERSION))
        run = parse_claim(claim)
        _rename(client, _table(client, database, name), split_key(backup)[1], expected,
                {BACKUP_OF: key, SWAPPED_OUT_BY: run.run if run else "unknown", VERSION_KEY: previous or NO_VERSION},
                ())
    _rename(client, restoring, name, restoring.getParameters().get(VERSION_KEY), {VERSION_KEY: claim},
            (REWRITE_OF, RESTORE_VERSION, SWAPPED_OUT_BY))
    _forget(client, is_delta(restoring.getParameters()))


def _forget(client: HiveClient, delta: bool) -> None:
    """Drop what the session keeps of tables whose names (and, managed, folders) the renames gave to other tables:
    Spark's tables by name, and, renaming Delta tables (``delta``), delta-spark's logs by their folders."""
    client.spark._jsparkSession.sessionState().catalog().invalidateAllCachedTables()
    if delta:
        jvm_view(client.spark).org.apache.spark.sql.delta.DeltaLog.clearCache()


def _rename(client: HiveClient, table: Any, name: str, expected: str | None, set: Mapping[str, str],
            unset: Sequence[str]) -> None:
    """Rename ``table`` to ``name`` in one guarded ``alter_table``, with ``set`` and ``unset`` parameters (never
    ``schemaflow.version``, the key it is guarded by: HIVE-26882's compare-and-swap refuses a write that unsets it; a
    table without a version keeps ``NO_VERSION``). The metastore moves a managed table's folder to the new name's; a Spark data-source table's own record of its
    folder (the storage property ``path``) is moved with it, as Spark's own rename does."""
    old = table.getTableName()
    parameters = table.getParameters()
    for key in unset:
        parameters.remove(key)
    for key, value in sorted(set.items()):
        parameters.put(key, value)
    storage = table.getSd().getSerdeInfo().getParameters()
    if (data_source_provider(parameters.get(PROVIDER)) and table.getTableType() == "MANAGED_TABLE"
            and storage is not None and storage.containsKey(PATH_OPTION)):
        folder = client.retrying(lambda: client.msc.getDatabase(table.getDbName())).getLocationUri().rstrip("/")
        storage.put(PATH_OPTION, f"{folder}/{name.lower()}")
    table.setTableName(name)
    client.alter(table, expected, renames=old)


def _exists(client: HiveClient, database: str, name: str) -> bool:
    return bool(client.retrying(lambda: client.msc.tableExists(database, name)))


def _table(client: HiveClient, database: str, name: str) -> Any:
    return client.retrying(lambda: client.msc.getTable(database, name))
