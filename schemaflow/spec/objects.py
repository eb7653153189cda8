"""One schema file read into a table or view: what can be checked without looking at other files.

The file's shape is checked against its JSON Schema first (``spec.declaration``); a file with a
wrong shape goes no further. Then the rules that a schema cannot express: canonical column types, unique column
names, an external table's location, reserved property keys, the partitions a view lists. A
view's SQL is kept as written; what it reads and outputs is worked out once every file is known
(see ``spec.analysis``).

Whatever is accepted here, ``apply`` can write and read back as declared, so a plan converges:
each name and text fits the column the metastore keeps it in (``Limit``), a type is one Spark
can create and the table's format can store (``sql.types``), a property is not one that Hive or
Spark own. Where a file holds text, a plain YAML scalar is the text written (``owner: NO`` is
"NO", not false; ``ds: 2024-01-01`` is that text, not a date), and a blank comment is no comment,
as the metastore reports it.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, assert_never

from schemaflow.errors import Problem
from schemaflow.model import Bucketing, Column, Source, Table, View, ViewPartitions, partition_name
from schemaflow.spec import delta, iceberg
from schemaflow.spec.yamlpos import Document, NodePath
from schemaflow.sql.storage import (MAX_BUCKETS, PATH_OPTION, REGEX_PROPERTY, REGEX_SERDES, ROW_FORMAT,
                                    java_capturing_groups, serde_properties)
from schemaflow.sql.table_kinds import (CUSTOM, LAZY_SIMPLE_SERDE, Layout, TypeRule, default_serde, format_kind, hive_kind,
                                        names, serde_kind, table_kind)
from schemaflow.sql.types import InvalidType, canonical_type, is_primitive
from schemaflow.sql.table_parameters import why_reserved
from schemaflow.wording import plural


@dataclass(frozen=True)
class Limit:
    """How long a name or text may be: the length of the metastore column that keeps it."""

    what: str     # what messages call it
    length: int
    column: str   # the metastore's table and column

    def check(self, text: str, where: Source | Callable[[], Source], problems: list[Problem],
              advice: str = "shorten it") -> None:
        """A problem at ``where`` (or where it answers: asked only for a problem) when ``text`` is too long."""
        # DataNucleus refuses a longer string before the database sees it, counting as Java does,
        # in UTF-16 units: a character beyond U+FFFF (an emoji) counts twice.
        if 2 * len(text) <= self.length:
            return  # within, whatever its characters (most names and comments)
        length = len(text.encode("utf-16-le")) // 2
        if length > self.length:
            counted = " (characters beyond U+FFFF, such as emoji, count twice)" if length != len(text) else ""
            message = (f"{self.what} is {length} characters{counted}; the metastore stores at most {self.length} "
                       f"({self.column}): {advice}")
            problems.append(Problem(where() if callable(where) else where, message))


# The columns of the metastore's own database, as the bundled Hive 2.3.10 metastore creates them
# from package.jdo (in hive-metastore-2.3.10.jar). Lengths are of VARCHAR(n) columns.
_DATABASE_NAME = Limit("database name", 128, "DBS.NAME")
_OBJECT_NAME = Limit("table or view name", 256, "TBLS.TBL_NAME")
_COLUMN_NAME = Limit("column name", 767, "COLUMNS_V2.COLUMN_NAME")
_PARTITION_COLUMN_NAME = Limit("partition column name", 128, "PARTITION_KEYS.PKEY_NAME")
_COLUMN_TYPE = Limit("column type", 32672, "COLUMNS_V2.TYPE_NAME")
# A view's columns, its partition columns too, are first created as data columns.
_COLUMN_COMMENT = Limit("column comment", 256, "COLUMNS_V2.COMMENT")
_PARTITION_COLUMN_COMMENT = Limit("partition column comment", 4000, "PARTITION_KEYS.PKEY_COMMENT")
_COMMENT = Limit("comment", 32672, "TABLE_PARAMS.PARAM_VALUE of the parameter 'comment'")
_PROPERTY_KEY = Limit("property key", 256, "TABLE_PARAMS.PARAM_KEY")
_PROPERTY_VALUE = Limit("property value", 32672, "TABLE_PARAMS.PARAM_VALUE")
_MANAGED_KEYS = Limit("the list of property keys", 32672,
                       "TABLE_PARAMS.PARAM_VALUE of 'schemaflow.managed_properties'")
# package.jdo gives this one no length: DataNucleus makes it its default, VARCHAR(255).
_PARTITION_VALUE = Limit("partition value", 255, "PARTITION_KEY_VALS.PART_KEY_VAL")
_PARTITION_NAME = Limit("partition name", 767, "PARTITIONS.PART_NAME")
# A LONGVARCHAR with no length: in Derby, the bundled metastore's database, a LONG VARCHAR of 32,700.
_LOCATION = Limit("location", 4000, "SDS.LOCATION")
_CLASS_NAME = Limit("class name", 4000, "SERDES.SLIB, SDS.INPUT_FORMAT and SDS.OUTPUT_FORMAT")
_SERDE_KEY = Limit("key", 256, "SERDE_PARAMS.PARAM_KEY")
_SERDE_VALUE = Limit("value", 32672, "SERDE_PARAMS.PARAM_VALUE")
_VIEW_TEXT = Limit("view SQL", 32700, "TBLS.VIEW_ORIGINAL_TEXT and VIEW_EXPANDED_TEXT, LONG VARCHAR in Derby")

# Characters Hive writes as %XX in a partition's name, as in a path (FileUtils.escapePathName).
_ESCAPED = frozenset('"#%\'*/:=?\\{[]^\x7f') | frozenset(map(chr, range(0x20)))


def _object_name(doc: Document, kind: str, written: str, problems: list[Problem]) -> tuple[str, str]:
    """The database and name of a ``db.name``, lower-case as the metastore keeps them."""
    database, _, name = written.lower().partition(".")
    _DATABASE_NAME.check(database, doc.at(kind), problems)
    _OBJECT_NAME.check(name, doc.at(kind), problems)
    return database, name


def _comment(doc: Document, data: dict[str, Any], path: NodePath, limit: Limit, problems: list[Problem]) -> str | None:
    """The comment at ``path`` (under ``data``), checked against ``limit``; a blank one is none.

    The metastore reports an empty comment as no comment, so one declared empty would be planned
    again on every run; a comment of spaces alone says no more.
    """
    comment = data.get("comment")
    if comment is None:
        return None
    limit.check(comment, partial(doc.at, *path, "comment"), problems)
    return comment if comment.strip() else None


def table_columns(doc: Document, data: dict[str, Any], problems: list[Problem],
                  none: str) -> tuple[tuple[Column, ...], tuple[Column, ...]]:
    """The data and partition columns of a table or source file, each name once; ``none`` says what to
    do when it declares no data column."""
    columns = _columns(doc, data, "columns", problems)
    partition_columns = _columns(doc, data, "partitioned_by", problems)
    _check_unique(columns + partition_columns, problems)
    if not columns:
        problems.append(Problem(doc.at("columns"), none))
    return columns, partition_columns


def read_table(doc: Document, data: dict[str, Any], problems: list[Problem]) -> Table:
    """The table a ``table:`` file declares (its shape already checked); its problems are added to ``problems``."""
    database, name = _object_name(doc, "table", data["table"], problems)
    columns, partition_columns = table_columns(doc, data, problems, "a table needs at least one data column")
    kind = format_kind(data.get("format", ""))
    own_metadata = kind is not None and kind.own_metadata
    declared_by = kind.layout if kind is not None else Layout.STORAGE
    layout: dict[str, Any] = {}
    match declared_by:
        case Layout.TRANSFORMS:
            iceberg.not_iceberg(doc, data, problems)
            layout = dict(zip(("partition_spec", "sort_order"), iceberg.layout(doc, data, columns, problems),
                              strict=True))
        case Layout.PARTITION_COLUMNS:
            delta.not_delta(doc, data, problems)
        case Layout.STORAGE:
            _not_hive(doc, data, problems)
        case _:
            assert_never(declared_by)
    data_source = table_kind(data["using"], data_source=True) if "using" in data else None
    if data_source is not None and data_source.one_column and len(columns) > 1:
        # Spark creates it, then refuses every read and write (measured on Spark 4.0).
        problems.append(Problem(doc.at("columns", 1), (
            f"Spark's text data source reads each line as one string column, and this table declares {len(columns)} "
            "data columns: every read and write of it would fail (\"Text data source supports only a single "
            "column\"); keep one, or use csv or json")))
    external = data.get("external", False)
    if external and "location" not in data:
        problems.append(Problem(doc.key("external"), "an external table needs a location: add 'location:'"))
    # An Iceberg table's location is Iceberg's; any other table's is an external table's.
    if not external and "location" in data and declared_by is not Layout.TRANSFORMS:
        message = "only an external table takes a location: add 'external: true' or remove 'location'"
        problems.append(Problem(doc.key("location"), message))
    if "location" in data:
        _LOCATION.check(data["location"], doc.at("location"), problems)
    storage = dict(format=data["format"], data_source=True) if own_metadata else _storage(doc, data, problems)
    _regex_problems(doc, storage, len(columns), problems)
    names = {c.name for c in columns}
    properties = _properties(doc, data, problems)
    match declared_by:
        case Layout.TRANSFORMS:
            iceberg.check_properties(doc, properties, data.get("location"), problems)
        case Layout.PARTITION_COLUMNS:
            delta.check_properties(doc, properties, problems)
        case Layout.STORAGE:
            pass
        case _:
            assert_never(declared_by)
    return Table(
        database=database,
        name=name,
        columns=columns,
        partition_columns=partition_columns,
        comment=_comment(doc, data, (), _COMMENT, problems),
        external=external,
        location=data.get("location"),
        properties=properties,
        bucketing=None if declared_by is not Layout.STORAGE else _bucketing(doc, data.get("buckets"), names,
                                                       {c.name for c in partition_columns}, problems),
        rewrite_hiding=data.get("rewrite") == "when_values_hide",
        source=doc.key("table"),
        **storage,
        **layout,
    )


def _not_hive(doc: Document, data: dict[str, Any], problems: list[Problem]) -> None:
    """A problem for each partition transform and sort order of a table that is not an Iceberg table."""
    for i, item in enumerate(data.get("partitioned_by", ())):
        if isinstance(item, str):
            problems.append(Problem(doc.at("partitioned_by", i), (
                f"{item!r} is not a partition column: only an Iceberg table (format: iceberg) partitions by transforms "
                "of its columns; declare a partition column as {name: ds, type: string}")))
    if "sorted_by" in data:
        problems.append(Problem(doc.key("sorted_by"), (
            "'sorted_by' is an Iceberg table's sort order (format: iceberg): a Hive or data-source table sorts rows "
            "within buckets, 'buckets: {clustered_by: [...], sorted_by: [...], count: N}'")))


def _storage(doc: Document, data: dict[str, Any], problems: list[Problem]) -> dict[str, Any]:
    """How the table's files are stored: a Hive format with its SerDe, or a Spark data source (``sql.storage``).

    The two vocabularies never mix: ``using:`` with ``options:``, or ``format:`` (or the format
    classes) with ``row_format:``, ``serde:`` and ``serde_properties:``.
    """
    if "using" in data:
        for key in ("format", "row_format", "serde", "serde_properties", "input_format", "output_format"):
            if key in data:
                message = (f"'{key}' is for a Hive-format table, and 'using: {data['using']}' makes a Spark "
                           "data-source table: give its settings as 'options:', or remove 'using:'")
                problems.append(Problem(doc.key(key), message))
        options = _settings(doc, data, "options", problems)
        if PATH_OPTION in {key.lower() for key in options}:
            problems.append(Problem(doc.key("options", next(k for k in options if k.lower() == PATH_OPTION)),
                                    "option 'path' is the table's location: declare 'external: true' and "
                                    "'location:' instead"))
        return dict(format=data["using"], data_source=True, serde_properties=options)
    if "options" in data:
        problems.append(Problem(doc.key("options"), f"'options' are a Spark data source's: add 'using:' "
                                f"({', '.join(names(data_source=True))}), or declare SERDEPROPERTIES as "
                                "'serde_properties:'"))
    classes = [key for key in ("input_format", "output_format") if key in data]
    if classes and ("format" in data or len(classes) == 1):
        where = doc.key("format") if "format" in data else doc.key(classes[0])
        problems.append(Problem(where, "name the format, or both its classes: 'format:', or 'input_format:' with "
                                "'output_format:'"))
    format_ = hive_kind(data.get("input_format"), data.get("output_format")).name if classes else data.get("format",
                                                                                                          "parquet")
    serde = data.get("serde")
    properties = _settings(doc, data, "serde_properties", problems)
    for field, value in data.get("row_format", {}).items():
        where, key = doc.key("row_format", field), ROW_FORMAT[field]
        if (serde or default_serde(format_)) != LAZY_SIMPLE_SERDE:
            problems.append(Problem(where, f"row_format sets the delimiters of {LAZY_SIMPLE_SERDE}, which this table "
                                    f"does not use: give its SerDe's own settings as 'serde_properties:'"))
        elif key in properties:
            problems.append(Problem(where, f"'{field}' sets '{key}', which serde_properties sets too: keep one"))
        elif field == "lines_terminated_by" and value != "\n":
            problems.append(Problem(where, "Hive ends lines with a newline only: write \"\\n\" or remove it"))
        elif field != "null_defined_as" and len(value) != 1:
            problems.append(Problem(where, f"a delimiter is one character, not {value!r} (write \"\\x01\" for "
                                    "Hive's default, ^A)"))
        properties[key] = value
    for field in ("serde", "input_format", "output_format"):
        if field in data:
            _CLASS_NAME.check(data[field], doc.at(field), problems)
    return dict(
        format=format_,
        serde=None if serde is None or serde == default_serde(format_) else serde,
        input_format=data.get("input_format") if format_ == CUSTOM else None,
        output_format=data.get("output_format") if format_ == CUSTOM else None,
        serde_properties=serde_properties(properties),
    )


def _regex_problems(doc: Document, storage: dict[str, Any], columns: int, problems: list[Problem]) -> None:
    """A RegexSerDe table reads a row only when its regex has a capturing group per data column (else every
    read fails: "Number of matching groups doesn't match the number of columns")."""
    regex = storage.get("serde_properties", {}).get(REGEX_PROPERTY)
    if storage.get("serde") not in REGEX_SERDES or regex is None:
        return
    groups = java_capturing_groups(regex)
    if groups != columns:
        problems.append(Problem(doc.at("serde_properties", REGEX_PROPERTY), (
            f"{REGEX_PROPERTY} has {plural(groups, 'capturing group')} and the table {plural(columns, 'data column')}: "
            "RegexSerDe reads a row only when they match, so every read of the table would fail; give each "
            "column a group (and make other groups non-capturing, (?:...))")))


def _settings(doc: Document, data: dict[str, Any], field: str, problems: list[Problem]) -> dict[str, str]:
    """SERDEPROPERTIES or OPTIONS, as the strings written, each within the metastore's limits."""
    settings = {key: str(value) for key, value in sorted(data.get(field, {}).items())}
    for key, value in settings.items():
        _SERDE_KEY.check(key, doc.key(field, key), problems)
        _SERDE_VALUE.check(value, doc.at(field, key), problems)
    return settings


def _bucketing(doc: Document, declared: dict[str, Any] | None, columns: set[str], partition_columns: set[str],
               problems: list[Problem]) -> Bucketing | None:
    """``buckets:``: data columns to cluster and sort by, and how many buckets (Spark's limit applies)."""
    if declared is None:
        return None
    for field in ("clustered_by", "sorted_by"):
        for i, written in enumerate(declared.get(field, ())):
            name = written.lower()
            if name in partition_columns:
                message = f"'{written}' is a partition column: a table buckets the rows within each partition by data columns"
                problems.append(Problem(doc.at("buckets", field, i), message))
            elif name not in columns:
                problems.append(Problem(doc.at("buckets", field, i), f"'{written}' is not a column of the table"))
    if declared["count"] > MAX_BUCKETS:
        problems.append(Problem(doc.at("buckets", "count"), f"Spark makes at most {MAX_BUCKETS} buckets "
                                "(spark.sql.sources.bucketing.maxBuckets): declare fewer"))
    return Bucketing(tuple(c.lower() for c in declared["clustered_by"]), declared["count"],
                     tuple(c.lower() for c in declared.get("sorted_by", ())))


def read_view(doc: Document, data: dict[str, Any], problems: list[Problem]) -> View:
    """The view a ``view:`` file declares (its shape already checked); its problems are added to ``problems``."""
    database, name = _object_name(doc, "view", data["view"], problems)
    columns = tuple(
        Column(name=_column_name(doc, ("columns", i), c, _COLUMN_NAME, problems),
               comment=_comment(doc, c, ("columns", i), _COLUMN_COMMENT, problems), source=doc.at("columns", i))
        for i, c in enumerate(data.get("columns", ()))
    )
    _check_unique(columns, problems)
    for i, written in enumerate(data.get("partitioned_on", ())):
        _PARTITION_COLUMN_NAME.check(written, doc.at("partitioned_on", i), problems)
    partitioned_on = tuple(p.lower() for p in data.get("partitioned_on", ()))
    sql = re.sub(r"[\s;]+$", "", data["sql"])
    _VIEW_TEXT.check(sql, doc.at("sql"), problems, "shorten it, or move part of it into a view that it reads")
    return View(
        database=database,
        name=name,
        sql=sql,
        columns=columns,
        comment=_comment(doc, data, (), _COMMENT, problems),
        partitioned_on=partitioned_on,
        partitions=_view_partitions(doc, data.get("partitions"), partitioned_on, problems),
        properties=_properties(doc, data, problems),
        source=doc.key("view"),
    )


def _view_partitions(doc: Document, declared: list | dict | None, partitioned_on: tuple[str, ...],
                     problems: list[Problem]) -> ViewPartitions | None:
    """The ``partitions:`` of a view file: a list of partitions, or a rule to derive them from a base table.

    Each listed partition names a value for every ``partitioned_on`` column, and no other column;
    whether a base table fits a rule is checked with the other files (``spec.analysis``).
    """
    if declared is None:
        return None
    if not partitioned_on:
        message = "partitions need partitioned_on: name the view's partition columns first"
        problems.append(Problem(doc.key("partitions"), message))
        return None
    if isinstance(declared, dict):
        complete_when = {}
        for column, wanted in declared.get("complete_when", {}).items():
            if column.lower() in partitioned_on:
                message = (f"complete_when names '{column}', a partition column of the view itself: "
                           "list only the base table's other partition columns")
                problems.append(Problem(doc.key("partitions", "complete_when", column), message))
            complete_when[column.lower()] = wanted if isinstance(wanted, int) else tuple(sorted(set(wanted)))
        return ViewPartitions(derive_from=declared["derive_from"].lower(), complete_when=complete_when)
    names = ", ".join(partitioned_on)
    first: dict[tuple[str, ...], int] = {}
    for i, spec in enumerate(declared):
        for written, value in spec.items():
            if written.lower() not in partitioned_on:
                message = f"'{written}' is not a partition column of the view (partitioned_on: {names})"
                problems.append(Problem(doc.key("partitions", i, written), message))
            _PARTITION_VALUE.check(value, doc.at("partitions", i, written), problems)
        spec = {column.lower(): value for column, value in spec.items()}
        missing = [column for column in partitioned_on if column not in spec]
        if missing:
            message = f"partition misses {', '.join(missing)}: each names a value for every column of: {names}"
            problems.append(Problem(doc.at("partitions", i), message))
            continue
        values = tuple(spec[column] for column in partitioned_on)
        escaped = tuple("".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value) for value in values)
        _PARTITION_NAME.check(partition_name(partitioned_on, escaped), doc.at("partitions", i), problems,
                              "shorten its values (Hive writes each '/', ':', '=', '%' and the like in them as %XX)")
        if "" in values:
            problems.append(Problem(doc.at("partitions", i), "a partition value must not be empty"))
        elif values in first:
            name = partition_name(partitioned_on, values)
            message = f"partition {name} is listed twice (first on line {first[values]})"
            problems.append(Problem(doc.at("partitions", i), message))
        first.setdefault(values, doc.at("partitions", i).line)
    return ViewPartitions(values=tuple(sorted(first)))


def _columns(doc: Document, data: dict[str, Any], field: str, problems: list[Problem]) -> tuple[Column, ...]:
    """A table's data columns (``columns``) or partition columns (``partitioned_by``)."""
    partition = field == "partitioned_by"
    name_limit, comment_limit = ((_PARTITION_COLUMN_NAME, _PARTITION_COLUMN_COMMENT) if partition
                                 else (_COLUMN_NAME, _COLUMN_COMMENT))
    columns = []
    type_rule = _type_rule(data)  # the table's: once, not per column
    for i, column in enumerate(data.get(field, ())):
        if not isinstance(column, dict):
            continue  # an Iceberg table's partition field (spec.iceberg), or a transform on another table (_not_hive)
        path: NodePath = (field, i)
        name = _column_name(doc, path, column, name_limit, problems)
        type_ = _column_type(partial(doc.at, *path, "type"), column["type"], partition, type_rule, problems)
        comment = _comment(doc, column, path, comment_limit, problems)
        columns.append(Column(name, type_, comment, source=doc.at(*path)))
    return tuple(columns)


def _column_name(doc: Document, path: NodePath, column: dict[str, Any], limit: Limit, problems: list[Problem]) -> str:
    name: str = column["name"]
    limit.check(name, partial(doc.at, *path, "name"), problems)
    return name.lower()


def _type_rule(data: dict[str, Any]) -> TypeRule:
    """Which types a table's files keep as declared: its data source's rule, else the rule of its format, of its
    classes or of its SerDe (avro's, however the file names avro); ``TypeRule.ANY`` for a source file."""
    named = [table_kind(data["using"], data_source=True)] if "using" in data else []
    named += [format_kind(data.get("format", "")), hive_kind(data.get("input_format"), data.get("output_format")),
              serde_kind(data.get("serde"))]
    return next((kind.type_rule for kind in named if kind is not None and kind.type_rule is not TypeRule.ANY),
                TypeRule.ANY)


def _column_type(where: Callable[[], Source], declared: str, partition: bool, type_rule: TypeRule,
                 problems: list[Problem]) -> str:
    """The canonical type of a table column, if Spark can create it and the table can store it as declared
    (``type_rule``; partition values are kept in the metastore, not in the files)."""
    try:
        type_ = canonical_type(declared)
        if partition and not is_primitive(type_):
            raise InvalidType(f"a partition column holds one value, not {type_}: each partition is named by its "
                              "values; declare a primitive type, such as string, or make it a data column")
        if not partition:
            type_rule.check(type_)
    except InvalidType as error:
        problems.append(Problem(where(), str(error)))
        return declared
    _COLUMN_TYPE.check(type_, where, problems, "split it into several columns")
    return type_


def _check_unique(columns: tuple[Column, ...], problems: list[Problem]) -> None:
    """Column names are case-insensitive: each may appear once among data and partition columns."""
    first: dict[str, Column] = {}
    for column in columns:
        if column.name in first:
            earlier, here = first[column.name].source, column.source
            assert earlier is not None and here is not None  # columns read from a file know their place
            message = f"column '{column.name}' is declared twice (first on line {earlier.line})"
            problems.append(Problem(here, message))
        first.setdefault(column.name, column)


def _properties(doc: Document, data: dict[str, Any], problems: list[Problem]) -> dict[str, str]:
    """TBLPROPERTIES as the strings written (``NO``, ``1.10``); none that Hive, Spark or schemaflow own.

    schemaflow records the keys it manages as one comma-separated parameter, so a key holds no comma.
    """
    properties = {key: str(value) for key, value in sorted(data.get("properties", {}).items())}
    for key, value in properties.items():
        where = doc.key("properties", key)
        reason = why_reserved(key)
        if reason:
            problems.append(Problem(where, f"property '{key}' is reserved: {reason}"))
        if not key.strip() or "," in key:
            message = (f"property key {key!r} is not valid: schemaflow lists the keys it manages, separated by "
                       "commas, so a key must not be blank or hold a comma; rename it")
            problems.append(Problem(where, message))
        _PROPERTY_KEY.check(key, where, problems)
        _PROPERTY_VALUE.check(value, doc.at("properties", key), problems)
    _MANAGED_KEYS.check(",".join(properties), doc.key("properties"), problems, "declare fewer or shorter properties")
    return properties
