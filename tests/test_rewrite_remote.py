"""A table rewrite killed with SIGKILL during its copy and during its cut-over, against the metastore server the tests
start: each next ``schemaflow apply`` (a process of its own, as CI runs it) goes on from where the killed one stopped,
and the rows read back at the end are the table's, under its new definition, with the old table kept as its backup.
"""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from schemaflow.project import load_project
from tests.metastore_server import metastore_setting
from tests.projects import done_steps, paused, schemaflow
from schemaflow.workflow import hash_migrations

pytestmark = pytest.mark.remote

DB = "rewrite_killed"
EVENTS = "table: rewrite_killed.events\nusing: parquet\ncolumns: [{{name: id, type: int}}, {{name: {name}, type: string}}]\n" \
         "partitioned_by: [{{name: ds, type: string}}]\n"
RENAME = "description: Rename name\nchanges:\n  - rename_column: {table: rewrite_killed.events, from: name, to: label}\n"
ROWS = [(i, f"n{i}", f"2024-01-0{i % 4 + 1}") for i in range(1, 13)]
# The team's own Spark job on the same metastore. (schemaflow's session, with the metastore client's retries off so
# that an unreachable server fails at once, fails a first statement that is an INSERT into a partitioned data-source
# table: Hive's client reconnects after Spark's first use only with its retries on.)
SESSION = ("import sys\n"
           "from pyspark.sql import SparkSession\n"
           "spark = (SparkSession.builder.master('local[1]').config('spark.hadoop.hive.metastore.uris', sys.argv[1])\n"
           "         .config('spark.sql.warehouse.dir', sys.argv[2]).enableHiveSupport().getOrCreate())\n")


def killed(project: Path, point: str) -> str:
    """``apply --auto-approve --allow-destructive`` stopped at ``point`` and killed with SIGKILL: what it printed."""
    process, marker = paused(project, point, "--allow-destructive")
    os.kill(process.pid, signal.SIGKILL)  # no clean-up of any kind runs
    out, _ = process.communicate()
    marker.unlink()
    return out


def test_a_rewrite_killed_in_its_copy_and_in_its_cut_over_is_finished_by_the_next_runs(metastore_server, tmp_path,
                                                                                         run_python):
    project = tmp_path / "project"
    schemas = project / "schemas" / DB
    schemas.mkdir(parents=True)
    # Tasks of 16 bytes: a chunk (at least eight waves of them) is one partition of these few rows.
    (project / "schemaflow.yaml").write_text(metastore_setting(metastore_server) +
                                             f"warehouse_dir: {tmp_path / 'warehouse'}\n"
                                             "spark: {conf: {spark.sql.files.maxPartitionBytes: '16'}}\n")
    (schemas / "events.yaml").write_text(EVENTS.format(name="name"))
    applied = schemaflow(project, "apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    values = ", ".join(f"({i}, '{n}', '{d}')" for i, n, d in ROWS)
    session = (metastore_server, str(tmp_path / "warehouse"))
    filled = run_python(SESSION + f"spark.sql(\"INSERT INTO {DB}.events VALUES {values}\")\n", *session)
    assert filled.returncode == 0, filled.stderr

    (schemas / "events.yaml").write_text(EVENTS.format(name="label"))
    (project / "migrations").mkdir()
    (project / "migrations" / "0001_rename.yaml").write_text(RENAME)
    hash_migrations(load_project(project))

    # Killed as the copy reports its second partition of four done: two are journaled on the copy.
    first = killed(project, "~: 2 of 4 partitions copied (")
    assert f"copying the rows of {DB}.events into {DB}.events_rewrite_: 4 partitions" in first
    # The next run copies the other two only, and is killed between the two renames of its cut-over.
    second = killed(project, "~renamed ")
    assert f"resuming the copy of {DB}.events: 2 of 4 partitions copied by a stopped run" in second
    assert f"{DB}.events: 4 of 4 partitions copied" in second and "3 of 4 partitions copied" in second
    assert "2 of 4 partitions copied (" not in second

    replanned = schemaflow(project, "plan", "--allow-destructive")
    assert f"rewrite table {DB}.events: finish the cut-over" in replanned.stdout, replanned.stdout
    finished = schemaflow(project, "apply", "--auto-approve", "--allow-destructive")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "copying" not in finished.stdout
    assert f"rewrite table {DB}.events: finish the cut-over" in done_steps(finished.stdout)[0]
    again = schemaflow(project, "plan")
    assert (again.returncode, again.stdout.splitlines()[0]) == (0, f"No changes: the metastore matches the schemas "
                                                                   f"(databases: {DB}).")

    read = run_python(SESSION + "for table in sys.argv[3:]:\n"
                      "    print(sorted(tuple(r) for r in spark.sql(f'SELECT * FROM " + DB + ".{table}').collect()))\n",
                      *session, "events", "events_backup_")
    assert read.returncode == 0, read.stderr
    new, backup = read.stdout.splitlines()
    assert new == backup == repr(sorted(ROWS))
