"""Apply of Delta steps (issue 59, item 3), without delta-spark: what the executor hands a writer that commits to
Delta logs (``catalog.backend.DeltaWriting``), recorded; the refusal, before the first step, of a writer that cannot
(the test venv's Spark, which has no delta-spark, marked ``spark``); how a failed statement is reported; and the
Spark settings a project sets delta-spark up with, plain ones. What the Hive writer does in delta-spark is
tests/test_delta_apply_engine.py's."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from schemaflow.apply.executor import ApplyError, RecordingTarget, apply_plan
from schemaflow.catalog.hive.delta_commit import PACKAGES, DeltaStepFailed
from schemaflow.catalog.hive.metastore import Metastore
from schemaflow.claims import Claim, parse_claim
from schemaflow.code_settings import spark_code_reason
from schemaflow.errors import ConcurrentChange, SchemaflowError
from schemaflow.model import VERSION_KEY, Catalog, Column, DeltaState, Table
from schemaflow.plan.plan import Plan, PlanBuilder
from schemaflow.plan.steps import APPLIED_AT, RewriteRows
from schemaflow.safe_spark_settings import DELTA
from schemaflow.sql import ddl
from tests.delta_spark import DeltaSpark

STATE = DeltaState("file:/lake/db/orders", 7, "0b6f-id", 1, 2)
COLUMNS = (Column("id", "bigint"), Column("qty", "int"))
LIVE = Table("db", "orders", COLUMNS, format="delta", data_source=True, delta=STATE, version="v0")
CLAIM = Claim("run1", "host", 1, "2026-12-02T00:00:00Z")


def _plan(want: Table, live: Table | None = LIVE) -> Plan:
    objects = {live.key: live} if live else {}
    return PlanBuilder(Catalog(databases=(want.database,), objects={want.key: want}),
                       Catalog(databases=(want.database,), objects=objects), release=(3, 5)).build()


def _want(**changes: object) -> Table:
    return replace(LIVE, delta=None, version=None, **changes)  # type: ignore[arg-type]


def test_each_delta_step_lands_on_the_commits_before_it_and_its_stamp_is_a_commit_of_its_own() -> None:
    plan = _plan(_want(columns=(*COLUMNS, Column("channel", "string")), properties={"delta.columnMapping.mode": "name"}))
    assert [s.kind for s in plan.steps] == ["delta_protocol", "alter_delta_table"]
    target = RecordingTarget()
    apply_plan(plan, target, claim=CLAIM)
    [(_, first, protocol, no_stamp), (_, second, changes, stamp)] = target.deltas
    # The protocol step's one commit lands on the version planned; the next step's on top of it.
    assert (first, protocol, no_stamp) == (7, ("ALTER TABLE `db`.`orders` SET TBLPROPERTIES ("
                                              "'delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', "
                                              "'delta.minWriterVersion' = '5')",), {})
    assert (second, changes) == (8, ("ALTER TABLE `db`.`orders` ADD COLUMNS (\n  `channel` string\n)",))
    assert stamp[VERSION_KEY] == plan.steps[-1].stamp.set[VERSION_KEY] and stamp[
        "schemaflow.applied_at"] != APPLIED_AT and all(k.startswith("schemaflow.") for k in stamp)
    # Claimed (expecting the version planned), and each Delta step ran while the run held the claim.
    claim = parse_claim(target.actions[0].set[VERSION_KEY])  # type: ignore[attr-defined]
    assert claim is not None and claim.run == "run1" and target.guards[0] == "v0"
    assert target.guards[1:] == [target.actions[0].set[VERSION_KEY]] * 2  # type: ignore[attr-defined]


def test_a_delta_table_is_created_claimed_then_stamped() -> None:
    plan = _plan(_want(properties={"owner_team": "orders"}), live=None)
    target = RecordingTarget()
    apply_plan(plan, target, claim=CLAIM)
    [(key, version, (create,), stamp)] = target.deltas
    assert (key, version) == ("db.orders", None)
    assert create.startswith("CREATE TABLE `db`.`orders` (") and "USING delta" in create
    assert f"TBLPROPERTIES ('schemaflow.version' = '{target.claims[0]}', 'owner_team' = 'orders')" in create
    assert parse_claim(target.claims[0]) is not None and stamp[VERSION_KEY] == plan.steps[0].stamp.set[VERSION_KEY]


def test_a_delta_rewrite_is_handed_to_the_delta_writer_with_the_log_version_planned() -> None:
    want = _want(columns=(COLUMNS[0], Column("qty", "string")), properties={"owner_team": "orders"})
    plan = PlanBuilder(Catalog(databases=("db",), objects={want.key: want}),
                       Catalog(databases=("db",), objects={LIVE.key: LIVE}), release=(3, 5),
                       allow_destructive=True).build()
    target = RecordingTarget()
    apply_plan(plan, target, claim=CLAIM)
    rewrite = target.actions[1]
    assert isinstance(rewrite, RewriteRows) and (rewrite.log_version, rewrite.table_id) == (7, "0b6f-id")
    # The staging table is born claimed, with the declared properties in its first commit.
    claim = target.actions[0].set[VERSION_KEY]  # type: ignore[attr-defined]
    assert (f"USING delta\nTBLPROPERTIES ('schemaflow.version' = '{claim}', 'owner_team' = 'orders')"
            in ddl.fill_claim(rewrite.create, claim))
    assert target.guards[1] == claim
    with pytest.raises(SchemaflowError, match="the plan changes a Delta table, which this apply cannot"):
        apply_plan(plan, _NoDelta(), claim=CLAIM)


class _NoDelta(RecordingTarget):
    def delta_unavailable(self) -> str | None:
        return "its Spark session has no delta-spark; set spark.sql.extensions"


@pytest.mark.parametrize("target", [_NoDelta(), None])
def test_a_writer_that_cannot_commit_to_delta_is_refused_before_the_first_step(target: RecordingTarget | None) -> None:
    class _NotDelta:  # a writer of a backend that takes on no Delta duty: any call on it would fail
        pass
    plan = _plan(_want(columns=(*COLUMNS, Column("channel", "string"))))
    with pytest.raises(SchemaflowError) as refused:
        apply_plan(plan, target or _NotDelta(), claim=CLAIM)  # type: ignore[arg-type]
    reason = ("its Spark session has no delta-spark; set spark.sql.extensions" if target
              else "the catalog this apply writes does not commit to Delta tables (its backend does not)")
    assert str(refused.value) == (f"db.orders: the plan changes a Delta table, which this apply cannot: {reason}; "
                                  "nothing was applied")
    assert target is None or (target.actions, target.deltas, target.guards) == ([], [], [])


def test_a_failed_statement_says_which_landed_with_their_versions_and_which_did_not() -> None:
    statements = ("ALTER TABLE `db`.`t` SET TBLPROPERTIES ('a' = '1')", "ALTER TABLE `db`.`t` ADD COLUMNS (\n  `b` int\n)",
                  "ALTER TABLE `db`.`t` DROP COLUMN `c`\u001b[2J")
    cause = ConcurrentChange("file:/lake/t", "8", "9", "Delta log version")
    failed = DeltaStepFailed("db.t", statements, [8], cause)
    assert str(failed) == "\n".join([
        "db.t: Delta statement 2 of 3 failed, nothing of it applied: file:/lake/t was modified concurrently: its Delta "
        "log version is '9', this run expected '8'",
        "landed (1):", "  1. ALTER TABLE `db`.`t` SET TBLPROPERTIES ('a' = '1') (log version 8)",
        "not applied (2):", "  2. ALTER TABLE `db`.`t` ADD COLUMNS ( `b` int )",
        "  3. ALTER TABLE `db`.`t` DROP COLUMN `c`\\x1b[2J"])


def test_a_failed_delta_step_stops_the_apply_saying_what_was_and_was_not_applied() -> None:
    class _Fails(RecordingTarget):
        def alter_delta(self, key: str, log_version: int, table_id: str, statements: object, stamp: object,
                        expected: str | None) -> int:
            raise DeltaStepFailed(key, ("ALTER TABLE `db`.`orders` ADD COLUMNS (`channel` string)",), [],
                                  ConcurrentChange(key, "7", "8", "Delta log version"))
    plan = _plan(_want(columns=(*COLUMNS, Column("channel", "string"))))
    with pytest.raises(ApplyError) as failed:
        apply_plan(plan, _Fails(), claim=CLAIM)
    lines = str(failed.value).splitlines()
    assert lines[0] == ("step 1 failed (alter Delta table db.orders: add channel string): db.orders: Delta statement 1 of 1 "
                        "failed, nothing of it applied: db.orders was modified concurrently: its Delta log version is "
                        "'8', this run expected '7'")
    assert lines[-5:-1] == ["applied (0):", "  none", "not applied (1):",
                            "  1. alter Delta table db.orders: add channel string"]


def test_delta_spark_as_its_docs_set_it_up_is_a_plain_setting_and_another_class_needs_the_operator() -> None:
    settings = DeltaSpark("thrift://localhost:9083", Path("warehouse"), Path("work")).settings
    assert {key: spark_code_reason(key, settings[key]) for key in DELTA} == dict.fromkeys(DELTA)
    assert spark_code_reason("spark.sql.extensions", "com.example.Extension") is not None
    assert spark_code_reason("spark.sql.catalog.spark_catalog", "com.example.Catalog") is not None
    assert spark_code_reason("spark.databricks.delta.maxCommitAttempts", "10") is not None


@pytest.mark.spark
def test_a_spark_session_without_delta_spark_is_refused_before_the_first_step_saying_what_to_configure(
        metastore: Metastore, fresh_db: Callable[[], str]) -> None:
    """The test venv's Spark, which has no delta-spark (none exists for it): the refusal names all three settings."""
    reason = metastore.delta_unavailable()
    assert reason == (
        "its Spark session has no delta-spark; set in schemaflow.yaml's spark.conf (or the Spark the session comes "
        f"from) delta-spark's classes (spark.jars.packages: {PACKAGES}); spark.sql.extensions: "
        "io.delta.sql.DeltaSparkSessionExtension; spark.sql.catalog.spark_catalog: "
        "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    database = fresh_db()
    plan = _plan(_want(database=database), live=None)
    with pytest.raises(SchemaflowError) as refused:
        apply_plan(plan, metastore)
    assert str(refused.value) == (f"{database}.orders: the plan changes a Delta table, which this apply cannot: "
                                  f"{reason}; nothing was applied")
    assert metastore.read((database,)).objects == {}
    assert spark_code_reason("spark.sql.extensions", "io.delta.sql.deltasparksessionextension") is not None
