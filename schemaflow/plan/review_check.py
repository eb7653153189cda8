"""Whether a plan made now is still the plan that was reviewed.

After a merge, CI plans against the live metastore and compares the result with the plan the
reviewer read (made between git refs, with no metastore). They must make the same changes: the
same kinds of steps, on the same objects, running the same actions. What may differ is what only
the live metastore knows or what only the apply moment decides: partition counts and the notes,
estimates and batching that follow from them, the partitions of partitioned views, the commit the
stamps and drop records record, the version a drop record names when the live object has none
(schemaflow never stamped it: it was adopted by import), and, where the reviewed plan was not made against the
metastore, the live views' SQL a step checks before Spark analyses it. Anything else means
the metastore or the schemas moved since the review, and the reviewed plan is stale.
"""
from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, assert_never

from schemaflow.model import APPLIED_COMMIT_KEY, DROPPED_PREFIX
from schemaflow.plan.kinds import StepKind
from schemaflow.plan.plan import Basis, Plan
from schemaflow.plan.steps import (Action, AddColumnsAction, AddDatabase, ChangeViewPartitions, CheckLiveViews, DeltaAlter,
                                   DeltaCreate,
                                   CreateTableAction, CreateViewAction, DropTableAction, DropViewAction, IcebergCommit,
                                   ForgetEntryAction, KeepViewPartitions, PartitionView, RegisterTableAction,
                                   RestoreBackup, RewriteRows,
                                   SetColumnCommentsAction, SetColumns, SetDatabaseParameters, SetParameters,
                                   SetStorageAction, SetTableCommentAction, Step)


def _comparable(step: Step, unversioned: frozenset[str] = frozenset(), live: bool = True) -> tuple[Any, ...]:
    """What of ``step`` a review compares; ``unversioned`` names drop records whose version is left out; without
    ``live``, the live views' SQL a step checks is left out. The record of the settings applied is left out: they are
    checked by their digest."""
    stamp = step.stamp and replace(step.stamp, set={k: v for k, v in step.stamp.set.items() if k != APPLIED_COMMIT_KEY})
    body = tuple(_comparable_action(a, unversioned) for a in step.body if live or not isinstance(a, CheckLiveViews))
    return step.kind, step.object, step.blocked, body, stamp


def _comparable_action(action: Action, unversioned: frozenset[str]) -> object:
    match action:
        case CreateTableAction() | CreateViewAction() | DeltaCreate():  # what runs, not what only the catalog read fills in the model
            return action.kind, action.statements
        case SetColumns():  # batching follows the partition count, and the migration records name the commit
            return SetColumns(action.object, action.columns, action.partition_columns, action.cascade)
        case IcebergCommit():  # what an Iceberg commit requires is in the table's metadata, which only the live plan reads
            return replace(action, requires=None)
        case DeltaAlter():  # so is the log version a Delta table's changes land on top of
            return replace(action, log_version=-1, table_id="")
        case SetDatabaseParameters():
            return SetDatabaseParameters(action.database, {
                k: _drop_record(v, versioned=k not in unversioned) if k.startswith(DROPPED_PREFIX) else v
                for k, v in action.properties.items()})
        case (AddColumnsAction() | SetTableCommentAction() | SetColumnCommentsAction() | DropTableAction()
              | DropViewAction() | AddDatabase() | SetParameters() | PartitionView() | ChangeViewPartitions()
              | KeepViewPartitions() | SetStorageAction() | RewriteRows() | RestoreBackup() | CheckLiveViews()
              | RegisterTableAction() | ForgetEntryAction()):
            return action
        case _ as unreachable:
            assert_never(unreachable)


def _drop_record(record: str, versioned: bool) -> str:
    """A drop's record without the commit it names (and, unless ``versioned``, the version it names)."""
    left_out = ("commit",) if versioned else ("commit", "version")
    return json.dumps({k: v for k, v in json.loads(record).items() if k not in left_out}, sort_keys=True)


def _unversioned(plan: Plan) -> frozenset[str]:
    """The drop records of ``plan`` for objects schemaflow never stamped (adopted by import): they name no
    version, so there is none to compare with the version the reviewed plan gives the object."""
    return frozenset(key for step in plan.steps for action in step.actions if isinstance(action, SetDatabaseParameters)
                     for key, value in action.properties.items()
                     if key.startswith(DROPPED_PREFIX) and json.loads(value).get("version") is None)


def _changes(plan: Plan) -> list[Step]:
    """The steps that change definitions: view partitions follow the loads of base tables, which only
    the metastore knows at apply; settings steps are for the reviewer (only git knows the settings
    before), and the settings themselves are checked by their digest (``workflow.check_settings``)."""
    return [s for s in plan.steps if s.kind not in (StepKind.VIEW_PARTITIONS, StepKind.CHANGE_SETTINGS)]


def differences(reviewed: Plan, current: Plan) -> list[str]:
    """How ``current`` differs from ``reviewed`` in what it would change, a line a step; empty when it does not.

    The live views' SQL a step has Spark analyse (``CheckLiveViews``) is compared only with a plan made against the
    metastore: a review between git refs cannot read another team's views, and the operator's approval of the step's
    id, which covers that SQL, is what lets it run."""
    reviewed_steps, current_steps = _changes(reviewed), _changes(current)
    unversioned, live = _unversioned(current), reviewed.basis == Basis.METASTORE

    def comparable(step: Step) -> tuple[Any, ...]:
        return _comparable(step, unversioned, live)
    if [comparable(s) for s in reviewed_steps] == [comparable(s) for s in current_steps]:
        return []
    now = {(s.kind, s.object): s for s in current_steps}
    before = {(s.kind, s.object) for s in reviewed_steps}
    lines = []
    for step in reviewed_steps:
        match = now.get((step.kind, step.object))
        if match is None:
            lines.append(f"no longer planned: {step.summary}")
        elif comparable(match) != comparable(step):
            lines.append(f"planned differently: {step.summary}")
    lines += [f"planned now, not reviewed: {s.summary}" for s in current_steps if (s.kind, s.object) not in before]
    return lines or ["the same steps, in another order"]
