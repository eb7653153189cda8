"""An apply from start to finish: which plan runs, the checks before its first write, the
confirmation, the executor, and what follows it (the catalog's own, ``CatalogWriter.after_apply``: Spark's cache
refreshed on the Hive metastore; the project's hooks).

The command line only asks and prints: it hands in how to show a plan, how to confirm it and where
progress goes, and reads the outcome. So another program drives an apply exactly as ``schemaflow
apply`` does, and a test injects its pause (a hook that stops the run at a named point) here.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from schemaflow.apply.after import HookFailure, cached_before, changed_objects, run_hooks
from schemaflow.apply.executor import ApplyNotStarted, apply_plan, check_runnable
from schemaflow.apply.stops import signal_name, terminated
from schemaflow.catalog.backend import CatalogWriter
from schemaflow.catalog.live import Live
from schemaflow.errors import SchemaflowError
from schemaflow.plan.backups import NO_BACKUP_DROPS, BackupDrops
from schemaflow.plan.kinds import StepKind
from schemaflow.plan.plan import Plan
from schemaflow.plan.review_check import differences
from schemaflow.project import STATE_DIR, Project
from schemaflow import workflow
from schemaflow.wording import DIRTY, short_commit

# Stops a run at a point (``planned``, ``claimed``, ``<step>.<action>``, or a long step's report of its progress):
# tests of crashes and races.
Pause = Callable[[str], None]


@dataclass(frozen=True)
class ApplyOptions:
    """What ``apply`` was asked to run."""

    saved: Path | None = None        # a plan saved by plan --out, run as reviewed
    reviewed: Path | None = None     # a plan made for review: planning now must make the same changes
    allow_destructive: bool = False
    drop_backups: BackupDrops = NO_BACKUP_DROPS  # the backups it may drop (plan.backups)
    recompile: tuple[str, ...] = ()  # views to re-create from their declared SQL
    take_over: bool = False          # finish the work of an apply that stopped on another host


@dataclass(frozen=True)
class ApplyOutcome:
    """How an apply ended: ``ran`` is False when there was nothing to do or it was not confirmed."""

    plan: Plan
    ran: bool
    changed: tuple[str, ...] = ()             # the objects it changed, as the hooks were told
    warnings: tuple[str, ...] = ()            # Spark's cache of an object that could not be refreshed
    failures: tuple[HookFailure, ...] = ()    # hooks that failed (the apply itself succeeded)


def apply_project(project: Project, live: Live, options: ApplyOptions, *, show: Callable[[Plan], object],
                  confirm: Callable[[Plan], bool], progress: TextIO, report: Callable[[str], None],
                  pause: Pause | None = None) -> ApplyOutcome:
    """Choose the plan (``chosen_plan``), ``show`` it, check it can run and that no other apply holds
    its objects, ask ``confirm``, then run it (``progress`` gets the steps, ``report`` what a long step
    does) and, once it is applied, refresh Spark's cache of what changed and run the project's hooks."""
    plan: Plan | None = None
    try:
        with terminated():  # SIGTERM, as SIGINT, stops at once before the steps, where nothing is written
            plan = chosen_plan(project, live, options)
            show(plan)
            if plan.is_empty:
                return ApplyOutcome(plan, ran=False)
            check_runnable(plan)
            workflow.check_claims(plan, take_over=options.take_over)
            if not confirm(plan):
                return ApplyOutcome(plan, ran=False)
            workflow.check_moved(plan, live)
            writer = live.writer()
            writer.progress = report if pause is None else _paused(report, pause)
            if pause:
                pause("planned")
    except KeyboardInterrupt as stopped:
        raise ApplyNotStarted(signal_name(stopped), "while it made the plan" if plan is None else
                              "before its first step", plan) from None
    apply_plan(plan, writer, progress=progress, pause=pause, capabilities=workflow.capabilities(project),
               source=_source_writer(live, plan))
    changed = changed_objects(plan)
    warnings = writer.after_apply(cached_before(plan)) + _uncommitted(plan)
    # The state directory as the project names it (local_server.state_directory's, before links are followed: hooks
    # refuse a link there rather than write through it).
    state = project.settings.derby_dir or STATE_DIR
    failures = run_hooks(project.settings.after_apply, changed, str(project.root), state)
    return ApplyOutcome(plan, ran=True, changed=changed, warnings=tuple(warnings), failures=tuple(failures))


def _source_writer(live: Live, plan: Plan) -> CatalogWriter | None:
    """The writer of the catalog the project moves from, where the plan forgets entries there (``plan.moving``)."""
    forgets = any(step.kind == StepKind.FORGET_ENTRY for step in plan.steps)
    return live.source_writer() if forgets else None


def _paused(report: Callable[[str], None], pause: Pause) -> Callable[[str], None]:
    """``report``, then ``pause`` at the report: a point inside a long step."""
    def reported(message: str) -> None:
        report(message)
        pause(message)
    return reported


def _uncommitted(plan: Plan) -> list[str]:
    """A warning when ``plan`` was made from uncommitted changes: its objects now record a commit that does
    not hold what was applied, for as long as they stand."""
    if not (plan.commit or "").endswith(DIRTY):
        return []
    return [f"this plan was made from uncommitted changes, so what it applied records the commit "
            f"{short_commit(plan.commit)} for good (history and drift show it), a commit that does not hold those "
            "changes: commit them, then plan and apply from the commit"]


def chosen_plan(project: Project, live: Live, options: ApplyOptions) -> Plan:
    """The plan an apply runs: the saved one, checked against the metastore and the project as they are
    now; else one made now, which must make the changes of the reviewed plan if one is given."""
    workflow.check_code(project, "in apply")
    reviewed = workflow.load_plan(options.reviewed) if options.reviewed else None
    if reviewed:  # before the metastore is read (and Spark started): the reviewed plan says what would run
        check_runnable(reviewed)
        workflow.check_plan_code(reviewed, project)
    if reviewed and options.reviewed:
        workflow.check_settings(reviewed, options.reviewed, project)
    if reviewed and options.saved:
        raise SchemaflowError("--reviewed checks a plan made now against the reviewed one: give no PLAN with it")
    if options.saved and options.recompile:
        raise SchemaflowError("a saved plan runs as reviewed: plan again to re-create views with --recompile, "
                              "or give no PLAN")
    if options.saved:
        plan = workflow.load_plan(options.saved)
        if options.allow_destructive and not plan.allow_destructive:
            raise SchemaflowError(f"{options.saved} was planned without --allow-destructive; "
                                  "a saved plan runs as reviewed: plan again with --allow-destructive")
        if options.drop_backups.given and options.drop_backups != plan.drop_backups:
            raise SchemaflowError(f"{options.saved} was planned with other leave to drop backups than given now; "
                                  "a saved plan runs as reviewed: plan again with the backups to drop")
        check_runnable(plan)
        workflow.check_plan_code(plan, project)
        workflow.check_saved(plan, options.saved, project, live)
        return plan
    allow = reviewed.allow_destructive if reviewed else options.allow_destructive
    drops = reviewed.drop_backups if reviewed else options.drop_backups
    plan = workflow.make_plan(project, live, allow_destructive=allow, drop_backups=drops, recompile=options.recompile)
    stale = differences(reviewed, plan) if reviewed else []
    if stale:
        raise SchemaflowError(f"{options.reviewed} is stale: planning now against the "
                              f"{workflow.capabilities(project).noun} makes other changes "
                              "than were reviewed; nothing was applied. Review again.\n  " + "\n  ".join(stale))
    if not plan.blocked:  # a blocked plan runs nothing: apply shows it and refuses its blocked steps first
        workflow.check_plan_code(plan, project)
    return plan


def run_plan(live: Live, plan: Plan, progress: TextIO, report: Callable[[str], None],
             pause: Pause | None = None) -> None:
    """Run a plan of a command of its own (``workflow.view_partitions_plan``, ``workflow.restoring``), confirmed
    already, after the checks an apply makes first."""
    check_runnable(plan)
    workflow.check_claims(plan)
    writer = live.writer()
    writer.progress = report if pause is None else _paused(report, pause)
    apply_plan(plan, writer, progress=progress, pause=pause, capabilities=workflow.capabilities(live.project),
               source=_source_writer(live, plan))
