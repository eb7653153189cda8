"""Table kinds: what the way a table's files are stored implies, one record per kind.

A table's kind is a Hive format (``format: parquet``, ``STORED AS PARQUET``), a Hive table read
through format classes of its own (``custom``: ``input_format:`` and ``output_format:``), a Spark
data source (``using: csv``, ``USING csv``), or a table format that keeps its schema, partition spec
and sort order in metadata of its own (``format: iceberg``, ``USING iceberg``: a data source whose
file says ``format:``, since none of a data source's OPTIONS or a Hive table's storage applies). Its
``TableKind`` says how a CREATE TABLE names it, how a live table of it is recognised in the metastore,
where its live schema is read from, which column changes it takes and through what, how readers find
columns in the files already written, and which column types those files keep as declared. The spec,
the live reader, the DDL, the diff, the hazards and the scope all ask this registry (``table_kind``,
``kind_of``) rather than keep lists of format names.

The classes and SerDes are what Spark 4 stores for each ``CREATE TABLE`` form, measured on the
metastore bundled with pyspark; the readers' behaviour is measured as ``plan.hazards`` describes.

To add a kind (Hudi, say, as a Spark data source):

1. write its record at the end of this module (``_data_source`` for a provider) and ``register`` it;
   a format schemaflow left alone until then leaves ``FOREIGN_FORMATS`` once its live tables are read
   (Iceberg's stay there: only declared Iceberg tables are a kind so far, see its record). Live tables of it
   that no file declares stay left alone unless the record says ``manages_undeclared`` or a project lists it
   in ``manage_undeclared`` (``scope``);
2. add its name to the ``format`` or ``using`` enum of ``spec/schemas/table.json`` and to the
   lists of docs/concepts/objects.md: ``tests/test_table_kinds.py`` fails until they and the registry agree;
3. if its live schema is in metadata of its own (``LiveSchema.OWN_METADATA``), register how its live tables are
   recognised and read (``catalog.metadata_readers``): every read of the live state fails until it is;
4. if it needs a behaviour no kind has yet (another type rule, another way readers find columns,
   another path for creating it and changing its columns, another way its layout is declared, another place its live
   schema is kept), add a member to ``TypeRule``, ``Resolution``, ``ColumnChanges``, ``Layout`` or ``LiveSchema``:
   mypy then names each ``match`` that must handle it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import assert_never

from schemaflow.model import Table
from schemaflow.spark_version import SparkVersion
from schemaflow.sql.types import InvalidType, check_avro, check_delta, check_iceberg, is_primitive

_HIVE_IO = "org.apache.hadoop.hive.ql.io."
LAZY_SIMPLE_SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"
# A Hive table whose format classes are no named format's: ``input_format`` and ``output_format`` say them.
CUSTOM = "custom"
# The table parameter naming a data-source table's provider ("hive" or absent: a Hive-format table).
PROVIDER = "spark.sql.sources.provider"


class Resolution(Enum):
    """How readers find a column in the files a table already holds (``plan.hazards``)."""

    BY_NAME = "by name"
    BY_POSITION = "by position"
    BY_ID = "by field id"      # Iceberg: no change to the columns moves what existing rows show
    # Classes of the table's own, or a data source (whose column changes are refused): nothing is assumed.
    NOT_ASSUMED = "not assumed"


class ColumnChanges(Enum):
    """Which column changes a kind takes, and through what (``plan.diff``)."""

    # Appended through Spark SQL's ADD COLUMNS; anything else in one metastore ``alter_table``.
    METASTORE = "metastore"
    # Spark reads the table through its own copy of the schema: Spark SQL appends columns and changes
    # data-column comments; every other change is refused.
    SPARK_SQL = "spark sql"
    # Any change by field id, in one commit to the table's own metadata (``plan.iceberg``); created by such a commit.
    ICEBERG = "iceberg"
    # Through the engine's statements, each a commit to the table's log, as its protocol allows (``plan.delta``);
    # created by CREATE TABLE ... USING delta through the engine.
    DELTA = "delta"


class LiveSchema(Enum):
    """Where the live reader finds the columns of a table of a kind (``catalog.hive.thrift_data``)."""

    # The metastore's column lists (its storage descriptor's columns and partition keys): a Hive format's.
    METASTORE = "metastore"
    # Spark's own copy of the schema in the table's parameters (``spark.sql.sources.schema*``): a data source's,
    # whose columns in the metastore may be a placeholder.
    SPARK_COPY = "spark copy"
    # The table format's own metadata, read by the reader registered for the kind (``catalog.metadata_readers``):
    # the metastore's columns are a mirror its writers may leave behind, or a placeholder.
    OWN_METADATA = "own metadata"


class Layout(Enum):
    """How a kind's layout (partitioning, bucketing, ordering of rows) is declared and compared."""

    # Partition columns of their own, and buckets (``buckets:``): a Hive format's, a data source's.
    STORAGE = "storage"
    # Transforms of its data columns (``partitioned_by: [day(ts)]``) and a sort order (``sorted_by:``), changed in
    # place for the data written after: Iceberg's (``spec.iceberg``).
    TRANSFORMS = "transforms"
    # Partition columns of their own, no buckets, no sort order; other partition columns are another table: Delta's
    # (``spec.delta``).
    PARTITION_COLUMNS = "partition columns"


class TypeRule(Enum):
    """Which column types a kind's files keep as declared (partition values are the metastore's)."""

    ANY = "any"
    AVRO = "avro"              # as ``sql.types.check_avro`` says
    STRING = "string"          # one string a row: Spark's text data source
    PRIMITIVE = "primitive"    # no array, map or struct: Spark's csv data source
    ICEBERG = "iceberg"        # as ``sql.types.check_iceberg`` says
    DELTA = "delta"            # as ``sql.types.check_delta`` says

    def check(self, canonical: str) -> None:
        """Raises ``InvalidType`` unless a data column of the canonical type ``canonical`` is kept as declared."""
        match self:
            case TypeRule.ANY:
                pass
            case TypeRule.AVRO:
                check_avro(canonical)
            case TypeRule.ICEBERG:
                check_iceberg(canonical)
            case TypeRule.DELTA:
                check_delta(canonical)
            case TypeRule.STRING:
                if canonical != "string":
                    raise InvalidType(f"Spark's text data source holds one string column a row, not {canonical}: "
                                      "declare string, or use another data source")
            case TypeRule.PRIMITIVE:
                if not is_primitive(canonical):
                    raise InvalidType(f"Spark's csv data source holds no {canonical.split('<')[0]}: declare a "
                                      "primitive type (string, for the text of it), or use json")
            case _:
                assert_never(self)


@dataclass(frozen=True)
class TableKind:
    """Everything schemaflow assumes of the tables of one kind."""

    name: str                          # as ``format:`` or ``using:`` writes it, and as ``Table.format`` keeps it
    data_source: bool                  # a Spark data source (USING), not a Hive format (STORED AS)
    ddl_clause: str                    # how CREATE TABLE names it; empty for custom, whose classes are spelt out
    # Recognised in the metastore by: a Hive format, its (input, output) format classes, and other output
    # formats Hive writes for the same files; a data source, the ``PROVIDER`` parameter naming it.
    classes: tuple[str, str] | None    # None: the table's own (custom), or a data source's
    serde: str | None                  # the SerDe a Hive table gets when it names none; None for a data source
    resolution: Resolution
    column_changes: ColumnChanges
    live_schema: LiveSchema
    other_output_formats: tuple[str, ...] = ()
    row_format_serde: bool = False     # Spark takes ``ROW FORMAT SERDE`` with ``STORED AS <name>``
    adds_columns: bool = True          # Spark can ADD COLUMNS to it
    one_column: bool = False           # every read and write fails with more than one data column
    type_rule: TypeRule = TypeRule.ANY
    # Type changes (old, new base type) Spark reads existing files through, beyond the widenings every
    # format reads (``plan.hazards``); or every one the metastore allows.
    reads_type_changes: frozenset[tuple[str, str]] = frozenset()
    reads_every_type_change: bool = False
    # The first Spark release whose reader converts those widenings; before it, only a change that keeps
    # the type the files store values as (``plan.hazards``).
    widens_since: SparkVersion = (0, 0)
    way_out: str = ""                  # what to do instead of a column change the kind refuses
    # Whether a live table of it that no file declares is schemaflow's (planned as a drop) without the project
    # listing the kind in ``manage_undeclared``: the kinds schemaflow has always managed. A kind registered later
    # leaves the tables of its format that were left alone before it alone still (``scope``).
    manages_undeclared: bool = False
    layout: Layout = Layout.STORAGE

    @property
    def own_metadata(self) -> bool:
        """Whether it is a table format with metadata of its own (Iceberg, Delta): declared with ``format:``, with
        no storage of a Hive table or a data source to say; its live schema is its metadata's. How it is laid out
        (``layout``) and how it is created and changed (``column_changes``) are its own."""
        return self.live_schema is LiveSchema.OWN_METADATA

    def recognises(self, input_format: str | None, output_format: str | None) -> bool:
        """Whether a Hive table with these format classes is of this (named Hive format) kind."""
        return (self.classes is not None and input_format == self.classes[0]
                and output_format in (self.classes[1], *self.other_output_formats))


@dataclass(frozen=True)
class ForeignFormat:
    """A table format that keeps its schema in files or logs of its own: its tables are no kind schemaflow
    manages, and ``scope`` leaves them alone. Recognised by its provider (as Spark registers it), by a
    word in its input format's class (synced to Hive), or by the ``table_type`` parameter it sets."""

    name: str                        # its data source's provider
    what: str                        # how a plan's notice names such a table
    class_words: tuple[str, ...]     # lower case
    table_type: str | None = None    # upper case


FOREIGN_FORMATS = (
    ForeignFormat("hudi", "a Hudi table", ("hudi", "hoodie")),
    ForeignFormat("iceberg", "an Iceberg table", ("iceberg",), table_type="ICEBERG"),
)


_KINDS: dict[tuple[bool, str], TableKind] = {}  # (data_source, name) -> kind, in the order registered


def register(kind: TableKind) -> None:
    """Add ``kind`` to the registry; its name is unique among the Hive formats or among the data sources.

    Kinds are registered here, at import: what is derived from them once (``sql.storage.KNOWN_SERDES``)
    sees them all.
    """
    if (kind.data_source, kind.name) in _KINDS:
        raise ValueError(f"a table kind named {kind.name!r} is registered already")
    _KINDS[kind.data_source, kind.name] = kind


def kinds() -> tuple[TableKind, ...]:
    """Every registered kind, in the order registered."""
    return tuple(_KINDS.values())


def table_kind(format: str, data_source: bool = False) -> TableKind | None:
    """The kind of a table of ``format`` (a data source's provider with ``data_source``), or None when
    schemaflow knows no such kind (a live table of another provider)."""
    return _KINDS.get((data_source, format))


def kind_of(table: Table) -> TableKind:
    """The kind of ``table``, which is one schemaflow knows: declared, or not left alone (see ``scope``)."""
    kind = table_kind(table.format, table.data_source)
    if kind is None:
        raise LookupError(f"{table.key} is of no table kind schemaflow knows ({table.format})")
    return kind


def names(data_source: bool) -> tuple[str, ...]:
    """The data sources a table file gives as ``using:`` (with ``data_source``) or the Hive formats it gives as
    ``format:``, as registered."""
    return tuple(name for (source, name), kind in _KINDS.items()
                 if source == data_source and name != CUSTOM and not kind.own_metadata)


def table_formats() -> tuple[str, ...]:
    """The table formats with metadata of their own a table file gives as ``format:``, as registered."""
    return tuple(kind.name for kind in _KINDS.values() if kind.own_metadata)


def format_kind(format: str) -> TableKind | None:
    """The kind a table file's ``format:`` names: a Hive format, or a table format with metadata of its own."""
    kind = table_kind(format)
    return kind if kind is not None else next((k for k in _KINDS.values() if k.own_metadata and k.name == format), None)


def hive_kind(input_format: str | None, output_format: str | None) -> TableKind:
    """The Hive format whose classes these are; custom when they are no named format's."""
    return next((kind for kind in _KINDS.values() if kind.recognises(input_format, output_format)), _KINDS[False, CUSTOM])


def serde_kind(serde: str | None) -> TableKind | None:
    """The first Hive format whose own SerDe ``serde`` is, or None."""
    return next((kind for kind in _KINDS.values() if serde is not None and kind.serde == serde), None)


def data_source_provider(provider: str | None) -> str | None:
    """The data source a table's ``PROVIDER`` parameter names, lower-case; None for a Hive-format table."""
    name = (provider or "").lower()
    return None if name in ("", "hive") else name


def default_serde(format: str) -> str:
    """The SerDe a Hive table of ``format`` gets when none is named (LazySimpleSerDe for a custom pair)."""
    serde = _KINDS[False, format].serde
    assert serde is not None  # every Hive kind has its own (the registry's test checks it)
    return serde


def _hive_format(name: str, input_format: str, output_format: str, serde: str, resolution: Resolution) -> TableKind:
    return TableKind(name, False, f"STORED AS {name.upper()}", (input_format, output_format), serde, resolution,
                     ColumnChanges.METASTORE, LiveSchema.METASTORE, manages_undeclared=True)


def _data_source(name: str) -> TableKind:
    way_out = (f"Spark cannot change it in place on a data-source table (USING {name}): create a table with the new "
               "columns, copy the rows (INSERT INTO new SELECT ... FROM old) and swap the names")
    return TableKind(name, True, f"USING {name}", None, None, Resolution.NOT_ASSUMED, ColumnChanges.SPARK_SQL,
                     LiveSchema.SPARK_COPY, way_out=way_out, manages_undeclared=True)


# The Hive formats, as Spark 4 creates STORED AS <name>.
register(replace(_hive_format(
    "parquet", _HIVE_IO + "parquet.MapredParquetInputFormat", _HIVE_IO + "parquet.MapredParquetOutputFormat",
    _HIVE_IO + "parquet.serde.ParquetHiveSerDe", Resolution.BY_NAME),
    reads_type_changes=frozenset({("tinyint", "decimal"), ("smallint", "decimal"), ("int", "decimal"),
                                  ("bigint", "decimal")}), widens_since=(4, 0)))  # Spark 3.5's reader widens nothing
register(replace(_hive_format(
    "orc", _HIVE_IO + "orc.OrcInputFormat", _HIVE_IO + "orc.OrcOutputFormat", _HIVE_IO + "orc.OrcSerde",
    Resolution.BY_NAME), reads_every_type_change=True))
register(replace(_hive_format(
    "avro", _HIVE_IO + "avro.AvroContainerInputFormat", _HIVE_IO + "avro.AvroContainerOutputFormat",
    "org.apache.hadoop.hive.serde2.avro.AvroSerDe", Resolution.BY_NAME),
    type_rule=TypeRule.AVRO,
    reads_type_changes=frozenset({("int", "float"), ("bigint", "double"), ("decimal", "decimal")})))
# Spark lets a ROW FORMAT SERDE clause go with these three; the others take their classes spelt out.
register(replace(_hive_format(
    "textfile", "org.apache.hadoop.mapred.TextInputFormat", _HIVE_IO + "HiveIgnoreKeyTextOutputFormat",
    LAZY_SIMPLE_SERDE, Resolution.BY_POSITION), row_format_serde=True, reads_every_type_change=True))
register(replace(_hive_format(
    "sequencefile", "org.apache.hadoop.mapred.SequenceFileInputFormat",
    "org.apache.hadoop.mapred.SequenceFileOutputFormat", LAZY_SIMPLE_SERDE, Resolution.BY_POSITION),
    other_output_formats=(_HIVE_IO + "HiveSequenceFileOutputFormat",),  # what Hive itself writes
    row_format_serde=True, reads_every_type_change=True))
register(replace(_hive_format(
    "rcfile", _HIVE_IO + "RCFileInputFormat", _HIVE_IO + "RCFileOutputFormat",
    "org.apache.hadoop.hive.serde2.columnar.LazyBinaryColumnarSerDe", Resolution.BY_POSITION),
    row_format_serde=True, reads_every_type_change=True))
register(TableKind(CUSTOM, False, "", None, LAZY_SIMPLE_SERDE, Resolution.NOT_ASSUMED, ColumnChanges.METASTORE,
                   LiveSchema.METASTORE, manages_undeclared=True))

# Spark's built-in data sources that schemaflow creates (Avro is a separate package in Spark 4).
register(_data_source("parquet"))
register(_data_source("orc"))
register(_data_source("json"))
register(replace(_data_source("csv"), type_rule=TypeRule.PRIMITIVE))
# Spark cannot add columns to a text table (it asks to drop and re-create it).
register(replace(_data_source("text"), type_rule=TypeRule.STRING, one_column=True, adds_columns=False))

# Iceberg: created and evolved through commits to its own metadata (``plan.iceberg``, ``catalog.hive.iceberg_commit``), and
# read from it (``catalog.hive.thrift_data`` registers its reader); live tables of it are still left alone
# (``FOREIGN_FORMATS``) but those schemaflow stamped (``scope``).
ICEBERG = "iceberg"
register(TableKind(ICEBERG, True, f"USING {ICEBERG}", None, None, Resolution.BY_ID, ColumnChanges.ICEBERG,
                   LiveSchema.OWN_METADATA, type_rule=TypeRule.ICEBERG, layout=Layout.TRANSFORMS))

# Delta Lake: created and changed through the engine's statements, each a commit to its log (``plan.delta``), and read
# from that log (the metastore's columns of it are a placeholder Spark writes). Its readers find a column by name,
# or, with column mapping on (``delta.columnMapping.mode``), by the physical name or id the log gives it. Live
# tables of it that no file declares stay left alone unless a project lists delta in ``manage_undeclared``.
DELTA = "delta"
register(TableKind(DELTA, True, f"USING {DELTA}", None, None, Resolution.BY_NAME, ColumnChanges.DELTA,
                   LiveSchema.OWN_METADATA, type_rule=TypeRule.DELTA, layout=Layout.PARTITION_COLUMNS))
