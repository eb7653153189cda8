"""Backups: the tables kept under ``<name>_backup_`` beside a table (``model.BACKUP_OF``), what each holds, and which a
plan drops.

What a backup holds is read from its marks, not assumed from its name:

- the Parquet table a conversion to Iceberg kept (external): its files are the Iceberg table's, only its entry goes;
- the table as it was before a rewrite: the rewrite copied every row of it into the table, verified;
- the table a restore swapped out (marked ``schemaflow.swapped_out_by`` with the restore's run, ``catalog.hive.rewrite``):
  it holds the rows written to the table while it had the name (since the cut-over of its rewrite, or since an
  earlier restore), and those are in no other table.

Dropping a backup is its own decision, never ``--allow-destructive``'s: a plan drops one only by a step that names
it, under leave given for backups (``BackupDrops``): ``--drop-backups`` for those whose rows are all in their table,
and for one that holds rows no other table holds, ``--drop-backup-with-rows`` naming it; its step says those rows are
lost. Every other backup is kept, with a warning saying what it holds and how to drop it. A rewrite keeps the table it
replaces under the backup's name: a backup there that the plan may not drop is shown as its drop step, blocked, and the
rewrite waits on it.

Backups live in the metastore alone: a plan between git refs (a pull request's) never sees one, so the leave is given to
a plan against the metastore, by its operator; a reviewed plan carries it, and apply refuses one that drops backups its
review did not show.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, assert_never

from schemaflow.errors import SchemaflowError
from schemaflow.model import Table
from schemaflow.plan.changes import Change, DropTable
from schemaflow.plan.iceberg import ConvertToIceberg, backup_name
from schemaflow.plan.kinds import StepKind
from schemaflow.plan.rewrite import RewriteTable
from schemaflow.plan.steps import Step


class Holds(StrEnum):
    """What a backup holds, from its marks."""

    CONVERTED = "converted"        # the Parquet table its table was converted to Iceberg from: files shared
    REPLACED = "replaced"          # its table as it was before a rewrite, which copied every row
    SWAPPED_OUT = "swapped out"    # the table a restore swapped out: rows written under the name are nowhere else

    @property
    def rows_elsewhere(self) -> bool:
        """Whether every row of such a backup is in its table too."""
        match self:
            case Holds.CONVERTED | Holds.REPLACED:
                return True
            case Holds.SWAPPED_OUT:
                return False
            case _:
                assert_never(self)


def holds(backup: Table) -> Holds:
    """What ``backup`` (a table marked as a backup) holds."""
    if backup.swapped_out_by:
        return Holds.SWAPPED_OUT
    return Holds.CONVERTED if backup.external else Holds.REPLACED


@dataclass(frozen=True)
class BackupDrops:
    """The leave a plan has to drop backups: each whose rows are all in its table too (``copies``), and those named in
    ``with_rows``, whatever they hold."""

    copies: bool = False
    with_rows: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "with_rows", tuple(sorted({k.lower() for k in self.with_rows})))

    def allows(self, backup: Table) -> bool:
        return backup.key in self.with_rows or (self.copies and holds(backup).rows_elsewhere)

    @property
    def given(self) -> bool:
        return self.copies or bool(self.with_rows)

    def to_data(self) -> dict[str, Any]:
        return {"copies": self.copies, "with_rows": list(self.with_rows)}

    @classmethod
    def from_data(cls, data: Mapping[str, Any] | None) -> BackupDrops:
        return cls(bool(data["copies"]), tuple(str(k) for k in data["with_rows"])) if data else cls()


NO_BACKUP_DROPS = BackupDrops()


@dataclass(frozen=True)
class DropBackup(DropTable):
    """The drop of a backup, named in its own step, saying what is lost with it; blocked unless ``allowed``. It needs
    no ``--allow-destructive``: its leave is its own (``BackupDrops``)."""

    allowed: bool = False

    def to_step(self) -> Step:
        step = super().to_step()
        return replace(step, notes=(_what_goes(self.table),),
                       blocked=None if self.allowed else f"a backup is dropped only when asked: {_how(self.table)}")


def _what_goes(backup: Table) -> str:
    of = backup.backup_of
    match holds(backup):
        case Holds.CONVERTED:
            return (f"the Parquet table {of} was converted from: its entry goes; its files are the Iceberg table's and "
                    "are kept")
        case Holds.REPLACED:
            return (f"{of} as it was before its rewrite, which copied every row of it into {of}: its rows and files are "
                    "deleted with it")
        case Holds.SWAPPED_OUT:
            return (f"the table {of} was until the restore of run {backup.swapped_out_by} swapped it out: rows written "
                    f"to {of} while it had the name are in this table and in no other; they are lost, and its files "
                    "deleted, with it")
        case _ as unreachable:
            assert_never(unreachable)


def _how(backup: Table) -> str:
    if holds(backup).rows_elsewhere:
        return "plan with --drop-backups to drop it"
    return (f"it holds rows that are in no other table: plan with --drop-backup-with-rows {backup.key} to drop it and "
            f"lose them, or copy them into {backup.backup_of} first")


def _kept(backup: Table) -> str:
    """The warning of a plan that keeps ``backup``."""
    match holds(backup):
        case Holds.CONVERTED:
            what = f"keeps the Parquet table {backup.backup_of} was converted from (its files are the Iceberg table's)"
        case Holds.REPLACED:
            what = f"keeps {backup.backup_of} as it was before its last rewrite, rows and files"
        case Holds.SWAPPED_OUT:
            what = (f"is the table {backup.backup_of} was until the restore of run {backup.swapped_out_by}: rows "
                    f"written to {backup.backup_of} while it had the name are in it and in no other table")
        case _ as unreachable:
            assert_never(unreachable)
    return f"{backup.key} {what}; {_how(backup)}"


def backup_drops(changes: list[Change], drops: BackupDrops) -> tuple[list[Change], tuple[str, ...], frozenset[str]]:
    """The changes with each drop of a backup the diff found made a ``DropBackup`` where ``drops`` allows it or a
    rewrite of its table needs its name (blocked then), else left out; a warning for each backup kept; and the tables
    whose rewrite waits on a backup's drop the plan may not run. A conversion in place that keeps no backup of its own
    (the one a rewrite kept stays) keeps it without a word: its step says so."""
    backups = sorted(c.key for c in changes if isinstance(c, DropTable) and c.table.backup_of)
    for named in drops.with_rows:
        if named not in backups:
            raise SchemaflowError(f"--drop-backup-with-rows {named}: no such backup (backups: "
                                  f"{', '.join(backups) or 'none'}); nothing was planned")
    converting = {c.key for c in changes if isinstance(c, ConvertToIceberg) and not c.keep}
    rewriting = {c.key for c in changes if isinstance(c, RewriteTable) and not c.resumed}
    kept: list[str] = []
    waiting: set[str] = set()
    out: list[Change] = []
    for change in changes:
        if not (isinstance(change, DropTable) and change.table.backup_of):
            out.append(change)
            continue
        backup, of = change.table, change.table.backup_of
        if of in converting:
            continue
        if drops.allows(backup) or of in rewriting:
            out.append(DropBackup(backup, change.record, allowed=drops.allows(backup)))
            if not drops.allows(backup):
                waiting.add(of)
        else:
            kept.append(_kept(backup))
    return out, tuple(kept), frozenset(waiting)


def waiting_on_backups(steps: Sequence[Step], waiting: frozenset[str]) -> list[Step]:
    """Each step of a table in ``waiting`` blocked as waiting on the blocked drop of its backup."""
    drops = {s.object: number for number, s in enumerate(steps, 1) if s.kind == StepKind.DROP_TABLE}
    return [replace(s, blocked=f"waits on step {drops[backup_name(s.object)]}, the drop of {backup_name(s.object)}: a "
                               "rewrite keeps the table it replaces under that name")
            if s.object in waiting and not s.blocked and backup_name(s.object) in drops else s for s in steps]
