"""Spark's own copy of a table's schema, kept in table parameters, read into the model.

Spark writes the schema of every table it creates as JSON in ``spark.sql.sources.schema`` (split
into ``.part.N`` past 4,000 characters), with the partition and bucket columns named alongside.
For a data-source table (``USING csv``) that copy is the only true one: the metastore's column
list is a placeholder (``col array<string>``) for formats Hive cannot read, and Spark reads the
copy for every format. This module turns it into ``Column``s with Hive type text, and reads the
bucketing Spark records for data-source tables.
"""
from __future__ import annotations

import json
from typing import Any
from collections.abc import Mapping

from schemaflow.model import Bucketing, Column
from schemaflow.sql.quoting import ident

SPARK_SCHEMA = "spark.sql.sources.schema"
SPARK_SCHEMA_PARTS = SPARK_SCHEMA + ".numParts"
SPARK_SCHEMA_PART = SPARK_SCHEMA + ".part."
SPARK_SCHEMA_LENGTH = 4000       # spark.sql.sources.schemaStringLengthThreshold's default
NUM_PARTITION_COLUMNS = SPARK_SCHEMA + ".numPartCols"
PARTITION_COLUMN = SPARK_SCHEMA + ".partCol."
NUM_BUCKETS = SPARK_SCHEMA + ".numBuckets"
BUCKET_COLUMN = SPARK_SCHEMA + ".bucketCol."
SORT_COLUMN = SPARK_SCHEMA + ".sortCol."
# Spark keeps a char or varchar column as a string, with its declared type in the field's metadata.
CHAR_VARCHAR = "__CHAR_VARCHAR_TYPE_STRING"
# Spark's JSON names of atomic types that Hive spells otherwise.
_HIVE_NAMES = {"byte": "tinyint", "short": "smallint", "integer": "int", "long": "bigint"}


def schema_text(parameters: Mapping[str, str]) -> str | None:
    """The JSON text of Spark's copy of the schema, joined from its parts; None if there is none."""
    if SPARK_SCHEMA in parameters:
        return parameters[SPARK_SCHEMA]
    if SPARK_SCHEMA_PARTS not in parameters:
        return None
    return "".join(parameters[f"{SPARK_SCHEMA_PART}{i}"] for i in range(int(parameters[SPARK_SCHEMA_PARTS])))


def spark_columns(parameters: Mapping[str, str]) -> tuple[tuple[Column, ...], tuple[Column, ...]] | None:
    """The data and partition columns Spark records for a table, or None when it records none."""
    text = schema_text(parameters)
    if text is None:
        return None
    columns = tuple(_column(field) for field in json.loads(text).get("fields", []))
    partition_names = [parameters[f"{PARTITION_COLUMN}{i}"].lower()
                       for i in range(int(parameters.get(NUM_PARTITION_COLUMNS, "0")))]
    by_name = {c.name: c for c in columns}
    return (tuple(c for c in columns if c.name not in partition_names),
            tuple(by_name[name] for name in partition_names if name in by_name))


def spelt_names(parameters: Mapping[str, str]) -> tuple[str, ...]:
    """The column names Spark's copy of the schema spells with capitals (Spark reports them so), in its order; none
    where the copy is not one Spark wrote (a Hive table's is read for nothing else, so it is not trusted to parse)."""
    try:
        text = schema_text(parameters)
        schema = json.loads(text) if text is not None else {}
    except (KeyError, ValueError):
        return ()
    fields = schema.get("fields") if isinstance(schema, dict) else None
    names = [field.get("name") for field in fields if isinstance(field, dict)] if isinstance(fields, list) else []
    return tuple(name for name in names if isinstance(name, str) and name != name.lower())


def spark_bucketing(parameters: Mapping[str, str]) -> Bucketing | None:
    """The bucketing Spark records in a table's parameters, or None."""
    if NUM_BUCKETS not in parameters:
        return None
    def listed(prefix: str, count: str) -> tuple[str, ...]:
        return tuple(parameters[f"{prefix}{i}"].lower() for i in range(int(parameters.get(count, "0"))))
    return Bucketing(listed(BUCKET_COLUMN, SPARK_SCHEMA + ".numBucketCols"), int(parameters[NUM_BUCKETS]),
                     listed(SORT_COLUMN, SPARK_SCHEMA + ".numSortCols"))


def _column(field: Mapping[str, Any]) -> Column:
    metadata = field.get("metadata", {})
    type_ = metadata.get(CHAR_VARCHAR) or hive_type(field["type"])
    return Column(field["name"].lower(), type_, metadata.get("comment") or None)


def hive_type(spark_type: Any) -> str:
    """Hive's text for a type in Spark's JSON form (``"integer"``, ``{"type": "array", ...}``)."""
    if isinstance(spark_type, str):
        return _HIVE_NAMES.get(spark_type, spark_type)
    kind = spark_type["type"]
    if kind == "array":
        return f"array<{hive_type(spark_type['elementType'])}>"
    if kind == "map":
        return f"map<{hive_type(spark_type['keyType'])},{hive_type(spark_type['valueType'])}>"
    if kind == "struct":
        fields = []
        for field in spark_type["fields"]:
            name = field["name"]
            # Bare where it can be, as a declared type names its fields (sql.types), so that live and
            # declared types compare alike; a name no declared type can hold is quoted, to read unambiguously.
            quoted = name if name.isidentifier() else ident(name)
            fields.append(f"{quoted}:{field.get('metadata', {}).get(CHAR_VARCHAR) or hive_type(field['type'])}")
        return f"struct<{','.join(fields)}>"
    return json.dumps(spark_type)  # a type Hive cannot name (a UDT): kept as stored, which no type matches
