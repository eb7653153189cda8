"""How schemaflow starts Spark, against real JVMs: the Spark it starts is the operator's (or pyspark's own), never a
``bin/spark-submit`` found above the folder it runs in; and no process it starts carries the metastore's address,
its database's JDBC URL or a ``spark.conf`` value on its command line, where every process of the user reads it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from schemaflow.catalog.hive import local_server
from schemaflow.catalog.hive.thrift_reader import ThriftReader
from schemaflow.project import ENV_LOCAL_SERVER
from tests.projects import ROOT, schemaflow

# What stands for a secret in the project's spark.conf (an S3 key), with characters Java's properties format means
# something by, and some beyond ASCII: the JVM must read it as it is.
SECRET_KEY = "spark.hadoop.fs.s3a.secret.key"
SECRET = "s3cr3t-stand-in/AbC+dEf=gh:ij#k!l\\m ñ 🔑"

# Starts Spark as schemaflow does, with the settings in sys.argv[1] (JSON), watching the processes it starts as it
# starts them; prints what they carried on their command lines and what the session holds, as JSON.
PROBE = """
import dataclasses, json, os, sys, threading, time
from pathlib import Path
from schemaflow.catalog.hive.session import spark_session
from schemaflow.project import Settings

def descendants(root):
    children = {}
    for entry in Path("/proc").iterdir():
        try:
            children.setdefault(int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found

seen = []
def look():
    for pid in descendants(os.getpid()):
        try:
            line = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\\0")[:-1]
        except OSError:
            continue
        if line and line not in seen:
            seen.append(line)

starting = True
def watch():
    while starting:
        look()
        time.sleep(0.02)

watcher = threading.Thread(target=watch)
watcher.start()
settings = Settings(**json.loads(sys.argv[1]))
settings = dataclasses.replace(settings, approved_code=frozenset(code.id for code in settings.spark_code))
try:
    spark = spark_session(settings)
finally:
    starting = False
    watcher.join()
look()
keys = json.loads(sys.argv[2])
jvm = spark._jvm
if len(sys.argv) > 3:
    spark.sql(f"CREATE DATABASE {sys.argv[3]}")
print(json.dumps({
    "command_lines": seen,
    "system": {key: jvm.System.getProperty(key) for key in keys},
    "conf": {key: spark.conf.get(key) for key in keys},
    "databases": [row[0] for row in spark.sql("SHOW DATABASES").collect()],
}))
"""


def probe(tmp_path: Path, settings: dict[str, Any], keys: list[str], create: str | None = None,
          env: dict[str, str] | None = None) -> dict[str, Any]:
    """Start Spark as schemaflow does, in a process of its own, with ``settings`` (``project.Settings``' fields);
    what its processes carried and what the session holds of ``keys``."""
    ran = subprocess.run([sys.executable, "-c", PROBE, json.dumps(settings), json.dumps(keys), *filter(None, [create])],
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout.splitlines()[-1])


def the_driver(command_lines: list[list[str]]) -> list[str]:
    """The driver JVM's command line among ``command_lines``: the ``java`` that runs Spark's ``SparkSubmit`` (not the
    launcher's, which is given the same arguments to build that command)."""
    [driver] = [line for line in command_lines if line[0].endswith("java") and "org.apache.spark.deploy.SparkSubmit"
                in line and "org.apache.spark.launcher.Main" not in line]
    return driver


def assert_nothing_secret(command_lines: list[list[str]], *secrets: str) -> None:
    for line in command_lines:
        text = " ".join(line)
        for secret in secrets:
            assert secret not in text, f"{secret!r} on the command line {text}"


def site_defaults_folder(folder: Path, entries: str) -> Path:
    """A ``SPARK_CONF_DIR`` whose spark-defaults.conf holds ``entries`` after the run's own site's, if it has one."""
    folder.mkdir()
    run_site = Path(os.environ["SPARK_CONF_DIR"]) / "spark-defaults.conf" if os.environ.get("SPARK_CONF_DIR") else None
    (folder / "spark-defaults.conf").write_text((run_site.read_text() if run_site else "") + entries)
    return folder


@pytest.mark.spark
@pytest.mark.remote
def test_against_a_metastore_server_no_command_line_carries_its_address_or_a_spark_conf_value(tmp_path,
                                                                                             metastore_server):
    site = site_defaults_folder(tmp_path / "site", "spark.sql.shuffle.partitions 7\nspark.sql.session.timeZone UTC\n")
    database = f"launch_{uuid.uuid4().hex[:12]}"
    keys = ["spark.hadoop.hive.metastore.uris", SECRET_KEY, "spark.sql.shuffle.partitions", "spark.sql.session.timeZone"]
    settings = {"metastore_uri": metastore_server, "warehouse_dir": str(tmp_path / "warehouse"),
                "derby_dir": str(tmp_path / "state"), "root": str(tmp_path), "spark_master": "local[1]",
                "spark_conf": {SECRET_KEY: SECRET, "spark.sql.session.timeZone": "Europe/Paris"}}
    found = probe(tmp_path, settings, keys, create=database, env={"SPARK_CONF_DIR": str(site)})

    address = metastore_server.removeprefix("thrift://")
    assert_nothing_secret(found["command_lines"], address, SECRET, "s3cr3t", "jdbc:")
    driver = the_driver(found["command_lines"])
    assert driver[driver.index("org.apache.spark.deploy.SparkSubmit") + 1:][::2] == ["--properties-file",
                                                                                   "pyspark-shell"]
    properties = Path(driver[-2])
    assert not properties.exists() and not properties.parent.exists()  # read, and removed
    # The JVM read them from the file, as it is (its system properties are what spark-submit was given), with the
    # site's spark-defaults.conf beneath the project's settings, as before.
    expected = {"spark.hadoop.hive.metastore.uris": metastore_server, SECRET_KEY: SECRET,
                "spark.sql.shuffle.partitions": "7", "spark.sql.session.timeZone": "Europe/Paris"}
    assert found["system"] == found["conf"] == expected
    # The session is the server's: what it created there is read back over Thrift, without a JVM.
    assert database in found["databases"]
    reader = ThriftReader.connect(metastore_server)
    try:
        assert database in reader.databases()
    finally:
        reader.close()


@pytest.mark.spark
def test_with_the_embedded_metastore_no_command_line_carries_its_jdbc_url_or_a_spark_conf_value(tmp_path):
    keys = ["spark.hadoop.javax.jdo.option.ConnectionURL", SECRET_KEY]
    settings = {"warehouse_dir": str(tmp_path / "warehouse"), "derby_dir": str(tmp_path / "state"),
                "root": str(tmp_path), "spark_master": "local[1]", "spark_conf": {SECRET_KEY: SECRET}}
    found = probe(tmp_path, settings, keys, env={"SPARK_CONF_DIR": ""})

    assert_nothing_secret(found["command_lines"], SECRET, "s3cr3t", "jdbc:", "databaseName")
    driver = the_driver(found["command_lines"])
    assert not Path(driver[-2]).parent.exists()
    url = f"jdbc:derby:;databaseName={tmp_path / 'state' / 'metastore_db'};create=true"
    assert found["system"] == found["conf"] == {"spark.hadoop.javax.jdo.option.ConnectionURL": url, SECRET_KEY: SECRET}
    assert found["databases"] == ["default"]
    assert (tmp_path / "state" / "metastore_db").is_dir()  # the embedded database the session opened


def write_project(project: Path) -> None:
    """A project of one table (its plan needs no Spark to check a view)."""
    (project / "schemas" / "sales").mkdir(parents=True)
    (project / "schemaflow.yaml").write_text("databases: [sales]\n")
    (project / "schemas" / "sales" / "orders.yaml").write_text("table: sales.orders\ncolumns: [{name: id, type: int}]\n")


def hostile_spark(folder: Path, marker: Path) -> None:
    """What pyspark takes for a Spark installation in ``folder`` (a ``bin/spark-submit`` and a ``jars/``), committed
    by a pull request: it would leave ``marker`` and end."""
    (folder / "bin").mkdir(parents=True)
    (folder / "jars").mkdir()
    (folder / "bin" / "spark-submit").write_text(f'#!/bin/sh\necho "$0 ran in $PWD" >> {marker}\nexit 1\n')
    (folder / "bin" / "spark-submit").chmod(0o755)


@pytest.mark.spark
def test_spark_committed_above_the_folder_schemaflow_runs_in_is_never_started(tmp_path):
    """A project in a subfolder of its repository, run from its folder and from ``schemas/``; SPARK_HOME unset (pip's
    pyspark) or empty: pyspark would look in ``../`` first, or run ``./bin/spark-submit``."""
    repository, marker = tmp_path / "repository", tmp_path / "ran"
    project = repository / "warehouse"
    write_project(project)
    hostile_spark(repository, marker)
    hostile_spark(project, marker)
    for folder, spark_home in ((project, None), (project / "schemas", None), (project, "")):
        ran = schemaflow(folder, "plan", env={"SPARK_HOME": spark_home, ENV_LOCAL_SERVER: "0"})
        assert ran.returncode == 2, ran.stderr
        assert "Starting Spark (local[2]) and connecting to the embedded metastore" in ran.stderr
        assert ran.stdout.strip().endswith("Plan: 2 to create, 0 to change, 0 to drop.")
        assert not marker.exists(), marker.read_text()


@pytest.mark.spark
def test_the_local_metastore_servers_command_lines_carry_no_jdbc_url(tmp_path):
    project = tmp_path / "project"
    write_project(project)
    state = project / ".schemaflow"
    try:
        first = schemaflow(project, "plan", env={ENV_LOCAL_SERVER: "1"})
        assert first.returncode == 2 and "Starting a local metastore server" in first.stderr, first.stderr
        served = local_server.running(state)
        assert served is not None
        lines = [Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
                 for pid in (served.pid, served.server_pid)]
        assert_nothing_secret(lines, "jdbc:", "databaseName", "metastore_db")
        [arguments] = {word for line in lines for word in line if word.startswith("@")}  # the watcher's and server's
        assert not Path(arguments[1:]).exists()  # read by the server, and removed
        again = schemaflow(project, "plan", env={ENV_LOCAL_SERVER: "1"})  # read through the server: it serves
        assert again.returncode == 2 and "Starting Spark" not in again.stderr, again.stderr
        assert again.stdout == first.stdout
    finally:
        local_server.stop(state)
