"""Without a JVM: what a table without a version keeps through a rewrite's and a restore's guarded writes.

The metastore's compare-and-swap (HIVE-26882) refuses a guarded write that unsets the key it guards, so a table that
has no version (imported, or its version lost to a stopped run's claim) keeps an empty one, ``NO_VERSION``, which
reads as none; a stopped run's claim is never kept as a version.
"""
from __future__ import annotations

import socket
import subprocess
from dataclasses import replace

from schemaflow.claims import Claim, new_run, settled
from schemaflow.model import NO_VERSION, VERSION_KEY, Catalog, Column, Table, recorded
from schemaflow.plan.plan import PlanBuilder
from schemaflow.plan.restore import restore_plan
from schemaflow.plan.steps import RestoreBackup, SetParameters
from tests.catalogs import DESIRED, applied

NOW = Table("retail", "orders", (Column("id", "bigint"),), data_source=True, version="v2")
KEPT = Table("retail", "orders_backup_", (Column("id", "int"),), data_source=True, backup_of="retail.orders")


def test_a_version_is_kept_and_a_claim_or_nothing_is_none():
    assert settled("v1") == "v1"
    assert settled(new_run().token) is None and settled(None) is None and settled(NO_VERSION) is None


def test_an_empty_version_reads_as_none():
    assert recorded({VERSION_KEY: NO_VERSION})["version"] is None
    assert recorded({VERSION_KEY: "v1"})["version"] == "v1"


def test_a_backup_without_a_version_is_restored_with_none_without_unsetting_the_key_the_stamp_is_guarded_by():
    for kept in (KEPT, replace(KEPT, version=new_run().token)):  # adopted; its version lost to a stopped run's claim
        [step] = restore_plan(Catalog(("retail",), {t.key: t for t in (NOW, kept)}), "retail.orders").steps
        assert step.stamp == SetParameters("retail.orders", {VERSION_KEY: NO_VERSION})
        assert step.body == (RestoreBackup("retail.orders", "retail.orders_backup_", "retail.orders_restore_",
                                           kept.version),)


def test_a_claim_a_backup_kept_from_a_stopped_run_is_nothing_left_half_done():
    live = applied(DESIRED)
    gone = subprocess.Popen(["true"])
    gone.wait()
    stopped = Claim("run1", socket.gethostname(), gone.pid, "2026-01-01T00:00:00Z").token
    orders = live.objects["retail.orders"]
    backup = replace(orders, name="orders_backup_", backup_of="retail.orders", version=stopped)
    plan = PlanBuilder(DESIRED, replace(live, objects={**live.objects, backup.key: backup})).build()
    assert plan.is_empty and not any("half-done" in w for w in plan.warnings), plan.warnings
    # On the table itself, the same claim is a stopped run's work to finish.
    left = PlanBuilder(DESIRED, replace(live, objects={**live.objects, orders.key: replace(orders, version=stopped)}))
    assert f"retail.orders: left half-done by run run1 on {socket.gethostname()}" in left.build().warnings[0]
