"""Planning against each Hive metastore line: the generated project, read without a JVM from servers of 2.3, 3.1 and 4.0.

For each release the tests start (``tests/metastore_server.py``), in one run, side by side: a server on
Derby or PostgreSQL (``--database``), its schema made as the tests make it; ``schemaflow apply`` of the whole
generated project of ``bench/scale.py`` (every object created; what 3.1 takes without the compare-and-swap
guard; on 4.0, through Spark's Hive 4 client, as a team on it sets it up); then a cold ``schemaflow plan`` with
nothing to do, read without a JVM (median of ``--rounds``), and its ratio to 2.3's. An apply that stops (4.0 on
Derby, whose server fails its own compare-and-swap) shows how long it took and why instead.

    .venv/bin/python bench/releases.py [--objects 5500] [--rounds 3] [--database derby|postgresql]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.scale import generate, progress  # noqa: E402  (after the path is set)
from tests.metastore_server import (RELEASES, TEST_JAVA_OPTIONS, MetastoreServer,  # noqa: E402
                                    derby_with_transaction_tables, give_client)
from tests.postgres_server import PostgresServer  # noqa: E402

SCHEMAFLOW = str(Path(sys.executable).with_name("schemaflow"))


def schemaflow(project: Path, env: dict[str, str], *args: str) -> tuple[float, int, str]:
    """Seconds, exit code and the last line of stderr of ``schemaflow *args`` run as a user runs it."""
    started = time.perf_counter()
    done = subprocess.run([SCHEMAFLOW, "--project", str(project), *args], env=env, capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    return time.perf_counter() - started, done.returncode, lines[-1] if lines else ""


def row(release: str, objects: int, rounds: int, scratch: Path, postgres: PostgresServer | None) -> tuple[str, float | None]:
    """The table's row for ``release``, and its median cold plan (None when the apply stops); its server's
    metastore in ``postgres``, else on Derby."""
    work = scratch / release
    project = work / "project"
    generate(project, objects)
    approved = give_client(project, RELEASES[release])
    progress(f"Hive {release}: the schema, then the server")
    if postgres is not None:
        server = MetastoreServer(work / "server", release=RELEASES[release], classpath=[postgres.jdbc_jar],
                                 settings=postgres.metastore_settings(postgres.new_database(release=RELEASES[release])))
    else:
        template = derby_with_transaction_tables(work / "template", release=RELEASES[release])
        server = MetastoreServer(work / "server", derby_from=template, release=RELEASES[release],
                                 settings={"datanucleus.connectionPoolingType": "HikariCP"})
    with server:
        env = {**os.environ, "SCHEMAFLOW_METASTORE_URI": server.uri, "SCHEMAFLOW_WAREHOUSE_DIR": str(server.warehouse),
               **approved}
        progress(f"Hive {release}: apply of {objects:,} objects")
        applied, code, said = schemaflow(project, env, "apply", "--auto-approve")
        if code != 0:
            return f"| {release} | {server.startup_seconds:.1f} s | stopped after {applied:.1f} s: {said[:200]} | | |", None
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
    parser.add_argument("--database", choices=("derby", "postgresql"), default="derby",
                        help="what each server keeps its metastore in")
    args = parser.parse_args()
    os.environ.setdefault("SPARK_SUBMIT_OPTS", " ".join(TEST_JAVA_OPTIONS))  # as the tests run schemaflow
    print(f"| Hive metastore server ({'PostgreSQL' if args.database == 'postgresql' else 'Derby'}) | server start "
          f"| apply, {args.objects:,} objects created | cold plan, nothing to do (median) | / 2.3 |")
    print("|---|---|---|---|---|")
    baseline: float | None = None
    with tempfile.TemporaryDirectory(prefix="schemaflow-releases-") as scratch, ExitStack() as stack:
        postgres = (stack.enter_context(PostgresServer(java_options=TEST_JAVA_OPTIONS))
                    if args.database == "postgresql" else None)
        for release in RELEASES:
            line, plan = row(release, args.objects, args.rounds, Path(scratch), postgres)
            baseline = baseline if baseline is not None else plan
            ratio = f" {plan / baseline:.2f}x |" if plan is not None and baseline else ""
            print(line + ratio, flush=True)


if __name__ == "__main__":
    main()
