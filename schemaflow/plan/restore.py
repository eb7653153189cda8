"""Restoring a table from the backup its rewrite kept: the backup swapped back in under the table's name, no row
copied, and the table as the rewrite left it kept as the new backup (``schemaflow restore``).

A restore is the operator's way back when a rewrite turns out wrong: it takes seconds whatever the table holds,
and what readers see is the table exactly as it was, rows written to the rewritten table since excepted (they stay
in the new backup, and the plan says so). Reverting the change in git instead rewrites the table back from the
rewritten one, a copy that keeps those rows. The project's files are not the restore's to change: until they
declare the table as it was, the next plan rewrites it again.

The swap is three guarded renames (``catalog.hive.rewrite.restore``): the backup to ``<name>_restore_``, marked as
becoming the table, the table to the backup's name, then the marked one to the table's name. A run stopped
between them left its marks; the next restore of the table finishes the swap, and a plan until then blocks the
table's steps on it.
"""
from __future__ import annotations

from schemaflow.claims import settled
from schemaflow.errors import SchemaflowError
from schemaflow.model import NO_VERSION, VERSION_KEY, Catalog, Table, split_key, state_digest
from schemaflow.plan.diff import column_values
from schemaflow.plan.iceberg import backup_name
from schemaflow.plan.kinds import ObjectType, StepKind
from schemaflow.plan.plan import HIVE, Plan
from schemaflow.plan.rewrite import restore_name
from schemaflow.plan.steps import RestoreBackup, SetParameters, Step
from schemaflow.sql.table_kinds import ColumnChanges, table_kind

def restore_plan(live: Catalog, key: str, *, metastore: str | None = None, target: str | None = None,
                 commit: str | None = None, catalog: str = HIVE) -> Plan:
    """The one-step plan that swaps the backup of ``key`` back in (see the module docstring), or finishes the swap
    a stopped run began, made against ``metastore`` (of the backend ``catalog``) for ``target`` from ``commit``; a ``SchemaflowError`` saying why
    when there is no such backup."""
    table, backup, temporary = live.get(key), live.get(backup_name(key)), live.get(restore_name(key))
    resumed = isinstance(temporary, Table) and temporary.rewrite_of == key
    restored = temporary if resumed else backup
    if not isinstance(restored, Table) or not (resumed or restored.backup_of == key and isinstance(table, Table)):
        raise SchemaflowError(f"{key} has no backup to restore: a rewrite keeps the table it replaced as "
                              f"{backup_name(key)} until a plan with --drop-backups drops it, and there is no "
                              "such table marked as its backup. Nothing was restored")
    if restored.external:
        raise SchemaflowError(f"{backup_name(key)} is the Parquet table {key} was converted to Iceberg from: its files "
                              "are the Iceberg table's now, and schemaflow restores only what a rewrite kept. Nothing "
                              "was restored")
    kind = table_kind(table.format, table.data_source) if isinstance(table, Table) else None
    if kind is not None and kind.column_changes is ColumnChanges.ICEBERG and not resumed:
        raise SchemaflowError(f"{key} is an Iceberg table now, converted by copying: its files are in the folder "
                              f"{backup_name(key)}'s would move back to. Rename {key} (its files stay where they are), "
                              "then restore. Nothing was restored")
    current = table if isinstance(table, Table) else None
    notes = [f"swaps the names, no row copied: {backup_name(key)} becomes {key} again, as it was before its rewrite, "
             f"and {key} as it is now becomes {backup_name(key)}, marked as swapped out by this run: it holds the rows "
             f"written to {key} since its rewrite, so a plan drops it only with --drop-backup-with-rows "
             f"{backup_name(key)}",
             "readers see the restored table from the last of three renames; the name is missing only between the "
             "last two",
             f"a restore changes no file of the project: unless the change that rewrote {key} is reverted in git, the "
             "next plan rewrites it again"]
    if resumed:
        notes.insert(0, f"finishes the restore a stopped run began: {restore_name(key)} is the backup being restored")
    hazards = (f"rows written to {key} since its rewrite are not in the restored table: they stay in "
               f"{backup_name(key)}",) if current else ()
    values = column_values(current.all_columns, restored.all_columns) if current else ()
    # A backup without a version (the table was adopted) gives it none back: NO_VERSION, since the stamp is guarded
    # by the claim and the metastore refuses a guarded write that unsets the key it guards.
    stamp = SetParameters(key, {VERSION_KEY: settled(restored.version) or NO_VERSION})
    action = RestoreBackup(key, backup_name(key), restore_name(key), restored.version)
    step = Step(StepKind.RESTORE_TABLE, key, ObjectType.TABLE, f"restore table {key} from {backup_name(key)}: the table as it "
                "was before its rewrite", (action,), notes=tuple(notes), hazards=hazards, destructive=True,
                values=values, stamp=stamp)
    guards = {key: current.version} if current else {}
    return Plan(steps=(step,), databases=(split_key(key)[0],), allow_destructive=True, guards=guards,
                fingerprints={key: state_digest(current)} if current else {}, metastore=metastore, target=target,
                commit=commit, catalog=catalog)
