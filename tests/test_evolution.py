"""Column evolution without a JVM: migrations, inference, the cascade decision, hazards, records.

The histories of ``tests/migration_histories.py`` are planned from a table as each commit left it.
"""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from schemaflow.model import (MIGRATION_PREFIX, Catalog, Column, DropColumn, Migration, PartitionsMode, RenameColumn,
                              ReorderColumns, Table, fingerprint)
from schemaflow.plan.diff import diff
from schemaflow.plan.evolution import ColumnListChange, evolve, replayed
from schemaflow.plan.hazards import column_hazards
from schemaflow.plan.plan import HIDING_BLOCK, PlanBuilder
from schemaflow.plan.readers import READER_BLOCK
from schemaflow.plan.rewrite import REWRITE_BLOCK
from schemaflow.plan.steps import APPLIED_AT, RewriteRows, SetColumns
from schemaflow.spec import load_catalog
from schemaflow.workflow import applied_state
from tests.migration_histories import HISTORIES, Stage, random_history, write_stage

LIVE = Table("retail", "orders", (Column("order_id", "bigint"), Column("cust_id", "bigint"),
                                  Column("amount", "decimal(10,2)"), Column("legacy_flag", "boolean")),
             (Column("ds", "string"),), format="parquet")
DESIRED = replace(LIVE, columns=(Column("order_id", "bigint"), Column("customer_id", "bigint"),
                                 Column("amount", "decimal(12,2)")))
RENAME = Migration("0003_customer_rename", "Rename cust_id to customer_id and widen amount", (
    RenameColumn("retail.orders", "cust_id", "customer_id"),
    DropColumn("retail.orders", "legacy_flag"),
    ReorderColumns("retail.orders", ("order_id", "customer_id", "amount")),
))


def live(*tables: Table) -> Catalog:
    return Catalog(("retail",), {t.key: replace(t, version=fingerprint(t)) for t in tables})


def desired(*tables: Table, migrations: tuple[Migration, ...] = ()) -> Catalog:
    return Catalog(("retail",), {t.key: t for t in tables}, migrations)


def plan_for(want: Table, have: Table, *migrations: Migration, count: int | None = 1200, stale: int | None = 0,
             allow_destructive: bool = False):
    return PlanBuilder(desired(want, migrations=migrations), live(have), commit="abc123",
                       count_partitions=lambda key: count, stale_partitions=lambda key: stale,
                       allow_destructive=allow_destructive).build()


def test_a_cascade_too_short_to_estimate_shows_no_estimate():
    [step] = plan_for(DESIRED, LIVE, RENAME, count=2).steps
    assert step.notes[1] == "cascade: the column lists of 2 partitions follow the table"


def test_the_issue_example_renames_drops_and_widens_in_one_cascading_alter():
    # cust_id's values would read NULL as customer_id: as a drop, it needs the plan's permission.
    [blocked] = plan_for(DESIRED, LIVE, RENAME).steps
    assert blocked.blocked == HIDING_BLOCK and blocked.destructive
    plan = plan_for(DESIRED, LIVE, RENAME, allow_destructive=True)
    [step] = plan.steps
    assert step.kind == "alter_columns" and not step.blocked
    assert replace(blocked, blocked=None) == step
    assert step.summary == ("alter columns of retail.orders: rename cust_id to customer_id (0003_customer_rename); "
                            "drop legacy_flag (0003_customer_rename); reorder to (order_id, customer_id, amount) "
                            "(0003_customer_rename); change type of amount from decimal(10,2) to decimal(12,2)")
    # The migration is recorded in the same metastore write as the columns: a crash cannot part them.
    [columns_written] = [a for a in step.actions if isinstance(a, SetColumns)]
    assert replace(columns_written, parameters={}) == SetColumns("retail.orders", DESIRED.columns,
                                                                 LIVE.partition_columns, cascade=True)
    assert step.notes[:2] == ("applies migration 0003_customer_rename",
                              "cascade: the column lists of 1200 partitions follow the table (estimate: 3 s)")
    assert step.hazards == (
        "rename cust_id -> customer_id: parquet files find columns by name, so customer_id reads NULL in existing data "
        "(declare 'rewrite: when_values_hide' on the table to copy them under the new name)",
        "drop legacy_flag: its values stay in the files but no reader sees them")
    assert step.destructive  # a column is dropped, but the migration that names it is the permission
    assert list(columns_written.parameters) == [MIGRATION_PREFIX + "0003_customer_rename"]
    record = json.loads(columns_written.parameters[MIGRATION_PREFIX + "0003_customer_rename"])
    assert record == {"at": APPLIED_AT, "checksum": "", "commit": "abc123"}
    assert not any(k.startswith(MIGRATION_PREFIX) for k in step.actions[-1].set)  # not recorded twice


def test_unchanged_columns_evolve_as_the_whole_replay_finds_without_running_it():
    types = ("bigint", "string", "decimal(12,2)", "timestamp", "int", "double", "date", "boolean", "array<string>",
             "map<string,int>", "struct<kind:string,os:string>", "varchar(32)", "char(4)", "binary", "tinyint")
    columns = tuple(Column(f"c{i}_{j}", t, comment) for i, t in enumerate(types)
                    for j, comment in enumerate((None, f"Column {i}", "")))
    table = replace(LIVE, columns=columns)
    elsewhere = Migration("0009_other", "Another table's", (RenameColumn("retail.customers", "a", "b"),))
    for migrations in ((), (elsewhere,)):
        fast = evolve(table, replace(table, comment="another object, the same columns"), migrations)
        assert fast == replayed(table, table, migrations)
        assert (fast.kind, fast.operations, fast.problems) == (ColumnListChange.SAME, (), ())
    # A migration of the table itself is replayed, even when the columns look the same.
    assert evolve(live(LIVE).objects["retail.orders"], LIVE, (RENAME,)) == replayed(
        live(LIVE).objects["retail.orders"], LIVE, (RENAME,))
    assert evolve(LIVE, LIVE, (RENAME,)).problems


def test_a_recorded_migration_is_never_applied_again():
    applied = replace(DESIRED, migrations={"0003_customer_rename": "{}"})
    assert PlanBuilder(desired(DESIRED, migrations=(RENAME,)), live(applied)).build().is_empty


def test_dropping_a_middle_column_when_types_shift_positions_is_a_rewrite():
    middle = replace(LIVE, columns=(LIVE.columns[0], LIVE.columns[1], LIVE.columns[3], LIVE.columns[2]))
    [step] = plan_for(DESIRED, middle, RENAME).steps
    assert step.summary == ("rewrite table retail.orders: position 3 would change from legacy_flag boolean to amount "
                            "decimal(12,2): the metastore compares types position by position and refuses that "
                            "(hive.metastore.disallow.incompatible.col.type.changes)")
    assert step.blocked == REWRITE_BLOCK
    [copy] = step.body
    assert isinstance(copy, RewriteRows)
    # The rows follow the migrations: the renamed column from its old name, the dropped one left behind.
    assert [(f.column, f.source) for f in copy.columns] == [
        (c.name, {"customer_id": "cust_id"}.get(c.name, c.name)) for c in DESIRED.all_columns]
    assert "legacy_flag" not in copy.copy and "not copied: legacy_flag (its values stay in retail.orders_backup_)" in step.notes
    assert step.values == ("column cust_id: renamed to customer_id",
                           "type of column amount: 'decimal(10,2)' -> 'decimal(12,2)'", "column legacy_flag: boolean -> (none)")


def test_a_disappearing_column_with_a_same_typed_newcomer_suggests_the_rename_migration():
    without_drop = replace(LIVE, columns=LIVE.columns[:3])
    [step] = plan_for(DESIRED, without_drop).steps
    assert step.summary == "column cust_id of retail.orders disappears and customer_id (bigint) appears on retail.orders"
    assert "- rename_column: {table: retail.orders, from: cust_id, to: customer_id}" in step.blocked
    assert "- drop_column: {table: retail.orders, column: cust_id}" in step.blocked


def test_a_dropped_column_without_a_migration_is_blocked():
    want = replace(LIVE, columns=LIVE.columns[:3])
    [step] = plan_for(want, LIVE).steps
    assert step.summary == "column legacy_flag of retail.orders disappears on retail.orders"
    assert "- drop_column: {table: retail.orders, column: legacy_flag}" in step.blocked


def test_a_migration_naming_a_missing_column_is_blocked():
    wrong = Migration("0004_wrong", "", (RenameColumn("retail.orders", "nope", "customer_id"),))
    steps = plan_for(DESIRED, LIVE, wrong).steps
    assert steps[0].summary == "migration 0004_wrong (rename nope to customer_id): retail.orders has no column nope on retail.orders"


def test_a_rename_of_a_column_the_table_never_had_is_a_hazard_where_nothing_else_blocks():
    # Nothing disappears, so nothing blocks: applying would add customer_id and record the rename as done.
    have = replace(LIVE, columns=LIVE.columns[:1] + LIVE.columns[2:])  # no cust_id
    want = replace(have, columns=have.columns + (Column("customer_id", "bigint"),))
    ghost = Migration("0004_ghost", "", (RenameColumn("retail.orders", "cust_idd", "customer_id"),))
    [step] = plan_for(want, have, ghost).steps
    assert not step.blocked
    assert step.hazards[0] == (
        "migration 0004_ghost (rename cust_idd to customer_id): retail.orders has no column cust_idd: unless "
        "schemas/ added it since the table was last applied, the migration names a column that never existed, and "
        "apply records it as done; its columns are order_id, amount, legacy_flag; fix the migration")


def test_restrict_leaves_partitions_alone_and_warns():
    restrict = Migration("0005_restrict", "", RENAME.changes + (PartitionsMode("retail.orders", "restrict"),))
    [step] = plan_for(DESIRED, LIVE, restrict).steps
    assert step.actions[0].cascade is False
    assert step.hazards[-1] == ("restrict: 1200 partitions keep their old column list; Spark reads them through "
                                "the table's columns, Hive reads each with its own list (old names and types)")


def test_positional_formats_block_reorders_and_middle_drops_but_not_renames():
    have = Table("retail", "events", (Column("a", "int"), Column("b", "string"), Column("c", "string"),
                                      Column("d", "string")), format="textfile")
    want = replace(have, columns=(Column("a", "int"), Column("d", "string"), Column("c2", "string")))
    migration = Migration("0006_text", "", (
        RenameColumn("retail.events", "c", "c2"), DropColumn("retail.events", "b"),
        ReorderColumns("retail.events", ("a", "d", "c2"))))
    [step] = plan_for(want, have, migration).steps
    # Spark, which the plan is for, reads the rows written before under the wrong columns: blocked unless allowed.
    assert step.blocked == READER_BLOCK
    assert step.hazards == (
        "drop b: textfile files are read by position, so in existing rows the columns after it show the wrong values",
        "reorder: textfile files are read by position, so existing rows show values under the wrong columns")
    assert [v.what for v in step.readers if not v.same] == ["reorder", "drop b"]
    assert not plan_for(want, have, migration, allow_destructive=True).steps[0].blocked


def test_comment_only_changes_cascade_by_default_and_do_not_recreate_views():
    commented = replace(DESIRED, columns=(replace(DESIRED.columns[0], comment="The order"),) + DESIRED.columns[1:])
    [step] = plan_for(commented, DESIRED).steps
    assert step.summary == "alter columns of retail.orders: change comment of order_id"
    assert step.actions[0].cascade is True and step.hazards == ()


def test_appending_stays_table_only_unless_a_migration_asks_to_cascade():
    wider = replace(DESIRED, columns=DESIRED.columns + (Column("coupon", "string"),))
    [step] = plan_for(wider, DESIRED).steps
    assert step.kind == "add_columns"
    assert step.notes[0] == ("table only: 1200 partitions keep their old column list "
                             "(safe: appended columns read as NULL there)")
    cascade = Migration("0007_cascade", "", (PartitionsMode("retail.orders", "cascade"),))
    [step] = plan_for(wider, DESIRED, cascade).steps
    assert step.kind == "alter_columns" and step.actions[0].cascade is True


def test_cascade_repairs_stale_partitions_when_columns_do_not_change():
    repair = Migration("0008_repair", "", (PartitionsMode("retail.orders", "cascade"),))
    [step] = plan_for(DESIRED, DESIRED, repair, stale=17).steps
    assert step.summary == "alter columns of retail.orders: partitions: cascade (0008_repair)"
    assert "17 of 1200 partitions have a stale column list; this cascade repairs them" in step.notes
    # The metastore's CASCADE ignores a table whose columns do not change: the batched path repairs.
    assert step.actions[0] == SetColumns("retail.orders", DESIRED.columns, DESIRED.partition_columns, cascade=True,
                                         batched=True, parameters={MIGRATION_PREFIX + "0008_repair": json.dumps(
                                             {"at": APPLIED_AT, "checksum": "", "commit": "abc123"}, sort_keys=True)})


def test_a_very_large_table_cascades_in_resumable_batches():
    commented = replace(DESIRED, columns=(replace(DESIRED.columns[0], comment="The order"),) + DESIRED.columns[1:])
    [step] = plan_for(commented, DESIRED, count=60_000).steps
    assert step.actions[0].batched is True
    assert step.notes[-2:] == ("cascade: the column lists of 60000 partitions follow the table (estimate: 2 min)",
                               "in batches of partitions, rewriting only those whose list differs: "
                               "a stopped run resumes where it was")
    [small] = plan_for(commented, DESIRED, count=50_000).steps
    assert small.actions[0].batched is False


def test_a_migration_with_nothing_left_to_do_is_only_recorded():
    restrict = Migration("0009_noop", "", (PartitionsMode("retail.orders", "restrict"),))
    [step] = plan_for(DESIRED, DESIRED, restrict).steps
    assert (step.kind, step.summary) == ("set_properties", "record migration 0009_noop on retail.orders")


def test_a_new_table_records_the_migrations_that_name_it_as_moot():
    plan = PlanBuilder(desired(DESIRED, migrations=(RENAME,)), Catalog(("retail",))).build()
    [step] = plan.steps
    assert step.kind == "create_table"
    assert MIGRATION_PREFIX + "0003_customer_rename" in step.actions[-1].set


def test_partition_key_comments_change_through_the_metastore():
    commented = replace(DESIRED, partition_columns=(Column("ds", "string", "Load date"),))
    [step] = plan_for(commented, DESIRED).steps
    assert step.kind == "alter_columns"
    assert step.actions[0].partition_columns == (Column("ds", "string", "Load date"),)


@pytest.mark.parametrize("old, new, hazard", [
    ("int", "string", True), ("int", "bigint", False), ("decimal(10,2)", "double", True), ("int", "decimal(12,2)", False),
])
def test_type_changes_warn_where_parquet_cannot_read_old_files(old, new, hazard):
    have = replace(DESIRED, columns=(Column("order_id", "bigint"), Column("n", old)))
    want = replace(DESIRED, columns=(Column("order_id", "bigint"), Column("n", new)))
    [step] = plan_for(want, have).steps
    expected = (f"type n {old} -> {new}: Spark cannot read existing parquet files as {new}; queries over them fail",)
    assert step.hazards == (expected if hazard else ())


# (old, new type, what Spark 3.5 reads of existing parquet files, what Spark 4 does), as measured with
# pyspark 3.5.9 and 4.0.5 (tests/test_columns_spark.py proves the cases on data on each release).
PARQUET_READS = [
    ("tinyint", "smallint", True, True), ("tinyint", "int", True, True), ("smallint", "int", True, True),
    ("int", "bigint", False, True), ("tinyint", "bigint", False, True), ("int", "decimal(12,2)", False, True),
    ("float", "double", False, True), ("int", "double", False, True), ("decimal(10,2)", "decimal(12,2)", True, True),
    ("decimal(5,2)", "decimal(8,2)", True, True), ("decimal(5,2)", "decimal(12,2)", False, True),
    ("decimal(12,2)", "decimal(20,2)", False, True), ("decimal(10,2)", "decimal(12,4)", False, True),
    ("int", "string", False, False), ("decimal(10,2)", "double", False, False),
]


@pytest.mark.parametrize("old, new, on_3_5, on_4", PARQUET_READS)
def test_parquet_type_change_hazards_follow_the_spark_release_that_reads(old, new, on_3_5, on_4):
    evolution = evolve(replace(DESIRED, columns=(Column("n", old),)), replace(DESIRED, columns=(Column("n", new),)), ())
    for release, reads, reader in (((3, 5), on_3_5, "Spark 3.5"), ((4, 0), on_4, "Spark"), ((4, 3), on_4, "Spark")):
        expected = () if reads else (f"type n {old} -> {new}: {reader} cannot read existing parquet files as {new}; "
                                     "queries over them fail",)
        assert column_hazards(evolution, "parquet", release) == expected, release
    # ORC reads every type change the metastore allows, on every release.
    assert column_hazards(evolution, "orc", (3, 5)) == ()


def test_check_partitions_warns_about_stale_partitions_of_tables_the_plan_leaves_alone():
    plan = PlanBuilder(desired(DESIRED), live(DESIRED), count_partitions=lambda key: 1200,
                       stale_partitions=lambda key: 17, check_partitions=True).build()
    assert plan.is_empty
    assert plan.warnings == ("retail.orders: 17 of 1200 partitions have a stale column list (left by restrict "
                             "changes or other tools); repair them with a migration: "
                             "- partitions: {table: retail.orders, mode: cascade}",)
    unchecked = PlanBuilder(desired(DESIRED), live(DESIRED), stale_partitions=lambda key: 17).build()
    assert unchecked.warnings == ()


def test_a_migration_edited_after_it_was_applied_is_reported():
    applied = replace(DESIRED, migrations={RENAME.id: json.dumps({"checksum": "aaaa", "commit": "c1"})})
    edited = replace(RENAME, checksum="bbbb")
    [step] = PlanBuilder(desired(DESIRED, migrations=(edited,)), live(applied)).build().steps
    assert step.summary == ("migration 0003_customer_rename was edited after it was applied to retail.orders "
                            "(applied: aaaa, the file now: bbbb) on retail.orders")
    assert step.blocked.endswith("restore the file as it was applied (git log -p migrations/0003_customer_rename.yaml) "
                                 "and put new changes in a new migration")
    unchanged = replace(RENAME, checksum="aaaa")
    assert PlanBuilder(desired(DESIRED, migrations=(unchanged,)), live(applied)).build().is_empty


def test_a_saved_plan_goes_stale_only_when_growth_changes_how_its_cascade_runs():
    from schemaflow.plan.staleness import stale_counts

    plan = plan_for(DESIRED, LIVE, RENAME)  # 1200 partitions: one CASCADE
    assert plan.partition_counts == {"retail.orders": 1200}
    assert stale_counts(plan, lambda key: 1_350) == []  # a day's new partitions change nothing
    assert stale_counts(plan, lambda key: 60_000) == [
        "retail.orders: 1200 partitions when planned, 60000 now: its cascade, planned in one CASCADE, "
        "would now run in batches"]


def history(name: str, tmp_path) -> list[Catalog]:
    """The desired catalog after each commit of the history ``name``."""
    stages = HISTORIES[name]
    return [load_catalog(write_stage(tmp_path, stages, upto)) for upto in range(len(stages))]


def summaries(plan) -> list[str]:
    return [("blocked: " if step.blocked else "") + step.summary for step in plan.steps]


def assert_plans_from_every_commit(stages: tuple[Stage, ...], tmp_path) -> None:
    """A table as any commit left it plans, unblocked, to the next commit and to the last; then to nothing."""
    commits = [load_catalog(write_stage(tmp_path, stages, upto)) for upto in range(len(stages))]
    for start, live in enumerate(applied_state(commit) for commit in commits[:-1]):
        for target in {start + 1, len(commits) - 1}:
            plan = PlanBuilder(commits[target], live, allow_destructive=True).build()
            assert not any(step.blocked for step in plan.steps), (start, target, summaries(plan))
            written = [a for step in plan.steps for a in step.actions if isinstance(a, SetColumns)]
            assert all(a.columns == commits[target].objects[a.object].columns for a in written), (start, target)
    assert PlanBuilder(commits[-1], applied_state(commits[-1])).build().is_empty


@pytest.mark.parametrize("name", sorted(HISTORIES))
def test_a_table_as_any_commit_of_a_history_left_it_plans_to_a_later_one(name, tmp_path):
    assert_plans_from_every_commit(HISTORIES[name], tmp_path)


def test_random_histories_plan_from_every_commit(tmp_path):
    for seed in range(50):
        assert_plans_from_every_commit(random_history(seed), tmp_path / str(seed))


@pytest.mark.parametrize("name, start, steps", [
    ("two_reorders_of_one_table", 0, [
        "alter columns of retail.t: reorder to (c, a, b) (0001_step); reorder to (b, c, a) (0002_step)"]),
    ("two_reorders_of_one_table", 1, ["alter columns of retail.t: reorder to (b, c, a) (0002_step)"]),
    # A rename in Parquet files hides the existing values: blocked unless the plan allows what is destructive.
    ("dropped_then_added_back_with_another_type", 0, [
        "blocked: alter columns of retail.t: drop x (0001_step); rename a to b (0003_step); partitions: restrict (0004_step); "
        "add x string"]),
    ("dropped_then_added_back_with_another_type", 1, [
        "blocked: alter columns of retail.t: rename a to b (0003_step); partitions: restrict (0004_step); add x string"]),
    ("dropped_then_added_back_with_another_type", 2, [
        "blocked: alter columns of retail.t: rename a to b (0003_step); partitions: restrict (0004_step)"]),
    ("dropped_then_added_back_with_another_type", 3, ["record migration 0004_step on retail.t"]),
    # x comes back a string: its Parquet files hold ints, which Spark cannot read as strings.
    ("dropped_and_added_back_in_one_commit", 0, ["blocked: alter columns of retail.t: drop x (0001_step); add x string"]),
    # The table's removal is a drop like any other; the migration that named it stays as history.
    ("table_dropped_after_a_migration_named_it", 0, ["blocked: drop table retail.t"]),
    ("table_dropped_after_a_migration_named_it", 1, ["blocked: drop table retail.t"]),
    ("table_replaced_by_a_view", 0, ["blocked: drop table retail.t", "create view retail.t"]),
    ("table_replaced_by_a_view", 1, ["blocked: drop table retail.t", "create view retail.t"]),
    # A table that never saw the drop keeps its data: the declaration can be reached in place.
    ("table_declared_again_after_a_drop", 0, [
        "blocked: alter columns of retail.t: rename b to c (0001_step); add d string", "create table retail.u (1 column, parquet)"]),
    ("table_declared_again_after_a_drop", 1, [
        "add 1 column to retail.t: d string", "create table retail.u (1 column, parquet)"]),
    ("table_declared_again_after_a_drop", 2, ["create table retail.t (3 columns, parquet)"]),
    ("renamed_there_and_back", 0, ["record migration 0001_step, 0002_step on retail.t"]),
    ("renamed_there_and_back", 1, ["blocked: alter columns of retail.t: rename b to a (0002_step)"]),
    ("renamed_then_dropped", 0, ["alter columns of retail.t: rename y to z (0001_step); drop z (0002_step)"]),
    ("renamed_then_dropped", 1, ["alter columns of retail.t: drop z (0002_step)"]),
    ("name_a_rename_freed_added_back_then_dropped", 0, [
        "blocked: alter columns of retail.t: rename a to c (0001_step); "
        "drop a (0003_step; not yet on the table, added by schemas/ since: a)"]),
    ("name_a_rename_freed_added_back_then_dropped", 1, ["record migration 0003_step on retail.t"]),
    ("name_a_rename_freed_added_back_then_dropped", 2, ["alter columns of retail.t: drop a (0003_step)"]),
    ("renamed_into_a_name_a_drop_freed", 0, [
        "alter columns of retail.t: drop b (0001_step); rename a to b (0001_step)"]),
    ("reordered_then_dropped", 0, [
        "alter columns of retail.t: reorder to (b, a, c) (0001_step); drop a (0002_step)"]),
    ("reordered_then_dropped", 1, ["alter columns of retail.t: drop a (0002_step)"]),
    # c was added after the table was last applied, then renamed: the table gets d, and the record.
    ("added_then_renamed", 0, ["add 1 column to retail.t: d string"]),
    ("added_then_renamed", 1, ["blocked: alter columns of retail.t: rename c to d (0002_step)"]),
    ("dropped_twice", 0, [
        "alter columns of retail.t: drop x (0001_step); drop x (0003_step; not yet on the table, added by schemas/ "
        "since: x)"]),
    ("dropped_twice", 1, ["record migration 0003_step on retail.t"]),
    ("dropped_twice", 2, ["alter columns of retail.t: drop x (0003_step)"]),
])
def test_a_table_as_any_commit_left_it_plans_to_the_last(name, start, steps, tmp_path):
    commits = history(name, tmp_path)
    live = applied_state(commits[start])
    plan = PlanBuilder(commits[-1], live).build()
    assert summaries(plan) == steps
    table, wanted = live.get("retail.t"), commits[-1].get("retail.t")
    if isinstance(table, Table) and isinstance(wanted, Table):  # changed in place: each pending migration recorded
        pending = [m.id for m in commits[-1].migrations if m.changes_for(table.key) and m.id not in table.migrations]
        written = {key for step in plan.steps for action in step.actions
                   for key in [*getattr(action, "parameters", {}), *getattr(action, "set", {})]}
        assert {MIGRATION_PREFIX + m for m in pending} <= written


def test_a_column_dropped_and_declared_again_shows_its_old_values_by_name_with_the_old_type(tmp_path):
    commits = history("dropped_and_added_back_in_one_commit", tmp_path)
    [step] = PlanBuilder(commits[-1], applied_state(commits[0])).build().steps
    assert step.hazards == (
        "x is declared again after a migration took it away: parquet files find columns by name, so x shows the "
        "old x values in existing data",
        "type x int -> string: Spark cannot read existing parquet files as string; queries over them fail")
    # A view over x finds it again, with another type: that is what the invalidation check is told.
    [change] = diff(commits[-1], applied_state(commits[0]))
    assert (change.evolution.lost, change.evolution.returning) == ((), ("x",))
    assert change.evolution.retyped == (("x", "int", "string"),)


def test_by_position_a_dropped_last_column_is_harmless_only_if_nothing_takes_its_place():
    have = Table("retail", "events", (Column("a", "int"), Column("b", "string")), format="textfile")
    drop = Migration("0001_drop", "", (DropColumn("retail.events", "b"),))
    [alone] = plan_for(replace(have, columns=have.columns[:1]), have, drop).steps
    assert alone.hazards == ("drop b: its values stay in the files but no reader sees them",)
    [replaced] = plan_for(replace(have, columns=(Column("a", "int"), Column("c", "string"))), have, drop).steps
    assert replaced.hazards == ("drop b: textfile files are read by position, so in existing rows the columns after "
                                "it show the wrong values",)


def test_a_rename_into_a_name_a_drop_freed_reads_the_dropped_columns_values_by_name(tmp_path):
    commits = history("renamed_into_a_name_a_drop_freed", tmp_path)
    [step] = PlanBuilder(commits[-1], applied_state(commits[0])).build().steps
    assert step.hazards == ("b is declared again after a migration took it away: parquet files find columns by name, "
                            "so b shows the old b values in existing data",)


def test_a_rename_onto_a_column_the_table_has_is_blocked():
    have = replace(DESIRED, columns=(Column("order_id", "bigint"), Column("customer_id", "bigint")))
    clash = Migration("0004_clash", "", (RenameColumn("retail.orders", "order_id", "customer_id"),))
    [step] = plan_for(have, have, clash).steps
    assert step.summary == ("migration 0004_clash (rename order_id to customer_id): retail.orders already has a "
                            "column customer_id on retail.orders")
    assert step.blocked.endswith("its columns are order_id, customer_id; fix the migration")


def test_a_name_the_table_lacks_is_taken_as_added_since_unless_the_plan_is_blocked_anyway():
    # cust_id is gone without a migration: the migration's absent name is the likelier mistake, and is named.
    wrong = Migration("0004_wrong", "", (RenameColumn("retail.orders", "nope", "customer_id"),
                                         DropColumn("retail.orders", "legacy_flag")))
    assert [s.summary for s in plan_for(DESIRED, LIVE, wrong).steps] == [
        "migration 0004_wrong (rename nope to customer_id): retail.orders has no column nope on retail.orders",
        "column cust_id of retail.orders disappears and customer_id (bigint) appears on retail.orders"]
    # Nothing else wrong: nope was added (and renamed) after this table was last applied.
    both = Migration("0004_both", "", (RenameColumn("retail.orders", "nope", "customer_id"),
                                       RenameColumn("retail.orders", "cust_id", "client_id")))
    have = replace(LIVE, columns=LIVE.columns[:3])
    want = replace(have, columns=(have.columns[0], Column("client_id", "bigint"), have.columns[2],
                                  Column("customer_id", "bigint")))
    [step] = plan_for(want, have, both).steps
    assert step.summary == ("alter columns of retail.orders: rename nope to customer_id (0004_both; not yet on the "
                            "table, added by schemas/ since: nope); rename cust_id to client_id (0004_both); "
                            "add customer_id bigint")
