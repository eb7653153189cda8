"""The difference between a desired and a live catalog, as changes in a deterministic order.

Set algebra on object names first (create what is only desired, drop what is only live), then a
comparison of each common object. A table's columns evolve through its pending migrations and
what the diff can infer (``plan.evolution``): a plain append stays a table-only ``ADD COLUMNS``,
anything else is one ``AlterColumns`` that cascades to the partitions unless a migration restricts it.
A Spark data-source table takes only what Spark SQL does to it: columns appended and comments.
SERDEPROPERTIES (a data source's OPTIONS) and the bucket count change in place. What no table takes
in place (another format or bucketing, other partition keys, a data-source table's other column
changes, a type change the metastore's positional rule refuses) is a rewrite (``plan.rewrite``);
what not even a rewrite makes (an external table's files, its location) is reported as unsupported.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

from schemaflow.model import Catalog, Column, Migration, Object, Partitions, Table, View
from schemaflow.plan.changes import (AddColumns, AlterColumns, Change, CreateDatabase, CreateTable, CreateView,
                                     DropLeftover, DropTable, DropView, ReplaceView, SetColumnComments, SetDatabaseProperties,
                                     ROW_NEUTRAL_SETTINGS, SetStorage, SetTableComment, Unsupported)
from schemaflow.plan.evolution import Evolution, ColumnListChange, Problem, evolve
from schemaflow.plan.hazards import unexplained_hazards
from schemaflow.plan.kinds import ObjectType
from schemaflow.plan.delta import delta_changes
from schemaflow.plan.iceberg import ConvertToIceberg, backup_name, conversion, iceberg_change, staging_name
from schemaflow.plan.rewrite import (INCONVERTIBLE, RewriteTable, by_copying, column_values, flat, inconvertible,
                                     registrable_copy, restore_name, rewritten_values)
from schemaflow.sql.storage import SCHEMA_FROM_SERDE, same_location
from schemaflow.spark_version import SparkVersion
from schemaflow.sql.table_kinds import DELTA, ColumnChanges, Resolution, TableKind, kind_of, table_kind
from schemaflow.sql.ddl import stores_view, view_text
from schemaflow.sql.views import normalize_sql
from schemaflow.sql.types import nests_char_or_varchar
from schemaflow.wording import listed

# --allow-destructive does not unblock such a change: it allows the drop of an object no file declares.
_RECREATE_FROM_FILES = ("re-create it (remove its file and apply with --allow-destructive, which drops it and its "
                        "data, then add the file back)")
RECREATE = _RECREATE_FROM_FILES + ", or create a new table and copy the data"


def diff(desired: Catalog, live: Catalog, type_rule: bool = True, release: SparkVersion | None = None) -> list[Change]:
    """Changes that turn ``live`` into ``desired``: databases first, then objects by name. ``type_rule``:
    whether the metastore refuses incompatible column type changes (see ``plan.evolution``); ``release``: the Spark
    release apply runs with, where what a table's kind changes in place depends on it (None: the installed one's)."""
    changes: list[Change] = []
    for database in sorted(desired.databases):
        if database in live.databases:
            changes += diff_database(desired, live, database)
        else:
            changes.append(CreateDatabase(database, desired.database_details.get(database)))
    for key in sorted(desired.objects.keys() | live.objects.keys()):
        want, have = desired.get(key), live.get(key)
        restoring = live.get(restore_name(key))
        if isinstance(want, Table) and isinstance(restoring, Table) and restoring.rewrite_of == key:
            changes.append(_unfinished_restore(key))
        elif have is None:
            backup = live.get(backup_name(key))
            if isinstance(want, Table) and isinstance(backup, Table) and backup.backup_of == key:
                changes.append(_resume(want, backup, live))  # a stopped apply renamed it: finish that
            else:
                changes.append(create(desired.objects[key]))  # the key is desired when it is not live
        elif want is None:
            if isinstance(have, Table) and have.backup_of and have.backup_of not in live.objects:
                continue  # its conversion or rewrite is still to finish, from it
            if isinstance(have, Table) and have.rewrite_of and key in (staging_name(have.rewrite_of),
                                                                       restore_name(have.rewrite_of)):
                if _left_by_a_conversion(have, live):
                    changes.append(DropLeftover(have))
                continue  # the copy a rewrite is filling, or a backup being restored: theirs (catalog.hive.rewrite)
            changes.append(DropTable(have) if isinstance(have, Table) else DropView(have))
        elif want.kind != have.kind:
            changes += [DropTable(have) if isinstance(have, Table) else DropView(have), create(want)]
        elif isinstance(want, Table):
            assert isinstance(have, Table)  # the same kind
            changes += [where_free(c, live) for c in diff_table(want, have, desired.migrations, type_rule,
                                                                 live.get(backup_name(key)), release)]
        else:
            assert isinstance(have, View)  # the same kind
            changes += diff_view(want, have)
    return changes


def diff_database(desired: Catalog, live: Catalog, name: str) -> list[Change]:
    """What ``schemaflow.yaml`` declares of an existing database that the metastore holds otherwise.

    Only declared attributes count. Hive 2.3's metastore changes a database's properties (and
    owner) only: another comment or location is blocked, with the way out.
    """
    want, have = desired.database_details.get(name), live.database_details.get(name)
    if want is None or have is None:
        return []
    changes: list[Change] = []
    way_out = ("the metastore keeps it as the database was created: declare the live value, or create a new "
               "database and move the tables")
    if want.comment is not None and want.comment != have.comment:
        changes.append(Unsupported(name, ObjectType.DATABASE, f"changing the comment {have.comment!r} -> {want.comment!r}",
                                   way_out))
    if want.location is not None and not same_location(want.location, have.location):
        changes.append(Unsupported(name, ObjectType.DATABASE, f"changing the location {have.location!r} -> {want.location!r}",
                                   way_out))
    new = {k: v for k, v in want.properties.items() if have.properties.get(k) != v}
    if new:
        changes.append(SetDatabaseProperties(name, {k: have.properties[k] for k in new if k in have.properties}, new))
    return changes


def create(obj: Object) -> Change:
    return CreateTable(obj) if isinstance(obj, Table) else CreateView(obj)


def diff_table(want: Table, have: Table, migrations: Sequence[Migration] = (), type_rule: bool = True,
               backup: Object | None = None, release: SparkVersion | None = None) -> list[Change]:
    """What turns the live table ``have`` into ``want``; ``backup``: what holds the name a conversion to Iceberg
    would keep ``have`` under; ``release``: the Spark release apply runs with."""
    key = want.key
    kind = kind_of(want)
    had = table_kind(have.format, have.data_source)
    # How its columns change: as its kind's, or, a table leaving a kind with its own metadata, as that kind's.
    columns = had.column_changes if had and had.own_metadata else kind.column_changes
    if columns is ColumnChanges.ICEBERG:
        return _iceberg(want, have, had, migrations, type_rule, backup)
    if columns is ColumnChanges.DELTA:
        return _delta(want, have, migrations, release)
    # What the table cannot take in place blocks it; its comment is still shown (the plan marks it waiting).
    comment = [SetTableComment(key, have.comment, want.comment, through_metastore=want.serde in SCHEMA_FROM_SERDE)
               ] if want.comment != have.comment else []
    unmovable = _unmovable(want, have)
    if unmovable:
        return [Unsupported(key, ObjectType.TABLE, "changing storage (" + ", ".join(unmovable) + ")", RECREATE), *comment]
    reasons = [f"storage ({', '.join(storage)})" for storage in [_storage_changes(want, have)] if storage]
    if _shape(want.partition_columns) != _shape(have.partition_columns):
        reasons.append(f"partition columns {listed(_names(have.partition_columns))} -> "
                       f"{listed(_names(want.partition_columns))}")
    evolution = evolve(have, want, migrations, type_rule)
    # Without the metastore's positional rule, which a rewrite (a new table) does not meet.
    free = evolve(have, want, migrations, type_rule=False) if evolution.problems else evolution
    if not reasons and not free.problems and columns is ColumnChanges.SPARK_SQL:
        reasons += _data_source_refusals(want, have, free, kind)
    if not reasons and evolution.problems and (have.data_source or not free.problems):
        reasons += [p.what for p in evolution.problems]  # what the metastore's positional rule (or Spark) refuses
    if not reasons and not evolution.problems and want.rewrite_hiding:
        reasons += _hiding(want, have, evolution)
    if reasons:
        # The rows are moved by name into a new table: the order of its columns is free, and where partition columns
        # change, a column may move between the data and the partition columns.
        keys_change = _shape(want.partition_columns) != _shape(have.partition_columns)
        moved = evolve(flat(have) if keys_change else have, flat(want) if keys_change else want, migrations,
                       type_rule=False, by_id=True)
        if not moved.problems and have.external:
            return [Unsupported(key, ObjectType.TABLE, "; ".join(reasons), "an external table's files are not rewritten by "
                                "schemaflow: " + RECREATE), *comment]
        stuck = inconvertible(want, have, moved)
        if not moved.problems and stuck:
            return [Unsupported(key, ObjectType.TABLE, "; ".join(f"change type of {f.column} from {f.old_type} to {f.type}"
                                                        for f in stuck), INCONVERTIBLE), *comment]
        if not moved.problems:
            return [RewriteTable(key, want, have, tuple(reasons), moved,
                                 values=rewritten_values(want, have, dict(moved.renamed)))]
        evolution = moved
    settings = _settings_change(want, have)
    if evolution.problems:
        # The columns change in one write, which waits on the problem: each of its changes is shown with it, and
        # the table's other changes are steps of their own, waiting too.
        values = column_values(have.columns, want.columns)
        return [*(Unsupported(key, ObjectType.TABLE, p.what, p.way_out, values if i == 0 else ())
                  for i, p in enumerate(evolution.problems)), *([settings] if settings else []), *comment]
    changes: list[Change] = []
    if settings:
        changes.append(settings)
    match columns:
        case ColumnChanges.SPARK_SQL:
            changes += _data_source_columns(want, have, evolution, kind)
        case ColumnChanges.METASTORE:
            changes += _hive_columns(want, have, evolution)
        case _:
            assert_never(columns)
    return changes + comment


def _iceberg(want: Table, have: Table, had: TableKind | None, migrations: Sequence[Migration], type_rule: bool,
             backup: Object | None) -> list[Change]:
    """An Iceberg table's change (``plan.iceberg``); a table becoming one is converted (in place, or by copying
    files Iceberg cannot register), every other change of kind cannot be made in place. ``had``: the live table's
    kind; ``backup``: what holds the backup's name. The backup an earlier rewrite kept of the table stays, and an
    in-place conversion keeps no other."""
    if kind_of(want).column_changes is ColumnChanges.ICEBERG and not (had and had.own_metadata):
        rewritten = isinstance(backup, Table) and backup.backup_of == want.key
        by_copy = have.format != "parquet"
        conversion_ = conversion(want, have, backup is not None and not rewritten and not by_copy, keep=not rewritten)
        if isinstance(conversion_, tuple):
            return [Unsupported(want.key, ObjectType.TABLE, p.what, p.way_out) for p in conversion_]
        if by_copy:
            how = f"USING {have.format}" if have.data_source else f"STORED AS {have.format}"
            return [by_copying(want.key, want, have, f"Iceberg registers Parquet files only, and the table is {how}")]
        return [conversion_]
    if want.format != have.format or want.data_source != have.data_source:
        kind = (f"USING {have.format}" if have.data_source else f"STORED AS {have.format}") + " -> " + (
            f"USING {want.format}" if want.data_source else f"STORED AS {want.format}")
        return [Unsupported(want.key, ObjectType.TABLE, f"changing storage (format {kind})", RECREATE)]
    change = iceberg_change(want, have, migrations, type_rule)
    if isinstance(change, tuple):
        return [Unsupported(want.key, ObjectType.TABLE, p.what, p.way_out) for p in change]
    return [change] if change else []


def _delta(want: Table, have: Table, migrations: Sequence[Migration], release: SparkVersion | None) -> list[Change]:
    """A Delta table's change (``plan.delta``); a table becoming one, or a Delta table becoming another kind, cannot
    be made in place."""
    if want.format != have.format or want.data_source != have.data_source:
        kind = (f"USING {have.format}" if have.data_source else f"STORED AS {have.format}") + " -> " + (
            f"USING {want.format}" if want.data_source else f"STORED AS {want.format}")
        way_out = RECREATE
        if want.format == DELTA and have.format == "parquet":
            way_out = ("schemaflow does not convert a table to Delta (CONVERT TO DELTA writes a log over the Parquet "
                       "files and changes what the metastore entry says, which is not planned or guarded yet): run "
                       "CONVERT TO DELTA outside schemaflow, then plan again; or " + RECREATE)
        return [Unsupported(want.key, ObjectType.TABLE, f"changing storage (format {kind})", way_out)]
    if _unmovable(want, have):
        return [Unsupported(want.key, ObjectType.TABLE, "changing storage (" + ", ".join(_unmovable(want, have)) + ")",
                            RECREATE)]
    changes = delta_changes(want, have, migrations, release)
    if changes and isinstance(changes[0], Problem):
        return [Unsupported(want.key, ObjectType.TABLE, p.what, p.way_out) for p in changes
                if isinstance(p, Problem)]
    return [c for c in changes if not isinstance(c, Problem)]


def _storage_changes(want: Table, have: Table) -> list[str]:
    """The storage differences a table takes only by a rewrite of its files: its format, SerDe, format classes
    and bucket columns (its settings and bucket count change in place)."""
    def kind(table: Table) -> str:
        if want.data_source == have.data_source:
            return table.format
        return f"USING {table.format}" if table.data_source else f"STORED AS {table.format}"
    return [f"{what} {old!r} -> {new!r}" for what, old, new in (
        ("format", kind(have), kind(want)),
        ("SerDe", have.serde, want.serde),
        ("input format", have.input_format, want.input_format),
        ("output format", have.output_format, want.output_format),
        ("bucketed by", _bucket_columns(have), _bucket_columns(want)),
    ) if old != new]


def _hiding(want: Table, have: Table, evolution: Evolution) -> list[str]:
    """What a change in place would hide of the existing values, for a table declared to be rewritten instead
    (``rewrite: when_values_hide``): a rename its files resolve by name (the new name reads NULL), another bucket
    count (a lookup prunes by the new count), and storage settings that change how the files' rows are read."""
    kind = table_kind(have.format, have.data_source)
    by_name = kind is not None and kind.resolution is Resolution.BY_NAME
    reasons = [f"rename {old} to {new}: {have.format} files find columns by name" for old, new in evolution.renamed
               if by_name and not have.data_source]
    if have.bucketing and want.bucketing and have.bucketing.count != want.bucketing.count:
        reasons.append(f"bucket count {have.bucketing.count} -> {want.bucketing.count}: the files are bucketed into "
                       f"{have.bucketing.count}")
    old, new = have.serde_properties, want.serde_properties
    read = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k) and k.lower() not in ROW_NEUTRAL_SETTINGS)
    if read:
        reasons.append(f"{'options' if have.data_source else 'SERDEPROPERTIES'} {', '.join(read)}: the files were "
                       "written with the old ones")
    return reasons


def _unmovable(want: Table, have: Table) -> list[str]:
    """The storage differences no table takes, not even by a rewrite: whether its files are its own, and where
    an external table's are."""
    changed = [f"external {have.external!r} -> {want.external!r}"] if have.external != want.external else []
    if want.external and not same_location(want.location, have.location):
        changed.append(f"location {have.location!r} -> {want.location!r}")
    return changed


def where_free(change: Change, live: Catalog) -> Change:
    """``change``, or, for a rewrite whose backup or staging name another table holds, why it cannot run. A backup
    of the same table an earlier rewrite left is no obstacle: a plan allowed to rewrite drops it first. A conversion
    that keeps no backup of its own needs the staging name."""
    if isinstance(change, ConvertToIceberg) and not change.keep and staging_name(change.key) in live.objects:
        return Unsupported(change.key, ObjectType.TABLE, f"converting to Iceberg while {staging_name(change.key)} exists",
                           f"the Parquet table's entry waits as {staging_name(change.key)} while the Iceberg table is "
                           "registered: drop or rename that one first")
    if not isinstance(change, RewriteTable):
        return change
    key = change.key
    taken = [name for name, mark in ((backup_name(key), "backup_of"), (staging_name(key), "rewrite_of"))
             if name in live.objects and getattr(live.objects[name], mark, None) != key]
    if not taken:
        return change
    return Unsupported(key, ObjectType.TABLE, "; ".join(change.reasons), f"a rewrite keeps the old table as "
                       f"{backup_name(key)} and fills the new one as {staging_name(key)}, and {' and '.join(taken)} "
                       "is another table already: rename or drop it first")


def _left_by_a_conversion(staging: Table, live: Catalog) -> bool:
    """Whether ``staging`` is the copy's entry a conversion to Iceberg by copying left when it stopped after registering
    the Iceberg table it was the copy of (``catalog.hive.iceberg_convert``): external, beside that Iceberg table."""
    owner = live.get(staging.rewrite_of or "")
    kind = table_kind(owner.format, owner.data_source) if isinstance(owner, Table) else None
    return (staging.external and staging.key == staging_name(staging.rewrite_of or "") and kind is not None
            and kind.column_changes is ColumnChanges.ICEBERG)


def _unfinished_restore(key: str) -> Unsupported:
    """What a plan says of the table ``key`` whose restore (``plan.restore``) a stopped run left half done."""
    return Unsupported(key, ObjectType.TABLE, "the restore from its backup a stopped run began",
                       f"run `schemaflow restore {key}` to finish it, then plan again", why="is unfinished")


def _resume(want: Table, backup: Table, live: Catalog) -> Change:
    """What finishes the conversion or rewrite a stopped apply left with the table renamed to ``backup``."""
    staging = live.get(staging_name(want.key))
    if isinstance(staging, Table) and staging.rewrite_of == want.key:
        if kind_of(want).column_changes is ColumnChanges.ICEBERG:  # a conversion by copying
            copy = registrable_copy(want)
            return RewriteTable(want.key, copy, backup, ("finish the cut-over, then the conversion to Iceberg",),
                                evolve(backup, copy, ()), iceberg=want)
        return RewriteTable(want.key, want, backup, ("finish the cut-over",), evolve(backup, want, ()))
    return ConvertToIceberg(want.key, want, backup)


def _bucket_columns(table: Table) -> str | None:
    """``id, region sorted by at``, as a person reads it (None: not bucketed)."""
    if table.bucketing is None:
        return None
    sorted_by = f" sorted by {', '.join(table.bucketing.sorted_by)}" if table.bucketing.sorted_by else ""
    return ", ".join(table.bucketing.columns) + sorted_by


def _settings_change(want: Table, have: Table) -> SetStorage | None:
    """SERDEPROPERTIES (or a data source's OPTIONS) and the bucket count: changed in place."""
    count = want.bucketing.count if want.bucketing else None
    old_count = have.bucketing.count if have.bucketing else None
    if want.serde_properties == have.serde_properties and count == old_count:
        return None
    return SetStorage(want.key, dict(have.serde_properties), dict(want.serde_properties), old_count, count,
                      want.data_source, bool(want.partition_columns))


def _data_source_refusals(want: Table, have: Table, evolution: Evolution, kind: TableKind) -> list[str]:
    """What of a data-source table's column change Spark SQL refuses: everything but columns appended and
    data-column comments (Spark reads such a table through its own copy of the schema)."""
    old, new = evolution.old, evolution.new
    refused = [] if _shape(new[:len(old)]) == _shape(old) else list(evolution.operations)
    refused += [f"change comment of partition column {n.name}" for o, n in zip(have.partition_columns,
                                                                              want.partition_columns, strict=False)
                if o.comment != n.comment]
    refused += [f"change comment of column {n.name} ({n.type}: Spark cannot alter a column whose type nests char "
                "or varchar)" for o, n in zip(old, new, strict=False) if o.comment != n.comment and nests_char_or_varchar(n.type)]
    added = new[len(old):]
    if added and not refused and not kind.adds_columns:
        refused.append("add " + ", ".join(c.name for c in added))
    return refused


def _data_source_columns(want: Table, have: Table, evolution: Evolution, kind: TableKind) -> list[Change]:
    """A data-source table's columns: Spark SQL adds columns and changes data-column comments
    (``_data_source_refusals`` found nothing else)."""
    key = want.key
    old, new = evolution.old, evolution.new
    changes: list[Change] = []
    commented = [(o, n) for o, n in zip(old, new, strict=False) if o.comment != n.comment]
    if commented:
        changes.append(SetColumnComments(key, tuple(n for _, n in commented), tuple(o.comment for o, _ in commented)))
    added = new[len(old):]
    if added:
        changes.append(AddColumns(key, added, partitioned=False, hazards=unexplained_hazards(evolution)))
    return changes


def _hive_columns(want: Table, have: Table, evolution: Evolution) -> list[Change]:
    """A Hive-format table's columns: appended in place, or any change through the metastore (``plan.evolution``)."""
    key = want.key
    changes: list[Change] = []
    keys_commented = want.partition_columns != have.partition_columns or any(
        o.comment != n.comment for o, n in zip(have.partition_columns, want.partition_columns, strict=False))
    partitioned = bool(want.partition_columns)
    if evolution.kind == ColumnListChange.APPEND and not keys_commented and evolution.mode != Partitions.CASCADE:
        changes.append(AddColumns(key, want.columns[len(have.columns):], partitioned=partitioned,
                                  hazards=unexplained_hazards(evolution)))
    elif evolution.kind != ColumnListChange.SAME or keys_commented or evolution.mode == Partitions.CASCADE:
        # A partition key's comment is the table's alone (partitions keep no keys): it cascades nothing,
        # and a cascade would undo the column lists an earlier restrict change left on purpose.
        # Appended columns follow no more than a key's comment does (Hive's prefix rule): only a change to the
        # columns partitions hold, or a migration that asks, makes them follow.
        follows = evolution.kind == ColumnListChange.ALTER or evolution.mode == Partitions.CASCADE
        changes.append(AlterColumns(key, evolution, want.partition_columns, want.format,
                                    cascade=partitioned and follows and evolution.mode != Partitions.RESTRICT,
                                    live_partition_columns=have.partition_columns))
    return changes


def diff_view(want: View, have: View) -> list[Change]:
    reasons: list[str] = []
    # Stored as view_text stores it (each * as the columns it selected then), or as written (by a
    # version of schemaflow before view_text).
    stored = (want.sql, view_text(want))
    sql_changed = (have.sql != want.sql and not stores_view(have.sql, want)
                   and normalize_sql(have.sql) not in map(normalize_sql, stored))
    if sql_changed:
        reasons.append("SQL changed")
    if _names(want.columns) != _names(have.columns):
        reasons.append(f"columns {listed(_names(have.columns))} -> {listed(_names(want.columns))}")
        new = [name for name in _names(want.columns) if name not in _names(have.columns)]
        if not sql_changed and set(_names(have.columns)) < set(_names(want.columns)):
            reasons.append(f"recompile: Spark expanded * when it created the view, so {', '.join(new)} "
                           "would not appear otherwise")
    reshaped = bool(reasons)
    # An undeclared view column comment is Spark's to choose: it carries over the comment of the
    # column selected (through aliases too), so only declared comments are compared.
    if not reshaped and any(w.comment is not None and w.comment != h.comment
                            for w, h in zip(want.columns, have.columns, strict=False)):
        reasons.append("column comments changed")
    if want.comment != have.comment:
        reasons.append("comment changed")
    if want.partitioned_on != have.partitioned_on:
        reasons.append(f"partitioned on {listed(have.partitioned_on)} -> {listed(want.partitioned_on)}")
    return [ReplaceView(want, tuple(reasons), reshapes=reshaped, deliberate=sql_changed,
                        old_sql=have.sql if sql_changed else None)] if reasons else []


def property_delta(want: Object, have: Object | None) -> tuple[dict[str, str], tuple[str, ...]]:
    """Managed properties to set and to unset; keys schemaflow never managed are left alone.

    An object schemaflow has not stamped yet (adopted, as after ``import``) is owned whole from its
    first write: every property it has is managed (as ``import`` writes them all into its file), so one
    removed from the file is unset, as ``plan --base`` plans it from the base's files.
    """
    live = {} if have is None else have.properties
    to_set = {k: v for k, v in sorted(want.properties.items()) if live.get(k) != v}
    managed_before = () if have is None else have.managed_keys if have.version is not None else tuple(live)
    to_unset = tuple(sorted(k for k in managed_before if k not in want.properties and k in live))
    return to_set, to_unset


def _shape(columns: tuple[Column, ...]) -> list[tuple[str, str | None]]:
    return [(c.name, c.type) for c in columns]


def _names(columns: tuple[Column, ...]) -> list[str]:
    return [c.name for c in columns]

