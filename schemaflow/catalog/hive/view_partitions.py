"""The partitions of a view (or a table) in the metastore: listed, and for views added and dropped.

A view partition is metadata only. Hive's ``ALTER VIEW ... ADD PARTITION`` stores it without a
storage descriptor, so without a location, and the metastore client accepts such a ``Partition``
(seen with the bundled Hive 2.3 metastore, which then stores no location for it). Spark SQL cannot
touch view partitions at all (``SHOW PARTITIONS`` rejects views), so everything here goes through
the client.

Every py4j call is a socket round trip, so nothing is done a partition at a time where a batch
can cross at once: partition names come back as one string, and the partitions to add are written
as one Thrift JSON document that the JVM decodes into an ``AddPartitionsRequest``. Dropping has no
batch call in the client: each partition is one ``dropPartition`` (without deleting data),
reported a batch at a time. Measured on the embedded Derby metastore (2 cores): adding 10,000 view
partitions 17 s, listing them 0.24 s, dropping 15 ms a partition.

Spark's CREATE OR REPLACE VIEW drops every partition of the view. Those that still fit it come back,
and keep what they had when they were read just before (``read_view_partitions``): their parameters
(added with them) and their creation and last access times, which ``add_partitions`` sets to now and
a following ``alter_partitions`` restores.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Mapping, Sequence

from schemaflow.catalog.backend import HiveClient
from schemaflow.catalog.hive.jvm import jvm_view
from schemaflow.catalog.hive.thrift_data import parse_name
from schemaflow.errors import SchemaflowError
from schemaflow.model import PartitionValues, partition_name, split_key
from schemaflow.wording import plural


BATCH = 1_000
# What Hive escapes in a partition name's values (FileUtils.escapePathName of the bundled Hive 2.3).
_TO_ESCAPE = frozenset(map(chr, range(0x20))) | frozenset('"#%\'*/:=?\\\x7f{[]^')


def partition_values(metastore: HiveClient, key: str) -> tuple[PartitionValues, ...]:
    """The partitions of table or view ``key``, each as its values in partition-column order, sorted."""
    database, name = split_key(key)
    jvm = jvm_view(metastore.spark)
    names = jvm.java.lang.String.join("\n", metastore.msc.listPartitionNames(database, name, -1))
    return tuple(sorted(parse_name(n) for n in names.split("\n") if n))


@dataclass(frozen=True)
class KeptPartitions:
    """A view's partitions as read before it is re-created: by values, their Thrift fields (simple JSON names)."""

    columns: tuple[str, ...]
    partitions: Mapping[PartitionValues, Mapping[str, Any]] = field(default_factory=dict)


def read_view_partitions(metastore: HiveClient, key: str) -> KeptPartitions:
    """The partitions of view ``key`` with their parameters and times, read in one batch."""
    database, name = split_key(key)
    view = metastore.msc.getTable(database, name)
    columns = tuple(c.getName() for c in view.getPartitionKeys())
    if not columns:  # about to become partitioned: nothing to keep
        return KeptPartitions(())
    batch = metastore.api.AddPartitionsResult()  # a struct holding a list of partitions: serialised in one call
    batch.setPartitions(metastore.msc.listPartitions(database, name, -1))
    read = metastore.to_data(batch).get("partitions", [])
    return KeptPartitions(columns, {tuple(p["values"]): p for p in read})


def escaped_name(columns: Sequence[str], values: PartitionValues) -> str:
    """A partition's name as the metastore writes it: the inverse of ``parse_name``."""
    def escaped(value: str) -> str:
        return "".join(f"%{ord(c):02X}" if c in _TO_ESCAPE else c for c in value)
    return "/".join(f"{column}={escaped(value)}" for column, value in zip(columns, values, strict=False))


def change_view_partitions(metastore: HiveClient, key: str, columns: Sequence[str], add: Sequence[PartitionValues],
                           drop: Sequence[PartitionValues], kept: KeptPartitions | None = None) -> None:
    """Drop ``drop`` and add ``add`` (values in the order of ``columns``) to the partitions of view ``key``;
    those of ``add`` in ``kept`` (read on the same partition columns) come back as they were."""
    database, name = split_key(key)
    view = metastore.msc.getTable(database, name)
    keys = [c.getName() for c in view.getPartitionKeys()]
    if view.getTableType() != "VIRTUAL_VIEW" or keys != list(columns):
        raise SchemaflowError(f"{key} is not a view partitioned on ({', '.join(columns)}): "
                              f"it is a {view.getTableType()} partitioned on ({', '.join(keys)})")
    jvm = jvm_view(metastore.spark)
    for start in range(0, len(drop), BATCH):
        for values in drop[start:start + BATCH]:
            if not metastore.msc.dropPartition(database, name, jvm.java.util.ArrayList(list(values)), False):
                raise SchemaflowError(f"the metastore did not drop {partition_name(columns, values)} of {key}")
        metastore.report(f"dropped {min(start + BATCH, len(drop))} of {plural(len(drop), 'partition')}")
    before = kept.partitions if kept is not None and kept.columns == tuple(columns) else {}
    for start in range(0, len(add), BATCH):
        batch = add[start:start + BATCH]
        request = metastore.api.AddPartitionsRequest()
        metastore.from_json(request, _add_request(database, name, batch, before))
        # ifNotExists: a partition that is there already (an earlier, interrupted run) is left as it is.
        metastore.msc.add_partitions(request.getParts(), True, False)
        _restore_times(metastore, key, columns, [values for values in batch if values in before], before)
        metastore.report(f"added {min(start + BATCH, len(add))} of {plural(len(add), 'partition')}")


def _restore_times(metastore: HiveClient, key: str, columns: Sequence[str], batch: Sequence[PartitionValues],
                   before: Mapping[PartitionValues, Mapping[str, Any]]) -> None:
    """Give the re-added partitions of ``batch`` back the creation and last access times they had: the
    batch read, given its old times and written back in one call each (not a call per field)."""
    if not batch:
        return
    database, name = split_key(key)
    names = jvm_view(metastore.spark).java.util.ArrayList([escaped_name(columns, values) for values in batch])
    read = metastore.api.AddPartitionsResult()  # a struct holding a list of partitions: serialised in one call
    read.setPartitions(metastore.msc.getPartitionsByNames(database, name, names))
    now = metastore.to_data(read).get("partitions", [])
    restored = metastore.api.AddPartitionsResult()
    metastore.from_json(restored, {"1": {"lst": ["rec", len(now), *(_retimed(p, before[tuple(p["values"])])
                                                                     for p in now)]}})
    metastore.msc.alter_partitions(database, name, restored.getPartitions())


def _retimed(partition: Mapping[str, Any], was: Mapping[str, Any]) -> dict[str, Any]:
    """A view partition as read (simple JSON names) in Thrift's JSON protocol, with the times it ``was``
    created and last accessed. A view's partitions have no storage descriptor."""
    values, parameters = partition["values"], partition.get("parameters") or {}
    return {"1": {"lst": ["str", len(values), *values]}, "2": {"str": partition["dbName"]},
            "3": {"str": partition["tableName"]},
            "4": {"i32": was.get("createTime", partition["createTime"])},
            "5": {"i32": was.get("lastAccessTime", partition["lastAccessTime"])},
            "7": {"map": ["str", "str", len(parameters), parameters]}}


def _add_request(database: str, name: str, batch: Sequence[PartitionValues],
                 before: Mapping[PartitionValues, Mapping[str, Any]]) -> dict[str, Any]:
    """An ``AddPartitionsRequest`` in Thrift's JSON protocol: field ids, typed values, no storage descriptor;
    a partition read before keeps its parameters."""
    def partition(values: PartitionValues) -> dict[str, Any]:
        parameters = dict((before.get(values) or {}).get("parameters") or {})
        return {"1": {"lst": ["str", len(values), *values]}, "2": {"str": database}, "3": {"str": name},
                "7": {"map": ["str", "str", len(parameters), parameters]}}
    return {"1": {"str": database}, "2": {"str": name},
            "3": {"lst": ["rec", len(batch), *(partition(v) for v in batch)]}, "4": {"tf": 1}, "5": {"tf": 0}}
