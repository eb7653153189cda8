"""What a table's files hold, read through Spark's client: the metastore's statistics of each partition (of the
table, unpartitioned), and for those that keep none a listing of their folders (``thrift_data.statistics``).

A plan shows it for each table it rewrites; the rewrite's copy fingerprints its units by the same listing.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from py4j.protocol import Py4JJavaError

from schemaflow.catalog.backend import HiveClient
from schemaflow.catalog.thrift_data import folders, statistics
from schemaflow.model import Stored, split_key


def partitions_data(client: HiveClient, table: Any) -> list[dict[str, Any]]:
    """The partitions of ``table`` (its metastore entry) as Thrift data: one listing, serialised in one py4j call."""
    batch = client.api.AddPartitionsResult()  # a struct holding a list of partitions
    batch.setPartitions(client.retrying(lambda: client.msc.listPartitions(table.getDbName(), table.getTableName(),
                                                                          -1)))
    found: list[dict[str, Any]] = client.to_data(batch).get("partitions", [])
    return found


def summary(client: HiveClient, folder: str) -> tuple[int, int, int] | None:
    """The bytes and files under ``folder`` and its modification time; None where there is no such folder (yet)."""
    jvm, conf = client.spark._jvm, client.spark._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(folder)
    try:
        system = path.getFileSystem(conf)
        content, status = system.getContentSummary(path), system.getFileStatus(path)
    except Py4JJavaError:
        return None
    return int(content.getLength()), int(content.getFileCount()), int(status.getModificationTime())


def data_folders(client: HiveClient, key: str) -> tuple[str, ...]:
    """Where the table ``key``'s files are: its folder, or each of its partitions'."""
    database, name = split_key(key)
    table = client.retrying(lambda: client.msc.getTable(database, name))
    data = client.to_data(table)
    return folders(data, partitions_data(client, table) if data.get("partitionKeys") else None)


def stored(client: HiveClient, key: str) -> Stored:
    """What the table ``key`` holds in files: the statistics where kept, a listing of the other folders."""
    database, name = split_key(key)
    table = client.retrying(lambda: client.msc.getTable(database, name))
    data = client.to_data(table)
    found, missing = statistics(data, partitions_data(client, table) if data.get("partitionKeys") else None)
    listed = [summary(client, folder) for folder in missing if folder]
    measured = [s for s in listed if s is not None]
    return replace(found, bytes=found.bytes + sum(b for b, _, _ in measured),
                   files=None if found.files is None else found.files + sum(f for _, f, _ in measured),
                   listed=len(listed), unknown=found.unknown - len(listed))
