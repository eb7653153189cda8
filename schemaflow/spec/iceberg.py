"""What a table file says of an Iceberg table (``format: iceberg``) beyond what every table file says.

An Iceberg table keeps its schema, partition spec, sort order and properties in metadata files of
its own, and reads and writes its data files itself, so the keys that describe a Hive table's
storage do not apply to it: each is refused with what to write instead. Its partition spec
(``partitioned_by:``, transforms of data columns) and sort order (``sorted_by:``) are read by
``sql.iceberg``'s grammar and checked against the columns' types, each problem at its item.
"""
from __future__ import annotations

import posixpath
from typing import Any

from schemaflow.errors import Problem
from schemaflow.model import Column, PartitionField, SortTerm, Source, Table, column_type
from schemaflow.spec.yamlpos import Document
from schemaflow.sql.iceberg import InvalidTerm, check_source_type, family, parse_field, parse_sort_term

# Keys of a Hive table or of a Spark data source that an Iceberg table has no use for, and why.
_NOT_ICEBERG = {
    "using": "an Iceberg table is declared with 'format: iceberg' alone (schemaflow creates it USING iceberg): "
             "remove 'using'",
    "options": "Iceberg keeps a table's settings as its properties: declare them under 'properties:'",
    "external": "Iceberg's catalog registers every Iceberg table as external in the metastore, and what dropping "
                "it deletes is Iceberg's (DROP TABLE ... PURGE): remove 'external' ('location:' may stay)",
    "buckets": "Iceberg buckets rows with a partition transform: write bucket(N, column) under 'partitioned_by:' "
               "(and the sort under 'sorted_by:')",
    **dict.fromkeys(("row_format", "serde", "serde_properties", "input_format", "output_format"),
                    "Iceberg reads and writes its data files itself, with no SerDe or format classes: choose their "
                    "format with the property 'write.format.default' (parquet, orc or avro), or remove it"),
}
# Table properties Iceberg or its Hive catalog write themselves (Iceberg's TableProperties.RESERVED_PROPERTIES
# but format-version, which a table is created with; the metastore parameters HiveTableOperations sets).
_RESERVED = frozenset({"uuid", "snapshot-count", "current-snapshot-id", "current-snapshot-summary",
                       "current-snapshot-timestamp-ms", "current-schema", "default-partition-spec",
                       "default-sort-order", "metadata_location", "previous_metadata_location", "table_type"})
# Properties that send the files of an Iceberg table somewhere other than its own folder (Iceberg's
# TableProperties: WRITE_METADATA_LOCATION, WRITE_DATA_LOCATION and the older folder and object-storage paths).
_PATH_PROPERTIES = ("write.metadata.path", "write.data.path", "write.folder-storage.path", "write.object-storage.path")
_FORMAT_VERSIONS = ("1", "2", "3")
# The format versions schemaflow's writer writes: it commits Iceberg metadata through pyiceberg, whose 0.12 releases
# (the ones the extra iceberg allows) refuse to write version 3 ("Writing V3 is not yet supported").
WRITTEN_VERSIONS = ("1", "2")
UNWRITTEN = "schemaflow's writer (pyiceberg 0.12) writes Iceberg format versions 1 and 2 only"
_FILE_FORMATS = ("parquet", "orc", "avro")


def not_iceberg(doc: Document, data: dict[str, Any], problems: list[Problem]) -> None:
    """A problem for each key of ``data`` an Iceberg table has no use for, and for each Hive partition column."""
    problems.extend(Problem(doc.key(key), f"'{key}' is not for an Iceberg table: {why}")
                    for key, why in _NOT_ICEBERG.items() if key in data)
    for i, item in enumerate(data.get("partitioned_by", ())):
        if isinstance(item, dict):
            name = item["name"]
            problems.append(Problem(doc.at("partitioned_by", i), (
                f"an Iceberg table has no partition columns of its own: it partitions by its data columns; move "
                f"'{name}' into 'columns:' and write its name here (partitioned_by: [{name}]), or a transform of it "
                "such as day(ts)")))


def layout(doc: Document, data: dict[str, Any], columns: tuple[Column, ...],
           problems: list[Problem]) -> tuple[tuple[PartitionField, ...], tuple[SortTerm, ...]]:
    """The partition spec and sort order of an Iceberg table file whose data columns are ``columns``."""
    types = {column.name: column_type(column) for column in columns}
    fields: dict[tuple[str, str], tuple[PartitionField, Source]] = {}  # by (column, family)
    for i, text in _terms(data, "partitioned_by"):
        where = doc.at("partitioned_by", i)
        try:
            field = parse_field(text)
            _check_column(field, types)
        except InvalidTerm as error:
            problems.append(Problem(where, str(error)))
            continue
        kind = family(field)
        if (field.column, kind) in fields:
            what = {"time": "a time transform", "identity": "an identity field"}.get(kind, f"a {kind} field")
            problems.append(Problem(where, (
                f"{field.column} has {what} already (line {fields[field.column, kind][1].line}): Iceberg takes one "
                "of each kind a column, named after it; keep one")))
        fields.setdefault((field.column, kind), (field, where))
    terms: dict[PartitionField, tuple[SortTerm, Source]] = {}
    for i, text in _terms(data, "sorted_by"):
        where = doc.at("sorted_by", i)
        try:
            term = parse_sort_term(text)
            _check_column(term.field, types)
        except InvalidTerm as error:
            problems.append(Problem(where, str(error)))
            continue
        if term.field in terms:
            problems.append(Problem(where, (
                f"the sort order has {term.field} already (line {terms[term.field][1].line}): keep one")))
        terms.setdefault(term.field, (term, where))
    return tuple(field for field, _ in fields.values()), tuple(term for term, _ in terms.values())


def _inside(path: str, location: str | None) -> bool:
    """Whether ``path`` names ``location`` or a folder below it (``..`` steps resolved, as a file system would)."""
    if location is None:
        return False
    base, below = posixpath.normpath(location.rstrip("/")), posixpath.normpath(path.rstrip("/"))
    return "/../" not in f"{path}/" and (below == base or below.startswith(base + "/"))


def _terms(data: dict[str, Any], key: str) -> list[tuple[int, str]]:
    """The terms of ``partitioned_by`` or ``sorted_by``, each with the index of its first item.

    Spark writes ``[day(ts), bucket(16, id)]``, and a YAML flow list splits it at every comma: an item
    that opens a parenthesis the next ones close is joined with them again, so the list reads as
    Spark's. (A Hive partition column, a mapping, is not_iceberg's to refuse.)
    """
    terms: list[tuple[int, str]] = []
    open_from: int | None = None
    for i, item in enumerate(data.get(key, ())):
        if not isinstance(item, str):
            continue
        if open_from is not None:
            start, text = terms[-1]
            terms[-1] = (start, f"{text}, {item.strip()}")
        else:
            terms.append((i, item))
        text = terms[-1][1]
        open_from = terms[-1][0] if text.count("(") > text.count(")") else None
    return terms


def _check_column(field: PartitionField, types: dict[str, str]) -> None:
    """Raises ``InvalidTerm`` unless ``field`` reads a data column of a type its transform takes."""
    if field.column not in types:
        named = ", ".join(list(types)[:10]) + (", ..." if len(types) > 10 else "")
        raise InvalidTerm(f"{field.column!r} is not a data column of the table ({named}): declare it under "
                          "'columns:', or name one of those")
    check_source_type(field, types[field.column])


def check_properties(doc: Document, properties: dict[str, str], location: str | None, problems: list[Problem]) -> None:
    """The properties Iceberg writes itself are refused; the format version and file format are Iceberg's; a path
    for the table's files must lie inside its declared ``location`` (its own folder), not in another table's or
    outside the warehouse, where a commit would write metadata nobody reviewed the place of."""
    for key, value in properties.items():
        if key.lower() in _PATH_PROPERTIES and not _inside(value, location):
            problems.append(Problem(doc.at("properties", key), (
                f"'{key}' puts the table's files at {value!r}, outside its own location "
                f"({location!r} as declared)" if location else
                f"'{key}' puts the table's files at {value!r}, and the table declares no location it would be inside")
                + ": declare 'location:' and keep the path below it, or remove the property"))
        if key.lower() == "owner":
            problems.append(Problem(doc.key("properties", key), (
                "property 'owner' is the metastore entry's owner, which Iceberg's Hive catalog keeps here when it "
                "creates a table, and which the table's metadata carries into any catalog it moves to; schemaflow "
                "manages no Iceberg table's owner, in any catalog: remove it")))
        elif key.lower() in _RESERVED:
            problems.append(Problem(doc.key("properties", key), (
                f"property '{key}' is reserved: Iceberg (or its Hive catalog) writes it for each commit: remove it")))
        elif key == "format-version" and value not in _FORMAT_VERSIONS:
            problems.append(Problem(doc.at("properties", key), (
                f"Iceberg's format versions are {', '.join(_FORMAT_VERSIONS)}, not {value!r}: write one of them")))
        elif key == "format-version" and value not in WRITTEN_VERSIONS:
            problems.append(Problem(doc.at("properties", key), (
                f"format version {value} is Iceberg's, but {UNWRITTEN}: declare format-version: "
                f"'{WRITTEN_VERSIONS[-1]}'; a version {value} table another engine made is read and left alone "
                "when its file declares no format-version")))
        elif key == "write.format.default" and value.lower() not in _FILE_FORMATS:
            problems.append(Problem(doc.at("properties", key), (
                f"Iceberg writes data files as {', '.join(_FILE_FORMATS)}, not {value!r}: write one of them")))


def unwritten(table: Table) -> str | None:
    """Why schemaflow leaves the live table ``table`` alone, declared or not: an Iceberg table of a format version
    its writer does not write (None: any other table)."""
    if table.iceberg is None or str(table.iceberg.format_version) in WRITTEN_VERSIONS:
        return None
    return f"an Iceberg table of format version {table.iceberg.format_version}, and {UNWRITTEN}"
