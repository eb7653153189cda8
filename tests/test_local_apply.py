"""apply on the embedded metastore through its local server (``catalog.hive.local_server``): the server stays up across
plan, apply and plan, another process reads the metastore while an apply runs, and a change that process makes to an
object the apply holds is refused by the guard (the server's compare-and-swap) rather than overwritten.

The test run turns the server off for every other test (``SCHEMAFLOW_LOCAL_SERVER=0``, conftest); this one turns it on
and stops what it started. It rests on the compare-and-swap of the server's Hive (pyspark 4's jars; with pyspark 3.5's,
apply opens the database itself, as ``test_local_server.py`` pins): CI runs it with the newest pyspark only.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from schemaflow.catalog.hive import local_server
from schemaflow.claims import parse_claim
from schemaflow.model import VERSION_KEY
from schemaflow.project import ENV_LOCAL_SERVER
from tests.projects import ROOT, paused, resume, schemaflow, serving

# The second client: a plain Spark session of the user's own pointed at the server, as a notebook's is. It reads the
# tables and the version the apply claimed retail.orders with, then writes that version as another writer would.
NOTEBOOK = """
import sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.hadoop.hive.metastore.uris", sys.argv[1])
         .config("spark.ui.enabled", "false").enableHiveSupport().getOrCreate())
print(sorted(row.tableName for row in spark.sql("SHOW TABLES IN retail").collect()))
print(spark.sql("SHOW TBLPROPERTIES retail.orders").where("key = '{key}'").collect()[0].value)
spark.sql("ALTER TABLE retail.orders SET TBLPROPERTIES ('{key}' = 'a notebook')")
""".replace("{key}", VERSION_KEY)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The README's example warehouse with its local server on (a minute unused), the server stopped at the end."""
    for name in ("schemas", "migrations"):
        shutil.copytree(ROOT / name, tmp_path / name)
    shutil.copy(ROOT / "schemaflow.yaml", tmp_path)
    monkeypatch.setenv(ENV_LOCAL_SERVER, "1")
    yield tmp_path
    local_server.stop(tmp_path / ".schemaflow")


@pytest.mark.spark
@pytest.mark.one_release
def test_apply_writes_through_the_server_which_a_notebook_shares_and_the_guard_holds_against_it(project):
    planned = schemaflow(project, "plan")
    assert planned.returncode == 2, planned.stderr
    served = serving(project)

    applied = schemaflow(project, "apply", "--auto-approve")
    assert applied.returncode == 0, applied.stderr
    assert "Stopping the local metastore server" not in applied.stderr
    assert serving(project) == served  # the same server, the same processes
    assert (project / ".schemaflow" / "metastore_db").exists() and not (project / "metastore_db").exists()
    again = schemaflow(project, "plan")
    assert again.returncode == 0, again.stderr
    assert "No changes: the metastore matches the schemas" in again.stdout
    assert "Starting" not in again.stderr  # neither a server nor Spark: the plan after an apply is a warm one

    orders = project / "schemas" / "retail" / "orders.yaml"
    orders.write_text(orders.read_text().replace(
        '  - {name: amount, type: "decimal(12,2)"}\n',
        '  - {name: amount, type: "decimal(12,2)"}\n  - {name: channel, type: string}\n'))
    process, marker = paused(project, "claimed")  # retail.orders now holds this run's claim
    notebook = subprocess.run([sys.executable, "-c", NOTEBOOK, served.uri], cwd=project, capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL)
    code, out, err = resume(process, marker)
    assert notebook.returncode == 0, notebook.stderr[-3000:]
    tables, claim = notebook.stdout.strip().splitlines()[-2:]
    assert tables == repr(sorted(path.stem for path in (project / "schemas" / "retail").glob("*.yaml")))
    held = parse_claim(claim)  # the notebook saw the apply's claim, made by the paused process
    assert held is not None and held.pid == process.pid, claim
    assert code == 1, out + err
    assert "error: step 1 failed (add 1 column to retail.orders: channel string): retail.orders was modified " \
           "concurrently: its schemaflow.version is 'a notebook'" in err, err
    assert serving(project) == served
    after = schemaflow(project, "plan")
    assert after.returncode in (0, 2) and "Starting" not in after.stderr, after.stdout + after.stderr
