"""Delta tables planned without a JVM and applied through delta-spark, end to end (issue 59, items 3 and 4): plans made
here as ``plan`` makes them (the metastore server read over Thrift, each Delta table's log by ``catalog.delta_log``),
applied by ``apply_plan`` with the Hive writer in the engine with delta-spark (``tests/delta_spark.py``: Spark 3.5.9,
delta-spark 3.3.2), every outcome read back through Spark (DESCRIBE, SELECT, DESCRIBE DETAIL), through delta-rs
(``deltalake``: schema, protocol, history) and from the metastore's entry, where the table's claim and version are
kept (``catalog.hive.delta_commit``).

One table goes through its life (create; add a column and comments; rename and drop by column mapping, the protocol
step with them; set and unset properties; a property removed alone; then nothing to plan); then the guard through apply: an outside writer's
commit between plan and apply, two appliers of one saved plan, an apply killed (SIGKILL, in a process of its own on
the engine's JVM: ``SparkEngine.attached``) between the statements of a Delta step and one killed between a CREATE and
its entry, each finished by the next, and two appliers of two plans started at the same instant, round after round.

What Delta cannot change in place is rewritten (``plan.delta``): a table holding rows given other partition columns
and a type Delta 3.3 does not widen, then another type, then restored, each read back through Spark and delta-rs with
the backup's old rows; an outside commit between plan and rewrite, commits during the copy (a property, a row), and a
rewrite killed after its copy and again between its renames.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
from deltalake import DeltaTable

from schemaflow.catalog.hive.thrift_reader import ThriftReader
from schemaflow.claims import STOPPED, parse_claim, standing
from schemaflow.model import VERSION_KEY, Catalog, Column, DropColumn, Migration, RenameColumn, Table
from schemaflow.plan.backups import NO_BACKUP_DROPS, BackupDrops
from schemaflow.plan.plan import Plan, PlanBuilder
from schemaflow.plan.restore import restore_plan
from schemaflow.plan.steps import DeltaAlter
from schemaflow.workflow import check_claims
from tests.delta_spark import DeltaSpark

pytestmark = [pytest.mark.remote, pytest.mark.delta_engine]

# A database per test: each plans all of its own.
DB, OUTSIDE, TWICE = "delta_apply", "delta_outside", "delta_twice"
KILLED, BORN, RACED = "delta_killed", "delta_born", "delta_raced"
REWRITTEN, RACED_REWRITE, WRITTEN_DURING = "delta_rewritten", "delta_raced_rewrite", "delta_written_during"
KILLED_REWRITE = "delta_killed_rewrite"
# Rounds of two appliers started at once: at least ROUNDS, more (up to MAX_ROUNDS) until each of the two has won one.
ROUNDS, MAX_ROUNDS = 4, 16
ORDERS = Table(DB, "orders", (Column("id", "bigint", "Order id"), Column("name", "string"), Column("gone", "string")),
               comment="Orders", format="delta", data_source=True, properties={"team": "data"})
MIGRATION = Migration("0001_orders", "", (RenameColumn(f"{DB}.orders", "name", "label"),
                                         DropColumn(f"{DB}.orders", "gone")))


@pytest.fixture(scope="module")
def engine(delta_spark: DeltaSpark) -> DeltaSpark:
    for database in (DB, OUTSIDE, TWICE, KILLED, BORN, RACED, REWRITTEN, RACED_REWRITE, WRITTEN_DURING, KILLED_REWRITE):
        delta_spark.sql(f"CREATE DATABASE {database}")
    return delta_spark


def _plan(uri: str, table: Table, migrations: tuple[Migration, ...] = (), allow_destructive: bool = False,
          drop_backups: BackupDrops = NO_BACKUP_DROPS) -> Plan:
    """The plan of ``table``'s database holding ``table`` against the metastore server, made without a JVM, as the
    engine's release (3.5) takes it (with the leave ``allow_destructive`` and ``drop_backups`` give)."""
    live = ThriftReader(uri).read((table.database,))
    desired = Catalog(databases=(table.database,), objects={table.key: table}, migrations=migrations)
    return PlanBuilder(desired, live, release=(3, 5), allow_destructive=allow_destructive,
                       drop_backups=drop_backups).build()


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


def _paused_at(engine: DeltaSpark, plan: Plan, point: str) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """Apply ``plan`` in a process of its own on the engine's JVM, paused where its writer first reports progress
    holding ``point``: the process, and what it answered there."""
    applier = engine.attached("attach", point)
    assert applier.stdin is not None
    applier.stdin.write(json.dumps(plan.to_json()) + "\n")
    applier.stdin.flush()
    return applier, _next_answer(engine, applier, point)


def _next_answer(engine: DeltaSpark, applier: subprocess.Popen[str], point: str) -> dict[str, Any]:
    """The next answer of an applier started by ``_paused_at``: paused again at ``point``, or its outcome."""
    assert applier.stdout is not None
    ready, _, _ = select.select([applier.stdout], [], [], engine.timeout)
    line = applier.stdout.readline() if ready else ""
    assert line, (f"the applier ended or hung before {point!r}; its log ({engine.log}):\n"
                  f"{engine.log.read_text()[-6000:]}")
    answer: dict[str, Any] = json.loads(line)
    return answer


def _killed_at(engine: DeltaSpark, plan: Plan, point: str) -> tuple[int, str]:
    """Apply ``plan`` in a process of its own on the engine's JVM and kill it (SIGKILL: nothing of it runs after) where
    its writer first reports progress holding ``point``; the killed process's id and that report."""
    applier, paused = _paused_at(engine, plan, point)
    assert "paused" in paused, paused
    os.kill(applier.pid, signal.SIGKILL)
    assert applier.wait() == -signal.SIGKILL
    pid: int = paused["pid"]
    report: str = paused["paused"]
    return pid, report


def _history_since(location: str, version: int) -> list[tuple[str, int, int | None]]:
    """Each commit after ``version``, oldest first: its operation, version and the version it read."""
    return [(h["operation"], h["version"], h.get("readVersion"))
            for h in reversed(DeltaTable(location).history()) if h["version"] > version]


def test_an_apply_killed_between_the_statements_of_a_delta_step_is_finished_by_the_next_run(
        engine: DeltaSpark, metastore_server: str) -> None:
    uri = metastore_server
    table, location, version, _ = _created_then_planned(engine, uri, KILLED, "killed", "unused")
    desired = replace(table, columns=(table.columns[0], replace(table.columns[1], comment="Label"), table.columns[2],
                                      Column("late", "string")))
    plan = _plan(uri, desired)
    [step] = plan.steps
    [action] = step.body
    assert isinstance(action, DeltaAlter) and (action.add, action.comments) == ((Column("late", "string"),),
                                                                               (desired.columns[1],))
    read = DeltaTable(location).version()

    # Killed once the step's first statement (ADD COLUMNS) is in the log: the comment and the stamp are not.
    pid, report = _killed_at(engine, plan, "Delta statement 1 of")
    assert report == f"{KILLED}.killed: Delta statement 1 of 3 committed as log version {read + 1}"
    assert _history_since(location, read) == [("ADD COLUMNS", read + 1, read)]
    # Its claim stays in the metastore's entry, its process gone; the log still holds the last stamp.
    claim = parse_claim(_entry(uri, "killed", KILLED)["parameters"][VERSION_KEY])
    assert claim is not None and claim.pid == pid and standing(claim) == STOPPED
    assert DeltaTable(location).metadata().configuration[VERSION_KEY] == version

    # The next plan reads the table as the log now is: the column that landed is not added again; it takes the claim
    # over (its guard the claim) and finishes on top of the version the killed run left.
    replan = _plan(uri, desired)
    assert f"{KILLED}.killed: left half-done by {claim.describe()}; this plan finishes it" in replan.warnings
    assert replan.guards == {f"{KILLED}.killed": claim.token}
    [step] = replan.steps
    [action] = step.body
    assert isinstance(action, DeltaAlter)
    assert (action.log_version, action.add, action.comments) == (read + 1, (), (desired.columns[1],))
    check_claims(replan)  # what apply checks first: a stopped run's claim is taken over
    _applied(engine, replan)

    assert _columns(engine, "killed", KILLED) == [("id", "bigint", "Order id"), ("name", "string", "Label"),
                                                  ("gone", "string", None), ("late", "string", None)]
    # Each statement once, each on top of the one before; the stamp last, in the log and in the entry.
    assert _history_since(location, read) == [("ADD COLUMNS", read + 1, read), ("CHANGE COLUMN", read + 2, read + 1),
                                              ("SET TBLPROPERTIES", read + 3, read + 2)]
    _stamped(uri, location, replan, "killed", KILLED)
    assert _plan(uri, desired).steps == ()


def test_two_appliers_of_two_plans_started_at_once_one_lands_the_other_is_refused_before_the_log(
        engine: DeltaSpark, metastore_server: str) -> None:
    uri = metastore_server
    table, location, _, _ = _created_then_planned(engine, uri, RACED, "raced", "unused")
    won: Counter[int] = Counter()
    for round_ in range(MAX_ROUNDS):
        if round_ >= ROUNDS and len(won) == 2:
            break
        plans = [_plan(uri, replace(table, columns=(*table.columns, Column(f"{side}{round_}", "string"))))
                 for side in ("a", "b")]
        read = DeltaTable(location).version()
        before = _entry(uri, "raced", RACED)["parameters"][VERSION_KEY]
        answers = engine.together(*({"apply": plan.to_json()} for plan in plans))

        [winner] = [i for i, answer in enumerate(answers) if "applied" in answer]
        loser = answers[1 - winner]
        won[winner] += 1
        # Refused at its claim of the entry, before anything reached the log: nothing of it applied.
        assert loser["failed"].startswith(f"{RACED}.raced was modified concurrently: its schemaflow.version is "), loser
        assert f", this run expected {before!r}; nothing was applied" in loser["failed"], loser
        assert loser["progress"] == "Claiming the 1 object it changes ... FAILED\n", loser
        # The log holds the winner's step alone: its statement, then its stamp.
        assert _history_since(location, read) == [("ADD COLUMNS", read + 1, read),
                                                  ("SET TBLPROPERTIES", read + 2, read + 1)]
        table = replace(table, columns=(*table.columns, Column(f"{'ab'[winner]}{round_}", "string")))
        assert [f.name for f in DeltaTable(location).schema().fields] == [c.name for c in table.columns]
        _stamped(uri, location, plans[winner], "raced", RACED)
    # Which of two appliers started at the same instant claims first is the scheduler's: each has (3 and 3 of 6 here;
    # one alone winning 16 rounds in a row would be 1 in 32,768 if either wins half the time).
    assert set(won) == {0, 1}, won


def test_an_apply_killed_between_a_delta_create_and_its_entry_leaves_its_claim_in_the_log_which_the_next_run_takes_over(
        engine: DeltaSpark, metastore_server: str) -> None:
    uri = metastore_server
    table = replace(ORDERS, database=BORN, name="born")
    pid, report = _killed_at(engine, _plan(uri, table), "created as Delta log version 0")
    assert report == f"{BORN}.born: created as Delta log version 0"
    # The CREATE carried the claim into the log; the entry holds none of schemaflow's keys yet.
    location = _location(engine, "born", BORN)
    claim = parse_claim(DeltaTable(location).metadata().configuration[VERSION_KEY])
    assert claim is not None and claim.pid == pid and standing(claim) == STOPPED
    assert VERSION_KEY not in _entry(uri, "born", BORN)["parameters"]

    # The claim in the log is the table's version: the next plan finishes it (its stamp), guarded by that claim.
    replan = _plan(uri, table)
    assert replan.warnings == (f"{BORN}.born: left half-done by {claim.describe()}; this plan finishes it",)
    assert replan.guards == {f"{BORN}.born": claim.token}
    assert [s.summary for s in replan.steps] == [f"record schemaflow.version on {BORN}.born"]
    check_claims(replan)
    _applied(engine, replan)
    assert _history_since(location, 0) == [("SET TBLPROPERTIES", 1, 0)]
    _stamped(uri, location, replan, "born", BORN)
    assert _plan(uri, table).steps == ()


# A Delta table holding rows, partitioned by ds; rewritten as partitioned by note, qty int -> bigint (which Delta 3.3
# on Spark 3.5 does not widen in place), then qty bigint -> string.
EVENTS = Table(REWRITTEN, "events", (Column("id", "bigint"), Column("qty", "int"), Column("note", "string")),
               (Column("ds", "string"),), comment="Events", format="delta", data_source=True,
               properties={"team": "data"})
EVENT_ROWS = [(1, 10, "a", "2026-01-01"), (2, 20, "b", "2026-01-02"), (3, None, "b", "2026-01-02")]


def _rows(engine: DeltaSpark, key: str) -> list[tuple[Any, ...]]:
    return [(row["id"], row["qty"], row["note"], row["ds"])
            for row in engine.sql(f"SELECT id, qty, note, ds FROM {key} ORDER BY id")]


def _lake_rows(location: str) -> list[tuple[Any, ...]]:
    """The rows as deltalake (delta-rs) reads them, by id."""
    rows = DeltaTable(location).to_pyarrow_table(columns=["id", "qty", "note", "ds"]).to_pylist()
    return sorted(((row["id"], row["qty"], row["note"], row["ds"]) for row in rows), key=lambda row: row[0])


def _lake_shape(location: str) -> tuple[list[tuple[str, str]], list[str]]:
    """A Delta table's columns (name, type) and partition columns, as deltalake reads them from its log."""
    delta_rs = DeltaTable(location)
    return ([(f.name, str(f.type.type)) for f in delta_rs.schema().fields],
            list(delta_rs.metadata().partition_columns))


def test_what_delta_cannot_change_in_place_is_rewritten_through_delta_spark_with_the_old_table_kept(
        engine: DeltaSpark, metastore_server: str) -> None:
    uri = metastore_server
    _applied(engine, _plan(uri, EVENTS))
    engine.sql(f"INSERT INTO {EVENTS.key} (id, qty, note, ds) VALUES " + ", ".join(
        f"({i}, {'NULL' if q is None else q}, '{n}', '{d}')" for i, q, n, d in EVENT_ROWS))
    location = _location(engine, "events", REWRITTEN)
    read = DeltaTable(location).version()
    old_id = DeltaTable(location).metadata().id

    desired = replace(EVENTS, columns=(Column("id", "bigint"), Column("qty", "bigint"), Column("ds", "string")),
                      partition_columns=(Column("note", "string"),))
    assert _plan(uri, desired).blocked  # a rewrite runs only when allowed
    plan = _plan(uri, desired, allow_destructive=True)
    [step] = plan.steps
    assert step.summary == (f"rewrite table {EVENTS.key}: partition columns (ds) -> (note); type of qty int -> bigint, "
                            "which the Delta release Spark 3.5 runs does not widen in place (Delta 4 on Spark 4 widens "
                            "it)")
    assert f"on top of Delta log version {read} of table {old_id}" in "\n".join(step.notes)
    assert any("is a new Delta table from the cut-over on" in h for h in step.hazards)
    assert "done" in _applied(engine, plan)

    # Through Spark (delta-spark): the new definition, the rows with qty as bigint.
    assert _columns(engine, "events", REWRITTEN) == [("id", "bigint", None), ("qty", "bigint", None),
                                                     ("ds", "string", None), ("note", "string", None)]
    [detail] = engine.sql(f"DESCRIBE DETAIL {EVENTS.key}")
    assert detail["partitionColumns"] == ["note"] and detail["location"].removeprefix("file:") == location
    assert _rows(engine, EVENTS.key) == EVENT_ROWS
    # Through deltalake, from the same folder: another table (its own id and log), its schema, partitions and rows.
    assert DeltaTable(location).metadata().id != old_id
    assert _lake_shape(location) == ([("id", "long"), ("qty", "long"), ("ds", "string"), ("note", "string")],
                                     ["note"])
    assert _lake_rows(location) == EVENT_ROWS
    assert DeltaTable(location).metadata().configuration["team"] == "data"
    _stamped(uri, location, plan, "events", REWRITTEN)
    # The backup holds the old table: its definition, rows and history, in its own folder.
    backup = _location(engine, "events_backup_", REWRITTEN)
    assert backup != location
    assert _lake_shape(backup) == ([("id", "long"), ("qty", "integer"), ("note", "string"), ("ds", "string")], ["ds"])
    assert _lake_rows(backup) == EVENT_ROWS and DeltaTable(backup).metadata().id == old_id
    assert _rows(engine, f"{REWRITTEN}.events_backup_") == EVENT_ROWS
    assert _plan(uri, desired).steps == ()

    # Another type no Delta widens: a second rewrite, the first one's backup dropped first (a plan allowed to).
    text = replace(desired, columns=(desired.columns[0], Column("qty", "string"), desired.columns[2]))
    plan = _plan(uri, text, allow_destructive=True, drop_backups=BackupDrops(copies=True))
    assert [s.kind for s in plan.steps] == ["drop_table", "rewrite_table"], plan.steps
    _applied(engine, plan)
    assert _lake_shape(location)[0][1] == ("qty", "string")
    assert _lake_rows(location) == [(i, None if q is None else str(q), n, d) for i, q, n, d in EVENT_ROWS]
    assert _lake_shape(_location(engine, "events_backup_", REWRITTEN))[0][1] == ("qty", "long")
    assert _plan(uri, text).steps == ()

    # The backup swapped back in, no row copied: the table as the first rewrite left it, under its name and folder.
    restore = restore_plan(ThriftReader(uri).read((REWRITTEN,)), EVENTS.key)
    _applied(engine, restore)
    assert _lake_shape(location)[0][1] == ("qty", "long") and _lake_rows(location) == EVENT_ROWS
    assert _rows(engine, EVENTS.key) == EVENT_ROWS
    _stamped(uri, location, restore, "events", REWRITTEN)
    assert _lake_shape(_location(engine, "events_backup_", REWRITTEN))[0][1] == ("qty", "string")


def test_an_outside_commit_between_plan_and_rewrite_stops_it_before_anything_is_copied(
        engine: DeltaSpark, metastore_server: str) -> None:
    uri = metastore_server
    table = replace(EVENTS, database=RACED_REWRITE)
    _applied(engine, _plan(uri, table))
    location = _location(engine, "events", RACED_REWRITE)
    plan = _plan(uri, replace(table, partition_columns=(), columns=(*table.columns, Column("ds", "string"))),
                 allow_destructive=True)
    assert [s.kind for s in plan.steps] == ["rewrite_table"]
    read = DeltaTable(location).version()
    engine.sql(f"INSERT INTO {table.key} VALUES (9, 90, 'late', '2026-02-01')")

    answer = engine.apply(plan.to_json())
    assert f"its Delta log version is '{read + 1}', this run expected '{read}'" in answer["failed"], answer
    # Nothing copied, nothing renamed: no staging table, the table as the outside writer left it.
    assert [row["tableName"] for row in engine.sql(f"SHOW TABLES IN {RACED_REWRITE}")] == ["events"]
    assert _lake_shape(location)[1] == ["ds"] and _lake_rows(location) == [(9, 90, "late", "2026-02-01")]


def _one_row_and_qty_as_text(engine: DeltaSpark, uri: str, database: str) -> tuple[Table, str, Table]:
    """The events table created in ``database`` holding one row, its folder, and the table with ``qty`` a string (a
    change Delta makes by a rewrite)."""
    table = replace(EVENTS, database=database)
    _applied(engine, _plan(uri, table))
    engine.sql(f"INSERT INTO {table.key} VALUES (1, 10, 'a', '2026-01-01')")
    text = replace(table, columns=(table.columns[0], Column("qty", "string"), table.columns[2]))
    return table, _location(engine, "events", database), text


def test_a_commit_during_the_copy_is_copied_again_before_the_cut_over(engine: DeltaSpark, metastore_server: str) -> None:
    uri = metastore_server
    table, location, text = _one_row_and_qty_as_text(engine, uri, WRITTEN_DURING)
    plan = _plan(uri, text, allow_destructive=True)
    assert [s.kind for s in plan.steps] == ["rewrite_table"]

    # Paused each time its copy is verified and journaled, before its next look at the table, where an outside writer
    # commits: a property (in the log alone, no file written), then a row. Each look finds the log moved on, and the
    # whole table is copied again (the copy was in slices); then a look finds nothing new, and it cuts over.
    point = f"{table.key}: the whole table copied"
    applier, paused = _paused_at(engine, plan, point)
    assert applier.stdin is not None
    for outside in (f"ALTER TABLE {table.key} SET TBLPROPERTIES ('steward' = 'outside')",
                    f"INSERT INTO {table.key} VALUES (2, 20, 'b', '2026-01-02')", None):
        assert "paused" in paused, paused
        if outside:
            engine.sql(outside)
        applier.stdin.write("\n")
        applier.stdin.flush()
        paused = _next_answer(engine, applier, point)
    outcome = paused
    assert "applied" in outcome, outcome
    assert applier.wait() == 0
    assert _lake_rows(location) == [(1, "10", "a", "2026-01-01"), (2, "20", "b", "2026-01-02")]
    assert _lake_rows(_location(engine, "events_backup_", WRITTEN_DURING)) == [(1, 10, "a", "2026-01-01"),
                                                                                (2, 20, "b", "2026-01-02")]
    _stamped(uri, location, plan, "events", WRITTEN_DURING)


def test_a_rewrite_killed_after_its_copy_and_again_between_its_renames_is_finished_by_the_next_runs(
        engine: DeltaSpark, metastore_server: str) -> None:
    uri = metastore_server
    table, location, text = _one_row_and_qty_as_text(engine, uri, KILLED_REWRITE)

    # Killed once its copy is verified and journaled: the copy stays, claimed by the killed run, the table untouched.
    _killed_at(engine, _plan(uri, text, allow_destructive=True), f"{table.key}: the whole table copied")
    staging = _entry(uri, "events_rewrite_", KILLED_REWRITE)["parameters"]
    assert staging["schemaflow.rewrite_of"] == table.key and parse_claim(staging[VERSION_KEY]) is not None
    assert _lake_shape(location)[0][1] == ("qty", "integer")
    # The next run takes the table's claim over, finds the copy verified and the log unchanged, and cuts over: killed
    # again between its two renames, it leaves the name free and the backup marked.
    replan = _plan(uri, text, allow_destructive=True)
    assert [s.kind for s in replan.steps] == ["rewrite_table"] and "left half-done" in replan.warnings[0]
    _killed_at(engine, replan, f"renamed {table.key} to {table.key}_backup_")
    assert [row["tableName"] for row in engine.sql(f"SHOW TABLES IN {KILLED_REWRITE}")] == ["events_backup_",
                                                                                         "events_rewrite_"]
    # The run after it only renames the copy.
    finish = _plan(uri, text, allow_destructive=True)
    [step] = finish.steps
    assert step.summary == f"rewrite table {table.key}: finish the cut-over"
    _applied(engine, finish)
    assert _lake_rows(location) == [(1, "10", "a", "2026-01-01")] and _rows(engine, table.key) == [(1, "10", "a",
                                                                                                      "2026-01-01")]
    assert _lake_rows(_location(engine, "events_backup_", KILLED_REWRITE)) == [(1, 10, "a", "2026-01-01")]
    _stamped(uri, location, finish, "events", KILLED_REWRITE)
    assert _plan(uri, text).steps == ()
