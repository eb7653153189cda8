"""The embedded metastore served by a local metastore server (``catalog.hive.local_server``): started by the first command
that reads it, read without a JVM by the next ones, written through by apply, stopped after its idle time, shared
with a Spark session of the user's own; and what a command does when it cannot start.

The test run turns the server off for every other test (``SCHEMAFLOW_LOCAL_SERVER=0``, conftest); these turn it
on, and stop what they started.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from schemaflow.catalog.hive import local_server
from schemaflow.errors import SchemaflowError
from schemaflow.project import ENV_LOCAL_SERVER, load_project
from tests.projects import ROOT, schemaflow, serving

SERVED = {ENV_LOCAL_SERVER: "1"}  # a minute unused: anything a failed run leaves ends by itself


@pytest.fixture
def example(tmp_path: Path) -> Iterator[Path]:
    """The README's example warehouse, its local server stopped at the end."""
    for name in ("schemas", "migrations"):
        shutil.copytree(ROOT / name, tmp_path / name)
    shutil.copy(ROOT / "schemaflow.yaml", tmp_path)
    yield tmp_path
    local_server.stop(tmp_path / ".schemaflow")


def _listening_addresses(port: int) -> set[str]:
    """The local addresses this machine listens on ``port`` at (hex, as Linux's socket tables write them)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for fields in map(str.split, Path(table).read_text().splitlines()[1:]):
            address, _, hex_port = fields[1].rpartition(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # LISTEN
                found.add(address)
    return found


@pytest.mark.spark
def test_the_first_command_starts_the_server_and_the_next_use_it_without_starting_it_again(example):
    first = schemaflow(example, "plan", "--out", "plan.json", env=SERVED)
    assert first.returncode == 2, first.stderr
    assert "Starting a local metastore server on the embedded metastore in" in first.stderr
    assert "Local metastore server up in" in first.stderr
    served = serving(example)
    # Loopback alone (Hive's own server listens on every interface): 127.0.0.1, or as IPv6 maps it.
    assert _listening_addresses(served.port) <= {"0100007F", "0000000000000000FFFF00000100007F"}
    assert _listening_addresses(served.port)
    # The plan names the metastore as a plan made in Spark's JVM names it: apply of it runs.
    database = example / ".schemaflow" / "metastore_db"
    assert json.loads((example / "plan.json").read_text())["metastore"] == f"embedded Derby at {database.resolve()}"

    applied = schemaflow(example, "apply", "plan.json", "--auto-approve", env=SERVED)
    assert applied.returncode == 0, applied.stderr
    if local_server.guards():  # apply wrote through it (test_local_apply.py)
        assert "Stopping the local metastore server" not in applied.stderr
        assert local_server.running(example / ".schemaflow") == served
    else:  # pyspark 3.5: its metastore has no compare-and-swap, and apply opens the database itself
        assert f"Stopping the local metastore server ({served.uri}) to open the embedded metastore" in applied.stderr
        assert local_server.running(example / ".schemaflow") is None

    again = schemaflow(example, "plan", env=SERVED)
    assert again.returncode == 0, again.stderr
    later = {command: schemaflow(example, command, env=SERVED) for command in ("plan", "drift", "history")}
    for result in later.values():
        assert result.returncode == 0, result.stderr
        assert "Starting" not in result.stderr, result.stderr  # neither a server nor Spark
    assert "No changes: the metastore matches the schemas" in later["plan"].stdout
    assert "No drift" in later["drift"].stdout
    assert "retail.orders" in later["history"].stdout

    status = schemaflow(example, "metastore", "status", env=SERVED)
    assert f"spark.hadoop.hive.metastore.uris={serving(example).uri}" in status.stdout
    stopped = schemaflow(example, "metastore", "stop", env=SERVED)
    assert stopped.stdout.strip() == f"Stopped the local metastore server at {_served_uri(stopped)}."
    assert local_server.running(example / ".schemaflow") is None
    assert "No local metastore server runs" in schemaflow(example, "metastore", "status", env=SERVED).stdout


def _served_uri(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout.split(" at ")[1].rstrip(".\n")


# A Thrift call of get_all_databases, as bytes (binary protocol), and whether the server answers it.
PROBE = """
import socket, struct, sys
name = b"get_all_databases"
call = struct.pack(">II", 0x80010001, len(name)) + name + struct.pack(">I", 0) + b"\\x00"
with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30) as connection:
    connection.sendall(call)
    try:
        print("answered" if connection.recv(4096) else "closed")
    except ConnectionResetError:
        print("closed")
"""


@pytest.mark.spark
def test_another_user_of_the_machine_gets_no_answer(example):
    assert schemaflow(example, "metastore", "start", env=SERVED).returncode == 0
    port = str(serving(example).port)
    ours = subprocess.run([sys.executable, "-c", PROBE, port], capture_output=True, text=True, timeout=60)
    assert ours.stdout.strip() == "answered", ours.stderr
    # nobody, with the system's Python (the test's may live where nobody can read)
    theirs = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
                             "-c", PROBE, port], capture_output=True, text=True, timeout=60, cwd="/")
    assert theirs.stdout.strip() == "closed", theirs.stderr
    assert local_server.running(example / ".schemaflow") is not None  # and it serves on


@pytest.mark.spark
def test_a_spark_session_of_the_users_own_shares_the_served_metastore(example):
    applied = schemaflow(example, "apply", "--auto-approve", env=SERVED)
    assert applied.returncode == 0, applied.stderr
    assert schemaflow(example, "metastore", "start", env=SERVED).returncode == 0
    served = serving(example)
    script = ("from pyspark.sql import SparkSession\n"
              f"spark = (SparkSession.builder.master('local[1]').config('spark.hadoop.hive.metastore.uris', "
              f"'{served.uri}').config('spark.ui.enabled', 'false').enableHiveSupport().getOrCreate())\n"
              "print(sorted(row.tableName for row in spark.sql('SHOW TABLES IN retail').collect()))\n")
    own = subprocess.run([sys.executable, "-c", script], cwd=example, capture_output=True, text=True, timeout=300,
                         stdin=subprocess.DEVNULL)
    assert own.returncode == 0, own.stderr[-3000:]
    declared = sorted(path.stem for path in (example / "schemas" / "retail").glob("*.yaml"))
    assert own.stdout.strip().splitlines()[-1] == repr(declared)
    assert not (example / "metastore_db").exists()  # it opened no Derby database of its own


@pytest.mark.spark
def test_it_stops_after_its_idle_time_unless_a_client_is_connected(example):
    started = schemaflow(example, "metastore", "start", env={ENV_LOCAL_SERVER: "0.02"})  # 1.2 s unused
    assert started.returncode == 0, started.stderr
    served = serving(example)
    with socket.create_connection(("127.0.0.1", served.port)):
        _wait(lambda: time.time() - (example / ".schemaflow" / local_server.STATE_FILE).stat().st_mtime > 4)
        assert local_server.running(example / ".schemaflow") == served  # connected: kept
    _wait(lambda: local_server.running(example / ".schemaflow") is None)
    _wait(lambda: not _alive(served.server_pid))
    log = (example / ".schemaflow" / local_server.LOG_FILE).read_text()
    assert log.rstrip().endswith(")") and local_server.EXITED in log


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait(condition, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "still waiting"
        time.sleep(0.2)


@pytest.mark.spark
def test_with_local_server_0_every_command_opens_the_database_itself(example):
    result = schemaflow(example, "plan", env={ENV_LOCAL_SERVER: "0"})
    assert result.returncode == 2, result.stderr
    assert "Starting Spark" in result.stderr and "local metastore server" not in result.stderr
    assert local_server.running(example / ".schemaflow") is None
    status = schemaflow(example, "metastore", "status", env={ENV_LOCAL_SERVER: "0"})
    assert status.stdout.startswith("metastore.local_server is 0: every command opens the embedded metastore")


@pytest.mark.spark
def test_a_server_that_cannot_start_says_why_and_the_command_opens_the_database_itself(example):
    # A Java whose folder has no compiler: the launcher cannot be built.
    java_home = example / "jre"
    (java_home / "bin").mkdir(parents=True)
    java = shutil.which("java")
    assert java is not None
    (java_home / "bin" / "java").symlink_to(os.path.realpath(java))
    result = schemaflow(example, "plan", env={**SERVED, "JAVA_HOME": str(java_home)})
    assert result.returncode == 2, result.stderr
    assert ("this Java has no compiler" in result.stderr and "install a JDK rather than a JRE; opening it in this "
            "command instead" in result.stderr)
    assert "Starting Spark" in result.stderr
    assert local_server.running(example / ".schemaflow") is None


def test_a_state_file_left_by_a_server_that_is_gone_is_no_server(tmp_path):
    state = tmp_path / local_server.STATE_FILE
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    state.write_text(json.dumps({"port": 1, "pid": int(dead.stdout), "server_pid": int(dead.stdout),
                                 "idle_seconds": 60.0, "started": 0.0}))
    assert local_server.running(tmp_path) is None
    assert not state.exists()
    assert local_server.stop(tmp_path) is None


def test_the_setting_and_its_variable(tmp_path):
    (tmp_path / "schemas").mkdir()
    assert load_project(tmp_path, env={}).settings.local_server_minutes == 15
    (tmp_path / "schemaflow.yaml").write_text("metastore:\n  local_server: 2.5\n")
    assert load_project(tmp_path, env={}).settings.local_server_minutes == 2.5
    assert load_project(tmp_path, env={ENV_LOCAL_SERVER: "0"}).settings.local_server_minutes == 0
    with pytest.raises(SchemaflowError, match="SCHEMAFLOW_LOCAL_SERVER is not a number of minutes"):
        load_project(tmp_path, env={ENV_LOCAL_SERVER: "soon"})
    (tmp_path / "schemaflow.yaml").write_text("metastore:\n  uri: thrift://metastore:9083\n")
    assert not local_server.serves(load_project(tmp_path, env={}).settings)
