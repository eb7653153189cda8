"""The reader rules proven against the Spark that runs the tests: each case plans a change with that Spark declared
as a reader, applies it to a Hive-format table holding a row written before, reads the row back through Spark, and
the verdict the step carries must be what Spark did: the same row, NULLs, another column's values, or a failed
query. The rules without a JVM are tests/test_reader_rules.py."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from schemaflow.apply.executor import apply_plan
from schemaflow.catalog.hive.jvm import JAVA_ERRORS
from schemaflow.model import Catalog, Column, DropColumn, Migration, RenameColumn, ReorderColumns, Table
from schemaflow.plan.plan import PlanBuilder
from schemaflow.plan.readers import Barrier, Cannot, Differs, Difference, Engine, Reader, Same, Verdict
from schemaflow.spark_version import spark_version
from schemaflow.sql.table_kinds import Resolution

pytestmark = pytest.mark.spark

ROW = {"id": 1, "amount": 10, "note": 100}


def _cols(*spec: str) -> tuple[Column, ...]:
    return tuple(Column(*c.split(":", 1)) for c in spec)


def _seen(spark: Any, key: str, expected: dict[str, Any]) -> Verdict:
    """What Spark did reading the row written before, as a verdict."""
    try:
        rows = [row.asDict() for row in spark.sql(f"SELECT * FROM {key}").collect()]
    except Exception as error:  # noqa: BLE001 (the query failing is the finding)
        return Cannot(Barrier.TYPE, type(error).__name__)
    assert len(rows) == 1
    [row] = rows
    if row == expected:
        return Same()
    if any(row[name] is None for name in expected if expected[name] is not None):
        return Differs(Difference.NULLS, "")
    return Differs(Difference.OTHER_COLUMN, "")


SAME, NULLS, OTHER, CANNOT = "same", "NULLs", "another column's values", "cannot"
RENAMED, REORDERED, DROPPED = {"id": 1, "total": 10, "note": 100}, {"id": 1, "note": 100, "amount": 10}, {"id": 1, "note": 100}

# Each case: the format, the migration's change (None: the declared type changes), the columns declared, the row as
# it reads where nothing differs, and what Spark does reading the row written before: every kind of verdict is proven.
CASES = {
    # rule hive-rename
    "rename parquet": ("parquet", RenameColumn("{}", "amount", "total"), ("id:int", "total:int", "note:int"), RENAMED,
                       NULLS),
    "rename textfile": ("textfile", RenameColumn("{}", "amount", "total"), ("id:int", "total:int", "note:int"), RENAMED,
                        SAME),
    # rule hive-reorder
    "reorder parquet": ("parquet", ReorderColumns("{}", ("id", "note", "amount")), ("id:int", "note:int", "amount:int"),
                        REORDERED, SAME),
    "reorder textfile": ("textfile", ReorderColumns("{}", ("id", "note", "amount")),
                         ("id:int", "note:int", "amount:int"), REORDERED, OTHER),
    # rule hive-drop
    "drop parquet": ("parquet", DropColumn("{}", "amount"), ("id:int", "note:int"), DROPPED, SAME),
    "drop textfile": ("textfile", DropColumn("{}", "amount"), ("id:int", "note:int"), DROPPED, OTHER),
    # rule spark-type-change
    # Spark 3.5's Parquet reader converts no widening that changes how the files store values (.ci/spark_versions.py
    # runs these tests on 3.5.9 too)
    "widen parquet": ("parquet", None, ("id:int", "amount:bigint", "note:int"), ROW,
                      SAME if spark_version() >= (4, 0) else CANNOT),
    "to string parquet": ("parquet", None, ("id:int", "amount:string", "note:int"), {"id": 1, "amount": "10", "note": 100},
                          CANNOT),
}


def _named(change: Any, key: str) -> Any:
    return replace(change, table=key)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_verdict_is_what_spark_does(case: str, spark: Any, metastore: Any,
                                        fresh_db: Callable[[], str]) -> None:
    format, change, columns, expected, outcome = CASES[case]
    db = fresh_db()
    live = Table(db, "t", _cols("id:int", "amount:int", "note:int"), format=format)
    apply_plan(PlanBuilder(Catalog((db,), {live.key: live}), metastore.read((db,))).build(), metastore)
    spark.sql(f"INSERT INTO {live.key} VALUES (1, 10, 100)")
    migrations = (Migration("0001_change", "", (_named(change, live.key),)),) if change else ()
    desired = replace(live, columns=_cols(*columns))
    # No reader declared: the Spark the plan is made for, this one, is the reader it judges for.
    plan = PlanBuilder(Catalog((db,), {live.key: desired}, migrations), metastore.read((db,)),
                       allow_destructive=True).build()
    [step] = [s for s in plan.steps if s.object == live.key]
    assert step.kind == "alter_columns", step.summary  # made in place, not by copying the rows
    [verdict] = step.readers
    apply_plan(plan, metastore)
    spark.catalog.refreshTable(live.key)
    seen = _seen(spark, live.key, expected)
    assert outcome == (SAME if isinstance(seen, Same) else seen.what if isinstance(seen, Differs) else CANNOT), seen
    match verdict.verdict:
        case Same():
            assert seen == Same(), case
        case Differs(what, _):
            assert seen == Differs(what, ""), case
        case Cannot(_, _):
            assert isinstance(seen, Cannot), (case, seen)


# Hive's own readers, as Spark runs them for a Hive-format table when told not to use its own (Hive 2.3's SerDes, from
# the jars pyspark bundles); parquet.column.index.access makes Hive's Parquet reader find columns by position.
HIVE_READS = {"parquet": "spark.sql.hive.convertMetastoreParquet", "orc": "spark.sql.hive.convertMetastoreOrc"}


@pytest.mark.parametrize("format, columns", [("parquet", None), ("parquet", Resolution.BY_POSITION), ("orc", None)])
def test_the_hive_verdict_on_a_rename_is_what_hives_reader_does(format: str, columns: Resolution | None, spark: Any,
                                                                metastore: Any, fresh_db: Callable[[], str]) -> None:
    db = fresh_db()
    live = Table(db, "t", _cols("id:int", "amount:int", "note:int"), format=format)
    apply_plan(PlanBuilder(Catalog((db,), {live.key: live}), metastore.read((db,))).build(), metastore)
    spark.sql(f"INSERT INTO {live.key} VALUES (1, 10, 100)")
    migration = Migration("0001_change", "", (RenameColumn(live.key, "amount", "total"),))
    reader = Reader(Engine.HIVE, "2.3", columns=columns)
    plan = PlanBuilder(Catalog((db,), {live.key: replace(live, columns=_cols("id:int", "total:int", "note:int"))},
                               (migration,)), metastore.read((db,)), readers=(reader,), allow_destructive=True).build()
    [verdict] = [v for v in plan.steps[0].readers if v.reader == reader.label]  # beside the plan's own Spark
    apply_plan(plan, metastore)
    settings = {HIVE_READS[format]: "false", "parquet.column.index.access": str(columns is Resolution.BY_POSITION).lower()}
    before = {key: spark.conf.get(key, None) for key in settings}
    try:
        for key, value in settings.items():
            spark.conf.set(key, value)
        spark.catalog.refreshTable(live.key)
        seen = _seen(spark, live.key, RENAMED)
    finally:
        for key, value in before.items():
            spark.conf.unset(key) if value is None else spark.conf.set(key, value)
    assert seen == (Same() if isinstance(verdict.verdict, Same) else replace(verdict.verdict, detail="")), seen


@pytest.mark.parametrize("format", ["parquet", "orc", "avro", "textfile"])
def test_a_narrowed_decimal_reads_as_the_verdict_says(format: str, spark: Any, metastore: Any,
                                                     fresh_db: Callable[[], str]) -> None:
    db = fresh_db()
    live = Table(db, "t", _cols("id:int", "d:decimal(10,2)"), format=format)
    apply_plan(PlanBuilder(Catalog((db,), {live.key: live}), metastore.read((db,))).build(), metastore)
    spark.sql(f"INSERT INTO {live.key} VALUES (1, 1.25), (2, 12345.67)")
    plan = PlanBuilder(Catalog((db,), {live.key: replace(live, columns=_cols("id:int", "d:decimal(5,1)"))}),
                       metastore.read((db,)), allow_destructive=True).build()  # judged for the plan's own Spark
    [step] = plan.steps
    assert step.kind == "alter_columns"
    [verdict] = step.readers
    apply_plan(plan, metastore)
    spark.catalog.refreshTable(live.key)
    select = f"SELECT id, d FROM {live.key} ORDER BY id"
    match verdict.verdict:
        case Cannot():
            with pytest.raises(JAVA_ERRORS):
                spark.sql(select).collect()
        case Differs(Difference.LOST_PRECISION, _):
            assert [tuple(r) for r in spark.sql(select).collect()] == [(1, Decimal("1.3")), (2, None)]
            assert step.hazards == ("type d decimal(10,2) -> decimal(5,1): existing values read rounded to "
                                    "decimal(5,1)'s scale, and NULL where they have more integer digits than "
                                    "decimal(5,1) holds",)
        case other:
            raise AssertionError(f"{format}: {other}")
