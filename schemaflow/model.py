"""The one vocabulary for schema state: tables, views and the catalog that holds them.

The desired state loaded from YAML, the live state read from the metastore and JSON snapshots
are all expressed in these frozen dataclasses, so the planner always compares like with like.
Names are stored as the metastore stores them: lower-case. Types are canonical Hive type strings
(see ``schemaflow.sql.types``). ``Source`` points back at the YAML that declared an object and
never takes part in comparisons.
"""
from __future__ import annotations

import hashlib
import json
import weakref
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

# Table parameters that schemaflow itself writes on every object it manages.
VERSION_KEY = "schemaflow.version"
# What a guarded write leaves in schemaflow.version of an object that has no version (adopted, or its version lost to
# a stopped run's claim): the metastore's compare-and-swap (HIVE-26882) refuses a write that unsets the key it
# guards. Read as no version (``recorded``).
NO_VERSION = ""
MANAGED_KEYS_KEY = "schemaflow.managed_properties"
APPLIED_AT_KEY = "schemaflow.applied_at"
APPLIED_COMMIT_KEY = "schemaflow.applied_commit"
APPLIED_STATE_KEY = "schemaflow.applied_state"  # state_digest() of the object as the apply left it
# Stands for the state digest of an object as the write that carries it leaves it; the metastore computes it.
LIVE_STATE = "${live_state}"
MIGRATION_PREFIX = "schemaflow.migration."  # + migration id: a JSON record of when and from where
SCHEMAFLOW_PREFIX = "schemaflow."
COMMENT_KEY = "comment"  # the table parameter that holds a table's comment
# + object name, on its database: a JSON record of the object's drop, which took its own parameters with it
DROPPED_PREFIX = "schemaflow.dropped."
# + object name, on its database: every apply of the object, oldest first (see catalog.history)
HISTORY_PREFIX = "schemaflow.history."
# On each managed database: a JSON record of the settings (schemaflow.yaml) the last complete apply ran with.
SETTINGS_KEY = "schemaflow.settings"
# The parameter naming an Iceberg table's current metadata file in the metastore (Iceberg's catalogs write it).
METADATA_LOCATION = "metadata_location"
# On the Parquet table a table was converted from (kept beside it, see plan.iceberg): the table it became.
BACKUP_OF = "schemaflow.backup_of"
# On a table that is to take another's name (see plan.rewrite): the copy a rewrite fills, a backup being restored
# (plan.restore), until it takes it: that table.
REWRITE_OF = "schemaflow.rewrite_of"
# What one core of Spark copies, verifies and journals a second in a rewrite, as bench/rewrite.py measured it: 3.55 GB
# in 159 s on 2 local cores (11.2 MB/s a core). The plan estimates a rewrite's time by it (plan.rewrite), and the copy
# bounds its chunks by it (catalog.hive.rewrite_rounds). A cluster's disks and network give another figure.
COPY_RATE = 11_000_000
# The most a chunk of a rewrite's copy holds: about this many seconds of copying at COPY_RATE on the cores it copies
# on (2.2 GB on two cores), what a stopped copy loses at most (catalog.hive.rewrite_rounds).
CHUNK_SECONDS = 100
# The most chunks a rewrite's copy makes of a table: a larger table's are a MOST_CHUNKS-th of it (its journal stays small).
MOST_CHUNKS = 200
# On a backup being restored: the version the table it replaces had, which that table keeps as the new backup.
RESTORE_VERSION = "schemaflow.restore_version"
# On the table a restore swapped out for its backup (the new backup, see plan.restore): the run of that restore. Rows
# written to it while it held the table's name are in no other table (plan.backups).
SWAPPED_OUT_BY = "schemaflow.swapped_out_by"
# A NULL partition value, as the metastore names its partition (and Hive its folder).
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
# The folder in a converted table's folder that holds its Iceberg metadata and new data files.
CONVERTED_FOLDER = "_iceberg"
# The metastore setting that refuses column type changes Hive cannot convert implicitly (on by default).
TYPE_RULE = "hive.metastore.disallow.incompatible.col.type.changes"


class Invalidation(StrEnum):
    """What a change that breaks a live view does (``invalidation:`` in schemaflow.yaml; ``plan.invalidation``)."""
    STRICT = "strict"    # the plan blocks the change until the views are changed with it
    LENIENT = "lenient"  # the change goes through; the views are left broken, with a warning
    CASCADE = "cascade"  # the views are re-created after the change


@dataclass(frozen=True)
class Source:
    """Where an object or value was declared: a file and a 1-based line and column."""

    path: str
    line: int = 1
    col: int = 1

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Column:
    name: str
    type: str | None = None  # None only for a declared view column, whose type the SQL decides
    comment: str | None = None
    source: Source | None = field(default=None, compare=False, repr=False)


def column_type(column: Column) -> str:
    """The type of a table column, which always has one (only a declared view column leaves it to the SQL)."""
    if column.type is None:
        raise ValueError(f"column {column.name} has no type")
    return column.type


@dataclass(frozen=True)
class Bucketing:
    """``CLUSTERED BY (columns) SORTED BY (sorted_by) INTO count BUCKETS``; a sort column Hive keeps
    descending is named ``"c desc"`` (Spark creates ascending ones only)."""

    columns: tuple[str, ...]
    count: int
    sorted_by: tuple[str, ...] = ()

    def to_data(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "count": self.count, "sorted_by": list(self.sorted_by)}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Bucketing:
        return cls(tuple(data["columns"]), int(data["count"]), tuple(data.get("sorted_by", ())))


@dataclass(frozen=True)
class PartitionField:
    """One field of an Iceberg table's partition spec: a transform of a data column, as Spark writes it
    (``day(ts)``, ``bucket(16, id)``); ``argument`` is a bucket's count or a truncate's width."""

    transform: str                # Iceberg's name: identity, year, month, day, hour, bucket, truncate
    column: str
    argument: int | None = None

    def __str__(self) -> str:
        if self.transform == "identity":
            return self.column
        argument = "" if self.argument is None else f"{self.argument}, "
        return f"{self.transform}({argument}{self.column})"

    def to_data(self) -> dict[str, Any]:
        return {"transform": self.transform, "column": self.column, "argument": self.argument}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> PartitionField:
        return cls(data["transform"], data["column"], data.get("argument"))


@dataclass(frozen=True)
class SortTerm:
    """One term of an Iceberg table's sort order (Spark's ``WRITE ORDERED BY``): a field, its direction and
    where nulls go, always spelt out (Iceberg's defaults: ascending with nulls first, descending with nulls last)."""

    field: PartitionField         # the column or a transform of it
    descending: bool = False
    nulls_first: bool = True

    def __str__(self) -> str:
        return f"{self.field} {'DESC' if self.descending else 'ASC'} NULLS {'FIRST' if self.nulls_first else 'LAST'}"

    def to_data(self) -> dict[str, Any]:
        return {**self.field.to_data(), "descending": self.descending, "nulls_first": self.nulls_first}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> SortTerm:
        return cls(PartitionField.from_data(data), data["descending"], data["nulls_first"])


@dataclass(frozen=True)
class IcebergState:
    """Where a live Iceberg table's metadata stands, as its current metadata file says: what a commit to it
    requires to be unchanged (Iceberg's own compare-and-swap), and the file it reads. Live state only."""

    table_uuid: str
    schema_id: int
    spec_id: int
    sort_order_id: int
    format_version: int
    metadata_location: str
    # Each current column whose field id had other names in the table's earlier schemas: those names, latest
    # first. It tells a column another writer renamed from one dropped and one added; read for messages only,
    # not part of what a commit requires, nor of a plan's JSON.
    former_names: tuple[tuple[str, tuple[str, ...]], ...] = field(default=(), compare=False)

    def former(self, name: str) -> tuple[str, ...]:
        """The earlier names of the current column ``name``'s field id, latest first."""
        return dict(self.former_names).get(name, ())

    def to_data(self) -> dict[str, Any]:
        return {"table_uuid": self.table_uuid, "schema_id": self.schema_id, "spec_id": self.spec_id,
                "sort_order_id": self.sort_order_id, "format_version": self.format_version,
                "metadata_location": self.metadata_location}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> IcebergState:
        return cls(**data)


@dataclass(frozen=True)
class DeltaState:
    """Where a live Delta table's log stands, as its latest snapshot says: the version a commit must land on top
    of (Delta's own guard: the next version's file is written only if absent), the protocol its readers and
    writers must speak, and its column mapping. Live state only."""

    location: str                    # the table's root, whose ``_delta_log`` was read
    log_version: int                 # the version of the latest commit read
    table_id: str                    # metaData.id: a table re-created under the same path has another
    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] = ()   # sorted; only with reader version 3
    writer_features: tuple[str, ...] = ()   # sorted; only with writer version 7
    column_mapping: str = "none"             # delta.columnMapping.mode: none, name or id

    def to_data(self) -> dict[str, Any]:
        return {"location": self.location, "log_version": self.log_version, "table_id": self.table_id,
                "min_reader_version": self.min_reader_version, "min_writer_version": self.min_writer_version,
                "reader_features": list(self.reader_features), "writer_features": list(self.writer_features),
                "column_mapping": self.column_mapping}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> DeltaState:
        return cls(**{**data, "reader_features": tuple(data["reader_features"]),
                      "writer_features": tuple(data["writer_features"])})


@dataclass(frozen=True)
class Table:
    """A table: Hive-format (``STORED AS format``) or, with ``data_source``, a Spark data-source
    table (``USING format``); its kind is ``schemaflow.sql.table_kinds``'s. Storage beyond the format's defaults
    (``schemaflow.sql.storage``): a SerDe, format classes (format ``custom``), SERDEPROPERTIES, or
    a data source's OPTIONS (both in ``serde_properties``), and bucketing. An Iceberg table (format
    ``iceberg``, a data source) partitions by transforms of its data columns (``partition_spec``; it has
    no partition columns) and may keep its rows in a ``sort_order``."""

    database: str
    name: str
    columns: tuple[Column, ...]
    partition_columns: tuple[Column, ...] = ()
    comment: str | None = None
    format: str = "parquet"
    external: bool = False
    location: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    data_source: bool = False
    serde: str | None = None          # None: the format's own SerDe
    input_format: str | None = None   # set for a ``custom`` format only, as is output_format
    output_format: str | None = None
    serde_properties: Mapping[str, str] = field(default_factory=dict)
    bucketing: Bucketing | None = None
    partition_spec: tuple[PartitionField, ...] = ()
    sort_order: tuple[SortTerm, ...] = ()
    # Declared only (``rewrite: when_values_hide``): rewrite the rows where a change in place would hide existing
    # values from readers (see plan.diff), not only where no change in place exists.
    rewrite_hiding: bool = field(default=False, compare=False)
    # Live state only: an Iceberg table's metadata (None: not an Iceberg table, or a declared one), and why
    # the metadata file of one was not read (None: it was, or it is not one).
    iceberg: IcebergState | None = field(default=None, compare=False)
    # Live state only: a Delta table's log (None: not a Delta table, or a declared one).
    delta: DeltaState | None = field(default=None, compare=False)
    unreadable: str | None = field(default=None, compare=False)
    # Live state only: the property keys schemaflow wrote last time (so removed ones can be unset),
    # the version stamp it left, and the migrations applied to it (id -> record).
    managed_keys: tuple[str, ...] = field(default=(), compare=False)
    version: str | None = field(default=None, compare=False)
    migrations: Mapping[str, str] = field(default_factory=dict, compare=False)
    # Live state only: on a Parquet table kept after its conversion to Iceberg, the table it became.
    backup_of: str | None = field(default=None, compare=False)
    # Live state only: on the table a rewrite of another fills, that table (see plan.rewrite).
    rewrite_of: str | None = field(default=None, compare=False)
    # Live state only: the column names Spark reports with capitals, as its copy of the schema spells them (the
    # metastore and ``columns`` keep them in lower case); a table made anew with the declared names loses them.
    spelt: tuple[str, ...] = field(default=(), compare=False)
    # Live state only: on a backup a restore swapped out, the run of that restore (``SWAPPED_OUT_BY``).
    swapped_out_by: str | None = field(default=None, compare=False)
    source: Source | None = field(default=None, compare=False, repr=False)

    kind = "table"

    @property
    def key(self) -> str:
        return f"{self.database}.{self.name}"

    @property
    def all_columns(self) -> tuple[Column, ...]:
        """Data columns followed by partition columns: the schema a reader of the table sees."""
        return self.columns + self.partition_columns


PartitionValues = tuple[str, ...]  # one partition: its values, in the order of the partition columns


@dataclass(frozen=True)
class Stored:
    """What a table's files hold, as a rewrite reads them: the metastore's statistics of each partition (of the
    table, unpartitioned), and a listing of the folders of those that keep none where a listing can be made.
    ``unknown`` counts the units (partitions, or the table) neither could measure: their bytes are not in ``bytes``."""

    bytes: int
    files: int | None         # None: the statistics kept only a byte count (Spark's own)
    partitions: int | None    # None: not partitioned
    listed: int = 0           # units measured by a listing of their folders
    unknown: int = 0


@dataclass(frozen=True)
class ViewPartitions:
    """The partitions a partitioned view should have: listed in its file, or derived from a base table's.

    Listed: ``values`` holds one tuple per partition, in ``partitioned_on`` order, sorted.
    Derived (``derive_from`` names the base table): a view partition exists when the base table
    has a partition with the same values in the view's partition columns (matched by name) and,
    for ``complete_when``, among those base partitions, every combination of the listed values of
    the base's other partition columns (a list), or at least that many distinct values (a number).
    """

    values: tuple[PartitionValues, ...] = ()
    derive_from: str | None = None
    complete_when: Mapping[str, tuple[str, ...] | int] = field(default_factory=dict)

    def to_data(self) -> dict[str, Any]:
        if self.derive_from is None:
            return {"values": [list(v) for v in self.values]}
        complete = {k: v if isinstance(v, int) else list(v) for k, v in sorted(self.complete_when.items())}
        return {"derive_from": self.derive_from, "complete_when": complete}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ViewPartitions:
        complete = {k: v if isinstance(v, int) else tuple(v) for k, v in data.get("complete_when", {}).items()}
        return cls(tuple(tuple(v) for v in data.get("values", ())), data.get("derive_from"), complete)


@dataclass(frozen=True)
class View:
    database: str
    name: str
    sql: str
    # Declared: names and comments imposed on the output (type None), or () to keep the SQL's.
    # Live: the stored output columns with their types.
    columns: tuple[Column, ...] = ()
    comment: str | None = None
    partitioned_on: tuple[str, ...] = ()
    # Declared: the partitions it should have (None: schemaflow keeps those it finds). Live: None,
    # since listing them costs a metastore call; the planner lists them where it needs them.
    partitions: ViewPartitions | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    # The tables and views the SQL reads ("db.name", sorted); derived from ``sql``.
    reads: tuple[str, ...] = field(default=(), compare=False)
    # Derived from ``sql`` qualified against what it reads: the columns of each object read that it
    # uses anywhere ("db.name" -> names), and where each output column comes from ("db.name.column").
    uses: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False)
    lineage: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False)
    # Declared only, derived from ``sql``: the names the SQL gives its output, which ``columns`` may rename.
    output: tuple[str, ...] = field(default=(), compare=False)
    # Declared only, derived from ``sql``: each ``*`` it selects (start, end, the columns it selects as
    # text), which the stored text names instead (``sql.views.hive_readable``).
    stars: tuple[tuple[int, int, str], ...] = field(default=(), compare=False)
    # Live only: Spark's view.schemaMode (COMPENSATION, BINDING, EVOLUTION, TYPE EVOLUTION); None: none stored.
    schema_mode: str | None = field(default=None, compare=False)
    # Live only, what Spark analyses of it besides ``sql`` (see ``ViewSql``): the metastore's expanded text where it
    # differs from ``sql``, and where its unqualified names resolve where that is not its own database.
    expanded_sql: str | None = field(default=None, compare=False)
    resolves_in: str | None = field(default=None, compare=False)
    managed_keys: tuple[str, ...] = field(default=(), compare=False)
    version: str | None = field(default=None, compare=False)
    source: Source | None = field(default=None, compare=False, repr=False)

    kind = "view"

    @property
    def key(self) -> str:
        return f"{self.database}.{self.name}"


Object = Table | View

# Where a live view's unqualified names resolve when it stored no database of Spark's catalog for them: the session's
# current database as it is read, which nothing about the view says.
CURRENT_DATABASE = "*"


@dataclass(frozen=True)
class ViewSql:
    """What Spark analyses of a live view whenever a query, or a statement, reads it: ``sql``, its original text (what
    schemaflow shows and compares with the declared SQL); ``expanded``, the metastore's expanded text where it differs
    (Spark parses the expanded text, not the original: another client may store the two apart); and ``resolves_in``,
    the database its unqualified names resolve in where that is not the view's own: the one stored with it
    (``view.catalogAndNamespace``), or ``CURRENT_DATABASE`` where it stored none of Spark's catalog."""

    sql: str
    expanded: str | None = None
    resolves_in: str | None = None

    @property
    def analysed(self) -> str:
        """The text Spark parses."""
        return self.sql if self.expanded is None else self.expanded

    def describe(self) -> str:
        """The texts as a reader is shown them (each as stored, the expanded one and the database apart)."""
        expanded = "" if self.expanded is None else f"\n-- its expanded text, which Spark analyses:\n{self.expanded}"
        where = ("" if self.resolves_in is None else "\n-- its unqualified names resolve in the session's current "
                 "database" if self.resolves_in == CURRENT_DATABASE else f"\n-- its unqualified names resolve in "
                 f"{self.resolves_in}")
        return self.sql + expanded + where

    def to_data(self) -> dict[str, Any]:
        return {"sql": self.sql, **({"expanded": self.expanded} if self.expanded is not None else {}),
                **({"resolves_in": self.resolves_in} if self.resolves_in is not None else {})}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ViewSql:
        return cls(data["sql"], data.get("expanded"), data.get("resolves_in"))


def view_sql(view: View) -> ViewSql:
    """What Spark analyses of the live view ``view``."""
    return ViewSql(view.sql, view.expanded_sql, view.resolves_in)


# --- migrations: the column changes a diff cannot infer --------------------------------------

@dataclass(frozen=True)
class RenameColumn:
    table: str
    old: str
    new: str
    source: Source | None = field(default=None, compare=False, repr=False)

    def describe(self) -> str:
        return f"rename {self.old} to {self.new}"


@dataclass(frozen=True)
class DropColumn:
    table: str
    column: str
    source: Source | None = field(default=None, compare=False, repr=False)

    def describe(self) -> str:
        return f"drop {self.column}"


@dataclass(frozen=True)
class ReorderColumns:
    table: str
    order: tuple[str, ...]
    source: Source | None = field(default=None, compare=False, repr=False)

    def describe(self) -> str:
        return f"reorder to ({', '.join(self.order)})"


class Partitions(StrEnum):
    """What a column change does to a partitioned table's partitions, where a migration chooses (``partitions:``)."""
    CASCADE = "cascade"    # every partition's columns follow the table's
    RESTRICT = "restrict"  # the table's alone: the partitions keep the columns they were written with


@dataclass(frozen=True)
class PartitionsMode:
    """Overrides the planner's choice for a table's partitions (``Partitions``)."""

    table: str
    mode: Partitions
    source: Source | None = field(default=None, compare=False, repr=False)

    def describe(self) -> str:
        return f"partitions: {self.mode}"


@dataclass(frozen=True)
class AcceptLoss:
    """Values of ``column`` (as the table then names it) that its conversion in a rewrite cannot hold become NULL
    as intended, instead of stopping the rewrite (see ``plan.rewrite``)."""

    table: str
    column: str
    source: Source | None = field(default=None, compare=False, repr=False)

    def describe(self) -> str:
        return f"accept values of {self.column} its conversion makes NULL"


MigrationChange = RenameColumn | DropColumn | ReorderColumns | PartitionsMode | AcceptLoss


@dataclass(frozen=True)
class Migration:
    """One ordered file of ``migrations/``; its id is the file name without the suffix."""

    id: str
    description: str
    changes: tuple[MigrationChange, ...]
    checksum: str = ""  # of the file's content: a migration edited after it was applied is detected
    source: Source | None = field(default=None, compare=False, repr=False)

    def changes_for(self, table: str) -> tuple[MigrationChange, ...]:
        return tuple(c for c in self.changes if c.table == table)


@dataclass(frozen=True)
class Database:
    """A database's own attributes. Declared: those ``schemaflow.yaml`` names (None, or a property
    left out, leaves the live one alone). Live: as the metastore holds them."""

    name: str
    comment: str | None = None
    location: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)

    def to_data(self) -> dict[str, Any]:
        return {"name": self.name, "comment": self.comment, "location": self.location,
                "properties": dict(sorted(self.properties.items()))}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Database:
        return cls(data["name"], data.get("comment"), data.get("location"), dict(data.get("properties", {})))


@dataclass(frozen=True)
class Catalog:
    """A set of databases and the tables and views in them, keyed by ``db.name``.

    ``sources`` (desired state only) are the tables the views read that schemaflow does not manage,
    declared with ``source:`` files (see ``spec.sources``): views resolve against them, nothing plans them.
    """

    databases: tuple[str, ...] = ()
    objects: Mapping[str, Object] = field(default_factory=dict)
    migrations: tuple[Migration, ...] = ()  # desired state only, in order
    sources: Mapping[str, Table] = field(default_factory=dict)  # never in ``objects``, in any database
    # The attributes of databases: declared (only those with any), or live (every one read).
    database_details: Mapping[str, Database] = field(default_factory=dict)

    def get(self, key: str) -> Object | None:
        return self.objects.get(key)

    def tables(self) -> Iterator[Table]:
        return (o for _, o in sorted(self.objects.items()) if isinstance(o, Table))

    def views(self) -> Iterator[View]:
        return (o for _, o in sorted(self.objects.items()) if isinstance(o, View))

    def in_databases(self, databases: tuple[str, ...]) -> Catalog:
        """The part of this catalog in the given databases; its sources whole: views there may read any."""
        wanted = set(databases)
        return replace(self, databases=tuple(sorted(d for d in self.databases if d in wanted)),
                       objects={k: o for k, o in self.objects.items() if o.database in wanted},
                       database_details={k: d for k, d in self.database_details.items() if k in wanted})


def partition_name(columns: Sequence[str], values: PartitionValues) -> str:
    """A partition as people and Hive name it: ``ds=2024-01-01/hr=00``."""
    return "/".join(f"{column}={value}" for column, value in zip(columns, values, strict=False))


def split_key(key: str) -> tuple[str, str]:
    database, _, name = key.partition(".")
    return database, name


# --- plain-data form, shared by snapshots and saved plans ------------------------------------

# Table fields left out of the plain data while they hold their defaults.
_STORAGE_DETAILS = frozenset({"data_source", "serde", "input_format", "output_format", "serde_properties", "bucketing"})
# Fields derived from a declared view's SQL, left out likewise: what was saved before them reads the same.
_DERIVED_LATER = frozenset({"output"})
# An Iceberg table's layout, left out likewise: a Hive table's data and fingerprint are what they were.
_ICEBERG_LAYOUT = frozenset({"partition_spec", "sort_order"})
_LEFT_OUT_AT_DEFAULT = _STORAGE_DETAILS | _DERIVED_LATER | _ICEBERG_LAYOUT | {"iceberg", "delta", "unreadable", "backup_of", "rewrite_of", "spelt",
                                                                              "swapped_out_by",
                                                                              "rewrite_hiding", "expanded_sql",
                                                                              "resolves_in"}
# Fields left out of the plain data (where the object was declared, the stars of its SQL), and those that are no part of an
# object's definition, so not of its fingerprint: those and live-only bookkeeping, what is derived
# from a view's SQL, and a view's partitions (its contents, see ``fingerprint``).
_NOT_DATA = frozenset({"source", "stars"})
_NOT_DEFINITION = _NOT_DATA | {"iceberg", "delta", "unreadable", "backup_of", "rewrite_of", "spelt", "swapped_out_by", "rewrite_hiding", "managed_keys", "version", "reads", "uses", "lineage", "output", "schema_mode",
                               "migrations", "partitions", "expanded_sql", "resolves_in"}
# The fields of a Table and a View that their plain data holds, in order, found once per class; and
# those of them that take part in a fingerprint.
_DATA_FIELDS: dict[type, tuple[str, ...]] = {}
_DEFINITION_FIELDS: dict[type, tuple[str, ...]] = {}


def to_data(obj: Object) -> dict[str, Any]:
    """An object as plain JSON-ready data (without its source position)."""
    return _data(obj, _fields_of(type(obj), _DATA_FIELDS, _NOT_DATA))


def _fields_of(cls: type, found: dict[type, tuple[str, ...]], left_out: frozenset[str]) -> tuple[str, ...]:
    names = found.get(cls)
    if names is None:
        names = found[cls] = tuple(f.name for f in fields(cls) if f.name not in left_out)
    return names


def _data(obj: Object, names: tuple[str, ...]) -> dict[str, Any]:
    """The plain data of the fields ``names`` of ``obj``, with its kind."""
    data: dict[str, Any] = {"kind": obj.kind}
    for name in names:
        value = getattr(obj, name)
        if name in ("columns", "partition_columns"):
            value = [column_data(c) for c in value]
        elif name in _LEFT_OUT_AT_DEFAULT and not value:
            continue  # at its default: the data (and so the fingerprint) of a table without it is unchanged
        elif isinstance(value, (ViewPartitions, Bucketing, IcebergState, DeltaState)):
            value = value.to_data()
        elif name in _ICEBERG_LAYOUT:
            value = [item.to_data() for item in value]
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, Mapping):
            value = dict(sorted(value.items()))
        data[name] = value
    return data


def from_data(data: Mapping[str, Any]) -> Object:
    """The inverse of :func:`to_data`."""
    data = dict(data)
    cls: type[Table] | type[View] = {"table": Table, "view": View}[data.pop("kind")]
    for name in ("columns", "partition_columns"):
        if name in data:
            data[name] = tuple(Column(**c) for c in data[name])
    for name in ("partitioned_on", "managed_keys", "reads", "output", "spelt"):
        if name in data:
            data[name] = tuple(data[name])
    for name in ("uses", "lineage"):
        if name in data:
            data[name] = {key: tuple(values) for key, values in data[name].items()}
    if data.get("partitions") is not None:
        data["partitions"] = ViewPartitions.from_data(data["partitions"])
    if data.get("bucketing") is not None:
        data["bucketing"] = Bucketing.from_data(data["bucketing"])
    if "partition_spec" in data:
        data["partition_spec"] = tuple(PartitionField.from_data(f) for f in data["partition_spec"])
    if "sort_order" in data:
        data["sort_order"] = tuple(SortTerm.from_data(t) for t in data["sort_order"])
    if data.get("iceberg") is not None:
        data["iceberg"] = IcebergState.from_data(data["iceberg"])
    if data.get("delta") is not None:
        data["delta"] = DeltaState.from_data(data["delta"])
    return cls(**data)


def column_data(column: Column) -> dict[str, Any]:
    return {"name": column.name, "type": column.type, "comment": column.comment}


def recorded(parameters: Mapping[str, str]) -> dict[str, Any]:
    """What schemaflow's own parameters of an object record, as the model's fields: its version, its
    managed property keys and (a table's) the migrations applied to it. The one reading of what a
    stamp writes: the live reader reads metastores with it, and a plan the state its stamps leave."""
    return {"managed_keys": tuple(sorted(k for k in parameters.get(MANAGED_KEYS_KEY, "").split(",") if k)),
            "version": parameters.get(VERSION_KEY) or None,
            "migrations": {k[len(MIGRATION_PREFIX):]: v for k, v in sorted(parameters.items())
                           if k.startswith(MIGRATION_PREFIX)}}


def state_digest(obj: Object) -> str:
    """A short digest of each aspect of a live object, ``aspect=hash`` separated by spaces.

    Recorded when schemaflow writes an object and compared later, it tells which aspects changed
    outside schemaflow since. Only managed properties count: other keys are not schemaflow's.
    """
    managed = {k: v for k, v in sorted(obj.properties.items()) if k in obj.managed_keys}
    if isinstance(obj, Table):
        aspects: dict[str, Any] = {
            "columns": [column_data(c) for c in obj.columns],
            "partitions": [column_data(c) for c in obj.partition_columns],
            "storage": [obj.format, obj.external, obj.location] + storage_details(obj),
        }
        if obj.partition_spec or obj.sort_order:  # an Iceberg table's; a Hive table's digest is what it was
            aspects["layout"] = [[f.to_data() for f in obj.partition_spec], [t.to_data() for t in obj.sort_order]]
    else:
        aspects = {"sql": obj.sql, "columns": [[c.name, c.comment] for c in obj.columns],
                   "partitions": list(obj.partitioned_on)}
    aspects |= {"comment": obj.comment, "properties": managed}
    return " ".join(f"{name}={_digest(value)}" for name, value in sorted(aspects.items()))


def storage_details(table: Table) -> list[Any]:
    """What a table's storage says beyond format, external and location: [] for none, so the state
    digest of such a table is what it was before schemaflow knew the details."""
    details = {name: getattr(table, name) for name in sorted(_STORAGE_DETAILS)}
    details["bucketing"] = table.bucketing.to_data() if table.bucketing else None
    details["serde_properties"] = dict(sorted(table.serde_properties.items()))
    return [details] if any(details.values()) else []


def changed_aspects(before: str, after: str) -> tuple[str, ...]:
    """The aspects whose hash differs between two state digests, sorted."""
    def parts(digest: str) -> dict[str, str]:
        return dict(part.split("=", 1) for part in digest.split() if "=" in part)
    old, new = parts(before), parts(after)
    return tuple(sorted(name for name in old.keys() | new.keys() if old.get(name) != new.get(name)))


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:8]


def catalog_digest(catalog: Catalog) -> str:
    """A digest of a desired state: the fingerprint of every object and source, every migration's checksum.

    A saved plan records the digest of the project it was made for; ``apply`` refuses it for a
    project whose schemas or migrations say something else now.
    """
    content: dict[str, Any] = {"objects": {key: fingerprint(obj) for key, obj in sorted(catalog.objects.items())},
                               "migrations": [[m.id, m.checksum] for m in catalog.migrations]}
    if catalog.sources:  # a view is checked against them; without any, the digest is the one it always was
        content["sources"] = {key: fingerprint(source) for key, source in sorted(catalog.sources.items())}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]


def fingerprint(obj: Object) -> str:
    """A short, stable digest of an object's definition: what ``schemaflow.version`` records.

    Live-only bookkeeping (managed keys, the previous version) does not take part, so the
    fingerprint of a desired object equals that of the live object it was applied to. Nor do a
    view's partitions: like a table's, they are its contents, which follow the loads of its base.
    Kept per object while it lives (objects are immutable): ``plan --base`` digests the same
    objects, parsed once, as the base's state and as the head's.
    """
    known = _FINGERPRINTS.get(id(obj))
    if known is not None and known[0]() is obj:
        return known[1]
    digest = _fingerprint(obj)
    key = id(obj)

    def forget(_: weakref.ref[Any]) -> None:  # when the object goes, before its id can be another's
        _FINGERPRINTS.pop(key, None)
    _FINGERPRINTS[key] = (weakref.ref(obj, forget), digest)
    return digest


# Fingerprints by id of their object, with a reference that does not keep it alive (objects hold
# dicts, so they cannot be hashed as keys).
_FINGERPRINTS: dict[int, tuple[weakref.ref[Any], str]] = {}


def _fingerprint(obj: Object) -> str:
    data = _data(obj, _fields_of(type(obj), _DEFINITION_FIELDS, _NOT_DEFINITION))
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
