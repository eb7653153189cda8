"""The kinds of steps and actions: each step kind has its effect and marker, each action kind its class."""
from __future__ import annotations

import json
import typing
from dataclasses import replace

import pytest

from schemaflow.model import Column, Database
from schemaflow.plan.kinds import EFFECTS, ActionKind, Effect, StepKind
from schemaflow.plan.steps import (ACTION_CLASSES, Action, AddDatabase, ChangeViewPartitions, KeepViewPartitions,
                                   PartitionView, SetColumns, SetDatabaseParameters, SetParameters, SetStorageAction,
                                   SqlAction, Step, action_from_data)
from schemaflow.render.summary import BLOCKED, MARKERS, step_marker

ONE_OF_EACH: tuple[Action, ...] = (
    SqlAction("CREATE TABLE `db`.`t` (id bigint)", claims="db.t"),
    AddDatabase(Database("db", comment="sales", properties={"team": "a"})),
    SetDatabaseParameters("db", {"team": "b"}),
    SetParameters("db.t", {"owner": "x"}, ("tier",)),
    SetColumns("db.t", (Column("id", "bigint"),), (Column("ds", "string"),), cascade=True, batched=True,
               parameters={"schemaflow.migration.1": "{}"}),
    SetStorageAction("db.t", {"field.delim": ","}, 4),
    PartitionView("db.v", ("ds",)),
    KeepViewPartitions("db.v"),
    ChangeViewPartitions("db.v", ("ds",), add=(("2024-01-01",),), drop=(("2023-12-31",),)),
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

