"""One frozen dataclass per kind of change, each able to say what it is and what it turns into.

A change knows its object, whether it destroys anything, whether it reshapes the object (changes
the columns a reader sees, so views over it may break: ``plan.invalidation``), and the ``Step`` it becomes:
a summary for the reviewer, notes on its consequences, and the actions the executor runs. No change
executes anything itself.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import assert_never

from schemaflow.model import COMMENT_KEY, MIGRATION_PREFIX, SCHEMAFLOW_PREFIX, Column, Database, PartitionValues, Table, View
from schemaflow.plan.evolution import ColumnChange, Evolution, ColumnListChange
from schemaflow.spark_version import SparkVersion
from schemaflow.plan.hazards import OFFER, appended_note, column_hazards, hidden_by_renames, restrict_hazard
from schemaflow.plan.kinds import ObjectType, StepKind
from schemaflow.plan.delta import AlterDeltaTable, DeltaProtocol
from schemaflow.plan.iceberg import AlterIcebergTable, ConvertToIceberg
from schemaflow.plan.moving import RegisterTable
from schemaflow.plan.rewrite import RewriteTable
from schemaflow.plan.steps import (Action, AddColumnsAction, AddDatabase, ChangeViewPartitions, CheckLiveViews,
                                   CreateTableAction, CreateViewAction, DeltaCreate, DropTableAction, DropViewAction,
                                   IcebergCommit,
                                   KeepViewPartitions, PartitionView, SetColumnCommentsAction, SetColumns,
                                   SetDatabaseParameters, SetParameters, SetStorageAction, SetTableCommentAction, Step,
                                   listed_partitions)
from schemaflow.sql import ddl
from schemaflow.sql.table_kinds import ColumnChanges, kind_of, table_kind
from schemaflow.wording import duration, listed, plural, value_change


class _OfTable:
    """A change that carries the whole table it is about."""

    object_type = ObjectType.TABLE
    table: Table

    @property
    def key(self) -> str:
        return self.table.key


class _OfView:
    """A change that carries the whole view it is about."""

    object_type = ObjectType.VIEW
    view: View

    @property
    def key(self) -> str:
        return self.view.key


class _OfDatabase:
    """A change to a database itself: it breaks no reader."""

    object_type = ObjectType.DATABASE
    destructive = False
    reshapes = False
    database: str

    @property
    def key(self) -> str:
        return self.database


@dataclass(frozen=True)
class CreateDatabase(_OfDatabase):
    database: str
    details: Database | None = None  # the declared comment, location and properties

    def to_step(self) -> Step:
        return Step(StepKind.CREATE_DATABASE, self.database, ObjectType.DATABASE, f"create database {self.database}",
                    (AddDatabase(self.details or Database(self.database)),))


@dataclass(frozen=True)
class SetDatabaseProperties(_OfDatabase):
    """Declared properties of an existing database that differ from the live ones."""

    database: str
    old: Mapping[str, str]  # the live values of the keys it sets (absent: not set)
    new: Mapping[str, str]

    def to_step(self) -> Step:
        changes = "; ".join(value_change(k, self.old.get(k), v) for k, v in sorted(self.new.items()))
        return Step(StepKind.SET_DATABASE_PROPERTIES, self.database, ObjectType.DATABASE,
                    f"properties of database {self.database}: {changes}",
                    (SetDatabaseParameters(self.database, dict(sorted(self.new.items()))),))


@dataclass(frozen=True)
class CreateTable(_OfTable):
    table: Table
    destructive = False
    reshapes = True

    def to_step(self) -> Step:
        t = self.table
        shape = plural(len(t.columns), "column")
        if t.partition_columns:
            shape += f", partitioned by ({', '.join(c.name for c in t.partition_columns)})"
        kind = "external table" if t.external else "table"
        # How a table of its kind is created: as its kind changes its columns.
        created_by = kind_of(t).column_changes
        match created_by:
            case ColumnChanges.ICEBERG:  # a commit to its own metadata
                layout = f", partitioned by ({', '.join(map(str, t.partition_spec))})" if t.partition_spec else ""
                layout += f", sorted by ({', '.join(map(str, t.sort_order))})" if t.sort_order else ""
                return Step(StepKind.CREATE_TABLE, t.key, ObjectType.TABLE,
                            f"create Iceberg table {t.key} ({shape}{layout})", (IcebergCommit(t, create=True),))
            case ColumnChanges.DELTA:  # the engine writes its log's first commit
                return Step(StepKind.CREATE_TABLE, t.key, ObjectType.TABLE, f"create Delta {kind} {t.key} ({shape})",
                            (DeltaCreate(t),))
            case ColumnChanges.METASTORE | ColumnChanges.SPARK_SQL:
                storage = f"USING {t.format}" if t.data_source else t.format
                if t.bucketing:
                    storage += f", {plural(t.bucketing.count, 'bucket')}"
                return Step(StepKind.CREATE_TABLE, t.key, ObjectType.TABLE, f"create {kind} {t.key} ({shape}, {storage})",
                            (CreateTableAction(t),))
            case _:
                assert_never(created_by)


@dataclass(frozen=True)
class DropTable(_OfTable):
    table: Table
    record: Mapping[str, str] = field(default_factory=dict)  # the drop's record on the database (see history)
    # What the catalog is called, and whether its drop of a managed table deletes the files (``capabilities``).
    catalog: str = "metastore"
    purges: bool = True
    destructive = True
    reshapes = True

    def to_step(self) -> Step:
        kind = table_kind(self.table.format, self.table.data_source)  # a live table: maybe of no kind schemaflow knows
        if kind is not None and kind.column_changes is ColumnChanges.ICEBERG:  # external, as Iceberg's catalogs register it
            note = f"Iceberg table: its {self.catalog} entry goes; its data and metadata files are kept"
        elif not self.purges:
            note = f"its {self.catalog} entry goes; the {self.catalog} deletes no files: they are kept"
            note += f" at {self.table.location}" if self.table.location else ""
        elif self.table.backup_of and self.table.external:
            note = (f"the Parquet table {self.table.backup_of} was converted from: its entry goes; its files are the "
                    "Iceberg table's and are kept")
        elif self.table.backup_of:
            note = f"{self.table.backup_of} as it was before its rewrite: its rows and files are deleted with it"
        elif self.table.external:
            note = f"external table: its data files at {self.table.location} are kept"
        else:
            note = "managed table: its data files are deleted with it"
        return Step(StepKind.DROP_TABLE, self.key, ObjectType.TABLE, f"drop table {self.key}",
                    (DropTableAction(self.key),) + _recorded(self.table.database, self.record),
                    notes=(note,), destructive=True)


@dataclass(frozen=True)
class DropLeftover(DropTable):
    """The entry a conversion to Iceberg by copying moves its copy's table to (``<name>_rewrite_``, external, its files
    the Iceberg table's) while it registers the Iceberg table, left by an apply stopped before it dropped it. Dropping
    it finishes that conversion, and loses nothing: not destructive."""

    destructive = False

    def to_step(self) -> Step:
        return Step(StepKind.DROP_TABLE, self.key, ObjectType.TABLE, f"drop table {self.key}",
                    (DropTableAction(self.key),) + _recorded(self.table.database, self.record),
                    notes=(f"finishes the conversion of {self.table.rewrite_of} to Iceberg that a stopped apply began: "
                           "the copy's entry goes; its files are the Iceberg table's and are kept",))


def _recorded(database: str, record: Mapping[str, str]) -> tuple[Action, ...]:
    """The write of a drop's record on its database, after the drop: none without a record."""
    return (SetDatabaseParameters(database, dict(record)),) if record else ()


@dataclass(frozen=True)
class AddColumns:
    key: str
    columns: tuple[Column, ...]
    partitioned: bool
    partition_count: int | None = None  # None: not counted (no metastore at hand)
    hazards: tuple[str, ...] = ()  # the migrations' (``plan.hazards.unexplained_hazards``)
    object_type = ObjectType.TABLE
    destructive = False
    reshapes = True

    def to_step(self) -> Step:
        names = ", ".join(f"{c.name} {c.type}" for c in self.columns)
        notes: tuple[str, ...] = ()
        if self.partitioned:
            notes = (appended_note(self.partition_count),)
        return Step(StepKind.ADD_COLUMNS, self.key, ObjectType.TABLE, f"add {plural(len(self.columns), 'column')} to {self.key}: {names}",
                    (AddColumnsAction(self.key, self.columns),), notes=notes, hazards=self.hazards)


# Seconds per partition the metastore spends on a CASCADE: bench/partitions.py measured 2.3-2.6 ms.
CASCADE_SECONDS_PER_PARTITION = 0.0025
# Above this many partitions a cascade runs in batches: one CASCADE transaction would outlast the
# metastore client's timeout (600 s by default) somewhere past 200,000 partitions.
BATCHED_CASCADE_ABOVE = 50_000


@dataclass(frozen=True)
class AlterColumns(ColumnChange):
    """Any column change but a plain append: one metastore ``alter_table``, cascading or not."""

    key: str
    evolution: Evolution
    partition_columns: tuple[Column, ...]  # the declared ones: names and types unchanged, comments may differ
    format: str
    cascade: bool
    partition_count: int | None = None
    stale_partitions: int | None = None     # partitions whose column list already differs from the table's
    records: Mapping[str, str] = field(default_factory=dict)  # migration records written with the columns
    live_partition_columns: tuple[Column, ...] = ()  # as the table has them (comments to compare; () if unknown)
    release: SparkVersion | None = None  # the Spark release apply runs with (None: the installed pyspark's)
    object_type = ObjectType.TABLE

    @property
    def key_comments(self) -> tuple[tuple[str, str | None, str | None], ...]:
        """(partition column, old comment, new comment) of each partition column whose comment changes."""
        return tuple((new.name, old.comment, new.comment) for old, new in zip(self.live_partition_columns,
                                                                            self.partition_columns, strict=False)
                     if old.comment != new.comment)

    @property
    def reshapes(self) -> bool:
        """Whether readers see other columns (names, types, order); comments alone do not count."""
        return [(c.name, c.type) for c in self.evolution.old] != [(c.name, c.type) for c in self.evolution.new]

    @property
    def batched(self) -> bool:
        """Cascade in batches: for very large tables, and to repair stale partitions, which the
        metastore's CASCADE ignores when the table's columns do not change."""
        large = self.partition_count is not None and self.partition_count > BATCHED_CASCADE_ABOVE
        return bool(self.cascade and self.partition_columns and (large or self.evolution.kind == ColumnListChange.SAME))

    @property
    def destructive(self) -> bool:
        # Columns are dropped only by a migration that names them: that is the permission. A rename that hides
        # existing values needs the plan's (plan.plan).
        return bool(self.evolution.dropped or self.hides_values)

    @property
    def hides_values(self) -> bool:
        """Whether existing rows lose what readers see of them: a column renamed in files read by name."""
        return bool(hidden_by_renames(self.evolution, self.format))

    def to_step(self) -> Step:
        keys = tuple(f"change comment of partition column {name}" for name, _, _ in self.key_comments)
        operations = self.evolution.operations + keys or ("change comments of partition columns",)
        notes = []
        if self.evolution.migrations:
            notes.append("applies migration " + ", ".join(self.evolution.migrations))
        if self.stale_partitions:
            notes.append(f"{self.stale_partitions} of {self.partition_count} partitions have a stale column list"
                         + ("; this cascade repairs them" if self.cascade else ""))
        hazards = column_hazards(self.evolution, self.format, self.release)
        if self.partition_columns and self.cascade:
            if self.partition_count is None:
                notes.append("cascade: every partition's column list follows the table (partition count unknown)")
            else:
                estimate = duration(self.partition_count * CASCADE_SECONDS_PER_PARTITION)
                # An estimate under half a second rounds to "0 s": it says nothing, so none is shown.
                notes.append(f"cascade: the column lists of {plural(self.partition_count, 'partition')} follow "
                             "the table" + (f" (estimate: {estimate})" if estimate != duration(0) else ""))
            if self.batched:
                notes.append("in batches of partitions, rewriting only those whose list differs: "
                             "a stopped run resumes where it was")
        elif self.partition_columns and self.evolution.kind == ColumnListChange.ALTER:
            hazards += (restrict_hazard(self.partition_count),)
        elif self.partition_columns and self.evolution.kind == ColumnListChange.APPEND:
            notes.append(appended_note(self.partition_count))
        elif self.partition_columns:  # a partition key's comment is the table's alone: partitions keep no keys
            notes.append("table only: a partition column's comment is the table's; partitions keep their column lists")
        values = tuple(value_change(f"comment of {name}", old, new) for name, old, new in self.evolution.comments)
        values += tuple(value_change(f"comment of partition column {name}", old, new)
                        for name, old, new in self.key_comments)
        return Step(StepKind.ALTER_COLUMNS, self.key, ObjectType.TABLE, f"alter columns of {self.key}: {'; '.join(operations)}",
                    (SetColumns(self.key, self.evolution.new, self.partition_columns, self.cascade, self.batched,
                                self.records),),
                    notes=tuple(notes), hazards=hazards, destructive=self.destructive, values=values)


@dataclass(frozen=True)
class SetTableComment:
    """A table's comment: through Spark SQL, or, for a table whose SerDe gives Spark its columns, as
    the metastore's ``comment`` parameter (``sql.storage.SCHEMA_FROM_SERDE``)."""

    key: str
    old: str | None
    new: str | None
    through_metastore: bool = False
    object_type = ObjectType.TABLE
    destructive = False
    reshapes = False

    def to_step(self) -> Step:
        action: SetTableCommentAction | SetParameters = SetTableCommentAction(self.key, self.new)
        if self.through_metastore:
            action = SetParameters(self.key, {COMMENT_KEY: self.new} if self.new else {},
                                   () if self.new else (COMMENT_KEY,))
        return Step(StepKind.SET_TABLE_COMMENT, self.key, ObjectType.TABLE, value_change(f"comment on table {self.key}", self.old, self.new),
                    (action,))


@dataclass(frozen=True)
class SetColumnComments:
    """Data-column comments of a Spark data-source table, through Spark SQL, which keeps its schema copy in step."""

    key: str
    columns: tuple[Column, ...]  # with their new comments
    old: tuple[str | None, ...]  # their live comments
    object_type = ObjectType.TABLE
    destructive = False
    reshapes = False

    def to_step(self) -> Step:
        names = ", ".join(c.name for c in self.columns)
        return Step(StepKind.SET_COLUMN_COMMENTS, self.key, ObjectType.TABLE, f"comment on columns of {self.key}: {names}",
                    (SetColumnCommentsAction(self.key, self.columns),),
                    values=tuple(value_change(f"comment of {c.name}", old, c.comment)
                                 for c, old in zip(self.columns, self.old, strict=True)))


# Settings that say how files are written or how their schema is merged, not how a row is read from
# them: changing one leaves existing rows readable as they were (Spark's and Hive's names, lower case).
ROW_NEUTRAL_SETTINGS = frozenset({
    "compression", "codec", "mergeschema", "parquet.compression", "parquet.block.size", "parquet.page.size",
    "parquet.enable.dictionary", "orc.compress", "orc.compress.size", "orc.stripe.size", "orc.row.index.stride",
    "orc.bloom.filter.columns", "orc.bloom.filter.fpp", "avro.output.codec",
})


@dataclass(frozen=True)
class SetStorage:
    """A table's SERDEPROPERTIES (a data source's OPTIONS) and bucket count, changed in place.

    One guarded ``alter_table`` of the table's storage descriptor (Spark SQL cannot unset a
    SERDEPROPERTY nor change a bucket count). What existing files were written with stays: a Hive
    table's partitions keep their own storage descriptors, so only new partitions follow.
    """

    key: str
    old: Mapping[str, str]
    new: Mapping[str, str]
    old_buckets: int | None
    buckets: int | None
    data_source: bool
    partitioned: bool
    object_type = ObjectType.TABLE
    destructive = False
    reshapes = False

    def to_step(self) -> Step:
        what = "options" if self.data_source else "SERDEPROPERTIES"
        parts = [value_change(f"{what} {key}", self.old.get(key), self.new.get(key))
                 for key in sorted(self.old.keys() | self.new.keys()) if self.old.get(key) != self.new.get(key)]
        if self.buckets != self.old_buckets:
            parts.append(f"buckets {self.old_buckets} -> {self.buckets}")
        notes, hazards = [], []
        existing = "existing files"
        if self.partitioned and not self.data_source:
            notes.append("existing partitions keep their own storage settings (their files were written with "
                         "them); new partitions take the table's")
            existing = "files written to the table's own location"
        if any(key.lower() not in ROW_NEUTRAL_SETTINGS for key in self.old.keys() ^ self.new.keys()
               | {key for key in self.old.keys() & self.new.keys() if self.old[key] != self.new[key]}):
            hazards.append(f"{existing} were written with the old {what}; read with the new ones, their rows may "
                           f"come apart or read NULL ({OFFER} to rewrite its rows with the new ones)")
        if self.buckets != self.old_buckets:
            hazards.append(f"{existing} were bucketed into {self.old_buckets}, and Spark reads them as {self.buckets}: "
                           "a filter on the bucket columns prunes by the new count and returns fewer rows or none, and "
                           f"bucketed joins pair the wrong files ({OFFER} to rewrite its rows into the new buckets)")
        return Step(StepKind.SET_STORAGE, self.key, ObjectType.TABLE, f"change storage of {self.key}: {'; '.join(parts)}",
                    (SetStorageAction(self.key, dict(sorted(self.new.items())), self.buckets),),
                    notes=tuple(notes), hazards=tuple(hazards))


def _view_actions(view: View, replace: bool, check: CheckLiveViews | None, drop_first: bool = False) -> tuple:
    actions: tuple = ()
    if replace and view.partitioned_on:
        actions += (KeepViewPartitions(view.key),)
    if check:
        actions += (check,)
    if drop_first:
        actions += (DropViewAction(view.key, engine=False),)
    actions += (CreateViewAction(view, replace and not drop_first),)
    if view.partitioned_on:
        actions += (PartitionView(view.key, view.partitioned_on),)
    return actions


@dataclass(frozen=True)
class CreateView(_OfView):
    view: View
    # The live views Spark analyses to create it, checked unchanged first (``plan.live_code``).
    check: CheckLiveViews | None = None
    destructive = False
    reshapes = True

    def to_step(self) -> Step:
        return Step(StepKind.CREATE_VIEW, self.key, ObjectType.VIEW, f"create view {self.key}",
                    _view_actions(self.view, False, self.check))


@dataclass(frozen=True)
class ReplaceView(_OfView):
    view: View
    reasons: tuple[str, ...]
    reshapes: bool = True  # False when only comments changed: readers see the same columns
    # Asked for: its declared SQL changed, or a recompile was requested. Not a view re-created only
    # because what it reads changed.
    deliberate: bool = False
    old_sql: str | None = None  # the live view's SQL, when the declared SQL differs from it
    old_label: str = "live"     # what the old SQL is, in the diff's header: live, the snapshot's, the base's
    check: CheckLiveViews | None = None  # as a CreateView's
    # Why the live entry is dropped through the metastore client first (``plan.live_code``); None: Spark replaces it.
    drop_first: str | None = None
    destructive = False

    def to_step(self) -> Step:
        diff = () if self.old_sql is None else tuple(difflib.unified_diff(
            self.old_sql.strip().splitlines(), ddl.view_text(self.view).strip().splitlines(), self.old_label,
            "schemas", lineterm=""))
        return Step(StepKind.REPLACE_VIEW, self.key, ObjectType.VIEW, f"re-create view {self.key}: {'; '.join(self.reasons)}",
                    _view_actions(self.view, True, self.check, self.drop_first is not None), sql_diff=diff,
                    notes=(self.drop_first,) if self.drop_first else ())


@dataclass(frozen=True)
class DropView(_OfView):
    view: View
    record: Mapping[str, str] = field(default_factory=dict)  # the drop's record on the database (see history)
    # Why it is dropped through the metastore client, not Spark (``plan.live_code``); None: through Spark.
    through_metastore: str | None = None
    check: CheckLiveViews | None = None  # the live views Spark's DROP VIEW analyses, checked unchanged first
    engine: bool = True  # the catalog runs an engine (``capabilities``); without one, a view is dropped as an entry
    destructive = True
    reshapes = True

    def to_step(self) -> Step:
        drop: Action = DropViewAction(self.key, engine=self.engine and not self.through_metastore)
        return Step(StepKind.DROP_VIEW, self.key, ObjectType.VIEW, f"drop view {self.key}",
                    ((self.check,) if self.check else ()) + (drop,) + _recorded(self.view.database, self.record),
                    notes=("queries and views that read it will fail",) + ((self.through_metastore,)
                                                                          if self.through_metastore else ()),
                    destructive=True)


@dataclass(frozen=True)
class SyncViewPartitions(_OfView):
    """A partitioned view's partitions made to match those it should have (``plan.view_partitions``).

    ``add`` and ``drop`` run, except after a re-creation of the view (``replaced``), which takes every
    partition with it: then ``drop`` only names those that do not come back, ``lost`` those that do
    not fit the view any more (other partition columns), and ``kept`` says how many of ``add`` come
    back. When ``known`` is false, the partitions could not be listed (no metastore at hand) and
    the step says what decides them at apply.
    """

    view: View
    live_columns: tuple[str, ...] = ()  # what the live view is partitioned on
    add: tuple[PartitionValues, ...] = ()
    drop: tuple[PartitionValues, ...] = ()
    lost: tuple[PartitionValues, ...] = ()
    kept: int = 0
    replaced: bool = False
    known: bool = True
    reshapes = False

    @property
    def destructive(self) -> bool:
        """Whether partitions go that the view cannot have back: those of other partition columns than it
        gets (Hive refuses such a replacement, error 10217), or, unlisted, a partitioned view's."""
        if self.lost:
            return True
        return (not self.known and self.view.partitions is None and bool(self.live_columns)
                and self.live_columns != self.view.partitioned_on)

    def to_step(self) -> Step:
        view, columns = self.view, self.view.partitioned_on
        rule = view.partitions
        origin = ("kept as they are" if rule is None else "listed in its file" if rule.derive_from is None
                  else f"derived from the partitions of {rule.derive_from}")
        if not self.known:
            if rule is None and self.live_columns != columns:
                summary, note = "lost with the re-created view", (
                    f"none fits it: partitioned on {listed(self.live_columns)} -> {listed(columns)}")
            elif rule is None:
                summary, note = "re-added at apply", ("Spark's CREATE OR REPLACE VIEW drops them; apply lists them "
                                                      "first and adds back those that still fit")
            else:
                summary, note = "decided at apply", (f"{origin}; only the metastore can list those it has: apply, or "
                                                     "schemaflow view-partitions sync, adds and drops them")
            return Step(StepKind.VIEW_PARTITIONS, self.key, ObjectType.VIEW, f"partitions of view {self.key}: {summary}", (),
                        notes=(note,), destructive=self.destructive)
        counts = [f"{verb} {len(values)}" for verb, values in (("add", self.add), ("drop", self.drop)) if values]
        notes = []
        if self.kept:
            notes.append(f"re-adds {plural(self.kept, 'partition')} that still fit: Spark's CREATE OR REPLACE VIEW "
                         "drops them all")
        if self.lost:
            notes.append(f"the re-created view loses {listed_partitions(self.live_columns, self.lost)}: they do not "
                         f"fit it (partitioned on {listed(self.live_columns)} -> {listed(columns)})")
        if self.drop:
            notes.append(f"drops {listed_partitions(columns, self.drop)}: no longer {origin}")
        if self.add:
            notes.append(f"adds {listed_partitions(columns, self.add)} ({origin}), without a location")
        summary = f"partitions of view {self.key}: {', '.join(counts) or 'none left'}"
        drop = () if self.replaced else self.drop
        action = ChangeViewPartitions(self.key, columns, self.add, drop)
        return Step(StepKind.VIEW_PARTITIONS, self.key, ObjectType.VIEW, summary, (action,) if self.add or drop else (),
                    notes=tuple(notes), destructive=self.destructive)


@dataclass(frozen=True)
class Unsupported:
    """A difference schemaflow cannot apply in place; the plan shows it blocked, with the way out."""

    key: str
    object_type: ObjectType
    what: str
    way_out: str
    values: tuple[str, ...] = ()  # what else the same change would make, each "what: old -> new"
    why: str = "is not supported in place"
    destructive = False
    reshapes = False

    def to_step(self) -> Step:
        return Step(StepKind.UNSUPPORTED, self.key, self.object_type, f"{self.what} on {self.key}", (),
                    blocked=f"{self.what} {self.why}: {self.way_out}", values=self.values)


@dataclass(frozen=True)
class Stamp:
    """The last write to every object a plan touches: its managed properties and its version.

    Written through the metastore client, which keeps reserved keys such as ``owner`` that Spark
    SQL refuses, and which can carry the metastore's compare-and-swap guard.
    """

    key: str
    object_type: ObjectType
    set: Mapping[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    # The live values of the properties it changes; None for an object (re)created, whose are all new.
    was: Mapping[str, str] | None = None
    destructive = False
    reshapes = False

    def values(self) -> tuple[str, ...]:
        """The old and new value of each property of the user's it sets or unsets on an existing object."""
        if self.was is None:
            return ()
        keys = sorted(k for k in (*self.set, *self.unset) if not k.startswith(SCHEMAFLOW_PREFIX))
        return tuple(value_change(k, self.was.get(k), self.set.get(k)) for k in keys)

    def describe_properties(self) -> str:
        """The managed properties and migrations this stamp sets and unsets, for people ("" when none)."""
        parts = []
        migrations = sorted(k[len(MIGRATION_PREFIX):] for k in self.set if k.startswith(MIGRATION_PREFIX))
        if migrations:
            parts.append("record migration " + ", ".join(migrations))
        props = sorted(k for k in self.set if not k.startswith(SCHEMAFLOW_PREFIX))
        if props:
            parts.append("set " + ", ".join(props))
        user_unset = [k for k in self.unset if not k.startswith(SCHEMAFLOW_PREFIX)]
        if user_unset:
            parts.append("unset " + ", ".join(user_unset))
        return "; ".join(parts)

    @property
    def write(self) -> SetParameters:
        """The write itself: a step's ``stamp``."""
        return SetParameters(self.key, dict(sorted(self.set.items())), self.unset)

    def to_step(self) -> Step:
        """The stamp as a step of its own, when its object's other steps do not come just before it."""
        summary = f"{self.describe_properties() or 'record schemaflow.version'} on {self.key}"
        return Step(StepKind.SET_PROPERTIES, self.key, self.object_type, summary, (), values=self.values(),
                    stamp=self.write)


Change = (CreateDatabase | SetDatabaseProperties | CreateTable | DropTable | AddColumns | AlterColumns | AlterIcebergTable
          | AlterDeltaTable | DeltaProtocol | ConvertToIceberg | SetTableComment | SetColumnComments | SetStorage
          | CreateView | ReplaceView | DropView | SyncViewPartitions | Unsupported | Stamp | RewriteTable | RegisterTable)
