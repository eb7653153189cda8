"""Glue's table JSON and the Hive metastore's Thrift table data: one table, two spellings, mapped both ways.

Glue keeps what a Hive metastore keeps for a table (its storage descriptor, SerDe, partition keys, parameters),
spelt in AWS's JSON (``StorageDescriptor``, ``Columns``, ``SerdeInfo.SerializationLibrary``) where Thrift's simple
JSON spells ``sd``, ``cols``, ``serdeInfo.serializationLib``. ``thrift_table`` turns a ``GetTable``/``GetTables``
table into the Thrift form, so ``catalog.hive.thrift_data.to_model`` reads a Glue table with every format, SerDe and
Spark-schema-copy reader a Hive table is read with; ``table_input`` turns Thrift table data into the
``TableInput`` of ``CreateTable`` and ``UpdateTable``. A table's comment is its ``comment`` parameter, as Spark keeps
it; Glue's ``Description`` mirrors it (read where a table has no such parameter: another tool's). Fields neither
side reads (statistics, skew, Lake Formation's, schema-registry references) are left out: a write through
``table_input`` keeps only what it maps, and ``writer`` starts each write from the table as read.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Callable, Mapping

from schemaflow.model import COMMENT_KEY

Converter = Callable[[Any], Any]
Pairs = tuple[tuple[str, str, Converter], ...]  # (Glue's key, Thrift's key, how a value converts)


def _same(value: Any) -> Any:
    return value


def _columns(to_thrift: bool) -> Converter:
    pairs = (("Name", "name", _same), ("Type", "type", _same), ("Comment", "comment", _same))
    return lambda columns: [_mapped(c, pairs, to_thrift) for c in columns]


def _sort_columns(to_thrift: bool) -> Converter:
    pairs = (("Column", "col", _same), ("SortOrder", "order", _same))
    return lambda columns: [_mapped(c, pairs, to_thrift) for c in columns]


_SERDE: Pairs = (("Name", "name", _same), ("SerializationLibrary", "serializationLib", _same),
                 ("Parameters", "parameters", _same))


def _serde(to_thrift: bool) -> Converter:
    return lambda serde: _mapped(serde, _SERDE, to_thrift)


def _storage_pairs(to_thrift: bool) -> Pairs:
    return (("Columns", "cols", _columns(to_thrift)), ("Location", "location", _same),
            ("InputFormat", "inputFormat", _same), ("OutputFormat", "outputFormat", _same),
            ("Compressed", "compressed", _same), ("NumberOfBuckets", "numBuckets", _same),
            ("SerdeInfo", "serdeInfo", _serde(to_thrift)), ("BucketColumns", "bucketCols", _same),
            ("SortColumns", "sortCols", _sort_columns(to_thrift)), ("Parameters", "parameters", _same),
            ("StoredAsSubDirectories", "storedAsSubDirectories", _same))


def _table_pairs(to_thrift: bool) -> Pairs:
    storage = _storage_pairs(to_thrift)
    return (("Name", "tableName", _same), ("Owner", "owner", _same), ("Retention", "retention", _same),
            ("StorageDescriptor", "sd", lambda sd: _mapped(sd, storage, to_thrift)),
            ("PartitionKeys", "partitionKeys", _columns(to_thrift)), ("TableType", "tableType", _same),
            ("Parameters", "parameters", _same), ("ViewOriginalText", "viewOriginalText", _same),
            ("ViewExpandedText", "viewExpandedText", _same))


def _mapped(data: Mapping[str, Any], pairs: Pairs, to_thrift: bool) -> dict[str, Any]:
    """``data`` with each key of ``pairs`` renamed the other way (Glue's to Thrift's with ``to_thrift``), its value
    converted by the pair's converter; keys no pair names are left out."""
    out: dict[str, Any] = {}
    for glue, thrift, convert in pairs:
        source, target = (glue, thrift) if to_thrift else (thrift, glue)
        if data.get(source) is not None:
            out[target] = convert(data[source])
    return out


def thrift_table(table: Mapping[str, Any]) -> dict[str, Any]:
    """A Glue table (as ``GetTable`` gives it) as the Thrift table data ``catalog.hive.thrift_data`` reads."""
    data = _mapped(table, _table_pairs(True), True)
    data["dbName"] = table["DatabaseName"]
    parameters = dict(data.get("parameters", {}))
    if COMMENT_KEY not in parameters and table.get("Description"):
        parameters[COMMENT_KEY] = table["Description"]
    data["parameters"] = parameters
    return data


def table_input(data: Mapping[str, Any]) -> dict[str, Any]:
    """The ``TableInput`` that makes a Glue table of the Thrift table data ``data``; its comment parameter is
    mirrored in ``Description``."""
    glue = _mapped(data, _table_pairs(False), False)
    comment = data.get("parameters", {}).get(COMMENT_KEY)
    if comment:
        glue["Description"] = comment
    return glue


def thrift_database(database: Mapping[str, Any]) -> dict[str, Any]:
    """A Glue database (as ``GetDatabase`` gives it) as the Thrift database data ``thrift_data.database_of``
    reads."""
    return _mapped(database, (("Name", "name", _same), ("Description", "description", _same),
                              ("LocationUri", "locationUri", _same), ("Parameters", "parameters", _same)), True)


def partition_input(partition: Mapping[str, Any], storage: Mapping[str, Any]) -> dict[str, Any]:
    """The ``PartitionInput`` that keeps the Glue ``partition`` (as ``GetPartitions`` gives it) with the storage
    descriptor ``storage`` (Glue's spelling)."""
    kept = {key: partition[key] for key in ("Values", "Parameters", "LastAccessTime") if key in partition}
    return {**kept, "StorageDescriptor": dict(storage)}


# The fields of a ``GetTable`` table that its ``TableInput`` takes (Glue's API reference), as they were read.
_INPUT_FIELDS = ("Name", "Description", "Owner", "LastAccessTime", "LastAnalyzedTime", "Retention",
                 "StorageDescriptor", "PartitionKeys", "ViewOriginalText", "ViewExpandedText", "TableType",
                 "Parameters", "TargetTable", "ViewDefinition")


def as_input(table: Mapping[str, Any]) -> dict[str, Any]:
    """The ``TableInput`` that leaves the Glue ``table`` (as ``GetTable`` gives it) exactly as it is."""
    return {key: table[key] for key in _INPUT_FIELDS if key in table}
