"""Delta tables planned with no JVM (issue 59, items 1, 3 and 5): the live table as its log gives it (a ``Table``
with its ``DeltaState``), the declared one as a table file says it; created through the engine, changed through its
statements on top of the log version read, renames and drops only with column mapping, widening only with type
widening and as the Spark release's Delta takes it, each protocol change a step of its own with the readers it
stops, and what Delta cannot do in place a rewrite into a Delta table created as declared."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from schemaflow.apply.executor import check_runnable
from schemaflow.errors import SchemaflowError, SpecError
from schemaflow.model import (Catalog, Column, DeltaState, DropColumn, Migration, RenameColumn, Table, fingerprint,
                              from_data, to_data)
from schemaflow.plan.delta import widens
from schemaflow.plan.plan import Plan, PlanBuilder
from schemaflow.plan.rewrite import REWRITE_BLOCK
from schemaflow.plan.steps import DeltaAlter, DeltaCreate, RewriteRows, SetParameters, Step
from schemaflow.plan.plan import FORMAT_VERSION
from schemaflow.render import render
from schemaflow.render.review import Review
from schemaflow.spark_version import SparkVersion
from schemaflow.spec import load_catalog

STATE = DeltaState("file:/lake/db/orders", 7, "0b6f-id", 1, 2)
MAPPED = DeltaState("file:/lake/db/orders", 9, "0b6f-id", 2, 5, column_mapping="name")
COLUMNS = (Column("id", "bigint", "Order id"), Column("qty", "int"), Column("note", "string"))
LIVE = Table("db", "orders", COLUMNS, (Column("ds", "string"),), format="delta", data_source=True, delta=STATE,
             version="v0")
SPARK_4: SparkVersion = (4, 0)
SPARK_35: SparkVersion = (3, 5)


def _plan(want: Table, live: Table | None = LIVE, migrations: tuple[Migration, ...] = (),
          release: SparkVersion = SPARK_4, allow_destructive: bool = False) -> Plan:
    desired = Catalog(databases=("db",), objects={want.key: want}, migrations=migrations)
    objects = {live.key: live} if live else {}
    return PlanBuilder(desired, Catalog(databases=("db",), objects=objects), release=release,
                       allow_destructive=allow_destructive).build()


def _want(*columns: Column, **changes: object) -> Table:
    return replace(LIVE, columns=columns or COLUMNS, delta=None, version=None, **changes)  # type: ignore[arg-type]


def _delta_action(step: Step) -> DeltaAlter:
    [action] = [a for a in step.actions if isinstance(a, DeltaAlter)]
    return action


def test_a_delta_table_is_created_through_the_engine_with_its_settings_in_its_first_commit():
    want = _want(properties={"delta.enableChangeDataFeed": "true", "owner_team": "orders"}, comment="Orders")
    [step] = _plan(want, live=None).steps
    assert step.kind == "create_table" and not step.blocked
    assert step.summary == "create Delta table db.orders (3 columns, partitioned by (ds))"
    assert step.notes == ("properties: set delta.enableChangeDataFeed, owner_team",)
    create = step.body[0]
    assert isinstance(create, DeltaCreate)
    # Its stamp is written by the engine after the create, not into the metastore's entry behind Delta's back.
    [stamped] = step.runs
    assert isinstance(stamped, DeltaCreate) and stamped.statements[1].startswith(
        "ALTER TABLE `db`.`orders` SET TBLPROPERTIES (")
    assert create.describe() == (
        "CREATE TABLE `db`.`orders` (\n  `id` bigint COMMENT 'Order id',\n  `qty` int,\n  `note` string,\n"
        "  `ds` string\n)\nUSING delta\nCOMMENT 'Orders'\nPARTITIONED BY (`ds`)\n"
        "TBLPROPERTIES ('schemaflow.version' = ${claim}, 'delta.enableChangeDataFeed' = 'true', "
        "'owner_team' = 'orders');")


def test_an_unchanged_delta_table_plans_nothing():
    assert _plan(_want()).steps == ()


def test_added_columns_comments_and_properties_are_one_step_on_top_of_the_log_version_read():
    want = _want(COLUMNS[0], replace(COLUMNS[1], comment="Units"), COLUMNS[2], Column("channel", "string"),
                 comment="All orders", properties={"delta.logRetentionDuration": "interval 60 days"})
    [step] = _plan(want).steps
    assert step.kind == "alter_delta_table" and not step.blocked and not step.hazards
    assert step.summary == ("alter Delta table db.orders: change comment of qty; add channel string; change the "
                            "table's comment; set delta.logRetentionDuration")
    action = _delta_action(step)
    assert (action.log_version, action.table_id) == (7, "0b6f-id")
    assert action.statements == (
        "ALTER TABLE `db`.`orders` SET TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 60 days')",
        "ALTER TABLE `db`.`orders` ADD COLUMNS (\n  `channel` string\n)",
        "ALTER TABLE `db`.`orders` ALTER COLUMN `qty` COMMENT 'Units'",
        "COMMENT ON TABLE `db`.`orders` IS 'All orders'")
    assert step.values == ("comment of qty: (none) -> 'Units'", "comment on table db.orders: (none) -> 'All orders'",
                           "delta.logRetentionDuration: (none) -> 'interval 60 days'")
    # The step's stamp lands in the log with the change: Delta's properties are its log's, not the metastore's.
    assert [type(a) for a in step.runs] == [DeltaAlter]
    assert step.runs[0].set["schemaflow.version"] and not any(isinstance(a, SetParameters) for a in step.runs)


def test_a_column_moved_is_moved_after_its_new_neighbour():
    [step] = _plan(_want(COLUMNS[2], COLUMNS[0], COLUMNS[1])).steps
    assert _delta_action(step).statements == ("ALTER TABLE `db`.`orders` ALTER COLUMN `note` FIRST",)


_RENAME_DROP = Migration("0001_orders", "", (RenameColumn("db.orders", "qty", "quantity"),
                                            DropColumn("db.orders", "note")))


def test_a_rename_or_drop_without_column_mapping_is_blocked_with_what_to_declare():
    [step] = _plan(_want(COLUMNS[0], Column("quantity", "int")), migrations=(_RENAME_DROP,)).steps
    assert step.kind == "unsupported" and step.blocked
    assert step.blocked.startswith("rename qty to quantity; drop note is not supported in place: Delta renames and drops "
                                   "a column only with column mapping: declare delta.columnMapping.mode: name")
    with pytest.raises(SchemaflowError, match="blocked step"):
        check_runnable(_plan(_want(COLUMNS[0], Column("quantity", "int")), migrations=(_RENAME_DROP,)))


def test_declared_column_mapping_is_its_own_hazard_step_before_the_rename_and_drop():
    want = _want(COLUMNS[0], Column("quantity", "int"), properties={"delta.columnMapping.mode": "name"})
    protocol, alter = _plan(want, migrations=(_RENAME_DROP,)).steps
    assert protocol.kind == "delta_protocol" and not protocol.blocked
    assert protocol.summary == ("raise the Delta protocol of db.orders: set delta.columnMapping.mode, "
                                "delta.minReaderVersion, delta.minWriterVersion")
    assert _delta_action(protocol).set == {"delta.columnMapping.mode": "name", "delta.minReaderVersion": "2",
                                           "delta.minWriterVersion": "5"}
    [hazard] = protocol.hazards
    assert "Delta readers without column mapping (reader version below 2" in hazard
    assert ("deltalake (delta-rs) reads its rows with a renamed column NULL, and refuses them once the table lists "
            "reader features") in hazard and "TRUNCATE HISTORY" in hazard
    assert alter.kind == "alter_delta_table" and alter.destructive
    action = _delta_action(alter)
    assert action.log_version == 7 and action.statements == (
        "ALTER TABLE `db`.`orders` RENAME COLUMN `qty` TO `quantity`",
        "ALTER TABLE `db`.`orders` DROP COLUMNS (`note`)")
    assert alter.hazards == ("drop note: column mapping drops it from the schema only; its values stay in the data "
                             "files until they are rewritten, and no reader sees them",
                             "rename qty to quantity: a query or job that names qty fails")


def test_with_column_mapping_live_a_rename_needs_no_protocol_step():
    live = replace(LIVE, delta=MAPPED, properties={"delta.columnMapping.mode": "name"})
    want = _want(COLUMNS[0], Column("quantity", "int"), properties={"delta.columnMapping.mode": "name"})
    [step] = _plan(want, live, migrations=(_RENAME_DROP,)).steps
    assert step.kind == "alter_delta_table" and _delta_action(step).log_version == 9


def test_column_mapping_is_never_turned_off_nor_a_protocol_version_lowered():
    live = replace(LIVE, delta=MAPPED, properties={"delta.columnMapping.mode": "name"})
    steps = _plan(_want(properties={"delta.columnMapping.mode": "none", "delta.minWriterVersion": "2"}), live).steps
    assert [s.summary for s in steps] == ["changing delta.columnMapping.mode from name to none on db.orders",
                                          "lowering delta.minWriterVersion from 5 to 2 on db.orders"]
    assert all(s.blocked for s in steps)


@pytest.mark.parametrize(("old", "new", "spark_35", "spark_4"), [
    ("tinyint", "smallint", True, True), ("smallint", "int", True, True), ("int", "bigint", False, True),
    ("float", "double", False, True), ("int", "double", False, True), ("int", "decimal(10,0)", False, True),
    ("int", "decimal(9,0)", False, False), ("decimal(10,1)", "decimal(12,3)", False, True),
    ("decimal(10,1)", "decimal(11,3)", False, False), ("bigint", "int", False, False), ("int", "string", False, False),
    ("double", "float", False, False)])
def test_delta_widens_as_its_release_documents(old: str, new: str, spark_35: bool, spark_4: bool):
    assert (widens(old, new, SPARK_35), widens(old, new, SPARK_4)) == (spark_35, spark_4)


def test_a_widening_needs_type_widening_declared_then_is_its_own_hazard_step():
    retyped = (COLUMNS[0], Column("qty", "bigint"), COLUMNS[2])
    [blocked] = _plan(_want(*retyped)).steps
    assert blocked.blocked and "declare delta.enableTypeWidening: 'true'" in blocked.blocked
    protocol, alter = _plan(_want(*retyped, properties={"delta.enableTypeWidening": "true"})).steps
    assert _delta_action(protocol).set == {"delta.enableTypeWidening": "true", "delta.minReaderVersion": "3",
                                           "delta.minWriterVersion": "7"}
    assert "typeWidening" in protocol.hazards[0] and "protocol reader 3, writer 7" in protocol.hazards[0]
    assert _delta_action(alter).statements == ("ALTER TABLE `db`.`orders` ALTER COLUMN `qty` TYPE bigint",)


def _rewrite_rows(step: Step) -> RewriteRows:
    [action] = [a for a in step.actions if isinstance(a, RewriteRows)]
    return action


def test_int_to_bigint_on_spark_35_is_a_rewrite_into_a_delta_table_as_declared_run_only_when_allowed():
    want = _want(COLUMNS[0], Column("qty", "bigint"), COLUMNS[2], properties={"delta.enableTypeWidening": "true"})
    [blocked] = _plan(want, release=SPARK_35).steps
    assert blocked.kind == "rewrite_table" and blocked.blocked == REWRITE_BLOCK
    [step] = _plan(want, release=SPARK_35, allow_destructive=True).steps
    assert not step.blocked and step.destructive
    assert step.summary == ("rewrite table db.orders: type of qty int -> bigint, which the Delta release Spark 3.5 runs "
                            "does not widen in place (Delta 4 on Spark 4 widens it)")
    rows = _rewrite_rows(step)
    # The guard: the copy starts only on the log version read, of the table read.
    assert (rows.log_version, rows.table_id, rows.delta) == (7, "0b6f-id", True)
    assert "on top of Delta log version 7 of table 0b6f-id: a commit to db.orders since the plan stops it" in "".join(
        step.notes)
    # Copied whole, in slices: a Delta table's partitions are its log's, not the metastore's.
    assert "the whole table in slices of its rows" in step.notes[0]
    # Created through delta-spark as declared: its properties, the protocol settings among them, in its first commit.
    assert rows.create == ("CREATE TABLE `db`.`orders_rewrite_` (\n  `id` bigint COMMENT 'Order id',\n  `qty` bigint,\n"
                           "  `note` string,\n  `ds` string\n)\nUSING delta\nPARTITIONED BY (`ds`)\n"
                           "TBLPROPERTIES ('schemaflow.version' = ${claim}, 'delta.enableTypeWidening' = 'true')")
    assert "TRY_CAST(`qty` AS BIGINT) AS `qty`" in rows.copy
    hazards = "\n".join(step.hazards)
    assert "type widening (delta.enableTypeWidening, protocol reader 3, writer 7" in hazards
    assert ("db.orders is a new Delta table from the cut-over on (another table id, its log begun again at version 0): "
            "its history (DESCRIBE HISTORY, time travel, the change data feed) stays with db.orders_backup_") in hazards
    assert RewriteRows.from_data(rows.to_data()) == rows
    # What the live table has that no file declares is not the new table's: said, with where it stays.
    live = replace(LIVE, properties={"delta.enableChangeDataFeed": "true", "schemaflow.managed_properties": ""})
    [step] = _plan(want, live, release=SPARK_35, allow_destructive=True).steps
    assert ("properties delta.enableChangeDataFeed: the live table's, which no file declares, are not the new table's "
            "(they stay with db.orders_backup_): declare those it keeps") in step.hazards


def test_a_narrowing_and_other_partition_columns_are_one_rewrite_renames_and_drops_in_it_without_column_mapping():
    want = _want(Column("id", "int", "Order id"), Column("quantity", "int"), Column("ds", "string"),
                 partition_columns=(Column("note", "string"),))
    rename = Migration("0002", "", (RenameColumn("db.orders", "qty", "quantity"),))
    [step] = _plan(want, migrations=(rename,), allow_destructive=True).steps
    assert step.summary == ("rewrite table db.orders: partition columns (ds) -> (note); type of id bigint -> int, which "
                            "the Delta release Spark 4.0 runs does not widen in place")
    assert "SELECT TRY_CAST(`id` AS INT) AS `id`, `qty` AS `quantity`, `ds` AS `ds`, `note` AS `note`" in _rewrite_rows(
        step).copy
    assert "column qty: renamed to quantity" in step.values


def test_an_external_delta_table_is_not_rewritten_and_column_mapping_turned_off_blocks_the_rewrite():
    want = _want(*COLUMNS, Column("ds", "string"), partition_columns=())
    outside = dict(external=True, location="s3://lake/orders")
    [external] = _plan(replace(want, **outside), replace(LIVE, **outside), allow_destructive=True).steps  # type: ignore[arg-type]
    assert external.blocked and "schemaflow rewrites no external table" in external.blocked
    mapped = replace(LIVE, delta=MAPPED, properties={"delta.columnMapping.mode": "name"})
    [off] = _plan(replace(want, properties={"delta.columnMapping.mode": "none"}), mapped, allow_destructive=True).steps
    assert off.blocked and "column mapping stays once on" in off.blocked


def test_a_table_becoming_delta_is_not_converted_in_place():
    parquet = Table("db", "orders", COLUMNS, format="parquet", version="v0")
    [step] = _plan(_want(partition_columns=()), parquet).steps
    assert step.blocked and "schemaflow does not convert a table to Delta (CONVERT TO DELTA" in step.blocked


def test_delta_steps_are_worded_and_round_trip_through_plan_json():
    want = _want(COLUMNS[0], Column("quantity", "int"), properties={"delta.columnMapping.mode": "name"})
    plan = _plan(want, migrations=(_RENAME_DROP,))
    for rendered in (render(Review(plan), "text"), render(Review(plan), "markdown")):
        assert "raise the Delta protocol of db.orders" in rendered and "alter Delta table db.orders" in rendered
        assert "-- on top of Delta log version 7 of table 0b6f-id" in rendered
    data = json.loads(render(Review(plan), "json"))
    assert data["format_version"] == FORMAT_VERSION == 4
    assert [a["action"] for s in data["steps"] for a in s["actions"]] == ["delta_alter", "delta_alter",
                                                                                   "set_parameters"]
    assert Plan.from_data(data).steps == plan.steps


ORDERS = """\
table: db.orders
format: delta
comment: One row per order
columns:
  - {name: id, type: bigint, comment: Order id}
  - {name: qty, type: int}
  - {name: note, type: string}
partitioned_by:
  - {name: ds, type: string}
properties:
  delta.columnMapping.mode: name
  delta.enableTypeWidening: 'true'
  delta.feature.deletionVectors: supported
  delta.logRetentionDuration: interval 30 days
  owner_team: orders
"""


def test_a_delta_table_file_reads_into_the_model_and_plans_its_create(tmp_path: Path):
    (tmp_path / "schemas" / "db").mkdir(parents=True)
    (tmp_path / "schemas" / "db" / "orders.yaml").write_text(ORDERS)
    table = load_catalog(tmp_path).get("db.orders")
    assert isinstance(table, Table)
    assert (table.format, table.data_source, table.external, table.bucketing) == ("delta", True, False, None)
    assert table.columns == COLUMNS and table.partition_columns == (Column("ds", "string"),)
    assert (table.partition_spec, table.sort_order, table.comment) == ((), (), "One row per order")
    assert table.properties["delta.feature.deletionVectors"] == "supported"
    [step] = _plan(table, live=None).steps
    assert step.summary == "create Delta table db.orders (3 columns, partitioned by (ds))"
    assert "'delta.columnMapping.mode' = 'name', 'delta.enableTypeWidening' = 'true'" in step.body[0].describe()


@pytest.mark.parametrize(("line", "problem"), [
    ("  delta.isolationLevel: Snapshot", "'delta.isolationLevel' takes 'Serializable' or 'WriteSerializable', not "
                                         "'Snapshot'"),
    ("  delta.feature.generatedColumns: supported", "a generated column (GENERATED ALWAYS AS) cannot be declared"),
    ("  delta.constraints.positive: id > 0", "is a CHECK constraint, which a table file cannot declare"),
    ("  delta.feature.rowTracking: enabled", "'delta.feature.rowTracking' takes 'supported'"),
    ("  delta.checkpointRetentionDuration: 30 days", "takes a duration as Delta writes it ('interval 7 days')"),
    ("  delta.columnMapping.maxColumnId: '9'", "'delta.columnMapping.maxColumnId' is no Delta table property"),
    ("  write.format.default: parquet", "property 'write.format.default' is an Iceberg table's")])
def test_a_delta_property_delta_refuses_is_refused_where_it_is_written(tmp_path: Path, line: str, problem: str):
    (tmp_path / "schemas" / "db").mkdir(parents=True)
    (tmp_path / "schemas" / "db" / "orders.yaml").write_text(ORDERS + line + "\n")
    with pytest.raises(SpecError) as refused:
        load_catalog(tmp_path)
    [found] = refused.value.problems
    assert (str(found.source.path).endswith("schemas/db/orders.yaml"), found.source.line, found.source.col) == (
        True, 16, 3)
    assert problem in found.message


def test_a_setting_that_turns_a_table_feature_on_is_a_protocol_step_and_another_setting_is_not():
    want = _want(properties={"delta.enableDeletionVectors": "true", "delta.checkpointInterval": "20"})
    protocol, alter = _plan(want).steps
    assert _delta_action(protocol).set == {"delta.enableDeletionVectors": "true"}
    assert protocol.hazards == ("table feature deletionVectors: Delta readers and writers without it stop reading or "
                                "writing the table; a feature, once on, stays in the protocol",)
    assert _delta_action(alter).set == {"delta.checkpointInterval": "20"} and not alter.hazards


def test_a_live_delta_tables_state_round_trips_and_is_no_part_of_its_fingerprint():
    assert from_data(to_data(LIVE)).delta == STATE  # as a snapshot and a saved plan keep it
    assert "delta" not in to_data(replace(LIVE, delta=None))  # a table without it reads as before it existed
    assert fingerprint(LIVE) == fingerprint(replace(LIVE, delta=None))  # live state, as an Iceberg table's
