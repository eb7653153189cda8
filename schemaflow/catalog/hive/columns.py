"""Changing a table's column list in the metastore, with Spark's copy of the schema kept in step.

Spark SQL cannot rename, retype, reorder or drop the columns of a Hive table, and cannot send
CASCADE, so the change is one ``alter_table`` through the metastore client. A table Spark created
also keeps its schema in the ``spark.sql.sources.schema`` parameters; that copy is rebuilt here by
Spark's own DDL parser (the same JSON Spark writes, char/varchar included), so the two never
disagree.

Partitions follow the table's columns in one of two ways, as the plan chose:

- the metastore's own CASCADE, one transaction, as fast as the metastore gets;
- in batches of partitions, for tables too large for one transaction to finish within the client's
  timeout, and to repair partitions left stale, which CASCADE ignores when the table's columns do
  not change. Each batch rewrites only the partitions whose list differs, so a run that stops
  part-way resumes where it was (bench/partitions.py: ~1.1x the CASCADE's time; a check with
  nothing to rewrite ~0.25 ms a partition).
"""
from __future__ import annotations

from functools import partial
from typing import Any
from collections.abc import Iterator, Mapping, Sequence

from schemaflow.catalog.backend import HiveClient
from schemaflow.catalog.hive.jvm import jvm_view
from schemaflow.catalog.hive.spark_schema import SPARK_SCHEMA, SPARK_SCHEMA_LENGTH, SPARK_SCHEMA_PART, SPARK_SCHEMA_PARTS
from schemaflow.errors import SchemaflowError
from schemaflow.model import VERSION_KEY, Column, split_key
from schemaflow.sql.ddl import column_def
from schemaflow.sql.table_kinds import PROVIDER, data_source_provider


PARTITION_BATCH = 1_000


def set_columns(metastore: HiveClient, key: str, columns: Sequence[Column], partition_columns: Sequence[Column],
                cascade: bool, batched: bool = False, parameters: Mapping[str, str] = {},
                expected: str | None = None) -> None:
    """Make ``columns`` and ``partition_columns`` the columns of ``key``; with ``cascade``, of its partitions
    too: in the metastore's CASCADE, or ``batched``. ``parameters`` are set in the same write, which
    ``expected`` guards (see ``Metastore.alter``)."""
    database, name = split_key(key)
    table = metastore.retrying(lambda: metastore.msc.getTable(database, name))
    provider = table.getParameters().get(PROVIDER)
    if data_source_provider(provider):
        raise SchemaflowError(f"{key} is a Spark data-source table (USING {provider}): its columns live in "
                              "Spark's table properties, not the metastore's; schemaflow changes the columns of "
                              "Hive-format tables only (re-create it STORED AS a format)")
    table.getSd().setCols(_field_schemas(metastore, columns))
    table.setPartitionKeys(_field_schemas(metastore, partition_columns))
    _sync_spark_schema(metastore, table, [*columns, *partition_columns])
    for parameter, value in sorted(parameters.items()):
        table.getParameters().put(parameter, value)
    keeps_guard = VERSION_KEY not in parameters
    if cascade and batched:
        metastore.alter(table, expected, keeps_guard=keeps_guard)
        cascade_in_batches(metastore, key, columns)
    else:
        metastore.alter(table, expected, keeps_guard=keeps_guard, CASCADE="true" if cascade else "false")


def cascade_in_batches(metastore: HiveClient, key: str, columns: Sequence[Column]) -> int:
    """Give every partition of ``key`` the column list ``columns``, a batch at a time; returns how many changed."""
    database, name = split_key(key)
    wanted = [_row(c) for c in columns]
    fields = _field_schemas(metastore, columns)
    rewritten = checked = 0
    for partitions, data in _partition_batches(metastore, key):
        stale = jvm_view(metastore.spark).java.util.ArrayList()
        for index, partition in enumerate(data):
            if _rows(partition) != wanted:
                java_partition = partitions.get(index)
                java_partition.getSd().setCols(fields)
                stale.add(java_partition)
        if stale.size():
            metastore.msc.alter_partitions(database, name, stale, metastore.context())
        rewritten += stale.size()
        checked += len(data)
        metastore.report(f"{key}: {checked} partitions checked, {rewritten} rewritten")
    return rewritten


def stale_partitions(metastore: HiveClient, key: str, exact: bool = False) -> int:
    """How many partitions of ``key`` have a stale column list (listing them in batches): one other than the
    table's that is not its first columns. A partition from before a table-only append lists the table's
    columns but the appended ones, which Hive reads as NULL in it (its prefix rule): the state the plan
    called safe, not one to repair. A cascade still gives such a partition every column; with ``exact``,
    such partitions count too (those a cascade under way has yet to reach)."""
    database, name = split_key(key)
    wanted = _listed(metastore.retrying(lambda: metastore.msc.getTable(database, name)).getSd().getCols())
    return sum(_stale(_rows(p), wanted, exact) for _, data in _partition_batches(metastore, key) for p in data)


def _stale(listed: list[tuple[str, str, str | None]], wanted: list[tuple[str, str, str | None]], exact: bool) -> bool:
    return listed != wanted if exact else not listed or listed != wanted[:len(listed)]


def _partition_batches(metastore: HiveClient, key: str) -> Iterator[tuple[Any, list[dict[str, Any]]]]:
    """The partitions of ``key``, a batch at a time: the Java list and the same partitions as JSON data."""
    database, name = split_key(key)
    names = metastore.retrying(lambda: metastore.msc.listPartitionNames(database, name, -1))
    total = names.size()
    for start in range(0, total, PARTITION_BATCH):
        batch = metastore.retrying(partial(metastore.msc.getPartitionsByNames, database, name,
                                           names.subList(start, min(start + PARTITION_BATCH, total))))
        yield batch, metastore.to_data(metastore.api.PartitionsByExprResult(batch, False)).get("partitions", [])


def _row(column: Column) -> tuple[str, str | None, str | None]:
    return column.name, column.type, column.comment or None


def _rows(partition: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(c["name"], c["type"], c.get("comment") or None) for c in partition.get("sd", {}).get("cols", [])]


def _listed(fields: Any) -> list[tuple[str, str, str | None]]:
    return [(f.getName(), f.getType(), f.getComment() or None) for f in fields]


def _field_schemas(metastore: HiveClient, columns: Sequence[Column]) -> Any:
    fields = jvm_view(metastore.spark).java.util.ArrayList()
    for column in columns:
        fields.add(metastore.api.FieldSchema(column.name, column.type, column.comment))
    return fields


def _sync_spark_schema(metastore: HiveClient, table: Any, columns: Sequence[Column]) -> None:
    """Rewrite Spark's copy of the schema, if the table has one, exactly as Spark would write it."""
    parameters = table.getParameters()
    if SPARK_SCHEMA not in parameters and SPARK_SCHEMA_PARTS not in parameters:
        return  # not created by Spark: Spark reads the metastore's columns
    jvm = jvm_view(metastore.spark)
    struct = jvm.org.apache.spark.sql.types.StructType.fromDDL(", ".join(column_def(c) for c in columns))
    text = jvm.org.apache.spark.sql.catalyst.util.CharVarcharUtils.replaceCharVarcharWithStringInSchema(struct).json()
    for parameter in [k for k in parameters.keySet() if k in (SPARK_SCHEMA, SPARK_SCHEMA_PARTS)
                      or k.startswith(SPARK_SCHEMA_PART)]:
        parameters.remove(parameter)
    if len(text) <= SPARK_SCHEMA_LENGTH:
        parameters.put(SPARK_SCHEMA, text)
        return
    parts = [text[i:i + SPARK_SCHEMA_LENGTH] for i in range(0, len(text), SPARK_SCHEMA_LENGTH)]
    parameters.put(SPARK_SCHEMA_PARTS, str(len(parts)))
    for number, part in enumerate(parts):
        parameters.put(f"{SPARK_SCHEMA_PART}{number}", part)
