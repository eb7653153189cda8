"""A Parquet table converted to Iceberg in place (issue 29, item 5) on a real metastore (embedded Derby in the test
JVM): rows written by Spark read back identical through pyiceberg (Arrow), partition by partition; the Parquet
table kept, external and readable, as the backup until a plan allowed to drop it does; views read the Iceberg
table under the same name; and a conversion stopped after the rename finished by the next apply."""
from __future__ import annotations

import os
from collections import defaultdict
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

from schemaflow.apply.executor import ApplyError, apply_plan
from schemaflow.catalog.hive.registrable import unregistrable
from schemaflow.errors import SchemaflowError
from schemaflow.catalog.hive import iceberg_convert
from schemaflow.catalog.iceberg_metadata import read_metadata
from schemaflow.model import Table, View
from schemaflow.plan.backups import BackupDrops
from schemaflow.plan.rewrite import REWRITE_BLOCK
from tests.projects import plan, plan_and_apply, write_project

pytestmark = pytest.mark.spark


def _hive(db: str) -> dict[str, str]:
    return {f"schemas/{db}/orders.yaml": f"""
        table: {db}.orders
        format: parquet
        columns:
          - {{name: id, type: bigint, comment: Order id}}
          - {{name: amount, type: 'decimal(10,2)'}}
          - {{name: note, type: string}}
        partitioned_by:
          - {{name: dt, type: date}}
        """, f"schemas/{db}/paid.yaml": f"""
        view: {db}.paid
        sql: SELECT id, amount, dt FROM {db}.orders WHERE amount > 0
        """}


def _iceberg(db: str) -> dict[str, str]:
    """The same table declared as Iceberg: its partition column a column, partitioned by its identity."""
    files = _hive(db)
    files[f"schemas/{db}/orders.yaml"] = files[f"schemas/{db}/orders.yaml"].replace(
        "format: parquet", "format: iceberg\n        properties: {format-version: '2'}").replace(
        "partitioned_by:\n          - {name: dt, type: date}", "  - {name: dt, type: date}\n        partitioned_by: [dt]")
    return files


def _table(db: str, name: str, storage: str, *columns: str) -> dict[str, str]:
    """The file of an unpartitioned table: its storage line, and each column as ``name type``."""
    listed = "".join(f"\n  - {{name: {c.split()[0]}, type: {c.split()[1]}}}" for c in columns)
    return {f"schemas/{db}/{name}.yaml": f"table: {db}.{name}\n{storage}\ncolumns:{listed}\n"}


def _by_partition(rows: list[dict]) -> dict[object, list[tuple]]:
    found: dict[object, list[tuple]] = defaultdict(list)
    for row in rows:
        found[row["dt"]].append((row["id"], row["amount"], row["note"]))
    return {dt: sorted(values) for dt, values in found.items()}


def _iceberg_rows(metastore, db: str, name: str) -> list[dict]:
    location = metastore.msc.getTable(db, name).getParameters().get("metadata_location")
    return StaticTable.from_metadata(location).scan().to_arrow().to_pylist()


def _spark_rows(spark, key: str) -> list[dict]:
    return [row.asDict() for row in spark.sql(f"SELECT id, amount, note, dt FROM {key}").collect()]


def test_a_partitioned_parquet_table_converts_in_place_its_rows_identical_partition_by_partition(
        tmp_path, spark, metastore, fresh_db):
    db = fresh_db()
    key = f"{db}.orders"
    plan_and_apply(write_project(tmp_path, _hive(db)), metastore)
    spark.sql("SET hive.exec.dynamic.partition.mode=nonstrict")
    for day, rows in (("2024-01-01", "(1, 10.50, 'a'), (2, -3.00, NULL)"), ("2024-01-02", "(3, 7.25, 'c')"),
                      ("2024-01-03", "(4, 0.01, 'd'), (5, 99.99, 'e')")):
        spark.sql(f"INSERT INTO {key} PARTITION (dt='{day}') VALUES {rows}")
    spark.sql(f"INSERT INTO {key} PARTITION (dt) SELECT 6, 1.00, 'no day', CAST(NULL AS DATE)")  # Hive's null partition
    before = _by_partition(_spark_rows(spark, key))
    assert len(before) == 4 and None in before
    location = metastore.msc.getTable(db, "orders").getSd().getLocation()

    project = write_project(tmp_path, _iceberg(db))
    converting = plan(project, metastore)
    [step] = converting.steps
    assert step.kind == "convert_to_iceberg" and not step.blocked and not step.destructive
    apply_plan(converting, metastore)

    live = metastore.read((db,))
    converted, backup = live.get(key), live.get(f"{key}_backup_")
    assert isinstance(converted, Table) and converted.format == "iceberg" and converted.iceberg is not None
    assert [(c.name, c.type, c.comment) for c in converted.columns] == [
        ("id", "bigint", "Order id"), ("amount", "decimal(10,2)", None), ("note", "string", None), ("dt", "date", None)]
    assert [str(f) for f in converted.partition_spec] == ["dt"]
    assert isinstance(backup, Table) and backup.format == "parquet" and backup.external
    assert backup.backup_of == key and backup.location == location
    # Rows read back through pyiceberg as Spark read them from the Parquet table: dt comes from each file's partition.
    assert _by_partition(_iceberg_rows(metastore, db, "orders")) == before
    assert Decimal("10.50") in {row[1] for row in before[next(d for d in before if d and d.day == 1)]}
    # The backup is the Parquet table as it was, readable: Iceberg's files went to _iceberg/, which Spark skips.
    assert _by_partition(_spark_rows(spark, f"{key}_backup_")) == before
    metadata = read_metadata(metastore.msc.getTable(db, "orders").getParameters().get("metadata_location"))
    assert metadata["location"] == location
    assert metadata["properties"]["write.metadata.path"] == f"{location}/_iceberg/metadata"
    assert metadata["properties"]["write.data.path"] == f"{location}/_iceberg/data"
    assert "schema.name-mapping.default" in metadata["properties"]
    parquet = sorted(os.path.join(folder, file) for folder, _, files in os.walk(location.removeprefix("file:"))
                     if "_iceberg" not in folder for file in files if not file.startswith((".", "_")))
    [snapshot] = metadata["snapshots"]
    assert int(snapshot["summary"]["added-data-files"]) == len(parquet) >= 4
    assert int(snapshot["summary"]["added-records"]) == 6
    # The view reads the table by its name, now the Iceberg table's, unchanged; the next plan has nothing to do.
    view = live.get(f"{db}.paid")
    assert isinstance(view, View) and f"{db}.orders" in view.sql
    again = plan(project, metastore)
    assert again.is_empty and again.warnings == (
        f"{key}_backup_ keeps the Parquet table {key} was converted from (its files are the Iceberg table's); plan "
        "with --drop-backups to drop it",)

    # Dropped when asked: its entry goes, its files stay, and the Iceberg table reads them still.
    dropping = plan(project, metastore, drop_backups=BackupDrops(copies=True))
    apply_plan(dropping, metastore)
    assert [s.summary for s in dropping.steps] == [f"drop table {key}_backup_"]
    assert not metastore.msc.tableExists(db, "orders_backup_")
    assert all(os.path.exists(path) for path in parquet)
    assert _by_partition(_iceberg_rows(metastore, db, "orders")) == before
    assert plan(project, metastore, allow_destructive=True).is_empty


def test_a_conversion_stopped_after_the_rename_is_finished_by_the_next_apply(tmp_path, spark, metastore, fresh_db,
                                                                              monkeypatch):
    db = fresh_db()
    key = f"{db}.events"
    files = _table(db, "events", "using: parquet", "id bigint", "kind string")
    plan_and_apply(write_project(tmp_path, files), metastore)
    spark.sql(f"INSERT INTO {key} VALUES (1, 'open'), (2, 'close')")
    spark.sql(f"INSERT INTO {key} VALUES (3, 'open')")
    before = sorted(tuple(r) for r in spark.sql(f"SELECT id, kind FROM {key}").collect())
    files[f"schemas/{db}/events.yaml"] = files[f"schemas/{db}/events.yaml"].replace("using: parquet", "format: iceberg")
    project = write_project(tmp_path, files)

    def stop(*args, **kwargs):
        raise RuntimeError("the apply stopped here")
    with monkeypatch.context() as patched:
        patched.setattr(iceberg_convert, "register", stop)
        with pytest.raises(ApplyError):
            apply_plan(plan(project, metastore), metastore)
    assert not metastore.msc.tableExists(db, "events")  # renamed, not registered
    backup = metastore.read((db,)).get(f"{key}_backup_")
    assert isinstance(backup, Table) and backup.backup_of == key and backup.external

    finishing = plan(project, metastore)
    [step] = finishing.steps
    assert step.kind == "convert_to_iceberg" and step.notes[1] == (
        f"finishes the conversion a stopped apply began: {key}_backup_ is the Parquet table, already renamed")
    apply_plan(finishing, metastore)
    assert sorted((r["id"], r["kind"]) for r in _iceberg_rows(metastore, db, "events")) == before
    assert sorted(tuple(r) for r in spark.sql(f"SELECT id, kind FROM {key}_backup_").collect()) == before
    assert plan(project, metastore).is_empty


def test_tables_iceberg_cannot_register_are_converted_by_copying_their_rows_all_in_one_plan(
        tmp_path, spark, metastore, fresh_db):
    db = fresh_db()
    files = {**_table(db, "visits", "format: parquet", "id smallint", "at timestamp"),
             **_table(db, "managers", "format: parquet", "id int", "s_manager string"),
             **{path: text.replace("format: parquet", "format: orc") for path, text in _hive(db).items()}}
    plan_and_apply(write_project(tmp_path, files), metastore)
    spark.sql(f"INSERT INTO {db}.visits VALUES (1, TIMESTAMP '2024-01-01 10:00:00'), (2, NULL)")  # INT96, by default
    # A file as Hive writes one from DDL that spells a column with capitals (hive-testbench's S_manager).
    managers = metastore.msc.getTable(db, "managers").getSd().getLocation().removeprefix("file:")
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "S_manager": ["ann"]}), f"{managers}/000000_0")
    for day, rows in (("2024-01-01", "(1, 10.50, 'a'), (2, -3.00, NULL)"), ("2024-01-02", "(3, 7.25, 'c')")):
        spark.sql(f"INSERT INTO {db}.orders PARTITION (dt='{day}') VALUES {rows}")
    before = {name: sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {db}.{name}").collect())
              for name in ("visits", "managers", "orders")}
    assert before["managers"] == [(1, "ann")]
    # Iceberg has no smallint: the column is an int there, as Iceberg reads it.
    files.update({path: text.replace("smallint", "int") for path, text in _iceberg(db).items()})
    for name in ("visits", "managers"):
        files[f"schemas/{db}/{name}.yaml"] = files[f"schemas/{db}/{name}.yaml"].replace(
            "format: parquet", "format: iceberg").replace("smallint", "int")
    project = write_project(tmp_path, files)

    # Every table Iceberg cannot register as it is: a rewrite each, said why in one plan, gated as rewrites are.
    refused = plan(project, metastore)
    blocked = {s.object: s for s in refused.steps if s.blocked}
    assert sorted(blocked) == [f"{db}.managers", f"{db}.orders", f"{db}.visits"]
    assert all(s.kind == "rewrite_table" and s.blocked == REWRITE_BLOCK for s in blocked.values())
    location = metastore.msc.getTable(db, "visits").getSd().getLocation()
    assert blocked[f"{db}.visits"].summary.startswith(
        f"rewrite table {db}.visits: convert to Iceberg by copying: {location}/")
    assert ("holds timestamps as INT96 (at), as Hive writes a Parquet table's timestamps, and Spark by default "
            "(spark.sql.parquet.outputTimestampType)") in blocked[f"{db}.visits"].summary
    assert blocked[f"{db}.managers"].summary == (
        f"rewrite table {db}.managers: convert to Iceberg by copying: file:{managers}/000000_0 spells S_manager with "
        "capitals, and Iceberg registers a file's columns only by the table's names (s_manager) (1 footer read)")
    assert blocked[f"{db}.orders"].summary == (
        f"rewrite table {db}.orders: convert to Iceberg by copying: Iceberg registers Parquet files only, and the "
        "table is STORED AS orc")
    with pytest.raises(SchemaflowError, match="nothing was applied"):
        apply_plan(refused, metastore)
    assert metastore.msc.getTable(db, "visits").getTableType() == "MANAGED_TABLE"

    apply_plan(plan(project, metastore, allow_destructive=True), metastore)
    live = metastore.read((db,))
    for name in ("visits", "managers", "orders"):
        converted, backup = live.get(f"{db}.{name}"), live.get(f"{db}.{name}_backup_")
        assert isinstance(converted, Table) and converted.format == "iceberg" and converted.iceberg is not None
        assert isinstance(backup, Table) and backup.backup_of == f"{db}.{name}" and backup.format != "iceberg"
        assert f"{db}.{name}_rewrite_" not in live.objects
        # The table as it was, rows and files, under the backup's name.
        assert sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {db}.{name}_backup_").collect()) == before[name]
    assert sorted((r["id"], r["at"].replace(tzinfo=None) if r["at"] else None)
                  for r in _iceberg_rows(metastore, db, "visits")) == before["visits"]
    assert [(r["id"], r["s_manager"]) for r in _iceberg_rows(metastore, db, "managers")] == before["managers"]
    assert _by_partition(_iceberg_rows(metastore, db, "orders")) == _by_partition(
        [{"id": i, "amount": a, "note": n, "dt": d} for i, a, n, d in before["orders"]])
    # The files Iceberg registered are the copy's, in the table's own folder: Parquet, no INT96, lower-case names.
    metadata = read_metadata(metastore.msc.getTable(db, "orders").getParameters().get("metadata_location"))
    orders = metadata["location"]
    assert orders.endswith(f"/{db}.db/orders") and metadata["properties"]["write.metadata.path"] == (
        f"{orders}/_iceberg/metadata")
    assert unregistrable([metastore.msc.getTable(db, "visits").getSd().getLocation()], {"id", "at"}, False) is None
    view = live.get(f"{db}.paid")
    assert isinstance(view, View) and f"{db}.orders" in view.sql
    again = plan(project, metastore)
    assert again.is_empty and len(again.warnings) == 3


@pytest.mark.parametrize("stop_at", ["convert", "register", "drop"])
def test_a_conversion_by_copying_stopped_after_its_cut_over_is_finished_by_the_next_apply(
        tmp_path, spark, metastore, fresh_db, monkeypatch, stop_at):
    db = fresh_db()
    key = f"{db}.orders"
    files = {path: text.replace("format: parquet", "format: orc") for path, text in _hive(db).items()}
    plan_and_apply(write_project(tmp_path, files), metastore)
    spark.sql(f"INSERT INTO {key} PARTITION (dt='2024-01-01') VALUES (1, 10.50, 'a'), (2, -3.00, NULL)")
    before = _by_partition(_spark_rows(spark, key))
    project = write_project(tmp_path, _iceberg(db))

    register = iceberg_convert.register

    def stop(*args, **kwargs):
        if stop_at == "drop":  # the Iceberg table registered, the copy's entry not dropped yet
            register(*args, **kwargs)
        raise RuntimeError("the apply stopped here")
    with monkeypatch.context() as patched:
        patched.setattr(iceberg_convert, "register" if stop_at == "drop" else stop_at, stop)
        with pytest.raises(ApplyError):
            apply_plan(plan(project, metastore, allow_destructive=True), metastore)
    live = metastore.read((db,))
    assert live.get(f"{key}_backup_").format == "orc"
    # Stopped before the conversion: the copy holds the name; during it: its entry waits under the staging name.
    waiting = live.get(key) if stop_at == "convert" else live.get(f"{key}_rewrite_")
    assert isinstance(waiting, Table) and waiting.format == "parquet" and waiting.data_source
    assert (key in live.objects) == (stop_at != "register")

    # Without --allow-destructive: finishing a conversion by dropping the copy's entry loses nothing.
    finishing = plan(project, metastore, allow_destructive=stop_at != "drop")
    [step] = finishing.steps
    assert step.kind == {"convert": "convert_to_iceberg", "register": "rewrite_table", "drop": "drop_table"}[stop_at]
    if stop_at == "drop":
        assert (step.summary, step.destructive, step.blocked) == (f"drop table {key}_rewrite_", False, None)
        assert step.notes == (f"finishes the conversion of {key} to Iceberg that a stopped apply began: the copy's "
                              "entry goes; its files are the Iceberg table's and are kept",)
    apply_plan(finishing, metastore)
    assert _by_partition(_iceberg_rows(metastore, db, "orders")) == before
    assert not metastore.msc.tableExists(db, "orders_rewrite_")
    assert plan(project, metastore).is_empty


def test_a_conversion_reviewed_from_the_pull_request_is_what_apply_runs(tmp_path, spark, metastore, fresh_db,
                                                                          monkeypatch):
    from tests.gitrepos import commit, init_repo
    from tests.inprocess import schemaflow

    db = fresh_db()
    key = f"{db}.events"
    repo = init_repo(tmp_path)
    (tmp_path / "schemaflow.yaml").write_text(f"databases: [{db}]\n")
    files = _table(db, "events", "using: parquet", "id bigint", "kind string")
    write_project(tmp_path, files)
    commit(repo, "the Parquet table")
    monkeypatch.chdir(tmp_path)
    assert schemaflow("apply", "--auto-approve").code == 0
    spark.sql(f"INSERT INTO {key} VALUES (1, 'open'), (2, 'close')")
    write_project(tmp_path, {path: text.replace("using: parquet", "format: iceberg") for path, text in files.items()})
    commit(repo, "to Iceberg")
    # The plan a reviewer reads on the pull request, made from the two commits alone, then the apply after merge.
    reviewed = schemaflow("plan", "--base", "HEAD~1", "--head", "HEAD", "--out", "reviewed.json")
    assert reviewed.code == 2 and f"convert table {key} to Iceberg" in reviewed.out, reviewed.said
    applied = schemaflow("apply", "--reviewed", "reviewed.json", "--auto-approve")
    assert applied.code == 0, applied.said
    assert sorted((r["id"], r["kind"]) for r in _iceberg_rows(metastore, db, "events")) == [(1, "open"), (2, "close")]
