"""Adopting a warehouse built the way Spark and Hive users build one, against the real metastore.

Tables are made by plain CREATE TABLE, saveAsTable, CTAS, USING csv with options, Hive delimited
text, OpenCSVSerde, bucketing, partitioned and not; a table carries Iceberg's marker, another
Delta's; a notebook left a scratch table. Rows are written, then: import, an empty plan, an
evolution of each kind, apply, an empty plan again, and the rows written before read back
through Spark as the plan's hazards said they would be.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemaflow.model import HISTORY_PREFIX, SETTINGS_KEY
from schemaflow.plan.settings_changes import settings_digest
from tests.foreign_tables import iceberg_like
from tests.inprocess import schemaflow

pytestmark = pytest.mark.spark


def build_warehouse(spark, metastore, db: str) -> None:
    sql = spark.sql
    # Plain CREATE TABLE and CTAS make data-source tables, as Spark 4 does by default (Spark 3.5 makes
    # Hive tables unless told otherwise; this setting is already Spark 4's default).
    spark.conf.set("spark.sql.legacy.createHiveTableByDefault", "false")
    sql(f"CREATE TABLE {db}.plain (id INT COMMENT 'The id', name STRING) COMMENT 'Made plainly'")
    sql(f"INSERT INTO {db}.plain VALUES (1, 'a'), (2, 'b')")
    spark.createDataFrame([(1, "x"), (2, "y")], "id BIGINT, s STRING").write.saveAsTable(f"{db}.saved")
    sql(f"CREATE TABLE {db}.ctas AS SELECT 1 AS a, 'one' AS b")
    sql(f"CREATE TABLE {db}.csv_in (id INT, line STRING, ds STRING) USING csv OPTIONS (header 'true', sep '|') "
        "PARTITIONED BY (ds)")
    sql(f"INSERT INTO {db}.csv_in PARTITION (ds='d1') VALUES (1, 'first'), (2, 'second')")
    sql(f"CREATE TABLE {db}.delimited (id INT, tags ARRAY<STRING>) ROW FORMAT DELIMITED FIELDS TERMINATED BY '|' "
        "COLLECTION ITEMS TERMINATED BY ',' STORED AS TEXTFILE")
    sql(f"INSERT INTO {db}.delimited VALUES (1, array('a', 'b')), (2, array('c'))")
    sql(f"CREATE TABLE {db}.open_csv (a STRING, b STRING) ROW FORMAT SERDE "
        "'org.apache.hadoop.hive.serde2.OpenCSVSerde' WITH SERDEPROPERTIES ('separatorChar' = ';') STORED AS TEXTFILE")
    sql(f"INSERT INTO {db}.open_csv VALUES ('x', 'y')")
    sql(f"CREATE TABLE {db}.bucketed (id INT, v STRING) USING parquet CLUSTERED BY (id) SORTED BY (v) INTO 4 BUCKETS")
    sql(f"INSERT INTO {db}.bucketed VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    sql(f"CREATE TABLE {db}.hive_bucketed (id INT, v STRING) PARTITIONED BY (ds STRING) "
        "CLUSTERED BY (id) SORTED BY (v) INTO 8 BUCKETS STORED AS ORC")
    iceberg_like(spark, metastore, f"{db}.iceberg_like", "id INT")
    sql(f"CREATE TABLE {db}.delta_like (id INT) USING parquet")
    delta = metastore.msc.getTable(db, "delta_like")  # as a Delta table is registered: provider 'delta'
    delta.getParameters().put("spark.sql.sources.provider", "delta")
    metastore.msc.alter_table(db, "delta_like", delta)
    sql(f"CREATE TABLE {db}.tmp_scratch AS SELECT 42 AS answer")
    sql(f"CREATE VIEW {db}.named AS SELECT id, name FROM {db}.plain")
    spark.conf.unset("spark.sql.legacy.createHiveTableByDefault")


def delta_unread(location: str) -> str:
    """Why a live table registered as a Delta table, whose location holds no Delta log, is left alone."""
    return (f"its own metadata could not be read: the Delta table location '{location}' holds no _delta_log: it is not "
            "a Delta table's; see that its metastore entry names its own metadata file")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, text
    path.write_text(text.replace(old, new, 1))


def test_a_warehouse_built_by_spark_and_hive_users_is_adopted_and_evolves(tmp_path, spark, metastore, fresh_db):
    db = fresh_db()
    build_warehouse(spark, metastore, db)
    (tmp_path / "schemaflow.yaml").write_text(f"databases: [{db}]\nexclude: [{db}.tmp_*]\n")
    project = str(tmp_path)

    imported = schemaflow("--project", project, "import", "--database", db)
    assert imported.code == 0, imported.said
    delta_at = metastore.msc.getTable(db, "delta_like").getSd().getLocation()
    for left_alone in (f"{db}.delta_like ({delta_unread(delta_at)})", f"{db}.iceberg_like (an Iceberg table)",
                       f"{db}.tmp_scratch (excluded by '{db}.tmp_*' in schemaflow.yaml)"):
        assert f"not managed: {left_alone}; schemaflow leaves it alone\n" in imported.out
    assert f"Imported 9 of 12 objects of {db} (3 left alone, as plan leaves them).\n" in imported.out
    assert imported.out.endswith("schemaflow plan should now find nothing to do.\n")
    schemas = tmp_path / "schemas" / db
    assert sorted(p.name for p in schemas.iterdir()) == [
        "bucketed.yaml", "csv_in.yaml", "ctas.yaml", "delimited.yaml", "hive_bucketed.yaml", "named.yaml",
        "open_csv.yaml", "plain.yaml", "saved.yaml"]
    csv_in = (schemas / "csv_in.yaml").read_text()
    assert "using: csv\noptions: {header: 'true', sep: '|'}\n" in csv_in
    assert "row_format:\n  fields_terminated_by: '|'\n  collection_items_terminated_by: ','\n" in (
        schemas / "delimited.yaml").read_text()
    assert "serde: org.apache.hadoop.hive.serde2.OpenCSVSerde\nserde_properties: {separatorChar: ;}\n" in (
        schemas / "open_csv.yaml").read_text()
    assert "buckets: {clustered_by: [id], sorted_by: [v], count: 8}\n" in (schemas / "hive_bucketed.yaml").read_text()

    planned = schemaflow("--project", project, "plan")
    assert planned.code == 0 and planned.out.startswith("No changes"), planned.said

    # A change Spark cannot make to a data-source table is a rewrite, blocked until allowed.
    ctas = schemas / "ctas.yaml"
    edit(ctas, "{name: a, type: int}", "{name: a, type: bigint}")
    blocked = schemaflow("--project", project, "plan")
    assert blocked.code == 1 and f"rewrite table {db}.ctas: change type of a from int to bigint" in blocked.out
    assert "a rewrite copies every row of the table into a new one: plan with --allow-destructive" in blocked.out
    edit(ctas, "{name: a, type: bigint}", "{name: a, type: int}")

    # An evolution of each kind.
    edit(schemas / "plain.yaml", "  - {name: name, type: string}\n",
         "  - {name: name, type: string, comment: The name}\n  - {name: extra, type: bigint}\n")
    edit(schemas / "csv_in.yaml", "options: {header: 'true', sep: '|'}", "options: {header: 'true', sep: '|', nullValue: NA}")
    edit(schemas / "delimited.yaml", "  - {name: tags, type: array<string>}\n",
         "  - {name: tags, type: array<string>}\n  - {name: note, type: string}\n")
    edit(schemas / "open_csv.yaml", f"table: {db}.open_csv\n", f"table: {db}.open_csv\ncomment: Semicolons\n")
    edit(schemas / "saved.yaml", "  - {name: s, type: string}\n", "  - {name: s, type: string}\nproperties: {team: data}\n")
    edit(schemas / "bucketed.yaml", "count: 4", "count: 8")

    reviewed = schemaflow("--project", project, "plan")
    assert reviewed.code == 2, reviewed.said
    for summary in (f"add 1 column to {db}.plain: extra bigint", f"comment on columns of {db}.plain: name",
                    f"change storage of {db}.csv_in: options nullValue: (none) -> 'NA'",
                    f"add 1 column to {db}.delimited: note string", f"comment on table {db}.open_csv",
                    f"change storage of {db}.bucketed: buckets 4 -> 8"):
        assert summary in reviewed.out, summary
    assert "were bucketed into 4" in reviewed.out

    applied = schemaflow("--project", project, "apply", "--auto-approve")
    assert applied.code == 0, applied.said
    again = schemaflow("--project", project, "plan")
    assert again.code == 0 and again.out.startswith("No changes"), again.said
    # Objects the apply changed carry its record and have not drifted; the others were never applied.
    drift = schemaflow("--project", project, "drift")
    assert drift.code == 2
    assert sorted(line.split(":")[0] for line in drift.out.splitlines()) == [
        f"{db}.{name}" for name in ("ctas", "hive_bucketed", "named")]
    assert all("no record of what schemaflow applied" in line for line in drift.out.splitlines())
    as_json = schemaflow("--project", project, "drift", "--format", "json")
    assert as_json.code == 2
    assert [(d["object"], d["aspects"]) for d in json.loads(as_json.out)["drift"]] == [
        (f"{db}.{name}", ["unrecorded"]) for name in ("ctas", "hive_bucketed", "named")]
    history = json.loads(schemaflow("--project", project, "history", "--format", "json").out)["history"]
    assert {record["object"] for record in history} == {
        f"{db}.{name}" for name in ("bucketed", "csv_in", "delimited", "open_csv", "plain", "saved")}

    # The rows written before, read back through Spark as the hazards said.
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {db}.plain ORDER BY id").collect()] == [
        (1, "a", None), (2, "b", None)]
    assert spark.table(f"{db}.plain").schema["name"].metadata == {"comment": "The name"}
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {db}.csv_in ORDER BY id").collect()] == [
        (1, "first", "d1"), (2, "second", "d1")]
    assert [tuple(r) for r in spark.sql(f"SELECT id, tags, note FROM {db}.delimited ORDER BY id").collect()] == [
        (1, ["a", "b"], None), (2, ["c"], None)]
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {db}.open_csv").collect()] == [("x", "y")]
    assert spark.sql(f"SELECT count(*) FROM {db}.bucketed").first()[0] == 3
    assert metastore.msc.getTable(db, "saved").getParameters().get("team") == "data"
    # What schemaflow leaves alone is still there, as it was.
    assert {"iceberg_like", "delta_like", "tmp_scratch"} <= set(metastore.msc.getAllTables(db))
    assert spark.sql(f"SELECT answer FROM {db}.tmp_scratch").first()[0] == 42


def test_a_database_is_created_and_kept_as_declared(tmp_path, spark, metastore, fresh_db):
    from tests.projects import plan, plan_and_apply, write_project

    db = fresh_db()  # a name for it; the test creates it itself
    spark.sql(f"DROP DATABASE {db} CASCADE")
    location = tmp_path / "elsewhere" / f"{db}.db"
    settings = f"databases:\n  {db}: {{comment: Orders, location: '{location}', properties: {{team: sales, tier: '1'}}}}\n"
    table = {f"schemas/{db}/t.yaml": f"table: {db}.t\ncolumns: [{{name: a, type: int}}]\n"}
    project = write_project(tmp_path, {"schemaflow.yaml": settings, **table})
    plan_and_apply(project, metastore)

    stored = metastore.database(db)
    assert (stored.comment, stored.location, _declared_part(stored.properties)) == (
        "Orders", f"file:{location}", {"team": "sales", "tier": "1"})
    assert _recorded_digest(stored.properties) == settings_digest(project.settings.declared)
    assert spark.sql(f"DESCRIBE TABLE EXTENDED {db}.t").where("col_name = 'Location'").first()[1].startswith(
        f"file:{location}")
    assert plan(project, metastore).is_empty

    spark.sql(f"ALTER DATABASE {db} SET DBPROPERTIES ('added' = 'by hand')")  # not declared: left alone
    changed = write_project(tmp_path, {"schemaflow.yaml": settings.replace("tier: '1'", "tier: '2'"), **table})
    [step, setting] = plan(changed, metastore).steps
    assert step.summary == f"properties of database {db}: tier: '1' -> '2'"
    assert setting.values == (f"databases.{db}.properties.tier: \"1\" -> \"2\"",)  # the same, as schemaflow.yaml's
    plan_and_apply(changed, metastore)
    stored = metastore.database(db)
    assert _declared_part(stored.properties) == {"added": "by hand", "team": "sales", "tier": "2"}
    assert _recorded_digest(stored.properties) == settings_digest(changed.settings.declared)
    assert plan(changed, metastore).is_empty

    recommented = write_project(tmp_path, {"schemaflow.yaml": settings.replace("tier: '1'", "tier: '2'").replace(
        "comment: Orders", "comment: Sales"), **table})
    [blocked] = plan(recommented, metastore).blocked
    assert blocked.summary == f"changing the comment 'Orders' -> 'Sales' on {db}"


def test_a_starter_project_from_init_applies_and_then_plans_to_nothing(tmp_path, spark, metastore, fresh_db):
    db = fresh_db()
    project = str(tmp_path / "new")
    assert schemaflow("--project", project, "init", "--database", db).code == 0
    applied = schemaflow("--project", project, "apply", "--auto-approve")
    assert applied.code == 0, applied.said
    events = metastore.msc.getTable(db, "events")
    assert [(c.getName(), c.getType()) for c in events.getSd().getCols()] == [
        ("event_id", "bigint"), ("kind", "string"), ("at", "timestamp")]
    assert [c.getName() for c in events.getPartitionKeys()] == ["ds"]
    again = schemaflow("--project", project, "plan")
    assert again.code == 0 and again.out.startswith("No changes"), again.said


def _declared_part(properties: dict[str, str]) -> dict[str, str]:
    """A database's properties but the records schemaflow keeps there: of the settings applied
    (``schemaflow.settings``, ``.1``, ...) and of its objects' applies (``schemaflow.history.<name>``)."""
    return {key: value for key, value in properties.items() if not key.startswith((SETTINGS_KEY, HISTORY_PREFIX))}


def _recorded_digest(properties: dict[str, str]) -> str:
    return json.loads(properties[SETTINGS_KEY])["digest"]


def test_import_declares_what_its_views_read_from_elsewhere_as_sources_so_the_plan_is_empty(
        tmp_path, spark, metastore, fresh_db):
    db, other, shop = fresh_db(), fresh_db(), fresh_db()
    spark.sql(f"CREATE TABLE {other}.customers (id INT, name STRING COMMENT 'Their name') USING parquet")
    spark.sql(f"CREATE TABLE {shop}.items (id INT, sku STRING) USING parquet")
    spark.sql(f"CREATE TABLE {db}.orders (id INT, cid INT) USING parquet")
    iceberg_like(spark, metastore, f"{db}.ice", "id INT")
    spark.sql(f"CREATE VIEW {db}.named AS SELECT o.id, c.name FROM {db}.orders o JOIN {other}.customers c ON o.cid = c.id")
    spark.sql(f"CREATE VIEW {db}.iced AS SELECT id FROM {db}.ice")
    spark.sql(f"CREATE VIEW {db}.sold AS SELECT o.id, i.sku FROM {db}.orders o JOIN {shop}.items i ON o.id = i.id")
    (tmp_path / "schemaflow.yaml").write_text(f"databases: [{db}, {shop}]\n")
    project = str(tmp_path)

    # A table of a database it does not manage, and an Iceberg table it leaves alone, become sources.
    first = schemaflow("--project", project, "import", "--database", db)
    assert first.code == 0, first.said
    for source in (f"{db}/ice", f"{other}/customers"):
        assert f"wrote {tmp_path / 'schemas' / source}.yaml (a source: a view of {db} reads it)\n" in first.out
    assert f"Imported 4 of 5 objects of {db} (1 left alone, as plan leaves them), and 2 sources its views read.\n" in (
        first.out)
    # A view over a database the project manages is written; that database's import is named.
    assert first.out.endswith(f"Its views read {shop}, which this project manages: run schemaflow import --database "
                              f"{shop} too; then schemaflow plan should find nothing to do.\n")
    assert schemaflow("--project", project, "validate").code == 1  # shop.items is not declared yet
    imported = schemaflow("--project", project, "import", "--database", shop)
    assert imported.code == 0 and imported.out.endswith("schemaflow plan should now find nothing to do.\n")
    assert (tmp_path / "schemas" / other / "customers.yaml").read_text() == (
        f"source: {other}.customers\ncolumns:\n  - {{name: id, type: int}}\n"
        "  - {name: name, type: string, comment: Their name}\n")
    assert schemaflow("--project", project, "validate").code == 0
    planned = schemaflow("--project", project, "plan")
    assert planned.code == 0 and planned.out.startswith("No changes"), planned.said
