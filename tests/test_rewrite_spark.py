"""Table rewrites through a real SparkSession and metastore: rows copied, verified, swapped in, read back.

Each change a table cannot take in place is made on a table with rows in several partitions; the rows are read
back from the new table and from the backup it leaves, the metastore entry is what the files declare, and the
next plan has nothing to do. A lossy conversion stops with the table untouched; a run stopped between the two
renames of the cut-over is finished by the next apply.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest

from schemaflow.apply.executor import ApplyError, apply_plan
from schemaflow.catalog.hive import rewrite, rewrite_copy
from schemaflow.catalog.history import read_history
from schemaflow.plan.backups import BackupDrops
from schemaflow.plan.steps import RewriteRows
from schemaflow.wording import size
from schemaflow.workflow import hash_migrations
from tests.inprocess import schemaflow
from tests.projects import plan, write_project

pytestmark = pytest.mark.spark

ROWS = [(1, "ann", "9.50", "2024-01-01", "eu"), (2, "bob", "12.00", "2024-01-01", "us"),
        (3, "cy", None, "2024-01-02", "eu"), (4, None, "7.25", "2024-01-03", "us")]
DB = "@DB@"  # the database's name, in the files below
COLUMNS = "[{name: id, type: int}, {name: name, type: string}, {name: amount, type: string}, {name: region, type: string}]"


def table(db: str, name: str, storage: str = "using: parquet", columns: str = COLUMNS,
          partitioned: str = "[{name: ds, type: string}]") -> str:
    return f"table: {db}.{name}\n{storage}\ncolumns: {columns}\npartitioned_by: {partitioned}\n"


def fill(spark, key: str) -> None:
    values = ", ".join(f"({i}, {_text(n)}, {_text(a)}, {_text(r)}, '{d}')" for i, n, a, d, r in ROWS)
    spark.sql(f"INSERT INTO {key} (id, name, amount, region, ds) VALUES {values}")


def _text(value: str | None) -> str:
    return "NULL" if value is None else f"'{value}'"


def rows(spark, query: str) -> list[tuple]:
    return sorted((tuple(r) for r in spark.sql(query).collect()), key=repr)


BEFORE = {
    "renamed": table(DB, "renamed"),
    "dropped": table(DB, "dropped"),
    "widened": table(DB, "widened"),
    "reordered": table(DB, "reordered"),
    "unpartitioned": table(DB, "unpartitioned"),
    "to_orc": table(DB, "to_orc"),
    "hive_to_orc": table(DB, "hive_to_orc", "format: parquet"),
    "rebucketed": table(DB, "rebucketed", "using: parquet\nbuckets: {clustered_by: [id], count: 4}"),
}
AFTER = {
    "renamed": table(DB, "renamed", columns="[{name: id, type: int}, {name: full_name, type: string}, "
                                                "{name: amount, type: string}, {name: region, type: string}]"),
    "dropped": table(DB, "dropped", columns="[{name: id, type: int}, {name: name, type: string}, "
                                                "{name: region, type: string}]"),
    "widened": table(DB, "widened", columns="[{name: id, type: bigint}, {name: name, type: string}, "
                                                "{name: amount, type: 'decimal(10,2)'}, {name: region, type: string}]"),
    "reordered": table(DB, "reordered", columns="[{name: region, type: string}, {name: id, type: int}, "
                                                    "{name: name, type: string}, {name: amount, type: string}]"),
    "unpartitioned": table(DB, "unpartitioned", partitioned="[]",
                           columns=COLUMNS[:-1] + ", {name: ds, type: string}]"),
    "to_orc": table(DB, "to_orc", "using: orc"),
    "hive_to_orc": table(DB, "hive_to_orc", "format: orc",
                         partitioned="[{name: region, type: string}, {name: ds, type: string}]",
                         columns="[{name: id, type: int}, {name: name, type: string}, {name: amount, type: string}]"),
    "rebucketed": table(DB, "rebucketed", "using: parquet\nbuckets: {clustered_by: [name], count: 4}"),
}
MIGRATION = """\
description: What Spark cannot change in place on a data-source table
changes:
  - rename_column: {table: @DB@.renamed, from: name, to: full_name}
  - drop_column: {table: @DB@.dropped, column: amount}
  - reorder_columns: {table: @DB@.reordered, order: [region, id, name, amount]}
"""
# Over columns the rewrite keeps as they were: Spark 3.5's views keep their columns' types and refuse a widened one
# (plan.invalidation blocks that change unless the view changes with it).
VIEW = "view: @DB@.totals\nsql: SELECT ds, count(*) AS n, max(name) AS last_name FROM @DB@.widened GROUP BY ds\n"


def project_of(root: Path, db: str, tables: dict[str, str], migration: bool = False):
    files = {f"schemas/{db}/{name}.yaml": text.replace(DB, db) for name, text in tables.items()}
    if "widened" in tables:
        files[f"schemas/{db}/totals.yaml"] = VIEW.replace(DB, db)
    if migration:
        files["migrations/0001_rewrites.yaml"] = MIGRATION.replace(DB, db)
    project = write_project(root, files)
    if migration:
        hash_migrations(project)
    return project


def test_every_change_a_table_cannot_take_in_place_is_a_verified_rewrite(tmp_path, spark, metastore, fresh_db):
    db = fresh_db()
    apply_plan(plan(project_of(tmp_path, db, BEFORE), metastore), metastore)
    for name in BEFORE:
        fill(spark, f"{db}.{name}")
    totals = rows(spark, f"SELECT * FROM {db}.totals")

    project = project_of(tmp_path, db, AFTER, migration=True)
    blocked = plan(project, metastore)
    assert sorted(s.object for s in blocked.blocked) == sorted(f"{db}.{name}" for name in AFTER)
    assert {s.kind for s in blocked.steps if s.object_type == "table"} == {"rewrite_table"}, [(s.summary, s.blocked) for s in blocked.steps if s.kind == "unsupported"]
    result = plan(project, metastore, allow_destructive=True)
    assert not result.blocked
    # What each rewrite reads, from the statistics the metastore keeps of the partitions Spark added.
    folder = Path(urlparse(metastore.msc.getTable(db, "renamed").getSd().getLocation()).path)
    files = [f for f in folder.rglob("*") if f.is_file() and not f.name.startswith((".", "_"))]
    assert (f"reads 3 partitions, {len(files)} files, {size(sum(f.stat().st_size for f in files))} of {db}.renamed (the "
            "metastore's statistics of 3): about 1 s on 2 cores, at the 11.0 MB/s a core bench/rewrite.py measured on "
            "a laptop") in {s.object: s.notes for s in result.steps}[f"{db}.renamed"]
    apply_plan(result, metastore)

    everything = "id, name, amount, region, ds"
    expected = {
        "renamed": ("id, full_name, amount, region, ds", [(i, n, a, r, d) for i, n, a, d, r in ROWS]),
        "dropped": ("id, name, region, ds", [(i, n, r, d) for i, n, a, d, r in ROWS]),
        "widened": (everything, [(i, n, None if a is None else __import__("decimal").Decimal(a), r, d)
                                 for i, n, a, d, r in ROWS]),
        "reordered": ("region, id, name, amount, ds", [(r, i, n, a, d) for i, n, a, d, r in ROWS]),
        "unpartitioned": (everything, [(i, n, a, r, d) for i, n, a, d, r in ROWS]),
        "to_orc": (everything, [(i, n, a, r, d) for i, n, a, d, r in ROWS]),
        "hive_to_orc": (everything, [(i, n, a, r, d) for i, n, a, d, r in ROWS]),
        "rebucketed": (everything, [(i, n, a, r, d) for i, n, a, d, r in ROWS]),
    }
    live = metastore.read((db,))
    for name, (columns, want) in expected.items():
        assert rows(spark, f"SELECT {columns} FROM {db}.{name}") == sorted(want, key=repr), name
        # The backup is the table as it was, rows and all, marked as such.
        assert rows(spark, f"SELECT {everything} FROM {db}.{name}_backup_") == sorted(
            [(i, n, a, r, d) for i, n, a, d, r in ROWS], key=repr), name
        assert live.get(f"{db}.{name}_backup_").backup_of == f"{db}.{name}"
        assert live.get(f"{db}.{name}_rewrite_") is None
    # The rewritten Hive table through Hive's own reader (its input format and SerDe, not Spark's native ORC reader).
    spark.conf.set("spark.sql.hive.convertMetastoreOrc", "false")
    try:
        spark.catalog.refreshTable(f"{db}.hive_to_orc")
        plan_text = spark.sql(f"EXPLAIN SELECT * FROM {db}.hive_to_orc").collect()[0][0]
        assert "Scan hive" in plan_text and "org.apache.hadoop.hive.ql.io.orc.OrcSerde" in plan_text, plan_text
        assert rows(spark, f"SELECT {everything} FROM {db}.hive_to_orc") == sorted(
            [(i, n, a, r, d) for i, n, a, d, r in ROWS], key=repr)
    finally:
        spark.conf.unset("spark.sql.hive.convertMetastoreOrc")
        spark.catalog.refreshTable(f"{db}.hive_to_orc")
    assert live.get(f"{db}.widened").columns[0].type == "bigint"
    assert live.get(f"{db}.to_orc").format == "orc" and live.get(f"{db}.hive_to_orc").format == "orc"
    assert [c.name for c in live.get(f"{db}.hive_to_orc").partition_columns] == ["region", "ds"]
    assert live.get(f"{db}.rebucketed").bucketing.columns == ("name",)
    assert list(live.get(f"{db}.renamed").migrations) == ["0001_rewrites"]
    # Each new table's files are in the table's own folder; the backup's in its own.
    for name in ("renamed", "hive_to_orc"):
        location = metastore.msc.getTable(db, name).getSd().getLocation()
        assert location.rstrip("/").endswith(f"/{name}")
        assert metastore.msc.getTable(db, f"{name}_backup_").getSd().getLocation().rstrip("/").endswith(
            f"/{name}_backup_")
    # The view over a rewritten table still reads, the same rows.
    assert rows(spark, f"SELECT * FROM {db}.totals") == totals
    again = plan(project, metastore)
    assert again.is_empty, [s.summary for s in again.steps]
    assert sum("as it was before its last rewrite, rows and files" in w for w in again.warnings) == len(AFTER)


def test_a_conversion_that_loses_values_stops_with_the_table_untouched_unless_a_migration_accepts_it(
        tmp_path, spark, metastore, fresh_db, monkeypatch):
    db = fresh_db()
    before = {"widened": BEFORE["widened"]}
    apply_plan(plan(project_of(tmp_path, db, before), metastore), metastore)
    fill(spark, f"{db}.widened")
    spark.sql(f"INSERT INTO {db}.widened VALUES (5, 'dee', 'twelve', 'eu', '2024-01-03')")
    kept = rows(spark, f"SELECT * FROM {db}.widened")
    result = plan(project_of(tmp_path, db, {"widened": AFTER["widened"]}), metastore, allow_destructive=True)
    [step] = [s for s in result.steps if s.object == f"{db}.widened"]
    assert any("amount: string -> decimal(10,2) can lose values" in h for h in step.hazards)
    with pytest.raises(ApplyError) as raised:
        apply_plan(result, metastore)
    assert "1 value of amount (string) became NULL as decimal(10,2)" in str(raised.value)
    assert f"{db}.widened is unchanged" in str(raised.value)
    assert rows(spark, f"SELECT * FROM {db}.widened") == kept
    names = {t.name for t in spark.catalog.listTables(db)}
    assert names == {"widened", "totals"}

    # The project says that loss is intended: the rewrite runs, the value it cannot hold is NULL, and counted.
    (tmp_path / "migrations").mkdir(exist_ok=True)
    (tmp_path / "migrations" / "0002_amounts.yaml").write_text(
        f"description: Amounts that are no numbers are dropped\nchanges:\n"
        f"  - accept_loss: {{table: {db}.widened, column: amount}}\n")
    project = project_of(tmp_path, db, {"widened": AFTER["widened"]})
    hash_migrations(project)
    accepted = plan(project, metastore, allow_destructive=True)
    [step] = [s for s in accepted.steps if s.object == f"{db}.widened"]
    assert ("amount: string -> decimal(10,2) can lose values (a value decimal(10,2) cannot hold becomes NULL, as a "
            "migration accepts: the copy counts them)") in step.hazards
    reports: list[str] = []
    monkeypatch.setattr(metastore, "progress", reports.append)
    apply_plan(accepted, metastore)
    assert f"{db}.widened: 1 value of amount (string) became NULL as decimal(10,2), as a migration accepts" in reports
    assert rows(spark, f"SELECT id, amount FROM {db}.widened WHERE id = 5") == [(5, None)]
    assert list(metastore.read((db,)).get(f"{db}.widened").migrations) == ["0002_amounts"]
    assert plan(project, metastore).is_empty


def test_a_cut_over_stopped_between_its_renames_is_finished_by_the_next_apply(tmp_path, spark, metastore, fresh_db,
                                                                               monkeypatch):
    db = fresh_db()
    before = {"renamed": BEFORE["renamed"]}
    apply_plan(plan(project_of(tmp_path, db, before), metastore), metastore)
    fill(spark, f"{db}.renamed")
    project = project_of(tmp_path, db, {"renamed": AFTER["renamed"]}, migration=True)
    first = plan(project, metastore, allow_destructive=True)

    renames = []
    real = rewrite._rename

    def stops_at_the_second(client, table, name, *args):
        renames.append(name)
        if len(renames) == 2:
            raise RuntimeError("the process stopped here")
        real(client, table, name, *args)

    monkeypatch.setattr(rewrite, "_rename", stops_at_the_second)
    with pytest.raises(ApplyError):
        apply_plan(first, metastore)
    monkeypatch.setattr(rewrite, "_rename", real)
    assert spark.sql(f"SHOW TABLES IN {db} LIKE 'renamed'").count() == 0

    resumed = plan(project, metastore, allow_destructive=True)
    [step] = [s for s in resumed.steps if s.object == f"{db}.renamed"]
    assert step.summary == f"rewrite table {db}.renamed: finish the cut-over"
    apply_plan(resumed, metastore)
    assert rows(spark, f"SELECT id, full_name FROM {db}.renamed") == sorted(
        [(i, n) for i, n, *_ in ROWS], key=repr)
    assert plan(project, metastore).is_empty

    # A second rewrite of the table: allowed to run it, the plan keeps the first one's backup, and waits on its drop;
    # given leave to drop backups too, it drops that one before it.
    widened = AFTER["renamed"].replace("{name: id, type: int}", "{name: id, type: bigint}")
    project = project_of(tmp_path, db, {"renamed": widened}, migration=True)
    waits = plan(project, metastore, allow_destructive=True)
    assert [(s.kind, s.object, bool(s.blocked)) for s in waits.steps] == [
        ("drop_table", f"{db}.renamed_backup_", True), ("rewrite_table", f"{db}.renamed", True)]
    second = plan(project, metastore, allow_destructive=True, drop_backups=BackupDrops(copies=True))
    assert [(s.kind, s.object, s.blocked) for s in second.steps] == [("drop_table", f"{db}.renamed_backup_", None),
                                                                     ("rewrite_table", f"{db}.renamed", None)]
    apply_plan(second, metastore)
    assert rows(spark, f"SELECT id, full_name FROM {db}.renamed_backup_") == rows(
        spark, f"SELECT id, full_name FROM {db}.renamed")
    assert metastore.read((db,)).get(f"{db}.renamed").columns[0].type == "bigint"
    assert plan(project, metastore).is_empty


@pytest.fixture
def one_partition_a_chunk(spark):
    """Chunks of one partition each, in tables of a few rows: a chunk is at least eight waves of the session's tasks,
    each reading at most spark.sql.files.maxPartitionBytes (here 16 bytes)."""
    spark.conf.set(rewrite_copy.SPLIT, "16")
    yield
    spark.conf.unset(rewrite_copy.SPLIT)


def _to_orc_while(tmp_path, spark, metastore, db: str, monkeypatch, meanwhile) -> tuple[list[str], list[str]]:
    """The rewrite of a filled table to ORC (one partition a chunk), with ``meanwhile(table, staging)`` run once, as
    its first chunk ends: the partitions each chunk copied, and the progress reported."""
    apply_plan(plan(project_of(tmp_path, db, {"to_orc": BEFORE["to_orc"]}), metastore), metastore)
    fill(spark, f"{db}.to_orc")
    result = plan(project_of(tmp_path, db, {"to_orc": AFTER["to_orc"]}), metastore, allow_destructive=True)
    real, chunks, reports = rewrite_copy._copy_chunk, [], []

    def copy_chunk(client, copying, chunk):
        real(client, copying, chunk)
        chunks.append(",".join(str(v) for unit in chunk for v in unit))
        if len(chunks) == 1:
            meanwhile(f"{db}.to_orc", f"{db}.to_orc_rewrite_")

    monkeypatch.setattr(rewrite_copy, "_copy_chunk", copy_chunk)
    monkeypatch.setattr(metastore, "progress", reports.append)
    apply_plan(result, metastore)
    return chunks, reports


def test_rows_in_the_default_partition_of_a_string_partition_column_are_copied_and_read_back_as_null(
        tmp_path, spark, metastore, fresh_db):
    """The copy writes a string partition column as COALESCE(value, '') (``sql.rewrite.default_partitions``): Spark's
    file writer, into a data-source table and a Hive-format one, copied partition by partition or whole, puts those
    rows in the default partition, read back as NULL, and the verification agrees."""
    db = fresh_db()
    widened = "[{name: id, type: bigint}, {name: name, type: string}, {name: amount, type: string}, " \
              "{name: region, type: string}]"
    before = {"parquet": table(db, "parquet"), "hive": table(db, "hive", "format: parquet"), "whole": table(db, "whole")}
    after = {"parquet": table(db, "parquet", columns=widened), "hive": table(db, "hive", "format: orc"),
             "whole": table(db, "whole", partitioned="[{name: ds, type: string}, {name: region, type: string}]",
                            columns=COLUMNS.replace(", {name: region, type: string}", ""))}
    apply_plan(plan(project_of(tmp_path, db, before), metastore), metastore)
    held = [(1, "ann", "9.50", "eu", "2024-01-01"), (2, "bob", None, None, None), (3, None, "7.25", "us", None)]
    spark.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")  # Hive's writer's, as a team's job sets it
    try:
        for name in before:
            spark.sql(f"INSERT INTO {db}.{name} (id, name, amount, region, ds) VALUES "
                      + ", ".join(f"({i}, {_text(n)}, {_text(a)}, {_text(r)}, {_text(d)})" for i, n, a, r, d in held))
    finally:
        spark.conf.unset("hive.exec.dynamic.partition.mode")
    result = plan(project_of(tmp_path, db, after), metastore, allow_destructive=True)
    copies = [s for step in result.steps for s in step.body if isinstance(s, RewriteRows)]
    assert len(copies) == 3 and all("COALESCE(`ds`, '') AS `ds`" in c.copy for c in copies)
    apply_plan(result, metastore)
    for name in before:
        assert rows(spark, f"SELECT id, name, amount, region, ds FROM {db}.{name}") == sorted(held, key=repr), name
        assert rows(spark, f"SELECT id FROM {db}.{name} WHERE ds IS NULL") == [(2,), (3,)], name
        spark.sql(f"MSCK REPAIR TABLE {db}.{name}")  # what the folders hold is what the metastore lists
        listed = {r[0] for r in spark.sql(f"SHOW PARTITIONS {db}.{name}").collect()}
        assert "ds=__HIVE_DEFAULT_PARTITION__" in {p.split("/")[0] for p in listed} and "ds=" not in listed, name
    assert plan(project_of(tmp_path, db, after), metastore).is_empty


@pytest.mark.usefixtures("one_partition_a_chunk")
def test_a_copy_that_differs_from_the_rows_moved_stops_the_rewrite_and_says_where(tmp_path, spark, metastore, fresh_db,
                                                                                 monkeypatch):
    db = fresh_db()
    def stray(key: str, staging: str) -> None:  # as if a writer slipped a row into the chunk being copied
        spark.sql(f"INSERT INTO {staging} VALUES (99, 'x', '1.00', 'eu', '2024-01-01')")

    real = rewrite_copy._write
    monkeypatch.setattr(rewrite_copy, "_write", lambda client, copying, where: (
        real(client, copying, where), stray("", copying.staging))[0])
    with pytest.raises(ApplyError) as raised:
        _to_orc_while(tmp_path, spark, metastore, db, monkeypatch, lambda key, staging: None)
    assert ("the copy differs from the rows moved in ds=2024-01-01: 2 rows moved, 3 copied, checksums of id, name, "
            "amount, region, ds differ") in str(raised.value)
    assert rows(spark, f"SELECT id, name, amount, region, ds FROM {db}.to_orc") == sorted(
        [(i, n, a, r, d) for i, n, a, d, r in ROWS], key=repr)
    assert {t.name for t in spark.catalog.listTables(db)} == {"to_orc"}


@pytest.mark.usefixtures("one_partition_a_chunk")
def test_partitions_written_to_during_the_copy_are_copied_again_before_the_cut_over(tmp_path, spark, metastore,
                                                                                     fresh_db, monkeypatch):
    db = fresh_db()
    def write(key: str, staging: str) -> None:  # other jobs overwrite a partition copied already, and add one
        spark.sql(f"INSERT OVERWRITE {key} PARTITION (ds='2024-01-01') VALUES (6, 'eve', '3.00', 'eu')")
        spark.sql(f"INSERT INTO {key} VALUES (5, 'dee', '1.00', 'eu', '2024-01-04')")

    chunks, reports = _to_orc_while(tmp_path, spark, metastore, db, monkeypatch, write)
    # Each partition once, then the two written to again, before the cut-over.
    assert chunks == ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-01", "2024-01-04"]
    assert f"copying again what was written to {db}.to_orc during the copy: 2 partitions" in reports
    want = sorted([(6, "eve", "3.00", "eu", "2024-01-01"), (5, "dee", "1.00", "eu", "2024-01-04")]
                  + [(i, n, a, r, d) for i, n, a, d, r in ROWS if d != "2024-01-01"], key=repr)
    assert rows(spark, f"SELECT id, name, amount, region, ds FROM {db}.to_orc") == want
    assert metastore.read((db,)).get(f"{db}.to_orc").format == "orc"


@pytest.mark.usefixtures("one_partition_a_chunk")
def test_a_copy_stopped_half_way_is_resumed_from_its_first_unfinished_partition(tmp_path, spark, metastore, fresh_db,
                                                                                monkeypatch):
    db = fresh_db()
    apply_plan(plan(project_of(tmp_path, db, {"renamed": BEFORE["renamed"]}), metastore), metastore)
    fill(spark, f"{db}.renamed")
    project = project_of(tmp_path, db, {"renamed": AFTER["renamed"]}, migration=True)
    real, chunks, reports = rewrite_copy._copy_chunk, [], []

    def stops_at_the_third(client, copying, chunk):
        if len(chunks) == 2:
            raise RuntimeError("the process stopped here")
        real(client, copying, chunk)
        chunks.append(chunk)

    monkeypatch.setattr(rewrite_copy, "_copy_chunk", stops_at_the_third)
    with pytest.raises(ApplyError):
        apply_plan(plan(project, metastore, allow_destructive=True), metastore)
    assert rows(spark, f"SELECT count(*) FROM {db}.renamed_rewrite_") == [(3,)]  # two partitions of three

    monkeypatch.setattr(rewrite_copy, "_copy_chunk", lambda client, copying, chunk: (
        chunks.append(chunk), real(client, copying, chunk)))
    monkeypatch.setattr(metastore, "progress", reports.append)
    apply_plan(plan(project, metastore, allow_destructive=True), metastore)
    assert chunks == [[("2024-01-01",)], [("2024-01-02",)], [("2024-01-03",)]]  # the third, once
    assert reports[0] == f"resuming the copy of {db}.renamed: 2 of 3 partitions copied by a stopped run"
    assert reports[1].startswith(f"{db}.renamed: 3 of 3 partitions copied (")
    assert rows(spark, f"SELECT id, full_name, amount, region, ds FROM {db}.renamed") == sorted(
        [(i, n, a, r, d) for i, n, a, d, r in ROWS], key=repr)
    assert plan(project, metastore).is_empty


def test_a_table_declared_to_keep_its_values_readable_is_rewritten_where_in_place_would_hide_them(
        tmp_path, spark, metastore, fresh_db):
    db = fresh_db()
    keep = "\nrewrite: when_values_hide"
    before = {"renamed": table(DB, "renamed", "format: parquet" + keep),
              "rebucketed": table(DB, "rebucketed", "using: parquet\nbuckets: {clustered_by: [id], count: 4}" + keep)}
    apply_plan(plan(project_of(tmp_path, db, before), metastore), metastore)
    for name in before:
        fill(spark, f"{db}.{name}")
    after = {"renamed": AFTER["renamed"].replace("using: parquet", "format: parquet" + keep),
             "rebucketed": before["rebucketed"].replace("count: 4", "count: 8")}
    project = project_of(tmp_path, db, after, migration=True)
    result = plan(project, metastore, allow_destructive=True)
    assert sorted(s.summary for s in result.steps if s.object_type == "table") == [
        f"rewrite table {db}.rebucketed: bucket count 4 -> 8: the files are bucketed into 4",
        f"rewrite table {db}.renamed: rename name to full_name: parquet files find columns by name"]
    apply_plan(result, metastore)
    # In place, full_name would read NULL in every existing row: rewritten, it holds the names.
    assert rows(spark, f"SELECT id, full_name FROM {db}.renamed") == sorted([(i, n) for i, n, *_ in ROWS], key=repr)
    live = metastore.read((db,))
    assert live.get(f"{db}.rebucketed").bucketing.count == 8
    assert rows(spark, f"SELECT id FROM {db}.rebucketed WHERE id = 3") == [(3,)]
    assert plan(project, metastore).is_empty


def test_restore_swaps_the_backup_back_in_without_a_copy_and_a_stopped_restore_is_finished(
        tmp_path, spark, metastore, fresh_db, monkeypatch):
    db = fresh_db()
    (tmp_path / "schemaflow.yaml").write_text(f"databases: [{db}]\n")
    before = project_of(tmp_path, db, {"renamed": BEFORE["renamed"]})
    apply_plan(plan(before, metastore), metastore)
    fill(spark, f"{db}.renamed")
    version = metastore.read((db,)).get(f"{db}.renamed").version
    apply_plan(plan(project_of(tmp_path, db, {"renamed": AFTER["renamed"]}, migration=True), metastore,
                    allow_destructive=True), metastore)
    spark.sql(f"INSERT INTO {db}.renamed (id, full_name, amount, region, ds) VALUES (5, 'dee', '1.00', 'eu', "
              "'2024-01-04')")  # written after the rewrite: the restore leaves it in the new backup
    old = sorted([(i, n) for i, n, *_ in ROWS], key=repr)

    # Stopped after its first rename, then after its second: each next run finishes what is left.
    renames, real = [], rewrite._rename

    def stops_after(count: int):
        def rename(client, table, name, *args):
            if len(renames) == count:
                raise RuntimeError("the process stopped here")
            renames.append(name)
            real(client, table, name, *args)
        return rename

    monkeypatch.setattr(rewrite, "_rename", stops_after(1))
    ran = schemaflow("--project", str(tmp_path), "restore", f"{db}.renamed", "--auto-approve")
    assert ran.code == 1 and renames == ["renamed_restore_"], ran.said
    out = ran.out
    assert f"~ 1. restore table {db}.renamed from {db}.renamed_backup_: the table as it was before its rewrite" in out
    assert (f"hazard: rows written to {db}.renamed since its rewrite are not in the restored table: they stay in "
            f"{db}.renamed_backup_") in out
    assert "column full_name: string -> (none)" in out and "column name: (none) -> string" in out
    reverted = tmp_path / "reverted"  # the project with the change that rewrote the table reverted
    (reverted / "schemaflow.yaml").parent.mkdir()
    (reverted / "schemaflow.yaml").write_text(f"databases: [{db}]\n")
    blocked = plan(project_of(reverted, db, {"renamed": BEFORE["renamed"]}), metastore)
    [step] = [s for s in blocked.steps if s.object == f"{db}.renamed"]
    assert step.blocked == (f"the restore from its backup a stopped run began is unfinished: run `schemaflow restore "
                            f"{db}.renamed` to finish it, then plan again")

    monkeypatch.setattr(rewrite, "_rename", stops_after(2))
    assert schemaflow("--project", str(tmp_path), "restore", f"{db}.renamed", "--auto-approve").code == 1
    assert renames == ["renamed_restore_", "renamed_backup_"]
    assert spark.sql(f"SHOW TABLES IN {db} LIKE 'renamed'").count() == 0

    monkeypatch.setattr(rewrite, "_rename", real)
    finished = schemaflow("--project", str(tmp_path), "restore", f"{db}.renamed", "--auto-approve")
    assert finished.code == 0, finished.said
    assert f"finishes the restore a stopped run began: {db}.renamed_restore_ is the backup being restored" in finished.out
    assert f"Restored {db}.renamed. Revert the change that rewrote it in git" in finished.out

    # The table as it was, its version too; the rewritten one, with the row written since, is the backup.
    assert rows(spark, f"SELECT id, name FROM {db}.renamed") == old
    assert rows(spark, f"SELECT id, full_name FROM {db}.renamed_backup_") == sorted([*old, (5, "dee")], key=repr)
    live = metastore.read((db,))
    assert live.get(f"{db}.renamed").version == version and live.get(f"{db}.renamed").backup_of is None
    assert live.get(f"{db}.renamed_backup_").backup_of == f"{db}.renamed"
    assert live.get(f"{db}.renamed_restore_") is None
    assert not metastore.msc.getTable(db, "renamed").getParameters().containsKey("schemaflow.restore_version")
    last = read_history(metastore, (db,), (f"{db}.renamed",))[-1]
    assert (last.change, last.what) == ("change", f"version {version}")
    # The project as it was plans nothing; as it is, the rewrite again.
    assert plan(project_of(reverted, db, {"renamed": BEFORE["renamed"]}), metastore).is_empty
    again = plan(project_of(tmp_path, db, {"renamed": AFTER["renamed"]}, migration=True), metastore,
                 allow_destructive=True)
    assert [(s.kind, s.object) for s in again.steps] == [("drop_table", f"{db}.renamed_backup_"),
                                                         ("rewrite_table", f"{db}.renamed")]
    # The backup holds the row written since the rewrite: its drop says so, and waits to be named.
    assert again.steps[0].blocked.startswith("a backup is dropped only when asked: it holds rows that are in no other")
    nothing = schemaflow("--project", str(tmp_path), "restore", f"{db}.widened", "--auto-approve")
    assert nothing.code == 1 and f"{db}.widened has no backup to restore" in nothing.err
