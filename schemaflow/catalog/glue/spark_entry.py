"""A declared table as Spark's Hive catalog enters it in a metastore, as Thrift table data, for Glue to hold.

On a Hive metastore, Spark's ``CREATE TABLE`` writes the entry (``HiveExternalCatalog``); Glue has no Spark in
front of it, so schemaflow writes the same entry itself, and Spark, EMR or Athena then read it as one Spark made:

- a Hive-format table (``STORED AS``): its columns, partition keys, format classes, SerDe and SERDEPROPERTIES
  (``serialization.format`` as Hive writes it) and bucketing in the storage descriptor, plus Spark's copy of the
  schema in the parameters (``catalog.spark_schema.schema_parameters``), which Spark writes for every table;
- a data-source table (``USING``): ``spark.sql.sources.provider`` and Spark's copy of the schema (the only true one)
  in the parameters, its OPTIONS (and ``path``, its location) as SerDe parameters, and a storage descriptor Hive can
  read where Spark writes one (a Parquet or ORC table without bucketing: ``HiveExternalCatalog``'s "Hive compatible"
  form), else Hive's placeholder column ``col array<string>``.

``catalog.thrift_data.to_model`` reads such data back as the table declared (tests/test_glue_shape.py holds it to
what Spark itself writes in a Hive metastore). Iceberg tables are made by ``glue.iceberg``; views are not made.
"""
from __future__ import annotations

from typing import Any, assert_never
from collections.abc import Mapping, Sequence

from schemaflow.catalog.spark_schema import schema_parameters
from schemaflow.errors import SchemaflowError
from schemaflow.model import COMMENT_KEY, Column, Table
from schemaflow.sql.storage import FIELD_DELIMITER, PATH_OPTION, SERIALIZATION_FORMAT
from schemaflow.sql.table_kinds import LAZY_SIMPLE_SERDE, PROVIDER, LiveSchema, kind_of, table_kind

EXTERNAL_TABLE, MANAGED_TABLE = "EXTERNAL_TABLE", "MANAGED_TABLE"
EXTERNAL = "EXTERNAL"  # the parameter Hive tells an external table by
# Hive's placeholder for the columns of a table it cannot read (a data source of a format Hive has no SerDe for).
PLACEHOLDER = ({"name": "col", "type": "array<string>", "comment": "from deserializer"},)
SEQUENCE_FILE = ("org.apache.hadoop.mapred.SequenceFileInputFormat",
                 "org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat")
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
            sd = _data_source_sd(table, where)
            spark[PROVIDER] = table.format
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
    serde_parameters = {**table.serde_properties,
                        SERIALIZATION_FORMAT: table.serde_properties.get(FIELD_DELIMITER, "1")}
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


def _data_source_sd(table: Table, location: str | None) -> dict[str, Any]:
    options = {**table.serde_properties, **({PATH_OPTION: location} if location else {}), SERIALIZATION_FORMAT: "1"}
    hive = table_kind(table.format) if table.format in HIVE_COMPATIBLE and table.bucketing is None else None
    if hive is not None and hive.classes is not None:
        read, write = hive.classes
        columns, serde = fields(table.columns), hive.serde
    else:
        (read, write), columns, serde = SEQUENCE_FILE, list(PLACEHOLDER), LAZY_SIMPLE_SERDE
    return {"cols": columns, **({"location": location} if location else {}), "inputFormat": read,
            "outputFormat": write, "compressed": False, "numBuckets": -1,
            "serdeInfo": {"serializationLib": serde, "parameters": options}, "bucketCols": [], "sortCols": [],
            "parameters": {}, "storedAsSubDirectories": False}
