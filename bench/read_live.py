"""How fast the column lists of every table in a database come out of a live Hive metastore.

schemaflow reads the live state with ``Metastore.read``: table objects fetched 100 at a time with
``getTableObjectsByName`` and serialised to JSON inside the JVM, so each batch crosses py4j once.
This benchmark puts that next to the ways a PySpark program usually reads the same thing:

  (a) schemaflow's ``Metastore.read``
  (b) ``spark.catalog.listTables``, then ``spark.catalog.listColumns`` per table
  (c) ``SHOW TABLES``, then ``DESCRIBE TABLE EXTENDED`` per table
  (d) ``getTableObjectsByName`` in the same batches, then py4j getters per column

It builds a private metastore in a temporary directory, with N Hive-format tables (STORED AS
PARQUET, C columns of assorted types, every other one partitioned by ``ds``) in one database. Two
tables are made with Spark SQL; the rest are copies of them, renamed and created through the
metastore client, which is much faster than N ``CREATE TABLE`` statements.

Each path reads every table's columns (names and types, partition columns last) once to warm up,
then twice timed, the paths taking turns; the median is reported with its ratio to (a). Every
read must find exactly the tables and columns that were created. Progress goes to stderr, the
results to stdout. The Spark session, the metastore server and the temporary directory are gone
at the end.

Run from the repository root::

    .venv/bin/python bench/read_live.py                  # 1,000 tables, 8 columns, embedded Derby
    .venv/bin/python bench/read_live.py --remote         # through a standalone Thrift metastore server
    .venv/bin/python bench/read_live.py --tables 200 --columns 30 --skip-slow

``--remote`` starts the Hive metastore server bundled with pyspark (``tests/metastore_server.py``)
and points the session at it: every metastore call then crosses a socket, as with the shared
metastore of a real cluster. ``--skip-slow`` leaves out (b), which takes about 50 s per read of
1,000 tables.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator, Sequence

from pyspark.sql import SparkSession

# The repository root, for bench.common and tests.metastore_server (neither is an installed package).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import COLUMN_TYPES, Heartbeat, positive, private_session, progress, ratio  # noqa: E402
from schemaflow.catalog.hive.metastore import BATCH_SIZE, Metastore  # noqa: E402

DATABASE = "read_live"
PARTITION_COLUMN = ("ds", "string")
WARMUPS = 1
TIMED_READS = 2

ColumnList = tuple[tuple[str, str], ...]  # (name, type) of each column, partition columns last
Tables = dict[str, ColumnList]            # table name -> its columns


@dataclass(frozen=True)
class Bench:
    """What the read paths work with."""

    spark: SparkSession
    metastore: Metastore
    database: str


@dataclass(frozen=True)
class ReadPath:
    label: str
    read: Callable[[Bench], Iterator[tuple[str, ColumnList]]]
    slow: bool = False


def read_schemaflow(bench: Bench) -> Iterator[tuple[str, ColumnList]]:
    catalog = bench.metastore.read((bench.database,))
    for table in catalog.tables():
        yield table.name, tuple((c.name, c.type) for c in table.all_columns)


def read_spark_catalog(bench: Bench) -> Iterator[tuple[str, ColumnList]]:
    catalog = bench.spark.catalog
    for table in catalog.listTables(bench.database):
        columns = catalog.listColumns(f"{bench.database}.{table.name}")
        yield table.name, tuple((c.name, c.dataType) for c in columns)


def read_describe(bench: Bench) -> Iterator[tuple[str, ColumnList]]:
    for listed in bench.spark.sql(f"SHOW TABLES IN `{bench.database}`").collect():
        rows = bench.spark.sql(f"DESCRIBE TABLE EXTENDED `{bench.database}`.`{listed.tableName}`").collect()
        yield listed.tableName, tuple(_described_columns(rows))


def _described_columns(rows: Sequence[Any]) -> Iterator[tuple[str, str]]:
    """The columns at the head of DESCRIBE's output, before its first blank or ``#`` row."""
    for row in rows:
        if not row.col_name or row.col_name.startswith("#"):
            return
        yield row.col_name, row.data_type


def read_getters(bench: Bench) -> Iterator[tuple[str, ColumnList]]:
    msc = bench.metastore.msc
    names = msc.getAllTables(bench.database)
    total = names.size()
    for start in range(0, total, BATCH_SIZE):
        for table in msc.getTableObjectsByName(bench.database, names.subList(start, min(start + BATCH_SIZE, total))):
            fields = list(table.getSd().getCols()) + list(table.getPartitionKeys())
            yield table.getTableName(), tuple((f.getName(), f.getType()) for f in fields)


READ_PATHS = (
    ReadPath("(a) schemaflow Metastore.read", read_schemaflow),
    ReadPath("(b) catalog.listTables + listColumns", read_spark_catalog, slow=True),
    ReadPath("(c) DESCRIBE TABLE EXTENDED per table", read_describe),
    ReadPath("(d) getTableObjectsByName + py4j getters", read_getters),
)


def table_names(count: int) -> list[str]:
    return [f"t{i:05d}" for i in range(count)]


def expected_tables(count: int, columns: int) -> Tables:
    """The tables to create: every other one (the odd-numbered) partitioned by ``ds``."""
    data = tuple((f"c{j:03d}", COLUMN_TYPES[j % len(COLUMN_TYPES)]) for j in range(columns))
    return {name: data + (PARTITION_COLUMN,) * (i % 2) for i, name in enumerate(table_names(count))}


def create_tables(bench: Bench, tables: Tables) -> None:
    """Create ``tables``: the first two with Spark SQL, the rest as renamed copies of those two.

    ``tables`` is laid out by ``expected_tables``: t00000 unpartitioned, t00001 partitioned, ...
    """
    names = list(tables)
    columns = ", ".join(f"`{column}` {kind}" for column, kind in tables[names[0]])
    partitioning = ("", f" PARTITIONED BY (`{PARTITION_COLUMN[0]}` {PARTITION_COLUMN[1]})")
    bench.spark.sql(f"CREATE DATABASE `{bench.database}`")
    for name, clause in zip(names[:2], partitioning, strict=False):
        bench.spark.sql(f"CREATE TABLE `{bench.database}`.`{name}` ({columns}){clause} STORED AS PARQUET")
    msc = bench.metastore.msc
    templates = [msc.getTable(bench.database, name) for name in names[:2]]
    heartbeat = Heartbeat("creating tables", len(names), "tables")
    for i, name in enumerate(names[2:], start=2):
        table = templates[i % 2].deepCopy()
        table.setTableName(name)
        table.getSd().setLocation(None)  # the metastore gives each table its own directory
        msc.createTable(table)
        heartbeat(i + 1)


def time_reads(bench: Bench, paths: Sequence[ReadPath], expected: Tables) -> dict[str, list[float]]:
    """Seconds of each timed read, by path label; paths take turns, after the warm-up round."""
    times: dict[str, list[float]] = {path.label: [] for path in paths}
    for round_number in range(WARMUPS + TIMED_READS):
        warmup = round_number < WARMUPS
        round_name = "warm-up" if warmup else f"timed read {round_number - WARMUPS + 1}/{TIMED_READS}"
        progress(f"  {round_name}")
        for path in paths:
            seconds, found = read_once(bench, path, len(expected))
            check(path, found, expected)
            progress(f"    {path.label}: {seconds:.2f} s")
            if not warmup:
                times[path.label].append(seconds)
    return times


def read_once(bench: Bench, path: ReadPath, total: int) -> tuple[float, Tables]:
    heartbeat = Heartbeat(path.label, total, "tables")
    found: Tables = {}
    started = time.perf_counter()
    for name, columns in path.read(bench):
        assert name not in found, f"{path.label} read table {name} twice"
        found[name] = columns
        heartbeat(len(found))
    return time.perf_counter() - started, found


def check(path: ReadPath, found: Tables, expected: Tables) -> None:
    assert len(found) == len(expected), f"{path.label} found {len(found):,} tables, not {len(expected):,}"
    assert column_count(found) == column_count(expected), \
        f"{path.label} found {column_count(found):,} columns, not {column_count(expected):,}"
    wrong = sorted(name for name in expected if found.get(name) != expected[name])
    assert not wrong, f"{path.label} read other columns for {len(wrong)} tables, e.g. {wrong[0]}: {found.get(wrong[0])}"


def column_count(tables: Tables) -> int:
    return sum(len(columns) for columns in tables.values())


def report(
    paths: Sequence[ReadPath], times: dict[str, list[float]], expected: Tables, columns: int, where: str, machine: str,
) -> str:
    """The results as a fixed-layout text table, with what was measured and on what."""
    medians = {path.label: statistics.median(times[path.label]) for path in paths}
    baseline = medians[READ_PATHS[0].label]
    lines = [
        f"tables:    {len(expected):,} in one database, {columns} columns each, "
        f"{len(expected) // 2:,} of them also partitioned by ds",
        f"read:      every path found {len(expected):,} tables and {column_count(expected):,} columns "
        "(names and types) on every read",
        f"metastore: {where}",
        f"machine:   {machine}",
        f"timing:    {WARMUPS} warm-up read per path, then the median of {TIMED_READS} timed reads, paths taking turns",
        "",
        f"{'path':<44}{'seconds':>9}  {'timed reads':<15}  vs (a)",
    ]
    for path in paths:
        median = medians[path.label]
        runs = " ".join(f"{seconds:.2f}" for seconds in times[path.label])
        versus = "baseline" if path is READ_PATHS[0] else ratio(median, baseline)
        lines.append(f"{path.label:<44}{median:>9.2f}  {runs:<15}  {versus}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=positive, default=1000, help="tables to create and read (default 1000)")
    parser.add_argument("--columns", type=positive, default=8, help="data columns per table (default 8)")
    parser.add_argument("--remote", action="store_true",
                        help="read through a standalone Thrift metastore server instead of embedded Derby")
    parser.add_argument("--skip-slow", action="store_true", help="leave out (b), listTables + listColumns")
    return parser.parse_args(argv)


def main(argv: Sequence[str]) -> None:
    args = parse_args(argv)
    paths = [path for path in READ_PATHS if not (args.skip_slow and path.slow)]
    expected = expected_tables(args.tables, args.columns)
    with private_session("read-live", args.remote) as session:
        bench = Bench(session.spark, session.metastore, DATABASE)

        progress(f"creating {len(expected):,} tables")
        started = time.monotonic()
        create_tables(bench, expected)
        progress(f"  created in {time.monotonic() - started:.1f} s")

        progress("reading")
        times = time_reads(bench, paths, expected)
    print(report(paths, times, expected, args.columns, session.where, session.machine))


if __name__ == "__main__":
    main(sys.argv[1:])
