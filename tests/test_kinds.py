"""The kinds of steps and actions: each step kind has its effect and marker, each action kind its class,
and a step's stamp and settings record come back from plan JSON as the parts they were."""
from __future__ import annotations

import json
import typing
from dataclasses import replace

import pytest

from schemaflow.model import (CURRENT_DATABASE, VERSION_KEY, Catalog, Column, Database, IcebergState, PartitionField,
                              SortTerm, Table, View, ViewSql)
from schemaflow.plan.kinds import EFFECTS, ActionKind, Effect, ObjectType, StepKind
from schemaflow.plan.plan import Plan, PlanBuilder
from schemaflow.plan.settings_changes import SettingsChange
from schemaflow.plan.steps import (ACTION_CLASSES, Action, AddColumnsAction, AddDatabase, ChangeViewPartitions,
                                   DeltaAlter, DeltaCreate, ForgetEntryAction, RegisterTableAction,
                                   CheckLiveViews, CreateTableAction, CreateViewAction, DropTableAction, DropViewAction,
                                   IcebergCommit, RewriteRows,
                                   KeepViewPartitions, RestoreBackup,
                                   PartitionView, SetColumnCommentsAction, SetColumns, SetDatabaseParameters,
                                   SetParameters, SetStorageAction, SetTableCommentAction, Step, action_from_data)
from schemaflow.render.summary import BLOCKED, MARKERS, step_marker
from schemaflow.sql.rewrite import Filled

ONE_OF_EACH: tuple[Action, ...] = (
    CreateTableAction(Table("db", "t", (Column("id", "bigint"),))),
    AddColumnsAction("db.t", (Column("n", "int", "count"),)),
    SetTableCommentAction("db.t", "orders"),
    SetTableCommentAction("db.t", None),
    SetColumnCommentsAction("db.t", (Column("id", "bigint", "key"),)),
    DropTableAction("db.t"),
    CreateViewAction(View("db", "v", "SELECT id FROM db.t", (Column("id", None, "key"),)), replace=True),
    DropViewAction("db.v"),
    AddDatabase(Database("db", comment="sales", properties={"team": "a"})),
    SetDatabaseParameters("db", {"team": "b"}),
    SetParameters("db.t", {"owner": "x"}, ("tier",)),
    SetColumns("db.t", (Column("id", "bigint"),), (Column("ds", "string"),), cascade=True, batched=True,
               parameters={"schemaflow.migration.1": "{}"}),
    SetStorageAction("db.t", {"field.delim": ","}, 4),
    PartitionView("db.v", ("ds",)),
    KeepViewPartitions("db.v"),
    ChangeViewPartitions("db.v", ("ds",), add=(("2024-01-01",),), drop=(("2023-12-31",),)),
    IcebergCommit(Table("db", "i", (Column("id", "bigint", "key"), Column("ts", "timestamp")), format="iceberg",
                        data_source=True, partition_spec=(PartitionField("day", "ts"), PartitionField("bucket", "id", 16)),
                        sort_order=(SortTerm(PartitionField("identity", "id"), descending=True),)), create=True),
    IcebergCommit(Table("db", "i", (Column("key", "bigint"),), format="iceberg", data_source=True), {"key": "id"},
                  IcebergState("0c4a-uuid", 3, 1, 0, 2, "file:/lake/i/metadata/00004-x.metadata.json"),
                  set={"schemaflow.version": "v1"}, unset=("tier",)),
    RewriteRows(Table("db", "t", (Column("id", "bigint"), Column("name", "string")), (Column("ds", "date"),),
                      data_source=True),
                (Filled("id", "bigint", "id", "int"), Filled("name", "string", "full_name", "string"),
                 Filled("ds", "date", None, None), Filled("n", "int", "n", "string", accepts_loss=True)),
                "db.t_rewrite_", "db.t_backup_"),
    RewriteRows(Table("db", "t", (Column("id", "bigint"),)), (Filled("id", "bigint", "id", "bigint"),), "db.t_rewrite_",
                "db.t_backup_", resumed=True),
    RestoreBackup("db.t", "db.t_backup_", "db.t_restore_", "v1"),
    RestoreBackup("db.t", "db.t_backup_", "db.t_restore_", None),
    DropViewAction("db.v", engine=False),
    CheckLiveViews("db.v", {"db.w": ViewSql("SELECT f(1) AS a", "SELECT `db`.f(1) AS a", CURRENT_DATABASE),
                            "other.x": ViewSql("SELECT 1 AS b"), "other.y": None}, "db.w calls metastore functions (db.f)"),
    RegisterTableAction("db.i", "file:/lake/i/metadata/00004-x.metadata.json", "v1", "thrift://old:9083"),
    RegisterTableAction("db.i", "s3://lake/i/metadata/00001-y.metadata.json", None, "embedded:/state"),
    ForgetEntryAction("db.i", ObjectType.TABLE, "v1", "thrift://old:9083"),
    ForgetEntryAction("db.v", ObjectType.VIEW, None, "thrift://old:9083"),
    DeltaCreate(Table("db", "d", (Column("id", "bigint"),), (Column("ds", "string"),), format="delta", data_source=True,
                      properties={"delta.columnMapping.mode": "name"})),
    DeltaCreate(Table("db", "d", (Column("id", "bigint"),), format="delta", data_source=True), {"team": "a"}),
    DeltaAlter("db.d", 7, "0b6f-id", {"delta.columnMapping.mode": "name"}, ("team",), (Column("v", "int", "new"),),
               (("a", "b"),), ("c",), (Column("id", "bigint"),), (Column("b", "string", "renamed"),),
               (("v", "b"), ("id", None)), ("Orders",)),
    DeltaAlter("db.d", 0, "0b6f-id", comment=(None,)),
)


def test_every_step_kind_has_an_effect_and_every_effect_a_marker() -> None:
    assert set(EFFECTS) == set(StepKind)
    assert set(MARKERS) == set(Effect)
    assert len(set(MARKERS.values()) | {BLOCKED}) == len(Effect) + 1  # each tells itself apart
    for kind in StepKind:
        step = Step(kind, "db.t", "table", "s", ())
        assert step_marker(step) == MARKERS[EFFECTS[kind]]
        assert step_marker(replace(step, blocked="why")) == BLOCKED


def test_an_unknown_step_kind_cannot_be_loaded() -> None:
    data = Step(StepKind.CREATE_TABLE, "db.t", "table", "s", ()).to_data()
    with pytest.raises(ValueError):
        Step.from_data({**data, "kind": "create_index"})


def test_one_class_per_action_kind_and_each_round_trips_through_json() -> None:
    assert set(ACTION_CLASSES) == set(ActionKind)
    assert set(ACTION_CLASSES.values()) == set(typing.get_args(Action)) == {type(a) for a in ONE_OF_EACH}
    for action in ONE_OF_EACH:
        data = json.loads(json.dumps(action.to_data()))
        assert data["action"] == action.kind
        assert action_from_data(data) == action
    with pytest.raises(ValueError, match="unknown action kind 'drop_everything'"):
        action_from_data({"action": "drop_everything"})


def test_stamps_and_the_settings_record_come_back_from_json_as_they_were_planned() -> None:
    orders = Table("db", "orders", (Column("id", "bigint"),), properties={"owner": "a"})
    live = replace(orders, properties={"owner": "b"}, managed_keys=("owner",), version="v0")
    stale = Table("db", "stale", (Column("id", "bigint"),))
    recorded = {"invalidation": "strict"}
    plan = PlanBuilder(Catalog(databases=("db",), objects={"db.orders": orders, "db.new": replace(orders, name="new")}),
                       Catalog(databases=("db",), objects={"db.orders": live, "db.stale": stale}),
                       allow_destructive=True, settings=SettingsChange(recorded, recorded, recorded, record=True)).build()
    assert [(s.kind, s.stamp is not None, bool(s.settings_record)) for s in plan.steps] == [
        (StepKind.DROP_TABLE, False, False), (StepKind.CREATE_TABLE, True, False),
        (StepKind.SET_PROPERTIES, True, True)]
    properties = plan.steps[-1]
    assert properties.body == () and properties.stamp is not None and VERSION_KEY in properties.stamp.set
    assert properties.actions == (properties.stamp, *properties.settings_record)
    loaded = Plan.from_data(json.loads(plan.to_json()))
    assert loaded == plan and loaded.to_json() == plan.to_json()


def test_the_changes_of_a_table_s_columns_share_one_base_which_says_which_need_permission() -> None:
    """Whatever commits them (the metastore's alter, an Iceberg commit, a rewrite), a change of a table's columns is
    a ``ColumnChange``: the planner asks it whether it breaks views and needs --allow-destructive, not its class."""
    from schemaflow.plan.changes import Change
    from schemaflow.plan.evolution import ColumnChange

    columns = {c for c in typing.get_args(Change) if issubclass(c, ColumnChange)}
    assert {c.__name__: c.needs_permission for c in columns} == {
        "AlterColumns": False, "AlterIcebergTable": False, "AlterDeltaTable": False, "RewriteTable": True}
