"""Planning against each Hive metastore line: the generated project, read without a JVM from servers of 2.3, 3.1 and 4.0.

For each release the tests start (``tests/metastore_server.py``), in one run, side by side: a server on
Derby, its schema made as the tests make it; ``schemaflow apply`` of the whole generated project of
``bench/scale.py`` (every object created; what 3.1 takes without the compare-and-swap guard); then a
cold ``schemaflow plan`` with nothing to do, read without a JVM (median of ``--rounds``), and its ratio to
2.3's. A server that schemaflow refuses (4.0) shows how long the refusal takes instead.

    .venv/bin/python bench/releases.py [--objects 5500] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.scale import generate, progress  # noqa: E402  (after the path is set)
from tests.metastore_server import (RELEASES, TEST_JAVA_OPTIONS, MetastoreServer,  # noqa: E402
                                    derby_with_transaction_tables)

SCHEMAFLOW = str(Path(sys.executable).with_name("schemaflow"))


def schemaflow(project: Path, env: dict[str, str], *args: str) -> tuple[float, int, str]:
    """Seconds, exit code and the last line of stderr of ``schemaflow *args`` run as a user runs it."""
    started = time.perf_counter()
    done = subprocess.run([SCHEMAFLOW, "--project", str(project), *args], env=env, capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    return time.perf_counter() - started, done.returncode, lines[-1] if lines else ""


def row(release: str, objects: int, rounds: int, scratch: Path) -> tuple[str, float | None]:
    """The table's row for ``release``, and its median cold plan (None when schemaflow refuses the server)."""
    work = scratch / release
    project = work / "project"
    generate(project, objects)
    progress(f"Hive {release}: the schema, then the server")
    template = derby_with_transaction_tables(work / "template", release=RELEASES[release])
    with MetastoreServer(work / "server", derby_from=template, release=RELEASES[release],
                         settings={"datanucleus.connectionPoolingType": "HikariCP"}) as server:
        env = {**os.environ, "SCHEMAFLOW_METASTORE_URI": server.uri, "SCHEMAFLOW_WAREHOUSE_DIR": str(server.warehouse)}
        progress(f"Hive {release}: apply of {objects:,} objects")
        applied, code, said = schemaflow(project, env, "apply", "--auto-approve")
        if code != 0:
            return f"| {release} | refused in {applied:.1f} s: {said[:160]} | | | |", None
        plans = []
        for turn in range(rounds):
            progress(f"Hive {release}: cold plan {turn + 1} of {rounds}, nothing to do")
            seconds, code, said = schemaflow(project, env, "plan")
            if code != 0:
                raise SystemExit(f"the plan after apply on Hive {release} exited {code}: {said}")
            plans.append(seconds)
        plan = statistics.median(plans)
        return f"| {release} | {server.startup_seconds:.1f} s | {applied:.1f} s | {plan:.2f} s |", plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=5500, help="objects in the generated project")
    parser.add_argument("--rounds", type=int, default=3, help="cold plans per release; the median is shown")
    args = parser.parse_args()
    os.environ.setdefault("SPARK_SUBMIT_OPTS", " ".join(TEST_JAVA_OPTIONS))  # as the tests run schemaflow
    print(f"| Hive metastore server (Derby) | server start | apply, {args.objects:,} objects created "
          "| cold plan, nothing to do (median) | / 2.3 |")
    print("|---|---|---|---|---|")
    baseline: float | None = None
    with tempfile.TemporaryDirectory(prefix="schemaflow-releases-") as scratch:
        for release in RELEASES:
            line, plan = row(release, args.objects, args.rounds, Path(scratch))
            baseline = baseline if baseline is not None else plan
            ratio = f" {plan / baseline:.2f}x |" if plan is not None and baseline else ""
            print(line + ratio, flush=True)


if __name__ == "__main__":
    main()
