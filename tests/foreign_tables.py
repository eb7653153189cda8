"""Tables of formats schemaflow leaves alone, registered in the metastore as their own catalogs register them."""
from __future__ import annotations


def iceberg_like(spark, metastore, key: str, columns: str) -> None:
    """A Parquet table ``key`` (``columns`` as in CREATE TABLE) carrying Iceberg's ``table_type=ICEBERG``
    parameter, set through the metastore as Iceberg's Hive catalog sets it: Spark 4.1 and later reserve
    the key in SQL's TBLPROPERTIES."""
    database, name = key.split(".")
    spark.sql(f"CREATE TABLE {key} ({columns}) STORED AS PARQUET")
    table = metastore.msc.getTable(database, name)
    table.getParameters().put("table_type", "ICEBERG")
    metastore.alter(table)
