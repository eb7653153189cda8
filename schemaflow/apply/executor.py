"""Runs a plan's steps in order against a target, reporting progress and what was applied.

The executor is the second walk over the plan's steps (the renderers are the first), so exactly
the reviewed statements run. It refuses a plan with blocked steps before touching anything, and
when a step fails it raises ``ApplyError`` naming the step and listing what was and was not applied.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Mapping, Protocol, Sequence, TextIO

from schemaflow.errors import SchemaflowError
from schemaflow.plan.plan import Plan
from schemaflow.model import Column, PartitionValues
from schemaflow.plan.steps import (APPLIED_AT, Action, ChangeViewPartitions, PartitionView, SetColumns, SetParameters,
                                   SqlAction, Step)


class Target(Protocol):
    """Where actions run: Spark and the metastore, or a recorder in tests."""

    def run_sql(self, sql: str) -> None: ...

    def set_parameters(self, key: str, set: Mapping[str, str], unset: Sequence[str]) -> None: ...

    def partition_view(self, key: str, columns: Sequence[str]) -> None: ...

    def set_columns(self, key: str, columns: Sequence[Column], partition_columns: Sequence[Column],
                    cascade: bool, batched: bool) -> None: ...

    def change_view_partitions(self, key: str, columns: Sequence[str], add: Sequence[PartitionValues],
                               drop: Sequence[PartitionValues]) -> None: ...


class RecordingTarget:
    """Records the actions it is given instead of running them."""

    def __init__(self) -> None:
        self.actions: list[Action] = []

    def run_sql(self, sql: str) -> None:
        self.actions.append(SqlAction(sql))

    def set_parameters(self, key: str, set: Mapping[str, str], unset: Sequence[str]) -> None:
        self.actions.append(SetParameters(key, dict(set), tuple(unset)))

    def partition_view(self, key: str, columns: Sequence[str]) -> None:
        self.actions.append(PartitionView(key, tuple(columns)))

    def set_columns(self, key: str, columns: Sequence[Column], partition_columns: Sequence[Column],
                    cascade: bool, batched: bool) -> None:
        self.actions.append(SetColumns(key, tuple(columns), tuple(partition_columns), cascade, batched))

    def change_view_partitions(self, key: str, columns: Sequence[str], add: Sequence[PartitionValues],
                               drop: Sequence[PartitionValues]) -> None:
        self.actions.append(ChangeViewPartitions(key, tuple(columns), tuple(add), tuple(drop)))


class ApplyError(SchemaflowError):
    """A step failed part-way through an apply."""

    def __init__(self, failed: int, steps: Sequence[Step], cause: Exception) -> None:
        self.failed = failed  # 0-based index of the failed step
        applied = [f"  {i}. {s.summary}" for i, s in enumerate(steps[:failed], 1)]
        pending = [f"  {i}. {s.summary}" for i, s in enumerate(steps[failed:], failed + 1)]
        lines = [f"step {failed + 1} failed ({steps[failed].summary}): {cause}",
                 f"applied ({len(applied)}):"] + (applied or ["  none"])
        lines += [f"not applied ({len(pending)}):"] + pending
        lines.append("Fix the cause, then plan and apply again: a new plan starts from the live state, "
                     "so it continues where this run stopped.")
        super().__init__("\n".join(lines))


def run_action(action: Action, target: Target) -> None:
    if isinstance(action, SqlAction):
        target.run_sql(action.sql)
    elif isinstance(action, SetParameters):
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        target.set_parameters(action.object, {k: v.replace(APPLIED_AT, now) for k, v in action.set.items()},
                              action.unset)
    elif isinstance(action, SetColumns):
        target.set_columns(action.object, action.columns, action.partition_columns, action.cascade, action.batched)
    elif isinstance(action, ChangeViewPartitions):
        target.change_view_partitions(action.object, action.columns, action.add, action.drop)
    else:
        target.partition_view(action.object, action.columns)


def check_runnable(plan: Plan) -> None:
    """Refuse a plan with blocked steps, before anything is connected to or changed."""
    if plan.blocked:
        reasons = "\n".join(f"  {s.object}: {s.blocked}" for s in plan.blocked)
        raise SchemaflowError(f"the plan has {len(plan.blocked)} blocked step(s); nothing was applied:\n{reasons}")


def apply_plan(plan: Plan, target: Target, progress: TextIO | None = None) -> None:
    """Run every step of ``plan`` in order; raise ``ApplyError`` at the first failure."""
    check_runnable(plan)
    total = len(plan.steps)
    width = len(str(total))
    for index, step in enumerate(plan.steps):
        started = time.monotonic()
        if progress:
            progress.write(f"[{index + 1:>{width}}/{total}] {step.summary} ... ")
            progress.flush()
        try:
            for action in step.actions:
                run_action(action, target)
        except Exception as error:  # any Spark, metastore or py4j failure: report and stop
            if progress:
                progress.write("FAILED\n")
            raise ApplyError(index, plan.steps, error) from error
        if progress:
            progress.write(f"done ({time.monotonic() - started:.1f}s)\n")

