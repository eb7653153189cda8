"""Runs a plan's steps in order through a ``catalog.backend.CatalogWriter``, reporting progress and what
was applied.

The executor is the second walk over the plan's steps (the renderers are the first), so exactly
the reviewed statements run. It refuses a plan with blocked steps before touching anything, and
when a step fails it raises ``ApplyError`` naming the step and listing what was and was not applied.
Claiming the objects it changes, and each step, has a progress line that says how long it took; a
long apply also says, every ``ESTIMATE_EVERY_SECONDS``, how far it is and about how long the rest
will take at its pace so far.

Every write is guarded (see ``schemaflow.claims``): first each existing object the plan touches is
claimed with a compare-and-swap against the version the plan saw; each later metastore write to it
expects the claim; its final stamp swaps the claim for the new version. An object a step creates is born
with the claim (the writer's ``claim``). Where a catalog cannot carry a guard (the Hive metastore's Spark SQL),
its writes run only on objects this run holds. A table registered from the catalog the project moves from
(``plan.moving``) is not claimed: its later writes expect the version its metadata held when planned; the entries that
plan forgets there are dropped through ``source``, the writer of that catalog, each guarded by its version then.
A Delta table's steps commit to its log through a writer that is ``DeltaWriting`` (``catalog.hive.delta_commit``: the
claim in its catalog entry, each statement on top of the log version planned, the stamp last); a plan with one is
refused before anything is claimed where the writer cannot.

Against a metastore server, a step's last write to its own object (its stamp) runs in a second lane
(``apply.lane``), on a connection of its own, while the next step's statements run: one write at a
time there, waited for before the next step that touches the same object, and before the last step
ends. A failure in the lane stops the run as any other, naming the step it belonged to; a step that
had begun beside it is reported as begun.
"""
from __future__ import annotations

import functools
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, nullcontext
from datetime import datetime, UTC
from typing import Any, NoReturn, TextIO, assert_never
from collections.abc import Callable, Collection, Mapping, Sequence

from schemaflow.apply.lane import Lane, LaneFailed
from schemaflow.apply.stops import StopRequest, signal_name, stop_between_steps
from schemaflow.catalog.backend import CatalogWriter, DeltaWriting, Registering
from schemaflow.capabilities import HIVE_METASTORE, Capabilities
from schemaflow.claims import Claim, new_run
from schemaflow.errors import ConcurrentChange, SchemaflowError, Unreachable
from schemaflow.catalog.history import Entry, with_entries
from schemaflow.model import (DROPPED_PREFIX, HISTORY_PREFIX, NO_VERSION, VERSION_KEY, Column, Database, IcebergState, PartitionValues,
                              Table, View, ViewSql, split_key)
from schemaflow.plan.kinds import EFFECTS, Effect, ObjectType, StepKind
from schemaflow.plan.plan import Plan
from schemaflow.plan.steps import (Action, AddColumnsAction, AddDatabase, ChangeViewPartitions, CheckLiveViews, DeltaAlter,
                                   DeltaCreate,
                                   CreateTableAction, CreateViewAction, DropTableAction, DropViewAction, IcebergCommit,
                                   ForgetEntryAction, KeepViewPartitions, PartitionView, RegisterTableAction,
                                   RestoreBackup, RewriteRows, SetColumnCommentsAction, SetColumns,
                                   SetDatabaseParameters, SetParameters, SetStorageAction, SetTableCommentAction, Step,
                                   fill_applied_at, with_stamp)
from schemaflow.sql import ddl
from schemaflow.sql.rewrite import Filled
from schemaflow.wording import duration, plural

ESTIMATE_EVERY_SECONDS = 30.0


class RecordingTarget:
    """Records the actions it is given, and the guard of each metastore write, instead of running them."""

    def __init__(self) -> None:
        self.actions: list[Action] = []
        self.guards: list[str | None] = []  # one per metastore write, in order
        self.claims: list[str] = []  # the claim each object created is born with, in order
        self.histories: dict[str, dict[str, str]] = {}  # database -> the history parameters written on it
        self.checked: list[dict[str, ViewSql | None]] = []  # the live views each check was to find as planned
        # Each Delta action: the table, the log version its statements land on top of (None: created), its statements
        # (a CREATE's claim filled) and its stamp.
        self.deltas: list[tuple[str, int | None, tuple[str, ...], dict[str, str]]] = []

    def create_table(self, table: Table, claim: str) -> None:
        self.actions.append(CreateTableAction(table))
        self.claims.append(claim)

    def add_columns(self, key: str, columns: Sequence[Column], expected: str | None) -> None:
        self.actions.append(AddColumnsAction(key, tuple(columns)))
        self.guards.append(expected)

    def set_table_comment(self, key: str, comment: str | None, expected: str | None) -> None:
        self.actions.append(SetTableCommentAction(key, comment))
        self.guards.append(expected)

    def set_column_comments(self, key: str, columns: Sequence[Column], expected: str | None) -> None:
        self.actions.append(SetColumnCommentsAction(key, tuple(columns)))
        self.guards.append(expected)

    def drop_table(self, key: str, expected: str | None) -> None:
        self.actions.append(DropTableAction(key))
        self.guards.append(expected)

    def create_view(self, view: View, replace: bool, claim: str) -> None:
        self.actions.append(CreateViewAction(view, replace))
        self.claims.append(claim)

    def add_database(self, database: Database) -> None:
        self.actions.append(AddDatabase(database))

    def set_database_properties(self, name: str, properties: Mapping[str, str]) -> None:
        self.actions.append(SetDatabaseParameters(name, dict(properties)))

    def update_database_properties(self, name: str, keys: Collection[str],
                                   update: Callable[[Mapping[str, str]], Mapping[str, str]]) -> None:
        """Kept apart from the actions: only the executor's bookkeeping (the objects' histories) comes this way."""
        written = self.histories.setdefault(name, {})
        written.update(update({key: written[key] for key in keys if key in written}))

    def check_guards(self, key: str) -> None:
        """A recorder keeps no versions: there is nothing to check."""

    def set_parameters(self, key: str, set: Mapping[str, str], unset: Sequence[str],
                       expected: str | None = None) -> None:
        self.actions.append(SetParameters(key, dict(set), tuple(unset)))
        self.guards.append(expected)

    def partition_view(self, key: str, columns: Sequence[str], expected: str | None = None) -> None:
        self.actions.append(PartitionView(key, tuple(columns)))
        self.guards.append(expected)

    def set_columns(self, key: str, columns: Sequence[Column], partition_columns: Sequence[Column],
                    cascade: bool, batched: bool, parameters: Mapping[str, str] = {},
                    expected: str | None = None) -> None:
        self.actions.append(SetColumns(key, tuple(columns), tuple(partition_columns), cascade, batched,
                                       dict(parameters)))
        self.guards.append(expected)

    def change_view_partitions(self, key: str, columns: Sequence[str], add: Sequence[PartitionValues],
                               drop: Sequence[PartitionValues], kept: Any = None) -> None:
        self.actions.append(ChangeViewPartitions(key, tuple(columns), tuple(add), tuple(drop)))

    def keep_view_partitions(self, key: str) -> Any:
        self.actions.append(KeepViewPartitions(key))
        return None

    def set_storage(self, key: str, serde_properties: Mapping[str, str], buckets: int | None,
                    expected: str | None = None) -> None:
        self.actions.append(SetStorageAction(key, dict(serde_properties), buckets))
        self.guards.append(expected)

    def drop_view(self, key: str, expected: str | None = None, engine: bool = False) -> None:
        self.actions.append(DropViewAction(key, engine))
        self.guards.append(expected)

    def check_views(self, views: Mapping[str, ViewSql | None]) -> None:
        """A recorder keeps no views: what it was to check is kept apart from the writes."""
        self.checked.append(dict(views))

    def commit_iceberg(self, table: Table, sources: Mapping[str, str], requires: IcebergState | None, create: bool,
                       set: Mapping[str, str], unset: Sequence[str], expected: str | None = None,
                       backup: str | None = None, keep: bool = True) -> None:
        self.actions.append(IcebergCommit(table, dict(sources), requires, create, dict(set), tuple(unset), backup, keep))
        self.guards.append(expected)

    def rewrite_table(self, key: str, table: Table, create: str, columns: Sequence[Filled], staging: str, backup: str,
                      expected: str | None, version: str | None, claim: str, registrable: bool = False,
                      records: Mapping[str, str] = {}) -> None:
        self.actions.append(RewriteRows(table, tuple(columns), staging, backup, registrable=registrable,
                                        records=dict(records)))
        self.guards.append(expected)

    def restore_table(self, key: str, backup: str, temporary: str, backup_version: str | None, expected: str | None,
                      version: str | None, claim: str) -> None:
        self.actions.append(RestoreBackup(key, backup, temporary, backup_version))
        self.guards.append(expected)

    def delta_unavailable(self) -> str | None:
        """A recorder records Delta's statements as any others."""
        return None

    def create_delta(self, key: str, create: str, stamp: Mapping[str, str], claim: str) -> None:
        self.deltas.append((key, None, (ddl.fill_claim(create, claim),), dict(stamp)))
        self.claims.append(claim)

    def alter_delta(self, key: str, log_version: int, table_id: str, statements: Sequence[str],
                    stamp: Mapping[str, str], expected: str | None) -> int:
        self.deltas.append((key, log_version, tuple(statements), dict(stamp)))
        self.guards.append(expected)
        return log_version + len(statements) + bool(stamp)

    def rewrite_delta(self, key: str, table: Table, create: str, columns: Sequence[Filled], staging: str,
                      backup: str, expected: str | None, version: str | None, claim: str, log_version: int | None,
                      table_id: str | None, records: Mapping[str, str]) -> None:
        self.actions.append(RewriteRows(table, tuple(columns), staging, backup, records=dict(records),
                                        log_version=log_version, table_id=table_id))
        self.guards.append(expected)

    def after_apply(self, changed: Sequence[str]) -> list[str]:
        """A recorder caches nothing: nothing follows."""
        return []

    def beside(self) -> AbstractContextManager[RecordingTarget | None]:
        """None: a recorder keeps the order of what it is given."""
        return nullcontext()


class ApplyError(SchemaflowError):
    """A step failed part-way through an apply."""

    def __init__(self, failed: int, steps: Sequence[Step], cause: Exception, begun: int | None = None) -> None:
        self.failed = failed  # 0-based index of the failed step
        self.begun = begun    # 0-based index of a later step that had begun beside its last write, if one had
        super().__init__("\n".join([f"step {failed + 1} failed ({steps[failed].summary}): {cause}",
                                    *_applied_and_not(steps, failed, begun),
                                    "Fix the cause, then plan and apply again: a new plan starts from the live state, "
                                    "so it continues where this run stopped."]))


class ApplyInterrupted(SchemaflowError):
    """A signal stopped an apply (``apply.stops``) before step ``stopped``, or ``at_once`` in it (a second signal),
    which may then be ``begun``."""

    def __init__(self, signal: str, stopped: int, steps: Sequence[Step], at_once: bool = False,
                 begun: bool = False) -> None:
        self.stopped = stopped  # 0-based index of the first step not finished
        self.at_once = at_once
        self.begun = begun
        where = (f"before step {stopped + 1} of {len(steps)}, between two steps" if not at_once
                 else f"during step {stopped + 1} of {len(steps)}, which is begun" if begun
                 else f"at step {stopped + 1} of {len(steps)}, before it wrote anything")
        super().__init__("\n".join([f"apply stopped by {signal} {where}",
                                    *_applied_and_not(steps, stopped, stopped if begun else None),
                                    "To finish: schemaflow apply, as you ran it but with no saved PLAN: a new plan "
                                    "starts from the live state, so it holds exactly what was not applied."]))


class ApplyNotStarted(SchemaflowError):
    """A signal stopped an apply before its first step (``apply.stops``): ``when`` it came, and the ``plan``, once made."""

    def __init__(self, signal: str, when: str, plan: Plan | None = None) -> None:
        said = _applied_and_not(plan.steps, 0, None) if plan is not None else ["applied: none (no plan was made yet)"]
        super().__init__("\n".join([f"apply stopped by {signal} {when}: nothing was applied", *said,
                                    "To apply: schemaflow apply, as you ran it (a new plan starts from the live state; "
                                    "an object this run had claimed is taken over)."]))


def _applied_and_not(steps: Sequence[Step], stopped: int, begun: int | None) -> list[str]:
    """The lines that list the steps before ``stopped`` as applied, ``begun`` (if one was) as begun, the rest as not."""
    applied = [f"  {i}. {s.summary}" for i, s in enumerate(steps[:stopped], 1)]
    pending = [f"  {i}. {s.summary}" for i, s in enumerate(steps[stopped:], stopped + 1) if i - 1 != begun]
    lines = [f"applied ({len(applied)}):"] + (applied or ["  none"])
    if begun is not None:
        lines += ["begun, not finished (1):", f"  {begun + 1}. {steps[begun].summary}"]
    return lines + [f"not applied ({len(pending)}):"] + (pending or ["  none"])


class Run:
    """One apply run: its claim, and the ``schemaflow.version`` each object holds as far as it knows."""

    def __init__(self, plan: Plan, claim: Claim, writer: CatalogWriter, source: CatalogWriter | None = None) -> None:
        self.writer = writer
        self.source = source  # the catalog the project moves from (None: the plan forgets nothing there)
        self.held: dict[str, str] = {}
        self.started: set[str] = set()  # objects this run has begun to change
        self.stamped: dict[str, str] = {}  # when each object's stamp or drop record was written
        self.kept: dict[str, Any] = {}  # the partitions of each view it re-creates, read just before
        self.logs: dict[str, int] = {}  # the version of the last commit this run made to each Delta table's log
        self.guards = plan.guards  # the version each object had when planned, before this run claimed it
        kinds: dict[str, list[str]] = {}
        cascade: set[str] = set()
        for step in plan.steps:
            if step.object_type != ObjectType.DATABASE:
                kinds.setdefault(step.object, []).append(step.kind)
                if any(isinstance(a, SetColumns) and a.cascade for a in step.actions):
                    cascade.add(step.object)
        self.tokens = {key: claim.for_object(tuple(k), key in cascade).token for key, k in kinds.items()}

    def claim(self, guards: Mapping[str, str | None], threads: int = 1) -> None:
        """Claim every existing object the plan touches, in name order, before anything changes.

        If one was changed since the plan saw it (``ConcurrentChange``), or a claim fails otherwise,
        the claims already taken are handed back: nothing was applied. Claiming in one order means
        two runs of the same plan meet at the first object, where exactly one of them wins. With ``threads``
        (the catalog's ``claim_threads``), the claims after the first are taken that many side by side: the run
        that lost the first has stopped by then, and each claim is guarded on its own.
        """
        # The probe of the metastore's guards needs an object that holds a version (the metastore
        # refuses a guard on a key the object lacks): one stamped already, else the first claimed.
        probed = next((key for key in sorted(guards) if guards[key] is not None), None)
        if probed:
            self.writer.check_guards(probed)
        keys = sorted(guards)
        try:
            for key in keys if threads <= 1 else keys[:1]:
                self._claim_one(key, guards[key])
                if probed is None:  # only objects not managed yet: their claims were plain first writes
                    self.writer.check_guards(key)
                    probed = key
            if threads > 1:
                self._claim_side_by_side(keys[1:], guards, threads)
        except Exception:
            self.release(guards)
            raise

    def _claim_one(self, key: str, expected: str | None) -> None:
        self.writer.set_parameters(key, {VERSION_KEY: self.tokens[key]}, (), expected)
        self.held[key] = self.tokens[key]

    def _claim_side_by_side(self, keys: Sequence[str], guards: Mapping[str, str | None], threads: int) -> None:
        """Claim ``keys``, ``threads`` at a time; every claim has landed or failed before this returns (none lands
        after the claims are handed back), and the first failure in name order is raised."""
        with ThreadPoolExecutor(max_workers=threads) as pool:
            taken = {key: pool.submit(self.writer.set_parameters, key, {VERSION_KEY: self.tokens[key]}, (),
                                      guards[key]) for key in keys}
        failures = []
        for key in keys:
            failure = taken[key].exception()
            if failure is None:
                self.held[key] = self.tokens[key]
            else:
                failures.append(failure)
        if failures:
            raise failures[0]

    def release(self, guards: Mapping[str, str | None]) -> None:
        """Hand back the claims on objects not changed yet: each gets the version it had.

        A claim on an object this run has begun to change stays: it tells the next run what to finish.
        So does any claim the metastore cannot take back now (it may be what failed): the next run
        takes it over. Once the metastore cannot be reached at all, the rest are not tried: each
        would wait out the same retries first.
        """
        for key, token in sorted(self.held.items()):
            if key in self.started or key not in guards:
                continue
            before = guards[key]
            try:
                # Never unset: the write is guarded by that key (HIVE-26882 refuses a write that unsets it).
                self.writer.set_parameters(key, {VERSION_KEY: before or NO_VERSION}, (), token)
            except Unreachable:
                return
            except Exception:  # noqa: BLE001 -- whatever failed, the claim stays: the next run takes it over
                continue
            del self.held[key]

    def run(self, action: Action, writer: CatalogWriter | None = None) -> None:
        """Run ``action`` on ``writer`` (by default the run's own)."""
        writer = writer or self.writer
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        match action:
            case CreateTableAction():  # born with the run's claim
                writer.create_table(action.table, self.tokens[action.object])
                self.held[action.object] = self.tokens[action.object]
            case CreateViewAction():
                writer.create_view(action.view, action.replace, self.tokens[action.object])
                self.held[action.object] = self.tokens[action.object]
            case AddColumnsAction():
                writer.add_columns(action.object, action.columns, self.held.get(action.object))
            case SetTableCommentAction():
                writer.set_table_comment(action.object, action.comment, self.held.get(action.object))
            case SetColumnCommentsAction():
                writer.set_column_comments(action.object, action.columns, self.held.get(action.object))
            case DropTableAction():
                writer.drop_table(action.object, self.held.get(action.object))
            case DropViewAction():
                writer.drop_view(action.object, self.held.get(action.object), engine=action.engine)
            case AddDatabase():
                writer.add_database(action.database)
            case SetDatabaseParameters():
                # The metastore keeps no version for a database: there is no guard to hold.
                writer.set_database_properties(action.database, fill_applied_at(action.properties, now))
                self.stamped |= {f"{action.database}.{key[len(DROPPED_PREFIX):]}": now
                                 for key in action.properties if key.startswith(DROPPED_PREFIX)}
            case SetParameters():
                values = fill_applied_at(action.set, now)
                writer.set_parameters(action.object, values, action.unset, self.held.get(action.object))
                if VERSION_KEY in values:
                    self.held[action.object] = values[VERSION_KEY]
                    self.stamped[action.object] = now
            case SetColumns():
                records = fill_applied_at(action.parameters, now)
                writer.set_columns(action.object, action.columns, action.partition_columns, action.cascade,
                                   action.batched, records, self.held.get(action.object))
            case ChangeViewPartitions():
                # A view's partitions are its contents, not its definition: the metastore has no guard for them.
                writer.change_view_partitions(action.object, action.columns, action.add, action.drop,
                                              self.kept.pop(action.object, None))
            case KeepViewPartitions():
                self.kept[action.object] = writer.keep_view_partitions(action.object)
            case PartitionView():
                writer.partition_view(action.object, action.columns, self.held.get(action.object))
            case SetStorageAction():
                writer.set_storage(action.object, action.serde_properties, action.buckets, self.held.get(action.object))
            case CheckLiveViews():
                writer.check_views(action.views)
            case IcebergCommit():
                values = fill_applied_at(action.set, now)
                writer.commit_iceberg(action.table, action.sources, action.requires, action.create, values,
                                      action.unset, None if action.create and not action.backup
                                      else self.held.get(action.object), action.backup, action.keep)
                if VERSION_KEY in values:
                    self.held[action.object] = values[VERSION_KEY]
                    self.stamped[action.object] = now
            case RewriteRows():
                # The new table is born with the run's claim, and takes the name: the step's stamp is guarded by it.
                token = self.tokens[action.object]
                if action.delta:
                    _delta_writer(writer).rewrite_delta(
                        action.object, action.table, ddl.fill_claim(action.create, token), action.columns,
                        action.staging, action.backup, self.held.get(action.object), self.guards.get(action.object),
                        token, action.log_version, action.table_id, fill_applied_at(action.records, now))
                else:
                    writer.rewrite_table(action.object, action.table, ddl.fill_claim(action.create, token),
                                         action.columns, action.staging, action.backup, self.held.get(action.object),
                                         self.guards.get(action.object), token, action.registrable,
                                         fill_applied_at(action.records, now))
                self.held[action.object] = token
            case RegisterTableAction():
                if not isinstance(writer, Registering):
                    raise SchemaflowError("the catalog this apply writes cannot register a table another catalog holds "
                                          "(its backend does not): nothing of this step ran")
                writer.register_table(action.object, action.metadata_location)
                if action.version is not None:  # what its metadata holds: the step's later writes expect it
                    self.held[action.object] = action.version
            case ForgetEntryAction():
                if self.source is None:
                    raise SchemaflowError(f"{action.object}: this step drops its entry in {action.source}, which this "
                                          "apply was not given: nothing of this step ran")
                if action.object_type == ObjectType.VIEW:
                    self.source.drop_view(action.object, action.version)
                else:
                    self.source.drop_table(action.object, action.version)
            case RestoreBackup():
                # The backup takes the name and the run's claim, which the step's stamp then swaps for its version.
                token = self.tokens[action.object]
                writer.restore_table(action.object, action.backup, action.temporary, action.backup_version,
                                     self.held.get(action.object), self.guards.get(action.object), token)
                self.held[action.object] = token
            case DeltaCreate():  # born with the run's claim; its stamp's version then takes the claim's place
                stamp = fill_applied_at(action.stamp, now)
                _delta_writer(writer).create_delta(action.object, action.changes[0], stamp, self.tokens[action.object])
                self._stamped_delta(action.object, stamp, now, 1 if stamp else 0)  # the CREATE is version 0
            case DeltaAlter():
                # A step after another Delta step of the same table lands on top of the commits that one made.
                stamp = fill_applied_at(action.stamp, now)
                landed = _delta_writer(writer).alter_delta(
                    action.object, self.logs.get(action.object, action.log_version), action.table_id, action.changes,
                    stamp, self.held.get(action.object))
                self._stamped_delta(action.object, stamp, now, landed)
            case _ as unreachable:
                assert_never(unreachable)

    def _stamped_delta(self, key: str, stamp: Mapping[str, str], now: str, landed: int) -> None:
        """Note a Delta action's last commit (``landed``) and, where it wrote a stamp, the version its entry holds."""
        self.logs[key] = landed
        if VERSION_KEY in stamp:
            self.held[key] = stamp[VERSION_KEY]
            self.stamped[key] = now


def _delta_writer(writer: CatalogWriter) -> DeltaWriting:
    """``writer`` as the Delta committer it was checked to be before the first step (``refuse_delta_actions``)."""
    assert isinstance(writer, DeltaWriting)
    return writer


def refuse_delta_actions(plan: Plan, writer: CatalogWriter) -> None:
    """Refuse a plan that changes a Delta table, before its first step, where ``writer`` cannot commit to a Delta
    table's log (its backend does not, or its engine has no delta-spark): saying what to configure."""
    delta = next((a for step in plan.steps for a in step.actions
                  if isinstance(a, DeltaCreate | DeltaAlter) or isinstance(a, RewriteRows) and a.delta), None)
    if delta is None:
        return
    reason = (writer.delta_unavailable() if isinstance(writer, DeltaWriting)
              else "the catalog this apply writes does not commit to Delta tables (its backend does not)")
    if reason is not None:
        raise SchemaflowError(f"{delta.object}: the plan changes a Delta table, which this apply cannot: {reason}; "
                              "nothing was applied")


def check_runnable(plan: Plan) -> None:
    """Refuse a plan with blocked steps before anything is connected to or changed."""
    if plan.blocked:
        reasons = "\n".join(f"  {s.object}: {s.blocked}" for s in plan.blocked)
        raise SchemaflowError(f"the plan has {plural(len(plan.blocked), 'blocked step')}; nothing was applied:\n{reasons}")


def apply_plan(plan: Plan, writer: CatalogWriter, progress: TextIO | None = None, claim: Claim | None = None,
               pause: Callable[[str], None] | None = None, clock: Callable[[], float] = time.monotonic,
               capabilities: Capabilities = HIVE_METASTORE, source: CatalogWriter | None = None) -> None:
    """Claim the plan's objects, then run every step in order; raise ``ApplyError`` at the first failure, and
    ``ApplyInterrupted`` when SIGINT or SIGTERM stops it (before the next step: ``apply.stops``). ``capabilities`` are
    those of the writer's catalog: the objects' histories are kept within its ``value_limit`` (the longest database
    property value; None: no limit), and its ``claim_threads`` claims are taken side by side. ``source``: the writer of
    the catalog the project moves from, for the steps that forget entries there.

    ``pause`` is called with ``"claimed"`` after the claims and ``"<step>.<action>"`` (1-based) after
    each action: the points where a test may stop or kill the run. ``clock`` times the steps.
    """
    check_runnable(plan)
    refuse_delta_actions(plan, writer)
    run = Run(plan, claim or new_run(), writer, source)
    # The second connection first: one that cannot be opened stops the run before anything is claimed.
    # A plan of no stamps (a sync of view partitions) has nothing to hand over, and opens none.
    stamps = any(_ends_with_stamp(step) for step in plan.steps)
    with stop_between_steps() as stop, ExitStack() as opened:
        try:
            second = opened.enter_context(writer.beside()) if stamps else None
            _claim(plan, run, progress, clock, capabilities.claim_threads)
        except KeyboardInterrupt as stopped:  # a second signal (the first is noted): no step has begun
            raise ApplyNotStarted(signal_name(stopped), "before its first step", plan) from None
        if pause:
            pause("claimed")
        lane = Lane() if second is not None else None
        try:
            try:
                _run_steps(plan, run, progress, pause, clock, lane, second, stop)
            finally:
                if lane:
                    lane.close()
        except ApplyError as error:
            if not isinstance(error.__cause__, Unreachable):  # the steps that landed go into the history
                _record_history_after_stop(plan, run, capabilities.value_limit)
            raise
        except ApplyInterrupted as stopped:
            if not stopped.at_once:  # at once, py4j's connection may have been left mid-answer: nothing more is written
                _record_history_after_stop(plan, run, capabilities.value_limit)
            raise
        _record_history(plan, run, capabilities.value_limit)


def _record_history_after_stop(plan: Plan, run: Run, limit: int | None) -> None:
    """``_record_history`` of a run that stopped part-way, whose own failure or stop is what to report."""
    try:
        _record_history(plan, run, limit)
    except Exception:  # noqa: BLE001 -- bookkeeping: the apply's own failure is what to report
        pass


def _record_history(plan: Plan, run: Run, limit: int | None) -> None:
    """Add a line to the history of each object whose stamp or drop record this run wrote (``catalog.history``),
    one write per database, each history kept within ``limit`` characters."""
    created = {s.object for s in plan.steps if EFFECTS[s.kind] == Effect.CREATE}
    lines: dict[str, dict[str, list[Entry]]] = {}
    for step in plan.steps:
        at = run.stamped.get(step.object)
        if step.kind == StepKind.FORGET_ENTRY:  # an entry of another catalog, whose history is not this one's
            continue
        dropped = EFFECTS[step.kind] == Effect.DROP and step.object_type != ObjectType.DATABASE
        if at is None or not (step.stamp or dropped):
            continue
        change = "drop" if dropped else "create" if step.object in created else "change"
        version = plan.guards.get(step.object) if dropped else step.stamp.set.get(VERSION_KEY) if step.stamp else None
        database, name = split_key(step.object)
        lines.setdefault(database, {}).setdefault(HISTORY_PREFIX + name, []).append(
            Entry(at, change, step.object_type, version, plan.commit))
    for database, histories in sorted(lines.items()):
        run.writer.update_database_properties(database, sorted(histories),
                                              functools.partial(_with_lines, histories, limit))


def _with_lines(histories: Mapping[str, Sequence[Entry]], limit: int | None,
                current: Mapping[str, str]) -> dict[str, str]:
    """The history parameters ``histories`` names, each as ``current`` holds it with its new lines added (within
    ``limit``)."""
    return {key: with_entries(current.get(key), entries, limit) for key, entries in histories.items()}


def _claim(plan: Plan, run: Run, progress: TextIO | None, clock: Callable[[], float], threads: int) -> None:
    """Claim the plan's existing objects (see ``Run.claim``, ``threads`` at a time), saying how long it took."""
    # Claiming thousands of existing objects takes a while: say so, as a step does.
    claiming = progress if plan.guards else None
    if claiming:
        claiming.write(f"Claiming the {plural(len(plan.guards), 'object')} it changes ... ")
        claiming.flush()
        started = clock()
    try:
        run.claim(plan.guards, threads)
    except Exception as error:
        if claiming:
            claiming.write("FAILED\n")
        if isinstance(error, ConcurrentChange):
            raise SchemaflowError(f"{error}; nothing was applied (claims taken were handed back). Plan again: "
                                  "another apply or another tool changed it since this plan was made") from None
        raise
    if claiming:
        claiming.write(f"done ({clock() - started:.1f}s)\n")


def _run_steps(plan: Plan, run: Run, progress: TextIO | None, pause: Callable[[str], None] | None,
               clock: Callable[[], float], lane: Lane | None, second: CatalogWriter | None, stop: StopRequest) -> None:
    """Run every step in order, each step's last write to its own object in ``lane`` if there is one
    (on ``second``); raise ``ApplyError`` at the first failure, in the lane or not, and ``ApplyInterrupted``
    before the step after a ``stop`` was asked for (or in the step that runs, at a second signal).

    With ``pause``, each write is waited for before the point after it is reached, so the points mean
    what they say; so is the last step's, so that the run ends when everything has landed.
    """
    total = len(plan.steps)
    width = len(str(total))
    began = estimated = clock()
    for index, step in enumerate(plan.steps):
        if stop.signal is not None:
            _stop(plan, run, index, lane, stop.name)
        started = clock()
        if progress and index and started - estimated >= ESTIMATE_EVERY_SECONDS:
            progress.write(_estimate(index, total, started - began))
            estimated = started
        if progress:
            progress.write(f"[{index + 1:>{width}}/{total}] {step.summary} ... ")
            progress.flush()
        wrote = False
        try:
            if lane and lane.pending == step.object:
                lane.wait()  # an object is never written on both connections at once
            actions = _actions(step)
            for number, action in enumerate(actions, 1):
                if isinstance(action, SetColumns) and action.batched:
                    run.started.add(step.object)  # it may stop after some batches, leaving the object half-changed
                if lane and number == len(actions) and _ends_with_stamp(step):
                    lane.hand(index, step.object, functools.partial(run.run, action, second))
                    if pause or index == total - 1:
                        lane.wait()
                else:
                    run.run(action)
                # Only now: a step that fails before its first write changed nothing, and its claim is handed back.
                if _writes(action):
                    run.started.add(step.object)
                    wrote = True
                if pause:
                    pause(f"{index + 1}.{number}")
        except Exception as error:  # noqa: BLE001 -- any Spark, metastore or py4j failure: report and stop
            failed, cause = (error.index, error.cause) if isinstance(error, LaneFailed) else (index, error)
            if lane and failed == index:  # the write still in the lane, an earlier step's, lands or fails first
                try:
                    lane.wait()
                except LaneFailed as earlier:
                    failed, cause = earlier.index, earlier.cause
            if progress:
                progress.write("FAILED\n" if failed == index else f"stopped: step {failed + 1} failed\n")
            if not isinstance(cause, Unreachable):  # else the claims stay for the next run, as they would
                run.release(plan.guards)
            raise ApplyError(failed, plan.steps, cause, index if failed != index and wrote else None) from cause
        except KeyboardInterrupt:  # a second signal (apply.stops): py4j's connection may be mid-answer, so no more
            if progress:           # writes, and the claims stay for the next run to take over
                progress.write("STOPPED\n")
            raise ApplyInterrupted(stop.name, index, plan.steps, at_once=True, begun=wrote) from None
        if progress:
            progress.write(f"done ({clock() - started:.1f}s)\n")


def _stop(plan: Plan, run: Run, index: int, lane: Lane | None, signal: str) -> NoReturn:
    """Stop before step ``index``, once the last write in ``lane`` has landed: hand back the claims on objects not
    changed, and raise ``ApplyInterrupted`` (``ApplyError`` if that write failed)."""
    try:
        if lane:
            lane.wait()
    except LaneFailed as failed:
        if not isinstance(failed.cause, Unreachable):
            run.release(plan.guards)
        raise ApplyError(failed.index, plan.steps, failed.cause) from failed.cause
    run.release(plan.guards)
    raise ApplyInterrupted(signal, index, plan.steps)


def _estimate(done: int, total: int, elapsed: float) -> str:
    """A progress line between steps: how many are done, in how long, and about how long the rest take."""
    left = elapsed / done * (total - done)
    return f"      {done:,} of {total:,} steps done in {duration(elapsed)}; about {duration(left)} left\n"


def _actions(step: Step) -> tuple[Action, ...]:
    """What ``step`` runs (``Step.runs``: a last action that writes the step's stamp itself takes it in)."""
    return step.runs


def _stamped(step: Step) -> Action | None:
    """The step's last action with its stamp written in it, or None when the stamp is a write of its own."""
    return with_stamp(step.body[-1], step.stamp) if step.stamp and step.body else None


def _ends_with_stamp(step: Step) -> bool:
    """Whether the step's last write is its stamp alone, which may then go to the lane (the plan's last step
    may write the settings record after it; an action that writes the stamp itself carries it)."""
    return step.stamp is not None and not step.settings_record and _stamped(step) is None


def _writes(action: Action) -> bool:
    """Whether ``action`` changes the catalog (a read of partitions or of live views does not)."""
    match action:
        case KeepViewPartitions() | CheckLiveViews():
            return False
        case (CreateTableAction() | AddColumnsAction() | SetTableCommentAction() | SetColumnCommentsAction()
              | DropTableAction() | CreateViewAction() | DropViewAction() | AddDatabase() | SetDatabaseParameters()
              | SetParameters() | SetColumns() | ChangeViewPartitions() | PartitionView() | SetStorageAction()
              | IcebergCommit() | RewriteRows() | RestoreBackup() | RegisterTableAction() | ForgetEntryAction()
              | DeltaCreate() | DeltaAlter()):
            return True
        case _ as unreachable:
            assert_never(unreachable)
