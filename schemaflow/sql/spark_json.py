"""Spark's JSON form of a schema (a ``StructType``, as ``DataType.json`` writes it) read into the model's columns.

Spark keeps it in a table's parameters (``spark.sql.sources.schema``) and Delta in its log (``metaData.schemaString``):
fields of a name, a type (an atomic type's name, or an ``array``, ``map`` or ``struct`` object) and metadata. A
column's comment is its ``comment`` metadata; a char or varchar column is a string whose declared type is in the
metadata too. Other metadata (Delta's column mapping ids and physical names, its record of type changes) says
nothing of the type or the comment, and is not read.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from schemaflow.model import Column
from schemaflow.sql.quoting import ident

# Spark keeps a char or varchar column as a string, with its declared type in the field's metadata.
CHAR_VARCHAR = "__CHAR_VARCHAR_TYPE_STRING"
# Spark's JSON names of atomic types that Hive spells otherwise.
HIVE_NAMES = {"byte": "tinyint", "short": "smallint", "integer": "int", "long": "bigint"}


def spark_column(field: Mapping[str, Any]) -> Column:
    """The column a field of Spark's JSON schema describes, its name in lower case and its type in Hive's text."""
    metadata = field.get("metadata", {})
    type_ = metadata.get(CHAR_VARCHAR) or hive_type(field["type"])
    return Column(field["name"].lower(), type_, metadata.get("comment") or None)


def hive_type(spark_type: Any) -> str:
    """Hive's text for a type in Spark's JSON form (``"integer"``, ``{"type": "array", ...}``)."""
    if isinstance(spark_type, str):
        return HIVE_NAMES.get(spark_type, spark_type)
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
