"""Plans applied to a real metastore through a real SparkSession, every outcome read back from it."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from schemaflow.apply.executor import ApplyError, apply_plan
from schemaflow.errors import SchemaflowError
from schemaflow.model import Table, View, fingerprint
from schemaflow.plan.plan import Plan
from schemaflow.project import load_project
from schemaflow.workflow import desired_state, hash_migrations
from tests.projects import plan, plan_and_apply, write_project
from schemaflow.catalog.live import Live

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parent.parent


def partition_columns_of_each_partition(metastore, key: str) -> list[list[str]]:
    database, name = key.split(".")
    partitions = metastore.msc.listPartitions(database, name, -1)
    return sorted([[c.getName() for c in p.getSd().getCols()] for p in partitions])


@pytest.fixture
def example_databases(spark):
    yield ("analytics", "retail")
    for database in ("analytics", "retail"):
        spark.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")


def test_example_project_is_applied_read_back_and_replans_empty(tmp_path, metastore, spark, example_databases):
    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    shutil.copy(ROOT / "schemaflow.yaml", tmp_path)
    project = load_project(tmp_path, env={})
    desired = desired_state(project)

    applied = plan_and_apply(project, metastore)
    assert [s.kind for s in applied.steps].count("create_table") == 6
    assert [s.kind for s in applied.steps].count("create_view") == 4

    live = metastore.read(desired.databases)
    assert sorted(live.objects) == sorted(desired.objects)
    for key, want in desired.objects.items():
        have = live.get(key)
        assert have.version == fingerprint(want), key
        assert have.properties == want.properties, key
        assert have.comment == want.comment, key
        if isinstance(want, Table):
            assert have == want, key  # columns, types, comments, partitions, format, properties
        else:
            assert [c.name for c in have.columns] == [c.name for c in want.columns], key
            assert [w.comment for w in want.columns if w.comment] == \
                   [h.comment for w, h in zip(want.columns, have.columns, strict=True) if w.comment], key
            assert have.partitioned_on == want.partitioned_on, key
            # Queryable from Spark with the full schema, partition columns included.
            assert spark.sql(f"SELECT * FROM {key} LIMIT 0").columns == [c.name for c in want.columns]
    daily = metastore.msc.getTable("retail", "daily_revenue")
    assert [c.getName() for c in daily.getPartitionKeys()] == ["ds"]
    assert [c.getName() for c in daily.getSd().getCols()] == ["customer_id", "revenue"]

    assert plan(project, metastore).is_empty


def test_every_change_kind_is_applied_and_read_back(tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    first = {
        f"schemas/{db}/t.yaml": f"""
            table: {db}.t
            comment: before
            columns:
              - {{name: a, type: long, comment: A}}
              - {{name: b, type: string}}
            partitioned_by: [{{name: ds, type: string}}]
            properties: {{owner: team-a, keep: 1}}
            """,
        f"schemas/{db}/u.yaml": f"""
            table: {db}.u
            format: orc
            columns: [{{name: x, type: integer}}]
            """,
        f"schemas/{db}/v.yaml": f"""
            view: {db}.v
            sql: SELECT * FROM t
            """,
        f"schemas/{db}/w.yaml": f"""
            view: {db}.w
            comment: first
            sql: SELECT a FROM v
            """,
    }
    project = write_project(tmp_path, first)
    plan_and_apply(project, metastore)
    spark.sql(f"INSERT INTO {db}.t PARTITION (ds='2024-01-01') VALUES (1, 'one')")
    spark.sql(f"INSERT INTO {db}.t PARTITION (ds='2024-01-02') VALUES (2, 'two')")
    spark.sql(f"ALTER TABLE {db}.t SET TBLPROPERTIES ('foreign'='theirs')")  # not schemaflow's

    second = dict(first)
    second[f"schemas/{db}/t.yaml"] = f"""
        table: {db}.t
        comment: after
        columns:
          - {{name: a, type: bigint, comment: "A, renamed comment"}}
          - {{name: b, type: string}}
          - {{name: c, type: int, comment: Appended}}
        partitioned_by: [{{name: ds, type: string}}]
        properties: {{owner: team-b}}
        """
    second[f"schemas/{db}/w.yaml"] = f"""
        view: {db}.w
        comment: second
        sql: SELECT a, c FROM v
        """
    del second[f"schemas/{db}/u.yaml"]
    project = write_project(tmp_path, second)

    blocked = plan(project, metastore)
    assert [(s.kind, s.object) for s in blocked.blocked] == [("drop_table", f"{db}.u")]
    with pytest.raises(SchemaflowError, match="blocked"):
        apply_plan(blocked, metastore)
    assert f"{db}.u" in metastore.read((db,)).objects  # refused before anything ran
    assert metastore.read((db,)).get(f"{db}.t").comment == "before"

    result = plan_and_apply(project, metastore, allow_destructive=True)
    # A comment change on an existing column is not an append (Hive compares comments too): it cascades.
    alter = next(s for s in result.steps if s.kind == "alter_columns")
    assert "cascade: the column lists of 2 partitions follow the table" in alter.notes
    assert [s.kind for s in result.steps] == ["drop_table", "alter_columns", "set_table_comment",
                                              "replace_view", "replace_view"]

    live = metastore.read((db,))
    t = live.get(f"{db}.t")
    assert [(c.name, c.type, c.comment) for c in t.columns] == [
        ("a", "bigint", "A, renamed comment"), ("b", "string", None), ("c", "int", "Appended")]
    assert t.comment == "after"
    assert t.properties == {"owner": "team-b", "foreign": "theirs"}
    assert t.version == fingerprint(desired_state(project).get(f"{db}.t"))
    assert partition_columns_of_each_partition(metastore, f"{db}.t") == [["a", "b", "c"], ["a", "b", "c"]]
    assert spark.sql(f"SELECT a, c FROM {db}.t ORDER BY a").collect() == [(1, None), (2, None)]
    assert f"{db}.u" not in live.objects
    assert [c.name for c in live.get(f"{db}.v").columns] == ["a", "b", "c", "ds"]  # SELECT * re-expanded
    w = live.get(f"{db}.w")
    assert (w.comment, [c.name for c in w.columns]) == ("second", ["a", "c"])
    assert spark.sql(f"SELECT * FROM {db}.w ORDER BY a").collect() == [(1, None), (2, None)]
    assert plan(project, metastore).is_empty

    # Hive's prefix rule: a plain append changes the table only; partitions keep their column list.
    third = dict(second)
    third[f"schemas/{db}/t.yaml"] = second[f"schemas/{db}/t.yaml"].replace(
        "{name: c, type: int, comment: Appended}", "{name: c, type: int, comment: Appended}\n          - {name: d, type: string}")
    project = write_project(tmp_path, third)
    appended = plan_and_apply(project, metastore)
    assert appended.steps[0].notes[0].startswith("table only: 2 partitions keep their old column list")
    assert [c.name for c in metastore.read((db,)).get(f"{db}.t").columns] == ["a", "b", "c", "d"]
    assert partition_columns_of_each_partition(metastore, f"{db}.t") == [["a", "b", "c"], ["a", "b", "c"]]
    assert plan(project, metastore).is_empty


def test_comments_with_quotes_backquotes_and_semicolons_round_trip(tmp_path, metastore, fresh_db):
    db = fresh_db()
    nasty = "it's `odd`; DROP TABLE x; -- \\ \"q\""
    project = write_project(tmp_path, {
        f"schemas/{db}/t.yaml": f"""
            table: {db}.t
            comment: 'line one

              line two: {nasty.replace("'", "''")}'
            columns: [{{name: a, type: int, comment: '{nasty.replace("'", "''")}'}}]
            properties: {{note: '{nasty.replace("'", "''")}'}}
            """,
        f"schemas/{db}/v.yaml": f"""
            view: {db}.v
            comment: '{nasty.replace("'", "''")}'
            columns: [{{name: a, comment: '{nasty.replace("'", "''")}'}}]
            sql: SELECT a FROM t
            """,
    })
    plan_and_apply(project, metastore)
    live = metastore.read((db,))
    assert live.get(f"{db}.t").columns[0].comment == nasty
    assert live.get(f"{db}.t").comment == "line one\nline two: " + nasty
    assert live.get(f"{db}.t").properties == {"note": nasty}
    assert (live.get(f"{db}.v").comment, live.get(f"{db}.v").columns[0].comment) == (nasty, nasty)
    assert plan(project, metastore).is_empty


def test_external_table_is_created_at_its_location_and_its_files_survive_a_drop(tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    location = tmp_path / "data" / "events"
    table = f"""
        table: {db}.events
        external: true
        location: {location}
        columns: [{{name: id, type: int}}]
        """
    # The database stays managed once its last file is gone only because the settings name it.
    project = write_project(tmp_path, {f"schemas/{db}/events.yaml": table, "schemaflow.yaml": f"databases: [{db}]\n"})
    plan_and_apply(project, metastore)
    live = metastore.read((db,)).get(f"{db}.events")
    assert live.external and live.location == f"file:{location}"
    spark.sql(f"INSERT INTO {db}.events VALUES (7)")
    assert plan(project, metastore).is_empty

    (tmp_path / "schemas" / db / "events.yaml").unlink()
    project = load_project(tmp_path, env={})
    dropped = plan_and_apply(project, metastore, allow_destructive=True)
    assert dropped.steps[0].notes == (f"external table: its data files at file:{location} are kept",)
    assert f"{db}.events" not in metastore.read((db,)).objects
    assert any(location.iterdir())


def test_a_failure_mid_apply_says_what_was_applied_and_a_rerun_converges(tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    project = write_project(tmp_path, {
        f"schemas/{db}/a.yaml": f"table: {db}.a\ncolumns: [{{name: id, type: int}}]\n",
        f"schemas/{db}/b.yaml": f"table: {db}.b\ncolumns: [{{name: id, type: int}}]\nproperties: {{owner: me}}\n",
        f"schemas/{db}/v.yaml": f"view: {db}.v\nsql: SELECT a.id FROM a JOIN b ON a.id = b.id\n",
    })
    planned = plan(project, metastore)
    spark.sql(f"CREATE TABLE {db}.b (id INT) STORED AS PARQUET")  # someone else, after the plan

    with pytest.raises(ApplyError) as failure:
        apply_plan(planned, metastore)
    message = str(failure.value)
    # Another writer took the name between plan and apply: a concurrent change, as every catalog writer reports it.
    assert message.startswith(f"step 2 failed (create table {db}.b (1 column, parquet)): {db}.b "), message
    assert "an object created by another writer" in message, message
    assert f"applied (1):\n  1. create table {db}.a (1 column, parquet)\n" in message
    assert f"not applied (2):\n  2. create table {db}.b (1 column, parquet)\n  3. create view {db}.v\n" in message
    live = metastore.read((db,))
    assert live.get(f"{db}.a").version == fingerprint(desired_state(project).get(f"{db}.a"))
    assert f"{db}.v" not in live.objects

    # A new plan starts from the live state: it adopts b (same columns), stamps it, creates v.
    rerun = plan_and_apply(project, metastore)
    assert [(s.kind, s.object) for s in rerun.steps] == [("set_properties", f"{db}.b"), ("create_view", f"{db}.v")]
    assert metastore.read((db,)).get(f"{db}.b").properties == {"owner": "me"}
    assert plan(project, metastore).is_empty


def test_partitioned_view_keeps_its_partition_keys_when_replaced(tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    files = {
        f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: id, type: int}}]\npartitioned_by: [{{name: ds, type: string}}]\n",
        f"schemas/{db}/v.yaml": f"view: {db}.v\ncomment: one\npartitioned_on: [ds]\nsql: SELECT id, ds FROM t\n",
    }
    project = write_project(tmp_path, files)
    plan_and_apply(project, metastore)
    files[f"schemas/{db}/v.yaml"] = files[f"schemas/{db}/v.yaml"].replace("comment: one", "comment: two")
    project = write_project(tmp_path, files)
    assert [s.kind for s in plan_and_apply(project, metastore).steps] == ["replace_view"]
    view = metastore.msc.getTable(db, "v")
    assert [c.getName() for c in view.getPartitionKeys()] == ["ds"]
    assert [c.getName() for c in view.getSd().getCols()] == ["id"]
    live = metastore.read((db,)).get(f"{db}.v")
    assert isinstance(live, View) and live.comment == "two" and live.partitioned_on == ("ds",)
    assert spark.sql(f"SELECT * FROM {db}.v").columns == ["id", "ds"]
    assert plan(project, metastore).is_empty


def test_a_migration_from_yaml_is_applied_once_and_recorded_in_the_metastore(tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    before = {f"schemas/{db}/orders.yaml": f"""
        table: {db}.orders
        columns:
          - {{name: order_id, type: bigint}}
          - {{name: cust_id, type: bigint}}
          - {{name: amount, type: "decimal(10,2)"}}
          - {{name: legacy_flag, type: boolean}}
        partitioned_by: [{{name: ds, type: string}}]
        """}
    project = write_project(tmp_path, before)
    plan_and_apply(project, metastore)
    spark.sql(f"INSERT INTO {db}.orders PARTITION (ds='2024-01-01') VALUES (1, 7, 9.5, true)")

    after = {f"schemas/{db}/orders.yaml": f"""
        table: {db}.orders
        columns:
          - {{name: order_id, type: bigint}}
          - {{name: customer_id, type: bigint}}
          - {{name: amount, type: "decimal(12,2)"}}
        partitioned_by: [{{name: ds, type: string}}]
        """,
             "migrations/0003_customer_rename.yaml": f"""
        description: Rename cust_id to customer_id and widen amount
        changes:
          - rename_column: {{table: {db}.orders, from: cust_id, to: customer_id}}
          - drop_column: {{table: {db}.orders, column: legacy_flag}}
        """}
    project = write_project(tmp_path, after)
    hash_migrations(project)
    # In Parquet files customer_id reads NULL in the row written before: allowed as a drop is, by the plan.
    assert plan(project, metastore).blocked
    result = plan_and_apply(project, metastore, allow_destructive=True)
    [step] = result.steps
    assert step.summary == (f"alter columns of {db}.orders: rename cust_id to customer_id (0003_customer_rename); "
                            "drop legacy_flag (0003_customer_rename); change type of amount from decimal(10,2) "
                            "to decimal(12,2)")
    assert "cascade: the column lists of 1 partition follow the table" in step.notes
    live = metastore.read((db,)).get(f"{db}.orders")
    assert [(c.name, c.type) for c in live.columns] == [
        ("order_id", "bigint"), ("customer_id", "bigint"), ("amount", "decimal(12,2)")]
    assert list(live.migrations) == ["0003_customer_rename"]
    assert partition_columns_of_each_partition(metastore, f"{db}.orders") == [["order_id", "customer_id", "amount"]]
    # The hazard the plan stated, on the row written before: parquet finds customer_id by name.
    assert spark.sql(f"SELECT order_id, customer_id, amount FROM {db}.orders").collect() == [(1, None, 9.5)]

    # Another clone of the same files: the migration is recorded in the metastore, nothing to do.
    other = tmp_path / "other"
    shutil.copytree(tmp_path / "schemas", other / "schemas")
    shutil.copytree(tmp_path / "migrations", other / "migrations")
    assert plan(load_project(other, env={}), metastore).is_empty

    # Editing the applied migration is caught against the checksum recorded on the table.
    migration = other / "migrations/0003_customer_rename.yaml"
    migration.write_text(migration.read_text().replace("and widen amount", "and widen the amount"))
    hash_migrations(load_project(other, env={}))
    [step] = plan(load_project(other, env={}), metastore).steps
    assert step.summary.startswith(f"migration 0003_customer_rename was edited after it was applied to {db}.orders")
    assert step.blocked


def test_import_writes_schemas_that_plan_to_nothing(tmp_path, metastore, spark, fresh_db):
    from schemaflow.workflow import import_database

    db = fresh_db()
    spark.sql(f"CREATE TABLE {db}.events (id BIGINT COMMENT 'it''s `odd`', at TIMESTAMP, tags ARRAY<STRING>, "
              f"geo STRUCT<lat:DOUBLE,lon:DOUBLE>) COMMENT 'Made by hand' PARTITIONED BY (ds STRING, hr STRING) "
              f"STORED AS ORC TBLPROPERTIES ('retention'='30')".replace("''", "\\'"))
    spark.sql(f"CREATE EXTERNAL TABLE {db}.raw (line STRING) STORED AS TEXTFILE LOCATION '{tmp_path / 'raw'}'")
    # A struct field name Hive cannot write in a type: not importable.
    spark.sql(f"CREATE TABLE {db}.odd (a STRUCT<`x y`: INT>) USING parquet")
    spark.sql(f"CREATE VIEW {db}.daily (id COMMENT 'Event id', ds) COMMENT 'Per day' "
              f"AS SELECT id, ds FROM {db}.events WHERE hr = '00'")
    metastore.partition_view(f"{db}.daily", ["ds"])

    project = tmp_path / "adopted"
    (project / "schemas").mkdir(parents=True)
    (project / "schemaflow.yaml").write_text(f"databases: [{db}]\n")
    loaded = load_project(project, env={})
    imported = import_database(loaded, Live(loaded, connected=metastore), db, loaded.schemas_dir)
    written, skipped = imported.written, imported.skipped
    assert sorted(p.name for p in written) == ["daily.yaml", "events.yaml", "raw.yaml"]
    assert skipped == [f"{db}.odd: column a has the type 'struct<`x y`:int>', which schemaflow does not model: leave it "
                       "alone with exclude: in schemaflow.yaml"]
    assert imported.left_alone == ()
    (project / "schemas" / db / "odd.yaml").write_text(  # declared by hand instead: out of the plan's way
        f"table: {db}.odd\nformat: textfile\ncolumns: [{{name: a, type: int}}]\n")
    spark.sql(f"DROP TABLE {db}.odd")
    spark.sql(f"CREATE TABLE {db}.odd (a INT) STORED AS TEXTFILE")

    assert plan(loaded, metastore).is_empty
    events = desired_state(loaded).get(f"{db}.events")
    assert (events.comment, events.format, events.properties) == ("Made by hand", "orc", {"retention": "30"})
    assert events.columns[0].comment == "it's `odd`"
    assert desired_state(loaded).get(f"{db}.daily").partitioned_on == ("ds",)


def test_a_property_removed_after_import_is_removed_from_the_table(tmp_path, metastore, spark, fresh_db):
    from schemaflow.workflow import import_database

    db = fresh_db()
    spark.sql(f"CREATE TABLE {db}.events (id BIGINT) STORED AS ORC TBLPROPERTIES ('retention'='30', 'tier'='gold')")
    project = tmp_path / "adopted"
    (project / "schemas").mkdir(parents=True)
    (project / "schemaflow.yaml").write_text(f"databases: [{db}]\n")
    loaded = load_project(project, env={})
    import_database(loaded, Live(loaded, connected=metastore), db, loaded.schemas_dir)
    events = project / "schemas" / db / "events.yaml"
    assert "tier: gold" in events.read_text()
    events.write_text(events.read_text().replace("tier: gold", ""))  # before schemaflow ever wrote the table

    [step] = plan_and_apply(loaded, metastore).steps
    assert step.kind == "set_properties" and any("unset tier" in action.describe() for action in step.actions)
    assert metastore.read((db,)).get(f"{db}.events").properties == {"retention": "30"}  # read back
    assert plan(loaded, metastore).is_empty


def test_the_example_warehouse_imports_back_to_an_empty_plan(tmp_path, metastore, example_databases):
    from schemaflow.workflow import import_database

    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    shutil.copy(ROOT / "schemaflow.yaml", tmp_path)
    plan_and_apply(load_project(tmp_path, env={}), metastore)
    adopted = tmp_path / "adopted"
    (adopted / "schemas").mkdir(parents=True)
    shutil.copy(ROOT / "schemaflow.yaml", adopted)
    project = load_project(adopted, env={})
    for database in example_databases:
        imported = import_database(project, Live(project, connected=metastore), database, project.schemas_dir)
        assert imported.skipped == [] and imported.left_alone == () and imported.written and imported.sources == []
    assert sorted(desired_state(project).objects) == sorted(desired_state(load_project(tmp_path, env={})).objects)
    assert plan(project, metastore).is_empty


def test_drift_names_what_changed_outside_schemaflow_per_object(tmp_path, metastore, spark, fresh_db):
    from schemaflow.workflow import drift

    db = fresh_db()
    project = write_project(tmp_path, {
        f"schemas/{db}/t.yaml": f"table: {db}.t\ncomment: First\ncolumns: [{{name: a, type: int}}]\n"
                                f"partitioned_by: [{{name: ds, type: string}}]\nproperties: {{retention: '30'}}\n",
        f"schemas/{db}/u.yaml": f"table: {db}.u\ncolumns: [{{name: x, type: int}}]\n",
        f"schemas/{db}/v.yaml": f"view: {db}.v\nsql: SELECT a FROM t\n",
    })
    plan_and_apply(project, metastore)
    live = Live(project, connected=metastore)
    assert drift(project, live) == []

    spark.sql(f"ALTER TABLE {db}.t ADD COLUMNS (b STRING)")            # a Spark job, say
    spark.sql(f"ALTER TABLE {db}.t SET TBLPROPERTIES ('retention'='7', 'theirs'='x')")
    spark.sql(f"COMMENT ON TABLE {db}.u IS 'Changed by hand'")
    spark.sql(f"ALTER TABLE {db}.u SET TBLPROPERTIES ('theirs'='x')")  # not schemaflow's: not drift
    spark.sql(f"CREATE OR REPLACE VIEW {db}.v AS SELECT a, ds FROM {db}.t")

    found = {d.object: d.aspects for d in drift(project, live)}
    # The replaced view lost schemaflow's parameters with the rest: its record is gone.
    assert found == {f"{db}.t": ("columns", "properties"), f"{db}.u": ("comment",), f"{db}.v": ("unrecorded",)}
    described = {d.object: d.describe() for d in drift(project, live)}
    assert described[f"{db}.t"].startswith(f"{db}.t: columns, properties changed since schemaflow applied it at ")
    assert described[f"{db}.v"].startswith(f"{db}.v: no record of what schemaflow applied")

    # Accept the new column into the schemas; the next apply restores the rest and records afresh.
    project = write_project(tmp_path, {
        f"schemas/{db}/t.yaml": f"table: {db}.t\ncomment: First\ncolumns: [{{name: a, type: int}}, {{name: b, type: string}}]\n"
                                f"partitioned_by: [{{name: ds, type: string}}]\nproperties: {{retention: '30'}}\n",
        f"schemas/{db}/u.yaml": f"table: {db}.u\ncolumns: [{{name: x, type: int}}]\n",
        f"schemas/{db}/v.yaml": f"view: {db}.v\nsql: SELECT a FROM t\n",
    })
    plan_and_apply(project, metastore)
    assert drift(project, live) == []
    spark.sql(f"DROP TABLE {db}.u")
    assert [d.describe() for d in drift(project, live)] == [
        f"{db}.u: declared but not in the metastore (dropped outside schemaflow, or never applied)"]


def test_apply_after_merge_applies_the_reviewed_changes_or_refuses_them_as_stale(tmp_path, metastore, spark, fresh_db):
    from schemaflow.plan.review_check import differences
    from schemaflow.workflow import review_refs
    from tests.gitrepos import commit, init_repo

    db = fresh_db()
    project_dir = tmp_path / "repo"
    repo = init_repo(project_dir)
    write_project(project_dir, {f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: a, type: int}}]\n"})
    commit(repo, "base")
    plan_and_apply(load_project(project_dir, env={}), metastore)  # main, applied
    write_project(project_dir, {f"schemas/{db}/t.yaml": f"table: {db}.t\ncomment: Reviewed\n"
                                                        f"columns: [{{name: a, type: int}}, {{name: b, type: string}}]\n"})
    commit(repo, "the pull request")
    project = load_project(project_dir, env={})
    reviewed = review_refs(project, "HEAD~1", "HEAD").plan  # what the reviewer read

    after_merge = plan(project, metastore)
    assert differences(reviewed, after_merge) == []

    spark.sql(f"ALTER TABLE {db}.t ADD COLUMNS (b STRING)")  # someone got there first
    moved = plan(project, metastore)
    assert differences(reviewed, moved) == [f"no longer planned: add 1 column to {db}.t: b string"]


def test_a_saved_plan_whose_objects_changed_is_refused_with_nothing_applied(tmp_path, metastore, spark, fresh_db):
    import json as _json

    from schemaflow.errors import SchemaflowError
    from schemaflow.workflow import check_saved

    db = fresh_db()
    files = {f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: a, type: int}}]\n"}
    project = write_project(tmp_path, files)
    plan_and_apply(project, metastore)
    files[f"schemas/{db}/t.yaml"] += "comment: Planned\n"
    files[f"schemas/{db}/u.yaml"] = f"table: {db}.u\ncolumns: [{{name: x, type: int}}]\n"
    project = write_project(tmp_path, files)
    saved = tmp_path / "plan.json"
    saved.write_text(plan(project, metastore).to_json())
    loaded = Plan.from_data(_json.loads(saved.read_text()))
    live = Live(project, connected=metastore)
    check_saved(loaded, saved, project, live)  # fresh: accepted

    spark.sql(f"ALTER TABLE {db}.t ADD COLUMNS (b STRING)")          # changed by someone else
    spark.sql(f"CREATE TABLE {db}.u (x INT) STORED AS PARQUET")       # created by someone else
    with pytest.raises(SchemaflowError) as refused:
        check_saved(loaded, saved, project, live)
    assert str(refused.value).splitlines()[1:] == [
        f"  {db}.t: columns changed since the plan was made",
        f"  {db}.u: created since the plan was made"]
    assert metastore.read((db,)).get(f"{db}.t").comment is None  # nothing applied


def test_the_metastore_refuses_a_write_guarded_by_a_version_it_no_longer_holds(tmp_path, metastore, spark, fresh_db):
    from schemaflow.errors import ConcurrentChange
    from schemaflow.model import VERSION_KEY

    db = fresh_db()
    project = write_project(tmp_path, {f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: a, type: int}}]\n"})
    plan_and_apply(project, metastore)
    version = metastore.read((db,)).get(f"{db}.t").version

    with pytest.raises(ConcurrentChange) as caught:
        metastore.set_parameters(f"{db}.t", {"owner": "x", VERSION_KEY: "next"}, [], expected="not-the-version")
    assert (caught.value.key, caught.value.found) == (f"{db}.t", version)
    after = metastore.read((db,)).get(f"{db}.t")
    assert (after.version, after.properties) == (version, {})  # nothing changed

    metastore.set_parameters(f"{db}.t", {"owner": "x", VERSION_KEY: "next"}, [], expected=version)
    after = metastore.read((db,)).get(f"{db}.t")
    assert (after.version, after.properties) == ("next", {"owner": "x"})
    # A guard on a key the object does not carry refuses too: the first write of a new object is plain.
    spark.sql(f"CREATE TABLE {db}.bare (a INT) STORED AS PARQUET")
    with pytest.raises(ConcurrentChange):
        metastore.set_parameters(f"{db}.bare", {VERSION_KEY: "v"}, [], expected="anything")


def test_an_apply_whose_object_moved_on_after_planning_stops_at_its_claims(tmp_path, metastore, spark, fresh_db):
    from schemaflow.model import VERSION_KEY

    db = fresh_db()
    def files(columns: str) -> dict[str, str]:
        return {f"schemas/{db}/{t}.yaml": f"table: {db}.{t}\ncolumns: [{columns}]\n" for t in ("a", "b")}

    plan_and_apply(write_project(tmp_path, files("{name: x, type: int}")), metastore)
    project = write_project(tmp_path, files("{name: x, type: int}, {name: y, type: int}"))
    stale = plan(project, metastore)
    before = metastore.read((db,))
    # Another schemaflow run applies b first (its stamp is a new version).
    metastore.set_parameters(f"{db}.b", {VERSION_KEY: "someone-else"}, [], expected=before.get(f"{db}.b").version)

    with pytest.raises(SchemaflowError, match=f"{db}.b was modified concurrently: .*nothing was applied"):
        apply_plan(stale, metastore)
    after = metastore.read((db,))
    assert [c.name for c in after.get(f"{db}.a").columns] == ["x"]  # a was claimed, then handed back unchanged
    assert after.get(f"{db}.a").version == before.get(f"{db}.a").version


def test_hive_parses_the_text_a_view_is_stored_with_though_it_names_columns_with_hive_reserved_words(
        tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    project = write_project(tmp_path, {
        f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: id, type: int}}, {{name: date, type: string}}, "
                                "{name: user, type: string}]\n",
        f"schemas/{db}/v.yaml": f"view: {db}.v\nsql: SELECT id, date, t.user FROM t WHERE date > '2026'\n",
    })
    plan_and_apply(project, metastore)
    stored = metastore.msc.getTable(db, "v").getViewExpandedText()
    assert stored == f"SELECT id, `date`, t.`user` FROM `{db}`.t WHERE `date` > '2026'"
    # Hive reads a view's stored text with its own parser (that of the Hive in the pyspark jars here).
    hive_parser = spark._jvm.org.apache.hadoop.hive.ql.parse.ParseDriver()
    hive_parser.parse(stored)
    with pytest.raises(Exception, match="cannot recognize input near 'date'"):
        hive_parser.parse(f"SELECT id, date, t.user FROM {db}.t")  # as Spark stores the SQL as written
    assert spark.sql(f"SELECT * FROM {db}.v").columns == ["id", "date", "user"]
    assert plan(project, metastore).is_empty


def test_every_keyword_hives_parser_refuses_as_a_column_name_is_one_schemaflow_quotes(spark):
    from schemaflow.sql.views import HIVE_RESERVED, hive_readable

    lexer = spark._jvm.java.lang.Class.forName("org.apache.hadoop.hive.ql.parse.HiveLexer")
    keywords = sorted(f.getName()[3:].lower() for f in lexer.getFields() if f.getName().startswith("KW_"))
    assert len(keywords) > 250  # the lexer's own list, read from the jar
    parser = spark._jvm.org.apache.hadoop.hive.ql.parse.ParseDriver()
    refused = set()
    for word in keywords:
        try:
            parser.parse(f"SELECT {word} FROM t")
        except Exception:  # noqa: BLE001 -- Hive's ParseException, through py4j
            refused.add(word)
    literals = {"true", "false", "null", "current_date", "current_timestamp"}  # bare, each is a value, not a name
    assert sorted(refused - literals - HIVE_RESERVED) == []
    assert hive_readable("SELECT merge, o.minus FROM o", "db") == "SELECT `merge`, o.`minus` FROM `db`.o"
    parser.parse(hive_readable("SELECT merge, o.minus FROM o", "db"))


@pytest.mark.parametrize("columns, sql, row, output, stored, hive_reads", [
    # A subquery with no alias, as Spark takes it: named alone, since its alias would be sqlglot's invention.
    # (Hive's own parser wants an alias on every subquery, star or none: such a view is Spark's alone.)
    ("{name: id, type: int}, {name: amount, type: double}", "SELECT * FROM (SELECT id, amount FROM t)",
     "1, 2.5", ["id", "amount"], "SELECT `id`, `amount` FROM (SELECT id, amount FROM `{db}`.t)", False),
    # A struct's fields, as Spark names them.
    ("{name: id, type: int}, {name: st, type: 'struct<a:int,b:string>'}", "SELECT id, st.* FROM t",
     "1, named_struct('a', 2, 'b', 'x')", ["id", "a", "b"], "SELECT id, `t`.`st`.`a`, `t`.`st`.`b` FROM `{db}`.t",
     True),
])
def test_a_star_of_every_shape_spark_takes_is_a_view_apply_creates(
        tmp_path, metastore, spark, fresh_db, columns, sql, row, output, stored, hive_reads):
    db = fresh_db()
    project = write_project(tmp_path, {
        f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{columns}]\n",
        f"schemas/{db}/v.yaml": f"view: {db}.v\nsql: {sql}\n",
    })
    plan_and_apply(project, metastore)
    spark.sql(f"INSERT INTO {db}.t SELECT {row}")
    assert spark.table(f"{db}.v").columns == output
    [read] = spark.sql(f"SELECT * FROM {db}.v").collect()
    assert len(read) == len(output)
    text = metastore.msc.getTable(db, "v").getViewExpandedText()
    assert text == stored.format(db=db)
    if hive_reads:
        spark._jvm.org.apache.hadoop.hive.ql.parse.ParseDriver().parse(text)
    assert plan(project, metastore).is_empty


def test_a_star_view_is_stored_with_the_columns_its_star_selects_so_hive_does_not_expand_it_anew(
        tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    project = write_project(tmp_path, {
        f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: id, type: int}}, {{name: date, type: string}}]\n",
        f"schemas/{db}/v.yaml": f"view: {db}.v\nsql: SELECT * FROM t WHERE id > 0\n",
    })
    plan_and_apply(project, metastore)
    stored = metastore.msc.getTable(db, "v").getViewExpandedText()
    assert stored == f"SELECT `t`.`id`, `t`.`date` FROM `{db}`.t WHERE id > 0"
    # Hive's parser reads it, and finds no * to expand at read (TOK_ALLCOLREF is Hive's node for *).
    tree = spark._jvm.org.apache.hadoop.hive.ql.parse.ParseDriver().parse(stored).toStringTree()
    assert "TOK_ALLCOLREF" not in tree and "date" in tree
    # A column added outside schemaflow shows in neither engine: the view keeps what it selected.
    spark.sql(f"ALTER TABLE {db}.t ADD COLUMNS (extra string)")
    assert spark.sql(f"SELECT * FROM {db}.v").columns == ["id", "date"]
    assert metastore.msc.getTable(db, "v").getViewExpandedText() == stored
    # Declared again with the new column, the next plan re-creates the view with it.
    project = write_project(tmp_path, {
        f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: id, type: int}}, {{name: date, type: string}}, "
                                "{name: extra, type: string}]\n",
        f"schemas/{db}/v.yaml": f"view: {db}.v\nsql: SELECT * FROM t WHERE id > 0\n",
    })
    replanned = plan(project, metastore)
    assert [(s.kind, s.object) for s in replanned.steps] == [("replace_view", f"{db}.v")]
    apply_plan(replanned, metastore)
    assert spark.sql(f"SELECT * FROM {db}.v").columns == ["id", "date", "extra"]
    assert plan(project, metastore).is_empty
