"""Iceberg tables created and evolved by field id on a real metastore (embedded Derby in the test JVM), every
outcome read back from the table's metadata and its rows read back through pyiceberg (Arrow) after each step."""
from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable
from pyiceberg.types import StringType

from schemaflow.apply.executor import ApplyError, apply_plan
from schemaflow.catalog.iceberg_metadata import read_metadata
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import Table, fingerprint
from schemaflow.workflow import desired_state, hash_migrations
from tests.iceberg_writer import OtherWriter
from tests.projects import plan, plan_and_apply, write_project

pytestmark = pytest.mark.spark


def _clicks(db: str, columns: str, layout: str = "") -> dict[str, str]:
    return {f"schemas/{db}/clicks.yaml": f"""
        table: {db}.clicks
        comment: One row per click
        format: iceberg
        columns:
{columns}
{layout}
        properties: {{format-version: '2', write.format.default: parquet}}
        """}


BEFORE = """\
          - {name: ts, type: timestamp}
          - {name: id, type: bigint, comment: Click id}
          - {name: v, type: int}
          - {name: code, type: string}
          - {name: region, type: string}"""
LAYOUT = """\
        partitioned_by: [day(ts), bucket(16, id)]
        sorted_by: [id]"""


def _metadata(metastore, key: str) -> dict:
    database, name = key.split(".")
    return read_metadata(metastore.msc.getTable(database, name).getParameters().get("metadata_location"))


def _rows(metastore, key: str) -> list[dict]:
    database, name = key.split(".")
    location = metastore.msc.getTable(database, name).getParameters().get("metadata_location")
    return sorted(StaticTable.from_metadata(location).scan().to_arrow().to_pylist(), key=lambda row: row["id"])


def _field_ids(metadata: dict) -> dict[str, int]:
    schema = next(s for s in metadata["schemas"] if s["schema-id"] == metadata["current-schema-id"])
    return {f["name"]: f["id"] for f in schema["fields"]}


def _append(metastore, key: str, rows: list[dict]) -> None:
    table = OtherWriter(metastore).load_table(key)
    table.append(pa.Table.from_pylist(rows, schema=table.schema().as_arrow()))


def test_an_iceberg_table_is_created_evolved_by_field_id_and_its_rows_read_as_before(tmp_path, metastore, fresh_db):
    db = fresh_db()
    key = f"{db}.clicks"
    project = write_project(tmp_path, _clicks(db, BEFORE, LAYOUT))
    created = plan_and_apply(project, metastore)
    assert [s.summary for s in created.steps] == [
        f"create Iceberg table {key} (5 columns, partitioned by (day(ts), bucket(16, id)), sorted by (id ASC NULLS FIRST))"]
    live = metastore.read((db,)).get(key)
    assert isinstance(live, Table) and live.format == "iceberg" and live.iceberg is not None
    assert [(c.name, c.type, c.comment) for c in live.columns] == [
        ("ts", "timestamp", None), ("id", "bigint", "Click id"), ("v", "int", None), ("code", "string", None),
        ("region", "string", None)]
    assert [str(f) for f in live.partition_spec] == ["day(ts)", "bucket(16, id)"]
    assert [str(t) for t in live.sort_order] == ["id ASC NULLS FIRST"]
    assert live.comment == "One row per click"
    assert live.properties == {"format-version": "2", "write.format.default": "parquet"}
    assert live.version == fingerprint(project_table(project, key))
    hms = metastore.msc.getTable(db, "clicks")
    assert (hms.getTableType(), hms.getParameters().get("table_type")) == ("EXTERNAL_TABLE", "ICEBERG")
    assert [c.getName() for c in hms.getSd().getCols()] == ["ts", "id", "v", "code", "region"]  # the mirror
    assert plan(project, metastore).is_empty

    day = datetime(2024, 1, 1, 12, tzinfo=UTC)
    _append(metastore, key, [{"ts": day.replace(day=d), "id": d, "v": 10 * d, "code": f"c{d}", "region": "eu"}
                             for d in (1, 2, 3)])
    before = _field_ids(_metadata(metastore, key))

    # Each place keeps a type the metastore's positional rule accepts on its mirror of the columns (the embedded
    # metastore keeps the rule on): channel comes in where code was.
    after = """\
          - {name: ts, type: timestamp}
          - {name: id, type: bigint, comment: Click id}
          - {name: val, type: bigint}
          - {name: channel, type: string, comment: Where the click came from}
          - {name: region, type: string}"""
    files = _clicks(db, after, "        partitioned_by: [month(ts), region]\n        sorted_by: [ts DESC NULLS LAST]")
    files["migrations/0001_clicks.yaml"] = f"""
        description: v is the value, and code goes
        changes:
          - rename_column: {{table: {key}, from: v, to: val}}
          - drop_column: {{table: {key}, column: code}}
        """
    project = write_project(tmp_path, files)
    hash_migrations(project)
    evolved = plan(project, metastore)
    [step] = evolved.steps
    assert step.kind == "alter_iceberg_table" and not step.blocked
    assert step.summary == (
        f"alter Iceberg table {key}: rename v to val (0001_clicks); drop code (0001_clicks); change type of val from "
        "int to bigint; add channel string after val; "
        "partition spec (day(ts), bucket(16, id)) -> (month(ts), region); sort order (id ASC NULLS FIRST) -> "
        "(ts DESC NULLS LAST)")
    assert step.hazards == ("drop code: its values stay in the data files, and no reader sees them",)
    assert "by field id: Iceberg changes its metadata only; no data file is rewritten and existing rows read as " \
           "before" in step.notes
    apply_plan(evolved, metastore)

    metadata = _metadata(metastore, key)
    ids = _field_ids(metadata)
    assert (ids["ts"], ids["val"], ids["id"], ids["region"]) == (before["ts"], before["v"], before["id"], before["region"])
    assert ids["channel"] > max(before.values())
    live = metastore.read((db,)).get(key)
    assert [(c.name, c.type) for c in live.columns] == [
        ("ts", "timestamp"), ("id", "bigint"), ("val", "bigint"), ("channel", "string"), ("region", "string")]
    assert [c.getName() for c in metastore.msc.getTable(db, "clicks").getSd().getCols()] == [
        "ts", "id", "val", "channel", "region"]
    assert [str(f) for f in live.partition_spec] == ["month(ts)", "region"]
    assert [str(t) for t in live.sort_order] == ["ts DESC NULLS LAST"]
    assert list(live.migrations) == ["0001_clicks"] and live.version == fingerprint(project_table(project, key))
    # What the plan said of existing rows: the renamed column keeps its values, the new one is empty.
    assert [(r["id"], r["val"], r["channel"], "code" in r) for r in _rows(metastore, key)] == [
        (1, 10, None, False), (2, 20, None, False), (3, 30, None, False)]
    assert plan(project, metastore).is_empty


def project_table(project, key: str) -> Table:
    table = desired_state(project).get(key)
    assert isinstance(table, Table)
    return table


def test_a_writer_that_changes_the_schema_after_the_plan_fails_the_step_before_anything_is_written(
        tmp_path, metastore, fresh_db):
    db = fresh_db()
    key = f"{db}.clicks"
    plan_and_apply(write_project(tmp_path, _clicks(db, BEFORE, LAYOUT)), metastore)
    project = write_project(tmp_path, _clicks(db, BEFORE + "\n          - {name: extra, type: string}", LAYOUT))
    planned = plan(project, metastore)
    version = metastore.read((db,)).get(key).version

    other = OtherWriter(metastore).load_table(key)
    with other.update_schema() as update:
        update.add_column("theirs", StringType())
    with pytest.raises(ApplyError) as failed:
        apply_plan(planned, metastore)
    assert isinstance(failed.value.__cause__, ConcurrentChange)
    assert "Iceberg metadata" in str(failed.value.__cause__)
    live = metastore.read((db,)).get(key)
    assert [c.name for c in live.columns] == ["ts", "id", "v", "code", "region", "theirs"]  # theirs kept, ours not
    assert live.version == version  # the claim was handed back


def test_rows_appended_after_the_plan_survive_its_commit(tmp_path, metastore, fresh_db):
    db = fresh_db()
    key = f"{db}.clicks"
    plan_and_apply(write_project(tmp_path, _clicks(db, BEFORE, LAYOUT)), metastore)
    project = write_project(tmp_path, _clicks(db, BEFORE + "\n          - {name: extra, type: string}", LAYOUT))
    planned = plan(project, metastore)
    _append(metastore, key, [{"ts": datetime(2024, 1, 1, tzinfo=UTC), "id": 1, "v": 1, "code": "a", "region": "eu"}])
    apply_plan(planned, metastore)
    assert [(r["id"], r["extra"]) for r in _rows(metastore, key)] == [(1, None)]
    assert plan(project, metastore).is_empty


def _appended_at_each_swap(monkeypatch, tmp_path, metastore, fresh_db, times: int):
    """db.clicks applied, a plan that adds a column to it, and another writer that appends a row between each of the
    first ``times`` commits' read and swap. Returns the key, the project, the plan and the metadata files written."""
    from schemaflow.catalog.hive import iceberg_commit

    key = f"{fresh_db()}.clicks"
    db = key.split(".")[0]
    plan_and_apply(write_project(tmp_path, _clicks(db, BEFORE, LAYOUT)), metastore)
    project = write_project(tmp_path, _clicks(db, BEFORE + "\n          - {name: extra, type: string}", LAYOUT))
    planned = plan(project, metastore)
    write, swaps = iceberg_commit.write_metadata, []

    def appended_meanwhile(metadata, location):
        write(metadata, location)
        swaps.append(location)
        if len(swaps) <= times:
            _append(metastore, key, [{"ts": datetime(2024, 1, 1, tzinfo=UTC), "id": len(swaps), "v": 1,
                                      "code": "a", "region": "eu"}])

    monkeypatch.setattr(iceberg_commit, "write_metadata", appended_meanwhile)
    monkeypatch.setattr(iceberg_commit, "_BACKOFF_SECONDS", 0.0)
    return key, project, planned, swaps


def test_a_commit_that_loses_the_swap_to_appends_is_made_again_on_them(tmp_path, metastore, fresh_db, monkeypatch):
    key, project, planned, swaps = _appended_at_each_swap(monkeypatch, tmp_path, metastore, fresh_db, times=2)
    apply_plan(planned, metastore)
    # The claim is a commit too: it lost twice, then landed; then the change, with its stamp, in one commit.
    assert len(swaps) == 2 + 2
    assert [(r["id"], r["extra"]) for r in _rows(metastore, key)] == [(1, None), (2, None)]
    assert not any(Path(location.removeprefix("file:")).exists() for location in swaps[:2])  # the losers' files
    assert plan(project, metastore).is_empty


def test_a_commit_that_keeps_losing_the_swap_stops_with_nothing_changed(tmp_path, metastore, fresh_db, monkeypatch):
    from schemaflow.catalog.hive import iceberg_commit

    key, project, planned, swaps = _appended_at_each_swap(monkeypatch, tmp_path, metastore, fresh_db, times=99)
    version = metastore.read((key.split(".")[0],)).get(key).version
    with pytest.raises(SchemaflowError, match="modified concurrently: its metadata_location is .*; nothing was applied"):
        apply_plan(planned, metastore)
    assert len(swaps) == iceberg_commit.RETRIES + 1  # the claim, tried five times
    live = metastore.read((key.split(".")[0],)).get(key)
    assert "extra" not in [c.name for c in live.columns] and live.version == version
    assert len(_rows(metastore, key)) == len(swaps)  # every append kept


def test_a_type_iceberg_cannot_promote_is_refused_at_plan_time_with_the_way_out(tmp_path, metastore, fresh_db):
    db = fresh_db()
    plan_and_apply(write_project(tmp_path, _clicks(db, BEFORE, LAYOUT)), metastore)
    project = write_project(tmp_path, _clicks(db, BEFORE.replace("{name: v, type: int}", "{name: v, type: string}"),
                                              LAYOUT))
    [step] = plan(project, metastore).steps
    assert step.blocked and step.blocked.startswith(
        "changing the type of v from int to string is not supported in place: Iceberg changes a column's type in "
        "place only from int to bigint")


def test_a_view_over_an_iceberg_table_is_checked_by_spark_and_created(tmp_path, metastore, fresh_db):
    db = fresh_db()
    files = _clicks(db, BEFORE, LAYOUT)
    files[f"schemas/{db}/daily.yaml"] = f"""
        view: {db}.daily
        sql: SELECT CAST(ts AS DATE) AS day, region, count(*) AS clicks FROM {db}.clicks GROUP BY 1, 2
        """
    created = plan_and_apply(write_project(tmp_path, files), metastore)
    assert [s.kind for s in created.steps] == ["create_table", "create_view"]
    view = metastore.read((db,)).get(f"{db}.daily")
    assert [(c.name, c.type) for c in view.columns] == [("day", "date"), ("region", "string"), ("clicks", "bigint")]
    # A function Spark does not know is refused by Spark's check, against stand-ins, before anything is written.
    files[f"schemas/{db}/daily.yaml"] = files[f"schemas/{db}/daily.yaml"].replace("count(*)", "no_such_fn(id)")
    [step] = plan(write_project(tmp_path, files), metastore).steps
    assert step.blocked and "no_such_fn" in step.blocked


def test_an_iceberg_table_made_elsewhere_is_imported_then_planned_and_its_drift_spelt_out(tmp_path, metastore,
                                                                                          fresh_db):
    from schemaflow.catalog.hive import iceberg_commit
    from schemaflow.model import Column, PartitionField, SortTerm
    from tests.inprocess import schemaflow

    db = fresh_db()
    key = f"{db}.events"
    properties = {"format-version": "2", "write.format.default": "parquet"}
    made = Table(db, "events", (Column("ts", "timestamp"), Column("id", "bigint", "Event id")), format="iceberg",
                 data_source=True, properties=properties,
                 partition_spec=(PartitionField("day", "ts"), PartitionField("bucket", "id", 4)),
                 sort_order=(SortTerm(PartitionField("identity", "id")),))
    iceberg_commit.create(metastore, made, properties)  # as another tool registers one: no stamp of schemaflow's
    other = OtherWriter(metastore)
    with other.load_table(key).update_schema() as update:
        update.add_column("kind", StringType(), doc="What happened")
    _append(metastore, key, [{"ts": datetime(2024, 1, 1, tzinfo=UTC), "id": 1, "kind": "open"}])
    (tmp_path / "schemaflow.yaml").write_text(f"databases: [{db}]\n")
    (tmp_path / "schemas").mkdir()
    project = str(tmp_path)
    before = schemaflow("--project", project, "plan")
    assert f"not managed: {key} (an Iceberg table); schemaflow leaves it alone" in before.said

    imported = schemaflow("--project", project, "import", "--database", db)
    assert imported.code == 0, imported.said
    assert (tmp_path / "schemas" / db / "events.yaml").read_text() == (
        f"table: {key}\n"
        "format: iceberg\n"
        "columns:\n"
        "  - {name: ts, type: timestamp}\n"
        "  - {name: id, type: bigint, comment: Event id}\n"
        "  - {name: kind, type: string, comment: What happened}\n"
        "partitioned_by: [day(ts), 'bucket(4, id)']\n"
        "sorted_by: [id ASC NULLS FIRST]\n"
        "properties: {format-version: '2', write.format.default: parquet}\n")
    planned = schemaflow("--project", project, "plan")
    assert planned.code == 0 and planned.out.startswith("No changes"), planned.said

    events = tmp_path / "schemas" / db / "events.yaml"
    events.write_text(events.read_text().replace("comment: What happened}\n",
                                                 "comment: What happened}\n  - {name: note, type: string}\n"))
    applied = schemaflow("--project", project, "apply", "--auto-approve")
    assert applied.code == 0, applied.said
    clean = schemaflow("--project", project, "drift")
    assert (clean.code, clean.out) == (0, "No drift: every object schemaflow applied is as it left it.\n")
    with other.load_table(key).update_schema() as update:
        update.add_column("theirs", StringType())
    drift = schemaflow("--project", project, "drift")
    assert drift.code == 2
    assert drift.out.splitlines()[0].startswith(f"{key}: columns changed since schemaflow applied it at ")
    assert drift.out.splitlines()[1] == (
        f"  column theirs string added: declare it in schemas/{db}/events.yaml ({{name: theirs, type: string}}), or "
        f"drop it with a migration (- drop_column: {{table: {key}, column: theirs}})")
    assert [r["kind"] for r in _rows(metastore, key)] == ["open"]

    # Another writer renames a column (its field id stays) and adds a partition field: drift speaks Iceberg.
    with other.load_table(key).update_schema() as update:
        update.rename_column("note", "remark")
    with other.load_table(key).update_spec() as spec:
        spec.add_identity("kind")
    lines = schemaflow("--project", project, "drift").out.splitlines()
    assert lines[0].startswith(f"{key}: columns, layout changed since schemaflow applied it at ")
    assert lines[1:] == [
        f"  column note renamed to remark (its Iceberg field id kept, so its values): declare it as remark in "
        f"schemas/{db}/events.yaml, or rename it back with a migration (- rename_column: {{table: {key}, from: remark, "
        "to: note})",
        f"  column theirs string added: declare it in schemas/{db}/events.yaml ({{name: theirs, type: string}}), or "
        f"drop it with a migration (- drop_column: {{table: {key}, column: theirs}})",
        "  partition spec: 'day(ts), bucket(4, id)' -> 'day(ts), bucket(4, id), kind': the next apply sets the "
        f"declared one again (for data written after it), or declare this one in schemas/{db}/events.yaml"]
    blocked = schemaflow("--project", project, "plan")
    assert blocked.code == 1
    assert f"column remark of {key} was note (the same Iceberg field id), and note is declared" in blocked.said
    assert f"- rename_column: {{table: {key}, from: remark, to: note}}" in blocked.said


def test_a_format_version_1_spec_evolves_with_removed_fields_void_in_their_place(tmp_path, metastore, fresh_db):
    db = fresh_db()
    key = f"{db}.clicks"
    v1 = _clicks(db, BEFORE, "        partitioned_by: [day(ts), bucket(4, id)]")
    v1[f"schemas/{db}/clicks.yaml"] = v1[f"schemas/{db}/clicks.yaml"].replace("format-version: '2'", "format-version: '1'")
    plan_and_apply(write_project(tmp_path, v1), metastore)
    day = datetime(2024, 1, 1, 12, tzinfo=UTC)
    rows = [{"ts": day.replace(day=d), "id": d, "v": d, "code": f"c{d}", "region": "eu"} for d in (1, 2)]
    _append(metastore, key, rows)
    v1[f"schemas/{db}/clicks.yaml"] = v1[f"schemas/{db}/clicks.yaml"].replace(
        "[day(ts), bucket(4, id)]", "[bucket(4, id), region]")
    project = write_project(tmp_path, v1)
    [step] = plan(project, metastore).steps
    assert not step.blocked and step.summary.endswith("partition spec (day(ts), bucket(4, id)) -> (bucket(4, id), region)")
    apply_plan(plan(project, metastore), metastore)

    metadata = _metadata(metastore, key)
    assert metadata["format-version"] == 1
    spec = next(s for s in metadata["partition-specs"] if s["spec-id"] == metadata["default-spec-id"])
    assert [(f["field-id"], f["name"], f["transform"]) for f in spec["fields"]] == [
        (1000, "ts_day", "void"), (1001, "id_bucket", "bucket[4]"), (1002, "region", "identity")]
    assert [str(f) for f in metastore.read((db,)).get(key).partition_spec] == ["bucket(4, id)", "region"]
    assert plan(project, metastore).is_empty
    more = {"ts": day.replace(day=3), "id": 3, "v": 3, "code": "c3", "region": "us"}
    _append(metastore, key, [more])  # written in the new spec
    assert _rows(metastore, key) == rows + [more]
