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
    header, *lines = history.out.splitlines()
    assert header.split() == ["APPLIED", "AT", "OBJECT", "CHANGE", "WHAT", "COMMIT"]
    # Every apply of the view: its creation, then its drop (a drop takes the object's own stamp with it).
    [view_created, view_dropped] = [line for line in lines if f"{db}.v " in line]
    assert view_created.split()[2] == "create" and view_created.endswith(first[:10])
    assert f"dropped view (version {record['version']})" in view_dropped and view_dropped.endswith(second[:10])
    [copy_dropped] = [line for line in lines if f"{db}.notebook_copy " in line]
    assert "dropped table (version none)" in copy_dropped
    # Oldest first, by object within a second (each line starts with its time and object); two applies of one object
    # within a second keep the order they were made in.
    assert [line.split()[:2] for line in lines] == sorted(line.split()[:2] for line in lines)
    only_v = schemaflow("--project", project, "history", f"{db}.v")
    assert only_v.out.splitlines() == [header, view_created, view_dropped]
    globbed = schemaflow("--project", project, "history", f"{db}.t*", "--format", "json")
    assert {r["object"] for r in json.loads(globbed.out)["history"]} == {f"{db}.t"}
    assert all(len(r["commit"]) == 40 for r in json.loads(globbed.out)["history"])  # JSON keeps whole commits


def test_history_keeps_every_apply_of_an_object_create_change_drop_and_again(tmp_path, metastore, fresh_db):
    db = fresh_db()
    (tmp_path / "schemas" / db).mkdir(parents=True)
    (tmp_path / "schemaflow.yaml").write_text(f"databases: [{db}]\n")
    t = tmp_path / "schemas" / db / "t.yaml"
    repo = init_repo(tmp_path)
    project = ["--project", str(tmp_path)]

    def apply(*options: str) -> str:
        done = schemaflow(*project, "apply", "--auto-approve", *options)
        assert done.code == 0, done.said
        return done.err

    t.write_text(f"table: {db}.t\ncolumns: [{{name: a, type: int}}]\n")
    created = commit(repo, "create t")
    assert "uncommitted" not in apply()
    t.write_text(f"table: {db}.t\ncomment: Orders\ncolumns: [{{name: a, type: int}}]\n")
    changed = commit(repo, "comment t")
    apply()
    t.unlink()
    dropped = commit(repo, "drop t")
    apply("--allow-destructive")
    t.write_text(f"table: {db}.t\ncolumns: [{{name: a, type: int}}, {{name: b, type: string}}]\n")
    # Made from uncommitted changes: the apply says what that records.
    warned = apply()
    assert (f"warning: this plan was made from uncommitted changes, so what it applied records the commit "
            f"{dropped[:10]}+dirty for good") in warned

    history = schemaflow(*project, "history", f"{db}.t")
    assert history.code == 0, history.said
    header, *lines = history.out.splitlines()
    assert header.split() == ["APPLIED", "AT", "OBJECT", "CHANGE", "WHAT", "COMMIT"]
    assert [line.split()[1:3] + [line.split()[-1]] for line in lines] == [
        [f"{db}.t", "create", created[:10]], [f"{db}.t", "change", changed[:10]], [f"{db}.t", "drop", dropped[:10]],
        [f"{db}.t", "create", f"{dropped[:10]}+dirty"]]
    records = json.loads(schemaflow(*project, "history", "--format", "json").out)["history"]
    assert [(r["change"], r["commit"]) for r in records] == [
        ("create", created), ("change", changed), ("drop", dropped), ("create", f"{dropped}+dirty")]
    assert set(records[0]) == {"at", "object", "what", "commit", "change"}  # the fields there were, and one more
    versions = [r["what"] for r in records]
    assert versions[2] == f"dropped table ({versions[1]})" and versions[0] != versions[1] != versions[3]
    stored = json.loads(metastore.database(db).properties["schemaflow.history.t"])
    assert (len(stored["applies"]), stored["earlier"]) == (4, 0)


def test_a_history_lets_its_oldest_applies_go_to_stay_within_a_database_parameter():
    from schemaflow.catalog.history import Entry, with_entries

    value = None
    for day in range(1, 201):
        value = with_entries(value, [Entry(f"2026-01-{day:03d}T00:00:00Z", "change", "table", "0123456789abcdef",
                                           "0" * 40 + "+dirty")])
    stored = json.loads(value)
    assert len(value) <= 4000 < len(value) + 120
    assert stored["earlier"] + len(stored["applies"]) == 200
    assert stored["applies"][-1][0] == "2026-01-200T00:00:00Z"
