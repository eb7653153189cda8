"""How a Delta table changes: through the engine's statements (delta-spark), each a commit to its log, as its
protocol allows; what it cannot change in place, by a rewrite.

A Delta table's schema, properties and protocol are in its log (``_delta_log``), read into the live ``Table`` and
its ``DeltaState``. Columns are added, re-commented and moved in place on any Delta table. A rename or a drop
needs column mapping (``delta.columnMapping.mode`` name or id: readers then find a column by the physical name the
log gives it): with it live, or declared, the rename or drop runs; without either it is blocked with what to
declare. A type changes in place only by Delta's type widening (``delta.enableTypeWidening``), live or declared,
and only as the Delta release the Spark release runs widens (``widens``).

What Delta cannot do in place (a narrowing or another type, a widening the release's Delta does not do, other
partition columns) is a rewrite (``plan.rewrite``), as for other tables, run only when allowed: the staging table
is a Delta table created through delta-spark as declared (columns, partition columns, properties and the protocol
settings declared, in its first commit), filled from the live rows by the rewrite's ``INSERT ... SELECT``, verified,
and swapped in by the guarded renames of the metastore's entries; the live table is kept as the backup, its log and
history with it. The rest of the change (renames and drops, widenings) goes into the same rewrite: a new table needs
no column mapping for them. Its guard is the log: the copy starts only on the version the plan read, and a commit a
writer makes during the copy is copied again (``catalog.hive.rewrite``). An external Delta table is not rewritten.

Turning column mapping or type widening on, raising the protocol versions, or turning a table feature on is a
step of its own before the changes that need it (``DELTA_PROTOCOL``): it cannot be undone for the readers it
stops, so its hazards name them (a rewrite's new table that turns them on says the same). Turning column mapping
off, or lowering a protocol version, is refused: Delta does it by rewriting the table and truncating its history,
after a retention wait.

Renames and drops still come from ``migrations/``, as for every table: a diff cannot tell a rename from a drop
and an add. Every action carries the log version the plan read: apply commits only on top of it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from schemaflow.model import SCHEMAFLOW_PREFIX, DeltaState, Migration, Table
from schemaflow.plan.evolution import CommittedColumnChange, ColumnListChange, Evolution, Problem, evolve
from schemaflow.plan.iceberg import backup_name
from schemaflow.plan.kinds import ObjectType, StepKind
from schemaflow.plan.rewrite import INCONVERTIBLE, RewriteTable, flat, inconvertible, rewritten_values
from schemaflow.plan.steps import DeltaAlter, Step
from schemaflow.spark_version import SparkVersion, spark_name, spark_version
from schemaflow.spec.delta import FEATURE
from schemaflow.sql.types import decimal_digits
from schemaflow.wording import listed, value_change

MAPPING = "delta.columnMapping.mode"
WIDENING = "delta.enableTypeWidening"
READER, WRITER = "delta.minReaderVersion", "delta.minWriterVersion"
_MAPPED = ("name", "id")
# The protocol (reader, writer versions) each setting needs, as Delta raises it when the setting is turned on.
_NEEDS = {MAPPING: (2, 5), WIDENING: (3, 7)}
# Who stops reading or writing the table once a setting or feature is on (deltalake 1.6.6 measured through
# tests/test_reader_rules_delta.py: it reads a column-mapped table of reader version 2, finding columns by their
# names, and refuses one whose reader features include columnMapping or typeWidening).
_MAPPING_READERS = ("Delta readers without column mapping (reader version below 2: Delta Lake before 1.2, and "
                    "other engines' older connectors) stop reading the table; deltalake (delta-rs) reads its rows "
                    "with a renamed column NULL, and refuses them once the table lists reader features")
_WIDENING_READERS = ("readers without the typeWidening table feature (Delta Lake before 3.2 on Spark, older "
                     "connectors of other engines) stop reading the table; deltalake (delta-rs) refuses to read or "
                     "write its rows")
_ONE_WAY = ("one way: turning it off again rewrites the table and needs Delta's retention wait and TRUNCATE "
            "HISTORY, which schemaflow does not do")
_BY_HAND = ("create a new Delta table as declared, copy the rows (CREATE TABLE new USING delta ... AS SELECT ... FROM "
            "old) and swap the names outside schemaflow")
_INTEGERS = ("tinyint", "smallint", "int", "bigint")
# The settings that turn a table feature on (Delta's TableFeature of each), and the value that does.
_FEATURE_SETTINGS = {"delta.appendOnly": ("appendOnly", "true"), "delta.enableChangeDataFeed": ("changeDataFeed", "true"),
                     "delta.enableDeletionVectors": ("deletionVectors", "true"),
                     "delta.enableInCommitTimestamps": ("inCommitTimestamp", "true"),
                     "delta.enableRowTracking": ("rowTracking", "true"), "delta.checkpointPolicy": ("v2Checkpoint", "v2")}


def widens(old: str, new: str, release: SparkVersion) -> bool:
    """Whether Delta's type widening changes a top-level column of the canonical type ``old`` into ``new`` in place,
    on the Delta release that runs on the Spark ``release``: Delta 3.2 and 3.3 (Spark 3.5) widen tinyint to
    smallint or int and smallint to int only; Delta 4 (Spark 4) widens any integer to a wider one, float to double,
    an integer to a double or to a decimal with room for it, and a decimal to one with as much more precision as
    scale (Delta's documentation of type widening)."""
    if old in _INTEGERS and new in _INTEGERS:
        wider = _INTEGERS.index(new) > _INTEGERS.index(old)
        return wider and (release >= (4, 0) or new != "bigint")
    if release < (4, 0):
        return False
    if (old, new) == ("float", "double") or (old in _INTEGERS and new == "double" and old != "bigint"):
        return True
    digits = decimal_digits(new)
    if digits is None:
        return False
    precision, scale = digits
    if old in _INTEGERS:
        return precision - scale >= (20 if old == "bigint" else 10)
    was = decimal_digits(old)
    return was is not None and precision - was[0] >= scale - was[1] >= 0


@dataclass(frozen=True)
class DeltaProtocol:
    """Settings that raise a Delta table's protocol or turn a table feature on, set before the changes that need
    them: one commit, one way for the readers it stops."""

    key: str
    set: Mapping[str, str]
    was: Mapping[str, str]
    state: DeltaState
    object_type = ObjectType.TABLE
    destructive = False
    reshapes = False

    def to_step(self) -> Step:
        hazards = _protocol_hazards(self.set, self.state)
        values = tuple(value_change(k, self.was.get(k), v) for k, v in sorted(self.set.items()))
        action = DeltaAlter(self.key, self.state.log_version, self.state.table_id, set=dict(sorted(self.set.items())))
        return Step(StepKind.DELTA_PROTOCOL, self.key, ObjectType.TABLE,
                    f"raise the Delta protocol of {self.key}: set {', '.join(sorted(self.set))}", (action,),
                    notes=(f"the protocol read is reader {self.state.min_reader_version}, writer "
                           f"{self.state.min_writer_version}; one commit to the table's log, no data file rewritten",),
                    hazards=tuple(hazards), values=values)


@dataclass(frozen=True)
class AlterDeltaTable(CommittedColumnChange):
    """A Delta table's columns, comments and properties changed through the engine, on top of the log version read."""

    key: str
    evolution: Evolution
    want: Table
    have: Table
    state: DeltaState
    properties: Mapping[str, str]   # the declared properties that change, protocol ones aside
    object_type = ObjectType.TABLE

    def to_step(self) -> Step:
        want, have, evolution = self.want, self.have, self.evolution
        renamed = dict(evolution.renamed)
        kept = {renamed.get(c.name, c.name): c for c in have.columns if c.name not in evolution.dropped}
        add = tuple(c for c in want.columns if c.name not in kept)
        retype = tuple(c for c in want.columns if c.name in kept and kept[c.name].type != c.type)
        comments = tuple(c for c in want.columns if c.name in kept and kept[c.name].comment != c.comment)
        moves = _moves([*kept, *(c.name for c in add)], [c.name for c in want.columns])
        comment = (want.comment,) if want.comment != have.comment else ()
        action = DeltaAlter(self.key, self.state.log_version, self.state.table_id, set=dict(sorted(self.properties.items())),
                            add=add, rename=evolution.renamed, drop=evolution.dropped, retype=retype,
                            comments=comments, moves=moves, comment=comment)
        done = list(evolution.operations) or [f"add {c.name}" for c in add]
        done += [f"move {name} " + (f"after {after}" if after else "first") for name, after in moves]
        if comment:
            done.append("change the table's comment")
        if self.properties:
            done.append("set " + ", ".join(sorted(self.properties)))
        notes = [f"through the engine (delta-spark), each statement a commit on top of log version "
                 f"{self.state.log_version}; no data file is rewritten"]
        if evolution.migrations:
            notes.append("applies migration " + ", ".join(evolution.migrations))
        hazards = [f"drop {name}: column mapping drops it from the schema only; its values stay in the data files "
                   "until they are rewritten, and no reader sees them" for name in evolution.dropped]
        hazards += [f"rename {old} to {new}: a query or job that names {old} fails" for old, new in evolution.renamed]
        hazards += [f"widen {c.name} from {kept[c.name].type} to {c.type}: readers without type widening cannot read "
                    "the files written from now on" for c in retype]
        values = tuple(value_change(f"comment of {c.name}", kept[c.name].comment, c.comment) for c in comments)
        values += tuple(value_change(f"comment on table {self.key}", have.comment, want.comment) for _ in comment)
        values += tuple(value_change(k, have.properties.get(k), v) for k, v in sorted(self.properties.items()))
        return Step(StepKind.ALTER_DELTA_TABLE, self.key, ObjectType.TABLE,
                    f"alter Delta table {self.key}: {'; '.join(done)}", (action,), notes=tuple(notes),
                    hazards=tuple(hazards), destructive=self.destructive, values=values)


def _protocol_hazards(settings: Mapping[str, str], state: DeltaState) -> list[str]:
    """What turning ``settings`` on does to the readers and writers of a Delta table whose protocol ``state`` gives."""
    hazards = []
    if settings.get(MAPPING) in _MAPPED:
        hazards.append(f"column mapping ({MAPPING} = {settings[MAPPING]}, protocol reader 2, writer 5): "
                       f"{_MAPPING_READERS}; {_ONE_WAY}")
    if settings.get(WIDENING) == "true":
        hazards.append(f"type widening ({WIDENING}, protocol reader 3, writer 7, feature typeWidening; "
                       "typeWidening-preview as Delta 3.2 and 3.3 on Spark 3.5 write it): "
                       f"{_WIDENING_READERS}; {_ONE_WAY}")
    features = sorted({k[len(FEATURE):] for k in settings if k.startswith(FEATURE)} | {
        _FEATURE_SETTINGS[k][0] for k, v in settings.items() if k in _FEATURE_SETTINGS})
    if features:
        hazards.append(f"table feature {', '.join(features)}: Delta readers and writers without it stop reading or "
                       "writing the table; a feature, once on, stays in the protocol")
    if not hazards and (READER in settings or WRITER in settings):
        hazards.append(f"protocol reader {settings.get(READER, state.min_reader_version)}, writer "
                       f"{settings.get(WRITER, state.min_writer_version)}: Delta readers and writers of a lower "
                       "protocol stop reading or writing the table; a protocol version only goes up")
    return hazards


def _moves(current: list[str], wanted: list[str]) -> tuple[tuple[str, str | None], ...]:
    """The moves (column, after which; None: first) that put ``current`` in the order of ``wanted``, in order."""
    order, moves = list(current), []
    for i, name in enumerate(wanted):
        if order.index(name) != i:
            order.remove(name)
            order.insert(i, name)
            moves.append((name, wanted[i - 1] if i else None))
    return tuple(moves)


def delta_changes(want: Table, have: Table, migrations: Sequence[Migration], release: SparkVersion | None = None
                  ) -> tuple[DeltaProtocol | AlterDeltaTable, ...] | tuple[RewriteTable] | tuple[Problem, ...]:
    """What turns the live Delta table ``have`` into the declared ``want``: a protocol step first where the changes
    need one, then the changes; a rewrite where Delta cannot make them in place; or why they cannot be made.
    ``release``: the Spark release apply runs with (None: the installed pyspark's, else the project's)."""
    state = have.delta
    if state is None:
        return (Problem("changing it", "its Delta log was not read: plan against the catalog, where the log is read"),)
    # Other partition columns are a rewrite, which moves the rows by name: a column may move between the data and
    # the partition columns.
    keys_change = [c.name for c in want.partition_columns] != [c.name for c in have.partition_columns]
    evolution = evolve(flat(have) if keys_change else have, flat(want) if keys_change else want, migrations,
                       type_rule=False, by_id=True)
    if evolution.problems:
        return evolution.problems
    declared, live = want.properties, have.properties
    problems = _protocol_problems(declared, live, state)
    release = release or spark_version()
    reasons = _rewritten(want, have, evolution, release)
    if reasons:
        return tuple(problems) or _rewrite(want, have, evolution, reasons, state)
    mapping = state.column_mapping in _MAPPED or declared.get(MAPPING) in _MAPPED
    if (evolution.renamed or evolution.dropped) and not mapping:
        what = [f"rename {old} to {new}" for old, new in evolution.renamed] + [f"drop {n}" for n in evolution.dropped]
        problems.append(Problem(
            "; ".join(what),
            f"Delta renames and drops a column only with column mapping: declare {MAPPING}: name under 'properties:' "
            f"(the plan turns it on first, protocol reader 2, writer 5, as a step of its own: {_MAPPING_READERS})"))
    widening = (WIDENING in live and live[WIDENING] == "true") or declared.get(WIDENING) == "true" or any(
        f.startswith("typeWidening") for f in state.reader_features)
    if evolution.retyped and not widening:
        problems += [Problem(f"changing the type of {column} from {old} to {new}",
                             f"Delta widens a type only with type widening on: declare {WIDENING}: 'true' under "
                             f"'properties:' (the plan turns it on first, protocol reader 3, writer 7: "
                             f"{_WIDENING_READERS})") for column, old, new in evolution.retyped]
    if problems:
        return tuple(problems)
    protocol = _protocol(declared, live)
    protocol |= _versions(protocol, live, state)
    changes: list[DeltaProtocol | AlterDeltaTable] = []
    if protocol:
        changes.append(DeltaProtocol(want.key, protocol, {k: live[k] for k in protocol if k in live}, state))
    others = {k: v for k, v in declared.items() if not _raises(k, v) and live.get(k) != v}
    if evolution.kind is not ColumnListChange.SAME or others or want.comment != have.comment:
        changes.append(AlterDeltaTable(want.key, evolution, want, have, state, others))
    return tuple(changes)


def _rewritten(want: Table, have: Table, evolution: Evolution, release: SparkVersion) -> list[str]:
    """What Delta cannot change in place, which a rewrite makes: other partition columns, a type the Delta release
    on ``release`` does not widen."""
    reasons = []
    if [(c.name, c.type) for c in want.partition_columns] != [(c.name, c.type) for c in have.partition_columns]:
        reasons.append(f"partition columns {listed([c.name for c in have.partition_columns])} -> "
                       f"{listed([c.name for c in want.partition_columns])}")
    for column, old, new in evolution.retyped:
        if not widens(old, new, release):
            also = " (Delta 4 on Spark 4 widens it)" if widens(old, new, (4, 0)) else ""
            reasons.append(f"type of {column} {old} -> {new}, which the Delta release {spark_name(release)} runs does "
                           f"not widen in place{also}")
    return reasons


def _rewrite(want: Table, have: Table, moved: Evolution, reasons: Sequence[str],
             state: DeltaState) -> tuple[RewriteTable] | tuple[Problem, ...]:
    """The Delta table ``have`` made anew as ``want`` by a rewrite (``plan.rewrite``), since ``reasons``, its rows
    moved by name as ``moved`` says: the staging table a Delta table created through delta-spark with the declared
    columns, partition columns and properties (its protocol settings among them); or why it cannot be."""
    what = "; ".join(reasons)
    if have.external:
        return (Problem(what, "an external Delta table's files and log are whoever wrote them there's, and schemaflow "
                              f"rewrites no external table: {_BY_HAND}"),)
    stuck = inconvertible(want, have, moved)
    if stuck:
        return tuple(Problem(f"changing the type of {f.column} from {f.old_type} to {f.type}", INCONVERTIBLE)
                     for f in stuck)
    protocol = _protocol(want.properties, have.properties)
    hazards = _protocol_hazards(protocol | _versions(protocol, have.properties, state), state)
    undeclared = sorted(k for k in have.properties if k not in want.properties and not k.startswith(SCHEMAFLOW_PREFIX))
    if undeclared:
        hazards.append(f"properties {', '.join(undeclared)}: the live table's, which no file declares, are not the new "
                       f"table's (they stay with {backup_name(want.key)}): declare those it keeps")
    hazards.append(f"{want.key} is a new Delta table from the cut-over on (another table id, its log begun again at "
                   f"version 0): its history (DESCRIBE HISTORY, time travel, the change data feed) stays with "
                   f"{backup_name(want.key)}, and a streaming query reading {want.key} fails until it starts again "
                   "from a new checkpoint")
    return (RewriteTable(want.key, want, have, (what,), moved, values=rewritten_values(want, have, dict(moved.renamed)),
                         delta=state, kind_hazards=tuple(hazards)),)


def _protocol(declared: Mapping[str, str], live: Mapping[str, str]) -> dict[str, str]:
    """The declared settings that raise the protocol or turn a feature on, where the live table differs."""
    return {k: v for k, v in declared.items() if _raises(k, v) and live.get(k) != v}


def _raises(key: str, value: str) -> bool:
    """Whether setting ``key`` to ``value`` turns column mapping, type widening or another table feature on, or
    raises the protocol."""
    return (key in (MAPPING, WIDENING, READER, WRITER) or key.startswith(FEATURE)
            or key in _FEATURE_SETTINGS and _FEATURE_SETTINGS[key][1] == value)


def _versions(protocol: Mapping[str, str], live: Mapping[str, str], state: DeltaState) -> dict[str, str]:
    """The protocol versions the settings turned on need, where the live protocol is lower and none is declared."""
    needs = [_NEEDS[k] for k, v in protocol.items() if k in _NEEDS and v in (*_MAPPED, "true")]
    reader = max((r for r, _ in needs), default=0)
    writer = max((w for _, w in needs), default=0)
    versions = {}
    if reader > state.min_reader_version and READER not in protocol:
        versions[READER] = str(reader)
    if writer > state.min_writer_version and WRITER not in protocol:
        versions[WRITER] = str(writer)
    return versions


def _protocol_problems(declared: Mapping[str, str], live: Mapping[str, str], state: DeltaState) -> list[Problem]:
    """Why the declared settings cannot be made: column mapping turned off, a protocol version lowered."""
    problems = []
    if state.column_mapping in _MAPPED and declared.get(MAPPING, state.column_mapping) != state.column_mapping:
        problems.append(Problem(
            f"changing {MAPPING} from {state.column_mapping} to {declared[MAPPING]}",
            f"column mapping stays once on: turning it off or changing its mode rewrites the table, and Delta "
            f"then needs its retention wait and TRUNCATE HISTORY, which schemaflow does not do; declare {MAPPING}: "
            f"{state.column_mapping}"))
    for key, have in ((READER, state.min_reader_version), (WRITER, state.min_writer_version)):
        if key in declared and declared[key].isdigit() and int(declared[key]) < have:
            problems.append(Problem(f"lowering {key} from {have} to {declared[key]}",
                                    f"a Delta table's protocol versions only go up: declare {key}: '{have}'"))
    return problems
