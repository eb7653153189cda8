"""How long a command takes as a user runs it: a new process each time, on the README's example warehouse.

    .venv/bin/python -m bench.commands [--runs 3]

The example is applied once to an embedded Derby metastore and once to a standalone Thrift metastore
server (``tests/metastore_server.py``, Derby behind it); then each command runs ``--runs`` times on
each, and the median is reported beside ``validate``, which reads the files alone (no JVM): what a
metastore command adds to it is the JVM's start (embedded: every command that reads the metastore
starts one) or the Thrift round trips (a ``thrift://`` metastore is read without a JVM). ``plan`` here
is the no-change plan of an applied project, which CI runs on every pull request; ``history`` reads
every object's stamps.
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
from tests.metastore_server import MetastoreServer

ROOT = Path(__file__).resolve().parent.parent
SCHEMAFLOW = str(Path(sys.executable).parent / "schemaflow")
COMMANDS = (("validate",), ("plan",), ("history",), ("drift",))


def _project(where: Path, uri: str | None) -> Path:
    """A copy of the example warehouse in ``where``, on the metastore at ``uri`` (None: embedded)."""
    where.mkdir(parents=True)
    for name in ("schemas", "migrations"):
        shutil.copytree(ROOT / name, where / name)
    settings = (ROOT / "schemaflow.yaml").read_text()
    if uri:
        settings += f"metastore:\n  uri: {uri}\n"
    (where / "schemaflow.yaml").write_text(settings)
    return where


def _run(project: Path, *command: str) -> float:
    started = time.monotonic()
    done = subprocess.run([SCHEMAFLOW, *command], cwd=project, capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1"})
    if done.returncode not in (0, 2):
        raise SystemExit(f"schemaflow {' '.join(command)} failed: {done.stderr.strip()[-500:]}")
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=positive, default=3, help="runs of each command on each metastore (3)")
    args = parser.parse_args()
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="schemaflow-commands-") as work:
        progress("starting the standalone Thrift metastore server")
        server = stack.enter_context(MetastoreServer(Path(work) / "server",
                                                     settings={"datanucleus.connectionPoolingType": "HikariCP"}))
        projects = {"embedded Derby": _project(Path(work) / "embedded", None),
                    "Thrift server": _project(Path(work) / "remote", server.uri)}
        for name, project in projects.items():
            progress(f"applying the example to the {name} metastore")
            _run(project, "plan", "--out", "plan.json")
            _run(project, "apply", "plan.json", "--auto-approve")
        medians: dict[tuple[str, str], float] = {}
        for command in COMMANDS:
            for name, project in projects.items():
                times = [_run(project, *command) for _ in range(args.runs)]
                medians[" ".join(command), name] = statistics.median(times)
                progress(f"{' '.join(command)} on {name}: " + ", ".join(f"{t:.2f} s" for t in times))
    print(f"Commands on the example warehouse, new process each, median of {args.runs} "
          f"({os.cpu_count()} cores, pyspark {pyspark.__version__}):\n")
    print("| command | embedded Derby | Thrift server |")
    print("|---|---|---|")
    for command in COMMANDS:
        text = " ".join(command)
        print(f"| `schemaflow {text}` | " + " | ".join(
            f"{medians[text, name]:.2f} s ({medians[text, name] / medians['validate', name]:.1f}x validate)"
            for name in ("embedded Derby", "Thrift server")) + " |")


if __name__ == "__main__":
    main()
