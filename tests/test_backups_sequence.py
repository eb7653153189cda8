"""No row lost by a sequence of applies and restores, and backups dropped only when asked (``plan.backups``), through a
real Spark session and metastore: rewrite, write, restore, write, rewrite again, the rows of both tables counted at
each step, the plans' steps and notes asserted."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from schemaflow.apply.executor import apply_plan
from schemaflow.plan.backups import BackupDrops
from schemaflow.workflow import hash_migrations
from tests.inprocess import schemaflow
from tests.projects import plan, write_project

pytestmark = pytest.mark.spark

BEFORE = "columns: [{name: id, type: int}, {name: name, type: string}]"
AFTER = "columns: [{name: id, type: int}, {name: full_name, type: string}]"
MIGRATION = """\
description: the name is a full name
changes:
  - rename_column: {table: @DB@.ev, from: name, to: full_name}
  - rename_column: {table: @DB@.other, from: name, to: full_name}
"""


def project(root: Path, db: str, columns: str, migration: bool = False):
    files = {f"schemas/{db}/{name}.yaml": f"table: {db}.{name}\nusing: parquet\n{columns}\n"
             "partitioned_by: [{name: ds, type: string}]\n" for name in ("ev", "other")}
    if migration:
        files["migrations/0001_full_name.yaml"] = MIGRATION.replace("@DB@", db)
    written = write_project(root, files)
    if migration:
        hash_migrations(written)
    return written


def write(spark, key: str, column: str, ids: range) -> None:
    spark.sql(f"INSERT INTO {key} (id, {column}, ds) VALUES "
              + ", ".join(f"({i}, 'n{i}', 'd{i % 2}')" for i in ids))


def counts(spark, db: str) -> tuple[int, int]:
    """The rows of ``ev`` and of its backup."""
    return tuple(spark.sql(f"SELECT count(*) FROM {db}.{name}").collect()[0][0] for name in ("ev", "ev_backup_"))


def test_a_restore_then_a_rewrite_loses_no_row_and_allowing_a_rewrite_keeps_every_backup(tmp_path, spark, metastore,
                                                                                           fresh_db):
    db = fresh_db()
    (tmp_path / "schemaflow.yaml").write_text(f"databases: [{db}]\n")
    apply_plan(plan(project(tmp_path, db, BEFORE), metastore), metastore)
    write(spark, f"{db}.ev", "name", range(1, 5))
    write(spark, f"{db}.other", "name", range(1, 4))

    # 1. Rewrite both: each old table kept as its backup, every row copied.
    after = project(tmp_path, db, AFTER, migration=True)
    apply_plan(plan(after, metastore, allow_destructive=True), metastore)
    assert counts(spark, db) == (4, 4)
    # 2. Rows written to the rewritten table.
    write(spark, f"{db}.ev", "full_name", range(5, 7))
    assert counts(spark, db) == (6, 4)
    # 3. Restored: the rewritten table, with the 2 rows, is the backup now, marked by the restore's run.
    restored = schemaflow("--project", str(tmp_path), "restore", f"{db}.ev", "--auto-approve")
    assert restored.code == 0, restored.said
    assert f"a plan drops it only with --drop-backup-with-rows {db}.ev_backup_" in restored.out
    assert counts(spark, db) == (4, 6)
    run = metastore.read((db,)).get(f"{db}.ev_backup_").swapped_out_by
    assert run is not None and re.fullmatch("[0-9a-f]{12}", run)
    # 4. Rows written to the restored table.
    write(spark, f"{db}.ev", "name", range(7, 10))
    assert counts(spark, db) == (7, 6)

    # 5. The files still declare the rewrite. Allowed to rewrite, or to drop backups whose rows are elsewhere too, the
    # plan still keeps the swapped-out table: its drop is a step of its own, saying what would be lost, and blocked.
    lost = (f"the table {db}.ev was until the restore of run {run} swapped it out: rows written to {db}.ev while it "
            "had the name are in this table and in no other; they are lost, and its files deleted, with it")
    blocked = plan(after, metastore, allow_destructive=True)
    assert [(s.kind, s.object) for s in blocked.steps] == [("drop_table", f"{db}.ev_backup_"),
                                                           ("rewrite_table", f"{db}.ev")]
    drop, rewrite = blocked.steps
    assert drop.notes == (lost,) and drop.destructive
    assert drop.blocked == (f"a backup is dropped only when asked: it holds rows that are in no other table: plan with "
                            f"--drop-backup-with-rows {db}.ev_backup_ to drop it and lose them, or copy them into "
                            f"{db}.ev first")
    assert rewrite.blocked == (f"waits on step 1, the drop of {db}.ev_backup_: a rewrite keeps the table it replaces "
                               "under that name")
    # The backup of the other table's rewrite is kept too, and said so.
    assert f"{db}.other_backup_ keeps {db}.other as it was before its last rewrite, rows and files; plan with " \
           "--drop-backups to drop it" in blocked.warnings
    # Leave to drop the backups whose rows are all elsewhere drops the other table's, not this one.
    copies = plan(after, metastore, allow_destructive=True, drop_backups=BackupDrops(copies=True))
    assert [(s.object, s.blocked) for s in copies.steps] == [(f"{db}.ev_backup_", drop.blocked),
                                                             (f"{db}.other_backup_", None), (f"{db}.ev", rewrite.blocked)]
    assert counts(spark, db) == (7, 6)

    # 6. The operator copies the 2 rows back, then names the backup: it goes by its step, and the rewrite runs.
    spark.sql(f"INSERT INTO {db}.ev (id, name, ds) SELECT id, full_name, ds FROM {db}.ev_backup_ WHERE id IN (5, 6)")
    assert counts(spark, db) == (9, 6)
    named = plan(after, metastore, allow_destructive=True, drop_backups=BackupDrops(with_rows=(f"{db}.ev_backup_",)))
    assert [(s.kind, s.object, s.blocked) for s in named.steps] == [("drop_table", f"{db}.ev_backup_", None),
                                                                    ("rewrite_table", f"{db}.ev", None)]
    assert named.steps[0].notes == (lost,)
    apply_plan(named, metastore)
    assert counts(spark, db) == (9, 9)
    assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {db}.ev").collect()) == list(range(1, 10))
    live = metastore.read((db,))
    assert live.get(f"{db}.ev_backup_").swapped_out_by is None  # the table before this rewrite: its rows are in ev
    # The other table's backup outlived both plans that allowed rewrites.
    assert spark.sql(f"SELECT count(*) FROM {db}.other_backup_").collect()[0][0] == 3

    # 7. Nothing left to do: every backup kept, until a plan asked to drop them, each named with what goes.
    again = plan(after, metastore, allow_destructive=True)
    assert again.is_empty and sum("as it was before its last rewrite, rows and files" in w
                                  for w in again.warnings) == 2
    dropping = plan(after, metastore, drop_backups=BackupDrops(copies=True))
    assert [(s.summary, s.notes, s.blocked) for s in dropping.steps] == [
        (f"drop table {db}.{name}_backup_", (f"{db}.{name} as it was before its rewrite, which copied every row of it "
                                              f"into {db}.{name}: its rows and files are deleted with it",), None)
        for name in ("ev", "other")]
    apply_plan(dropping, metastore)
    assert spark.sql(f"SELECT count(*) FROM {db}.ev").collect()[0][0] == 9
    assert not metastore.msc.tableExists(db, "ev_backup_") and not metastore.msc.tableExists(db, "other_backup_")
