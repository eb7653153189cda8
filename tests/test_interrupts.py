"""A test run stopped with SIGTERM stops the servers its fixtures started (``tests.interrupts``)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A run whose session fixture starts a server in a session of its own (as the metastore and PostgreSQL
# servers start), writes its pid, and stops it at teardown; its one test waits to be stopped.
RUN = '''
import os, signal, subprocess, time
from pathlib import Path
import pytest

@pytest.fixture(scope="session")
def server():
    process = subprocess.Popen(["sleep", "600"], start_new_session=True)
    Path("server.pid").write_text(str(process.pid))
    yield process
    os.killpg(process.pid, signal.SIGTERM)
    process.wait()

def test_waits(server):
    Path("started").write_text("")
    time.sleep(600)
'''


@pytest.mark.parametrize("plugin", [["-p", "tests.interrupts"], []])
def test_a_run_stopped_with_sigterm_stops_the_servers_its_fixtures_started(tmp_path: Path, plugin: list[str]):
    (tmp_path / "test_run.py").write_text(RUN)
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *plugin,
                            "test_run.py"], cwd=tmp_path, start_new_session=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for _ in range(600):  # the test has started once its marker is there (the loop is bounded, not timed)
        if (tmp_path / "started").exists() or run.poll() is not None:
            break
        time.sleep(0.1)
    assert (tmp_path / "started").exists(), run.communicate()[0]
    os.killpg(run.pid, signal.SIGTERM)  # as a CI cancel signals the job's processes
    run.wait(timeout=60)
    server = int((tmp_path / "server.pid").read_text())
    alive = subprocess.run(["kill", "-0", str(server)], capture_output=True).returncode == 0
    if alive:
        os.killpg(server, signal.SIGKILL)
    assert alive is not bool(plugin)  # with the plugin stopped at teardown; without it (Python's default), left running
