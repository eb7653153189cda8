"""The planner reads the capabilities of the catalog a plan is for (``plan.catalog_fit``): a change that renames tables
is blocked where the catalog renames none, whatever is allowed, and the object's other steps wait on it; no step has an
engine analyse views where the catalog runs none, while what a change breaks of the views over it is still said; and
apply keeps histories within the catalog's ``value_limit``. Pure Python: each ``Capabilities`` is made here."""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace

import pytest

from schemaflow.apply.executor import RecordingTarget, apply_plan
from schemaflow.capabilities import HIVE_METASTORE, Capabilities
from schemaflow.catalog.history import Entry, with_entries
from schemaflow.model import HISTORY_PREFIX, Catalog, Column, Table, View, fingerprint
from schemaflow.plan.kinds import StepKind
from schemaflow.plan.plan import Plan, PlanBuilder
from schemaflow.plan.steps import CheckLiveViews, DropViewAction

NO_RENAMES = Capabilities(noun="Glue Data Catalog", renames=False, engine=False, value_limit=512_000)
NO_ENGINE = Capabilities(noun="Iceberg REST catalog", renames=False, engine=False, value_limit=None)

ORDERS = Table("retail", "orders", (Column("id", "bigint"), Column("amount", "double")), format="textfile",
               comment="orders")
TOTALS = View("retail", "totals", "SELECT id, amount FROM retail.orders", (Column("id"), Column("amount")),
              reads=("retail.orders",))


def catalog(*objects: Table | View) -> Catalog:
    return Catalog(databases=("retail",), objects={o.key: o for o in objects})


def stamped(*objects: Table | View) -> Catalog:
    return catalog(*(replace(o, version=fingerprint(o)) for o in objects))


def plan(desired: Catalog, live: Catalog, capabilities: Capabilities = HIVE_METASTORE, backend: str = "hive",
         **options: object) -> Plan:
    return PlanBuilder(desired, live, capabilities=capabilities, catalog=backend, **options).build()  # type: ignore[arg-type]


@pytest.mark.parametrize("allow_destructive", [False, True])
def test_a_rewrite_is_blocked_where_the_catalog_renames_no_tables_and_the_tables_other_steps_wait(
        allow_destructive: bool) -> None:
    # Another format: only a rewrite makes it; the comment and the property would come with it.
    parquet = replace(ORDERS, format="parquet", comment="orders placed", properties={"team": "sales"})
    made = plan(catalog(parquet), stamped(ORDERS), NO_RENAMES, "glue", allow_destructive=allow_destructive)
    assert [s.kind for s in made.steps] == [StepKind.UNSUPPORTED]
    (rewrite,) = made.steps
    assert rewrite.summary == "storage (format 'textfile' -> 'parquet') on retail.orders"
    assert rewrite.blocked == (
        "storage (format 'textfile' -> 'parquet') needs a rewrite, and the Glue Data Catalog renames no tables, so "
        "schemaflow cannot rewrite retail.orders there (metastore.type glue; a rewrite copies its rows into "
        "retail.orders_rewrite_ and swaps that in by renaming): re-create it (remove its file and apply with "
        "--allow-destructive, which drops it and its data, then add the file back), or create a new table and copy "
        "the data, or keep the table in a Hive metastore (metastore.type hive), which renames tables")
    assert [type(a).__name__ for a in rewrite.actions] == ["SetParameters"] and not rewrite.destructive  # its stamp
    assert rewrite.values == ("comment: 'orders' -> 'orders placed'", "team: (none) -> 'sales'")
    assert rewrite.stamp is not None  # the table's last write, blocked with it
    # A Hive metastore renames: the same change is the rewrite, run only when allowed.
    hive = plan(catalog(parquet), stamped(ORDERS), allow_destructive=allow_destructive)
    assert [s.kind for s in hive.steps] == [StepKind.REWRITE_TABLE]
    assert bool(hive.steps[0].blocked) is not allow_destructive


def test_the_views_over_a_table_whose_rewrite_is_blocked_are_not_recreated_for_it() -> None:
    retyped = replace(ORDERS, format="parquet", columns=(Column("id", "bigint"), Column("amount", "string")))
    made = plan(catalog(retyped, TOTALS), stamped(ORDERS, TOTALS), NO_RENAMES, "glue", allow_destructive=True)
    assert [(s.kind, s.object) for s in made.steps] == [(StepKind.UNSUPPORTED, "retail.orders")]
    assert made.steps[0].values  # what the rewrite would have changed is still shown
    hive = plan(catalog(retyped, TOTALS), stamped(ORDERS, TOTALS), allow_destructive=True)
    assert StepKind.REWRITE_TABLE in [s.kind for s in hive.steps]


def test_a_conversion_to_iceberg_is_blocked_where_the_catalog_renames_no_tables() -> None:
    parquet = Table("retail", "events", (Column("id", "bigint"),), format="parquet", data_source=True)
    iceberg = replace(parquet, format="iceberg")
    in_place = plan(catalog(iceberg), stamped(parquet), NO_ENGINE, "iceberg_rest", allow_destructive=True).steps[0]
    assert (in_place.kind, in_place.summary) == (StepKind.UNSUPPORTED, "converting to Iceberg in place on retail.events")
    assert in_place.blocked == (
        "converting to Iceberg in place keeps the Parquet table by renaming it to retail.events_backup_, and the "
        "Iceberg REST catalog renames no tables (metastore.type iceberg_rest): create the Iceberg table under another "
        "name and copy the rows into it, or keep the table in a Hive metastore (metastore.type hive), which renames "
        "tables")
    text = replace(parquet, format="textfile", data_source=False)  # Iceberg registers no text files: a copy
    copied = plan(catalog(iceberg), stamped(text), NO_ENGINE, "iceberg_rest", allow_destructive=True).steps[0]
    assert copied.kind == StepKind.UNSUPPORTED
    assert copied.blocked.startswith(  # type: ignore[union-attr]
        "convert to Iceberg by copying: Iceberg registers Parquet files only, and the table is STORED AS textfile "
        "needs a rewrite, and the Iceberg REST catalog renames no tables")
    assert copied.blocked.endswith("create the Iceberg table under another name and copy the rows into it, or keep "  # type: ignore[union-attr]
                                   "the table in a Hive metastore (metastore.type hive), which renames tables")


def _actions(made: Plan) -> list[object]:
    return [action for step in made.steps for action in step.actions]


def test_without_an_engine_no_step_checks_live_views_and_a_view_is_dropped_as_an_entry() -> None:
    narrower = replace(TOTALS, sql="SELECT id, amount FROM retail.orders WHERE amount > 0")
    for capabilities, engine in ((HIVE_METASTORE, True), (NO_ENGINE, False)):
        replaced = _actions(plan(catalog(ORDERS, narrower), stamped(ORDERS, TOTALS), capabilities))
        assert any(isinstance(a, CheckLiveViews) for a in replaced) is engine
        dropped = _actions(plan(catalog(ORDERS), stamped(ORDERS, TOTALS), capabilities, allow_destructive=True))
        assert [a for a in dropped if isinstance(a, DropViewAction)] == [DropViewAction("retail.totals", engine)]
        assert any(isinstance(a, CheckLiveViews) for a in dropped) is engine


def test_without_an_engine_the_plan_still_says_what_a_change_breaks_of_the_views_over_it() -> None:
    # The view's SQL as the catalog stores it is read with sqlglot: dropping what it reads breaks it.
    for capabilities in (HIVE_METASTORE, NO_ENGINE):
        made = plan(catalog(TOTALS), stamped(ORDERS, TOTALS), capabilities, allow_destructive=True)
        drop = next(s for s in made.steps if s.kind == StepKind.DROP_TABLE)
        assert drop.blocked and "retail.totals reads retail.orders, which is dropped" in drop.blocked


def test_without_an_engine_the_views_a_plan_creates_are_not_given_to_the_engine_to_check() -> None:
    asked: list[tuple[str, ...]] = []

    def problems(views: tuple[str, ...], unchecked: Mapping[str, str]) -> dict[str, str]:
        asked.append(views)
        return {view: "the engine refuses it" for view in views}

    without = PlanBuilder(catalog(ORDERS, TOTALS), stamped(ORDERS), view_problems=problems,
                          capabilities=NO_ENGINE, catalog="iceberg_rest").build()
    assert asked == [] and not without.blocked
    with_engine = PlanBuilder(catalog(ORDERS, TOTALS), stamped(ORDERS), view_problems=problems).build()
    assert asked == [("retail.totals",)] and with_engine.steps[-1].blocked == "the engine refuses it"


@pytest.mark.parametrize("limit", [HIVE_METASTORE.value_limit, 512_000, None])
def test_apply_keeps_histories_within_the_value_limit_it_is_given(limit: int | None) -> None:
    key = HISTORY_PREFIX + "orders"
    entry = Entry("2026-12-01T10:00:00Z", "change", "table", "f" * 16, "c" * 40)
    long = with_entries(None, [entry] * 200, None)  # about 20,000 characters: more than a Hive metastore holds
    target = RecordingTarget()
    target.histories["retail"] = {key: long}
    apply_plan(plan(catalog(replace(ORDERS, comment="all orders")), stamped(ORDERS)), target, capabilities=Capabilities(value_limit=limit))  # type: ignore[arg-type]
    kept = json.loads(target.histories["retail"][key])
    assert kept["applies"][-1][1] == "change"
    if limit is None or limit == 512_000:
        assert (kept["earlier"], len(kept["applies"])) == (0, 201)
    else:
        assert len(target.histories["retail"][key]) <= limit < len(long) and kept["earlier"] > 0


def test_a_drop_says_what_becomes_of_the_files_as_the_catalog_drops_tables() -> None:
    kept = Capabilities(noun="Glue Data Catalog", renames=False, engine=False, drop_purges=False)
    located = replace(ORDERS, location="s3://lake/orders")
    notes = {}
    for name, capabilities in (("hive", HIVE_METASTORE), ("glue", kept)):
        made = plan(catalog(), stamped(located), capabilities, name, allow_destructive=True)
        (drop,) = made.steps
        assert drop.kind == StepKind.DROP_TABLE and drop.destructive
        notes[name] = drop.notes
    assert notes == {"hive": ("managed table: its data files are deleted with it",),
                     "glue": ("its Glue Data Catalog entry goes; the Glue Data Catalog deletes no files: they are kept "
                              "at s3://lake/orders",)}
