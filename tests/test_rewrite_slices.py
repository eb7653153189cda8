"""A rewrite that copies the whole table (unpartitioned, or its partition columns changed) copies it in slices of its
rows through a real SparkSession and metastore, stops after two, and is resumed: every row once afterwards.

Slices are made small (Spark's task size set to a 48th of the table: a chunk is at least eight waves of two tasks), so
that a table of a few kB is copied in three or four. One stop comes before the third slice (the resumed run copies only the rest);
the other as the third slice's files landed, before its mark (the resumed run cannot tell its rows from the others',
and copies the table anew rather than hold them twice).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from schemaflow.apply.executor import ApplyError, apply_plan
from schemaflow.catalog.hive import rewrite_copy
from schemaflow.catalog.hive.table_files import stored
from tests.projects import plan, write_project

pytestmark = pytest.mark.spark

ROWS = [(i, f"name {i}" if i % 7 else None, f"{i}.25", ("eu", "us", "apac")[i % 3], f"2024-01-0{i % 4 + 1}")
        for i in range(60)]
# The rows' count and checksum (ids read as bigint, as the rewrite makes them).
HASH = "xxhash64(CAST(id AS BIGINT), name, amount, region, ds)"
TOTALS = f"count(*), sum(shiftright({HASH}, 32)), sum({HASH} & 4294967295)"  # shiftright: Spark 3.5 has no >>
KEYS = {"": [], "ds": ["ds"], "region": ["region", "ds"]}


@pytest.fixture
def small_slices(spark):
    """Spark's task size left as it was after the test."""
    yield
    spark.conf.unset(rewrite_copy.SPLIT)


def _project(root: Path, db: str, id_type: str, partitioned: str):
    """The table ``db.t`` with ``id`` of ``id_type``, partitioned as ``KEYS[partitioned]`` says."""
    keys = KEYS[partitioned]
    def listed(names: list[str]) -> str:
        return "[" + ", ".join(f"{{name: {n}, type: {id_type if n == 'id' else 'string'}}}" for n in names) + "]"

    columns = [n for n in ("id", "name", "amount", "region", "ds") if n not in keys]
    return write_project(root, {f"schemas/{db}/t.yaml": f"table: {db}.t\nusing: parquet\ncolumns: {listed(columns)}\n"
                                                        f"partitioned_by: {listed(keys)}\n"})


def _stopped_then_resumed(tmp_path: Path, spark, metastore, db: str, before: str, after: str, monkeypatch,
                          stop: str) -> tuple[list[str], list[str], list[tuple], tuple]:
    """``db.t`` made as ``before``, filled, rewritten as ``after`` by an apply stopped (``stop``: "before" the third
    slice, or as its files "landed") and the next one: what that one reported and copied, the rows and their totals."""
    apply_plan(plan(_project(tmp_path, db, "int", before), metastore), metastore)
    values = ", ".join(f"({i}, {'NULL' if n is None else repr(n)}, '{a}', '{r}', '{d}')" for i, n, a, r, d in ROWS)
    spark.sql(f"INSERT INTO {db}.t (id, name, amount, region, ds) VALUES {values}")
    totals = tuple(spark.sql(f"SELECT {TOTALS} FROM {db}.t").collect()[0])
    # Slices of about a third of the table: eight waves of the session's two tasks, each reading a 48th of it.
    spark.conf.set(rewrite_copy.SPLIT, str(stored(metastore, f"{db}.t").bytes // 48))
    project = _project(tmp_path, db, "bigint", after)
    real_copy, real_mark, copied = rewrite_copy._copy_slice, rewrite_copy._mark, []

    def copy_slice(client, copying, units):
        if stop == "before" and len(copied) == 2:
            raise RuntimeError("the process stopped here")
        copied.append(units[0][0])
        return real_copy(client, copying, units)

    def mark(client, copying, marks, landed=None):
        if stop == "landed" and len(copied) == 3:
            raise RuntimeError("the process stopped here")
        real_mark(client, copying, marks, landed)

    monkeypatch.setattr(rewrite_copy, "_copy_slice", copy_slice)
    monkeypatch.setattr(rewrite_copy, "_mark", mark)
    with pytest.raises(ApplyError):
        apply_plan(plan(project, metastore, allow_destructive=True), metastore)
    assert spark.sql(f"SHOW TABLES IN {db} LIKE 't_rewrite_'").count() == 1

    stopped, reports = list(copied), []
    copied.clear()
    monkeypatch.setattr(rewrite_copy, "_copy_slice", lambda client, copying, units: (
        copied.append(units[0][0]), real_copy(client, copying, units))[1])
    monkeypatch.setattr(rewrite_copy, "_mark", real_mark)
    monkeypatch.setattr(metastore, "progress", reports.append)
    resumed = plan(project, metastore, allow_destructive=True)
    apply_plan(resumed, metastore)
    assert plan(project, metastore).is_empty
    rows = sorted((tuple(r) for r in spark.sql(f"SELECT id, name, amount, region, ds FROM {db}.t").collect()),
                  key=repr)
    return stopped + ["|"] + copied, reports, rows, (totals, tuple(spark.sql(f"SELECT {TOTALS} FROM {db}.t").collect()[0]))


@pytest.mark.usefixtures("small_slices")
def test_a_whole_table_copy_stopped_after_two_slices_is_resumed_with_every_row_once(tmp_path, spark, metastore,
                                                                                  fresh_db, monkeypatch):
    # Unpartitioned: stopped before the third slice, the next apply copies only the slices left.
    db = fresh_db()
    copied, reports, rows, (before, after) = _stopped_then_resumed(tmp_path / "flat", spark, metastore, db, "", "",
                                                                   monkeypatch, "before")
    count = int(copied[0].split("/")[1])
    assert 3 <= count <= 4
    assert copied == [f"{i:05d}/{count:05d}" for i in range(2)] + ["|"] + [f"{i:05d}/{count:05d}"
                                                                        for i in range(2, count)]
    assert reports[0] == f"resuming the copy of {db}.t: 2 of {count} slices copied by a stopped run"
    assert any(r.startswith(f"{db}.t: {count} of {count} slices copied (") for r in reports), reports
    assert rows == sorted(ROWS, key=repr) and after == before
    assert metastore.read((db,)).get(f"{db}.t").columns[0].type == "bigint"

    # Its partition columns changed (ds -> region, ds): stopped as the third slice's files landed, before its mark,
    # the next apply copies the table anew, never holding that slice's rows twice.
    db = fresh_db()
    copied, reports, rows, (before, after) = _stopped_then_resumed(tmp_path / "moved", spark, metastore, db, "ds",
                                                                   "region", monkeypatch, "landed")
    count = int(copied[0].split("/")[1])
    assert 3 <= count <= 4
    assert copied == [f"{i:05d}/{count:05d}" for i in range(3)] + ["|"] + [f"{i:05d}/{count:05d}"
                                                                        for i in range(count)]
    assert reports[0] == (f"copying the rows of {db}.t anew: a stopped run wrote a slice into {db}.t_rewrite_ without "
                          "marking it, and its rows cannot be told from the others'")
    assert rows == sorted(ROWS, key=repr) and after == before
    assert [c.name for c in metastore.read((db,)).get(f"{db}.t").partition_columns] == ["region", "ds"]
