"""What a table rewrite costs: schemaflow's whole rewrite beside a bare INSERT ... SELECT of the same rows.

A data-source Parquet table (Spark 4's default kind) of N partitions is filled with generated rows; then its
``id`` column is widened from int to bigint, which Spark refuses in place on such a table, so the plan makes
it a rewrite (``plan.rewrite``). Side by side, in one Spark session on one machine:

  (a) the bare alternative: ``CREATE TABLE`` of the new definition and ``INSERT INTO ... SELECT`` of the rows,
      cast, from the table: what a team following the old recipe runs (without checking or swapping anything);
  (b) schemaflow's rewrite, planned and applied as ``apply`` does: the copy (the same statement as (a), into
      the staging table, chunk by chunk, its totals observed as it writes), the verification of each chunk (the
      same totals read back from the copy), the journal and the looks at the table's files that find what to
      copy (again), the cut-over and the stamp. Its phases are timed by wrapping the functions that run them;
  (a) again, from the backup (b) leaves;
  (c) schemaflow's rewrite without the verification, which ``apply`` always runs: switched off here (only the row
      count observed, nothing read back) to measure what the rest costs; its change widens ``amount`` from
      decimal(12,2) to decimal(16,2), as cheap a cast as (a)'s;
  (a) a third time, from (c)'s backup,

so that each rewrite sits between two runs of its alternative. Afterwards the new table's rows are counted and
must be the source's. The ratios compare (b) and (c) with the mean of the (a) runs.

Run from the repository root::

    .venv/bin/python bench/rewrite.py                          # 1,000 partitions, 50,000,000 rows (3.5 GB)
    .venv/bin/python bench/rewrite.py --partitions 200 --rows 1000000
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import positive, private_session, progress, ratio  # noqa: E402
from schemaflow.apply.executor import apply_plan  # noqa: E402
from schemaflow.catalog import rewrite, rewrite_copy  # noqa: E402
from schemaflow.catalog.live import Live  # noqa: E402
from schemaflow.project import load_project  # noqa: E402
from schemaflow.sql.rewrite import ROWS  # noqa: E402
from schemaflow.workflow import make_plan  # noqa: E402

DB = "bench"
COLUMNS = ("id", "name", "amount", "payload", "ds")
TABLE = """\
table: bench.events
using: parquet
columns:
  - {{name: id, type: {id_type}}}
  - {{name: name, type: string}}
  - {{name: amount, type: '{amount_type}'}}
  - {{name: payload, type: string}}
partitioned_by: [{{name: ds, type: string}}]
"""
# The three definitions in turn: as filled, after (b), after (c).
DEFINITIONS = (("int", "decimal(12,2)"), ("bigint", "decimal(12,2)"), ("bigint", "decimal(16,2)"))
PHASES = ("copy", "verify", "look", "journal", "cut-over")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=positive, default=1000)
    parser.add_argument("--rows", type=positive, default=50_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="schemaflow-rewrite-project-") as folder, \
            private_session("rewrite", remote=False) as session:
        spark, metastore = session.spark, session.metastore
        root = Path(folder)
        project = write_project(root, *DEFINITIONS[0])
        apply_plan(make_plan(project, Live(project, connected=metastore)), metastore)
        progress(f"filling {DB}.events: {args.rows:,} rows in {args.partitions:,} partitions")
        started = time.monotonic()
        spark.range(args.rows).selectExpr(
            "CAST(id AS INT) AS id", "concat('customer-', id % 100000) AS name",
            "CAST(id % 100000 AS DECIMAL(12,2)) / 100 AS amount", "sha2(CAST(id AS STRING), 256) AS payload",
            f"CAST(id % {args.partitions} AS STRING) AS ds",
        ).write.insertInto(f"{DB}.events")
        progress(f"    filled in {time.monotonic() - started:.0f} s")
        location = metastore.msc.getTable(DB, "events").getSd().getLocation()
        size = folder_bytes(Path(location.removeprefix("file:")))

        bare = [copy_by_hand(spark, "events", *DEFINITIONS[1])]
        whole, spent, chunks = rewritten(metastore, root, DEFINITIONS[1], verified=True)
        bare.append(copy_by_hand(spark, "events_backup_", *DEFINITIONS[1]))
        spark.sql(f"DROP TABLE {DB}.events_backup_")
        unverified, unverified_spent, _ = rewritten(metastore, root, DEFINITIONS[2], verified=False)
        bare.append(copy_by_hand(spark, "events_backup_", *DEFINITIONS[2]))
        rows = spark.sql(f"SELECT count(*) FROM {DB}.events").collect()[0][0]
        assert rows == args.rows, (rows, args.rows)

        baseline = sum(bare) / len(bare)
        runs = ", ".join(f"{b:.1f}" for b in bare)
        print(f"Table rewrite: {args.rows:,} rows, {args.partitions:,} partitions, {size / 1e9:.2f} GB of Parquet "
              f"({session.machine}; metastore: {session.where})")
        print(f"  (a) bare INSERT ... SELECT into a new table:  {runs} s (mean {baseline:.1f} s)")
        print(f"  (b) schemaflow's rewrite, whole:              {whole:.1f} s   {ratio(whole, baseline)} than (a)")
        print(f"      the copy, in {len(chunks)} chunks:                  {spent['copy']:.1f} s")
        print(f"      the verification of each chunk:           {spent['verify']:.1f} s")
        print(f"      looking at the table's files:             {spent['look']:.1f} s")
        print(f"      the journal (reading and marking):        {spent['journal']:.1f} s")
        print(f"      the cut-over (two renames):               {spent['cut-over']:.1f} s")
        print(f"  (c) without the verification:                 {unverified:.1f} s   "
              f"{ratio(unverified, baseline)} than (a)")
        print(f"      the copy, only the row count observed:    {unverified_spent['copy']:.1f} s")
        print(f"      looking, journal, cut-over:               "
              f"{sum(unverified_spent[p] for p in PHASES[2:]):.1f} s")


def rewritten(metastore: Any, root: Path, definition: tuple[str, str],
              verified: bool) -> tuple[float, dict[str, float], list[str]]:
    """Plan ``bench.events`` as ``definition`` (a rewrite) and apply it as ``apply`` does, its phases timed; without
    ``verified``, only the row count observed as the copy writes and nothing read back. Seconds, seconds per phase,
    the progress lines of its chunks."""
    project = write_project(root, *definition)
    plan = make_plan(project, Live(project, connected=metastore), allow_destructive=True)
    [step] = plan.steps
    assert step.kind == "rewrite_table", step.summary
    spent = dict.fromkeys(PHASES, 0.0)
    chunks: list[str] = []
    metastore.progress = lambda message: chunks.append(message) if " partitions copied (" in message else None
    progress(f"schemaflow's rewrite to {definition}: copy{', verification' if verified else ''}, cut-over")
    with ExitStack() as stack:
        for phase, function, module in (("copy", "_write", rewrite_copy), ("verify", "_differences", rewrite_copy),
                                        ("look", "_listing", rewrite_copy), ("journal", "_mark", rewrite_copy),
                                        ("journal", "_journal", rewrite_copy), ("cut-over", "_rename", rewrite)):
            stack.enter_context(timed(spent, phase, function, module))
        if not verified:
            stack.enter_context(replaced(rewrite_copy, "totals", lambda columns, nulled=False: [f"count(1) AS {ROWS}"]))
            stack.enter_context(replaced(rewrite_copy, "_differences", lambda *args: ""))
        began = time.monotonic()
        apply_plan(plan, metastore)
        total = time.monotonic() - began
    metastore.progress = None
    assert make_plan(project, Live(project, connected=metastore)).is_empty
    return total, spent, chunks


def timed(spent: dict[str, float], phase: str, function: str, module: Any) -> AbstractContextManager[None]:
    """Add the time ``<module>.<function>`` takes to ``spent[phase]`` while inside."""
    real = getattr(module, function)

    def run(*args: Any) -> Any:
        started = time.monotonic()
        try:
            return real(*args)
        finally:
            spent[phase] += time.monotonic() - started

    return replaced(module, function, run)


@contextmanager
def replaced(module: Any, name: str, value: Any) -> Iterator[None]:
    """``<module>.<name>`` is ``value`` while inside."""
    real = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, real)


def write_project(root: Path, id_type: str, amount_type: str):
    (root / "schemas" / DB).mkdir(parents=True, exist_ok=True)
    (root / "schemaflow.yaml").write_text(f"databases: [{DB}]\n")
    (root / "schemas" / DB / "events.yaml").write_text(TABLE.format(id_type=id_type, amount_type=amount_type))
    return load_project(root, env={})


def copy_by_hand(spark, source: str, id_type: str, amount_type: str) -> float:
    """(a): the definition ``id_type``, ``amount_type`` created beside the table and filled from it; seconds. Dropped
    afterwards."""
    progress(f"bare INSERT ... SELECT from {DB}.{source}")
    spark.sql(f"DROP TABLE IF EXISTS {DB}.bare_copy")
    spark.sql(f"CREATE TABLE {DB}.bare_copy (id {id_type}, name string, amount {amount_type}, payload string, "
              "ds string) USING parquet PARTITIONED BY (ds)")
    started = time.monotonic()
    spark.sql(f"INSERT INTO {DB}.bare_copy SELECT CAST(id AS {id_type.upper()}), name, "
              f"CAST(amount AS {amount_type.upper()}), payload, ds FROM {DB}.{source}")
    seconds = time.monotonic() - started
    spark.sql(f"DROP TABLE {DB}.bare_copy")
    return seconds


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


if __name__ == "__main__":
    main()
