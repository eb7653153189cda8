"""A migration naming several tables is recorded on each, whatever their kinds (issue 57 item 3, issue 62 item 2), with
no JVM: for every pair of kinds in one migration file, what apply runs (recorded by the executor) writes the record
of the migration in the very write that changes each table's columns; and a table an earlier apply left without the
record, its change in place, takes it from the table that holds it rather than blocking every plan."""
from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemaflow.apply.executor import RecordingTarget, apply_plan
from schemaflow.model import (MIGRATION_PREFIX, AcceptLoss, Catalog, Column, DropColumn, IcebergState, Migration,
                              MigrationChange, PartitionsMode, Partitions, RenameColumn, ReorderColumns, Table)
from schemaflow.plan.migration_records import in_place
from schemaflow.catalog.hive.registrable import unregistrable
from schemaflow.plan.plan import LiveFiles, Plan, PlanBuilder
from schemaflow.plan.steps import IcebergCommit, RewriteRows, SetColumns, SetParameters, Step

STATE = IcebergState("uuid-1", 0, 0, 0, 2, "file:/lake/db/ice/metadata/00001-a.metadata.json")
COLUMNS = (Column("id", "int"), Column("a", "string"))
RENAMED = (Column("id", "int"), Column("b", "string"))

# Each kind: the live table, the declared one, and what the migration does to it (a rename of a to b, but for the
# table converted to Iceberg, which a conversion keeps as it reads: its values a conversion may make NULL).
KINDS: dict[str, tuple[Table, Table, MigrationChange]] = {
    "hive in place": (Table("db", "hive", COLUMNS, format="textfile", version="v0"),
                      Table("db", "hive", RENAMED, format="textfile"), RenameColumn("db.hive", "a", "b")),
    "hive by a rewrite": (Table("db", "hive_rw", COLUMNS, format="parquet", version="v1"),
                          Table("db", "hive_rw", RENAMED, format="parquet", rewrite_hiding=True),
                          RenameColumn("db.hive_rw", "a", "b")),
    "csv by a rewrite": (Table("db", "csv", COLUMNS, format="csv", data_source=True, version="v2"),
                         Table("db", "csv", RENAMED, format="csv", data_source=True), RenameColumn("db.csv", "a", "b")),
    "parquet by a rewrite": (Table("db", "pq", COLUMNS, format="parquet", data_source=True, version="v3"),
                             Table("db", "pq", RENAMED, format="parquet", data_source=True),
                             DropColumn("db.pq", "a")),
    "iceberg": (Table("db", "ice", COLUMNS, format="iceberg", data_source=True, iceberg=STATE, version="v4"),
                Table("db", "ice", RENAMED, format="iceberg", data_source=True), RenameColumn("db.ice", "a", "b")),
    "converted to iceberg": (Table("db", "conv", COLUMNS, format="parquet", data_source=True, version="v5"),
                             Table("db", "conv", COLUMNS, format="iceberg", data_source=True),
                             AcceptLoss("db.conv", "a")),
}
# The parquet table's declared columns: a dropped.
KINDS["parquet by a rewrite"] = (KINDS["parquet by a rewrite"][0],
                                 replace(KINDS["parquet by a rewrite"][1], columns=COLUMNS[:1]),
                                 KINDS["parquet by a rewrite"][2])
# The write that changes each kind's table, and so records the migration: (kind of step, action).
CHANGED_BY = {"hive in place": ("alter_columns", SetColumns), "hive by a rewrite": ("rewrite_table", RewriteRows),
              "csv by a rewrite": ("rewrite_table", RewriteRows), "parquet by a rewrite": ("rewrite_table", RewriteRows),
              "iceberg": ("alter_iceberg_table", IcebergCommit),
              "converted to iceberg": ("convert_to_iceberg", IcebergCommit)}


def _plan(kinds: tuple[str, ...], live: dict[str, Table] | None = None) -> tuple[Plan, Migration]:
    migration = Migration("0007_both", "", tuple(KINDS[k][2] for k in kinds), checksum="c7")
    desired = Catalog(("db",), {KINDS[k][1].key: KINDS[k][1] for k in kinds}, migrations=(migration,))
    have = live or {KINDS[k][0].key: KINDS[k][0] for k in kinds}
    return PlanBuilder(desired, Catalog(("db",), have), allow_destructive=True, type_rule=False,
                       commit="abc123").build(), migration


def _records(action: object) -> dict[str, str]:
    """The migration records a write sets, by migration id."""
    written = {SetColumns: "parameters", RewriteRows: "records", IcebergCommit: "set", SetParameters: "set"}
    values = getattr(action, written[type(action)]) if type(action) in written else {}
    return {k[len(MIGRATION_PREFIX):]: v for k, v in values.items() if k.startswith(MIGRATION_PREFIX)}


@pytest.mark.parametrize("pair", list(itertools.combinations(KINDS, 2)), ids=" + ".join)
def test_a_migration_naming_two_tables_of_any_kinds_is_recorded_on_each_in_the_write_that_changes_it(pair):
    plan, migration = _plan(pair)
    assert not plan.blocked and not plan.warnings
    steps = {s.object: s for s in plan.steps}
    assert sorted(steps) == sorted(KINDS[k][1].key for k in pair)
    recorded = RecordingTarget()
    apply_plan(plan, recorded)
    for kind in pair:
        key = KINDS[kind][1].key
        step_kind, action_kind = CHANGED_BY[kind]
        assert steps[key].kind == step_kind
        # What the executor runs for the table: the write that changes it carries the record, and only that one.
        writes = [a for a in recorded.actions if getattr(a, "object", None) == key]
        [change] = [a for a in writes if isinstance(a, action_kind)]
        assert json.loads(_records(change)["0007_both"]) | {"at": None} == {
            "at": None, "checksum": "c7", "commit": "abc123"}
        assert [a for a in writes if _records(a)] == [change]


def test_a_rewrites_records_are_in_its_cut_over_and_come_back_from_plan_json():
    plan, _ = _plan(("csv by a rewrite", "hive in place"))
    [rows] = [a for a in plan.steps[0].body if isinstance(a, RewriteRows)]
    assert set(rows.records) == {MIGRATION_PREFIX + "0007_both"}
    assert rows.describe().endswith(f"then db.csv_rewrite_ to db.csv, set {MIGRATION_PREFIX}0007_both="
                                    + repr(rows.records[MIGRATION_PREFIX + "0007_both"]))
    assert Plan.from_data(json.loads(plan.to_json())) == plan
    # A rewrite makes a new entry: it records every migration naming the table, those recorded before too.
    earlier = Migration("0001_old", "", (DropColumn("db.csv", "gone"),))
    live = replace(KINDS["csv by a rewrite"][0], migrations={"0001_old": '{"at": "2026-01-01T00:00:00Z"}'})
    desired = Catalog(("db",), {live.key: KINDS["csv by a rewrite"][1]},
                      migrations=(earlier, Migration("0007_both", "", (KINDS["csv by a rewrite"][2],))))
    [step] = PlanBuilder(desired, Catalog(("db",), {live.key: live}), allow_destructive=True).build().steps
    [rows] = step.body
    assert isinstance(rows, RewriteRows) and set(_records(rows)) == {"0001_old", "0007_both"}


@pytest.mark.parametrize("kind", ["iceberg", "csv by a rewrite", "hive in place"])
def test_a_table_an_earlier_apply_changed_without_recording_the_migration_takes_the_record_another_holds(kind):
    """As schemaflow left them before: the migration applied to both tables, recorded on the Hive one alone."""
    other = "hive by a rewrite" if kind == "hive in place" else "hive in place"
    _, migration = _plan((other, kind))
    record = json.dumps({"at": "2026-11-30T10:00:00Z", "checksum": "c7", "commit": "abc000"}, sort_keys=True)
    holder = replace(KINDS[other][1], version="v9", migrations={"0007_both": record})
    if holder.rewrite_hiding:
        holder = replace(holder, rewrite_hiding=False)
    unrecorded = replace(KINDS[kind][1], version="v8", iceberg=STATE if kind == "iceberg" else None)
    plan, _ = _plan((other, kind), {holder.key: holder, unrecorded.key: unrecorded})
    [step] = plan.steps
    assert step.object == unrecorded.key and not step.blocked
    assert step.summary == f"record migration 0007_both on {unrecorded.key}"
    assert plan.warnings == (f"{unrecorded.key}: migration 0007_both is in place on it but not recorded (an earlier "
                             "apply recorded it on another table only): this plan records it, and replays nothing of it",)
    # Without a table that holds its record, the migration is the team's to fix, as before.
    alone, _ = _plan((kind,), {unrecorded.key: unrecorded})
    if isinstance(KINDS[kind][2], RenameColumn):
        assert [s.blocked for s in alone.steps] == [f"migration 0007_both (rename a to b): {unrecorded.key} already has "
                                                    "a column b is not supported in place: its columns are id, b; fix the "
                                                    "migration"]


def test_a_migration_recorded_elsewhere_but_not_in_place_on_a_table_is_replayed_there():
    """A plan of some objects applied it to one table alone: the other still has its old columns, and is changed."""
    record = json.dumps({"at": "2026-11-30T10:00:00Z", "checksum": "c7", "commit": "abc000"}, sort_keys=True)
    holder = replace(KINDS["hive in place"][1], version="v9", migrations={"0007_both": record})
    plan, _ = _plan(("hive in place", "iceberg"), {holder.key: holder, "db.ice": KINDS["iceberg"][0]})
    [step] = plan.steps
    assert step.kind == "alter_iceberg_table" and step.summary.startswith("alter Iceberg table db.ice: rename a to b")
    assert not plan.warnings


@pytest.mark.parametrize(("changes", "names", "shown"), [
    ((RenameColumn("t", "a", "b"),), ["id", "b"], True),
    ((RenameColumn("t", "a", "b"),), ["id", "a"], False),
    ((RenameColumn("t", "a", "b"),), ["a", "b"], False),
    ((RenameColumn("t", "a", "b"), RenameColumn("t", "b", "c")), ["id", "c"], True),
    ((RenameColumn("t", "a", "b"), RenameColumn("t", "b", "c")), ["id", "b"], False),
    ((DropColumn("t", "a"),), ["id"], True),
    ((DropColumn("t", "a"),), ["id", "a"], False),
    ((ReorderColumns("t", ("b", "id")), RenameColumn("t", "a", "b")), ["b", "id"], True),
    ((ReorderColumns("t", ("b", "id")),), ["id", "b"], False),
    ((DropColumn("t", "x"), ReorderColumns("t", ("b", "id"))), ["b", "id"], True),
    ((AcceptLoss("t", "a"), PartitionsMode("t", Partitions.CASCADE)), ["a"], False),
    ((), ["a"], False),
])
def test_a_migration_is_in_place_on_a_table_whose_columns_show_each_of_its_changes_made(changes, names, shown):
    assert in_place(changes, names) is shown


def test_the_records_a_step_carries_are_the_steps_own():
    """Each step records the migration on its own object: never a step of one table the record of another."""
    plan, _ = _plan(tuple(KINDS))
    assert not plan.blocked
    for step in plan.steps:
        objects = {getattr(a, "object", step.object) for a in step.actions if _records(a)}
        assert objects == {step.object}, _describe(step)


def _describe(step: Step) -> str:
    return "\n".join(a.describe() for a in step.actions)


def test_a_parquet_table_renamed_in_place_converts_to_iceberg_by_copying_since_its_files_hold_the_old_name(tmp_path):
    """Issue 57, item 6: a rename applied in place leaves the old name in the files, which Iceberg cannot register
    (pyiceberg: "PyArrow table contains more columns"); the plan reads it in the footers and copies the rows, as
    Spark reads them (NULL under the new name), rather than fail at apply and plan the same step again."""
    old, new = tmp_path / "000000_0", tmp_path / "000001_0"
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "a": ["one"], "c": ["x"]}), old)
    columns = {"id", "a1", "c"}
    assert unregistrable([str(tmp_path)], columns, False) == (
        f"{old} holds a, which the table no longer has (renamed or dropped since the file was written), and Iceberg "
        "registers a file only with columns of the table (1 footer read)")
    # Files written since the rename hold the table's columns, and a file may lack a column added since: registrable.
    old.unlink()
    pq.write_table(pa.table({"id": pa.array([2], pa.int32()), "a1": ["two"]}), new)
    assert unregistrable([str(tmp_path)], columns, False) is None

    pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "a": ["one"], "c": ["x"]}), old)
    live = Table("db", "hp", (Column("id", "int"), Column("a1", "string"), Column("c", "string")), format="parquet",
                 version="v1", location=f"file:{tmp_path}")
    want = replace(live, format="iceberg", data_source=True, version=None, location=None)
    files = LiveFiles(lambda key: None, 2, lambda table: unregistrable([str(tmp_path)], {c.name for c in table.all_columns},
                                                                        table.data_source))
    [step] = PlanBuilder(Catalog(("db",), {want.key: want}), Catalog(("db",), {live.key: live}), allow_destructive=True,
                         files=files).build().steps
    assert step.kind == "rewrite_table" and step.summary.startswith(
        f"rewrite table db.hp: convert to Iceberg by copying: {old} holds a, which the table no longer has")
