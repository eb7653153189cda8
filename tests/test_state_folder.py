"""The state folder (``.schemaflow/``) and the local metastore server's state in it, when they are not as left:
a folder that cannot be written, a file in its way, a state file whose process ids other programs hold now, a server
whose watcher was killed. Each is one line saying where and what to do, or is found and put right, in seconds."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from schemaflow.catalog.hive import local_server
from schemaflow.processes import alive
from tests.projects import schemaflow

BWRAP = ["bwrap", "--bind", "/", "/", "--proc", "/proc", "--dev-bind", "/dev", "/dev"]
# Listens on the port its last argument names (none: any), says which, and waits.
HOLDER = ("import socket, sys, time\n"
          "port = int(sys.argv[-1]) if sys.argv[-1].isdigit() else 0\n"
          "listening = socket.socket(); listening.bind(('127.0.0.1', port)); listening.listen()\n"
          "print(listening.getsockname()[1], flush=True); time.sleep(600)\n")


def one_error(ran: subprocess.CompletedProcess[str]) -> str:
    """The error line of a command that failed, once it is checked that nothing else went wrong."""
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "Traceback" not in ran.stderr, ran.stderr
    assert ran.stderr.splitlines()[-1].startswith("error: "), ran.stderr
    return ran.stderr.splitlines()[-1]


def test_a_state_folder_that_cannot_be_made_or_written_is_one_line_with_the_path_and_what_to_do(example: Path):
    state = example / ".schemaflow"
    state.write_text("")  # a file where the folder goes
    assert one_error(schemaflow(example, "plan")) == (
        f"error: cannot use the state folder {state} (the embedded metastore and its server's files): {state}: File "
        f"exists; a file stands where schemaflow keeps a folder: move {state} away, then run the command again")
    state.unlink()
    state.mkdir()
    read_only = [*BWRAP, "--ro-bind", str(state), str(state)]  # read-only even for root, as CI's tests run
    for command in (["plan"], ["metastore", "stop"], ["metastore", "start"]):
        if command == ["metastore", "stop"]:  # stop has a server to stop only when a state file is there
            (state / local_server.STATE_FILE).write_text("{}")
        ran = subprocess.run([*read_only, sys.executable, "-m", "schemaflow", *command], cwd=example,
                             capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(
                                 Path(__file__).resolve().parent.parent)})
        assert one_error(ran) == (
            f"error: cannot use the state folder {state} (the embedded metastore and its server's files): "
            f"{state / local_server.LOCK_FILE}: Read-only file system; copy the project to a file system you can "
            "write, and run schemaflow there"), command


@pytest.fixture
def other_program() -> subprocess.Popen[str]:
    """Another program, listening on a port of the loopback address: its process id and port are taken."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    process.port = int(process.stdout.readline())  # type: ignore[attr-defined]
    yield process
    process.kill()
    process.wait()


def test_a_state_file_naming_another_programs_process_and_port_is_seen_through_and_removed(example: Path,
                                                                                        other_program):
    state = example / ".schemaflow"
    state.mkdir()
    written = {"port": other_program.port, "pid": other_program.pid, "server_pid": other_program.pid,
               "idle_seconds": 900, "started": 0}
    (state / local_server.STATE_FILE).write_text(json.dumps(written))
    ran = schemaflow(example, "metastore", "status", env={"SCHEMAFLOW_LOCAL_SERVER": None})
    assert ran.returncode == 0 and ran.stdout.startswith("No local metastore server runs"), ran.stdout + ran.stderr
    assert not (state / local_server.STATE_FILE).exists()
    assert alive(other_program.pid)  # another program's: left alone


def test_a_server_whose_watcher_is_gone_is_stopped_by_the_next_command_that_finds_it(example: Path):
    state = (example / ".schemaflow").resolve()
    state.mkdir()
    with socket.socket() as probe:  # a free port for the stand-in
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # A stand-in for the server as the watcher runs it (its command line names the main class and the port), left
    # running by a watcher that is gone.
    orphan = subprocess.Popen([sys.executable, "-c", HOLDER, local_server.SERVER, str(port)], stdout=subprocess.PIPE,
                              text=True)
    assert orphan.stdout is not None and int(orphan.stdout.readline()) == port
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (state / local_server.STATE_FILE).write_text(json.dumps(
        {"port": port, "pid": int(gone.stdout), "server_pid": orphan.pid, "idle_seconds": 900, "started": 0}))
    try:
        assert local_server.running(state) is None
        assert orphan.wait(timeout=local_server.STOP_SECONDS) == -15  # stopped (SIGTERM), its state file removed
    finally:
        orphan.kill()
        orphan.wait()
    assert not (state / local_server.STATE_FILE).exists()


@pytest.mark.spark
def test_the_servers_jvm_ends_with_its_watcher_killed(example: Path):
    started = schemaflow(example, "metastore", "start", env={"SCHEMAFLOW_LOCAL_SERVER": None})
    assert started.returncode == 0, started.stderr
    state = (example / ".schemaflow").resolve()
    served = json.loads((state / local_server.STATE_FILE).read_text())
    assert alive(served["server_pid"])
    os.kill(served["pid"], signal.SIGKILL)
    for _ in range(int(local_server.STOP_SECONDS * 10)):  # bounded: the JVM is told at once, and takes a moment
        if not alive(served["server_pid"]):
            break
        time.sleep(0.1)
    assert not alive(served["server_pid"])
    status = schemaflow(example, "metastore", "status", env={"SCHEMAFLOW_LOCAL_SERVER": None})
    assert status.stdout.startswith("No local metastore server runs"), status.stdout + status.stderr
