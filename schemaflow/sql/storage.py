"""How a table's files are stored: Hive's formats, SerDes and delimiters, and Spark's data sources.

A Hive-format table (``STORED AS``) is read through an input format, written through an output
format and (de)serialised by a SerDe, configured by SERDEPROPERTIES. A format name stands for a
pair of format classes and a default SerDe; a table whose classes are those is that format, and
a SerDe or property beyond the format's own is stated. A Spark data-source table (``USING``)
names a provider and keeps its OPTIONS where Hive keeps SERDEPROPERTIES.

The tables below are measured on the metastore bundled with pyspark: what Spark 4 stores for
each ``CREATE TABLE`` form. This module is the one place that knows them; the live reader, the
spec, the DDL and the import all normalise through it, so desired and live compare alike.
"""
from __future__ import annotations

from collections.abc import Mapping

_HIVE_IO = "org.apache.hadoop.hive.ql.io."
LAZY_SIMPLE_SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"

# format name -> (input format, output format, default SerDe), as Spark 4 creates STORED AS <name>.
HIVE_FORMATS: dict[str, tuple[str, str, str]] = {
    "parquet": (_HIVE_IO + "parquet.MapredParquetInputFormat", _HIVE_IO + "parquet.MapredParquetOutputFormat",
                _HIVE_IO + "parquet.serde.ParquetHiveSerDe"),
    "orc": (_HIVE_IO + "orc.OrcInputFormat", _HIVE_IO + "orc.OrcOutputFormat", _HIVE_IO + "orc.OrcSerde"),
    "avro": (_HIVE_IO + "avro.AvroContainerInputFormat", _HIVE_IO + "avro.AvroContainerOutputFormat",
             "org.apache.hadoop.hive.serde2.avro.AvroSerDe"),
    "textfile": ("org.apache.hadoop.mapred.TextInputFormat", _HIVE_IO + "HiveIgnoreKeyTextOutputFormat",
                 LAZY_SIMPLE_SERDE),
    "sequencefile": ("org.apache.hadoop.mapred.SequenceFileInputFormat", "org.apache.hadoop.mapred.SequenceFileOutputFormat",
                     LAZY_SIMPLE_SERDE),
    "rcfile": (_HIVE_IO + "RCFileInputFormat", _HIVE_IO + "RCFileOutputFormat",
               "org.apache.hadoop.hive.serde2.columnar.LazyBinaryColumnarSerDe"),
}
# Output formats Hive itself writes for a format, where Spark writes another of the same files.
HIVE_OUTPUT_FORMATS = {"sequencefile": _HIVE_IO + "HiveSequenceFileOutputFormat"}
# A table whose format classes are no named format's: ``input_format`` and ``output_format`` say them.
CUSTOM = "custom"
# Formats Spark lets a ROW FORMAT SERDE clause go with; others take their classes spelt out.
SERDE_FORMATS = frozenset({"textfile", "sequencefile", "rcfile"})

# SerDes that ship with Hive and Spark: a table of another SerDe needs jars schemaflow cannot vouch
# for, so one found in a warehouse is left alone (see ``scope``) unless a schema file declares it.
KNOWN_SERDES = frozenset({
    *(serde for _, _, serde in HIVE_FORMATS.values()),
    "org.apache.hadoop.hive.serde2.columnar.ColumnarSerDe",
    "org.apache.hadoop.hive.serde2.lazybinary.LazyBinarySerDe",
    "org.apache.hadoop.hive.serde2.OpenCSVSerde",
    "org.apache.hadoop.hive.serde2.RegexSerDe",
    "org.apache.hadoop.hive.serde2.JsonSerDe",
    "org.apache.hive.hcatalog.data.JsonSerDe",
    "org.apache.hadoop.hive.serde2.MultiDelimitSerDe",
    "org.apache.hadoop.hive.contrib.serde2.MultiDelimitSerDe",
})

# SerDes whose own columns Spark reads back for a Hive table: Spark's ALTER TABLE (COMMENT ON TABLE)
# writes those back, without the columns' comments. Measured: OpenCSVSerde loses them; RegexSerDe,
# AvroSerDe and the formats' own SerDes keep them.
SCHEMA_FROM_SERDE = frozenset({"org.apache.hadoop.hive.serde2.OpenCSVSerde"})

# ``row_format:`` in a table file -> the LazySimpleSerDe property it sets (Hive's own spelling,
# ``colelction.delim`` included). Spark 4 drops NULL DEFINED AS from ROW FORMAT DELIMITED, so
# schemaflow writes these as SERDEPROPERTIES, which it keeps.
FIELD_DELIMITER = "field.delim"
ROW_FORMAT = {
    "fields_terminated_by": FIELD_DELIMITER,
    "collection_items_terminated_by": "colelction.delim",
    "map_keys_terminated_by": "mapkey.delim",
    "lines_terminated_by": "line.delim",
    "escaped_by": "escape.delim",
    "null_defined_as": "serialization.null.format",
}
# Written by Hive and Spark themselves: '1' (or the field delimiter) for every table.
SERIALIZATION_FORMAT = "serialization.format"
PATH_OPTION = "path"  # a data-source table's location, which Spark keeps among its options

# Spark's built-in data sources that schemaflow creates (Avro is a separate package in Spark 4).
PROVIDERS = ("parquet", "orc", "json", "csv", "text")
# Those whose tables Spark cannot add columns to (it asks to drop and re-create them).
NO_ADD_COLUMNS = frozenset({"text"})
MAX_BUCKETS = 100_000  # spark.sql.sources.bucketing.maxBuckets's default


# Hive's RegexSerDe (and contrib's): a row reads only when ``input.regex`` has a capturing group per column.
REGEX_SERDES = frozenset({"org.apache.hadoop.hive.serde2.RegexSerDe",
                          "org.apache.hadoop.hive.contrib.serde2.RegexSerDe"})
REGEX_PROPERTY = "input.regex"


def java_capturing_groups(regex: str) -> int:
    """How many capturing groups a ``java.util.regex`` pattern has (``Matcher.groupCount()``): each ``(``
    that is not escaped, not in a character class, and not ``(?``, but for a named group ``(?<name>``."""
    count, i, depth = 0, 0, 0  # depth: of character classes, which Java nests ([a-z&&[^e]])
    while i < len(regex):
        char = regex[i]
        if regex.startswith("\\Q", i):  # quoted up to \E
            end = regex.find("\\E", i + 2)
            i = len(regex) if end < 0 else end + 2
            continue
        if char == "\\":
            i += 2
            continue
        if char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
        elif char == "(" and not depth:
            named = regex.startswith("(?<", i) and i + 3 < len(regex) and regex[i + 3].isalpha()
            count += not regex.startswith("(?", i) or named
        i += 1
    return count


def format_name(input_format: str | None, output_format: str | None) -> str:
    """The named format whose classes these are, or ``CUSTOM``."""
    for name, (read, write, _) in HIVE_FORMATS.items():
        if input_format == read and output_format in (write, HIVE_OUTPUT_FORMATS.get(name)):
            return name
    return CUSTOM


def default_serde(format_: str) -> str:
    """The SerDe a Hive table of ``format_`` gets when none is named (LazySimpleSerDe for a custom pair)."""
    return HIVE_FORMATS[format_][2] if format_ in HIVE_FORMATS else LAZY_SIMPLE_SERDE


def serde_properties(parameters: Mapping[str, str], data_source: bool = False) -> dict[str, str]:
    """The SERDEPROPERTIES (or a data source's OPTIONS) a person declares, sorted.

    Left out: ``serialization.format`` where it says no more than Hive's default ('1') or the
    field delimiter (Spark writes both), and a data-source table's ``path``, which is its location.
    """
    kept = {}
    for key, value in sorted(parameters.items()):
        if key == SERIALIZATION_FORMAT and value in ("1", parameters.get(FIELD_DELIMITER)):
            continue
        if data_source and key == PATH_OPTION:
            continue
        kept[key] = value
    return kept
