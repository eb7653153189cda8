"""The ``schemaflow`` command as a user runs it, each command its own process and JVM.

Against the embedded Derby metastore (the laptop set-up), and against a standalone Thrift
metastore server started from the pyspark jars (the shared set-up), pointed at by the settings
file and by the environment. Outcomes are read back through ``schemaflow snapshot``.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from schemaflow.catalog.snapshot import read_snapshot
from schemaflow.model import Table
from tests.metastore_server import free_port, metastore_setting, release_under_test
from tests.projects import schemaflow
from tests.spark_cluster import standalone_cluster

ROOT = Path(__file__).resolve().parent.parent
ARCHIVE_LINES = ("Writing the JVM's class archive ", "Written in ", "No archive was written")


@pytest.mark.spark
def test_example_project_plan_apply_replan_with_embedded_metastore(tmp_path):
    for folder in ("schemas", "migrations"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    shutil.copy(ROOT / "schemaflow.yaml", tmp_path)

    planned = schemaflow(tmp_path, "plan", "--out", "plan.json")
    assert planned.returncode == 2, planned.stderr
    assert planned.stdout.startswith("12 steps on 12 objects, 0 destructive.\n")
    # The user sees schemaflow's own words, not Spark's or Hive's logging (the class archive's two lines come
    # with whichever command of a new environment writes it: tests/test_class_archive.py has them).
    said = [line for line in planned.stderr.splitlines() if not line.startswith(ARCHIVE_LINES)]
    assert said[0] == f"Starting Spark (local[2]) and connecting to the embedded metastore in {tmp_path}/.schemaflow ..."
    assert re.fullmatch(r"Spark is up \(\d+\.\d s\)", said[1]), said
    # Progress while Spark reads: the databases, then how many objects it found (none yet) and how long it took.
    assert said[2] == "Reading analytics, retail through Spark ..."
    assert re.fullmatch(r"Read 0 objects in \d+\.\d s", said[3]), said
    assert said[4:] == ["Saved the plan to plan.json; apply it with: schemaflow apply plan.json"]

    refused = schemaflow(tmp_path, "apply", "plan.json")
    assert refused.returncode == 1
    assert "pass --auto-approve" in refused.stderr

    applied = schemaflow(tmp_path, "apply", "plan.json", "--auto-approve")
    assert applied.returncode == 0, applied.stderr
    progress = [line for line in applied.stdout.splitlines() if line.startswith("[")]
    assert len(progress) == 12 and all(line.endswith(("s)",)) and " ... done (" in line for line in progress)
    assert applied.stdout.endswith("Applied 12 steps.\n")
    # One read of the metastore checks the saved plan: what changed since, and what planning again makes.
    assert sum(line.startswith("Reading ") for line in applied.stderr.splitlines()) == 1, applied.stderr

    replanned = schemaflow(tmp_path, "plan")
    assert (replanned.returncode, replanned.stdout) == (
        0, "No changes: the metastore matches the schemas (databases: analytics, retail).\n")

    history = schemaflow(tmp_path, "history")
    assert history.returncode == 0, history.stderr
    header, *lines = history.stdout.splitlines()
    assert header.startswith("APPLIED AT")
    # Ten objects stamped, and the example's migration recorded on the table it names (moot: created new).
    assert len(lines) == 11
    assert sum(" version " in line for line in lines) == 10
    [migration] = [line for line in lines if " migration " in line]
    assert "retail.customers" in migration and "migration 0001_customers_signed_up" in migration
    assert all(line[:20].endswith("Z") and line.rstrip().endswith("no commit") for line in lines)


@pytest.mark.remote
def test_own_project_against_a_thrift_metastore_server(metastore_server, tmp_path):
    project = tmp_path / "project"
    (project / "schemas" / "sales").mkdir(parents=True)
    (project / "schemas" / "sales" / "orders.yaml").write_text(
        "table: sales.orders\nformat: orc\ncolumns:\n  - {name: id, type: bigint, comment: Order id}\n"
        "partitioned_by: [{name: ds, type: string}]\nproperties: {owner: sales-eng}\n")
    (project / "schemas" / "sales" / "big_orders.yaml").write_text(
        "view: sales.big_orders\nsql: SELECT id, ds FROM orders WHERE id > 100\n")
    (project / "schemaflow.yaml").write_text(
        metastore_setting(metastore_server) + f"warehouse_dir: {tmp_path / 'warehouse'}\n")

    applied = schemaflow(project, "apply", "--auto-approve")
    assert applied.returncode == 0, applied.stderr
    assert f"connecting to {metastore_server}" in applied.stderr
    assert applied.stdout.endswith("Applied 3 steps.\n")

    # Another checkout, pointed at the same server through the environment only.
    other = tmp_path / "other"
    shutil.copytree(project / "schemas", other / "schemas")
    if metastore_setting():  # the guard the server needs is the project's, in every checkout
        (other / "schemaflow.yaml").write_text(metastore_setting())
    env = {"SCHEMAFLOW_METASTORE_URI": metastore_server, "SCHEMAFLOW_WAREHOUSE_DIR": str(tmp_path / "warehouse")}
    replanned = schemaflow(other, "plan", env=env)
    assert replanned.returncode == 0, replanned.stdout + replanned.stderr

    snapshot = schemaflow(other, "snapshot", "--out", str(tmp_path / "live.json"), env=env)
    assert snapshot.returncode == 0, snapshot.stderr
    live = read_snapshot(tmp_path / "live.json")
    orders = live.get("sales.orders")
    assert isinstance(orders, Table)
    assert (orders.format, orders.properties, [(c.name, c.type, c.comment) for c in orders.columns]) == (
        "orc", {"owner": "sales-eng"}, [("id", "bigint", "Order id")])
    assert [c.name for c in live.get("sales.big_orders").columns] == ["id", "ds"]


@pytest.mark.remote
def test_plan_apply_plan_through_a_standalone_spark_cluster_on_a_postgresql_metastore(
        postgres, postgres_metastore_server, tmp_path):
    project = tmp_path / "project"
    (project / "schemas" / "on_cluster").mkdir(parents=True)
    (project / "schemas" / "on_cluster" / "orders.yaml").write_text(
        "table: on_cluster.orders\ncolumns:\n  - {name: id, type: bigint}\npartitioned_by: [{name: ds, type: string}]\n")
    (project / "schemas" / "on_cluster" / "recent.yaml").write_text("view: on_cluster.recent\nsql: SELECT id, ds FROM orders\n")
    (project / "schemaflow.yaml").write_text("databases: [on_cluster]\n" + metastore_setting())
    with standalone_cluster(tmp_path) as master:
        env = {"SCHEMAFLOW_METASTORE_URI": postgres_metastore_server, "SCHEMAFLOW_WAREHOUSE_DIR": str(tmp_path / "warehouse"),
               "SCHEMAFLOW_SPARK_MASTER": master}
        planned = schemaflow(project, "plan", env=env)
        assert planned.returncode == 2, planned.stdout + planned.stderr
        assert f"Starting Spark ({master}) and connecting to {postgres_metastore_server}" in planned.stderr
        applied = schemaflow(project, "apply", "--auto-approve", env=env)
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert applied.stdout.endswith("Applied 3 steps.\n")
        again = schemaflow(project, "plan", env=env)
        assert (again.returncode, again.stdout) == (0, "No changes: the metastore matches the schemas "
                                                       "(databases: on_cluster).\n")
        # The plan with nothing to do read the metastore server without Spark; the two runs that
        # needed Spark were applications of the cluster's master, not local sessions.
        assert again.stderr == f"Reading {postgres_metastore_server} ...\n"
        assert (tmp_path / "master.log").read_text(errors="replace").count("Registering app schemaflow") == 2
        # A change the table cannot take in place is rewritten by the cluster's executors.
        orders = project / "schemas" / "on_cluster" / "orders.yaml"
        orders.write_text(orders.read_text() + "format: orc\n")
        rewritten = schemaflow(project, "apply", "--auto-approve", "--allow-destructive", env=env)
        assert rewritten.returncode == 0, rewritten.stdout + rewritten.stderr
        assert "rewrite table on_cluster.orders: storage (format 'parquet' -> 'orc')" in rewritten.stdout
        assert "copying the rows of on_cluster.orders into on_cluster.orders_rewrite_" in rewritten.stdout
        assert (tmp_path / "master.log").read_text(errors="replace").count("Registering app schemaflow") == 3
        replanned = schemaflow(project, "plan", env=env)
        assert replanned.returncode == 0 and replanned.stdout.startswith("No changes"), replanned.stdout
    # What apply wrote is in PostgreSQL's metastore tables, each object with its version stamp.
    stamped = postgres.query_metastores(
        'SELECT d."NAME", t."TBL_NAME", t."TBL_TYPE" FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
        'JOIN "TABLE_PARAMS" p ON p."TBL_ID" = t."TBL_ID" WHERE p."PARAM_KEY" = \'schemaflow.version\'')
    managed = release_under_test().stores_managed_as
    assert sorted(row for row in stamped if row.startswith("on_cluster|")) == [
        f"on_cluster|orders_backup_|{managed}", f"on_cluster|orders|{managed}", "on_cluster|recent|VIRTUAL_VIEW"]


@pytest.mark.remote
def test_an_unreachable_metastore_is_a_clear_error(tmp_path):

    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    uri = f"thrift://127.0.0.1:{free_port()}"
    result = schemaflow(tmp_path, "plan", env={"SCHEMAFLOW_METASTORE_URI": uri})
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: cannot reach the Hive metastore ({uri})"), result.stderr


@pytest.mark.remote
def test_with_a_metastore_server_and_no_warehouse_dir_a_new_database_goes_where_the_server_puts_it(
        metastore_server, tmp_path, run_python):
    project = tmp_path / "project"
    (project / "schemas" / "placed").mkdir(parents=True)
    (project / "schemas" / "placed" / "t.yaml").write_text("table: placed.t\ncolumns: [{name: id, type: int}]\n")
    (project / "schemaflow.yaml").write_text(metastore_setting(metastore_server))

    applied = schemaflow(project, "apply", "--auto-approve")
    assert applied.returncode == 0, applied.stderr
    assert "-- metastore create_database placed (in the metastore's warehouse directory)" in applied.stdout

    read = run_python(
        "import sys\n"
        "from schemaflow.catalog.hive.metastore import Metastore\n"
        "from schemaflow.catalog.hive.session import spark_session\n"
        "from schemaflow.project import Settings\n"
        "metastore = Metastore.connect(spark_session(Settings(metastore_uri=sys.argv[1], derby_dir=sys.argv[2])))\n"
        "print(metastore.msc.getConfigValue('hive.metastore.warehouse.dir', ''))\n"
        "print(metastore.msc.getDatabase('placed').getLocationUri())\n"
        "print(metastore.msc.getTable('placed', 't').getSd().getLocation())\n",
        metastore_server, str(tmp_path / "reader"))
    assert read.returncode == 0, read.stderr
    server_warehouse, database, table = read.stdout.split()
    assert database == f"file:{server_warehouse}/placed.db"
    assert table == f"{database}/t"
    # Nothing of the warehouse on the machine that ran apply.
    assert not (project / ".schemaflow" / "warehouse").exists() and not (project / "spark-warehouse").exists()
