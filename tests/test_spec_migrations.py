"""Migration files loaded into the model (the issue's example, exactly), and histories the metastore allows."""
from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from schemaflow.errors import SpecError
from schemaflow.model import AcceptLoss, DropColumn, PartitionsMode, RenameColumn, ReorderColumns
from schemaflow.spec import load_catalog
from schemaflow.project import load_project
from schemaflow.spec.migrations import checksum
from schemaflow.workflow import hash_migrations
from tests.migration_histories import HISTORIES, write_stage

EXAMPLE = textwrap.dedent("""\
    # migrations/0003_customer_rename.yaml
    description: Rename cust_id to customer_id and widen amount
    changes:
      - rename_column: {table: retail.orders, from: cust_id, to: customer_id}
      - drop_column: {table: retail.orders, column: legacy_flag}      # acknowledges losing the column
      - reorder_columns: {table: retail.orders, order: [order_id, customer_id, amount]}
      - partitions: {table: retail.orders, mode: restrict}            # override the planner's choice: cascade | restrict
    """)


def test_the_issue_example_loads_in_order(tmp_path: Path) -> None:
    (tmp_path / "schemas/retail").mkdir(parents=True)
    (tmp_path / "schemas/retail/orders.yaml").write_text(
        "table: retail.orders\ncolumns:\n  - {name: order_id, type: bigint}\n  - {name: customer_id, type: bigint}\n"
        "  - {name: amount, type: 'decimal(12,2)'}\n")
    (tmp_path / "migrations").mkdir()
    (tmp_path / "migrations/0003_customer_rename.yaml").write_text(EXAMPLE)
    (tmp_path / "migrations/0001_first.yaml").write_text(
        "description: First\nchanges:\n  - partitions: {table: retail.orders, mode: cascade}\n")
    (tmp_path / "migrations/.gitkeep").write_text("")
    hash_migrations(load_project(tmp_path, env={}))
    catalog = load_catalog(tmp_path)
    assert [m.id for m in catalog.migrations] == ["0001_first", "0003_customer_rename"]
    example = catalog.migrations[1]
    assert example.description == "Rename cust_id to customer_id and widen amount"
    assert example.changes == (
        RenameColumn("retail.orders", "cust_id", "customer_id"),
        DropColumn("retail.orders", "legacy_flag"),
        ReorderColumns("retail.orders", ("order_id", "customer_id", "amount")),
        PartitionsMode("retail.orders", "restrict"),
    )
    assert example.checksum == checksum(EXAMPLE.encode())
    assert str(example.changes[1].source) == "migrations/0003_customer_rename.yaml:5:18"


@pytest.mark.parametrize("name", sorted(HISTORIES))
def test_every_commit_of_a_history_the_metastore_allows_validates(name: str, tmp_path: Path) -> None:
    stages = HISTORIES[name]
    for upto in range(len(stages)):
        load_catalog(write_stage(tmp_path, stages, upto))


def test_the_migrations_of_a_dropped_table_are_still_checked_on_their_own(tmp_path: Path) -> None:
    stages = HISTORIES["table_dropped_after_a_migration_named_it"]
    broken = stages[:-1] + (replace(stages[-1], changes=("reorder_columns: {table: $db.t, order: [a, c, a]}",)),)
    with pytest.raises(SpecError) as caught:
        load_catalog(write_stage(tmp_path, broken, len(broken) - 1))
    assert str(caught.value) == ("migrations/0002_step.yaml:3:22: reorders retail.t to (a, c, a), which names a more "
                                 "than once: name each column once")


def test_a_migration_accepts_loss_in_a_column_as_the_table_then_names_it_and_says_where_when_it_has_none(
        tmp_path: Path) -> None:
    (tmp_path / "schemas/retail").mkdir(parents=True)
    (tmp_path / "schemas/retail/orders.yaml").write_text(
        "table: retail.orders\ncolumns:\n  - {name: order_id, type: bigint}\n  - {name: total, type: 'decimal(12,2)'}\n")
    (tmp_path / "migrations").mkdir()
    (tmp_path / "migrations/0001_totals.yaml").write_text(
        "description: Amounts are totals, numbers only\nchanges:\n"
        "  - rename_column: {table: retail.orders, from: amount, to: total}\n"
        "  - accept_loss: {table: retail.orders, column: total}\n")
    hash_migrations(load_project(tmp_path, env={}))
    [migration] = load_catalog(tmp_path).migrations
    assert migration.changes[1] == AcceptLoss("retail.orders", "total")
    assert str(migration.changes[1].source) == "migrations/0001_totals.yaml:4:18"

    (tmp_path / "migrations/0001_totals.yaml").write_text(
        "description: Amounts are totals, numbers only\nchanges:\n"
        "  - rename_column: {table: retail.orders, from: amount, to: total}\n"
        "  - accept_loss: {table: retail.orders, column: amount}\n")
    hash_migrations(load_project(tmp_path, env={}))
    with pytest.raises(SpecError) as refused:
        load_catalog(tmp_path)
    assert str(refused.value) == (
        "migrations/0001_totals.yaml:4:18: accepts values of amount its conversion makes NULL, but retail.orders then "
        "has no column amount (its columns then: order_id, total): name the column as the table has it after the "
        "migration's renames")
