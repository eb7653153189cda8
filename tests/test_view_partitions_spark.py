"""View partitions on a real metastore: added without a location, listed back, kept across a
re-creation, derived from a base table only once complete; and comments that survive the DDL."""
from __future__ import annotations

from pathlib import Path

import pytest

from schemaflow.apply.executor import apply_plan
from schemaflow.cli import main
from schemaflow.catalog.live import Live
from schemaflow.workflow import view_partitions_plan
from tests.projects import plan, plan_and_apply, write_project

pytestmark = pytest.mark.spark
ODD = "it's `odd`; DROP TABLE x; -- \\ \"q\" a/b=c%d"  # also what Hive escapes in partition names


def yaml_quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def base_table(db: str) -> str:
    return (f"table: {db}.orders\ncolumns: [{{name: id, type: bigint}}]\n"
            "partitioned_by: [{name: ds, type: string}, {name: hr, type: string}]\n")


def view_file(db: str, partitions: str, sql: str = "SELECT id, ds FROM orders") -> str:
    return f"view: {db}.daily\npartitioned_on: [ds]\npartitions: {partitions}\nsql: {sql}\n"


def metastore_partitions(metastore, key: str) -> list[tuple[list[str], object]]:
    """Each partition's values and storage descriptor, as the metastore holds them."""
    database, name = key.split(".")
    return sorted(([str(v) for v in p.getValues()], p.getSd()) for p in metastore.msc.listPartitions(database, name, -1))


def test_listed_view_partitions_are_added_without_a_location_and_kept_across_a_replace(
        tmp_path: Path, metastore, spark, fresh_db):
    db = fresh_db()
    files = {f"schemas/{db}/orders.yaml": base_table(db),
             f"schemas/{db}/daily.yaml": view_file(db, f"[{{ds: '2024-01-01'}}, {{ds: {yaml_quoted(ODD)}}}]")}
    project = write_project(tmp_path, files)
    applied = plan_and_apply(project, metastore)
    assert [s.kind for s in applied.steps][-2:] == ["create_view", "view_partitions"]
    assert metastore_partitions(metastore, f"{db}.daily") == [(["2024-01-01"], None), ([ODD], None)]
    assert metastore.partition_values(f"{db}.daily") == (("2024-01-01",), (ODD,))
    assert spark.sql(f"SELECT * FROM {db}.daily").columns == ["id", "ds"]
    assert plan(project, metastore).is_empty

    # A new SQL re-creates the view, which drops its partitions: they come back, one more is added.
    files[f"schemas/{db}/daily.yaml"] = view_file(
        db, f"[{{ds: '2024-01-01'}}, {{ds: '2024-01-02'}}, {{ds: {yaml_quoted(ODD)}}}]",
        sql="SELECT id, ds FROM orders WHERE id > 0")
    project = write_project(tmp_path, files)
    replaced = plan_and_apply(project, metastore)
    assert [(s.kind, s.summary) for s in replaced.steps] == [
        ("replace_view", f"re-create view {db}.daily: SQL changed"),
        ("view_partitions", f"partitions of view {db}.daily: add 3")]
    assert replaced.steps[1].notes[0] == "re-adds 2 partitions that still fit: Spark's CREATE OR REPLACE VIEW drops them all"
    assert metastore.partition_values(f"{db}.daily") == (("2024-01-01",), ("2024-01-02",), (ODD,))
    assert all(sd is None for _, sd in metastore_partitions(metastore, f"{db}.daily"))
    view = metastore.msc.getTable(db, "daily")
    assert [c.getName() for c in view.getPartitionKeys()] == ["ds"]
    assert spark.sql(f"SELECT * FROM {db}.daily").columns == ["id", "ds"]
    assert plan(project, metastore).is_empty

    # Removed from the list: dropped, and only that.
    files[f"schemas/{db}/daily.yaml"] = view_file(db, "[{ds: '2024-01-02'}]", sql="SELECT id, ds FROM orders WHERE id > 0")
    project = write_project(tmp_path, files)
    dropped = plan_and_apply(project, metastore)
    assert [s.summary for s in dropped.steps] == [f"partitions of view {db}.daily: drop 2"]
    assert metastore.partition_values(f"{db}.daily") == (("2024-01-02",),)


def test_derived_view_partitions_appear_only_once_every_declared_hour_is_loaded(tmp_path: Path, metastore, spark, fresh_db):
    db = fresh_db()
    project = write_project(tmp_path, {
        f"schemas/{db}/orders.yaml": base_table(db),
        f"schemas/{db}/daily.yaml": view_file(db, f"{{derive_from: {db}.orders, complete_when: {{hr: ['00', '01']}}}}"),
    })
    plan_and_apply(project, metastore)
    live = Live(project, connected=metastore)

    def load(ds: str, hr: str) -> None:
        spark.sql(f"ALTER TABLE {db}.orders ADD PARTITION (ds='{ds}', hr='{hr}')")

    def sync() -> list[str]:
        synced, left_out = view_partitions_plan(project, live)
        assert left_out == ()
        apply_plan(synced, metastore)
        return [s.summary for s in synced.steps]

    load("2024-01-01", "00")
    load("2024-01-02", "00")
    assert sync() == []
    assert metastore.partition_values(f"{db}.daily") == ()
    load("2024-01-01", "01")
    assert sync() == [f"partitions of view {db}.daily: add 1"]
    assert metastore.partition_values(f"{db}.daily") == (("2024-01-01",),)
    load("2024-01-02", "01")
    load("2024-01-03", "01")
    assert sync() == [f"partitions of view {db}.daily: add 1"]
    assert metastore.partition_values(f"{db}.daily") == (("2024-01-01",), ("2024-01-02",))
    # A base partition goes away: the day is no longer complete, its view partition goes too.
    spark.sql(f"ALTER TABLE {db}.orders DROP PARTITION (ds='2024-01-01', hr='00')")
    assert sync() == [f"partitions of view {db}.daily: drop 1"]
    assert metastore.partition_values(f"{db}.daily") == (("2024-01-02",),)
    assert all(sd is None for _, sd in metastore_partitions(metastore, f"{db}.daily"))
    assert plan(project, metastore).is_empty


def test_changed_comments_with_quotes_backquotes_semicolons_and_backslashes_round_trip(tmp_path: Path, metastore, fresh_db):
    db = fresh_db()
    files = {f"schemas/{db}/t.yaml": f"table: {db}.t\ncomment: plain\ncolumns: [{{name: a, type: int, comment: plain}}]\n"}
    project = write_project(tmp_path, files)
    plan_and_apply(project, metastore)
    files[f"schemas/{db}/t.yaml"] = (f"table: {db}.t\ncomment: {yaml_quoted(ODD)}\n"
                                     f"columns: [{{name: a, type: int, comment: {yaml_quoted(ODD)}}}]\n")
    project = write_project(tmp_path, files)
    changed = plan_and_apply(project, metastore)
    assert [s.kind for s in changed.steps] == ["alter_columns", "set_table_comment"]
    live = metastore.read((db,)).get(f"{db}.t")
    assert (live.comment, live.columns[0].comment) == (ODD, ODD)
    assert plan(project, metastore).is_empty


def test_view_partitions_sync_command_shows_then_applies_only_view_partitions(tmp_path: Path, metastore, spark,
                                                                              fresh_db, capsys):
    db = fresh_db()
    files = {f"schemas/{db}/orders.yaml": base_table(db),
             f"schemas/{db}/daily.yaml": view_file(db, f"{{derive_from: {db}.orders}}")}
    project = write_project(tmp_path, files)
    plan_and_apply(project, metastore)
    spark.sql(f"ALTER TABLE {db}.orders ADD PARTITION (ds='2024-01-01', hr='00')")
    sync = ["--project", str(tmp_path), "view-partitions", "sync"]
    capsys.readouterr()

    assert main([*sync, "--dry-run"]) == 2
    shown = capsys.readouterr().out
    assert f"1. partitions of view {db}.daily: add 1" in shown
    assert f"-- metastore {db}.daily: add 1 partition (ds=2024-01-01)" in shown
    assert metastore.partition_values(f"{db}.daily") == ()

    assert main([*sync, "--auto-approve"]) == 0
    out = capsys.readouterr().out
    assert f"[1/1] partitions of view {db}.daily: add 1 ... \n      added 1 of 1 partition; done (" in out
    assert out.endswith("Synced the partitions of 1 view.\n")
    assert metastore.partition_values(f"{db}.daily") == (("2024-01-01",),)
    assert main([*sync, "--dry-run"]) == 0
    # apply syncs them too, and says what a long step did on a line of its own, "done" after it.
    spark.sql(f"ALTER TABLE {db}.orders ADD PARTITION (ds='2024-01-03', hr='00')")
    assert main(["--project", str(tmp_path), "apply", "--auto-approve"]) == 0
    out = capsys.readouterr().out
    assert f"[1/1] partitions of view {db}.daily: add 1 ... \n      added 1 of 1 partition; done (" in out
    assert out.endswith("\nApplied 1 step.\n")

    # A view that apply must change first is left to apply, and so are other objects' changes.
    files[f"schemas/{db}/daily.yaml"] = view_file(db, f"{{derive_from: {db}.orders}}", sql="SELECT id, ds FROM orders WHERE id > 1")
    files[f"schemas/{db}/orders.yaml"] = base_table(db).replace("table:", "comment: changed\ntable:")
    write_project(tmp_path, files)
    spark.sql(f"ALTER TABLE {db}.orders ADD PARTITION (ds='2024-01-02', hr='00')")
    capsys.readouterr()
    assert main([*sync, "--auto-approve"]) == 0
    captured = capsys.readouterr()
    assert f"skipped {db}.daily: the view itself changes; schemaflow apply syncs its partitions" in captured.err
    assert captured.out.startswith("No changes")
    assert metastore.partition_values(f"{db}.daily") == (("2024-01-01",), ("2024-01-03",))
    assert metastore.read((db,)).get(f"{db}.orders").comment is None


def test_partitions_added_outside_the_view_file_survive_a_replace(tmp_path: Path, metastore, spark, fresh_db):
    db = fresh_db()
    files = {f"schemas/{db}/orders.yaml": base_table(db),
             f"schemas/{db}/daily.yaml": f"view: {db}.daily\ncomment: one\npartitioned_on: [ds]\nsql: SELECT id, ds FROM orders\n"}
    project = write_project(tmp_path, files)
    plan_and_apply(project, metastore)
    metastore.change_view_partitions(f"{db}.daily", ["ds"], [("2024-01-01",), ("2024-01-02",)], [])
    assert plan(project, metastore).is_empty  # no partitions: in the file, those found are kept as they are

    files[f"schemas/{db}/daily.yaml"] = files[f"schemas/{db}/daily.yaml"].replace("comment: one", "comment: two")
    project = write_project(tmp_path, files)
    replaced = plan_and_apply(project, metastore)
    assert [s.summary for s in replaced.steps] == [f"re-create view {db}.daily: comment changed",
                                                   f"partitions of view {db}.daily: add 2"]
    assert metastore.partition_values(f"{db}.daily") == (("2024-01-01",), ("2024-01-02",))
    assert metastore.read((db,)).get(f"{db}.daily").comment == "two"
    assert plan(project, metastore).is_empty


def test_partitions_re_added_after_a_re_create_keep_their_parameters_and_times(tmp_path: Path, metastore, spark,
                                                                              fresh_db):
    db = fresh_db()
    files = {f"schemas/{db}/orders.yaml": base_table(db),
             f"schemas/{db}/daily.yaml": f"view: {db}.daily\ncomment: one\nsql: SELECT id, ds FROM orders\n"}
    plan_and_apply(write_project(tmp_path, files), metastore)
    # Re-created partitioned: there are no partitions yet to keep.
    files[f"schemas/{db}/daily.yaml"] = files[f"schemas/{db}/daily.yaml"].replace("comment: one\n",
                                                                                  "comment: one\npartitioned_on: [ds]\n")
    plan_and_apply(write_project(tmp_path, files), metastore)
    metastore.change_view_partitions(f"{db}.daily", ["ds"], [("2024-01-01",), (ODD,)], [])
    jvm = spark._jvm
    for number, values in enumerate((["2024-01-01"], [ODD]), 1):  # as Hive users and tools annotate them
        partition = metastore.msc.getPartition(db, "daily", jvm.java.util.ArrayList(values))
        partition.getParameters().put("loaded_by", f"job {number}")
        partition.setCreateTime(1_700_000_000 + number)
        partition.setLastAccessTime(1_700_000_100 + number)
        metastore.msc.alter_partition(db, "daily", partition)

    files[f"schemas/{db}/daily.yaml"] = files[f"schemas/{db}/daily.yaml"].replace("comment: one", "comment: two")
    project = write_project(tmp_path, files)
    replaced = plan_and_apply(project, metastore)
    assert [s.summary for s in replaced.steps] == [f"re-create view {db}.daily: comment changed",
                                                   f"partitions of view {db}.daily: add 2"]
    kept = sorted((list(p.getValues()), p.getParameters().get("loaded_by"), p.getCreateTime(), p.getLastAccessTime())
                  for p in metastore.msc.listPartitions(db, "daily", -1))
    assert kept == sorted([(["2024-01-01"], "job 1", 1_700_000_001, 1_700_000_101),
                           ([ODD], "job 2", 1_700_000_002, 1_700_000_102)])
    assert plan(project, metastore).is_empty


def test_a_view_re_created_on_other_partition_columns_loses_its_partitions_only_when_allowed(
        tmp_path: Path, metastore, spark, fresh_db):
    db = fresh_db()
    files = {f"schemas/{db}/orders.yaml": base_table(db),
             f"schemas/{db}/daily.yaml": view_file(db, "[{ds: '2024-01-01'}, {ds: '2024-01-02'}]")}
    plan_and_apply(write_project(tmp_path, files), metastore)
    files[f"schemas/{db}/daily.yaml"] = f"view: {db}.daily\npartitioned_on: [id]\nsql: SELECT ds, id FROM orders\n"
    project = write_project(tmp_path, files)

    refused = plan(project, metastore)  # Hive itself refuses such a replacement (error 10217)
    [step] = refused.steps
    assert step.destructive and step.blocked == "destructive: run with --allow-destructive to allow it"
    assert "the re-created view loses ds=2024-01-01, ds=2024-01-02" in " ".join(step.notes)
    assert metastore.partition_values(f"{db}.daily") == (("2024-01-01",), ("2024-01-02",))

    allowed = plan(project, metastore, allow_destructive=True)
    apply_plan(allowed, metastore)
    assert metastore.partition_values(f"{db}.daily") == ()
    assert spark.sql(f"SELECT * FROM {db}.daily").columns == ["ds", "id"]
    assert plan(project, metastore).is_empty
