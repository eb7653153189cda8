"""Delta tables planned without a JVM and applied through delta-spark, end to end (issue 59, items 3 and 4): plans made
here as ``plan`` makes them (the metastore server read over Thrift, each Delta table's log by ``catalog.delta_log``),
applied by ``apply_plan`` with the Hive writer in the engine with delta-spark (``tests/delta_spark.py``: Spark 3.5.9,
delta-spark 3.3.2), every outcome read back through Spark (DESCRIBE, SELECT, DESCRIBE DETAIL), through delta-rs
(``deltalake``: schema, protocol, history) and from the metastore's entry, where the table's claim and version are
kept (``catalog.hive.delta_commit``).

One table goes through its life (create; add a column and comments; rename and drop by column mapping, the protocol
step with them; set and unset properties; a property removed alone; then nothing to plan); then the guard through apply: an outside writer's
commit between plan and apply, and two appliers of one saved plan.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from deltalake import DeltaTable

from schemaflow.catalog.hive.thrift_reader import ThriftReader
from schemaflow.claims import parse_claim
from schemaflow.model import VERSION_KEY, Catalog, Column, DropColumn, Migration, RenameColumn, Table
from schemaflow.plan.plan import Plan, PlanBuilder
from tests.delta_spark import DeltaSpark

pytestmark = [pytest.mark.remote, pytest.mark.delta_engine]

DB, OUTSIDE, TWICE = "delta_apply", "delta_outside", "delta_twice"  # a database per test: each plans all of its own
ORDERS = Table(DB, "orders", (Column("id", "bigint", "Order id"), Column("name", "string"), Column("gone", "string")),
               comment="Orders", format="delta", data_source=True, properties={"team": "data"})
MIGRATION = Migration("0001_orders", "", (RenameColumn(f"{DB}.orders", "name", "label"),
                                         DropColumn(f"{DB}.orders", "gone")))


@pytest.fixture(scope="module")
def engine(metastore_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DeltaSpark]:
    workdir = tmp_path_factory.mktemp("delta_apply")
    with DeltaSpark(metastore_server, workdir / "warehouse", workdir) as spark:
        for database in (DB, OUTSIDE, TWICE):
            spark.sql(f"CREATE DATABASE {database}")
        yield spark


def _plan(uri: str, table: Table, migrations: tuple[Migration, ...] = ()) -> Plan:
    """The plan of ``table``'s database holding ``table`` against the metastore server, made without a JVM, as the
    engine's release (3.5) takes it."""
    live = ThriftReader(uri).read((table.database,))
    desired = Catalog(databases=(table.database,), objects={table.key: table}, migrations=migrations)
    return PlanBuilder(desired, live, release=(3, 5)).build()


def _applied(engine: DeltaSpark, plan: Plan) -> str:
    answer = engine.apply(plan.to_json())
    assert "applied" in answer, answer
    progress: str = answer["applied"]
    return progress


def _entry(uri: str, name: str, database: str = DB) -> dict[str, Any]:
    [entry] = ThriftReader(uri).named_table_data(database, [name])
    return entry


def _location(engine: DeltaSpark, name: str, database: str = DB) -> str:
    [detail] = engine.sql(f"DESCRIBE DETAIL {database}.{name}")
    location: str = detail["location"].removeprefix("file:")
    return location


def _columns(engine: DeltaSpark, name: str, database: str = DB) -> list[tuple[str, str, str | None]]:
    columns = []
    for row in engine.sql(f"DESCRIBE TABLE {database}.{name}"):
        if not row["col_name"] or row["col_name"].startswith("#"):
            break
        columns.append((row["col_name"], row["data_type"], row["comment"]))
    return columns


def _protocol(engine: DeltaSpark, name: str) -> tuple[int, int]:
    [detail] = engine.sql(f"DESCRIBE DETAIL {DB}.{name}")
    return detail["minReaderVersion"], detail["minWriterVersion"]


def _stamped(uri: str, location: str, plan: Plan, name: str = "orders", database: str = DB) -> str:
    """The version the plan's last step stamped, found in the log and in the metastore's entry alike."""
    version = plan.steps[-1].stamp.set[VERSION_KEY] if plan.steps[-1].stamp else None
    assert version and parse_claim(version) is None
    assert DeltaTable(location).metadata().configuration[VERSION_KEY] == version
    assert _entry(uri, name, database)["parameters"][VERSION_KEY] == version
    return version


def test_a_delta_table_through_its_life_is_applied_and_read_back(engine: DeltaSpark, metastore_server: str) -> None:
    uri = metastore_server
    create = _plan(uri, ORDERS)
    assert [s.summary for s in create.steps] == [f"create Delta table {DB}.orders (3 columns)"]
    assert "done" in _applied(engine, create)
    location = _location(engine, "orders")
    assert _columns(engine, "orders") == [("id", "bigint", "Order id"), ("name", "string", None),
                                          ("gone", "string", None)]
    assert _protocol(engine, "orders") == (1, 2)
    _stamped(uri, location, create)
    # The CREATE carried the claim into the log's first commit; the stamp is a commit of its own after it.
    history = DeltaTable(location).history()
    assert [h["operation"] for h in reversed(history)] == ["CREATE TABLE", "SET TBLPROPERTIES"]
    # delta-spark wrote the table's comment into the metastore's entry, none of its properties: the version there is
    # schemaflow's own write.
    parameters = _entry(uri, "orders")["parameters"]
    assert parameters["comment"] == "Orders" and "team" not in parameters

    added = replace(ORDERS, columns=(*ORDERS.columns[:1], replace(ORDERS.columns[1], comment="Label"),
                                     ORDERS.columns[2], Column("extra", "int", "added")),
                    properties={"team": "data", "tier": "gold"})
    plan = _plan(uri, added)
    assert [s.kind for s in plan.steps] == ["alter_delta_table"]
    _applied(engine, plan)
    assert _columns(engine, "orders") == [("id", "bigint", "Order id"), ("name", "string", "Label"),
                                          ("gone", "string", None), ("extra", "int", "added")]
    _stamped(uri, location, plan)
    assert DeltaTable(location).metadata().configuration["tier"] == "gold"

    engine.sql(f"INSERT INTO {DB}.orders VALUES (1, 'one', 'x', 10)")
    mapped = replace(added, columns=(added.columns[0], replace(added.columns[1], name="label"), added.columns[3]),
                     properties={**added.properties, "delta.columnMapping.mode": "name"})
    plan = _plan(uri, mapped, migrations=(MIGRATION,))
    assert [s.kind for s in plan.steps] == ["delta_protocol", "alter_delta_table"]
    assert "column mapping" in plan.steps[0].hazards[0]
    _applied(engine, plan)
    assert _columns(engine, "orders") == [("id", "bigint", "Order id"), ("label", "string", "Label"),
                                          ("extra", "int", "added")]
    assert engine.sql(f"SELECT id, label, extra FROM {DB}.orders") == [{"id": 1, "label": "one", "extra": 10}]
    assert _protocol(engine, "orders") == (2, 5)
    delta_rs = DeltaTable(location)
    assert [f.name for f in delta_rs.schema().fields] == ["id", "label", "extra"]
    assert (delta_rs.protocol().min_reader_version, delta_rs.protocol().min_writer_version) == (2, 5)
    _stamped(uri, location, plan)

    final = replace(mapped, properties={"team": "analytics", "delta.columnMapping.mode": "name"})
    plan = _plan(uri, final, migrations=(MIGRATION,))
    _applied(engine, plan)
    configuration = DeltaTable(location).metadata().configuration
    assert configuration["team"] == "analytics" and "tier" not in configuration
    _stamped(uri, location, plan)

    # A property no longer declared, and nothing else: the stamp alone removes it from the log.
    final = replace(final, properties={"delta.columnMapping.mode": "name"})
    plan = _plan(uri, final, migrations=(MIGRATION,))
    assert [(s.kind, s.body) for s in plan.steps] == [("set_properties", ())], plan.steps
    _applied(engine, plan)
    assert "team" not in DeltaTable(location).metadata().configuration
    _stamped(uri, location, plan)

    assert _plan(uri, final, migrations=(MIGRATION,)).steps == ()
    # Each statement one commit on top of the one before it (none made again on top of another), each stamp last.
    history = list(reversed(DeltaTable(location).history()))
    assert [h["operation"] for h in history] == [
        "CREATE TABLE", "SET TBLPROPERTIES",
        "SET TBLPROPERTIES", "ADD COLUMNS", "CHANGE COLUMN", "SET TBLPROPERTIES",
        "WRITE",
        "SET TBLPROPERTIES", "RENAME COLUMN", "DROP COLUMNS", "SET TBLPROPERTIES",
        "SET TBLPROPERTIES", "UNSET TBLPROPERTIES", "SET TBLPROPERTIES",
        "UNSET TBLPROPERTIES", "SET TBLPROPERTIES"]
    assert [(h["version"], h.get("readVersion")) for h in history[1:]] == [(v, v - 1) for v in range(1, len(history))]


def _created_then_planned(engine: DeltaSpark, uri: str, database: str, name: str,
                          column: str) -> tuple[Table, str, str, Plan]:
    """``ORDERS`` as ``database.name``, created by apply; its location and version, and the plan that adds ``column``."""
    table = replace(ORDERS, database=database, name=name)
    _applied(engine, _plan(uri, table))
    version = _entry(uri, name, database)["parameters"][VERSION_KEY]
    return (table, _location(engine, name, database), version,
            _plan(uri, replace(table, columns=(*table.columns, Column(column, "string")))))


def test_an_outside_commit_between_plan_and_apply_is_a_concurrent_change_and_nothing_of_the_step_lands(
        engine: DeltaSpark, metastore_server: str) -> None:
    uri = metastore_server
    table, location, version, plan = _created_then_planned(engine, uri, OUTSIDE, "outside", "late")
    read = DeltaTable(location).version()
    engine.sql(f"INSERT INTO {OUTSIDE}.outside VALUES (7, 'seven', 'x')")

    answer = engine.apply(plan.to_json())
    failed = answer["failed"].splitlines()
    assert failed[0].startswith(f"step 1 failed (alter Delta table {OUTSIDE}.outside: add late string): {OUTSIDE}.outside: Delta "
                                "statement 1 of 2 failed, nothing of it applied: "), answer
    assert failed[0].endswith(f"was modified concurrently: its Delta log version is '{read + 1}', this run expected "
                              f"'{read}'"), answer
    assert failed[1:6] == ["landed (0):", "  none", "not applied (2):",
                           f"  1. ALTER TABLE `{OUTSIDE}`.`outside` ADD COLUMNS ( `late` string )",
                           f"  2. ALTER TABLE `{OUTSIDE}`.`outside` SET TBLPROPERTIES ("
                           + failed[5].split("SET TBLPROPERTIES (", 1)[1]]
    # Nothing of the step: the outside commit is the log's last, the schema as it was, the claim handed back.
    delta_rs = DeltaTable(location)
    assert delta_rs.version() == read + 1 and delta_rs.history(1)[0]["operation"] == "WRITE"
    assert [f.name for f in delta_rs.schema().fields] == ["id", "name", "gone"]
    assert [c[0] for c in _columns(engine, "outside", OUTSIDE)] == ["id", "name", "gone"]
    assert engine.sql(f"SELECT id FROM {OUTSIDE}.outside") == [{"id": 7}]
    assert _entry(uri, "outside", OUTSIDE)["parameters"][VERSION_KEY] == version
    # The next plan reads the table as it now is, and lands.
    plan = _plan(uri, replace(table, columns=(*table.columns, Column("late", "string"))))
    _applied(engine, plan)
    assert [f.name for f in DeltaTable(location).schema().fields] == ["id", "name", "gone", "late"]


def test_two_appliers_of_one_saved_plan_one_lands_the_other_is_a_concurrent_change(
        engine: DeltaSpark, metastore_server: str) -> None:
    uri = metastore_server
    _, location, version, saved = _created_then_planned(engine, uri, TWICE, "twice", "added")

    assert "applied" in engine.apply(saved.to_json())
    landed = DeltaTable(location).version()
    stamped = _stamped(uri, location, saved, "twice", TWICE)
    answer = engine.apply(saved.to_json())
    assert answer["failed"].startswith(
        f"{TWICE}.twice was modified concurrently: its schemaflow.version is {stamped!r}, this run expected {version!r}; "
        "nothing was applied"), answer
    assert DeltaTable(location).version() == landed
    assert [f.name for f in DeltaTable(location).schema().fields] == ["id", "name", "gone", "added"]
    assert _entry(uri, "twice", TWICE)["parameters"][VERSION_KEY] == stamped
