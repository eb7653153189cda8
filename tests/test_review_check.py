"""A reviewed plan against the plan made after merge: the same changes, or stale."""
from __future__ import annotations

import json
from dataclasses import replace

from schemaflow.model import Catalog, Column, Table
from schemaflow.plan.plan import PlanBuilder
from schemaflow.plan.review_check import differences
from schemaflow.workflow import applied_state

BASE = Table("retail", "orders", (Column("id", "bigint"),), (Column("ds", "string"),))
HEAD = replace(BASE, columns=BASE.columns + (Column("coupon", "string"),), comment="Orders")


def catalog(*tables: Table) -> Catalog:
    return Catalog(("retail",), {t.key: t for t in tables})


def test_counts_notes_and_the_commit_may_differ_the_changes_may_not():
    reviewed = PlanBuilder(catalog(HEAD), applied_state(catalog(BASE)), commit="pr-head").build()
    after_merge = PlanBuilder(catalog(HEAD), applied_state(catalog(BASE)), commit="merge-commit",
                              count_partitions=lambda key: 60_000, stale_partitions=lambda key: 0).build()
    assert reviewed.steps[0].notes != after_merge.steps[0].notes  # counts known only after merge
    assert differences(reviewed, after_merge) == []


def test_a_metastore_that_moved_since_the_review_makes_it_stale():
    reviewed = PlanBuilder(catalog(HEAD), applied_state(catalog(BASE))).build()
    moved = applied_state(catalog(replace(BASE, comment="Orders")))  # someone applied the comment already
    after_merge = PlanBuilder(catalog(HEAD), moved).build()
    assert differences(reviewed, after_merge) == [
        "planned differently: add 1 column to retail.orders: coupon string",  # it now carries the stamp
        "no longer planned: comment on table retail.orders: (none) -> 'Orders'"]


def test_a_reviewed_drop_is_the_same_drop_after_merge_though_its_record_names_another_commit():
    other = Table("retail", "legacy", (Column("id", "bigint"),))
    reviewed = PlanBuilder(catalog(BASE), applied_state(catalog(BASE, other)), allow_destructive=True, commit="pr-head").build()
    after_merge = PlanBuilder(catalog(BASE), applied_state(catalog(BASE, other)), allow_destructive=True,
                              commit="merge-commit").build()
    assert reviewed.steps[0].actions != after_merge.steps[0].actions  # the drop's record names its commit
    assert differences(reviewed, after_merge) == []
    older = PlanBuilder(catalog(BASE), applied_state(catalog(BASE, replace(other, comment="x"))), allow_destructive=True).build()
    assert differences(reviewed, older) == ["planned differently: drop table retail.legacy"]  # another version


def test_a_reviewed_drop_of_an_object_schemaflow_never_stamped_is_not_stale():
    other = Table("retail", "legacy", (Column("id", "bigint"),))
    reviewed = PlanBuilder(catalog(BASE), applied_state(catalog(BASE, other)), allow_destructive=True).build()
    adopted = replace(applied_state(catalog(BASE, other)), objects={
        **applied_state(catalog(BASE)).objects, other.key: other})  # live, as an import finds it: no version
    after_merge = PlanBuilder(catalog(BASE), adopted, allow_destructive=True).build()
    def version(plan):
        [record] = [json.loads(value) for action in plan.steps[0].actions
                    for value in getattr(action, "properties", {}).values()]
        return record["version"]

    assert version(after_merge) is None and version(reviewed) is not None
    assert differences(reviewed, after_merge) == []
