"""Whether a saved plan still fits the live metastore it was made against.

A plan saved with ``--out`` records the state digest of every object it touches, as the live
metastore had it then (``absent`` for one it creates). Before anything runs, ``apply`` reads those
objects again: a changed digest means someone (Spark SQL, Hive, another tool, another schemaflow)
changed the object since, and the whole plan is refused, naming each object and what changed, as
Terraform refuses a saved plan whose state moved on. Partition counts count only where they
chose how a cascade runs.
"""
from __future__ import annotations

from collections.abc import Callable

from schemaflow.model import Catalog, changed_aspects, state_digest
from schemaflow.plan.changes import BATCHED_CASCADE_ABOVE
from schemaflow.plan.plan import ABSENT, Plan


def stale_objects(plan: Plan, live: Catalog) -> list[str]:
    """One line for each object that changed since ``plan`` was made; empty when none did."""
    lines = []
    for key, recorded in sorted(plan.fingerprints.items()):
        obj = live.get(key)
        now = state_digest(obj) if obj is not None else ABSENT
        if now == recorded:
            continue
        if recorded == ABSENT:
            lines.append(f"{key}: created since the plan was made")
        elif now == ABSENT:
            lines.append(f"{key}: dropped since the plan was made")
        else:
            lines.append(f"{key}: {', '.join(changed_aspects(recorded, now))} changed since the plan was made")
    return lines


def stale_counts(plan: Plan, count: Callable[[str], int]) -> list[str]:
    """One line for each table whose partition count moved across the line that chose how it cascades.

    New partitions arrive all the time and most plans do not care; a cascade planned as one
    metastore transaction for a table that has since grown past ``BATCHED_CASCADE_ABOVE`` (or the
    other way round) would not run as reviewed.
    """
    def how(partitions: int) -> str:
        return "in batches" if partitions > BATCHED_CASCADE_ABOVE else "in one CASCADE"
    lines = []
    for key, then in sorted(plan.partition_counts.items()):
        now = count(key)
        if how(now) != how(then):
            lines.append(f"{key}: {then} partitions when planned, {now} now: its cascade, planned {how(then)}, "
                         f"would now run {how(now)}")
    return lines
