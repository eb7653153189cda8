"""How fast a plan reads N Iceberg tables from a metastore server, without a JVM, side by side with reading each
table's metadata one by one.

An Iceberg table's live state is its own metadata file, which the metastore's entry only names. The plan's
JVM-free path reads every entry of a database in batches, then every metadata file. This benchmark puts it
next to the ways a reader usually gets the same state, table by table:

  (a) schemaflow: ``ThriftReader.read``: ``get_table_objects_by_name`` in batches of 100, then each
      metadata file, parsed as JSON into the model
  (b) ``get_table`` per table, then its metadata file, parsed as (a) parses it
  (c) ``get_table`` per table, then pyiceberg's ``TableMetadata`` of its file, as pyiceberg's catalogs
      load a table (and a tool built on them would)

Last, ``schemaflow plan`` as a user runs it (a new process) on a project that declares every table, as
``schemaflow import`` writes them: it must find nothing to do.

It starts a standalone Thrift metastore server (``tests/metastore_server.py``, Derby, or PostgreSQL with
``--backend postgresql``) and creates the tables through schemaflow's own Iceberg create (each a metadata
file and a metastore entry, half of them partitioned by ``day(ts)`` and ``bucket(16, id)``). Each path
reads once to warm up, then ``--reads`` times timed, the paths taking turns; medians with their ratio to (a).
Every read must find every table with its columns. Progress goes to stderr, the results to stdout.

Run from the repository root::

    .venv/bin/python bench/iceberg.py                  # 1,000 Iceberg tables on a Derby-backed server
    .venv/bin/python bench/iceberg.py --tables 200 --backend postgresql
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

# The repository root, for bench.common and tests.metastore_server (neither is an installed package).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import COLUMN_TYPES, Heartbeat, positive, private_session, progress, ratio  # noqa: E402
from schemaflow.catalog.hive.iceberg_commit import first_metadata, register  # noqa: E402
from schemaflow.catalog.iceberg_metadata import iceberg_table, read_metadata  # noqa: E402
from schemaflow.catalog.hive.thrift_reader import TABLE, ThriftReader  # noqa: E402
from schemaflow.catalog.hive.thrift_wire import STRING  # noqa: E402
from schemaflow.model import METADATA_LOCATION, Column, PartitionField, Table  # noqa: E402
from schemaflow.spec.export import write_schemas  # noqa: E402
from tests.metastore_server import ALL_BACKENDS  # noqa: E402

DATABASE = "ice_bench"
WARMUPS = 1
Read = Callable[[ThriftReader], Iterator[Table]]


def declared(count: int, columns: int) -> list[Table]:
    """The tables to create: ``ts`` and ``id`` first, then assorted columns; every other one partitioned."""
    data = (Column("ts", "timestamp"), Column("id", "bigint"), *(
        Column(f"c{j:03d}", COLUMN_TYPES[j % len(COLUMN_TYPES)]) for j in range(columns - 2)))
    spec = (PartitionField("day", "ts"), PartitionField("bucket", "id", 16))
    return [Table(DATABASE, f"t{i:05d}", data, format="iceberg", data_source=True, properties={"format-version": "2"},
                  partition_spec=spec if i % 2 else ()) for i in range(count)]


def create(metastore, tables: Sequence[Table], warehouse: str) -> None:
    """Each table's first metadata file and its metastore entry, as ``schemaflow apply`` creates them."""
    heartbeat = Heartbeat("creating tables", len(tables), "tables")
    for i, table in enumerate(tables, start=1):
        register(metastore, table.key, first_metadata(table, f"{warehouse}/{DATABASE}.db/{table.name}",
                                                      table.properties))
        heartbeat(i)


def schemaflow_read(reader: ThriftReader) -> Iterator[Table]:
    for obj in reader.read((DATABASE,)).objects.values():
        assert isinstance(obj, Table)
        yield obj


def _entries(reader: ThriftReader) -> Iterator[dict]:
    # The reader's own call, one table at a time: what a catalog's load_table asks of the metastore.
    for name in reader._call("listing tables", "get_all_tables", [(1, STRING, DATABASE)]):
        yield reader._call("reading a table", "get_table", [(1, STRING, DATABASE), (2, STRING, name)], TABLE)


def one_by_one(reader: ThriftReader) -> Iterator[Table]:
    for entry in _entries(reader):
        location = entry["parameters"][METADATA_LOCATION]
        yield iceberg_table(DATABASE, entry["tableName"], read_metadata(location), location)


def pyiceberg_one_by_one(reader: ThriftReader) -> Iterator[Table]:
    from pyiceberg.io import load_file_io
    from pyiceberg.serializers import FromInputFile

    for entry in _entries(reader):
        location = entry["parameters"][METADATA_LOCATION]
        metadata = FromInputFile.table_metadata(load_file_io({}, location).new_input(location))
        yield iceberg_table(DATABASE, entry["tableName"], json.loads(metadata.model_dump_json()), location)


PATHS: tuple[tuple[str, Read], ...] = (
    ("(a) schemaflow: batches of 100, each metadata file as JSON", schemaflow_read),
    ("(b) get_table per table, then its metadata file", one_by_one),
    ("(c) get_table per table, then pyiceberg's TableMetadata", pyiceberg_one_by_one),
)


def time_reads(uri: str, expected: dict[str, tuple[Column, ...]], reads: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {label: [] for label, _ in PATHS}
    for round_number in range(WARMUPS + reads):
        warmup = round_number < WARMUPS
        progress(f"  {'warm-up' if warmup else f'timed read {round_number}/{reads}'}")
        for label, read in PATHS:
            reader = ThriftReader(uri)
            try:
                started = time.perf_counter()
                found = {t.name: t.columns for t in read(reader)}
                seconds = time.perf_counter() - started
            finally:
                reader.close()
            assert found == expected, f"{label} read {len(found)} tables, not the {len(expected)} created as they are"
            progress(f"    {label}: {seconds:.2f} s")
            if not warmup:
                times[label].append(seconds)
    return times


def cold_plan(uri: str, warehouse: str, tables: Sequence[Table], runs: int) -> list[float]:
    """``schemaflow plan`` in a new process, on a project declaring every table: seconds of each run."""
    seconds = []
    with tempfile.TemporaryDirectory(prefix="schemaflow-iceberg-project-") as folder:
        project = Path(folder)
        (project / "schemaflow.yaml").write_text(f"databases: [{DATABASE}]\nmetastore: {{uri: '{uri}'}}\n"
                                                 f"warehouse_dir: {warehouse}\n")
        written, skipped = write_schemas(tables, project / "schemas")
        assert len(written) == len(tables) and not skipped, skipped
        for run in range(runs):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "schemaflow", "plan"], cwd=project, capture_output=True,
                                  text=True, env={**os.environ, "NO_COLOR": "1"}, timeout=900)
            seconds.append(time.perf_counter() - started)
            assert done.returncode == 0 and done.stdout.startswith("No changes"), done.stdout + done.stderr
            assert "Starting Spark" not in done.stderr, done.stderr
            progress(f"    schemaflow plan {run + 1}/{runs}: {seconds[-1]:.2f} s")
    return seconds


def report(times: dict[str, list[float]], plans: list[float], count: int, where: str, machine: str) -> str:
    medians = {label: statistics.median(values) for label, values in times.items()}
    baseline = medians[PATHS[0][0]]
    lines = [f"Reading the live state of {count:,} Iceberg tables without a JVM (half partitioned), "
             f"median of {len(next(iter(times.values())))}",
             f"metastore: {where}", f"machine: {machine}", "",
             f"{'path':<62}{'median s':>9}  vs (a)"]
    for label, median in medians.items():
        lines.append(f"{label:<62}{median:>9.2f}  {'1x' if label == PATHS[0][0] else ratio(median, baseline)}")
    lines.append(f"{'schemaflow plan (new process, nothing to do), median of ' + str(len(plans)):<62}"
                 f"{statistics.median(plans):>9.2f}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=positive, default=1000, help="Iceberg tables to create (default 1000)")
    parser.add_argument("--columns", type=positive, default=8, help="columns per table, at least 2 (default 8)")
    parser.add_argument("--reads", type=positive, default=3, help="timed reads of each path (default 3)")
    parser.add_argument("--backend", choices=ALL_BACKENDS, default="derby", help="the metastore server's database")
    return parser.parse_args(argv)


def main(argv: Sequence[str]) -> None:
    args = parse_args(argv)
    tables = declared(args.tables, max(args.columns, 2))
    with private_session("iceberg", remote=True, backend=args.backend) as session:
        uri = session.metastore.conf.get("hive.metastore.uris")
        warehouse = session.spark.conf.get("spark.sql.warehouse.dir")
        session.spark.sql(f"CREATE DATABASE {DATABASE}")
        progress(f"creating {len(tables):,} Iceberg tables")
        started = time.monotonic()
        create(session.metastore, tables, warehouse.removeprefix("file:").rstrip("/"))
        progress(f"  created in {time.monotonic() - started:.1f} s")
        progress("reading")
        times = time_reads(uri, {t.name: t.columns for t in tables}, args.reads)
        progress("planning")
        plans = cold_plan(uri, warehouse, tables, args.reads)
    print(report(times, plans, len(tables), session.where, session.machine))


if __name__ == "__main__":
    main(sys.argv[1:])
