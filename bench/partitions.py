"""What a column change costs on a table with many partitions, by each way of making it.

schemaflow changes a partitioned table's columns with one metastore ``alter_table``: table only,
or with CASCADE so every partition's column list follows; where the plan says ``batched`` (above
``plan.changes.BATCHED_CASCADE_ABOVE`` partitions, and to repair stale partitions), it rewrites them
itself in batches (``cascade_in_batches``), only those whose list differs. This benchmark puts side by side, on one
table:

  (a) a table-only change: append a column (``Metastore.set_columns``, ``cascade=False``)
  (b) the metastore's own CASCADE: rename a column (``set_columns``, ``cascade=True``, not batched)
  (c) schemaflow's batched path for the same rename (``set_columns``, ``batched=True``)
  (d) the naive alternative: the table alone, then list every partition, set its columns and
      ``alter_partitions`` them all in batches (same batch size and environment context as (c))
  (e) (c) run again with nothing stale, as when a stopped run resumes: it only reads

It builds a private metastore in a temporary directory with one Hive-format table (STORED AS
PARQUET, 8 columns, partitioned by ``ds``), and adds its partitions with the metastore client's
``add_partitions``, 1,000 at a time, copied from a template (no data files). Every path runs at
two sizes, a tenth of N partitions and then N, to show which costs grow with the partition count.
At the first size one untimed round warms the metastore up; then at each size the paths take turns
for two timed rounds, and the median is reported with the cost per partition and the ratio to
(b), next to the seconds per partition the plan's estimate assumes. Before each run the column
lists are put back (untimed) so that every run does its whole work; after each run the table's
and every partition's column lists are read back from the metastore and must be what the path
promises, and (c) and (e) must have rewritten all partitions and none. Progress goes to stderr,
the results to stdout. The Spark session, the metastore server and the temporary directory are
gone at the end.

Run from the repository root::

    .venv/bin/python bench/partitions.py                       # 10,000 partitions, embedded Derby
    .venv/bin/python bench/partitions.py --remote              # through a standalone Thrift metastore server
    .venv/bin/python bench/partitions.py --partitions 2000

Adding the partitions takes 10-15 ms each; a whole run at 10,000 partitions takes about 8 minutes,
embedded or remote.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any
from collections.abc import Callable, Sequence
from unittest.mock import patch

# The repository root, for bench.common and tests.metastore_server (neither is an installed package).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import COLUMN_TYPES, Heartbeat, Session, positive, private_session, progress, ratio  # noqa: E402
from schemaflow.catalog.hive import columns as catalog_columns  # noqa: E402
from schemaflow.catalog.hive.metastore import Metastore  # noqa: E402
from schemaflow.model import Column, split_key  # noqa: E402
from schemaflow.plan.changes import CASCADE_SECONDS_PER_PARTITION  # noqa: E402

KEY = "partitions_bench.events"
ADD_BATCH = 1_000
FIRST_DAY = date(2000, 1, 1)  # partition i is ds = FIRST_DAY + i days
WARMUPS = 1                   # untimed rounds, at the first size only
TIMED_ROUNDS = 2

ORIGINAL = tuple(Column(f"c{j:03d}", COLUMN_TYPES[j]) for j in range(len(COLUMN_TYPES)))
APPENDED = ORIGINAL + (Column("c008", "string"),)
RENAMED = tuple(Column(f"{c.name}_renamed", c.type) if c.name == "c003" else c for c in ORIGINAL)
PARTITION_COLUMNS = (Column("ds", "string"),)

ColumnRows = list[tuple[str, str | None, str | None]]  # (name, type, comment) of each column, as compared


@dataclass(frozen=True)
class Shape:
    """The column list of the table, and the one every partition has."""

    table: tuple[Column, ...]
    partitions: tuple[Column, ...]


START = Shape(ORIGINAL, ORIGINAL)


@dataclass(frozen=True)
class Bench:
    """What the paths work with: the table and how many partitions it has now."""

    metastore: Metastore
    key: str
    partitions: int


@dataclass(frozen=True)
class ChangePath:
    label: str
    start: Shape  # the column lists the path starts from
    end: Shape    # and the ones it promises
    run: Callable[[Bench], None]


def append_table_only(bench: Bench) -> None:
    bench.metastore.set_columns(bench.key, APPENDED, PARTITION_COLUMNS, cascade=False)


def metastore_cascade(bench: Bench) -> None:
    bench.metastore.set_columns(bench.key, RENAMED, PARTITION_COLUMNS, cascade=True, batched=False)


def schemaflow_batches(bench: Bench) -> None:
    run_batched(bench, rewrites=bench.partitions)


def naive_rewrite(bench: Bench) -> None:
    """The table alone, then every partition given the new columns and written back, stale or not."""
    metastore, msc = bench.metastore, bench.metastore.msc
    metastore.set_columns(bench.key, RENAMED, PARTITION_COLUMNS, cascade=False)
    database, name = split_key(bench.key)
    fields = metastore.spark._jvm.java.util.ArrayList()
    for column in RENAMED:
        fields.add(metastore.api.FieldSchema(column.name, column.type, column.comment))
    partitions = msc.listPartitions(database, name, -1)
    total = partitions.size()
    for index in range(total):
        partitions.get(index).getSd().setCols(fields)
    for start in range(0, total, catalog_columns.PARTITION_BATCH):
        batch = partitions.subList(start, min(start + catalog_columns.PARTITION_BATCH, total))
        msc.alter_partitions(database, name, batch, metastore.context())


def batched_repair(bench: Bench) -> None:
    run_batched(bench, rewrites=0)


def run_batched(bench: Bench, rewrites: int) -> None:
    """``set_columns`` to RENAMED through the batched path; it must rewrite ``rewrites`` partitions."""
    original = catalog_columns.cascade_in_batches
    rewritten: list[int] = []

    def recording(metastore: Metastore, key: str, columns: Sequence[Column]) -> int:
        rewritten.append(original(metastore, key, columns))
        return rewritten[-1]

    with patch.object(catalog_columns, "cascade_in_batches", recording):
        bench.metastore.set_columns(bench.key, RENAMED, PARTITION_COLUMNS, cascade=True, batched=True)
    assert rewritten == [rewrites], f"the batched path rewrote {rewritten} partitions, not [{rewrites}]"


CHANGED = Shape(RENAMED, RENAMED)
PATHS = (
    ChangePath("(a) table only: append a column", START, Shape(APPENDED, ORIGINAL), append_table_only),
    ChangePath("(b) metastore CASCADE: rename a column", START, CHANGED, metastore_cascade),
    ChangePath("(c) schemaflow batched: same rename", START, CHANGED, schemaflow_batches),
    ChangePath("(d) naive: rewrite every partition", START, CHANGED, naive_rewrite),
    ChangePath("(e) batched repair, nothing stale", CHANGED, CHANGED, batched_repair),
)
BASELINE = PATHS[1]


def create_table(session: Session) -> None:
    database, name = split_key(KEY)
    columns = ", ".join(f"`{c.name}` {c.type}" for c in ORIGINAL)
    keys = ", ".join(f"`{c.name}` {c.type}" for c in PARTITION_COLUMNS)
    session.spark.sql(f"CREATE DATABASE `{database}`")
    session.spark.sql(f"CREATE TABLE `{database}`.`{name}` ({columns}) PARTITIONED BY ({keys}) STORED AS PARQUET")


def add_partitions(metastore: Metastore, start: int, stop: int) -> None:
    """Add partitions ``start`` to ``stop - 1``, copies of a template with the table's storage."""
    database, name = split_key(KEY)
    jvm = metastore.spark._jvm
    template = metastore.api.Partition()
    template.setDbName(database)
    template.setTableName(name)
    template.setSd(metastore.msc.getTable(database, name).getSd().deepCopy())
    template.getSd().setLocation(None)  # the metastore gives each partition a directory of its own
    template.setParameters(jvm.java.util.HashMap())
    heartbeat = Heartbeat("adding partitions", stop - start, "partitions")
    for first in range(start, stop, ADD_BATCH):
        batch = jvm.java.util.ArrayList()
        for number in range(first, min(first + ADD_BATCH, stop)):
            partition = template.deepCopy()
            partition.setValues(jvm.java.util.Collections.singletonList(ds_value(number)))
            batch.add(partition)
        metastore.msc.add_partitions(batch)
        heartbeat(first - start + batch.size())


def ds_value(number: int) -> str:
    return (FIRST_DAY + timedelta(days=number)).isoformat()


def reach(bench: Bench, current: Shape, wanted: Shape) -> Shape:
    """Give the table and its partitions the column lists ``wanted`` (untimed), and check them."""
    if current == wanted:
        return current
    cascade = current.partitions != wanted.partitions
    assert not cascade or wanted.table == wanted.partitions, f"a CASCADE cannot reach {wanted}"
    bench.metastore.set_columns(bench.key, wanted.table, PARTITION_COLUMNS, cascade=cascade)
    verify(bench, wanted, "putting the column lists back")
    return wanted


def verify(bench: Bench, shape: Shape, after: str) -> None:
    """The table's and every partition's column lists, read back from the metastore, must be ``shape``."""
    metastore = bench.metastore
    database, name = split_key(bench.key)
    table = metastore.to_data(metastore.msc.getTable(database, name))
    found = rows(table["sd"].get("cols", []))
    assert found == expected_rows(shape.table), f"after {after}: the table has the columns {found}"
    keys = rows(table.get("partitionKeys", []))
    assert keys == expected_rows(PARTITION_COLUMNS), f"after {after}: the table has the partition keys {keys}"
    listed = metastore.msc.listPartitions(database, name, -1)
    data = metastore.to_data(metastore.api.PartitionsByExprResult(listed, False)).get("partitions", [])
    assert len(data) == bench.partitions, f"after {after}: {len(data):,} partitions, not {bench.partitions:,}"
    wanted = expected_rows(shape.partitions)
    wrong = [p["values"] for p in data if rows(p["sd"].get("cols", [])) != wanted]
    assert not wrong, (f"after {after}: {len(wrong):,} of {len(data):,} partitions have another column list, "
                       f"e.g. ds={wrong[0][0]}")


def rows(fields: Sequence[dict[str, Any]]) -> ColumnRows:
    return [(f["name"], f["type"], f.get("comment") or None) for f in fields]


def expected_rows(columns: Sequence[Column]) -> ColumnRows:
    return [(c.name, c.type, c.comment or None) for c in columns]


def time_paths(bench: Bench, current: Shape, rounds: int, warmups: int,
               times: dict[tuple[int, str], list[float]]) -> Shape:
    """Run every path ``warmups + rounds`` times, taking turns; adds the timed seconds to ``times``."""
    for round_number in range(warmups + rounds):
        warmup = round_number < warmups
        round_name = "warm-up" if warmup else f"timed round {round_number - warmups + 1}/{rounds}"
        progress(f"  {bench.partitions:,} partitions, {round_name}")
        for path in PATHS:
            current = reach(bench, current, path.start)
            started = time.perf_counter()
            path.run(bench)
            seconds = time.perf_counter() - started
            verify(bench, path.end, path.label)
            current = path.end
            progress(f"    {path.label}: {seconds:.2f} s")
            if not warmup:
                times.setdefault((bench.partitions, path.label), []).append(seconds)
    return current


def report(times: dict[tuple[int, str], list[float]], added: list[tuple[int, float]], session: Session) -> str:
    """The results as a fixed-layout text table, with what was measured and on what."""
    sizes = sorted({size for size, _ in times})
    medians = {measured: statistics.median(runs) for measured, runs in times.items()}
    growth = ", then ".join(f"{count:,} in {seconds:.1f} s" for count, seconds in added)
    lines = [
        f"table:     {KEY}, {len(ORIGINAL)} columns, STORED AS PARQUET, partitioned by ds, no data files",
        f"added:     add_partitions in batches of {ADD_BATCH:,}: {growth}",
        f"changes:   (a) appends c008 string; (b), (c), (d) rename c003 to c003_renamed; (e) repeats (c); "
        f"batches of {catalog_columns.PARTITION_BATCH:,}",
        "checked:   after every run, the table's and every partition's column list read back from the metastore",
        f"metastore: {session.where}",
        f"machine:   {session.machine}",
        f"timing:    {WARMUPS} untimed round at {sizes[0]:,} partitions, then the median of {TIMED_ROUNDS} timed runs "
        "per path and size,",
        "           paths taking turns; column lists put back (untimed) before each run",
        "",
        f"{'path':<40}{'partitions':>11}{'seconds':>9}  {'timed runs':<13}{'ms/partition':>13}  vs (b)",
    ]
    for size in sizes:
        baseline = medians[(size, BASELINE.label)]
        for path in PATHS:
            median = medians[(size, path.label)]
            runs = " ".join(f"{seconds:.2f}" for seconds in times[(size, path.label)])
            versus = "baseline" if path is BASELINE else ratio(median, baseline)
            per_partition = median / size * 1000
            lines.append(f"{path.label:<40}{size:>11,}{median:>9.2f}  {runs:<13}{per_partition:>13.3f}  {versus}")
    measured = ", ".join(f"{medians[(size, BASELINE.label)] / size * 1000:.2f} ms at {size:,} partitions"
                         for size in sizes)
    largest = sizes[-1]
    lines += [
        "",
        f"estimate:  the plan's CASCADE_SECONDS_PER_PARTITION is {CASCADE_SECONDS_PER_PARTITION * 1000:.2f} ms; "
        f"(b) measured {measured}",
        f"           for {largest:,} partitions the plan estimates {largest * CASCADE_SECONDS_PER_PARTITION:.1f} s; "
        f"(b) took {medians[(largest, BASELINE.label)]:.1f} s",
    ]
    return "\n".join(lines)


def sizes_for(partitions: int) -> list[int]:
    return sorted({max(1, partitions // 10), partitions})


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=positive, default=10_000,
                        help="partitions at the larger size; the smaller is a tenth of it (default 10000)")
    parser.add_argument("--remote", action="store_true",
                        help="work through a standalone Thrift metastore server instead of embedded Derby")
    return parser.parse_args(argv)


def main(argv: Sequence[str]) -> None:
    args = parse_args(argv)
    times: dict[tuple[int, str], list[float]] = {}
    added: list[tuple[int, float]] = []  # partitions added, seconds taken
    with private_session("partitions", args.remote) as session:
        progress(f"creating {KEY}")
        create_table(session)
        current, made = START, 0
        for number, size in enumerate(sizes_for(args.partitions)):
            if made:  # new partitions are copies of the table's storage: start from the original columns
                current = reach(Bench(session.metastore, KEY, made), current, START)
            progress(f"adding partitions {made:,} to {size:,}")
            started = time.monotonic()
            add_partitions(session.metastore, made, size)
            added.append((size - made, time.monotonic() - started))
            progress(f"  added {size - made:,} in {added[-1][1]:.1f} s")
            made = size
            bench = Bench(session.metastore, KEY, size)
            verify(bench, current, "adding partitions")
            current = time_paths(bench, current, TIMED_ROUNDS, WARMUPS if number == 0 else 0, times)
    print(report(times, added, session))


if __name__ == "__main__":
    main(sys.argv[1:])
