"""The plan of ``schemaflow restore``: the backup a rewrite kept swapped back in, from the live catalog alone."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog, Column, Table
from schemaflow.plan.plan import Plan
from schemaflow.plan.restore import restore_plan
from schemaflow.plan.steps import RestoreBackup, SetParameters

NOW = Table("retail", "orders", (Column("id", "bigint"), Column("full_name", "string")), data_source=True,
            version="v2")
KEPT = Table("retail", "orders_backup_", (Column("id", "int"), Column("name", "string")), data_source=True,
             version="v1", backup_of="retail.orders")


def live(*tables: Table) -> Catalog:
    return Catalog(("retail",), {t.key: t for t in tables})


def test_a_restore_swaps_the_backup_in_guarded_by_both_versions_and_says_what_readers_lose():
    plan = restore_plan(live(NOW, KEPT), "retail.orders")
    [step] = plan.steps
    assert step.summary == "restore table retail.orders from retail.orders_backup_: the table as it was before its rewrite"
    assert step.body == (RestoreBackup("retail.orders", "retail.orders_backup_", "retail.orders_restore_", "v1"),)
    assert step.stamp == SetParameters("retail.orders", {"schemaflow.version": "v1"})
    assert plan.guards == {"retail.orders": "v2"} and step.destructive
    assert step.hazards == ("rows written to retail.orders since its rewrite are not in the restored table: they stay "
                            "in retail.orders_backup_",)
    assert step.values == ("type of column id: 'bigint' -> 'int'", "column name: (none) -> string",
                           "column full_name: string -> (none)")
    assert Plan.from_data(json.loads(plan.to_json())).steps == plan.steps  # saved and read as every plan is


def test_a_restore_a_stopped_run_began_is_finished_from_the_backup_being_restored():
    restoring = replace(KEPT, name="orders_restore_", backup_of=None, rewrite_of="retail.orders")
    rewritten = replace(NOW, name="orders_backup_", backup_of="retail.orders")
    for state in (live(NOW, restoring), live(rewritten, restoring)):  # stopped after its first rename, its second
        [step] = restore_plan(state, "retail.orders").steps
        assert step.notes[0] == ("finishes the restore a stopped run began: retail.orders_restore_ is the backup being "
                                 "restored")
        assert step.body[0].backup_version == "v1"
    assert restore_plan(live(rewritten, restoring), "retail.orders").guards == {}


@pytest.mark.parametrize(("tables", "says"), [
    ((NOW,), "retail.orders has no backup to restore"),
    ((NOW, replace(KEPT, backup_of="retail.other")), "retail.orders has no backup to restore"),
    ((KEPT,), "retail.orders has no backup to restore"),
    ((replace(NOW, format="iceberg"), replace(KEPT, external=True)),
     "retail.orders_backup_ is the Parquet table retail.orders was converted to Iceberg from"),
    ((replace(NOW, format="iceberg"), replace(KEPT, format="orc")),
     r"retail.orders is an Iceberg table now, converted by copying: .* Rename retail.orders \(its files stay where "
     "they are\\), then restore. Nothing was restored"),
])
def test_a_restore_without_a_backup_a_rewrite_kept_is_refused_saying_why(tables, says):
    with pytest.raises(SchemaflowError, match=says):
        restore_plan(live(*tables), "retail.orders")
