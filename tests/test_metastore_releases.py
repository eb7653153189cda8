"""schemaflow against the metastore servers of the Hive lines production runs: 3.1 and 4.0.

The rest of the remote suite runs against the release ``SCHEMAFLOW_TEST_METASTORE`` names (Hive 2.3,
pyspark's own, by default; ``.ci/metastore_versions.py`` runs it against each). Here each later line is
started from its binary distribution on Maven Central (``tests/artifacts.py``), its schema created by
its own schema tool, and the example warehouse is planned and applied through it with Spark's built-in
client, as a team on that server would, each outcome read back from the server without Spark:

- Hive 3.1 creates everything and plans "No changes" again, but lacks the compare-and-swap guard
  (HIVE-26882 came with 2.3.10 and 4.0, never to 3.1): a change to an existing table is refused with
  the reason, before anything is written, unless the project guards by the metastore's table lock
  (``metastore.guard: lock``): then it lands, and a plan another apply overtook is refused.
- Hive 3.1 on PostgreSQL selects no partitions by a key that is not a string: a rewrite of a table partitioned
  by a date still copies every row (Spark selects them).
- Hive 4.0 removed ``get_table``, the call Spark's built-in Hive client reads every table with, and kept
  ``get_table_req``: tables Hive 4's own client made (``tests/HiveTables.java``) are imported, planned and checked
  for drift without Spark; apply with Spark's built-in client refuses the server in one line, before Spark starts
  or anything is changed, and says how to give Spark Hive 4's client, with which it takes every step (on
  PostgreSQL; Hive 4.0.1 on Derby fails its own compare-and-swap).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from schemaflow.catalog.hive.thrift_reader import ThriftReader
from schemaflow.spark_version import installed
from tests.metastore_server import (RELEASES, TEST_JAVA_OPTIONS, MetastoreServer, derby_with_transaction_tables,
                                    give_client, java_binary, other_client)
from tests.postgres_server import PostgresServer
from tests.projects import schemaflow as run

pytestmark = [pytest.mark.remote, pytest.mark.one_release]
ROOT = Path(__file__).resolve().parent.parent


def server(release: str, workdir: Path) -> MetastoreServer:
    """A server of ``release`` on a Derby database its own schema tool created."""
    template = derby_with_transaction_tables(workdir / "template", TEST_JAVA_OPTIONS, release=RELEASES[release])
    return MetastoreServer(workdir / "server", derby_from=template, release=RELEASES[release],
                           java_options=TEST_JAVA_OPTIONS, settings={"datanucleus.connectionPoolingType": "HikariCP"})


def example(workdir: Path) -> Path:
    project = workdir / "project"
    for folder in ("schemas", "migrations"):
        shutil.copytree(ROOT / folder, project / folder)
    shutil.copy(ROOT / "schemaflow.yaml", project)
    return project


def schemaflow(project: Path, uri: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # Each test here names its server's line and gives the Hive client it needs itself: not the run's site client.
    return run(project, *args, env={"SPARK_CONF_DIR": None, "SCHEMAFLOW_METASTORE_URI": uri,
                                    "SCHEMAFLOW_WAREHOUSE_DIR": str(project.parent / "warehouse"), **(env or {})})


def test_hive_3_1_creates_the_example_and_refuses_changes_it_cannot_guard(tmp_path: Path) -> None:
    with server("3.1", tmp_path) as hive:
        project = example(tmp_path)
        applied = schemaflow(project, hive.uri, "apply", "--auto-approve")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert "Applied 12 steps." in applied.stdout
        again = schemaflow(project, hive.uri, "plan")
        assert (again.returncode, again.stderr) == (0, f"Reading {hive.uri} ...\n"), again.stdout + again.stderr
        assert again.stdout.startswith("No changes: the metastore matches the schemas (databases: analytics, retail).")

        customers = project / "schemas" / "retail" / "customers.yaml"
        customers.write_text(customers.read_text().replace(
            "  - {name: signed_up, type: date}\n", "  - {name: signed_up, type: date}\n  - {name: tier, type: string}\n"))
        refused = schemaflow(project, hive.uri, "apply", "--auto-approve")
        assert refused.returncode == 1
        assert refused.stderr.splitlines()[-1] == (
            f"error: the metastore ({hive.uri}) ignores compare-and-swap guards on alter_table: it lacks HIVE-26882 "
            "(in Hive 2.3.10 and later 2.3 releases, the metastore bundled with pyspark 4 among them; no Hive 3.1 "
            "release has it), so schemaflow cannot make sure it overwrites nothing it did not see; nothing was "
            "applied. Run a metastore server of Hive 2.3.10 or later 2.3, or set metastore.guard: lock in "
            "schemaflow.yaml to guard each write with the metastore's table lock (safe against writers that take "
            "it: schemaflow, Iceberg, Hive's transactions; not against a plain Spark ALTER TABLE).")
        live = ThriftReader.connect(hive.uri).read(("retail",)).objects["retail.customers"]
        assert [column.name for column in live.columns] == ["customer_id", "name", "segment", "country", "signed_up"]

        # Guarded by the table lock instead, the change lands (what the lock guards: the test below).
        settings = project / "schemaflow.yaml"
        settings.write_text(settings.read_text() + "metastore: {guard: lock}\n")
        applied = schemaflow(project, hive.uri, "apply", "--auto-approve")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        live = ThriftReader.connect(hive.uri).read(("retail",)).objects["retail.customers"]
        assert [column.name for column in live.columns][-1] == "tier"
        again = schemaflow(project, hive.uri, "plan")
        assert (again.returncode, again.stderr) == (0, f"Reading {hive.uri} ...\n"), again.stdout + again.stderr


@pytest.mark.spark
def test_on_hive_3_1_the_lock_guard_refuses_the_write_its_ignored_compare_and_swap_lets_through(
        spark, tmp_path: Path) -> None:
    from schemaflow.catalog.hive.metastore import Metastore
    from schemaflow.errors import ConcurrentChange

    with server("3.1", tmp_path) as hive:
        project = example(tmp_path)
        assert schemaflow(project, hive.uri, "apply", "--auto-approve").returncode == 0
        with other_client(spark, hive.uri, RELEASES["3.1"]) as plain:
            guarded = Metastore(spark, plain.msc, hive.uri, lock_guards=True)

            def parameters() -> dict[str, str]:
                return dict(plain.msc.getTable("retail", "customers").getParameters())

            version = parameters()["schemaflow.version"]
            with pytest.raises(ConcurrentChange, match="its schemaflow.version is"):
                guarded.set_parameters("retail.customers", {"note": "guarded"}, [], expected="another version")
            assert "note" not in parameters()
            # Without the lock, the compare-and-swap a 3.1 server ignores lets the same write through.
            plain.set_parameters("retail.customers", {"note": "unguarded"}, [], expected="another version")
            assert parameters()["note"] == "unguarded"
            # With the version the table holds, the guarded write lands, and its lock is let go.
            guarded.set_parameters("retail.customers", {"note": "guarded"}, [], expected=version)
            guarded.set_parameters("retail.customers", {"note": "again"}, [], expected=version)
            assert parameters()["note"] == "again" and not guarded.held_locks


@pytest.mark.spark
def test_hive_3_1_on_postgresql_selects_no_partitions_by_date_so_spark_selects_those_a_rewrite_copies(
        postgres: PostgresServer, spark, tmp_path: Path) -> None:
    """Hive 3.1 on PostgreSQL refuses to select partitions by a key that is not a string ("Filtering is supported
    only on partition keys of type string"), as a rewrite's chunks do (2.3, and 3.1 on Derby, select them): Spark
    selects them itself, and the ORC table partitioned by a date is converted to Iceberg by copying, every row kept."""
    from tests import iceberg_java
    from tests.conversions import filled

    release = RELEASES["3.1"]
    with MetastoreServer(tmp_path / "server", settings=postgres.metastore_settings(postgres.new_database(release=release)),
                         classpath=[postgres.jdbc_jar], java_options=TEST_JAVA_OPTIONS, release=release) as hive:
        project, env, written = filled(tmp_path, spark, hive.uri, "dates.orders", "orc", 2, release)
        applied = subprocess.run([sys.executable, "-m", "schemaflow", "apply", "--auto-approve", "--allow-destructive"],
                                 cwd=project, capture_output=True, text=True, timeout=600,
                                 env={**os.environ, "PYTHONPATH": str(ROOT), **env})
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert "copying the rows of dates.orders into dates.orders_rewrite_: 2 partitions" in applied.stdout
        assert iceberg_java.read(hive.uri, "dates.orders").rows == tuple(sorted(
            f"Record({i}, {amount}, {note}, {dt.isoformat()})" for dt, rows in written.items() for i, amount, note in rows))


def test_hive_4_0_is_read_without_spark_and_apply_with_spark_s_built_in_client_is_refused_before_it_starts(tmp_path: Path) -> None:
    with server("4.0", tmp_path) as hive:
        made = subprocess.run([java_binary(), *TEST_JAVA_OPTIONS, "-cp", os.pathsep.join(RELEASES["4.0"].classpath()),
                               str(ROOT / "tests" / "HiveTables.java"), hive.uri, "sales"],
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert made.returncode == 0, made.stdout + made.stderr
        # Import, plan, drift and history read it without Spark, through the calls Hive 4 kept.
        project = tmp_path / "adopted"
        (project / "schemas").mkdir(parents=True)
        imported = schemaflow(project, hive.uri, "import", "--database", "sales")
        assert imported.returncode == 0, imported.stdout + imported.stderr
        assert "Imported 2 of 2 objects of sales." in imported.stdout
        orders = project / "schemas" / "sales" / "orders.yaml"
        assert orders.read_text().splitlines()[4:] == [
            "columns:", "  - {name: id, type: bigint}", "  - {name: amount, type: 'decimal(10,2)', comment: in euros}",
            "partitioned_by:", "  - {name: dt, type: string}"]
        assert (project / "schemas" / "sales" / "big_orders.yaml").read_text() == (
            "view: sales.big_orders\ncolumns:\n  - {name: id}\nsql: |\n  SELECT id FROM sales.orders WHERE amount > 100\n")
        for command, code, said in (
                ("plan", 0, "No changes: the metastore matches the schemas (databases: sales).\n"),
                ("history", 0, "Nothing applied by schemaflow in these databases yet.\n"),
                ("drift", 2, "sales.big_orders: no record of what schemaflow applied (re-created outside schemaflow, or "
                             "never applied): plan shows how it differs\n")):
            ran = schemaflow(project, hive.uri, command)
            assert (ran.returncode, ran.stderr) == (code, f"Reading {hive.uri} ...\n"), ran.stdout + ran.stderr
            assert ran.stdout.startswith(said), ran.stdout

        orders.write_text(orders.read_text() + "comment: Orders\n")
        planned = schemaflow(project, hive.uri, "plan")
        assert planned.returncode == 2, planned.stdout + planned.stderr
        assert "~ 1. comment on table sales.orders: (none) -> 'Orders'" in planned.stdout, planned.stdout
        refusal = (f"error: the metastore {hive.uri} does not know get_table (Invalid method name: 'get_table'), the "
                   "call Spark's built-in Hive client reads every table with: it is a Hive 4 server, which removed "
                   "it; nothing was applied. Give Spark (4.0 or later) Hive 4's client in schemaflow.yaml: spark.conf "
                   "spark.sql.hive.metastore.version: 4.0.1, spark.sql.hive.metastore.jars: path and "
                   "spark.sql.hive.metastore.jars.path: its jars (or the same in your Spark's spark-defaults.conf)")
        # apply is refused before Spark starts: nothing is created or changed.
        for folder in (project, example(tmp_path)):
            refused = schemaflow(folder, hive.uri, "apply", "--auto-approve")
            assert (refused.returncode, refused.stderr.splitlines()[-1]) == (1, refusal), refused.stdout + refused.stderr
            assert "Starting Spark" not in refused.stderr
        reader = ThriftReader.connect(hive.uri)
        assert reader.databases() == ("default", "sales")
        assert reader.read(("sales",)).objects["sales.orders"].comment is None

def test_hive_4_0_on_postgresql_takes_every_step_through_spark_s_hive_4_client(postgres: PostgresServer,
                                                                               tmp_path: Path) -> None:
    """With Hive 4's client jars (``spark.sql.hive.metastore.version`` and ``jars`` in the project's Spark settings),
    Spark 4 reaches a Hive 4 server, and so does schemaflow: the example is created, planned "No changes" without
    Spark, and changed, each write guarded by the server's own compare-and-swap (apply probes that the server
    refuses a stale guard before it writes), an Iceberg table's commits under the server's lock as well. Hive 4
    makes each managed table Spark creates an external one that purges its files; read back, it is the managed table
    the project declares. A Parquet table converted to Iceberg in place keeps an external backup over the Iceberg
    table's files that does not purge them."""
    release = RELEASES["4.0"]
    with MetastoreServer(tmp_path / "server", settings=postgres.metastore_settings(postgres.new_database(release=release)),
                         classpath=[postgres.jdbc_jar], java_options=TEST_JAVA_OPTIONS, release=release) as hive:
        project = example(tmp_path)
        clicks = project / "schemas" / "retail" / "clicks.yaml"
        clicks.write_text("table: retail.clicks\nformat: iceberg\ncolumns:\n  - {name: ts, type: timestamp}\n"
                          "  - {name: id, type: bigint}\npartitioned_by: [day(ts)]\n")
        archive = project / "schemas" / "retail" / "archive.yaml"
        archive.write_text("table: retail.archive\nformat: parquet\ncolumns:\n  - {name: id, type: bigint}\n")
        approved = give_client(project, release)
        applied = schemaflow(project, hive.uri, "apply", "--auto-approve", env=approved)
        if refused_on_spark_3_5(applied, hive.uri):
            return
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert "Applied 14 steps." in applied.stdout
        for command, said in (("plan", "No changes: the metastore matches the schemas (databases: analytics, retail).\n"),
                              ("drift", "No drift: every object schemaflow applied is as it left it.\n")):
            again = schemaflow(project, hive.uri, command, env=approved)
            assert (again.returncode, again.stderr) == (0, f"Reading {hive.uri} ...\n"), again.stdout + again.stderr
            assert again.stdout.startswith(said), again.stdout
        reader = ThriftReader.connect(hive.uri)
        [stored] = [t for t in reader.table_data("retail") if t["tableName"] == "customers"]
        assert (stored["tableType"], stored["parameters"]["TRANSLATED_TO_EXTERNAL"]) == ("EXTERNAL_TABLE", "TRUE")
        assert reader.read(("retail",)).objects["retail.customers"].external is False

        customers = project / "schemas" / "retail" / "customers.yaml"
        customers.write_text(customers.read_text().replace(
            "  - {name: signed_up, type: date}\n", "  - {name: signed_up, type: date}\n  - {name: tier, type: string}\n"))
        clicks.write_text(clicks.read_text().replace("type: bigint}\n", "type: bigint}\n  - {name: page, type: string}\n"))
        archive.write_text(archive.read_text().replace("format: parquet", "format: iceberg"))
        changed = schemaflow(project, hive.uri, "apply", "--auto-approve", env=approved)
        assert changed.returncode == 0, changed.stdout + changed.stderr
        assert "] add 1 column to retail.customers: tier string ... done" in changed.stdout
        assert "] alter Iceberg table retail.clicks: add page string ... done" in changed.stdout
        live = reader.read(("retail",)).objects
        assert [c.name for c in live["retail.customers"].columns][-1] == "tier"
        assert [c.name for c in live["retail.clicks"].columns] == ["ts", "id", "page"]
        # The Parquet table converted in place is kept as an external backup over the Iceberg table's files: without
        # Hive 4's purge flag, which would delete them with it.
        assert live["retail.archive"].iceberg is not None and live["retail.archive_backup_"].external
        [backup] = [t for t in reader.table_data("retail") if t["tableName"] == "archive_backup_"]
        assert (backup["tableType"], "external.table.purge" in backup["parameters"]) == ("EXTERNAL_TABLE", False)
        again = schemaflow(project, hive.uri, "plan", env=approved)
        assert again.returncode == 0 and again.stdout.startswith("No changes"), again.stdout + again.stderr


def test_hive_4_0_on_derby_fails_its_own_compare_and_swap_and_the_apply_says_why_and_what_it_applied(
        tmp_path: Path) -> None:
    """Hive 4.0's schema keeps table parameters in a CLOB column on Derby, which Derby cannot compare, so the
    server fails every guarded write ("Comparisons between 'CLOB (UCS_BASIC)' and 'CLOB (UCS_BASIC)' are not
    supported", in its log): the first one, the stamp of the first table created, stops the apply with the reason."""
    with server("4.0", tmp_path) as hive:
        project = example(tmp_path)
        applied = schemaflow(project, hive.uri, "apply", "--auto-approve", env=give_client(project, RELEASES["4.0"]))
        if refused_on_spark_3_5(applied, hive.uri):
            return
        assert applied.returncode == 1, applied.stdout + applied.stderr
        assert ("error: step 3 failed (create table analytics.marketing_spend (3 columns, parquet)): the metastore "
                f"({hive.uri}) cannot run the compare-and-swap that guards the write of analytics.marketing_spend: its database cannot compare table parameters (a "
                "Hive 4 metastore on Derby keeps them in a CLOB column, which Derby cannot compare), so it fails every "
                "guarded write. Run the metastore on PostgreSQL, MySQL or another database Hive supports") \
            in applied.stderr.splitlines()
        assert "applied (2):\n  1. create database analytics\n  2. create database retail\n" in applied.stderr
        assert "Comparisons between 'CLOB (UCS_BASIC)' and 'CLOB (UCS_BASIC)' are not supported" in \
            (hive.workdir / "derby.log").read_text()


def refused_on_spark_3_5(applied: subprocess.CompletedProcess[str], uri: str) -> bool:
    """Whether this is Spark 3.5, which has no Hive 4 client: then the apply was refused before the JVM started, in one
    line, and nothing was created."""
    found = installed()
    assert found is not None
    if found[0] >= (4, 0):
        return False
    assert (applied.returncode, applied.stderr.splitlines()) == (1, [
        f"Starting Spark (local[2]) and connecting to {uri} ...",
        f"error: spark.sql.hive.metastore.version: 4.0.1 in spark.conf: Hive 4's client came with Spark 4.0, and this "
        f"is pyspark {found[1]}; apply with Spark 4.0 or later; nothing was run"]), applied.stderr
    assert ThriftReader.connect(uri).databases() == ("default",)
    return True
