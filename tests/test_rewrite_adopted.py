"""Rewrites, restores and conversions of tables schemaflow did not create, each finished by its first apply.

A table built the way Spark users build one (plain Spark SQL, rows written), imported (``schemaflow import``), then
changed in a way that needs a rewrite: its cut-over renames it to its backup guarded by the run's claim, and the
metastore's compare-and-swap (HIVE-26882) refuses a guarded write that unsets the key it guards, as the rename of a
table that had no version did. Each line of metastores is walked through once: the embedded default (Hive 2.3 on
Derby, in the test JVM: a rewrite, a restore, a conversion to Iceberg by copying, a run stopped part-way then
finished, a concurrent change refused at the cut-over) and the Hive 2.3, 3.1 and 4.0 servers (a rewrite on the first
apply, the rows read back, an empty plan).
"""
from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pyiceberg.table import StaticTable

from schemaflow.apply.executor import ApplyError, apply_plan
from schemaflow.catalog.hive import rewrite_copy
from schemaflow.claims import new_run
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import BACKUP_OF, NO_VERSION, VERSION_KEY
from schemaflow.project import load_project
from schemaflow.spark_version import installed
from tests.inprocess import schemaflow
from tests.metastore_server import (RELEASES, TEST_JAVA_OPTIONS, MetastoreServer, derby_with_transaction_tables,
                                    give_client, metastore_setting, release_under_test)
from tests.postgres_server import PostgresServer
from tests.projects import plan
from tests.projects import schemaflow as run

ROWS = "(1, 'ann', 9.50, 'd1'), (2, NULL, 12.00, 'd1'), (3, 'cy', NULL, 'd2')"
BEFORE = [(1, "ann", "9.50", "d1"), (2, None, "12.00", "d1"), (3, "cy", None, "d2")]


def imported(spark, root: Path, db: str, storage: str = "USING parquet PARTITIONED BY (ds)") -> Path:
    """A project that imported ``db``, whose one table ``ev`` Spark made (``storage``) and filled: no schemaflow."""
    spark.sql(f"CREATE TABLE {db}.ev (id INT, name STRING, amount DECIMAL(10,2), ds STRING) {storage}")
    spark.sql(f"INSERT INTO {db}.ev VALUES {ROWS}")
    root.mkdir()
    (root / "schemaflow.yaml").write_text(f"databases: [{db}]\n")
    done = schemaflow("--project", str(root), "import", "--database", db)
    assert done.code == 0, done.said
    return root / "schemas" / db / "ev.yaml"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, text
    path.write_text(text.replace(old, new, 1))


def rows(spark, key: str) -> list[tuple]:
    found = spark.sql(f"SELECT id, name, CAST(amount AS STRING), ds FROM {key}").collect()
    return sorted((tuple(r) for r in found), key=repr)


@pytest.mark.spark
def test_imported_tables_are_rewritten_restored_and_converted_each_by_its_first_apply(tmp_path, spark, metastore,
                                                                                      fresh_db):
    db = fresh_db()
    schema = imported(spark, tmp_path / "rewrite", db)
    project = str(tmp_path / "rewrite")
    edit(schema, "using: parquet", "using: orc")
    applied = schemaflow("--project", project, "apply", "--auto-approve", "--allow-destructive")
    assert applied.code == 0, applied.said
    assert spark.sql(f"DESCRIBE TABLE EXTENDED {db}.ev").where("col_name = 'Provider'").first()[1] == "orc"
    assert rows(spark, f"{db}.ev") == BEFORE and rows(spark, f"{db}.ev_backup_") == BEFORE
    # The backup had no version: it keeps the key its rename was guarded by, read as none.
    backup = metastore.msc.getTable(db, "ev_backup_").getParameters()
    assert (backup.get(VERSION_KEY), backup.get(BACKUP_OF)) == (NO_VERSION, f"{db}.ev")
    assert metastore.read((db,)).get(f"{db}.ev_backup_").version is None
    again = schemaflow("--project", project, "plan")
    assert again.code == 0 and again.out.startswith("No changes"), again.said
    assert "half-done" not in again.said

    # Restored, the table is the imported one again, rows and all, and without a version, as it was.
    restored = schemaflow("--project", project, "restore", f"{db}.ev", "--auto-approve")
    assert restored.code == 0, restored.said
    assert spark.sql(f"DESCRIBE TABLE EXTENDED {db}.ev").where("col_name = 'Provider'").first()[1] == "parquet"
    assert rows(spark, f"{db}.ev") == BEFORE and rows(spark, f"{db}.ev_backup_") == BEFORE
    live = metastore.read((db,))
    assert live.get(f"{db}.ev").version is None and live.get(f"{db}.ev_backup_").version is not None
    assert "half-done" not in schemaflow("--project", project, "plan").said

    # Converted to Iceberg by copying (Iceberg registers no ORC file): a Hive ORC table Spark made.
    db = fresh_db()
    schema = imported(spark, tmp_path / "convert", db, "STORED AS ORC")
    edit(schema, "format: orc", "format: iceberg")
    converted = schemaflow("--project", str(tmp_path / "convert"), "apply", "--auto-approve", "--allow-destructive")
    assert converted.code == 0, converted.said
    assert "convert to Iceberg by copying" in converted.out
    assert metastore.read((db,)).get(f"{db}.ev").iceberg is not None
    location = metastore.msc.getTable(db, "ev").getParameters().get("metadata_location")
    iceberg = StaticTable.from_metadata(location).scan().to_arrow().to_pylist()
    assert sorted(((r["id"], r["name"], None if r["amount"] is None else str(r["amount"]), r["ds"]) for r in iceberg),
                  key=repr) == BEFORE
    assert rows(spark, f"{db}.ev_backup_") == BEFORE
    again = schemaflow("--project", str(tmp_path / "convert"), "plan")
    assert again.code == 0 and again.out.startswith("No changes") and "half-done" not in again.said, again.said


@pytest.mark.spark
def test_a_rewrite_of_an_imported_table_stopped_part_way_is_finished_and_leaves_nothing_half_done(
        tmp_path, spark, metastore, fresh_db, monkeypatch):
    db = fresh_db()
    schema = imported(spark, tmp_path / "project", db)
    edit(schema, "using: parquet", "using: orc")
    project = load_project(tmp_path / "project")
    # A run that stopped during its copy, in a process that is gone: its claim stays on the table and on the copy.
    gone = subprocess.Popen(["true"])
    gone.wait()
    stopped = new_run()
    stopped = type(stopped)(run="stopped0run", host=stopped.host, pid=gone.pid, since=stopped.since)
    copy = rewrite_copy.copy

    def stops(*args, **kwargs):
        copy(*args, **kwargs)
        raise SchemaflowError("stopped")

    monkeypatch.setattr(rewrite_copy, "copy", stops)
    with pytest.raises(ApplyError, match="stopped"):
        apply_plan(plan(project, metastore, allow_destructive=True), metastore, claim=stopped)
    monkeypatch.undo()
    # Its claim on the table, handed back as the run failed, stays there as a kill leaves it: that run's claim.
    claim = metastore.msc.getTable(db, "ev_rewrite_").getParameters().get(VERSION_KEY)
    table = metastore.msc.getTable(db, "ev")
    table.getParameters().put(VERSION_KEY, claim)
    metastore.msc.alter_table(db, "ev", table)
    left = schemaflow("--project", str(tmp_path / "project"), "plan", "--allow-destructive")
    for key in (f"{db}.ev", f"{db}.ev_rewrite_"):
        assert f"{key}: left half-done by run stopped0run" in left.out, left.said

    finished = schemaflow("--project", str(tmp_path / "project"), "apply", "--auto-approve", "--allow-destructive")
    assert finished.code == 0, finished.said
    assert rows(spark, f"{db}.ev") == BEFORE and rows(spark, f"{db}.ev_backup_") == BEFORE
    # The version the stopped run's claim replaced is lost: the backup keeps none, not that claim.
    assert metastore.msc.getTable(db, "ev_backup_").getParameters().get(VERSION_KEY) == NO_VERSION
    again = schemaflow("--project", str(tmp_path / "project"), "plan")
    assert again.code == 0 and again.out.startswith("No changes"), again.said
    assert "half-done" not in again.said


@pytest.mark.spark
def test_a_change_another_writer_makes_between_the_plan_and_the_cut_over_is_refused(tmp_path, spark, metastore,
                                                                                    fresh_db, monkeypatch):
    db = fresh_db()
    schema = imported(spark, tmp_path / "project", db)
    edit(schema, "using: parquet", "using: orc")
    planned = plan(load_project(tmp_path / "project"), metastore, allow_destructive=True)
    copy = rewrite_copy.copy

    def overtaken(*args, **kwargs):
        copy(*args, **kwargs)
        # Another apply takes the table over (--take-over) while this one copies: a plain write of another client.
        table = metastore.msc.getTable(db, "ev")
        table.getParameters().put(VERSION_KEY, "another run's version")
        metastore.msc.alter_table(db, "ev", table)

    monkeypatch.setattr(rewrite_copy, "copy", overtaken)
    with pytest.raises(ApplyError) as failed:
        apply_plan(planned, metastore)
    assert isinstance(failed.value.__cause__, ConcurrentChange), failed.value
    # Refused by the metastore's compare-and-swap at the rename: the table is where it was, nothing renamed.
    assert metastore.msc.getTable(db, "ev").getParameters().get(VERSION_KEY) == "another run's version"
    assert not metastore.msc.tableExists(db, "ev_backup_")
    assert rows(spark, f"{db}.ev") == BEFORE


# The team's own Spark job on a metastore server (argv: its URI, the warehouse, the Hive client's settings as JSON).
SESSION = ("import json, sys\n"
           "from pyspark.sql import SparkSession\n"
           "builder = (SparkSession.builder.master('local[1]').config('spark.hadoop.hive.metastore.uris', sys.argv[1])\n"
           "           .config('spark.sql.warehouse.dir', sys.argv[2]))\n"
           "for key, value in json.loads(sys.argv[3]).items():\n"
           "    builder = builder.config(key, value)\n"
           "spark = builder.enableHiveSupport().getOrCreate()\n")
READ = ("print(json.dumps([sorted(map(list, spark.sql(f'SELECT id, name, CAST(amount AS STRING), ds FROM {key}')"
        ".collect()), key=repr) for key in ('imported_rw.ev', 'imported_rw.ev_backup_')]))\n")
# Hive 4's client came with Spark 4.0: Spark 3.5 reaches no Hive 4 server (test_metastore_releases says so).
LINES = ("2.3", "3.1", "4.0") if (installed() or ((0,),))[0] >= (4, 0) else ("2.3", "3.1")


@contextmanager
def server(line: str, request: pytest.FixtureRequest, workdir: Path) -> Iterator[str]:
    """The URI of a metastore server of ``line``: the run's own where it is the line under test, else one started here,
    on the first database the line guards writes on."""
    if line == release_under_test().name:
        yield request.getfixturevalue("metastore_server")
        return
    release = RELEASES[line]
    if release.backends[0] == "derby":
        template = derby_with_transaction_tables(workdir / "template", TEST_JAVA_OPTIONS, release=release)
        started = MetastoreServer(workdir / "server", derby_from=template, release=release,
                                  java_options=TEST_JAVA_OPTIONS, settings={"datanucleus.connectionPoolingType": "HikariCP"})
    else:
        pg: PostgresServer = request.getfixturevalue("postgres")
        started = MetastoreServer(workdir / "server", settings=pg.metastore_settings(pg.new_database(release=release)),
                                  classpath=[pg.jdbc_jar], java_options=TEST_JAVA_OPTIONS, release=release)
    with started as hive:
        yield hive.uri


@pytest.mark.remote
@pytest.mark.one_release
@pytest.mark.parametrize("line", LINES)
def test_an_imported_table_is_rewritten_by_its_first_apply_on_a_metastore_server_of_each_line(
        line, request, tmp_path, run_python):
    release = RELEASES[line]
    with server(line, request, tmp_path) as uri:
        job = (uri, str(tmp_path / "warehouse"), json.dumps(release.client_settings()))
        made = run_python(SESSION + "spark.sql('CREATE DATABASE imported_rw')\n"
                          "spark.sql('CREATE TABLE imported_rw.ev (id INT, name STRING, amount DECIMAL(10,2), ds STRING) "
                          f"USING parquet PARTITIONED BY (ds)')\nspark.sql(\"INSERT INTO imported_rw.ev VALUES {ROWS}\")\n",
                          *job)
        assert made.returncode == 0, made.stderr
        project = tmp_path / "project"
        (project / "schemas").mkdir(parents=True)
        (project / "schemaflow.yaml").write_text("databases: [imported_rw]\n" + metastore_setting(uri, release))
        env = {"SPARK_CONF_DIR": None, "SCHEMAFLOW_WAREHOUSE_DIR": str(tmp_path / "warehouse"),
               **give_client(project, release)}
        done = run(project, "import", "--database", "imported_rw", env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        edit(project / "schemas" / "imported_rw" / "ev.yaml", "using: parquet", "using: orc")

        applied = run(project, "apply", "--auto-approve", "--allow-destructive", env=env)
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert applied.stdout.endswith("Applied 1 step.\n") and "~ 1. rewrite table imported_rw.ev: storage (format " \
            "'parquet' -> 'orc')" in applied.stdout, applied.stdout
        read = run_python(SESSION + READ, *job)
        assert read.returncode == 0, read.stderr
        table, backup = json.loads(read.stdout.splitlines()[-1])
        assert [tuple(r) for r in table] == BEFORE and [tuple(r) for r in backup] == BEFORE
        again = run(project, "plan", env=env)
        assert again.returncode == 0 and again.stdout.startswith("No changes"), again.stdout + again.stderr
        assert "half-done" not in again.stdout + again.stderr
