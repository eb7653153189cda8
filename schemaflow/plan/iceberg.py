"""How an Iceberg table changes: by field id, in one commit to its own metadata.

Iceberg's readers find a column by its field id, not its name or place, so a column is added anywhere,
renamed, dropped or moved without a data file being rewritten, and what existing rows show does not
change (a renamed column keeps its values; a dropped one's stay in the files, unread). None of the
hazards of a Hive table's files (``plan.hazards``) applies. A type changes in place only as Iceberg
evolves it (``sql.iceberg_types.evolves``: a promotion, or fields added to a struct); a new partition spec or sort order applies to the data
written after it, and the files already written keep theirs (Iceberg plans queries over both).

Renames and drops still come from ``migrations/``: a diff cannot tell a rename from a drop and an add,
the same contract as a Hive table's. The metastore mirrors an Iceberg table's columns in its own
entry and applies its positional type rule to that mirror (``model.TYPE_RULE``), so a change that
moves or retypes columns against the rule is refused here, before apply would be.

A Parquet table declared ``format: iceberg`` is converted in place (``ConvertToIceberg``), as Iceberg's own
``migrate`` procedure converts one: its files are registered in a new Iceberg table of the same name, none
rewritten, and the Parquet table is kept under its backup name (``<name>_backup_``, Iceberg's own
convention) until a plan with ``--drop-backups`` drops its entry. The conversion changes no column:
the rows read back as before, so a change of columns or partitioning is a later step.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence

from schemaflow.model import CONVERTED_FOLDER, METADATA_LOCATION, Migration, PartitionField, SortTerm, Table
from schemaflow.plan.compatibility import incompatibilities
from schemaflow.plan.evolution import CommittedColumnChange, Evolution, ColumnListChange, Problem, evolve
from schemaflow.plan.kinds import ObjectType, StepKind
from schemaflow.plan.steps import IcebergCommit, Step
from schemaflow.sql.iceberg_types import evolves, iceberg_equivalent
from schemaflow.sql.storage import same_location
from schemaflow.wording import value_change

_UNREADABLE = "its Iceberg metadata file could not be read here: {}"  # why, and what to do
_RETYPE = ("Iceberg changes a column's type in place only from int to bigint, from float to double, by raising "
           "a decimal's precision at the same scale, or by adding fields to a struct (keeping each of its fields): "
           "add a column of the new type, fill it from the old one, and drop the old one with a migration "
           "(- drop_column: ...)")
_MIRROR = ("the metastore keeps a copy of an Iceberg table's columns and refuses this change to it position by "
           "position (hive.metastore.disallow.incompatible.col.type.changes); Iceberg's own documentation asks for "
           "that check to be off on a metastore holding Iceberg tables: set it to false in the metastore server's "
           "configuration, or change the columns so that each place keeps a compatible type")


@dataclass(frozen=True)
class AlterIcebergTable(CommittedColumnChange):
    """An Iceberg table's columns, partition spec, sort order and comment, changed in one Iceberg commit."""

    key: str
    evolution: Evolution
    want: Table
    have: Table
    object_type = ObjectType.TABLE

    def to_step(self) -> Step:
        want, have = self.want, self.have
        done = list(self.evolution.operations)
        if want.partition_spec != have.partition_spec:
            done.append(f"partition spec {_terms(have.partition_spec)} -> {_terms(want.partition_spec)}")
        if want.sort_order != have.sort_order:
            done.append(f"sort order {_terms(have.sort_order)} -> {_terms(want.sort_order)}")
        notes = ["by field id: Iceberg changes its metadata only; no data file is rewritten and existing rows read "
                 "as before"]
        if self.evolution.migrations:
            notes.append("applies migration " + ", ".join(self.evolution.migrations))
        if want.partition_spec != have.partition_spec or want.sort_order != have.sort_order:
            notes.append("data written from now on follows the new layout; files already written keep theirs")
        hazards = tuple(f"drop {name}: its values stay in the data files, and no reader sees them"
                        for name in self.evolution.dropped)
        values = tuple(value_change(f"comment of {name}", old, new) for name, old, new in self.evolution.comments)
        if want.comment != have.comment:
            done.append("change the table's comment")
            values += (value_change(f"comment on table {self.key}", have.comment, want.comment),)
        action = IcebergCommit(want, sources(self.evolution, want), have.iceberg)
        return Step(StepKind.ALTER_ICEBERG_TABLE, self.key, ObjectType.TABLE,
                    f"alter Iceberg table {self.key}: {'; '.join(done)}", (action,), notes=tuple(notes),
                    hazards=hazards, destructive=self.destructive, values=values)


def iceberg_change(want: Table, have: Table, migrations: Sequence[Migration],
                   type_rule: bool) -> AlterIcebergTable | tuple[Problem, ...] | None:
    """What turns the live Iceberg table ``have`` into ``want``: one commit, why it cannot be made, or None
    when nothing changes."""
    if have.iceberg is None and METADATA_LOCATION in have.properties:  # read live, without its metadata
        return (Problem("changing it", _UNREADABLE.format(
            have.unreadable or "no reason was kept; plan against the metastore, where it is read")),)
    evolution = evolve(have, want, migrations, type_rule=False, by_id=True)
    if evolution.problems:
        return evolution.problems
    problems = [Problem(f"changing the type of {column} from {old} to {new}", _RETYPE)
                for column, old, new in evolution.retyped if not evolves(old, new)]
    versions = have.properties.get("format-version", ""), want.properties.get("format-version", "")
    if versions[1] and versions[1] < versions[0]:
        problems.append(Problem(f"lowering format-version from {versions[0]} to {versions[1]}",
                                f"an Iceberg table's format version only goes up: declare format-version: '{versions[0]}'"))
    version = max(int(v) for v in versions if v) if any(versions) else 2
    if version == 1 and want.partition_spec != have.partition_spec:
        kept = [f for f in have.partition_spec if f in want.partition_spec]
        order = kept + [f for f in want.partition_spec if f not in have.partition_spec]
        if list(want.partition_spec) != order:
            problems.append(Problem(
                f"changing the partition spec of a format-version 1 table to {_terms(want.partition_spec)}",
                "format version 1 keeps each partition field in its place (a field removed turns void, one added "
                f"comes after): declare partitioned_by: [{', '.join(map(str, order))}], or declare "
                "format-version: '2' (the upgrade and the new spec land in one commit)"))
    if type_rule and not problems:
        problems += [Problem(i.describe(), _MIRROR) for i in incompatibilities(have.columns, want.columns)]
    if problems:
        return tuple(problems)
    if (evolution.kind == ColumnListChange.SAME and want.partition_spec == have.partition_spec and want.sort_order == have.sort_order
            and want.comment == have.comment):
        return None
    return AlterIcebergTable(want.key, evolution, want, have)


def sources(evolution: Evolution, want: Table) -> dict[str, str]:
    """Each declared column that keeps a live column's field id: the live column's name, by the column's name.
    A live column a migration dropped keeps none, even where its name is declared again: that is a new field."""
    renamed = dict(evolution.renamed)
    kept = {renamed.get(c.name, c.name): c.name for c in evolution.old if c.name not in evolution.dropped}
    names = {c.name for c in want.columns}
    return {new: old for new, old in sorted(kept.items()) if new in names}


@dataclass(frozen=True)
class ConvertToIceberg:
    """The Parquet table ``have`` made into the Iceberg table ``want``: its files registered, none rewritten,
    and ``have`` kept as ``backup`` (``have`` is that backup already when a stopped run renamed it)."""

    key: str
    want: Table
    have: Table
    keep: bool = True  # else the Parquet table's entry goes: an earlier rewrite's backup holds the table as it was
    object_type = ObjectType.TABLE
    destructive = False
    reshapes = False  # the same columns, the same rows: a view reads it as before

    @property
    def backup(self) -> str:
        return backup_name(self.key) if self.keep else staging_name(self.key)

    def to_step(self) -> Step:
        key, backup = self.key, self.backup
        resumed = self.have.key == backup
        keys = [c.name for c in self.have.partition_columns]
        notes = ["no data file is rewritten: Iceberg reads the Parquet files by column name (its name mapping), "
                 + (f"each with the values of its Hive partition ({', '.join(keys)}), " if keys else "")
                 + "and every row reads back as before",
                 f"{key} is made external, then renamed to {backup}: neither the rename nor a later drop moves or "
                 "deletes the files the Iceberg table reads" if not resumed else
                 f"finishes the conversion a stopped apply began: {backup} is the Parquet table, already renamed",
                 f"Iceberg's metadata and new data files go to {CONVERTED_FOLDER}/ in the table's folder "
                 f"(write.metadata.path, write.data.path), which readers of {backup} skip"]
        notes.append(f"{backup} is kept until a plan with --drop-backups drops its entry; its files stay. Until "
                     f"then, expire no snapshot of {key} after rewriting its files (Iceberg would delete the Parquet "
                     f"files {backup} reads)" if self.keep else
                     f"{backup}'s entry is dropped once the Iceberg table is registered (its files are the Iceberg "
                     f"table's): {backup_name(key)}, the table before its rewrite, is the backup kept")
        if self.have.bucketing:
            notes.append("Hive's bucketing is not carried over: Iceberg's is bucket(N, column) in partitioned_by")
        hazards = (f"readers of {key} (and of the views over it) need Iceberg's runtime from now on; a job that still "
                   f"writes Parquet files into its folders writes into {backup}, which the Iceberg table does not see",)
        action = IcebergCommit(self.want, create=True, backup=backup, keep=self.keep)
        kept = f"keep the Parquet table as {backup}" if self.keep else f"keep {backup_name(key)}, from its rewrite"
        return Step(StepKind.CONVERT_TO_ICEBERG, key, ObjectType.TABLE,
                    f"convert table {key} to Iceberg: register its Parquet files, {kept}", (action,), notes=tuple(notes),
                    hazards=hazards)


def staging_name(key: str) -> str:
    """Where a rewrite fills the new table before it takes the name (``plan.rewrite``), and where a conversion that
    keeps no backup of its own moves the Parquet table's entry meanwhile: ``<name>_rewrite_``."""
    return f"{key}_rewrite_"


def backup_name(key: str) -> str:
    """Where a converted Parquet table is kept: ``<name>_backup_``, as Iceberg's ``migrate`` names it."""
    return f"{key}_backup_"


def conversion(want: Table, have: Table, taken: bool, keep: bool = True) -> ConvertToIceberg | tuple[Problem, ...]:
    """The conversion of the table ``have`` into the Iceberg table ``want`` in place (its files registered), or why
    it cannot be made; ``taken``: whether another object has the backup's name; ``keep``: whether the conversion keeps
    the Parquet table as its backup (not when a rewrite's backup of the table holds that name)."""
    problems = []
    shape = [(c.name, iceberg_equivalent(c.type or "")) for c in have.all_columns]
    if [(c.name, c.type) for c in want.columns] != shape:
        problems.append(Problem(
            "converting to Iceberg with other columns",
            "a conversion keeps every column as the Parquet table reads it: declare the columns "
            f"{', '.join(f'{n} {t}' for n, t in shape)} (data columns, then partition columns; a tinyint or smallint "
            "is an int in Iceberg, a char or varchar a string), convert, then change them in a later change"))
    identity = tuple(PartitionField("identity", c.name) for c in have.partition_columns)
    if want.partition_spec != identity:
        keys = f"partitioned_by: [{', '.join(map(str, identity))}]" if identity else "no partitioned_by"
        problems.append(Problem(
            f"converting to Iceberg partitioned by {_terms(want.partition_spec)}",
            f"a conversion keeps the Hive partitions: declare {keys}, convert, then change the partition spec in a "
            "later change (Iceberg evolves it without rewriting)"))
    if want.location is not None and not same_location(want.location, have.location):
        problems.append(Problem(
            f"converting to Iceberg at {want.location!r}",
            "a conversion leaves the Parquet files where they are, and the Iceberg table takes the Parquet table's "
            "folder: declare no location (or the external table's own), convert, then copy the table elsewhere if "
            "it is to move"))
    if taken:
        problems.append(Problem(f"converting to Iceberg while {backup_name(have.key)} exists",
                                f"the Parquet table is kept as {backup_name(have.key)}: drop or rename that one first"))
    return tuple(problems) if problems else ConvertToIceberg(want.key, want, have, keep)


def _terms(terms: Sequence[PartitionField | SortTerm]) -> str:
    return f"({', '.join(map(str, terms))})" if terms else "(none)"
