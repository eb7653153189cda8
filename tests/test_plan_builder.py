"""The plan builder: everything a plan says goes in before it is built, and each plan is built once, complete."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import replace

import pytest

from schemaflow.model import Catalog, Column, Table, View, fingerprint
from schemaflow.plan.kinds import StepKind
from schemaflow.plan.plan import Basis, PlanBuilder
from schemaflow.plan.settings_changes import SettingsChange, settings_record
from schemaflow.plan.steps import SetDatabaseParameters

ORDERS = Table("retail", "orders", (Column("id", "bigint"),), (Column("ds", "string"),))
WIDER = replace(ORDERS, columns=(Column("id", "bigint"), Column("amount", "double")))
TOTALS = View("retail", "totals", "SELECT id FROM retail.orders", (Column("id"),), reads=("retail.orders",))


def catalog(*objects) -> Catalog:
    return Catalog(databases=("retail",), objects={o.key: o for o in objects})


def stamped(*objects) -> Catalog:
    return catalog(*(replace(o, version=fingerprint(o)) for o in objects))


def test_the_views_the_plan_creates_are_checked_once_and_those_refused_are_blocked_where_they_stand() -> None:
    asked: list[tuple[str, ...]] = []

    def problems(views: tuple[str, ...], unchecked: Mapping[str, str]) -> dict[str, str]:
        assert unchecked == {}  # no view calls code
        asked.append(views)
        return {"retail.totals": "schemas/retail/totals.yaml:3:6: cannot resolve `idd`"}

    builder = PlanBuilder(catalog(ORDERS, TOTALS), Catalog(databases=("retail",)), view_problems=problems)
    plan = builder.build()
    assert asked == [("retail.totals",)]
    assert [(s.kind, s.object, s.blocked) for s in plan.steps] == [
        (StepKind.CREATE_TABLE, "retail.orders", None),
        (StepKind.CREATE_VIEW, "retail.totals", "schemas/retail/totals.yaml:3:6: cannot resolve `idd`")]
    assert builder.build() == plan and asked == [("retail.totals",)]  # built again from what was planned once
    # No view to create: nothing to check.
    PlanBuilder(catalog(WIDER), stamped(ORDERS), view_problems=problems).build()
    assert asked == [("retail.totals",)]


def test_what_the_plan_is_bound_to_and_its_warnings_go_in_before_it_is_built() -> None:
    settings = SettingsChange({"invalidation": "strict"}, {}, {}, warnings=("the settings last applied ...",))
    plan = PlanBuilder(catalog(WIDER), stamped(ORDERS), basis=Basis.SNAPSHOT, metastore="thrift://m:9083",
                       target="prod", against="the snapshot live.json", left_alone=("left alone: retail.tmp",),
                       notices=("not approved, ...",), settings=settings, commit="abc").build()
    assert (plan.metastore, plan.target, plan.against, plan.basis, plan.commit) == (
        "thrift://m:9083", "prod", "the snapshot live.json", Basis.SNAPSHOT, "abc")
    assert plan.settings == settings.digest
    assert plan.warnings == ("left alone: retail.tmp", "not approved, ...", "the settings last applied ...")
    assert PlanBuilder(catalog(WIDER), stamped(ORDERS)).build().settings is None


def test_settings_changed_are_steps_last_the_last_recording_them_and_a_first_record_rides_on_the_last_step() -> None:
    before, after = {"invalidation": "strict"}, {"invalidation": "cascade"}
    plan = PlanBuilder(catalog(WIDER), stamped(ORDERS), commit="abc",
                       settings=SettingsChange(after, before, after)).build()
    assert [(s.kind, s.object) for s in plan.steps] == [(StepKind.ADD_COLUMNS, "retail.orders"),
                                                        (StepKind.CHANGE_SETTINGS, "schemaflow.yaml")]
    record = (SetDatabaseParameters("retail", settings_record(after, "abc")),)
    assert plan.steps[-1].settings_record == record and plan.steps[0].settings_record == ()

    recorded = PlanBuilder(catalog(WIDER), stamped(ORDERS), commit="abc",
                           settings=SettingsChange(after, after, after, record=True)).build()
    assert [s.kind for s in recorded.steps] == [StepKind.ADD_COLUMNS]
    assert recorded.steps[-1].settings_record == record
    # Recorded already: nothing to record; nothing planned: nothing to carry the record.
    assert PlanBuilder(catalog(WIDER), stamped(ORDERS), settings=SettingsChange(after, after, after)).build(
    ).steps[-1].settings_record == ()
    assert PlanBuilder(catalog(ORDERS), stamped(ORDERS), settings=SettingsChange(after, after, after, record=True)
                       ).build().is_empty


def test_a_plan_of_some_objects_keeps_their_steps_fingerprints_and_guards_from_one_planning() -> None:
    counted: list[str] = []
    other = replace(ORDERS, name="other")
    builder = PlanBuilder(catalog(WIDER, replace(other, columns=WIDER.columns)), stamped(ORDERS, other),
                          count_partitions=lambda key: counted.append(key) or 3)
    whole = builder.build()
    part = builder.build(objects={"retail.other"})
    assert {s.object for s in whole.steps} == {"retail.orders", "retail.other"}
    assert {s.object for s in part.steps} == {"retail.other"}
    assert part.fingerprints == {"retail.other": whole.fingerprints["retail.other"]}
    assert part.guards == {"retail.other": whole.guards["retail.other"]}
    assert sorted(counted) == ["retail.orders", "retail.other"]  # each table counted once, for both plans


def test_a_built_plan_cannot_be_patched_in_place() -> None:
    plan = PlanBuilder(catalog(WIDER), stamped(ORDERS)).build()
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.target = "prod"  # type: ignore[misc]
