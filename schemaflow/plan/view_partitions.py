"""The partitions each partitioned view should have, and the changes that give it them.

A view's partitions are metadata that Hive users browse: which days of a view are ready. They are
listed in the view's file, derived from the partitions of a base table (``model.ViewPartitions``),
or, when the file says nothing, kept as they are. Spark's CREATE OR REPLACE VIEW drops them all, so
a re-created view gets back those that still fit it (the same partition columns), and the plan
names those it loses.

The live partitions are listed only where needed: for views whose file declares partitions, for
views that are re-created while they have partition columns, and for the base tables of derived
partitions. Without a metastore (a plan between git refs, or against a snapshot) listed partitions
are compared with those the base ref lists; derived ones, and any the base did not list, are
decided at apply, and shown only for views that are re-created or whose declaration changed.
"""
from __future__ import annotations

from functools import cache
from itertools import product
from typing import Protocol
from collections.abc import Iterable, Mapping

from schemaflow.model import Catalog, PartitionValues, Table, View, ViewPartitions
from schemaflow.plan.changes import Change, CreateView, ReplaceView, SyncViewPartitions


class PartitionLister(Protocol):
    """The live partitions of a table or view, each as its values in partition-column order."""

    def __call__(self, key: str) -> tuple[PartitionValues, ...]: ...


def derive(rule: ViewPartitions, view_columns: tuple[str, ...], base_columns: tuple[str, ...],
           base: Iterable[PartitionValues]) -> tuple[PartitionValues, ...]:
    """The view partitions that the base table's partitions ``base`` feed, and complete (sorted)."""
    position = {column: i for i, column in enumerate(base_columns)}
    feeding: dict[PartitionValues, list[PartitionValues]] = {}
    for values in base:
        feeding.setdefault(tuple(values[position[c]] for c in view_columns), []).append(values)
    return tuple(sorted(key for key, parts in feeding.items() if _complete(rule.complete_when, position, parts)))


def _complete(rule: Mapping[str, tuple[str, ...] | int], position: Mapping[str, int],
              parts: list[PartitionValues]) -> bool:
    """Whether base partitions ``parts`` hold every combination of the listed values, and enough distinct
    values of each counted column."""
    listed = {column: wanted for column, wanted in sorted(rule.items()) if not isinstance(wanted, int)}
    present = {tuple(p[position[c]] for c in listed) for p in parts}
    if not present.issuperset(product(*listed.values())):
        return False
    return all(len({p[position[c]] for p in parts}) >= wanted
               for c, wanted in rule.items() if isinstance(wanted, int))


def partition_changes(desired: Catalog, live: Catalog, changes: list[Change],
                      list_partitions: PartitionLister | None) -> list[SyncViewPartitions]:
    """One change for each desired view whose partitions differ from those it should have.

    ``list_partitions`` lists live partitions (None: no metastore at hand); each object is listed once.
    """
    if list_partitions is not None:
        list_partitions = cache(list_partitions)  # views derived from the same base table
    recreated = {c.key for c in changes if isinstance(c, (CreateView, ReplaceView))}
    result = []
    for want in desired.views():
        have = live.get(want.key)
        have = have if isinstance(have, View) else None
        replaced = want.key in recreated and have is not None
        if want.partitions is None and not (replaced and have is not None and have.partitioned_on):
            continue
        current = _live_partitions(want, have, list_partitions)
        fits = have is not None and have.partitioned_on == want.partitioned_on
        target = _target(want, live, current if fits else (), list_partitions)
        if current is None or target is None:
            redeclared = have is not None and have.partitions is not None and have.partitions != want.partitions
            if want.key in recreated or redeclared:
                result.append(SyncViewPartitions(want, have.partitioned_on if have else (), known=False))
            continue
        change = _sync(want, have, current, target, fits, replaced)
        if change.add or change.drop or change.lost:
            result.append(change)
    return result


def _live_partitions(want: View, have: View | None, list_partitions: PartitionLister | None
                     ) -> tuple[PartitionValues, ...] | None:
    """The view's live partitions; None when they cannot be known."""
    if have is None or not have.partitioned_on:
        return ()
    if list_partitions is not None:
        return tuple(sorted(list_partitions(want.key)))
    if have.partitions is not None and have.partitions.derive_from is None:
        return have.partitions.values  # the base of a plan between git refs: as listed there
    return None


def _target(want: View, live: Catalog, fitting: tuple[PartitionValues, ...] | None,
            list_partitions: PartitionLister | None) -> tuple[PartitionValues, ...] | None:
    """The partitions the view should have; None when they cannot be known."""
    rule = want.partitions
    if rule is None:
        return fitting
    if rule.derive_from is None:
        return rule.values
    base = live.get(rule.derive_from)
    if not isinstance(base, Table):
        return ()  # created by this plan: no partitions yet
    if list_partitions is None:
        return None
    base_columns = tuple(c.name for c in base.partition_columns)
    return derive(rule, want.partitioned_on, base_columns, list_partitions(base.key))


def _sync(want: View, have: View | None, current: tuple[PartitionValues, ...], target: tuple[PartitionValues, ...],
          fits: bool, replaced: bool) -> SyncViewPartitions:
    live_columns = have.partitioned_on if have is not None else ()
    wanted = set(target)
    if replaced:  # the re-creation drops every partition: all those wanted come back
        if not fits:
            return SyncViewPartitions(want, live_columns, add=target, lost=current, replaced=True)
        return SyncViewPartitions(want, live_columns, add=target, drop=tuple(v for v in current if v not in wanted),
                                  kept=sum(1 for v in current if v in wanted), replaced=True)
    have_set = set(current)
    return SyncViewPartitions(want, live_columns, add=tuple(v for v in target if v not in have_set),
                              drop=tuple(v for v in current if v not in wanted))
