"""Reading a Glue Data Catalog into the model: databases, tables (``GetTables`` pages) and their partitions.

Each table is mapped onto Thrift's table data (``glue.shape``) and read by ``catalog.hive.thrift_data`` as a Hive
metastore's table is, so a Glue table and a metastore table of one declaration read alike. An Iceberg table (its
``table_type`` parameter ``ICEBERG``) is read from the metadata file its entry names, as a metastore's is, on its
database's storage or the warehouse's (``metastore.warehouse``). A Glue table has no
kind but what its parameters and storage descriptor say, as in a metastore. What the plan shows of a table's files
comes from Glue's statistics of it and its partitions (``thrift_data.statistics``), as a metastore's do.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Collection, Iterable, Iterator, Sequence

from schemaflow.catalog.backend import LiveEntry
from schemaflow.catalog.glue.client import GlueCatalog, Missing
from schemaflow.catalog.glue.shape import thrift_database, thrift_table
from schemaflow.catalog.hive.thrift_data import database_of, folders, read_catalog, read_views, statistics, table_entries
from schemaflow.model import Catalog, Database, PartitionValues, Stored, View, split_key


@dataclass
class GlueReader:
    """The live state of a Glue catalog, read through ``glue``'s client."""

    glue: GlueCatalog
    warehouse: str | None = None  # metastore.warehouse: where Iceberg tables of a database with no location are
    endpoint: str = field(init=False)  # what a plan records: ``glue:<region>:<catalog id>``

    def __post_init__(self) -> None:
        self.endpoint = self.glue.endpoint

    def databases(self) -> tuple[str, ...]:
        return tuple(sorted(d["Name"] for d in self.glue.pages("get_databases", "DatabaseList",
                                                                 "listing the databases")))

    def database(self, name: str) -> Database:
        found = self.glue.call(f"reading database {name}",
                               lambda: self.glue.client.get_database(**self.glue.catalog, Name=name))
        return database_of(name, thrift_database(found["Database"]))

    def table_data(self, database: str) -> Iterator[dict[str, Any]]:
        """The tables and views of ``database``, as Thrift table data."""
        for table in self.glue.pages("get_tables", "TableList", f"listing the tables of {database}",
                                     DatabaseName=database):
            yield thrift_table(table)

    def named_table_data(self, database: str, names: Sequence[str]) -> Iterator[dict[str, Any]]:
        """The tables and views of ``database`` among ``names`` (those it holds), as Thrift table data."""
        for name in names:
            try:
                yield thrift_table(self.table(f"{database}.{name}"))
            except Missing:
                continue

    def table(self, key: str) -> dict[str, Any]:
        """The Glue table ``key`` as ``GetTable`` gives it (``VersionId`` included)."""
        database, name = split_key(key)
        found = self.glue.call(f"reading {key}", lambda: self.glue.client.get_table(
            **self.glue.catalog, DatabaseName=database, Name=name))
        return dict(found["Table"])

    def entries(self, database: str) -> Iterable[LiveEntry]:
        return table_entries(self, database, (self.warehouse,))

    def read(self, databases: tuple[str, ...]) -> Catalog:
        return read_catalog(self, databases, (self.warehouse,))

    def views(self, keys: Collection[str]) -> dict[str, View | None]:
        return read_views(self, keys)

    def partitions(self, key: str, columns: bool = False) -> Iterator[dict[str, Any]]:
        """The partitions of ``key`` as ``GetPartitions`` gives them (their column lists only with ``columns``)."""
        database, name = split_key(key)
        yield from self.glue.pages("get_partitions", "Partitions", f"listing the partitions of {key}",
                                   DatabaseName=database, TableName=name, ExcludeColumnSchema=not columns)

    def count_partitions(self, key: str) -> int:
        return sum(1 for _ in self.partitions(key))

    def partition_values(self, key: str) -> tuple[PartitionValues, ...]:
        return tuple(sorted(tuple(p["Values"]) for p in self.partitions(key)))

    def stored(self, key: str) -> Stored:
        table, partitions = self._units(key)
        return statistics(table, partitions)[0]

    def data_folders(self, key: str) -> tuple[str, ...]:
        return folders(*self._units(key))

    def _units(self, key: str) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
        """The table ``key`` and its partitions (None: unpartitioned), as Thrift data of their parameters and
        folders."""
        table = thrift_table(self.table(key))
        if not table.get("partitionKeys"):
            return table, None
        return table, [{"parameters": p.get("Parameters", {}),
                        "sd": {"location": p.get("StorageDescriptor", {}).get("Location")}}
                       for p in self.partitions(key)]

    def enforces_type_rule(self) -> bool:
        """Glue takes any column type change (it checks no rule of Hive's)."""
        return False
