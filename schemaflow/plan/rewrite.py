"""A table rewrite: what a table cannot take in place, made by moving its rows into a new definition of it.

What neither the metastore nor the table's files can change in place is planned as one rewrite step: a
data-source table's columns renamed, dropped, retyped or moved (Spark refuses each on such a table); a
change of Hive partition columns; another format, SerDe or format classes; other bucket columns or sort;
a type change the metastore's positional rule refuses. The step creates the new definition beside the
table under a staging name (``<name>_rewrite_``), fills it through Spark from the live rows, each column
from the live column it was (by name, or by the rename a migration states; ``sql.rewrite``), verifies the
copy partition by partition, and swaps it in under the table's name. The live table is kept as its backup
(``<name>_backup_``), files and all, until a plan given leave to drop backups drops it (``plan.backups``).

A conversion to Iceberg whose files Iceberg cannot register as they are (ORC, Avro or text files, Parquet with INT96
timestamps or columns spelt with capitals) is a rewrite too, by copying: the staging table is a Parquet table
(``registrable_copy``) filled as Iceberg can register its files (timestamps in microseconds, the metastore's
lower-case names), swapped in as any rewrite, then converted in place (``catalog.hive.iceberg_convert``), its entry not
kept: the backup is the table as it was.

A rewrite moves every row, so it runs only when allowed, as a drop does: a plan without
``--allow-destructive`` shows it blocked. An external table's files belong to whoever wrote them there:
its rewrite is not planned (a later change may move them).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from schemaflow.model import CHUNK_SECONDS, COPY_RATE, MOST_CHUNKS, Column, DeltaState, Stored, Table
from schemaflow.plan.evolution import ColumnChange, Evolution, evolve
from schemaflow.plan.hazards import rewrite_hazards
from schemaflow.plan.iceberg import backup_name, staging_name
from schemaflow.plan.kinds import ObjectType, StepKind
from schemaflow.plan.steps import IcebergCommit, RewriteRows, Step
from schemaflow.sql.rewrite import Filled, convertible, filling, one_to_one
from schemaflow.sql.table_kinds import table_kind
from schemaflow.wording import duration, plural, size, value_change

INCONVERTIBLE = ("a rewrite converts a nested value only to a type of the same shape (Spark casts a struct only to "
                 "one of as many fields): add a column of the new type and fill it outside schemaflow, then drop the "
                 "old one with a migration")
REWRITE_BLOCK = ("a rewrite copies every row of the table into a new one: plan with --allow-destructive (in a pull "
                 "request, the schemaflow-allow-destructive label) to run it")


def restore_name(key: str) -> str:
    """Where a restore of the backup (``plan.restore``) keeps it between its first and last rename:
    ``<name>_restore_``."""
    return f"{key}_restore_"


def reads(key: str, stored: Stored, cores: int | None) -> str:
    """What a rewrite of ``key`` reads, where the figures come from, and about how long it takes."""
    counted = [plural(stored.partitions, "partition")] if stored.partitions is not None else []
    counted += [plural(stored.files, "file")] if stored.files is not None else []
    units = stored.partitions if stored.partitions is not None else 1
    if not units:
        return f"reads no file: {key} has no partitions"
    if stored.unknown == units:
        return (f"reads files of a size not known: {key} keeps no statistics of them (ANALYZE TABLE {key} COMPUTE "
                "STATISTICS NOSCAN records them), and a plan made without Spark lists no files")
    counted.append(size(stored.bytes))
    kept = units - stored.listed - stored.unknown
    if stored.partitions is None:
        source = "the metastore's statistics" if kept else "a listing of its folder"
    else:
        source = ", ".join([f"the metastore's statistics of {kept}"] * bool(kept)
                           + [f"a listing of {stored.listed}"] * bool(stored.listed))
        if stored.unknown:
            source += f"; not counted: {plural(stored.unknown, 'partition')} with none"
    seconds = max(stored.bytes / (COPY_RATE * (cores or 1)), 1)
    on = f"on {plural(cores, 'core')}" if cores else "of one core's time"
    return (f"reads {', '.join(counted)} of {key} ({source}): about {duration(seconds)} {on}, at the "
            f"{size(COPY_RATE)}/s a core bench/rewrite.py measured on a laptop")


def registrable_copy(want: Table) -> Table:
    """The Parquet table a conversion by copying fills, whose files the Iceberg table ``want`` then registers: its
    columns, those it is partitioned by (by identity: ``plan.iceberg.conversion`` refuses others) as Hive partitions."""
    keys = [f.column for f in want.partition_spec]
    return Table(want.database, want.name, tuple(c for c in want.columns if c.name not in keys),
                 tuple(c for name in keys for c in want.columns if c.name == name), format="parquet", data_source=True)


@dataclass(frozen=True)
class RewriteTable(ColumnChange):
    """The table ``key`` made anew as ``want`` from the rows of ``have``: the live table, or, when a stopped apply
    renamed it already, its backup (then only the cut-over is left)."""

    key: str
    want: Table
    have: Table
    reasons: tuple[str, ...]                 # what cannot change in place, for the reviewer
    evolution: Evolution                     # of the data columns: the renames the rows follow
    partition_count: int | None = None       # of the live table; None: not counted (or not partitioned)
    values: tuple[str, ...] = ()             # what else the new definition changes, each "what: old -> new"
    stored: Stored | None = None             # what the live table holds in files; None: not measured
    cores: int | None = None                 # what the configured master copies on; None: not known
    iceberg: Table | None = None             # converting by copying: the Iceberg table, ``want`` its Parquet copy
    records: Mapping[str, str] = field(default_factory=dict)  # the migration records its cut-over writes
    delta: DeltaState | None = None          # a Delta table's log as read: the copy starts only on its version
    kind_hazards: tuple[str, ...] = ()       # what the new table of its kind does to readers (``plan.delta``)
    object_type = ObjectType.TABLE
    reshapes = True
    destructive = True                       # it moves every row: run only when allowed
    needs_permission = True

    @property
    def resumed(self) -> bool:
        return self.have.key != self.key

    def _slices(self) -> str:
        """How many slices the copy of the whole table makes, as far as the plan knows ("": not known)."""
        if self.stored is None or not self.cores or self.stored.unknown:
            return ""
        count = min(max(math.ceil(self.stored.bytes / (COPY_RATE * CHUNK_SECONDS * self.cores)), 1), MOST_CHUNKS)
        return f": {plural(count, 'slice')} of its {size(self.stored.bytes)}"

    def to_step(self) -> Step:
        key, staging, backup = self.key, staging_name(self.key), backup_name(self.key)
        columns = filling(self.want, self.have, {new: old for old, new in self.evolution.renamed},
                          self.evolution.accepted)
        notes = []
        if self.resumed:
            notes.append(f"finishes the rewrite a stopped apply began: {key} is {backup} already, and {staging} "
                         "holds the verified copy")
        else:
            read = f"{plural(self.partition_count, 'partition')} of " if self.partition_count is not None else ""
            bound = f"{size(COPY_RATE * CHUNK_SECONDS * self.cores)} on {plural(self.cores, 'core')}; " if (
                self.cores) else ""
            each = f"at most about {duration(CHUNK_SECONDS)} of copying each ({bound}what a stop loses at most)"
            # A table whose partitions the metastore does not hold (its own metadata does) is copied whole.
            kind = table_kind(self.have.format, self.have.data_source)
            by_partition = not (kind and kind.own_metadata) and one_to_one(
                columns, [c.name for c in self.want.partition_columns], [c.name for c in self.have.partition_columns])
            chunks = (f"partition by partition, in chunks of {each}, and compares what each chunk wrote with what the "
                      "copy holds" if by_partition else
                      f"the whole table in slices of its rows (a row's by a hash of its values), {each}"
                      f"{self._slices()}, and compares what the slices wrote with what the whole copy holds")
            notes.append(f"copies the rows of {read}{key} into {staging} through Spark (on the configured master), "
                         f"{chunks} (row counts, a checksum "
                         "of the rows' values) before anything changes for readers; any difference stops it with the table "
                         f"untouched. Progress is journaled on {staging}: a stopped apply is resumed from its first "
                         "unfinished chunk, and what is written to the table meanwhile is copied again before the "
                         "cut-over")
        if self.delta is not None and not self.resumed:
            notes.append(f"on top of Delta log version {self.delta.log_version} of table {self.delta.table_id}: a "
                         f"commit to {key} since the plan stops it before anything is copied; each round of the copy "
                         "reads the log's version, and one a writer committed during the copy is copied again")
        if self.stored is not None and not self.resumed:
            notes.append(reads(key, self.stored, self.cores))
        notes.append(f"cut-over: {key} is renamed to {backup}, then {staging} to {key}; readers see the old table "
                     "until then, and the name is missing only between the two renames")
        if self.iceberg:
            notes.append(f"{staging} is a Parquet table written with timestamps in microseconds, so that Iceberg can "
                         f"register its files: after the cut-over they become the Iceberg table {key}'s, none copied "
                         f"again, and the Parquet table's entry is dropped")
        notes.append(f"the new files go to the folder of {key}, as before; {backup} keeps the old ones, and is kept "
                     "until a plan with --drop-backups drops it")
        if self.evolution.migrations:
            notes.append("applies migration " + ", ".join(self.evolution.migrations))
        new = [f.column for f in columns if f.source is None and not self.resumed]
        if new:
            notes.append(f"new column{'s' if len(new) > 1 else ''} {', '.join(new)}: NULL in every row copied")
        dropped = sorted({c.name for c in self.have.all_columns} - {f.source for f in columns})
        if dropped and not self.resumed:
            notes.append(f"not copied: {', '.join(dropped)} (its values stay in {backup})")
        hazards = () if self.resumed else (*rewrite_hazards(key, self.want, self.have, columns, backup, staging),
                                           *self.kind_hazards)
        log = self.delta if not self.resumed else None
        rows = RewriteRows(self.want, columns, staging, backup, self.resumed, registrable=self.iceberg is not None,
                           records=self.records, log_version=log.log_version if log else None,
                           table_id=log.table_id if log else None)
        if self.iceberg is None:
            return Step(StepKind.REWRITE_TABLE, key, ObjectType.TABLE, f"rewrite table {key}: {'; '.join(self.reasons)}",
                        (rows,), notes=tuple(notes), hazards=hazards, destructive=True, values=self.values)
        hazards += (f"readers of {key} (and of the views over it) need Iceberg's runtime from now on",)
        return Step(StepKind.REWRITE_TABLE, key, ObjectType.TABLE, f"rewrite table {key}: {'; '.join(self.reasons)}",
                    (rows, IcebergCommit(self.iceberg, create=True, backup=staging, keep=False)), notes=tuple(notes),
                    hazards=hazards, destructive=True, values=self.values)


def by_copying(key: str, want: Table, have: Table, why: str) -> RewriteTable:
    """The conversion of ``have`` into the Iceberg table ``want`` by copying its rows, since ``why``."""
    copy = registrable_copy(want)
    return RewriteTable(key, copy, have, (f"convert to Iceberg by copying: {why}",),
                        evolve(flat(have), flat(copy), (), type_rule=False, by_id=True), iceberg=want)


def flat(table: Table) -> Table:
    """``table`` with its partition columns among its columns, as a rewrite moves its rows."""
    return replace(table, columns=table.all_columns, partition_columns=())


def inconvertible(want: Table, have: Table, moved: Evolution) -> list[Filled]:
    """The columns of ``want`` a rewrite of ``have`` (its rows moved as ``moved`` says) cannot fill: a cast Spark does
    not make (``sql.rewrite.convertible``)."""
    return [f for f in filling(want, have, {new: old for old, new in moved.renamed})
            if f.cast and f.old_type and not convertible(f.old_type, f.type)]


def column_values(old: Sequence[Column], new: Sequence[Column]) -> tuple[str, ...]:
    """Each difference between two column lists by name, as a plan shows a value: "type of a: x -> y"."""
    before, after = {c.name: c for c in old}, {c.name: c for c in new}
    values = [value_change(f"{what} of column {name}", getattr(before[name], what), getattr(column, what))
              for name, column in after.items() if name in before for what in ("type", "comment")
              if getattr(before[name], what) != getattr(column, what)]
    values += [f"column {name}: (none) -> {column.type}" for name, column in after.items() if name not in before]
    values += [f"column {name}: {column.type} -> (none)" for name, column in before.items() if name not in after]
    if [n for n in before if n in after] != [n for n in after if n in before]:
        values.append(f"order: {', '.join(before)} -> {', '.join(after)}")
    return tuple(values)


def rewritten_values(want: Table, have: Table, renamed: dict[str, str]) -> tuple[str, ...]:
    """What a rewrite's new definition changes of the columns (each renamed one under its new name), the comment
    and the properties, as a plan shows values."""
    properties = tuple(value_change(k, have.properties.get(k), want.properties.get(k))
                       for k in sorted(want.properties) if have.properties.get(k) != want.properties[k])
    comment = (value_change("comment", have.comment, want.comment),) if want.comment != have.comment else ()
    names = tuple(f"column {old}: renamed to {new}" for old, new in sorted(renamed.items()))
    columns = tuple(replace(c, name=renamed.get(c.name, c.name)) for c in have.all_columns)
    return names + column_values(columns, want.all_columns) + comment + properties
