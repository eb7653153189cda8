"""Drift and history that answer questions, on the real metastore: which column, which property, what
to do about it; objects made outside schemaflow; drops kept in the history, an object filter, short commits."""
from __future__ import annotations

import json

import pytest

from tests.gitrepos import commit, init_repo
from tests.inprocess import schemaflow

pytestmark = pytest.mark.spark


def test_drift_spells_out_each_change_and_history_keeps_the_drops(tmp_path, spark, metastore, fresh_db):
    db = fresh_db()
    (tmp_path / "schemas" / db).mkdir(parents=True)
    (tmp_path / "schemaflow.yaml").write_text(f"databases: [{db}]\nexclude: [{db}.tmp_*]\n")
    (tmp_path / "schemas" / db / "t.yaml").write_text(
        f"table: {db}.t\ncomment: Orders\ncolumns:\n  - {{name: a, type: int, comment: The id}}\n"
        "partitioned_by:\n  - {name: ds, type: string}\nproperties: {retention: '30'}\n")
    (tmp_path / "schemas" / db / "v.yaml").write_text(f"view: {db}.v\nsql: SELECT a FROM t\n")
    repo = init_repo(tmp_path)
    first = commit(repo, "t and v")
    project = str(tmp_path)
    assert schemaflow("--project", project, "apply", "--auto-approve").code == 0
    clean = schemaflow("--project", project, "drift")
    assert (clean.code, clean.out) == (0, "No drift: every object schemaflow applied is as it left it.\n")

    spark.sql(f"ALTER TABLE {db}.t ADD COLUMNS (discount DECIMAL(5,2))")  # from a notebook
    spark.sql(f"ALTER TABLE {db}.t ALTER COLUMN a COMMENT 'Order id'")
    spark.sql(f"ALTER TABLE {db}.t SET TBLPROPERTIES ('retention'='7', 'theirs'='x')")
    spark.sql(f"CREATE TABLE {db}.notebook_copy (a INT) STORED AS PARQUET")
    spark.sql(f"CREATE TABLE {db}.tmp_scratch (a INT)")  # excluded: schemaflow leaves it alone

    drift = schemaflow("--project", project, "drift")
    assert drift.code == 2
    assert drift.out.splitlines() == [
        f"{db}.notebook_copy: created outside schemaflow and not declared: declare it (schemaflow import --database "
        f"{db} writes the files of what is there), exclude it in schemaflow.yaml, or let a plan with "
        "--allow-destructive drop it",
        f"{db}.t: columns, properties changed since schemaflow applied it at "
        + drift.out.split("applied it at ")[1].split(" (")[0] + f" (commit {first[:10]})",
        f"  column discount decimal(5,2) added: declare it in schemas/{db}/t.yaml ({{name: discount, type: "
        f"'decimal(5,2)'}}), or drop it with a migration (- drop_column: {{table: {db}.t, column: discount}})",
        "  comment of column a: 'The id' -> 'Order id'",
        "  property retention: '30' -> '7'",
    ]
    as_json = json.loads(schemaflow("--project", project, "drift", "--format", "json").out)["drift"]
    assert [(d["object"], d["aspects"], len(d["details"])) for d in as_json] == [
        (f"{db}.notebook_copy", ["undeclared"], 0), (f"{db}.t", ["columns", "properties"], 3)]

    # The notebook's column is declared, as drift offers; the view is removed from the schemas, and
    # the apply drops it and the notebook's table.
    t = tmp_path / "schemas" / db / "t.yaml"
    t.write_text(t.read_text().replace("comment: The id}\n", "comment: The id}\n  - {name: discount, type: 'decimal(5,2)'}\n"))
    (tmp_path / "schemas" / db / "v.yaml").unlink()
    second = commit(repo, "no more v")
    dropped = schemaflow("--project", project, "apply", "--auto-approve", "--allow-destructive")
    assert dropped.code == 0, dropped.said
    assert "could not refresh" not in dropped.err, dropped.err  # what it dropped is not refreshed
    assert sorted(metastore.read((db,)).objects) == [f"{db}.t", f"{db}.tmp_scratch"]
    record = json.loads(metastore.database(db).properties["schemaflow.dropped.v"])
    assert (record["kind"], record["commit"], record["at"].endswith("Z")) == ("view", second, True)

    history = schemaflow("--project", project, "history")
    assert history.code == 0, history.said
    lines = history.out.splitlines()
    [view_dropped] = [line for line in lines if f"{db}.v " in line]
    assert f"dropped view (version {record['version']})" in view_dropped and view_dropped.endswith(second[:10])
    [copy_dropped] = [line for line in lines if f"{db}.notebook_copy " in line]
    assert "dropped table (version none)" in copy_dropped
    assert lines == sorted(lines)  # oldest first: each line starts with its time
    only_v = schemaflow("--project", project, "history", f"{db}.v")
    assert only_v.out.splitlines() == [view_dropped]
    globbed = schemaflow("--project", project, "history", f"{db}.t*", "--format", "json")
    assert {r["object"] for r in json.loads(globbed.out)["history"]} == {f"{db}.t"}
    assert all(len(r["commit"]) == 40 for r in json.loads(globbed.out)["history"])  # JSON keeps whole commits
