"""The entry the Glue backend writes for a declared table (``catalog.glue.spark_entry``) is the one Spark itself writes
in a Hive metastore for schemaflow's ``CREATE TABLE`` of the same declaration, field by field: columns, partition keys,
SerDe and its properties, input and output formats, bucketing, table type, and the parameters Spark writes
(``spark.sql.sources.*``); schemaflow's own stamps and what the metastore adds by itself (times, statistics, the Spark
release that wrote it) are left out. Glue has no Spark in front of it, so this is what makes a Glue table made by
schemaflow one that Spark, EMR and Athena read as Spark made it.

Marked spark: the shared SparkSession with its embedded metastore (tests/conftest.py). Each case goes through Glue's
own spelling and back (``glue.shape``), so a field the mapping loses is a difference too.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from schemaflow.catalog.glue.shape import table_input, thrift_table
from schemaflow.catalog.glue.spark_entry import table_data
from schemaflow.catalog.hive.metastore import Metastore
from schemaflow.model import VERSION_KEY, Bucketing, Column, Table
from schemaflow.sql.ddl import create_table, fill_claim

# Run with the newest pyspark only in CI (.ci/spark_versions.py without --ci runs it on every release).
pytestmark = [pytest.mark.spark, pytest.mark.one_release]

CLAIM = "run-1"
# What a metastore writes of its own, or Spark's release writes, beside the entry: no part of a table's declaration.
OWN = frozenset({"transient_lastDdlTime", "spark.sql.create.version", "numFiles", "totalSize", "numRows",
                 "rawDataSize", "COLUMN_STATS_ACCURATE", "numFilesErasureCoded"})


def _cases(database: str, folder: Path) -> dict[str, Table]:
    return {
        "parquet data source": Table(
            database, "events", (Column("id", "bigint", "the id"), Column("tags", "map<string,array<int>>")),
            (Column("day", "date"),), format="parquet", data_source=True, comment="Events"),
        "partitioned orc": Table(
            database, "orders", (Column("id", "bigint", "the order"), Column("note", "varchar(10)")),
            (Column("ds", "string", "day"),), format="orc", comment="Orders", bucketing=Bucketing(("id",), 4, ("id",))),
        "text with serde properties": Table(
            database, "lines", (Column("id", "bigint"), Column("text", "string")), format="textfile",
            serde_properties={"field.delim": "|", "serialization.null.format": ""}),
        "csv data source with options": Table(
            database, "feed", (Column("id", "bigint"), Column("name", "string")), format="csv", data_source=True,
            external=True, location=f"file:{folder}/feed", serde_properties={"header": "true", "sep": ";"}),
    }


def _compared(data: dict[str, Any]) -> dict[str, Any]:
    """The fields of a table's Thrift data a reader of the entry reads, without the metastore's own."""
    sd = data.get("sd", {})
    return {
        "tableType": data.get("tableType"),
        "partitionKeys": data.get("partitionKeys", []),
        "cols": sd.get("cols", []),
        "location": sd.get("location"),
        "inputFormat": sd.get("inputFormat"),
        "outputFormat": sd.get("outputFormat"),
        "compressed": sd.get("compressed", False),
        "numBuckets": sd.get("numBuckets"),
        "bucketCols": sd.get("bucketCols", []),
        "sortCols": sd.get("sortCols", []),
        "serde": sd.get("serdeInfo", {}).get("serializationLib"),
        "serdeParameters": sd.get("serdeInfo", {}).get("parameters", {}),
        "sdParameters": sd.get("parameters", {}),
        "parameters": {k: v for k, v in data.get("parameters", {}).items() if k not in OWN and k != VERSION_KEY},
    }


@pytest.mark.parametrize("case", ["parquet data source", "partitioned orc", "text with serde properties",
                                  "csv data source with options"])
def test_the_entry_written_for_glue_is_the_one_spark_writes(case: str, spark: Any, metastore: Metastore,
                                                            fresh_db: Callable[[], str], tmp_path: Path) -> None:
    table = _cases(fresh_db(), tmp_path)[case]
    spark.sql(fill_claim(create_table(table), CLAIM))
    [spark_made] = metastore.named_table_data(table.database, [table.name])
    held = metastore.database(table.database).location  # where the Glue writer puts a managed table: as Spark does
    assert held is not None
    ours = table_data(table, {VERSION_KEY: CLAIM}, f"{held.rstrip('/')}/{table.name}")
    through_glue = thrift_table({**table_input(ours), "DatabaseName": table.database})
    ours_compared, spark_compared = _compared(through_glue), _compared(spark_made)
    assert ours_compared["parameters"] == spark_compared["parameters"], (
        sorted(set(ours_compared["parameters"].items()) ^ set(spark_compared["parameters"].items())))
    assert ours_compared == spark_compared
