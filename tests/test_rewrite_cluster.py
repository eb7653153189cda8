"""A table rewrite on a Spark standalone cluster (a master and a worker of one core the test starts): the copy runs on
the cluster's executor, reading and writing the warehouse folder the driver names and the metastore server the tests
start; the driver killed with SIGKILL part-way through the copy leaves the journal, from which the next apply goes on
without copying again what the killed one had verified; the copy is verified chunk by chunk as on ``local``, and the
rows read back afterwards are the table's under its new definition, the old table kept as its backup."""
from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest

from schemaflow.catalog.hive.rewrite_copy import COPIED_PREFIX
from schemaflow.catalog.hive.thrift_reader import ThriftReader
from tests.metastore_server import metastore_setting
from tests.projects import paused, resume, schemaflow
from tests.spark_cluster import standalone_cluster

pytestmark = [pytest.mark.remote, pytest.mark.one_release]

DB = "rewrite_cluster"
# Spark widens no column of a data-source table in place: int -> bigint is a rewrite.
EVENTS = (f"table: {DB}.events\nusing: parquet\ncolumns: [{{{{name: id, type: {{id}}}}}}, {{{{name: name, type: string}}}}]\n"
          "partitioned_by: [{{name: ds, type: string}}]\n")
ROWS = [(i, f"n{i}", f"2024-01-0{i % 4 + 1}") for i in range(1, 13)]
# The team's own Spark job on the same metastore and warehouse (local: it only fills the table and reads it back).
SESSION = ("import sys\n"
           "from pyspark.sql import SparkSession\n"
           "spark = (SparkSession.builder.master('local[1]').config('spark.hadoop.hive.metastore.uris', sys.argv[1])\n"
           "         .config('spark.sql.warehouse.dir', sys.argv[2]).enableHiveSupport().getOrCreate())\n")


def jvms(pid: int) -> list[int]:
    """The JVMs the process ``pid`` started."""
    found = []
    for entry in (e for e in Path("/proc").iterdir() if e.name.isdigit()):
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "comm").read_text().strip()
        except (OSError, ValueError, IndexError):
            continue
        if parent == pid and command == "java":
            found.append(int(entry.name))
    return found


def journal(uri: str) -> dict[str, list[list[object]]]:
    """The journal on the staging table: each of its parameters with the units it marks."""
    [staging] = ThriftReader(uri).named_table_data(DB, ["events_rewrite_"])
    return {k: json.loads(v) for k, v in staging["parameters"].items() if k.startswith(COPIED_PREFIX)}


def test_a_rewrite_on_a_standalone_cluster_killed_in_its_copy_resumes_from_its_journal(metastore_server, tmp_path,
                                                                                       run_python):
    project, warehouse = tmp_path / "project", tmp_path / "warehouse"
    schemas = project / "schemas" / DB
    schemas.mkdir(parents=True)
    (schemas / "events.yaml").write_text(EVENTS.format(id="int"))
    session = (metastore_server, str(warehouse))
    with standalone_cluster(tmp_path) as master:
        # Tasks of 16 bytes: a chunk (eight waves of them on the cluster's two task slots at least) is one partition.
        (project / "schemaflow.yaml").write_text(
            metastore_setting(metastore_server) + f"warehouse_dir: {warehouse}\n"
            f"spark: {{master: '{master}', conf: {{spark.sql.files.maxPartitionBytes: '16', "
            "spark.executor.memory: 512m}}\n")
        applied = schemaflow(project, "apply", "--auto-approve")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        values = ", ".join(f"({i}, '{n}', '{d}')" for i, n, d in ROWS)
        filled = run_python(SESSION + f"spark.sql(\"INSERT INTO {DB}.events VALUES {values}\")\n", *session)
        assert filled.returncode == 0, filled.stderr
        (schemas / "events.yaml").write_text(EVENTS.format(id="bigint"))

        # The driver (the JVM schemaflow's Python started) killed with SIGKILL as the copy reports its second
        # partition of four verified, then schemaflow's process: no clean-up of any kind runs.
        process, marker = paused(project, "~: 2 of 4 partitions copied (", "--allow-destructive")
        [driver] = jvms(process.pid)
        os.kill(driver, signal.SIGKILL)
        os.kill(process.pid, signal.SIGKILL)
        first, _ = process.communicate()
        marker.unlink()
        assert f"copying the rows of {DB}.events into {DB}.events_rewrite_: 4 partitions" in first
        killed = journal(metastore_server)
        assert sorted(unit for entries in killed.values() for unit, _ in entries) == [["2024-01-01"], ["2024-01-02"]]

        # The next apply goes on from the journal: paused after its last chunk, the killed run's marks are as they
        # were and only the two partitions left were copied (a chunk each).
        process, marker = paused(project, "~: 4 of 4 partitions copied (", "--allow-destructive")
        resumed = journal(metastore_server)
        code, second, errors = resume(process, marker)
        assert code == 0, second + errors
        assert {k: resumed[k] for k in killed} == killed
        added = [units for k, units in sorted(resumed.items()) if k not in killed]
        assert [[unit for unit, _ in units] for units in added] == [[["2024-01-03"]], [["2024-01-04"]]]
        assert f"resuming the copy of {DB}.events: 2 of 4 partitions copied by a stopped run" in second
        assert "1 of 4 partitions copied" not in second and "2 of 4 partitions copied (" not in second
        assert f"rewrite table {DB}.events: change type of id from int to bigint" in second
        again = schemaflow(project, "plan")
        assert (again.returncode, again.stdout.splitlines()[0]) == (
            0, f"No changes: the metastore matches the schemas (databases: {DB}).")

    # Both applies that copied were applications of the cluster, whose executor ran the copy's tasks.
    master_log = (tmp_path / "master.log").read_text(errors="replace")
    assert master_log.count("Registering app schemaflow") == 3  # the first apply, the killed one, the resumed one
    # The first apply only creates the table: it may end before the worker launches its executor, so only the two
    # copying applications (by the IDs the master gave them, in order) must have executor directories.
    registered = re.findall(r"Registered app schemaflow with ID (app-[\w-]+)", master_log)
    assert len(registered) == 3, registered
    for copied in registered[1:]:
        stderr = list((tmp_path / "work" / copied).glob("*/stderr"))
        assert any("Finished task" in e.read_text(errors="replace") for e in stderr), copied
    read = run_python(SESSION + "for table in sys.argv[3:]:\n"
                      "    print(sorted(tuple(r) for r in spark.sql(f'SELECT * FROM " + DB + ".{table}').collect()))\n",
                      *session, "events", "events_backup_")
    assert read.returncode == 0, read.stderr
    new, backup = read.stdout.splitlines()
    assert new == backup == repr(sorted(ROWS))
