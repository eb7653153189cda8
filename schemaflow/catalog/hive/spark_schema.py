"""Spark's own copy of a table's schema, kept in table parameters, read into the model.

Spark writes the schema of every table it creates as JSON in ``spark.sql.sources.schema`` (split
into ``.part.N`` past 4,000 characters), with the partition and bucket columns named alongside.
For a data-source table (``USING csv``) that copy is the only true one: the metastore's column
list is a placeholder (``col array<string>``) for formats Hive cannot read, and Spark reads the
copy for every format. This module turns it into ``Column``s with Hive type text (``sql.spark_json``), and reads the
bucketing Spark records for data-source tables; and writes them back as Spark does, for a catalog
Spark does not write itself (``schema_parameters``).
"""
from __future__ import annotations

import json
import re
from typing import Any
from collections.abc import Mapping, Sequence

from schemaflow.model import Bucketing, Column
from schemaflow.sql.spark_json import CHAR_VARCHAR, HIVE_NAMES, spark_column

SPARK_SCHEMA = "spark.sql.sources.schema"
SPARK_SCHEMA_PARTS = SPARK_SCHEMA + ".numParts"
SPARK_SCHEMA_PART = SPARK_SCHEMA + ".part."
SPARK_SCHEMA_LENGTH = 4000       # spark.sql.sources.schemaStringLengthThreshold's default
NUM_PARTITION_COLUMNS = SPARK_SCHEMA + ".numPartCols"
PARTITION_COLUMN = SPARK_SCHEMA + ".partCol."
NUM_BUCKETS = SPARK_SCHEMA + ".numBuckets"
BUCKET_COLUMN = SPARK_SCHEMA + ".bucketCol."
SORT_COLUMN = SPARK_SCHEMA + ".sortCol."


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
    columns = tuple(spark_column(field) for field in json.loads(text).get("fields", []))
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


def schema_parameters(columns: Sequence[Column], partition_columns: Sequence[Column] = (),
                      bucketing: Bucketing | None = None, spelt: Sequence[str] = ()) -> dict[str, str]:
    """The parameters Spark's catalog (``HiveExternalCatalog.tableMetaToTableProps``) writes for a table of these
    columns: its copy of the schema (partition columns last, split into parts past ``SPARK_SCHEMA_LENGTH``), the
    partition columns and the bucketing, names spelt as ``spelt`` spells them. The inverse of ``spark_columns``
    and ``spark_bucketing``, for a catalog that Spark does not write itself (Glue)."""
    spelling = {name.lower(): name for name in spelt}
    def named(name: str) -> str:
        return spelling.get(name, name)
    schema = {"type": "struct", "fields": [_field(named(c.name), c.type or "string", c.comment)
                                           for c in [*columns, *partition_columns]]}
    text = json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    parts = [text[i:i + SPARK_SCHEMA_LENGTH] for i in range(0, len(text), SPARK_SCHEMA_LENGTH)]
    written = {SPARK_SCHEMA: text} if len(parts) == 1 else {
        SPARK_SCHEMA_PARTS: str(len(parts)), **{f"{SPARK_SCHEMA_PART}{i}": part for i, part in enumerate(parts)}}
    if partition_columns:
        written[NUM_PARTITION_COLUMNS] = str(len(partition_columns))
        written |= {f"{PARTITION_COLUMN}{i}": named(c.name) for i, c in enumerate(partition_columns)}
    if bucketing is not None:
        written |= {NUM_BUCKETS: str(bucketing.count), SPARK_SCHEMA + ".numBucketCols": str(len(bucketing.columns)),
                    **{f"{BUCKET_COLUMN}{i}": named(c) for i, c in enumerate(bucketing.columns)}}
        if bucketing.sorted_by:
            written[SPARK_SCHEMA + ".numSortCols"] = str(len(bucketing.sorted_by))
            written |= {f"{SORT_COLUMN}{i}": named(c) for i, c in enumerate(bucketing.sorted_by)}
    return written


_SPARK_NAMES = {hive: spark for spark, hive in HIVE_NAMES.items()}
_TYPE_WORD = re.compile(r"[a-z]+(?:\(\d+(?:,\d+)?\))?")
_STRUCT_FIELD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):")


def _field(name: str, canonical: str, comment: str | None) -> dict[str, Any]:
    """A field of Spark's schema JSON for a column of the canonical Hive type ``canonical``: a char or varchar
    anywhere in it is a string, with the declared type in the field's metadata, as Spark's
    ``CharVarcharUtils.replaceCharVarcharWithStringInSchema`` writes it."""
    spark, texts = _spark_type(canonical, 0)
    metadata: dict[str, str] = {"comment": comment} if comment else {}
    if texts[1]:
        metadata[CHAR_VARCHAR] = canonical
    return {"name": name, "type": spark, "nullable": True, "metadata": metadata}


def _spark_type(text: str, at: int) -> tuple[Any, tuple[int, bool]]:
    """Spark's JSON form of the canonical Hive type starting at ``at`` in ``text``, and (where it ends, whether it
    holds a char or varchar)."""
    word = _TYPE_WORD.match(text, at)
    if word is None:
        raise ValueError(f"not a canonical type at {at}: {text!r}")
    name, at = word.group(), word.end()
    if name == "array":
        element, (at, texts) = _spark_type(text, at + 1)
        return {"type": "array", "elementType": element, "containsNull": True}, (at + 1, texts)
    if name == "map":
        key, (at, key_texts) = _spark_type(text, at + 1)
        value, (at, value_texts) = _spark_type(text, at + 1)
        return ({"type": "map", "keyType": key, "valueType": value, "valueContainsNull": True},
                (at + 1, key_texts or value_texts))
    if name == "struct":
        fields, any_texts = [], False
        while text[at] != ">":
            field = _STRUCT_FIELD.match(text, at + 1)
            if field is None:
                raise ValueError(f"not a canonical struct field at {at + 1}: {text!r}")
            _, (end, _) = _spark_type(text, field.end())
            fields.append(_field(field.group(1), text[field.end():end], None))
            any_texts = any_texts or CHAR_VARCHAR in fields[-1]["metadata"]
            at = end
        return {"type": "struct", "fields": fields}, (at + 1, any_texts)
    base = name.split("(")[0]
    if base in ("char", "varchar"):
        return "string", (at, True)
    return _SPARK_NAMES.get(name, name), (at, False)
