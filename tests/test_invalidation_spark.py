"""Invalidation modes on a real metastore: apply, then query every view and read the outcome back.

Hive's ``invalidate_view1.q`` (a view on a view over a table, then the table loses a column) is
applied under each mode; ``SELECT * FROM v LIMIT 0`` is how a broken view shows itself cheaply.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from schemaflow.apply.executor import apply_plan, check_runnable
from schemaflow.errors import SchemaflowError
from schemaflow.plan.deps import with_live_reads
from schemaflow.plan.invalidation import created_schema_mode
from schemaflow.project import Project
from schemaflow.spark_version import spark_version
from schemaflow.workflow import hash_migrations
from tests.projects import plan
from tests.projects import write_project as write_files

pytestmark = pytest.mark.spark


def write_project(root: Path, files: dict[str, str], invalidation: str) -> Project:
    """A project of ``files`` with the given invalidation mode, its migrations hashed."""
    project = write_files(root, {**files, "schemaflow.yaml": f"invalidation: {invalidation}\n"})
    if (root / "migrations").exists():
        hash_migrations(project)
    return project


def queryable(spark, key: str) -> list[str] | str:
    """The columns Spark reads from ``key``, or the first line of the error it raises."""
    try:
        return spark.sql(f"SELECT * FROM {key} LIMIT 0").columns
    except Exception as error:  # noqa: BLE001 - Spark's analysis errors come in several classes
        return str(error).splitlines()[0]


def queryable_rows(spark, key: str) -> str:
    """The first line of the error Spark raises reading every row of ``key`` ("" if none)."""
    try:
        spark.sql(f"SELECT * FROM {key}").collect()
    except Exception as error:  # noqa: BLE001
        return str(error).splitlines()[0]
    return ""


def bind(spark, key: str) -> None:
    """Make the view ``key`` bind its column types, as another tool would: Spark 4 with ``WITH SCHEMA
    BINDING``; a view Spark 3.5 made binds already (it stores no schema mode, and has no such clause)."""
    if spark_version() >= (4, 0):
        spark.sql(f"ALTER VIEW {key} WITH SCHEMA BINDING")


def key_value_table(db: str, key_type: str, format: str = "") -> str:
    """The schema file of ``db.t`` (key ``key_type``, value int), in ``format`` if given."""
    stored = f"format: {format}\n" if format else ""
    return f"table: {db}.t\n{stored}columns: [{{name: key, type: {key_type}}}, {{name: value, type: int}}]\n"


def hive_case(db: str) -> tuple[dict[str, str], dict[str, str]]:
    """invalidate_view1.q as a base project and the change that drops xxx10.value."""
    base = {
        f"schemas/{db}/xxx10.yaml": f"table: {db}.xxx10\ncolumns: [{{name: key, type: int}}, {{name: value, type: int}}]\n",
        f"schemas/{db}/xxx9.yaml": f"view: {db}.xxx9\nsql: SELECT * FROM xxx10\n",
        f"schemas/{db}/xxx8.yaml": f"view: {db}.xxx8\nsql: SELECT * FROM xxx9 xxx\n",
        f"schemas/{db}/xxx7.yaml": f"view: {db}.xxx7\nsql: SELECT key FROM xxx10 WHERE key > 0\n",
    }
    head = {
        **base,
        f"schemas/{db}/xxx10.yaml": f"table: {db}.xxx10\ncolumns: [{{name: key, type: int}}]\n",
        "migrations/0001_drop_value.yaml": f"""
            description: ALTER TABLE xxx10 REPLACE COLUMNS (key int)
            changes:
              - drop_column: {{table: {db}.xxx10, column: value}}
            """,
    }
    return base, head


def test_live_views_know_the_columns_they_use_and_their_schema_mode(tmp_path, metastore, fresh_db):
    db = fresh_db()
    base, _ = hive_case(db)
    apply_plan(plan(write_project(tmp_path, base, "strict"), metastore), metastore)
    live = with_live_reads(metastore.read((db,)))
    xxx9, xxx7 = live.get(f"{db}.xxx9"), live.get(f"{db}.xxx7")
    assert xxx9.uses == {f"{db}.xxx10": ("key", "value")}
    assert xxx7.uses == {f"{db}.xxx10": ("key",)}
    assert live.get(f"{db}.xxx8").uses == {f"{db}.xxx9": ("key", "value")}
    assert xxx9.lineage == {"key": (f"{db}.xxx10.key",), "value": (f"{db}.xxx10.value",)}
    # Spark 4 stores COMPENSATION on every view it creates by default; Spark 3.5 stores none.
    assert {v.schema_mode for v in live.views()} == {created_schema_mode(spark_version())}


def test_strict_refuses_and_the_metastore_is_untouched(tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    base, head = hive_case(db)
    apply_plan(plan(write_project(tmp_path, base, "strict"), metastore), metastore)
    refused = plan(write_project(tmp_path, head, "strict"), metastore)
    assert refused.blocked[0].blocked.startswith(
        f"invalidation: strict, and this change breaks 2 views: {db}.xxx8 reads {db}.xxx9, which fails when "
        f"queried; {db}.xxx9 uses {db}.xxx10.value, which migration 0001_drop_value drops.")
    with pytest.raises(SchemaflowError, match="blocked step"):
        check_runnable(refused)
    assert [c.name for c in metastore.read((db,)).get(f"{db}.xxx10").columns] == ["key", "value"]
    assert queryable(spark, f"{db}.xxx8") == ["key", "value"]


def test_lenient_applies_and_leaves_the_views_failing_as_hive_does(tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    base, head = hive_case(db)
    apply_plan(plan(write_project(tmp_path, base, "lenient"), metastore), metastore)
    project = write_project(tmp_path, head, "lenient")
    applied = plan(project, metastore)
    assert [(s.kind, s.object) for s in applied.steps] == [("alter_columns", f"{db}.xxx10")]
    assert applied.warnings == (
        f"{db}.xxx8 reads {db}.xxx9, which fails when queried: {db}.xxx8 will fail when queried "
        "(invalidation: lenient leaves it as it is)",
        f"{db}.xxx9 uses {db}.xxx10.value, which migration 0001_drop_value drops: {db}.xxx9 will fail when queried "
        "(invalidation: lenient leaves it as it is)")
    apply_plan(applied, metastore)

    assert [c.name for c in metastore.read((db,)).get(f"{db}.xxx10").columns] == ["key"]
    assert queryable(spark, f"{db}.xxx7") == ["key"]
    # Each * is stored as the columns it selected, as Hive stores it: the dropped one is named, and missed.
    for view in ("xxx9", "xxx8"):
        error = queryable(spark, f"{db}.{view}")
        assert isinstance(error, str) and "UNRESOLVED_COLUMN" in error and "`xxx10`.`value`" in error, (view, error)

    # Nothing breaks them any more: the next plan re-creates them from their SQL, and they work again.
    again = plan(project, metastore)
    assert [(s.kind, s.object) for s in again.steps] == [("replace_view", f"{db}.xxx9"), ("replace_view", f"{db}.xxx8")]
    apply_plan(again, metastore)
    assert queryable(spark, f"{db}.xxx8") == ["key"]


def test_cascade_recreates_the_views_in_order_and_every_view_works(tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    base, head = hive_case(db)
    apply_plan(plan(write_project(tmp_path, base, "cascade"), metastore), metastore)
    project = write_project(tmp_path, head, "cascade")
    applied = plan(project, metastore)
    assert [(s.kind, s.object) for s in applied.steps] == [
        ("alter_columns", f"{db}.xxx10"), ("replace_view", f"{db}.xxx9"), ("replace_view", f"{db}.xxx8")]
    apply_plan(applied, metastore)
    for view in ("xxx10", "xxx9", "xxx8", "xxx7"):
        assert queryable(spark, f"{db}.{view}") == ["key"], view
    assert plan(project, metastore).is_empty


@pytest.mark.skipif(spark_version() < (4, 0), reason="schema modes are Spark 4's: a Spark 3.5 view binds its types, "
                    "which test_on_spark_3_5_a_type_change_breaks_each_view_whose_output_it_reaches covers")
def test_a_type_change_breaks_a_binding_view_and_compensation_views_cast(tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    base = {
        f"schemas/{db}/t.yaml": key_value_table(db, "int"),
        f"schemas/{db}/bound.yaml": f"view: {db}.bound\nsql: SELECT key FROM t\n",
        f"schemas/{db}/filtered.yaml": f"view: {db}.filtered\nsql: SELECT value FROM t WHERE key > 0\n",
        f"schemas/{db}/cast.yaml": f"view: {db}.cast\nsql: SELECT key, value FROM t\n",
    }
    apply_plan(plan(write_project(tmp_path, base, "lenient"), metastore), metastore)
    # Views another tool made with schema binding (or Spark 3, which stores no mode).
    for view in ("bound", "filtered"):
        spark.sql(f"ALTER VIEW {db}.{view} WITH SCHEMA BINDING")
    assert metastore.read((db,)).get(f"{db}.bound").schema_mode == "BINDING"
    spark.sql(f"INSERT INTO {db}.t VALUES (1, 2)")
    head = {**base, f"schemas/{db}/t.yaml": key_value_table(db, "bigint")}
    project = write_project(tmp_path, head, "lenient")
    applied = plan(project, metastore)
    [step] = applied.steps
    assert step.notes == (f"{db}.cast (COMPENSATION) keeps {db}.t.key as int: Spark casts the new bigint values "
                          "back, and a value that does not fit fails the query",)
    assert applied.warnings == (
        f"{db}.bound uses {db}.t.key, which changes type from int to bigint; {db}.bound keeps the old type and its "
        f"schema mode is BINDING, so Spark refuses to read it (Cannot up cast): {db}.bound will fail when queried "
        "(invalidation: lenient leaves it as it is)",)
    apply_plan(applied, metastore)
    # What the plan said, as Spark 4 does it: binding fails, compensation casts back to int, and a
    # binding view that uses the column only in WHERE keeps working.
    assert "CANNOT_UP_CAST_DATATYPE" in queryable(spark, f"{db}.bound")
    assert spark.sql(f"SELECT * FROM {db}.cast").dtypes == [("key", "int"), ("value", "int")]
    assert spark.sql(f"SELECT * FROM {db}.filtered").collect() == [(2,)]
    # The note's warning: with ANSI on (Spark 4's default) a value that does not fit the old type fails.
    spark.sql(f"INSERT INTO {db}.t VALUES (2147483648, 3)")
    assert "CAST_OVERFLOW" in queryable_rows(spark, f"{db}.cast")



@pytest.mark.skipif(spark_version() >= (4, 0), reason="Spark 4 stores a schema mode on its views: "
                    "test_a_type_change_breaks_a_binding_view_and_compensation_views_cast covers it")
def test_on_spark_3_5_a_type_change_breaks_each_view_whose_output_it_reaches(tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    # ORC: Spark 3.5 reads its older files as bigint (Parquet's would fail: a hazard of its own).
    base = {
        f"schemas/{db}/t.yaml": key_value_table(db, "int", "orc"),
        f"schemas/{db}/bound.yaml": f"view: {db}.bound\nsql: SELECT key FROM t\n",
        f"schemas/{db}/filtered.yaml": f"view: {db}.filtered\nsql: SELECT value FROM t WHERE key > 0\n",
    }
    apply_plan(plan(write_project(tmp_path, base, "lenient"), metastore), metastore)
    assert metastore.read((db,)).get(f"{db}.bound").schema_mode is None
    spark.sql(f"INSERT INTO {db}.t VALUES (1, 2)")
    head = {**base, f"schemas/{db}/t.yaml": key_value_table(db, "bigint", "orc")}
    applied = plan(write_project(tmp_path, head, "lenient"), metastore)
    [step] = applied.steps
    assert (step.notes, step.hazards) == ((), ())
    assert applied.warnings == (
        f"{db}.bound uses {db}.t.key, which changes type from int to bigint; {db}.bound keeps the old type and it "
        f"stores no schema mode (BINDING in Spark), so Spark refuses to read it (Cannot up cast): {db}.bound will "
        "fail when queried (invalidation: lenient leaves it as it is)",)
    apply_plan(applied, metastore)
    # What the plan said, as Spark 3.5 does it: the view fails, and one that uses the column only in
    # WHERE keeps working.
    assert "Cannot up cast" in queryable(spark, f"{db}.bound")
    assert spark.sql(f"SELECT * FROM {db}.filtered").collect() == [(2,)]


def test_cascade_recreates_a_binding_view_which_then_shows_the_new_type(tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    base = {f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: key, type: int}}]\n",
            f"schemas/{db}/bound.yaml": f"view: {db}.bound\nsql: SELECT key FROM t\n"}
    apply_plan(plan(write_project(tmp_path, base, "cascade"), metastore), metastore)
    bind(spark, f"{db}.bound")
    head = {**base, f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: key, type: bigint}}]\n"}
    applied = plan(write_project(tmp_path, head, "cascade"), metastore)
    assert [(s.kind, s.object) for s in applied.steps] == [("alter_columns", f"{db}.t"), ("replace_view", f"{db}.bound")]
    apply_plan(applied, metastore)
    assert spark.sql(f"SELECT * FROM {db}.bound LIMIT 0").dtypes == [("key", "bigint")]


def test_recompile_recreates_a_view_on_demand(tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    base, _ = hive_case(db)
    project = write_project(tmp_path, base, "strict")
    apply_plan(plan(project, metastore), metastore)
    spark.sql(f"ALTER VIEW {db}.xxx7 SET TBLPROPERTIES ('marker' = 'before')")  # not schemaflow's: no change
    recompiled = plan(project, metastore, recompile=(f"{db}.xxx7",))
    assert [(s.kind, s.summary) for s in recompiled.steps] == [
        ("replace_view", f"re-create view {db}.xxx7: recompile requested")]
    apply_plan(recompiled, metastore)
    # CREATE OR REPLACE VIEW keeps only the parameters it writes: the view was re-created.
    assert "marker" not in dict(metastore.msc.getTable(db, "xxx7").getParameters())
    assert queryable(spark, f"{db}.xxx7") == ["key"]


def test_strict_mode_applies_the_drop_when_the_views_it_breaks_are_recompiled(tmp_path, spark, metastore, fresh_db):
    db = fresh_db()
    base, head = hive_case(db)
    apply_plan(plan(write_project(tmp_path, base, "strict"), metastore), metastore)
    project = write_project(tmp_path, head, "strict")
    assert plan(project, metastore).blocked  # without --recompile: refused, as before
    recompiled = plan(project, metastore, recompile=(f"{db}.xxx9", f"{db}.xxx8"))
    check_runnable(recompiled)
    apply_plan(recompiled, metastore)
    assert [queryable(spark, f"{db}.{v}") for v in ("xxx9", "xxx8", "xxx7")] == [["key"], ["key"], ["key"]]
    assert plan(project, metastore).is_empty


def note_goes(table: str) -> dict[str, str]:
    """The migration file that drops the column ``note`` of ``table``."""
    return {"migrations/0001_drop_note.yaml": f"""
                description: the note goes
                changes:
                  - drop_column: {{table: {table}, column: note}}
                """}


def test_a_column_selected_only_inside_exists_is_not_used_so_strict_mode_lets_it_go(tmp_path, spark, metastore,
                                                                                   fresh_db):
    db = fresh_db()
    base = {
        f"schemas/{db}/orders.yaml": f"table: {db}.orders\ncolumns: [{{name: id, type: int}}, {{name: cid, type: int}}]\n",
        f"schemas/{db}/customers.yaml": (f"table: {db}.customers\ncolumns: [{{name: cid, type: int}}, "
                                         "{name: note, type: string}]\n"),
        f"schemas/{db}/known.yaml": (f"view: {db}.known\nsql: SELECT o.id FROM orders o "
                                     "WHERE EXISTS (SELECT * FROM customers c WHERE c.cid = o.cid)\n"),
    }
    apply_plan(plan(write_project(tmp_path, base, "strict"), metastore), metastore)
    spark.sql(f"INSERT INTO {db}.orders VALUES (1, 10), (2, 20)")
    spark.sql(f"INSERT INTO {db}.customers VALUES (10, 'x')")
    head = {**base, f"schemas/{db}/customers.yaml": f"table: {db}.customers\ncolumns: [{{name: cid, type: int}}]\n",
            **note_goes(f"{db}.customers")}
    planned = plan(write_project(tmp_path, head, "strict"), metastore)
    assert not planned.blocked, [s.blocked for s in planned.blocked]
    apply_plan(planned, metastore)
    assert [r.id for r in spark.sql(f"SELECT id FROM {db}.known").collect()] == [1]


def test_a_column_an_inner_star_selects_and_nothing_outside_reads_is_not_used(tmp_path, spark, metastore, fresh_db):
    """Spark (and Hive, from the stored text) expand a star inside a subquery anew at every read: a column only
    it selects can go, in strict mode too, with no warning that the view will fail; and the view keeps reading."""
    db = fresh_db()
    base = {
        f"schemas/{db}/orders.yaml": f"table: {db}.orders\ncolumns: [{{name: id, type: int}}, {{name: note, type: string}}]\n",
        f"schemas/{db}/ids.yaml": f"view: {db}.ids\nsql: SELECT x.id FROM (SELECT * FROM orders) x\n",
    }
    apply_plan(plan(write_project(tmp_path, base, "strict"), metastore), metastore)
    spark.sql(f"INSERT INTO {db}.orders VALUES (1, 'a')")
    head = {**base, f"schemas/{db}/orders.yaml": f"table: {db}.orders\ncolumns: [{{name: id, type: int}}]\n",
            **note_goes(f"{db}.orders")}
    for mode in ("strict", "lenient"):
        planned = plan(write_project(tmp_path, head, mode), metastore)
        assert not planned.blocked and not planned.warnings, (planned.blocked, planned.warnings)
    apply_plan(planned, metastore)
    assert [r.id for r in spark.sql(f"SELECT * FROM {db}.ids").collect()] == [1]
    # Hive's engine reads the stored text too: its inner star is left for Hive to expand.
    assert "SELECT * FROM" in metastore.msc.getTable(db, "ids").getViewExpandedText()


def test_lenient_recreates_a_broken_view_that_a_recreated_view_reads_and_never_fails_half_way(
        tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    base = {
        f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: a, type: int}}, {{name: b, type: int}}]\n",
        f"schemas/{db}/v0.yaml": f"view: {db}.v0\nsql: SELECT * FROM t\n",
        f"schemas/{db}/v1.yaml": f"view: {db}.v1\nsql: SELECT a, b FROM v0\n",
        f"schemas/{db}/other.yaml": f"view: {db}.other\nsql: SELECT * FROM t WHERE a > 0\n",
    }
    apply_plan(plan(write_project(tmp_path, base, "lenient"), metastore), metastore)
    head = {
        **base,
        f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: a, type: int}}, {{name: c, type: int}}]\n",
        f"schemas/{db}/v1.yaml": f"view: {db}.v1\nsql: SELECT a, c FROM v0\n",
        "migrations/0001_rename.yaml": f"""
            description: b is c now
            changes:
              - rename_column: {{table: {db}.t, from: b, to: c}}
            """,
    }
    project = write_project(tmp_path, head, "lenient")
    applied = plan(project, metastore, allow_destructive=True)  # b's values read NULL as c: allowed as a drop is
    # v0 (left as it is, SELECT * stored with a and b) would make v1's CREATE fail after the rename ran.
    assert [(s.kind, s.object) for s in applied.steps] == [
        ("alter_columns", f"{db}.t"), ("replace_view", f"{db}.v0"), ("replace_view", f"{db}.v1")]
    assert applied.steps[1].summary == f"re-create view {db}.v0: columns (a, b) -> (a, c)"
    assert applied.warnings == (
        f"{db}.other uses {db}.t.b, which migration 0001_rename renames to c: {db}.other will fail when queried "
        "(invalidation: lenient leaves it as it is)",)
    apply_plan(applied, metastore)
    assert queryable(spark, f"{db}.v1") == ["a", "c"]
    assert queryable(spark, f"{db}.v0") == ["a", "c"]
    assert "UNRESOLVED_COLUMN" in (error := queryable(spark, f"{db}.other")) and "`t`.`b`" in error


def test_lenient_recreates_a_binding_view_a_new_view_reads_though_its_sql_is_unchanged(
        tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    base = {
        f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: a, type: int}}]\n",
        f"schemas/{db}/bound.yaml": f"view: {db}.bound\nsql: SELECT a FROM t\n",
    }
    apply_plan(plan(write_project(tmp_path, base, "lenient"), metastore), metastore)
    bind(spark, f"{db}.bound")
    head = {
        **base,
        f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: a, type: bigint}}]\n",
        f"schemas/{db}/reader.yaml": f"view: {db}.reader\nsql: SELECT a FROM bound\n",
    }
    applied = plan(write_project(tmp_path, head, "lenient"), metastore)
    assert [(s.kind, s.object) for s in applied.steps] == [
        ("alter_columns", f"{db}.t"), ("replace_view", f"{db}.bound"), ("create_view", f"{db}.reader")]
    assert applied.steps[1].summary == (
        f"re-create view {db}.bound: re-created for {db}.reader, which this plan creates and which reads it "
        "(invalidation: lenient leaves only views nothing created reads)")
    assert applied.warnings == ()
    apply_plan(applied, metastore)
    assert spark.sql(f"SELECT * FROM {db}.reader").dtypes == [("a", "bigint")]


def test_lenient_says_when_the_plan_that_re_creates_a_partitioned_view_it_leaves_will_be_destructive(
        tmp_path, metastore, spark, fresh_db):
    db = fresh_db()

    def files(column: str) -> dict[str, str]:
        return {f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: a, type: int}}, {{name: {column}, type: string}}]\n",
                f"schemas/{db}/pv.yaml": f"view: {db}.pv\nsql: SELECT * FROM t\npartitioned_on: [{column}]\n"
                                         f"partitions:\n  - {{{column}: x}}\n"}

    base = files("b")
    apply_plan(plan(write_project(tmp_path, base, "lenient"), metastore), metastore)
    head = {
        **files("c"),
        "migrations/0001_rename.yaml": f"description: b is c\nchanges:\n  - rename_column: {{table: {db}.t, from: b, to: c}}\n",
    }
    project = write_project(tmp_path, head, "lenient")
    applied = plan(project, metastore, allow_destructive=True)  # b's values read NULL as c: allowed as a drop is
    assert [(s.kind, s.object) for s in applied.steps] == [("alter_columns", f"{db}.t")]
    assert applied.warnings == (
        f"{db}.pv uses {db}.t.b, which migration 0001_rename renames to c: {db}.pv will fail when queried "
        "(invalidation: lenient leaves it as it is); the plan that re-creates it, once nothing breaks it, drops its "
        "partitions, which do not fit it (partitioned on (b) -> (c)): that plan is destructive and needs "
        "--allow-destructive",)
    apply_plan(applied, metastore)
    # What the warning said: the next plan re-creates the view, and its partitions are lost.
    again = plan(project, metastore)
    assert [(s.kind, s.destructive, bool(s.blocked)) for s in again.steps] == [
        ("replace_view", False, False), ("view_partitions", True, True)]
