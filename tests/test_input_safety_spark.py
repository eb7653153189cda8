"""User text that looks like a placeholder, and view SQL only Spark can judge, against the real metastore.

Spark replaces ``${env:X}``, ``${system:X}`` and ``${var}`` in a statement's text unless told not to,
and schemaflow's own placeholders (``${claim}``, ``${applied_at}``, ``${live_state}``) must never be
filled inside user text: every such text is stored as written, read back from the metastore here.
"""
from __future__ import annotations

import re

import pytest

from schemaflow.catalog.hive.metastore import Metastore
from schemaflow.catalog.hive.session import VARIABLE_SUBSTITUTION
from schemaflow.project import load_project
from tests.foreign_tables import iceberg_like
from tests.inprocess import schemaflow
from tests.projects import plan, plan_and_apply, write_project

pytestmark = pytest.mark.spark
TEXT = "${env:HOME} ${system:user.name} ${spark:spark.app.name} ${x} ${claim} ${applied_at} ${live_state}"


def test_user_text_is_stored_as_written_whatever_the_sessions_substitution_setting(tmp_path, spark, fresh_db):
    spark.conf.set(VARIABLE_SUBSTITUTION, "true")  # as a user's spark.conf or notebook session may have it
    metastore = Metastore.connect(spark)
    assert spark.conf.get(VARIABLE_SUBSTITUTION) == "false"
    db = fresh_db()
    project = write_project(tmp_path, {
        f"schemas/{db}/t.yaml": f"""
            table: {db}.t
            comment: "{TEXT}"
            columns:
              - {{name: a, type: int, comment: "{TEXT}"}}
            partitioned_by: [{{name: ds, type: string, comment: "{TEXT}"}}]
            properties: {{note: "{TEXT}", at: "${{applied_at}}", state: "${{live_state}}"}}
            """,
        f"schemas/{db}/v.yaml": f"""
            view: {db}.v
            comment: "{TEXT}"
            columns: [{{name: a, comment: "{TEXT}"}}, {{name: s}}]
            sql: |
              SELECT a, '{TEXT}' AS s FROM t -- {TEXT}
            """,
    })
    plan_and_apply(project, metastore)

    table = metastore.msc.getTable(db, "t")
    assert table.getParameters().get("comment") == TEXT
    assert [c.getComment() for c in table.getSd().getCols()] == [TEXT]
    assert [c.getComment() for c in table.getPartitionKeys()] == [TEXT]
    assert {k: table.getParameters().get(k) for k in ("note", "at", "state")} == {
        "note": TEXT, "at": "${applied_at}", "state": "${live_state}"}
    view = metastore.msc.getTable(db, "v")
    assert view.getParameters().get("comment") == TEXT
    assert view.getSd().getCols()[0].getComment() == TEXT
    assert f"'{TEXT}'" in view.getViewOriginalText()
    assert spark.sql(f"SELECT s FROM {db}.v").collect() == []  # readable: no partitions loaded
    spark.sql(f"INSERT INTO {db}.t PARTITION (ds='x') VALUES (1)")
    assert [r.s for r in spark.sql(f"SELECT s FROM {db}.v").collect()] == [TEXT]
    assert plan(project, metastore).is_empty


def test_view_sql_spark_refuses_blocks_the_plan_and_apply_writes_nothing(tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    project = write_project(tmp_path, {
        f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: a, type: int}}, {{name: b, type: string}}]\n",
        f"schemas/{db}/u.yaml": f"view: {db}.u\nsql: SELECT a, b FROM t\n",
        f"schemas/{db}/fn.yaml": f"view: {db}.fn\nsql: SELECT nosuchfn(a) AS x FROM u\n",
        f"schemas/{db}/types.yaml": f"view: {db}.types\nsql: SELECT a + array(1) AS x FROM {db}.t\n",
        f"schemas/{db}/agg.yaml": f"view: {db}.agg\nsql: SELECT a, count(*) AS n FROM t GROUP BY b\n",
    })
    planned = plan(project, metastore)
    blocked = {s.object: s.blocked for s in planned.blocked}
    assert sorted(blocked) == [f"{db}.agg", f"{db}.fn", f"{db}.types"]  # the table and u are fine
    # Not a built-in, so code Spark looks up in the metastore, which does not hold it: found over Thrift, not by Spark.
    assert blocked[f"{db}.fn"].startswith(f"schemas/{db}/fn.yaml:2:13: nosuchfn(...) is neither a built-in function of "
                                          "Spark ")
    assert f"nor a function of the metastore ({db}.nosuchfn)" in blocked[f"{db}.fn"]
    assert "data type mismatch" in blocked[f"{db}.types"]
    assert "GROUP BY" in blocked[f"{db}.agg"]
    tables_before = sorted(metastore.msc.getAllTables(db))

    ran = schemaflow("--project", str(tmp_path), "plan")
    assert ran.code == 1 and "error: 3 steps blocked: apply would refuse this plan" in ran.err
    ran = schemaflow("--project", str(tmp_path), "apply", "--auto-approve")
    assert ran.code == 1 and "the plan has 3 blocked steps; nothing was applied" in ran.err
    assert sorted(metastore.msc.getAllTables(db)) == tables_before == []  # not even the table was created
    # The stand-ins Spark judged the views against were session-local, and are gone.
    assert spark.sql("SHOW VIEWS IN default LIKE '__schemaflow_check_*'").collect() == []


def test_a_saved_plan_is_bound_to_its_project_and_metastore(tmp_path, metastore, spark, fresh_db):
    import json

    from schemaflow.plan.plan import _checksum

    db = fresh_db()
    ours = write_project(tmp_path / "ours", {f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: a, type: int}}]\n"})
    theirs = write_project(tmp_path / "theirs", {
        f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: a, type: int}}, {{name: b, type: string}}]\n"})
    saved = tmp_path / "plan.json"
    saved.write_text(plan(ours, metastore).to_json())

    def forged(edit) -> None:
        """The saved plan edited, with its checksum recomputed as anyone can."""
        data = json.loads(saved.read_text())
        edit(data)
        data.pop("checksum")
        (tmp_path / "forged.json").write_text(json.dumps({**data, "checksum": _checksum(data)}))

    def refused(project, plan_file) -> str:
        ran = schemaflow("--project", str(project.root), "apply", str(plan_file), "--auto-approve")
        assert ran.code == 1, ran.said
        assert spark.sql(f"SHOW TABLES IN {db}").collect() == []  # nothing applied
        return ran.err

    assert "it was made from other schemas or migrations than" in refused(theirs, saved)

    def retyped(data):
        data["steps"][0]["actions"][0]["table"]["columns"][0]["type"] = "bigint"
    forged(retyped)
    said = refused(ours, tmp_path / "forged.json")
    assert "its steps are not what this project plans for this metastore (was it edited?)" in said
    assert f"planned differently: create table {db}.t" in said

    forged(lambda data: data.update(metastore="thrift://prod-metastore:9083"))
    assert "it was planned against the metastore thrift://prod-metastore:9083, and this project reaches " \
           "embedded Derby at" in refused(ours, tmp_path / "forged.json")

    ran = schemaflow("--project", str(ours.root), "apply", str(saved), "--auto-approve")  # the real one applies
    assert ran.code == 0, ran.said
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {db}").collect()] == ["t"]


def test_objects_schemaflow_does_not_own_are_never_planned_even_with_allow_destructive(tmp_path, metastore, spark,
                                                                                       fresh_db):
    db = fresh_db()
    spark.sql(f"CREATE TABLE {db}.odd_source (a INT) USING parquet")
    odd = metastore.msc.getTable(db, "odd_source")  # a data source schemaflow does not create
    odd.getParameters().put("spark.sql.sources.provider", "com.example.source")
    metastore.alter(odd)
    iceberg_like(spark, metastore, f"{db}.ice", "a INT")
    spark.sql(f"CREATE TABLE {db}.tmp_notebook (a INT) STORED AS PARQUET")
    spark.sql(f"CREATE TABLE {db}.lake (a INT) USING parquet")
    lake = metastore.msc.getTable(db, "lake")  # what a Delta table looks like to the metastore
    lake.getParameters().put("spark.sql.sources.provider", "delta")
    metastore.alter(lake)
    project = write_project(tmp_path, {
        f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: a, type: int}}]\n",
        "schemaflow.yaml": f"exclude: ['{db}.tmp_*']\n",
    })
    planned = plan(project, metastore, allow_destructive=True)
    assert [(s.kind, s.object) for s in planned.steps] == [("create_table", f"{db}.t")]
    lake_at = metastore.msc.getTable(db, "lake").getSd().getLocation()
    assert planned.warnings == (
        f"not managed: {db}.ice (an Iceberg table); schemaflow leaves it alone",
        f"not managed: {db}.lake (its own metadata could not be read: the Delta table location '{lake_at}' holds no "
        "_delta_log: it is not a Delta table's; see that its metastore entry names its own metadata file); "
        "schemaflow leaves it alone",
        f"not managed: {db}.odd_source (a table of the Spark data source 'com.example.source', which schemaflow "
        "does not create); schemaflow leaves it alone",
        f"not managed: {db}.tmp_notebook (excluded by '{db}.tmp_*' in schemaflow.yaml); schemaflow leaves it alone")
    ran = schemaflow("--project", str(tmp_path), "apply", "--allow-destructive", "--auto-approve")
    assert ran.code == 0, ran.said
    assert sorted(metastore.msc.getAllTables(db)) == ["ice", "lake", "odd_source", "t", "tmp_notebook"]
    assert plan(project, metastore, allow_destructive=True).is_empty


def test_import_then_evolve_applies_whichever_object_the_guard_probe_meets_first(tmp_path, metastore, spark, fresh_db):
    db = fresh_db()
    spark.sql(f"CREATE TABLE {db}.b_second (id INT) STORED AS PARQUET")
    spark.sql(f"CREATE VIEW {db}.v AS SELECT id FROM {db}.b_second")
    (tmp_path / "schemas").mkdir()
    assert schemaflow("--project", str(tmp_path), "import", "--database", db).code == 0
    assert schemaflow("--project", str(tmp_path), "plan").code == 0
    # Made outside schemaflow later and declared with a change: it holds no schemaflow.version, and it
    # comes first by name, where the probe of the metastore's guards used to look (and fail).
    spark.sql(f"CREATE TABLE {db}.a_outside (id INT) STORED AS PARQUET")
    (tmp_path / "schemas" / db / "a_outside.yaml").write_text(
        f"table: {db}.a_outside\nformat: parquet\ncolumns: [{{name: id, type: int}}, {{name: x, type: string}}]\n")
    with (tmp_path / "schemas" / db / "b_second.yaml").open("a") as evolved:
        evolved.write("comment: Evolved\n")
    ran = schemaflow("--project", str(tmp_path), "apply", "--auto-approve")
    assert ran.code == 0, ran.said
    assert [c.getName() for c in metastore.msc.getTable(db, "a_outside").getSd().getCols()] == ["id", "x"]
    assert metastore.msc.getTable(db, "b_second").getParameters().get("comment") == "Evolved"
    assert schemaflow("--project", str(tmp_path), "plan").code == 0


def test_after_an_apply_the_hooks_are_told_and_a_failing_one_does_not_hide_the_apply(tmp_path, metastore, spark,
                                                                                     fresh_db):
    db = fresh_db()
    table = f"schemas/{db}/t.yaml"
    project = write_project(tmp_path, {table: f"table: {db}.t\ncolumns: [{{name: a, type: int}}]\n"})
    plan_and_apply(project, metastore)
    spark.sql(f"INSERT INTO {db}.t VALUES (1)")
    assert spark.table(f"{db}.t").schema["a"].dataType.simpleString() == "int"

    (tmp_path / table).write_text(f"table: {db}.t\ncolumns: [{{name: a, type: bigint}}]\n")  # through the client
    (tmp_path / "schemaflow.yaml").write_text(
        'after_apply:\n  - cd && printf "%s" "$SCHEMAFLOW_CHANGED" > told.txt\n  - "echo engine down >&2; exit 4"\n')
    approved = [f"--approve-code={hook.id}" for hook in load_project(tmp_path, env={}).settings.code]  # the operator
    ran = schemaflow("--project", str(tmp_path), *approved, "apply", "--auto-approve")
    assert ran.code == 1  # a hook failed ...
    # ... after the apply said what it did: the column, and the hooks' setting (a step since the first apply)
    # (the step's elapsed time is the clock's, so the line is compared without it)
    assert re.sub(r"done \(\d+\.\ds\)", "done", ran.out).endswith(
        "[2/2] set after_apply in schemaflow.yaml ... done\n\nApplied 2 steps.\n")
    assert ran.err.splitlines()[-2:] == [
        'error: after_apply hook `echo engine down >&2; exit 4` failed (exit 4): engine down',
        f"The apply itself succeeded: all 2 steps applied. Run the failed 1 hook again by hand, with "
        f"SCHEMAFLOW_CHANGED='{db}.t'."]
    assert (tmp_path / ".schemaflow" / "hooks" / "told.txt").read_text() == f"{db}.t"  # the hooks' own folder (HOME)
    assert spark.table(f"{db}.t").schema["a"].dataType.simpleString() == "bigint"
    assert plan(load_project(tmp_path, env={}), metastore).is_empty  # the hooks as applied


def test_a_step_that_fails_at_its_first_write_leaves_no_claim_on_its_object(tmp_path, metastore, spark, fresh_db):
    from schemaflow.apply.executor import ApplyError, apply_plan
    from schemaflow.claims import parse_claim

    db = fresh_db()
    files = {f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: id, type: int}}]\n",
             f"schemas/{db}/u.yaml": f"table: {db}.u\ncolumns: [{{name: id, type: int}}]\n"}
    project = write_project(tmp_path, files)
    plan_and_apply(project, metastore)
    before = {key: obj.version for key, obj in metastore.read((db,)).objects.items()}
    files[f"schemas/{db}/t.yaml"] = f"table: {db}.t\ncolumns: [{{name: id, type: int}}, {{name: note, type: string}}]\n"
    files[f"schemas/{db}/u.yaml"] = files[f"schemas/{db}/t.yaml"].replace(f"{db}.t", f"{db}.u")
    project = write_project(tmp_path, files)
    planned = plan(project, metastore)
    spark.sql(f"ALTER TABLE {db}.u ADD COLUMNS (note STRING)")  # someone else, after the plan: u's ADD COLUMNS fails

    with pytest.raises(ApplyError) as failure:
        apply_plan(planned, metastore)
    assert str(failure.value).startswith(f"step 2 failed (add 1 column to {db}.u: note string)")
    after = metastore.read((db,))
    assert parse_claim(after.get(f"{db}.u").version) is None  # nothing of u changed by this run: its claim handed back
    assert after.get(f"{db}.u").version == before[f"{db}.u"]
    assert after.get(f"{db}.t").version != before[f"{db}.t"]  # t's step ran and was stamped
