"""A project moved from a Hive metastore to an Iceberg REST catalog (``plan.moving``), on the real parts: Iceberg tables
with rows and a view in the embedded metastore of the test session, Iceberg's own REST catalog server
(``tests/rest_server.py``). The plan registers each table by its metadata file and creates the view; apply lands them
with the same snapshot and rows; the old entries stay until a step that forgets them, which is blocked unless allowed;
a commit through the old catalog since the plan, and a name taken between plan and apply, are refused."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table import StaticTable

from schemaflow.apply.executor import ApplyError, apply_plan
from schemaflow.catalog.live import Live
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import Table
from schemaflow.plan.kinds import StepKind
from schemaflow.project import Project
from schemaflow.workflow import check_moved, make_plan
from tests.iceberg_writer import OtherWriter
from tests.projects import plan_and_apply, write_project
from tests.rest_server import RestCatalogServer

# Run with the newest pyspark only in CI (.ci/spark_versions.py without --ci runs it on every release).
pytestmark = [pytest.mark.spark, pytest.mark.remote, pytest.mark.one_release]


def _schemas(db: str) -> dict[str, str]:
    return {
        f"schemas/{db}/clicks.yaml": f"""
            table: {db}.clicks
            format: iceberg
            columns:
              - {{name: id, type: bigint}}
              - {{name: v, type: int}}
            properties: {{format-version: '2'}}
            """,
        f"schemas/{db}/orders.yaml": f"""
            table: {db}.orders
            format: iceberg
            columns:
              - {{name: id, type: bigint}}
            properties: {{format-version: '2'}}
            """,
        f"schemas/{db}/big.yaml": f"""
            view: {db}.big
            sql: SELECT id, v FROM {db}.clicks WHERE v > 10
            """,
    }


def _moved(root: Path, db: str, server: RestCatalogServer, forget: str = "", **files: str) -> Project:
    settings = f"""
        metastore:
          type: iceberg_rest
          uri: {server.uri}
          moving_from:
            type: hive
            {forget}
        """
    return write_project(root, {**_schemas(db), "schemaflow.yaml": settings, **files})


def _plan(project: Project, metastore, allow_destructive: bool = False):  # noqa: ANN001, ANN202
    live = Live(project, source_connected=metastore)
    return live, make_plan(project, live, allow_destructive=allow_destructive)


def _plan_here(project: Project, metastore):  # noqa: ANN001, ANN202
    """The plan of a project moving to the test session's metastore."""
    live = Live(project, connected=metastore)
    return live, make_plan(project, live)


def _location(metastore, key: str) -> str:  # noqa: ANN001
    database, name = key.split(".")
    return str(metastore.msc.getTable(database, name).getParameters().get("metadata_location"))


def test_a_warehouse_moved_to_a_rest_catalog_keeps_its_snapshots_and_rows_and_forgets_its_old_entries_when_allowed(
        tmp_path: Path, metastore, fresh_db, rest_catalog_server: RestCatalogServer) -> None:  # noqa: ANN001
    db = fresh_db()
    plan_and_apply(write_project(tmp_path / "hive", _schemas(db)), metastore)
    for key, rows in ((f"{db}.clicks", [{"id": 1, "v": 5}, {"id": 2, "v": 20}, {"id": 3, "v": 30}]),
                      (f"{db}.orders", [{"id": 7}])):
        table = OtherWriter(metastore).load_table(key)
        table.append(pa.Table.from_pylist(rows, schema=table.schema().as_arrow()))
    old = {key: _location(metastore, key) for key in (f"{db}.clicks", f"{db}.orders")}
    snapshots = {key: StaticTable.from_metadata(location).metadata.current_snapshot_id for key, location in old.items()}

    # The clicks table gains a column in the same change: its commit follows its register.
    files = _schemas(db)
    files[f"schemas/{db}/clicks.yaml"] = files[f"schemas/{db}/clicks.yaml"].replace(
        "- {name: v, type: int}", "- {name: v, type: int}\n              - {name: note, type: string}")
    project = _moved(tmp_path / "rest", db, rest_catalog_server, **files)
    live, planned = _plan(project, metastore)
    assert [(s.kind, s.object) for s in planned.steps] == [
        (StepKind.CREATE_DATABASE, db), (StepKind.REGISTER_TABLE, f"{db}.clicks"),
        (StepKind.ALTER_ICEBERG_TABLE, f"{db}.clicks"), (StepKind.REGISTER_TABLE, f"{db}.orders"),
        (StepKind.CREATE_VIEW, f"{db}.big")]
    register = planned.steps[1]
    assert register.body[0].metadata_location == old[f"{db}.clicks"]  # type: ignore[union-attr]
    assert "a commit through the metastore moved from (metastore.moving_from.type hive) after it is not seen here" \
        in register.hazards[0]
    assert any("3 moved objects keep their entries there" in w for w in planned.warnings)
    assert not planned.blocked
    apply_plan(planned, live.writer())

    rest = RestCatalog("check", uri=rest_catalog_server.uri)
    for key in old:
        moved = rest.load_table(key)
        assert moved.metadata.current_snapshot_id == snapshots[key]  # the same history: no file copied
        assert moved.metadata.location == StaticTable.from_metadata(old[key]).metadata.location
    clicks = rest.load_table(f"{db}.clicks")
    assert [f.name for f in clicks.schema().fields] == ["id", "v", "note"]
    assert sorted((r["id"], r["v"], r["note"]) for r in clicks.scan().to_arrow().to_pylist()) == [
        (1, 5, None), (2, 20, None), (3, 30, None)]
    assert rest.load_table(f"{db}.orders").scan().to_arrow().to_pylist() == [{"id": 7}]
    assert rest.view_exists((db, "big"))
    # The old entries stay, as they were: the Hive metastore still names the metadata files it named.
    assert {key: _location(metastore, key) for key in old} == old
    assert metastore.msc.tableExists(db, "big")

    live, again = _plan(project, metastore)
    assert again.is_empty, [s.summary for s in again.steps]

    # Asked to forget: blocked unless allowed; allowed, the old entries go and the moved tables read as before.
    project = _moved(tmp_path / "rest", db, rest_catalog_server, forget="forget: true", **files)
    live, forgetting = _plan(project, metastore)
    assert [(s.kind, s.object) for s in forgetting.steps] == [
        (StepKind.FORGET_ENTRY, f"{db}.big"), (StepKind.FORGET_ENTRY, f"{db}.clicks"),
        (StepKind.FORGET_ENTRY, f"{db}.orders"), (StepKind.CHANGE_SETTINGS, "schemaflow.yaml")]
    assert all(s.blocked == "destructive: run with --allow-destructive to allow it" for s in forgetting.steps[:3])
    assert forgetting.steps[3].values == ("metastore.moving_from.forget: (not set) -> true",)
    assert forgetting.steps[3].hazards == ("forgets, in the catalog moved from, the entries of the objects moved "
                                           "(destructive steps, with --allow-destructive)",)
    live, allowed = _plan(project, metastore, allow_destructive=True)
    apply_plan(allowed, live.writer(), source=live.source_writer())
    assert [metastore.msc.tableExists(db, name) for name in ("big", "clicks", "orders")] == [False, False, False]
    assert sorted(r["id"] for r in rest.load_table(f"{db}.clicks").scan().to_arrow().to_pylist()) == [1, 2, 3]
    assert _plan(project, metastore)[1].is_empty


def test_a_name_taken_in_the_new_catalog_between_plan_and_apply_is_refused_as_a_concurrent_change(
        tmp_path: Path, metastore, fresh_db, rest_catalog_server: RestCatalogServer) -> None:  # noqa: ANN001
    db = fresh_db()
    schemas = {k: v for k, v in _schemas(db).items() if "orders" in k}
    plan_and_apply(write_project(tmp_path / "hive", schemas), metastore)
    project = write_project(tmp_path / "rest", {**schemas, "schemaflow.yaml": f"""
        metastore:
          type: iceberg_rest
          uri: {rest_catalog_server.uri}
          moving_from: {{type: hive}}
        """})
    live, planned = _plan(project, metastore)
    assert [s.kind for s in planned.steps] == [StepKind.CREATE_DATABASE, StepKind.REGISTER_TABLE]
    # A commit through the old catalog since the plan: apply refuses before anything is claimed or registered.
    table = OtherWriter(metastore).load_table(f"{db}.orders")
    table.append(pa.Table.from_pylist([{"id": 1}], schema=table.schema().as_arrow()))
    with pytest.raises(SchemaflowError) as refused:
        check_moved(planned, live)
    assert str(refused.value).startswith(f"{db}.orders: ") and "holds another metadata file than the plan registers" \
        in str(refused.value)
    live, planned = _plan(project, metastore)
    check_moved(planned, live)
    other = RestCatalog("other", uri=rest_catalog_server.uri)
    other.create_namespace(db)
    other.create_table((db, "orders"), pa.schema([pa.field("x", pa.string())]))
    with pytest.raises(ApplyError) as caught:
        apply_plan(planned, live.writer())
    assert isinstance(caught.value.__cause__, ConcurrentChange)
    assert f"{db}.orders was modified concurrently" in str(caught.value.__cause__)
    assert [f.name for f in other.load_table((db, "orders")).schema().fields] == ["x"]  # the other writer's, untouched
    held = live.reader.read((db,)).get(f"{db}.orders")
    assert isinstance(held, Table)


def test_a_warehouse_moved_from_a_rest_catalog_to_the_metastore_is_registered_there_with_its_snapshots_and_rows(
        tmp_path: Path, metastore, fresh_db, rest_catalog_server: RestCatalogServer) -> None:  # noqa: ANN001
    db = fresh_db()
    tables = {k: v for k, v in _schemas(db).items() if "big" not in k}  # a view over Iceberg needs Iceberg's runtime
    rest_settings = f"metastore: {{type: iceberg_rest, uri: '{rest_catalog_server.uri}'}}"
    there = write_project(tmp_path / "rest", {**tables, "schemaflow.yaml": rest_settings})
    rest_live = Live(there)
    apply_plan(make_plan(there, rest_live), rest_live.writer())
    rest = RestCatalog("check", uri=rest_catalog_server.uri)
    for key, rows in ((f"{db}.clicks", [{"id": 1, "v": 5}, {"id": 2, "v": 20}]), (f"{db}.orders", [{"id": 7}])):
        table = rest.load_table(key)
        table.append(pa.Table.from_pylist(rows, schema=table.schema().as_arrow()))
    held = {key: rest.load_table(key).metadata_location for key in (f"{db}.clicks", f"{db}.orders")}

    project = write_project(tmp_path / "hive", {**tables, "schemaflow.yaml": f"""
        metastore:
          type: hive
          moving_from: {{type: iceberg_rest, uri: '{rest_catalog_server.uri}'}}
        """})
    live, planned = _plan_here(project, metastore)
    assert [(s.kind, s.object) for s in planned.steps] == [
        (StepKind.REGISTER_TABLE, f"{db}.clicks"), (StepKind.REGISTER_TABLE, f"{db}.orders")]
    assert [s.body[0].metadata_location for s in planned.steps] == list(held.values())  # type: ignore[union-attr]
    assert not planned.blocked
    apply_plan(planned, live.writer())

    # The metastore adopted the files the REST catalog names (the step's stamp is the next commit on top of them):
    # Iceberg's Hive catalog reads the same snapshots and rows.
    for key, location in held.items():
        database, name = key.split(".")
        assert metastore.msc.getTable(database, name).getParameters().get("previous_metadata_location") == location
    for key in held:
        moved = OtherWriter(metastore).load_table(key)
        assert moved.metadata.current_snapshot_id == rest.load_table(key).metadata.current_snapshot_id
    assert sorted((r["id"], r["v"]) for r in OtherWriter(metastore).load_table(f"{db}.clicks").scan().to_arrow()
                  .to_pylist()) == [(1, 5), (2, 20)]
    assert OtherWriter(metastore).load_table(f"{db}.orders").scan().to_arrow().to_pylist() == [{"id": 7}]
    read = live.reader.read((db,)).get(f"{db}.clicks")
    assert isinstance(read, Table) and [c.name for c in read.columns] == ["id", "v"]
    assert _plan_here(project, metastore)[1].is_empty

    # A name taken in the metastore between plan and apply: a concurrent change, the other table untouched.
    other_db = fresh_db()
    schemas = {k.replace(db, other_db): v.replace(db, other_db) for k, v in tables.items() if "orders" in k}
    there = write_project(tmp_path / "rest2", {**schemas, "schemaflow.yaml": rest_settings})
    rest_live = Live(there)
    apply_plan(make_plan(there, rest_live), rest_live.writer())
    project = write_project(tmp_path / "hive2", {**schemas, "schemaflow.yaml": f"""
        metastore:
          type: hive
          moving_from: {{type: iceberg_rest, uri: '{rest_catalog_server.uri}'}}
        """})
    live, planned = _plan_here(project, metastore)
    metastore.spark.sql(f"CREATE TABLE `{other_db}`.orders (x string) USING parquet")
    with pytest.raises(ApplyError) as caught:
        apply_plan(planned, live.writer())
    assert isinstance(caught.value.__cause__, ConcurrentChange)
    assert [c.name for c in metastore.spark.table(f"`{other_db}`.orders").schema] == ["x"]
