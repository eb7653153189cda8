"""How long a command takes as a user runs it: a new process each time, on the README's example warehouse.

    .venv/bin/python -m bench.commands [--runs 3]

The example is applied to three projects: one on the embedded Derby metastore as schemaflow serves it
by default (a local metastore server started by the first command that reads it: ``catalog.hive.local_server``),
one on the embedded metastore with that server off (``SCHEMAFLOW_LOCAL_SERVER=0``: every command opens
the database in a JVM of its own), and one on a standalone Thrift metastore server
(``tests/metastore_server.py``, Derby behind it). Then each command runs ``--runs`` times on each, and
the median is reported beside ``validate``, which reads the files alone (no JVM). The first ``plan``
after apply is reported on its own (where apply stops the local server to write, pyspark 3.5, it starts the server
again; ``bench.loop`` times the apply-then-plan loop).
``plan`` here is the no-change plan of an applied project, which CI runs on every pull request;
``history`` reads every object's stamps.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import pyspark

from bench.common import positive, progress
from schemaflow.catalog.hive import local_server
from schemaflow.project import ENV_LOCAL_SERVER
from tests.metastore_server import MetastoreServer

ROOT = Path(__file__).resolve().parent.parent
SCHEMAFLOW = str(Path(sys.executable).parent / "schemaflow")
COMMANDS = (("validate",), ("plan",), ("history",), ("drift",))


# The projects: their environment, and the metastore setting.
SETUPS = {"embedded, served (default)": ({ENV_LOCAL_SERVER: "15"}, False),
          "embedded, no server": ({ENV_LOCAL_SERVER: "0"}, False),
          "Thrift server": ({}, True)}


def example_project(where: Path, uri: str | None) -> Path:
    """A copy of the example warehouse in ``where``, on the metastore at ``uri`` (None: embedded)."""
    where.mkdir(parents=True)
    for name in ("schemas", "migrations"):
        shutil.copytree(ROOT / name, where / name)
    settings = (ROOT / "schemaflow.yaml").read_text()
    if uri:
        settings += f"metastore:\n  uri: {uri}\n"
    (where / "schemaflow.yaml").write_text(settings)
    return where


Setups = dict[str, tuple[dict[str, str], bool]]  # by name: the environment, and whether on the Thrift server


def example_projects(work: Path, stack: ExitStack, setups: Setups) -> dict[str, tuple[Path, dict[str, str]]]:
    """A project of the example in ``work`` for each of ``setups``, and the standalone Thrift metastore server those
    on a server share; both, and any local server a project starts, stop with ``stack``."""
    progress("starting the standalone Thrift metastore server")
    server = stack.enter_context(MetastoreServer(work / "server",
                                                 settings={"datanucleus.connectionPoolingType": "HikariCP"}))
    projects = {name: (example_project(work / f"project-{index}", server.uri if remote else None), env)
                for index, (name, (env, remote)) in enumerate(setups.items())}
    for project, _ in projects.values():
        stack.callback(local_server.stop, project / ".schemaflow")  # a local server it started ends with it
    return projects


def timed(project: Path, env: dict[str, str], *command: str) -> float:
    started = time.monotonic()
    done = subprocess.run([SCHEMAFLOW, *command], cwd=project, capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1", **env})
    if done.returncode not in (0, 2):
        raise SystemExit(f"schemaflow {' '.join(command)} failed: {done.stderr.strip()[-500:]}")
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=positive, default=3, help="runs of each command on each metastore (3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="schemaflow-commands-") as work, ExitStack() as stack:
        projects = example_projects(Path(work), stack, SETUPS)
        first_plan: dict[str, float] = {}
        for name, (project, env) in projects.items():
            progress(f"applying the example to the {name} metastore")
            timed(project, env, "plan", "--out", "plan.json")
            timed(project, env, "apply", "plan.json", "--auto-approve")
            first_plan[name] = timed(project, env, "plan")
            progress(f"first plan after apply on {name}: {first_plan[name]:.2f} s")
        medians: dict[tuple[str, str], float] = {}
        for command in COMMANDS:
            for name, (project, env) in projects.items():
                times = [timed(project, env, *command) for _ in range(args.runs)]
                medians[" ".join(command), name] = statistics.median(times)
                progress(f"{' '.join(command)} on {name}: " + ", ".join(f"{t:.2f} s" for t in times))
    print(f"Commands on the example warehouse, new process each, median of {args.runs} "
          f"({os.cpu_count()} cores, pyspark {pyspark.__version__}):\n")
    print("| command | " + " | ".join(SETUPS) + " |")
    print("|---|" + "---|" * len(SETUPS))
    print("| `schemaflow plan`, the first after apply | " + " | ".join(
        f"{first_plan[name]:.2f} s ({first_plan[name] / medians['validate', name]:.1f}x validate)"
        for name in SETUPS) + " |")
    for command in COMMANDS:
        text = " ".join(command)
        print(f"| `schemaflow {text}` | " + " | ".join(
            f"{medians[text, name]:.2f} s ({medians[text, name] / medians['validate', name]:.1f}x validate)"
            for name in SETUPS) + " |")

if __name__ == "__main__":
    main()
