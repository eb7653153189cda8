"""Table storage created, read back and changed in place, against the real metastore.

Every kind of storage a table file can declare is created by schemaflow, read back from the
metastore as the same model (so the next plan is empty), and the changes the metastore takes in
place (SERDEPROPERTIES, OPTIONS, bucket count) are applied and read back.
"""
from __future__ import annotations

import pytest

from schemaflow.plan.rewrite import REWRITE_BLOCK
from tests.projects import plan, plan_and_apply, write_project

pytestmark = pytest.mark.spark

STORAGE = {
    "delimited": """
        format: textfile
        row_format: {fields_terminated_by: '|', collection_items_terminated_by: ',', null_defined_as: NA}
        """,
    "open_csv": """
        serde: org.apache.hadoop.hive.serde2.OpenCSVSerde
        serde_properties: {separatorChar: ';'}
        """,
    "regex": """
        serde: org.apache.hadoop.hive.serde2.RegexSerDe
        serde_properties: {input.regex: '(\\\\S+) (.*)'}
        """,
    "classes": """
        input_format: org.apache.hadoop.mapred.SequenceFileInputFormat
        output_format: org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat
        """,
    "orc_settings": """
        format: orc
        serde_properties: {orc.example: 'yes'}
        buckets: {clustered_by: [a], sorted_by: [b], count: 4}
        """,
    "csv_source": """
        using: csv
        options: {header: 'true', sep: '|'}
        partitioned_by: [{name: ds, type: string, comment: Day}]
        """,
    "json_source": """
        using: json
        buckets: {clustered_by: [a], count: 2}
        """,
}


def project_files(db: str, storage: dict[str, str]) -> dict[str, str]:
    return {f"schemas/{db}/{name}.yaml": f"table: {db}.{name}\n" + text.strip("\n").replace("        ", "")
            + "\ncolumns: [{name: a, type: string, comment: The a}, {name: b, type: string}]\n"
            for name, text in storage.items()}


def test_each_kind_of_storage_is_created_as_declared_and_plans_to_nothing(tmp_path, spark, metastore, fresh_db):
    db = fresh_db()
    external = f"""
        using: orc
        external: true
        location: {tmp_path / 'files' / 'orc_external'}
        """
    project = write_project(tmp_path, project_files(db, {**STORAGE, "orc_external": external}))
    plan_and_apply(project, metastore)

    live = metastore.read((db,))
    from schemaflow.workflow import desired_state
    desired = desired_state(project)
    for key, want in desired.objects.items():
        have = live.get(key)
        assert have is not None
        for field in ("format", "data_source", "serde", "input_format", "output_format", "serde_properties",
                      "bucketing", "columns", "partition_columns", "external"):
            assert getattr(have, field) == getattr(want, field), (key, field)
    assert live.objects[f"{db}.orc_external"].location == f"file:{tmp_path / 'files' / 'orc_external'}"
    assert plan(project, metastore).is_empty
    # What Spark 4's ROW FORMAT DELIMITED would have dropped is in the metastore.
    serde = metastore.msc.getTable(db, "delimited").getSd().getSerdeInfo()
    assert serde.getParameters().get("serialization.null.format") == "NA"
    spark.sql(f"INSERT INTO {db}.delimited VALUES ('x', NULL)")
    assert [tuple(r) for r in spark.sql(f"SELECT a, b FROM {db}.delimited").collect()] == [("x", None)]
    spark.sql(f"INSERT INTO {db}.csv_source PARTITION (ds='d') VALUES ('x', 'y')")
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {db}.csv_source").collect()] == [("x", "y", "d")]


def test_settings_and_bucket_counts_change_in_place(tmp_path, spark, metastore, fresh_db):
    db = fresh_db()
    write_project(tmp_path, project_files(db, STORAGE))
    plan_and_apply(write_project(tmp_path, project_files(db, STORAGE)), metastore)
    changed = dict(STORAGE)
    changed["delimited"] = STORAGE["delimited"].replace("null_defined_as: NA", "null_defined_as: ''")
    changed["orc_settings"] = STORAGE["orc_settings"].replace("orc.example: 'yes'", "orc.other: 'no'").replace(
        "count: 4", "count: 16")
    changed["csv_source"] = STORAGE["csv_source"].replace("sep: '|'", "sep: ';'")
    project = write_project(tmp_path, project_files(db, changed))

    planned = plan(project, metastore)
    assert sorted((s.kind, s.object) for s in planned.steps if s.kind != "set_properties") == [
        ("set_storage", f"{db}.csv_source"), ("set_storage", f"{db}.delimited"), ("set_storage", f"{db}.orc_settings")]
    assert not planned.blocked
    plan_and_apply(project, metastore)

    table = metastore.msc.getTable(db, "orc_settings")
    assert dict(table.getSd().getSerdeInfo().getParameters()) == {"orc.other": "no", "serialization.format": "1"}
    assert table.getSd().getNumBuckets() == 16
    assert table.getParameters().get("spark.sql.sources.schema.numBuckets") == "16"  # Spark's copy agrees
    options = metastore.msc.getTable(db, "csv_source").getSd().getSerdeInfo().getParameters()
    assert options.get("sep") == ";" and options.get("path")  # the location stays
    assert plan(project, metastore).is_empty
    spark.sql(f"REFRESH TABLE {db}.csv_source")
    assert spark.table(f"{db}.orc_settings").columns == ["a", "b"]

    # Other bucket columns, or another SerDe, cannot change in place: rewrites, run only when allowed.
    moved = dict(changed, orc_settings=changed["orc_settings"].replace("clustered_by: [a]", "clustered_by: [b]"),
                 open_csv=changed["open_csv"].replace("OpenCSVSerde", "RegexSerDe"))
    blocked = plan(write_project(tmp_path, project_files(db, moved)), metastore).blocked
    assert sorted(s.object for s in blocked) == [f"{db}.open_csv", f"{db}.orc_settings"]
    assert all(s.kind == "rewrite_table" and s.blocked == REWRITE_BLOCK for s in blocked)


def test_a_partitioned_data_source_table_gains_a_column_its_partitions_read_as_null(tmp_path, spark, metastore,
                                                                                   fresh_db):
    db = fresh_db()
    table = f"""
        table: {db}.events
        using: parquet
        columns: [{{name: id, type: bigint, comment: The id}}]
        partitioned_by: [{{name: ds, type: string}}]
        """
    plan_and_apply(write_project(tmp_path, {f"schemas/{db}/events.yaml": table}), metastore)
    spark.sql(f"INSERT INTO {db}.events PARTITION (ds='d1') VALUES (1)")
    spark.sql(f"INSERT INTO {db}.events PARTITION (ds='d2') VALUES (2)")

    evolved = write_project(tmp_path, {f"schemas/{db}/events.yaml": table.replace(
        "comment: The id}]", "comment: The event}, {name: kind, type: string}]")})
    planned = plan(evolved, metastore)
    assert [s.kind for s in planned.steps] == ["set_column_comments", "add_columns"]
    plan_and_apply(evolved, metastore)

    assert plan(evolved, metastore).is_empty
    assert metastore.count_partitions(f"{db}.events") == 2
    spark.sql(f"INSERT INTO {db}.events PARTITION (ds='d3') VALUES (3, 'new')")
    assert [tuple(r) for r in spark.sql(f"SELECT id, kind, ds FROM {db}.events ORDER BY id").collect()] == [
        (1, None, "d1"), (2, None, "d2"), (3, "new", "d3")]
    # Spark's copy of the schema and the metastore's columns say the same.
    stored = metastore.msc.getTable(db, "events")
    assert [(c.getName(), c.getType(), c.getComment()) for c in stored.getSd().getCols()] == [
        ("id", "bigint", "The event"), ("kind", "string", None)]
    assert [(f.name, f.metadata.get("comment")) for f in spark.table(f"{db}.events").schema.fields] == [
        ("id", "The event"), ("kind", None), ("ds", None)]


def test_drift_sees_a_storage_setting_changed_outside_schemaflow(tmp_path, spark, metastore, fresh_db):
    from schemaflow.catalog.live import Live
    from schemaflow.workflow import drift

    db = fresh_db()
    project = write_project(tmp_path, project_files(db, {"delimited": STORAGE["delimited"]}))
    plan_and_apply(project, metastore)
    spark.sql(f"ALTER TABLE {db}.delimited SET SERDEPROPERTIES ('field.delim' = ';')")

    [found] = drift(project, Live(project, connected=metastore))
    assert found.describe().startswith(f"{db}.delimited: storage changed since schemaflow applied it at ")
    [step] = [s for s in plan(project, metastore).steps if s.kind == "set_storage"]
    assert step.summary == f"change storage of {db}.delimited: SERDEPROPERTIES field.delim: ';' -> '|'"


def test_a_delimiter_changed_on_a_table_spark_made_converges(tmp_path, spark, metastore, fresh_db):
    """Spark writes a ROW FORMAT DELIMITED table's field delimiter as serialization.format too: it follows."""
    db = fresh_db()
    spark.sql(f"CREATE TABLE {db}.t (a INT, b STRING) ROW FORMAT DELIMITED FIELDS TERMINATED BY '|' STORED AS TEXTFILE")
    table = metastore.msc.getTable(db, "t")
    assert dict(table.getSd().getSerdeInfo().getParameters()) == {"field.delim": "|", "serialization.format": "|"}
    columns = "columns: [{name: a, type: int}, {name: b, type: string}]\n"
    project = write_project(tmp_path, {f"schemas/{db}/t.yaml": f"table: {db}.t\nformat: textfile\n"
                                                               f"row_format: {{fields_terminated_by: ','}}\n{columns}"})
    [step] = plan_and_apply(project, metastore).steps
    assert "field.delim=','" in " ".join(action.describe() for action in step.actions)
    table = metastore.msc.getTable(db, "t")  # read back
    assert dict(table.getSd().getSerdeInfo().getParameters()) == {"field.delim": ",", "serialization.format": ","}
    assert plan(project, metastore).is_empty
