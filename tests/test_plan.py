"""The planner without a JVM: diff, re-creation of dependent views, ordering, blocking, stamps."""
from __future__ import annotations

import io
import re
from dataclasses import replace

import pytest

from schemaflow.apply.executor import ApplyError, RecordingTarget, apply_plan
from schemaflow.claims import Claim
from schemaflow.errors import ConcurrentChange, SchemaflowError, Unreachable
from schemaflow.model import (APPLIED_AT_KEY, APPLIED_STATE_KEY, LIVE_STATE, MANAGED_KEYS_KEY, VERSION_KEY, Catalog, Column,
                              Table, View, fingerprint)
from schemaflow.plan.plan import DESTRUCTIVE_BLOCK, Plan, PlanBuilder
from schemaflow.plan.rewrite import REWRITE_BLOCK
from schemaflow.plan.steps import (APPLIED_AT, AddColumnsAction, CheckLiveViews, CreateTableAction, CreateViewAction,
                                   KeepViewPartitions, PartitionView, RewriteRows, SetColumns, SetParameters,
                                   SetTableCommentAction)
from tests.catalogs import DAILY, DESIRED, ORDERS, TOP, applied, catalog, table, view


STAMPED = {APPLIED_AT_KEY: APPLIED_AT, APPLIED_STATE_KEY: LIVE_STATE}  # what every stamp records beside the version


def kinds(plan: Plan) -> list[tuple[str, str]]:
    return [(s.kind, s.object) for s in plan.steps]


def test_everything_new_is_created_in_dependency_order():
    plan = PlanBuilder(DESIRED, Catalog()).build()
    assert kinds(plan) == [("create_database", "retail"), ("create_table", "retail.orders"),
                           ("create_view", "retail.daily"), ("create_view", "retail.top")]
    # Each object's last write, folded into its step, stamps its properties and version.
    create, stamp = plan.steps[1].actions
    assert create == CreateTableAction(ORDERS) and create.describe().startswith("CREATE TABLE `retail`.`orders` (")
    assert stamp == SetParameters("retail.orders", {"owner": "sales-eng", MANAGED_KEYS_KEY: "owner",
                                                    VERSION_KEY: fingerprint(ORDERS), **STAMPED})
    assert plan.steps[1].notes == ("properties: set owner",)
    assert plan.steps[2].actions[0] == CreateViewAction(DAILY)
    assert plan.steps[2].actions[0].statements[0] == "USE `retail`"
    assert plan.steps[2].actions[-1] == SetParameters("retail.daily", {VERSION_KEY: fingerprint(DAILY),
                                                                       **STAMPED})


def test_a_view_on_a_view_waits_for_its_base_even_when_its_name_sorts_first():
    early = view("retail.aaa", "SELECT order_id FROM retail.top", ("order_id",), ("retail.top",))
    plan = PlanBuilder(catalog(ORDERS, DAILY, TOP, early), Catalog()).build()
    views = [s.object for s in plan.steps if s.kind == "create_view"]
    assert views == ["retail.daily", "retail.top", "retail.aaa"]


def test_applied_state_plans_nothing():
    assert PlanBuilder(DESIRED, applied(DESIRED)).build().is_empty


def test_the_state_an_apply_leaves_is_what_the_stamps_of_a_plan_write():
    from schemaflow.model import Migration, RenameColumn, recorded
    from schemaflow.workflow import applied_state

    renamed = Migration("0001_rename", "", (RenameColumn("retail.orders", "id", "order_id"),), checksum="abc")
    elsewhere = Migration("0002_other", "", (RenameColumn("retail.other", "a", "b"),), checksum="def")
    desired = replace(DESIRED, migrations=(renamed, elsewhere))
    stamps = {s.object: s.stamp for s in PlanBuilder(desired, Catalog()).build().steps if s.stamp}
    left = applied_state(desired)
    assert sorted(stamps) == sorted(left.objects)
    for key, obj in left.objects.items():
        written = recorded(stamps[key].set)
        assert (obj.version, obj.managed_keys) == (written["version"], written["managed_keys"]) != (None, ())
        if isinstance(obj, Table):
            assert obj.migrations == written["migrations"] and list(obj.migrations) == ["0001_rename"]
    assert PlanBuilder(desired, left).build().is_empty


def test_appended_column_on_partitioned_table_is_table_only_and_leaves_views_that_name_their_columns():
    wider = replace(ORDERS, columns=ORDERS.columns + (Column("coupon", "string", "Coupon code"),))
    plan = PlanBuilder(catalog(wider, DAILY, TOP), applied(DESIRED), count_partitions={"retail.orders": 120}.get).build()
    assert kinds(plan) == [("add_columns", "retail.orders")]
    add = plan.steps[0]
    assert add.actions[0] == AddColumnsAction("retail.orders", (Column("coupon", "string", "Coupon code"),))
    assert add.actions[0].statements == ("ALTER TABLE `retail`.`orders` ADD COLUMNS (\n"
                                         "  `coupon` string COMMENT 'Coupon code'\n)",)
    assert add.actions[1].set[VERSION_KEY] == fingerprint(wider)
    assert add.notes == ("table only: 120 partitions keep their old column list "
                         "(safe: appended columns read as NULL there)",)


def test_comment_and_property_changes_touch_only_what_changed():
    live = applied(replace(DESIRED, objects={**DESIRED.objects, "retail.orders": replace(
        ORDERS, comment="old", properties={"owner": "sales-eng", "stale": "1", "foreign": "x"})}))
    live = replace(live, objects={**live.objects, "retail.orders": replace(
        live.objects["retail.orders"], managed_keys=("owner", "stale"))})
    desired_orders = replace(ORDERS, comment="new", columns=(
        Column("order_id", "bigint", "The id"), ORDERS.columns[1]), properties={"owner": "data-eng"})
    plan = PlanBuilder(catalog(desired_orders, DAILY, TOP), live).build()
    assert kinds(plan) == [("alter_columns", "retail.orders"), ("set_table_comment", "retail.orders")]
    # Hive counts a comment change as "not the same columns": the partitions follow by default.
    assert plan.steps[0].actions == (SetColumns("retail.orders", desired_orders.columns, ORDERS.partition_columns,
                                                cascade=True),)
    assert plan.steps[0].summary == "alter columns of retail.orders: change comment of order_id"
    comment, stamp = plan.steps[1].actions
    assert comment == SetTableCommentAction("retail.orders", "new")
    assert comment.statements == ("COMMENT ON TABLE `retail`.`orders` IS 'new'",)
    assert plan.steps[1].notes == ("properties: set owner; unset stale",)
    assert stamp.set == {"owner": "data-eng", MANAGED_KEYS_KEY: "owner", VERSION_KEY: fingerprint(desired_orders),
                         **STAMPED}
    assert stamp.unset == ("stale",)  # "foreign" was never schemaflow's: left alone
    # What each changed comment and property was and becomes, for the reviewer.
    assert plan.steps[0].values == ("comment of order_id: (none) -> 'The id'",)
    assert plan.steps[1].values == ("owner: 'sales-eng' -> 'data-eng'", "stale: '1' -> (none)")


def test_a_property_value_shown_in_a_plan_is_cut_short_and_a_new_objects_are_not_listed():
    live = applied(DESIRED)
    long = "x" * 500
    plan = PlanBuilder(catalog(replace(ORDERS, properties={"owner": "sales-eng", "note": long}), DAILY, TOP), live).build()
    [value] = plan.steps[0].values
    assert value == "note: (none) -> '" + "x" * 115 + "...'" and len(value) == len("note: (none) -> ") + 120
    created = PlanBuilder(DESIRED, Catalog(databases=("retail",))).build()
    assert all(step.values == () for step in created.steps)


def test_property_only_change_is_planned():
    live = applied(DESIRED)
    desired = catalog(replace(ORDERS, properties={"owner": "data-eng"}), DAILY, TOP)
    plan = PlanBuilder(desired, live).build()
    assert kinds(plan) == [("set_properties", "retail.orders")]
    assert plan.steps[0].summary == "set owner on retail.orders"


def test_removing_every_property_unsets_them_and_the_managed_key_list():
    live = applied(DESIRED)
    plan = PlanBuilder(catalog(replace(ORDERS, properties={}), DAILY, TOP), live).build()
    assert plan.steps[0].summary == "unset owner on retail.orders"
    assert plan.steps[0].actions == (SetParameters(
        "retail.orders", {VERSION_KEY: fingerprint(replace(ORDERS, properties={})), **STAMPED},
        ("owner", MANAGED_KEYS_KEY)),)


def test_drops_are_blocked_unless_allowed_and_views_go_before_their_tables():
    live = applied(DESIRED)
    only_orders = catalog(ORDERS)
    blocked = PlanBuilder(only_orders, live).build()
    assert kinds(blocked) == [("drop_view", "retail.top"), ("drop_view", "retail.daily")]
    assert all(s.blocked == DESTRUCTIVE_BLOCK and s.destructive for s in blocked.steps)
    with pytest.raises(SchemaflowError, match="2 blocked step"):
        apply_plan(blocked, RecordingTarget())
    everything = PlanBuilder(Catalog(databases=("retail",)), live, allow_destructive=True).build()
    assert kinds(everything) == [("drop_view", "retail.top"), ("drop_view", "retail.daily"),
                                 ("drop_table", "retail.orders")]
    assert not everything.blocked
    assert everything.steps[2].notes == ("managed table: its data files are deleted with it",)


@pytest.mark.parametrize("change, what", [
    (lambda t: replace(t, columns=t.columns[:1]), "column amount of retail.orders disappears"),
    # A partition column gone with its values: a rewrite would leave them behind, as a drop does.
    (lambda t: replace(t, partition_columns=()), "column ds of retail.orders disappears"),
    (lambda t: replace(t, columns=t.columns[::-1]),
     "the columns of retail.orders are in another order than live (order_id, amount)"),
])
def test_changes_that_cannot_be_made_in_place_are_blocked(change, what):
    plan = PlanBuilder(catalog(change(ORDERS), DAILY, TOP), applied(DESIRED)).build()
    unsupported = [s for s in plan.steps if s.kind == "unsupported"]
    assert [s.summary for s in unsupported] == [f"{what} on retail.orders"]
    assert unsupported[0].blocked.startswith(what + " is not supported in place")


@pytest.mark.parametrize("change, why", [
    (lambda t: replace(t, columns=(Column("order_id", "int"), t.columns[1])),
     "column order_id cannot change from bigint to int: the metastore compares types position by position "
     "and refuses that (hive.metastore.disallow.incompatible.col.type.changes)"),
    (lambda t: replace(t, columns=t.all_columns, partition_columns=()), "partition columns (ds) -> ()"),
    (lambda t: replace(t, format="orc"), "storage (format 'parquet' -> 'orc')"),
])
def test_changes_the_files_cannot_take_in_place_are_rewrites_run_only_when_allowed(change, why):
    plan = PlanBuilder(catalog(change(ORDERS), DAILY, TOP), applied(DESIRED)).build()
    [rewrite] = [s for s in plan.steps if s.object == "retail.orders"]
    assert (rewrite.kind, rewrite.summary, rewrite.blocked) == ("rewrite_table", f"rewrite table retail.orders: {why}",
                                                                REWRITE_BLOCK)
    assert rewrite.destructive and not [s for s in plan.steps if s.kind == "unsupported"]
    allowed = PlanBuilder(catalog(change(ORDERS), DAILY, TOP), applied(DESIRED), allow_destructive=True).build()
    [rewrite] = [s for s in allowed.steps if s.object == "retail.orders"]
    assert rewrite.blocked is None or rewrite.blocked != REWRITE_BLOCK
    [copy] = rewrite.body
    assert isinstance(copy, RewriteRows) and copy.table == change(ORDERS)


def test_view_comment_change_does_not_recreate_views_downstream():
    desired = catalog(ORDERS, replace(DAILY, comment="Daily orders"), TOP)
    plan = PlanBuilder(desired, applied(DESIRED)).build()
    assert kinds(plan) == [("replace_view", "retail.daily")]
    assert plan.steps[0].summary == "re-create view retail.daily: comment changed"


def test_view_sql_change_ignores_whitespace_and_case():
    desired = catalog(ORDERS, replace(DAILY, sql="select order_id,\n  ds from retail.orders"), TOP)
    assert PlanBuilder(desired, applied(DESIRED)).build().is_empty


def test_partitioned_view_moves_its_columns_to_partition_keys():
    partitioned = replace(DAILY, partitioned_on=("ds",))
    plan = PlanBuilder(catalog(ORDERS, partitioned, TOP), applied(DESIRED)).build()
    # Re-created: its partitions are read first, to come back as they were (none here, as it was not partitioned), and
    # the live view Spark analyses as it replaces it is checked to hold the SQL planned (plan.live_code).
    assert [type(a) for a in plan.steps[0].actions] == [KeepViewPartitions, CheckLiveViews, CreateViewAction,
                                                        PartitionView, SetParameters]
    assert plan.steps[0].actions[0] == KeepViewPartitions("retail.daily")
    assert plan.steps[0].actions[3] == PartitionView("retail.daily", ("ds",))


def test_plan_round_trips_through_json_and_applies_the_same_actions():
    plan = PlanBuilder(DESIRED, Catalog()).build()
    again = Plan.from_data(__import__("json").loads(plan.to_json()))
    assert again == plan
    recorded = RecordingTarget()
    run = Claim("run1", "ci-host", 4242, "2026-01-01T00:00:00Z")
    apply_plan(again, recorded, claim=run)
    # The executor writes the moment of each write where the plan holds its placeholder, and gives each object
    # created the run's claim; the object's stamp then expects that claim.
    times = {a.set[APPLIED_AT_KEY] for a in recorded.actions if isinstance(a, SetParameters)}
    assert len(times) >= 1 and all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", t) for t in times)
    tokens = {s.object: run.for_object((s.kind,), False).token for s in plan.steps if s.object_type != "database"}
    planned = [a for s in plan.steps for a in s.actions]
    as_recorded = [replace(a, set={k: APPLIED_AT if k == APPLIED_AT_KEY else v for k, v in a.set.items()})
                   if isinstance(a, SetParameters) else a for a in recorded.actions]
    assert as_recorded == planned
    assert recorded.claims == [tokens[a.object] for a in planned if isinstance(a, (CreateTableAction, CreateViewAction))]
    assert recorded.guards == [tokens[a.object] for a in planned if isinstance(a, (SetParameters, PartitionView))]


class FailingTarget(RecordingTarget):
    def create_view(self, view: View, replace: bool, claim: str) -> None:
        if view.key == "retail.top":
            raise RuntimeError("boom")
        super().create_view(view, replace, claim)


def test_a_failed_step_names_what_was_and_was_not_applied():
    plan = PlanBuilder(DESIRED, Catalog()).build()
    with pytest.raises(ApplyError) as caught:
        apply_plan(plan, FailingTarget())
    message = str(caught.value)
    assert caught.value.failed == 3
    assert message.splitlines()[0] == "step 4 failed (create view retail.top): boom"
    assert "applied (3):\n  1. create database retail\n  2. create table retail.orders" in message
    assert "not applied (1):\n  4. create view retail.top\n" in message


def test_view_column_comments_count_only_where_declared():
    # Spark carries the comment of a selected column over into the view; it is not a change.
    live = applied(DESIRED)
    inherited = replace(live.objects["retail.daily"], columns=(Column("order_id", "bigint", "Order id"), Column("ds", "string")))
    live = replace(live, objects={**live.objects, "retail.daily": inherited})
    assert PlanBuilder(DESIRED, live).build().is_empty
    declared = replace(DAILY, columns=(Column("order_id", comment="The order"), Column("ds")))
    plan = PlanBuilder(catalog(ORDERS, declared, TOP), live).build()
    assert [s.summary for s in plan.steps] == ["re-create view retail.daily: column comments changed"]


def test_a_long_apply_says_how_far_it_is_and_about_how_long_the_rest_takes():
    plan = PlanBuilder(catalog(*(table(f"retail.t{i}", "id:bigint") for i in range(8))), Catalog()).build()
    assert len(plan.steps) == 9  # the database, then eight tables
    ticks = iter(range(0, 1000, 10))  # each reading of the clock is 10 s after the one before: 20 s a step
    out = io.StringIO()
    apply_plan(plan, RecordingTarget(), progress=out, clock=lambda: next(ticks))
    lines = out.getvalue().splitlines()
    # Every step's line says how long it took; between them, every 30 s or more, how far the apply is.
    assert [line for line in lines if not line.startswith("[")] == [
        "      1 of 9 steps done in 30 s; about 4 min left",
        "      3 of 9 steps done in 70 s; about 2 min left",
        "      5 of 9 steps done in 110 s; about 88 s left",
        "      7 of 9 steps done in 2 min; about 43 s left"]
    assert lines[0] == "[1/9] create database retail ... done (10.0s)"
    assert lines[-1] == "[9/9] create table retail.t7 (1 column, parquet) ... done (10.0s)"
    assert len(lines) == 13


def test_an_apply_says_how_long_claiming_the_objects_it_changes_took_before_its_first_step():
    plan = PlanBuilder(catalog(replace(ORDERS, comment="Changed"), DAILY, TOP), applied(DESIRED)).build()
    assert list(plan.guards) == ["retail.orders"]
    ticks = iter(range(0, 1000, 10))
    out = io.StringIO()
    recorded = RecordingTarget()
    apply_plan(plan, recorded, progress=out, clock=lambda: next(ticks))
    lines = out.getvalue().splitlines()
    assert lines[0] == "Claiming the 1 object it changes ... done (10.0s)"
    assert lines[1].startswith("[1/1] ")
    assert recorded.actions[0] == SetParameters("retail.orders", {VERSION_KEY: recorded.actions[0].set[VERSION_KEY]})


def test_a_claim_refused_says_failed_on_the_claiming_line_and_nothing_was_applied():
    plan = PlanBuilder(catalog(replace(ORDERS, comment="Changed"), DAILY, TOP), applied(DESIRED)).build()

    class Refusing(RecordingTarget):
        def set_parameters(self, key, set, unset, expected=None):
            raise ConcurrentChange(key, expected, "another version")
    out = io.StringIO()
    with pytest.raises(SchemaflowError, match="nothing was applied"):
        apply_plan(plan, Refusing(), progress=out)
    assert out.getvalue() == "Claiming the 1 object it changes ... FAILED\n"


class CutOff(RecordingTarget):
    """A metastore that takes the claims, then refuses every write: with each of ``failures`` in turn, the last for good."""

    def __init__(self, *failures: type[Exception]) -> None:
        super().__init__()
        self.failures = list(failures)
        self.tried: list[str] = []  # the writes refused

    def set_parameters(self, key, set, unset, expected=None):
        if len(self.actions) < 3:  # the three claims
            return super().set_parameters(key, set, unset, expected)
        self.tried.append(key)
        raise (self.failures.pop(0) if len(self.failures) > 1 else self.failures[0])(f"refused {key}")


def _three_changed() -> Plan:
    changed = catalog(replace(ORDERS, comment="Changed"), replace(DAILY, comment="Changed"),
                      replace(TOP, comment="Changed"))
    plan = PlanBuilder(changed, applied(DESIRED)).build()
    assert sorted(plan.guards) == ["retail.daily", "retail.orders", "retail.top"]
    return plan


def test_a_metastore_that_cannot_be_reached_mid_apply_is_not_asked_to_take_each_claim_back():
    target = CutOff(Unreachable)
    with pytest.raises(ApplyError, match="refused retail.orders"):
        apply_plan(_three_changed(), target)
    # The failed write was the only one tried: the claims stay, for the next run to take over.
    assert target.tried == ["retail.orders"]


def test_after_another_failure_the_claims_are_handed_back_until_the_metastore_cannot_be_reached():
    target = CutOff(RuntimeError)
    with pytest.raises(ApplyError):
        apply_plan(_three_changed(), target)
    # The failed write, then a hand-back of each object not begun.
    assert target.tried == ["retail.orders", "retail.daily", "retail.top"]

    target = CutOff(RuntimeError, Unreachable)
    with pytest.raises(ApplyError):
        apply_plan(_three_changed(), target)
    # The failed write, then one hand-back that found the metastore gone.
    assert target.tried == ["retail.orders", "retail.daily"]


def test_a_fingerprint_kept_for_an_object_is_never_another_object_s() -> None:
    """Fingerprints are kept per object while it lives; one made after it, at its address, gets its own."""
    digests, addresses = {}, set()
    for n in range(50):  # freed objects' addresses are reused at once: some of these share one
        table = Table("db", f"t{n}", (Column("id", "bigint"), Column(f"c{n}", "string")))
        addresses.add(id(table))
        digests[n] = fingerprint(table)
        assert fingerprint(table) == digests[n]
        del table  # freed here, by its reference count (a full collection each time took 2 s)
    assert len(addresses) < 50  # the case this is about happened
    assert len(set(digests.values())) == 50
    assert digests == {n: fingerprint(Table("db", f"t{n}", (Column("id", "bigint"), Column(f"c{n}", "string"))))
                       for n in range(50)}


def test_a_property_removed_from_the_file_is_unset_on_an_adopted_table_as_plan_base_plans_it():
    from schemaflow.workflow import applied_state

    base = catalog(table("retail.orders", "id:bigint", properties={"owner": "sales", "tier": "1"}))
    head = catalog(table("retail.orders", "id:bigint", properties={"owner": "sales"}))
    [imported] = base.objects.values()  # as import leaves it: the properties, no stamp, nothing managed yet
    reviewed = PlanBuilder(head, applied_state(base)).build()     # plan --base: the base as an apply left it
    adopted = PlanBuilder(head, catalog(imported)).build()         # plan against the metastore after import

    def unset(plan: Plan) -> list[tuple[str, tuple[str, ...]]]:
        return [(s.kind, a.unset) for s in plan.steps for a in s.actions if isinstance(a, SetParameters)]
    assert unset(reviewed) == unset(adopted) == [("set_properties", ("tier",))]
    # A table schemaflow has stamped keeps to the keys it recorded: others' properties stay.
    stamped = replace(imported, version="v1", managed_keys=("owner",))
    assert unset(PlanBuilder(head, catalog(stamped)).build()) == []


@pytest.mark.parametrize("count, said", [(1, "1 partition keeps its"), (30, "30 partitions keep their"),
                                         (None, "an unknown number of existing partitions keep their")])
def test_the_partitions_an_append_leaves_alone_are_counted_in_words_that_agree(count, said):
    from schemaflow.plan.changes import AddColumns
    from schemaflow.plan.hazards import restrict_hazard

    [note] = AddColumns("retail.orders", (Column("coupon", "string"),), True, count).to_step().notes
    assert note == f"table only: {said} old column list (safe: appended columns read as NULL there)"
    assert restrict_hazard(count).startswith(f"restrict: {said.replace('an unknown number of ', '')} old")


def test_a_blocked_change_does_not_hide_the_tables_other_changes_it_holds_them_waiting():
    live = table("retail.orders", "id:bigint", comment="Orders", properties={"owner": "sales"})
    want = replace(live, external=True, location="s3://lake/orders", comment="All orders",
                   properties={"owner": "sales-eng"})
    plan = PlanBuilder(catalog(want), applied(catalog(live))).build()
    assert [(s.kind, s.blocked is not None) for s in plan.steps] == [("unsupported", True), ("set_table_comment", True)]
    comment = plan.steps[1]
    assert comment.blocked == "waits on step 1, which cannot run as planned"
    assert comment.summary == "comment on table retail.orders: 'Orders' -> 'All orders'"
    assert comment.values == ("owner: 'sales' -> 'sales-eng'",)  # the stamp, with the property, waiting too


def test_a_blocked_column_change_shows_every_change_of_its_write_and_holds_the_tables_others_waiting():
    # A decimal widening rode unseen behind a column gone with no migration: it is the same write, shown with it.
    live = replace(table("retail.orders", "amount:decimal(10,2)", comment="Orders", properties={"owner": "sales"}),
                   columns=(Column("amount", "decimal(10,2)"), Column("s", "struct<x:int>")))
    want = replace(live, columns=(Column("amount", "decimal(12,2)"), Column("note", "string")), comment="All orders",
                   properties={"owner": "eng"})
    plan = PlanBuilder(catalog(want), applied(catalog(live))).build()
    assert [(s.kind, s.blocked is not None) for s in plan.steps] == [("unsupported", True), ("set_table_comment", True)]
    assert plan.steps[0].values == ("type of column amount: 'decimal(10,2)' -> 'decimal(12,2)'",
                                    "column note: (none) -> string", "column s: struct<x:int> -> (none)")
    assert plan.steps[1].blocked == "waits on step 1, which cannot run as planned"
    assert plan.steps[1].values == ("owner: 'sales' -> 'eng'",)


def test_a_rewrite_shows_every_change_its_new_definition_makes():
    # The metastore's positional rule refuses the struct change in place: the whole new definition is one rewrite.
    live = replace(table("retail.orders", "amount:decimal(10,2)", comment="Orders", properties={"owner": "sales"}),
                   columns=(Column("amount", "decimal(10,2)"), Column("s", "struct<x:int>")))
    want = replace(live, columns=(Column("amount", "decimal(12,2)"), Column("s", "struct<x:bigint>"),
                                  Column("note", "string")), comment="All orders", properties={"owner": "eng"})
    [step] = PlanBuilder(catalog(want), applied(catalog(live))).build().steps
    assert (step.kind, step.blocked) == ("rewrite_table", REWRITE_BLOCK)
    assert step.values == ("type of column amount: 'decimal(10,2)' -> 'decimal(12,2)'",
                           "type of column s: 'struct<x:int>' -> 'struct<x:bigint>'",
                           "column note: (none) -> string", "comment: 'Orders' -> 'All orders'",
                           "owner: 'sales' -> 'eng'")
    assert step.stamp is not None and step.stamp.set["owner"] == "eng"
    [copy] = step.body
    assert isinstance(copy, RewriteRows)
    assert copy.copy == ("INSERT INTO `retail`.`orders_rewrite_`\nSELECT TRY_CAST(`amount` AS DECIMAL(12, 2)) AS `amount`, "
                         "TRY_CAST(`s` AS STRUCT<x: BIGINT>) AS `s`, CAST(NULL AS STRING) AS `note` "
                         "FROM `retail`.`orders`")
    # A struct gaining a field is no cast Spark makes: not a rewrite, but a refusal with the way out.
    grown = replace(want, columns=(want.columns[0], Column("s", "struct<x:int,y:int>"), want.columns[2]))
    [refused, _] = PlanBuilder(catalog(grown), applied(catalog(live))).build().steps
    assert refused.kind == "unsupported" and refused.summary.startswith(
        "change type of s from struct<x:int> to struct<x:int,y:int>")
    assert "a rewrite converts a nested value only to a type of the same shape" in refused.blocked


def test_a_comment_on_a_data_source_column_that_nests_varchar_is_blocked_and_a_top_level_one_is_not():
    # Spark 4.0 refuses ALTER COLUMN ... COMMENT on array<varchar(3)> of a data-source table
    # (NOT_SUPPORTED_CHANGE_COLUMN): it compares the stored type with one that has string for varchar.
    events = replace(table("retail.events", "name:varchar(3)", "tags:array<varchar(3)>"), format="json",
                     data_source=True)
    live = applied(catalog(events))
    commented = replace(events, columns=tuple(replace(c, comment="Said") for c in events.columns))
    plan = PlanBuilder(catalog(commented), live).build()
    assert kinds(plan) == [("rewrite_table", "retail.events")]
    assert plan.steps[0].summary == ("rewrite table retail.events: change comment of column tags (array<varchar(3)>: "
                                     "Spark cannot alter a column whose type nests char or varchar)")
    only_name = replace(events, columns=(replace(events.columns[0], comment="Said"), events.columns[1]))
    assert kinds(PlanBuilder(catalog(only_name), live).build()) == [("set_column_comments", "retail.events")]
