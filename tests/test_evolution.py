"""Column evolution without a JVM: migrations, inference, the cascade decision, hazards, records."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from schemaflow.model import (MIGRATION_PREFIX, Catalog, Column, DropColumn, Migration, PartitionsMode, RenameColumn,
                              ReorderColumns, Table, fingerprint)
from schemaflow.plan.plan import build_plan
from schemaflow.plan.steps import APPLIED_AT, SetColumns

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


def plan_for(want: Table, have: Table, *migrations: Migration, count: int | None = 1200, stale: int | None = 0):
    return build_plan(desired(want, migrations=migrations), live(have), commit="abc123",
                      count_partitions=lambda key: count, stale_partitions=lambda key: stale)


def test_the_issue_example_renames_drops_and_widens_in_one_cascading_alter():
    plan = plan_for(DESIRED, LIVE, RENAME)
    [step] = plan.steps
    assert step.kind == "alter_columns" and not step.blocked
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
        "rename cust_id -> customer_id: parquet files find columns by name, so customer_id reads NULL in existing data",
        "drop legacy_flag: its values stay in the files but no reader sees them")
    assert step.destructive  # a column is dropped, but the migration that names it is the permission
    assert list(columns_written.parameters) == [MIGRATION_PREFIX + "0003_customer_rename"]
    record = json.loads(columns_written.parameters[MIGRATION_PREFIX + "0003_customer_rename"])
    assert record == {"at": APPLIED_AT, "checksum": "", "commit": "abc123"}
    assert not any(k.startswith(MIGRATION_PREFIX) for k in step.actions[-1].set)  # not recorded twice


def test_a_recorded_migration_is_never_applied_again():
    applied = replace(DESIRED, migrations={"0003_customer_rename": "{}"})
    assert build_plan(desired(DESIRED, migrations=(RENAME,)), live(applied)).is_empty


def test_dropping_a_middle_column_is_refused_when_types_shift_positions():
    middle = replace(LIVE, columns=(LIVE.columns[0], LIVE.columns[1], LIVE.columns[3], LIVE.columns[2]))
    [step] = plan_for(DESIRED, middle, RENAME).steps
    assert step.blocked == ("position 3 would change from legacy_flag boolean to amount decimal(12,2): the metastore "
                            "compares types position by position and refuses that "
                            "(hive.metastore.disallow.incompatible.col.type.changes) is not supported in place: "
                            "add a new column instead and fill it from amount outside schemaflow, or copy the data "
                            "into a new table; the check can also be turned off on the metastore (not recommended)")


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


def test_restrict_leaves_partitions_alone_and_warns():
    restrict = Migration("0005_restrict", "", RENAME.changes + (PartitionsMode("retail.orders", "restrict"),))
    [step] = plan_for(DESIRED, LIVE, restrict).steps
    assert step.actions[0].cascade is False
    assert step.hazards[-1] == ("restrict: 1200 partition(s) keep their old column list; Spark reads them through "
                                "the table's columns, Hive reads each with its own list (old names and types)")


def test_positional_formats_warn_about_reorders_and_middle_drops_but_not_renames():
    have = Table("retail", "events", (Column("a", "int"), Column("b", "string"), Column("c", "string"),
                                      Column("d", "string")), format="textfile")
    want = replace(have, columns=(Column("a", "int"), Column("d", "string"), Column("c2", "string")))
    migration = Migration("0006_text", "", (
        RenameColumn("retail.events", "c", "c2"), DropColumn("retail.events", "b"),
        ReorderColumns("retail.events", ("a", "d", "c2"))))
    [step] = plan_for(want, have, migration).steps
    assert not step.blocked
    assert step.hazards == (
        "drop b: textfile files are read by position, so in existing rows the columns after it show the wrong values",
        "reorder: textfile files are read by position, so existing rows show values under the wrong columns")


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
    plan = build_plan(desired(DESIRED, migrations=(RENAME,)), Catalog(("retail",)))
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


def test_check_partitions_warns_about_stale_partitions_of_tables_the_plan_leaves_alone():
    plan = build_plan(desired(DESIRED), live(DESIRED), count_partitions=lambda key: 1200,
                      stale_partitions=lambda key: 17, check_partitions=True)
    assert plan.is_empty
    assert plan.warnings == ("retail.orders: 17 of 1200 partitions have a stale column list (left by restrict "
                             "changes or other tools); repair them with a migration: "
                             "- partitions: {table: retail.orders, mode: cascade}",)
    unchecked = build_plan(desired(DESIRED), live(DESIRED), stale_partitions=lambda key: 17)
    assert unchecked.warnings == ()


def test_a_migration_edited_after_it_was_applied_is_reported():
    applied = replace(DESIRED, migrations={RENAME.id: json.dumps({"checksum": "aaaa", "commit": "c1"})})
    edited = replace(RENAME, checksum="bbbb")
    [step] = build_plan(desired(DESIRED, migrations=(edited,)), live(applied)).steps
    assert step.summary == ("migration 0003_customer_rename was edited after it was applied to retail.orders "
                            "(applied: aaaa, the file now: bbbb) on retail.orders")
    assert step.blocked.endswith("restore the file as it was applied (git log -p migrations/0003_customer_rename.yaml) "
                                 "and put new changes in a new migration")
    unchanged = replace(RENAME, checksum="aaaa")
    assert build_plan(desired(DESIRED, migrations=(unchanged,)), live(applied)).is_empty


def test_a_saved_plan_goes_stale_only_when_growth_changes_how_its_cascade_runs():
    from schemaflow.plan.staleness import stale_counts

    plan = plan_for(DESIRED, LIVE, RENAME)  # 1200 partitions: one CASCADE
    assert plan.partition_counts == {"retail.orders": 1200}
    assert stale_counts(plan, lambda key: 1_350) == []  # a day's new partitions change nothing
    assert stale_counts(plan, lambda key: 60_000) == [
        "retail.orders: 1200 partitions when planned, 60000 now: its cascade, planned in one CASCADE, "
        "would now run in batches"]
