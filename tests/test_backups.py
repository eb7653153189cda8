"""Which backups a plan drops and what it says of each (``plan.backups``), from live catalogs built in Python."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from schemaflow.catalog.snapshot import write_snapshot
from schemaflow.cli import main
from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog, Column, Migration, RenameColumn, Table
from schemaflow.plan.backups import BackupDrops, Holds, holds
from schemaflow.plan.plan import Plan, PlanBuilder
from schemaflow.plan.restore import restore_plan
from schemaflow.project import load_project
from schemaflow.workflow import applied_state, desired_state

LIVE = Table("f", "ev", (Column("id", "int"), Column("name", "string")), (Column("ds", "string"),), data_source=True,
             version="v1")
WANT = replace(LIVE, columns=(Column("id", "int"), Column("full_name", "string")), version=None)
RENAME = Migration("0001_full_name", "", (RenameColumn("f.ev", "name", "full_name"),))
REPLACED = replace(LIVE, name="ev_backup_", backup_of="f.ev")
SWAPPED = replace(WANT, name="ev_backup_", backup_of="f.ev", swapped_out_by="3f2a9c1d0b7e", version="v2")
# The Parquet tables conversions to Iceberg in place kept, beside their Iceberg tables.
CONVERTED = tuple(Table("f", f"t{n}_backup_", (Column("id", "int"),), external=True, location=f"file:/lake/t{n}",
                        backup_of=f"f.t{n}", version=f"c{n}") for n in range(3))
ICEBERG = tuple(Table("f", f"t{n}", (Column("id", "int"),), format="iceberg", data_source=True) for n in range(3))

NONE = BackupDrops()
LOST = ("the table f.ev was until the restore of run 3f2a9c1d0b7e swapped it out: rows written to f.ev while it had "
        "the name are in this table and in no other; they are lost, and its files deleted, with it")
SWAPPED_BLOCK = ("a backup is dropped only when asked: it holds rows that are in no other table: plan with "
                 "--drop-backup-with-rows f.ev_backup_ to drop it and lose them, or copy them into f.ev first")
COPIES_BLOCK = "a backup is dropped only when asked: plan with --drop-backups to drop it"


def plan(want: Table, *live: Table, allow: bool = False, drops: BackupDrops = NONE) -> Plan:
    desired = Catalog(("f",), {t.key: t for t in (want, *ICEBERG)}, migrations=(RENAME,) if want == WANT and LIVE in live else ())
    return PlanBuilder(desired, Catalog(("f",), {t.key: t for t in (*live, *ICEBERG, *CONVERTED)}),
                       allow_destructive=allow, drop_backups=drops).build()


def test_what_a_backup_holds_is_read_from_its_marks():
    assert [holds(t) for t in (REPLACED, SWAPPED, CONVERTED[0])] == [Holds.REPLACED, Holds.SWAPPED_OUT,
                                                                     Holds.CONVERTED]
    assert [h.rows_elsewhere for h in Holds] == [True, True, False]


def test_allowing_destructive_steps_keeps_every_backup_saying_what_each_holds():
    for allow in (False, True):
        kept = plan(LIVE, LIVE, REPLACED, allow=allow)
        assert kept.steps == ()
        assert kept.warnings == (
            "f.ev_backup_ keeps f.ev as it was before its last rewrite, rows and files; plan with --drop-backups to "
            "drop it",
            *(f"f.t{n}_backup_ keeps the Parquet table f.t{n} was converted from (its files are the Iceberg table's); "
              "plan with --drop-backups to drop it"
              for n in range(3)))
    swapped = plan(WANT, WANT, SWAPPED, allow=True, drops=BackupDrops(copies=True))
    assert [s.object for s in swapped.steps] == [f"f.t{n}_backup_" for n in range(3)]
    assert swapped.warnings[0] == ("f.ev_backup_ is the table f.ev was until the restore of run 3f2a9c1d0b7e: rows "
                                   "written to f.ev while it had the name are in it and in no other table; "
                                   f"{SWAPPED_BLOCK.removeprefix('a backup is dropped only when asked: ')}")


def test_leave_to_drop_backups_drops_those_whose_rows_are_elsewhere_each_by_a_step_that_names_it():
    dropping = plan(LIVE, LIVE, REPLACED, drops=BackupDrops(copies=True))  # no --allow-destructive needed
    assert [(s.summary, s.notes, s.blocked, s.destructive) for s in dropping.steps] == [
        ("drop table f.ev_backup_", ("f.ev as it was before its rewrite, which copied every row of it into f.ev: its "
                                     "rows and files are deleted with it",), None, True),
        *((f"drop table f.t{n}_backup_", (f"the Parquet table f.t{n} was converted from: its entry goes; its files are "
                                          "the Iceberg table's and are kept",), None, True) for n in range(3))]
    assert dropping.warnings == ()
    # The table a restore swapped out goes only by its name, and its step says the rows are lost.
    [named] = plan(WANT, WANT, SWAPPED, drops=BackupDrops(with_rows=("F.EV_BACKUP_",))).steps
    assert (named.summary, named.notes, named.blocked) == ("drop table f.ev_backup_", (LOST,), None)


def test_a_rewrite_waits_on_the_drop_of_the_backup_in_its_way_until_the_plan_may_drop_it():
    blocked = plan(WANT, LIVE, SWAPPED, allow=True, drops=BackupDrops(copies=True))
    assert [(s.kind, s.object, s.blocked) for s in blocked.steps[:1] + blocked.steps[-1:]] == [
        ("drop_table", "f.ev_backup_", SWAPPED_BLOCK),
        ("rewrite_table", "f.ev", "waits on step 1, the drop of f.ev_backup_: a rewrite keeps the table it replaces "
                                  "under that name")]
    assert blocked.steps[0].notes == (LOST,)
    [drop, rewrite] = plan(WANT, LIVE, REPLACED, allow=True).steps
    assert drop.blocked == COPIES_BLOCK and rewrite.blocked.startswith("waits on step 1")
    for drops in (BackupDrops(copies=True), BackupDrops(with_rows=("f.ev_backup_",))):
        steps = plan(WANT, LIVE, REPLACED if drops.copies else SWAPPED, allow=True, drops=drops).steps
        assert [(s.kind, s.object, s.blocked) for s in steps if s.object.startswith("f.ev")] == [
            ("drop_table", "f.ev_backup_", None), ("rewrite_table", "f.ev", None)]
    # Not allowed to rewrite, the rewrite is blocked for that, whatever the backup's drop.
    assert plan(WANT, LIVE, REPLACED, drops=BackupDrops(copies=True)).steps[-1].blocked.startswith("a rewrite copies")


def test_a_backup_named_that_is_not_one_is_refused_saying_which_are():
    with pytest.raises(SchemaflowError, match=r"^--drop-backup-with-rows f.nope_backup_: no such backup \(backups: "
                                              r"f.ev_backup_, f.t0_backup_, f.t1_backup_, f.t2_backup_\); nothing was "
                                              "planned$"):
        plan(WANT, WANT, SWAPPED, drops=BackupDrops(with_rows=("f.nope_backup_",)))


def test_the_leave_is_saved_with_the_plan_and_absent_from_plans_given_none():
    given = plan(WANT, WANT, SWAPPED, drops=BackupDrops(copies=True, with_rows=("f.ev_backup_",)))
    data = json.loads(given.to_json())
    assert data["drop_backups"] == {"copies": True, "with_rows": ["f.ev_backup_"]}
    assert Plan.from_data(data) == given
    none = json.loads(plan(WANT, WANT, SWAPPED).to_json())
    assert "drop_backups" not in none and Plan.from_data(none).drop_backups == BackupDrops()


def test_a_restore_says_the_table_it_swaps_out_is_dropped_only_by_name():
    [step] = restore_plan(Catalog(("f",), {t.key: t for t in (WANT, REPLACED)}), "f.ev").steps
    assert step.notes[0].endswith("and f.ev as it is now becomes f.ev_backup_, marked as swapped out by this run: it "
                                  "holds the rows written to f.ev since its rewrite, so a plan drops it only with "
                                  "--drop-backup-with-rows f.ev_backup_")


def test_the_command_line_gives_the_leave_to_plans_and_a_saved_plan_runs_with_the_leave_it_was_made_with(
        example, tmp_path, capsys):
    live = applied_state(desired_state(load_project(example, env={})))
    orders, customers = live.get("retail.orders"), live.get("retail.customers")
    backups = (replace(orders, name="orders_backup_", backup_of="retail.orders", swapped_out_by="3f2a9c1d0b7e"),
               replace(customers, name="customers_backup_", backup_of="retail.customers"))
    snapshot = tmp_path / "live.json"
    write_snapshot(replace(live, objects={**live.objects, **{b.key: b for b in backups}}), snapshot)
    project = ["--project", str(example)]

    assert main([*project, "plan", "--against", str(snapshot), "--allow-destructive"]) == 0  # kept: nothing to do
    assert "retail.orders_backup_ is the table retail.orders was until the restore of run 3f2a9c1d0b7e" in (
        capsys.readouterr().out)
    saved = tmp_path / "plan.json"
    assert main([*project, "plan", "--against", str(snapshot), "--drop-backups", "--out", str(saved)]) == 2
    said = capsys.readouterr().out
    assert "drop table retail.customers_backup_" in said and "drop table retail.orders_backup_" not in said
    assert json.loads(saved.read_text())["drop_backups"] == {"copies": True, "with_rows": []}
    # A saved plan runs as it was made: other leave is refused before anything is read or started.
    assert main([*project, "apply", str(saved), "--drop-backup-with-rows", "retail.orders_backup_",
                 "--auto-approve"]) == 1
    err = capsys.readouterr().err
    assert f"{saved} was planned with other leave to drop backups than given now" in err
    assert "Starting Spark" not in err
    assert main([*project, "plan", "--against", str(snapshot), "--drop-backup-with-rows", "retail.orders"]) == 1
    assert ("--drop-backup-with-rows retail.orders: no such backup (backups: retail.customers_backup_, "
            "retail.orders_backup_); nothing was planned") in capsys.readouterr().err
