"""What a table rewrite costs: schemaflow's whole rewrite beside a bare INSERT ... SELECT of the same rows.

A data-source Parquet table (Spark 4's default kind) is filled with generated rows, then rewritten again and again,
each time to a definition Spark refuses in place on such a table, so that the plan makes it a rewrite
(``plan.rewrite``): first its ``id`` widened from int to bigint, then its ``amount`` widened by one digit each time
(decimal(12,2) to decimal(13,2), and so on). The table is one of two shapes (``--shape``):

  events: 5 columns (an int, two strings, a decimal; a string partition column), every value set;
  wide:   a table not shaped for the benchmark: 34 columns of 9 types (decimals of several scales, strings a
          fifth to a seventh of them NULL, timestamps and dates with NULLs, doubles, booleans, ints, bigints), a
          string partition column, 400 partitions by default.

Side by side, in one Spark session on one machine, interleaved and repeated (``--repeats``):

  (a) the bare alternative: ``CREATE TABLE`` of the next definition and ``INSERT INTO ... SELECT`` of the rows,
      cast, from the table as the next rewrite reads it: what a team following the old recipe runs (without
      checking or swapping anything);
  (b) schemaflow's rewrite, planned and applied as ``apply`` does: the copy (the same statement as (a), into
      the staging table, chunk by chunk, its totals observed as it writes), the verification of each chunk (the
      same totals read back from the copy), the journal and the looks at the table's files that find what to
      copy (again), the cut-over and the stamp. Its phases are timed by wrapping the functions that run them;
  (c) schemaflow's rewrite without the verification, which ``apply`` always runs: switched off here (nothing
      observed as the copy writes, nothing read back; no conversion here can lose a value, which apply would count
      as it writes) to measure what the rest costs,

in the order (a) (b) (a) (c) (a) (b) (a) (c) ... (a), so that each rewrite sits between two runs of its alternative
and is compared with their mean (the machine's speed drifts). Afterwards the new table's rows are counted and must
be the source's. The ratios of each repeat, their spread and their median are printed.

Run from the repository root::

    .venv/bin/python bench/rewrite.py                          # 1,000 partitions, 50,000,000 rows (3.5 GB)
    .venv/bin/python bench/rewrite.py --shape wide --rows 6000000 --repeats 3
    .venv/bin/python bench/rewrite.py --partitions 200 --rows 1000000
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import positive, private_session, progress  # noqa: E402
from schemaflow.apply.executor import apply_plan  # noqa: E402
from schemaflow.catalog.hive import rewrite, rewrite_copy  # noqa: E402
from schemaflow.catalog.live import Live  # noqa: E402
from schemaflow.project import Project, load_project  # noqa: E402
from schemaflow.sql.rewrite import flagged  # noqa: E402
from schemaflow.workflow import make_plan  # noqa: E402

DB = "bench"
TABLE = "events"
PHASES = ("copy", "verify", "look", "journal", "cut-over")


@dataclass(frozen=True)
class Column:
    """A data column of the benchmark's table: its name, type as filled, and the expression that fills it from
    ``id``, the number of a generated row."""

    name: str
    type: str
    fill: str


EVENTS = (Column("id", "int", "CAST(id AS INT)"), Column("name", "string", "concat('customer-', id % 100000)"),
          Column("amount", "decimal(12,2)", "CAST(id % 100000 AS DECIMAL(12,2)) / 100"),
          Column("payload", "string", "sha2(CAST(id AS STRING), 256)"))


def _wide_column(j: int) -> Column:
    """The ``j``-th of the wide table's other columns: a type in turn, values that vary with the row, some NULL."""
    k, null = 7 + 3 * j, f"id % {5 + j % 3} = {j % 5}"  # a fifth to a seventh of some columns' values are NULL
    kinds = (
        ("string", f"IF({null}, NULL, concat('v{j}-', CAST(id * {k} % 100003 AS STRING)))"),
        ("decimal(18,4)", f"CAST(id * {k} % 100000000 AS DECIMAL(18,4)) / 10000"),
        ("timestamp", f"IF({null}, NULL, timestamp_seconds(1600000000 + id * {k} % 100000000))"),
        ("bigint", f"id * {k} % 1000000007"),
        ("string", f"concat('customer ', CAST(id % {1000 * (j + 1)} AS STRING), ' of ', '{'x' * (j % 4 * 8)}')"),
        ("decimal(9,3)", f"IF({null}, NULL, CAST(id * {k} % 1000000 AS DECIMAL(9,3)) / 1000)"),
        ("double", f"id * {k} % 99991 / 7.0"),
        ("date", f"IF({null}, NULL, date_add(DATE'2020-01-01', CAST(id * {k} % 3000 AS INT)))"),
        ("int", f"CAST(id * {k} % 2147483 AS INT)"),
        ("boolean", f"id % {k} = 0"),
        ("decimal(38,10)", f"IF({null}, NULL, CAST(id * {k} AS DECIMAL(38,10)) / 3)"),
    )
    type_, fill = kinds[j % len(kinds)]
    return Column(f"c{j:02d}_{type_.split('(')[0]}", type_, f"CAST({fill} AS {type_.upper()})")


WIDE = (*EVENTS[:3], *(_wide_column(j) for j in range(31)))
SHAPES = {"events": EVENTS, "wide": WIDE}
PARTITIONS = {"events": 1000, "wide": 400}
ROW_COUNTS = {"events": 50_000_000, "wide": 6_000_000}


def definition(columns: Sequence[Column], rewrites: int) -> tuple[Column, ...]:
    """The table's data columns after ``rewrites`` rewrites: the first widens ``id`` to bigint, each later one
    ``amount`` by one digit."""
    amount = f"decimal({12 + max(rewrites - 1, 0)},2)"
    return tuple(Column(c.name, "bigint" if c.name == "id" and rewrites else amount if c.name == "amount" else c.type,
                        c.fill) for c in columns)


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="events")
    parser.add_argument("--partitions", type=positive, help="1,000 for events, 400 for wide")
    parser.add_argument("--rows", type=positive, help="50,000,000 for events, 6,000,000 for wide")
    parser.add_argument("--repeats", type=positive, default=1,
                        help="how many times each rewrite ((b), (c)) runs, each beside the bare copy")
    args = parser.parse_args(argv)
    shape = SHAPES[args.shape]
    partitions, rows = args.partitions or PARTITIONS[args.shape], args.rows or ROW_COUNTS[args.shape]
    with tempfile.TemporaryDirectory(prefix="schemaflow-rewrite-project-") as folder, \
            private_session("rewrite", remote=False) as session:
        spark, metastore = session.spark, session.metastore
        root = Path(folder)
        project = write_project(root, shape)
        apply_plan(make_plan(project, Live(project, connected=metastore)), metastore)
        progress(f"filling {DB}.{TABLE}: {rows:,} rows of {len(shape) + 1} columns in {partitions:,} partitions")
        started = time.monotonic()
        spark.range(rows).selectExpr(*(f"{c.fill} AS {c.name}" for c in shape),
                                     f"CAST(id % {partitions} AS STRING) AS ds").write.insertInto(f"{DB}.{TABLE}")
        progress(f"    filled in {time.monotonic() - started:.0f} s")
        location = metastore.msc.getTable(DB, TABLE).getSd().getLocation()
        size = folder_bytes(Path(location.removeprefix("file:")))

        bare: list[float] = []
        runs: list[tuple[bool, float, dict[str, float], int]] = []
        for done in range(2 * args.repeats):
            before, after = definition(shape, done), definition(shape, done + 1)
            bare.append(copy_by_hand(spark, before, after))
            spark.sql(f"DROP TABLE IF EXISTS {DB}.{TABLE}_backup_")  # the last rewrite's: a rewrite keeps its backup
            runs.append(rewritten(metastore, root, after, verified=done % 2 == 0))
        bare.append(copy_by_hand(spark, definition(shape, 2 * args.repeats), definition(shape, 2 * args.repeats + 1)))
        counted = spark.sql(f"SELECT count(*) FROM {DB}.{TABLE}").collect()[0][0]
        assert counted == rows, (counted, rows)
        print(report(args.shape, shape, rows, partitions, size, bare, runs, session))


def report(name: str, shape: Sequence[Column], rows: int, partitions: int, size: int, bare: Sequence[float],
           runs: Sequence[tuple[bool, float, dict[str, float], int]], session: Any) -> str:
    """The figures: each run, each rewrite's ratio to the mean of the bare copies beside it, the spread, the phases
    (means over the repeats)."""
    types = sorted({c.type.split("(")[0] for c in shape})
    lines = [f"Table rewrite ({name}): {rows:,} rows of {len(shape) + 1} columns ({', '.join(types)}), "
             f"{partitions:,} partitions, {size / 1e9:.2f} GB of Parquet",
             f"  ({session.machine}; metastore: {session.where})",
             f"  (a) bare INSERT ... SELECT into a new table:  {', '.join(f'{b:.1f}' for b in bare)} s "
             f"(mean {statistics.mean(bare):.1f} s)"]
    for verified, label in ((True, "(b) schemaflow's rewrite, whole"), (False, "(c) without the verification")):
        mine = [(i, r) for i, r in enumerate(runs) if r[0] == verified]
        ratios = [seconds / statistics.mean(bare[i:i + 2]) for i, (_, seconds, _, _) in mine]
        lines.append(f"  {label + ':':44} {', '.join(f'{r[1]:.1f}' for _, r in mine)} s; "
                     f"{', '.join(f'{x:.2f}x' for x in ratios)} the bare copies beside each "
                     f"(spread {min(ratios):.2f}-{max(ratios):.2f}x, median {statistics.median(ratios):.2f}x, "
                     f"mean {statistics.mean(ratios):.2f}x)")
        spent = {p: statistics.mean(r[2][p] for _, r in mine) for p in PHASES}
        chunks = sorted({r[3] for _, r in mine})
        lines.append(f"      the copy (chunks: {'/'.join(map(str, chunks))}; means):"
                     f"{'':13}{spent['copy']:.1f} s" + ("" if verified else ", nothing observed"))
        if verified:
            lines.append(f"      the verification of each chunk (read back):  {spent['verify']:.1f} s")
        lines.append(f"      looking at the table's files:                {spent['look']:.1f} s")
        lines.append(f"      the journal (reading and marking):           {spent['journal']:.1f} s")
        lines.append(f"      the cut-over (two renames):                  {spent['cut-over']:.1f} s")
    return "\n".join(lines)


def rewritten(metastore: Any, root: Path, columns: Sequence[Column],
              verified: bool) -> tuple[bool, float, dict[str, float], int]:
    """Plan ``bench.events`` as ``columns`` (a rewrite) and apply it as ``apply`` does, its phases timed; without
    ``verified``, nothing observed as the copy writes (``unobserved``) and nothing read back. Whether verified, seconds,
    seconds per phase, how many chunks."""
    project = write_project(root, columns)
    plan = make_plan(project, Live(project, connected=metastore), allow_destructive=True)
    [step] = plan.steps
    assert step.kind == "rewrite_table", step.summary
    spent = dict.fromkeys(PHASES, 0.0)
    chunks: list[str] = []
    metastore.progress = lambda message: chunks.append(message) if " partitions copied (" in message else None
    changed = ", ".join(f"{c.name} {c.type}" for c in columns if c.name in ("id", "amount"))
    progress(f"schemaflow's rewrite to {changed}: copy{', verification' if verified else ''}, cut-over")
    with ExitStack() as stack:
        for phase, function, module in (("copy", "_write", rewrite_copy), ("verify", "_differences", rewrite_copy),
                                        ("look", "_listing", rewrite_copy), ("journal", "_mark", rewrite_copy),
                                        ("journal", "_journal", rewrite_copy), ("cut-over", "_rename", rewrite)):
            stack.enter_context(timed(spent, phase, function, module))
        if not verified:
            stack.enter_context(replaced(rewrite_copy, "_observed", unobserved(rewrite_copy._observed)))
            stack.enter_context(replaced(rewrite_copy, "_differences", lambda *args: ""))
        began = time.monotonic()
        apply_plan(plan, metastore)
        total = time.monotonic() - began
    metastore.progress = None
    assert make_plan(project, Live(project, connected=metastore)).is_empty
    progress(f"    {total:.1f} s")
    return verified, total, spent, len(chunks)


def unobserved(observed: Callable[..., tuple[dict[str, Any], dict[str, Any]]]) -> Callable[..., Any]:
    """The copy's write (``rewrite_copy._observed``) for (c): the rewrite's own statement, nothing observed as it
    writes (the row count and the checksum are the verification's). Where a conversion may lose values
    (``Filled.lossy``: apply counts the NULLs it makes as it writes, verified or not) or a slice is picked, the
    rewrite's own write."""
    def write(client: Any, plan: Any, where: Any, among: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        if among is not None or any(f.lossy for f in plan.columns):
            return observed(client, plan, where, among)
        client.spark.sql(flagged(plan.key, plan.columns, where)).write.insertInto(
            plan.staging, overwrite=bool(plan.source_keys))
        return {}, {}

    return write


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


def write_project(root: Path, columns: Sequence[Column]) -> Project:
    """A project declaring ``bench.events`` with the data ``columns``, partitioned by the string ``ds``."""
    (root / "schemas" / DB).mkdir(parents=True, exist_ok=True)
    (root / "schemaflow.yaml").write_text(f"databases: [{DB}]\n")
    declared = "".join(f"  - {{name: {c.name}, type: '{c.type}'}}\n" for c in columns)
    (root / "schemas" / DB / f"{TABLE}.yaml").write_text(
        f"table: {DB}.{TABLE}\nusing: parquet\ncolumns:\n{declared}partitioned_by: [{{name: ds, type: string}}]\n")
    return load_project(root, env={})


def copy_by_hand(spark: Any, before: Sequence[Column], after: Sequence[Column]) -> float:
    """(a): the definition ``after`` created beside the table (of the definition ``before``) and filled from it, each
    column whose type changes cast: the same files the next rewrite reads; seconds. Dropped afterwards."""
    source = TABLE
    progress(f"bare INSERT ... SELECT from {DB}.{source}")
    spark.sql(f"DROP TABLE IF EXISTS {DB}.bare_copy")
    spark.sql(f"CREATE TABLE {DB}.bare_copy ({', '.join(f'{c.name} {c.type}' for c in after)}, ds string) "
              "USING parquet PARTITIONED BY (ds)")
    values = (c.name if c.type == b.type else f"CAST({c.name} AS {c.type.upper()})"
              for b, c in zip(before, after, strict=True))
    started = time.monotonic()
    spark.sql(f"INSERT INTO {DB}.bare_copy SELECT {', '.join(values)}, ds FROM {DB}.{source}")
    seconds = time.monotonic() - started
    spark.sql(f"DROP TABLE {DB}.bare_copy")
    progress(f"    {seconds:.1f} s")
    return seconds


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


if __name__ == "__main__":
    main(sys.argv[1:])
