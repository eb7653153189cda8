"""How a table's files are stored: Hive's SerDes and delimiters, and what Spark keeps beside them.

A Hive-format table (``STORED AS``) is read through an input format, written through an output
format and (de)serialised by a SerDe, configured by SERDEPROPERTIES. A format name stands for a
pair of format classes and a default SerDe (its ``TableKind``, in ``sql.table_kinds``); a SerDe
or property beyond the format's own is stated. A Spark data-source table (``USING``) names a
provider and keeps its OPTIONS where Hive keeps SERDEPROPERTIES.

What this module says of SerDes and their properties is measured on the metastore bundled with
pyspark: what Spark 4 stores for each ``CREATE TABLE`` form. The live reader, the spec, the DDL
and the import all normalise through it, so desired and live compare alike.
"""
from __future__ import annotations

from collections.abc import Mapping

from schemaflow.sql.table_kinds import kinds

# SerDes that ship with Hive and Spark: a table of another SerDe needs jars schemaflow cannot vouch
# for, so one found in a warehouse is left alone (see ``scope``) unless a schema file declares it.
KNOWN_SERDES = frozenset({
    *(kind.serde for kind in kinds() if kind.serde),
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


def same_location(a: str | None, b: str | None) -> bool:
    """Compare locations as the metastore stores them: a bare local path gains ``file:``."""
    def norm(p: str | None) -> str:
        p = (p or "").rstrip("/")
        return "file:" + p if p.startswith("/") else p
    return norm(a) == norm(b)


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
