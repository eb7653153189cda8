"""A plan: the ordered steps that turn the live catalog into the desired one, saved and loaded as JSON.

``PlanBuilder`` is the whole planner: diff, find the views the changes break and apply the
invalidation mode to them (``plan.invalidation``), count the partitions an append leaves alone, end
every touched object with its ``Stamp`` (managed properties and version), give partitioned views the
partitions they should have, order everything, add the settings' steps, and block what may not run
as asked (destructive steps without ``allow_destructive``, backups' drops without ``drop_backups``, changes that cannot be made in place, changes
that break views under ``invalidation: strict``, views the engine refuses, changes the catalog cannot make:
``plan.catalog_fit``, changes that break a reader, the Spark it is made for or one ``schemaflow.yaml`` declares: ``plan.readers``). Everything it needs is given
before it builds, and a plan, once built, is never patched: what the reviewer reads is what was built.
"""
from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, assert_never
from collections.abc import Callable, Collection, Mapping

from schemaflow.capabilities import HIVE_METASTORE, Capabilities
from schemaflow.claims import ELSEWHERE, RUNNING, STOPPED, parse_claim, standing
from schemaflow.model import (APPLIED_AT_KEY, APPLIED_COMMIT_KEY, APPLIED_STATE_KEY, LIVE_STATE, MANAGED_KEYS_KEY,
                              DROPPED_PREFIX, VERSION_KEY, Catalog, Invalidation, Migration, Partitions, Object, Stored, Table, View, catalog_digest,
                              fingerprint, recorded, state_digest)
from schemaflow.errors import SchemaflowError
from schemaflow.plan import deps
from schemaflow.plan.backups import NO_BACKUP_DROPS, BackupDrops, DropBackup, backup_drops, waiting_on_backups
from schemaflow.plan.catalog_fit import delta_committing, dropping, renaming, without_engine
from schemaflow.plan.changes import (AddColumns, AlterColumns, Change, CreateTable, CreateView, DropTable, DropView,
                                     ReplaceView, Stamp, SyncViewPartitions)
from schemaflow.plan.diff import diff, property_delta, where_free
from schemaflow.plan.evolution import ColumnChange, Evolution
from schemaflow.plan.hazards import OFFER
from schemaflow.plan.iceberg import ConvertToIceberg
from schemaflow.plan.migration_records import (found_elsewhere, found_warnings, migration_records, recorded_ids,
                                               with_found)
from schemaflow.plan.rewrite import REWRITE_BLOCK, RewriteTable, by_copying
from schemaflow.plan.invalidation import resolve
from schemaflow.plan.kinds import VIEW_DEFINITIONS, ObjectType, StepKind
from schemaflow.plan.live_code import LiveViews, with_live_code
from schemaflow.plan.moving import Moving
from schemaflow.plan.reader_rules import events
from schemaflow.plan.readers import READER_BLOCK, Reader, breaks, judge, plan_readers
from schemaflow.plan.settings_changes import SettingsChange
from schemaflow.plan.steps import APPLIED_AT, Step
from schemaflow.plan.view_code import unchecked, with_code_hazard
from schemaflow.plan.view_partitions import PartitionLister, partition_changes
from schemaflow.spark_version import SparkVersion, spark_version
from schemaflow.spec.iceberg import unwritten
from schemaflow.sql.code_calls import Allowed

FORMAT_VERSION = 4
HIVE = "hive"  # the catalog backend of a plan that names none: the Hive metastore's
ABSENT = "absent"  # the fingerprint of an object that does not exist yet
DESTRUCTIVE_BLOCK = "destructive: run with --allow-destructive to allow it"
# A rename in files read by name: existing rows read NULL under the new name, as lost as a dropped column's.
HIDING_BLOCK = (f"existing values would read NULL: plan with --allow-destructive (in a pull request, the "
                f"schemaflow-allow-destructive label) to allow it, or {OFFER} to copy them under the new name")

PartitionCounter = Callable[[str], "int | None"]
# What a view's old SQL is, by what the plan was made against: the header of its diff says so.


class Basis(StrEnum):
    """What a plan was made against: written into plan JSON, so its values never change."""
    METASTORE = "metastore"  # the live metastore: the only basis apply takes a saved plan of
    SNAPSHOT = "snapshot"    # a JSON snapshot of a metastore (plan --snapshot)
    GIT = "git"              # the desired state at a git ref (plan --base)

    @property
    def old_label(self) -> str:
        """What a view's SQL diff calls the side it is compared with."""
        match self:
            case Basis.METASTORE:
                return "live"
            case Basis.SNAPSHOT:
                return "snapshot"
            case Basis.GIT:
                return "base"
            case _:
                assert_never(self)


BREAKING = (ColumnChange, DropTable, DropView, ReplaceView)  # the changes that can break the views over them


@dataclass(frozen=True)
class LiveFiles:
    """What a plan reads of the files of the live tables it moves: what each holds (a rewrite reads it all; None: not
    known), the cores the configured master copies on (None: the settings do not say), and why a table's files
    cannot be registered in an Iceberg table as they are (a conversion in place; None: they can)."""

    measure: Callable[[str], Stored | None]
    cores: int | None
    unregistrable: Callable[[Table], str | None]


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    databases: tuple[str, ...]
    allow_destructive: bool = False
    drop_backups: BackupDrops = NO_BACKUP_DROPS  # the backups it may drop (plan.backups)
    warnings: tuple[str, ...] = ()  # findings beside the steps: they change nothing and run nothing
    # What the plan was made against, the state digest of each object it touches as it was then (ABSENT for one to
    # be created), and the desired state's commit.
    basis: Basis = Basis.METASTORE
    fingerprints: Mapping[str, str] = field(default_factory=dict)
    commit: str | None = None
    # The schemaflow.version each existing object it touches had (None: not managed yet): the apply's
    # compare-and-swap claims each object only if it still holds that value.
    guards: Mapping[str, str | None] = field(default_factory=dict)
    # The partition count of each table whose columns cascade, which chose how the cascade runs.
    partition_counts: Mapping[str, int] = field(default_factory=dict)
    # What the plan is bound to: the digest of the desired state it was made from (model.catalog_digest)
    # and the metastore it was made against (None: planned without one), for the target chosen (None: none).
    project: str | None = None
    metastore: str | None = None
    target: str | None = None
    against: str | None = None  # what it was planned against, in words ("main", "the snapshot live.json")
    settings: str | None = None  # the digest of the settings it was made with (plan.settings_changes)
    # The catalog backend it was made for (the project's metastore.type): how its actions are worded. Plan JSON has it
    # only where it is not the Hive metastore's, so that a plan saved before it was recorded loads as one.
    catalog: str = HIVE

    @property
    def is_empty(self) -> bool:
        return not self.steps

    @property
    def blocked(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.blocked)

    @property
    def objects(self) -> tuple[str, ...]:
        """The databases, tables and views the plan changes (not the settings file)."""
        return tuple(sorted({s.object for s in self.steps if s.kind != StepKind.CHANGE_SETTINGS}))

    def to_data(self) -> dict[str, Any]:
        data = {"format_version": FORMAT_VERSION, "databases": list(self.databases),
                "allow_destructive": self.allow_destructive, "steps": [s.to_data() for s in self.steps],
                "warnings": list(self.warnings), "basis": self.basis,
                "fingerprints": dict(sorted(self.fingerprints.items())), "commit": self.commit,
                "guards": dict(sorted(self.guards.items())),
                "partition_counts": dict(sorted(self.partition_counts.items())),
                "project": self.project, "metastore": self.metastore, "target": self.target,
                "against": self.against, "settings": self.settings,
                **({"drop_backups": self.drop_backups.to_data()} if self.drop_backups.given else {}),
                **({"catalog": self.catalog} if self.catalog != HIVE else {})}
        return {**data, "checksum": _checksum(data)}

    def to_json(self) -> str:
        return json.dumps(self.to_data(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Plan:
        """The plan a saved document holds; raises ``ValueError`` for a document that was edited."""
        if data.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"plan format {data.get('format_version')!r} is not {FORMAT_VERSION}; re-run schemaflow plan")
        content = {k: v for k, v in data.items() if k != "checksum"}
        if data.get("checksum") != _checksum(content):
            raise ValueError("its checksum does not match its content: it was changed after schemaflow wrote it")
        return cls(steps=tuple(Step.from_data(s) for s in data["steps"]), databases=tuple(data["databases"]),
                   allow_destructive=bool(data["allow_destructive"]), warnings=tuple(data["warnings"]),
                   basis=Basis(data["basis"]), fingerprints=dict(data["fingerprints"]), commit=data["commit"],
                   guards=dict(data["guards"]), partition_counts=dict(data["partition_counts"]),
                   project=data["project"], metastore=data["metastore"], target=data.get("target"),
                   against=data.get("against"), settings=data.get("settings"),
                   drop_backups=BackupDrops.from_data(data.get("drop_backups")), catalog=data.get("catalog", HIVE))


def _checksum(content: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class PlanBuilder:
    """Everything a plan is made from, given before it is made; ``build`` makes it, complete, once (nothing replaces
    a field of a plan afterwards): the changes that turn ``live`` into ``desired`` (both restricted to the managed
    databases), what the plan is bound to, and what it says beside its steps.

    ``invalidation`` says what happens to views a change breaks (``plan.invalidation``); ``recompile``
    names declared views to re-create from their SQL whether or not anything changed.

    ``count_partitions`` and ``stale_partitions`` answer for tables whose columns change (None: unknown);
    ``unfinished_partitions`` counts the partitions of a table whose cascade an apply left under way that
    lack any of its columns, appended ones too (None: ``stale_partitions``);
    with ``check_partitions`` every other partitioned table is checked for stale partitions too, a
    cost that grows with the partition count. ``commit`` names the git commit of the desired state,
    recorded on every object written. ``list_partitions`` lists the live partitions of a table or
    view, for the partitions of partitioned views (None: no metastore; see ``plan.view_partitions``).
    ``type_rule``: whether the metastore refuses incompatible column type changes, as its server
    says (on when unknown). ``files`` reads the files of the tables the plan rewrites or converts (None: not read).

    ``settings``: the settings' steps and record (``plan.settings_changes``; None: the plan says nothing of them).
    ``view_problems`` answers, for the views the plan (re-)creates, why the engine refuses each it does (None: not
    checked): those steps are blocked, so that apply refuses them before the first write rather than fail at the view.
    ``allowed`` is what views call freely (``sql.code_calls``; None: the installed Spark's built-ins): the steps of
    views that call anything else carry the code's id (``plan.view_code``). Of those, the views whose code is not among
    ``approved_code``, or that call what ``checked`` leaves out (a declared function not approved), are given to
    ``view_problems`` apart, with the note their step carries (Spark must not check them: it would run that code),
    and a step is blocked only by what the callback finds without Spark (a function the metastore does not have).
    ``live_views`` are the live views a step may have Spark analyse (None: those of ``live``): each step that would
    analyse one whose SQL calls code runs none of it, or carries it for the operator's approval (``plan.live_code``).
    ``left_alone`` and ``notices`` are warnings before and after the planner's own.

    ``capabilities`` are those of the catalog the plan is for, the backend ``catalog`` (its ``metastore.type``, which
    also words its actions): a change that renames tables where it cannot is blocked, and where it runs no engine, no
    step has one analyse views (``plan.catalog_fit``), nor is ``view_problems`` asked.
    ``moving``: the catalog the project moves from (``plan.moving``; None: none): the tables registered from it are
    planned as if live, after their register steps, but neither claimed nor fingerprinted (the catalog lacks them).
    ``readers``: the readers ``schemaflow.yaml`` declares (``plan.readers``; None: none), besides the Spark ``release``,
    which reads every table (``plan_readers``): each step carries their verdicts on what it does, and one that breaks
    a reader is blocked unless destructive steps are allowed.
    """

    desired: Catalog
    live: Catalog
    allow_destructive: bool = False
    drop_backups: BackupDrops = NO_BACKUP_DROPS
    basis: Basis = Basis.METASTORE
    commit: str | None = None
    invalidation: Invalidation = Invalidation.STRICT
    recompile: tuple[str, ...] = ()
    release: SparkVersion | None = None
    type_rule: bool = True
    count_partitions: PartitionCounter | None = None
    stale_partitions: PartitionCounter | None = None
    unfinished_partitions: PartitionCounter | None = None
    check_partitions: bool = False
    list_partitions: PartitionLister | None = None
    files: LiveFiles | None = None
    metastore: str | None = None
    target: str | None = None
    against: str | None = None
    left_alone: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    settings: SettingsChange | None = None
    view_problems: Callable[[tuple[str, ...], Mapping[str, str]], Mapping[str, str]] | None = None
    allowed: Allowed | None = None
    checked: Allowed | None = None
    approved_code: frozenset[str] = frozenset()
    live_views: LiveViews | None = None
    capabilities: Capabilities = HIVE_METASTORE
    catalog: str = HIVE
    moving: Moving | None = None
    readers: tuple[Reader, ...] | None = None

    @functools.cached_property
    def planned(self) -> _Planned:
        """Every step of the plan, in order, and the changes they came from (made once, on first use)."""
        desired, allow_destructive = self.desired, self.allow_destructive
        # Several parts of the plan ask about one table; each metastore count is made once.
        count_partitions, stale_partitions = _once(self.count_partitions), _once(self.stale_partitions)
        registered = self.moving.registered(desired, self.live) if self.moving else {}
        # A table registered from the catalog moved from is planned as it holds it, once registered.
        live = deps.with_live_reads(replace(self.live, objects={**self.live.objects, **registered}))
        found = found_elsewhere(desired, live)  # migrations an earlier apply made and did not record on a table
        changes = [replace(c, old_label=self.basis.old_label) if isinstance(c, ReplaceView)
                   else _registering(c, live, self.files) for c in diff(desired, with_found(live, found),
                                                                         self.type_rule, self.release)]
        if self.moving:  # each register before the table's other changes (deps.order keeps an object's order)
            changes = [*self.moving.register_steps(registered), *changes]
        left = _left_alone(desired, live)  # what no step may touch, declared or not
        changes = [dropping(delta_committing(renaming(c, self.capabilities, self.catalog), self.capabilities, self.catalog),
                            self.capabilities) for c in changes if c.key not in left]
        changes, kept, waiting = backup_drops(changes, self.drop_backups)
        changes = _recompiled(changes, desired, self.recompile)
        outcome = resolve(changes, desired, live, self.invalidation)
        changes = outcome.changes + _resumed(desired, live, outcome.changes,
                                             _once(self.unfinished_partitions) or stale_partitions)
        changes = [_with_partition_facts(c, count_partitions, stale_partitions, self.files) for c in changes]
        changes = [replace(c, release=self.release) if isinstance(c, AlterColumns) else c for c in changes]
        changes = [_with_records(c, desired, self.commit) for c in changes]
        changes += [s for s in _stamps(desired, live, changes, self.commit) if s.key not in left]
        # After the stamps: a view's partitions are its contents, not its definition, and need no stamp.
        changes += partition_changes(desired, live, changes, self.list_partitions)
        steps: list[Step] = []
        allowed = self.allowed or Allowed(spark_version())
        ordered_changes = deps.order(changes, live)
        for change in (with_live_code(ordered_changes, self.live_views or LiveViews(self.live), allowed)
                       if self.capabilities.engine else without_engine(ordered_changes)):
            step = with_code_hazard(change.to_step(), allowed)
            if self.moving:
                step = self.moving.with_move(step)
            # Columns are dropped only by migrations that name them: those need no further permission.
            if (step.destructive and not allow_destructive and not step.blocked and not isinstance(change, DropBackup)
                    and not (isinstance(change, ColumnChange) and not change.needs_permission)):
                step = replace(step, blocked=REWRITE_BLOCK if isinstance(change, RewriteTable) else DESTRUCTIVE_BLOCK)
            elif isinstance(change, AlterColumns) and change.hides_values and not allow_destructive and not step.blocked:
                step = replace(step, blocked=HIDING_BLOCK)
            if happens := events(change, self.release):  # a break is allowed as a destructive step is
                readers = plan_readers(self.readers, self.release or spark_version())  # a release only where needed
                verdicts = judge(happens, [r for r in readers if r.reads(change.key)])
                step = replace(step, readers=verdicts, blocked=step.blocked or (
                    READER_BLOCK if breaks(verdicts) and not allow_destructive else None))
            if isinstance(change, BREAKING):  # what it does to the views over it
                step = replace(step, notes=step.notes + outcome.notes.get(change.key, ()),
                               blocked=step.blocked or outcome.blocked.get(change.key))
            if isinstance(change, Stamp) and steps and steps[-1].object == change.key:
                # The stamp is the object's last write: it runs as the end of the step before it.
                step = _fold(steps.pop(), change)
            elif not step.actions and isinstance(change, SyncViewPartitions) and steps and steps[-1].object == change.key:
                # Nothing to run: what it says belongs to the re-creation before it.
                previous = steps.pop()
                step = replace(previous, notes=previous.notes + (step.summary.replace(f" of view {change.key}", ""),)
                               + step.notes, destructive=previous.destructive or step.destructive,
                               blocked=previous.blocked or step.blocked)
            steps.append(step)
        if self.moving:  # destructive all: as any other, blocked unless allowed
            steps += [s if allow_destructive else replace(s, blocked=DESTRUCTIVE_BLOCK)
                      for s in self.moving.forget_steps(desired, self.live)]
        ordered = tuple(waiting_on_backups(_waiting(steps), waiting))
        warnings = found_warnings(found) + tuple(left.values()) + outcome.warnings + kept
        if self.moving:
            warnings += self.moving.warnings(desired, self.live, registered)
        if self.check_partitions:
            warnings += _stale_elsewhere(desired, live, changes, count_partitions, stale_partitions)
        if self.settings is not None:
            ordered = self.settings.steps(ordered, self.commit, desired.databases)
        if (self.view_problems is not None and self.capabilities.engine
                and (views := tuple(s.object for s in ordered if s.kind in VIEW_DEFINITIONS))):
            skipped = unchecked(ordered, self.checked or self.allowed, self.approved_code)
            reasons = self.view_problems(views, skipped)
            ordered = tuple(replace(s, blocked=s.blocked or reasons[s.object]) if s.kind in VIEW_DEFINITIONS
                            and s.object in reasons else replace(s, notes=s.notes + (skipped[s.object],))
                            if s.kind in VIEW_DEFINITIONS and s.object in skipped else s for s in ordered)
        return _Planned(ordered, tuple(changes), warnings + _resume_warnings(live), live, frozenset(registered))

    def build(self, objects: Collection[str] | None = None) -> Plan:
        """The plan; with ``objects``, of their steps alone (what a command that runs part of a plan reviews)."""
        steps, changes, live = self.planned.steps, self.planned.changes, self.planned.live
        # An entry forgotten in the catalog moved from is no object of this one's.
        touched = {s.object for s in steps if s.object_type != ObjectType.DATABASE and s.kind != StepKind.FORGET_ENTRY}
        held = {key: obj for key, obj in live.objects.items() if key not in self.planned.moved}
        fingerprints = {key: state_digest(held[key]) if key in held else ABSENT for key in sorted(touched)}
        # A view's partitions are contents, synced without a stamp: they alone do not claim the view.
        claimed = {s.object for s in steps if s.object_type != ObjectType.DATABASE
                   and s.kind not in (StepKind.VIEW_PARTITIONS, StepKind.FORGET_ENTRY)}
        guards = {key: held[key].version for key in sorted(claimed) if key in held}
        if objects is not None:
            steps = tuple(s for s in steps if s.object in objects)
            fingerprints = {k: v for k, v in fingerprints.items() if k in objects}
            guards = {k: v for k, v in guards.items() if k in objects}
        warnings = (self.left_alone + self.planned.warnings + self.notices
                    + (self.settings.warnings if self.settings else ()))
        return Plan(steps=tuple(_note_adoptions(list(steps), guards)), databases=self.desired.databases,
                    allow_destructive=self.allow_destructive, drop_backups=self.drop_backups, warnings=warnings,
                    basis=self.basis,
                    fingerprints=fingerprints, commit=self.commit, guards=guards,
                    partition_counts={c.key: c.partition_count for c in changes if isinstance(c, AlterColumns)
                                      and c.cascade and c.partition_count is not None},
                    project=catalog_digest(self.desired), metastore=self.metastore, target=self.target,
                    against=self.against, settings=self.settings.digest if self.settings else None,
                    catalog=self.catalog)


@dataclass(frozen=True)
class _Planned:
    steps: tuple[Step, ...]
    changes: tuple[Change, ...]
    warnings: tuple[str, ...]  # the planner's own
    live: Catalog              # as planned against: each view with what its stored SQL reads
    moved: frozenset[str] = frozenset()  # the tables registered from the catalog moved from: not in the live one


def _waiting(steps: list[Step]) -> list[Step]:
    """Each step of an object that also has a change it cannot take in place, blocked as waiting on that one:
    the reviewer sees everything the files change, and apply runs none of it."""
    unsupported = {s.object: number for number, s in enumerate(steps, 1) if s.kind == StepKind.UNSUPPORTED}
    return [replace(s, blocked=f"waits on step {unsupported[s.object]}, which cannot run as planned")
            if s.object in unsupported and not s.blocked else s for s in steps]


def _once(counter: PartitionCounter | None) -> PartitionCounter | None:
    """``counter``, asking about each table at most once."""
    return functools.cache(counter) if counter else None


def _recompiled(changes: list[Change], desired: Catalog, recompile: tuple[str, ...]) -> list[Change]:
    """The changes with each view of ``recompile`` re-created, unless they already (re-)create it."""
    asked = {name.lower() for name in recompile}
    for key in sorted(asked):
        if not isinstance(desired.get(key), View):
            declared = ", ".join(v.key for v in desired.views()) or "none"
            raise SchemaflowError(f"--recompile {key}: no such view is declared (views: {declared})")
    # A view the plan re-creates anyway (its columns changed) is now re-created as asked: what it
    # breaks is the point of the recompile, so strict mode spares it as it spares an edit of its SQL.
    changes = [replace(c, reasons=c.reasons + ("recompile requested",), deliberate=True)
               if isinstance(c, ReplaceView) and c.key in asked and not c.deliberate else c for c in changes]
    handled = {c.key for c in changes if isinstance(c, (CreateView, ReplaceView))}
    extra: list[Change] = [ReplaceView(view, ("recompile requested",), deliberate=True)
                           for key in sorted(asked - handled) for view in [desired.get(key)] if isinstance(view, View)]
    return changes + extra


def _stale_elsewhere(desired: Catalog, live: Catalog, changes: list[Change], count: PartitionCounter | None,
                     stale: PartitionCounter | None) -> tuple[str, ...]:
    """Partitioned tables the plan does not alter whose partitions have another column list than the table."""
    if stale is None:
        return ()
    altered = {c.key for c in changes if isinstance(c, AlterColumns)}
    warnings = []
    for table in desired.tables():
        if not table.partition_columns or table.key in altered or not isinstance(live.get(table.key), Table):
            continue
        found = stale(table.key)
        if found:
            total = count(table.key) if count else None
            warnings.append(f"{table.key}: {found} of {total if total is not None else '?'} partitions have a stale "
                            "column list (left by restrict changes or other tools); repair them with a migration: "
                            f"- partitions: {{table: {table.key}, mode: cascade}}")
    return tuple(warnings)


def _registering(change: Change, live: Catalog, files: LiveFiles | None) -> Change:
    """A conversion in place whose files Iceberg cannot register, as their footers show: a conversion by copying."""
    why = files.unregistrable(change.have) if isinstance(change, ConvertToIceberg) and files else None
    if not why:
        return change
    assert isinstance(change, ConvertToIceberg)
    return where_free(by_copying(change.key, change.want, change.have, why), live)


def _with_partition_facts(change: Change, count: PartitionCounter | None, stale: PartitionCounter | None,
                          files: LiveFiles | None) -> Change:
    if isinstance(change, AddColumns) and change.partitioned and count:
        return replace(change, partition_count=count(change.key))
    if isinstance(change, AlterColumns) and change.partition_columns:
        return replace(change, partition_count=count(change.key) if count else None,
                       stale_partitions=stale(change.key) if stale else None)
    if isinstance(change, RewriteTable) and not change.resumed:
        counted = count(change.key) if count and change.have.partition_columns else None
        return replace(change, partition_count=counted, stored=files.measure(change.key) if files else None,
                       cores=files.cores if files else None)
    return change


def _with_records(change: Change, desired: Catalog, commit: str | None) -> Change:
    """A change of columns records the migrations it applies in its own write, so that a crash cannot part them: an
    ``AlterColumns`` in its ``alter_table``, a rewrite in the rename that makes its copy the table (a new entry: every
    migration naming the table), an Iceberg commit in its stamp, which it takes in (``plan.migration_records``).
    A drop records itself on the object's database, since the object's own parameters go with it."""
    if isinstance(change, AlterColumns) and change.evolution.migrations:
        applied = [m for m in desired.migrations if m.id in change.evolution.migrations]
        return replace(change, records=migration_records(applied, commit))
    if isinstance(change, RewriteTable):
        return replace(change, records=migration_records((m for m in desired.migrations if m.changes_for(change.key)),
                                                         commit))
    if isinstance(change, (DropTable, DropView)):
        dropped = change.table if isinstance(change, DropTable) else change.view
        record = {"at": APPLIED_AT, "commit": commit, "kind": dropped.kind, "version": dropped.version}
        return replace(change, record={DROPPED_PREFIX + dropped.name: json.dumps(record, sort_keys=True)})
    return change


def _fold(step: Step, stamp: Stamp) -> Step:
    properties = stamp.describe_properties()
    notes = step.notes + ((f"properties: {properties}",) if properties else ())
    # A change that cannot be made shows what it would have made, the properties the stamp sets among them: once.
    return replace(step, stamp=stamp.write, notes=notes,
                   values=step.values + tuple(v for v in stamp.values() if v not in step.values))


def _left_alone(desired: Catalog, live: Catalog) -> dict[str, str]:
    """A line for each declared table the plan leaves alone whatever its file says (an Iceberg table of a format
    version schemaflow does not write), by name: no step changes, stamps or drops it. (Undeclared ones are the
    scope's to leave alone.)"""
    return {key: f"left alone: {key} is {why}; schemaflow reads it and changes nothing of it, whatever its file says"
            for key, have in sorted(live.objects.items()) if key in desired.objects and isinstance(have, Table)
            for why in [unwritten(have)] if why}


def _stamps(desired: Catalog, live: Catalog, changes: list[Change], commit: str | None) -> list[Stamp]:
    """One final write per desired object that changes, whose managed properties differ, or that has
    migrations to record.

    A (re)created object gets all its properties again: Spark's CREATE OR REPLACE VIEW drops the
    parameters it did not write. A created table records every migration that names it: they are moot.
    """
    touched = {c.key for c in changes}
    # A conversion to Iceberg makes a new table of the name: it gets every declared property, as a created one.
    recreated = {c.key for c in changes if isinstance(c, (CreateTable, CreateView, ReplaceView, ConvertToIceberg,
                                                          RewriteTable))}
    # What a change records in its own write, table by table: a migration naming several tables is recorded on each.
    # A conversion by copying registers a new Iceberg table after its copy's cut-over: its stamp records them there.
    recorded_now = {(c.key, id_) for c in changes if isinstance(c, AlterColumns) or isinstance(c, RewriteTable)
                    and c.iceberg is None for id_ in recorded_ids(c.records)}
    stamps = []
    for key, want in sorted(desired.objects.items()):
        have = None if key in recreated else live.get(key)
        changed, removed = property_delta(want, have)
        migrations = []
        if isinstance(want, Table):
            recorded = have.migrations if isinstance(have, Table) else {}
            migrations = [m for m in desired.migrations
                          if m.changes_for(key) and m.id not in recorded and (key, m.id) not in recorded_now]
        claimed = parse_claim(live.objects[key].version) if key in live.objects else None
        if key in touched or changed or removed or migrations or claimed:
            stamps.append(_stamp(want, have, changed, removed, migrations, commit))
    return stamps


def _stamp(want: Object, have: Object | None, changed: Mapping[str, str], removed: tuple[str, ...],
           migrations: list[Migration], commit: str | None) -> Stamp:
    """The last write to ``want``: changed properties, version, managed keys, when, from where, migrations."""
    to_set = {**changed, VERSION_KEY: fingerprint(want), APPLIED_AT_KEY: APPLIED_AT, APPLIED_STATE_KEY: LIVE_STATE}
    to_unset = removed
    if want.properties:
        to_set[MANAGED_KEYS_KEY] = ",".join(sorted(want.properties))
    elif have is not None and have.managed_keys:
        to_unset += (MANAGED_KEYS_KEY,)
    if commit:
        to_set[APPLIED_COMMIT_KEY] = commit
    to_set |= migration_records(migrations, commit)
    was = None if have is None else {k: have.properties[k] for k in (*changed, *removed) if k in have.properties}
    return Stamp(want.key, ObjectType(want.kind), to_set, to_unset, was)


def applied(want: Object, migrations: Collection[Migration]) -> Object:
    """``want`` as a complete apply leaves it in the metastore: what its stamp (``_stamp``, as for an
    object created anew) writes, read back as the live reader reads it (``model.recorded``). A table
    records every one of ``migrations`` that names it: created as declared, they are moot."""
    named = [m for m in migrations if m.changes_for(want.key)] if isinstance(want, Table) else []
    changed, removed = property_delta(want, None)
    stamped = recorded(_stamp(want, None, changed, removed, named, None).write.set)
    if not isinstance(want, Table):
        del stamped["migrations"]
    return replace(want, **stamped)


def _resumed(desired: Catalog, live: Catalog, changes: list[Change],
             unfinished: PartitionCounter | None) -> list[Change]:
    """What an interrupted apply left unfinished, beyond what the diff sees, on the objects it still claims.

    A view it was to re-create may look unchanged (a re-creation after a base table changed), so it
    is re-created; a table whose partitions were to follow its columns in batches gets its stale
    partitions repaired (those that lack any column, an appended one too: the cascade was asked for).
    Everything else a half-done object lacks, the diff finds by itself.
    """
    planned = {c.key for c in changes}
    extra: list[Change] = []
    for key, have in sorted(live.objects.items()):
        claim = parse_claim(have.version)
        want = desired.get(key)
        if claim is None or want is None or key in planned:
            continue
        if isinstance(want, View) and VIEW_DEFINITIONS & set(claim.steps):
            extra.append(ReplaceView(want, (f"finishing the re-creation that {claim.describe()} began",)))
        elif isinstance(want, Table) and claim.cascade and want.partition_columns and unfinished and unfinished(key):
            finish = ("finish giving every partition the table's columns",)
            evolution = Evolution(key, have.columns, have.columns, finish, mode=Partitions.CASCADE)
            extra.append(AlterColumns(key, evolution, want.partition_columns, want.format, cascade=True))
    return extra


def _resume_warnings(live: Catalog) -> tuple[str, ...]:
    """What the claims found on live objects mean for this plan. A backup's is none: no run works on a backup, and a
    claim on one is the version a stopped run's claim replaced on the table before its rewrite (as releases before
    ``catalog.hive.rewrite`` kept ``NO_VERSION`` left it), with nothing to finish."""
    said = {
        RUNNING: "being applied right now by {}; apply refuses it until that run has finished",
        ELSEWHERE: "claimed by {}; if that apply has stopped, apply --take-over finishes its work",
        STOPPED: "left half-done by {}; this plan finishes it",
    }
    claims = ((key, parse_claim(obj.version)) for key, obj in sorted(live.objects.items())
              if not (isinstance(obj, Table) and obj.backup_of))
    return tuple(f"{key}: " + said[standing(claim)].format(claim.describe()) for key, claim in claims if claim)


def _note_adoptions(steps: list[Step], guards: Mapping[str, str | None]) -> list[Step]:
    """Say on its first step that an object not yet managed is adopted with an unguarded first write."""
    noted: set[str] = set()
    out = []
    for step in steps:
        if step.object in guards and guards[step.object] is None and step.object not in noted:
            noted.add(step.object)
            step = replace(step, notes=step.notes + (
                "not yet managed by schemaflow: adopted with a plain first write (no compare-and-swap "
                "until it carries schemaflow.version)",))
        out.append(step)
    return out
