"""schemaflow on catalogs other than a Hive metastore, side by side with the catalog's own client doing the same work.

Three measurements, each as a user runs the command (``schemaflow`` in a new process, Python's start included) and
its alternative in a new process too, taking turns (``--repeats`` rounds after one round that warms both up, since
the machine's speed drifts); the ratio of each round is reported, with the medians:

  rest   a cold ``schemaflow plan`` of a project of N Iceberg tables (``--tables``, in 10 namespaces; 8 columns,
         comments, half partitioned by ``day(ts)`` and ``bucket(16, id)``, sorted by ``id``), applied before, so
         that the plan finds nothing to do, against Iceberg's own REST catalog server (``tests/rest_server.py``,
         its JVM's default settings), beside pyiceberg's ``RestCatalog`` reading the same: every namespace and its
         properties, ``load_table`` of every table, ``list_views`` of every namespace;
  glue   the same against AWS Glue served by moto (``moto.server.ThreadedMotoServer`` in this process, with
         ``tests/glue_versions.py``'s VersionId check), beside boto3 reading the same: ``get_databases``, each
         database, ``get_tables`` page by page. The tables are Hive-format Parquet (half partitioned by ``ds``);
  glue-iceberg  the same with Iceberg tables (metadata in a local warehouse folder), beside pyiceberg's
         ``GlueCatalog`` reading the same: every database, ``load_table`` of every table (its metadata file read);
  apply  ``schemaflow apply --auto-approve`` that adds a column to each of ``--added`` Iceberg tables (a project of
         those tables on the REST server; a column added to every table of a domain is the change a team makes most
         often, and each table's commit is a request of its own, so it measures what each costs), beside pyiceberg
         adding the same column to as many tables of the same shape: ``load_table`` then
         ``update_schema().add_column(...)``, one commit each. Each round adds a column more.

The tables are created by ``schemaflow apply`` first (not timed). Every plan must say "No changes", every read must
find every table, and after the applies both sets of tables must hold the same columns. The moto server needs
moto's server extra (``pip install 'moto[server]'``: Flask), which the test extra does not install.

Progress goes to stderr, the results to stdout. Run from the repository root, under the lock of JVMs (the REST
server is one; the Glue part starts none)::

    flock /tmp/schemaflow-jvm.lock .venv/bin/python bench/catalogs.py                  # 1,000 tables, 100 added
    flock /tmp/schemaflow-jvm.lock .venv/bin/python bench/catalogs.py --parts rest,apply --tables 100 --added 10
    .venv/bin/python bench/catalogs.py --parts glue
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import COLUMN_TYPES, positive, progress  # noqa: E402
from tests.metastore_server import free_port  # noqa: E402
from tests.rest_server import RestCatalogServer  # noqa: E402

NAMESPACES = 10
COLUMNS = 8
PARTS = ("rest", "glue", "glue-iceberg", "apply")
REGION, ACCOUNT = "us-east-1", "123456789012"
# moto takes any credentials; boto3 must find some. The catalog id saves the call to STS.
AWS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": REGION}

# pyiceberg reading a REST catalog's namespaces, tables and views, as a tool built on it reads them. Prints the tables.
PYICEBERG_READ = """
import sys
from pyiceberg.catalog.rest import RestCatalog
catalog = RestCatalog("bench", uri=sys.argv[1])
tables = 0
for namespace in sorted(catalog.list_namespaces()):
    catalog.load_namespace_properties(namespace)
    for identifier in sorted(catalog.list_tables(namespace)):
        table = catalog.load_table(identifier)
        assert table.schema().fields and table.spec() is not None and table.sort_order() is not None
        tables += 1
    catalog.list_views(namespace)
print(tables)
"""
# boto3 reading a Glue catalog's databases and tables, page by page. Prints the tables.
BOTO3_READ = """
import sys
import boto3
glue = boto3.client("glue", endpoint_url=sys.argv[1], region_name=sys.argv[2])
catalog = {"CatalogId": sys.argv[3]}
tables = 0
for page in glue.get_paginator("get_databases").paginate(**catalog):
    for database in page["DatabaseList"]:
        glue.get_database(Name=database["Name"], **catalog)
        for listed in glue.get_paginator("get_tables").paginate(DatabaseName=database["Name"], **catalog):
            tables += sum(1 for table in listed["TableList"] if table["StorageDescriptor"]["Columns"])
print(tables)
"""
# pyiceberg's Glue catalog reading the Iceberg tables of a Glue catalog: every database, ``load_table`` of every table
# (its metadata file read). Prints the tables.
PYICEBERG_GLUE_READ = """
import sys
import boto3
from pyiceberg.catalog.glue import GlueCatalog
glue = boto3.client("glue", endpoint_url=sys.argv[1], region_name=sys.argv[2])
catalog = GlueCatalog("bench", client=glue, **{"glue.id": sys.argv[3]})
tables = 0
for namespace in sorted(catalog.list_namespaces()):
    catalog.load_namespace_properties(namespace)
    for identifier in sorted(catalog.list_tables(namespace)):
        table = catalog.load_table(identifier)
        assert table.schema().fields and table.spec() is not None and table.sort_order() is not None
        tables += 1
print(tables)
"""
# pyiceberg adding the column argv[3] to every table of the namespace argv[2]: one load and one commit each.
PYICEBERG_ADD = """
import sys
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.types import StringType
catalog = RestCatalog("bench", uri=sys.argv[1])
for identifier in sorted(catalog.list_tables((sys.argv[2],))):
    with catalog.load_table(identifier).update_schema() as update:
        update.add_column(sys.argv[3], StringType(), doc="added by the benchmark")
"""


def table_yaml(database: str, number: int, form: str, added: Sequence[str] = ()) -> str:
    """A table of the benchmark: ``form`` "iceberg" (every other one partitioned by transforms, sorted by ``id``) or
    "parquet" (a Hive-format table, every other one partitioned by ``ds``), its ``added`` columns last."""
    columns = [("ts", "timestamp"), ("id", "bigint"), *((f"c{j}", COLUMN_TYPES[(number + j) % len(COLUMN_TYPES)])
                                                        for j in range(COLUMNS - 2))]
    lines = [f"table: {database}.t{number:04d}", f"format: {form}", f"comment: Table {number} of the benchmark",
             "columns:"]
    lines += [f"  - {{name: {name}, type: '{kind}', comment: Column {name} of t{number:04d}}}" for name, kind in columns]
    lines += [f"  - {{name: {name}, type: string, comment: added by the benchmark}}" for name in added]
    if number % 2 and form == "iceberg":
        lines += ["partitioned_by: [day(ts), bucket(16, id)]", "sorted_by: [id ASC NULLS FIRST]"]
    elif number % 2:
        lines += ["partitioned_by:", "  - {name: ds, type: string, comment: Load date}"]
    lines.append(f"properties: {{team: team{number % 7}}}")
    return "\n".join(lines) + "\n"


def write_project(root: Path, metastore: dict[str, object], databases: Sequence[str], tables: int, form: str,
                  added: Sequence[str] = ()) -> None:
    """A project at ``root`` of ``tables`` tables spread over ``databases``, on the catalog ``metastore`` names."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "schemaflow.yaml").write_text(f"databases: [{', '.join(databases)}]\nmetastore: {json.dumps(metastore)}\n")
    for number in range(tables):
        database = databases[number % len(databases)]
        folder = root / "schemas" / database
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"t{number:04d}.yaml").write_text(table_yaml(database, number, form, added))


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment each process of the benchmark runs in: this checkout's schemaflow first, no colour."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "NO_COLOR": "1", **(extra or {})}


Said = list[tuple[float, str]]  # each line a process printed, with the seconds from its start to when it came


def schemaflow(project: Path, env: dict[str, str], *args: str, expect: int = 0, says: str = "",
               said: list[Said] | None = None) -> float:
    """The seconds ``schemaflow --project project *args`` takes in a new process; it must exit ``expect`` and print
    ``says``. What it printed, line by line as it came (its output unbuffered), is appended to ``said``."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as errors, \
            subprocess.Popen([sys.executable, "-m", "schemaflow", "--project", str(project), *args],
                             stdout=subprocess.PIPE, stderr=errors, text=True,
                             env={**env, "PYTHONUNBUFFERED": "1"}) as process:
        assert process.stdout is not None
        lines = [(time.perf_counter() - started, line) for line in process.stdout]
        code = process.wait(timeout=3600)
        seconds = time.perf_counter() - started
        errors.seek(0)
        stderr = errors.read()
    stdout = "".join(line for _, line in lines)
    if code != expect or says not in stdout:
        raise SystemExit(f"schemaflow {' '.join(args)} exited {code}:\n{stdout[-3000:]}\n{stderr[-3000:]}")
    if said is not None:
        said.append([*lines, (seconds, "")])
    return seconds


PHASES = ("start and plan", "claims", "steps", "after")


def apply_phases(said: Said) -> tuple[float, float, float, float]:
    """The seconds of an apply's phases, from when its lines came: its start and plan (until the plan is shown),
    the claims (until "Claiming ... done"), the steps (until the last step's line) and what follows (until it exits).
    The steps' own "done (0.0s)" are rounded to a tenth of a second each, too coarse to add up."""
    shown = next(at for at, line in said if line.strip())
    claimed = next((at for at, line in said if line.startswith("Claiming the ")), shown)
    stepped = max((at for at, line in said if re.match(r"\[ *\d+/\d+\] ", line)), default=claimed)
    return shown, claimed - shown, stepped - claimed, said[-1][0] - stepped


def python(script: str, env: dict[str, str], *args: str, prints: str | None = None) -> float:
    """The seconds ``script`` takes in a new Python process; what it prints must be ``prints`` (unless None)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, timeout=3600)
    seconds = time.perf_counter() - started
    if done.returncode != 0 or (prints is not None and done.stdout.strip() != prints):
        raise SystemExit(f"the alternative exited {done.returncode}, printing {done.stdout.strip()[-200:]!r}, not "
                         f"{prints!r}:\n{done.stderr[-3000:]}")
    return seconds


Run = Callable[[int], float]  # one timed run of an arm, given its round (0: the warm-up)


def rounds(repeats: int, ours: Run, theirs: Run, label: str) -> tuple[list[float], list[float]]:
    """The seconds of each of ``repeats`` rounds in which ``ours`` and ``theirs`` take turns, after one round that
    warms both up (not counted)."""
    mine: list[float] = []
    other: list[float] = []
    for number in range(repeats + 1):
        a, b = ours(number), theirs(number)
        progress(f"  {label} {'warm-up' if number == 0 else f'{number}/{repeats}'}: schemaflow {a:.2f} s, "
                 f"alternative {b:.2f} s ({a / b:.2f}x)")
        if number:
            mine.append(a)
            other.append(b)
    return mine, other


def row(work: str, mine: list[float], other: list[float]) -> str:
    ratios = sorted(a / b for a, b in zip(mine, other, strict=True))
    return (f"| {work} | {statistics.median(mine):.2f} s | {statistics.median(other):.2f} s | "
            f"{statistics.median(ratios):.2f}x | {ratios[0]:.2f}-{ratios[-1]:.2f}x |")


@contextmanager
def rest_server(work: Path) -> Iterator[RestCatalogServer]:
    progress("starting Iceberg's REST catalog server")
    with RestCatalogServer(work / "rest-server") as server:
        progress(f"  up in {server.startup_seconds:.1f} s at {server.uri}")
        yield server


def databases(prefix: str) -> list[str]:
    return [f"{prefix}{d}" for d in range(NAMESPACES)]


def create(project: Path, env: dict[str, str], what: str) -> None:
    progress(f"  creating {what} with schemaflow apply")
    seconds = schemaflow(project, env, "apply", "--auto-approve", says="Applied")
    progress(f"    {seconds:.1f} s")


def rest_plan(work: Path, tables: int, repeats: int) -> str:
    with rest_server(work) as server:
        project, env = work / "rest-project", environment()
        write_project(project, {"type": "iceberg_rest", "uri": server.uri}, databases("lake"), tables, "iceberg")
        create(project, env, f"{tables:,} Iceberg tables")
        mine, other = rounds(repeats, lambda _: schemaflow(project, env, "plan", says="No changes"),
                             lambda _: python(PYICEBERG_READ, env, server.uri, prints=str(tables)), "cold plan")
    return row(f"cold `plan` of {tables:,} Iceberg tables, REST server / pyiceberg `RestCatalog` reads", mine, other)


@contextmanager
def moto_server() -> Iterator[str]:
    """moto's Glue served in this process, with the tests' VersionId check: its endpoint."""
    from moto.server import ThreadedMotoServer  # needs moto[server]

    from tests.glue_versions import versioned_glue

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # not a line per request
    port = free_port()
    progress("starting moto's server")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        with versioned_glue():
            yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def glue_plan(work: Path, tables: int, repeats: int, form: str) -> str:
    """A cold plan of ``tables`` tables of ``form`` ("parquet": Hive-format, beside boto3's pages; "iceberg": beside
    pyiceberg's Glue catalog loading each) on Glue served by moto."""
    iceberg = form == "iceberg"
    with moto_server() as endpoint:
        project, env = work / f"glue-{form}-project", environment(AWS)
        metastore: dict[str, object] = {
            "type": "glue", "options": {"region": REGION, "catalog_id": ACCOUNT, "endpoint": endpoint},
            **({"warehouse": f"file://{work / 'glue-warehouse'}"} if iceberg else {})}
        write_project(project, metastore, databases("lake"), tables, form)
        create(project, env, f"{tables:,} {'Iceberg' if iceberg else 'Parquet'} tables")
        read = PYICEBERG_GLUE_READ if iceberg else BOTO3_READ
        mine, other = rounds(repeats, lambda _: schemaflow(project, env, "plan", says="No changes"),
                             lambda _: python(read, env, endpoint, REGION, ACCOUNT, prints=str(tables)), "cold plan")
    if iceberg:
        return row(f"cold `plan` of {tables:,} Iceberg tables, Glue on moto / pyiceberg `GlueCatalog` loads", mine,
                   other)
    return row(f"cold `plan` of {tables:,} Hive-format tables, Glue on moto / boto3 `get_tables` pages", mine, other)


def rest_apply(work: Path, added: int, repeats: int) -> str:
    with rest_server(work) as server:
        env = environment()
        ours, theirs = work / "apply-ours", work / "apply-theirs"
        metastore: dict[str, object] = {"type": "iceberg_rest", "uri": server.uri}
        write_project(ours, metastore, ["ours"], added, "iceberg")
        write_project(theirs, metastore, ["theirs"], added, "iceberg")
        create(ours, env, f"{added} Iceberg tables for schemaflow")
        create(theirs, env, f"{added} Iceberg tables for pyiceberg")

        said: list[Said] = []

        def apply(number: int) -> float:
            write_project(ours, metastore, ["ours"], added, "iceberg", [f"added{n}" for n in range(number + 1)])
            return schemaflow(ours, env, "apply", "--auto-approve", says=f"Applied {added} steps", said=said)

        mine, other = rounds(repeats, apply, lambda number: python(PYICEBERG_ADD, env, server.uri, "theirs",
                                                                    f"added{number}"), f"{added} columns added")
        schemaflow(ours, env, "plan", says="No changes")
        check_same_columns(server.uri, added)
    phases = ", ".join(f"{name} {statistics.median(seconds):.1f} s"
                       for name, seconds in zip(PHASES, zip(*map(apply_phases, said[1:]), strict=True), strict=True))
    progress(f"  apply's phases: {phases} (medians, from when its lines came)")
    return row(f"`apply` adding a column to each of {added} Iceberg tables (REST) / pyiceberg "
               f"`update_schema().add_column()` (of apply's: {phases})", mine, other)


def check_same_columns(uri: str, tables: int) -> None:
    """Both sets of tables hold the same columns, in the same order, after the applies."""
    from pyiceberg.catalog.rest import RestCatalog

    catalog = RestCatalog("check", uri=uri)
    for number in range(tables):
        name = f"t{number:04d}"
        ours, theirs = ([f.name for f in catalog.load_table((ns, name)).schema().fields] for ns in ("ours", "theirs"))
        assert ours == theirs, f"{name}: schemaflow's columns {ours}, pyiceberg's {theirs}"


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=positive, default=1000, help="tables the cold plans read (default 1000)")
    parser.add_argument("--added", type=positive, default=100, help="tables apply adds a column to (default 100)")
    parser.add_argument("--repeats", type=positive, default=3, help="timed rounds of each pair (default 3)")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"which to run, of {', '.join(PARTS)} (default all)")
    args = parser.parse_args(argv)
    parts = [p for p in args.parts.split(",") if p]
    if unknown := sorted(set(parts) - set(PARTS)):
        parser.error(f"no part {', '.join(unknown)}: the parts are {', '.join(PARTS)}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="schemaflow-catalogs-") as folder:
        for part in PARTS:
            if part not in parts:
                continue
            work = Path(folder) / part
            work.mkdir()
            progress(f"{part}:")
            if part == "rest":
                rows.append(rest_plan(work, args.tables, args.repeats))
            elif part == "glue":
                rows.append(glue_plan(work, args.tables, args.repeats, "parquet"))
            elif part == "glue-iceberg":
                rows.append(glue_plan(work, args.tables, args.repeats, "iceberg"))
            else:
                rows.append(rest_apply(work, args.added, args.repeats))
    print(f"schemaflow beside the catalog's own client, new process each, median of {args.repeats} rounds "
          f"({os.cpu_count()} cores):\n")
    print("| work: schemaflow / the alternative | schemaflow | alternative | ratio | ratios of the rounds |")
    print("|---|---|---|---|---|")
    for line in rows:
        print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
