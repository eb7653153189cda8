"""A table made anew from its own rows through Spark, verified, then swapped in under its name.

What ``plan.rewrite`` plans, in an order that leaves every stop recoverable and readers on the old table until
the new one is proved:

1. create the new definition as the staging table (``<name>_rewrite_``), born with the run's claim and marked
   ``schemaflow.rewrite_of``; a staging table a stopped run left is dropped and made again;
2. fill it by the planned ``INSERT ... SELECT`` (dynamic partitions, as many as the table has), observing the
   totals of the rows as they are written: the row count, a checksum of every column, and the values a
   conversion turned into NULL (``sql.rewrite``);
3. verify: the same totals of what the staging table holds, read back; where they differ, per partition, to
   say where; and that nothing was written to the table meanwhile (the bytes and files under its folder, its
   partitions). Any difference, a value made NULL, or a write, drops the staging table and stops, the table
   untouched;
4. cut-over: rename the table to its backup name (guarded by its stamp, marked ``schemaflow.backup_of``), then
   the staging table to the table's name (guarded by the claim), each one ``alter_table``. A managed table's
   folder moves with its name, so the new table's files end in the table's folder and the backup's in its own.

A run stopped after the first rename left the name free, the backup marked and the staging table verified: the
next plan finds them and finishes the cut-over (``plan.diff``).
"""
from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from schemaflow.catalog.backend import HiveClient
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import BACKUP_OF, REWRITE_OF, VERSION_KEY, Table, split_key
from schemaflow.sql import ddl
from schemaflow.sql.rewrite import HIGH, LOST, LOW, ROWS, Filled, checksums, flagged, moved, stored, totals
from schemaflow.sql.storage import PATH_OPTION
from schemaflow.sql.table_kinds import PROVIDER, data_source_provider

# Spark's checks on an INSERT with dynamic partitions into a Hive table, lifted for the copy (a table may
# have any number of partitions), then put back as they were.
DYNAMIC_PARTITIONS = {"hive.exec.dynamic.partition": "true", "hive.exec.dynamic.partition.mode": "nonstrict",
                      "hive.exec.max.dynamic.partitions": "100000000",
                      "hive.exec.max.dynamic.partitions.pernode": "100000000"}
SHOWN_DIFFERENCES = 10  # partitions a failed verification lists; the rest are counted


def rewrite(client: HiveClient, key: str, table: Table, create: str, columns: Sequence[Filled], staging: str,
            backup: str, expected: str | None, claim: str) -> None:
    """Make ``key`` anew as ``table`` (see the module docstring); ``create`` is the staging table's claimed CREATE,
    ``columns`` what fills each of its columns, ``expected`` the table's stamp and ``claim`` the staging table's."""
    database, name = split_key(key)
    if _exists(client, database, name):
        source = _table(client, database, name)
        found = source.getParameters().get(VERSION_KEY)
        if found != expected:
            raise ConcurrentChange(key, expected, found)
        _copy(client, source, table, create, columns, staging, claim)
        # Read again: what else changed in its entry meanwhile is kept (its version is the guard's to check).
        _rename(client, _table(client, database, name), split_key(backup)[1], expected, {BACKUP_OF: key}, ())
    else:
        kept = _table(client, database, split_key(backup)[1])
        if kept.getParameters().get(BACKUP_OF) != key:
            raise SchemaflowError(f"{backup} is not the table {key} was before its rewrite: plan again")
    staged = _table(client, database, split_key(staging)[1])
    if staged.getParameters().get(REWRITE_OF) != key:
        raise SchemaflowError(f"{staging} is not the copy of {key} a rewrite made: plan again")
    # Made by this run, or by a stopped one, whose claim it holds: it takes this run's as it takes the name.
    _rename(client, staged, name, staged.getParameters().get(VERSION_KEY), {VERSION_KEY: claim}, (REWRITE_OF,))
    # Spark keeps what it read of a table by name; both names now hold other tables.
    client.spark._jsparkSession.sessionState().catalog().invalidateAllCachedTables()


def _copy(client: HiveClient, source: Any, table: Table, create: str, columns: Sequence[Filled], staging: str,
          claim: str) -> None:
    """Create, fill and verify the staging table from the table ``source``; a difference, or a write to ``source``
    meanwhile, drops it and stops the rewrite."""
    key = f"{source.getDbName()}.{source.getTableName()}"
    database, name = split_key(staging)
    if _exists(client, database, name):
        if _table(client, database, name).getParameters().get(REWRITE_OF) != key:
            raise SchemaflowError(f"{staging} exists and is no copy of {key} a rewrite began: rename or drop it, then "
                                  "apply again. Nothing was changed")
        client.spark.sql(ddl.drop("table", staging))  # a stopped run's copy: made again from the start
    client.spark.sql(create)
    made = _table(client, database, name)
    made.getParameters().put(REWRITE_OF, key)
    client.alter(made, claim)
    before = _footprint(client, source)
    client.report(f"copying the rows of {key} into {staging}")
    with _settings(client, DYNAMIC_PARTITIONS if table.partition_columns and not table.data_source else {}):
        written = _write(client, key, columns, staging)
    client.report(f"verifying {staging} against the rows of {key}")
    differences = _differences(client, key, table, columns, staging, written)
    if not differences and _footprint(client, source) != before:
        differences = (f"{key} was written to during the copy (its files or partitions changed), and the copy may "
                       "lack those rows; apply again when its writers pause")
    if differences:
        client.spark.sql(ddl.drop("table", staging))
        raise SchemaflowError(f"the rewrite of {key} stopped before the cut-over: {differences}. {key} is unchanged "
                              f"and the copy was dropped")


def _footprint(client: HiveClient, source: Any) -> tuple[int, int, int]:
    """What a write to the table ``source`` changes: the bytes and files under its folder (one call to the file
    system) and its number of partitions. A partition kept outside the table's folder is counted, not listed."""
    path = client.spark._jvm.org.apache.hadoop.fs.Path(source.getSd().getLocation())
    summary = path.getFileSystem(client.spark._jsc.hadoopConfiguration()).getContentSummary(path)
    partitions = client.retrying(lambda: client.msc.getNumPartitionsByFilter(source.getDbName(), source.getTableName(),
                                                                            "")) if source.getPartitionKeys() else 0
    return int(summary.getLength()), int(summary.getFileCount()), int(partitions)


def _write(client: HiveClient, key: str, columns: Sequence[Filled], staging: str) -> dict[str, int | None]:
    """Fill ``staging`` with the rows the rewrite's query moves out of ``key``, as ``INSERT INTO staging <select>``
    does (by position), observing their totals (``sql.rewrite.totals``) as they are written: the source is read
    once, by the copy itself."""
    from pyspark.sql import Observation, functions

    observation = Observation(f"schemaflow rewrite {time.monotonic_ns()}")
    rows = client.spark.sql(flagged(key, columns))
    observed = rows.observe(observation, *(functions.expr(total) for total in totals(columns, nulled=True)))
    observed.select(*(observed[f.column] for f in columns)).write.insertInto(staging)
    return dict(observation.get)


def _differences(client: HiveClient, key: str, table: Table, columns: Sequence[Filled], staging: str,
                 written: dict[str, int | None]) -> str:
    """What differs between the rows written (their totals, ``written``) and those ``staging`` holds, per partition
    where any does, and the values a conversion turned into NULL ("": nothing)."""
    nulled = {f.column: int(written.pop(LOST + f.column) or 0) for f in columns if f.cast}
    problems = []
    if client.spark.sql(checksums(stored(staging), columns, ())).collect()[0].asDict() != written:
        keys = [c.name for c in table.partition_columns]
        want = _by_partition(client.spark.sql(checksums(moved(key, columns), columns, keys)).collect(), keys)
        have = _by_partition(client.spark.sql(checksums(stored(staging), columns, keys)).collect(), keys)
        found = []
        for partition in sorted(want.keys() | have.keys()):
            a, b = want.get(partition, {ROWS: 0}), have.get(partition, {ROWS: 0})
            if a != b:
                where = ", ".join(f"{k}={v}" for k, v in zip(keys, partition, strict=True)) or "the table"
                differing = [c.column for c in columns if any(a.get(half + c.column) != b.get(half + c.column)
                                                              for half in (HIGH, LOW))]
                found.append(f"{where}: {a[ROWS]} rows moved, {b[ROWS]} copied"
                             + (f", checksums of {', '.join(differing)} differ" if differing else ""))
        more = f" and {len(found) - SHOWN_DIFFERENCES} more" if len(found) > SHOWN_DIFFERENCES else ""
        problems.append("the copy differs from the rows moved" + (" in " + "; ".join(found[:SHOWN_DIFFERENCES]) + more
                                                                  if found else " (the source changed meanwhile)"))
    by_column = {f.column: f for f in columns}
    problems += [f"{count} values of {column} ({by_column[column].old_type}) became NULL as {by_column[column].type}"
                 for column, count in sorted(nulled.items()) if count]
    return "; ".join(problems)


def _by_partition(rows: Sequence[Any], keys: Sequence[str]) -> dict[tuple[str, ...], dict[str, int]]:
    """Each row of a checksum query by the text of its partition values."""
    found = {}
    for row in rows:
        values = row.asDict()
        found[tuple(str(values.pop(k)) for k in keys)] = values
    return found


def _rename(client: HiveClient, table: Any, name: str, expected: str | None, set: Mapping[str, str],
            unset: Sequence[str]) -> None:
    """Rename ``table`` to ``name`` in one guarded ``alter_table``, with ``set`` and ``unset`` parameters. The
    metastore moves a managed table's folder to the new name's; a Spark data-source table's own record of its
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


@contextmanager
def _settings(client: HiveClient, values: Mapping[str, str]) -> Iterator[None]:
    """The session's SQL settings ``values`` set for the duration, then put back as they were."""
    conf = client.spark.conf
    before = {k: conf.get(k, None) for k in values}
    for k, v in values.items():
        conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                conf.unset(k)
            else:
                conf.set(k, v)


def _exists(client: HiveClient, database: str, name: str) -> bool:
    return bool(client.retrying(lambda: client.msc.tableExists(database, name)))


def _table(client: HiveClient, database: str, name: str) -> Any:
    return client.retrying(lambda: client.msc.getTable(database, name))
