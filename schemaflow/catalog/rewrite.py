"""A table made anew from its own rows through Spark, verified, then swapped in under its name.

What ``plan.rewrite`` plans, in an order that leaves every stop recoverable and readers on the old table until
the new one is proved:

1. create the new definition as the staging table (``<name>_rewrite_``), born with the run's claim and marked
   ``schemaflow.rewrite_of``; a staging table a stopped run left is dropped and made again;
2. fill it by the planned ``INSERT ... SELECT`` (dynamic partitions, as many as the table has);
3. verify: per partition of the new table, the row count and a checksum of every column of the rows the query
   moves against those the staging table holds, and the values a conversion turned into NULL
   (``sql.rewrite``). Any difference drops the staging table and stops, the table untouched;
4. cut-over: rename the table to its backup name (guarded by its stamp, marked ``schemaflow.backup_of``), then
   the staging table to the table's name (guarded by the claim), each one ``alter_table``. A managed table's
   folder moves with its name, so the new table's files end in the table's folder and the backup's in its own.

A run stopped after the first rename left the name free, the backup marked and the staging table verified: the
next plan finds them and finishes the cut-over (``plan.diff``).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

from schemaflow.catalog.backend import HiveClient
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import BACKUP_OF, REWRITE_OF, VERSION_KEY, Table, split_key
from schemaflow.sql import ddl
from schemaflow.sql.rewrite import ROWS, Filled, checksums, lost, moved, select, stored
from schemaflow.sql.storage import PATH_OPTION
from schemaflow.sql.table_kinds import PROVIDER, data_source_provider

# Spark's checks on an INSERT with dynamic partitions into a Hive table, lifted for the copy (a table may
# have any number of partitions), then put back as they were.
DYNAMIC_PARTITIONS = {"hive.exec.dynamic.partition": "true", "hive.exec.dynamic.partition.mode": "nonstrict",
                      "hive.exec.max.dynamic.partitions": "100000000",
                      "hive.exec.max.dynamic.partitions.pernode": "100000000"}
SHOWN_DIFFERENCES = 10  # partitions a failed verification lists; the rest are counted


def rewrite(client: HiveClient, key: str, table: Table, create: str, copy: str, columns: Sequence[Filled],
            staging: str, backup: str, expected: str | None, claim: str) -> None:
    """Make ``key`` anew as ``table`` (see the module docstring); ``create`` is the staging table's claimed CREATE,
    ``copy`` what fills it, ``expected`` the table's stamp and ``claim`` the staging table's."""
    database, name = split_key(key)
    if _exists(client, database, name):
        source = _table(client, database, name)
        found = source.getParameters().get(VERSION_KEY)
        if found != expected:
            raise ConcurrentChange(key, expected, found)
        _copy(client, key, table, create, copy, columns, staging, claim)
        _rename(client, source, split_key(backup)[1], expected, {BACKUP_OF: key}, ())
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


def _copy(client: HiveClient, key: str, table: Table, create: str, copy: str, columns: Sequence[Filled],
          staging: str, claim: str) -> None:
    """Create, fill and verify the staging table; a difference drops it and stops the rewrite."""
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
    client.report(f"copying the rows of {key} into {staging}")
    with _settings(client, DYNAMIC_PARTITIONS if table.partition_columns and not table.data_source else {}):
        client.spark.sql(copy)
    client.report(f"verifying {staging} against the rows of {key}")
    differences = _differences(client, key, table, columns, staging)
    if differences:
        client.spark.sql(ddl.drop("table", staging))
        raise SchemaflowError(f"the rewrite of {key} stopped before the cut-over: {differences}. {key} is unchanged "
                              f"and the copy was dropped")


def _differences(client: HiveClient, key: str, table: Table, columns: Sequence[Filled], staging: str) -> str:
    """What differs between the rows the rewrite's query moves out of ``key`` and those ``staging`` holds ("":
    nothing), and the values a conversion turned into NULL."""
    keys = [c.name for c in table.partition_columns]
    query = select(key, columns)
    want = _by_partition(client.spark.sql(checksums(moved(query), columns, keys)).collect(), keys)
    have = _by_partition(client.spark.sql(checksums(stored(staging), columns, keys)).collect(), keys)
    found = []
    for partition in sorted(want.keys() | have.keys()):
        a, b = want.get(partition, {ROWS: 0}), have.get(partition, {ROWS: 0})
        if a != b:
            where = ", ".join(f"{k}={v}" for k, v in zip(keys, partition, strict=True)) or "the table"
            differing = [c.column for c in columns if a.get(c.column) != b.get(c.column)]
            found.append(f"{where}: {a[ROWS]} rows moved, {b[ROWS]} copied"
                         + (f", checksums of {', '.join(differing)} differ" if differing else ""))
    problems = []
    if found:
        more = f" and {len(found) - SHOWN_DIFFERENCES} more" if len(found) > SHOWN_DIFFERENCES else ""
        problems.append("the copy differs from the rows in " + "; ".join(found[:SHOWN_DIFFERENCES]) + more)
    counting = lost(key, columns)
    if counting is not None:
        row = client.spark.sql(counting).collect()[0].asDict()
        nulled = {f.column: int(row[f.column] or 0) for f in columns if f.cast}
        by_column = {f.column: f for f in columns}
        problems += [f"{count} values of {column} ({by_column[column].old_type}) became NULL as "
                     f"{by_column[column].type}" for column, count in sorted(nulled.items()) if count]
    return "; ".join(problems)


def _by_partition(rows: Sequence[Any], keys: Sequence[str]) -> dict[tuple[str, ...], dict[str, Decimal | int]]:
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
