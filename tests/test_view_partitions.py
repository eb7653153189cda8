"""The partitions of partitioned views, planned without a JVM: derivation, sync, re-creation, rendering."""
from __future__ import annotations

import json
from dataclasses import replace

from schemaflow.apply.executor import RecordingTarget, apply_plan
from schemaflow.model import Catalog, Column, Table, View, ViewPartitions, fingerprint
from schemaflow.plan.plan import DESTRUCTIVE_BLOCK, Basis, Plan, PlanBuilder
from schemaflow.plan.review_check import differences
from schemaflow.plan.steps import ChangeViewPartitions, PartitionView
from schemaflow.plan.view_partitions import derive
from schemaflow.render import render
from schemaflow.render.review import Review

HOURS = tuple(f"{h:02d}" for h in range(24))
ORDERS = Table("retail", "orders", (Column("id", "bigint"),), (Column("ds", "string"), Column("hr", "string")))
DAILY = View("retail", "daily", "SELECT id, ds FROM retail.orders", (Column("id"), Column("ds")),
             partitioned_on=("ds",), reads=("retail.orders",))


def catalog(*objects) -> Catalog:
    return Catalog(databases=("retail",), objects={o.key: o for o in objects})


def live(*objects) -> Catalog:
    """As the metastore reads it: stamped, and a view's partitions not listed."""
    def read(o):
        o = replace(o, version=fingerprint(o))
        return replace(o, partitions=None, reads=()) if isinstance(o, View) else o
    return catalog(*(read(o) for o in objects))


def lister(partitions: dict[str, list[tuple[str, ...]]]):
    asked: list[str] = []

    def list_partitions(key: str) -> tuple[tuple[str, ...], ...]:
        asked.append(key)
        return tuple(partitions.get(key, ()))
    list_partitions.asked = asked
    return list_partitions


def kinds(plan: Plan) -> list[tuple[str, str]]:
    return [(s.kind, s.object) for s in plan.steps]


def test_without_a_rule_a_view_partition_exists_once_any_base_partition_feeds_it():
    base = [("2024-01-01", "00"), ("2024-01-02", "05"), ("2024-01-02", "06")]
    assert derive(ViewPartitions(derive_from="retail.orders"), ("ds",), ("ds", "hr"), base) == (
        ("2024-01-01",), ("2024-01-02",))


def test_complete_when_a_day_appears_only_once_every_declared_hour_is_loaded():
    rule = ViewPartitions(derive_from="retail.orders", complete_when={"hr": HOURS})
    full_day = [("2024-01-01", h) for h in HOURS]
    partial_day = [("2024-01-02", h) for h in HOURS[:23]]
    assert derive(rule, ("ds",), ("ds", "hr"), full_day + partial_day) == (("2024-01-01",),)
    counted = ViewPartitions(derive_from="retail.orders", complete_when={"hr": 23})
    assert derive(counted, ("ds",), ("ds", "hr"), full_day + partial_day) == (("2024-01-01",), ("2024-01-02",))
    # Listed values of several columns: every combination must be there.
    rule = ViewPartitions(derive_from="t", complete_when={"hr": ("00", "01"), "region": ("eu", "us")})
    crossed = [("d1", "00", "eu"), ("d1", "01", "us")]
    complete = [("d2", h, r) for h in ("00", "01") for r in ("eu", "us")]
    assert derive(rule, ("ds",), ("ds", "hr", "region"), crossed + complete) == (("d2",),)


def test_a_new_view_gets_its_listed_partitions_after_it_is_partitioned():
    view = replace(DAILY, partitions=ViewPartitions(values=(("2024-01-01",), ("2024-01-02",))))
    listing = lister({})
    plan = PlanBuilder(catalog(ORDERS, view), live(ORDERS), list_partitions=listing).build()
    assert kinds(plan) == [("create_view", "retail.daily"), ("view_partitions", "retail.daily")]
    assert isinstance(plan.steps[0].actions[1], PartitionView)
    step = plan.steps[1]
    assert step.summary == "partitions of view retail.daily: add 2"
    assert step.notes == ("adds ds=2024-01-01, ds=2024-01-02 (listed in its file), without a location",)
    assert step.actions == (ChangeViewPartitions("retail.daily", ("ds",), add=(("2024-01-01",), ("2024-01-02",))),)
    assert listing.asked == []  # a view that does not exist has no partitions to list


def test_a_sync_adds_and_drops_only_the_difference_and_stamps_nothing():
    view = replace(DAILY, partitions=ViewPartitions(values=(("2024-01-02",), ("2024-01-03",))))
    listing = lister({"retail.daily": [("2024-01-01",), ("2024-01-02",)]})
    plan = PlanBuilder(catalog(ORDERS, view), live(ORDERS, view), list_partitions=listing).build()
    assert kinds(plan) == [("view_partitions", "retail.daily")]
    assert plan.steps[0].summary == "partitions of view retail.daily: add 1, drop 1"
    assert plan.steps[0].actions == (ChangeViewPartitions("retail.daily", ("ds",), add=(("2024-01-03",),),
                                                          drop=(("2024-01-01",),)),)
    assert "drops ds=2024-01-01: no longer listed in its file" in plan.steps[0].notes
    assert listing.asked == ["retail.daily"]
    # In step: nothing to do, and a view without a partitions declaration is not even listed.
    listing = lister({"retail.daily": [("2024-01-02",), ("2024-01-03",)]})
    assert PlanBuilder(catalog(ORDERS, view), live(ORDERS, view), list_partitions=listing).build().is_empty
    listing = lister({"retail.daily": [("2024-01-01",)]})
    assert PlanBuilder(catalog(ORDERS, DAILY), live(ORDERS, DAILY), list_partitions=listing).build().is_empty
    assert listing.asked == []


def test_derived_partitions_follow_the_complete_days_of_the_base_table():
    view = replace(DAILY, partitions=ViewPartitions(derive_from="retail.orders", complete_when={"hr": HOURS}))
    base = [("2024-01-01", h) for h in HOURS] + [("2024-01-02", "00")]
    listing = lister({"retail.orders": base, "retail.daily": []})
    plan = PlanBuilder(catalog(ORDERS, view), live(ORDERS, view), list_partitions=listing).build()
    assert plan.steps[0].actions == (ChangeViewPartitions("retail.daily", ("ds",), add=(("2024-01-01",),)),)
    assert plan.steps[0].notes == ("adds ds=2024-01-01 (derived from the partitions of retail.orders), without a location",)


def test_a_replaced_view_gets_back_the_partitions_that_fit_and_the_plan_names_those_it_loses():
    listing = lister({"retail.daily": [("2024-01-01",), ("2024-01-02",)]})
    changed_sql = replace(DAILY, sql="SELECT id, ds FROM retail.orders WHERE id > 0")
    plan = PlanBuilder(catalog(ORDERS, changed_sql), live(ORDERS, DAILY), list_partitions=listing).build()
    assert kinds(plan) == [("replace_view", "retail.daily"), ("view_partitions", "retail.daily")]
    step = plan.steps[1]
    assert step.actions == (ChangeViewPartitions("retail.daily", ("ds",), add=(("2024-01-01",), ("2024-01-02",))),)
    assert step.notes[0] == "re-adds 2 partitions that still fit: Spark's CREATE OR REPLACE VIEW drops them all"
    # A declared list decides which come back; the others are named.
    listed = replace(changed_sql, partitions=ViewPartitions(values=(("2024-01-02",),)))
    step = PlanBuilder(catalog(ORDERS, listed), live(ORDERS, DAILY), list_partitions=listing).build().steps[1]
    assert step.actions[0].add == (("2024-01-02",),)
    assert step.notes[:2] == ("re-adds 1 partition that still fit: Spark's CREATE OR REPLACE VIEW drops them all",
                              "drops ds=2024-01-01: no longer listed in its file")
    # Other partition columns: none fit, all are named.
    by_id = View("retail", "daily", "SELECT ds, id FROM retail.orders", (Column("ds"), Column("id")),
                 partitioned_on=("id",), reads=("retail.orders",))
    plan = PlanBuilder(catalog(ORDERS, by_id), live(ORDERS, DAILY), list_partitions=listing, allow_destructive=True).build()
    assert kinds(plan) == [("replace_view", "retail.daily")]  # nothing to re-add: said in the re-creation's step
    assert plan.steps[0].notes == ("partitions: none left", "the re-created view loses ds=2024-01-01, ds=2024-01-02: "
                                   "they do not fit it (partitioned on (ds) -> (id))")
    # Losing partitions is destructive (Hive refuses such a replacement outright, error 10217).
    assert plan.steps[0].destructive and not plan.steps[0].blocked
    refused = PlanBuilder(catalog(ORDERS, by_id), live(ORDERS, DAILY), list_partitions=listing).build().steps[0]
    assert refused.destructive and refused.blocked == DESTRUCTIVE_BLOCK


def test_without_a_metastore_the_plan_says_what_decides_the_partitions():
    derived = replace(DAILY, partitions=ViewPartitions(derive_from="retail.orders"))
    # A re-created view: the note joins its step, which runs nothing more.
    changed = replace(derived, sql="SELECT id, ds FROM retail.orders WHERE id > 0")
    base_ref = catalog(ORDERS, replace(derived, version=fingerprint(derived)))
    plan = PlanBuilder(catalog(ORDERS, changed), base_ref, basis=Basis.GIT).build()
    assert kinds(plan) == [("replace_view", "retail.daily")]
    assert "partitions: decided at apply" in plan.steps[0].notes
    # Partitioned on other columns now: whatever partitions it has are lost, and the plan says so.
    by_id = View("retail", "daily", "SELECT ds, id FROM retail.orders", (Column("ds"), Column("id")),
                 partitioned_on=("id",), reads=("retail.orders",))
    plan = PlanBuilder(catalog(ORDERS, by_id), live(ORDERS, DAILY), basis=Basis.SNAPSHOT).build()
    assert plan.steps[0].notes[-2:] == ("partitions: lost with the re-created view",
                                        "none fits it: partitioned on (ds) -> (id)")
    assert plan.steps[0].destructive and plan.steps[0].blocked == DESTRUCTIVE_BLOCK
    # Listed on both sides: the difference is known without a metastore.
    before = replace(DAILY, partitions=ViewPartitions(values=(("2024-01-01",),)))
    after = replace(DAILY, partitions=ViewPartitions(values=(("2024-01-01",), ("2024-01-02",))))
    plan = PlanBuilder(catalog(ORDERS, after), catalog(ORDERS, before), basis=Basis.GIT).build()
    assert plan.steps[0].actions == (ChangeViewPartitions("retail.daily", ("ds",), add=(("2024-01-02",),)),)
    # From listed to derived: decided at apply, a step of its own.
    plan = PlanBuilder(catalog(ORDERS, derived), catalog(ORDERS, before), basis=Basis.GIT).build()
    assert [(s.summary, s.actions) for s in plan.steps] == [("partitions of view retail.daily: decided at apply", ())]
    # Unchanged declarations show nothing.
    assert PlanBuilder(catalog(ORDERS, derived), catalog(ORDERS, derived), basis=Basis.GIT).build().is_empty


def test_view_partition_steps_render_round_trip_run_and_are_left_out_of_review_checks():
    view = replace(DAILY, partitions=ViewPartitions(values=tuple((f"2024-01-{d:02d}",) for d in range(1, 13))))
    plan = PlanBuilder(catalog(ORDERS, view), live(ORDERS, view), list_partitions=lister({})).build()
    text = render(Review(plan), "text")
    assert "-- metastore retail.daily: add 12 partitions (ds=2024-01-01, ds=2024-01-02, " in text
    assert "ds=2024-01-10 and 2 more)" in text
    assert "partitions of view retail.daily: add 12" in render(Review(plan), "markdown")
    again = Plan.from_data(json.loads(render(Review(plan), "json")))
    assert again == plan
    recorded = RecordingTarget()
    apply_plan(again, recorded)
    assert recorded.actions == list(plan.steps[0].actions)
    # A plan reviewed between git refs cannot know the partitions a metastore has: they are not compared.
    assert differences(replace(plan, steps=()), plan) == []
