"""A declared table as Spark's Hive catalog enters it in a metastore, as Thrift table data, for Glue to hold.

On a Hive metastore, Spark's ``CREATE TABLE`` writes the entry (``HiveExternalCatalog``); Glue has no Spark in
front of it, so schemaflow writes the same entry itself, and Spark, EMR or Athena then read it as one Spark made:

- a Hive-format table (``STORED AS``): its columns, partition keys, format classes, SerDe and SERDEPROPERTIES
  (``serialization.format`` ``1``, Hive's default, which Spark's ``ROW FORMAT SERDE`` leaves) and bucketing in the
  storage descriptor, plus Spark's copy of the schema in the parameters (``catalog.hive.spark_schema.schema_parameters``),
  which Spark writes for every table;
- a data-source table (``USING``): ``spark.sql.sources.provider``, Spark's copy of the schema (the only true one)
  and, where it is partitioned, ``spark.sql.partitionProvider`` (its partitions are the catalog's) in the
  parameters, its OPTIONS (and ``path``, its location) as SerDe parameters, and a storage descriptor Hive can read
  where Spark writes one (a Parquet or ORC table without bucketing: ``HiveExternalCatalog``'s "Hive compatible"
  form), else Hive's placeholder column ``col array<string>`` (and, for an external table, Spark's placeholder
  location).

``catalog.hive.thrift_data.to_model`` reads such data back as the table declared (tests/test_glue_shape.py holds it to
what Spark itself writes in a Hive metastore). Iceberg tables are made by ``glue.iceberg``; views are not made.
"""
from __future__ import annotations

from typing import Any, assert_never
from collections.abc import Mapping, Sequence

from schemaflow.catalog.hive.spark_schema import schema_parameters
from schemaflow.errors import SchemaflowError
from schemaflow.model import COMMENT_KEY, Column, Table
from schemaflow.sql.storage import PATH_OPTION, SERIALIZATION_FORMAT
from schemaflow.sql.table_kinds import LAZY_SIMPLE_SERDE, PROVIDER, LiveSchema, kind_of, table_kind

EXTERNAL_TABLE, MANAGED_TABLE = "EXTERNAL_TABLE", "MANAGED_TABLE"
EXTERNAL = "EXTERNAL"  # the parameter Hive tells an external table by
# Hive's placeholder for the columns of a table it cannot read (a data source of a format Hive has no SerDe for).
PLACEHOLDER = ({"name": "col", "type": "array<string>", "comment": "from deserializer"},)
SEQUENCE_FILE = ("org.apache.hadoop.mapred.SequenceFileInputFormat",
                 "org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat")
# Spark's mark of a partitioned data-source table whose partitions the catalog holds (HiveExternalCatalog writes it
# while spark.sql.hive.manageFilesourcePartitions is on, the default): without it Spark lists the table's folder.
PARTITION_PROVIDER, CATALOG = "spark.sql.partitionProvider", "catalog"
LOCATION_PLACEHOLDER = "-__PLACEHOLDER__"  # what Spark appends to an external data-source table's default folder
HIVE_COMPATIBLE = ("parquet", "orc")  # the data sources Spark stores in Hive's own form (HiveSerDe.sourceToSerDe)


def table_data(table: Table, parameters: Mapping[str, str], location: str | None = None) -> dict[str, Any]:
    """The Thrift table data of ``table`` as Spark enters it for schemaflow's ``CREATE TABLE`` (``sql.ddl``), with
    ``parameters`` (schemaflow's stamps) among its parameters; ``location``: where a managed table's files go (its
    database's folder and its name). The table's properties are not among them: a plan sets them in a step of
    their own, as on a Hive metastore."""
    kind = kind_of(table)
    where = table.location or location
    own = {**({COMMENT_KEY: table.comment} if table.comment else {}), **parameters}
    if table.external:
        own[EXTERNAL] = "TRUE"
    spark = schema_parameters(table.columns, table.partition_columns, table.bucketing, table.spelt)
    match kind.live_schema:
        case LiveSchema.METASTORE:
            sd = _hive_sd(table, where)
        case LiveSchema.SPARK_COPY:
            sd = _data_source_sd(table, where, location)
            spark[PROVIDER] = table.format
            if table.partition_columns:  # its partitions are the catalog's, not found by listing its folder
                spark[PARTITION_PROVIDER] = CATALOG
        case LiveSchema.OWN_METADATA:
            raise SchemaflowError(f"{table.key}: {table.format} tables are made by a commit of their own metadata "
                                  "(glue.iceberg), not entered as Spark enters a table")
        case _ as unreachable:
            assert_never(unreachable)
    return {"dbName": table.database, "tableName": table.name,
            "tableType": EXTERNAL_TABLE if table.external else MANAGED_TABLE,
            "sd": sd, "partitionKeys": fields(table.partition_columns), "parameters": {**own, **spark}}


def fields(columns: Sequence[Column]) -> list[dict[str, Any]]:
    """Thrift ``FieldSchema`` data of ``columns`` (a comment only where there is one, as the metastore keeps it)."""
    return [{"name": c.name, "type": c.type, **({"comment": c.comment} if c.comment else {})} for c in columns]


def _hive_sd(table: Table, location: str | None) -> dict[str, Any]:
    kind = kind_of(table)
    read, write = kind.classes or (table.input_format, table.output_format)
    serde_parameters = {SERIALIZATION_FORMAT: "1", **table.serde_properties}  # Hive's default, as Spark leaves it
    bucketing = table.bucketing
    return {"cols": fields(table.columns), **({"location": location} if location else {}),
            "inputFormat": read, "outputFormat": write, "compressed": False,
            "numBuckets": bucketing.count if bucketing else -1,
            "serdeInfo": {"serializationLib": table.serde or kind.serde, "parameters": serde_parameters},
            "bucketCols": list(bucketing.columns) if bucketing else [],
            "sortCols": [_sort_column(c) for c in bucketing.sorted_by] if bucketing else [],
            "parameters": {}, "storedAsSubDirectories": False}


def _sort_column(written: str) -> dict[str, Any]:
    name, _, order = written.partition(" ")
    return {"col": name, "order": 0 if order == "desc" else 1}


def _data_source_sd(table: Table, where: str | None, default: str | None) -> dict[str, Any]:
    """The storage descriptor of a data-source table whose files are ``where`` (``default``: its database's folder
    and its name). Its location is its ``path`` option; the descriptor's is where Spark puts it: the table's own for
    a table in Hive's form, else, for an external one, Spark's placeholder beside the default folder (Hive requires an
    external table to have a location, and Spark reads this one from ``path``)."""
    options = {**table.serde_properties, **({PATH_OPTION: where} if where else {}), SERIALIZATION_FORMAT: "1"}
    hive = table_kind(table.format) if table.format in HIVE_COMPATIBLE and table.bucketing is None else None
    if hive is not None and hive.classes is not None:
        read, write = hive.classes
        columns, serde = fields(table.columns), hive.serde
    else:
        (read, write), columns, serde = SEQUENCE_FILE, list(PLACEHOLDER), LAZY_SIMPLE_SERDE
        if table.external:
            where = f"{default}{LOCATION_PLACEHOLDER}" if default else None
    return {"cols": columns, **({"location": where} if where else {}), "inputFormat": read,
            "outputFormat": write, "compressed": False, "numBuckets": -1,
            "serdeInfo": {"serializationLib": serde, "parameters": options}, "bucketCols": [], "sortCols": [],
            "parameters": {}, "storedAsSubDirectories": False}
